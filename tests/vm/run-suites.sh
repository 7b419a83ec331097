#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Every VM suite, one boot each; ends with the summed "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."

passed=0
failed=0
skipped=0
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

run() {
	tests/vm/run.sh "$@" | tee "$tmp"
	local line p f s
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$tmp" | tail -n1)
	if [[ -z $line ]]; then
		echo "run-suites: $1 gave no result line"
		failed=$((failed + 1))
		return
	fi
	read -r p _ f _ s _ <<<"${line//,/}"
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + ${s:-0}))
}

run tests/vm/suite-smoke.sh
run tests/vm/suite-e2e.sh --timeout 900 \
	--file tests/e2e/scenarios.sh:/usr/lib/vmtest/scenarios.sh \
	--file .output/bpf-object.sha256:/usr/lib/vmtest/bpf-object.sha256

if ((skipped)); then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
((failed == 0))
