# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
#
# suite-oldkernel.sh - the foundation scenarios on Debian bookworm's own 6.1 kernel, where a
# vsock socket cannot enter a sockmap (Linux 6.4 added that). The daemon runs with its
# defaults (datapath=auto): it must find that out by itself, say so, and carry the vsock
# redirects in user space, every byte delivered. Test names end in @6.1.
#
#	VSOCKMAP_VM_SERIES=6.1 tests/vm/run.sh tests/vm/suite-oldkernel.sh \
#		--file tests/e2e/scenarios.sh:/usr/lib/vmtest/scenarios.sh

# shellcheck source=tests/lib/harness.sh
. "${VMTEST_LIB:-/usr/lib/vmtest/lib.sh}"
# shellcheck source=tests/e2e/scenarios.sh
. /usr/lib/vmtest/scenarios.sh

E2E_DIR=$VMTEST_TMP/e2e
E2E_TARGET=vsock
E2E_BIG=${E2E_BIG:-64M}
mkdir -p "$E2E_DIR"
VMTEST_SUFFIX=@6.1

case $(uname -r) in
6.1.*) vmtest_pass kernel "$(uname -r)" ;;
*) vmtest_fail kernel "$(uname -r): not a 6.1 kernel (VSOCKMAP_VM_SERIES=6.1?)" ;;
esac

e2e_run_streams
# What the daemon chose for the vsock sections, and why.
_why=$(grep -o 'data path: user space.*' "$E2E_DIR/daemon.log" | head -n 1)
# 6.1 has no backlog wake either (kernel/ patch 1): the vsock section is in user space from
# its start then, and says so, before any insert is tried.
if grep -q 'stream\] data path: user space from now on: the kernel cannot put the target socket in a sockhash (EOPNOTSUPP' "$E2E_DIR/daemon.log" ||
	grep -q "stream\] listening on .*; data path: user space (vsock, and this kernel leaves a full target's backlog" "$E2E_DIR/daemon.log" ||
	grep -q 'data path: user space, for every redirect: ' "$E2E_DIR/daemon.log"; then
	vmtest_pass fallback-chosen "by itself, datapath=auto: $_why"
else
	vmtest_fail fallback-chosen "no user-space data path in the log: $(grep 'data path' "$E2E_DIR/daemon.log" | head -n 3 | tr '\n' ' ')"
fi
e2e_run_dgram
vmtest_log "daemon log tail:"
tail -n 12 "$E2E_DIR/daemon.log" | while read -r line; do vmtest_log "  $line"; done
