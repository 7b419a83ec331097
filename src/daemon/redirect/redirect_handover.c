// SPDX-License-Identifier: GPL-2.0-only
/*
 * A stream redirect handed from one instance to the next (handover.c), in whatever state it
 * is: nothing waits to settle. The stopping instance writes down what the redirect is doing
 * (redirect_freeze(): its phase, each direction's state, counters and flags) and hands over
 * every descriptor that holds a byte of it: the two sockets, a memfd with what the daemon
 * had read and not yet written on, the hold socket and the injector. What the kernel holds
 * (the psock backlogs, the verdict's gate and counters) stays in those sockets and in the
 * stored maps, and goes on moving meanwhile. The next instance builds the same redirect back
 * (redirect_adopt()) and steps it: the state machine takes it from there.
 *
 * What is not carried is what the next instance finds again or starts anew: a drain's clocks
 * and its iterator epoch (the drain begins again), the gate's grace period (it starts again:
 * a verdict in flight finishes within it), the left-behind watch (the socket's own queue
 * says it), timers and epoll registrations.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gate.h"
#include "redirect_internal.h"
#include "redirect_record.h"
#include "sockopt.h"

/* ---- the stopping side ---- */

/* The bytes the daemon holds for direction src, in a memfd of their own (dir->carry_fd). */
static int pending_to_memfd(struct direction *dir)
{
	size_t len = dir->buf_len - dir->buf_off, off = 0;
	ssize_t n;
	int fd;

	fd = memfd_create("vsockmap-pending", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (off < len) {
		n = write(fd, dir->buf + dir->buf_off + off, len - off);
		if (n < 0) {
			n = -errno;
			close(fd);
			return (int)n;
		}
		off += (size_t)n;
	}
	safe_close(dir->carry_fd);
	dir->carry_fd = fd;
	return 0;
}

static unsigned int endpoint_flags(const struct endpoint *ep)
{
	return (ep->in_map ? RECORD_EP_IN_MAP : 0) | (ep->hup ? RECORD_EP_HUP : 0) |
	       (ep->broken ? RECORD_EP_BROKEN : 0) | (ep->shut_seen ? RECORD_EP_SHUT_SEEN : 0) |
	       (ep->linger_shut ? RECORD_EP_LINGER_SHUT : 0);
}

/* Descriptor what of direction d travels as fd (if it has one). */
static void carry(struct redirect_record *rec, int fds[RECORD_NR_FDS], int slot, int fd)
{
	if (fd < 0)
		return;
	rec->fds |= 1u << slot;
	fds[slot] = fd;
}

int redirect_freeze(struct redirect *r, struct redirect_record *rec, int fds[RECORD_NR_FDS])
{
	int i, err;

	memset(rec, 0, sizeof(*rec));
	for (i = 0; i < RECORD_NR_FDS; i++)
		fds[i] = -1;
	rec->version = REDIRECT_RECORD_VERSION;
	rec->id = r->id;
	/* A pair the kernel refused runs in user space: its slot holds nothing it needs. */
	rec->slot = r->has_slot && !r->userspace ? r->slot : REDIRECT_SLOT_USERSPACE;
	rec->userspace = r->userspace;
	rec->phase = r->phase;
	rec->linked = r->linked;
	rec->started_usec = r->started_usec;
	rec->connect_deadline_usec = r->connect.deadline_usec;
	rec->idle_since_usec = r->idle_since_usec;
	rec->idle_mark = r->idle_bytes;
	rec->origin = r->origin;
	snprintf(rec->section, sizeof(rec->section), "%s", r->owner->rc->name);
	carry(rec, fds, RECORD_FD_CLIENT, r->ep[CLIENT].fd);
	carry(rec, fds, RECORD_FD_TARGET, r->ep[TARGET].fd);
	for (i = 0; i < 2; i++) {
		struct direction *dir = &r->dir[i];

		rec->ep_flags[i] = endpoint_flags(&r->ep[i]);
		if (i == TARGET && r->cut)
			rec->ep_flags[i] |= RECORD_EP_CUT;
		rec->dir[i].state = dir->state;
		rec->dir[i].flags = dir->no_splice ? RECORD_DIR_NO_SPLICE : 0;
		rec->dir[i].user_bytes = dir->user_bytes;
		rec->dir[i].user_packets = dir->user_packets;
		rec->dir[i].inject_bytes = dir->inject_bytes;
		rec->dir[i].held_taken = dir->held_taken;
		rec->dir[i].peeked = (uint32_t)dir->queued_peeked;
		if (dir_pending(dir)) {
			err = dir_pipe_into_buf(dir);
			err = err ?: pending_to_memfd(dir);
			if (err)
				return err;
			rec->dir[i].pending = (uint32_t)(dir->buf_len - dir->buf_off);
			carry(rec, fds, RECORD_FD(i, RECORD_DIR_PENDING), dir->carry_fd);
		}
		carry(rec, fds, RECORD_FD(i, RECORD_DIR_HOLD_READ), dir->hold_fd);
		carry(rec, fds, RECORD_FD(i, RECORD_DIR_HOLD_PEER), dir->hold_peer);
		carry(rec, fds, RECORD_FD(i, RECORD_DIR_INJECT), dir->inject_fd);
		carry(rec, fds, RECORD_FD(i, RECORD_DIR_INJECT_PEER), dir->inject_peer);
	}
	return 0;
}

void redirect_mark_handed_over(struct redirect *r)
{
	redirect_log(r, LOG_DEBUG, "handed over: %s, client->target %s, target->client %s",
		     redirect_phase_name(r->phase), dir_state_name(r->dir[CLIENT].state),
		     dir_state_name(r->dir[TARGET].state));
	redirect_events_forget(r);
	redirect_enter(r, REDIRECT_HANDED_OVER);
}

bool redirect_handed_over(const struct redirect *r)
{
	return r->phase == PHASE_HANDED_OVER;
}

uint32_t redirect_origin(const struct redirect *r)
{
	return r->origin;
}

/* ---- the starting side ---- */

/* The bytes a memfd carried, len of them, into a buffer of at least SYNC_BUF_SIZE. */
static int pending_from_memfd(int fd, uint32_t len, char **buf, size_t *size)
{
	size_t off = 0, want = len > SYNC_BUF_SIZE ? len : SYNC_BUF_SIZE;
	struct stat st;
	ssize_t n;

	*buf = NULL;
	*size = 0;
	if (fstat(fd, &st))
		return -errno;
	if (st.st_size != (off_t)len)
		return -EBADMSG; /* not the bytes the record counts */
	*buf = malloc(want);
	if (!*buf)
		return -ENOMEM;
	while (off < len) {
		n = pread(fd, *buf + off, len - off, (off_t)off);
		if (n <= 0) {
			free(*buf);
			*buf = NULL;
			return n < 0 ? -errno : -EBADMSG;
		}
		off += (size_t)n;
	}
	*size = want;
	return 0;
}

/* The phase the record names, through the events that lead there from connected. */
static void enter_phase(struct redirect *r, unsigned int phase)
{
	if (phase == PHASE_CONNECTING)
		return;
	redirect_enter(r, REDIRECT_CONNECTED);
	if (phase == PHASE_CLOSING)
		redirect_enter(r, REDIRECT_PEER_GONE);
	else if (phase == PHASE_STOPPING)
		redirect_enter(r, REDIRECT_CLOSE_REQUESTED);
	else if (phase == PHASE_IDLE_CLOSING)
		redirect_enter(r, REDIRECT_IDLE_TIMEOUT);
}

static void restore_endpoint(struct endpoint *ep, unsigned int flags)
{
	ep->in_map = flags & RECORD_EP_IN_MAP;
	ep->hup = flags & RECORD_EP_HUP;
	ep->broken = flags & RECORD_EP_BROKEN;
	ep->shut_seen = flags & RECORD_EP_SHUT_SEEN;
	ep->linger_shut = flags & RECORD_EP_LINGER_SHUT;
}

/*
 * What the daemon held of direction d, and its hold socket and injector, onto r; the memfd's
 * bytes were read already (buf). What starts anew starts now.
 */
static void restore_direction(struct redirect *r, int d, const struct redirect_record *rec,
			      int fds[RECORD_NR_FDS], char *buf, size_t buf_size)
{
	struct direction *dir = &r->dir[d];
	uint64_t now = now_usec();

	dir->state = rec->dir[d].state;
	dir->no_splice = rec->dir[d].flags & RECORD_DIR_NO_SPLICE;
	dir->user_bytes = rec->dir[d].user_bytes;
	dir->user_packets = rec->dir[d].user_packets;
	dir->inject_bytes = rec->dir[d].inject_bytes;
	dir->held_taken = rec->dir[d].held_taken;
	dir->queued_peeked = rec->dir[d].peeked;
	dir->buf = buf;
	dir->buf_size = buf_size;
	dir->buf_len = rec->dir[d].pending;
	dir->hold_fd = fds[RECORD_FD(d, RECORD_DIR_HOLD_READ)];
	dir->hold_peer = fds[RECORD_FD(d, RECORD_DIR_HOLD_PEER)];
	dir->inject_fd = fds[RECORD_FD(d, RECORD_DIR_INJECT)];
	dir->inject_peer = fds[RECORD_FD(d, RECORD_DIR_INJECT_PEER)];
	if (dir->hold_peer >= 0)
		socket_cookie(dir->hold_peer, &dir->hold_cookie);
	if (dir->inject_peer >= 0)
		socket_cookie(dir->inject_peer, &dir->inject_cookie);
	/* A verdict that read the gate before the hand-over is done within this. */
	dir->gate_usec = now;
	dir->drain_not_before_usec = now + GATE_VERDICT_GRACE_USEC;
	if (r->env->dp)
		dir->drain_epoch = dataplane_queue_epoch(r->env->dp);
}

/* A hold socket without its peer, or an injector without its: both ends, or neither. */
static bool fds_whole(const struct redirect_record *rec)
{
	int d;

	for (d = 0; d < 2; d++) {
		unsigned int hold = rec->fds >> RECORD_FD(d, RECORD_DIR_HOLD_READ) & 3;
		unsigned int inject = rec->fds >> RECORD_FD(d, RECORD_DIR_INJECT) & 3;

		if (hold == 1 || hold == 2 || inject == 1 || inject == 2)
			return false;
	}
	return true;
}

static void close_fds(int fds[RECORD_NR_FDS])
{
	int i;

	for (i = 0; i < RECORD_NR_FDS; i++)
		fds[i] = safe_close(fds[i]);
}

int redirect_adopt(struct redirect_env *env, const struct redirect_owner *owner,
		   const struct redirect_record *rec, int fds[RECORD_NR_FDS],
		   const uint64_t cookie[2])
{
	bool kernel = rec->slot != REDIRECT_SLOT_USERSPACE;
	/* A connect still under way goes on to the path it was started for, if there is one. */
	bool userspace = rec->phase == PHASE_CONNECTING ? rec->userspace || !env->dp : !kernel;
	char *buf[2] = {NULL, NULL};
	size_t size[2] = {0, 0};
	struct redirect *r;
	uint64_t now = now_usec();
	int d, err = 0;

	if (!fds_whole(rec) || (kernel && !env->dp))
		err = -EINVAL;
	for (d = 0; d < 2 && !err; d++)
		if (rec->dir[d].pending)
			err = pending_from_memfd(fds[RECORD_FD(d, RECORD_DIR_PENDING)],
						 rec->dir[d].pending, &buf[d], &size[d]);
	for (d = 0; d < 2; d++)
		fds[RECORD_FD(d, RECORD_DIR_PENDING)] =
		    safe_close(fds[RECORD_FD(d, RECORD_DIR_PENDING)]);
	if (err)
		goto fail;
	r = redirect_new(env, owner, userspace, rec->id, fds[RECORD_FD_CLIENT],
			 fds[RECORD_FD_TARGET]);
	fds[RECORD_FD_CLIENT] = fds[RECORD_FD_TARGET] = -1;
	if (!r) {
		err = -ENOMEM;
		goto fail;
	}
	r->adopted = true;
	r->origin = rec->origin;
	if (rec->started_usec && rec->started_usec <= now)
		r->started_usec = rec->started_usec;
	r->connect.deadline_usec = rec->connect_deadline_usec;
	/* A restart is no traffic: the idle timeout counts on from where it was. */
	if (rec->idle_since_usec <= now) {
		r->idle_since_usec = rec->idle_since_usec;
		r->idle_bytes = rec->idle_mark;
	}
	if (kernel) {
		r->slot = rec->slot;
		r->has_slot = true;
		r->linked = rec->linked;
		for (d = 0; d < 2; d++)
			r->ep[d].cookie = cookie[d];
	}
	for (d = 0; d < 2; d++) {
		restore_endpoint(&r->ep[d], rec->ep_flags[d]);
		if (d == TARGET)
			r->cut = rec->ep_flags[d] & RECORD_EP_CUT;
		restore_direction(r, d, rec, fds, buf[d], size[d]);
		fds[RECORD_FD(d, RECORD_DIR_HOLD_READ)] = fds[RECORD_FD(d, RECORD_DIR_HOLD_PEER)] =
		    -1;
		fds[RECORD_FD(d, RECORD_DIR_INJECT)] = fds[RECORD_FD(d, RECORD_DIR_INJECT_PEER)] =
		    -1;
	}
	if (kernel && rec->version == 0) {
		struct vsockmap_gate *gate = dataplane_gate(env->dp, r->slot, CLIENT);

		/* Settled when stored: every held byte taken; its hold socket closed with it. */
		r->dir[CLIENT].held_taken = gate_held(gate);
		__atomic_store_n(&gate->hold_cookie, 0, __ATOMIC_RELEASE);
	}
	enter_phase(r, rec->phase);
	/*
	 * What waits in the client's own queue was left behind at the insert (a catch-up goes
	 * back to DIR_OPEN with it, a sweep takes it): the queue says it, as after an insert.
	 */
	if (kernel && r->ep[CLIENT].in_map &&
	    (r->dir[CLIENT].state == DIR_OPEN || r->dir[CLIENT].state == DIR_SWEEP ||
	     r->dir[CLIENT].state == DIR_CATCHUP))
		dir_watch_left_behind(r, CLIENT);
	redirect_log(r, LOG_DEBUG,
		     "taken back from the previous instance: %s, client->target %s "
		     "(%u bytes held), target->client %s (%u bytes held)",
		     redirect_phase_name(r->phase), dir_state_name(r->dir[CLIENT].state),
		     rec->dir[CLIENT].pending, dir_state_name(r->dir[TARGET].state),
		     rec->dir[TARGET].pending);
	if (r->phase == PHASE_CONNECTING) {
		/* The connect goes on: its deadline is the one the previous instance set. */
		err = redirect_arm_timer(r,
					 r->connect.deadline_usec ? r->connect.deadline_usec : now);
		err = err ?: redirect_update_io(r);
		if (err < 0)
			redirect_fail(r, err, "watching the connect, taken back, to");
		return 0;
	}
	redirect_step(r);
	return 0;

fail:
	free(buf[0]);
	free(buf[1]);
	close_fds(fds);
	return err;
}
