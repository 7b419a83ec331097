# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# The "N passed, N failed[, N skipped]" line: written by every suite, added up across layers.

summary_passed=0
summary_failed=0
summary_skipped=0
summary_failures=() # "LABEL: NAME" of each test that failed, for the closing lines

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
	summary_note_failures "$1" "$2"
	summary_passed=$((summary_passed + p))
	summary_failed=$((summary_failed + f))
	summary_skipped=$((summary_skipped + ${s:-0}))
}

# summary_note_failures FILE LABEL: remember the name of each "FAIL name", "not ok name:"
# or cmocka "[  FAILED  ] name" line of FILE (cmocka lists a failure twice: once), so the end
# of a long run names what failed.
summary_note_failures() {
	local name
	while read -r name; do
		summary_failures+=("$2: $name")
	done < <(sed -n -e 's/^ *\(VMTEST \)\{0,1\}FAIL \([^ ]*\).*/\2/p' \
		-e 's/^not ok \([^:]*\):.*/\1/p' \
		-e 's/^\[  FAILED  \] \([^ ]*\)$/\1/p' "$1" | awk '!seen[$0]++')
}

# summary_print: the names of the failed tests (and how many failures have none: a suite
# that printed no result, a build that failed), then the closing line; returns non-zero if
# anything failed.
summary_print() {
	local f unnamed=$((summary_failed - ${#summary_failures[@]}))
	for f in "${summary_failures[@]}"; do
		echo "== failed: $f"
	done
	((unnamed <= 0)) || echo "== failed: $unnamed more, named above only (a layer without a result line, a build)"
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
