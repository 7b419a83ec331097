/* SPDX-License-Identifier: GPL-2.0-only */
/* vsockmapd's start, run and stop (daemon.c), with the options of its command line. */
#ifndef VSOCKMAP_DAEMON_H
#define VSOCKMAP_DAEMON_H

#include "bpf_dataplane.h"
#include "config.h"
#include "daemon_state.h"

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
