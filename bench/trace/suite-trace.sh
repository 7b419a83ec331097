# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
#
# suite-trace.sh - the VM side of bench/trace/run.sh: one unix client stream of TRACE_BYTES to
# a vsock sink on CID 1 through each relay mode of the bench (bench/lib.sh starts them as
# make bench does), each under vsm-trace. Prints "TRACE MODE NAME TOTAL PER_MIB" lines on
# the console, and the stream's own "TRACE MODE mbps N -" line.
#
# /usr/lib/vmtest/trace-params.sh (written by run.sh) sets TRACE_BYTES and BENCH_MODES, and
# TRACE_PROFILE=1 for one pass under vsm-profile instead ("PROFILE MODE TASK FUNCTION ..." lines).

# shellcheck source=tests/lib/harness.sh
. "${VMTEST_LIB:-/usr/lib/vmtest/lib.sh}"
# shellcheck source=bench/lib.sh
. /usr/lib/vmtest/bench-lib.sh
# shellcheck disable=SC1091
. /usr/lib/vmtest/trace-params.sh

bench_vm_part "$VMTEST_TMP/trace"
BENCH_TIMEOUT=${BENCH_TIMEOUT:-300}

# The tracepoint needs tracefs; kprobes do not.
[ -d /sys/kernel/tracing/events ] || mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null

# trace_modes SUFFIX: every mode of BENCH_MODES once, its rows named MODE plus SUFFIX.
trace_modes() {
	bench_part_start
	for _mode in $BENCH_MODES; do
		_name=$_mode$1
		if _why=$(bench_mode_na "$_mode"); then
			vmtest_skip "trace-$_name" "$_why"
			continue
		fi
		bench_server srv sink "$BENCH_TARGET_LISTEN" --conns 1 --expect "$TRACE_BYTES" \
			--timeout "$BENCH_TIMEOUT"
		_srv=$SRV_PID
		# Counted until the sink has all of it (its result line): a relay may still carry bytes
		# after the client is done writing them.
		_tool=vsm-trace _tag=TRACE
		[ "${TRACE_PROFILE:-0}" != 1 ] || _tool=vsm-profile _tag=PROFILE
		"$_tool" --bytes "$TRACE_BYTES" -- sh -c '"$1" source "$2" --bytes "$3" --timeout "$4" $TRACE_CLIENT_ARGS || exit
			t=$(($4 * 100)); while ! grep -q verify "$5" && [ $t -gt 0 ]; do t=$((t - 1)); sleep 0.01; done' \
			trace-client "$BENCH_TOOL" "$(bench_client_addr "$_mode")" "$TRACE_BYTES" \
			"$BENCH_TIMEOUT" "$BENCH_DIR/srv.out" >"$BENCH_DIR/trace.out" 2>"$BENCH_DIR/trace.err"
		_rc=$?
		[ $_rc -eq 0 ] || { sleep 1; kill "$_srv" 2>/dev/null; }
		wait "$_srv"
		if [ $_rc -ne 0 ] || [ "$(bench_json_get "$BENCH_DIR/srv.out" verify)" != ok ]; then
			vmtest_fail "trace-$_name" "rc=$_rc $(bench_why "$BENCH_DIR/srv.out" "$BENCH_DIR/trace.err" $_rc)"
			continue
		fi
		sed "s/^/trace-$_name: /" "$BENCH_DIR/trace.err" >"$VMTEST_CONSOLE"
		sed -n "s/^$_tag /$_tag $_name /p" "$BENCH_DIR/trace.out" >"$VMTEST_CONSOLE"
		_mbps=$(bench_json_get "$BENCH_DIR/trace.out" mbps)
		echo "TRACE $_name mbps $_mbps -" >"$VMTEST_CONSOLE"
		_hooks=$(grep -c '^vsm-trace: not counted' "$BENCH_DIR/trace.err")
		vmtest_pass "trace-$_name" "$TRACE_BYTES bytes verified, $_mbps MB/s under $_tool; $_hooks hooks not counted $(grep '^vsm-trace: not counted' "$BENCH_DIR/trace.err" | sed 's/.*counted: \([^ ]*\).*/\1/' | tr '\n' ' ')"
	done
	bench_part_stop
}

trace_modes ""
# The daemon as it is; then with its client inserted into the sockhash at the first byte (its
# test knob); then with a client that waits before it sends. A bulk upload that starts at
# connect is often forwarded by the daemon itself on one vCPU (docs/performance.md): the
# "vsock sendmsg" rows say who carried each run.
_daemon_modes=
for _mode in $BENCH_MODES; do
	case $_mode in vsockmapd | vsockmapd-permanent) _daemon_modes="$_daemon_modes $_mode" ;; esac
done
if [ -n "$_daemon_modes" ]; then
	BENCH_MODES=$_daemon_modes
	# A profile leaves this pass out: the daemon carries it (the catch-up).
	if [ "${TRACE_PROFILE:-0}" != 1 ]; then
		export VSOCKMAPD_TEST_INSERT_QUEUED=1
		trace_modes +insert-at-once
		unset VSOCKMAPD_TEST_INSERT_QUEUED
	fi
	# A client that starts 0.2 s after its connect: by then the daemon has found its socket
	# empty and handed it to the kernel, which carries every byte.
	export TRACE_CLIENT_ARGS="--start-delay 0.2"
	trace_modes +late-start
	unset TRACE_CLIENT_ARGS
fi
