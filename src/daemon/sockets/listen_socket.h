/* SPDX-License-Identifier: GPL-2.0-only */
/* The daemon's listening sockets: unix (stream or datagram, with their socket files), vsock, TCP.
 */
#ifndef VSOCKMAP_LISTEN_SOCKET_H
#define VSOCKMAP_LISTEN_SOCKET_H

#include "address.h"

/*
 * Bind a unix socket of the address's type at its path: create the parent directory, replace
 * a stale socket file only if nothing answers on it. The file is left mode 0600 until
 * unix_listener_publish(). Stream sockets also listen. Returns the fd or -errno; *why names
 * the failing step for the log.
 */
int unix_listener_open(const struct address *addr, const char **why);

/* A VSOCK-LISTEN (any CID) or TCP-LISTEN socket, listening. The fd or -errno, *why as above. */
int net_listener_open(const struct address *addr, const char **why);

/*
 * Give the socket file its configured owner, group and mode, so clients may connect. A
 * datagram socket's file, bound under a private name, moves to its path only now.
 */
int unix_listener_publish(const struct address *addr, const char **why);

/* Remove the socket file, under whichever name it has. */
void unix_listener_unlink(const struct address *addr);

#endif
