# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# Daemon lifecycle and bad input on the host kernel: refusals name file:line and leave
# nothing behind, stale socket files are replaced only when nothing listens, SIGTERM cleans
# up, and the timed drain (the fallback when the kernel refuses the queue iterator) loses
# nothing. Sourced by tests/host/run.sh after lib.sh and scenarios.sh.

# expect_refusal NAME PATTERN CONFIG_TEXT: vsockmapd must exit non-zero, say PATTERN on
# stderr and leave no socket file in the directory.
expect_refusal() {
	local name=$1 pattern=$2 dir=$E2E_DIR/refuse-$1 out rc
	mkdir -p "$dir"
	printf '%s\n' "$3" | sed "s|@DIR@|$dir|g" >"$dir/c.conf"
	out=$(timeout 10 vsockmapd -c "$dir/c.conf" 2>&1)
	rc=$?
	if ((rc == 0 || rc == 124)); then
		vmtest_fail "refuse-$name" "vsockmapd exited $rc: $out"
	elif ! grep -qE -- "$pattern" <<<"$out"; then
		vmtest_fail "refuse-$name" "expected /$pattern/, got: $out"
	elif compgen -G "$dir/*.sock" >/dev/null; then
		vmtest_fail "refuse-$name" "left socket files behind: $(ls "$dir")"
	else
		vmtest_pass "refuse-$name" "exit $rc: $(grep -m1 -E -- "$pattern" <<<"$out")"
	fi
}

daemon_bad_input() {
	local ok_target="connect = UNIX-CONNECT:@DIR@/srv.sock"

	expect_refusal unknown-key 'c.conf:3: unknown key "conect" \(did you mean "connect"\?\)' \
		"[a]
listen = UNIX-LISTEN:@DIR@/a.sock
conect = UNIX-CONNECT:@DIR@/srv.sock"
	expect_refusal bad-address 'c.conf:2: listen: ' \
		"[a]
listen = UNIX-LISTN:@DIR@/a.sock
$ok_target"
	expect_refusal duplicate-path 'c.conf:5: .*already used by \[a\]' \
		"[a]
listen = UNIX-LISTEN:@DIR@/a.sock
$ok_target
[b]
listen = UNIX-LISTEN:@DIR@/a.sock
$ok_target"
	expect_refusal path-too-long 'c.conf:2: .*sun_path' \
		"[a]
listen = UNIX-LISTEN:@DIR@/$(printf 'x%.0s' {1..120}).sock
$ok_target"
	expect_refusal cid-range 'c.conf:3: .*CID' \
		"[a]
listen = UNIX-LISTEN:@DIR@/a.sock
connect = VSOCK-CONNECT:4294967296:1234"
	expect_refusal port-range 'c.conf:3: .*port' \
		"[a]
listen = UNIX-LISTEN:@DIR@/a.sock
connect = VSOCK-CONNECT:2:99999999999"
	local out
	out=$(vsockmapd -c "$E2E_DIR/nope.conf" 2>&1)
	if (($? != 0)) && grep -q 'nope.conf: .*No such file' <<<"$out"; then
		vmtest_pass refuse-unreadable "$out"
	else
		vmtest_fail refuse-unreadable "expected the path and the cause: $out"
	fi
	out=$(vsockmapd -c "$E2E_DIR" 2>&1)
	if (($? != 0)) && grep -q "$E2E_DIR: " <<<"$out"; then
		vmtest_pass refuse-directory "$out"
	else
		vmtest_fail refuse-directory "expected the path and the cause: $out"
	fi
	# Run time, not parse time: the second listener cannot be created, so the first one,
	# already bound, must be taken down again.
	expect_refusal half-started 'not-a-dir/b.sock' \
		"[a]
listen = UNIX-LISTEN:@DIR@/a.sock
$ok_target
[b]
listen = UNIX-LISTEN:/proc/version/not-a-dir/b.sock
$ok_target"
}

# A stale socket file (nothing listening) is replaced; a live one makes the daemon refuse.
daemon_stale_socket() {
	local dir=$E2E_DIR/stale pid out
	mkdir -p "$dir"
	printf '[a]\nlisten = UNIX-LISTEN:%s/a.sock\nconnect = UNIX-CONNECT:%s/srv.sock\n[daemon]\ncontrol = %s/ctl.sock\n' \
		"$dir" "$dir" "$dir" >"$dir/c.conf"
	python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$dir/a.sock"
	vsockmapd -c "$dir/c.conf" 2>"$dir/log" &
	pid=$!
	if ! wait_for_socket "$dir/ctl.sock" 10; then
		vmtest_fail stale-socket-replaced "daemon did not start: $(tail -n 2 "$dir/log")"
		kill $pid 2>/dev/null
		return
	fi
	vmtest_pass stale-socket-replaced "a socket file nobody listens on was replaced"

	out=$(timeout 10 vsockmapd -c "$dir/c.conf" 2>&1)
	if (($? != 0)) && grep -q 'another process is listening' <<<"$out"; then
		vmtest_pass live-socket-kept "second daemon refused: $(grep -m1 'another process' <<<"$out")"
	else
		vmtest_fail live-socket-kept "second daemon did not refuse the live socket: $out"
	fi

	kill -TERM $pid
	wait $pid
	local rc=$?
	if ((rc == 0)) && [[ ! -e $dir/a.sock && ! -e $dir/ctl.sock ]]; then
		vmtest_pass sigterm-cleanup "exit 0 on SIGTERM, socket files removed"
	else
		vmtest_fail sigterm-cleanup "exit $rc; left: $(ls "$dir")"
	fi
}

daemon_ctl_without_daemon() {
	local out
	out=$(vsockmapctl -s "$E2E_DIR/none.sock" list 2>&1)
	if (($? == 1)) && grep -q 'cannot reach vsockmapd' <<<"$out"; then
		vmtest_pass ctl-no-daemon "$out"
	else
		vmtest_fail ctl-no-daemon "expected exit 1 and a clear message: $out"
	fi
}

# The fallback for a kernel that allows neither the queue probe nor the iterator: a timed
# drain, forced here with --drain=timed.
daemon_timed_drain() {
	e2e_start_daemon --drain=timed || return
	if grep -q 'drain signal: timed' "$E2E_DIR/daemon.log"; then
		vmtest_pass timed-drain-mode "$(grep -m1 -o 'drain signal: timed.*' "$E2E_DIR/daemon.log")"
	else
		vmtest_fail timed-drain-mode "the daemon did not say it uses the timed drain"
	fi
	start_server timed-drain-stream "$(peer_addr 0)" --sink --count 1 --expect 64M
	client timed-drain-stream --send 64M
	finish timed-drain-stream $? "64 MiB with the timed drain"
	start_server timed-drain-half-close "$(peer_addr 0)" --sink --reply 4M --count 1
	client timed-drain-half-close --send 8M --after shutdown --expect-reply 4M
	finish timed-drain-half-close $? "half-close and reply with the timed drain"
	e2e_stop_daemon
}

# dgram_large PATH: datagrams longer than the daemon's first buffer (256 KiB), sent while the
# target is away, so that the daemon reads each itself once the target is there: on the
# kernel path by the length the verdict recorded, in user space from the socket's queue.
# Before, user space cut each one to 256 KiB (recv() into the buffer) and the kernel path
# read such a one in 256 KiB pieces and never took its length off the queue.
dgram_large() {
	local path=$1 dir srv line crc
	dir=$(mktemp -d "/tmp/vsockmap-dgram-large-$path.XXXXXX")
	vsockmapd -d -d --control "$dir/ctl.sock" --datapath="$path" "UNIX-RECV:$dir/dg.sock" \
		"UNIX-CONNECT:$dir/srv.sock" 2>"$dir/daemon.log" &
	local daemon=$!
	wait_for_socket "$dir/ctl.sock" 10
	vsm-peer client "unix-dgram:$dir/dg.sock" --dgram-count 10 --msg-size 300K >"$dir/client" 2>&1
	crc=$?
	vsm-peer server "unix:$dir/srv.sock" --sink --count 1 --expect 3000K --timeout 60 \
		>"$dir/server" 2>&1 &
	srv=$!
	# The daemon redials with back-off (100 ms doubling) and then sends what waited.
	for ((i = 0; i < 100; i++)); do
		grep -q 'bytes=3072000' "$dir/server" 2>/dev/null && break
		vsockmapctl -s "$dir/ctl.sock" -j list 2>/dev/null | grep -q '"bytes_out":3072000' && break
		sleep 0.1
	done
	term_daemon "$daemon"
	wait "$srv"
	line=$(grep -m1 '^server conn=' "$dir/server")
	if ((crc != 0)); then
		vmtest_fail "dgram-large-$path" "the sender failed: $(tail -n 1 "$dir/client")"
	elif [[ $line != *" bytes=3072000 "*"verify=ok"* ]]; then
		vmtest_fail "dgram-large-$path" "10 datagrams of 300 KiB held for an absent target; server: ${line:-nothing} | $(grep -m2 -iE 'warn|lost' "$dir/daemon.log" | tr '\n' ' ')"
	else
		vmtest_pass "dgram-large-$path" "10 datagrams of 300 KiB, sent while the target was away, all 3000 KiB in order: $line"
	fi
	rm -rf "$dir"
}

host_dgram_large() {
	dgram_large kernel
	dgram_large userspace
}

host_daemon_cases() {
	host_dgram_large
	daemon_bad_input
	daemon_stale_socket
	daemon_ctl_without_daemon
	daemon_timed_drain
	local unix_pair=("UNIX-LISTEN:@D@/in.sock,fork" "unix:@D@/in.sock"
		"UNIX-CONNECT:@D@/srv.sock" "unix:@D@/srv.sock")
	scenario_stop_finishes kernel "${unix_pair[@]}"
	scenario_stop_finishes userspace "${unix_pair[@]}" --datapath=userspace
	scenario_stop_dgram kernel "UNIX-CONNECT:@D@/srv.sock" "unix:@D@/srv.sock"
	scenario_stop_dgram userspace "UNIX-CONNECT:@D@/srv.sock" "unix:@D@/srv.sock" \
		--datapath=userspace
	e2e_run_drain_modes "${unix_pair[@]}" "UNIX-CONNECT:@D@/srv.sock" "unix:@D@/srv.sock"
}
