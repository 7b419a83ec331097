// SPDX-License-Identifier: GPL-2.0-only
/*
 * Carriers for the pairs a restart hands over (fd_carrier.h). The stopping side sends; the
 * starting side reads everything back before it opens anything.
 *
 * How much one carrier holds: its messages are charged to the sending end's send buffer until
 * read (unix_dgram_sendmsg(): a socketpair's peer has no max_dgram_qlen limit, only the
 * sender's sk_sndbuf). A message of two fds and a short name takes about 1 KiB of truesize.
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
#include "log.h"
#include "passed_fds.h"
#include "util.h"

#define PAIR_NAME_MAX  320

void fd_carrier_init(struct fd_carrier *c, fd_carrier_store_fn store)
{
	*c = (struct fd_carrier){.store = store, .send_fd = -1, .sndbuf = FD_CARRIER_SNDBUF};
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
	snprintf(name, sizeof(name), FD_CARRIER_PREFIX "%u", c->n);
	r = c->store(sv[1], name);
	/* systemd's copy (in flight until it reads our notification) keeps it open. */
	close(sv[1]);
	if (r) {
		close(sv[0]);
		return r;
	}
	c->n++;
	c->send_fd = sv[0];
	return 0;
}

int fd_carrier_send_pair(struct fd_carrier *c, int client_fd, int target_fd, const char *name)
{
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u = {};
	struct iovec iov = {.iov_base = (void *)name, .iov_len = strlen(name) + 1};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	int fds[2] = {client_fd, target_fd}, tries, r = -EAGAIN;

	if (iov.iov_len > PAIR_NAME_MAX)
		return -ENAMETOOLONG;
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
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
		/* This one is full: the next pair, and this one again, go in a new carrier. */
		c->send_fd = safe_close(c->send_fd);
	}
	return r;
}

void fd_carrier_finish(struct fd_carrier *c)
{
	c->send_fd = safe_close(c->send_fd);
}

/* "ID.SLOT.HALF.SECTION" and an end ('c' or 't'): "vsm-pair.ID.SLOT.HALF.END.SECTION". */
static char *pair_entry_name(const char *name, char end)
{
	const char *p = name;
	char *out = NULL;
	int dots;

	for (dots = 0; dots < 3; dots++) {
		p = strchr(p, '.');
		if (!p)
			return NULL;
		p++;
	}
	if (asprintf(&out, HANDOVER_PREFIX "pair.%.*s%c.%s", (int)(p - name), name, end, p) < 0)
		return NULL;
	return out;
}

/* Add a received pair to p; its fds are p's from now on, or closed. */
static int add_pair(struct passed_fds *p, const char *name, int cfd, int tfd)
{
	char *cname = pair_entry_name(name, 'c'), *tname = pair_entry_name(name, 't');
	int r;

	if (!cname || !tname) {
		free(cname);
		free(tname);
		safe_close(cfd);
		safe_close(tfd);
		return -EINVAL;
	}
	r = passed_fds_add(p, cfd, cname, true);
	if (r) {
		free(tname);
		safe_close(tfd);
		return r;
	}
	return passed_fds_add(p, tfd, tname, true);
}

/* Every message of one carrier: the number of pairs added, or -errno. */
static int unpack_one(struct passed_fds *p, int fd)
{
	char name[PAIR_NAME_MAX + 1];
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	int fds[4], n_fds, pairs = 0, bad = 0, r;
	struct iovec iov = {.iov_base = name, .iov_len = sizeof(name) - 1};
	struct msghdr mh;
	struct cmsghdr *cm;
	ssize_t len;

	for (;;) {
		mh = (struct msghdr){.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
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
		name[len] = '\0';
		n_fds = 0;
		for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
				n_fds = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
				memcpy(fds, CMSG_DATA(cm), n_fds * sizeof(int));
			}
		if (n_fds != 2 || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
		    strlen(name) + 1 != (size_t)len) {
			while (n_fds)
				safe_close(fds[--n_fds]);
			bad++;
			continue;
		}
		r = add_pair(p, name, fds[0], fds[1]);
		if (r == -ENOMEM)
			return r;
		if (r)
			bad++;
		else
			pairs++;
	}
	if (bad)
		log_warn("restart: %d malformed messages in a carrier of the previous instance: "
			 "those pairs close",
			 bad);
	return pairs;
}

int fd_carrier_unpack(struct passed_fds *p)
{
	size_t i, n = p->n, len = strlen(FD_CARRIER_PREFIX);
	int pairs = 0, r;

	for (i = 0; i < n; i++) {
		if (p->v[i].fd < 0 || !p->v[i].name || strncmp(p->v[i].name, FD_CARRIER_PREFIX, len))
			continue;
		r = unpack_one(p, p->v[i].fd);
		/* The entry stays, without its fd: its name still leaves systemd's store. */
		safe_close(passed_fds_take(p, i));
		if (r < 0)
			return r;
		pairs += r;
	}
	return pairs;
}
