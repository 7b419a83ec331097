/* SPDX-License-Identifier: GPL-2.0-only */
/* The daemon's listening sockets: unix (stream or datagram, with their socket files), vsock, TCP.
 */
#ifndef VSOCKMAP_LISTEN_SOCKET_H
#define VSOCKMAP_LISTEN_SOCKET_H

#include <stddef.h>

#include "address.h"
#include "socket_file.h"

/*
 * Bind a unix socket of the address's type at its path: create the parent directories and
 * check them (socket_file_make_parents()), replace a stale socket file only if nothing answers
 * on it. The file is left mode 0000 until unix_listener_publish(); *id says which file it is.
 * Stream sockets also listen. Returns the fd or -errno; *why names the failing step for the
 * log, and may point into msg (len bytes), which says which directory is refused and why.
 */
int unix_listener_open(const struct address *addr, struct socket_file_id *id, char *msg, size_t len,
		       const char **why);

/* A VSOCK-LISTEN (any CID) or TCP-LISTEN socket, listening. The fd or -errno, *why as above. */
int net_listener_open(const struct address *addr, const char **why);

/*
 * Give the socket file its configured owner, group and mode, so clients may connect: only
 * if it is still *id's file (-ESTALE if not; nothing changed). A datagram socket's file,
 * bound under a private name, moves to its path only now, never over another file.
 */
int unix_listener_publish(const struct address *addr, const struct socket_file_id *id,
			  const char **why);

/*
 * Remove the socket file, under whichever name it has, if it is still *id's. 0, or -ESTALE
 * when another file is at the path (left there), or another -errno.
 */
int unix_listener_unlink(const struct address *addr, const struct socket_file_id *id);

#endif
