# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# Reload on the host kernel: an added, a removed and a changed section, and a broken file,
# through vsockmapctl reload and SIGHUP, while transfers run through a section that stays
# and through one that goes. Sourced by tests/host/run.sh after lib.sh.

RL_DIR=$E2E_DIR/reload

rl_conf() { # SECTION... (each "NAME:TARGET"): the whole file, [daemon] first
	local s
	printf '[daemon]\ncontrol = %s/ctl\nlog-level = info\n' "$RL_DIR"
	for s in "$@"; do
		printf '\n[%s]\nlisten  = UNIX-LISTEN:%s/%s.sock\nconnect = UNIX-CONNECT:%s/%s.sock\n' \
			"${s%%:*}" "$RL_DIR" "${s%%:*}" "$RL_DIR" "${s#*:}"
	done
}

rl_server() { # NAME SOCKET BYTES [ARGS]: a verifying sink on RL_DIR/SOCKET.sock; sets RL_PID
	local name=$1 sock=$2 bytes=$3
	shift 3
	rm -f "$RL_DIR/$name.ready" "$RL_DIR/$sock.sock"
	vsm-peer server "unix:$RL_DIR/$sock.sock" --sink --count 1 --expect "$bytes" --timeout 60 \
		--ready-file "$RL_DIR/$name.ready" "$@" >"$RL_DIR/$name.server" 2>&1 &
	RL_PID=$!
	wait_for_file "$RL_DIR/$name.ready" 10
}

rl_client() { # NAME LISTENER BYTES: in the background; sets RL_PID
	vsm-peer client "unix:$RL_DIR/$2.sock" --send "$3" --timeout 60 >"$RL_DIR/$1.client" 2>&1 &
	RL_PID=$!
}

rl_check() { # NAME DETAIL SERVER_PID CLIENT_PID
	local crc src
	wait "$4"
	crc=$?
	wait "$3"
	src=$?
	if ((crc == 0 && src == 0)); then
		vmtest_pass "$1" "$2 | $(grep -h '^server total' "$RL_DIR/$1.server" 2>/dev/null)"
	else
		vmtest_fail "$1" "client rc=$crc server rc=$src: $(tail -n 1 "$RL_DIR/$1.client") | $(tail -n 1 "$RL_DIR/$1.server")"
	fi
}

rl_ctl() { vsockmapctl -s "$RL_DIR/ctl" "$@"; }

daemon_reload() {
	local out rc keep_srv keep_cli gone_srv gone_cli pid srv
	mkdir -p "$RL_DIR"
	rl_conf keep:srv-keep gone:srv-gone >"$RL_DIR/r.conf"
	vsockmapd -c "$RL_DIR/r.conf" 2>"$RL_DIR/daemon.log" &
	pid=$!
	if ! wait_for_socket "$RL_DIR/ctl" 10; then
		vmtest_fail reload-start "vsockmapd did not come up: $(tail -n 2 "$RL_DIR/daemon.log")"
		return
	fi
	# Slow readers keep both transfers live across the reloads.
	rl_server reload-keep srv-keep 48M --slow 3000
	keep_srv=$RL_PID
	rl_server reload-gone srv-gone 48M --slow 3000
	gone_srv=$RL_PID
	rl_client reload-keep keep 48M
	keep_cli=$RL_PID
	rl_client reload-gone gone 48M
	gone_cli=$RL_PID
	sleep 0.3

	rl_conf keep:srv-keep new:srv-new >"$RL_DIR/r.conf"
	out=$(rl_ctl reload 2>&1)
	rc=$?
	if ((rc == 0)) && grep -q '1 added, 1 removed, 1 unchanged' <<<"$out" &&
		[ ! -e "$RL_DIR/gone.sock" ] && [ -S "$RL_DIR/new.sock" ]; then
		vmtest_pass reload-add-remove "$out; gone.sock removed, new.sock listening"
	else
		vmtest_fail reload-add-remove "exit $rc: $out; $(ls "$RL_DIR" | tr '\n' ' ')"
	fi
	rl_server reload-new srv-new 1M
	srv=$RL_PID
	rl_client reload-new new 1M
	rl_check reload-new "an added section redirects at once" "$srv" "$RL_PID"

	printf '[keep]\nlisten = UNIX-LISTN:%s/keep.sock\n' "$RL_DIR" >"$RL_DIR/r.conf"
	out=$(rl_ctl reload 2>&1)
	rc=$?
	if ((rc == 1)) && grep -q 'r.conf:2: ' <<<"$out" && [ -S "$RL_DIR/keep.sock" ] &&
		[ -S "$RL_DIR/new.sock" ] && grep -q 'still running the previous configuration' "$RL_DIR/daemon.log"; then
		vmtest_pass reload-broken "exit 1: $out; both listeners still there"
	else
		vmtest_fail reload-broken "exit $rc: $out"
	fi

	# A section that cannot be opened fails the reload; the others are applied.
	: >"$RL_DIR/bad.sock"
	rl_conf keep:srv-keep new:srv-new bad:srv-new more:srv-new >"$RL_DIR/r.conf"
	out=$(rl_ctl reload 2>&1)
	rc=$?
	if ((rc == 1)) && grep -q '\[bad\] .*bad.sock: File exists (the other sections are applied)' <<<"$out" &&
		[ -S "$RL_DIR/more.sock" ] && [ -S "$RL_DIR/new.sock" ] && [ -f "$RL_DIR/bad.sock" ]; then
		vmtest_pass reload-partial "exit 1: $out; [more] listening"
	else
		vmtest_fail reload-partial "exit $rc: $out; $(ls "$RL_DIR" | tr '\n' ' ')"
	fi
	rm -f "$RL_DIR/bad.sock"

	# SIGHUP: [keep] now points elsewhere (removed and added again), [new] goes.
	rl_conf keep:srv-new >"$RL_DIR/r.conf"
	kill -HUP "$pid"
	for _ in $(seq 50); do
		grep -q 'reloaded .*1 section added, 3 removed, 0 unchanged' "$RL_DIR/daemon.log" && break
		sleep 0.1
	done
	rl_server reload-changed srv-new 1M
	srv=$RL_PID
	rl_client reload-changed keep 1M
	if grep -q 'reloaded .*1 section added, 3 removed, 0 unchanged' "$RL_DIR/daemon.log" &&
		[ ! -e "$RL_DIR/new.sock" ]; then
		rl_check reload-changed "SIGHUP: [keep] re-pointed (removed and added), [new] and [more] removed" "$srv" "$RL_PID"
	else
		vmtest_fail reload-changed "$(grep 'reload' "$RL_DIR/daemon.log" | tail -n 2)"
	fi

	rl_check reload-keep "48 MiB through [keep] across four reloads, verified" "$keep_srv" "$keep_cli"
	rl_check reload-gone "48 MiB through [gone], removed mid-transfer, verified" "$gone_srv" "$gone_cli"
	kill "$pid"
	wait "$pid"
}

# On the user-space path (datapath=userspace: no BPF object, as on a 6.1 kernel or without
# BPF rights) a reload must not touch the kernel path's state: SIGHUP and vsockmapctl reload
# while 48 MiB flow, the daemon lives on, the bytes all arrive, and the reload's
# max-redirects applies to the next clients (1 refuses a second one, 8 takes it again).
rl_conf_userspace() { # MAX_REDIRECTS
	printf '[daemon]\ncontrol = %s/ctl\nlog-level = info\ndatapath = userspace\nmax-redirects = %s\n' \
		"$RL_DIR" "$1"
	printf '\n[us]\nlisten  = UNIX-LISTEN:%s/us.sock\nconnect = UNIX-CONNECT:%s/srv-us.sock\n' \
		"$RL_DIR" "$RL_DIR"
}

daemon_reload_userspace() {
	local pid srv cli srv2 out refused alive
	RL_DIR=$E2E_DIR/reload-userspace
	mkdir -p "$RL_DIR"
	rl_conf_userspace 8 >"$RL_DIR/r.conf"
	vsockmapd -c "$RL_DIR/r.conf" 2>"$RL_DIR/daemon.log" &
	pid=$!
	if ! wait_for_socket "$RL_DIR/ctl" 10; then
		vmtest_fail reload-userspace-start "vsockmapd did not come up: $(tail -n 2 "$RL_DIR/daemon.log")"
		return
	fi
	# A slow reader keeps the transfer live across both reloads.
	rl_server reload-userspace srv-us 48M --slow 3000
	srv=$RL_PID
	rl_client reload-userspace us 48M
	cli=$RL_PID
	sleep 0.3
	rl_conf_userspace 1 >"$RL_DIR/r.conf"
	kill -HUP "$pid"
	for _ in $(seq 50); do
		grep -q 'reloaded .*0 sections added, 0 removed, 1 unchanged' "$RL_DIR/daemon.log" && break
		sleep 0.1
	done
	# max-redirects = 1 and one transfer live: the next client is refused.
	refused=$(probe_closed "$RL_DIR/us.sock")
	rl_conf_userspace 8 >"$RL_DIR/r.conf"
	out=$(rl_ctl reload 2>&1)
	alive=dead
	kill -0 "$pid" 2>/dev/null && alive=alive
	if [[ $alive == alive && $refused == closed ]] &&
		grep -q 'refused a connection on .*: 1 redirects live, the max-redirects limit' "$RL_DIR/daemon.log" &&
		grep -q '0 added, 0 removed, 1 unchanged' <<<"$out"; then
		vmtest_pass reload-userspace-alive "SIGHUP and vsockmapctl reload mid-transfer: daemon alive; max-redirects=1 from the reload refused a second client; $out"
	else
		wait "$pid" 2>/dev/null
		vmtest_fail reload-userspace-alive "daemon $alive (exit $?), second client at max-redirects=1: '$refused', reload: '$out'; $(tail -n 2 "$RL_DIR/daemon.log" | tr '\n' ' ')"
	fi
	# max-redirects = 8 again: a new connection beside the live transfer.
	rl_server reload-userspace-new srv-us2 1M
	srv2=$RL_PID
	sed -i "s|srv-us.sock|srv-us2.sock|" "$RL_DIR/r.conf"
	out=$(rl_ctl reload 2>&1)
	rl_client reload-userspace-new us 1M
	rl_check reload-userspace-new "a new connection after the reloads, re-pointed to another server, verified" "$srv2" "$RL_PID"
	rl_check reload-userspace "48 MiB in user space across SIGHUP and vsockmapctl reload, verified" "$srv" "$cli"
	kill "$pid" 2>/dev/null
	wait "$pid"
}

# A reload that renames a section, or re-points it, on the same listen address: the new
# section takes the old one's listening socket, so the clients waiting in its backlog are
# served, not reset. max-children=1 and a first client held part-way (--pause-file) keep
# three more in the backlog; then the section is renamed ([b] to [b2]: removed and added).
# Before, the old socket was closed and a new one bound: the three each sent 64 KiB into
# their unaccepted connection, then got ECONNRESET.
rl_conf_backlog() { # NAME
	printf '[daemon]\ncontrol = %s/ctl\nlog-level = info\n\n[%s]\n' "$RL_DIR" "$1"
	printf 'listen  = UNIX-LISTEN:%s/b.sock,max-children=1\nconnect = UNIX-CONNECT:%s/srv-b.sock\n' \
		"$RL_DIR" "$RL_DIR"
}

daemon_reload_backlog() {
	local pid srv i clis=() bad=0 out
	RL_DIR=$E2E_DIR/reload-backlog
	mkdir -p "$RL_DIR"
	rl_conf_backlog b >"$RL_DIR/r.conf"
	vsockmapd -c "$RL_DIR/r.conf" 2>"$RL_DIR/daemon.log" &
	pid=$!
	if ! wait_for_socket "$RL_DIR/ctl" 10; then
		vmtest_fail reload-backlog "vsockmapd did not come up: $(tail -n 2 "$RL_DIR/daemon.log")"
		return
	fi
	rm -f "$RL_DIR/srv.ready"
	vsm-peer server "unix:$RL_DIR/srv-b.sock" --sink --count 4 --expect 1M --timeout 60 \
		--ready-file "$RL_DIR/srv.ready" >"$RL_DIR/srv.log" 2>&1 &
	srv=$!
	wait_for_file "$RL_DIR/srv.ready" 10
	# The first client holds the one child: it stops after 4 KiB while the pause file is there.
	touch "$RL_DIR/pause"
	vsm-peer client "unix:$RL_DIR/b.sock" --send 1M --mark-after 4096 --mark-file "$RL_DIR/mark" \
		--pause-file "$RL_DIR/pause" --timeout 60 >"$RL_DIR/c0.log" 2>&1 &
	clis+=($!)
	wait_for_file "$RL_DIR/mark" 10
	for i in 1 2 3; do
		vsm-peer client "unix:$RL_DIR/b.sock" --send 1M --timeout 60 >"$RL_DIR/c$i.log" 2>&1 &
		clis+=($!)
	done
	sleep 0.3 # they have connected, into the backlog
	rl_conf_backlog b2 >"$RL_DIR/r.conf"
	out=$(rl_ctl reload 2>&1)
	rm -f "$RL_DIR/pause"
	for i in "${clis[@]}"; do
		wait "$i" || bad=$((bad + 1))
	done
	wait "$srv" || bad=$((bad + 1))
	if ((bad == 0)) && grep -q 'takes over .*b.sock from \[b\], with its backlog' "$RL_DIR/daemon.log"; then
		vmtest_pass reload-backlog "[b] renamed [b2] with 3 clients in its backlog: all 4 verified | $out | $(grep -h '^server total' "$RL_DIR/srv.log")"
	else
		vmtest_fail reload-backlog "$bad of 5 peers failed: $out | $(tail -qn 1 "$RL_DIR"/c*.log | tr '\n' ' ')| $(grep -h '^server total' "$RL_DIR/srv.log")"
	fi
	kill "$pid" 2>/dev/null
	wait "$pid"
}
