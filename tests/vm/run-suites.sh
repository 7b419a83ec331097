#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Every VM suite, one boot each; ends with the summed "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/lib/summary.sh
. tests/lib/summary.sh

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

run() {
	tests/vm/run.sh "$@" | tee "$tmp"
	summary_add "$tmp" "$1"
}

run tests/vm/suite-smoke.sh
run tests/vm/suite-e2e.sh --timeout 900 \
	--file tests/e2e/scenarios.sh:/usr/lib/vmtest/scenarios.sh \
	--file tests/e2e/ctl-scenarios.sh:/usr/lib/vmtest/ctl-scenarios.sh \
	--file tests/e2e/cmdline-scenarios.sh:/usr/lib/vmtest/cmdline-scenarios.sh \
	--file "$(command -v setpriv)":/usr/bin/setpriv \
	--file .output/bpf-object.sha256:/usr/lib/vmtest/bpf-object.sha256
# Bookworm's own 6.1 kernel: vsock cannot enter a sockmap, the daemon falls back by itself.
VSOCKMAP_VM_SERIES=6.1 run tests/vm/suite-oldkernel.sh --timeout 900 \
	--file tests/e2e/scenarios.sh:/usr/lib/vmtest/scenarios.sh
# The soak's short profile; `make soak` is the long one.
QUICK=1 tests/vm/soak.sh | tee "$tmp"
summary_add "$tmp" soak
summary_print
