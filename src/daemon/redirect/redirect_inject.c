// SPDX-License-Identifier: GPL-2.0-only
/*
 * The injector: how the daemon hands what it read from the client before the insert to the
 * kernel, so that it can insert the client while the target is still full.
 *
 * Before the insert the daemon reads the client and writes to the target (dir_sync()). The
 * client may be inserted only once the daemon holds none of its bytes, so while the target
 * is full and the client keeps its socket full, a bulk upload never gets there: the daemon
 * carried all of it (docs/performance.md, "Who carries a bulk upload"). Writing instead into
 * one end (X) of a unix socketpair whose other end (Y) is a source in the sockhash, linked
 * to the target, puts those bytes through the verdict into the target's psock backlog, the
 * queue the client's own bytes join once it is inserted: one FIFO, so the order holds. X has
 * a large send buffer, so the daemon's writes rarely wait, the client's queue empties and
 * the insert comes. Y shares the redirect's slot, so its bytes count as the kernel's and the
 * drain at EOF waits for them like for any redirected byte.
 */
#include <errno.h>
#include <sys/socket.h>

#include "redirect_internal.h"
#include "sockopt.h"

/* X's send buffer: what the injector takes before the target's backlog has sent any. */
#define INJECT_SNDBUF (8 * 1024 * 1024)

int dir_inject_open(struct redirect *r, int src)
{
	struct direction *dir = &r->dir[src];
	struct dataplane *dp = r->env->dp;
	uint64_t cookie = 0;
	int sv[2], err;

	if (src != CLIENT || r->userspace || !r->ep[TARGET].in_map)
		return -EOPNOTSUPP;
	if (dir_injecting(dir))
		return 0;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv))
		return -errno;
	err = socket_force_sndbuf(sv[0], INJECT_SNDBUF);
	if (!err)
		err = socket_cookie(sv[1], &cookie);
	if (!err)
		err = dataplane_link(dp, cookie, r->ep[TARGET].cookie, r->slot, src);
	if (!err) {
		err = dataplane_add_source(dp, cookie, sv[1]);
		if (err)
			dataplane_unlink(dp, cookie);
	}
	if (err) {
		safe_close(sv[0]);
		safe_close(sv[1]);
		if (!dir->inject_error_logged)
			redirect_log_errno(r, LOG_DEBUG, err,
					   "no injector: the daemon waits for the target");
		dir->inject_error_logged = true;
		return err;
	}
	dir->inject_fd = sv[0];
	dir->inject_peer = sv[1];
	dir->inject_cookie = cookie;
	redirect_log(r, LOG_DEBUG, "the target is full: forwarding through the kernel (the injector)");
	return 0;
}

void dir_inject_close(struct redirect *r, int src)
{
	struct direction *dir = &r->dir[src];
	int n;

	if (!dir_injecting(dir))
		return;
	/* The verdict passes up what it could not redirect: the target left the map. */
	n = socket_inq(dir->inject_peer);
	if (n > 0)
		redirect_log(r, LOG_WARNING,
			     "%d bytes given to the injector never reached the target; "
			     "they are lost",
			     n);
	dataplane_remove_source(r->env->dp, dir->inject_cookie);
	dataplane_unlink(r->env->dp, dir->inject_cookie);
	safe_close(dir->inject_fd);
	safe_close(dir->inject_peer);
	dir->inject_fd = dir->inject_peer = -1;
	dir->inject_cookie = 0;
}
