# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# What the daemon may still do once it has started (docs/security.md, "Privileges"): with the
# kernel path it keeps CAP_NET_ADMIN alone, after the start and after a reload; every BPF
# program was loaded before the drop, including DGRAM_SPARES (4) datagram verdicts, so a
# reload that adds UNIX-RECV sections puts four on the kernel path, and the fifth in user
# space, saying why. Every datagram of all five must arrive. Without a section on the kernel
# path it keeps nothing (host_caps_userspace_only).

CAPS_NET_ADMIN=0000000000001000 # bit 12, in every set but the inheritable and ambient ones

# caps_of PID: "CapEff CapPrm CapBnd CapInh CapAmb"
caps_of() {
	awk '/^Cap(Eff|Prm|Bnd|Inh|Amb):/ {v[$1]=$2}
		END {print v["CapEff:"], v["CapPrm:"], v["CapBnd:"], v["CapInh:"], v["CapAmb:"]}' "/proc/$1/status"
}

# caps_wait_log LOG PATTERN [COUNT]: up to 10 s for COUNT (1) lines of LOG to match PATTERN.
caps_wait_log() {
	local i
	for ((i = 0; i < 100; i++)); do
		(($(grep -c "$2" "$1") >= ${3:-1})) && return 0
		sleep 0.1
	done
	return 1
}

# caps_check NAME PID LOG: once it has dropped them (the listeners open before the drop: its
# log says when), the daemon holds CAP_NET_ADMIN and nothing else.
caps_check() {
	local name=$1 pid=$2 log=$3 eff prm bnd inh amb
	caps_wait_log "$log" 'capabilities kept'
	read -r eff prm bnd inh amb < <(caps_of "$pid")
	if [[ $eff == "$CAPS_NET_ADMIN" && $prm == "$CAPS_NET_ADMIN" && $bnd == "$CAPS_NET_ADMIN" &&
		$inh == 0000000000000000 && $amb == 0000000000000000 ]] &&
		grep -q 'capabilities kept: cap_net_admin$' "$log"; then
		vmtest_pass "$name" "CapEff=CapPrm=CapBnd=$eff (cap_net_admin), CapInh=CapAmb=0"
	else
		vmtest_fail "$name" "CapEff=$eff CapPrm=$prm CapBnd=$bnd CapInh=$inh CapAmb=$amb, want $CAPS_NET_ADMIN; $(grep -o 'capabilities kept.*' "$log")"
	fi
}

# caps_conf DIR N [NAME]: a stream section, and N UNIX-RECV sections NAME1..NAMEN (d1..dN),
# each to its own server srvNAMEi.sock.
caps_conf() {
	local dir=$1 n=$2 p=${3:-d} i
	printf '[daemon]\ncontrol = %s/ctl.sock\ndatapath = kernel\n\n[s]\nlisten = UNIX-LISTEN:%s/s.sock\nconnect = UNIX-CONNECT:%s/srv.sock\n' \
		"$dir" "$dir" "$dir"
	for ((i = 1; i <= n; i++)); do
		printf '\n[%s%d]\nlisten = UNIX-RECV:%s/%s%d.sock\nconnect = UNIX-CONNECT:%s/srv%s%d.sock\n' \
			"$p" "$i" "$dir" "$p" "$i" "$dir" "$p" "$i"
	done
}

host_caps_cases() {
	local dir pid i srv=() bad=0 user kernel
	dir=$(mktemp -d /tmp/vsockmap-caps.XXXXXX)
	caps_conf "$dir" 0 >"$dir/c.conf"
	vsockmapd -c "$dir/c.conf" 2>"$dir/daemon.log" &
	pid=$!
	if ! wait_for_socket "$dir/ctl.sock" 10; then
		vmtest_fail caps-after-start "the daemon did not come up: $(tail -n 2 "$dir/daemon.log")"
		kill "$pid" 2>/dev/null
		rm -rf "$dir"
		return
	fi
	caps_check caps-after-start "$pid" "$dir/daemon.log"

	for i in 1 2 3 4 5; do
		vsm-peer server "unix:$dir/srvd$i.sock" --sink --seed "$i" --expect 40K --count 1 \
			--timeout 30 --ready-file "$dir/srvd$i.ready" >"$dir/srvd$i.out" 2>&1 &
		srv+=($!)
	done
	# Servers up first: each section connects at once (a redial is another test's).
	for i in 1 2 3 4 5; do
		wait_for_file "$dir/srvd$i.ready" 10 || bad=1
	done
	caps_conf "$dir" 5 >"$dir/c.conf"
	kill -HUP "$pid"
	for i in 1 2 3 4 5; do
		wait_for_file "$dir/d$i.sock" 10 || bad=1
	done
	caps_wait_log "$dir/daemon.log" 'reloaded' || bad=1
	caps_check caps-after-reload "$pid" "$dir/daemon.log"
	for i in 1 2 3 4 5; do
		vsm-peer client "unix-dgram:$dir/d$i.sock" --seed "$i" --dgram-count 10 --msg-size 4K \
			>"$dir/cli$i.out" 2>&1 || bad=1
	done
	user=$(grep -c 'no datagram verdict left to load one without CAP_BPF' "$dir/daemon.log")
	kernel=$(grep -c '\[d[1-5]\] receiving datagrams on .*data path: kernel$' "$dir/daemon.log")
	# Removing them gives their verdicts back: a section added then takes one.
	vsm-peer server "unix:$dir/srve1.sock" --sink --seed 6 --expect 40K --count 1 \
		--timeout 30 --ready-file "$dir/srve1.ready" >"$dir/srve1.out" 2>&1 &
	srv+=($!)
	wait_for_file "$dir/srve1.ready" 10 || bad=1
	caps_conf "$dir" 1 e >"$dir/c.conf"
	kill -HUP "$pid"
	wait_for_file "$dir/e1.sock" 10 || bad=1
	caps_wait_log "$dir/daemon.log" 'reloaded' 2 || bad=1
	vsm-peer client "unix-dgram:$dir/e1.sock" --seed 6 --dgram-count 10 --msg-size 4K \
		>"$dir/clie1.out" 2>&1 || bad=1
	grep -q '\[e1\] receiving datagrams on .*data path: kernel$' "$dir/daemon.log" || kernel=0
	# A datagram target's stream ends when the daemon stops; the stop delivers what it holds.
	kill "$pid" 2>/dev/null
	wait "$pid"
	for i in 0 1 2 3 4 5; do
		wait "${srv[i]}"
	done
	for i in d1 d2 d3 d4 d5 e1; do
		grep -q 'bytes=40960 .*verify=ok' "$dir/srv$i.out" || bad=1
	done
	if ((bad == 0 && user == 1 && kernel == 4)); then
		vmtest_pass caps-reload-adds-dgram "5 UNIX-RECV sections added by a reload with cap_net_admin alone, 40 KiB each arrived, verified: 4 took a spare verdict, 1 runs in user space ($(grep -m1 -o 'no datagram verdict left.*' "$dir/daemon.log")); removed, they gave their verdicts back: e1, added next, runs on the kernel path"
	else
		vmtest_fail caps-reload-adds-dgram "bad=$bad, user-space notices=$user, kernel sections=$kernel (want 4, and e1): $(cat "$dir"/srv*.out | tr '\n' ' ') $(tail -n 3 "$dir/daemon.log" | tr '\n' ' ')"
	fi
	[ -n "${CAPS_KEEP:-}" ] || rm -rf "$dir"
	host_caps_userspace_only
}

# No section on the kernel path (datapath=auto, a unix target: user space): CAP_NET_ADMIN
# goes too, the pair still moves bytes, and a reload that adds a section auto would put on
# the kernel path (a UNIX-RECV one) runs it in user space, saying why.
host_caps_userspace_only() {
	local dir pid eff bad=0 srv
	dir=$(mktemp -d /tmp/vsockmap-caps.XXXXXX)
	printf '[daemon]\ncontrol = %s/ctl.sock\n\n[s]\nlisten = UNIX-LISTEN:%s/s.sock\nconnect = UNIX-CONNECT:%s/srv.sock\n' \
		"$dir" "$dir" "$dir" >"$dir/c.conf"
	vsockmapd -c "$dir/c.conf" 2>"$dir/daemon.log" &
	pid=$!
	if ! wait_for_socket "$dir/ctl.sock" 10 || ! caps_wait_log "$dir/daemon.log" 'capabilities kept'; then
		vmtest_fail caps-userspace-only "the daemon did not come up: $(tail -n 2 "$dir/daemon.log")"
		kill "$pid" 2>/dev/null
		rm -rf "$dir"
		return
	fi
	read -r eff _ < <(caps_of "$pid")
	vsm-peer server "unix:$dir/srv.sock" --sink --seed 1 --expect 1M --count 1 --timeout 30 \
		--ready-file "$dir/srv.ready" >"$dir/srv.out" 2>&1 &
	srv=$!
	wait_for_file "$dir/srv.ready" 10 || bad=1
	vsm-peer client "unix:$dir/s.sock" --seed 1 --send 1M >"$dir/cli.out" 2>&1 || bad=1
	wait "$srv" || bad=1
	vsm-peer server "unix:$dir/srvt.sock" --sink --seed 2 --expect 40K --count 1 --timeout 30 \
		--ready-file "$dir/srvt.ready" >"$dir/srvt.out" 2>&1 &
	srv=$!
	wait_for_file "$dir/srvt.ready" 10 || bad=1
	printf '\n[t]\nlisten = UNIX-RECV:%s/t.sock\nconnect = UNIX-CONNECT:%s/srvt.sock\n' \
		"$dir" "$dir" >>"$dir/c.conf"
	kill -HUP "$pid"
	wait_for_socket "$dir/t.sock" 10 || bad=1
	vsm-peer client "unix-dgram:$dir/t.sock" --seed 2 --dgram-count 10 --msg-size 4K \
		>"$dir/cli2.out" 2>&1 || bad=1
	# A datagram target's stream ends when the daemon stops; the stop delivers what it holds.
	kill "$pid" 2>/dev/null
	wait "$pid"
	wait "$srv" || bad=1
	if ((bad == 0)) && [[ $eff == 0000000000000000 ]] &&
		grep -q 'capabilities kept: none' "$dir/daemon.log" &&
		grep -q 'no section uses the kernel path: CAP_NET_ADMIN dropped' "$dir/daemon.log" &&
		grep -q '\[t\] .*user space (no section used the kernel path at start' "$dir/daemon.log"; then
		vmtest_pass caps-userspace-only "CapEff=$eff; 1 MiB through [s] and 40 KiB of datagrams through [t], verified; [t], added by a reload, runs in user space: $(grep -m1 -o 'no section used the kernel path at start[^)]*' "$dir/daemon.log")"
	else
		vmtest_fail caps-userspace-only "bad=$bad CapEff=$eff (want 0): $(grep -E 'capabilities|\[t\]' "$dir/daemon.log" | tr '\n' ' ') $(cat "$dir"/*.out | tr '\n' ' ')"
	fi
	rm -rf "$dir"
}
