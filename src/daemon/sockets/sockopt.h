/* SPDX-License-Identifier: GPL-2.0-only */
/* Options and queries on one socket: buffer sizes, errors, cookies, queue lengths. */
#ifndef VSOCKMAP_SOCKOPT_H
#define VSOCKMAP_SOCKOPT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "address.h"

/*
 * A vsock connection's receive buffer where rcvbuf= does not say (SO_VM_SOCKETS_BUFFER_SIZE;
 * the kernel's own is 256 KiB). Since Linux 6.12.92 a virtio-vsock receiver resets a
 * connection once its queue would hold more than buffer / SKB_TRUESIZE(0) packets (576 bytes
 * each on x86-64: 455 at 256 KiB), and a sender whose kernel caps its credit at its own
 * buffer (the same kernels) has at most that buffer, 256 KiB by default, in flight: 2,033
 * packets of 129 bytes, the smallest vsock does not merge. 1.5 MiB allows 2,730, so such a
 * sender cannot reach the ceiling however small it writes, while the daemon waits on a slow
 * client or is not scheduled (docs/kernel-notes.md, "The vsock packet ceiling").
 */
#define VSOCK_RECV_BUFFER (1536ull * 1024)

/*
 * rcvbuf= and sndbuf= of addr, if given, on a connection's socket; a vsock socket gets
 * VSOCK_RECV_BUFFER where rcvbuf= does not say.
 */
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
