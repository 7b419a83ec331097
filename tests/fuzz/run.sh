#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Run the libFuzzer targets built by `make fuzz-build` (.output-fuzz/fuzz_*).
#   tests/fuzz/run.sh            fuzz each target for FUZZ_SECONDS (default 60) seconds, or
#                                for FUZZ_RUNS execs when that is set, starting from its seed
#                                corpus and regressions; new inputs go to .output-fuzz/corpus/
#   tests/fuzz/run.sh --replay   run every seed and regression input once through its target
#                                (what `make check` does)
# Either way a target passes when it never crashed; a crash input is saved under
# .output-fuzz/crashes/TARGET/ and belongs in tests/fuzz/regressions/TARGET/ once fixed.
# Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."

out=.output-fuzz
passed=0
failed=0
mode=fuzz
[[ ${1:-} == --replay ]] && mode=replay

targets=()
for bin in "$out"/fuzz_*; do
	[[ -x $bin ]] && targets+=("${bin##*/fuzz_}")
done
if ((${#targets[@]} == 0)); then
	echo "fuzz: no targets in $out (make fuzz-build builds them)" >&2
	echo "0 passed, 1 failed"
	exit 1
fi

# inputs NAME: the checked-in inputs of one target, one per line.
inputs() {
	find "tests/fuzz/corpus/$1" "tests/fuzz/regressions/$1" -type f 2>/dev/null | sort
}

for t in "${targets[@]}"; do
	bin=$out/fuzz_$t
	log=$out/fuzz_$t.log
	mapfile -t files < <(inputs "$t")
	if [[ $mode == replay ]]; then
		if ((${#files[@]} == 0)); then
			echo "not ok fuzz-replay-$t: no seed inputs in tests/fuzz/corpus/$t"
			failed=$((failed + 1))
		elif "$bin" "${files[@]}" >"$log" 2>&1; then
			echo "ok fuzz-replay-$t: ${#files[@]} inputs, no crash"
			passed=$((passed + 1))
		else
			echo "not ok fuzz-replay-$t: crashed, see $log:"
			grep -E 'ERROR|runtime error|Running:' "$log" | tail -n5 | sed 's/^/    /'
			failed=$((failed + 1))
		fi
		continue
	fi

	corpus=$out/corpus/$t
	crashes=$out/crashes/$t
	mkdir -p "$corpus" "$crashes"
	((${#files[@]})) && cp -n "${files[@]}" "$corpus"/ 2>/dev/null
	limit=(-max_total_time="${FUZZ_SECONDS:-60}")
	[[ -n ${FUZZ_RUNS:-} ]] && limit=(-runs="$FUZZ_RUNS")
	dict=tests/fuzz/$t.dict
	dict_arg=()
	[[ -f $dict ]] && dict_arg=(-dict="$dict")
	start=$SECONDS
	"$bin" "${limit[@]}" "${dict_arg[@]}" -artifact_prefix="$crashes/" -print_final_stats=1 \
		"$corpus" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
	speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n1)
	n_corpus=$(find "$corpus" -type f | wc -l)
	if ((rc == 0)); then
		echo "ok fuzz-$t: ${execs:-?} execs in $((SECONDS - start)) s (${speed:-?}/s), corpus $n_corpus, no crash"
		passed=$((passed + 1))
	else
		echo "not ok fuzz-$t: exit $rc after ${execs:-?} execs; crash inputs in $crashes, log $log:"
		grep -E 'ERROR|runtime error|SUMMARY' "$log" | tail -n5 | sed 's/^/    /'
		failed=$((failed + 1))
	fi
done
echo "$passed passed, $failed failed"
((failed == 0))
