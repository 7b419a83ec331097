# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# Socket files in a directory others could change (docs/security.md, "Socket files"): the
# daemon gives owner and mode only to the file it bound, never to what a symlink put in its
# place points to; the file is never more open than configured; a parent directory that
# others may write (and is not sticky), by its mode or through its ACL, or a symlink someone
# else owns on the way, is refused with its name and the cause; at stop and reload a socket
# file that is no longer the one the daemon bound is left alone. Sourced by tests/host/run.sh after tests/lib/harness.sh.

SOCKFILE_NOBODY=65534

# sockfile_config DIR LISTEN_PATH [OPTIONS]: DIR/c.conf with one [a] section on LISTEN_PATH
# (UNIX-LISTEN, with ,OPTIONS) to DIR/srv.sock, the control socket in DIR.
sockfile_config() {
	printf '[daemon]\ncontrol = %s/ctl.sock\ndatapath = userspace\n[a]\nlisten = UNIX-LISTEN:%s%s\nconnect = UNIX-CONNECT:%s/srv.sock\n' \
		"$1" "$2" "${3:+,$3}" "$1" >"$1/c.conf"
}

# sockfile_start DIR [ENV...]: vsockmapd on DIR/c.conf in the background (SOCKFILE_PID),
# its log in DIR/daemon.log.
sockfile_start() {
	local dir=$1
	shift
	env "$@" vsockmapd -c "$dir/c.conf" 2>"$dir/daemon.log" &
	SOCKFILE_PID=$!
}

# sockfile_stop: SIGTERM, and the daemon's exit status in SOCKFILE_RC.
sockfile_stop() {
	kill -TERM "$SOCKFILE_PID" 2>/dev/null
	wait "$SOCKFILE_PID"
	SOCKFILE_RC=$?
}

# sockfile_exited PID SECONDS: true once PID has exited, within SECONDS.
sockfile_exited() {
	local ticks=$(($2 * 10))
	while kill -0 "$1" 2>/dev/null; do
		((ticks-- > 0)) || return 1
		sleep 0.1
	done
}

# A symlink put at the socket path between the bind and the publish: the daemon must not give
# the symlink's target the section's owner and mode, and must not start on a file it did not
# bind.
sockfile_symlink_at_path() {
	local dir got rc
	dir=$(mktemp -d /tmp/vsockmap-sockfile.XXXXXX)
	echo secret >"$dir/victim"
	chmod 0600 "$dir/victim"
	sockfile_config "$dir" "$dir/a.sock" "mode=0666,user=$SOCKFILE_NOBODY"
	sockfile_start "$dir" VSOCKMAPD_TEST_PUBLISH_DELAY_US=2000000
	if ! wait_for_socket "$dir/a.sock" 10; then
		vmtest_fail sockfile-symlink-at-path "never bound: $(tail -n 2 "$dir/daemon.log")"
		kill "$SOCKFILE_PID" 2>/dev/null
		rm -rf "$dir"
		return
	fi
	mv "$dir/a.sock" "$dir/a.sock.moved"
	ln -s victim "$dir/a.sock"
	sockfile_exited "$SOCKFILE_PID" 10
	sockfile_stop
	rc=$SOCKFILE_RC
	got=$(stat -c '%a %u' "$dir/victim")
	if [[ $got != "600 0" ]]; then
		vmtest_fail sockfile-symlink-at-path "the symlink's target became mode/owner $got (was 600 0)"
	elif ((rc == 0)) || ! grep -q 'a\.sock.*not the socket file this daemon bound' "$dir/daemon.log"; then
		vmtest_fail sockfile-symlink-at-path "exit $rc: $(grep -m1 'a\.sock' "$dir/daemon.log")"
	elif [[ ! -L $dir/a.sock ]]; then
		vmtest_fail sockfile-symlink-at-path "the planted symlink was removed"
	else
		vmtest_pass sockfile-symlink-at-path "target left 600 0, exit $rc: $(grep -m1 'not the socket file' "$dir/daemon.log")"
	fi
	rm -rf "$dir"
}

# A symlink owned by someone else as a parent directory is refused; one owned by root (as
# /var/run -> /run) is followed as before.
sockfile_symlink_parent() {
	local dir out rc
	dir=$(mktemp -d /tmp/vsockmap-sockfile.XXXXXX)
	mkdir "$dir/real"
	ln -s real "$dir/planted"
	chown -h "$SOCKFILE_NOBODY" "$dir/planted"
	sockfile_config "$dir" "$dir/planted/a.sock"
	out=$(timeout 10 vsockmapd -c "$dir/c.conf" 2>&1)
	rc=$?
	if ((rc == 0 || rc == 124)); then
		vmtest_fail sockfile-symlink-parent "exit $rc through a symlink owned by uid $SOCKFILE_NOBODY: $out"
	elif ! grep -q "$dir/planted: a symlink owned by uid $SOCKFILE_NOBODY" <<<"$out"; then
		vmtest_fail sockfile-symlink-parent "exit $rc, no clear message: $out"
	elif [[ -e $dir/real/a.sock ]]; then
		vmtest_fail sockfile-symlink-parent "left $dir/real/a.sock behind"
	else
		vmtest_pass sockfile-symlink-parent "exit $rc: $(grep -m1 'symlink owned' <<<"$out")"
	fi

	ln -s real "$dir/rootlink"
	sockfile_config "$dir" "$dir/rootlink/a.sock"
	sockfile_start "$dir"
	if wait_for_socket "$dir/real/a.sock" 10 && wait_for_socket "$dir/ctl.sock" 10; then
		vmtest_pass sockfile-root-symlink-parent "a parent symlink owned by root is followed"
	else
		vmtest_fail sockfile-root-symlink-parent "not started: $(tail -n 2 "$dir/daemon.log")"
	fi
	sockfile_stop
	rm -rf "$dir"
}

# A parent that others may write without the sticky bit is refused, with the path and why;
# with the sticky bit (as /tmp) it is fine, and so are directories the daemon makes itself.
sockfile_writable_parent() {
	local dir out rc
	dir=$(mktemp -d /tmp/vsockmap-sockfile.XXXXXX)
	mkdir -m 0777 "$dir/open"
	chmod 0777 "$dir/open"
	sockfile_config "$dir" "$dir/open/a.sock"
	out=$(timeout 10 vsockmapd -c "$dir/c.conf" 2>&1)
	rc=$?
	if ((rc == 0 || rc == 124)); then
		vmtest_fail sockfile-writable-parent "exit $rc in a mode 0777 directory: $out"
	elif ! grep -q "$dir/open: writable by others and not sticky (mode 0777)" <<<"$out"; then
		vmtest_fail sockfile-writable-parent "exit $rc, no clear message: $out"
	elif [[ -e $dir/open/a.sock ]]; then
		vmtest_fail sockfile-writable-parent "left $dir/open/a.sock behind"
	else
		vmtest_pass sockfile-writable-parent "exit $rc: $(grep -m1 'writable by others' <<<"$out")"
	fi

	mkdir "$dir/group"
	chgrp "$SOCKFILE_NOBODY" "$dir/group"
	chmod 0775 "$dir/group"
	sockfile_config "$dir" "$dir/group/a.sock"
	out=$(timeout 10 vsockmapd -c "$dir/c.conf" 2>&1)
	rc=$?
	if ((rc != 0 && rc != 124)) &&
		grep -q "$dir/group: writable by group $SOCKFILE_NOBODY and not sticky (mode 0775)" <<<"$out"; then
		vmtest_pass sockfile-group-writable-parent "exit $rc: $(grep -m1 'writable by group' <<<"$out")"
	else
		vmtest_fail sockfile-group-writable-parent "exit $rc: $out"
	fi

	# root:root 0775 is fine by its mode alone; with an ACL those group bits are the mask.
	if command -v setfacl >/dev/null; then
		mkdir -m 0755 "$dir/acl"
		setfacl -m "u:$SOCKFILE_NOBODY:rwx" "$dir/acl"
		sockfile_config "$dir" "$dir/acl/a.sock"
		out=$(timeout 10 vsockmapd -c "$dir/c.conf" 2>&1)
		rc=$?
		if ((rc != 0 && rc != 124)) && [[ ! -e $dir/acl/a.sock ]] &&
			grep -q "$dir/acl: writable by uid $SOCKFILE_NOBODY through its ACL and not sticky (mode 0775)" <<<"$out"; then
			vmtest_pass sockfile-acl-writable-parent "exit $rc: $(grep -m1 'through its ACL' <<<"$out")"
		else
			vmtest_fail sockfile-acl-writable-parent "exit $rc with u:$SOCKFILE_NOBODY:rwx on $dir/acl: $out"
		fi
	else
		vmtest_skip sockfile-acl-writable-parent "no setfacl here (package acl; make deps installs it)"
	fi

	chmod 1777 "$dir/open"
	sockfile_config "$dir" "$dir/open/a.sock"
	sockfile_start "$dir"
	if wait_for_socket "$dir/open/a.sock" 10 && wait_for_socket "$dir/ctl.sock" 10; then
		vmtest_pass sockfile-sticky-parent "a mode 1777 directory is fine"
	else
		vmtest_fail sockfile-sticky-parent "not started: $(tail -n 2 "$dir/daemon.log")"
	fi
	sockfile_stop

	sockfile_config "$dir" "$dir/made/by/daemon/a.sock"
	sockfile_start "$dir"
	if wait_for_socket "$dir/made/by/daemon/a.sock" 10 && wait_for_socket "$dir/ctl.sock" 10 &&
		[[ $(stat -c %a "$dir/made/by/daemon") == 755 ]]; then
		vmtest_pass sockfile-made-parents "missing parents made mode 0755, the daemon started"
	else
		vmtest_fail sockfile-made-parents "not started: $(tail -n 2 "$dir/daemon.log")"
	fi
	sockfile_stop
	rm -rf "$dir"
}

# mode=0060,group=nobody: only that group may connect, not even the owner. Seen while the
# daemon waits between the bind and the publish, and right after it started, the file has
# no permission bit outside 0060.
sockfile_mode_never_wider() {
	local dir early late
	dir=$(mktemp -d /tmp/vsockmap-sockfile.XXXXXX)
	sockfile_config "$dir" "$dir/a.sock" "mode=0060,group=$SOCKFILE_NOBODY"
	sockfile_start "$dir" VSOCKMAPD_TEST_PUBLISH_DELAY_US=1000000
	wait_for_socket "$dir/a.sock" 10
	early=$(stat -c '%a %g' "$dir/a.sock" 2>&1)
	wait_for_socket "$dir/ctl.sock" 10
	late=$(stat -c '%a %g' "$dir/a.sock" 2>&1)
	sockfile_stop
	if [[ $late != "60 $SOCKFILE_NOBODY" ]]; then
		vmtest_fail sockfile-mode-never-wider "after start: $late, expected 60 $SOCKFILE_NOBODY"
	elif ((8#${early%% *} & ~8#060)); then
		vmtest_fail sockfile-mode-never-wider "before its publish the file was mode ${early%% *}, wider than 0060"
	else
		vmtest_pass sockfile-mode-never-wider "mode ${early%% *} right after the bind, 0${late// */} group ${late##* } once started"
	fi
	rm -rf "$dir"
}

# sockfile_plant PATH: a socket file of someone else's at PATH (bound, then left).
sockfile_plant() {
	python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$1"
}

# Between start and stop, someone else's socket file took the place of the daemon's: a stop,
# and a reload that drops the section, leave it where it is and say so.
sockfile_swapped() {
	local dir ino_a ino_b ino_ctl
	dir=$(mktemp -d /tmp/vsockmap-sockfile.XXXXXX)
	sockfile_config "$dir" "$dir/a.sock"
	printf '[b]\nlisten = UNIX-RECV:%s/b.sock\nconnect = UNIX-CONNECT:%s/srv.sock\n' \
		"$dir" "$dir" >>"$dir/c.conf"
	sockfile_start "$dir"
	if ! wait_for_socket "$dir/ctl.sock" 10 || ! wait_for_socket "$dir/b.sock" 10; then
		vmtest_fail sockfile-swapped "not started: $(tail -n 2 "$dir/daemon.log")"
		sockfile_stop
		rm -rf "$dir"
		return
	fi
	# The reload drops [b], whose file is a stranger's by then.
	mv "$dir/b.sock" "$dir/b.sock.orig"
	sockfile_plant "$dir/b.sock"
	ino_b=$(stat -c %i "$dir/b.sock")
	sockfile_config "$dir" "$dir/a.sock"
	kill -HUP "$SOCKFILE_PID"
	sleep 1
	if [[ $(stat -c %i "$dir/b.sock" 2>/dev/null) != "$ino_b" ]]; then
		vmtest_fail sockfile-swapped-reload "a reload removed the stranger's $dir/b.sock"
	elif ! grep -q "b\.sock: .*replaced.*left in place" "$dir/daemon.log"; then
		vmtest_fail sockfile-swapped-reload "no notice: $(grep 'b\.sock' "$dir/daemon.log" | tail -n 2)"
	else
		vmtest_pass sockfile-swapped-reload "$(grep -m1 'b\.sock: .*replaced' "$dir/daemon.log" | sed 's/.*\] //')"
	fi

	mv "$dir/a.sock" "$dir/a.sock.orig"
	sockfile_plant "$dir/a.sock"
	mv "$dir/ctl.sock" "$dir/ctl.sock.orig"
	sockfile_plant "$dir/ctl.sock"
	ino_a=$(stat -c %i "$dir/a.sock")
	ino_ctl=$(stat -c %i "$dir/ctl.sock")
	sockfile_stop
	if [[ $(stat -c %i "$dir/a.sock" 2>/dev/null) != "$ino_a" ]]; then
		vmtest_fail sockfile-swapped-stop "the stop removed the stranger's $dir/a.sock"
	elif ! grep -q "a\.sock: .*replaced.*left in place" "$dir/daemon.log"; then
		vmtest_fail sockfile-swapped-stop "no notice: $(grep 'a\.sock' "$dir/daemon.log" | tail -n 2)"
	elif [[ $(stat -c %i "$dir/ctl.sock" 2>/dev/null) != "$ino_ctl" ]]; then
		vmtest_fail sockfile-swapped-stop "the stop removed the stranger's $dir/ctl.sock"
	else
		vmtest_pass sockfile-swapped-stop "exit $SOCKFILE_RC, $(grep -m1 'a\.sock: .*replaced' "$dir/daemon.log" | sed 's/.*\] //')"
	fi
	rm -rf "$dir"
}

# A daemon run as nobody cannot give its socket file to root: it says so, does not start, and
# removes the file it bound (its own, still at the path).
sockfile_chown_refused() {
	local dir out rc
	dir=$(mktemp -d /tmp/vsockmap-sockfile.XXXXXX)
	chown "$SOCKFILE_NOBODY:$SOCKFILE_NOBODY" "$dir"
	sockfile_config "$dir" "$dir/a.sock" "user=0"
	out=$(timeout 10 setpriv --reuid="$SOCKFILE_NOBODY" --regid="$SOCKFILE_NOBODY" --clear-groups \
		vsockmapd -c "$dir/c.conf" 2>&1)
	rc=$?
	if ((rc == 0 || rc == 124)); then
		vmtest_fail sockfile-chown-refused "exit $rc: $out"
	elif ! grep -q "a\.sock: chown: Operation not permitted" <<<"$out"; then
		vmtest_fail sockfile-chown-refused "exit $rc, no clear message: $out"
	elif [[ -e $dir/a.sock ]]; then
		vmtest_fail sockfile-chown-refused "left $dir/a.sock behind"
	else
		vmtest_pass sockfile-chown-refused "exit $rc: $(grep -m1 'chown: ' <<<"$out")"
	fi
	rm -rf "$dir"
}

# A default ACL on the directory would give the socket files an ACL whose named entries the
# mode's group bits unmask: "u:nobody:rwx" there let nobody connect to a 0660 root socket.
# The daemon removes the inherited ACL, so the mode alone says who may connect.
sockfile_default_acl() {
	local dir f got bad=
	if ! command -v setfacl >/dev/null; then
		vmtest_skip sockfile-default-acl "no setfacl here (package acl; make deps installs it)"
		return
	fi
	dir=$(mktemp -d /tmp/vsockmap-sockfile.XXXXXX)
	chmod 0755 "$dir"
	setfacl -d -m "u:$SOCKFILE_NOBODY:rwx" "$dir"
	sockfile_config "$dir" "$dir/a.sock" "mode=0660"
	sockfile_start "$dir"
	if ! wait_for_socket "$dir/a.sock" 10 || ! wait_for_socket "$dir/ctl.sock" 10; then
		vmtest_fail sockfile-default-acl "not started: $(tail -n 2 "$dir/daemon.log")"
		sockfile_stop
		rm -rf "$dir"
		return
	fi
	for f in a.sock ctl.sock; do
		got=$(setpriv --reuid=$SOCKFILE_NOBODY --regid=$SOCKFILE_NOBODY --clear-groups \
			/usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
    print("connected")
except PermissionError:
    print("refused")
except OSError as e:
    print(e)' "$dir/$f")
		[[ $got == refused ]] || bad+=" $f: uid $SOCKFILE_NOBODY $got ($(getfacl -cp "$dir/$f" 2>/dev/null | tr '\n' ' '))"
	done
	sockfile_stop
	if [[ -n $bad ]]; then
		vmtest_fail sockfile-default-acl "default ACL u:$SOCKFILE_NOBODY:rwx on the directory:$bad"
	else
		vmtest_pass sockfile-default-acl "a.sock and ctl.sock refuse uid $SOCKFILE_NOBODY despite the directory's default ACL"
	fi
	rm -rf "$dir"
}

host_sockfile_cases() {
	sockfile_symlink_at_path
	sockfile_symlink_parent
	sockfile_writable_parent
	sockfile_mode_never_wider
	sockfile_swapped
	sockfile_chown_refused
	sockfile_default_acl
}
