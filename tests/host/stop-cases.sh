# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# How long a stop waits (sourced by tests/host/run.sh, after access-cases.sh for mini_*): the
# daemon gives up on a redirect only when none of its bytes has moved toward its reader for
# drain-timeout (and one second more), not at a fixed time after the SIGTERM.

# stop_timed_case NAME SERVER_OPTS CLIENT_OPTS DAEMON_LINES...: a daemon on the mini config
# (drain-timeout = 1 and DAEMON_LINES), a vsm-peer server with SERVER_OPTS, a client sending
# 256M with CLIENT_OPTS, and SIGTERM 1.5 s in. Sets MS_TICKS and MS_RC as stop_midstream does
# (the server's results, midstream_results, once it is done); the logs stay in MINI_DIR until
# mini_stop.
stop_timed_case() {
	local name=$1 server_opts=$2 client_opts=$3 cli
	mini_config "$name" s "drain-timeout = 1" "log-level = info" "${@:4}"
	# shellcheck disable=SC2086 # the options are words
	vsm-peer server "unix:$MINI_DIR/srv.sock" --sink --count 1 $server_opts \
		--ready-file "$MINI_DIR/srv.ready" --timeout 120 >"$MINI_DIR/server" 2>&1 &
	MINI_SRV=$!
	wait_for_file "$MINI_DIR/srv.ready" 10
	mini_daemon
	# shellcheck disable=SC2086
	vsm-peer client "unix:$MINI_DIR/s.sock" --send 256M $client_opts --timeout 120 \
		>"$MINI_DIR/client" 2>&1 &
	cli=$!
	sleep 1.5
	term_daemon "$MINI_PID" 600
	MS_TICKS=$STOP_TICKS # set by term_daemon
	MS_RC=$STOP_RC
	wait "$cli"
}

# A stop whose bytes keep moving outlasts drain-timeout: the user-space path holds a few MiB
# (the client's 4 MiB send buffer, the daemon's buffer, the target's queue) for a reader
# taking 16 KiB every 20 ms (about 0.8 MB/s). The deadline of drain-timeout and one second
# after the SIGTERM cut this off; now every byte arrives.
stop_outlasts_drain_timeout() {
	stop_timed_case stop-moving "--slow 20000 --read-size 16384" "--sndbuf 4M" \
		"datapath = userspace"
	wait "$MINI_SRV"
	midstream_results "$MINI_DIR"
	if ((MS_RC != 0 || MS_TICKS >= 600)); then
		vmtest_fail stop-outlasts-drain-timeout "daemon exit $MS_RC after $((MS_TICKS / 10)) s: $(tail -n 2 "$MINI_DIR/daemon.log" | tr '\n' ' ')"
	elif [[ -z $MS_SENT || $MS_SENT != "$MS_GOT" ]] ||
		! grep -q 'verify=ok.*eof=clean' <<<"$MS_LINE"; then
		vmtest_fail stop-outlasts-drain-timeout "the client handed over ${MS_SENT:-?} bytes; server: ${MS_LINE:-nothing}; $(grep -m1 'lost' "$MINI_DIR/daemon.log")"
	elif ((MS_TICKS <= 20)); then
		vmtest_fail stop-outlasts-drain-timeout "the stop took only $((MS_TICKS / 10)).$((MS_TICKS % 10)) s: the case was not forced (the reader was not slow enough to outlast drain-timeout = 1)"
	else
		vmtest_pass stop-outlasts-drain-timeout "SIGTERM with $((MS_SENT >> 20)) MiB into a 0.8 MB/s reader, drain-timeout = 1: exit 0 after $((MS_TICKS / 10)).$((MS_TICKS % 10)) s, all $MS_GOT bytes verified, clean EOF"
	fi
	mini_stop
}

# A stop whose bytes cannot move gives up drain-timeout and one second later, and says what
# it lost: a reader that reads once and then sleeps. On the user-space path the daemon holds
# the bytes (the stop's own warning); on the kernel path the kernel's backlog does (the
# drain's warning).
stop_gives_up() {
	local path=$1 expect
	stop_timed_case "stop-stuck-$path" "--slow 100000000" "" "datapath = $path"
	kill "$MINI_SRV" 2>/dev/null
	if [[ $path == userspace ]]; then
		expect='still had bytes to deliver and none moved on for drain-timeout'
	else
		expect='backlog toward the target did not drain in 1000 ms'
	fi
	# At least drain-timeout (1 s) after the SIGTERM, less the clock's 10 ms steps and the
	# time the kill itself takes; the kernel path gives up right at it.
	if ((MS_RC != 0 || MS_TICKS < 9 || MS_TICKS > 50)); then
		vmtest_fail "stop-gives-up-$path" "daemon exit $MS_RC after $((MS_TICKS / 10)).$((MS_TICKS % 10)) s (expected about 2 s): $(tail -n 2 "$MINI_DIR/daemon.log" | tr '\n' ' ')"
	elif ! grep -q "$expect" "$MINI_DIR/daemon.log"; then
		vmtest_fail "stop-gives-up-$path" "no warning '$expect': $(tail -n 3 "$MINI_DIR/daemon.log" | tr '\n' ' ')"
	else
		vmtest_pass "stop-gives-up-$path" "a reader that stopped reading: exit 0 after $((MS_TICKS / 10)).$((MS_TICKS % 10)) s with drain-timeout = 1, and the warning: $(grep -m1 -o "$expect.*" "$MINI_DIR/daemon.log")"
	fi
	mini_stop
}

host_stop_cases() {
	stop_outlasts_drain_timeout
	stop_gives_up userspace
	stop_gives_up kernel
}
