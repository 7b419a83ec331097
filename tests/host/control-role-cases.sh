# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# The control socket's two roles (docs/security.md, "The control socket's roles"), with real
# users: a throwaway reader group and admin group, and three users made for the run (a
# reader, an admin who is in both groups, and an outsider), removed again however the run
# ends. vsockmapctl runs as each of them through setpriv --init-groups, so the daemon sees
# their real primary and supplementary groups. Sourced by tests/host/run.sh after
# access-cases.sh (PYTHON).

# role_ctl USER ARGS...: vsockmapctl as USER, on the role daemon's control socket.
role_ctl() {
	local user=$1
	shift
	run_as "$user" "$ROLE_CTL" -s "$ROLE_DIR/ctl.sock" "$@"
}

# role_cleanup: the users and groups go, whatever happened before.
role_cleanup() {
	[[ -n ${ROLE_DAEMON:-} ]] && kill -TERM "$ROLE_DAEMON" 2>/dev/null
	((${#ROLE_HOLD[@]})) && kill "${ROLE_HOLD[@]}" 2>/dev/null
	[[ -n ${ROLE_SRV:-} ]] && kill "$ROLE_SRV" 2>/dev/null
	wait 2>/dev/null
	throwaway_cleanup
}

# role_setup: groups and users with names of this run (a parallel run makes its own).
role_setup() {
	local tag=$$
	ROLE_READERS=vsmrd$tag ROLE_ADMINS=vsmad$tag
	ROLE_READER=vsmr$tag ROLE_ADMIN=vsma$tag ROLE_OUTSIDER=vsmo$tag
	throwaway_group "$ROLE_READERS" && throwaway_group "$ROLE_ADMINS" &&
		throwaway_user "$ROLE_READER" "$ROLE_READERS" &&
		throwaway_user "$ROLE_ADMIN" "$ROLE_READERS,$ROLE_ADMINS" &&
		throwaway_user "$ROLE_OUTSIDER"
}

# role_daemon [DAEMON_LINE]...: vsockmapd with an echo section any user may connect to.
role_daemon() {
	local line
	{
		printf '[daemon]\ncontrol = %s/ctl.sock\ndatapath = userspace\n' "$ROLE_DIR"
		for line in "$@"; do
			printf '%s\n' "$line"
		done
		printf '[echo]\nlisten = UNIX-LISTEN:%s/echo.sock,mode=0666\n' "$ROLE_DIR"
		printf 'connect = UNIX-CONNECT:%s/srv.sock\n' "$ROLE_DIR"
	} >"$ROLE_DIR/c.conf"
	vsockmapd -c "$ROLE_DIR/c.conf" 2>"$ROLE_DIR/daemon.log" &
	ROLE_DAEMON=$!
	# The file appears at bind(), mode 0000 until its group and mode are set and it listens
	# (control_server.c): ready once the daemon logs that it listens.
	wait_for_log "$ROLE_DIR/daemon.log" 'control socket .*: listening' 0 "$ROLE_DAEMON" 20
}

role_daemon_stop() {
	kill -TERM "$ROLE_DAEMON" 2>/dev/null
	wait "$ROLE_DAEMON" 2>/dev/null
	ROLE_DAEMON=
}

# role_hold USER...: one live redirect per USER (each its own process, as that user),
# held until ROLE_DIR/release exists. Waits until all are through the echo.
role_hold() {
	local user n=0
	ROLE_HOLD=()
	# Each user leaves a file there once through: a directory everyone may write to.
	rm -rf "$ROLE_DIR/held"
	mkdir -m 1777 "$ROLE_DIR/held"
	for user in "$@"; do
		n=$((n + 1))
		run_as "$user" "$PYTHON" - \
			"$ROLE_DIR/echo.sock" "$ROLE_DIR/held/$n" "$ROLE_DIR/release" <<'PY' &
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"r")
assert s.recv(1) == b"r"
open(sys.argv[2], "w").close()
for _ in range(300):
    if os.path.exists(sys.argv[3]):
        break
    time.sleep(0.1)
PY
		ROLE_HOLD+=("$!")
	done
	for ((; n > 0; n--)); do
		wait_for_file "$ROLE_DIR/held/$n" 10 || return 1
	done
}

# role_ids JSON UID: the ids of the redirects in a list whose client has that uid.
role_ids() {
	"$PYTHON" -c 'import json,sys
print(" ".join(str(r["id"]) for r in json.loads(sys.argv[1]) if r["client"] and r["client"]["uid"] == int(sys.argv[2])))' "$1" "$2"
}

# role_slots_cases: a reader that holds every control connection it can get must not lock
# root out (docs/security.md, "Slots kept for admins"). It tries for all 64, asking status
# on each so that a refused one is told apart from a kept one, and holds the kept ones until
# ROLE_DIR/release exists. It writes what it got into ROLE_DIR/held (role_hold made it).
role_slots_cases() {
	local out rc got reader_uid
	reader_uid=$(id -u "$ROLE_READER")
	run_as "$ROLE_READER" "$PYTHON" - \
		"$ROLE_DIR/ctl.sock" "$ROLE_DIR/held/slots" "$ROLE_DIR/release" <<'PY' &
import json, os, socket, sys, time
kept, refused = [], []
for _ in range(64):
    c = socket.socket(socket.AF_UNIX)
    c.connect(sys.argv[1])
    try:
        c.sendall(b'{"command":"status"}\n')
    except BrokenPipeError:
        pass  # refused: the error line is already waiting to be read
    line = c.makefile("rb").readline()
    resp = json.loads(line) if line else {"ok": False, "error": "closed"}
    if resp.get("ok"):
        kept.append(c)
    else:
        refused.append(resp["error"])
        c.close()
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write("%d %d %s\n" % (len(kept), len(refused), refused[0] if refused else "-"))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
for _ in range(300):
    if os.path.exists(sys.argv[3]):
        break
    time.sleep(0.1)
PY
	ROLE_HOLD+=("$!")
	if ! wait_for_file "$ROLE_DIR/held/slots" 20; then
		vmtest_fail role-read-slots "the reader's connections did not finish"
		return
	fi
	got=$(<"$ROLE_DIR/held/slots")
	out=$(vsockmapctl -s "$ROLE_DIR/ctl.sock" reload 2>&1)
	rc=$?
	if ((rc == 0)) && [[ $out == "vsockmapd reloaded"* ]]; then
		vmtest_pass role-admin-slot-kept "root reloads while the reader holds its connections ($got)"
	else
		vmtest_fail role-admin-slot-kept "the reader holds connections ($got); root's reload rc=$rc: $out"
	fi
	out=$(role_ctl "$ROLE_READER" status 2>&1)
	rc=$?
	if [[ $got == "56 8 too many control clients of the read role (56 connected, the most they may hold; the other 8 slots are kept for the admin role)" ]] &&
		((rc == 1)) && [[ $out == *"too many control clients of the read role (56 connected"* ]] &&
		grep -q "refused uid $reader_uid (pid [0-9]*): read-role clients already hold 56 connections" "$ROLE_DIR/daemon.log"; then
		vmtest_pass role-read-slots "the reader kept 56 of 64, its next one: $out"
	else
		vmtest_fail role-read-slots "kept, refused, first refusal: $got; its next one rc=$rc: $out"
	fi
}

role_cases_body() {
	local out rc reader_uid admin_uid root_ids own_ids all want st
	ROLE_HOLD=() ROLE_DAEMON='' ROLE_SRV=''
	trap role_cleanup EXIT
	if ! role_setup 2>"$ROLE_DIR/setup.log"; then
		vmtest_skip control-roles "cannot make throwaway users and groups: $(tail -n 1 "$ROLE_DIR/setup.log")"
		return
	fi
	reader_uid=$(id -u "$ROLE_READER")
	admin_uid=$(id -u "$ROLE_ADMIN")
	vsm-peer server "unix:$ROLE_DIR/srv.sock" --echo --ready-file "$ROLE_DIR/srv.ready" \
		>"$ROLE_DIR/srv.log" 2>&1 &
	ROLE_SRV=$!
	wait_for_file "$ROLE_DIR/srv.ready" 10

	if ! role_daemon "control-group = $ROLE_READERS" "control-admin-group = $ROLE_ADMINS"; then
		vmtest_fail control-roles "daemon did not start: $(tail -n 2 "$ROLE_DIR/daemon.log")"
		return
	fi
	role_hold root "$ROLE_READER" || vmtest_fail control-roles "the held clients did not connect"

	# The reader: every read command works; list and show only its own redirect.
	out=$(role_ctl "$ROLE_READER" status 2>&1)
	rc=$?
	if ((rc == 0)) && grep -q '^role: *read ' <<<"$out" &&
		role_ctl "$ROLE_READER" listeners >/dev/null 2>&1 &&
		role_ctl "$ROLE_READER" stats >/dev/null 2>&1; then
		vmtest_pass role-read-queries "uid $reader_uid in $ROLE_READERS: status, listeners, stats; $(grep '^role:' <<<"$out")"
	else
		vmtest_fail role-read-queries "rc=$rc: $out"
	fi
	all=$(role_ctl "$ROLE_ADMIN" -j list 2>&1)
	root_ids=$(role_ids "$all" 0)
	own_ids=$(role_ids "$all" "$reader_uid")
	out=$(role_ctl "$ROLE_READER" -j list 2>&1)
	rc=$?
	if ((rc == 0)) && [[ -n $root_ids && -n $own_ids && $(role_ids "$out" "$reader_uid") == "$own_ids" &&
		-z $(role_ids "$out" 0) ]]; then
		vmtest_pass role-read-list-own "the reader lists its redirect $own_ids, not root's $root_ids (the admin lists both)"
	else
		vmtest_fail role-read-list-own "rc=$rc; admin sees root's '$root_ids' and the reader's '$own_ids'; reader got: $out"
	fi
	out=$(role_ctl "$ROLE_READER" show "$root_ids" 2>&1)
	rc=$?
	if ((rc == 1)) && grep -q "redirect $root_ids is another user's: show needs the admin role for it: uid $reader_uid is not root and not in group $ROLE_ADMINS" <<<"$out" &&
		role_ctl "$ROLE_READER" show "$own_ids" >/dev/null 2>&1; then
		vmtest_pass role-read-show-own "its own shown; root's: $out"
	else
		vmtest_fail role-read-show-own "rc=$rc: $out"
	fi

	# The reader may not change anything: each refusal names the cause, exit 1.
	want="needs the admin role: uid $reader_uid is not root and not in group $ROLE_ADMINS"
	out=$(role_ctl "$ROLE_READER" reload 2>&1)
	rc=$?
	if ((rc == 1)) && [[ $out == "vsockmapctl: vsockmapd: reload $want" ]] &&
		grep -q "control: reload refused to pid [0-9]*: it needs the admin role, and uid $reader_uid" "$ROLE_DIR/daemon.log" &&
		! grep -q 'reload requested' "$ROLE_DIR/daemon.log"; then
		vmtest_pass role-read-reload-refused "exit 1: $out"
	else
		vmtest_fail role-read-reload-refused "rc=$rc: $out"
	fi
	out=$(role_ctl "$ROLE_READER" -j close "$root_ids" 2>&1)
	rc=$?
	if ((rc == 1)) && grep -q "\"errno\":1" <<<"$out" && grep -q "close $want" <<<"$out" &&
		[[ $(role_ids "$(role_ctl "$ROLE_ADMIN" -j list 2>&1)" 0) == "$root_ids" ]]; then
		vmtest_pass role-read-close-refused "root's redirect $root_ids still open; $out"
	else
		vmtest_fail role-read-close-refused "rc=$rc: $out"
	fi
	out=$(role_ctl "$ROLE_READER" close "$own_ids" 2>&1)
	rc=$?
	if ((rc == 1)) && [[ $out == *"close $want"* ]]; then
		vmtest_pass role-read-close-own-refused "its own redirect too: closing needs the admin role"
	else
		vmtest_fail role-read-close-own-refused "rc=$rc: $out"
	fi

	# The admin group: every command.
	out=$(role_ctl "$ROLE_ADMIN" status 2>&1)
	if grep -q '^role: *admin$' <<<"$out" &&
		out=$(role_ctl "$ROLE_ADMIN" reload 2>&1) && [[ $out == "vsockmapd reloaded"* ]] &&
		out=$(role_ctl "$ROLE_ADMIN" close "$root_ids" 2>&1) &&
		grep -q "close requested by uid $admin_uid" "$ROLE_DIR/daemon.log"; then
		vmtest_pass role-admin-group "uid $admin_uid in $ROLE_ADMINS: reload and close of root's redirect: $out"
	else
		vmtest_fail role-admin-group "$out; $(tail -n 2 "$ROLE_DIR/daemon.log")"
	fi

	# In neither group: the kernel refuses the connect (mode 0660).
	out=$(role_ctl "$ROLE_OUTSIDER" list 2>&1)
	rc=$?
	if ((rc == 1)) && [[ $out == *"Permission denied"* ]]; then
		vmtest_pass role-outsider-refused "$out"
	else
		vmtest_fail role-outsider-refused "rc=$rc: $out"
	fi
	role_slots_cases

	touch "$ROLE_DIR/release"
	wait "${ROLE_HOLD[@]}" 2>/dev/null
	ROLE_HOLD=()
	role_daemon_stop

	# control-group alone, as configured before the roles: its members may read, not reload.
	if role_daemon "control-group = $ROLE_ADMINS"; then
		out=$(role_ctl "$ROLE_ADMIN" reload 2>&1)
		rc=$?
		if ((rc == 1)) && [[ $out == *"reload needs the admin role: uid $admin_uid is not root, and no control-admin-group is set" ]] &&
			role_ctl "$ROLE_ADMIN" list >/dev/null 2>&1; then
			vmtest_pass role-group-only-reads "$out"
		else
			vmtest_fail role-group-only-reads "rc=$rc: $out"
		fi
	else
		vmtest_fail role-group-only-reads "daemon did not start: $(tail -n 2 "$ROLE_DIR/daemon.log")"
	fi
	role_daemon_stop

	# control-admin-group alone: the socket file is the admins'; readers cannot connect.
	if role_daemon "control-admin-group = $ROLE_ADMINS"; then
		st=$(stat -c '%a %G' "$ROLE_DIR/ctl.sock")
		out=$(role_ctl "$ROLE_ADMIN" reload 2>&1)
		rc=$?
		if [[ $st == "660 $ROLE_ADMINS" ]] && ((rc == 0)) &&
			[[ $(role_ctl "$ROLE_READER" list 2>&1) == *"Permission denied"* ]]; then
			vmtest_pass role-admin-group-alone "socket $st; the admin reloads, the reader cannot connect"
		else
			vmtest_fail role-admin-group-alone "socket $st; admin reload rc=$rc: $out"
		fi
	else
		vmtest_fail role-admin-group-alone "daemon did not start: $(tail -n 2 "$ROLE_DIR/daemon.log")"
	fi
	role_daemon_stop
}

host_control_role_cases() {
	local rc
	if ! command -v useradd >/dev/null || ! command -v groupadd >/dev/null; then
		vmtest_skip control-roles "no useradd/groupadd here to make throwaway users"
		return
	fi
	ROLE_DIR=$(mktemp -d /tmp/vsockmap-roles.XXXXXX)
	chmod 0755 "$ROLE_DIR"
	ROLE_CTL=$(command -v vsockmapctl)
	# A subshell, so that its EXIT trap removes the users however the cases end.
	(role_cases_body)
	rc=$?
	rm -rf "$ROLE_DIR"
	return $rc
}
