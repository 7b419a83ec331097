// SPDX-License-Identifier: GPL-2.0-only
/*
 * Does the kernel pass what a unix socket queued before its insert to the stream verdict?
 *
 * A stock kernel does not: the verdict runs on data_ready, and a unix socket's read_skb()
 * takes one skb per run, so skbs queued before the insert move on one per later send
 * (docs/kernel-notes.md). The daemon therefore reads a client empty before it inserts it,
 * and on one CPU a client that writes at full speed refills its socket before every read.
 * kernel/ patch 7 runs the verdict over the queued skbs at the insert; on such a kernel the
 * daemon inserts a client at once, whatever it has queued (dir_sync()).
 *
 * Asked once at load, of a socketpair: one byte queued on one end, that end added to the
 * sources under its own cookie. No link names it, so the verdict passes the byte up to the
 * socket itself (into its psock queue), out of the receive queue that SIOCINQ counts.
 */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "sockopt.h"
#include "dataplane_internal.h"

int insert_probe_run(int sources_fd)
{
	uint64_t cookie, value;
	int sv[2], err, inq;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -errno;
	value = sv[1];
	err = socket_cookie(sv[1], &cookie);
	if (!err && write(sv[0], "", 1) != 1)
		err = -errno;
	if (!err && bpf_map_update_elem(sources_fd, &cookie, &value, BPF_ANY))
		err = -errno;
	if (!err) {
		inq = socket_inq(sv[1]);
		bpf_map_delete_elem(sources_fd, &cookie);
		err = inq < 0 ? inq : inq == 0;
	}
	close(sv[0]);
	close(sv[1]);
	return err;
}
