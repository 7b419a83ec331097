// SPDX-License-Identifier: GPL-2.0-only
/*
 * datapath=auto: where the daemon's own relay (splice() in user space) is the path to run.
 *
 * The kernel path is taken where it is at least level with the relay in `make bench`. On the
 * kernels measured it is not, for three kinds of target:
 * - vsock, on a kernel that leaves a full target's backlog to a one-jiffy retry (psock_wake.c):
 *   0.5-0.7x the relay on vsock_loopback, 0.1x over virtio-vsock to a host;
 * - a unix stream target on a kernel whose unix shutdown() unhashes the peer
 *   (unhash_probe.c): not a matter of speed; a server that half-closes would lose the client
 *   bytes the kernel still holds for it;
 * - TCP stream targets: the relay was ahead in both full runs on the host (1726 against 1240
 *   and 2163 against 1432 MB/s, one stream), level in the quick and loaded runs, and never
 *   behind; it used less CPU per GB (0.72 against 0.90 s) and set up connections faster
 *   (10,079 against 6,777/s). kernel/ patch 1 does not change what bounds a TCP target.
 * datapath=kernel keeps the kernel path for all of them.
 */
#include <stddef.h>

#include "auto_datapath.h"
#include "bpf_dataplane.h"
#include "psock_wake.h"

bool auto_datapath_unix_target_unhashed(const struct dataplane_features *f,
					enum address_kind listen, enum address_kind target)
{
	return target == ADDRESS_UNIX_CONNECT && listen != ADDRESS_UNIX_RECV &&
	       f->shutdown_unhashes_peer;
}

const char *auto_datapath_userspace_why(const struct dataplane_features *f,
					enum address_kind listen, enum address_kind target)
{
	const char *why = psock_wake_userspace_why(f->backlog_wakes, listen, target);

	if (why)
		return why;
	if (auto_datapath_unix_target_unhashed(f, listen, target))
		return "a unix server's shutdown() would free what the kernel still holds for it";
	if (target == ADDRESS_TCP_CONNECT && listen != ADDRESS_UNIX_RECV)
		return "into TCP the daemon's relay is at least as fast as the kernel path, with "
		       "less CPU per GB";
	return NULL;
}
