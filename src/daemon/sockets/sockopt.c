// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <limits.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/vm_sockets.h>

#include "sockopt.h"

/* AF_VSOCK's socket option level: the address family's number (af_vsock.c). */
#define SOL_VSOCK_LEVEL AF_VSOCK

static bool is_vsock(const struct address *addr)
{
	return addr->kind == ADDRESS_VSOCK_CONNECT || addr->kind == ADDRESS_VSOCK_LISTEN;
}

/* The receive buffer and its maximum, which clamps it, to bytes: 0 or -errno. */
static int set_vsock_buffer(int fd, unsigned long long bytes)
{
	/* The size is clamped to the maximum, so the maximum goes first. */
	if (setsockopt(fd, SOL_VSOCK_LEVEL, SO_VM_SOCKETS_BUFFER_MAX_SIZE, &bytes, sizeof(bytes)) ||
	    setsockopt(fd, SOL_VSOCK_LEVEL, SO_VM_SOCKETS_BUFFER_SIZE, &bytes, sizeof(bytes)))
		return -errno;
	return 0;
}

void socket_set_bufs(int fd, const struct address *addr)
{
	/* vsock ignores SO_RCVBUF: its receive buffer is its own option, and its peer's credit. */
	if (is_vsock(addr))
		set_vsock_buffer(fd, addr->rcvbuf ? (unsigned long long)addr->rcvbuf
						  : VSOCK_RECV_BUFFER);
	else if (addr->rcvbuf)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &addr->rcvbuf, sizeof(addr->rcvbuf));
	if (addr->sndbuf)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &addr->sndbuf, sizeof(addr->sndbuf));
}

int socket_error(int fd)
{
	socklen_t len = sizeof(int);
	int err = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
		return -errno;
	return -err;
}

int socket_cookie(int fd, uint64_t *cookie)
{
	socklen_t len = sizeof(*cookie);

	return getsockopt(fd, SOL_SOCKET, SO_COOKIE, cookie, &len) ? -errno : 0;
}

int socket_force_sndbuf(int fd, unsigned int bytes)
{
	int v = bytes > INT_MAX ? INT_MAX : (int)bytes;

	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)) == 0)
		return 0;
	/* Without CAP_NET_ADMIN take what net.core.wmem_max allows. */
	return setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)) ? -errno : 0;
}

bool socket_writable(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLOUT};

	return poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLOUT);
}

int socket_inq(int fd)
{
	int n = 0;

	return ioctl(fd, SIOCINQ, &n) ? -errno : n;
}

int socket_outq(int fd)
{
	int n = 0;

	return ioctl(fd, SIOCOUTQ, &n) ? -errno : n;
}

bool socket_tcp_closed(int fd)
{
	struct tcp_info info;
	socklen_t len = sizeof(info);

	return !getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) &&
	       len >= offsetof(struct tcp_info, tcpi_state) + sizeof(info.tcpi_state) &&
	       info.tcpi_state == TCP_CLOSE;
}

int socket_vsock_buffer(int fd)
{
	unsigned long long size = 0;
	socklen_t len = sizeof(size);

	if (getsockopt(fd, SOL_VSOCK_LEVEL, SO_VM_SOCKETS_BUFFER_SIZE, &size, &len))
		return -errno;
	return size > INT_MAX ? INT_MAX : (int)size;
}
