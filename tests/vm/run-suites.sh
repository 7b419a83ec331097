#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Every VM suite on every kernel of the matrix, one boot each, two boots at a time (each VM
# has one vCPU, and a machine of this kind has two cores); ends with the summed
# "N passed, N failed" and the time each run took. The output of each run comes when both
# lanes are done.
#
#   6.12 (bookworm-backports)      the e2e suite
#   newest (trixie-backports)      the e2e suite
#   6.12, lockdown=confidentiality the e2e suite's drain subset (BPF rights, drain signals)
#   6.1 (bookworm)                 the old-kernel suite (the user-space fallback)
#   6.12                           smoke, the soak's short profile, and the small-write share
#                                  of the matrix (tests/vm/suite-small-writes.sh)
#   6.12 and newest, virtio        the virtio tier: virtio-vsock to vhost-device-vsock on the
#                                  host, host peers (tests/vm/suite-virtio.sh), and its soak
#                                  (tests/vm/suite-virtio-soak.sh)
#
# Each bound is about three times what the run takes on a machine of this kind, so a slower
# machine does not fail on time, while a hung VM still ends (tests/vm/run.sh reports it).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/lib/summary.sh
. tests/lib/summary.sh

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
timings=()

e2e_files=(--file tests/e2e/scenarios.sh:/usr/lib/vmtest/scenarios.sh
	--file tests/e2e/ctl-scenarios.sh:/usr/lib/vmtest/ctl-scenarios.sh
	--file tests/e2e/cmdline-scenarios.sh:/usr/lib/vmtest/cmdline-scenarios.sh
	--file "$(command -v setpriv)":/usr/bin/setpriv
	--file .output/bpf-object.sha256:/usr/lib/vmtest/bpf-object.sha256)
echo "E2E_SUBSET=drain" >"$dir/drain.env"

# run NAME CMD...: one run, its output kept in $dir/NAME.out and its seconds in $dir/NAME.time.
run() {
	local name=$1 t0=$SECONDS
	shift
	"$@" >"$dir/$name.out" 2>&1
	echo $((SECONDS - t0)) >"$dir/$name.time"
}

# report NAME...: print the runs' output in order and add up their results.
report() {
	local name
	for name in "$@"; do
		echo "== vm: $name"
		cat "$dir/$name.out"
		summary_add "$dir/$name.out" "$name"
		timings+=("$name $(cat "$dir/$name.time" 2>/dev/null || echo '?')s")
	done
}

# Fetch every kernel first, one at a time (the cache has a lock, but this keeps the log tidy),
# and the virtio tier's backend.
for series in 6.12 newest 6.1; do
	VSOCKMAP_VM_SERIES=$series scripts/fetch-vm-kernel.sh >/dev/null ||
		echo "run-suites: no $series kernel for the VM (the runs on it will fail)" >&2
done
scripts/fetch-vhost-device-vsock.sh >/dev/null ||
	echo "run-suites: no vhost-device-vsock (the virtio runs will fail)" >&2

# Two lanes of about the same length (about 20 minutes each here): the newest kernel (the
# slowest under TCG) and the locked-down run in one, the rest in the other.
(
	VSOCKMAP_VM_SERIES=newest run e2e-newest \
		tests/vm/run.sh tests/vm/suite-e2e.sh --timeout 3600 --name suite-e2e-newest \
		"${e2e_files[@]}"
	VSOCKMAP_VM_APPEND=lockdown=confidentiality run e2e-lockdown \
		tests/vm/run.sh tests/vm/suite-e2e.sh --timeout 2400 --name suite-e2e-lockdown \
		"${e2e_files[@]}" --file "$dir/drain.env":/usr/lib/vmtest/e2e.env
	VSOCKMAP_VM_SERIES=newest run virtio-newest tests/vm/run.sh tests/vm/suite-virtio.sh --virtio \
		--file tests/e2e/scenarios.sh:/usr/lib/vmtest/scenarios.sh \
		--timeout 600 --name suite-virtio-newest
	VSOCKMAP_VM_SERIES=newest run virtio-soak-newest tests/vm/run.sh \
		tests/vm/suite-virtio-soak.sh --virtio --timeout 600 --name suite-virtio-soak-newest
) &
(
	run smoke tests/vm/run.sh tests/vm/suite-smoke.sh --timeout 300
	run e2e-6.12 tests/vm/run.sh tests/vm/suite-e2e.sh --timeout 2400 --name suite-e2e \
		"${e2e_files[@]}"
	# Bookworm's own 6.1 kernel: vsock cannot enter a sockmap, the daemon falls back by itself.
	VSOCKMAP_VM_SERIES=6.1 run oldkernel tests/vm/run.sh tests/vm/suite-oldkernel.sh \
		--timeout 1200 --file tests/e2e/scenarios.sh:/usr/lib/vmtest/scenarios.sh
	# The soak's short profile; `make soak` is the long one.
	QUICK=1 run soak tests/vm/soak.sh
	run virtio-6.12 tests/vm/run.sh tests/vm/suite-virtio.sh --virtio --timeout 600 \
		--file tests/e2e/scenarios.sh:/usr/lib/vmtest/scenarios.sh
	run virtio-soak-6.12 tests/vm/run.sh tests/vm/suite-virtio-soak.sh --virtio --timeout 600
	# The small-write share of the matrix (300 connections, half of them small writers;
	# docs/behaviour-matrix.md, "Small writes"): the default against the direct control.
	run small-writes-6.12 tests/vm/run.sh tests/vm/suite-small-writes.sh --timeout 900
) &
wait
report smoke e2e-6.12 e2e-newest e2e-lockdown oldkernel soak virtio-6.12 virtio-newest \
	virtio-soak-6.12 virtio-soak-newest small-writes-6.12

list=$(IFS=,; echo "${timings[*]}")
echo "== vm time per run: ${list//,/, }"
summary_print
