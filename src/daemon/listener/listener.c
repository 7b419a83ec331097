// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auto_datapath.h"
#include "bpf_dataplane.h"
#include "dgram_forwarder.h"
#include "fd_spare.h"
#include "held_read.h"
#include "listener.h"
#include "log.h"
#include "peer_access.h"
#include "redirect.h"
#include "listen_socket.h"
#include "socket_activation.h"
#include "socket_address.h"
#include "sockopt.h"
#include "util.h"

static const struct listener_ops listener_ops; /* the calls up from its redirects, at the end */

#define ACCEPT_BATCH 64
/* Out of file descriptors and no spare to refuse with: try again after this long. */
#define ACCEPT_RETRY_USEC (100 * 1000)

/* max-children: no more accepts while at the limit; clients wait in the backlog. */
static bool at_limit(const struct listener *l)
{
	return l->rc->listen.max_children && l->live >= l->rc->listen.max_children;
}

static void accepting(struct listener *l, bool on)
{
	if (l->io && !l->retired && !l->env->handing_over && !l->env->stopping && !l->retry &&
	    !(l->rc->once && l->accepted))
		sd_event_source_set_enabled(l->io, on ? SD_EVENT_ON : SD_EVENT_OFF);
}

static int accept_again(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct listener *l = userdata;

	(void)s;
	(void)usec;
	l->retry = sd_event_source_unref(l->retry);
	accepting(l, !at_limit(l));
	return 0;
}

/*
 * accept() failed with err (EMFILE, ENFILE, ENOBUFS, ENOMEM). Refuse the waiting connection
 * with the spare descriptor, so that its client sees the connection closed at once instead
 * of waiting in the backlog; without one, stop accepting for ACCEPT_RETRY_USEC. Returns true
 * to go on accepting.
 */
static bool accept_failed(struct listener *l, int err)
{
	struct redirect_env *env = l->env;
	char listen[160];
	bool restored;
	int fd;

	address_format(&l->rc->listen, listen, sizeof(listen));
	if ((err == EMFILE || err == ENFILE) && fd_spare_release()) {
		fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0) {
			safe_close(fd);
			l->refused++;
		}
		restored = fd_spare_restore();
		log_fields_errno(LOG_WARNING, LOG_CTX(.redirect = l->rc->name, .listen = listen),
				 err, "[%s] refused a connection on %s: no file descriptor left",
				 l->rc->name, l->where);
		if (fd >= 0 && restored)
			return true;
	} else {
		log_fields_errno(LOG_WARNING, LOG_CTX(.redirect = l->rc->name, .listen = listen),
				 err, "[%s] accept on %s", l->rc->name, l->where);
	}
	/* Level-triggered: left enabled, the waiting connection would wake us at once again. */
	if (!l->retry && sd_event_add_time_relative(env->event, &l->retry, CLOCK_MONOTONIC,
						    ACCEPT_RETRY_USEC, 0, accept_again, l) >= 0)
		sd_event_source_set_enabled(l->io, SD_EVENT_OFF);
	return false;
}

/* allow-uid= and allow-gid=: returns true when the peer may use this listener. */
static bool peer_admitted(struct listener *l, int cfd)
{
	struct ucred cred = {.pid = 0};
	char listen[160];
	int r;

	if (l->rc->listen.kind != ADDRESS_UNIX_LISTEN)
		return true; /* only a unix peer has credentials the kernel vouches for */
	r = peer_access_check(cfd, &l->rc->allow, &cred);
	if (!r)
		return true;
	l->refused++;
	address_format(&l->rc->listen, listen, sizeof(listen));
	if (r == -EACCES)
		log_fields(
		    LOG_WARNING,
		    LOG_CTX(.redirect = l->rc->name, .listen = listen, .client_pid = cred.pid),
		    "[%s] refused pid %d (uid %u, gid %u) on %s: not in allow-uid or allow-gid",
		    l->rc->name, (int)cred.pid, (unsigned int)cred.uid, (unsigned int)cred.gid,
		    l->where);
	else
		log_fields_errno(LOG_WARNING, LOG_CTX(.redirect = l->rc->name, .listen = listen), r,
				 "[%s] refused a connection on %s: cannot read its credentials",
				 l->rc->name, l->where);
	return false;
}

/* max-redirects: at the daemon-wide limit a client is closed before any target is dialled. */
static bool slot_left(struct listener *l)
{
	char listen[160];

	/* Redirects carried in user space take no slot, but count toward the limit. */
	if (l->env->redirects.n < l->env->cfg->max_redirects &&
	    (!l->env->dp || l->userspace || !dataplane_slots_full(l->env->dp)))
		return true;
	l->refused++;
	address_format(&l->rc->listen, listen, sizeof(listen));
	log_fields(LOG_WARNING, LOG_CTX(.redirect = l->rc->name, .listen = listen),
		   "[%s] refused a connection on %s: %u redirects live, the max-redirects limit",
		   l->rc->name, l->where, l->env->cfg->max_redirects);
	return false;
}

/*
 * max-redirects-per-uid: a unix client whose uid already has that many live redirects is
 * closed at once, so that one local user cannot take every redirect (and the kernel memory
 * each holds) from the others. Other transports carry no uid the kernel vouches for.
 */
static bool uid_below_limit(struct listener *l, int cfd)
{
	unsigned int limit = l->env->cfg->max_redirects_per_uid, live;
	socklen_t len = sizeof(struct ucred);
	struct ucred cred;
	char listen[160];

	if (!limit || l->rc->listen.kind != ADDRESS_UNIX_LISTEN ||
	    getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return true;
	live = uid_tally_get(&l->env->uids, cred.uid);
	if (live < limit)
		return true;
	l->refused++;
	l->refused_uid_limit++;
	address_format(&l->rc->listen, listen, sizeof(listen));
	log_fields(LOG_WARNING,
		   LOG_CTX(.redirect = l->rc->name, .listen = listen, .client_pid = cred.pid),
		   "[%s] refused pid %d (uid %u) on %s: uid %u has %u redirects live, "
		   "max-redirects-per-uid is %u",
		   l->rc->name, (int)cred.pid, (unsigned int)cred.uid, l->where,
		   (unsigned int)cred.uid, live, limit);
	return false;
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct listener *l = userdata;
	int i, cfd, err;

	(void)s;
	(void)revents;
	for (i = 0; i < ACCEPT_BATCH; i++) {
		if (at_limit(l)) {
			char listen[160];

			address_format(&l->rc->listen, listen, sizeof(listen));
			log_fields(LOG_NOTICE, LOG_CTX(.redirect = l->rc->name, .listen = listen),
				   "[%s] %zu connections, the max-children limit: new clients wait",
				   l->rc->name, l->live);
			accepting(l, false);
			return 0;
		}
		cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0) {
			if (errno == EAGAIN || errno == ECONNABORTED)
				return 0;
			if (accept_failed(l, errno))
				continue;
			return 0;
		}
		if (!peer_admitted(l, cfd) || !uid_below_limit(l, cfd) || !slot_left(l)) {
			safe_close(cfd);
			continue;
		}
		socket_set_bufs(cfd, &l->rc->listen);
		l->accepted++;
		err = redirect_start(l->env, &l->owner, l->userspace, cfd); /* takes cfd */
		if (err) {
			l->failed++;
			log_errno(LOG_WARNING, err, "[%s] closed a connection on %s", l->rc->name,
				  l->where);
		}
		if (l->rc->once) {
			/* socat without fork: this one connection, then exit
			 * (listener_redirect_closed()). */
			listener_pause(l);
			return 0;
		}
	}
	return 0;
}

/*
 * A listening socket the previous instance stored (handover.c), bound where addr listens:
 * taken whatever section it was stored for, since a section may have been renamed while its
 * address stayed. The fd, or -ENOENT.
 */
static int stored_listener(struct passed_fds *p, const struct address *addr)
{
	size_t i, len = strlen(STORED_LISTENER_PREFIX);

	for (i = 0; i < p->n; i++)
		if (p->v[i].fd >= 0 && p->v[i].name &&
		    !strncmp(p->v[i].name, STORED_LISTENER_PREFIX, len) &&
		    socket_bound_to(p->v[i].fd, addr))
			return passed_fds_take(p, i);
	return -ENOENT;
}

/* The socket systemd passed for this section, or one of our own. Returns the fd or -errno. */
static int listener_socket(const struct redirect_config *rc, struct listener *l,
			   const struct log_context *ctx)
{
	char msg[PATH_MAX + 128];
	const char *why;
	int fd;

	fd = socket_activation_claim(l->env->passed, rc);
	if (fd >= 0) {
		l->activated = true;
		return fd;
	}
	if (fd != -ENOENT)
		return fd; /* logged */
	fd = stored_listener(l->env->passed, &rc->listen);
	if (fd >= 0 && !address_is_stream_listener(&rc->listen)) {
		/*
		 * A stream listener of the previous instance where this section now receives
		 * datagrams: out of its way (systemd's copy keeps listening, unreachable, until the
		 * start succeeds and it is dropped).
		 */
		log_fields(LOG_NOTICE, ctx,
			   "[%s] %s: the previous instance listened for streams here; its socket "
			   "file goes",
			   rc->name, l->where);
		if (address_has_file(&rc->listen))
			unlink(rc->listen.path);
		fd = safe_close(fd);
	}
	/* Bound by the previous instance: the file at the path now is taken as its. */
	if (fd >= 0 && address_has_file(&rc->listen) &&
	    socket_file_identify(rc->listen.path, &l->file)) {
		/*
		 * Nobody can connect to it any more: its file was removed since. A new socket in
		 * its place; the stored one stays in the fd store until the start succeeds.
		 */
		log_fields(LOG_NOTICE, ctx,
			   "[%s] %s: the listening socket handed over has no socket file any more; "
			   "binding a new one",
			   rc->name, l->where);
		fd = safe_close(fd);
	}
	if (fd >= 0) {
		l->adopted = true;
		return fd;
	}
	fd = address_has_file(&rc->listen)
		 ? unix_listener_open(&rc->listen, &l->file, msg, sizeof(msg), &why)
		 : net_listener_open(&rc->listen, &why);
	if (fd == -EADDRINUSE)
		log_fields(LOG_ERR, ctx, "[%s] %s: another process is listening on it", rc->name,
			   l->where);
	else if (fd == -EEXIST)
		log_fields(LOG_ERR, ctx, "[%s] %s: exists and is not a socket", rc->name, l->where);
	else if (fd < 0)
		log_fields_errno(LOG_ERR, ctx, fd, "[%s] %s: %s", rc->name, l->where, why);
	return fd;
}

/* The socket file goes, if it is still the one bound: never someone else's at its path. */
static void listener_unlink(struct listener *l)
{
	int r = unix_listener_unlink(&l->rc->listen, &l->file);

	if (r == -ESTALE)
		log_notice("[%s] %s: the socket file was replaced since this daemon bound it; "
			   "left in place",
			   l->rc->name, l->where);
	else if (r)
		log_errno(LOG_WARNING, r, "[%s] %s: cannot remove the socket file", l->rc->name,
			  l->where);
}

static void listener_close(struct listener *l)
{
	dgram_forwarder_stop(l->dgram);
	l->dgram = NULL;
	l->io = sd_event_source_disable_unref(l->io);
	l->retry = sd_event_source_disable_unref(l->retry);
	if (l->fd >= 0) {
		/* systemd keeps a passed or stored socket listening; the file stays for it. */
		if (!l->activated && !l->handed_over && address_has_file(&l->rc->listen))
			listener_unlink(l);
		l->fd = safe_close(l->fd);
	}
}

/* datapath=kernel: one warning for each way the kernel path can lose this section's bytes. */
static void warn_hazard(void *ctx, const struct auto_hazard *h)
{
	const struct listener *l = ctx;

	if (h->loses)
		log_fields(LOG_WARNING, LOG_CTX(.redirect = l->rc->name),
			   "[%s] datapath=kernel: %s (hazard %s; datapath=auto runs such a "
			   "section in user space)",
			   l->rc->name, h->why, h->name);
}

int listener_open(struct redirect_env *env, const struct redirect_config *rc, struct listener **out)
{
	return listener_open_on(env, rc, -1, false, NULL, out);
}

int listener_open_on(struct redirect_env *env, const struct redirect_config *rc, int fd,
		     bool activated, const struct socket_file_id *file, struct listener **out)
{
	char listen[160], target[160];
	const struct log_context *ctx =
	    LOG_CTX(.redirect = rc->name, .listen = listen, .target = target);
	struct listener *l;
	const char *why;
	int err;

	l = calloc(1, sizeof(*l));
	if (!l) {
		if (fd >= 0)
			safe_close(fd);
		return -ENOMEM;
	}
	l->env = env;
	l->conf = *rc;
	l->rc = &l->conf;
	l->owner = (struct redirect_owner){.l = l, .rc = l->rc, .ops = &listener_ops};
	rc = l->rc;
	address_format(&rc->listen, listen, sizeof(listen));
	address_format(&rc->connect, target, sizeof(target));
	snprintf(l->where, sizeof(l->where), "%s",
		 address_has_file(&rc->listen) ? rc->listen.path : listen);
	if (!env->dp)
		listener_set_userspace(l, env->userspace_why);
	else if (env->kernel_path_closed)
		listener_set_userspace(l, "no section used the kernel path at start, so the daemon "
					  "dropped CAP_NET_ADMIN, which it needs; restart it to use "
					  "the kernel path");
	else if (!address_has_file(&rc->listen))
		listener_set_userspace(l, "the kernel path takes unix clients only");
	else if (env->cfg->datapath == DATAPATH_AUTO &&
		 (why = auto_datapath_userspace_why(dataplane_features(env->dp), &rc->listen,
						    &rc->connect)))
		listener_set_userspace(l, why);
	else
		auto_datapath_hazards(dataplane_features(env->dp), &rc->listen, &rc->connect,
				      warn_hazard, l);
	l->kept = fd >= 0;
	l->activated = activated;
	if (file)
		l->file = *file;
	l->fd = l->kept ? fd : listener_socket(rc, l, ctx);
	if (l->fd < 0) {
		err = l->fd;
		free(l);
		return err;
	}
	/*
	 * Every skb a client sends then carries its credentials: an accepted socket inherits
	 * SO_PASSCRED from its listener, and one not yet accepted gets them anyway. held_read()
	 * tells the socket's own queue from the psock's by them, and a read never merges skbs
	 * whose credentials differ, so an skb sent before the daemon set the option on the
	 * accepted socket would stop the sweep's one read early (dir_sweep()).
	 */
	err =
	    rc->listen.kind == ADDRESS_UNIX_LISTEN && !l->userspace ? held_read_prepare(l->fd) : 0;
	if (err) {
		log_fields_errno(LOG_ERR, ctx, err, "[%s] %s: SO_PASSCRED", rc->name, l->where);
		goto out_close;
	}
	/* A datagram socket enters its sockhash before anyone may send to it: dgram_forwarder.c */
	if (rc->listen.kind == ADDRESS_UNIX_RECV) {
		err = dgram_forwarder_start(env, &l->owner, l->fd, l->activated, l->userspace,
					    &l->dgram);
		if (!err && !l->userspace && dgram_forwarder_userspace(l->dgram))
			listener_set_userspace(l, "no spare datagram verdict left until the "
						  "next restart");
	} else
		err = sd_event_add_io(env->event, &l->io, l->fd, EPOLLIN, on_accept, l);
	if (err < 0) {
		log_fields_errno(LOG_ERR, ctx, err, "[%s] setting up %s", rc->name, l->where);
		goto out_close;
	}
#ifdef VSOCKMAP_TEST_KNOBS
	/* Test builds only (Makefile, TEST_KNOBS): a window between the bind and the publish. */
	if (getenv("VSOCKMAPD_TEST_PUBLISH_DELAY_US"))
		usleep(strtoul(getenv("VSOCKMAPD_TEST_PUBLISH_DELAY_US"), NULL, 10));
#endif
	/* A passed socket's file already has the mode and owner its .socket unit gave it. */
	err = l->activated || !address_has_file(&rc->listen)
		  ? 0
		  : unix_listener_publish(&rc->listen, &l->file, &why);
	if (err) {
		log_fields_errno(LOG_ERR, ctx, err, "[%s] %s: %s", rc->name, l->where, why);
		goto out_close;
	}
	log_fields(LOG_INFO, ctx, "[%s] %s %s%s; data path: %s%s%s", rc->name,
		   l->dgram ? "receiving datagrams on" : "listening on", l->where,
		   l->kept	  ? " (the socket of the section it replaces, backlog included)"
		   : l->activated ? " (socket passed by systemd)"
		   : l->adopted	  ? " (taken back from the previous instance)"
				  : "",
		   l->userspace ? "user space (" : "kernel", l->userspace ? l->userspace_why : "",
		   l->userspace ? ")" : "");
	*out = l;
	return 0;

out_close:
	/* Taken from the fd store: still there, its file systemd's copy's (the start failed). */
	l->handed_over |= l->adopted;
	listener_close(l);
	free(l);
	return err;
}

void listener_set_userspace(struct listener *l, const char *why)
{
	l->userspace = true;
	snprintf(l->userspace_why, sizeof(l->userspace_why), "%s", why);
}

static bool listener_target_refused(struct listener *l, int err)
{
	static const char why[] = "the kernel cannot put the target socket in a sockhash "
				  "(EOPNOTSUPP; vsock needs Linux 6.4)";

	if (err != -EOPNOTSUPP || l->env->cfg->datapath != DATAPATH_AUTO)
		return false;
	if (!l->userspace) {
		listener_set_userspace(l, why);
		log_notice("[%s] data path: user space from now on: %s", l->rc->name, why);
	}
	return true;
}

int listener_give_socket(struct listener *l, bool *activated, struct socket_file_id *file)
{
	int fd = l->fd;

	if (fd < 0 || l->dgram)
		return -ENOENT;
	l->io = sd_event_source_disable_unref(l->io);
	l->retry = sd_event_source_disable_unref(l->retry);
	*activated = l->activated;
	*file = l->file;
	l->fd = -1; /* listener_close() neither closes it nor removes its file */
	return fd;
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

struct listener *listener_placeholder(struct redirect_env *env, const char *section,
				      enum address_kind listen_kind, enum address_kind target_kind)
{
	struct listener *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->env = env;
	snprintf(l->conf.name, sizeof(l->conf.name), "%s", section);
	l->conf.listen.kind = listen_kind;  /* a TCP client's linger */
	l->conf.connect.kind = target_kind; /* the unix target's half-close rule */
	l->rc = &l->conf;
	l->owner = (struct redirect_owner){.l = l, .rc = l->rc, .ops = &listener_ops};
	l->fd = -1;
	l->retired = true;
	return l;
}

void listener_limit_changed(struct listener *l)
{
	accepting(l, !at_limit(l));
}

static void listener_redirect_opened(struct listener *l)
{
	l->live++;
}

static void listener_redirect_failed(struct listener *l)
{
	l->failed++;
}

const struct traffic *listener_closed_traffic(const struct listener *l)
{
	return &l->closed;
}

static void listener_redirect_closed(struct listener *l, const struct traffic *moved)
{
	traffic_add(&l->closed, moved);
	l->live--;
	if (l->rc->listen.max_children && l->live + 1 == l->rc->listen.max_children)
		accepting(l, true);
	/* Exit status as socat's: 1 if the target could not be reached. */
	if (l->rc->once && !l->live && l->accepted)
		sd_event_exit(l->env->event, l->failed ? 1 : 0);
	if (l->retired && !l->live)
		free(l);
}

static const struct listener_ops listener_ops = {
    .redirect_opened = listener_redirect_opened,
    .redirect_failed = listener_redirect_failed,
    .redirect_closed = listener_redirect_closed,
    .target_refused = listener_target_refused,
};
