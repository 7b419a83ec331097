/* SPDX-License-Identifier: GPL-2.0-only */
/* Options and queries on one socket: buffer sizes, errors, cookies, queue lengths. */
#ifndef VSOCKMAP_SOCKOPT_H
#define VSOCKMAP_SOCKOPT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "address.h"

/* rcvbuf= and sndbuf= of addr, if given, on a connection's socket. */
void socket_set_bufs(int fd, const struct address *addr);

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
/*
 * A TCP socket's connection is over (TCP_CLOSE: reset, or both FINs acknowledged): nothing
 * more can reach its peer. false for any other socket, and when the kernel cannot tell.
 */
bool socket_tcp_closed(int fd);
/* A vsock socket's receive buffer (SO_VM_SOCKETS_BUFFER_SIZE): what its peer may send unread. */
int socket_vsock_buffer(int fd);
/* The socket would take bytes now (POLLOUT). */
bool socket_writable(int fd);

#endif
