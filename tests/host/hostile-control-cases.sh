# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# A control plane that cannot stall the data (docs/control-protocol.md, "Limits and
# fairness"): read-role clients that flood the control socket with list requests, or ask
# for big answers and read them a byte a second, while thousands of redirects are live.
# The data path must stay responsive (a 64-byte ping-pong through the daemon, whose longest
# round trip shows the longest stall of the event loop), the daemon must keep its watchdog
# (armed as systemd arms it: NOTIFY_SOCKET and WATCHDOG_USEC, HC_WATCHDOG_MS), and an
# administrator's list must still be answered in full. Throwaway users
# (tests/lib/throwaway-users.sh). Sourced by tests/host/run.sh after access-cases.sh (PYTHON).
#
# HC_PING_P99_MS: the bound on the 99th percentile of round trips while a reader floods list
# requests it may see nothing of, and HC_PING_MAX_MS on the longest (the loop's longest
# stall). Measured on a 2-core machine with 2,000 idle redirects (5 s of pings): before the
# fair server, p50 122 ms, max 244 ms (it answered a whole 16 KiB read of requests per
# dispatch, each list asking all 2,000 redirects); after it, p99 0.3-0.8 ms, max 3.3 ms, and
# single spikes up to 34 ms while the machine was busy with other work (they show with no
# control load too): the percentile tells the two apart with a wide margin either way.
# HC_PING_BIG_MAX_MS: the same while the reader lists its own 3,000 (1.8 MB answers): one
# such answer is built in one dispatch, before and after (max 31 and 61 ms measured), so this
# bound only says the loop never stalls for seconds; it does not tell the two apart.
HC_PING_P99_MS=${HC_PING_P99_MS:-50}
HC_PING_MAX_MS=${HC_PING_MAX_MS:-500}
HC_PING_BIG_MAX_MS=${HC_PING_BIG_MAX_MS:-2000}
# The daemon's WatchdogSec= here: sd-event sends WATCHDOG=1 every quarter of it (500 ms)
# whenever the loop runs, so the longest gap between two is the loop's longest stall plus
# that; a gap of the whole timeout would have got the daemon killed under systemd.
HC_WATCHDOG_MS=${HC_WATCHDOG_MS:-2000}
HC_HELPER=tests/host/hostile-control.py

hc_cleanup() {
	# The peers first: a daemon stopped with 5,000 redirects still open waits to drain them.
	((${#HC_PIDS[@]})) && kill "${HC_PIDS[@]}" 2>/dev/null
	wait "${HC_PIDS[@]}" 2>/dev/null
	[[ -n ${HC_DAEMON:-} ]] && kill -TERM "$HC_DAEMON" 2>/dev/null
	wait 2>/dev/null
	throwaway_cleanup
}

hc_setup() {
	local tag=$$
	HC_READERS=vsmhr$tag HC_READER=vsmhu$tag
	throwaway_group "$HC_READERS" && throwaway_user "$HC_READER" "$HC_READERS"
}

# hc_hold USER COUNT: COUNT idle redirects whose client runs as USER, held until the end.
hc_hold() {
	local ready=$HC_DIR/held/$1.$2
	run_as "$1" "$PYTHON" "$HC_HELPER" hold "$HC_DIR/idle.sock" "$2" "$ready" "$HC_DIR/release" &
	HC_PIDS+=("$!")
	wait_for_file "$ready" 30
}

# hc_live: how many redirects the daemon lists to root (-1: no answer).
hc_live() {
	vsockmapctl -s "$HC_DIR/ctl.sock" -j list 2>/dev/null |
		"$PYTHON" -c 'import json,sys
try: print(len(json.load(sys.stdin)))
except Exception: print(-1)'
}

# hc_wait_live N: until the daemon holds at least N redirects (30 s at most).
hc_wait_live() {
	local i
	for ((i = 0; i < 150; i++)); do
		(($(hc_live) >= $1)) && return 0
		sleep 0.2
	done
	return 1
}

# hc_ping SECONDS: "n=... p50=... p99=... max=..." of round trips through the echo section.
hc_ping() {
	"$PYTHON" "$HC_HELPER" ping "$HC_DIR/echo.sock" "$1"
}

# hc_ping_ms STATS KEY: KEY= (p99, max) of hc_ping's line, in whole ms rounded up.
hc_ping_ms() {
	local m=${1##*"$2"=}
	awk -v m="${m%% *}" 'BEGIN { printf "%d\n", m + 0.999 }'
}

# hc_flood_case NAME P99_MS MAX_MS WHAT: a reader floods list (200 per write) while the ping
# runs.
hc_flood_case() {
	local name=$1 p99_bound=$2 bound=$3 what=$4 flood stats p99 max from watchdog gap
	# From the last keep-alive before the flood (line 1 if there was none yet).
	from=$(wc -l <"$HC_DIR/watchdog.log")
	((from > 0)) || from=1
	run_as "$HC_READER" "$PYTHON" "$HC_HELPER" flood "$HC_DIR/ctl.sock" 6 200 \
		>"$HC_DIR/flood.out" 2>&1 &
	flood=$!
	sleep 0.5
	stats=$(hc_ping 5 2>&1)
	wait "$flood"
	watchdog=$("$PYTHON" "$HC_HELPER" watchdog-gap "$HC_DIR/watchdog.log" "$from")
	gap=${watchdog#gap_ms=}
	gap=${gap%% *}
	p99=$(hc_ping_ms "$stats" p99)
	max=$(hc_ping_ms "$stats" max)
	if [[ $stats == n=* ]] && ((p99 <= p99_bound && max <= bound)) &&
		[[ $watchdog == *' pings='[1-9]* ]] && ((gap < HC_WATCHDOG_MS)) &&
		grep -q '^requests=[1-9][0-9]* .* errors=0$' "$HC_DIR/flood.out"; then
		vmtest_pass "$name" "$what: ping $stats ms (bounds: p99 $p99_bound, max $bound ms); watchdog $watchdog (timeout $HC_WATCHDOG_MS ms); reader $(<"$HC_DIR/flood.out")"
	else
		vmtest_fail "$name" "$what: ping $stats ms, bounds: p99 $p99_bound, max $bound ms; watchdog $watchdog, timeout $HC_WATCHDOG_MS ms; reader: $(tail -n 1 "$HC_DIR/flood.out")"
	fi
}

hc_body() {
	local stats out rc n per_uid=''
	HC_PIDS=() HC_DAEMON=''
	trap hc_cleanup EXIT
	# The helpers leave their ready files there, whatever user they run as.
	mkdir -m 1777 "$HC_DIR/held"
	if ! hc_setup 2>"$HC_DIR/setup.log"; then
		vmtest_skip hostile-control "cannot make throwaway users and groups: $(tail -n 1 "$HC_DIR/setup.log")"
		return
	fi
	"$PYTHON" "$HC_HELPER" sink "$HC_DIR/sink.sock" "$HC_DIR/sink.ready" &
	HC_PIDS+=("$!")
	vsm-peer server "unix:$HC_DIR/srv.sock" --echo --timeout 0 >"$HC_DIR/srv.log" 2>&1 &
	HC_PIDS+=("$!")
	: >"$HC_DIR/watchdog.log"
	"$PYTHON" "$HC_HELPER" notify "$HC_DIR/notify.sock" "$HC_DIR/notify.ready" \
		"$HC_DIR/watchdog.log" &
	HC_PIDS+=("$!")
	wait_for_file "$HC_DIR/sink.ready" 10
	wait_for_file "$HC_DIR/notify.ready" 10
	wait_for_socket "$HC_DIR/srv.sock" 10
	# More redirects of one uid than max-redirects-per-uid allows by default.
	per_uid='max-redirects-per-uid = 0'
	# Long paths and a long section name: every listed redirect takes about 600 bytes, so a
	# reader's list of its 3,000 is a 1.8 MB answer.
	mkdir -p "$HC_DIR/long-directory-name-for-longer-listed-addresses-0123456789"
	ln -s "$HC_DIR/sink.sock" "$HC_DIR/long-directory-name-for-longer-listed-addresses-0123456789/sink.sock"
	{
		printf '[daemon]\ncontrol = %s/ctl.sock\ndatapath = userspace\n' "$HC_DIR"
		printf 'control-group = %s\n%s\n' "$HC_READERS" "$per_uid"
		printf '[idle-clients-of-a-section-with-a-long-name]\n'
		printf 'listen = UNIX-LISTEN:%s/long-directory-name-for-longer-listed-addresses-0123456789/idle.sock,mode=0666\n' "$HC_DIR"
		printf 'connect = UNIX-CONNECT:%s/long-directory-name-for-longer-listed-addresses-0123456789/sink.sock\n' "$HC_DIR"
		printf '[echo]\nlisten = UNIX-LISTEN:%s/echo.sock,mode=0666\n' "$HC_DIR"
		printf 'connect = UNIX-CONNECT:%s/srv.sock\n' "$HC_DIR"
	} >"$HC_DIR/c.conf"
	NOTIFY_SOCKET=$HC_DIR/notify.sock WATCHDOG_USEC=$((HC_WATCHDOG_MS * 1000)) \
		vsockmapd -c "$HC_DIR/c.conf" 2>"$HC_DIR/daemon.log" &
	HC_DAEMON=$!
	if ! wait_for_log "$HC_DIR/daemon.log" 'control socket .*: listening' 0 "$HC_DAEMON" 20; then
		vmtest_fail hostile-control "daemon did not start: $(tail -n 2 "$HC_DIR/daemon.log")"
		return
	fi
	ln -s "$HC_DIR/long-directory-name-for-longer-listed-addresses-0123456789/idle.sock" "$HC_DIR/idle.sock"

	# a) 2,000 idle redirects of root's: the reader sees none of them, each list is empty.
	if ! hc_hold root 2000 || ! hc_wait_live 2000; then
		vmtest_fail hostile-control "2000 idle redirects did not come up ($(hc_live) live): $(tail -n 2 "$HC_DIR/daemon.log")"
		return
	fi
	stats=$(hc_ping 2 2>&1)
	vmtest_log "hostile-control: ping with 2000 idle redirects, no control load: $stats ms"
	hc_flood_case hostile-ctl-list-flood "$HC_PING_P99_MS" "$HC_PING_MAX_MS" "2000 idle redirects of root's, reader lists none"

	# The same, with 3,000 of the reader's own: every list is a 2 MiB answer.
	if ! hc_hold "$HC_READER" 3000 || ! hc_wait_live 5000; then
		vmtest_fail hostile-control "the reader's 3000 redirects did not come up ($(hc_live) live)"
		return
	fi
	hc_flood_case hostile-ctl-list-flood-big "$HC_PING_BIG_MAX_MS" "$HC_PING_BIG_MAX_MS" "5000 idle redirects, reader lists its 3000"

	# b) 45 readers take a 1.8 MB answer each, a byte a second: more than the daemon holds
	# for all clients (64 MiB). The administrator's list is still answered, all of it.
	run_as "$HC_READER" "$PYTHON" "$HC_HELPER" trickle "$HC_DIR/ctl.sock" 45 \
		"$HC_DIR/held/trickle" "$HC_DIR/release" >"$HC_DIR/trickle.log" 2>&1 &
	HC_PIDS+=("$!")
	if ! wait_for_file "$HC_DIR/held/trickle" 30; then
		vmtest_fail hostile-ctl-admin-answer "the trickling readers got no answers: $(tail -n 2 "$HC_DIR/trickle.log")"
		return
	fi
	out=$(vsockmapctl -s "$HC_DIR/ctl.sock" -j list 2>&1)
	rc=$?
	n=$("$PYTHON" -c 'import json,sys
try: print(len(json.load(sys.stdin)))
except Exception: print(-1)' <<<"$out")
	if ((rc == 0 && n >= 5000)); then
		vmtest_pass hostile-ctl-admin-answer "45 readers trickle 1.8 MB answers; root's list: $n redirects, ${#out} bytes; $(grep -c 'answer of [0-9]* bytes refused' "$HC_DIR/daemon.log") reader answers refused, e.g. $(grep -m1 -o 'answer of [0-9]* bytes refused.*' "$HC_DIR/daemon.log")"
	else
		vmtest_fail hostile-ctl-admin-answer "rc=$rc, $n redirects: ${out:0:300}"
	fi
	touch "$HC_DIR/release"
}

host_hostile_control_cases() {
	local rc
	if ! command -v useradd >/dev/null || ! command -v groupadd >/dev/null; then
		vmtest_skip hostile-control "no useradd/groupadd here to make throwaway users"
		return
	fi
	HC_DIR=$(mktemp -d /tmp/vsockmap-hostile-ctl.XXXXXX)
	chmod 0755 "$HC_DIR"
	# A subshell, so that its EXIT trap removes the users however the cases end.
	(hc_body)
	rc=$?
	rm -rf "$HC_DIR"
	return $rc
}
