// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon.h"
#include "dgram_forwarder.h"
#include "handover.h"
#include "listener.h"
#include "log.h"
#include "redirect.h"
#include "service.h"
#include "sockopt.h"
#include "util.h"

#define ACCEPT_BATCH 64

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct listener *l = userdata;
	char listen[160];
	int i, cfd, err;

	(void)s;
	(void)revents;
	for (i = 0; i < ACCEPT_BATCH; i++) {
		cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0) {
			if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
				return 0;
			/* EMFILE and friends: leave the connection queued and say why. */
			err = errno;
			address_format(&l->rc->listen, listen, sizeof(listen));
			log_fields_errno(LOG_WARNING,
					 LOG_CTX(.redirect = l->rc->name, .listen = listen), err,
					 "[%s] accept on %s", l->rc->name, l->rc->listen.path);
			return 0;
		}
		redirect_start(l->d, l, cfd);
		if (l->rc->once) {
			/* socat without fork: this one connection, then exit (listener_redirect_closed()). */
			listener_pause(l);
			return 0;
		}
	}
	return 0;
}

/* The socket systemd passed for this section, or one of our own. Returns the fd or -errno. */
static int listener_socket(const struct redirect_config *rc, struct listener *l,
			   const struct log_context *ctx)
{
	const char *why;
	int fd;

	fd = service_fd_claim(rc);
	if (fd >= 0) {
		l->activated = true;
		return fd;
	}
	if (fd != -ENOENT)
		return fd; /* logged */
	fd = rc->listen.kind == ADDRESS_UNIX_LISTEN ? handover_claim_listener(rc) : -ENOENT;
	if (fd >= 0) {
		l->adopted = true;
		return fd;
	}
	fd = unix_listener_open(&rc->listen, &why);
	if (fd == -EADDRINUSE)
		log_fields(LOG_ERR, ctx, "[%s] %s: another process is listening on it", rc->name,
			   rc->listen.path);
	else if (fd == -EEXIST)
		log_fields(LOG_ERR, ctx, "[%s] %s: exists and is not a socket", rc->name,
			   rc->listen.path);
	else if (fd < 0)
		log_fields_errno(LOG_ERR, ctx, fd, "[%s] %s: %s", rc->name, rc->listen.path, why);
	return fd;
}

static void listener_close(struct listener *l)
{
	dgram_forwarder_stop(l->dgram);
	l->dgram = NULL;
	l->io = sd_event_source_disable_unref(l->io);
	if (l->fd >= 0) {
		/* systemd keeps a passed or stored socket listening; the file stays for it. */
		if (!l->activated && !l->handed_over)
			unlink(l->rc->listen.path);
		l->fd = safe_close(l->fd);
	}
}

int listener_open(struct daemon *d, const struct redirect_config *rc, struct listener **out)
{
	char listen[160], target[160];
	const struct log_context *ctx =
	    LOG_CTX(.redirect = rc->name, .listen = listen, .target = target);
	struct listener *l;
	const char *why;
	int err;

	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->d = d;
	l->conf = *rc;
	l->rc = &l->conf;
	rc = l->rc;
	address_format(&rc->listen, listen, sizeof(listen));
	address_format(&rc->connect, target, sizeof(target));
	l->fd = listener_socket(rc, l, ctx);
	if (l->fd < 0) {
		err = l->fd;
		free(l);
		return err;
	}
	/* A datagram socket enters its sockhash before anyone may send to it: dgram_forwarder.c */
	if (rc->listen.kind == ADDRESS_UNIX_RECV)
		err = dgram_forwarder_start(d, l, &l->dgram);
	else
		err = sd_event_add_io(d->event, &l->io, l->fd, EPOLLIN, on_accept, l);
	if (err < 0) {
		log_fields_errno(LOG_ERR, ctx, err, "[%s] setting up %s", rc->name,
				 rc->listen.path);
		goto out_close;
	}
	/* A passed socket's file already has the mode and owner its .socket unit gave it. */
	err = l->activated ? 0 : unix_listener_publish(&rc->listen, &why);
	if (err) {
		log_fields_errno(LOG_ERR, ctx, err, "[%s] %s: %s", rc->name, rc->listen.path, why);
		goto out_close;
	}
	log_fields(LOG_INFO, ctx, "[%s] %s %s%s", rc->name,
		   l->dgram ? "receiving datagrams on" : "listening on", rc->listen.path,
		   l->activated ? " (socket passed by systemd)"
		   : l->adopted	 ? " (taken back from the previous instance)"
				 : "");
	*out = l;
	return 0;

out_close:
	listener_close(l);
	free(l);
	return err;
}

void listener_retire(struct listener *l)
{
	if (!l)
		return;
	listener_close(l);
	l->retired = true;
	if (!l->live)
		free(l);
}

void listener_pause(struct listener *l)
{
	if (l->io)
		sd_event_source_set_enabled(l->io, SD_EVENT_OFF);
}

struct listener *listener_placeholder(struct daemon *d, const char *section)
{
	struct listener *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->d = d;
	snprintf(l->conf.name, sizeof(l->conf.name), "%s", section);
	l->rc = &l->conf;
	l->fd = -1;
	l->retired = true;
	return l;
}

void listener_redirect_closed(struct listener *l)
{
	l->live--;
	/* Exit status as socat's: 1 if the target could not be reached. */
	if (l->rc->once && !l->live && l->accepted)
		sd_event_exit(l->d->event, l->failed ? 1 : 0);
	if (l->retired && !l->live)
		free(l);
}
