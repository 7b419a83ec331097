/* SPDX-License-Identifier: GPL-2.0-only */
/* The daemon's state: config, kernel data path, listeners, live redirects, event loop. */
#ifndef VSOCKMAP_DAEMON_H
#define VSOCKMAP_DAEMON_H

#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "bpf_dataplane.h"
#include "config.h"
#include "handover.h"
#include "passed_fds.h"
#include "redirect.h"

struct listener;
struct redirect;
struct control_server;

/* A stop under way (stop_drain.c). */
struct stop_state {
	uint64_t deadline;  /* give up on what is left then */
	uint64_t mark;	    /* the progress mark at the last look */
	uint64_t next_look; /* when to take the next one */
	uint64_t epoch;	    /* the queue iterator's pass count when the stop began */
};

struct daemon {
	struct config cfg;
	struct redirect_env env;     /* loop, data plane, redirects: what the layers below see */
	struct listener **listeners; /* in configuration order */
	size_t n_listeners;
	struct control_server *control;
	uint64_t started_usec;
	struct stop_state stop;
	struct handover_state handover;
	struct passed_fds passed; /* what systemd passed at start, until each is taken */
	struct {
		sd_event_source *status_timer; /* STATUS= refresh (service.c) */
		char last_status[160];	       /* the STATUS= text last sent */
	} service;
	sd_event_source *idle_timer; /* idle-timeout= checks (idle_sweep.c) */
	sd_event_source *source_watch; /* kernel-path clients still mapped? (source_watch.c) */
};

struct daemon_options {
	const char *config_path;
	enum drain_mode drain_mode;
	/* socat's command line instead of a file: both set (config_from_addresses()) */
	const char *addresses[2];
	const char *control_path;     /* command line: a control socket after all; NULL: none */
	int verbosity;		      /* command line: each -d one log level more */
	unsigned int idle_timeout_ms; /* command line: -T SECONDS; 0: none */
	int datapath;		      /* --datapath: an enum datapath_mode; -1: as configured */
	int fastpath;		      /* --fastpath: an enum fastpath_mode; -1: as configured */
};

/* Load everything; on error nothing is left half-started. */
int daemon_start(struct daemon *d, const struct daemon_options *opts);
int daemon_run(struct daemon *d);
void daemon_stop(struct daemon *d);

#endif
