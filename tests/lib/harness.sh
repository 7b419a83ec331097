# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
#
# tests/lib/harness.sh - the result lines, checks and waits every suite uses: the VM
# suites (busybox sh), the systemd tier and the host suite (bash, with VMTEST_CONSOLE and
# VMTEST_RESULTS pointed at files). The initramfs and the systemd root file system carry it
# at /usr/lib/vmtest/lib.sh; a VM suite starts with:
#
#	. "${VMTEST_LIB:-/usr/lib/vmtest/lib.sh}"
#
# Result lines go to the console as one write each:
#	VMTEST PASS name detail
#	VMTEST FAIL name detail
#	VMTEST SKIP name reason
# tests/lib/runner.sh collects them on the host (tests/vm/run.sh, tests/systemd/run.sh);
# results_of (tests/lib/summary.sh) counts a results file. A test name is one word.

VMTEST_CONSOLE=${VMTEST_CONSOLE:-/dev/console}
VMTEST_RESULTS=${VMTEST_RESULTS:-/run/vmtest.results}
VMTEST_TMP=${VMTEST_TMP:-/tmp}

# _vmtest_emit KIND NAME DETAIL...: one line, one printf (so one write(2)).
_vmtest_emit() {
	_k=$1
	_n=$2${VMTEST_SUFFIX:-}
	shift 2
	_line="VMTEST $_k $_n${*:+ $*}"
	# Keep results on one line whatever the detail holds.
	_line=$(printf '%s' "$_line" | tr '\r\n' '  ')
	printf '%s\n' "$_line" >>"$VMTEST_RESULTS" 2>/dev/null
	if [ -w "$VMTEST_CONSOLE" ]; then
		printf '%s\n' "$_line" >"$VMTEST_CONSOLE"
	else
		printf '%s\n' "$_line"
	fi
}

vmtest_pass() {
	[ $# -ge 1 ] || { echo "vmtest_pass: NAME required" >&2; return 2; }
	_vmtest_emit PASS "$@"
}

vmtest_fail() {
	[ $# -ge 1 ] || { echo "vmtest_fail: NAME required" >&2; return 2; }
	_n=$1
	shift
	_vmtest_emit FAIL "$_n" "${*:-failed}"
}

vmtest_skip() {
	[ $# -ge 1 ] || { echo "vmtest_skip: NAME required" >&2; return 2; }
	_n=$1
	shift
	_vmtest_emit SKIP "$_n" "${*:-skipped}"
}

# vmtest_log MSG...: a diagnostic line on the console (not a result).
vmtest_log() {
	if [ -w "$VMTEST_CONSOLE" ]; then
		printf 'vmtest: %s\n' "$*" >"$VMTEST_CONSOLE"
	else
		printf 'vmtest: %s\n' "$*"
	fi
}

# vmtest_check NAME CMD...: run CMD; PASS if it succeeds, FAIL with its last
# output line otherwise.
vmtest_check() {
	_cn=$1
	shift
	if _out=$("$@" 2>&1); then
		vmtest_pass "$_cn"
	else
		_rc=$?
		_last=$(printf '%s\n' "$_out" | tail -n 1)
		vmtest_fail "$_cn" "rc=$_rc${_last:+: $_last}"
		return 1
	fi
}

# wait_for_file PATH TIMEOUT_SEC: wait until PATH exists (polls every 0.1 s).
# Returns 0 when it appears, 1 on timeout.
wait_for_file() { _wait_for_test -e "$1" "$2"; }

# wait_for_socket PATH TIMEOUT_SEC: like wait_for_file, but for a Unix socket.
wait_for_socket() { _wait_for_test -S "$1" "$2"; }

# log_count LOG PATTERN: how many lines of LOG match PATTERN (0 if there is no LOG).
log_count() {
	_lc=$(grep -c -- "$2" "$1" 2>/dev/null)
	echo "${_lc:-0}"
}

# wait_for_log LOG PATTERN BEFORE PID TIMEOUT_SEC: until LOG has more than BEFORE lines
# matching PATTERN (polls every 0.1 s). Returns 1 if PID exits first or on timeout.
wait_for_log() {
	_wl_ticks=$(($5 * 10))
	while [ "$(log_count "$1" "$2")" -le "$3" ]; do
		[ "$_wl_ticks" -gt 0 ] && kill -0 "$4" 2>/dev/null || return 1
		_wl_ticks=$((_wl_ticks - 1))
		sleep 0.1
	done
}

# _wait_for_test OP PATH TIMEOUT_SEC: until [ OP PATH ] holds, or the timeout.
_wait_for_test() {
	_ticks=$(($3 * 10))
	while ! test "$1" "$2"; do
		[ "$_ticks" -gt 0 ] || return 1
		_ticks=$((_ticks - 1))
		sleep 0.1
	done
	return 0
}

# redirects_left CONTROL_SOCKET: how many redirects the daemon still holds once none is left
# or 10 s have passed (-1: it did not answer).
redirects_left() {
	_rl=-1
	_rl_i=0
	while [ $_rl_i -lt 50 ]; do
		if _rl_out=$(vsockmapctl -s "$1" --json list 2>&1); then
			_rl=$(printf '%s' "$_rl_out" | grep -o '"id":' | wc -l)
		else
			_rl=-1
		fi
		[ "$_rl" -eq 0 ] && break
		sleep 0.2
		_rl_i=$((_rl_i + 1))
	done
	echo "$_rl"
}

# run_with_timeout SEC CMD...: run CMD, killing it after SEC seconds (TERM,
# then KILL 2 s later). Returns CMD's status; 143 or 137 means it timed out.
run_with_timeout() {
	_t=$1
	shift
	timeout -k 2 "$_t" "$@"
}

# now_ms: monotonic-enough milliseconds (uptime based; busybox date has no %N
# guarantee).
now_ms() {
	awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime
}

# mb_per_s BYTES MS: throughput with one decimal, in MB/s (10^6 bytes).
mb_per_s() {
	awk -v b="$1" -v ms="$2" 'BEGIN { if (ms <= 0) ms = 1; printf "%.1f\n", b / 1000 / ms }'
}
