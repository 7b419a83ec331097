#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Run the test layers (default: unit host vm) and end with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."

layers=("$@")
((${#layers[@]})) || layers=(unit host vm)
passed=0
failed=0
skipped=0

count_from() { # add a layer's "N passed, N failed[, N skipped]" line to the totals
	local line
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -n1)
	if [[ -z $line ]]; then
		echo "run-all: $2 printed no result line; counting it as one failure" >&2
		failed=$((failed + 1))
		return
	fi
	read -r p _ f _ s _ <<<"${line//,/}"
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + ${s:-0}))
}

run_unit() {
	local t out p f s
	for t in .output/tests/test_*; do
		[[ -x $t ]] || continue
		out=$("$t" 2>&1)
		printf '%s\n' "$out" | sed 's/^/    /'
		p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -n1)
		f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -n1)
		s=$(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' | tail -n1)
		passed=$((passed + ${p:-0}))
		failed=$((failed + ${f:-0}))
		skipped=$((skipped + ${s:-0}))
		if [[ -z $p && -z $f ]]; then
			echo "run-all: $t printed no cmocka summary" >&2
			failed=$((failed + 1))
		fi
	done
}

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for layer in "${layers[@]}"; do
	echo "== $layer tests"
	case $layer in
	unit)
		run_unit
		;;
	host)
		tests/host/run.sh | tee "$tmp"
		count_from "$tmp" host
		;;
	vm)
		tests/vm/run-suites.sh | tee "$tmp"
		count_from "$tmp" vm
		;;
	*)
		echo "run-all: unknown layer $layer" >&2
		exit 2
		;;
	esac
done
if ((skipped)); then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
((failed == 0))
