# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
#
# socat's command line: "vsockmapd ADDRESS1 ADDRESS2" against real socat with the same two
# addresses. Each scenario runs once through each; both must deliver every byte (vsm-peer
# verifies them) and agree on the exit status, except where vsockmapd differs on purpose
# (README, Replacing socat). POSIX sh: the host suite runs it with unix and TCP targets, the
# VM suite with vsock targets on CID 1. The caller sources tests/lib/harness.sh and sets E2E_DIR,
# E2E_TARGET (unix | vsock) and PATH, as for scenarios.sh.

CMD_PORT=${CMD_PORT:-17800}

# at DIR TEXT: TEXT with @D@ replaced by DIR.
at() {
	printf '%s' "$2" | sed "s|@D@|$1|g"
}

# compat_once TOOL NAME LISTEN TARGET SERVER_ADDR CLIENT_ADDR 'SERVER ARGS' 'CLIENT ARGS':
# prints "client=RC server=RC relay=RC [write_after_eof=...]" for one run.
compat_once() {
	_tool=$1 _dir=$E2E_DIR/cmd-$2-$1
	mkdir -p "$_dir"
	rm -f "$_dir"/*.sock "$_dir/srv.ready"
	# shellcheck disable=SC2086
	vsm-peer server "$(at "$_dir" "$5")" $7 --ready-file "$_dir/srv.ready" --timeout 30 \
		>"$_dir/server" 2>&1 &
	_srv=$!
	wait_for_file "$_dir/srv.ready" 10
	# A port has no file to wait for: both tools log "listening on" at -d -d.
	_v=
	case $3 in TCP-LISTEN* | VSOCK-LISTEN*) _v="-d -d" ;; esac
	rm -f "$_dir/relay.err"
	if [ "$_tool" = socat ]; then
		# shellcheck disable=SC2086
		socat $_v "$(at "$_dir" "$3")" "$(at "$_dir" "$4")" 2>"$_dir/relay.err" &
	else
		# shellcheck disable=SC2086
		vsockmapd $_v "$(at "$_dir" "$3")" "$(at "$_dir" "$4")" 2>"$_dir/relay.err" &
	fi
	_relay=$!
	if [ -n "$_v" ]; then
		_n=100
		while ! grep -q 'listening on' "$_dir/relay.err" 2>/dev/null && [ $_n -gt 0 ]; do
			sleep 0.1
			_n=$((_n - 1))
		done
	else
		wait_for_file "$_dir/in.sock" 10
	fi
	# shellcheck disable=SC2086
	vsm-peer client "$(at "$_dir" "$6")" $8 --timeout 30 >"$_dir/client" 2>&1
	_crc=$?
	# A stream relay without fork exits by itself; a datagram one never sees an end: its
	# SIGTERM closes the target connection, which is the server's EOF. Neither forwards
	# what is still queued in the socket at SIGTERM: give them time to pass it all on.
	case $3 in UNIX-RECV*)
		sleep 2
		kill -TERM "$_relay" 2>/dev/null ;;
	esac
	wait "$_srv"
	_src=$?
	_n=200
	while kill -0 "$_relay" 2>/dev/null && [ $_n -gt 0 ]; do
		sleep 0.1
		_n=$((_n - 1))
	done
	kill -KILL "$_relay" 2>/dev/null
	wait "$_relay"
	_rrc=$?
	cat "$_dir/relay.err" >>"$E2E_DIR/cmd-$_tool.log"
	echo "client=$_crc server=$_src relay=$_rrc $(grep -o 'write_after_eof=[a-z]*' "$_dir/client" | head -n1)"
}

# compat NAME LISTEN TARGET SERVER_ADDR CLIENT_ADDR 'SERVER ARGS' 'CLIENT ARGS' WHAT
# [VSOCKMAPD_RESULT]: the last one when vsockmapd differs from socat on purpose.
compat() {
	_a=$(compat_once socat "$@")
	_b=$(compat_once vsockmapd "$@")
	_why="$(tail -n 2 "$E2E_DIR/cmd-$1-vsockmapd/client" | tr '\n' ' ') $(tail -n 2 "$E2E_DIR/cmd-vsockmapd.log" | tr '\n' ' ')"
	case $_a in
	"client=0 server=0 "*) ;;
	*) _why="$_why | socat's run: $(tail -n 2 "$E2E_DIR/cmd-$1-socat/client" | tr '\n' ' ') $(tail -n 2 "$E2E_DIR/cmd-socat.log" | tr '\n' ' ')" ;;
	esac
	if [ -n "${9:-}" ]; then
		case $_a in
		"client=0 server=0 "*)
			if [ "$_b" = "$9" ]; then
				vmtest_pass "compat-$1" "$8 every byte through both; socat: $_a; vsockmapd: $_b"
				return
			fi ;;
		esac
		vmtest_fail "compat-$1" "socat: $_a; vsockmapd: $_b (expected $9) | $_why"
	elif [ "$_a" != "$_b" ]; then
		vmtest_fail "compat-$1" "socat: $_a; vsockmapd: $_b | $_why"
	else
		case $_a in
		"client=0 server=0 "*) vmtest_pass "compat-$1" "$8 same through socat and vsockmapd: $_a" ;;
		*) vmtest_fail "compat-$1" "both failed the same way: $_a | $_why" ;;
		esac
	fi
}

# cmd_target INDEX / cmd_server INDEX: the scenario's target, in socat and vsm-peer syntax.
cmd_target() {
	if [ "$E2E_TARGET" = vsock ]; then
		echo "VSOCK-CONNECT:1:$((CMD_PORT + $1))"
	else
		echo "UNIX-CONNECT:@D@/srv.sock"
	fi
}

cmd_server() {
	if [ "$E2E_TARGET" = vsock ]; then
		echo "vsock:any:$((CMD_PORT + $1))"
	else
		echo "unix:@D@/srv.sock"
	fi
}

cmdline_compat() {
	_L=UNIX-LISTEN:@D@/in.sock
	_C=unix:@D@/in.sock
	compat stream "$_L" "$(cmd_target 0)" "$(cmd_server 0)" "$_C" \
		"--sink --count 1 --expect 16M" "--send 16M" "16 MiB checksummed to $E2E_TARGET:"
	# The client keeps at most 64 KiB unanswered, as a request-reply client does. At full
	# speed socat itself hangs an echo (6 of 40 runs of 8 MiB over vsock on 6.12): it writes
	# with blocking write(), so once the server's credit runs out it stops reading the
	# server's replies, and the server, whose replies no longer go out, stops reading.
	# vsockmapd's echo at full speed is echo-both-ways (scenarios.sh).
	compat echo "$_L" "$(cmd_target 1)" "$(cmd_server 1)" "$_C" \
		"--echo --count 1" "--send 8M --after echo --window 64K" "8 MiB echoed, 64 KiB at a time:"
	compat half-close "$_L" "$(cmd_target 2)" "$(cmd_server 2)" "$_C" \
		"--sink --reply 1M --count 1" "--send 4M --after shutdown --expect-reply 1M" \
		"client half-closes after 4 MiB, reads a 1 MiB reply:"
	# Here vsockmapd differs on purpose: socat keeps the client open for -t (0.5 s) after
	# the server closed, takes the client's next write and then fails to pass it on (exit
	# 1); vsockmapd closes the client at once, so that write fails with EPIPE at the
	# client instead of vanishing, and exits 0.
	compat server-closes-first "$_L" "$(cmd_target 3)" "$(cmd_server 3)" "$_C" \
		"--source 2M --count 1" "--send 0 --expect 2M" \
		"server sends 2 MiB and closes first:" \
		"client=0 server=0 relay=0 write_after_eof=epipe"
	# Stopped with SIGTERM: socat exits 143, vsockmapd 0 (a clean stop for systemd).
	compat dgram "UNIX-RECV:@D@/in.sock" "$(cmd_target 4)" "$(cmd_server 4)" \
		unix-dgram:@D@/in.sock "--sink --count 1 --expect 200K" \
		"--dgram-count 50 --msg-size 4K" \
		"50 datagrams of 4 KiB into a stream, then SIGTERM:" "client=0 server=0 relay=0 "
	# The other order, as socat allows: the target first.
	compat target-first "$(cmd_target 5)" "$_L" "$(cmd_server 5)" "$_C" \
		"--sink --count 1 --expect 4M" "--send 4M" "addresses in the other order:"
	if [ "$E2E_TARGET" = unix ]; then
		compat tcp-stream "$_L" "TCP-CONNECT:127.0.0.1:$((CMD_PORT + 6))" \
			"tcp:127.0.0.1:$((CMD_PORT + 6))" "$_C" "--sink --count 1 --expect 16M" \
			"--send 16M" "16 MiB checksummed, unix->TCP:"
		compat tcp-echo "$_L" "TCP-CONNECT:127.0.0.1:$((CMD_PORT + 7))" \
			"tcp:127.0.0.1:$((CMD_PORT + 7))" "$_C" "--echo --count 1" \
			"--send 8M --after echo --window 64K" "8 MiB echoed over TCP, 64 KiB at a time:"
		compat_listen_pair tcp-listen "TCP-LISTEN:$((CMD_PORT + 20)),reuseaddr" \
			"UNIX-CONNECT:@D@/srv.sock" "unix:@D@/srv.sock" "tcp:127.0.0.1:$((CMD_PORT + 20))" ok
	else
		# Host to guest: a vsock client on CID 1 reaches a unix server through the relay.
		compat_listen_pair vsock-listen "VSOCK-LISTEN:$((CMD_PORT + 20))" \
			"UNIX-CONNECT:@D@/srv.sock" "unix:@D@/srv.sock" "vsock:1:$((CMD_PORT + 20))" epipe
		compat_listen_pair tcp-listen "TCP-LISTEN:$((CMD_PORT + 21)),reuseaddr" \
			"$(cmd_target 8)" "$(cmd_server 8)" "tcp:127.0.0.1:$((CMD_PORT + 21))" ok
	fi
}

# compat_listen_pair NAME LISTEN TARGET SERVER_ADDR CLIENT_ADDR WRITE_AFTER_EOF: the stream
# scenarios for a listener on a port (TCP-LISTEN, VSOCK-LISTEN), through socat and through
# vsockmapd. WRITE_AFTER_EOF: what the client's write after the server closed gets; a TCP
# client's first write still succeeds (the reset comes after it).
compat_listen_pair() {
	compat "$1-stream" "$2" "$3" "$4" "$5" "--sink --count 1 --expect 8M" "--send 8M" \
		"8 MiB checksummed, $2 -> $3:"
	# --window: as compat echo in cmdline_compat (socat's blocking writes).
	compat "$1-echo" "$2" "$3" "$4" "$5" "--echo --count 1" \
		"--send 4M --after echo --window 64K" "4 MiB echoed, 64 KiB at a time:"
	compat "$1-half-close" "$2" "$3" "$4" "$5" "--sink --reply 1M --count 1" \
		"--send 4M --after shutdown --expect-reply 1M" \
		"client half-closes after 4 MiB, reads a 1 MiB reply:"
	compat "$1-server-closes-first" "$2" "$3" "$4" "$5" "--source 2M --count 1" \
		"--send 0 --expect 2M" "server sends 2 MiB and closes first:" \
		"client=0 server=0 relay=0 write_after_eof=$6"
}
