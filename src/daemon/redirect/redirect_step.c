// SPDX-License-Identifier: GPL-2.0-only
/*
 * One step of a stream redirect, whatever woke it (its sockets, its timer, a drain's iterator
 * pass): look at both endpoints, move each direction on as far as it goes, close the pair
 * once both ways are done, and ask for the next wakeup (a timer, the epoll interest).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gate.h"
#include "redirect_internal.h"
#include "sockopt.h"

#define DRAIN_POLL_USEC (2 * USEC_PER_MSEC)
/* Held bytes counted by the verdict reach the socket within microseconds. */
#define HELD_POLL_USEC (1 * USEC_PER_MSEC)

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

	redirect_cut(r);
	redirect_log(r, LOG_WARNING,
		     "the connection to %s failed: %s; closing the client "
		     "connection, bytes not yet delivered are lost",
		     redirect_target_text(r, target, sizeof(target)),
		     strerror(err < 0 ? -err : EIO));
}

void redirect_enter(struct redirect *r, enum redirect_event ev)
{
	int to = redirect_phase_after(r->phase, ev);

	if (to < 0) {
		redirect_log(r, LOG_CRIT, "BUG: event \"%s\" in phase %s", redirect_event_name(ev),
			     redirect_phase_name(r->phase));
		abort();
	}
	r->phase = to;
}

void dir_enter(struct redirect *r, int src, enum dir_event ev)
{
	struct direction *dir = &r->dir[src];
	int to = dir_state_after(dir->state, ev);

	if (to < 0) {
		redirect_log(r, LOG_CRIT, "BUG: %s: event \"%s\" in state %s",
			     src == CLIENT ? "client->target" : "target->client",
			     dir_event_name(ev), dir_state_name(dir->state));
		abort();
	}
	dir->state = to;
	/* The kernel carries the direction now: give the buffer back. */
	if (to == DIR_OPEN && !dir_pending(dir)) {
		free(dir->buf);
		dir->buf = NULL;
		dir->buf_size = 0;
	}
}

/* The target is a unix server whose shutdown() takes it out of the egress map. */
static bool watch_unhash(const struct redirect *r)
{
	return r->owner->rc->connect.kind == ADDRESS_UNIX_CONNECT &&
	       (r->dir[CLIENT].state == DIR_OPEN || r->dir[CLIENT].state == DIR_SYNC);
}

/*
 * What the step needs to know of endpoint i: hang-up and error always, and the peer's
 * shutdown where it changes a direction (poll_endpoint()). In a step of the events batch,
 * epoll has just said it for every endpoint whose interest mask holds it (it reports
 * EPOLLHUP and EPOLLERR whatever the mask); only the rest is asked of the kernel.
 */
static uint32_t endpoint_events(struct redirect *r, int i)
{
	struct endpoint *ep = &r->ep[i];
	uint32_t need = EPOLLHUP | EPOLLERR;
	struct pollfd pfd = {.fd = ep->fd, .events = POLLRDHUP};

	if (r->dir[i].state == DIR_OPEN || r->dir[i].state == DIR_UNHASHED ||
	    (i == TARGET && watch_unhash(r)))
		need |= EPOLLRDHUP;
	if (r->batch_fresh && ep->watched && !(need & ~(ep->events | EPOLLHUP | EPOLLERR))) {
		if ((ep->events & EPOLLRDHUP) && !(ep->revents & (EPOLLRDHUP | EPOLLHUP)))
			ep->unshut_batch = r->batch;
		return ep->revents;
	}
	return poll(&pfd, 1, 0) > 0 ? pfd.revents : 0;
}

static void poll_endpoint(struct redirect *r, int i)
{
	uint32_t ev = endpoint_events(r, i);

	if (ev & (POLLRDHUP | POLLHUP))
		r->ep[i].shut_seen = true;
	if (i == TARGET && (ev & POLLERR) && !r->ep[i].hup)
		log_target_error(r);
	if (ev & (POLLHUP | POLLERR)) {
		/* Broken or fully closed: nothing more goes to it; finish the other way, then
		 * close. */
		r->ep[i].hup = r->ep[i].broken = true;
		redirect_enter(r, REDIRECT_PEER_GONE);
		if (r->dir[1 - i].state != DIR_DONE)
			dir_enter(r, 1 - i, DIR_DEST_GONE);
	}
	if ((ev & (POLLRDHUP | POLLHUP | POLLERR)) &&
	    (r->dir[i].state == DIR_OPEN || r->dir[i].state == DIR_UNHASHED))
		dir_enter(r, i, DIR_SOURCE_ENDED);
	/*
	 * A unix server's shutdown() unhashed the target from the egress map (see link_pair()),
	 * so the verdict now passes the client's bytes up instead of redirecting them: carry
	 * them in the daemon from here on. The verdict now runs for each skb in its sender's
	 * send(), so a read cannot overtake it unless skbs were left behind at the insert
	 * (see dir_sync()).
	 */
	if (i == TARGET && (ev & POLLRDHUP) && watch_unhash(r))
		dir_enter(r, CLIENT, DIR_TARGET_UNHASHED);
}

/* Still has bytes to deliver before the pair may close. */
static bool dir_busy(const struct direction *dir)
{
	return dir->state == DIR_SYNC || dir->state == DIR_SWEEP || dir->state == DIR_CATCHUP ||
	       dir->state == DIR_DRAINING || dir->state == DIR_UNHASHED ||
	       dir->state == DIR_COPY || dir_pending(dir);
}

static void log_closed(struct redirect *r)
{
	struct redirect_info info;

	if (log_get_level() < LOG_DEBUG)
		return; /* the counters and the queue length cost three syscalls */
	redirect_get_info(r, &info, false);
	redirect_log(r, LOG_DEBUG,
		     "closed after %" PRIu64 " ms; bytes out %" PRIu64 " (%" PRIu64
		     " by the daemon, %" PRIu64 " through its injector), in %" PRIu64 " (%" PRIu64
		     " by the daemon)",
		     info.age_usec / USEC_PER_MSEC, info.moved.bytes[VSOCKMAP_DIR_TO_TARGET],
		     r->dir[CLIENT].user_bytes, r->dir[CLIENT].inject_bytes,
		     info.moved.bytes[VSOCKMAP_DIR_TO_CLIENT], r->dir[TARGET].user_bytes);
}

void redirect_step(struct redirect *r)
{
	uint64_t deadline = 0, now;
	int i, err;

	if (r->phase == PHASE_HANDED_OVER)
		return; /* its sockets are the next instance's */
	if (r->phase == PHASE_CONNECTING) {
		err = timed_connect_check(&r->connect, r->ep[TARGET].fd, now_usec());
		if (err > 0)
			redirect_connected(r);
		else if (err < 0)
			redirect_fail(r, err, "connect");
		else if ((err = redirect_arm_timer(r, r->connect.deadline_usec)) < 0)
			redirect_fail(r, err, "a timer for the connect to");
		return;
	}
	for (i = 0; i < 2; i++)
		poll_endpoint(r, i);
#ifdef VSOCKMAP_TEST_KNOBS
	if (r->env->loop.test_step_delay_us)
		usleep(r->env->loop.test_step_delay_us);
#endif
	r->batch_fresh = false; /* what the step does from here on is news to epoll's answer */
	for (i = 0; i < 2; i++) {
		if (r->dir[i].state == DIR_SYNC)
			dir_sync(r, i);
		if (r->dir[i].state == DIR_OPEN)
			dir_check_left_behind(r, i);
		if (r->dir[i].state == DIR_SWEEP)
			dir_sweep(r, i);
		if (r->dir[i].state == DIR_CATCHUP)
			dir_catchup(r, i);
		if (r->dir[i].state == DIR_UNHASHED)
			dir_unhashed(r, i);
		if (r->dir[i].state == DIR_DRAINING)
			dir_drain(r, i);
		if (r->dir[i].state == DIR_COPY)
			dir_copy(r, i);
	}
	/*
	 * An endpoint that sends nothing more (its way is done) and takes nothing more (a write
	 * into it failed: its peer shut down reading, or went away) leaves nothing to carry the
	 * other way either. Its hang-up may never be seen: a client that goes away between
	 * poll_endpoint() and the read of its EOF fails the write of the answer in the same step,
	 * and redirect_update_io() then stops watching it; the pair would wait for the target's
	 * EOF, which a server that waits for ours over a hybrid-vsock backend (no half-close
	 * passed on) sends only at its own timeout. socat exits on the same EPIPE.
	 */
	for (i = 0; i < 2; i++)
		if (r->ep[i].hup && r->dir[i].state == DIR_DONE && r->dir[1 - i].state != DIR_DONE)
			dir_enter(r, 1 - i, DIR_DEST_GONE);
	now = now_usec();
	if ((r->dir[CLIENT].state == DIR_DONE && r->dir[TARGET].state == DIR_DONE) ||
	    (redirect_phase_closing(r->phase) && !dir_busy(&r->dir[CLIENT]) && !dir_busy(&r->dir[TARGET]))) {
		if (redirect_linger(r, now, &deadline)) {
			err = redirect_arm_timer(r, deadline);
			err = err ?: redirect_update_io(r);
			if (err < 0)
				redirect_fail(r, err, "watching the sockets of the redirect to");
			return;
		}
		log_closed(r);
		redirect_free(r);
		return;
	}
	for (i = 0; i < 2; i++) {
		uint64_t t = 0;

		if (r->dir[i].state == DIR_DRAINING || r->dir[i].state == DIR_SWEEP ||
		    r->dir[i].state == DIR_UNHASHED ||
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
	err = redirect_arm_timer(r, deadline);
	err = err ?: redirect_update_io(r);
	if (err < 0)
		redirect_fail(r, err, "watching the sockets of the redirect to");
}
