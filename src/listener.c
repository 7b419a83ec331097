// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon.h"
#include "dgram_forwarder.h"
#include "listener.h"
#include "log.h"
#include "redirect.h"
#include "sockopt.h"
#include "util.h"

#define ACCEPT_BATCH 64

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct listener *l = userdata;
	int i, cfd;

	(void)s;
	(void)revents;
	for (i = 0; i < ACCEPT_BATCH; i++) {
		cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0) {
			if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
				return 0;
			/* EMFILE and friends: leave the connection queued and say why. */
			log_errno(LOG_WARNING, errno, "[%s] accept on %s", l->rc->name,
				  l->rc->listen.path);
			return 0;
		}
		redirect_start(l->d, l, cfd);
	}
	return 0;
}

int listener_open(struct daemon *d, const struct redirect_config *rc, struct listener *l)
{
	const char *why;
	int err;

	memset(l, 0, sizeof(*l));
	l->d = d;
	l->rc = rc;
	l->fd = unix_listener_open(&rc->listen, &why);
	if (l->fd < 0) {
		err = l->fd;
		l->fd = -1;
		if (err == -EADDRINUSE)
			log_err("[%s] %s: another process is listening on it", rc->name,
				rc->listen.path);
		else if (err == -EEXIST)
			log_err("[%s] %s: exists and is not a socket", rc->name, rc->listen.path);
		else
			log_errno(LOG_ERR, err, "[%s] %s: %s", rc->name, rc->listen.path, why);
		return err;
	}
	/* A datagram socket enters the sockhash before anyone may send to it (see dgram_forwarder.c). */
	if (rc->listen.kind == ADDRESS_UNIX_RECV)
		err = dgram_forwarder_start(d, l, &l->dgram);
	else
		err = sd_event_add_io(d->event, &l->io, l->fd, EPOLLIN, on_accept, l);
	if (err < 0) {
		log_errno(LOG_ERR, err, "[%s] setting up %s", rc->name, rc->listen.path);
		goto out_close;
	}
	err = unix_listener_publish(&rc->listen, &why);
	if (err) {
		log_errno(LOG_ERR, err, "[%s] %s: %s", rc->name, rc->listen.path, why);
		goto out_close;
	}
	log_info("[%s] %s %s", rc->name,
		 l->dgram ? "receiving datagrams on" : "listening on", rc->listen.path);
	return 0;

out_close:
	listener_close(l);
	return err;
}

void listener_close(struct listener *l)
{
	if (!l || !l->rc)
		return;
	dgram_forwarder_stop(l->dgram);
	l->dgram = NULL;
	l->io = sd_event_source_disable_unref(l->io);
	if (l->fd >= 0) {
		unlink(l->rc->listen.path);
		l->fd = safe_close(l->fd);
	}
}
