#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Host-kernel suite: the real daemon redirecting unix to unix on this machine's kernel (no
# vsock here: that runs in the VM suite). Ends with "N passed, N failed".
#   tests/host/run.sh [CASE_FUNCTION...]   only these groups, e.g. daemon_reload_userspace
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

if ((EUID != 0)); then
	echo "SKIP host suite: loading BPF programs needs root"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi
out=${VSOCKMAP_OUTPUT:-$root/.output}
export PATH="$out:$out/tools:$PATH"
E2E_DIR=$(mktemp -d /tmp/vsockmap-host.XXXXXX)
# A unix target runs in user space by default (a unix server's shutdown() unhashes it): the
# kernel path is asked for, to test it here; e2e_run_unix_target_auto runs the default.
export E2E_DIR E2E_TARGET=unix E2E_BIG=${E2E_BIG:-256M} E2E_BPF_SHA_FILE=$out/bpf-object.sha256
export E2E_DAEMON_ARGS=--datapath=kernel
export VMTEST_CONSOLE=/nonexistent VMTEST_RESULTS=$E2E_DIR/results VMTEST_TMP=$E2E_DIR
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$E2E_DIR"' EXIT

# shellcheck source=tests/lib/harness.sh
. tests/lib/harness.sh
# shellcheck source=tests/lib/summary.sh
. tests/lib/summary.sh
# shellcheck source=tests/lib/throwaway-users.sh
. tests/lib/throwaway-users.sh
# shellcheck source=tests/e2e/scenarios.sh
. tests/e2e/scenarios.sh
# shellcheck source=tests/e2e/ctl-scenarios.sh
. tests/e2e/ctl-scenarios.sh
# shellcheck source=tests/host/daemon-cases.sh
. tests/host/daemon-cases.sh
. tests/host/access-cases.sh
# shellcheck source=tests/host/control-role-cases.sh
. tests/host/control-role-cases.sh
# shellcheck source=tests/host/stop-cases.sh
. tests/host/stop-cases.sh
# shellcheck source=tests/host/reload-cases.sh
. tests/host/reload-cases.sh
# shellcheck source=tests/host/fallback-cases.sh
. tests/host/fallback-cases.sh
# shellcheck source=tests/e2e/cmdline-scenarios.sh
. tests/e2e/cmdline-scenarios.sh
# shellcheck source=tests/host/cmdline-cases.sh
. tests/host/cmdline-cases.sh
# shellcheck source=tests/host/slow-reader-cases.sh
. tests/host/slow-reader-cases.sh
# shellcheck source=tests/host/tcp-close-cases.sh
. tests/host/tcp-close-cases.sh
# shellcheck source=tests/host/soak-cases.sh
. tests/host/soak-cases.sh
# shellcheck source=tests/host/peer-gone-cases.sh
. tests/host/peer-gone-cases.sh
# shellcheck source=tests/host/handover-cases.sh
. tests/host/handover-cases.sh
# shellcheck source=tests/host/restart-cases.sh
. tests/host/restart-cases.sh
# shellcheck source=tests/host/nofile-cases.sh
. tests/host/nofile-cases.sh
# shellcheck source=tests/host/caps-cases.sh
. tests/host/caps-cases.sh
# shellcheck source=tests/host/sockfile-cases.sh
. tests/host/sockfile-cases.sh
# shellcheck source=tests/host/hostile-client-cases.sh
. tests/host/hostile-client-cases.sh
# shellcheck source=tests/host/hostile-control-cases.sh
. tests/host/hostile-control-cases.sh

groups=("$@")
((${#groups[@]})) || groups=(e2e_run_common fallback_cases ctl_run_all host_daemon_cases
	host_access_cases host_control_role_cases host_caps_cases host_nofile_cases host_stop_cases host_sockfile_cases
	host_hostile_client_cases host_hostile_control_cases daemon_reload daemon_reload_userspace daemon_reload_backlog
	cmdline_cases
	host_slow_reader_cases host_tcp_close_cases host_peer_gone_cases host_handover_cases host_restart_cases host_soak_cases)
for g in "${groups[@]}"; do
	if [[ $(type -t "$g") != function ]]; then
		echo "tests/host/run.sh: no case group $g" >&2
		exit 2
	fi
done
for g in "${groups[@]}"; do
	"$g"
done | sed -u 's/^VMTEST /  /'

# The e2e scenarios' daemon log; the other groups report their own in the FAIL line.
if grep -q '^VMTEST FAIL' "$VMTEST_RESULTS" && [ -f "$E2E_DIR/daemon.log" ]; then
	echo "--- daemon log of the last e2e run:"
	tail -n 30 "$E2E_DIR/daemon.log"
fi
results_of "$VMTEST_RESULTS"
