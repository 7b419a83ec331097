/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The daemon's state: config, kernel data path, listeners, live redirects, event loop.
 * Known to daemon.c and to the top-layer modules it hands itself to (docs/architecture.md,
 * "Layers"); the layers below see its env (struct redirect_env) at most.
 */
#ifndef VSOCKMAP_DAEMON_STATE_H
#define VSOCKMAP_DAEMON_STATE_H

#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "config.h"
#include "passed_fds.h"
#include "redirect.h"

struct listener;
struct redirect;
struct control_server;
struct daemon;

/* The queue probe links of previous instances this one keeps at most (handover.c). */
#define HANDOVER_PROBE_LINKS_MAX 1024

/* A redirect read from a carrier (or, from a version before carriers, the fd store itself). */
struct handed_pair {
	struct redirect_record rec;
	int fds[RECORD_NR_FDS]; /* in their RECORD_FD_* places, -1 for the rest */
	void *raw;		/* the message as it came, to give back unchanged; NULL: stored */
	size_t raw_len;
};

/* A restart under way, and what the next instance found. */
struct handover_state {
	struct handed_pair *pairs; /* starting: read from the carriers, not yet taken back */
	size_t n_pairs, cap_pairs;
	bool sha_warned; /* starting: the stored maps are another build's (said once) */
	/* Inherited, for the sockets taken back: each with the instance it was made by. */
	struct {
		uint32_t generation;
		int fd;
	} probe_links[HANDOVER_PROBE_LINKS_MAX];
	size_t n_probe_links;
};

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
	sd_event_source *idle_timer;   /* idle-timeout= checks (idle_sweep.c) */
	sd_event_source *source_watch; /* kernel-path clients still mapped? (source_watch.c) */
	uint64_t source_watch_next;    /* the watched redirects it passes over next time */
};

#endif
