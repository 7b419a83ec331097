/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The sockets systemd passed at start (LISTEN_FDS, LISTEN_FDNAMES), in one table: the ones
 * socket activation passes (named after a section, socket_activation.c) and the ones the
 * previous instance stored for a restart (named HANDOVER_PREFIX..., handover.c). Each is
 * taken by whoever it is for; what nobody took is closed by passed_fds_release().
 */
#ifndef VSOCKMAP_PASSED_FDS_H
#define VSOCKMAP_PASSED_FDS_H

#include <stdbool.h>
#include <stddef.h>

struct passed_fd {
	int fd;	    /* -1 once taken */
	char *name; /* FDNAME; NULL without LISTEN_FDNAMES */
};

struct passed_fds {
	struct passed_fd *v;
	size_t n, cap;
};

/* Every stored name starts with this; the other names are socket activation's. */
#define HANDOVER_PREFIX "vsm-"
/* A listening socket the previous instance created: this, then its section's name. */
#define STORED_LISTENER_PREFIX HANDOVER_PREFIX "listen."

/* Take what systemd passed, and unset LISTEN_*: nothing the daemon starts may think they are
 * its own. 0 (also when nothing was passed) or -errno. */
int passed_fds_collect(struct passed_fds *p);

/* Add fd named name (both now p's, or closed and freed on -ENOMEM). */
int passed_fds_add(struct passed_fds *p, int fd, char *name);

/* Stored by the previous instance for a restart: its name starts with HANDOVER_PREFIX. */
bool passed_fd_stored(const struct passed_fd *f);

/* Entry i's fd, now the caller's; the entry stays, with fd -1. */
int passed_fds_take(struct passed_fds *p, size_t i);


/* Close what nobody took, and forget every entry. */
void passed_fds_release(struct passed_fds *p);

#endif
