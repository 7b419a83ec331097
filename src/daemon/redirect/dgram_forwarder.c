// SPDX-License-Identifier: GPL-2.0-only
/*
 * The bound datagram socket enters its own sockhash (struct dgram_plane) before its file may
 * be used, and stays there for the daemon's lifetime: taking a socket out of a sockhash while
 * someone sends to it can free an skb (docs/kernel-notes.md), and a socket entering it with
 * datagrams already queued would leave them behind. While there is no target, or while the
 * daemon still forwards what was held, the verdict passes datagrams up to the socket and
 * records each one's length; the daemon sends them on one by one, then opens the gate.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "bpf_dataplane.h"
#include "config.h"
#include "dgram_forwarder.h"
#include "gate.h"
#include "held_read.h"
#include "log.h"
#include "sockopt.h"
#include "target_connect.h"
#include "util.h"

#define DGRAM_BUF_SIZE (256 * 1024)
/*
 * A unix datagram is at most its sender's sk_sndbuf - 32 (unix_dgram_sendmsg()): 2 *
 * wmem_max for anyone (416 KiB on a stock kernel), more only with SO_SNDBUFFORCE. The
 * buffer grows to the datagram, up to this; a longer one (root's) is carried in pieces.
 */
#define DGRAM_BUF_MAX (64 * 1024 * 1024)
#define BACKOFF_MIN_USEC (100 * USEC_PER_MSEC)
#define BACKOFF_MAX_USEC (30 * USEC_PER_SEC)

enum dgram_state { DG_CONNECTING, DG_SYNC, DG_ACTIVE, DG_BACKOFF };

struct dgram_forwarder {
	struct redirect_env *env;
	const struct redirect_owner *owner; /* its listener */
	int fd;				    /* the owner's socket, where the datagrams arrive */
	bool activated;			    /* fd was passed by systemd */
	struct dgram_plane *gp;
	struct vsockmap_gate *gate;
	uint32_t slot;
	uint64_t id;
	enum dgram_state state;
	int target_fd;
	uint64_t target_cookie;
	sd_event_source *target_io;
	sd_event_source *sock_io; /* EPOLLIN on the bound socket while syncing */
	sd_event_source *timer;
	uint64_t backoff_usec;
	struct timed_connect connect;
	uint64_t opened_usec;
	char *buf;
	size_t buf_size;
	size_t piece_left; /* of a held datagram longer than the buffer can grow */
	size_t pending; /* a datagram read from the socket, not yet taken by a target */
	uint64_t held_taken; /* bytes of gate->held read from the socket */
	/*
	 * The daemon forwards every datagram: with gp, the gate never opens and the verdict
	 * holds them all (a target the sockhash refuses); without, nothing is in a sockhash.
	 */
	bool userspace;
	bool keep_bounds;	 /* the target is seqpacket */
	uint64_t dropped_logged; /* dropped_packets already in the log */
	uint64_t user_bytes, user_packets;
	uint64_t discarded_bytes; /* sent back by the target */
	uint64_t started_usec;
	unsigned int failures;
};

static void dgram_step(struct dgram_forwarder *f);

static const char *target_name(struct dgram_forwarder *f, char *buf, size_t len)
{
	address_format(&f->owner->rc->connect, buf, len);
	return buf;
}

static void set_timer(struct dgram_forwarder *f, uint64_t deadline)
{
	sd_event_source_set_time(f->timer, deadline);
	sd_event_source_set_enabled(f->timer, SD_EVENT_ONESHOT);
}

static void watch_socket(struct dgram_forwarder *f, bool on)
{
	sd_event_source_set_enabled(f->sock_io, on ? SD_EVENT_ON : SD_EVENT_OFF);
}

static void watch_target(struct dgram_forwarder *f, uint32_t events)
{
	if (f->target_io)
		sd_event_source_set_io_events(f->target_io, events);
}

/* Close the gate first, so that from now on the verdict holds datagrams for the next target. */
static void drop_target(struct dgram_forwarder *f)
{
	if (f->gp) {
		gate_close(f->gate);
		dgram_plane_set_target(f->gp, 0);
		if (f->target_fd >= 0 && !f->userspace)
			dataplane_remove(f->env->dp, f->target_cookie);
	}
	f->target_io = sd_event_source_disable_unref(f->target_io);
	f->target_fd = safe_close(f->target_fd);
	watch_socket(f, false);
}

static void retry_later(struct dgram_forwarder *f, int err, const char *what)
{
	char target[160];

	drop_target(f);
	f->failures++;
	f->backoff_usec = f->backoff_usec ? f->backoff_usec * 2 : BACKOFF_MIN_USEC;
	if (f->backoff_usec > BACKOFF_MAX_USEC)
		f->backoff_usec = BACKOFF_MAX_USEC;
	log_warn("[%s] %s %s: %s; redialling in %" PRIu64 " ms", f->owner->rc->name, what,
		 target_name(f, target, sizeof(target)), strerror(-err),
		 f->backoff_usec / USEC_PER_MSEC);
	f->state = DG_BACKOFF;
	set_timer(f, now_usec() + f->backoff_usec);
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	(void)s;
	(void)fd;
	(void)revents;
	dgram_step(userdata);
	return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	(void)s;
	(void)usec;
	dgram_step(userdata);
	return 0;
}

static void dial(struct dgram_forwarder *f)
{
	int in_progress, err;

	f->target_fd =
	    timed_connect_start(&f->connect, &f->owner->rc->connect,
				f->env->cfg->connect_timeout_ms, now_usec(), &in_progress);
	if (f->target_fd < 0) {
		err = f->target_fd;
		f->target_fd = -1;
		retry_later(f, err, "connect");
		return;
	}
	err = sd_event_add_io(f->env->event, &f->target_io, f->target_fd, EPOLLOUT, on_io, f);
	if (err < 0) {
		retry_later(f, err, "watching");
		return;
	}
	f->state = DG_CONNECTING;
	set_timer(f, f->connect.deadline_usec);
}

/* Send the datagram in buf to the target. 1: sent, 0: target full, -errno: target broken. */
static int send_pending(struct dgram_forwarder *f)
{
	ssize_t n;

	n = send(f->target_fd, f->buf, f->pending, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	/* A stream target takes part of a datagram only when nearly full: keep the rest. */
	f->user_bytes += n;
	if ((size_t)n < f->pending) {
		memmove(f->buf, f->buf + n, f->pending - n);
		f->pending -= n;
		return 0;
	}
	f->user_packets++;
	f->pending = 0;
	return 1;
}

/* Room for a datagram of len bytes (up to DGRAM_BUF_MAX): the buffer's size after. */
static size_t buf_fit(struct dgram_forwarder *f, size_t len)
{
	char *buf;

	if (len <= f->buf_size || f->buf_size >= DGRAM_BUF_MAX)
		return f->buf_size;
	if (len > DGRAM_BUF_MAX)
		len = DGRAM_BUF_MAX;
	buf = realloc(f->buf, len);
	if (!buf)
		return f->buf_size; /* it goes on in pieces */
	f->buf = buf;
	f->buf_size = len;
	return len;
}

/*
 * A datagram from the socket's own queue, whole: its length first (MSG_PEEK | MSG_TRUNC
 * gives a unix datagram's full length), so that one longer than the buffer is not cut.
 */
static ssize_t read_native(struct dgram_forwarder *f)
{
	char first;
	ssize_t n = recv(f->fd, &first, 1, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);

	if (n > 0)
		buf_fit(f, n);
	n = recv(f->fd, f->buf, f->buf_size, MSG_DONTWAIT);
	return n < 0 ? -errno : n;
}

/*
 * Read the oldest held datagram, whole: reading a psock queue would merge messages. Returns
 * its length, -EAGAIN if nothing is held, -EINPROGRESS if one is counted but the kernel has
 * not queued it yet. held_read() keeps the read off datagrams the verdict has not seen.
 */
static ssize_t read_held(struct dgram_forwarder *f)
{
	uint32_t len = DGRAM_BUF_SIZE;
	bool recorded;
	uint64_t held;
	ssize_t n;

	if (!f->gp)
		return read_native(f);
	held = gate_held(f->gate);
	/*
	 * Datagrams queued before the socket entered its sockhash never met the verdict. Only a
	 * socket systemd passed can have them: the daemon's own is renamed into place after it
	 * entered (unix_listener_publish()). While the gate has never opened nothing was
	 * redirected, so they are read as they come, in order with what the verdict held. On
	 * the daemon's own socket a datagram without the verdict's mark is one the verdict is
	 * about to see; reading it here could overtake a held one still on its way.
	 */
	if (f->activated && !f->gate->open && held_read_native(f->fd) == 1) {
		n = read_native(f);
		if (n != -EAGAIN)
			return n;
	}
	if (f->held_taken == held)
		return -EAGAIN;
	/*
	 * Not recorded: more were held than the length queue holds. For a stream target the
	 * bounds mean nothing; a seqpacket target's verdict dropped those (report_dropped()).
	 * Longer than the buffer can grow (a root sender's SO_SNDBUFFORCE): its length is
	 * taken off, and it goes on in pieces, in order; the datagrams after it keep theirs.
	 */
	recorded = !f->piece_left && !dgram_plane_peek_len(f->gp, &len);
	if (recorded && len > buf_fit(f, len)) {
		dgram_plane_pop_len(f->gp);
		f->piece_left = len;
		recorded = false;
	}
	if (!recorded)
		len = f->piece_left && f->piece_left < f->buf_size ? f->piece_left : f->buf_size;
	n = held_read(f->fd, f->buf, len);
	if (n == -EAGAIN)
		return -EINPROGRESS;
	if (n < 0)
		return n;
	f->piece_left -= f->piece_left ? (size_t)n : 0;
	if (recorded)
		dgram_plane_pop_len(f->gp);
	f->held_taken += n;
	return n;
}

/*
 * Datagrams the verdict dropped since the last report: held for a seqpacket target beyond
 * the lengths the kernel records (dgram_plane_held_max()), so they could not keep their
 * bounds. Logged, never silent: the senders were told nothing.
 */
static void report_dropped(struct dgram_forwarder *f)
{
	struct vsockmap_counters c;

	if (!f->gp || !f->keep_bounds ||
	    dataplane_counters(f->env->dp, f->slot, VSOCKMAP_DIR_TO_TARGET, &c) ||
	    c.dropped_packets == f->dropped_logged)
		return;
	log_warn("[%s] %" PRIu64 " datagrams dropped: more than %" PRIu64 " were held for the "
		 "seqpacket target, the most whose bounds the kernel records",
		 f->owner->rc->name, (uint64_t)(c.dropped_packets - f->dropped_logged),
		 dgram_plane_held_max(f->gp));
	f->dropped_logged = c.dropped_packets;
}

/*
 * Forward what the verdict held while there was no target, then open the gate with
 * released = every byte held so far, all of which the daemon has read and sent.
 */
static void sync_held(struct dgram_forwarder *f)
{
	ssize_t n;
	int err;

	for (;;) {
		if (f->pending) {
			err = send_pending(f);
			if (err < 0) {
				retry_later(f, err, "sending to");
				return;
			}
			if (!err) {
				watch_socket(f, false);
				watch_target(f, EPOLLOUT);
				return;
			}
		}
		n = read_held(f);
		if (n >= 0) {
			f->pending = n;
			continue;
		}
		if (n == -EAGAIN)
			break;
		if (n != -EINPROGRESS)
			log_errno(LOG_WARNING, n, "[%s] reading held datagrams",
				  f->owner->rc->name);
		/* Counted, about to be queued (or a transient error): look again in a moment. */
		set_timer(f, now_usec() + (n == -EINPROGRESS ? USEC_PER_MSEC : BACKOFF_MIN_USEC));
		return;
	}
	report_dropped(f);
	watch_target(f, EPOLLIN | EPOLLRDHUP);
	if (f->userspace) {
		watch_socket(f, true); /* the next datagram wakes the daemon */
		f->backoff_usec = 0;
		return;
	}
	if (gate_release(f->gate, f->held_taken))
		f->opened_usec = now_usec();
	if (now_usec() - f->opened_usec < GATE_VERDICT_GRACE_USEC) {
		watch_socket(f, true);
		set_timer(f, f->opened_usec + GATE_VERDICT_GRACE_USEC);
		return;
	}
	watch_socket(f, false);
	f->state = DG_ACTIVE;
	f->backoff_usec = 0;
}

static void on_connected(struct dgram_forwarder *f)
{
	char target[160];
	int err;

	err = socket_cookie(f->target_fd, &f->target_cookie);
	if (err) {
		retry_later(f, err, "connect");
		return;
	}
	socket_force_sndbuf(f->target_fd, f->env->cfg->sndbuf);
	if (!f->userspace) {
		err = dataplane_add_destination(f->env->dp, f->target_cookie, f->target_fd);
		err = err ?: dgram_plane_set_target(f->gp, f->target_cookie);
		/* Refused: the verdict keeps holding every datagram; the daemon sends them all. */
		if (f->owner->ops->target_refused(f->owner->l, err)) {
			f->userspace = true;
			err = 0;
		}
	}
	if (err) {
		retry_later(f, err, "adding the target to the sockhash:");
		return;
	}
	if (f->failures)
		log_notice("[%s] connected to %s again after %u failed attempts",
			   f->owner->rc->name, target_name(f, target, sizeof(target)), f->failures);
	f->failures = 0;
	sd_event_source_set_enabled(f->timer, SD_EVENT_OFF);
	f->state = DG_SYNC;
	sync_held(f);
}

/* A datagram redirect has no way back: read what the target sends and count it. */
static void discard_replies(struct dgram_forwarder *f)
{
	ssize_t n;

	while ((n = recv(f->target_fd, f->buf + f->pending, f->buf_size - f->pending,
			 MSG_DONTWAIT)) > 0)
		f->discarded_bytes += n;
}

static bool target_gone(struct dgram_forwarder *f)
{
	struct pollfd pfd = { .fd = f->target_fd, .events = POLLRDHUP };

	return poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static void dgram_step(struct dgram_forwarder *f)
{
	int err;

	switch (f->state) {
	case DG_BACKOFF:
		dial(f);
		return;
	case DG_CONNECTING:
		err = timed_connect_check(&f->connect, f->target_fd, now_usec());
		if (err > 0)
			on_connected(f);
		else if (err < 0)
			retry_later(f, err, "connect");
		return;
	case DG_SYNC:
	case DG_ACTIVE:
		discard_replies(f);
		if (target_gone(f)) {
			retry_later(f, -ECONNRESET, "lost");
			return;
		}
		if (f->state == DG_SYNC)
			sync_held(f);
		return;
	}
}

/*
 * The socket's own verdict instance, and the socket in its sockhash. With no spare plane left
 * and CAP_BPF dropped (a reload added more UNIX-RECV sections than the spares), the listener
 * runs in user space until the next restart, and says so.
 */
static int kernel_start(struct dgram_forwarder *f)
{
	const struct redirect_config *rc = f->owner->rc;
	int err;

	err = dgram_plane_take(f->env->dp, &f->gp);
	if (err == -EPERM) {
		f->gp = NULL;
		log_notice("[%s] no datagram verdict left to load one without CAP_BPF (the daemon "
			   "loads %d spares at start, then drops it): this section runs in user "
			   "space until the next restart",
			   rc->name, DGRAM_SPARES);
		f->userspace = true; /* the listener says so (dgram_forwarder_userspace()) */
		return 0;
	}
	if (err) {
		f->gp = NULL;
		return log_errno(LOG_ERR, err, "[%s] loading the dgram verdict program", rc->name);
	}
	f->slot = dgram_plane_slot(f->gp);
	f->gate = dataplane_gate(f->env->dp, f->slot, VSOCKMAP_DIR_TO_TARGET);
	f->keep_bounds = rc->connect.sock_type == SOCK_SEQPACKET;
	dgram_plane_set_keep_bounds(f->gp, f->keep_bounds);
	err = held_read_prepare(f->fd);
	err = err ?: dgram_plane_set_socket(f->gp, f->fd);
	if (err) {
		log_errno(LOG_ERR, err, "[%s] adding %s to its sockhash", rc->name,
			  rc->listen.path);
		dgram_plane_close(f->env->dp, f->gp);
		f->gp = NULL;
	}
	return err;
}

static void kernel_stop(struct dgram_forwarder *f)
{
	dgram_plane_give_back(f->env->dp, f->gp);
	f->gp = NULL;
}

int dgram_forwarder_start(struct redirect_env *env, const struct redirect_owner *owner, int fd,
			  bool activated, bool userspace, struct dgram_forwarder **out)
{
	struct dgram_forwarder *f;
	int err;

	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->env = env;
	f->owner = owner;
	f->fd = fd;
	f->activated = activated;
	f->target_fd = -1;
	f->id = redirect_table_new_id(&env->redirects);
	f->started_usec = now_usec();
	f->buf = malloc(DGRAM_BUF_SIZE);
	f->buf_size = DGRAM_BUF_SIZE;
	if (!f->buf) {
		free(f);
		return -ENOMEM;
	}
	f->userspace = userspace;
	if (!f->userspace) {
		err = kernel_start(f);
		if (err)
			goto out_free;
	}
	err = sd_event_add_time(env->event, &f->timer, CLOCK_MONOTONIC, 0, TIMER_ACCURACY_USEC,
				on_timer, f);
	err = err < 0 ? err : sd_event_add_io(env->event, &f->sock_io, fd, EPOLLIN, on_io, f);
	if (err < 0)
		goto out_sources;
	sd_event_source_set_enabled(f->timer, SD_EVENT_OFF);
	watch_socket(f, false);
	dial(f);
	*out = f;
	return 0;

out_sources:
	sd_event_source_disable_unref(f->timer);
	sd_event_source_disable_unref(f->sock_io);
	kernel_stop(f);
out_free:
	free(f->buf);
	free(f);
	return err;
}

void dgram_forwarder_stop(struct dgram_forwarder *f)
{
	if (!f)
		return;
	report_dropped(f);
	drop_target(f);
	sd_event_source_disable_unref(f->timer);
	sd_event_source_disable_unref(f->sock_io);
	kernel_stop(f);
	free(f->buf);
	free(f);
}

bool dgram_forwarder_userspace(const struct dgram_forwarder *f)
{
	return f->userspace;
}

uint64_t dgram_forwarder_progress_mark(const struct dgram_forwarder *f)
{
	int q = f->target_fd >= 0 ? socket_outq(f->target_fd) : 0;

	return f->user_bytes - (uint64_t)(q > 0 ? q : 0);
}

bool dgram_forwarder_settled(struct dgram_forwarder *f, uint64_t epoch)
{
	struct vsockmap_queue_info qi;
	struct vsockmap_counters c;
	int err;

	/* Target away: nothing can reach it now, and a redial may take longer than a stop. */
	if (f->state == DG_BACKOFF || f->state == DG_CONNECTING)
		return true;
	if (f->pending || (f->state == DG_SYNC && !f->userspace))
		return false;
	/* A unix dgram socket's SIOCINQ is the length of its next datagram: 0 when none. */
	if (f->userspace)
		return socket_inq(f->fd) == 0;
	if (gate_held(f->gate) != f->held_taken)
		return false;
	/* Redirected, still in the target's psock backlog: closing the target would free it. */
	err = dataplane_queue_info(f->env->dp, f->target_fd, f->target_cookie, epoch, now_usec(),
				   &qi);
	if (err == -ENOENT)
		return true;
	if (err != -EOPNOTSUPP)
		return !err && !qi.backlog_skbs && !qi.partial_bytes;
	/*
	 * No exact signal. Only a stop asks, and a stop is bounded by drain-timeout: it waits
	 * that out (stop_drain.c) unless nothing was ever redirected. The timed heuristic a
	 * stream's EOF uses is not enough here: a slow vsock reader grants credit in bursts, so
	 * the target looks writable while the worker still holds datagrams (measured in the
	 * VM: 10.8 of 12.5 MiB delivered when the heuristic decided).
	 */
	if (dataplane_counters(f->env->dp, f->slot, VSOCKMAP_DIR_TO_TARGET, &c))
		return true;
	return !c.packets;
}

void dgram_forwarder_get_info(struct dgram_forwarder *f, struct redirect_info *info)
{
	static const char *const states[] = { "connecting", "syncing", "open", "backoff" };
	struct vsockmap_counters c;

	memset(info, 0, sizeof(*info));
	info->id = f->id;
	info->name = f->owner->rc->name;
	info->state = states[f->state];
	info->datapath[VSOCKMAP_DIR_TO_TARGET] = f->userspace ? "daemon" : "kernel";
	info->datapath[VSOCKMAP_DIR_TO_CLIENT] = "daemon";
	info->age_usec = now_usec() - f->started_usec;
	info->client_rcvq_bytes = -1;
	info->moved.bytes[VSOCKMAP_DIR_TO_TARGET] = f->user_bytes;
	info->moved.packets[VSOCKMAP_DIR_TO_TARGET] = f->user_packets;
	info->moved.bytes[VSOCKMAP_DIR_TO_CLIENT] = f->discarded_bytes;
	if (f->gp && !dataplane_counters(f->env->dp, f->slot, VSOCKMAP_DIR_TO_TARGET, &c)) {
		info->moved.bytes[VSOCKMAP_DIR_TO_TARGET] += c.bytes;
		info->moved.packets[VSOCKMAP_DIR_TO_TARGET] += c.packets;
	}
}
