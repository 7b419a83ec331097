// SPDX-License-Identifier: GPL-2.0-only
/*
 * Does the kernel wake a psock's backlog as soon as its redirect target has room again?
 *
 * When the psock worker's send into a redirect target fails with -EAGAIN, sk_psock_backlog()
 * re-arms itself one jiffy later. Only a socket whose own map has an sk_skb program gets
 * sk_psock_write_space() (sk_psock_start_verdict(), sk_psock_start_strp()): our targets sit in
 * egress, which has none, so on a stock kernel the worker sleeps out the jiffy however soon
 * the target drains. A vsock target refuses many times per MiB (the peer's credit runs out),
 * and the kernel path into vsock moves about half of what the daemon's own relay moves on
 * loopback, and a tenth over virtio (docs/performance.md, "Which path wins where"). unix and
 * TCP targets refuse seldom, so the retry does not bound them. With datapath=auto,
 * auto_datapath.c weighs this with the other hazards of the kernel path.
 *
 * kernel/ patch 1 gives every psock the wake, through a new global function,
 * sk_psock_start_write_space(), called from sock_map.c: another compilation unit, so it is
 * never inlined away and pahole writes it into the kernel's BTF. Asking BTF for it is cheap
 * and gives the same answer every time; a behavioural probe would have to time a retry,
 * which under emulation (TCG) a jiffy cannot be told from a slow CPU.
 */
#include <errno.h>

#include <bpf/btf.h>

#include "psock_wake.h"

int psock_wake_in_btf(const struct btf *btf)
{
	return btf__find_by_name_kind(btf, PSOCK_WAKE_FUNC, BTF_KIND_FUNC) > 0;
}

int psock_wake_probe_run(void)
{
	struct btf *btf = btf__load_vmlinux_btf();
	int r;

	if (!btf)
		return errno ? -errno : -ENOENT;
	r = psock_wake_in_btf(btf);
	btf__free(btf);
	return r;
}
