# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# Restarts without loss on the host: tests/host/fdstore-systemd.py plays the part of systemd a
# restart needs (the fd store, RestartKillSignal=SIGUSR2, Restart=on-failure), the peers are
# unix sockets. The systemd tier (tests/systemd) runs the same under the real systemd in the
# VM, to vsock; here the cases are quick enough to run on every data path, with the kernel's
# queues and gates in every state (VSOCKMAPD_TEST_INSERT_DELAY_US forces late inserts).
#
#   restart-slow-reader-*      a 16 MiB upload behind a reader taking 64 KiB per 100 ms,
#                              restarted mid-way: the old instance exits at once (no waiting
#                              for the reader), the next goes on, every byte arrives and so
#                              does the reply
#   restart-during-reply-*     the same, restarted while a 16 MiB reply flows to a slow client
#   restart-while-draining     a half-close draining on the kernel path, restarted
#   restart-failed-start-*     a restart into a configuration whose new section cannot listen:
#                              the start fails and gives everything back (Restart=on-failure
#                              tries again, and fails again); the file is fixed, the next start
#                              takes all of it, the upload completes and the listener works
#   restart-no-fd-store-*      SIGUSR2 without systemd: nothing can be handed over, and the
#                              daemon stops as on SIGTERM (everything sent is delivered)
#   restart-renamed-section    a restart into a configuration whose section has a new name but
#                              the same address: the new section takes the stored listener
#   restart-stray-signal       SIGUSR2 that is no restart job: the daemon exits 75 after the
#                              hand-over, and Restart= starts it again (RestartForceExitStatus)
#   soak-restart-*             the soak (vsm-soak) through a restart every second or so:
#                              SOAK_RESTART_COUNT connections (1000), every byte checked

# rs_ctl COMMAND...: a command to the supervisor of RS_DIR; prints its answer.
rs_ctl() {
	"$PYTHON" tests/host/fdstore-systemd.py ctl "$RS_DIR/sd.sock" "$@"
}

# rs_start NAME DATAPATH [DAEMON_LINES...]: a configuration in RS_DIR ([up], UNIX-LISTEN
# in.sock to UNIX-CONNECT srv.sock), and the supervisor serving vsockmapd on it (RS_SD).
# Environment for the daemon: RS_ENV (words). 1, with NAME failed, if it did not come up.
rs_start() {
	local name=$1 dp=$2 line
	shift 2
	RS_DIR=$(mktemp -d "/tmp/vsockmap-$name.XXXXXX")
	{
		printf '[daemon]\ncontrol = %s/ctl.sock\nlog-level = %s\ndatapath = %s\n' \
			"$RS_DIR" "${RS_LOG_LEVEL:-debug}" "$dp"
		for line in "$@"; do printf '%s\n' "$line"; done
		printf '\n[up]\nlisten = UNIX-LISTEN:%s/in.sock,backlog=1024\nconnect = UNIX-CONNECT:%s/srv.sock\n' \
			"$RS_DIR" "$RS_DIR"
	} >"$RS_DIR/c.conf"
	cp "$RS_DIR/c.conf" "$RS_DIR/c.conf.good"
	# shellcheck disable=SC2086 # RS_ENV: VAR=VALUE words
	env ${RS_ENV:-} "$PYTHON" tests/host/fdstore-systemd.py serve --ctl "$RS_DIR/sd.sock" \
		--log "$RS_DIR/daemon.log" -- "$(command -v vsockmapd)" -c "$RS_DIR/c.conf" \
		>"$RS_DIR/sd.out" 2>&1 &
	RS_SD=$!
	RS_PEERS=()
	wait_for_socket "$RS_DIR/sd.sock" 10 && [[ $(rs_ctl wait-running 20) == running ]] &&
		return 0
	vmtest_fail "$name" "the supervisor or the daemon did not come up: $(tail -n 3 "$RS_DIR/daemon.log" "$RS_DIR/sd.out" 2>/dev/null | tr '\n' ' ')"
	rs_stop
	return 1
}

rs_stop() {
	rs_ctl stop >/dev/null 2>&1
	wait "$RS_SD" 2>/dev/null
	# A sanitizer's report from any instance (the sanitize layer looks for these lines).
	grep -E -A12 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$RS_DIR/daemon.log" \
		2>/dev/null | head -n 40
	kill "${RS_PEERS[@]}" 2>/dev/null
	wait "${RS_PEERS[@]}" 2>/dev/null
	RS_PEERS=()
	rm -rf "$RS_DIR"
}

# rs_why: the daemon's lines that say something went wrong, on one line.
rs_why() {
	grep -v libbpf "$RS_DIR/daemon.log" |
		grep -iE 'lost|not handed|could not|closes|failed|BUG|gave|not started' | tail -n 4 |
		tr '\n' ' '
}

# rs_transfer NAME SERVER_OPTS CLIENT_OPTS: a server and a client through RS_DIR's redirect
# (RS_SRV, RS_CLI: their pids; their output in RS_DIR/server and RS_DIR/client).
rs_transfer() {
	# shellcheck disable=SC2086 # the options are words
	vsm-peer server "unix:$RS_DIR/srv.sock" --sink --count 1 $2 --timeout 300 \
		--ready-file "$RS_DIR/srv.ready" >"$RS_DIR/server" 2>&1 &
	RS_SRV=$!
	wait_for_file "$RS_DIR/srv.ready" 10
	# shellcheck disable=SC2086
	vsm-peer client "unix:$RS_DIR/in.sock" $3 --timeout 300 >"$RS_DIR/client" 2>&1 &
	RS_CLI=$!
	RS_PEERS=("$RS_SRV" "$RS_CLI")
}

# rs_verdict NAME RESTART_LINE DETAIL: pass if both peers verified every byte and the
# restart let go at once and took the redirect back; fail naming what did not hold.
rs_verdict() {
	local name=$1 restart=$2 detail=$3 crc src exit_ms
	wait "$RS_CLI"
	crc=$?
	wait "$RS_SRV"
	src=$?
	exit_ms=$(sed -n 's/.*exit_ms=\([0-9]*\).*/\1/p' <<<"$restart")
	if ((crc || src)) || ! grep -q 'errors=0' "$RS_DIR/client" ||
		! grep -q 'verify=ok' "$RS_DIR/server"; then
		vmtest_fail "$name" "client rc=$crc: $(tail -n 1 "$RS_DIR/client"); server rc=$src: $(tail -n 1 "$RS_DIR/server"); restart: $restart | $(rs_why)"
	elif [[ $restart != *started=yes* || -z $exit_ms ]] || ((exit_ms > 1000)); then
		vmtest_fail "$name" "every byte arrived, but the restart was \"$restart\" (its old instance must exit within 1 s) | $(rs_why)"
	elif ! grep -q 'took back 1 of 1 redirect' "$RS_DIR/daemon.log"; then
		vmtest_fail "$name" "every byte arrived, but no redirect was taken back: the restart came too late | $(rs_why)"
	else
		vmtest_pass "$name" "$detail; old instance out ${exit_ms} ms after SIGUSR2; $(grep -m1 -o 'taken back from the previous instance: .*' "$RS_DIR/daemon.log"); $(grep -m1 '^client total' "$RS_DIR/client")"
	fi
}

# An upload behind a slow reader: the relay's pipe and the kernel's backlog are full when the
# restart comes, and the old instance must not wait for the reader (a stop would).
restart_slow_reader() {
	local dp=$1 name=restart-slow-reader-$1 restart
	rs_start "$name" "$dp" || return
	rs_transfer "$name" "--slow 100000 --read-size 65536 --reply 1M" \
		"--send 16M --after shutdown --expect-reply 1M"
	sleep 1.5
	restart=$(rs_ctl restart)
	rs_verdict "$name" "$restart" "16 MiB into a 0.6 MB/s reader, restarted 1.5 s in"
	rs_stop
}

# The reply direction: the client reads 64 KiB per 50 ms, the target has sent 16 MiB.
restart_during_reply() {
	local dp=$1 name=restart-during-reply-$1 restart
	rs_start "$name" "$dp" || return
	rs_transfer "$name" "--reply 16M" \
		"--send 64K --after shutdown --expect-reply 16M --slow 50000 --read-size 65536"
	sleep 1.5
	restart=$(rs_ctl restart)
	rs_verdict "$name" "$restart" "a 16 MiB reply into a 1.3 MB/s client, restarted 1.5 s in"
	rs_stop
}

# The kernel path, the client's half-close draining into a slow reader when the restart comes.
restart_while_draining() {
	local name=restart-while-draining restart i state
	rs_start "$name" kernel || return
	rs_transfer "$name" "--slow 100000 --read-size 32768 --reply 1M" \
		"--send 4M --sndbuf 4M --after shutdown --expect-reply 1M"
	for ((i = 0; i < 100; i++)); do
		state=$(vsockmapctl -s "$RS_DIR/ctl.sock" --no-legend list 2>/dev/null)
		[[ $state == *draining* ]] && break
		sleep 0.1
	done
	restart=$(rs_ctl restart)
	if [[ $state != *draining* ]]; then
		vmtest_fail "$name" "the redirect never drained before the restart: ${state:-no redirect}"
		rs_stop
		return
	fi
	rs_verdict "$name" "$restart" "4 MiB half-closed into a 0.3 MB/s reader, restarted while draining"
	rs_stop
}

# A restart into a configuration that cannot start, then the fix: nothing is lost, and the
# listener the previous instance stored is found again with its socket file.
restart_failed_start() {
	local dp=$1 name=restart-failed-start-$1 restart fixed gave crc src status carriers
	rs_start "$name" "$dp" || return
	rs_transfer "$name" "--slow 100000 --read-size 65536 --reply 1M" \
		"--send 16M --after shutdown --expect-reply 1M"
	sleep 1
	printf '\n[bad]\nlisten = UNIX-LISTEN:/etc/passwd\nconnect = UNIX-CONNECT:%s/srv.sock\n' \
		"$RS_DIR" >>"$RS_DIR/c.conf"
	restart=$(rs_ctl restart)
	sleep 2.5 # Restart=on-failure: more starts, each failing, each giving everything back
	cp "$RS_DIR/c.conf.good" "$RS_DIR/c.conf"
	carriers=$(rs_ctl status | grep -o 'vsm-carrier\.[0-9]*' | wc -l)
	fixed=$(rs_ctl wait-running 20)
	status=$(rs_ctl status)
	gave=$(grep -c 'gave 1 redirect back' "$RS_DIR/daemon.log")
	wait "$RS_CLI"
	crc=$?
	wait "$RS_SRV"
	src=$?
	# The stored listener, taken back: a new client still gets through.
	vsm-peer server "unix:$RS_DIR/srv.sock" --echo --count 1 --timeout 30 \
		--ready-file "$RS_DIR/echo.ready" >"$RS_DIR/echo-server" 2>&1 &
	RS_PEERS=($!)
	wait_for_file "$RS_DIR/echo.ready" 10
	if [[ $restart == *started=yes* || $fixed != running ]]; then
		vmtest_fail "$name" "restart into the bad file: \"$restart\", after the fix: $fixed | $(rs_why)"
	elif ((crc || src)) || ! grep -q 'verify=ok' "$RS_DIR/server"; then
		vmtest_fail "$name" "client rc=$crc: $(tail -n 1 "$RS_DIR/client"); server rc=$src: $(tail -n 1 "$RS_DIR/server") | $(rs_why)"
	elif ((gave < 2)); then
		vmtest_fail "$name" "every byte arrived, but only $gave failed starts gave the redirect back (want 2 or more: the case was not forced) | $status"
	elif ((carriers != 1)); then
		vmtest_fail "$name" "every byte arrived, but after $gave failed starts the fd store held $carriers carriers (want 1: each start drops those it read)"
	elif ! vsm-peer client "unix:$RS_DIR/in.sock" --send 1M --after echo --timeout 30 \
		>"$RS_DIR/echo-client" 2>&1; then
		vmtest_fail "$name" "the upload arrived, but a new client failed through the listener taken back: $(tail -n 1 "$RS_DIR/echo-client") | $(rs_why)"
	else
		vmtest_pass "$name" "restart into a section on /etc/passwd: \"$(grep -m1 -o '\[bad\] /etc/passwd.*' "$RS_DIR/daemon.log")\", $gave failed starts each gave the redirect back (one carrier in the store); fixed: $status; the 16 MiB upload and its reply verified, a new client echoed 1 MiB"
	fi
	rs_stop
}

# SIGUSR2 outside systemd (no NOTIFY_SOCKET): the daemon cannot hand over, and stops as on
# SIGTERM instead: everything the client's writes handed over arrives, then EOF (its later
# writes fail with EPIPE), and it exits 0. The client sends 32 MiB into a 3 MB/s reader, so
# the redirect is live at the signal.
restart_no_fd_store() {
	local dp=$1 name=restart-no-fd-store-$1 rc t0 t1
	mini_config "$name" s "drain-timeout = 1" "log-level = info" "datapath = $dp"
	vsm-peer server "unix:$MINI_DIR/srv.sock" --sink --count 1 --slow 20000 --read-size 65536 \
		--ready-file "$MINI_DIR/srv.ready" --timeout 120 >"$MINI_DIR/server" 2>&1 &
	MINI_SRV=$!
	wait_for_file "$MINI_DIR/srv.ready" 10
	mini_daemon
	vsm-peer client "unix:$MINI_DIR/s.sock" --send 32M --timeout 120 >"$MINI_DIR/client" 2>&1 &
	sleep 1
	t0=$(now_ms)
	kill -USR2 "$MINI_PID"
	wait "$MINI_PID"
	rc=$?
	t1=$(now_ms)
	wait $!
	wait "$MINI_SRV"
	midstream_results "$MINI_DIR"
	if ((rc != 0)) || ! grep -q 'no fd store to hand over to' "$MINI_DIR/daemon.log"; then
		vmtest_fail "$name" "daemon exit $rc: $(grep -v libbpf "$MINI_DIR/daemon.log" | tail -n 3 | tr '\n' ' ')"
	elif [[ -z $MS_SENT || $MS_SENT != "$MS_GOT" ]] ||
		! grep -q 'verify=ok.*eof=clean' <<<"$MS_LINE"; then
		vmtest_fail "$name" "the client handed over ${MS_SENT:-?} bytes; server: ${MS_LINE:-nothing} | $(grep -m2 -iE 'lost|instead' "$MINI_DIR/daemon.log" | tr '\n' ' ')"
	else
		vmtest_pass "$name" "\"$(grep -m1 -o 'received SIGUSR2.*' "$MINI_DIR/daemon.log")\"; exit 0 after $((t1 - t0)) ms, all $MS_GOT bytes the client handed over verified, clean EOF"
	fi
	MINI_PID=
	mini_stop
}

# The soak through restarts: each connection must end as if nothing had happened.
soak_restart() {
	local dp=$1 name=soak-restart-$1 seed rc summary restarts
	seed=${SOAK_SEED:-$((RANDOM * 32768 + RANDOM))}
	RS_LOG_LEVEL=info rs_start "$name" "$dp" "idle-timeout = 3" || return
	vsm-soak --connect "unix:$RS_DIR/in.sock" --listen "unix:$RS_DIR/srv.sock" \
		--count "${SOAK_RESTART_COUNT:-1000}" --live 50 --max-size 8388608 --seed "$seed" \
		--stall 30 --timeout "${SOAK_TIMEOUT:-300}" --ctl "$RS_DIR/ctl.sock" --idle-ms 3000 \
		--small-share "${SOAK_SMALL_SHARE:-20}" \
		${RS_SOAK_MODES:+--modes "$RS_SOAK_MODES"} \
		--cmd "$PYTHON tests/host/fdstore-systemd.py ctl $RS_DIR/sd.sock restart >>$RS_DIR/restarts" \
		--cmd-ms 1000 >"$RS_DIR/soak.out" 2>&1
	rc=$?
	summary=$(grep '^soak ' "$RS_DIR/soak.out")
	restarts=$(grep -c 'started=yes' "$RS_DIR/restarts" 2>/dev/null)
	if ((rc == 0)) && [[ $summary == *" cmds="[1-9]* ]] && ((restarts >= 5)) &&
		! grep -q 'started=no' "$RS_DIR/restarts"; then
		vmtest_pass "$name" "seed $seed: $restarts restarts ($(sed -n 's/.*exit_ms=\([0-9]*\).*/\1/p' "$RS_DIR/restarts" | sort -n | tail -n 1) ms at most from SIGUSR2 to exit): $summary"
	else
		vmtest_fail "$name" "seed $seed rc=$rc, $restarts restarts ($(grep -c 'started=no' "$RS_DIR/restarts" 2>/dev/null) failed): ${summary:-no summary} | $(grep -m4 '^conn ' "$RS_DIR/soak.out" | tr '\n' ' ') | $(rs_why)"
	fi
	rs_stop
}

# A section renamed, its address kept: the listener is found by its address, not its name.
# The pair of the old section runs to its end under its own rules; a new client goes through.
restart_renamed_section() {
	local name=restart-renamed-section restart
	rs_start "$name" auto || return
	rs_transfer "$name" "--slow 100000 --read-size 65536 --reply 1M" \
		"--send 8M --after shutdown --expect-reply 1M"
	sleep 1
	sed -i 's/^\[up\]$/[renamed]/' "$RS_DIR/c.conf"
	restart=$(rs_ctl restart)
	if [[ $restart != *started=yes* ]]; then
		vmtest_fail "$name" "the restart into the renamed section: \"$restart\" | $(rs_why)"
	elif ! grep -q '\[renamed\] listening on .*(taken back from the previous instance)' \
		"$RS_DIR/daemon.log"; then
		vmtest_fail "$name" "[renamed] did not take the stored listener: $(grep -m1 '\[renamed\]' "$RS_DIR/daemon.log")"
	else
		rs_verdict "$name" "$restart" "8 MiB through [up], restarted into [renamed] on the same path"
		vsm-peer server "unix:$RS_DIR/srv.sock" --echo --count 1 --timeout 60 \
			--ready-file "$RS_DIR/echo.ready" >"$RS_DIR/echo-server" 2>&1 &
		RS_PEERS=($!)
		wait_for_file "$RS_DIR/echo.ready" 10
		if ! vsm-peer client "unix:$RS_DIR/in.sock" --send 64K --after echo --timeout 30 \
			>"$RS_DIR/echo-client" 2>&1; then
			vmtest_fail "$name-client" "a new client through [renamed]: $(tail -n 1 "$RS_DIR/echo-client")"
		fi
	fi
	rs_stop
}

# SIGUSR2 that is no restart job: the daemon hands over and exits 75, and the unit starts it
# again (RestartForceExitStatus=75), which takes everything back; an exit 0 would have left
# the unit inactive, and systemd would have dropped its fd store with every connection.
restart_stray_signal() {
	local name=restart-stray-signal pid status running
	rs_start "$name" auto || return
	rs_transfer "$name" "--slow 100000 --read-size 65536 --reply 1M" \
		"--send 8M --after shutdown --expect-reply 1M"
	sleep 1
	pid=$(rs_ctl status | sed -n 's/^pid=\([0-9]*\) .*/\1/p')
	kill -USR2 "$pid"
	sleep 0.5
	running=$(rs_ctl wait-running 20)
	status=$(rs_ctl status)
	if [[ $running != running || $status == "pid=$pid "* ]]; then
		vmtest_fail "$name" "after SIGUSR2 to $pid: $running, $status | $(rs_why)"
		rs_stop
		return
	fi
	rs_verdict "$name" "restart exit_ms=0 started=yes" "SIGUSR2 to the daemon by hand: exit 75, started again by Restart= ($status)"
	rs_stop
}

host_restart_cases() {
	restart_slow_reader userspace
	restart_slow_reader kernel
	restart_during_reply userspace
	restart_during_reply kernel
	restart_while_draining
	restart_failed_start auto
	restart_failed_start kernel
	restart_no_fd_store userspace
	restart_no_fd_store kernel
	restart_renamed_section
	restart_stray_signal
	soak_restart auto
	# Most inserts late: sweeps, hold sockets and catch-ups under way at the restarts.
	RS_ENV=VSOCKMAPD_TEST_INSERT_DELAY_US=2000 RS_SOAK_MODES=-server-half-first \
		soak_restart kernel
}
