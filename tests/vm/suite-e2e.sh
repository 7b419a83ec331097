# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
#
# suite-e2e.sh - the end-to-end scenarios of tests/e2e/scenarios.sh over real vsock: the
# daemon in the VM redirects unix clients to vsock servers on CID 1 (vsock_loopback).
#
#	tests/vm/run.sh tests/vm/suite-e2e.sh --file tests/e2e/scenarios.sh:/usr/lib/vmtest/scenarios.sh \
#		--file tests/e2e/ctl-scenarios.sh:/usr/lib/vmtest/ctl-scenarios.sh \
#		--file /usr/bin/setpriv:/usr/bin/setpriv

# shellcheck source=tests/lib/harness.sh
. "${VMTEST_LIB:-/usr/lib/vmtest/lib.sh}"
# shellcheck source=tests/e2e/scenarios.sh
. /usr/lib/vmtest/scenarios.sh
# shellcheck source=tests/e2e/ctl-scenarios.sh
. /usr/lib/vmtest/ctl-scenarios.sh
# shellcheck source=tests/e2e/cmdline-scenarios.sh
. /usr/lib/vmtest/cmdline-scenarios.sh

E2E_DIR=$VMTEST_TMP/e2e
E2E_TARGET=vsock
# The kernel path, asked for: with datapath=auto a vsock section runs in user space on a
# kernel without kernel/ patch 1 (psock_wake.c). e2e_run_datapath_auto runs the default,
# e2e_run_userspace and the *-userspace cases the user-space path.
E2E_DAEMON_ARGS=--datapath=kernel
E2E_BIG=${E2E_BIG:-256M}
E2E_TAIL=${E2E_TAIL:-64M} # the forced late-insert uploads (scenario_late_insert_tail)
E2E_BPF_SHA_FILE=/usr/lib/vmtest/bpf-object.sha256
# E2E_SUBSET=drain (from /usr/lib/vmtest/e2e.env): only what the kernel's BPF rights and
# drain signals decide, for the extra run on a locked-down kernel.
E2E_SUBSET=
# shellcheck disable=SC1091
[ ! -r /usr/lib/vmtest/e2e.env ] || . /usr/lib/vmtest/e2e.env
mkdir -p "$E2E_DIR"

# A run on a locked-down kernel (VSOCKMAP_VM_APPEND=lockdown=...) must really be one.
_want_lockdown=$(sed -n 's/.*lockdown=\([a-z]*\).*/\1/p' /proc/cmdline)
if [ -n "$_want_lockdown" ]; then
	if grep -q "\[$_want_lockdown\]" /sys/kernel/security/lockdown 2>/dev/null; then
		vmtest_pass lockdown-active "$(cat /sys/kernel/security/lockdown); the daemon says: $(e2e_drain_signal) drain"
	else
		vmtest_fail lockdown-active "asked for lockdown=$_want_lockdown, the kernel says: $(cat /sys/kernel/security/lockdown 2>&1)"
	fi
fi

e2e_run_common
# A stop finishes what was sent, into a vsock target (kernel path and user space).
scenario_stop_finishes vsock "UNIX-LISTEN:@D@/in.sock,fork" "unix:@D@/in.sock" \
	"VSOCK-CONNECT:1:$((E2E_PORT_BASE + 4000))" "vsock:any:$((E2E_PORT_BASE + 4000))"
[ "$E2E_SUBSET" = drain ] ||
	scenario_stop_finishes vsock-userspace "UNIX-LISTEN:@D@/in.sock,fork" "unix:@D@/in.sock" \
		"VSOCK-CONNECT:1:$((E2E_PORT_BASE + 4001))" "vsock:any:$((E2E_PORT_BASE + 4001))" \
		--datapath=userspace
scenario_stop_dgram vsock "VSOCK-CONNECT:1:$((E2E_PORT_BASE + 4002))" \
	"vsock:any:$((E2E_PORT_BASE + 4002))"
# The drain signals this kernel allows besides the default, forced (names end in @MODE).
e2e_run_drain_modes "UNIX-LISTEN:@D@/in.sock,fork" "unix:@D@/in.sock" \
	"VSOCK-CONNECT:1:$((E2E_PORT_BASE + 4003))" "vsock:any:$((E2E_PORT_BASE + 4003))" \
	"VSOCK-CONNECT:1:$((E2E_PORT_BASE + 4004))" "vsock:any:$((E2E_PORT_BASE + 4004))"
# A VSOCK-LISTEN client at a stop: read first, since vsock drops its queue at SHUT_RD; what
# arrives between the read and the shutdown is counted where the kernel can.
scenario_stop_vsock_listen $((E2E_PORT_BASE + 4005))

# Show what the daemon said, for the log.
vmtest_log "daemon log tail:"
tail -n 20 "$E2E_DIR/daemon.log" | while read -r line; do vmtest_log "  $line"; done

# vsockmapctl against the real daemon (tests/e2e/ctl-scenarios.sh).
ctl_run_all

# socat's command line against socat itself, vsock targets (tests/e2e/cmdline-scenarios.sh).
[ "$E2E_SUBSET" = drain ] || cmdline_compat
