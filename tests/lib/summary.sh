# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# Adding up "N passed, N failed[, N skipped]" lines across test layers.

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
	if ((summary_skipped)); then
		echo "$summary_passed passed, $summary_failed failed, $summary_skipped skipped"
	else
		echo "$summary_passed passed, $summary_failed failed"
	fi
	((summary_failed == 0))
}
