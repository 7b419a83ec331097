/* SPDX-License-Identifier: GPL-2.0-only */
/* Socket set-up for the daemon: listeners, non-blocking connects, buffer sizes, cookies. */
#ifndef VSOCKMAP_SOCKOPT_H
#define VSOCKMAP_SOCKOPT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

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

/* rcvbuf= and sndbuf= of addr, if given, on a connection's socket. */
void socket_set_bufs(int fd, const struct address *addr);

/*
 * Give the socket file its configured owner, group and mode, so clients may connect. A
 * datagram socket's file, bound under a private name, moves to its path only now.
 */
int unix_listener_publish(const struct address *addr, const char **why);

/* Remove the socket file, under whichever name it has. */
void unix_listener_unlink(const struct address *addr);

/* Start a non-blocking connect to a target. Returns the fd (connected or in progress). */
int target_connect_start(const struct address *addr, int *in_progress);

/* SO_ERROR of a socket whose connect finished: 0 or -errno. */
int socket_error(int fd);

int socket_cookie(int fd, uint64_t *cookie);

/*
 * Raise the send buffer past net.core.wmem_max: the backlog worker retries one jiffy later
 * whenever the egress socket looks full (sk_sndbuf), so a small buffer throttles a redirect.
 */
int socket_force_sndbuf(int fd, unsigned int bytes);

/* Bytes waiting in the receive queue (SIOCINQ), or -errno. */
int socket_inq(int fd);
/*
 * Bytes sent and not yet taken by the peer (SIOCOUTQ: unix counts what waits in the peer's
 * receive queue, TCP what is unacknowledged, vsock from Linux 6.10 what the transport has
 * not sent), or -errno (-EOPNOTSUPP: older vsock).
 */
int socket_outq(int fd);
/* The socket would take bytes now (POLLOUT). */
bool socket_writable(int fd);

#endif
