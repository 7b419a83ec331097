# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# What one local client may cost (docs/security.md, "What one connection costs"): clients
# that never read pin no more kernel memory through the daemon than 4 times what they pin on
# a direct socket, and max-redirects-per-uid refuses a uid's connection over the limit, logs
# and counts it, and leaves other uids' connections alone, and neither such a flood nor a
# bulk transfer keeps an administrator's request waiting. Sourced by tests/host/run.sh
# after access-cases.sh (PYTHON).

HOSTILE_UNREAD_CONNS=200
HOSTILE_MEMORY_RATIO_MAX=4

# hostile_daemon DIR [DAEMON_LINE]...: vsockmapd with section [h], DIR/c.sock to DIR/s.sock
# (mode 0666: any uid may connect), the default data path; its pid in HOSTILE_PID.
hostile_daemon() {
	local dir=$1 line
	shift
	{
		printf '[daemon]\ncontrol = %s/ctl.sock\n' "$dir"
		for line in "$@"; do
			printf '%s\n' "$line"
		done
		printf '[h]\nlisten = UNIX-LISTEN:%s/c.sock,mode=0666\nconnect = UNIX-CONNECT:%s/s.sock\n' \
			"$dir" "$dir"
	} >"$dir/c.conf"
	vsockmapd -c "$dir/c.conf" 2>"$dir/daemon.log" &
	HOSTILE_PID=$!
	wait_for_socket "$dir/c.sock" 10
}

hostile_stop() {
	kill -TERM "$HOSTILE_PID" 2>/dev/null
	wait "$HOSTILE_PID" 2>/dev/null
}

# 200 clients that never read, a unix server that writes to each until it blocks: direct,
# then through the daemon's default config.
hostile_unread_memory() {
	local dir=$1 direct through d_k t_k
	direct=$("$PYTHON" tests/host/hostile-clients.py unread "$dir/direct.sock" "$dir/direct.sock" \
		"$HOSTILE_UNREAD_CONNS" 2>&1)
	if ! hostile_daemon "$dir"; then
		vmtest_fail hostile-unread-memory "the daemon did not come up: $(tail -n 2 "$dir/daemon.log")"
		hostile_stop
		return
	fi
	through=$("$PYTHON" tests/host/hostile-clients.py unread "$dir/c.sock" "$dir/s.sock" \
		"$HOSTILE_UNREAD_CONNS" 2>&1)
	hostile_stop
	d_k=$(sed -n 's/.*kernel_per_conn=\([0-9]*\).*/\1/p' <<<"$direct")
	t_k=$(sed -n 's/.*kernel_per_conn=\([0-9]*\).*/\1/p' <<<"$through")
	if [[ -z $d_k || -z $t_k || $d_k -eq 0 ]]; then
		vmtest_fail hostile-unread-memory "no figures: direct: $direct; through: $through"
	elif ((t_k <= HOSTILE_MEMORY_RATIO_MAX * d_k)); then
		vmtest_pass hostile-unread-memory "$HOSTILE_UNREAD_CONNS unread clients: $((t_k / 1024)) KiB of kernel memory per connection through the daemon, $((d_k / 1024)) KiB direct (at most ${HOSTILE_MEMORY_RATIO_MAX}x); $through"
	else
		vmtest_fail hostile-unread-memory "$((t_k / 1024)) KiB per connection through the daemon, $((d_k / 1024)) KiB direct: over ${HOSTILE_MEMORY_RATIO_MAX}x; direct: $direct; through: $through"
	fi
}

# max-redirects-per-uid = 4: nobody's fifth connection is refused (logged, counted), root's
# goes through meanwhile, and nobody gets a connection again once one of its four closes.
hostile_uid_limit() {
	local dir=$1 echo_pid words again root_ok=no refused logged
	vsm-bench pingpong-server "unix:$dir/s.sock" >/dev/null 2>&1 &
	echo_pid=$!
	wait_for_socket "$dir/s.sock" 10
	if ! hostile_daemon "$dir" 'max-redirects-per-uid = 4'; then
		vmtest_fail hostile-uid-limit "the daemon did not come up: $(tail -n 2 "$dir/daemon.log")"
		hostile_stop
		kill "$echo_pid" 2>/dev/null
		return
	fi
	: >"$dir/hold"
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$PYTHON" tests/host/hostile-clients.py conns "$dir/c.sock" 5 "$dir/hold" \
		>"$dir/nobody.out" 2>&1 &
	local client=$!
	local i
	for ((i = 0; i < 300; i++)); do
		[[ -s $dir/nobody.out ]] && break
		sleep 0.1
	done
	"$PYTHON" tests/host/hostile-clients.py conns "$dir/c.sock" 1 /nonexistent \
		>"$dir/root.out" 2>&1 && [[ $(head -n 1 "$dir/root.out") == ok ]] && root_ok=yes
	refused=$(vsockmapctl -s "$dir/ctl.sock" -j stats 2>/dev/null |
		"$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["refused_uid_limit"])' 2>&1)
	logged=$(grep -c 'uid 65534 has 4 redirects live, max-redirects-per-uid is 4' "$dir/daemon.log")
	rm -f "$dir/hold"
	wait "$client"
	words=$(head -n 1 "$dir/nobody.out")
	again=$(sed -n 2p "$dir/nobody.out")
	hostile_stop
	kill "$echo_pid" 2>/dev/null
	wait "$echo_pid" 2>/dev/null
	if [[ $words == "ok ok ok ok refused" && $again == again=ok && $root_ok == yes &&
		$refused == 1 && $logged == 1 ]]; then
		vmtest_pass hostile-uid-limit "nobody: $words, then $again; root: ok; refused_uid_limit=1; logged once"
	else
		vmtest_fail hostile-uid-limit "nobody: '$words' '$again' (want 'ok ok ok ok refused' 'again=ok'); root ok: $root_ok; refused_uid_limit=$refused (want 1); log lines: $logged (want 1): $(tail -n 3 "$dir/daemon.log")"
	fi
}

# While 1 GiB/s moves through one section and nobody's clients, at their limit, connect and
# are refused as fast as they can, root's control requests are still answered at once: the
# control socket takes its turn with the data path (a lower priority would wait for both).
HOSTILE_ADMIN_MAX_MS=1000
hostile_admin_under_load() {
	local dir=$1 sink src i t0 t1 ms max=0 bad=0 floods=() flooded
	vsm-bench pingpong-server "unix:$dir/s.sock" >/dev/null 2>&1 &
	local echo_pid=$!
	vsm-bench sink "unix:$dir/sink.sock" --conns 2 --no-eof >/dev/null 2>&1 &
	sink=$!
	wait_for_socket "$dir/s.sock" 10
	wait_for_socket "$dir/sink.sock" 10
	if ! hostile_daemon "$dir" 'max-redirects-per-uid = 2' "$(printf '[bulk]\nlisten = UNIX-LISTEN:%s/b.sock\nconnect = UNIX-CONNECT:%s/sink.sock' "$dir" "$dir")"; then
		vmtest_fail hostile-admin-under-load "the daemon did not come up: $(tail -n 2 "$dir/daemon.log")"
		hostile_stop
		kill "$echo_pid" "$sink" 2>/dev/null
		return
	fi
	vsm-bench source "unix:$dir/b.sock" --bytes 64G --parallel 2 >/dev/null 2>&1 &
	src=$!
	: >"$dir/hold"
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$PYTHON" tests/host/hostile-clients.py conns "$dir/c.sock" 2 "$dir/hold" \
		>"$dir/nobody.out" 2>&1 &
	local client=$!
	for ((i = 0; i < 3; i++)); do
		setpriv --reuid=nobody --regid=nogroup --clear-groups \
			"$PYTHON" tests/host/hostile-clients.py flood "$dir/c.sock" 8 >"$dir/flood$i.out" 2>&1 &
		floods+=($!)
	done
	sleep 1
	for ((i = 0; i < 20; i++)); do
		t0=$(date +%s%N)
		vsockmapctl -s "$dir/ctl.sock" status >/dev/null 2>&1 || bad=$((bad + 1))
		t1=$(date +%s%N)
		ms=$(((t1 - t0) / 1000000))
		((ms > max)) && max=$ms
		sleep 0.2
	done
	wait "${floods[@]}"
	flooded=$(cat "$dir"/flood*.out | tr '\n' ' ')
	rm -f "$dir/hold"
	wait "$client"
	kill "$src" 2>/dev/null
	wait "$src" 2>/dev/null
	hostile_stop
	kill "$echo_pid" "$sink" 2>/dev/null
	wait "$echo_pid" "$sink" 2>/dev/null
	if ((bad == 0 && max <= HOSTILE_ADMIN_MAX_MS)); then
		vmtest_pass hostile-admin-under-load "20 status requests under a bulk transfer and a connect flood at the limit ($flooded): all answered, the slowest in $max ms (bound $HOSTILE_ADMIN_MAX_MS ms)"
	else
		vmtest_fail hostile-admin-under-load "$bad of 20 status requests failed, the slowest took $max ms (bound $HOSTILE_ADMIN_MAX_MS ms); floods: $flooded"
	fi
}

host_hostile_client_cases() {
	local dir
	dir=$(mktemp -d /tmp/vsockmap-hostile.XXXXXX)
	chmod 0755 "$dir"
	hostile_unread_memory "$dir"
	rm -f "$dir"/*.sock
	hostile_uid_limit "$dir"
	rm -f "$dir"/*.sock
	hostile_admin_under_load "$dir"
	rm -rf "$dir"
}
