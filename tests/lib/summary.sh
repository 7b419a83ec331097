# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# The "N passed, N failed[, N skipped]" line: written by every suite, added up across layers.

summary_passed=0
summary_failed=0
summary_skipped=0

# summary_add FILE LABEL: add the last result line of FILE; none counts as one failure.
summary_add() {
	local line p f s
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -n1)
	if [[ -z $line ]]; then
		echo "$2 printed no result line; counting it as one failure" >&2
		summary_failed=$((summary_failed + 1))
		return
	fi
	read -r p _ f _ s _ <<<"${line//,/}"
	summary_passed=$((summary_passed + p))
	summary_failed=$((summary_failed + f))
	summary_skipped=$((summary_skipped + ${s:-0}))
}

# summary_print: the closing line; returns non-zero if anything failed.
summary_print() {
	result_line "$summary_passed" "$summary_failed" "$summary_skipped"
	((summary_failed == 0))
}

# result_line PASSED FAILED [SKIPPED]: the line every suite ends with.
result_line() {
	if ((${3:-0})); then
		echo "$1 passed, $2 failed, $3 skipped"
	else
		echo "$1 passed, $2 failed"
	fi
}

# results_of FILE: the closing line for the VMTEST lines in FILE (tests/lib/harness.sh);
# non-zero if one failed.
results_of() {
	local p f s
	p=$(grep -c '^VMTEST PASS' "$1")
	f=$(grep -c '^VMTEST FAIL' "$1")
	s=$(grep -c '^VMTEST SKIP' "$1")
	result_line "$p" "$f" "$s"
	((f == 0))
}
