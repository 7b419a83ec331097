# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# The close of a pair whose target is a TCP server that reads slowly, while bytes it sent
# back lie unread on our side. The client sends 4 MiB and closes without reading; the server
# answers 8 MiB at once and reads 16 KiB every 20 ms (5 s for the lot).
#
#   tcp-close-unread-reply             datapath = kernel
#   tcp-close-unread-reply-userspace   datapath = userspace
#   tcp-close-drain-timeout-0          drain-timeout = 0: close at once, as documented; the
#                                      server gets less, and the log says how much was left
#
# tcp_close() sends a reset, not a FIN, when the socket's receive queue holds bytes, and the
# reset drops what its send queue still holds. Before redirect_linger.c the daemon closed the
# pair as soon as it had handed the client's last byte to its socket: the server got 16 KiB
# of 4 MiB, then ECONNRESET. Now the pair waits until the server has acknowledged every
# byte; the close may still reset the server (its own answer went nowhere), but only once
# the 4 MiB are in its receive queue, and vsm-peer reads on after a refused send.
# Uses mini_config, mini_daemon and mini_stop (access-cases.sh).

# free_tcp_ports N: N TCP ports on 127.0.0.1 that no socket uses now, on one line.
free_tcp_ports() {
	local ports=() p
	while ((${#ports[@]} < $1)); do
		# below the ephemeral range (32768 up), where a connection's own end could take it
		p=$((20000 + RANDOM % 12000))
		ss -Htan "sport = :$p" | grep -q . || [[ " ${ports[*]} " == *" $p "* ]] || ports+=("$p")
	done
	echo "${ports[*]}"
}

# tcp_close_case NAME LINE...: one transfer; the LINEs go in [daemon]. A NAME ending in
# -0 expects the close at once.
tcp_close_case() {
	local name=$1 port line_out src
	shift
	port=$(free_tcp_ports 1)
	mini_config "$name" s "$@" "log-level = debug"
	sed -i "s|^connect = .*|connect = TCP-CONNECT:127.0.0.1:$port|" "$MINI_DIR/c.conf"
	vsm-peer server "tcp:127.0.0.1:$port" --sink --reply-first 8M --slow 20000 \
		--read-size 16384 --count 1 --expect 4M --timeout 60 \
		--ready-file "$MINI_DIR/srv.ready" >"$MINI_DIR/srv.log" 2>&1 &
	MINI_SRV=$!
	wait_for_file "$MINI_DIR/srv.ready" 10
	mini_daemon
	vsm-peer client "unix:$MINI_DIR/s.sock" --send 4M --sndbuf 8M --timeout 60 \
		>"$MINI_DIR/cli.log" 2>&1
	wait "$MINI_SRV"
	src=$?
	line_out=$(grep -m1 '^server conn=' "$MINI_DIR/srv.log")
	if [[ $name == *-0 ]]; then
		if [[ $line_out != *"bytes=4194304 "* ]] &&
			grep -qE 'closing with [0-9]* bytes the target has not acknowledged \(drain-timeout = 0\)|backlog toward the target did not drain in 0 ms' "$MINI_DIR/daemon.log"; then
			# the kernel path's drain may give up first: then that is the line
			vmtest_pass "$name" "closed at once, the bytes left logged: $(grep -m1 -oE 'closing with [0-9]* bytes|did not drain in 0 ms[^;]*; [^,]*' "$MINI_DIR/daemon.log") | $line_out"
		else
			vmtest_fail "$name" "${line_out:-no server line} | $(grep -m2 -E 'waiting for|lost|closing with' "$MINI_DIR/daemon.log" | tr '\n' ' ')"
		fi
	elif [[ $line_out == *"bytes=4194304 "*"verify=ok "* ]]; then
		vmtest_pass "$name" "4 MiB to a 16 KiB/20 ms TCP reader whose 8 MiB answer went unread: all arrived | $line_out"
	else
		vmtest_fail "$name" "server rc=$src: ${line_out:-no server line} | $(grep -m2 -E 'waiting for|lost|closed after' "$MINI_DIR/daemon.log" | tr '\n' ' ')"
	fi
	mini_stop
}

# tcp-stop-sending-client: a TCP client that never stops sending and reads slowly, behind a
# TCP server that answers 8 MiB at once and shuts down writing (the daemon passes that FIN
# on at once), and a stop half a second in. A socket shut down for reading resets its
# connection when data arrives after its FIN, dropping what it had not delivered, so the
# daemon must not shut this client down for reading (redirect_client_reads_held()): all
# 8 MiB must arrive, then EOF or ECONNRESET (docs/behaviour-matrix.md).
tcp_stop_sending_client_case() {
	local name=tcp-stop-sending-client p1 p2 out
	read -r p1 p2 < <(free_tcp_ports 2)
	mini_config "$name" s "log-level = info"
	sed -i -e "s|^listen = .*|listen = TCP-LISTEN:$p1,bind=127.0.0.1|" \
		-e "s|^connect = .*|connect = TCP-CONNECT:127.0.0.1:$p2|" -e '/^datapath/d' "$MINI_DIR/c.conf"
	vsm-peer server "tcp:127.0.0.1:$p2" --sink --reply-first 8M --count 1 --timeout 60 \
		--ready-file "$MINI_DIR/srv.ready" >"$MINI_DIR/srv.log" 2>&1 &
	MINI_SRV=$!
	wait_for_file "$MINI_DIR/srv.ready" 10
	mini_daemon
	out=$(timeout 60 "$PYTHON" tests/host/tcp-slow-sender.py "$p1" "$MINI_PID" 0.5 2>&1)
	if [[ $out == "got=8388608 "* ]]; then
		vmtest_pass "$name" "8 MiB to a 4 KiB/2 ms reader that kept sending, stopped 0.5 s in: all arrived ($out)"
	else
		vmtest_fail "$name" "${out:-no output} | $(grep -m2 -E 'lost|reset' "$MINI_DIR/daemon.log" | tr '\n' ' ')"
	fi
	mini_stop
}

host_tcp_close_cases() {
	tcp_stop_sending_client_case
	tcp_close_case tcp-close-unread-reply
	tcp_close_case tcp-close-unread-reply-userspace "datapath = userspace"
	tcp_close_case tcp-close-drain-timeout-0 "drain-timeout = 0"
}
