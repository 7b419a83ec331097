# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
#
# vsockmapctl against the real vsockmapd, shared by the host suite (unix targets) and the
# VM suite (vsock targets on CID 1). POSIX sh for busybox. Sourced after
# tests/e2e/scenarios.sh, whose variables and helpers it uses (E2E_DIR, E2E_TARGET,
# e2e_start_daemon, peer_addr, ...); the entry point is ctl_run_all.
#
# Three clients keep their connections open through fifos; an echo server records what
# each connection carried and marks its EOF, so counters, close and totals are checked
# against the bytes actually moved.

CTL_SIZES="100003 200003 300007"
CTL_SLOW=2 # client 2's server sleeps before reading: its bytes are in flight at close

ctl() {
	vsockmapctl -s "$E2E_DIR/control.sock" "$@"
}

# json_num JSON KEY: the unsigned number after "KEY": (keys are unique within an object).
json_num() {
	printf '%s\n' "$1" | sed -n "s/.*\"$2\":\([0-9][0-9]*\).*/\1/p" | head -n 1
}

# The redirects of section "stream" as JSON objects, one per line.
ctl_list_lines() {
	ctl -j list --name stream | awk '{ gsub(/\},\{"id":/, "}\n{\"id\":"); print }' | grep '"id"'
}

# The schema checker of the unit tests, when this is the host (it reads docs/ from the
# repository root); empty in the VM.
ctl_validator() {
	_v=$(dirname "$(command -v vsockmapctl)")/tests/test_ctl_output
	if [ -x "$_v" ] && [ -f docs/control-protocol.md ]; then
		echo "$_v"
	fi
}

# ---- the echo server -----------------------------------------------------------------------

# Each connection: mode from next-mode (echo, or hold: sleep, then read without echoing),
# its bytes in conn.PID, conn.PID.eof once it read EOF.
ctl_start_server() {
	CTL_REC=$E2E_DIR/ctl-rec
	rm -rf "$CTL_REC"
	mkdir -p "$CTL_REC"
	cat >"$E2E_DIR/ctl-echo.sh" <<EOF
#!/bin/sh
f=$CTL_REC/conn.\$\$
mode=\$(cat $CTL_REC/next-mode)
echo "\$mode" >"\$f.mode"
: >"\$f.started"
if [ "\$mode" = hold ]; then
	sleep 10
	cat >"\$f"
else
	tee "\$f"
fi
: >"\$f.eof"
EOF
	chmod 0755 "$E2E_DIR/ctl-echo.sh"
	echo echo >"$CTL_REC/next-mode"
	if [ "$E2E_TARGET" = vsock ]; then
		socat "VSOCK-LISTEN:$E2E_PORT_BASE,fork" "EXEC:$E2E_DIR/ctl-echo.sh" \
			2>"$E2E_DIR/ctl-server.log" &
		CTL_SERVER=$!
		sleep 1
	else
		socat "UNIX-LISTEN:$E2E_DIR/srv0.sock,fork,unlink-early" \
			"EXEC:$E2E_DIR/ctl-echo.sh" 2>"$E2E_DIR/ctl-server.log" &
		CTL_SERVER=$!
		wait_for_socket "$E2E_DIR/srv0.sock" 10
	fi
}

ctl_started_count() {
	find "$CTL_REC" -name '*.started' | wc -l
}

# ctl_make_inputs: random inputs and a fifo per client; the caller opens the fifos
# read-write as fds 7, 8, 9 (a read-write open does not wait for a reader), so each client
# reads its stdin from a fifo and its connection stays open until the fd is closed.
ctl_make_inputs() {
	for _i in 1 2 3; do
		head -c "$(echo "$CTL_SIZES" | cut -d' ' -f"$_i")" /dev/urandom >"$E2E_DIR/ctl-in$_i"
		rm -f "$E2E_DIR/ctl-fifo$_i"
		mkfifo "$E2E_DIR/ctl-fifo$_i"
	done
}

# ctl_open_client I MODE: start client I; its server connection gets MODE.
ctl_open_client() {
	_i=$1
	echo "$2" >"$CTL_REC/next-mode"
	# Without the other fifos' fds, so that closing ours is EOF for that client.
	socat -t 1 - "UNIX-CONNECT:$E2E_DIR/stream.sock" <"$E2E_DIR/ctl-fifo$_i" \
		>"$E2E_DIR/ctl-out$_i" 2>"$E2E_DIR/ctl-err$_i" 7>&- 8>&- 9>&- &
	eval "CTL_PID$_i=\$!"
	_ticks=100
	while [ "$(ctl_started_count)" -lt "$_i" ] && [ $_ticks -gt 0 ]; do
		_ticks=$((_ticks - 1))
		sleep 0.1
	done
}

# ctl_alive PID: running, not a zombie the shell has yet to reap.
ctl_alive() {
	[ -r "/proc/$1/stat" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null
}

# The record of the connection that carried exactly the bytes of FILE, if any.
ctl_record_of() {
	for _r in "$CTL_REC"/conn.*; do
		case ${_r##*/} in *.*.*) continue ;; esac
		if cmp -s "$_r" "$1"; then
			echo "$_r"
			return 0
		fi
	done
	return 1
}

# ctl_wait_counts SEC: until list shows 3 redirects with the expected counters.
ctl_wait_counts() {
	_ticks=$(($1 * 10))
	while :; do
		ctl_check_counts >/dev/null && return 0
		[ $_ticks -gt 0 ] || return 1
		_ticks=$((_ticks - 1))
		sleep 0.1
	done
}

# Expected: client i sent size i; the echo servers sent it back, the hold one nothing.
ctl_check_counts() {
	_lines=$(ctl_list_lines)
	_n=$(printf '%s\n' "$_lines" | grep -c '"id"')
	[ "$_n" -eq 3 ] || {
		echo "list shows $_n stream redirects, want 3: $_lines"
		return 1
	}
	for _i in 1 2 3; do
		eval "_pid=\$CTL_PID$_i"
		_size=$(echo "$CTL_SIZES" | cut -d' ' -f"$_i")
		_want_in=$_size
		[ "$_i" -ne "$CTL_SLOW" ] || _want_in=0
		_line=$(printf '%s\n' "$_lines" | grep "\"pid\":$_pid,")
		_out=$(json_num "$_line" bytes_out)
		_in=$(json_num "$_line" bytes_in)
		if [ -z "$_line" ] || [ "$_out" != "$_size" ] || [ "$_in" != "$_want_in" ]; then
			echo "client $_i (pid $_pid) sent $_size, got $_want_in back; list says out=${_out:-none} in=${_in:-none}: $_lines"
			return 1
		fi
		eval "CTL_ID$_i=$(json_num "$_line" id)"
	done
	echo "3 redirects, out=$CTL_SIZES, in=$(echo "$CTL_SIZES" | cut -d' ' -f1) 0 $(echo "$CTL_SIZES" | cut -d' ' -f3)"
}

# ---- scenarios -----------------------------------------------------------------------------

ctl_scenario_list() {
	if ! ctl_wait_counts 30; then
		vmtest_fail ctl-list-exact "$(ctl_check_counts)"
		return 1
	fi
	_plain=$(ctl --no-legend list --name stream | wc -l)
	if [ "$_plain" -ne 3 ]; then
		vmtest_fail ctl-list-exact "plain list has $_plain rows: $(ctl list)"
		return 1
	fi
	vmtest_pass ctl-list-exact "$(ctl_check_counts); each matched to its client by SO_PEERCRED pid"
	vmtest_log "vsockmapctl list:"
	ctl list | while IFS= read -r _l; do vmtest_log "  $_l"; done
	vmtest_log "vsockmapctl list -j: $(ctl list -j --name stream)"
}

ctl_scenario_show() {
	_json=$(ctl -j show "$CTL_ID1")
	_plain=$(ctl show "$CTL_ID1")
	_cookie=$(json_num "$_json" client_cookie)
	_iter=$(ctl -j status | grep -cE '"(probe|iterator)":true')
	_backlog=$(json_num "$_json" target_backlog_skbs)
	if [ -z "$_cookie" ] || [ -z "$(json_num "$_json" target_cookie)" ]; then
		vmtest_fail ctl-show "no socket cookies: $_json"
	elif [ "$_iter" -eq 1 ] && [ -z "$_backlog" ]; then
		vmtest_fail ctl-show "an exact drain signal is in use but show has no queue length: $_json"
	elif ! printf '%s\n' "$_plain" | grep -q "^client cookie: *$_cookie\$"; then
		vmtest_fail ctl-show "plain show disagrees with -j: $_plain"
	else
		vmtest_pass ctl-show "cookies $_cookie/$(json_num "$_json" target_cookie), target backlog ${_backlog:-n/a} skbs, $(printf '%s\n' "$_plain" | grep '^out:' | tr -s ' ')"
	fi
	ctl show 999999 >/dev/null 2>"$E2E_DIR/ctl-show.err"
	_rc=$?
	if [ $_rc -ne 1 ] || ! grep -q 'no redirect with id 999999' "$E2E_DIR/ctl-show.err"; then
		vmtest_fail ctl-show-unknown "rc=$_rc: $(cat "$E2E_DIR/ctl-show.err")"
	else
		vmtest_pass ctl-show-unknown "exit 1: $(cat "$E2E_DIR/ctl-show.err")"
	fi
}

# close ID2 while its server has not read anything yet: every byte the client sent is still
# in the kernel, and must reach the server before its EOF.
ctl_scenario_close() {
	_before1=$(ctl_list_lines | grep "\"id\":$CTL_ID1,")
	_before3=$(ctl_list_lines | grep "\"id\":$CTL_ID3,")
	_hold=$(grep -l '^hold$' "$CTL_REC"/*.mode)
	_hold=${_hold%.mode}
	_unread="while its server had read none of its"
	[ ! -e "$_hold" ] || _unread="after its server had read its"
	if ! ctl close "$CTL_ID2" >"$E2E_DIR/ctl-close.out" 2>&1; then
		vmtest_fail ctl-close-one "vsockmapctl close $CTL_ID2: $(cat "$E2E_DIR/ctl-close.out")"
		return
	fi
	_ticks=300
	while ctl_alive "$CTL_PID2" || [ ! -e "$_hold.eof" ] ||
		ctl_list_lines | grep -q "\"id\":$CTL_ID2,"; do
		[ $_ticks -gt 0 ] || break
		_ticks=$((_ticks - 1))
		sleep 0.1
	done
	exec 8>&-
	_rec2=$(ctl_record_of "$E2E_DIR/ctl-in2")
	_after=$(ctl_list_lines)
	_after1=$(printf '%s\n' "$_after" | grep "\"id\":$CTL_ID1,")
	_after3=$(printf '%s\n' "$_after" | grep "\"id\":$CTL_ID3,")
	if ctl_alive "$CTL_PID2"; then
		vmtest_fail ctl-close-one "client 2 did not see EOF within 30 s"
	elif printf '%s\n' "$_after" | grep -q "\"id\":$CTL_ID2,"; then
		vmtest_fail ctl-close-one "redirect $CTL_ID2 still listed: $_after"
	elif [ "$_rec2" != "$_hold" ]; then
		vmtest_fail ctl-close-one "the server did not receive client 2's $(wc -c <"$E2E_DIR/ctl-in2") bytes: $(wc -c "$_hold" 2>&1)"
	elif [ ! -e "$_rec2.eof" ]; then
		vmtest_fail ctl-close-one "the server got the bytes but no EOF"
	elif ! ctl_alive "$CTL_PID1" || ! ctl_alive "$CTL_PID3"; then
		vmtest_fail ctl-close-one "another client lost its connection"
	elif [ "$(json_num "$_after1" bytes_out)" != "$(json_num "$_before1" bytes_out)" ] ||
		[ "$(json_num "$_after3" bytes_in)" != "$(json_num "$_before3" bytes_in)" ] ||
		[ "$(printf '%s\n' "$_after" | grep -c '"id"')" -ne 2 ]; then
		vmtest_fail ctl-close-one "the other redirects changed: before $_before1 $_before3, after $_after"
	elif [ "$(find "$CTL_REC" -name '*.eof' | wc -l)" -ne 1 ]; then
		vmtest_fail ctl-close-one "another server connection saw EOF"
	else
		vmtest_pass ctl-close-one "redirect $CTL_ID2 closed $_unread $(wc -c <"$E2E_DIR/ctl-in2") bytes: it got all of them (cmp) then EOF, the client got EOF; redirects $CTL_ID1 and $CTL_ID3 untouched"
	fi
	ctl close "$CTL_ID2" >/dev/null 2>&1
	_rc=$?
	_dgram=$(json_num "$(ctl -j list --name dgram)" id)
	ctl close "$_dgram" >/dev/null 2>"$E2E_DIR/ctl-close.err"
	_rc2=$?
	if [ $_rc -eq 1 ] && [ $_rc2 -eq 1 ] && grep -q 'datagram listener' "$E2E_DIR/ctl-close.err"; then
		vmtest_pass ctl-close-refused "closing it again: exit 1; the datagram listener's: $(cat "$E2E_DIR/ctl-close.err")"
	else
		vmtest_fail ctl-close-refused "closing a closed redirect: exit $_rc; the dgram one ($_dgram): exit $_rc2 $(cat "$E2E_DIR/ctl-close.err")"
	fi
}

# Totals since start: the closed redirect's bytes plus the live ones, exactly.
ctl_scenario_stats() {
	_s1=$(echo "$CTL_SIZES" | cut -d' ' -f1)
	_s2=$(echo "$CTL_SIZES" | cut -d' ' -f2)
	_s3=$(echo "$CTL_SIZES" | cut -d' ' -f3)
	_json=$(ctl -j stats | awk '{ gsub(/\},\{"name":/, "}\n{\"name\":"); print }' | grep '"name":"stream"')
	_out=$(json_num "$_json" bytes_out)
	_in=$(json_num "$_json" bytes_in)
	if [ "$_out" != $((_s1 + _s2 + _s3)) ] || [ "$_in" != $((_s1 + _s3)) ] ||
		[ "$(json_num "$_json" accepted)" != 3 ] || [ "$(json_num "$_json" live)" != 2 ]; then
		vmtest_fail ctl-stats-totals "want out=$((_s1 + _s2 + _s3)) in=$((_s1 + _s3)) accepted=3 live=2: $_json"
	else
		vmtest_pass ctl-stats-totals "stream: out=$_out in=$_in (1 closed + 2 live), accepted=3, live=2"
	fi

	ctl stats --prometheus >"$E2E_DIR/ctl-prom.txt"
	_rc=$?
	_bad=$(grep -v '^#' "$E2E_DIR/ctl-prom.txt" |
		grep -Evc '^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="[^"]*"(,[a-zA-Z_][a-zA-Z0-9_]*="[^"]*")*\})? [0-9]+(\.[0-9]+)?$')
	_types=$(grep -Ec '^# TYPE vsockmap_[a-z_]* (counter|gauge)$' "$E2E_DIR/ctl-prom.txt")
	_helps=$(grep -c '^# HELP vsockmap_' "$E2E_DIR/ctl-prom.txt")
	if [ $_rc -ne 0 ] || [ "$_bad" -ne 0 ] || [ "$_types" -lt 5 ] || [ "$_types" -ne "$_helps" ]; then
		vmtest_fail ctl-prometheus "rc=$_rc, $_bad malformed lines, $_types TYPE, $_helps HELP: $(head -c 600 "$E2E_DIR/ctl-prom.txt" | tr '\n' '|')"
	elif ! grep -q "^vsockmap_bytes_total{listener=\"stream\",direction=\"out\"} $_out\$" "$E2E_DIR/ctl-prom.txt"; then
		vmtest_fail ctl-prometheus "no bytes_total sample of $_out for stream: $(grep bytes_total "$E2E_DIR/ctl-prom.txt" | tr '\n' '|')"
	else
		vmtest_pass ctl-prometheus "$(grep -vc '^#' "$E2E_DIR/ctl-prom.txt") samples of $_types metrics, each with HELP and TYPE; $(grep 'bytes_total{listener="stream",direction="out"}' "$E2E_DIR/ctl-prom.txt")"
	fi
}

ctl_scenario_listeners() {
	_json=$(ctl -j listeners | awk '{ gsub(/\},\{"name":/, "}\n{\"name\":"); print }' | grep '"name":"stream"')
	_mode=$(printf '%s\n' "$_json" | sed -n 's/.*"mode":"\([0-7]*\)".*/\1/p')
	_disk=$(stat -c %a "$E2E_DIR/stream.sock")
	if [ -z "$_mode" ] || [ "$((0$_mode))" -ne "$((0$_disk))" ]; then
		vmtest_fail ctl-listeners "mode ${_mode:-none}, stat says $_disk: $_json"
	elif [ "$(json_num "$_json" accepted)" != 3 ] || [ "$(json_num "$_json" live)" != 2 ] ||
		! printf '%s\n' "$_json" | grep -q '"limit":null'; then
		vmtest_fail ctl-listeners "want accepted=3 live=2 limit=null: $_json"
	else
		vmtest_pass ctl-listeners "$(ctl --no-legend listeners | grep '^stream ' | tr -s ' ')"
	fi
}

ctl_scenario_status() {
	_json=$(ctl -j status)
	_want=$(sed -n 's/.*drain signal: \(queue \)*\(probe\|iterator\|timed\).*/\2/p' \
		"$E2E_DIR/daemon.log" | head -n 1)
	if ! printf '%s\n' "$_json" | grep -q "\"drain\":\"${_want:-?}\""; then
		vmtest_fail ctl-status "the log says the drain signal is ${_want:-unknown}: $_json"
	elif [ "$_want" != timed ] && ! printf '%s\n' "$_json" | grep -q "\"$_want\":true"; then
		vmtest_fail ctl-status "the log says $_want, status does not: $_json"
	elif ! printf '%s\n' "$_json" | grep -q "\"release\":\"$(uname -r)\""; then
		vmtest_fail ctl-status "kernel release missing: $_json"
	else
		vmtest_pass ctl-status "$(ctl status | grep -E '^(kernel|probe|iterator|drain|lockdown|btf):' | tr -s ' ' | tr '\n' ';')"
	fi

	# The file did not change: every section and every live redirect stays.
	_before=$(ctl --no-legend list | awk '{print $1}' | tr '\n' ' ')
	_out=$(ctl reload 2>&1)
	_rc=$?
	_j=$(ctl -j reload)
	_after=$(ctl --no-legend list | awk '{print $1}' | tr '\n' ' ')
	if [ $_rc -eq 0 ] && printf '%s\n' "$_out" | grep -q ' 0 added, 0 removed, [1-9][0-9]* unchanged' &&
		printf '%s\n' "$_j" | grep -q '"added":0,"removed":0' && [ "$_before" = "$_after" ]; then
		vmtest_pass ctl-reload "$_out; live redirects before and after: $_after"
	else
		vmtest_fail ctl-reload "rc=$_rc: $_out $_j; redirects before: $_before after: $_after"
	fi
}

# bash completion of redirect IDs and commands, from the live daemon (needs bash: host only).
ctl_scenario_completion() {
	if ! command -v bash >/dev/null 2>&1 || [ ! -f completions/vsockmapctl ]; then
		vmtest_skip ctl-completion "needs bash and completions/vsockmapctl (host only)"
		return
	fi
	# shellcheck disable=SC2016 # expanded by bash
	_complete='. completions/vsockmapctl; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _vsockmapctl; echo "${COMPREPLY[*]}"'
	_ids=$(bash -c "$_complete" _ vsockmapctl -s "$E2E_DIR/control.sock" close "" | tr ' ' '\n' | sort -n | tr '\n' ' ' | sed 's/ $//')
	_want=$(printf '%s\n' "$CTL_ID1" "$CTL_ID2" "$CTL_ID3" | sort -n | tr '\n' ' ' | sed 's/ $//')
	_cmds=$(bash -c "$_complete" _ vsockmapctl st)
	_names=$(bash -c "$_complete" _ vsockmapctl --socket "$E2E_DIR/control.sock" list --name "")
	if [ "$_ids" != "$_want" ] || [ "$_cmds" != "stats status" ] ||
		! printf '%s\n' "$_names" | grep -q stream; then
		vmtest_fail ctl-completion "close IDs [$_ids] want [$_want]; st -> [$_cmds]; --name -> [$_names]"
	else
		vmtest_pass ctl-completion "close <TAB>: $_ids; st<TAB>: $_cmds; list --name <TAB>: $_names"
	fi
}

# Host only: the real daemon's JSON against the schema in docs/control-protocol.md.
ctl_scenario_schema() {
	_v=$(ctl_validator)
	if [ -z "$_v" ]; then
		vmtest_skip ctl-json-schema "the schema checker is a host unit-test binary; the VM checks the values above"
		return
	fi
	_bad=
	for _c in "list:array of redirect" "show $CTL_ID1:object redirect" \
		"listeners:array of listener" "stats:object stats" "status:object status" \
		"show 999999:object error" "reload:object reload"; do
		# shellcheck disable=SC2086 # the command's words
		ctl -j ${_c%%:*} >"$E2E_DIR/ctl-schema.json" 2>&1
		if ! "$_v" --validate "${_c#*:}" <"$E2E_DIR/ctl-schema.json" >"$E2E_DIR/ctl-schema.err" 2>&1; then
			_bad="$_bad ${_c%%:*}: $(cat "$E2E_DIR/ctl-schema.err")"
		fi
	done
	if [ -n "$_bad" ]; then
		vmtest_fail ctl-json-schema "$_bad"
	else
		vmtest_pass ctl-json-schema "list, show, listeners, stats, status, reload and errors match docs/control-protocol.md"
	fi
}

# Let clients 1 and 3 finish: their echoes must be complete.
ctl_finish_clients() {
	exec 7>&- 9>&-
	wait "$CTL_PID1" "$CTL_PID3" 2>/dev/null
	if cmp -s "$E2E_DIR/ctl-in1" "$E2E_DIR/ctl-out1" && cmp -s "$E2E_DIR/ctl-in3" "$E2E_DIR/ctl-out3" &&
		wait_no_redirects 10; then
		vmtest_pass ctl-clients-end "clients 1 and 3 got their bytes back and closed; no redirect left"
	else
		vmtest_fail ctl-clients-end "echo: $(wc -c <"$E2E_DIR/ctl-out1")/$(wc -c <"$E2E_DIR/ctl-in1"), $(wc -c <"$E2E_DIR/ctl-out3")/$(wc -c <"$E2E_DIR/ctl-in3"); live: $(ctl --no-legend list --name stream)"
	fi
	kill "$CTL_SERVER" 2>/dev/null
	wait "$CTL_SERVER" 2>/dev/null
}

ctl_run_live() {
	e2e_start_daemon || return 1
	ctl_start_server
	ctl_make_inputs
	exec 7<>"$E2E_DIR/ctl-fifo1" 8<>"$E2E_DIR/ctl-fifo2" 9<>"$E2E_DIR/ctl-fifo3"
	ctl_open_client 1 echo
	ctl_open_client 2 hold
	ctl_open_client 3 echo
	echo echo >"$CTL_REC/next-mode"
	run_with_timeout 60 cat "$E2E_DIR/ctl-in1" >&7
	run_with_timeout 60 cat "$E2E_DIR/ctl-in2" >&8
	run_with_timeout 60 cat "$E2E_DIR/ctl-in3" >&9
	if ctl_scenario_list; then
		ctl_scenario_show
		ctl_scenario_completion
		ctl_scenario_close
		ctl_scenario_stats
		ctl_scenario_listeners
		ctl_scenario_status
		ctl_scenario_schema
	fi
	exec 8>&-
	ctl_finish_clients
	e2e_stop_daemon
}

# ---- access --------------------------------------------------------------------------------

# ctl_access_daemon EXTRA_DAEMON_LINES: a daemon whose control socket sits in a directory
# everyone may enter.
ctl_access_daemon() {
	rm -f "$CTL_PUB"/*.sock
	printf '[daemon]\ncontrol = %s/control.sock\n%s\n[a]\nlisten = UNIX-LISTEN:%s/a.sock\nconnect = UNIX-CONNECT:%s/none.sock\n' \
		"$CTL_PUB" "$1" "$CTL_PUB" "$CTL_PUB" >"$CTL_PUB/c.conf"
	_ctl_before=$(log_count "$CTL_PUB/daemon.log" 'control socket .*: listening')
	vsockmapd -c "$CTL_PUB/c.conf" 2>>"$CTL_PUB/daemon.log" &
	CTL_ACCESS_DAEMON=$!
	# The file appears at bind(), mode 0000 until its group and mode are set and it listens
	# (control_server.c): ready once this daemon logs that it listens.
	wait_for_log "$CTL_PUB/daemon.log" 'control socket .*: listening' "$_ctl_before" \
		"$CTL_ACCESS_DAEMON" 20
}

ctl_access_stop() {
	kill "$CTL_ACCESS_DAEMON" 2>/dev/null
	wait "$CTL_ACCESS_DAEMON" 2>/dev/null
}

# ctl_as UID GID GROUPS ARGS...: vsockmapctl as another user ("-" GROUPS: none).
ctl_as() {
	_u=$1
	_g=$2
	_grp=$3
	shift 3
	if [ "$_grp" = - ]; then
		"$CTL_SETPRIV" --reuid="$_u" --regid="$_g" --clear-groups \
			vsockmapctl -s "$CTL_PUB/control.sock" "$@"
	else
		"$CTL_SETPRIV" --reuid="$_u" --regid="$_g" --groups="$_grp" \
			vsockmapctl -s "$CTL_PUB/control.sock" "$@"
	fi
}

# util-linux setpriv; busybox has one too, without --reuid (the VM adds /usr/bin/setpriv).
ctl_find_setpriv() {
	for _s in setpriv /usr/bin/setpriv; do
		if "$_s" --help 2>&1 | grep -q -- --reuid; then
			command -v "$_s"
			return 0
		fi
	done
	return 1
}

ctl_run_access() {
	if ! CTL_SETPRIV=$(ctl_find_setpriv); then
		vmtest_skip ctl-access "no util-linux setpriv with --reuid here"
		return
	fi
	CTL_PUB=$(mktemp -d "${TMPDIR:-/tmp}/vsockmap-ctl.XXXXXX")
	chmod 0755 "$CTL_PUB"

	# The default: mode 0600, root only. The kernel refuses the connect().
	if ctl_access_daemon ""; then
		ctl_as 65534 65534 - list >"$CTL_PUB/out" 2>&1
		_rc=$?
		if [ $_rc -eq 1 ] && grep -q 'Permission denied' "$CTL_PUB/out" &&
			[ "$(wc -l <"$CTL_PUB/out")" -eq 1 ]; then
			vmtest_pass ctl-refused-default "uid 65534, socket $(stat -c '%a %U:%G' "$CTL_PUB/control.sock"): $(cat "$CTL_PUB/out")"
		else
			vmtest_fail ctl-refused-default "rc=$_rc: $(cat "$CTL_PUB/out")"
		fi
	else
		vmtest_fail ctl-refused-default "daemon did not start: $(tail -n 2 "$CTL_PUB/daemon.log")"
	fi
	ctl_access_stop

	# A socket everyone may connect to: the daemon itself refuses by SO_PEERCRED.
	if ctl_access_daemon "control-mode = 0666"; then
		ctl_as 65534 65534 - -j list >"$CTL_PUB/out" 2>&1
		_rc=$?
		if [ $_rc -eq 1 ] && grep -q '"errno":13' "$CTL_PUB/out" &&
			grep -q 'uid 65534 may not use the control socket' "$CTL_PUB/out" &&
			grep -q 'refused uid 65534' "$CTL_PUB/daemon.log"; then
			vmtest_pass ctl-refused-non-root "mode 0666, no group: $(cat "$CTL_PUB/out")"
		else
			vmtest_fail ctl-refused-non-root "rc=$_rc: $(cat "$CTL_PUB/out")"
		fi
	else
		vmtest_fail ctl-refused-non-root "daemon did not start: $(tail -n 2 "$CTL_PUB/daemon.log")"
	fi
	ctl_access_stop

	# control-group: members (supplementary or primary group) are served, others are not.
	if ctl_access_daemon "control-group = 4242"; then
		_st=$(stat -c '%a %g' "$CTL_PUB/control.sock")
		ctl_as 65534 65534 4242 list >"$CTL_PUB/out1" 2>&1
		_rc1=$?
		ctl_as 65534 4242 - -j status >"$CTL_PUB/out2" 2>&1
		_rc2=$?
		ctl_as 65534 65534 - list >"$CTL_PUB/out3" 2>&1
		_rc3=$?
		if [ "$_st" != "660 4242" ]; then
			vmtest_fail ctl-group-allowed "socket file is $_st, want mode 660 group 4242"
		elif [ $_rc1 -ne 0 ] || [ $_rc2 -ne 0 ] || ! grep -q '"group":"4242"' "$CTL_PUB/out2"; then
			vmtest_fail ctl-group-allowed "supplementary: rc=$_rc1 $(head -n 2 "$CTL_PUB/out1"); primary: rc=$_rc2 $(cat "$CTL_PUB/out2")"
		else
			vmtest_pass ctl-group-allowed "uid 65534 in group 4242 (supplementary, then primary) served; socket mode $_st"
		fi
		if [ $_rc3 -eq 1 ] && grep -q 'Permission denied' "$CTL_PUB/out3"; then
			vmtest_pass ctl-group-refused "uid 65534 outside group 4242: $(cat "$CTL_PUB/out3")"
		else
			vmtest_fail ctl-group-refused "rc=$_rc3: $(cat "$CTL_PUB/out3")"
		fi
	else
		vmtest_fail ctl-group-allowed "daemon did not start: $(tail -n 2 "$CTL_PUB/daemon.log")"
	fi
	ctl_access_stop
	rm -rf "$CTL_PUB"
}

# ---- no daemon -----------------------------------------------------------------------------

ctl_run_no_daemon() {
	vsockmapctl -s "$E2E_DIR/ctl-none.sock" list >"$E2E_DIR/ctl-nd.out" 2>"$E2E_DIR/ctl-nd.err"
	_rc=$?
	if [ $_rc -eq 1 ] && [ ! -s "$E2E_DIR/ctl-nd.out" ] && [ "$(wc -l <"$E2E_DIR/ctl-nd.err")" -eq 1 ] &&
		grep -q 'is vsockmapd running?' "$E2E_DIR/ctl-nd.err"; then
		vmtest_pass ctl-not-running "exit 1, one line: $(cat "$E2E_DIR/ctl-nd.err")"
	else
		vmtest_fail ctl-not-running "rc=$_rc: $(cat "$E2E_DIR/ctl-nd.out" "$E2E_DIR/ctl-nd.err")"
	fi

	# A socket file left by a daemon that died: nobody listens, connect() is refused.
	rm -f "$E2E_DIR/ctl-stale.sock"
	socat "UNIX-LISTEN:$E2E_DIR/ctl-stale.sock" /dev/null 2>/dev/null &
	_pid=$!
	wait_for_socket "$E2E_DIR/ctl-stale.sock" 10
	kill -9 $_pid
	wait $_pid 2>/dev/null
	vsockmapctl -s "$E2E_DIR/ctl-stale.sock" -j status >"$E2E_DIR/ctl-nd.out" 2>"$E2E_DIR/ctl-nd.err"
	_rc=$?
	if [ $_rc -eq 1 ] && [ ! -s "$E2E_DIR/ctl-nd.err" ] && [ "$(wc -l <"$E2E_DIR/ctl-nd.out")" -eq 1 ] &&
		grep -q '"errno":111' "$E2E_DIR/ctl-nd.out"; then
		vmtest_pass ctl-stale-socket "exit 1, one JSON line: $(cat "$E2E_DIR/ctl-nd.out")"
	else
		vmtest_fail ctl-stale-socket "rc=$_rc: $(cat "$E2E_DIR/ctl-nd.out" "$E2E_DIR/ctl-nd.err")"
	fi
	rm -f "$E2E_DIR/ctl-stale.sock"

	vsockmapctl frobnicate >/dev/null 2>&1
	_rc=$?
	vsockmapctl show >/dev/null 2>&1
	_rc2=$?
	if [ $_rc -eq 2 ] && [ $_rc2 -eq 2 ]; then
		vmtest_pass ctl-usage-exit "unknown command and missing ID: exit 2"
	else
		vmtest_fail ctl-usage-exit "exit $_rc and $_rc2, want 2"
	fi
}

# The timed drain: status tells why neither exact signal is in use.
ctl_run_timed_status() {
	e2e_start_daemon --drain=timed || return 1
	_json=$(ctl -j status)
	if printf '%s\n' "$_json" | grep -q '"probe":false,"probe_error":"not asked for (--drain)"' &&
		printf '%s\n' "$_json" | grep -q '"iterator":false,"iterator_error":"not asked for (--drain)"' &&
		printf '%s\n' "$_json" | grep -q '"drain":"timed"'; then
		vmtest_pass ctl-status-timed "$(ctl status | grep -E '^(probe|iterator):' | tr -s ' ' | tr '\n' ';')"
	else
		vmtest_fail ctl-status-timed "$_json"
	fi
	e2e_stop_daemon
}

ctl_run_all() {
	ctl_run_live
	ctl_run_timed_status
	ctl_run_access
	ctl_run_no_daemon
}
