// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gate.h"
#include "held_read.h"
#include "log.h"
#include "redirect.h"
#include "redirect_internal.h"
#include "sockopt.h"
#include "target_connect.h"
#include "util.h"

static void collect_counters(struct redirect *r, struct redirect_info *info);
static void close_on(struct redirect *r, enum redirect_event ev);

const char *redirect_target_text(struct redirect *r, char *buf, size_t len)
{
	address_format(&r->owner->rc->connect, buf, len);
	return buf;
}

/* ---- lifetime ---- */

/* Only the entries each socket has: no failed deletes. */
static void remove_map_entries(struct redirect *r)
{
	if (r->ep[CLIENT].in_map)
		dataplane_remove_source(r->env->dp, r->ep[CLIENT].cookie);
	if (r->linked)
		dataplane_unlink(r->env->dp, r->ep[CLIENT].cookie);
	if (r->ep[TARGET].in_map)
		dataplane_remove_destination(r->env->dp, r->ep[TARGET].cookie);
}

/*
 * A vsock socket shut down for reading answers every recv() with 0 and never hands out its
 * receive queue again, so a stop, an idle close or `close ID` on a VSOCK-LISTEN client copies
 * what the client had queued first (dir_take_queued()); what arrived between that copy and
 * the shutdown is dropped. Linux 6.17 answers SIOCINQ on vsock: there those bytes are
 * counted; on older kernels it can only be said that some may have been.
 */
static void log_vsock_discard(const struct redirect *r)
{
	int n;

	if (r->owner->rc->listen.kind != ADDRESS_VSOCK_LISTEN ||
	    !redirect_phase_stops_target(r->phase) || r->ep[CLIENT].fd < 0)
		return;
	n = socket_inq(r->ep[CLIENT].fd);
	/* What the daemon copied out of the queue is still in it, and delivered. */
	if (n >= 0)
		n -= (int)r->dir[CLIENT].queued_peeked;
	if (n > 0)
		redirect_log(r, LOG_WARNING,
			     "vsock discarded %d bytes the client had sent "
			     "before the close (they came after the daemon copied its queue, and a "
			     "vsock socket shut down for reading drops its receive queue)",
			     n);
	else if (n < 0 && r->phase != PHASE_IDLE_CLOSING) /* idle: nothing came for idle-timeout */
		redirect_log(r, LOG_NOTICE,
			     "what vsock discarded of the client's bytes at the close (those that "
			     "came after the daemon copied its queue) cannot be counted on this "
			     "kernel: SIOCINQ on vsock: %s (Linux 6.17 answers it)",
			     strerror(-n));
}

void redirect_free(struct redirect *r)
{
	struct redirect_info info;
	bool handed_over;
	int i;

	if (!r)
		return;
	memset(&info, 0, sizeof(info));
	collect_counters(r, &info);
	log_vsock_discard(r);
	handed_over = r->phase == PHASE_HANDED_OVER;
	redirect_close_client(r);
	redirect_enter(r, REDIRECT_FREED);
	redirect_table_remove(&r->env->redirects, &r->live);
	if (r->uid_counted)
		uid_tally_remove(&r->env->uids, r->cred.uid);
	sd_event_source_disable_unref(r->timer);
	/*
	 * A handed-over pair keeps its entries, its hold socket's and its injector's for the
	 * next instance, which holds their descriptors too: only this instance's copies close.
	 */
	if (!handed_over)
		remove_map_entries(r);
	redirect_events_forget(r);
	for (i = 0; i < 2; i++) {
		if (!handed_over) {
			dir_inject_close(r, i);
			dir_hold_close(r, i);
		}
		safe_close(r->dir[i].inject_fd);
		safe_close(r->dir[i].inject_peer);
		safe_close(r->dir[i].hold_fd);
		safe_close(r->dir[i].hold_peer);
		safe_close(r->dir[i].carry_fd);
		safe_close(r->ep[i].fd);
		safe_close(r->dir[i].pipe[0]);
		safe_close(r->dir[i].pipe[1]);
		free(r->dir[i].buf);
	}
	if (r->has_slot)
		dataplane_slot_free(r->env->dp, r->slot);
	r->owner->ops->redirect_closed(r->owner->l, &info.moved);
	if (!redirect_events_defer_free(r))
		free(r);
}

struct redirect *redirect_next(struct redirect *r)
{
	return redirect_table_next(&r->live);
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

struct listener *redirect_listener(struct redirect *r)
{
	return r->owner->l;
}

const struct ucred *redirect_client(const struct redirect *r)
{
	return &r->cred;
}

static const char *redirect_state(struct redirect *r)
{
	enum dir_state a = r->dir[CLIENT].state, b = r->dir[TARGET].state;

	if (r->phase == PHASE_CONNECTING)
		return "connecting";
	if (a == DIR_DRAINING || b == DIR_DRAINING)
		return "draining";
	if (a == DIR_DONE || b == DIR_DONE)
		return "half-closed";
	if (a == DIR_SYNC || a == DIR_SWEEP || a == DIR_CATCHUP)
		return "syncing";
	return "open";
}

/* Bytes and packets each way: the kernel's counters plus what the daemon carried. */
static void collect_counters(struct redirect *r, struct redirect_info *info)
{
	struct vsockmap_counters c[VSOCKMAP_NR_DIRS];
	bool kernel = r->has_slot && !dataplane_slot_counters(r->env->dp, r->slot, c);
	int dir;

	for (dir = 0; dir < VSOCKMAP_NR_DIRS; dir++) {
		info->moved.bytes[dir] = r->dir[dir].user_bytes;
		info->moved.packets[dir] = r->dir[dir].user_packets;
		if (kernel) {
			info->moved.bytes[dir] += c[dir].bytes;
			info->moved.packets[dir] += c[dir].packets;
			info->moved.uncounted[dir] = !dataplane_counted(r->env->dp, r->slot, dir);
		}
	}
}

void redirect_get_traffic(struct redirect *r, struct traffic *moved)
{
	struct redirect_info info;

	memset(&info, 0, sizeof(info));
	collect_counters(r, &info);
	*moved = info.moved;
}

void redirect_get_info(struct redirect *r, struct redirect_info *info, bool with_queues)
{
	struct vsockmap_queue_info qi;
	int dir;

	memset(info, 0, sizeof(*info));
	info->id = r->id;
	info->name = r->owner->rc->name;
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
	    !dataplane_queue_info(r->env->dp, r->ep[TARGET].fd, r->ep[TARGET].cookie, 0,
				  loop_tick(r), &qi)) {
		info->has_queues = true;
		info->target_backlog_skbs = qi.backlog_skbs;
	}
	info->client_rcvq_bytes = r->ep[CLIENT].fd >= 0 ? socket_inq(r->ep[CLIENT].fd) : -1;
	if (info->client_rcvq_bytes < 0)
		info->client_rcvq_bytes = -1;
}

/* ---- set-up ---- */

/* Set-up failed: say why, count it, close the client. */
void redirect_fail(struct redirect *r, int err, const char *what)
{
	char target[160];

	r->owner->ops->redirect_failed(r->owner->l);
	redirect_log(r, LOG_WARNING, "%s %s: %s; closing the client connection (pid %d)", what,
		     redirect_target_text(r, target, sizeof(target)), strerror(-err), r->cred.pid);
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
	struct redirect_env *env = r->env;
	int err, i;

	for (i = 0; i < 2; i++) {
		err = socket_cookie(r->ep[i].fd, &r->ep[i].cookie);
		if (err)
			return err;
	}
	/*
	 * The daemon's own writes (a user-space pair both ways, the kernel path's target->client)
	 * go through the kernel's default send buffers: the relay's pipe moves 256 KiB a call,
	 * and a larger buffer only lets a client that never reads pin more kernel memory
	 * (docs/security.md, "What one connection costs").
	 */
	if (r->userspace)
		return 0;
	err = held_read_prepare(r->ep[CLIENT].fd);
	if (err)
		return err;
	err = dataplane_slot_alloc(env->dp, &r->slot);
	if (err)
		return err;
	r->has_slot = true;
	err = dataplane_link(env->dp, r->ep[CLIENT].cookie, r->ep[TARGET].cookie, r->slot,
			     VSOCKMAP_DIR_TO_TARGET);
	if (err)
		return err;
	r->linked = true;
	/* The destination first: a redirect needs it in the map. */
	err = dataplane_add_destination(env->dp, r->ep[TARGET].cookie, r->ep[TARGET].fd);
	if (r->owner->ops->target_refused(r->owner->l, err)) {
		dataplane_unlink(env->dp, r->ep[CLIENT].cookie);
		r->linked = false;
		r->userspace = true;
		return 0;
	}
	if (err)
		return err;
	r->ep[TARGET].in_map = true;
	/*
	 * The kernel path's egress: its backlog worker retries a jiffy later whenever the target
	 * is not writable by its sk_sndbuf (docs/kernel-notes.md, "Buffers"). sndbuf= on the
	 * address wins (socket_set_bufs()).
	 */
	if (!r->owner->rc->connect.sndbuf)
		socket_force_sndbuf(r->ep[TARGET].fd, env->cfg->sndbuf);
	/* Open from the start: the verdict passes data up only if the target left the map. */
	gate_release(dataplane_gate(env->dp, r->slot, VSOCKMAP_DIR_TO_TARGET), 0);
	return 0;
}

/* The target is connected: join the pair. */
void redirect_connected(struct redirect *r)
{
	int err;

	redirect_enter(r, REDIRECT_CONNECTED);
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

/* ---- close on request ---- */

/*
 * What moved both ways, as one number that changes whenever anything moves: the counters
 * (the daemon's, and on the kernel path the verdict's runs, held ones too), and what waits
 * for a slow reader. Bytes move too while it takes what waits for it: in its own receive
 * queue (a unix peer; SIOCOUTQ on our socket counts it), or, on the kernel path, in the
 * psock backlog toward it, which the verdict counted long ago; held skbs count as packets
 * only. A change in any of them is movement; a backlog that stands still is not.
 *
 * Only writes add to a socket's SIOCOUTQ and the psock backlog: ours, which our counters
 * count, or the verdict's, which its runs count. So when the last look found nothing
 * waiting either way and no counter moved since, nothing waits now: a redirect that sits
 * idle costs no system call here but its share of the sweep's one read of the kernel's
 * counters (10,000 idle ones asked at every check took 5% of a CPU in user space). The
 * backlog is read before the send queues, which it feeds: a skb that leaves it in between
 * is then seen in a queue, not missed by both. Without the queue probe the backlog cannot
 * be seen (bytes for a vsock reader wait there for credit), so the kernel path is then
 * asked at every check.
 */
static uint64_t idle_mark(struct redirect *r)
{
	bool kernel = r->has_slot && !r->userspace, known = true;
	struct redirect_info info;
	uint64_t counted, moved, backlog = 0;
	int outq[2];

	memset(&info, 0, sizeof(info));
	collect_counters(r, &info);
	counted = info.moved.bytes[CLIENT] + info.moved.bytes[TARGET];
	if (kernel)
		counted += redirect_kernel_runs(r);
	if (r->idle_unqueued && counted == r->idle_counted && r->idle_since_usec)
		return r->idle_bytes;
	if (kernel)
		backlog = redirect_kernel_backlog(r, &known);
	outq[0] = socket_outq(r->ep[CLIENT].fd);
	outq[1] = socket_outq(r->ep[TARGET].fd);
	r->idle_counted = counted;
	r->idle_unqueued = known && outq[0] <= 0 && outq[1] <= 0 && !backlog;
	moved = counted + backlog + (uint64_t)(outq[0] > 0 ? outq[0] : 0) +
		((uint64_t)(outq[1] > 0 ? outq[1] : 0) << 32);
	return moved;
}

bool redirect_idle_check(struct redirect *r, uint64_t now, uint64_t timeout_usec)
{
	uint64_t moved;

	if (r->phase != PHASE_RUNNING)
		return false;
	/* Its source's verdict counts nothing (fastpath=permanent): it never looks idle. */
	if (r->has_slot && !dataplane_counted(r->env->dp, r->slot, CLIENT))
		return false;
	moved = idle_mark(r);
	if (moved != r->idle_bytes || !r->idle_since_usec) {
		r->idle_bytes = moved;
		r->idle_since_usec = now;
		return false;
	}
	if (now - r->idle_since_usec < timeout_usec)
		return false;
	redirect_log(r, LOG_NOTICE, "no byte either way for %" PRIu64 " ms (idle-timeout)",
		     (now - r->idle_since_usec) / USEC_PER_MSEC);
	close_on(r, REDIRECT_IDLE_TIMEOUT);
	return true;
}

void redirect_request_close(struct redirect *r)
{
	close_on(r, REDIRECT_CLOSE_REQUESTED);
}

/* Close because of ev: the idle timeout, or a request. */
static void close_on(struct redirect *r, enum redirect_event ev)
{
	if (r->phase == PHASE_CONNECTING) {
		redirect_free(r);
		return;
	}
	/*
	 * The client gets EPIPE on its next write; what it sent before is still forwarded. A
	 * vsock client's queue would be dropped by the shutdown: it is read first. The target's
	 * side is not shut for reading, for the same reason: what it has sent so far is
	 * delivered, later bytes are not read.
	 */
	if (r->owner->rc->listen.kind == ADDRESS_VSOCK_LISTEN)
		dir_take_queued(r, CLIENT);
	redirect_enter(r, ev);
	/* Not shut: what was copied is still readable, and read again. */
	if (!redirect_client_reads_held(r) && shutdown(r->ep[CLIENT].fd, SHUT_RD))
		dir_forget_queued(&r->dir[CLIENT]);
	/*
	 * A send that queued its skb before the shutdown runs its verdict after it: the drain
	 * (its pass, or the shortcut for a way nothing was redirected on) must not begin
	 * before that verdict is done. The client's own EOF needs no such wait: every send
	 * of its had returned.
	 */
	r->dir[CLIENT].drain_not_before_usec = now_usec() + GATE_VERDICT_GRACE_USEC;
	if (r->dir[CLIENT].state == DIR_OPEN)
		dir_enter(r, CLIENT, DIR_SOURCE_ENDED);
	redirect_log(r, LOG_INFO, "closing on request");
	redirect_step(r);
}

/* ---- start ---- */

static void read_client_identity(struct redirect *r)
{
	socklen_t len = sizeof(r->cred);
	int fd, domain = 0;
	char path[64];
	ssize_t n;

	if (getsockopt(r->ep[CLIENT].fd, SOL_SOCKET, SO_PEERCRED, &r->cred, &len))
		return;
	/* Only a unix peer's uid is real (others read as the overflow uid): max-redirects-per-uid. */
	len = sizeof(domain);
	if (!getsockopt(r->ep[CLIENT].fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) &&
	    domain == AF_UNIX && !uid_tally_add(&r->env->uids, r->cred.uid))
		r->uid_counted = true;
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

struct redirect *redirect_new(struct redirect_env *env, const struct redirect_owner *owner,
			      bool userspace, uint64_t id, int client_fd, int target_fd)
{
	struct redirect *r;
	int i;

	r = calloc(1, sizeof(*r));
	if (!r) {
		safe_close(client_fd);
		safe_close(target_fd);
		return NULL;
	}
	r->env = env;
	r->owner = owner;
	r->id = id;
	r->userspace = userspace;
	r->origin = env->generation;
	r->started_usec = now_usec();
	r->ep[CLIENT].fd = client_fd;
	r->ep[TARGET].fd = target_fd;
	for (i = 0; i < VSOCKMAP_NR_DIRS; i++) {
		r->dir[i].pipe[0] = r->dir[i].pipe[1] = -1;
		r->dir[i].inject_fd = r->dir[i].inject_peer = -1;
		r->dir[i].hold_fd = r->dir[i].hold_peer = -1;
		r->dir[i].carry_fd = -1;
	}
	redirect_table_add(&env->redirects, &r->live, r, id);
	owner->ops->redirect_opened(owner->l);
	read_client_identity(r);
	return r;
}

int redirect_start(struct redirect_env *env, const struct redirect_owner *owner, bool userspace,
		   int client_fd)
{
	struct redirect *r;
	int in_progress, err;

	r = redirect_new(env, owner, userspace, redirect_table_new_id(&env->redirects), client_fd,
			 -1);
	if (!r)
		return -ENOMEM;
	r->ep[TARGET].fd =
	    timed_connect_start(&r->connect, &owner->rc->connect, env->cfg->connect_timeout_ms,
				r->started_usec, &in_progress);
	if (r->ep[TARGET].fd < 0) {
		err = r->ep[TARGET].fd;
		goto fail;
	}
	/* A unix target connects at once: no connect timer, and the io sources come later. */
	if (!in_progress) {
		redirect_connected(r);
		return 0;
	}
	err = redirect_arm_timer(r, r->connect.deadline_usec);
	err = err ?: redirect_update_io(r);
	if (err < 0)
		goto fail;
	return 0;

fail:
	/* Handled here: the client is told by the close, the log says why. */
	redirect_fail(r, err, "connect");
	return 0;
}
