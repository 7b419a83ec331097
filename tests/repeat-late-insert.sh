#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The forced late-insert uploads (scenario_late_insert_tail), many times over, for a proof
# that nothing is lost: `tests/repeat-late-insert.sh host|vm RUNS [DAEMON ARGS...]`. Each
# round runs the six cases (8M, 32M, 32M with a stop; the same ending in a half-close); the summary counts every run and
# the bytes that did not arrive. In the VM the kernel is the usual one (VSOCKMAP_VM_SERIES,
# VSOCKMAP_VM_APPEND and the rest as for tests/vm/run.sh); E2E_TAIL sets the upload size
# (default 128M on the host, 64M in the VM). Build first (make).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

where=${1:-}
runs=${2:-}
[[ ($where == host || $where == vm) && $runs =~ ^[1-9][0-9]*$ ]] ||
	{ echo "usage: $0 host|vm RUNS [DAEMON ARGS...]" >&2; exit 2; }
shift 2

if [[ $where == host ]]; then
	((EUID == 0)) || { echo "the host runs load BPF programs: run as root" >&2; exit 2; }
	out=${VSOCKMAP_OUTPUT:-$PWD/.output}
	export PATH="$out:$out/tools:$PATH"
	E2E_DIR=$(mktemp -d /tmp/vsockmap-repeat.XXXXXX)
	export E2E_DIR E2E_TARGET=unix E2E_TAIL=${E2E_TAIL:-128M} E2E_TAIL_RUNS=$runs
	export E2E_DAEMON_ARGS=--datapath=kernel # a unix target's default is user space
	export VMTEST_CONSOLE=/nonexistent VMTEST_RESULTS=$E2E_DIR/results VMTEST_TMP=$E2E_DIR
	trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$E2E_DIR"' EXIT
	# shellcheck source=tests/lib/harness.sh
	. tests/lib/harness.sh
	# shellcheck source=tests/e2e/scenarios.sh
	. tests/e2e/scenarios.sh
	signal=$(e2e_drain_signal "$@")
	echo "drain signal of a daemon started with '$*': $signal"
	# Without an exact signal a stop waits drain-timeout out: give it that long.
	[[ $signal != timed ]] || E2E_DRAIN_WAITS=1
	e2e_run_late_insert_tail "$@" | sed -u 's/^VMTEST /  /'
	passed=$(grep -c '^VMTEST PASS' "$VMTEST_RESULTS")
	failed=$(grep -c '^VMTEST FAIL' "$VMTEST_RESULTS")
	echo "$passed passed, $failed failed"
	((failed == 0))
	exit
fi

params=$(mktemp)
trap 'rm -f "$params"' EXIT
{
	printf 'E2E_TAIL=%s\nE2E_TAIL_RUNS=%s\nE2E_TAIL_ONLY=%s\n' "${E2E_TAIL:-64M}" "$runs" \
		"${E2E_TAIL_ONLY:-}"
	printf 'REPEAT_ARGS="%s"\n' "$*"
} >"$params"
# About 10 s a case in the VM (six a round): budget 30 s, and 5 minutes on top.
# Named by kernel series, so that repeats on two kernels can run side by side.
exec tests/vm/run.sh tests/vm/suite-repeat.sh --timeout $((runs * 6 * 30 + 300)) \
	--name "suite-repeat${VSOCKMAP_VM_SERIES:+-$VSOCKMAP_VM_SERIES}" \
	--file tests/e2e/scenarios.sh:/usr/lib/vmtest/scenarios.sh \
	--file "$params":/usr/lib/vmtest/repeat.env
