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

# silent_bus NAME: a system bus in MINI_DIR that accepts and never answers (SILENT_BUS: its
# pid), for a daemon started with silent_bus_env. Returns 1, with NAME skipped, where systemd
# runs: the daemon would ask it (/run/systemd/private), not this bus.
silent_bus() {
	if [[ -S /run/systemd/private ]]; then
		vmtest_skip "$1" "this machine runs systemd: the daemon would ask it, not the silent bus"
		return 1
	fi
	socat "UNIX-LISTEN:$MINI_DIR/bus.sock,fork" EXEC:"sleep 60" >/dev/null 2>&1 &
	SILENT_BUS=$!
	wait_for_socket "$MINI_DIR/bus.sock" 10
}

silent_bus_stop() {
	kill "$SILENT_BUS" 2>/dev/null
	wait "$SILENT_BUS" 2>/dev/null
}

# Under systemd a SIGTERM asks systemd, over D-Bus, whether it is restarting the unit. The
# daemon must go on serving while it waits for the answer: here the bus (DBUS_SYSTEM_BUS_ADDRESS;
# the host has no /run/systemd/private) accepts and never answers, and `vsockmapctl status`
# must be answered before the daemon gives the question up (2 s, SYSTEMD_JOB_TIMEOUT_USEC)
# and stops. The synchronous calls this replaced held the event loop for those 2 s, so the
# status came only after the stop had begun, or not at all.
stop_asks_systemd_without_waiting() {
	local status rc asked
	mini_config stop-asks s "log-level = info"
	if ! silent_bus stop-asks-systemd; then
		rm -rf "$MINI_DIR"
		return
	fi
	mini_echo
	INVOCATION_ID=0123456789abcdef0123456789abcdef \
		DBUS_SYSTEM_BUS_ADDRESS="unix:path=$MINI_DIR/bus.sock" mini_daemon
	kill -TERM "$MINI_PID"
	caps_wait_log "$MINI_DIR/daemon.log" 'asking systemd whether this is a restart$'
	status=$(vsockmapctl -s "$MINI_DIR/ctl.sock" status 2>&1)
	rc=$?
	asked=$(grep -c 'asking systemd whether this is a restart: stopping' "$MINI_DIR/daemon.log")
	caps_wait_log "$MINI_DIR/daemon.log" 'asking systemd whether this is a restart: stopping'
	wait "$MINI_PID"
	MINI_PID=
	silent_bus_stop
	if ((rc != 0 || asked != 0)); then
		vmtest_fail stop-asks-systemd "vsockmapctl status after the SIGTERM, before systemd's answer or its timeout: rc=$rc, answer already logged: $asked | $(head -n 1 <<<"$status") | $(grep -m2 -E 'asking|shutting' "$MINI_DIR/daemon.log" | tr '\n' ' ')"
	elif ! grep -q 'asking systemd whether this is a restart: stopping' "$MINI_DIR/daemon.log"; then
		vmtest_fail stop-asks-systemd "no stop after the unanswered question: $(tail -n 2 "$MINI_DIR/daemon.log" | tr '\n' ' ')"
	else
		vmtest_pass stop-asks-systemd "SIGTERM, the bus silent: status answered while the daemon waited; then $(grep -m1 -o 'asking systemd whether this is a restart: stopping.*' "$MINI_DIR/daemon.log")"
	fi
	mini_stop
}

# The same silent bus, and a daemon whose event loop ends on its own while the question is
# open: a socat-style one-shot listener (no ",fork") whose only client closes after the
# SIGTERM. sd-bus flushes an attached bus when the loop exits, unless told not to, and a
# flush waits for the handshake: that daemon hung until the bus went away (the silent bus
# here ends after 60 s; 90 s is sd-bus's own limit). It must exit once the client is gone.
stop_once_with_question_open() {
	local t0 t1 rc
	MINI_DIR=$(mktemp -d /tmp/vsockmap-stop-once.XXXXXX)
	if ! silent_bus stop-once-asking; then
		rm -rf "$MINI_DIR"
		return
	fi
	mini_echo
	INVOCATION_ID=0123456789abcdef0123456789abcdef \
		DBUS_SYSTEM_BUS_ADDRESS="unix:path=$MINI_DIR/bus.sock" \
		vsockmapd -d -d -d --datapath=userspace "UNIX-LISTEN:$MINI_DIR/once.sock" \
		"UNIX-CONNECT:$MINI_DIR/srv.sock" 2>"$MINI_DIR/daemon.log" &
	MINI_PID=$!
	wait_for_socket "$MINI_DIR/once.sock" 10
	socat -u EXEC:"sleep 1" "UNIX-CONNECT:$MINI_DIR/once.sock" &
	caps_wait_log "$MINI_DIR/daemon.log" 'connected'
	t0=$EPOCHSECONDS
	kill -TERM "$MINI_PID"
	wait "$MINI_PID"
	rc=$?
	t1=$EPOCHSECONDS
	MINI_PID=
	silent_bus_stop
	if ! grep -q 'asking systemd whether this is a restart' "$MINI_DIR/daemon.log"; then
		vmtest_fail stop-once-asking "the daemon did not ask the bus: $(tail -n 3 "$MINI_DIR/daemon.log" | tr '\n' ' ')"
	elif ((t1 - t0 >= 30)); then
		vmtest_fail stop-once-asking "exit $rc $((t1 - t0)) s after the SIGTERM: the loop's end waited for the silent bus | $(tail -n 2 "$MINI_DIR/daemon.log" | tr '\n' ' ')"
	else
		vmtest_pass stop-once-asking "one-shot listener, its client gone while the question was open: exit $rc $((t1 - t0)) s after the SIGTERM"
	fi
	mini_stop
}

host_stop_cases() {
	stop_asks_systemd_without_waiting
	stop_once_with_question_open
	stop_outlasts_drain_timeout
	stop_gives_up userspace
	stop_gives_up kernel
}
