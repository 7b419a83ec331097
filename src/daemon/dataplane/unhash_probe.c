// SPDX-License-Identifier: GPL-2.0-only
/*
 * Does a unix server's shutdown() take its peer out of every sockhash?
 *
 * unix_shutdown() calls the peer's sk_prot->unhash() for a stream socket, for SHUT_RD as
 * for SHUT_WR, and for a socket in a sockhash that is sock_map_unhash(): the entry goes, the
 * psock is dropped, and sk_psock_destroy() frees the skbs still queued on its backlog. For a
 * UNIX-CONNECT target on the kernel path those are client bytes redirected to the target
 * and not yet sent into the server: a server that half-closes while it still reads loses
 * them (docs/kernel-notes.md, "A unix target whose server shuts down"). Every kernel with
 * unix sockets in sockmap (5.15 on) does it; asked once at load, so that a kernel that stops
 * doing it gets the kernel path back.
 *
 * Asked of a socketpair: one end in the destinations under its own cookie, the other end
 * shut down for writing, then the first looked up.
 */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "dataplane_internal.h"
#include "sockopt.h"

int unhash_probe_run(int egress_fd)
{
	uint64_t cookie, value;
	int sv[2], err;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -errno;
	value = sv[0];
	err = socket_cookie(sv[0], &cookie);
	if (!err && bpf_map_update_elem(egress_fd, &cookie, &value, BPF_ANY))
		err = -errno;
	if (!err && shutdown(sv[1], SHUT_WR))
		err = -errno;
	if (!err) {
		/* The daemon's lookup of a sockhash gives the socket's cookie, or ENOENT. */
		if (bpf_map_lookup_elem(egress_fd, &cookie, &value))
			err = errno == ENOENT ? 1 : -errno;
		else
			bpf_map_delete_elem(egress_fd, &cookie);
	}
	close(sv[0]);
	close(sv[1]);
	return err;
}
