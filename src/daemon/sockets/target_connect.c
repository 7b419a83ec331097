// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include "socket_address.h"
#include "sockopt.h"
#include "target_connect.h"
#include "util.h"

int target_connect_start(const struct address *addr, int *in_progress)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, type = SOCK_STREAM, r;

	if (addr->kind != ADDRESS_VSOCK_CONNECT && addr->kind != ADDRESS_TCP_CONNECT &&
	    addr->kind != ADDRESS_UNIX_CONNECT)
		return -EINVAL;
	if (addr->kind == ADDRESS_VSOCK_CONNECT && addr->sock_type == SOCK_SEQPACKET)
		type = SOCK_SEQPACKET;
	r = address_sockaddr(addr, &ss, &len);
	if (r)
		return r;
	fd = socket(ss.ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	socket_set_bufs(fd, addr);
	*in_progress = 0;
	if (connect(fd, (struct sockaddr *)&ss, len)) {
		/* A unix connect never completes later: EAGAIN means the listen backlog is full. */
		if (errno != EINPROGRESS) {
			r = -errno;
			safe_close(fd);
			return r;
		}
		*in_progress = 1;
	}
	return fd;
}

int timed_connect_start(struct timed_connect *tc, const struct address *addr,
			unsigned int default_ms, uint64_t now, int *in_progress)
{
	unsigned int ms = addr->connect_timeout_ms ?: default_ms;

	tc->deadline_usec = now + ms * USEC_PER_MSEC;
	return target_connect_start(addr, in_progress);
}

int timed_connect_check(const struct timed_connect *tc, int fd, uint64_t now)
{
	struct pollfd pfd = {.fd = fd, .events = POLLOUT};
	int err;

	if (poll(&pfd, 1, 0) > 0) {
		err = socket_error(fd);
		return err ? err : 1;
	}
	return now >= tc->deadline_usec ? -ETIMEDOUT : 0;
}
