// SPDX-License-Identifier: GPL-2.0-only
/*
 * Carriers for what a restart hands over (fd_carrier.h). The stopping side sends; the
 * starting side reads everything back before it opens anything.
 *
 * How much one carrier holds: its messages are charged to the sending end's send buffer until
 * read (unix_dgram_sendmsg(): a socketpair's peer has no max_dgram_qlen limit, only the
 * sender's sk_sndbuf). A message of two fds and a record takes about 1 KiB of truesize.
 * With CAP_NET_ADMIN (the kernel data path keeps it) SO_SNDBUFFORCE makes one carrier hold
 * 64 MiB, every pair of a full daemon; without it the buffer is at most 2 * wmem_max (416
 * KiB by default), a few hundred pairs, and a full carrier makes way for the next one. The
 * fds in flight count against RLIMIT_NOFILE (too_many_unix_fds()), which the unit sets far
 * above twice max-redirects.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fd_carrier.h"
#include "passed_fds.h"
#include "util.h"

void fd_carrier_init(struct fd_carrier *c, fd_carrier_store_fn store, unsigned int first)
{
	*c = (struct fd_carrier){
	    .store = store, .send_fd = -1, .sndbuf = FD_CARRIER_SNDBUF, .next = first};
}

/* A new carrier: its receiving end goes to systemd, this side keeps the sending end. */
static int carrier_open(struct fd_carrier *c)
{
	int sv[2], size = c->sndbuf, r;
	char name[64];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv))
		return -errno;
	if (setsockopt(sv[0], SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)))
		setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	snprintf(name, sizeof(name), FD_CARRIER_PREFIX "%u", c->next);
	r = c->store(sv[1], name);
	/* systemd's copy (in flight until it reads our notification) keeps it open. */
	close(sv[1]);
	if (r) {
		close(sv[0]);
		return r;
	}
	c->next++;
	c->n++;
	c->send_fd = sv[0];
	return 0;
}

int fd_carrier_send(struct fd_carrier *c, const void *msg, size_t len, const int *fds,
		    unsigned int n_fds)
{
	union {
		char buf[CMSG_SPACE(FD_CARRIER_FDS_MAX * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = (void *)msg, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *cm;
	int tries, r = -EAGAIN;

	/* A message of no bytes would read as the carrier's end (fd_carrier_unpack()). */
	if (!len || len > FD_CARRIER_MSG_MAX || n_fds > FD_CARRIER_FDS_MAX)
		return -EINVAL;
	if (n_fds) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(n_fds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(n_fds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, n_fds * sizeof(int));
	}
	for (tries = 0; tries < 2; tries++) {
		if (c->send_fd < 0) {
			r = carrier_open(c);
			if (r)
				return r;
		}
		if (sendmsg(c->send_fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0) {
			c->carried++;
			return 0;
		}
		r = -errno;
		if (r != -EAGAIN && r != -ENOBUFS)
			return r;
		/* This one is full: the next message, and this one again, go in a new carrier. */
		c->send_fd = safe_close(c->send_fd);
	}
	return r;
}

void fd_carrier_finish(struct fd_carrier *c)
{
	c->send_fd = safe_close(c->send_fd);
}

static void close_all(int *fds, unsigned int n)
{
	while (n)
		safe_close(fds[--n]);
}

/* Every message of one carrier: the number taken, or -errno. */
static int unpack_one(int fd, fd_carrier_take_fn take, void *ctx, unsigned int *bad)
{
	static union {
		char buf[CMSG_SPACE(FD_CARRIER_FDS_MAX * sizeof(int))];
		struct cmsghdr align;
	} u;
	char msg[FD_CARRIER_MSG_MAX];
	int fds[FD_CARRIER_FDS_MAX], taken = 0, r;
	struct iovec iov = {.iov_base = msg, .iov_len = sizeof(msg)};
	unsigned int n_fds;
	struct msghdr mh;
	struct cmsghdr *cm;
	ssize_t len;

	for (;;) {
		mh = (struct msghdr){.msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = u.buf,
				     .msg_controllen = sizeof(u.buf)};
		len = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (len < 0 && errno == EINTR)
			continue;
		if (len < 0 && errno != EAGAIN)
			return -errno;
		/*
		 * 0 is the end (the sender closed) only without control data: a message of no
		 * bytes reads as 0 too, and the fds it carries are ours now (closed below).
		 */
		if (len < 0 || (len == 0 && !mh.msg_controllen))
			break;
		n_fds = 0;
		for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			unsigned int k;

			if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
				continue;
			k = (unsigned int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			if (n_fds + k > FD_CARRIER_FDS_MAX)
				k = FD_CARRIER_FDS_MAX - n_fds;
			memcpy(fds + n_fds, CMSG_DATA(cm), k * sizeof(int));
			n_fds += k;
		}
		if (!len || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
			close_all(fds, n_fds);
			(*bad)++;
			continue;
		}
		r = take(ctx, msg, (size_t)len, fds, n_fds);
		if (r)
			return r;
		taken++;
	}
	return taken;
}

int fd_carrier_unpack(struct passed_fds *p, fd_carrier_take_fn take, void *ctx, unsigned int *bad)
{
	size_t i, n = p->n, len = strlen(FD_CARRIER_PREFIX);
	int taken = 0, r;

	*bad = 0;
	for (i = 0; i < n; i++) {
		if (p->v[i].fd < 0 || !p->v[i].name ||
		    strncmp(p->v[i].name, FD_CARRIER_PREFIX, len))
			continue;
		r = unpack_one(p->v[i].fd, take, ctx, bad);
		/* Read only in part: it keeps what is left, and its fd (no FDSTOREREMOVE for it). */
		if (r < 0)
			return r;
		/* The entry stays, without its fd: its name still leaves systemd's store. */
		safe_close(passed_fds_take(p, i));
		taken += r;
	}
	return taken;
}

unsigned int fd_carrier_next_name(const struct passed_fds *p)
{
	size_t i, len = strlen(FD_CARRIER_PREFIX);
	unsigned int next = 0, k;

	for (i = 0; i < p->n; i++)
		if (p->v[i].name && !strncmp(p->v[i].name, FD_CARRIER_PREFIX, len) &&
		    sscanf(p->v[i].name + len, "%u", &k) == 1 && k >= next)
			next = k + 1;
	return next;
}
