# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# A close by the daemon while the kernel still holds seconds of bytes for a slow reader, on
# the kernel path (unix to unix, datapath=kernel), and the same in user space. The client queues 4 MiB at once (its send
# buffer holds it all); the server reads 16 KiB every 20 ms, about 5 s for the lot. The
# verdict has counted every byte within milliseconds; the psock worker hands them to the
# target only as fast as the server reads.
#
#   idle-slow-reader   idle-timeout=1: the redirect is not idle while its backlog moves; the
#                      server gets all 4 MiB, and only then the idle timeout ends the client
#   close-slow-reader  "close ID" at once, drain-timeout=2: the drain waits while the backlog
#                      moves (drain-timeout counts time without progress), so all 4 MiB arrive
#
# Before: the idle timeout saw the verdict's counters stand still and closed the redirect
# 1.3 s in, while the server was still reading (until 5.2 s): the client, waiting for an
# answer, got EOF from a redirect that was moving its bytes.
# Uses mini_config, mini_daemon and mini_stop (access-cases.sh).

# slow_reader_case NAME CLOSE LINE...: one transfer; CLOSE=1 asks "close ID" at once; the
# LINEs go in [daemon].
slow_reader_case() {
	local name=$1 close=$2 id line_out srv_ms cli_ms line
	shift 2
	line="$*"
	mini_config "$name" s "$@" "drain-timeout = 2" "log-level = info"
	vsm-peer server "unix:$MINI_DIR/srv.sock" --sink --slow 20000 --read-size 16384 --count 1 \
		--expect 4M --timeout 60 --ready-file "$MINI_DIR/srv.ready" >"$MINI_DIR/srv.log" 2>&1 &
	MINI_SRV=$!
	wait_for_file "$MINI_DIR/srv.ready" 10
	mini_daemon
	# --after echo: having sent, the client waits for bytes that never come; only the
	# daemon's close ends it.
	vsm-peer client "unix:$MINI_DIR/s.sock" --send 4M --sndbuf 8M --after echo --timeout 60 \
		>"$MINI_DIR/cli.log" 2>&1 &
	local cli=$!
	if [[ $close == 1 ]]; then
		wait_for_file "$MINI_DIR/none" 1 # the client has queued its 4 MiB by then
		id=$(vsockmapctl -s "$MINI_DIR/ctl.sock" --no-legend list | awk 'NR == 1 {print $1}')
		vsockmapctl -s "$MINI_DIR/ctl.sock" close "$id" >/dev/null
	fi
	wait "$MINI_SRV"
	local src=$?
	wait "$cli"
	line_out=$(grep -m1 '^server conn=' "$MINI_DIR/srv.log")
	srv_ms=$(sed -n 's/^server conn=1 .* ms=\([0-9]*\).*/\1/p' "$MINI_DIR/srv.log")
	cli_ms=$(sed -n 's/^client conn=1 .* ms=\([0-9]*\).*/\1/p' "$MINI_DIR/cli.log")
	# The idle timeout may end the client only once its bytes have stopped moving: the
	# server cannot have read them all before 256 reads 20 ms apart, 5.1 s.
	if [[ -z $close && ${cli_ms:-0} -lt 5100 ]]; then
		vmtest_fail "$name" "the idle timeout ended the client after $cli_ms ms, before the server could have read its bytes (5.1 s; it ended at $srv_ms ms) | $(grep -m1 'idle-timeout' "$MINI_DIR/daemon.log")"
	elif [[ $src -eq 0 && $line_out == *"bytes=4194304 "*"verify=ok eof=clean"* ]] &&
		{ [[ $close == 1 ]] || grep -q 'no byte either way' "$MINI_DIR/daemon.log"; }; then
		vmtest_pass "$name" "4 MiB queued at once into a 16 KiB/20 ms reader${close:+, close ID at once}${line:+, $line}: all arrived, then EOF | $line_out"
	else
		vmtest_fail "$name" "server rc=$src: ${line_out:-no server line} | $(grep -m3 -E 'idle-timeout|did not drain|closing' "$MINI_DIR/daemon.log" | tr '\n' ' ')"
	fi
	mini_stop
}

host_slow_reader_cases() {
	slow_reader_case idle-slow-reader "" "idle-timeout = 1"
	slow_reader_case idle-slow-reader-userspace "" "idle-timeout = 1" "datapath = userspace"
	slow_reader_case close-slow-reader 1
	slow_reader_case close-slow-reader-userspace 1 "datapath = userspace"
}
