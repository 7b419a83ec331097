// SPDX-License-Identifier: GPL-2.0-only
/*
 * The hold socket: where the verdict puts a client's bytes while its gate is closed.
 *
 * While the daemon forwards bytes itself (left behind at the insert, dir_sweep()), the
 * verdict must keep what the client sends meanwhile out of the target. Passing those skbs up
 * to our own socket (SK_PASS) has two faults (docs/kernel-notes.md, "Where held bytes
 * wait"): sk_psock_skb_ingress_self() charges them to our socket with no sk_rcvbuf check, so
 * the client is not flow-controlled at all; and a unix client's shutdown() unhashes our
 * socket (unix_shutdown() calls the peer's unhash), which drops its psock and frees that
 * queue with whatever the daemon had not read yet.
 *
 * So the gate names a hold socket instead: H, one end of a unix socketpair, in the egress
 * sockhash; the verdict redirects held skbs to it, and the psock worker sends them out of H
 * into its other end, R, which only the daemon reads, with plain reads. A redirected skb
 * stays charged to the client until the worker has sent it, and the worker sends only while
 * H's send buffer has room, so the client can have no more than its own send buffer in
 * flight, plus H's send buffer in R. H's peer is R, which is ours: nobody else can unhash it.
 * Made when the gate of a direction closes, closed once the catch-up is done (or with the
 * redirect): two descriptors only while the daemon forwards.
 */
#include <errno.h>
#include <sys/socket.h>

#include "gate.h"
#include "redirect_internal.h"
#include "sockopt.h"

int dir_hold_open(struct redirect *r, int src)
{
	struct direction *dir = &r->dir[src];
	struct dataplane *dp = r->env->dp;
	struct vsockmap_gate *gate;
	uint64_t cookie = 0;
	int sv[2], err;

	if (dir_holding(dir))
		return 0;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv))
		return -errno;
	err = socket_force_sndbuf(sv[0], r->env->cfg->sndbuf);
	if (!err)
		err = socket_cookie(sv[0], &cookie);
	if (!err)
		err = dataplane_add_destination(dp, cookie, sv[0]);
	if (err) {
		safe_close(sv[0]);
		safe_close(sv[1]);
		return err;
	}
	dir->hold_peer = sv[0];
	dir->hold_fd = sv[1];
	dir->hold_cookie = cookie;
	gate = dataplane_gate(dp, r->slot, src);
	__atomic_store_n(&gate->hold_cookie, cookie, __ATOMIC_RELEASE);
	return 0;
}

void dir_hold_close(struct redirect *r, int src)
{
	struct direction *dir = &r->dir[src];
	__u64 ours;

	if (!dir_holding(dir))
		return;
	/* Unless a next instance named its own (a pair handed over: redirect_adopt()). */
	ours = dir->hold_cookie;
	if (r->has_slot)
		__atomic_compare_exchange_n(&dataplane_gate(r->env->dp, r->slot, src)->hold_cookie,
					    &ours, 0, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	dataplane_remove_destination(r->env->dp, dir->hold_cookie);
	safe_close(dir->hold_peer);
	safe_close(dir->hold_fd);
	dir->hold_peer = dir->hold_fd = -1;
	dir->hold_cookie = 0;
}

ssize_t dir_hold_read(struct redirect *r, int src, void *buf, size_t len)
{
	ssize_t n = recv(r->dir[src].hold_fd, buf, len, MSG_DONTWAIT);

	if (n > 0)
		return n;
	/* Counted by the verdict, not yet sent out of H by the psock worker. */
	if (n == 0 || errno == EAGAIN)
		return -EINPROGRESS;
	return -errno;
}
