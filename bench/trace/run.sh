#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# run.sh - what the kernel does per MiB moved, for each relay mode, in the test VM: boots
# it once with bench/trace/suite-trace.sh and tabulates vsm-trace's counters as markdown.
#
#   bench/trace/run.sh [--bytes SIZE] [--profile]   (default 64M; needs make, and root)
#
# --profile samples where the CPU time goes instead (vsm-profile, one pass per mode), into
# .output/trace/KERNEL.profile and KERNEL-profile.md: milliseconds per MiB by task and by
# kernel function.
# VSOCKMAP_VM_SERIES=newest boots the newest Debian kernel instead of 6.12, as for make bench.
# Writes .output/trace/KERNEL.trace (the raw TRACE lines) and .output/trace/KERNEL.md (the
# table) and prints the table. Numbers only: nothing here is asserted.

set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
bytes=64M
profile=0
while (($#)); do
	case $1 in
	--bytes) bytes=${2:?--bytes wants a size}; shift 2 ;;
	--profile) profile=1; shift ;;
	*) echo "usage: $0 [--bytes SIZE] [--profile]" >&2; exit 2 ;;
	esac
done
n=$(numfmt --from=iec "$bytes")
out=.output/trace
mkdir -p "$out"
[[ -x .output/tools/vsm-trace && -x .output/tools/vsm-bench ]] || { echo "trace: run make first" >&2; exit 1; }
params=$out/trace-params.sh
cat >"$params" <<EOP
TRACE_BYTES=$n
BENCH_MODES="${TRACE_MODES:-direct socat socat-b64k vsockmapd vsockmapd-permanent vsockmapd-relay}"
BENCH_SETTLE=1
BENCH_TEARDOWN_MAX=10
TRACE_PROFILE=$profile
EOP
rc=0
tests/vm/run.sh bench/trace/suite-trace.sh --timeout 900 \
	--file bench/lib.sh:/usr/lib/vmtest/bench-lib.sh \
	--file "$params":/usr/lib/vmtest/trace-params.sh >"$out/vm.txt" 2>&1 || rc=$?
sed 's/^/  /' "$out/vm.txt" >&2
kernel=$(tr -d '\r' <.output/vm/suite-trace.log | sed -n 's/.*VM: kernel //p' | head -n1)
kernel=${kernel:-unknown}
if ((profile)); then
	tr -d '\r' <.output/vm/suite-trace.log | grep -E '^(PROFILE|TRACE [^ ]+ mbps) ' >"$out/$kernel.profile" || true
	awk -v kernel="$kernel" -v bytes="$bytes" -f bench/trace/profile.awk "$out/$kernel.profile" >"$out/$kernel-profile.md"
	cat "$out/$kernel-profile.md"
	exit $rc
fi
tr -d '\r' <.output/vm/suite-trace.log | grep '^TRACE ' >"$out/$kernel.trace" || true
awk -v kernel="$kernel" -v bytes="$bytes" -f bench/trace/table.awk "$out/$kernel.trace" >"$out/$kernel.md"
cat "$out/$kernel.md"
exit $rc
