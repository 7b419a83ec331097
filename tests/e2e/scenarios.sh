# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
#
# End-to-end scenarios through the real vsockmapd, shared by the host suite (targets are
# unix sockets) and the VM suite (targets are real vsock on CID 1). POSIX sh, so it runs
# under bash on the host and busybox sh in the VM. The caller sources tests/lib/harness.sh first
# (vmtest_pass/fail/skip, wait_for_file, now_ms) and sets:
#
#	E2E_TARGET   unix | vsock
#	E2E_DAEMON_ARGS  options every daemon of e2e_start_daemon, stop_midstream and
#	             scenario_stop_dgram gets first: --datapath=kernel on the host (unix targets
#	             run in user space by default) and in the VM (so do vsock ones on a kernel
#	             without kernel/ patch 1); e2e_run_*_auto run the default
#	E2E_DIR      a fresh scratch directory
#	E2E_BIG      size of the long stream (e.g. 256M)
#	PATH         holding vsockmapd, vsockmapctl and vsm-peer
#
# Every byte is generated from a seed and verified by vsm-peer at the other end.

E2E_PORT_BASE=${E2E_PORT_BASE:-6000}

# target_addr INDEX: the target for scenario server INDEX, in vsm-peer and socat syntax.
peer_addr() {
	if [ "$E2E_TARGET" = vsock ]; then
		echo "vsock:any:$((E2E_PORT_BASE + $1))"
	else
		echo "unix:$E2E_DIR/srv$1.sock"
	fi
}

peer_seqpacket_addr() {
	echo "vsock-seqpacket:any:$((E2E_PORT_BASE + $1))"
}

target_connect() {
	if [ "$E2E_TARGET" = vsock ]; then
		echo "VSOCK-CONNECT:1:$((E2E_PORT_BASE + $1))"
	else
		echo "UNIX-CONNECT:$E2E_DIR/srv$1.sock"
	fi
}

e2e_write_config() {
	cat >"$E2E_DIR/vsockmap.conf" <<CONF
[daemon]
control = $E2E_DIR/control.sock
connect-timeout = 2
log-level = ${E2E_LOG_LEVEL:-info}
${E2E_DRAIN_TIMEOUT:+drain-timeout = $E2E_DRAIN_TIMEOUT}

[stream]
listen  = UNIX-LISTEN:$E2E_DIR/stream.sock
connect = $(target_connect 0)

[refused]
listen  = UNIX-LISTEN:$E2E_DIR/refused.sock
connect = $(target_connect 9)

[dgram]
listen  = UNIX-RECV:$E2E_DIR/dgram.sock
connect = $(target_connect 1)

[bulk]
listen  = UNIX-LISTEN:$E2E_DIR/bulk.sock
connect = $(target_connect 0)$([ "$E2E_TARGET" = vsock ] || echo ,sndbuf=65536)

[tcp]
listen  = UNIX-LISTEN:$E2E_DIR/tcp.sock
connect = TCP-CONNECT:127.0.0.1:$((E2E_PORT_BASE + 3000))
CONF
	if [ "$E2E_TARGET" = vsock ]; then
		cat >>"$E2E_DIR/vsockmap.conf" <<CONF

[seqpacket]
listen  = UNIX-RECV:$E2E_DIR/seqpacket.sock
connect = $(target_connect 2),type=seqpacket
CONF
	fi
}

e2e_start_daemon() {
	e2e_write_config
	# shellcheck disable=SC2086 # E2E_DAEMON_ARGS: words, e.g. --datapath=kernel
	vsockmapd -c "$E2E_DIR/vsockmap.conf" ${E2E_DAEMON_ARGS:-} "$@" 2>"$E2E_DIR/daemon.log" &
	E2E_DAEMON=$!
	if ! wait_for_socket "$E2E_DIR/control.sock" 10; then
		vmtest_fail daemon-start "vsockmapd did not come up: $(tail -n 3 "$E2E_DIR/daemon.log")"
		return 1
	fi
	return 0
}

e2e_stop_daemon() {
	kill "$E2E_DAEMON" 2>/dev/null
	wait "$E2E_DAEMON" 2>/dev/null
}

# start_server NAME ADDR ARGS...: a vsm-peer server in the background, ready when this returns.
start_server() {
	_name=$1
	_addr=$2
	shift 2
	rm -f "$E2E_DIR/$_name.ready"
	vsm-peer server "$_addr" --ready-file "$E2E_DIR/$_name.ready" "$@" \
		>"$E2E_DIR/$_name.server" 2>&1 &
	SERVER_PID=$!
	wait_for_file "$E2E_DIR/$_name.ready" 10
}

# finish NAME CLIENT_RC DETAIL: wait for the server, then report on both sides.
finish() {
	_name=$1
	_crc=$2
	wait "$SERVER_PID"
	_src=$?
	_srv=$(grep '^server total' "$E2E_DIR/$_name.server")
	_cli=$(grep '^client total' "$E2E_DIR/$_name.client")
	if [ "$_crc" -eq 0 ] && [ "$_src" -eq 0 ]; then
		vmtest_pass "$_name" "$3 | $_cli"
	else
		vmtest_fail "$_name" "client rc=$_crc server rc=$_src | $(tail -n 2 "$E2E_DIR/$_name.client" | tr '\n' ' ') | $(tail -n 2 "$E2E_DIR/$_name.server" | tr '\n' ' ') | $_srv"
	fi
}

client() {
	_name=$1
	shift
	vsm-peer client "unix:$E2E_DIR/stream.sock" --timeout 120 "$@" >"$E2E_DIR/$_name.client" 2>&1
}

# live_redirects: how many redirects of section "stream" vsockmapctl lists.
live_redirects() {
	vsockmapctl -s "$E2E_DIR/control.sock" --no-legend list --name stream | grep -c .
}

wait_no_redirects() { # SEC: until the "stream" section has no live redirect
	_ticks=$(($1 * 10))
	while [ "$(live_redirects)" -ne 0 ]; do
		[ "$_ticks" -gt 0 ] || return 1
		_ticks=$((_ticks - 1))
		sleep 0.1
	done
}

# ---- scenarios ----------------------------------------------------------------------------

scenario_stream_long() {
	start_server stream-long "$(peer_addr 0)" --sink --count 1 --expect "$E2E_BIG" --timeout 300
	client stream-long --send "$E2E_BIG" --timeout 300
	finish stream-long $? "one $E2E_BIG stream, every byte verified"
}

scenario_concurrent() {
	start_server concurrent-50 "$(peer_addr 0)" --echo --seeds 50 --count 50
	client concurrent-50 --parallel 50 --send 1M --after echo
	finish concurrent-50 $? "50 connections at once, 1 MiB each echoed"
}

scenario_echo() {
	start_server echo-both-ways "$(peer_addr 0)" --echo --count 1
	client echo-both-ways --send 32M --after echo
	finish echo-both-ways $? "32 MiB out and the same 32 MiB back, concurrently"
}

scenario_half_close() {
	start_server half-close-reply "$(peer_addr 0)" --sink --reply 4M --count 1
	client half-close-reply --send 8M --after shutdown --expect-reply 4M
	finish half-close-reply $? "client sends 8 MiB, shuts down writing, reads a 4 MiB reply"
}

scenario_server_closes_first() {
	start_server server-closes-first "$(peer_addr 0)" --source 4M --count 1
	client server-closes-first --send 0 --expect 4M
	_rc=$?
	if [ $_rc -eq 0 ] && ! grep -q 'write_after_eof=epipe' "$E2E_DIR/server-closes-first.client"; then
		_rc=1
		echo "client write after EOF did not fail with EPIPE" >>"$E2E_DIR/server-closes-first.client"
	fi
	finish server-closes-first $_rc "server sends 4 MiB and closes; client reads it all, then gets EPIPE"
}

scenario_server_half_close() {
	if [ "$E2E_TARGET" = unix ] && [ "${E2E_DATAPATH:-}" != userspace ] &&
		[ "${E2E_DAEMON_ARGS:-}" = --datapath=kernel ]; then
		# unix_shutdown() on the server unhashes our target socket and the kernel frees
		# the client bytes queued for it at that instant (docs/kernel-notes.md). The
		# default (auto) carries a unix target in the daemon: e2e_run_unix_target_auto.
		vmtest_skip server-half-closes-first "datapath=kernel puts a unix target on the kernel path, as asked, where its server's half-close frees what is queued for it (the daemon warns so at start); the default carries it in user space: server-half-closes-first@auto"
		return
	fi
	start_server server-half-closes-first "$(peer_addr 0)" --sink --reply-first 1M --count 1 --expect 16M
	client server-half-closes-first --send 16M --after shutdown --expect-reply 1M
	finish server-half-closes-first $? "server sends 1 MiB and shuts down writing first; client still sends 16 MiB"
}

# The host's unix targets under the default data path (auto): on a kernel whose unix
# shutdown() unhashes the peer, a UNIX-CONNECT section runs in user space, so a server that
# half-closes first loses nothing. The daemon says why at the start of the section.
e2e_run_unix_target_auto() {
	[ "$E2E_TARGET" = unix ] || return 0
	VMTEST_SUFFIX=@auto
	_ua_args=$E2E_DAEMON_ARGS
	E2E_DAEMON_ARGS=
	e2e_start_daemon || { E2E_DAEMON_ARGS=$_ua_args; VMTEST_SUFFIX=; return 1; }
	scenario_server_half_close
	scenario_half_close
	e2e_stop_daemon
	E2E_DAEMON_ARGS=$_ua_args
	if grep -q "\[stream\] listening on .*data path: user space (a unix server's shutdown() would free" "$E2E_DIR/daemon.log"; then
		vmtest_pass unix-target-path "a UNIX-CONNECT section runs in user space, and the daemon says why"
	else
		vmtest_fail unix-target-path "no 'data path: user space' line naming the unix server's shutdown(): $(grep -m1 '\[stream\] listening' "$E2E_DIR/daemon.log")"
	fi
	VMTEST_SUFFIX=
}

# datapath=auto chooses per kernel and per section (auto_datapath.c): where the kernel leaves a
# full target's backlog to a one-jiffy retry (no sk_psock_start_write_space, kernel/ patch 1),
# a section with a vsock end runs in user space, and says why; with the wake it still does,
# for the peer's packet ceiling; unix and TCP targets have their own rules. The daemon logs
# what it found once, and status shows it. The answer is checked against /proc/kallsyms,
# which the daemon does not read (it asks BTF). In the VM, one echo runs under auto, and
# datapath=kernel must still put the vsock section on the kernel path.
e2e_run_datapath_auto() {
	VMTEST_SUFFIX=@auto
	_da_args=$E2E_DAEMON_ARGS
	E2E_DAEMON_ARGS=
	e2e_start_daemon || { E2E_DAEMON_ARGS=$_da_args; VMTEST_SUFFIX=; return 1; }
	[ "$E2E_TARGET" != vsock ] || scenario_echo
	_da_status=$(vsockmapctl -s "$E2E_DIR/control.sock" status)
	_da_json=$(vsockmapctl -s "$E2E_DIR/control.sock" -j status | tr -d ' \n')
	e2e_stop_daemon
	E2E_DAEMON_ARGS=$_da_args
	_da_said=$(grep -c 'backlog wake: ' "$E2E_DIR/daemon.log")
	_da_line=$(grep -m1 -o 'backlog wake: .*' "$E2E_DIR/daemon.log")
	if grep -q ' sk_psock_start_write_space$' /proc/kallsyms 2>/dev/null; then
		_da_want="backlog wake: at once" _da_json_want='"backlog_wakes":true'
	else
		_da_want="backlog wake: none" _da_json_want='"backlog_wakes":false'
	fi
	_da_vsock="vsock, and this kernel leaves a full target's backlog to a one-jiffy retry"
	if [ "$_da_said" -ne 1 ] || ! printf '%s' "$_da_line" | grep -q "^$_da_want"; then
		vmtest_fail backlog-wake-logged "want one '$_da_want' line (/proc/kallsyms), the log has $_da_said: $_da_line"
	elif ! printf '%s' "$_da_json" | grep -q "$_da_json_want"; then
		vmtest_fail backlog-wake-logged "the log says '$_da_want', status --json does not: $_da_json"
	else
		vmtest_pass backlog-wake-logged "$(uname -r): once, as kallsyms has it: $_da_line"
	fi
	# unix -> TCP runs in user space on every kernel (auto_datapath.c: the relay is at least
	# as fast into TCP), with its own reason in the log and in status.
	_da_tcp='into TCP the daemon.s relay is at least as fast as the kernel path'
	if grep -q "\\[tcp\\] listening on .*; data path: user space ($_da_tcp" "$E2E_DIR/daemon.log" &&
		printf '%s' "$_da_json" | grep -q "\"name\":\"tcp\",\"listen\":\"[^\"]*\",\"target\":\"[^\"]*\",\"datapath\":\"daemon\",\"datapath_in\":\"daemon\",\"datapath_reason\":\"$(printf '%s' "$_da_tcp" | tr -d ' ')"; then
		vmtest_pass tcp-target-userspace "a TCP target runs in user space under auto, with its reason (log and status)"
	else
		vmtest_fail tcp-target-userspace "log: $(grep -m1 '\[tcp\] listening' "$E2E_DIR/daemon.log") | status: $_da_json"
	fi
	if [ "$E2E_TARGET" != vsock ]; then
		# A unix target keeps its own reason (unhash_probe.c), never the vsock one.
		if grep -q "\[stream\] listening on .*$_da_vsock" "$E2E_DIR/daemon.log"; then
			vmtest_fail unix-target-not-vsock "a unix target was given the vsock reason: $(grep -m1 '\[stream\] listening' "$E2E_DIR/daemon.log")"
		else
			vmtest_pass unix-target-not-vsock "$(grep -m1 -o '\[stream\] listening on .*' "$E2E_DIR/daemon.log" | sed 's/listening on [^;]*; //')"
		fi
		VMTEST_SUFFIX=
		return 0
	fi
	# With the wake (kernel/ patch 1) the next hazard decides: the peer's packet ceiling,
	# which no probe can rule out (auto_datapath.c).
	[ "$_da_want" = "backlog wake: at once" ] && _da_vsock='vsock: the kernel path sends one packet per client write'
	_da_stream="\\[stream\\] listening on .*; data path: user space ($_da_vsock"
	_da_dgram="\\[dgram\\] receiving datagrams on .*; data path: user space ($_da_vsock"
	if ! grep -q "$_da_stream" "$E2E_DIR/daemon.log" || ! grep -q "$_da_dgram" "$E2E_DIR/daemon.log"; then
		vmtest_fail vsock-auto-path "want /$_da_stream/ and /$_da_dgram/: $(grep -E '\[(stream|dgram)\] (listening|receiving)' "$E2E_DIR/daemon.log" | tr '\n' ' ')"
	elif ! printf '%s\n' "$_da_status" | grep -q "^stream .* daemon/daemon  $_da_vsock"; then
		vmtest_fail vsock-auto-path "the log says user space, status does not show it with its reason: $_da_status"
	else
		vmtest_pass vsock-auto-path "$(grep -m1 -o '\[stream\] listening on .*' "$E2E_DIR/daemon.log" | sed 's/listening on [^;]*; //'); status: $(printf '%s\n' "$_da_status" | grep '^backlog:' | tr -s ' ')"
	fi
	# datapath=kernel: the kernel path all the same, and a warning for each hazard that can
	# lose bytes, the peer's packet ceiling by name.
	E2E_DAEMON_ARGS=--datapath=kernel
	e2e_start_daemon && e2e_stop_daemon
	E2E_DAEMON_ARGS=$_da_args
	if grep -q '\[stream\] listening on .*; data path: kernel$' "$E2E_DIR/daemon.log" &&
		grep -q '\[dgram\] receiving datagrams on .*; data path: kernel$' "$E2E_DIR/daemon.log" &&
		grep -q '\[stream\] datapath=kernel: vsock: .*ENOBUFS.*(hazard vsock-packet-ceiling' "$E2E_DIR/daemon.log" &&
		grep -q '\[dgram\] datapath=kernel: vsock: .*(hazard vsock-packet-ceiling' "$E2E_DIR/daemon.log"; then
		vmtest_pass vsock-kernel-asked "datapath=kernel: $(grep -m1 -o '\[stream\] listening on .*' "$E2E_DIR/daemon.log" | sed 's/listening on [^;]*; //'); $(grep -m1 -o '\[stream\] datapath=kernel: .*' "$E2E_DIR/daemon.log")"
	else
		vmtest_fail vsock-kernel-asked "$(grep -E 'backlog wake|datapath=kernel|\[(stream|dgram)\] (listening|receiving)' "$E2E_DIR/daemon.log" | tr '\n' ' ')"
	fi
	VMTEST_SUFFIX=
}

scenario_client_killed() {
	start_server client-killed "$(peer_addr 0)" --sink --count 1 --expect 8M --timeout 30
	_t0=$(now_ms)
	client client-killed --send 64M --kill-after 8M
	_crc=$?
	wait "$SERVER_PID"
	_src=$?
	_t1=$(now_ms)
	if [ $_crc -ne 137 ]; then
		vmtest_fail client-killed "client was not killed (rc=$_crc)"
	elif [ $_src -ne 0 ]; then
		vmtest_fail client-killed "server rc=$_src: $(tail -n 2 "$E2E_DIR/client-killed.server" | tr '\n' ' ')"
	elif ! wait_no_redirects 5; then
		vmtest_fail client-killed "the redirect was still listed 5 s after the client died"
	else
		vmtest_pass client-killed "SIGKILL after 8 MiB: server got exactly 8 MiB, verified, EOF after $((_t1 - _t0)) ms; redirect gone"
	fi
}

scenario_slow_reader() {
	start_server slow-reader "$(peer_addr 0)" --sink --count 1 --expect 16M --slow 2000 --read-size 16384
	client slow-reader --send 16M
	finish slow-reader $? "16 MiB into a reader taking 16 KiB every 2 ms"
}

scenario_refused() {
	_t0=$(now_ms)
	vsm-peer client "unix:$E2E_DIR/refused.sock" --send 0 --expect 0 --timeout 10 \
		>"$E2E_DIR/refused.client" 2>&1
	_rc=$?
	_t1=$(now_ms)
	if [ $_rc -ne 0 ]; then
		vmtest_fail target-refused "client rc=$_rc: $(tail -n 1 "$E2E_DIR/refused.client")"
	elif ! grep -q 'refused.*connect.*closing the client' "$E2E_DIR/daemon.log"; then
		vmtest_fail target-refused "no log line naming the failed connect: $(tail -n 2 "$E2E_DIR/daemon.log")"
	elif [ $((_t1 - _t0)) -gt 3000 ]; then
		vmtest_fail target-refused "the client waited $((_t1 - _t0)) ms for EOF"
	else
		vmtest_pass target-refused "client closed after $((_t1 - _t0)) ms; log: $(grep 'refused.*connect' "$E2E_DIR/daemon.log" | head -n 1 | cut -c1-120)"
	fi
}

# unix -> TCP on 127.0.0.1: the same kernel path with a TCP socket as the destination.
scenario_tcp() {
	start_server unix-to-tcp "tcp:127.0.0.1:$((E2E_PORT_BASE + 3000))" --echo --count 1
	vsm-peer client "unix:$E2E_DIR/tcp.sock" --send 16M --after echo --timeout 120 \
		>"$E2E_DIR/unix-to-tcp.client" 2>&1
	finish unix-to-tcp $? "16 MiB to a TCP echo server on 127.0.0.1 and back"
	scenario_msg_verdict
	scenario_insert_reported
}

# What the daemon found at load (insert_probe.c): whether an insert passes what a client
# queued to the verdict (kernel/ patch 7). Its log, status --json and status say the same;
# bulk-to-kernel checks that the daemon then does what it says.
scenario_insert_reported() {
	[ "${E2E_DATAPATH:-}" = userspace ] && return 0
	_iq=$(vsockmapctl -s "$E2E_DIR/control.sock" -j status |
		sed -n 's/.*"insert_takes_queued": *\([a-z]*\).*/\1/p')
	_itext=$(vsockmapctl -s "$E2E_DIR/control.sock" status | sed -n 's/^insert: *//p')
	case "$_iq:$_itext" in
	"true:at once"*) _want='insert: at once' ;;
	"false:once the daemon has read the client empty") _want='insert: once the daemon has read a client empty' ;;
	*)
		vmtest_fail insert-reported "status says insert_takes_queued=${_iq:-missing}, insert: ${_itext:-missing}"
		return ;;
	esac
	if grep -q "$_want" "$E2E_DIR/daemon.log"; then
		vmtest_pass insert-reported "log and status agree: $_want"
	else
		vmtest_fail insert-reported "status says insert_takes_queued=$_iq, but the log has no '$_want'"
	fi
}

msg_verdict_runs() {
	vsockmapctl -s "$E2E_DIR/control.sock" -j status |
		sed -n 's/.*"msg_verdict_runs": *\([0-9]*\).*/\1/p'
}

# The sk_msg verdict runs when a TCP target in egress sends (DESIGN fact 1): counted, once per
# send of the psock's backlog worker; with fastpath=permanent, once per connection, since
# bpf_msg_apply_bytes() makes the first verdict cover the next 4 GiB.
scenario_msg_verdict() {
	[ "${E2E_DATAPATH:-}" = userspace ] && return 0
	_before=$(msg_verdict_runs)
	start_server msg-verdict "tcp:127.0.0.1:$((E2E_PORT_BASE + 3000))" --sink --seeds 2 \
		--count 2 --expect 8M
	vsm-peer client "unix:$E2E_DIR/tcp.sock" --timeout 120 --parallel 2 --send 8M \
		--write-size 65536 >"$E2E_DIR/msg-verdict.client" 2>&1
	finish msg-verdict $? "2 streams of 8 MiB to a TCP sink"
	_after=$(msg_verdict_runs)
	_runs=$((${_after:-0} - ${_before:-0}))
	if grep -q '\[tcp\] listening on .*; data path: user space' "$E2E_DIR/daemon.log"; then
		# datapath=auto (suite-oldkernel.sh) carries a TCP target in user space: no verdict
		vmtest_skip msg-verdict-runs "the TCP section runs in user space under datapath=auto (auto_datapath.c), so no sk_msg verdict runs: $(grep -m1 -o '\[tcp\] listening on .*' "$E2E_DIR/daemon.log" | sed 's/listening on [^;]*; //')"
	elif [ -z "$_before" ] || [ -z "$_after" ]; then
		vmtest_fail msg-verdict-runs "vsockmapctl status has no msg_verdict_runs"
	elif [ "${E2E_FASTPATH:-}" = permanent ]; then
		if [ "$_runs" -eq 2 ]; then
			vmtest_pass msg-verdict-runs "the sk_msg verdict ran 2 times for 2 connections of 8 MiB (apply_bytes 4 GiB)"
		else
			vmtest_fail msg-verdict-runs "the sk_msg verdict ran $_runs times for 2 connections; fastpath=permanent should run it once each"
		fi
	elif [ "$_runs" -ge 32 ]; then
		vmtest_pass msg-verdict-runs "the sk_msg verdict ran $_runs times for 2 connections of 8 MiB"
	else
		vmtest_fail msg-verdict-runs "the sk_msg verdict ran $_runs times for 16 MiB to TCP: not once per send"
	fi
}

# counters-agree: while one connection is open, vsockmapctl's counters equal the bytes moved.
# The counters are read while the connection is still open, once every byte has come back:
# socat's input stays open (a fifo) until then, up to 60 s. An earlier version read them at a
# fixed 1.5 s, which a slower VM (Linux 7.3 under TCG) had not finished by.
scenario_counters() {
	start_server counters-agree "$(peer_addr 0)" --echo --count 1
	head -c 3000001 /dev/urandom >"$E2E_DIR/counters.in"
	rm -f "$E2E_DIR/counters.fifo"
	mkfifo "$E2E_DIR/counters.fifo"
	socat -t 5 - "UNIX-CONNECT:$E2E_DIR/stream.sock" <"$E2E_DIR/counters.fifo" \
		>"$E2E_DIR/counters.out" 2>&1 &
	_cpid=$!
	exec 7>"$E2E_DIR/counters.fifo"
	cat "$E2E_DIR/counters.in" >&7
	_ticks=0
	while [ "$(wc -c <"$E2E_DIR/counters.out")" -lt 3000001 ] && [ $_ticks -lt 600 ]; do
		sleep 0.1
		_ticks=$((_ticks + 1))
	done
	_json=$(vsockmapctl -s "$E2E_DIR/control.sock" -j list --name stream)
	exec 7>&-
	wait $_cpid
	wait "$SERVER_PID"
	_out=$(printf '%s' "$_json" | sed -n 's/.*"bytes_out": *\([0-9]*\).*/\1/p')
	_in=$(printf '%s' "$_json" | sed -n 's/.*"bytes_in": *\([0-9]*\).*/\1/p')
	if ! cmp -s "$E2E_DIR/counters.in" "$E2E_DIR/counters.out"; then
		vmtest_fail counters-agree "socat got back $(wc -c <"$E2E_DIR/counters.out") of 3000001 bytes: $(cmp "$E2E_DIR/counters.in" "$E2E_DIR/counters.out" 2>&1 | head -n 1); vsockmapctl said: $_json"
	elif [ "${E2E_FASTPATH:-}" = permanent ]; then
		# The kernel's way is not counted: null, never a partial number.
		if printf '%s' "$_json" | grep -q '"bytes_out": *null' && [ "$_in" = 3000001 ]; then
			vmtest_pass counters-agree "3000001 bytes each way (cmp ok), vsockmapctl out=null (fastpath=permanent counts nothing) in=$_in"
		else
			vmtest_fail counters-agree "expected bytes_out null and bytes_in 3000001: $_json"
		fi
	elif [ "$_out" != 3000001 ] || [ "$_in" != 3000001 ]; then
		vmtest_fail counters-agree "moved 3000001 bytes each way, vsockmapctl says out=$_out in=$_in: $_json"
	else
		vmtest_pass counters-agree "3000001 bytes each way (cmp ok), vsockmapctl out=$_out in=$_in"
	fi
}

scenario_dgram() {
	vsm-peer client "unix-dgram:$E2E_DIR/dgram.sock" --dgram-count 100 --msg-size 64K \
		>"$E2E_DIR/dgram-to-stream.client" 2>&1
	_crc=$?
	# The target sees EOF only when the daemon stops; give the datagrams a moment to land.
	sleep 1
	vsockmapctl -s "$E2E_DIR/control.sock" -j list --name dgram >"$E2E_DIR/dgram.json"
	e2e_stop_daemon
	finish dgram-to-stream $_crc "100 datagrams of 64 KiB into one stream: $(sed -n 's/.*"bytes_out": *\([0-9]*\).*/bytes_out=\1/p' "$E2E_DIR/dgram.json")"
}

# The seqpacket target comes up only after the datagrams were sent: the verdict holds them with
# their lengths, and the daemon sends each as one record once the target is there.
scenario_seqpacket() {
	sleep 3 # the daemon's redial back-off reaches 1.6 s while the target is missing
	e2e_stop_daemon
	finish seqpacket-boundaries "$1" "100 datagrams of 4 KiB sent before the seqpacket target existed arrive as 100 records"
}

# The daemon logs the SHA-256 of the BPF object it loaded; it must be the one just built.
e2e_check_bpf_object() {
	_want=$(cat "$E2E_BPF_SHA_FILE" 2>/dev/null)
	_got=$(sed -n 's/.*BPF object sha256:\([0-9a-f]*\).*/\1/p' "$E2E_DIR/daemon.log" | head -n 1)
	if [ -z "$_want" ]; then
		vmtest_fail bpf-object-loaded "no expected digest in ${E2E_BPF_SHA_FILE:-E2E_BPF_SHA_FILE unset}"
	elif [ "$_got" != "$_want" ]; then
		vmtest_fail bpf-object-loaded "daemon loaded sha256:${_got:-none}, the build is sha256:$_want"
	else
		vmtest_pass bpf-object-loaded "sha256:$(echo "$_got" | cut -c1-16) loaded on kernel $(uname -r)"
	fi
}

# The stream scenarios share one daemon.
e2e_run_streams() {
	e2e_start_daemon "$@" || return 1
	scenario_stream_long
	scenario_concurrent
	scenario_echo
	scenario_half_close
	scenario_server_closes_first
	scenario_server_half_close
	scenario_client_killed
	scenario_slow_reader
	scenario_refused
	scenario_tcp
	scenario_counters
	e2e_stop_daemon
}

# A bulk upload is the kernel's to carry. Before the insert the daemon reads the client and
# writes to the target; once the target is full it hands what it read to the kernel through
# its injector (src/daemon/redirect/redirect_inject.c), so the client's queue empties and the
# insert comes. Without that, a client that keeps its socket full kept the daemon carrying up
# to all of it (docs/performance.md, "Who carries a bulk upload"). The daemon's debug line at
# the close says how many bytes it read itself, written to the target or into its injector:
# at most BULK_DAEMON_MAX of 64 MiB, where a machine has two CPUs or more. The client queues
# 8 MiB before the daemon reads (--sndbuf, and the daemon stopped meanwhile),
# more than one read of the daemon's takes, and the target fills at once: vsock's credit is
# 256 KiB, and a unix target here (section "bulk") gets a 64 KiB send buffer and a slow
# server behind it.
BULK_DAEMON_MAX=$((16 * 1024 * 1024))
scenario_bulk_to_kernel() {
	E2E_LOG_LEVEL=debug
	e2e_start_daemon "$@"
	_rc=$?
	E2E_LOG_LEVEL=
	[ $_rc -eq 0 ] || return 1
	start_server bulk-to-kernel "$(peer_addr 0)" --sink --count 1 --expect 64M --timeout 300 \
		--slow 100
	# The daemon stopped until the client has queued its 8 MiB: its first read finds a full
	# socket, whichever runs first on one vCPU.
	kill -STOP "$E2E_DAEMON"
	vsm-peer client "unix:$E2E_DIR/bulk.sock" --send 64M --sndbuf 8M --timeout 300 \
		>"$E2E_DIR/bulk-to-kernel.client" 2>&1 &
	_cpid=$!
	sleep 0.5
	kill -CONT "$E2E_DAEMON"
	wait $_cpid
	_crc=$?
	wait "$SERVER_PID"
	_src=$?
	_line=""
	_ticks=0
	while [ -z "$_line" ] && [ $_ticks -lt 100 ]; do
		_line=$(grep 'closed after' "$E2E_DIR/daemon.log" | tail -n 1)
		[ -n "$_line" ] || sleep 0.1
		_ticks=$((_ticks + 1))
	done
	e2e_stop_daemon
	_by_daemon=$(printf '%s' "$_line" | sed -n 's/.*bytes out [0-9]* (\([0-9]*\) by the daemon, \([0-9]*\) through its injector).*/\1 \2/p')
	_injected=${_by_daemon#* }
	_by_daemon=${_by_daemon% *}
	_total=$(printf '%s' "$_line" | sed -n 's/.*bytes out \([0-9]*\) .*/\1/p')
	if [ "$_crc" -ne 0 ] || [ "$_src" -ne 0 ]; then
		vmtest_fail bulk-to-kernel "client rc=$_crc server rc=$_src | $(tail -n 2 "$E2E_DIR/bulk-to-kernel.server" | tr '\n' ' ')"
	elif [ -z "$_by_daemon" ]; then
		vmtest_fail bulk-to-kernel "no 'closed after' line in the daemon's debug log: $(tail -n 3 "$E2E_DIR/daemon.log" | tr '\n' ' ')"
	elif [ "${E2E_FASTPATH:-}" != permanent ] && [ "$_total" != 67108864 ]; then
		vmtest_fail bulk-to-kernel "every byte verified, but the daemon counted $_total bytes out, not 67108864: $_line"
	elif e2e_insert_takes_queued; then
		# The daemon inserts the client at once: it must not have read a byte of it.
		if [ $((_by_daemon + _injected)) -ne 0 ]; then
			vmtest_fail bulk-to-kernel "the daemon logged 'insert: at once', but read $((_by_daemon + _injected)) bytes of the upload itself: $_line"
		else
			vmtest_pass bulk-to-kernel "64 MiB upload verified; inserted at once (this kernel passes what was queued to the verdict): the kernel carried all of it"
		fi
	elif [ "$(grep -c ^processor /proc/cpuinfo)" -lt 2 ]; then
		# One CPU: the client refills its socket before every next read of the daemon's, and
		# the injector carries the upload (docs/performance.md, "Who carries a bulk upload").
		vmtest_pass bulk-to-kernel "64 MiB upload verified and counted; one CPU: the daemon read $((_by_daemon + _injected)) bytes of it, $_injected of them through its injector (what it did not read, the kernel carried)"
	elif [ $((_by_daemon + _injected)) -gt "$BULK_DAEMON_MAX" ]; then
		vmtest_fail bulk-to-kernel "the daemon read $((_by_daemon + _injected)) of 67108864 bytes itself (at most $BULK_DAEMON_MAX): $_line"
	else
		vmtest_pass bulk-to-kernel "64 MiB upload verified; the daemon read $((_by_daemon + _injected)) bytes of it ($_injected through its injector), the kernel carried the rest"
	fi
}

# Bytes the client sends between the daemon's last read and the insert are left behind in
# its socket (docs/kernel-notes.md, "Handing a client socket to the kernel"). That window is
# microseconds wide; the daemon's test knob widens it to 2 ms so that every connection here
# leaves bytes behind while its client goes on sending, and the sweep has to take them.
e2e_run_late_insert() {
	VSOCKMAPD_TEST_INSERT_DELAY_US=2000 e2e_start_daemon "$@" || return 1
	start_server late-insert-echo "$(peer_addr 0)" --echo --count 1
	client late-insert-echo --send 32M --after echo
	finish late-insert-echo $? "32 MiB echoed; bytes left behind at the insert, swept in order"
	start_server late-insert-small "$(peer_addr 0)" --sink --seeds 8 --count 8 --expect 8M
	client late-insert-small --parallel 8 --send 8M --write-size 4096
	finish late-insert-small $? "8 streams of 8 MiB in 4 KiB writes, bytes left behind at each insert"
	_late=$(vsockmapctl -s "$E2E_DIR/control.sock" stats --prometheus |
		sed -n 's/^vsockmap_late_inserts_total //p')
	e2e_stop_daemon
	if e2e_insert_takes_queued; then
		vmtest_skip late-insert-seen "this kernel passes what a client queued to the verdict at its insert (kernel/ patch 7): no bytes are left behind, nothing to sweep ($_late of 9 connections showed some, in flight)"
	elif [ "${_late:-0}" -gt 0 ]; then
		vmtest_pass late-insert-seen "$_late of 9 connections left bytes behind at the insert"
	else
		vmtest_fail late-insert-seen "no connection left bytes behind: the scenarios above did not test the sweep"
	fi
	scenario_late_insert_slow_reader "$@"
	e2e_run_late_insert_tail "$@"
}

# scenario_late_insert_tail SNDBUF [stop] [ARGS]: the plain upload that lost its tail, forced.
# The client, whose send buffer SNDBUF lets it queue MiBs in the daemon's socket, writes
# E2E_TAIL bytes (default 128M) at full speed in 64 KiB writes into a fast reader, then
# closes without shutdown(); the daemon's test knob holds the insert back, without reading,
# until 3/8 of SNDBUF is queued (3 or 12 MiB), so that all of it is left behind at the
# insert (a send buffer holds about half its size in 64 KiB skbs). With 8M the
# client soon blocks on the bytes it left behind: the daemon sweeps them, and the verdict holds
# what comes next, far faster than the daemon forwards it, so tens of MiB are still held at
# the EOF. With 32M it never blocks, and about 16 MiB are still in the socket's own queue at
# the EOF. "half": the client ends with shutdown(SHUT_WR) in place of the close and reads a
# 1 MiB reply: a unix peer's shutdown() unhashes our socket from the sockhash and frees its
# psock queue, where held bytes once waited (docs/kernel-notes.md, "Where held bytes wait").
# "stop": SIGTERM as soon as the client is done, in the middle of that drain.
# Every byte must arrive, in order, then a clean EOF.
scenario_late_insert_tail() {
	_lt_sndbuf=$1
	_lt_name=late-insert-tail-$1
	_lt_stop=
	_lt_half=
	shift
	if [ "${1:-}" = half ]; then
		_lt_half=1
		_lt_name=$_lt_name-half
		shift
	fi
	if [ "${1:-}" = stop ]; then
		_lt_stop=1
		_lt_name=$_lt_name-stop
		shift
	fi
	_lt_size=${E2E_TAIL:-128M}
	# The stop writes out up to tens of MiB the daemon holds, as long as the server takes
	# them (at 5 MB/s on a loaded machine, after a timed drain's 10 s): 60 s finds a hang.
	_lt_stop_ticks=600
	_lt_queued=$((${_lt_sndbuf%M} * 3 * 1048576 / 8))
	E2E_LOG_LEVEL=${E2E_LOG_LEVEL:-debug} VSOCKMAPD_TEST_INSERT_QUEUED=$_lt_queued e2e_start_daemon "$@" || return 1
	STOP_RC=0
	STOP_TICKS=0
	if [ -n "$_lt_half" ] && [ -n "$_lt_stop" ]; then
		# SIGTERM the moment the client has written its last byte, before its shutdown():
		# the daemon stops while it still holds or sweeps the tail. The upload must arrive
		# whole, then EOF; the reply the server sends after the stop may be cut (a stop
		# delivers what either side sent before it).
		start_server "$_lt_name" "$(peer_addr 0)" --sink --reply 1M --count 1 --expect "$_lt_size" --timeout 300
		rm -f "$E2E_DIR/$_lt_name.mark"
		vsm-peer client "unix:$E2E_DIR/stream.sock" --timeout 300 --send "$_lt_size" \
			--sndbuf "$_lt_sndbuf" --after shutdown --expect-reply 1M \
			--mark-after "$_lt_size" --mark-file "$E2E_DIR/$_lt_name.mark" \
			>"$E2E_DIR/$_lt_name.client" 2>&1 &
		_lt_cpid=$!
		while [ ! -e "$E2E_DIR/$_lt_name.mark" ] && kill -0 "$_lt_cpid" 2>/dev/null; do
			sleep 0.01
		done
		term_daemon "$E2E_DAEMON" "$_lt_stop_ticks"
		wait "$_lt_cpid"
		_lt_crc=$?
		wait "$SERVER_PID"
		_lt_src=$?
		if grep -q "^server conn=1 bytes=$((${_lt_size%M} * 1048576)) .*verify=ok" \
			"$E2E_DIR/$_lt_name.server"; then
			_lt_crc=0 _lt_src=0
		fi
	elif [ -n "$_lt_half" ]; then
		start_server "$_lt_name" "$(peer_addr 0)" --sink --reply 1M --count 1 --expect "$_lt_size" --timeout 300
		client "$_lt_name" --send "$_lt_size" --sndbuf "$_lt_sndbuf" --after shutdown --expect-reply 1M --timeout 300
		_lt_crc=$?
		wait "$SERVER_PID"
		_lt_src=$?
		e2e_stop_daemon
	elif [ -n "$_lt_stop" ]; then
		start_server "$_lt_name" "$(peer_addr 0)" --sink --count 1 --expect "$_lt_size" --timeout 300
		client "$_lt_name" --send "$_lt_size" --sndbuf "$_lt_sndbuf" --timeout 300
		_lt_crc=$?
		term_daemon "$E2E_DAEMON" "$_lt_stop_ticks"
		wait "$SERVER_PID"
		_lt_src=$?
	else
		start_server "$_lt_name" "$(peer_addr 0)" --sink --count 1 --expect "$_lt_size" --timeout 300
		client "$_lt_name" --send "$_lt_size" --sndbuf "$_lt_sndbuf" --timeout 300
		_lt_crc=$?
		wait "$SERVER_PID"
		_lt_src=$?
		e2e_stop_daemon
	fi
	_lt_left=$(sed -n 's/.*redirect [0-9]*: \([0-9]*\) bytes arrived during the insert.*/\1/p' \
		"$E2E_DIR/daemon.log" | head -n 1)
	_lt_line=$(grep -m1 '^server conn=' "$E2E_DIR/$_lt_name.server")
	_lt_killed=
	[ -z "$_lt_stop" ] || [ "$STOP_TICKS" -lt "$_lt_stop_ticks" ] ||
		_lt_killed="the test SIGKILLed the daemon $((STOP_TICKS / 10)) s after its SIGTERM | "
	_lt_at_once=
	! e2e_insert_takes_queued || _lt_at_once=1
	# datapath=userspace inserts nothing: the daemon carries every byte, and the knob has
	# nothing to hold back. The same uploads and ends then test the user-space path.
	_lt_user=
	case " $* " in *" --datapath=userspace "*) _lt_user=1 ;; esac
	if [ "$_lt_crc" -ne 0 ] || [ "$_lt_src" -ne 0 ]; then
		vmtest_fail "$_lt_name" "${_lt_killed}client rc=$_lt_crc server rc=$_lt_src | $(tail -n 1 "$E2E_DIR/$_lt_name.client") | ${_lt_line:-no server line} | $(grep -m2 -E 'lost|did not|failed' "$E2E_DIR/daemon.log" | tr '\n' ' ')"
	elif [ -n "$_lt_at_once" ] && [ "${_lt_left:-0}" -gt 65536 ]; then
		# The daemon held the insert back until the client had queued that much: the kernel
		# must have passed it to the verdict at the insert. One skb (at most 64 KiB) may
		# still be on its way: queued by a send whose own sk_data_ready() is still to come.
		vmtest_fail "$_lt_name" "the daemon logged 'insert: at once', but ${_lt_left} of the $_lt_queued bytes queued before the insert were still queued after it (more than one skb)"
	elif [ -n "$_lt_user" ] && [ -n "$_lt_left" ]; then
		vmtest_fail "$_lt_name" "datapath=userspace, yet the daemon logged an insert: $_lt_left bytes left behind"
	elif [ -z "$_lt_user" ] && [ -z "$_lt_at_once" ] && [ "${_lt_left:-0}" -lt "$_lt_queued" ]; then
		vmtest_fail "$_lt_name" "only ${_lt_left:-0} bytes were left behind at the insert: the case was not forced | $(grep 'redirect [0-9]*:' "$E2E_DIR/daemon.log" | head -n 4 | tr '\n' ' ')"
	elif [ -n "$_lt_stop" ] && { [ "$STOP_RC" -ne 0 ] || [ "$STOP_TICKS" -ge "$_lt_stop_ticks" ]; }; then
		vmtest_fail "$_lt_name" "daemon exit $STOP_RC after $((STOP_TICKS / 10)) s: $(tail -n 2 "$E2E_DIR/daemon.log" | tr '\n' ' ')"
	else
		_lt_how="$_lt_left bytes left behind at the insert"
		_lt_end="a close"
		[ -z "$_lt_half" ] || _lt_end="a shutdown(SHUT_WR), then a 1 MiB reply"
		[ -z "$_lt_half" ] || [ -z "$_lt_stop" ] ||
			_lt_end="a shutdown(SHUT_WR) just after a SIGTERM at its last write (the reply may be cut)"
		[ -z "$_lt_user" ] || _lt_how="datapath=userspace (no insert)"
		[ -z "$_lt_at_once" ] ||
			_lt_how="the client queued $_lt_queued bytes before the insert; this kernel passed them to the verdict at the insert (${_lt_left:-0} still queued after it)"
		vmtest_pass "$_lt_name" "$_lt_how, then $_lt_size at full speed and $_lt_end${_lt_stop:+, SIGTERM at once (exit after $((STOP_TICKS / 10)).$((STOP_TICKS % 10)) s)}: all verified, clean EOF"
	fi
}

# e2e_run_late_insert_tail [ARGS]: the forced cases above, E2E_TAIL_RUNS times each (1);
# E2E_TAIL_ONLY=half: only those that end in a half-close.
e2e_run_late_insert_tail() {
	_lr=0
	while [ $_lr -lt "${E2E_TAIL_RUNS:-1}" ]; do
		_lr=$((_lr + 1))
		if [ "${E2E_TAIL_ONLY:-}" != half ]; then
			scenario_late_insert_tail 8M "$@"
			scenario_late_insert_tail 32M "$@"
			scenario_late_insert_tail 32M stop "$@"
		fi
		scenario_late_insert_tail 8M half "$@"
		scenario_late_insert_tail 32M half "$@"
		scenario_late_insert_tail 32M half stop "$@"
	done
}

# The last daemon started logged that it inserts a client at once: its kernel passes what a
# unix socket queued before its insert to the verdict (kernel/ patch 7).
e2e_insert_takes_queued() {
	grep -q 'insert: at once' "$E2E_DIR/daemon.log"
}

# e2e_drain_signal [ARGS]: the drain signal a daemon started with ARGS uses (probe, iterator
# or timed), or nothing if it does not start or says nothing in 60 s (its log tells which).
e2e_drain_signal() {
	_ds_log=$E2E_DIR/drain-signal.log
	: >"$_ds_log"
	vsockmapd -d -d "$@" "UNIX-LISTEN:$E2E_DIR/drain-signal.sock" \
		"UNIX-CONNECT:$E2E_DIR/drain-none.sock" 2>"$_ds_log" &
	_ds_pid=$!
	_ds_ticks=0
	while kill -0 $_ds_pid 2>/dev/null && ! grep -q 'drain signal:' "$_ds_log" &&
		[ $_ds_ticks -lt 600 ]; do
		sleep 0.1
		_ds_ticks=$((_ds_ticks + 1))
	done
	kill $_ds_pid 2>/dev/null
	wait $_ds_pid 2>/dev/null
	sed -n 's/.*drain signal: \(queue \)*\(probe\|iterator\|timed\).*/\2/p' "$_ds_log" | head -n 1
}

# e2e_drain_refusal: why the last e2e_drain_signal's daemon did not start (the kernel refused
# what it loads), or nothing.
e2e_drain_refusal() {
	grep -m1 -E 'loading the BPF|not started' "$E2E_DIR/drain-signal.log"
}

# e2e_run_drain_modes STOP_LISTEN STOP_CLIENT STOP_TARGET STOP_SERVER DGRAM_TARGET DGRAM_SERVER:
# what depends on the drain signal, again with every signal this kernel allows besides the
# default one: the forced late-insert uploads, a stop mid-stream and a stop of a datagram
# listener (the arguments as for scenario_stop_finishes and scenario_stop_dgram). The timed
# drain is the heuristic for kernels that allow neither exact signal. Names end in @MODE.
e2e_run_drain_modes() {
	_dm_default=$(e2e_drain_signal)
	for _dm in probe iterator timed; do
		[ "$_dm" != "$_dm_default" ] || continue
		_dm_got=$(e2e_drain_signal --drain=$_dm)
		if [ "$_dm_got" != "$_dm" ]; then
			# Refused by the kernel: a skip that says why; anything else is a failure.
			_dm_why=$(e2e_drain_refusal)
			if [ -n "$_dm_why" ]; then
				vmtest_skip "drain-$_dm" "this kernel does not allow --drain=$_dm: $_dm_why"
			else
				vmtest_fail "drain-$_dm" "a daemon started with --drain=$_dm said \"$_dm_got\" as its drain signal: $(tail -n 2 "$E2E_DIR/drain-signal.log" | tr '\n' ' ')"
			fi
			continue
		fi
		VMTEST_SUFFIX=@$_dm
		[ "$_dm" != timed ] || E2E_DRAIN_WAITS=1
		e2e_run_late_insert_tail --drain=$_dm
		scenario_stop_finishes kernel "$1" "$2" "$3" "$4" --drain=$_dm
		scenario_stop_dgram kernel "$5" "$6" --drain=$_dm
		E2E_DRAIN_WAITS=
		VMTEST_SUFFIX=
	done
}

# A sweep waits for the target's backlog like a drain does. The EOF's drain must start its own
# wait: one version kept the sweep's start time, so a client that closed more than
# drain-timeout after its sweep had its backlog cut off at once. Here the client blocks on a
# slow reader, is swept early, and closes with a backlog about 3 s later. The insert waits
# 50 ms so that the client has sent by then; a busy machine may still miss it: up to 3 tries.
scenario_late_insert_slow_reader() {
	E2E_DRAIN_TIMEOUT=2
	VSOCKMAPD_TEST_INSERT_DELAY_US=50000 e2e_start_daemon "$@"
	_rc=$?
	E2E_DRAIN_TIMEOUT=
	[ $_rc -eq 0 ] || return 1
	_try=0
	_late=0
	while [ $_try -lt 3 ] && [ "${_late:-0}" -eq 0 ]; do
		_try=$((_try + 1))
		start_server late-insert-slow "$(peer_addr 0)" --sink --count 1 --expect 24M \
			--slow 2000 --read-size 16384
		client late-insert-slow --send 24M --write-size 4096
		finish late-insert-slow $? "24 MiB into a reader taking 16 KiB every 2 ms, swept, then EOF with a backlog (try $_try)"
		_late=$(vsockmapctl -s "$E2E_DIR/control.sock" stats --prometheus |
			sed -n 's/^vsockmap_late_inserts_total //p')
	done
	e2e_stop_daemon
	if e2e_insert_takes_queued; then
		vmtest_skip late-insert-slow-drain "this kernel passes what a client queued to the verdict at its insert (kernel/ patch 7): no bytes are left behind to sweep"
	elif [ "${_late:-0}" -eq 0 ]; then
		vmtest_fail late-insert-slow-drain "in $_try tries the client left no bytes behind: nothing was swept"
	elif grep -q 'did not drain' "$E2E_DIR/daemon.log"; then
		vmtest_fail late-insert-slow-drain "$(grep -m1 'did not drain' "$E2E_DIR/daemon.log")"
	else
		vmtest_pass late-insert-slow-drain "the EOF waited for the backlog after the sweep (drain-timeout 2 s)"
	fi
}

# The dgram target goes away: datagrams wait in the socket, the daemon redials with
# back-off, and the new target gets every datagram sent meanwhile, once and in order.
scenario_dgram_reconnect() {
	# The first target gives up after 2 s; its connection closes.
	vsm-peer server "$(peer_addr 1)" --sink --count 1 --timeout 2 >"$E2E_DIR/dgram-first.server" 2>&1 &
	_first=$!
	wait_for_file "$E2E_DIR/dgram.sock" 10
	e2e_start_daemon || return
	wait $_first
	vsm-peer client "unix-dgram:$E2E_DIR/dgram.sock" --seed 7 --dgram-count 50 --msg-size 4K \
		>"$E2E_DIR/dgram-reconnect.client" 2>&1 &
	_cpid=$!
	sleep 1
	start_server dgram-reconnect "$(peer_addr 1)" --sink --seed 7 --count 1 --expect 200K --timeout 30
	wait $_cpid
	_crc=$?
	sleep 2
	e2e_stop_daemon
	if ! grep -q 'redialling' "$E2E_DIR/daemon.log"; then
		vmtest_fail dgram-reconnect "the daemon did not log the redial: $(tail -n 2 "$E2E_DIR/daemon.log")"
		kill "$SERVER_PID" 2>/dev/null
		return
	fi
	finish dgram-reconnect $_crc "target lost and back: 50 datagrams sent meanwhile arrive once, in order; log: $(grep -m1 -o 'redialling in [0-9]* ms' "$E2E_DIR/daemon.log")"
}

# 64 KiB datagrams from a connected sender that starts as the daemon opens the gate: while the
# daemon forwards what was held, the sender's next datagram sits in the socket's own queue for
# a moment before its verdict runs, and a read then would take it ahead of datagrams already
# redirected. Before held_read() this reordered 7 of 8 rounds in the VM.
scenario_dgram_burst() {
	_b_round=1
	while [ $_b_round -le 3 ]; do
		start_server dgram-burst-$_b_round "$(peer_addr 1)" --sink --count 1 --expect 64M --timeout 120
		_b_server=$SERVER_PID
		e2e_start_daemon || return
		vsm-peer client "unix-dgram:$E2E_DIR/dgram.sock" --dgram-count 1024 --msg-size 64K \
			--connect >"$E2E_DIR/dgram-burst-$_b_round.client" 2>&1
		_crc=$?
		sleep 2
		e2e_stop_daemon
		SERVER_PID=$_b_server
		finish dgram-burst-$_b_round $_crc "1024 datagrams of 64 KiB from a connected sender as the gate opens, in order"
		_b_round=$((_b_round + 1))
	done
}

# A datagram target sees EOF only when the daemon stops, so each gets a daemon of its own,
# started once its target listens (otherwise the first connect backs off).
e2e_run_dgram() {
	start_server dgram-to-stream "$(peer_addr 1)" --sink --count 1 --expect 6400K --timeout 60
	_dgram_server=$SERVER_PID
	e2e_start_daemon "$@" || return 1
	SERVER_PID=$_dgram_server
	scenario_dgram
	scenario_dgram_reconnect
	scenario_dgram_burst
	[ "$E2E_TARGET" = vsock ] || return 0
	e2e_start_daemon "$@" || return 1
	if [ "${E2E_DATAPATH:-}" = userspace ] || e2e_section_userspace seqpacket; then
		# In user space nothing holds datagrams for an absent target: they wait in the
		# socket's own queue (net.unix.max_dgram_qlen), and a non-blocking sender gets
		# EAGAIN. So the target is there first; the records must still keep their bounds.
		start_server seqpacket-boundaries "$(peer_seqpacket_addr 2)" --sink --count 1 \
			--msg-size 4096 --expect 400K --timeout 60
		sleep 2 # the daemon's redial back-off
		vsm-peer client "unix-dgram:$E2E_DIR/seqpacket.sock" --dgram-count 100 \
			--msg-size 4096 >"$E2E_DIR/seqpacket-boundaries.client" 2>&1
		_crc=$?
		sleep 1
		e2e_stop_daemon
		finish seqpacket-boundaries $_crc "100 datagrams of 4 KiB arrive as 100 records"
		return
	fi
	vsm-peer client "unix-dgram:$E2E_DIR/seqpacket.sock" --dgram-count 100 --msg-size 4096 \
		>"$E2E_DIR/seqpacket-boundaries.client" 2>&1
	_crc=$?
	start_server seqpacket-boundaries "$(peer_seqpacket_addr 2)" --sink --count 1 \
		--msg-size 4096 --expect 400K --timeout 60
	scenario_seqpacket $_crc
	scenario_seqpacket_held_full "$@"
}

# e2e_section_userspace NAME: the last daemon started runs section NAME in user space (on a
# kernel without BPF, or, under datapath=auto, with a vsock target and no backlog wake).
e2e_section_userspace() {
	grep -q "data path: user space, for every redirect\|\[$1\] [a-z ]* on .*; data path: user space" \
		"$E2E_DIR/daemon.log"
}

# More datagrams held for an absent seqpacket target than the kernel records the lengths of (a
# test build's 64 here, VSOCKMAPD_TEST_DGRAM_HELD_MAX; the package's 65,536): the verdict drops
# those beyond whole, the daemon logs how many, and the first 64 arrive as 64 records. Before,
# each datagram beyond lost its bounds and reached the target merged with its neighbours.
scenario_seqpacket_held_full() {
	VSOCKMAPD_TEST_DGRAM_HELD_MAX=64 e2e_start_daemon "$@" || return 1
	if e2e_section_userspace seqpacket; then
		e2e_stop_daemon
		vmtest_skip seqpacket-held-full "the section runs in user space here: no verdict holds datagrams ($(grep -m1 -o 'data path: user space.*' "$E2E_DIR/daemon.log"))"
		return 0
	fi
	vsm-peer client "unix-dgram:$E2E_DIR/seqpacket.sock" --dgram-count 200 --msg-size 4096 \
		>"$E2E_DIR/seqpacket-held-full.client" 2>&1
	_crc=$?
	start_server seqpacket-held-full "$(peer_seqpacket_addr 2)" --sink --count 1 \
		--msg-size 4096 --expect 256K --timeout 60
	sleep 3 # the daemon's redial back-off, as in scenario_seqpacket
	e2e_stop_daemon
	wait "$SERVER_PID"
	_src=$?
	_line=$(grep -m1 '^server conn=' "$E2E_DIR/seqpacket-held-full.server")
	_dropped=$(sed -n 's/.*\] \([0-9]*\) datagrams dropped: .*/\1/p' "$E2E_DIR/daemon.log" | head -n 1)
	case "$_crc $_src $_dropped | $_line " in
	"0 0 136 | "*" bytes=262144 "*" verify=ok "*" msgs=64 boundaries=ok "*)
		vmtest_pass seqpacket-held-full "200 datagrams of 4 KiB for an absent target, 64 lengths recorded: 64 records arrived whole, 136 dropped and logged" ;;
	*)
		vmtest_fail seqpacket-held-full "client rc=$_crc server rc=$_src, logged dropped: ${_dropped:-none} (want 136) | ${_line:-no server line} | $(grep -m2 -E 'dropped|warn' "$E2E_DIR/daemon.log" | tr '\n' ' ')" ;;
	esac
}

# While a 16 MiB stream crawls into a slow reader, vsockmapctl shows the daemon carrying
# both ways, and the daemon as a whole in user space.
scenario_userspace_reported() {
	e2e_start_daemon --datapath=userspace || return 1
	start_server userspace-reported "$(peer_addr 0)" --sink --count 1 --expect 16M --slow 2000 --read-size 16384
	client userspace-reported --send 16M &
	_cpid=$!
	sleep 1
	_list=$(vsockmapctl -s "$E2E_DIR/control.sock" -j list --name stream | tr -d ' \n')
	_status=$(vsockmapctl -s "$E2E_DIR/control.sock" -j status | tr -d ' \n')
	wait $_cpid
	_crc=$?
	_logged=$(grep -c 'listening on .*; data path: user space (datapath=userspace)' "$E2E_DIR/daemon.log")
	# The daemon stops only after the server has everything: a stop closes live redirects.
	case "$_list|$_status|$_logged" in
	*'"datapath":"daemon","datapath_in":"daemon"'*'|'*'"datapath":"userspace","datapath_reason":"datapath=userspace"'*'|'[1-9]*)
		finish userspace-reported $_crc "vsockmapctl: both ways carried by the daemon, status datapath=userspace; $_logged listeners logged their path" ;;
	*)
		wait "$SERVER_PID"
		vmtest_fail userspace-reported "list: $_list | status: $_status | listeners that logged user space: $_logged" ;;
	esac
	e2e_stop_daemon
}

# The user-space fallback, forced with --datapath=userspace: the foundation scenarios again,
# with the daemon moving every byte (splice() through pipes). Their names end in @userspace.
# stop_wait_ticks: how long (tenths of a second) a stop may take: 8 s, or drain-timeout (10 s)
# and 5 s more with E2E_DRAIN_WAITS=1, for a daemon that has no exact drain signal and waits
# drain-timeout out at a stop.
stop_wait_ticks() {
	if [ "${E2E_DRAIN_WAITS:-}" = 1 ]; then echo 150; else echo 80; fi
}

# term_daemon PID [TICKS]: SIGTERM, then up to TICKS (default stop_wait_ticks) for it to
# exit (SIGKILL after). Sets STOP_TICKS (tenths of a second waited; TICKS: it did not exit)
# and STOP_RC (its exit status).
term_daemon() {
	_td_max=${2:-$(stop_wait_ticks)}
	_td_t0=$(now_ms)
	kill -TERM "$1"
	_td_n=0
	while kill -0 "$1" 2>/dev/null && [ $_td_n -lt "$_td_max" ]; do
		sleep 0.1
		_td_n=$((_td_n + 1))
	done
	# Tenths of a second by the clock: on a loaded machine a round of the loop takes longer
	# than its sleep, and counting rounds made a 1 s stop look like 0.3 s. TICKS still
	# means it did not exit; a slow machine's rounds only give it longer.
	if kill -0 "$1" 2>/dev/null; then
		STOP_TICKS=$_td_max
	else
		STOP_TICKS=$((($(now_ms) - _td_t0) / 100))
		[ "$STOP_TICKS" -lt "$_td_max" ] || STOP_TICKS=$((_td_max - 1))
	fi
	kill -KILL "$1" 2>/dev/null
	wait "$1"
	STOP_RC=$?
}

# scenario_stop_finishes NAME LISTEN CLIENT_ADDR TARGET SERVER_ADDR [ARGS]: SIGTERM while a
# client streams into a slow reader through "vsockmapd LISTEN TARGET" (ARGS: more daemon
# options; @D@ in the addresses is the scenario's directory).
# The server must get exactly the bytes the client's writes handed over, verified, then a
# clean EOF, and the daemon must exit 0 well within drain-timeout (10 s here). The old
# at-once close lost 65 to 131 KB on the host every time.
scenario_stop_finishes() {
	_sf_name=stop-finishes-$1
	_sf_dir=$E2E_DIR/$_sf_name
	shift
	stop_midstream "$_sf_dir" "$@"
	if [ $MS_RC -ne 0 ] || [ $MS_TICKS -ge "$(stop_wait_ticks)" ]; then
		vmtest_fail "$_sf_name" "daemon exit $MS_RC, still running after $((MS_TICKS / 10)) s: $(tail -n 2 "$_sf_dir/daemon.log" | tr '\n' ' ')"
	elif ! grep -q 'stopping: finishing 1 live redirect' "$_sf_dir/daemon.log"; then
		vmtest_fail "$_sf_name" "the daemon did not finish the redirect: $(tail -n 3 "$_sf_dir/daemon.log" | tr '\n' ' ')"
	elif [ -z "$MS_SENT" ] || [ "$MS_SENT" != "$MS_GOT" ] ||
		! printf '%s' "$MS_LINE" | grep -q 'verify=ok.*eof=clean'; then
		vmtest_fail "$_sf_name" "the client handed over ${MS_SENT:-?} bytes; server: ${MS_LINE:-nothing}"
	else
		vmtest_pass "$_sf_name" "SIGTERM mid-stream into a slow reader: exit 0 within $((MS_TICKS / 10 + 1)) s; the server got all $MS_GOT bytes the client had written, verified, then a clean EOF"
	fi
}

# stop_midstream DIR LISTEN CLIENT_ADDR TARGET SERVER_ADDR [ARGS]: a slow sink on SERVER_ADDR,
# "vsockmapd LISTEN TARGET" (ARGS: more daemon options; @D@ in the addresses is DIR), a client
# streaming 256M, and SIGTERM 1.5 s in. Sets MS_TICKS and MS_RC (term_daemon's STOP_TICKS and
# STOP_RC), MS_SENT (what the client's writes handed over), MS_LINE (the server's line) and
# MS_GOT (the bytes it got); the logs are DIR/daemon.log, DIR/client and DIR/server.
stop_midstream() {
	_ms_dir=$1
	_ms_listen=$(printf '%s' "$2" | sed "s|@D@|$_ms_dir|")
	_ms_client=$(printf '%s' "$3" | sed "s|@D@|$_ms_dir|")
	_ms_target=$(printf '%s' "$4" | sed "s|@D@|$_ms_dir|")
	_ms_server=$(printf '%s' "$5" | sed "s|@D@|$_ms_dir|")
	shift 5
	mkdir -p "$_ms_dir"
	vsm-peer server "$_ms_server" --sink --count 1 --slow 2000 --read-size 16384 \
		--ready-file "$_ms_dir/srv.ready" --timeout 60 >"$_ms_dir/server" 2>&1 &
	_ms_srv=$!
	wait_for_file "$_ms_dir/srv.ready" 10
	# shellcheck disable=SC2086 # E2E_DAEMON_ARGS: words, e.g. --datapath=kernel
	vsockmapd -d -d --control "$_ms_dir/ctl.sock" ${E2E_DAEMON_ARGS:-} "$@" "$_ms_listen" "$_ms_target" \
		2>"$_ms_dir/daemon.log" &
	_ms_daemon=$!
	wait_for_socket "$_ms_dir/ctl.sock" 10
	vsm-peer client "$_ms_client" --send 256M --timeout 60 >"$_ms_dir/client" 2>&1 &
	_ms_cli=$!
	sleep 1.5
	term_daemon "$_ms_daemon"
	MS_TICKS=$STOP_TICKS
	MS_RC=$STOP_RC
	wait "$_ms_cli"
	wait "$_ms_srv"
	midstream_results "$_ms_dir"
}

# midstream_results DIR: from the vsm-peer logs DIR/client and DIR/server, MS_SENT (what the
# client's writes handed over), MS_LINE (the server's line) and MS_GOT (the bytes it got).
midstream_results() {
	MS_SENT=$(sed -n 's/^client conn=[0-9]* sent=\([0-9]*\).*/\1/p' "$1/client")
	MS_LINE=$(grep -m1 '^server conn=' "$1/server")
	MS_GOT=$(printf '%s' "$MS_LINE" | sed -n 's/^server conn=[0-9]* bytes=\([0-9]*\).*/\1/p')
}

# scenario_stop_vsock_listen PORT [ARGS]: the stop of a VSOCK-LISTEN client mid-stream (VM
# only). vsock drops a socket's receive queue once it is shut down for reading, so the daemon
# reads what the client has queued first: the server gets every byte the client's writes
# handed over, then a clean EOF. Only bytes that arrive between that read and the shutdown
# are lost; where the kernel answers SIOCINQ on vsock (6.17) the daemon counts them, and the
# difference must be that count.
scenario_stop_vsock_listen() {
	_sv_name=stop-vsock-listen
	_sv_dir=$E2E_DIR/$_sv_name
	_sv_port=$1
	shift
	stop_midstream "$_sv_dir" "VSOCK-LISTEN:$_sv_port" "vsock:1:$_sv_port" \
		"UNIX-CONNECT:@D@/srv.sock" "unix:@D@/srv.sock" "$@"
	_sv_said=$(sed -n 's/.*vsock discarded \([0-9]*\) bytes the client had sent.*/\1/p' \
		"$_sv_dir/daemon.log" | head -n 1)
	if [ $MS_RC -ne 0 ] || [ $MS_TICKS -ge "$(stop_wait_ticks)" ]; then
		vmtest_fail "$_sv_name" "daemon exit $MS_RC, still running after $((MS_TICKS / 10)) s: $(tail -n 2 "$_sv_dir/daemon.log" | tr '\n' ' ')"
	elif [ -z "$MS_SENT" ] || [ -z "$MS_GOT" ] ||
		! printf '%s' "$MS_LINE" | grep -q 'verify=ok.*eof=clean'; then
		vmtest_fail "$_sv_name" "client: $(tail -n 1 "$_sv_dir/client"); server: ${MS_LINE:-nothing}"
	elif [ $((MS_SENT - MS_GOT)) -ne "${_sv_said:-0}" ]; then
		vmtest_fail "$_sv_name" "the client wrote $MS_SENT bytes, the server got $MS_GOT, the daemon said ${_sv_said:-nothing} were discarded$(grep -q 'cannot be counted on this kernel' "$_sv_dir/daemon.log" && echo ' (it cannot count them on this kernel)')"
	else
		vmtest_pass "$_sv_name" "SIGTERM mid-stream: the server got all $MS_GOT bytes the client wrote, then a clean EOF; discarded by vsock at the shutdown: ${_sv_said:-0}$(grep -q 'cannot be counted on this kernel' "$_sv_dir/daemon.log" && echo ' (not countable on this kernel: none went missing)')"
	fi
}

# scenario_stop_dgram NAME TARGET SERVER_ADDR [ARGS]: 200 datagrams of 64 KiB sent to a
# UNIX-RECV socket whose target reads slowly, then SIGTERM at once: the target must get all of
# them, in order, then EOF. On the kernel path they wait in the target's psock backlog,
# which closing the target would free; in user space, in the socket's own queue.
scenario_stop_dgram() {
	_sd_name=stop-dgram-$1
	_sd_dir=$E2E_DIR/$_sd_name
	_sd_target=$(printf '%s' "$2" | sed "s|@D@|$_sd_dir|")
	_sd_server=$(printf '%s' "$3" | sed "s|@D@|$_sd_dir|")
	shift 3
	mkdir -p "$_sd_dir"
	vsm-peer server "$_sd_server" --sink --count 1 --expect 12800K --slow 2000 \
		--read-size 16384 --ready-file "$_sd_dir/srv.ready" --timeout 60 >"$_sd_dir/server" 2>&1 &
	_sd_srv=$!
	wait_for_file "$_sd_dir/srv.ready" 10
	# shellcheck disable=SC2086 # E2E_DAEMON_ARGS: words, e.g. --datapath=kernel
	vsockmapd -d -d --control "$_sd_dir/ctl.sock" ${E2E_DAEMON_ARGS:-} "$@" "UNIX-RECV:$_sd_dir/dg.sock" \
		"$_sd_target" 2>"$_sd_dir/daemon.log" &
	_sd_daemon=$!
	wait_for_socket "$_sd_dir/ctl.sock" 10
	vsm-peer client "unix-dgram:$_sd_dir/dg.sock" --dgram-count 200 --msg-size 64K \
		>"$_sd_dir/client" 2>&1
	_sd_crc=$?
	term_daemon "$_sd_daemon"
	_sd_ticks=$STOP_TICKS
	_sd_rc=$STOP_RC
	wait "$_sd_srv"
	_sd_src=$?
	_sd_line=$(grep -m1 '^server conn=' "$_sd_dir/server")
	if [ $_sd_crc -ne 0 ]; then
		vmtest_fail "$_sd_name" "the sender failed: $(tail -n 1 "$_sd_dir/client")"
	elif [ $_sd_rc -ne 0 ] || [ $_sd_ticks -ge "$(stop_wait_ticks)" ]; then
		vmtest_fail "$_sd_name" "daemon exit $_sd_rc, still running after $((_sd_ticks / 10)) s: $(tail -n 2 "$_sd_dir/daemon.log" | tr '\n' ' ')"
	elif [ $_sd_src -ne 0 ] || ! printf '%s' "$_sd_line" | grep -q 'bytes=13107200 .*verify=ok.*eof=clean'; then
		vmtest_fail "$_sd_name" "200 datagrams of 64 KiB sent; server: ${_sd_line:-nothing}"
	else
		vmtest_pass "$_sd_name" "SIGTERM right after 200 datagrams of 64 KiB: the slow target got all 12800 KiB, in order, then EOF; exit 0 within $((_sd_ticks / 10 + 1)) s"
	fi
}

# fastpath=permanent: the foundation scenarios again, with the stream verdict that counts
# nothing; the drain, the late-insert sweep and the idle check may not rely on the counters.
# Their names end in @permanent.
e2e_run_permanent() {
	VMTEST_SUFFIX=@permanent
	E2E_FASTPATH=permanent
	e2e_run_streams --fastpath=permanent
	e2e_run_late_insert --fastpath=permanent
	scenario_permanent_reported
	VMTEST_SUFFIX=
	E2E_FASTPATH=
}

# vsockmapctl says what it cannot count: status names the mode, list and stats print "-".
scenario_permanent_reported() {
	e2e_start_daemon --fastpath=permanent || return 1
	start_server permanent-reported "$(peer_addr 0)" --sink --count 1 --expect 16M --slow 2000 --read-size 16384
	client permanent-reported --send 16M &
	_cpid=$!
	sleep 1
	_status=$(vsockmapctl -s "$E2E_DIR/control.sock" status)
	_list=$(vsockmapctl -s "$E2E_DIR/control.sock" list --name stream)
	_stats=$(vsockmapctl -s "$E2E_DIR/control.sock" -j stats)
	wait $_cpid
	finish permanent-reported $? "16 MiB into a slow reader on the permanent fast path"
	e2e_stop_daemon
	_row=$(printf '%s\n' "$_list" | sed -n 2p)
	if ! printf '%s' "$_status" | grep -q '^fastpath: *permanent (nothing counted'; then
		vmtest_fail permanent-status "status does not say fastpath permanent: $_status"
	elif ! grep -q 'fastpath: permanent' "$E2E_DIR/daemon.log"; then
		vmtest_fail permanent-status "the daemon did not log its fast path: $(head -n 4 "$E2E_DIR/daemon.log")"
	elif [ "$(printf '%s' "$_row" | awk '{ print $(NF-3) }')" != - ] ||
		! printf '%s' "$_stats" | grep -q '"bytes_out": *null'; then
		vmtest_fail permanent-status "list or stats show a number for the uncounted way: $_row | $_stats"
	else
		vmtest_pass permanent-status "status: $(printf '%s' "$_status" | grep '^fastpath' | tr -s ' '); list: BYTES_OUT -"
	fi
}

e2e_run_userspace() {
	VMTEST_SUFFIX=@userspace
	E2E_DATAPATH=userspace
	e2e_run_streams --datapath=userspace
	e2e_run_dgram --datapath=userspace
	scenario_userspace_reported
	VMTEST_SUFFIX=
	E2E_DATAPATH=
}

# The scenario list both tiers run, the host's unix and TCP targets and the VM's vsock
# targets alike (tests/host/run.sh, tests/vm/suite-e2e.sh); each adds its own cases after.
# E2E_SUBSET=drain (the locked-down run) leaves out the user-space repeat.
e2e_run_common() {
	e2e_run_streams
	scenario_bulk_to_kernel
	e2e_run_late_insert
	e2e_run_dgram
	e2e_check_bpf_object
	[ "${E2E_SUBSET:-}" = drain ] || e2e_run_userspace
	e2e_run_permanent
	e2e_run_unix_target_auto
	e2e_run_datapath_auto
}
