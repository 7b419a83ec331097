// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "daemon.h"
#include "gate.h"
#include "held_read.h"
#include "listener.h"
#include "log.h"
#include "redirect.h"
#include "redirect_internal.h"
#include "sockopt.h"
#include "target_connect.h"
#include "util.h"

#define DRAIN_POLL_USEC (2 * USEC_PER_MSEC)
/* Held bytes counted by the verdict reach the socket within microseconds. */
#define HELD_POLL_USEC (1 * USEC_PER_MSEC)
/* Bytes left behind at the insert that have not moved for this long: take them (dir_sweep()). */
#define STALL_USEC (20 * USEC_PER_MSEC)

static void redirect_step(struct redirect *r);

/*
 * Every redirect endpoint is in one epoll set of our own, which the event loop watches as a
 * single source (owned by the loop, freed with it). sd-event dispatches one source per
 * iteration and asks epoll again every time: with an io source per endpoint, N redirects
 * ready at once (N clients closing) cost N epoll_wait()s over all N ready sockets, which made
 * tearing down 5,000 idle redirects take 3 s. Here one dispatch steps a whole batch. It also
 * saves two sd-event sources (RSS) per redirect.
 */
#define EVENTS_BATCH 256

static struct {
	sd_event_source *src; /* borrowed: the loop owns it; NULL until the first redirect */
	int epfd;
	bool dispatching;
	bool batch_pass; /* stepping the batch: drains wait for one iterator pass after it */
	unsigned int batch;
	struct redirect *zombies;    /* freed during the batch, free()d at its end */
	struct redirect *wants_pass; /* drains that began in this batch */
} events = {.epfd = -1};

/* Bytes read from the source that the destination has not taken yet. */
static void collect_counters(struct redirect *r, struct redirect_info *info);

static const char *target_text(struct redirect *r, char *buf, size_t len)
{
	address_format(&r->l->rc->connect, buf, len);
	return buf;
}

/* ---- lifetime ---- */

static void redirect_unlink(struct redirect *r)
{
	struct daemon *d = r->d;

	if (r->prev)
		r->prev->next = r->next;
	else if (d->redirects == r)
		d->redirects = r->next;
	if (r->next)
		r->next->prev = r->prev;
	r->next = r->prev = NULL;
	d->n_redirects--;
}

/* Only the entries each socket has: no failed deletes. */
static void remove_map_entries(struct redirect *r)
{
	if (r->ep[CLIENT].in_map)
		dataplane_remove_source(r->d->dp, r->ep[CLIENT].cookie);
	if (r->linked)
		dataplane_unlink(r->d->dp, r->ep[CLIENT].cookie);
	if (r->ep[TARGET].in_map)
		dataplane_remove_destination(r->d->dp, r->ep[TARGET].cookie);
}

/*
 * A vsock socket shut down for reading answers every recv() with 0 and never hands out its
 * receive queue again, so a stop, an idle close or `close ID` on a VSOCK-LISTEN client drops
 * what the client had sent and we had not read. Linux 6.17 answers SIOCINQ on vsock: there
 * the loss is counted; on older kernels it can only be said.
 */
static void log_vsock_discard(const struct redirect *r)
{
	int n;

	if (r->l->conf.listen.kind != ADDRESS_VSOCK_LISTEN || !r->stop_reading_target ||
	    r->handed_over || r->ep[CLIENT].fd < 0)
		return;
	n = socket_inq(r->ep[CLIENT].fd);
	if (n > 0)
		redirect_log(r, LOG_WARNING,
			     "vsock discarded %d bytes the client had sent "
			     "before the close (a vsock socket shut down for reading drops its "
			     "receive queue)",
			     n);
	else if (n < 0 && !r->idle_closing) /* idle: nothing came for idle-timeout */
		redirect_log(r, LOG_NOTICE,
			     "what vsock discarded of the client's bytes "
			     "at the close cannot be counted on this kernel: SIOCINQ on vsock: %s "
			     "(Linux 6.17 answers it)",
			     strerror(-n));
}

void redirect_free(struct redirect *r)
{
	struct redirect_info info;
	int i;

	if (!r)
		return;
	memset(&info, 0, sizeof(info));
	collect_counters(r, &info);
	log_vsock_discard(r);
	redirect_unlink(r);
	sd_event_source_disable_unref(r->timer);
	/* A handed-over pair keeps its entries for the next instance. */
	if (!r->handed_over)
		remove_map_entries(r);
	for (i = 0; i < 2; i++) {
		if (r->ep[i].watched)
			epoll_ctl(events.epfd, EPOLL_CTL_DEL, r->ep[i].fd, NULL);
		safe_close(r->ep[i].fd);
		safe_close(r->dir[i].pipe[0]);
		safe_close(r->dir[i].pipe[1]);
		free(r->dir[i].buf);
	}
	if (r->has_slot)
		dataplane_slot_free(r->d->dp, r->slot);
	listener_redirect_closed(r->l, &info.moved);
	if (events.dispatching) {
		/* The batch may still hold events for it: free() it once the batch is done. */
		r->dead = true;
		r->next = events.zombies;
		events.zombies = r;
		return;
	}
	free(r);
}

struct redirect *redirect_next(struct redirect *r)
{
	return r->next;
}

uint64_t redirect_progress_mark(const struct redirect *r)
{
	uint64_t mark = r->dir[CLIENT].user_bytes + r->dir[TARGET].user_bytes;
	int i, q;

	for (i = 0; i < 2; i++) {
		q = r->ep[i].fd >= 0 ? socket_outq(r->ep[i].fd) : 0;
		if (q > 0)
			mark -= (uint64_t)q;
	}
	return mark;
}

struct redirect *redirect_find(struct daemon *d, uint64_t id)
{
	struct redirect *r;

	for (r = d->redirects; r; r = r->next)
		if (r->id == id)
			return r;
	return NULL;
}

struct listener *redirect_listener(struct redirect *r)
{
	return r->l;
}

static const char *redirect_state(struct redirect *r)
{
	enum dir_state a = r->dir[CLIENT].state, b = r->dir[TARGET].state;

	if (r->connecting)
		return "connecting";
	if (a == DIR_DRAINING || b == DIR_DRAINING)
		return "draining";
	if (a == DIR_DONE || b == DIR_DONE)
		return "half-closed";
	if (a == DIR_SYNC || a == DIR_SWEEP || a == DIR_CATCHUP)
		return "syncing";
	return "open";
}

/* The time of this event-loop iteration: the same for everything handled in it. */
static uint64_t loop_tick(struct redirect *r)
{
	uint64_t t;

	return sd_event_now(r->d->event, CLOCK_MONOTONIC, &t) < 0 ? now_usec() : t;
}

/* Bytes and packets each way: the kernel's counters plus what the daemon carried. */
static void collect_counters(struct redirect *r, struct redirect_info *info)
{
	struct vsockmap_counters c[VSOCKMAP_NR_DIRS];
	bool kernel = r->has_slot && !dataplane_slot_counters(r->d->dp, r->slot, c);
	int dir;

	for (dir = 0; dir < VSOCKMAP_NR_DIRS; dir++) {
		info->moved.bytes[dir] = r->dir[dir].user_bytes;
		info->moved.packets[dir] = r->dir[dir].user_packets;
		if (kernel) {
			info->moved.bytes[dir] += c[dir].bytes;
			info->moved.packets[dir] += c[dir].packets;
			info->moved.uncounted[dir] = !dataplane_counted(r->d->dp, r->slot, dir);
		}
	}
}

void redirect_get_info(struct redirect *r, struct redirect_info *info, bool with_queues)
{
	struct vsockmap_queue_info qi;
	int dir;

	memset(info, 0, sizeof(*info));
	info->id = r->id;
	info->name = r->l->rc->name;
	info->state = redirect_state(r);
	info->client = r->cred;
	snprintf(info->comm, sizeof(info->comm), "%s", r->comm);
	info->age_usec = now_usec() - r->started_usec;
	collect_counters(r, info);
	for (dir = 0; dir < VSOCKMAP_NR_DIRS; dir++) {
		info->datapath[dir] =
		    r->dir[dir].state == DIR_COPY || dir == TARGET ? "daemon" : "kernel";
		info->cookie[dir] = r->ep[dir].cookie;
	}
	if (with_queues && r->ep[TARGET].in_map &&
	    !dataplane_queue_info(r->d->dp, r->ep[TARGET].fd, r->ep[TARGET].cookie, 0, loop_tick(r),
				  &qi)) {
		info->has_queues = true;
		info->target_backlog_skbs = qi.backlog_skbs;
	}
	info->client_rcvq_bytes = r->ep[CLIENT].fd >= 0 ? socket_inq(r->ep[CLIENT].fd) : -1;
	if (info->client_rcvq_bytes < 0)
		info->client_rcvq_bytes = -1;
}

/* ---- events ---- */

/* The redirects' epoll set has events: step each redirect that has some, once. */
static int on_events(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct epoll_event ev[EVENTS_BATCH];
	struct redirect *r;
	int n, i;

	(void)s;
	(void)revents;
	(void)userdata;
	do
		n = epoll_wait(fd, ev, EVENTS_BATCH, 0);
	while (n < 0 && errno == EINTR);
	/* More than a batch ready: the set stays readable and the loop comes back after the
	 * other sources had their turn. */
	events.batch++;
	events.dispatching = true;
	events.batch_pass = true;
	for (i = 0; i < n; i++) {
		r = ev[i].data.ptr;
		if (r->dead || r->batch == events.batch)
			continue;
		r->batch = events.batch;
		redirect_step(r);
	}
	/* One iterator pass for every drain that began in the batch (dir_drained()). */
	events.batch_pass = false;
	while (events.wants_pass) {
		r = events.wants_pass;
		events.wants_pass = r->next_wants_pass;
		r->wants_pass = false;
		if (!r->dead)
			redirect_step(r);
	}
	events.dispatching = false;
	while (events.zombies) {
		r = events.zombies;
		events.zombies = r->next;
		free(r);
	}
	return 0;
}

static void events_destroyed(void *userdata)
{
	(void)userdata;
	events.src = NULL;
	events.epfd = -1; /* closed with the source */
}

/* The redirects' epoll set, made with the first redirect. */
static int events_open(struct daemon *d)
{
	int fd, err;

	if (events.src)
		return 0;
	fd = epoll_create1(EPOLL_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = sd_event_add_io(d->event, &events.src, fd, EPOLLIN, on_events, NULL);
	if (err < 0) {
		close(fd);
		return err;
	}
	sd_event_source_set_io_fd_own(events.src, true);
	sd_event_source_set_description(events.src, "redirects");
	sd_event_source_set_destroy_callback(events.src, events_destroyed);
	/* The loop owns it from here and frees it with itself. */
	sd_event_source_set_floating(events.src, true);
	sd_event_source_unref(events.src);
	events.epfd = fd;
	return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	(void)s;
	(void)usec;
	redirect_step(userdata);
	return 0;
}

/*
 * Level-triggered interest per endpoint. EPOLLIN only while the daemon itself reads (a
 * source is never read once its gate is open), EPOLLRDHUP while the kernel carries the
 * direction, EPOLLOUT while the daemon has bytes for it. epoll reports EPOLLHUP and EPOLLERR
 * whatever the mask, so a closed endpoint is dropped from the loop.
 */
static int update_io(struct redirect *r)
{
	struct epoll_event e;
	int i, err;

	for (i = 0; i < 2; i++) {
		struct direction *out = &r->dir[i];    /* data arriving on this endpoint */
		struct direction *in = &r->dir[1 - i]; /* data the daemon writes into it */
		uint32_t ev = 0;

		if (r->connecting) {
			ev = i == TARGET ? EPOLLOUT : 0;
		} else {
			if ((out->state == DIR_SYNC || out->state == DIR_COPY ||
			     out->state == DIR_CATCHUP) &&
			    !dir_pending(out) && !out->sync_held_back &&
			    !(r->settling && source_never_mapped(r, i)))
				ev |= EPOLLIN | EPOLLRDHUP;
			if (out->state == DIR_OPEN || out->state == DIR_SWEEP)
				ev |= EPOLLRDHUP;
			if (dir_pending(in) && now_usec() >= in->retry_usec)
				ev |= EPOLLOUT;
		}
		/*
		 * An endpoint a write failed on (hup) is dropped, unless the kernel still carries
		 * the way from it: a killed client's EPIPE can come before its HUP is seen, and
		 * only that HUP starts the drain that passes its end on to the target.
		 */
		if ((r->ep[i].hup && out->state != DIR_OPEN && out->state != DIR_SWEEP) ||
		    (r->connecting && !ev)) {
			if (r->ep[i].watched)
				epoll_ctl(events.epfd, EPOLL_CTL_DEL, r->ep[i].fd, NULL);
			r->ep[i].watched = false;
			continue;
		}
		if (r->ep[i].watched && r->ep[i].events == ev)
			continue;
		err = events_open(r->d);
		if (err < 0)
			return err;
		e.events = ev;
		e.data.ptr = r;
		if (epoll_ctl(events.epfd, r->ep[i].watched ? EPOLL_CTL_MOD : EPOLL_CTL_ADD,
			      r->ep[i].fd, &e))
			return -errno;
		r->ep[i].watched = true;
		r->ep[i].events = ev;
	}
	return 0;
}

/* The timer source is made the first time one is needed: most redirects never need one. */
static int arm_timer(struct redirect *r, uint64_t deadline)
{
	if (!deadline) {
		sd_event_source_set_enabled(r->timer, SD_EVENT_OFF);
		return 0;
	}
	if (!r->timer)
		return sd_event_add_time(r->d->event, &r->timer, CLOCK_MONOTONIC, deadline, 0,
					 on_timer, r);
	sd_event_source_set_time(r->timer, deadline);
	sd_event_source_set_enabled(r->timer, SD_EVENT_ONESHOT);
	return 0;
}

/* ---- set-up ---- */

/* Set-up failed: say why, count it, close the client. */
static void redirect_fail(struct redirect *r, int err, const char *what)
{
	char target[160];

	listener_redirect_failed(r->l);
	redirect_log(r, LOG_WARNING, "%s %s: %s; closing the client connection (pid %d)", what,
		     target_text(r, target, sizeof(target)), strerror(-err), r->cred.pid);
	redirect_free(r);
}

/*
 * Client to target runs in the kernel: the client socket is a source (the verdict runs on
 * it) and the target a destination. Target to client is carried by the daemon: when a unix
 * peer calls shutdown(), unix_shutdown() unhashes our socket from every sockmap and the psock
 * goes with its backlog, so bytes redirected into the client socket and not yet sent would be
 * lost on a client half-close. Reading the target normally also keeps its flow control (vsock
 * credit) intact, so a slow client slows the sender instead of growing a kernel queue.
 */
static int link_pair(struct redirect *r)
{
	struct daemon *d = r->d;
	int err, i;

	for (i = 0; i < 2; i++) {
		err = socket_cookie(r->ep[i].fd, &r->ep[i].cookie);
		if (err)
			return err;
		/* sndbuf= on the address wins (socket_set_bufs()). */
		if (!(i == CLIENT ? r->l->rc->listen.sndbuf : r->l->rc->connect.sndbuf))
			socket_force_sndbuf(r->ep[i].fd, d->cfg.daemon.sndbuf);
	}
	if (r->userspace)
		return 0;
	err = held_read_prepare(r->ep[CLIENT].fd);
	if (err)
		return err;
	err = dataplane_slot_alloc(d->dp, &r->slot);
	if (err)
		return err;
	r->has_slot = true;
	err = dataplane_link(d->dp, r->ep[CLIENT].cookie, r->ep[TARGET].cookie, r->slot,
			     VSOCKMAP_DIR_TO_TARGET);
	if (err)
		return err;
	r->linked = true;
	/* The destination first: a redirect needs it in the map. */
	err = dataplane_add_destination(d->dp, r->ep[TARGET].cookie, r->ep[TARGET].fd);
	if (listener_target_refused(r->l, err)) {
		dataplane_unlink(d->dp, r->ep[CLIENT].cookie);
		r->linked = false;
		r->userspace = true;
		return 0;
	}
	if (err)
		return err;
	r->ep[TARGET].in_map = true;
	/* Open from the start: the verdict passes data up only if the target left the map. */
	gate_release(dataplane_gate(d->dp, r->slot, VSOCKMAP_DIR_TO_TARGET), 0);
	return 0;
}

/* The target is connected: join the pair. */
static void on_connected(struct redirect *r)
{
	int err;

	r->connecting = false;
	err = link_pair(r);
	if (err) {
		redirect_fail(r, err,
			      err == -ENOSPC ? "no slot left (max-redirects) for the redirect to"
					     : "adding the pair to the sockhash for");
		return;
	}
	r->dir[CLIENT].state = r->userspace ? DIR_COPY : DIR_SYNC;
	r->dir[TARGET].state = DIR_COPY;
	redirect_log(r, LOG_DEBUG, "connected");
	redirect_step(r);
}

/*
 * Forward what the client sent before the kernel takes over, then put the client socket in
 * the sockhash. The daemon never reads a source while it is mapped: the verdict dequeues one
 * skb per wakeup and passes it on outside the socket lock, so a concurrent recv() could take
 * the next skb first and reorder the stream. Taking the socket out of the map again is no
 * way out either: a send racing with the removal has its skb dequeued for a verdict that no
 * longer finds the psock, and the kernel frees it.
 *
 * An skb that arrives between the last read and the insert was queued before the verdict
 * was attached: each later send moves the oldest one on, so the stream stays in order but
 * runs that many skbs behind, and at EOF the daemon forwards the rest (dir_drain()).
 */
/* The kernel carries the direction now: give the buffer back. */
static void dir_set_open(struct direction *dir)
{
	dir->state = DIR_OPEN;
	if (!dir_pending(dir)) {
		free(dir->buf);
		dir->buf = NULL;
		dir->buf_size = 0;
	}
}

/*
 * Tests only: VSOCKMAPD_TEST_INSERT_DELAY_US widens the window between the last read and the
 * insert, so that a sending client leaves bytes behind (the rare case dir_sweep() handles).
 */
static void test_insert_delay(void)
{
	static long delay_us = -1;
	const char *e;

	if (delay_us < 0) {
		e = getenv("VSOCKMAPD_TEST_INSERT_DELAY_US");
		delay_us = e ? strtol(e, NULL, 10) : 0;
		if (delay_us < 0)
			delay_us = 0;
	}
	if (delay_us)
		usleep(delay_us);
}

/*
 * Tests only: VSOCKMAPD_TEST_INSERT_QUEUED=BYTES holds the insert back, without reading the
 * client, until BYTES are queued in its socket (or 5 s have passed), so that all of them are
 * left behind at the insert: the client that queues MiBs as it connects, forced.
 */
static long test_insert_queued(void)
{
	static long want = -1;
	const char *e;

	if (want < 0) {
		e = getenv("VSOCKMAPD_TEST_INSERT_QUEUED");
		want = e ? strtol(e, NULL, 10) : 0;
		if (want < 0)
			want = 0;
	}
	return want;
}

static void dir_sync(struct redirect *r, int src)
{
	struct direction *dir = &r->dir[src];
	struct endpoint *ep = &r->ep[src];
	ssize_t n;
	int err;

	if (test_insert_queued()) {
		dir->sync_held_back = socket_inq(ep->fd) < test_insert_queued() &&
				      now_usec() - r->started_usec < 5 * USEC_PER_SEC;
		if (dir->sync_held_back)
			return; /* the timer looks again */
		goto insert;
	}
	do
		n = forward_some(r, src);
	while (n > 0 && dir->buf_off == dir->buf_len);
	if (n == 0 || (n < 0 && n != -EAGAIN)) {
		dir->state = DIR_DRAINING; /* EOF or error on the source */
		return;
	}
	if (dir->buf_off < dir->buf_len)
		return; /* destination full: wait for EPOLLOUT */
	test_insert_delay();
insert:
	err = dataplane_add_source(r->d->dp, ep->cookie, ep->fd);
	if (err) {
		redirect_log_errno(r, LOG_WARNING, err,
				   "adding the client to the sockhash; the daemon carries it");
		dir->state = DIR_COPY;
		return;
	}
	ep->in_map = true;
	dir_set_open(dir);
	n = socket_inq(ep->fd);
	if (n > 0) {
		r->d->late_inserts++;
		dir->left_behind = n;
		dir->left_verdicts = UINT64_MAX; /* the first check only takes the count */
		dir->left_check_usec = now_usec() + STALL_USEC;
		redirect_log(r, LOG_DEBUG, "%zd bytes arrived during the insert", n);
	}
}

/* The gate of direction src closes: from now on the verdict holds what it sees. */
static void gate_close_dir(struct redirect *r, int src)
{
	gate_close(dataplane_gate(r->d->dp, r->slot, src));
	r->dir[src].gate_usec = now_usec();
}

/*
 * How often the verdict has run on this direction's source: redirected plus held skbs. The
 * uncounted verdict (fastpath=permanent) gives a constant: the stall is then judged by the
 * queue length alone, and a sweep may come while the client still sends, which costs a gate
 * cycle but keeps the order.
 */
static uint64_t verdict_runs(struct redirect *r, int src)
{
	struct vsockmap_counters c;

	if (!dataplane_counted(r->d->dp, r->slot, src))
		return 0;
	if (dataplane_counters(r->d->dp, r->slot, src, &c))
		return UINT64_MAX;
	return c.packets + c.held_packets;
}

/*
 * Bytes left behind at the insert move on only when the client sends again, one skb per
 * send: each send queues a new skb and the verdict takes the oldest, so the queue length
 * alone can stay the same while data flows. Once the verdict has not run for STALL_USEC the
 * client is idle or blocked (those skbs still count against its send buffer): close the
 * gate, wait for the target's backlog, and take them in one read (dir_sweep()). What the
 * client sends meanwhile is held and forwarded by dir_catchup().
 */
static void dir_check_left_behind(struct redirect *r, int src)
{
	struct direction *dir = &r->dir[src];
	uint64_t runs;
	int64_t q;

	if (!dir->left_behind || now_usec() < dir->left_check_usec)
		return;
	q = socket_inq(r->ep[src].fd);
	if (q <= 0) {
		dir->left_behind = 0; /* the client's sends moved them on */
		return;
	}
	dir->left_check_usec = now_usec() + STALL_USEC;
	runs = verdict_runs(r, src);
	if (q != dir->left_behind || runs != dir->left_verdicts || runs == UINT64_MAX) {
		dir->left_behind = q;
		dir->left_verdicts = runs;
		return;
	}
	gate_close_dir(r, src);
	dir->drain_started_usec = 0;
	dir->state = DIR_SWEEP;
}

/* ---- EOF and drain ---- */

static bool dir_drained(struct redirect *r, int src)
{
	struct direction *dir = &r->dir[src];
	struct endpoint *dst = &r->ep[1 - src];
	bool counted = dataplane_counted(r->d->dp, r->slot, src);
	struct vsockmap_queue_info qi;
	struct vsockmap_counters c;
	uint64_t now = loop_tick(r);
	int err;

	if (dst->hup)
		return true;
	if (now < dir->drain_not_before_usec)
		return false;
	if (!dir->drain_started_usec) {
		dir->drain_started_usec = now;
		dir->drain_epoch = dataplane_queue_epoch(r->d->dp);
	}
	if (now - dir->drain_started_usec > r->d->cfg.daemon.drain_timeout_ms * USEC_PER_MSEC) {
		if (r->d->stopping && !dataplane_exact_drain(dataplane_features(r->d->dp))) {
			redirect_log(
			    r, LOG_INFO,
			    "no exact drain signal on this kernel: "
			    "waited drain-timeout (%u ms) for what the kernel may still hold",
			    r->d->cfg.daemon.drain_timeout_ms);
			return true;
		}
		if (dataplane_queue_info(r->d->dp, dst->fd, dst->cookie, 0, now, &qi))
			redirect_log(
			    r, LOG_WARNING,
			    "backlog toward the %s did not drain in "
			    "%u ms; what the kernel still holds for it, if anything, is lost",
			    src == CLIENT ? "target" : "client", r->d->cfg.daemon.drain_timeout_ms);
		else
			redirect_log(r, LOG_WARNING,
				     "backlog toward the %s did not drain in "
				     "%u ms; %u socket buffers still queued for it are lost",
				     src == CLIENT ? "target" : "client",
				     r->d->cfg.daemon.drain_timeout_ms, qi.backlog_skbs);
		return true;
	}
	/*
	 * Nothing ever redirected this way (only a counting verdict can tell): no backlog to wait
	 * for, and no iterator pass (a pass walks every bucket of the egress sockhash; one per
	 * closing connection was most of the daemon's time at a few thousand connections per
	 * second; fastpath=permanent pays it). The verdict counts a
	 * redirect before the kernel queues the skb, both within the sender's send(), and
	 * every send of the client's has returned by the time its EOF is seen (the same
	 * assumption as the pass below; a sweep waits out GATE_VERDICT_GRACE_USEC first).
	 */
	if (counted && !dataplane_counters(r->d->dp, r->slot, src, &c) && !c.packets)
		return true;
	/*
	 * Only a pass begun after the drain began: one from earlier in this tick, made for
	 * another redirect of the batch, could predate this client's last redirected skbs, and
	 * closing the target frees what its psock still holds (docs/kernel-notes.md). A drain
	 * that begins in a batch waits for the pass made after it, which every such drain shares.
	 */
	if (events.batch_pass && !dataplane_queue_fresh(r->d->dp, dir->drain_epoch, now)) {
		if (!r->wants_pass) {
			r->wants_pass = true;
			r->next_wants_pass = events.wants_pass;
			events.wants_pass = r;
		}
		return false;
	}
	err = dataplane_queue_info(r->d->dp, dst->fd, dst->cookie, dir->drain_epoch, now, &qi);
	if (!err)
		return !qi.backlog_skbs && !qi.partial_bytes;
	if (err == -ENOENT)
		return true;
	/* Out of descriptors or memory for the pass: ask again at the next tick. */
	if (err == -EMFILE || err == -ENFILE || err == -ENOMEM)
		return false;
	/*
	 * No exact signal: a heuristic. The backlog worker sends whenever the target can take
	 * bytes, at once after a redirect and a jiffy after a refusal; so a target that could
	 * take bytes at every look for TIMED_DRAIN_QUIET_USEC while this direction's counter stood
	 * still has nothing left queued, unless the worker stopped (then the target shows an
	 * error). A slow reader keeps the target full and the wait going, up to drain-timeout.
	 * A direction that counts nothing (handed over by a fastpath=permanent instance to one
	 * started with --drain=timed) has no counter: it waits out drain-timeout.
	 */
	if (!counted)
		return false;
	if (dataplane_counters(r->d->dp, r->slot, src, &c))
		return true;
	/*
	 * A stop is rare and bounded by drain-timeout: there the daemon waits it out rather
	 * than trust the heuristic, which a slow reader granting vsock credit in bursts can
	 * fool (the target looks writable at every look while the worker still has skbs).
	 */
	if (r->d->stopping)
		return false;
	return settle_clock_check(&dir->drain_quiet, c.bytes, socket_writable(dst->fd), now,
				  TIMED_DRAIN_QUIET_USEC);
}

static void dir_sweep(struct redirect *r, int src)
{
	struct direction *dir = &r->dir[src];
	struct vsockmap_gate *gate;
	uint64_t held;
	int64_t q;
	ssize_t n = 0;
	char *buf;

	if (now_usec() - dir->gate_usec < GATE_VERDICT_GRACE_USEC || !dir_drained(r, src))
		return;
	/*
	 * The wait is over: a later drain (EOF) starts its own clock and needs its own pass.
	 * Kept from here, it let the EOF take a pass made before the client's last skbs.
	 */
	dir->drain_started_usec = 0;
	dir->drain_quiet.since_usec = 0;
	if (!flush_buf(r, src))
		return; /* the read below reuses the buffer */
	gate = dataplane_gate(r->d->dp, r->slot, src);
	held = gate_held(gate);
	q = socket_inq(r->ep[src].fd);
	if (held != dir->held_taken) {
		/*
		 * The client sent again after the gate closed: the verdict held its oldest skbs,
		 * and the newest are still queued behind them. Reading now could overtake one the
		 * verdict has taken but not yet queued. Forward the held bytes, reopen, and look
		 * again when the client is idle.
		 */
		dir->left_behind = q > 0 ? q : 0;
		dir->left_verdicts = UINT64_MAX;
		dir->left_check_usec = now_usec() + STALL_USEC;
		dir->state = DIR_CATCHUP;
		return;
	}
	if (q > 0) {
		/* Never smaller than SYNC_BUF_SIZE: the buffer is reused for later reads. */
		if ((size_t)q > dir->buf_size || dir->buf_size < SYNC_BUF_SIZE) {
			size_t size = (size_t)q > SYNC_BUF_SIZE ? (size_t)q : SYNC_BUF_SIZE;

			buf = realloc(dir->buf, size);
			if (!buf)
				return; /* try again on the next tick */
			dir->buf = buf;
			dir->buf_size = size;
		}
		do
			n = recv(r->ep[src].fd, dir->buf, q, MSG_DONTWAIT);
		while (n < 0 && errno == EINTR);
		if (n > 0) {
			dir->buf_len = n;
			flush_buf(r, src);
		}
	}
	/*
	 * One read may stop short: unix_stream_read_generic() never joins skbs whose
	 * credentials differ (several writers). What it left stays at the head, in order,
	 * and is watched again; a second read now could overtake a verdict's dequeue.
	 */
	dir->left_behind = q > 0 && n > 0 && n < q ? q - n : 0;
	dir->left_verdicts = UINT64_MAX;
	dir->left_check_usec = now_usec() + STALL_USEC;
	dir->state = DIR_CATCHUP;
	redirect_log(r, LOG_DEBUG,
		     "took %zd of %" PRId64 " bytes left behind at the "
		     "insert",
		     n > 0 ? n : 0, q);
}

/*
 * Like forward_some(), for bytes the verdict held on a mapped source: only those, counted
 * against the gate, and never an skb the verdict has not seen yet (held_read()). Returns
 * -EINPROGRESS when held bytes are counted but not queued yet.
 */
static ssize_t forward_held(struct redirect *r, int src)
{
	struct vsockmap_gate *gate = dataplane_gate(r->d->dp, r->slot, src);
	struct direction *dir = &r->dir[src];
	int fd = r->ep[src].fd;
	ssize_t n;

	if (!flush_buf(r, src))
		return -EAGAIN;
	if (dir->held_taken == gate_held(gate))
		return peer_shut_down(fd) ? 0 : -EAGAIN;
	if (!dir_buf(dir))
		return -ENOMEM;
	n = held_read(fd, dir->buf, dir->buf_size);
	/*
	 * Held bytes are owed, so 0 is not the end: unix_bpf_recvmsg() answers EOF once the
	 * peer is gone and psock->ingress_msg is empty, even while the psock's own backlog
	 * (ingress_skb, where sk_psock_verdict_apply() queues what ingress_self could not
	 * take) still holds bytes the verdict counted. They come; held_owed_expired() bounds
	 * the wait.
	 */
	if (n == -EAGAIN || n == 0)
		return -EINPROGRESS;
	if (n < 0)
		return n;
	dir->held_wait_usec = 0; /* progress: held_owed_expired() waits anew */
	dir->held_taken += n;
	dir->buf_len = n;
	flush_buf(r, src);
	return n;
}

/*
 * The source's peer is gone and bytes the verdict held are still owed (counted, not yet
 * queued for reading). They get drain-timeout from when that was first seen; then the wait
 * is given up, loudly, and the direction goes on without them.
 */
static bool held_owed_expired(struct redirect *r, int src)
{
	struct vsockmap_gate *gate = dataplane_gate(r->d->dp, r->slot, src);
	struct direction *dir = &r->dir[src];
	uint64_t now = loop_tick(r), held;

	if (!peer_shut_down(r->ep[src].fd)) {
		dir->held_wait_usec = 0;
		return false;
	}
	if (!dir->held_wait_usec) {
		dir->held_wait_usec = now;
		return false;
	}
	if (now - dir->held_wait_usec <= r->d->cfg.daemon.drain_timeout_ms * USEC_PER_MSEC)
		return false;
	held = gate_held(gate);
	redirect_log(r, LOG_WARNING,
		     "%" PRIu64 " bytes the verdict passed up never became "
		     "readable in %u ms; the client's last bytes are lost",
		     held - dir->held_taken, r->d->cfg.daemon.drain_timeout_ms);
	dir->held_taken = held;
	return true;
}

/*
 * Forward what the verdict held while the gate was closed, then open it with released = every
 * byte held so far, all of which the daemon has read and written. Reads stay on held bytes
 * during the grace period too, while the kernel already redirects again.
 */
static void dir_catchup(struct redirect *r, int src)
{
	struct vsockmap_gate *gate = dataplane_gate(r->d->dp, r->slot, src);
	struct direction *dir = &r->dir[src];
	ssize_t n;

	for (;;) {
		n = forward_held(r, src);
		dir->held_in_flight = n == -EINPROGRESS;
		if (n == 0 || (n < 0 && n != -EAGAIN && n != -EINPROGRESS) ||
		    (n == -EINPROGRESS && held_owed_expired(r, src))) {
			dir->state = DIR_DRAINING;
			return;
		}
		if (dir->buf_off < dir->buf_len || n == -EINPROGRESS)
			return; /* destination full (EPOLLOUT), or look again in a moment */
		if (n < 0)
			break;
	}
	if (gate_release(gate, dir->held_taken)) {
		dir->gate_usec = now_usec();
		return;
	}
	if (now_usec() - dir->gate_usec >= GATE_VERDICT_GRACE_USEC)
		dir_set_open(dir);
}

/*
 * At the end of a mapped source, the bytes the verdict held come before those still in the
 * socket's own queue, and only the gate's count says when the last one has been read: a
 * plain read of the socket takes its own queue whenever the psock queue is empty, and reads
 * 0 once the peer is gone (forward_held()). True when every held byte is written on.
 */
static bool take_held(struct redirect *r, int src)
{
	struct direction *dir = &r->dir[src];
	ssize_t n;

	if (!r->ep[src].in_map)
		return flush_buf(r, src);
	for (;;) {
		n = forward_held(r, src);
		if (n > 0 && dir->buf_off == dir->buf_len)
			continue;
		if (n > 0 || n == -EAGAIN)
			return false; /* the destination is full: EPOLLOUT */
		if (n == -EINPROGRESS)
			return held_owed_expired(r, src);
		return true; /* all taken (0), or the source failed */
	}
}

static void dir_drain(struct redirect *r, int src)
{
	struct direction *dir = &r->dir[src];
	struct endpoint *dst = &r->ep[1 - src];
	ssize_t n;

	if (!dir_drained(r, src) || !take_held(r, src))
		return;
	/*
	 * The kernel and the verdict are done; what is left in the socket's own queue was left
	 * behind at the insert, the newest bytes of the stream (each send moved the oldest on).
	 */
	do {
		n = forward_some(r, src);
	} while (n > 0);
	if (dir->buf_off < dir->buf_len)
		return;
	/*
	 * With the other way done too, the pair closes in this same step: a unix peer then gets
	 * its EOF from the close (one wakeup, not two). Other targets keep the explicit
	 * half-close before their close.
	 */
	if (!dst->hup &&
	    !(r->dir[1 - src].state == DIR_DONE && r->l->rc->connect.kind == ADDRESS_UNIX_CONNECT))
		shutdown(dst->fd, SHUT_WR);
	dir->state = DIR_DONE;
	redirect_log(r, LOG_DEBUG, "%s finished, drained in %" PRIu64 " us",
		     src == CLIENT ? "client->target" : "target->client",
		     now_usec() - dir->drain_started_usec);
}

/*
 * The target's socket has an error. A peer's reset is one way; the other is the kernel's own:
 * when the psock backlog worker fails to send into the target (anything but EAGAIN), it
 * records the error on the socket (sk_psock_report_error()) and stops sending, and every
 * byte redirected to it from then on is freed by the kernel. Either way the rest of the
 * client's stream cannot arrive, and a server reading the stream would see a clean EOF.
 */
static void log_target_error(struct redirect *r)
{
	char target[160];
	int err = socket_error(r->ep[TARGET].fd);

	redirect_log(r, LOG_WARNING,
		     "the connection to %s failed: %s; closing the client "
		     "connection, bytes not yet delivered are lost",
		     target_text(r, target, sizeof(target)), strerror(err < 0 ? -err : EIO));
}

static void poll_endpoint(struct redirect *r, int i)
{
	struct pollfd pfd = {.fd = r->ep[i].fd, .events = POLLRDHUP};

	if (poll(&pfd, 1, 0) <= 0)
		return;
	if (i == TARGET && (pfd.revents & POLLERR) && !r->ep[i].hup)
		log_target_error(r);
	if (pfd.revents & (POLLHUP | POLLERR)) {
		/* Broken or fully closed: nothing more goes to it; finish the other way, then
		 * close. */
		r->ep[i].hup = true;
		r->close_after_drain = true;
		if (r->dir[1 - i].state != DIR_DONE)
			r->dir[1 - i].state = DIR_DONE;
	}
	if ((pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)) && r->dir[i].state == DIR_OPEN)
		r->dir[i].state = DIR_DRAINING;
	/*
	 * A unix server's shutdown() unhashed the target from the egress map (see link_pair()),
	 * so the verdict now passes the client's bytes up instead of redirecting them: carry
	 * them in the daemon from here on. The verdict now runs for each skb in its sender's
	 * send(), so a read cannot overtake it unless skbs were left behind at the insert
	 * (see dir_sync()).
	 */
	if (i == TARGET && (pfd.revents & POLLRDHUP) &&
	    r->l->rc->connect.kind == ADDRESS_UNIX_CONNECT &&
	    (r->dir[CLIENT].state == DIR_OPEN || r->dir[CLIENT].state == DIR_SYNC))
		r->dir[CLIENT].state = DIR_COPY;
}

/* Still has bytes to deliver before the pair may close. */
static bool dir_busy(const struct direction *dir)
{
	return dir->state == DIR_SYNC || dir->state == DIR_SWEEP || dir->state == DIR_CATCHUP ||
	       dir->state == DIR_DRAINING || dir->state == DIR_COPY || dir_pending(dir);
}

static void log_closed(struct redirect *r)
{
	struct redirect_info info;

	if (log_get_level() < LOG_DEBUG)
		return; /* the counters and the queue length cost three syscalls */
	redirect_get_info(r, &info, false);
	redirect_log(r, LOG_DEBUG,
		     "closed after %" PRIu64 " ms; bytes out %" PRIu64 " (%" PRIu64
		     " by the daemon), in %" PRIu64 " (%" PRIu64 " by the daemon)",
		     info.age_usec / USEC_PER_MSEC, info.moved.bytes[VSOCKMAP_DIR_TO_TARGET],
		     r->dir[CLIENT].user_bytes, info.moved.bytes[VSOCKMAP_DIR_TO_CLIENT],
		     r->dir[TARGET].user_bytes);
}

static void redirect_step(struct redirect *r)
{
	uint64_t deadline = 0, now;
	int i, err;

	if (r->connecting) {
		err = timed_connect_check(&r->connect, r->ep[TARGET].fd, now_usec());
		if (err > 0)
			on_connected(r);
		else if (err < 0)
			redirect_fail(r, err, "connect");
		else if ((err = arm_timer(r, r->connect.deadline_usec)) < 0)
			redirect_fail(r, err, "a timer for the connect to");
		return;
	}
	for (i = 0; i < 2; i++)
		poll_endpoint(r, i);
	for (i = 0; i < 2; i++) {
		if (r->dir[i].state == DIR_SYNC)
			dir_sync(r, i);
		if (r->dir[i].state == DIR_OPEN)
			dir_check_left_behind(r, i);
		if (r->dir[i].state == DIR_SWEEP)
			dir_sweep(r, i);
		if (r->dir[i].state == DIR_CATCHUP)
			dir_catchup(r, i);
		if (r->dir[i].state == DIR_DRAINING)
			dir_drain(r, i);
		if (r->dir[i].state == DIR_COPY)
			dir_copy(r, i);
	}
	if ((r->dir[CLIENT].state == DIR_DONE && r->dir[TARGET].state == DIR_DONE) ||
	    (r->close_after_drain && !dir_busy(&r->dir[CLIENT]) && !dir_busy(&r->dir[TARGET]))) {
		log_closed(r);
		redirect_free(r);
		return;
	}
	now = now_usec();
	for (i = 0; i < 2; i++) {
		uint64_t t = 0;

		if (r->dir[i].state == DIR_DRAINING || r->dir[i].state == DIR_SWEEP ||
		    (r->dir[i].state == DIR_SYNC && r->dir[i].sync_held_back))
			t = now + DRAIN_POLL_USEC;
		else if (r->dir[i].state == DIR_CATCHUP && r->dir[i].held_in_flight)
			t = now + HELD_POLL_USEC;
		else if (r->dir[i].state == DIR_CATCHUP)
			t = r->dir[i].gate_usec + GATE_VERDICT_GRACE_USEC;
		else if (r->dir[i].state == DIR_OPEN && r->dir[i].left_behind)
			t = r->dir[i].left_check_usec;
		if (dir_pending(&r->dir[i]) && r->dir[i].retry_usec > now &&
		    (!t || r->dir[i].retry_usec < t))
			t = r->dir[i].retry_usec;
		if (t && (!deadline || t < deadline))
			deadline = t;
	}
	err = arm_timer(r, deadline);
	err = err ?: update_io(r);
	if (err < 0)
		redirect_fail(r, err, "watching the sockets of the redirect to");
}

/* ---- close on request ---- */

bool redirect_idle_check(struct redirect *r, uint64_t now, uint64_t timeout_usec)
{
	struct redirect_info info;
	uint64_t moved;

	if (r->connecting || r->close_after_drain || r->idle_closing)
		return false;
	/* Its source's verdict counts nothing (fastpath=permanent): it never looks idle. */
	if (r->has_slot && !dataplane_counted(r->d->dp, r->slot, CLIENT))
		return false;
	redirect_get_info(r, &info, false);
	moved = info.moved.bytes[CLIENT] + info.moved.bytes[TARGET];
	if (moved != r->idle_bytes || !r->idle_since_usec) {
		r->idle_bytes = moved;
		r->idle_since_usec = now;
		return false;
	}
	if (now - r->idle_since_usec < timeout_usec)
		return false;
	r->idle_closing = true;
	redirect_log(r, LOG_NOTICE, "no byte either way for %" PRIu64 " ms (idle-timeout)",
		     (now - r->idle_since_usec) / USEC_PER_MSEC);
	redirect_request_close(r);
	return true;
}

void redirect_request_close(struct redirect *r)
{
	if (r->connecting) {
		redirect_free(r);
		return;
	}
	/*
	 * The client gets EPIPE on its next write; what it sent before is still forwarded.
	 * The target's side is not shut for reading: vsock would drop what is queued. What it
	 * has sent so far is delivered, later bytes are not read.
	 */
	shutdown(r->ep[CLIENT].fd, SHUT_RD);
	/*
	 * A send that queued its skb before the shutdown runs its verdict after it: the drain
	 * (its pass, or the shortcut for a way nothing was redirected on) must not begin
	 * before that verdict is done. The client's own EOF needs no such wait: every send
	 * of its had returned.
	 */
	r->dir[CLIENT].drain_not_before_usec = now_usec() + GATE_VERDICT_GRACE_USEC;
	r->stop_reading_target = true;
	r->close_after_drain = true;
	if (r->dir[CLIENT].state == DIR_OPEN)
		r->dir[CLIENT].state = DIR_DRAINING;
	redirect_log(r, LOG_INFO, "closing on request");
	redirect_step(r);
}

/* ---- start ---- */

static void read_client_identity(struct redirect *r)
{
	socklen_t len = sizeof(r->cred);
	char path[64];
	ssize_t n;
	int fd;

	if (getsockopt(r->ep[CLIENT].fd, SOL_SOCKET, SO_PEERCRED, &r->cred, &len))
		return;
	snprintf(path, sizeof(path), "/proc/%d/comm", r->cred.pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, r->comm, sizeof(r->comm) - 1);
	close(fd);
	if (n > 0 && r->comm[n - 1] == '\n')
		n--;
	r->comm[n > 0 ? n : 0] = '\0';
}

/* A redirect on the daemon's list, owning both fds (closed here without memory). */
static struct redirect *redirect_new(struct daemon *d, struct listener *l, uint64_t id,
				     int client_fd, int target_fd)
{
	struct redirect *r;
	int i;

	r = calloc(1, sizeof(*r));
	if (!r) {
		safe_close(client_fd);
		safe_close(target_fd);
		return NULL;
	}
	r->d = d;
	r->l = l;
	r->id = id;
	r->userspace = l->userspace;
	r->started_usec = now_usec();
	r->ep[CLIENT].fd = client_fd;
	r->ep[TARGET].fd = target_fd;
	for (i = 0; i < VSOCKMAP_NR_DIRS; i++)
		r->dir[i].pipe[0] = r->dir[i].pipe[1] = -1;
	r->next = d->redirects;
	if (d->redirects)
		d->redirects->prev = r;
	d->redirects = r;
	d->n_redirects++;
	listener_redirect_opened(l);
	read_client_identity(r);
	return r;
}

int redirect_start(struct daemon *d, struct listener *l, int client_fd)
{
	struct redirect *r;
	int in_progress, err;

	r = redirect_new(d, l, daemon_next_id(d), client_fd, -1);
	if (!r)
		return -ENOMEM;
	r->ep[TARGET].fd = timed_connect_start(&r->connect, &l->rc->connect,
					       d->cfg.daemon.connect_timeout_ms, r->started_usec,
					       &in_progress);
	if (r->ep[TARGET].fd < 0) {
		err = r->ep[TARGET].fd;
		goto fail;
	}
	/* A unix target connects at once: no connect timer, and the io sources come later. */
	if (!in_progress) {
		on_connected(r);
		return 0;
	}
	r->connecting = true;
	err = arm_timer(r, r->connect.deadline_usec);
	err = err ?: update_io(r);
	if (err < 0)
		goto fail;
	return 0;

fail:
	/* Handled here: the client is told by the close, the log says why. */
	redirect_fail(r, err, "connect");
	return 0;
}

/* ---- restart without loss (handover.c) ---- */

bool redirect_settle(struct redirect *r, const char **why)
{
	const struct direction *c = &r->dir[CLIENT], *t = &r->dir[TARGET];
	struct vsockmap_gate *gate;

	*why = NULL;
	if (r->connecting || r->close_after_drain || r->ep[CLIENT].hup || r->ep[TARGET].hup) {
		*why = r->connecting ? "still connecting" : "closing";
		return false;
	}
	if (!r->settling) {
		r->settling = true;
		update_io(r);
	}
	/* A direction that is done has passed its EOF on: the other one may still be live. */
	if (r->userspace)
		*why = dir_pending(c) || dir_pending(t) ? "bytes not yet written on" : NULL;
	else if (c->state == DIR_DRAINING)
		*why = "client half-closed, its last bytes still in the kernel";
	else if ((c->state != DIR_OPEN && c->state != DIR_DONE) || !r->ep[CLIENT].in_map)
		*why = c->state == DIR_SYNC ? "client bytes still carried by the daemon"
					    : "catching up";
	else if (c->left_behind)
		*why = "client bytes left behind at the insert";
	else if (dir_pending(c))
		*why = "client bytes not yet written to the target";
	else if (t->state != DIR_COPY && t->state != DIR_DONE)
		*why = "target half-closed, its last bytes not yet read";
	else if (dir_pending(t))
		*why = "target bytes not yet written to the client";
	if (*why)
		return false;
	if (c->state == DIR_DONE || r->userspace)
		return true;
	gate = dataplane_gate(r->d->dp, r->slot, CLIENT);
	if (gate_settled(gate, c->held_taken))
		return true;
	*why = "client bytes held by the verdict";
	return false;
}

void redirect_handover_info(struct redirect *r, uint64_t *id, uint32_t *slot, unsigned int *half,
			    int *client_fd, int *target_fd)
{
	*id = r->id;
	*slot = r->userspace ? REDIRECT_SLOT_USERSPACE : r->slot;
	*half = (r->dir[CLIENT].state == DIR_DONE ? REDIRECT_HALF_CLIENT : 0) |
		(r->dir[TARGET].state == DIR_DONE ? REDIRECT_HALF_TARGET : 0);
	*client_fd = r->ep[CLIENT].fd;
	*target_fd = r->ep[TARGET].fd;
}

void redirect_mark_handed_over(struct redirect *r)
{
	r->handed_over = true;
}

int redirect_adopt(struct daemon *d, struct listener *l, uint64_t id, uint32_t slot,
		   unsigned int half, int client_fd, int target_fd)
{
	struct vsockmap_gate *gate;
	struct redirect *r;
	int err, i;

	r = redirect_new(d, l, id, client_fd, target_fd);
	if (!r)
		return -ENOMEM;
	if (slot == REDIRECT_SLOT_USERSPACE) {
		/* Carried in user space before: nothing in the maps, the daemon copies both ways.
		 */
		r->userspace = true;
		r->dir[CLIENT].state = half & REDIRECT_HALF_CLIENT ? DIR_DONE : DIR_COPY;
		r->dir[TARGET].state = half & REDIRECT_HALF_TARGET ? DIR_DONE : DIR_COPY;
		redirect_step(r);
		return 0;
	}
	/* As the previous instance left it: settled (redirect_settle()), slot reserved. */
	r->slot = slot;
	r->has_slot = true;
	r->linked = true;
	r->ep[CLIENT].in_map = r->ep[TARGET].in_map = true;
	for (i = 0; i < 2; i++) {
		err = socket_cookie(r->ep[i].fd, &r->ep[i].cookie);
		if (err) {
			redirect_free(r);
			return err;
		}
	}
	gate = dataplane_gate(d->dp, slot, CLIENT);
	r->dir[CLIENT].held_taken = gate_held(gate);
	r->dir[CLIENT].state = half & REDIRECT_HALF_CLIENT ? DIR_DONE : DIR_OPEN;
	r->dir[TARGET].state = half & REDIRECT_HALF_TARGET ? DIR_DONE : DIR_COPY;
	redirect_log(r, LOG_DEBUG, "taken back from the previous instance");
	redirect_step(r);
	return 0;
}
