// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <sys/socket.h>

#include "held_read.h"

int held_read_prepare(int fd)
{
	int on = 1;

	return setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) ? -errno : 0;
}

int held_read_native(int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred))];
		struct cmsghdr align;
	} control;
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = control.buf,
		.msg_controllen = sizeof(control.buf),
	};
	ssize_t n;

	n = recvmsg(fd, &msg, MSG_PEEK | MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	/*
	 * Zero bytes is a stream's EOF, which the read below reports, or an empty datagram,
	 * which carries nothing that could be out of order in a stream target.
	 */
	return n > 0 && CMSG_FIRSTHDR(&msg) != NULL;
}

ssize_t held_read(int fd, void *buf, size_t len)
{
	ssize_t n;
	int native;

	native = held_read_native(fd);
	if (native < 0)
		return native;
	if (native)
		return -EINPROGRESS;
	n = recv(fd, buf, len, MSG_DONTWAIT);
	return n < 0 ? -errno : n;
}
