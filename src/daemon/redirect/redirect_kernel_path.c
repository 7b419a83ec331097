// SPDX-License-Identifier: GPL-2.0-only
/*
 * The way the kernel carries, client to target: the daemon forwards what came before the
 * insert into the sockhash (DIR_SYNC), takes bytes left behind at the insert (DIR_SWEEP),
 * forwards what the verdict held while the gate was closed (DIR_CATCHUP), and at EOF waits
 * for the kernel's backlog before it passes the half-close on (DIR_DRAINING).
 * docs/kernel-notes.md says why each step is needed; src/daemon/dataplane/gate.h has the gate protocol.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gate.h"
#include "held_read.h"
#include "redirect_internal.h"
#include "sockopt.h"

/* Bytes left behind at the insert that have not moved for this long: take them (dir_sweep()). */
#define STALL_USEC (20 * USEC_PER_MSEC)

/* The kernel takes what the client has queued, and the daemon holds none of it. */
static bool insert_takes_queued(const struct redirect *r, const struct direction *dir)
{
	return dataplane_features(r->env->dp)->insert_takes_queued &&
	       r->owner->rc->listen.kind == ADDRESS_UNIX_LISTEN && dir->buf_off == dir->buf_len &&
	       !dir_injecting(dir);
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
 *
 * The insert waits for a read that finds the client's socket empty. While the target is
 * full, the daemon writes into the injector instead (redirect_inject.c): a client that keeps
 * its socket full would otherwise be carried by the daemon to its last byte. A kernel that
 * passes what a unix socket queued to the verdict at its insert (insert_probe.c) needs none
 * of that: with nothing of the client's in hand, the daemon inserts it at once.
 */
void dir_sync(struct redirect *r, int src)
{
	struct direction *dir = &r->dir[src];
	struct endpoint *ep = &r->ep[src];
	long queued = r->env->loop.test_insert_queued;
	ssize_t n;
	int err;

	if (queued) {
		dir->sync_held_back =
		    socket_inq(ep->fd) < queued && now_usec() - r->started_usec < 5 * USEC_PER_SEC;
		if (dir->sync_held_back)
			return; /* the timer looks again */
		goto insert;
	}
	if (insert_takes_queued(r, dir))
		goto insert;
again:
	do
		n = forward_some(r, src);
	while (n > 0 && dir->buf_off == dir->buf_len);
	if (n == 0 || (n < 0 && n != -EAGAIN)) {
		dir_enter(r, src, DIR_SOURCE_ENDED); /* EOF or an error */
		return;
	}
	if (dir->buf_off < dir->buf_len) {
		/* The target is full: hand the rest to the kernel (redirect_inject.c). */
		if (!dir_injecting(dir) && !dir_inject_open(r, src))
			goto again;
		return; /* wait for EPOLLOUT, or the injector's retry */
	}
#ifdef VSOCKMAP_TEST_KNOBS
	if (r->env->loop.test_insert_delay_us)
		usleep(r->env->loop.test_insert_delay_us);
#endif
insert:
	err = dataplane_add_source(r->env->dp, ep->cookie, ep->fd);
	if (err && dir_injecting(dir)) {
		/* What the injector took is queued for the target: the daemon may not write there. */
		if (!dir->insert_error_logged)
			redirect_log_errno(r, LOG_WARNING, err,
					   "adding the client to the sockhash; the daemon carries it "
					   "through the injector");
		dir->insert_error_logged = true;
		return;
	}
	if (err) {
		redirect_log_errno(r, LOG_WARNING, err,
				   "adding the client to the sockhash; the daemon carries it");
		dir_enter(r, src, DIR_INSERT_FAILED);
		return;
	}
	ep->in_map = true;
	dir_inject_close(r, src); /* its bytes are in the target's backlog, before the client's */
	dir_enter(r, src, DIR_INSERTED);
	n = dir_watch_left_behind(r, src);
	if (n > 0) {
		r->env->late_inserts++;
		redirect_log(r, LOG_DEBUG, "%zd bytes arrived during the insert", n);
	}
}

int dir_watch_left_behind(struct redirect *r, int src)
{
	struct direction *dir = &r->dir[src];
	int n = socket_inq(r->ep[src].fd);

	if (n <= 0)
		return 0;
	dir->left_behind = n;
	dir->left_verdicts = UINT64_MAX; /* the first check only takes the count */
	dir->left_check_usec = now_usec() + STALL_USEC;
	return n;
}

/* The gate of direction src closes: from now on the verdict holds what it sees. */
static void gate_close_dir(struct redirect *r, int src)
{
	gate_close(dataplane_gate(r->env->dp, r->slot, src));
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

	if (!dataplane_counted(r->env->dp, r->slot, src))
		return 0;
	if (dataplane_counters(r->env->dp, r->slot, src, &c))
		return UINT64_MAX;
	return c.packets + c.held_packets;
}

/*
 * The client's bytes wait on the target's backlog: it is blocked on a slow reader, not on
 * what it left behind, and its next send, which comes as the target reads, moves those on.
 * Only the queue probe says so without a pass over the whole map; without it, false.
 */
static bool waits_for_target(struct redirect *r, int src)
{
	struct endpoint *dst = &r->ep[1 - src];
	struct vsockmap_queue_info qi;

	if (dataplane_features(r->env->dp)->drain != DRAIN_PROBE ||
	    dataplane_queue_info(r->env->dp, dst->fd, dst->cookie, 0, loop_tick(r), &qi))
		return false;
	return qi.backlog_skbs || qi.partial_bytes;
}

/*
 * What the kernel still holds toward direction src's reader, as one number; 0 without the
 * probe, or when it failed, and then *known is cleared.
 */
static uint64_t backlog_mark(struct redirect *r, int src, bool *known)
{
	struct endpoint *dst = &r->ep[1 - src];
	struct vsockmap_queue_info qi;

	if (dataplane_features(r->env->dp)->drain != DRAIN_PROBE ||
	    dataplane_queue_info(r->env->dp, dst->fd, dst->cookie, 0, loop_tick(r), &qi)) {
		*known = false;
		return 0;
	}
	return ((uint64_t)qi.backlog_skbs << 32) + qi.partial_bytes;
}

/*
 * For the idle timeout: numbers that change whenever the verdict runs either way
 * (redirected or held: held bytes count as packets, not bytes) or the kernel's backlog
 * toward a reader changes. The verdict counts a send at once, while the psock worker hands
 * it to a slow reader only as that reader reads: the byte counters then stand still while
 * bytes move. A backlog that stands still (a reader that stopped) is no movement.
 */
uint64_t redirect_kernel_runs(struct redirect *r)
{
	return verdict_runs(r, CLIENT) + verdict_runs(r, TARGET);
}

uint64_t redirect_kernel_backlog(struct redirect *r, bool *known)
{
	*known = true;
	return backlog_mark(r, CLIENT, known) + (backlog_mark(r, TARGET, known) << 1);
}

/*
 * Bytes left behind at the insert move on only when the client sends again, one skb per
 * send: each send queues a new skb and the verdict takes the oldest, so the queue length
 * alone can stay the same while data flows. Once the verdict has not run for STALL_USEC the
 * client is idle or blocked (those skbs still count against its send buffer): close the
 * gate, wait for the target's backlog, and take them in one read (dir_sweep()). What the
 * client sends meanwhile is held and forwarded by dir_catchup().
 */
void dir_check_left_behind(struct redirect *r, int src)
{
	struct direction *dir = &r->dir[src];
	uint64_t runs;
	int64_t q;
	int err;

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
	/*
	 * Swept now, the client would be carried by the daemon for as long as it never pauses
	 * (the gate reopens only once every held byte is read): bulk-to-kernel on the host.
	 */
	if (waits_for_target(r, src))
		return;
	/* Never without a hold socket: what the verdict passed up would be unbounded and lost
	 * at the client's shutdown() (redirect_hold.c). Out of descriptors: the next check. */
	err = dir_hold_open(r, src);
	if (err) {
		if (!dir->hold_error_logged)
			redirect_log_errno(r, LOG_WARNING, err,
					   "a hold socket for the %" PRId64 " bytes left behind at "
					   "the insert; they wait for the client's next send or its "
					   "end",
					   q);
		dir->hold_error_logged = true;
		return;
	}
	gate_close_dir(r, src);
	dir->drain_started_usec = 0;
	dir_enter(r, src, DIR_LEFT_BEHIND);
}

/*
 * An exact drain signal also says whether the backlog moves: the worker takes an skb off
 * the queue, or sends part of the head one, only as the target's reader makes room. A slow
 * reader of a vsock target grants credit in bursts (one credit update per 192 KiB it takes,
 * virtio_transport_stream_do_dequeue()), so a backlog that still holds most of a stream at
 * the client's EOF can take far longer than drain-timeout to leave while never standing
 * still. drain-timeout is counted from its last movement (docs/kernel-notes.md, "A slow
 * reader behind a full backlog").
 */
static void drain_note(struct direction *dir, const struct vsockmap_queue_info *qi, uint64_t now)
{
	uint64_t mark = ((uint64_t)qi->backlog_skbs << 32) + qi->partial_bytes;

	if (mark != dir->drain_mark) {
		dir->drain_mark = mark;
		dir->drain_moved_usec = now;
	}
}

/* drain-timeout has passed since the backlog last moved: look once more before giving up. */
static bool drain_moved(struct redirect *r, int src, uint64_t now)
{
	struct direction *dir = &r->dir[src];
	struct endpoint *dst = &r->ep[1 - src];
	struct vsockmap_queue_info qi;
	uint64_t before = dir->drain_moved_usec;

	if (!dataplane_exact_drain(dataplane_features(r->env->dp)) ||
	    dataplane_queue_info(r->env->dp, dst->fd, dst->cookie, 0, now, &qi))
		return false;
	drain_note(dir, &qi, now);
	return dir->drain_moved_usec != before;
}

static bool dir_drained(struct redirect *r, int src)
{
	struct direction *dir = &r->dir[src];
	struct endpoint *dst = &r->ep[1 - src];
	bool counted = dataplane_counted(r->env->dp, r->slot, src);
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
		dir->drain_epoch = dataplane_queue_epoch(r->env->dp);
		dir->drain_moved_usec = now;
		dir->drain_mark = UINT64_MAX;
		dir->drain_over = false;
	}
	/*
	 * The steps after the drain (held bytes, the socket's own queue) may take many ticks
	 * and call again: the backlog, once seen empty after the EOF, gets nothing more, and a
	 * drain given up was logged once.
	 */
	if (dir->drain_over)
		return true;
	if (now - dir->drain_moved_usec > r->env->cfg->drain_timeout_ms * USEC_PER_MSEC &&
	    !drain_moved(r, src, now)) {
		dir->drain_over = true;
		if (r->env->stopping && !dataplane_exact_drain(dataplane_features(r->env->dp))) {
			redirect_log(
			    r, LOG_INFO,
			    "no exact drain signal on this kernel: "
			    "waited drain-timeout (%u ms) for what the kernel may still hold",
			    r->env->cfg->drain_timeout_ms);
			return true;
		}
		if (dataplane_queue_info(r->env->dp, dst->fd, dst->cookie, 0, now, &qi))
			redirect_log(
			    r, LOG_WARNING,
			    "backlog toward the %s did not drain in "
			    "%u ms; what the kernel still holds for it, if anything, is lost",
			    src == CLIENT ? "target" : "client", r->env->cfg->drain_timeout_ms);
		else
			redirect_log(r, LOG_WARNING,
				     "backlog toward the %s did not drain in "
				     "%u ms; %u socket buffers still queued for it are lost",
				     src == CLIENT ? "target" : "client",
				     r->env->cfg->drain_timeout_ms, qi.backlog_skbs);
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
	if (counted && !dataplane_counters(r->env->dp, r->slot, src, &c) && !c.packets)
		return true;
	/*
	 * Only a pass begun after the drain began: one from earlier in this tick, made for
	 * another redirect of the batch, could predate this client's last redirected skbs, and
	 * closing the target frees what its psock still holds (docs/kernel-notes.md). A drain
	 * that begins in a batch waits for the pass made after it, which every such drain shares.
	 */
	if (redirect_events_in_batch(r) &&
	    !dataplane_queue_fresh(r->env->dp, dir->drain_epoch, now)) {
		redirect_events_want_pass(r);
		return false;
	}
	err = dataplane_queue_info(r->env->dp, dst->fd, dst->cookie, dir->drain_epoch, now, &qi);
	if (!err) {
		drain_note(dir, &qi, now);
		dir->drain_over = !qi.backlog_skbs && !qi.partial_bytes;
		return dir->drain_over;
	}
	/*
	 * The probe runs for the sockets of the cgroup it is attached to: one made by another
	 * instance (taken back at a restart) is not in it, and the kernel answers the unknown
	 * option itself.
	 */
	if (err == -ENOPROTOOPT && !dir->probe_missed) {
		dir->probe_missed = true;
		redirect_log(r, LOG_WARNING,
			     "the queue probe does not answer for the %s's socket (made in "
			     "another cgroup): the drain has no exact signal",
			     src == CLIENT ? "target" : "client");
	}
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
	if (dataplane_counters(r->env->dp, r->slot, src, &c))
		return true;
	/*
	 * A stop is rare and bounded by drain-timeout: there the daemon waits it out rather
	 * than trust the heuristic, which a slow reader granting vsock credit in bursts can
	 * fool (the target looks writable at every look while the worker still has skbs).
	 */
	if (r->env->stopping)
		return false;
	return settle_clock_check(&dir->drain_quiet, c.bytes, socket_writable(dst->fd), now,
				  TIMED_DRAIN_QUIET_USEC);
}

void dir_sweep(struct redirect *r, int src)
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
	gate = dataplane_gate(r->env->dp, r->slot, src);
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
		dir_enter(r, src, DIR_SWEPT);
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
		n = recv(r->ep[src].fd, dir->buf, q, MSG_DONTWAIT);
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
	dir_enter(r, src, DIR_SWEPT);
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
	struct vsockmap_gate *gate = dataplane_gate(r->env->dp, r->slot, src);
	struct direction *dir = &r->dir[src];
	int fd = r->ep[src].fd;
	uint64_t owed;
	ssize_t n;

	if (!flush_buf(r, src))
		return -EAGAIN;
	if (dir->held_taken == gate_held(gate))
		return peer_shut_down(&r->ep[src]) ? 0 : -EAGAIN;
	if (!dir_buf(dir))
		return -ENOMEM;
	owed = gate_held(gate) - dir->held_taken;
	if (dir_holding(dir))
		n = dir_hold_read(r, src, dir->buf, owed < dir->buf_size ? owed : dir->buf_size);
	else
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
	struct vsockmap_gate *gate = dataplane_gate(r->env->dp, r->slot, src);
	struct direction *dir = &r->dir[src];
	uint64_t now = loop_tick(r), held;

	if (!peer_shut_down(&r->ep[src])) {
		dir->held_wait_usec = 0;
		return false;
	}
	if (!dir->held_wait_usec) {
		dir->held_wait_usec = now;
		return false;
	}
	if (now - dir->held_wait_usec <= r->env->cfg->drain_timeout_ms * USEC_PER_MSEC)
		return false;
	held = gate_held(gate);
	redirect_log(r, LOG_WARNING,
		     "%" PRIu64 " bytes the verdict passed up never became "
		     "readable in %u ms; the client's last bytes are lost",
		     held - dir->held_taken, r->env->cfg->drain_timeout_ms);
	dir->held_taken = held;
	return true;
}

/*
 * Forward what the verdict held while the gate was closed, then open it with released = every
 * byte held so far, all of which the daemon has read and written. Reads stay on held bytes
 * during the grace period too, while the kernel already redirects again.
 */
void dir_catchup(struct redirect *r, int src)
{
	struct vsockmap_gate *gate = dataplane_gate(r->env->dp, r->slot, src);
	struct direction *dir = &r->dir[src];
	ssize_t n;

	for (;;) {
		n = forward_held(r, src);
		dir->held_in_flight = n == -EINPROGRESS;
		if (n == 0 || (n < 0 && n != -EAGAIN && n != -EINPROGRESS) ||
		    (n == -EINPROGRESS && held_owed_expired(r, src))) {
			dir_enter(r, src, DIR_SOURCE_ENDED);
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
	if (now_usec() - dir->gate_usec >= GATE_VERDICT_GRACE_USEC) {
		/*
		 * Every held byte is read and the gate has been open for the grace period: the
		 * verdict redirects again, and holds only if the target leaves the map, which the
		 * daemon then takes from the socket itself (DIR_TARGET_UNHASHED). Kept open, the
		 * hold socket took those bytes where DIR_COPY does not read, and cost two
		 * descriptors for the redirect's whole life.
		 */
		dir_hold_close(r, src);
		dir_enter(r, src, DIR_CAUGHT_UP);
	}
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

void dir_drain(struct redirect *r, int src)
{
	struct direction *dir = &r->dir[src];
	struct endpoint *dst = &r->ep[1 - src];
	ssize_t n;

	/* The injector's bytes first; the drain then waits for them like for any redirected. */
	if (dir_injecting(dir) && !flush_buf(r, src))
		return;
	if (!dir_drained(r, src))
		return;
	dir_inject_close(r, src);
	if (!take_held(r, src))
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
	if (!dst->hup && !(r->dir[1 - src].state == DIR_DONE &&
			   r->owner->rc->connect.kind == ADDRESS_UNIX_CONNECT))
		shutdown(dst->fd, SHUT_WR);
	dir_enter(r, src, DIR_FINISHED);
	redirect_log(r, LOG_DEBUG, "%s finished, drained in %" PRIu64 " us",
		     src == CLIENT ? "client->target" : "target->client",
		     now_usec() - dir->drain_started_usec);
}

/*
 * A unix client that shuts down reading takes our socket out of the sockhash:
 * unix_shutdown() unhashes the peer for SHUT_RD as for SHUT_WR. The verdict runs no more,
 * and no event says so: what the client sends from then on waits in the socket's own queue,
 * and a client that sends more than its send buffer before its close waits for good. A
 * mapped source in DIR_OPEN has nothing in its own queue but a skb on its way to the
 * verdict, and bytes left behind at the insert (their own watch); so bytes there, and the
 * cookie gone from the map, mean the kernel let go of it (docs/kernel-notes.md, "A unix
 * client that shuts down reading"). Asked of every redirect once a second (source_watch.c).
 */
bool redirect_source_watched(const struct redirect *r)
{
	const struct direction *dir = &r->dir[CLIENT];

	return !r->userspace && dir->state == DIR_OPEN && r->ep[CLIENT].in_map &&
	       !dir->left_behind;
}

void redirect_check_source_mapped(struct redirect *r)
{
	struct direction *dir = &r->dir[CLIENT];
	struct endpoint *ep = &r->ep[CLIENT];

	if (!redirect_source_watched(r) || socket_inq(ep->fd) <= 0 ||
	    dataplane_source_mapped(r->env->dp, ep->cookie))
		return;
	redirect_log(r, LOG_INFO,
		     "the client's socket left the sockhash (it shut down reading); the daemon "
		     "carries client->target once the kernel has sent what it redirected");
	ep->in_map = false;
	/* The verdict ran last before now: a pass made from here on has seen all it queued. */
	dir->drain_epoch = dataplane_queue_epoch(r->env->dp);
	dir_enter(r, CLIENT, DIR_SOURCE_UNHASHED);
	redirect_step(r);
}

/*
 * DIR_UNHASHED: the kernel's backlog toward the target first, then the daemon's copy. With an
 * exact signal the wait has no deadline: a slow reader is flow control, and a write of the
 * daemon's before the backlog is out would overtake it. Without one, as at an EOF
 * (dir_drained()).
 */
void dir_unhashed(struct redirect *r, int src)
{
	struct direction *dir = &r->dir[src];
	struct endpoint *dst = &r->ep[1 - src];
	struct vsockmap_queue_info qi;
	int err;

	if (!dst->hup && dataplane_exact_drain(dataplane_features(r->env->dp))) {
		err = dataplane_queue_info(r->env->dp, dst->fd, dst->cookie, dir->drain_epoch,
					   loop_tick(r), &qi);
		if (err && err != -ENOENT)
			return; /* out of descriptors or memory for the pass: the next tick */
		if (!err && (qi.backlog_skbs || qi.partial_bytes))
			return;
	} else if (!dir_drained(r, src)) {
		return;
	}
	dir->drain_started_usec = 0; /* the EOF's drain starts its own clock */
	dir_enter(r, src, DIR_BACKLOG_SENT);
}
