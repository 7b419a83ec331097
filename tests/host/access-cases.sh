# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# Who may connect, running out of file descriptors, and a daemon killed with SIGKILL: allow-uid/allow-gid checked with
# SO_PEERCRED at accept (a refused client sees its connection closed, the refusal is logged
# with its pid and uid and counted), and a daemon at its RLIMIT_NOFILE refuses new clients
# at once, without spinning, and serves again when descriptors free up. Sourced by
# tests/host/run.sh after lib.sh, scenarios.sh and daemon-cases.sh (expect_refusal).

# The system's interpreter: one in root's home (pyenv) is out of reach of the setpriv users.
PYTHON=/usr/bin/python3
[[ -x $PYTHON ]] || PYTHON=python3

# probe_closed PATH [AS...]: connect (as the given setpriv identity), send a byte and wait
# up to 3 s for an answer. Prints "closed" when the daemon closed the connection, "open"
# when it was still open after 3 s, or "echo" when the byte came back.
probe_closed() {
	local path=$1
	shift
	"$@" "$PYTHON" - "$path" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(3)
try:
    s.connect(sys.argv[1])
    s.sendall(b"x")
    print("echo" if s.recv(1) == b"x" else "closed")
except socket.timeout:
    print("open")
except (ConnectionResetError, BrokenPipeError):
    print("closed")
PY
}

# listener_field NAME FIELD: one member of `vsockmapctl --json listeners` for section NAME.
listener_field() {
	vsockmapctl -s "$ACCESS_DIR/ctl.sock" --json listeners |
		"$PYTHON" -c 'import json,sys; l=[x for x in json.load(sys.stdin) if x["name"]==sys.argv[1]][0]; print(json.dumps(l[sys.argv[2]]))' "$1" "$2"
}

# One daemon of its own per case below. mini_config NAME SECTION [DAEMON_LINE]...: a scratch
# directory (MINI_DIR) with a config of one [SECTION] from SECTION.sock to srv.sock. Without
# a datapath line it asks for the kernel, which a unix target does not get by default.
mini_config() {
	local line datapath="datapath = kernel"
	MINI_DIR=$(mktemp -d "/tmp/vsockmap-$1.XXXXXX")
	{
		printf '[daemon]\ncontrol = %s/ctl.sock\n' "$MINI_DIR"
		for line in "${@:3}"; do
			printf '%s\n' "$line"
			[[ $line != datapath* ]] || datapath=
		done
		[[ -z $datapath ]] || printf '%s\n' "$datapath"
		printf '[%s]\nlisten = UNIX-LISTEN:%s/%s.sock\nconnect = UNIX-CONNECT:%s/srv.sock\n' \
			"$2" "$MINI_DIR" "$2" "$MINI_DIR"
	} >"$MINI_DIR/c.conf"
}

# mini_echo: an echo server on MINI_DIR/srv.sock (MINI_SRV).
mini_echo() {
	vsm-peer server "unix:$MINI_DIR/srv.sock" --echo --ready-file "$MINI_DIR/srv.ready" \
		>"$MINI_DIR/srv.log" 2>&1 &
	MINI_SRV=$!
	wait_for_file "$MINI_DIR/srv.ready" 10
}

# mini_daemon [LOG]: vsockmapd on MINI_DIR/c.conf (MINI_PID), logging to LOG (daemon.log).
mini_daemon() {
	vsockmapd -c "$MINI_DIR/c.conf" 2>"$MINI_DIR/${1:-daemon.log}" &
	MINI_PID=$!
	wait_for_socket "$MINI_DIR/ctl.sock" 10
}

# mini_stop: the daemon and the server go, and the directory.
mini_stop() {
	kill -TERM "$MINI_PID" "$MINI_SRV" 2>/dev/null
	wait "$MINI_PID" "$MINI_SRV" 2>/dev/null
	rm -rf "$MINI_DIR"
}

access_bad_config() {
	expect_refusal allow-on-recv 'c.conf:3: allow-uid and allow-gid need a UNIX-LISTEN' \
		"[a]
listen = UNIX-RECV:@DIR@/a.sock
allow-uid = 0
connect = UNIX-CONNECT:@DIR@/srv.sock"
	expect_refusal allow-unknown-user 'c.conf:4: allow-uid: unknown user "no-such-user-x"' \
		"[a]
listen = UNIX-LISTEN:@DIR@/a.sock
connect = UNIX-CONNECT:@DIR@/srv.sock
allow-uid = 0, no-such-user-x"
	expect_refusal allow-empty-list 'c.conf:4: allow-gid has no group in it' \
		"[a]
listen = UNIX-LISTEN:@DIR@/a.sock
connect = UNIX-CONNECT:@DIR@/srv.sock
allow-gid = , ,"
}

# access_capabilities PID: once set up, the daemon holds no capability: every section has a
# unix target, which runs in user space by default, so it needs no CAP_NET_ADMIN
# (tests/host/caps-cases.sh has the kernel path's).
access_capabilities() {
	local eff prm bnd inh amb
	caps_wait_log "$ACCESS_DIR/daemon.log" 'capabilities kept'
	read -r eff prm bnd inh amb < <(caps_of "$1")
	if [[ "$eff$prm$bnd$inh$amb" =~ ^0+$ ]] &&
		grep -q 'capabilities kept: none$' "$ACCESS_DIR/daemon.log"; then
		vmtest_pass caps-dropped "user-space sections only: CapEff=CapPrm=CapBnd=CapInh=CapAmb=0"
	else
		vmtest_fail caps-dropped "CapEff=$eff CapPrm=$prm CapBnd=$bnd CapInh=$inh CapAmb=$amb, want all 0; $(grep -o 'capabilities kept.*' "$ACCESS_DIR/daemon.log")"
	fi
}

access_allow_lists() {
	local pid srv got nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)

	# Reachable by nobody: the scratch directory is root-only.
	ACCESS_DIR=$(mktemp -d /tmp/vsockmap-access.XXXXXX)
	chmod 0755 "$ACCESS_DIR"
	cat >"$ACCESS_DIR/c.conf" <<CONF
[daemon]
control = $ACCESS_DIR/ctl.sock

[root-only]
listen = UNIX-LISTEN:$ACCESS_DIR/root.sock,mode=0666
connect = UNIX-CONNECT:$ACCESS_DIR/srv.sock
allow-uid = root

[by-group]
listen = UNIX-LISTEN:$ACCESS_DIR/group.sock,mode=0666
connect = UNIX-CONNECT:$ACCESS_DIR/srv.sock
allow-gid = 65534

[open]
listen = UNIX-LISTEN:$ACCESS_DIR/open.sock,mode=0666
connect = UNIX-CONNECT:$ACCESS_DIR/srv.sock

[limited]
listen = UNIX-LISTEN:$ACCESS_DIR/limited.sock,max-children=2
connect = UNIX-CONNECT:$ACCESS_DIR/srv.sock
CONF
	vsm-peer server "unix:$ACCESS_DIR/srv.sock" --echo --ready-file "$ACCESS_DIR/srv.ready" \
		>"$ACCESS_DIR/srv.log" 2>&1 &
	srv=$!
	wait_for_file "$ACCESS_DIR/srv.ready" 10
	chmod 0666 "$ACCESS_DIR/srv.sock"
	vsockmapd -c "$ACCESS_DIR/c.conf" 2>"$ACCESS_DIR/daemon.log" &
	pid=$!
	if ! wait_for_socket "$ACCESS_DIR/ctl.sock" 10; then
		vmtest_fail allow-start "daemon did not start: $(tail -n 2 "$ACCESS_DIR/daemon.log")"
		kill $pid $srv 2>/dev/null
		return
	fi

	access_capabilities "$pid"
	got=$(probe_closed "$ACCESS_DIR/root.sock")
	[[ $got == echo ]] && vmtest_pass allow-uid-admits "root's byte came back" ||
		vmtest_fail allow-uid-admits "root through allow-uid=root: $got"
	got=$(probe_closed "$ACCESS_DIR/root.sock" "${nobody[@]}")
	if [[ $got == closed ]] && grep -q 'refused pid [0-9]* (uid 65534, gid 65534) on .*root.sock: not in allow-uid or allow-gid' "$ACCESS_DIR/daemon.log" &&
		[[ $(listener_field root-only refused) == 1 && $(listener_field root-only allow_uid) == "[0]" ]]; then
		vmtest_pass allow-uid-refuses "nobody closed at once; $(grep -m1 -o 'refused pid.*' "$ACCESS_DIR/daemon.log")"
	else
		vmtest_fail allow-uid-refuses "nobody got '$got', refused=$(listener_field root-only refused); log: $(tail -n 2 "$ACCESS_DIR/daemon.log")"
	fi
	got=$(probe_closed "$ACCESS_DIR/group.sock" "${nobody[@]}")
	[[ $got == echo ]] && vmtest_pass allow-gid-admits "nobody's group 65534 is listed" ||
		vmtest_fail allow-gid-admits "nobody through allow-gid=65534: $got"
	got=$(probe_closed "$ACCESS_DIR/group.sock" setpriv --reuid=65534 --regid=0 --groups=65534)
	[[ $got == echo ]] && vmtest_pass allow-gid-supplementary "admitted by a supplementary group" ||
		vmtest_fail allow-gid-supplementary "supplementary group 65534: $got"
	got=$(probe_closed "$ACCESS_DIR/group.sock")
	[[ $got == closed ]] && vmtest_pass allow-gid-root-not-special "root without the group is refused" ||
		vmtest_fail allow-gid-root-not-special "root through allow-gid=65534: $got"
	got=$(probe_closed "$ACCESS_DIR/open.sock" "${nobody[@]}")
	[[ $got == echo ]] && vmtest_pass allow-none-open "no list: the file mode decides" ||
		vmtest_fail allow-none-open "nobody on a 0666 socket without lists: $got"

	# A reload changes the list in place: the socket file is not re-made.
	local ino_before ino_after
	ino_before=$(stat -c %i "$ACCESS_DIR/root.sock")
	sed -i 's/^allow-uid = root$/allow-uid = root nobody/' "$ACCESS_DIR/c.conf"
	vsockmapctl -s "$ACCESS_DIR/ctl.sock" reload >/dev/null 2>&1
	ino_after=$(stat -c %i "$ACCESS_DIR/root.sock")
	got=$(probe_closed "$ACCESS_DIR/root.sock" "${nobody[@]}")
	if [[ $got == echo && $ino_before == "$ino_after" ]] && grep -q 'reload: \[root-only\] allow-uid/allow-gid updated' "$ACCESS_DIR/daemon.log"; then
		vmtest_pass allow-reload "nobody admitted after reload, same socket (inode $ino_after)"
	else
		vmtest_fail allow-reload "after adding nobody: $got, inode $ino_before -> $ino_after"
	fi
	ACCESS_PID=$pid ACCESS_SRV=$srv
}

# max-children=2: a third client waits in the backlog until one of the first two closes.
access_max_children() {
	local out
	out=$("$PYTHON" - "$ACCESS_DIR/limited.sock" <<'PY'
import socket, sys, time
def conn():
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    return s
held = [conn(), conn()]
for s in held:
    s.sendall(b"a")
    assert s.recv(1) == b"a"
third = conn()          # queued in the backlog: connect() succeeds
third.sendall(b"b")
third.settimeout(1.5)
try:
    third.recv(1)
    print("served-early")
except socket.timeout:
    print("waiting")
t0 = time.monotonic()
held[0].close()
third.settimeout(5)
print("served" if third.recv(1) == b"b" else "closed", round((time.monotonic() - t0) * 1000))
PY
)
	if [[ $out == $'waiting
served '* && $(listener_field limited limit) == 2 ]] &&
		grep -q '\[limited\] 2 connections, the max-children limit: new clients wait' "$ACCESS_DIR/daemon.log"; then
		vmtest_pass max-children-waits "the third client waited, then was served $(tail -n1 <<<"$out" | cut -d' ' -f2) ms after a slot freed"
	else
		vmtest_fail max-children-waits "$(tr '\n' ' ' <<<"$out") limit=$(listener_field limited limit)"
	fi
}

# Run out of descriptors on purpose: RLIMIT_NOFILE set just above what the daemon holds.
access_fd_exhaustion() {
	local pid=$ACCESS_PID limit holder i got cpu0 cpu1 n_lines
	# Earlier cases' redirects must be gone, or their descriptors count in the base.
	for i in $(seq 50); do
		[[ $(vsockmapctl -s "$ACCESS_DIR/ctl.sock" --json list | grep -c '"id":') == 0 ]] && break
		sleep 0.1
	done
	sleep 0.5 # the daemon closes the control connection of the loop above
	# RLIMIT_NOFILE bounds descriptor numbers, not their count: a limit with exactly four
	# free numbers below it, wherever the holes in the daemon's table are.
	limit=$(ls "/proc/$pid/fd" | "$PYTHON" -c 'import sys
used = {int(x) for x in sys.stdin.read().split()}
limit = free = 0
while free < 4:
    free += limit not in used
    limit += 1
print(limit)')
	prlimit --pid "$pid" --nofile="$limit:$limit"
	# Each redirect takes two descriptors (client and target): two fit, the third does not.
	# Two live redirects through the echo server, held open for 6 s.
	"$PYTHON" - "$ACCESS_DIR/open.sock" >"$ACCESS_DIR/hold.log" 2>&1 <<'PY' &
import socket, sys, time
held = []
for _ in range(2):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.sendall(b"h")
    assert s.recv(1) == b"h"
    held.append(s)
time.sleep(6)
PY
	holder=$!
	sleep 1
	cpu0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
	got=$(probe_closed "$ACCESS_DIR/open.sock")
	for i in 1 2 3 4 5; do probe_closed "$ACCESS_DIR/open.sock" >/dev/null; done
	sleep 1
	cpu1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
	n_lines=$(grep -c 'no file descriptor left' "$ACCESS_DIR/daemon.log")
	if [[ $got == closed ]] && ((n_lines >= 1 && cpu1 - cpu0 < 50)); then
		vmtest_pass nofile-refuses "a client past the limit was closed at once; $n_lines log line(s); daemon used $((cpu1 - cpu0)) ticks in 2 s"
	else
		vmtest_fail nofile-refuses "probe got '$got', $n_lines log lines, $((cpu1 - cpu0)) ticks in 2 s; log: $(tail -n 2 "$ACCESS_DIR/daemon.log")"
	fi
	wait "$holder"
	# The holders' redirects close after their drain: give the descriptors a moment.
	for i in $(seq 20); do
		got=$(probe_closed "$ACCESS_DIR/open.sock")
		[[ $got == echo ]] && break
		sleep 0.25
	done
	[[ $got == echo ]] && vmtest_pass nofile-resumes "served again once descriptors were free (try $i)" ||
		vmtest_fail nofile-resumes "after the holders closed: $got"
	kill -TERM "$pid" "$ACCESS_SRV" 2>/dev/null
	wait "$pid" "$ACCESS_SRV" 2>/dev/null
	rm -rf "$ACCESS_DIR"
}

# max-redirects=2: the daemon's slots (and so its sockhash entries) are bounded; a third
# client is refused before any target is dialled, and the first two are unaffected.
access_max_redirects() {
	local dir out again
	mini_config cap c "max-redirects = 2"
	dir=$MINI_DIR
	mini_echo
	mini_daemon
	out=$("$PYTHON" - "$dir/c.sock" <<'PY'
import socket, sys
def conn():
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.settimeout(3)
    return s
def echo(s, b):
    try:
        s.sendall(b)
        return "echo" if s.recv(1) == b else "closed"
    except (ConnectionResetError, BrokenPipeError):
        return "closed"
a, b = conn(), conn()
print(echo(a, b"a"), echo(b, b"b"), echo(conn(), b"c"), echo(a, b"A"), echo(b, b"B"))
a.close()
PY
)
	sleep 0.5
	again=$(probe_closed "$dir/c.sock")
	if [[ $out == "echo echo closed echo echo" && $again == echo ]] &&
		grep -q 'refused a connection on .*: 2 redirects live, the max-redirects limit' "$dir/daemon.log" &&
		kill -0 "$MINI_PID"; then
		vmtest_pass max-redirects "third client refused at max-redirects=2, the first two kept working, a freed slot served again"
	else
		vmtest_fail max-redirects "got '$out', then '$again'; $(tail -n 2 "$dir/daemon.log" | tr '\n' ' ')"
	fi
	mini_stop
}

# A target that accepts and then stalls (never reads, never writes): with idle-timeout=1
# the client's connection ends within 1.25 s of its last byte instead of hanging.
access_stalled_target() {
	local dir out
	mini_config stall s "idle-timeout = 1" "log-level = notice"
	dir=$MINI_DIR
	"$PYTHON" - "$dir/srv.sock" <<'PY' &
import socket, sys, time
l = socket.socket(socket.AF_UNIX)
l.bind(sys.argv[1])
l.listen()
held = [l.accept()[0]]   # accept, then nothing
time.sleep(30)
PY
	MINI_SRV=$!
	wait_for_socket "$dir/srv.sock" 10
	mini_daemon
	out=$("$PYTHON" - "$dir/s.sock" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"hello")
t0 = time.monotonic()
s.settimeout(10)
try:
    r = "eof" if s.recv(1) == b"" else "data"
except socket.timeout:
    r = "timeout"
except ConnectionResetError:
    r = "reset"
print(r, round((time.monotonic() - t0) * 1000))
PY
)
	if [[ $out =~ ^(eof|reset)\ ([0-9]+)$ ]] && ((BASH_REMATCH[2] >= 900 && BASH_REMATCH[2] <= 2500)) &&
		grep -q 'no byte either way for [0-9]* ms (idle-timeout)' "$dir/daemon.log"; then
		vmtest_pass idle-stalled-target "a target that accepted and stalled: the client saw ${BASH_REMATCH[1]} after ${BASH_REMATCH[2]} ms (idle-timeout=1)"
	else
		vmtest_fail idle-stalled-target "client: $out; $(tail -n 2 "$dir/daemon.log" | tr '\n' ' ')"
	fi
	mini_stop
}

host_access_cases() {
	access_bad_config
	access_allow_lists
	[[ -n ${ACCESS_PID:-} ]] && access_max_children
	[[ -n ${ACCESS_PID:-} ]] && access_fd_exhaustion
	access_sigkill
	access_max_redirects
	access_stalled_target
	access_dgram_file
}

# A UNIX-RECV socket is bound as PATH.vsm-new and renamed to PATH once it is in its
# sockhash, with its mode and owner (kernel-notes.md): nothing is left under the private
# name, even when an earlier run left a file there, and both names are gone at stop.
access_dgram_file() {
	local dir got
	MINI_DIR=$(mktemp -d /tmp/vsockmap-dgram-file.XXXXXX)
	dir=$MINI_DIR
	printf '[daemon]\ncontrol = %s/ctl.sock\n[d]\nlisten = UNIX-RECV:%s/d.sock,mode=0620,user=65534\nconnect = UNIX-CONNECT:%s/srv.sock\n' \
		"$dir" "$dir" "$dir" >"$dir/c.conf"
	echo stale >"$dir/d.sock.vsm-new"
	vsm-peer server "unix:$dir/srv.sock" --sink --count 1 --expect 3 --timeout 10 \
		--ready-file "$dir/srv.ready" >"$dir/srv.log" 2>&1 &
	MINI_SRV=$!
	wait_for_file "$dir/srv.ready" 10
	mini_daemon
	wait_for_socket "$dir/d.sock" 10
	got="$(stat -c '%F %a %u' "$dir/d.sock" 2>&1); private name: $(ls "$dir/d.sock.vsm-new" 2>&1 | grep -c 'No such')"
	printf abc | socat -u - "UNIX-SENDTO:$dir/d.sock"
	sleep 0.5
	kill -TERM "$MINI_PID"
	wait "$MINI_PID"
	wait "$MINI_SRV"
	got="$got; server: $(grep -o 'bytes=[0-9]*' "$dir/srv.log" | head -n1); after stop: $(ls "$dir" | grep -c '^d\.sock') files"
	if [[ $got == "socket 620 65534; private name: 1; server: bytes=3; after stop: 0 files" ]]; then
		vmtest_pass dgram-socket-file "$got"
	else
		vmtest_fail dgram-socket-file "$got (want socket 620 65534, no private name, 3 bytes, none left)"
	fi
	rm -rf "$dir"
}

# SIGKILL: the clients of a killed daemon see their connections end at once, and a new
# daemon starts over the stale socket files without help.
access_sigkill() {
	local dir i
	mini_config kill k
	dir=$MINI_DIR
	mini_echo
	mini_daemon
	# Three live redirects; each prints how its connection ended after the kill.
	"$PYTHON" - "$dir/k.sock" "$dir/killed" >"$dir/clients.log" 2>&1 <<'PY' &
import os, socket, sys, time
held = []
for _ in range(3):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.sendall(b"k")
    assert s.recv(1) == b"k"
    held.append(s)
open(sys.argv[2] + ".ready", "w").close()
while not os.path.exists(sys.argv[2]):
    time.sleep(0.01)
t0 = time.monotonic()
for s in held:
    s.settimeout(5)
    try:
        r = "eof" if s.recv(1) == b"" else "data"
    except socket.timeout:
        r = "timeout"
    except ConnectionResetError:
        r = "reset"
    print(r, round((time.monotonic() - t0) * 1000))
PY
	local clients=$!
	wait_for_file "$dir/killed.ready" 10
	kill -KILL "$MINI_PID"
	wait "$MINI_PID" 2>/dev/null
	touch "$dir/killed"
	wait "$clients"
	if [[ $(grep -cE '^(eof|reset) [0-9]+$' "$dir/clients.log") == 3 ]] &&
		awk '{ if ($2 > 1000) exit 1 }' "$dir/clients.log"; then
		vmtest_pass sigkill-clients-end "all 3 clients saw the end: $(tr '\n' ' ' <"$dir/clients.log")(ms)"
	else
		vmtest_fail sigkill-clients-end "$(tr '\n' ' ' <"$dir/clients.log")"
	fi
	mini_daemon daemon2.log
	# The killed daemon's socket files are still there: wait for the new one to answer.
	for i in $(seq 100); do
		vsockmapctl -s "$dir/ctl.sock" status >/dev/null 2>&1 && break
		sleep 0.1
	done
	if [[ $(probe_closed "$dir/k.sock") == echo ]]; then
		vmtest_pass sigkill-restart "a new daemon took over the stale socket files and serves"
	else
		vmtest_fail sigkill-restart "$(tail -n 3 "$dir/daemon2.log")"
	fi
	mini_stop
}
