/* SPDX-License-Identifier: GPL-2.0-only */
/* A configured listener: a UNIX-LISTEN stream socket, or a UNIX-RECV dgram socket. */
#ifndef VSOCKMAP_LISTENER_H
#define VSOCKMAP_LISTENER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "config.h"

struct daemon;
struct dgram_forwarder;

struct listener {
	struct daemon *d;
	const struct redirect_config *rc;
	int fd;
	bool activated; /* fd passed by systemd: its socket file belongs to the .socket unit */
	sd_event_source *io;
	struct dgram_forwarder *dgram; /* UNIX-RECV only */
	uint64_t accepted;
	uint64_t failed; /* target refused, timed out, or set-up failed */
	size_t live;
	/* Moved by redirects of this listener that have closed, per direction. */
	uint64_t closed_bytes[2];
	uint64_t closed_packets[2];
};

int listener_open(struct daemon *d, const struct redirect_config *rc, struct listener *l);
void listener_close(struct listener *l);

#endif
