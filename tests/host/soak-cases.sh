# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# The soak on the host: vsm-soak (tests/tools/vsm-soak.c) through one daemon, unix or TCP,
# many connections at once, each with its own ending (client or server first, half-close
# either way, a client killed, a server reset, a client that shuts down reading, a server
# that half-closes first, a redirect the daemon is asked to close ("close ID"), one that
# waits for the daemon's idle-timeout), its own send buffer (4 KiB to 32 MiB), a client
# that pauses and a server that reads slowly or stalls, while the daemon is sent SIGHUP (a
# reload) every half second or so. Writes are 1 byte to 64 KiB, and a fifth of the
# connections (SOAK_SMALL_SHARE percent) write in pieces of 64 to 512 bytes, the client, the
# server or both. Every byte is checked, and each end against the table in
# docs/behaviour-matrix.md. Each run draws a new seed (SOAK_SEED fixes it); a failure
# prints the seed and a replay line.
#
#   soak-kernel       datapath=kernel, the insert held back 2 ms
#                     (VSOCKMAPD_TEST_INSERT_DELAY_US): most clients leave bytes behind, so
#                     sweeps, the hold socket and catch-ups run all the time
#   soak-auto-swap    the default: a unix target runs in user space (unhash_probe.c)
#   soak-permanent    as soak-kernel with fastpath=permanent: the verdict counts nothing,
#                     so stalls are judged by queue lengths alone (no idle ending: it needs
#                     the counters)
#   soak-*-stop       the same, with a SIGTERM once 250 connections have started: every
#                     one live then must end as the stop promises, and the daemon exit 0
#   *-swap            half the reloads rename the section (vsm-soak --swap-conf): the
#                     section every live connection came through is removed, and one on the
#                     same address added, which takes the listening socket over
#   soak-kernel-tcp-target-swap  unix clients, a TCP server (server-half-first included: a
#                     TCP target stays in the sockhash when its server shuts down)
#   soak-tcp-swap, soak-tcp-stop  both ends TCP (TCP-LISTEN, user space): client-reset
#                     (SO_LINGER 0) in place of client-shut-rd and daemon-close
#   soak-kernel@iterator, soak-kernel@timed  soak-kernel with the other drain signals, each
#                     where the kernel allows it (skipped, saying why, where not)
#   soak-split        the clients and the server ends in two vsm-soak processes (--role),
#                     as the virtio soak runs them; datapath=kernel
#
# Left out of soak-kernel: server-half-first. A unix server's shutdown() takes our target out
# of the sockhash and frees what the kernel holds for it, while the client still sends: that
# is why a unix target runs in user space unless datapath=kernel, which soak-kernel asks for
# (docs/kernel-notes.md, "A unix target whose server shuts down"); soak-auto-swap runs it.

# soak_case NAME DAEMON_LINES MODES COUNT [ENV=VALUE...]: one daemon, one vsm-soak run;
# a NAME that ends in -stop stops the daemon part-way. The peers are unix sockets, but a
# NAME with -tcp-target in it has a TCP server, and one with -tcp- both ends on TCP
# (127.0.0.1, two free ports: free_tcp_ports, tcp-close-cases.sh).
soak_case() {
	local name=$1 lines=$2 modes=$3 count=$4 dir seed rc summary late stop=() drc=0 swap=() s hung=
	local idle=(--idle-ms 3000) idle_line='idle-timeout = 3\n' listen connect cli srv p1 p2
	# fastpath=permanent drops the byte counters the idle timeout needs: no idle ending.
	[[ $lines != *permanent* ]] || { idle=(); idle_line=; }
	shift 4
	dir=$(mktemp -d "/tmp/vsockmap-$name.XXXXXX")
	seed=${SOAK_SEED:-$((RANDOM * 32768 + RANDOM))}
	listen="UNIX-LISTEN:$dir/in.sock,backlog=1024" cli="unix:$dir/in.sock"
	connect="UNIX-CONNECT:$dir/srv.sock" srv="unix:$dir/srv.sock"
	if [[ $name == *-tcp* ]]; then
		read -r p1 p2 < <(free_tcp_ports 2)
		connect="TCP-CONNECT:127.0.0.1:$p2" srv="tcp:127.0.0.1:$p2"
		[[ $name == *-tcp-target* ]] ||
			listen="TCP-LISTEN:$p1,bind=127.0.0.1,backlog=1024" cli="tcp:127.0.0.1:$p1"
	fi
	for s in a b; do
		printf '[daemon]\ncontrol = %s/ctl.sock\nlog-level = notice\n%b%b\n[soak%s]\nlisten = %s\nconnect = %s\n' \
			"$dir" "$idle_line" "$lines" "${s/a/}" "$listen" "$connect" >"$dir/c.conf.$s"
	done
	cp "$dir/c.conf.a" "$dir/c.conf"
	# -swap: half the reloads rename the section, which removes it and adds another
	[[ $name != *-swap* ]] || swap=(--swap-conf "$dir/c.conf")
	# shellcheck disable=SC2086 # SOAK_DRAIN: one --drain=MODE, or nothing
	env "$@" vsockmapd ${SOAK_DRAIN:-} -c "$dir/c.conf" 2>"$dir/daemon.log" &
	local pid=$!
	if ! wait_for_socket "$dir/ctl.sock" 10; then
		vmtest_fail "$name" "vsockmapd did not come up: $(tail -n 2 "$dir/daemon.log")"
		kill "$pid" 2>/dev/null
		rm -rf "$dir"
		return
	fi
	[[ $name != *-stop ]] || stop=(--term-pid "$pid" --term-after 250)
	vsm-soak --connect "$cli" --listen "$srv" --count "$count" \
		--live 50 --max-size 4194304 --seed "$seed" --hup-pid "$pid" --stall 30 \
		--small-share "${SOAK_SMALL_SHARE:-20}" \
		--timeout "${SOAK_TIMEOUT:-240}" --ctl "$dir/ctl.sock" "${idle[@]}" "${stop[@]}" "${swap[@]}" \
		${modes:+--modes "$modes"} >"$dir/soak.out" 2>&1
	rc=$?
	if ((${#stop[@]})); then
		late="none read (stopped)"
		# vsm-soak stopped it (stopped=N) and saw every connection end: the daemon must be on
		# its way out. If vsm-soak ended before its stop (a port taken), stop it here.
		grep -q '^soak .* stopped=[1-9]' "$dir/soak.out" || kill -TERM "$pid" 2>/dev/null
		for ((s = 0; s < 300; s++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -0 "$pid" 2>/dev/null && hung=" (still running 30 s after the stop's connections ended: killed)" &&
			kill -KILL "$pid"
		wait "$pid"
		drc=$?
	else
		late=$(vsockmapctl -s "$dir/ctl.sock" stats --prometheus |
			sed -n 's/^vsockmap_late_inserts_total //p')
		kill "$pid" 2>/dev/null
		wait "$pid"
	fi
	summary=$(grep '^soak ' "$dir/soak.out")
	if ((drc != 0)); then
		vmtest_fail "$name" "seed $seed: the daemon exited $drc after the stop$hung: $(tail -n 2 "$dir/daemon.log" | tr '\n' ' ') | $summary"
	elif [[ $lines == *kernel* && ${late:-0} == 0 ]]; then
		vmtest_fail "$name" "seed $seed: no client left bytes behind at its insert: the sweep and the hold socket were not tested | $summary"
	elif [ $rc -eq 0 ] && [ -n "$summary" ]; then
		vmtest_pass "$name" "seed $seed: $summary late_inserts=${late:-?}"
	else
		vmtest_fail "$name" "seed $seed rc=$rc: ${summary:-no summary} | $(grep -m3 '^conn \|^vsm-soak' "$dir/soak.out" | tr '\n' ' ')| $(grep -m2 -i 'lost\|did not' "$dir/daemon.log" | tr '\n' ' ')"
	fi
	[ -n "${SOAK_KEEP:-}" ] || rm -rf "$dir"
}

# soak_drain_allowed MODE: a daemon started with --drain=MODE runs with that drain signal
# (0); if not, prints why: 1 if the kernel refused it, 2 if the daemon named another or none
# (it exited, or said nothing in 60 s: a slow start is not the kernel's refusal).
soak_drain_allowed() {
	local got
	got=$(e2e_drain_signal "--drain=$1")
	[[ $got == "$1" ]] && return 0
	e2e_drain_refusal && return 1
	echo "the daemon logged drain signal \"$got\": $(tail -n 2 "$E2E_DIR/drain-signal.log" | tr '\n' ' ')"
	return 2
}

# soak-kernel again with each drain signal this kernel allows besides the queue probe (the
# default where it loads): the iterator, and the timed drain, the heuristic for kernels
# that allow neither.
host_soak_drain_cases() {
	local mode why
	for mode in iterator timed; do
		why=$(soak_drain_allowed "$mode")
		case $? in
		1)
			vmtest_skip "soak-kernel@$mode" "this kernel does not allow --drain=$mode: $why"
			continue
			;;
		2)
			vmtest_fail "soak-kernel@$mode" "$why"
			continue
			;;
		esac
		SOAK_DRAIN=--drain=$mode soak_case "soak-kernel@$mode" 'datapath = kernel' \
			-server-half-first "${SOAK_COUNT:-400}" VSOCKMAPD_TEST_INSERT_DELAY_US=2000
	done
}

# soak-split: the two ends in two vsm-soak processes (--role client, --role server), as the
# virtio tier runs them (tests/vm/suite-virtio-soak.sh: clients in the guest, servers on the
# host), here through one daemon on datapath=kernel; each checks its own end. An end alone
# refuses the options that need both (--ctl).
soak_split_case() {
	local dir seed args rc src cs ss pid spid
	dir=$(mktemp -d /tmp/vsockmap-soak-split.XXXXXX)
	seed=${SOAK_SEED:-$((RANDOM * 32768 + RANDOM))}
	printf '[daemon]\ncontrol = %s/ctl.sock\nlog-level = notice\ndatapath = kernel\n\n[soak]\nlisten = UNIX-LISTEN:%s/in.sock,backlog=1024\nconnect = UNIX-CONNECT:%s/srv.sock\n' \
		"$dir" "$dir" "$dir" >"$dir/c.conf"
	# shellcheck disable=SC2054 # the commas belong to --modes
	args=(--count "${SOAK_COUNT:-400}" --live 50 --max-size 4194304 --seed "$seed" --stall 30
		--small-share "${SOAK_SMALL_SHARE:-20}"
		--timeout "${SOAK_TIMEOUT:-240}" --modes -server-half-first,-daemon-close,-idle)
	vsm-soak --role server --listen "unix:$dir/srv.sock" --ready-file "$dir/ready" "${args[@]}" \
		>"$dir/server.out" 2>&1 &
	spid=$!
	vsockmapd -c "$dir/c.conf" 2>"$dir/daemon.log" &
	pid=$!
	if ! wait_for_socket "$dir/ctl.sock" 10 || ! wait_for_file "$dir/ready" 10; then
		vmtest_fail soak-split "the daemon or the server ends did not come up: $(tail -n 2 "$dir/daemon.log" "$dir/server.out")"
		kill "$pid" "$spid" 2>/dev/null
		rm -rf "$dir"
		return
	fi
	vsm-soak --role client --connect "unix:$dir/in.sock" --hup-pid "$pid" "${args[@]}" \
		>"$dir/client.out" 2>&1
	rc=$?
	wait "$spid"
	src=$?
	kill "$pid" 2>/dev/null
	wait "$pid"
	cs=$(grep '^soak ' "$dir/client.out")
	ss=$(grep '^soak ' "$dir/server.out")
	if vsm-soak --role client --connect "unix:$dir/in.sock" --ctl "$dir/ctl.sock" \
		>"$dir/refused.out" 2>&1 || ! grep -q 'neither takes --ctl' "$dir/refused.out"; then
		vmtest_fail soak-split "--role client with --ctl was not refused: $(cat "$dir/refused.out")"
	elif ((rc == 0 && src == 0)) && [[ -n $cs && -n $ss ]]; then
		vmtest_pass soak-split "seed $seed: clients: $cs | servers: $ss"
	else
		vmtest_fail soak-split "seed $seed: clients rc=$rc ${cs:-no summary} | servers rc=$src ${ss:-no summary} | $(grep -h -m3 '^conn \|^vsm-soak' "$dir/client.out" "$dir/server.out" | tr '\n' ' ')"
	fi
	[ -n "${SOAK_KEEP:-}" ] || rm -rf "$dir"
}

host_soak_cases() {
	soak_split_case
	soak_case soak-kernel 'datapath = kernel' -server-half-first \
		"${SOAK_COUNT:-600}" VSOCKMAPD_TEST_INSERT_DELAY_US=2000
	soak_case soak-auto-swap '' '' "${SOAK_COUNT:-400}"
	soak_case soak-permanent 'datapath = kernel\nfastpath = permanent' -server-half-first,-idle \
		"${SOAK_COUNT:-400}" VSOCKMAPD_TEST_INSERT_DELAY_US=2000
	soak_case soak-kernel-stop 'datapath = kernel' -server-half-first 400 \
		VSOCKMAPD_TEST_INSERT_DELAY_US=2000
	soak_case soak-auto-stop '' '' 400
	soak_case soak-kernel-tcp-target-swap 'datapath = kernel' '' "${SOAK_COUNT:-400}" \
		VSOCKMAPD_TEST_INSERT_DELAY_US=2000
	soak_case soak-tcp-swap '' '' "${SOAK_COUNT:-400}"
	soak_case soak-tcp-stop '' '' 400
	host_soak_drain_cases
}
