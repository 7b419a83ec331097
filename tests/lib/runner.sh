# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# shellcheck disable=SC2034 # the runner_* results are read by the caller
#
# The host side of a suite run in the test VM (tests/vm/run.sh, tests/systemd/run.sh): the
# VM's console read line by line, the VMTEST result lines a suite prints through
# tests/lib/harness.sh counted and echoed, and what went wrong if the suite never ended.
# Needs `shopt -s extglob` in the caller (the escape-sequence patterns).

runner_pass=0 runner_fail=0 runner_skip=0
runner_seen_end=0 runner_suite_rc='' runner_kernel='' runner_t_kernel=''

# runner_line LINE: one console line, cleaned; VMTEST lines echoed as "  KIND name detail".
# Sets runner_clean to the cleaned line, for the caller's own markers.
runner_line() {
	local line=${1//$'\r'/} kind test_name detail
	# Terminal resets and escape sequences from firmware and the kernel.
	line=${line//$'\e'[\[]*([0-9;?])[[:alpha:]]/}
	line=${line//$'\e'c/}
	runner_clean=$line
	[[ ${VSOCKMAP_VM_VERBOSE:-0} != 1 ]] || printf '| %s\n' "$line"
	if [[ $line =~ VMTEST\ (PASS|FAIL|SKIP)\ ([^ ]+)(\ (.*))?$ ]]; then
		kind=${BASH_REMATCH[1]}
		test_name=${BASH_REMATCH[2]}
		detail=${BASH_REMATCH[4]}
		printf '  %s %s%s\n' "$kind" "$test_name" "${detail:+ $detail}"
		runner_count "$kind"
	elif [[ $line =~ VMSUITE-END\ rc=([0-9]+) ]]; then
		runner_seen_end=1
		runner_suite_rc=${BASH_REMATCH[1]}
	elif [[ $line =~ VM:\ kernel\ ([^ ]+) ]]; then
		runner_kernel=${BASH_REMATCH[1]}
		runner_t_kernel=$EPOCHREALTIME
	fi
}

# runner_count PASS|FAIL|SKIP: one more result (also for checks the host makes itself).
runner_count() {
	case $1 in
	PASS) runner_pass=$((runner_pass + 1)) ;;
	FAIL) runner_fail=$((runner_fail + 1)) ;;
	SKIP) runner_skip=$((runner_skip + 1)) ;;
	esac
}

# runner_verdict LOG QEMU_RC TIMEOUT_S: sets runner_problem to why the run cannot be trusted (empty if
# it can) and counts it as a failure, and counts a suite that ended with an error but reported no
# failure as one.
runner_verdict() {
	local log=$1 qemu_rc=$2 timeout_s=$3
	runner_problem=
	if ((!runner_seen_end)); then
		if grep -q 'Kernel panic' "$log"; then
			runner_problem="VM kernel panicked before the suite ended; see $log"
		elif [[ $qemu_rc == 124 || $qemu_rc == 137 ]]; then
			runner_problem="VM hung: no VMSUITE-END within ${timeout_s}s; see $log"
		else
			runner_problem="VM exited (qemu rc=${qemu_rc:-?}) without VMSUITE-END; see $log"
		fi
	elif ((runner_fail == 0 && runner_suite_rc != 0)); then
		printf '  FAIL suite-exit the suite exited rc=%s\n' "$runner_suite_rc"
		runner_count FAIL
	fi
	if [[ -z $runner_problem ]] && ((runner_pass + runner_fail + runner_skip == 0)); then
		runner_problem="the suite reported no VMTEST results; see $log"
	fi
	# Counted, so that a layer adding up result lines sees it, and named.
	if [[ -n $runner_problem ]]; then
		printf '  FAIL vm-run %s\n' "$runner_problem"
		runner_count FAIL
	fi
}

# runner_elapsed T0 T1: seconds between two $EPOCHREALTIME readings, one decimal.
runner_elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# runner_summary: the closing line; non-zero if the run failed or cannot be trusted.
runner_summary() {
	result_line "$runner_pass" "$runner_fail" "$runner_skip"
	[[ -z $runner_problem ]] && ((runner_fail == 0))
}
