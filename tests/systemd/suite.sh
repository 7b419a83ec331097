#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# suite.sh - vsockmapd under real systemd (PID 1), inside the systemd test VM. Run by
# vsockmap-test.service; prints VMTEST lines on the serial console (tests/lib/harness.sh) and
# "VMSUITE-END rc=N" at the end. SYSTEMD_TESTS="name ..." runs only those groups.
#
# Everything under test comes from the Debian package, installed first with apt
# (package.sh): the unit in /lib/systemd/system; then, as a user would configure it, the
# example configuration (config/vsockmap.conf) as /etc/vsockmap/vsockmap.conf and the example
# socket units in /etc/systemd/system. Test variations are runtime drop-ins in
# /run/systemd/system/vsockmapd.service.d, removed after each group. A vsock echo service
# listens on port 5000 of CID 1 (socat through vsock_loopback). The package group (upgrade,
# remove, purge) comes last.

# shellcheck source=tests/lib/harness.sh
. "${VMTEST_LIB:-/usr/lib/vmtest/lib.sh}"
# shellcheck source=tests/systemd/package.sh
. "$(dirname "${BASH_SOURCE[0]}")/package.sh"
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export SYSTEMD_PAGER='' SYSTEMD_COLORS=0

SVC=vsockmapd.service
DROPIN=/run/systemd/system/vsockmapd.service.d
T=$VMTEST_TMP/systemd-suite
mkdir -p "$T"

want() {
	[[ -z ${SYSTEMD_TESTS:-} || " $SYSTEMD_TESTS " == *" $1 "* ]]
}

# want_one GROUP NAME: the group is wanted, or this one test of it by name.
want_one() {
	want "$1" || [[ " ${SYSTEMD_TESTS:-} " == *" $2 "* ]]
}

prop() {
	systemctl show -P "$2" "$1" 2>/dev/null
}

# jlog INVOCATION_ID [MATCH...]: what one run of a unit logged, message text only.
jlog() {
	local id=$1
	shift
	journalctl -q --no-pager -o cat _SYSTEMD_INVOCATION_ID="$id" "$@" 2>/dev/null
}

# wait_journal INVOCATION_ID REGEX SEC: journald works asynchronously; poll for a message.
wait_journal() {
	local i
	for ((i = 0; i < $3 * 5; i++)); do
		jlog "$1" | grep -qE -- "$2" && return 0
		sleep 0.2
	done
	return 1
}

# dropin NAME LINES...: a runtime drop-in for vsockmapd.service, then daemon-reload.
dropin() {
	local name=$1
	shift
	mkdir -p "$DROPIN"
	printf '%s\n' "[Service]" "$@" >"$DROPIN/$name.conf"
	systemctl daemon-reload
}

clear_dropins() {
	rm -rf "$DROPIN"
	systemctl daemon-reload
}

stop_all() {
	systemctl stop vsockmapd.socket vsockmapd-logs.socket "$SVC" 2>/dev/null
	systemctl reset-failed "$SVC" vsockmapd.socket vsockmapd-logs.socket 2>/dev/null
}

# echo_check NAME PATH SIZE: SIZE bytes through the redirect at PATH to the vsock echo
# service and back, verified by vsm-peer. Prints vsm-peer's total line; status as vsm-peer.
echo_check() {
	vsm-peer client "unix:$2" --send "$3" --after echo --timeout 60 >"$T/$1.client" 2>&1
	local rc=$?
	grep -m1 '^client total' "$T/$1.client" || tail -n 2 "$T/$1.client"
	return $rc
}

# tail_of FILE: the last lines of a file, on one line, for a FAIL detail.
tail_of() {
	tail -n "${2:-3}" "$1" 2>/dev/null | tr '\n' ' '
}

# jtail INVOCATION_ID: the last journal lines of a run, on one line.
jtail() {
	jlog "$1" | tail -n "${2:-3}" | tr '\n' ' '
}

# ---- boot ------------------------------------------------------------------------------------

boot_state=$(timeout 120 systemctl is-system-running --wait 2>&1)
vmtest_log "suite start: system $boot_state at $(cut -d' ' -f1 /proc/uptime)s uptime"
boot_time=$(systemd-analyze time 2>/dev/null | sed -n 's/^Startup finished in //p' | head -n1)

test_setup() {
	local problems=() ver bpffs missing
	ver=$(systemctl --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p')
	[[ $(readlink /proc/1/exe) == */systemd ]] || problems+=("PID 1 is $(readlink /proc/1/exe)")
	for m in vsock vmw_vsock_virtio_transport_common vsock_loopback; do
		[[ -d /sys/module/$m ]] || problems+=("module $m not loaded")
	done
	bpffs=$(stat -f -c %T /sys/fs/bpf 2>/dev/null)
	[[ $bpffs == bpf_fs ]] || problems+=("/sys/fs/bpf is ${bpffs:-not mounted}, not bpffs")
	missing=$(ldd /usr/sbin/vsockmapd /usr/bin/vsockmapctl 2>&1 | grep 'not found' | tr -s ' \t\n' ' ')
	[[ -z $missing ]] || problems+=("libraries missing in the image: $missing (rebuild it: VSOCKMAP_VM_REFRESH=1)")
	if ((${#problems[@]})); then
		vmtest_fail systemd-vm "${problems[*]}"
		return 1
	fi
	vmtest_pass systemd-vm "systemd $ver as PID 1 ($boot_state; startup $boot_time), kernel $(uname -r), vsock modules loaded, bpffs on /sys/fs/bpf"
}

start_echo_service() {
	systemd-run --quiet --unit=vsock-echo -p Restart=always \
		socat VSOCK-LISTEN:5000,reuseaddr,fork EXEC:cat
	local i
	for ((i = 0; i < 50; i++)); do
		socat -u /dev/null VSOCK-CONNECT:1:5000 2>/dev/null && return 0
		sleep 0.2
	done
	vmtest_fail vsock-echo "socat VSOCK-LISTEN:5000 did not come up: $(journalctl -q -u vsock-echo -o cat | tail -n 2)"
	return 1
}

# ---- 1. start: active only once the listeners exist, STATUS= -------------------------------

test_start() {
	local t0 t1 rc inv active_us missing=() late status f line_us msg lines
	stop_all
	t0=$(now_ms)
	timeout 60 systemctl start "$SVC"
	rc=$?
	t1=$(now_ms)
	# Right when "systemctl start" returns (Type=notify: READY=1 was received), everything exists.
	for f in /run/vsockmap/echo.sock /run/vsockmap/logs.sock /run/vsockmap/control.sock; do
		[[ -S $f ]] || missing+=("$f")
	done
	inv=$(prop "$SVC" InvocationID)
	if ((rc != 0)) || [[ $(prop "$SVC" ActiveState)/$(prop "$SVC" SubState) != active/running ]]; then
		vmtest_fail start-ready "systemctl start rc=$rc, state $(prop "$SVC" ActiveState)/$(prop "$SVC" SubState): $(jtail "$inv")"
		return 1
	fi
	if ((${#missing[@]})); then
		vmtest_fail start-ready "active, but not there yet: ${missing[*]}"
		return 1
	fi
	# Every "listening" line was logged before systemd marked the unit active.
	active_us=$(busctl get-property org.freedesktop.systemd1 /org/freedesktop/systemd1/unit/vsockmapd_2eservice \
		org.freedesktop.systemd1.Unit ActiveEnterTimestamp | awk '{print $2}')
	wait_journal "$inv" 'control socket .*: listening' 5
	lines=0
	late=
	while read -r ts msg; do
		line_us=$(awk -v t="$ts" 'BEGIN { printf "%.0f", t * 1000000 }')
		lines=$((lines + 1))
		((line_us <= active_us)) || late+="$msg; "
	done < <(journalctl -q --no-pager -o short-unix _SYSTEMD_INVOCATION_ID="$inv" |
		grep -E 'listening on|receiving datagrams on|control socket .*: listening' |
		sed -E 's/^([0-9.]+) [^:]*: /\1 /')
	if ((lines != 3)) || [[ -n $late ]]; then
		vmtest_fail start-ready "expected 3 listener lines before ActiveEnterTimestamp=$active_us, got $lines; after it: ${late:-none}"
		return 1
	fi
	vmtest_pass start-ready "systemctl start returned in $((t1 - t0)) ms with active (running); echo.sock, logs.sock, control.sock existed at that moment; the 3 listener log lines precede ActiveEnterTimestamp"
	status=$(systemctl status "$SVC" --no-pager 2>&1 | sed -n 's/^ *Status: //p')
	if [[ $status == '"2 listeners, 0 live redirects, 0 B moved"' ]]; then
		vmtest_pass status-line "systemctl status: Status: $status"
	else
		vmtest_fail status-line "systemctl status shows Status: ${status:-nothing}"
	fi
}

# STATUS= follows the live redirects and the bytes moved (refreshed every 5 s).
test_status_refresh() {
	local i status seen='' out
	head -c 1000000 /dev/urandom >"$T/status.in"
	{
		cat "$T/status.in"
		sleep 9
	} | socat -t 5 - UNIX-CONNECT:/run/vsockmap/echo.sock >"$T/status.out" 2>"$T/status.err" &
	local cpid=$!
	for ((i = 0; i < 40; i++)); do
		status=$(prop "$SVC" StatusText)
		if [[ $status == "2 listeners, 1 live redirect, "*" moved" && $status != *" 0 B moved" ]]; then
			seen=$status
			break
		fi
		sleep 0.25
	done
	wait $cpid
	if ! cmp -s "$T/status.in" "$T/status.out"; then
		vmtest_fail status-refresh "1 MB echoed through echo.sock came back different: $(cmp "$T/status.in" "$T/status.out" 2>&1 | head -n1) $(tail_of "$T/status.err")"
		return 1
	fi
	if [[ -z $seen ]]; then
		vmtest_fail status-refresh "STATUS never showed the live redirect within 10 s; last: ${status:-none}"
		return 1
	fi
	# Closed: back to 0 live, the bytes stay counted.
	for ((i = 0; i < 40; i++)); do
		out=$(prop "$SVC" StatusText)
		[[ $out == "2 listeners, 0 live redirects, "* && $out != *" 0 B moved" ]] && break
		sleep 0.25
	done
	if [[ $out != "2 listeners, 0 live redirects, "* ]]; then
		vmtest_fail status-refresh "after the connection closed STATUS still says: $out"
		return 1
	fi
	vmtest_pass status-refresh "during a transfer: \"$seen\"; after: \"$out\" (1 MB echoed, cmp ok)"
}

test_echo_hardened() {
	local out
	if out=$(echo_check echo-hardened /run/vsockmap/echo.sock 8M); then
		vmtest_pass echo-hardened "8 MiB through the hardened unit to vsock CID 1 port 5000 and back: $out"
	else
		vmtest_fail echo-hardened "$out; daemon: $(jtail "$(prop "$SVC" InvocationID)")"
	fi
}

test_journal_fields() {
	local inv out
	inv=$(prop "$SVC" InvocationID)
	out=$(journalctl -q --no-pager -o verbose _SYSTEMD_INVOCATION_ID="$inv" REDIRECT=echo 2>&1)
	local missing=()
	for f in 'REDIRECT=echo' 'LISTEN=UNIX-LISTEN:/run/vsockmap/echo.sock' 'TARGET=VSOCK-CONNECT:1:5000' \
		'PRIORITY=6' 'SYSLOG_IDENTIFIER=vsockmapd' 'MESSAGE=\[echo\] listening on /run/vsockmap/echo.sock'; do
		grep -qE "^ *$f" <<<"$out" || missing+=("$f")
	done
	if ((${#missing[@]})); then
		vmtest_fail journal-fields "journalctl REDIRECT=echo lacks ${missing[*]}: $(head -c 400 <<<"$out" | tr '\n' ' ')"
	else
		vmtest_pass journal-fields "journalctl REDIRECT=echo: $(grep -cE '^ *MESSAGE=' <<<"$out") message(s) with LISTEN=UNIX-LISTEN:/run/vsockmap/echo.sock TARGET=VSOCK-CONNECT:1:5000"
	fi
}

# A redirect's messages carry REDIRECT_ID= and CLIENT_PID=: `vsockmapctl close ID` logs
# "closing on request" for it, and `journalctl REDIRECT_ID=ID` must find that message.
test_journal_redirect_id() {
	local inv id="" out cpid i missing=()
	inv=$(prop "$SVC" InvocationID)
	socat -u EXEC:'sleep 60' UNIX-CONNECT:/run/vsockmap/echo.sock 2>/dev/null &
	cpid=$!
	for ((i = 0; i < 100; i++)); do
		id=$(vsockmapctl -j list --name echo 2>/dev/null |
			grep -o "\"id\":[0-9]*,[^}]*\"pid\":$cpid," | sed -n '1s/^"id":\([0-9]*\),.*/\1/p')
		[[ -n $id ]] && break
		sleep 0.1
	done
	if [[ -z $id ]]; then
		kill "$cpid" 2>/dev/null
		vmtest_fail journal-redirect-id "the client (pid $cpid) never showed in vsockmapctl list: $(vsockmapctl list 2>&1 | tail -n 3 | tr '\n' ' ')"
		return 1
	fi
	vsockmapctl close "$id" >/dev/null 2>&1
	wait_journal "$inv" "redirect $id: closing on request" 10
	out=$(journalctl -q --no-pager -o verbose _SYSTEMD_INVOCATION_ID="$inv" REDIRECT_ID="$id" 2>&1)
	kill "$cpid" 2>/dev/null
	wait "$cpid" 2>/dev/null
	for f in "REDIRECT_ID=$id" 'REDIRECT=echo' "CLIENT_PID=$cpid" \
		"MESSAGE=\[echo\] redirect $id: closing on request"; do
		grep -qE "^ *$f\$" <<<"$out" || missing+=("$f")
	done
	if ((${#missing[@]})); then
		vmtest_fail journal-redirect-id "journalctl REDIRECT_ID=$id lacks ${missing[*]}: $(head -c 400 <<<"$out" | tr '\n' ' ')"
	else
		vmtest_pass journal-redirect-id "journalctl REDIRECT_ID=$id: \"closing on request\" with REDIRECT=echo CLIENT_PID=$cpid"
	fi
}

# ---- 3. reload: added, removed and broken, while a transfer runs through [echo] ------------

CONF=/etc/vsockmap/vsockmap.conf

# reload_step NAME WANT_RC REGEX: systemctl reload, then the journal of this run must match.
reload_step() {
	local inv=$1 name=$2 want=$3 regex=$4 rc
	timeout 30 systemctl reload "$SVC" >"$T/$name.out" 2>&1
	rc=$?
	if (((rc == 0) != (want == 0))); then
		vmtest_fail "$name" "systemctl reload rc=$rc (want ${want}): $(tail_of "$T/$name.out") $(jtail "$inv")"
		return 1
	fi
	if ! wait_journal "$inv" "$regex" 10; then
		vmtest_fail "$name" "systemctl reload rc=$rc; no /$regex/ in the journal: $(jtail "$inv")"
		return 1
	fi
	return 0
}

test_reload() {
	local pid inv out long rc
	pid=$(prop "$SVC" MainPID)
	inv=$(prop "$SVC" InvocationID)
	cp "$CONF" "$T/vsockmap.conf.orig"
	# A transfer that outlives the three reloads, through the section that stays.
	vsm-peer client unix:/run/vsockmap/echo.sock --send 24M --after echo --timeout 120 \
		>"$T/reload-live.client" 2>&1 &
	long=$!
	sleep 0.5

	printf '\n[added]\nlisten  = UNIX-LISTEN:/run/vsockmap/added.sock\nconnect = VSOCK-CONNECT:1:5000\n' >>"$CONF"
	if reload_step "$inv" reload-added 0 'reloaded .*: 1 section added, 0 removed, 2 unchanged'; then
		if ! out=$(echo_check reload-added /run/vsockmap/added.sock 1M); then
			vmtest_fail reload-added "the added section did not echo: $out"
		else
			vmtest_pass reload-added "systemctl reload: [added] listening, 1 MiB echoed through it: $out"
		fi
	fi

	cp "$T/vsockmap.conf.orig" "$CONF"
	if reload_step "$inv" reload-removed 0 'reloaded .*: 0 sections added, 1 removed, 2 unchanged'; then
		if [[ -e /run/vsockmap/added.sock ]]; then
			vmtest_fail reload-removed "added.sock still exists"
		else
			vmtest_pass reload-removed "systemctl reload: [added] gone, its socket file removed"
		fi
	fi

	printf '\n[broken]\nlisten = UNIX-LISTN:/run/vsockmap/broken.sock\n' >>"$CONF"
	if reload_step "$inv" reload-broken 1 'vsockmap.conf:[0-9]+: listen: unknown address type.*still running the previous configuration'; then
		if [[ $(prop "$SVC" ActiveState) != active || $(prop "$SVC" MainPID) != "$pid" ]]; then
			vmtest_fail reload-broken "after the failed reload: $(prop "$SVC" ActiveState), MainPID $(prop "$SVC" MainPID) (was $pid)"
		else
			vmtest_pass reload-broken "systemctl reload failed (as it should), still active, same MainPID; $(tail_of "$T/reload-broken.out" 1)| $(jlog "$inv" | grep -m1 -o 'vsockmap.conf:[0-9]*: listen: unknown address type')"
		fi
	fi
	cp "$T/vsockmap.conf.orig" "$CONF"

	wait "$long"
	rc=$?
	if ((rc != 0)); then
		vmtest_fail reload-live "the transfer through [echo] across the reloads failed (rc=$rc): $(tail_of "$T/reload-live.client" 2)"
	elif [[ $(prop "$SVC" MainPID) != "$pid" ]]; then
		vmtest_fail reload-live "MainPID changed: $(prop "$SVC" MainPID) (was $pid)"
	else
		vmtest_pass reload-live "24 MiB echoed and verified through [echo] across three reloads, same MainPID $pid: $(grep -m1 '^client total' "$T/reload-live.client")"
	fi
}

# On DATAPATH (kernel or userspace), three reloads (a section added, nothing changed, the
# section removed) while four echo transfers of 16 MiB run through [echo]: every byte comes
# back verified, the daemon keeps its MainPID, the live redirects were on that data path,
# and a new client echoes after the last reload.
test_reload_datapath() {
	local dp=$1 name=reload-live-$1 pid i rc bad=() pids=() seen want
	want=$([[ $dp == kernel ]] && echo kernel || echo daemon)
	cp "$CONF" "$T/vsockmap.conf.orig"
	sed -i "s/^\[daemon\]\$/[daemon]\ndatapath = $dp/" "$CONF"
	timeout 60 systemctl restart "$SVC"
	pid=$(prop "$SVC" MainPID)
	for i in 1 2 3 4; do
		vsm-peer client unix:/run/vsockmap/echo.sock --send 16M --after echo --timeout 300 \
			>"$T/$name-$i.client" 2>&1 &
		pids+=($!)
	done
	sleep 1
	seen=$(vsockmapctl -j list --name echo 2>/dev/null | grep -o '"datapath":"[a-z]*"' | sort | uniq -c | tr -s ' \n' ' ')
	cp "$CONF" "$T/$name.conf"
	printf '\n[added]\nlisten  = UNIX-LISTEN:/run/vsockmap/added.sock\nconnect = VSOCK-CONNECT:1:5000\n' >>"$CONF"
	timeout 30 systemctl reload "$SVC" || bad+=("reload adding [added]: rc $?")
	timeout 30 systemctl reload "$SVC" || bad+=("reload unchanged: rc $?")
	cp "$T/$name.conf" "$CONF"
	timeout 30 systemctl reload "$SVC" || bad+=("reload removing [added]: rc $?")
	for i in "${!pids[@]}"; do
		wait "${pids[$i]}"
		rc=$?
		((rc == 0)) || bad+=("client $((i + 1)): rc $rc: $(tail_of "$T/$name-$((i + 1)).client" 2)")
	done
	echo_check "$name-after" /run/vsockmap/echo.sock 1M >/dev/null || bad+=("no echo after the reloads: $(tail_of "$T/$name-after.client" 2)")
	[[ $(prop "$SVC" MainPID) == "$pid" ]] || bad+=("MainPID $pid became $(prop "$SVC" MainPID)")
	[[ $seen == *"4 \"datapath\":\"$want\""* ]] || bad+=("during the transfers the list showed: ${seen:-no redirect}, want 4 on \"$want\"")
	cp "$T/vsockmap.conf.orig" "$CONF"
	if ((${#bad[@]})); then
		vmtest_fail "$name" "datapath=$dp: ${bad[*]} | $(journalctl -q -u "$SVC" -o cat _PID="$pid" | grep -iE 'reload|error|fail' | tail -n 3 | tr '\n' ' ')"
	else
		vmtest_pass "$name" "datapath=$dp: 4 x 16 MiB echoed and verified through [echo] across three reloads (one added a section, one changed nothing, one removed it), same MainPID $pid, the redirects listed on \"$want\""
	fi
	timeout 60 systemctl restart "$SVC"
}

test_stop_clean() {
	local inv rc left result status
	inv=$(prop "$SVC" InvocationID)
	timeout 60 systemctl stop "$SVC"
	rc=$?
	result=$(prop "$SVC" Result)
	status=$(prop "$SVC" ExecMainStatus)
	left=$(find /run/vsockmap -type s 2>/dev/null | tr '\n' ' ')
	if ((rc != 0)) || [[ $result != success || $status != 0 || -n $left ]]; then
		vmtest_fail stop-clean "systemctl stop rc=$rc, Result=$result, exit status $status, socket files left: ${left:-none}; $(jtail "$inv")"
	else
		vmtest_pass stop-clean "systemctl stop: Result=success, exit status 0, no socket file left in /run/vsockmap; last log: $(jlog "$inv" | grep -v '^$' | tail -n 1)"
	fi
}

# ---- 4. restart without loss: 20 restarts, each during a 256 MiB transfer ------------------

RESTARTS=${RESTARTS:-20}
BULK=${BULK:-256M}

set_fastpath() { # MODE: the [daemon] fastpath= of $CONF
	sed -i '/^fastpath = /d; s/^\[daemon\]$/[daemon]\nfastpath = '"$1"'/' "$CONF"
}

# upload_point: print a random point of the upload, 5 to 60% of BULK, in bytes. The
# restart comes once the client has written that much (vsm-peer --mark-after): by bytes, not
# by time, since a fixed 0 to 3 s came after the end of the upload where 256 MiB took 2.6 s.
upload_point() {
	awk -v r="$RANDOM" -v b="$(numfmt --from=iec "$BULK")" \
		'BEGIN { printf "%d", b * (0.05 + 0.55 * r / 32767) }'
}

# restart_exit_times: how long each old instance took to hand everything over (its own
# "handed over in N ms"), from the unit's journal: it waits for no reader, however slow.
restart_exit_times() {
	journalctl -q -u "$SVC" -o cat | sed -n 's/^restart: handed over in \([0-9]*\) ms.*/\1/p' |
		awk '{ n++; sum += $1; if ($1 > max) max = $1 }
			END { printf "the unit'"'"'s hand-overs so far: %d, slowest %d ms, mean %.0f ms", n, max, n ? sum / n : 0 }'
}

# test_restart_no_loss NAME REPLY MODE [DATAPATH [alternate-fastpath]]: RESTARTS transfers of
# BULK to a vsock sink that sends REPLY back after the client's half-close, one systemctl
# restart during each. MODE upload: each restart at a random moment of the upload; both:
# every other one right after the client's half-close, during the reply.
test_restart_no_loss() {
	local name=$1 reply=$2 mode=$3
	local i w rc crc pid newpid inv failed=0 lost=() delay took=() line stored taken before after
	local state missed=() point probe_missed listed
	cp "$CONF" "$T/vsockmap.conf.orig"
	printf '\n[bulk]\nlisten  = UNIX-LISTEN:/run/vsockmap/bulk.sock\nconnect = VSOCK-CONNECT:1:5002\n' >>"$CONF"
	# Each redirect's set-up, hand-over and end in the journal, for a failure's report.
	sed -i 's/^\[daemon\]$/[daemon]\nlog-level = debug/' "$CONF"
	[[ -z ${4:-} ]] || sed -i "s/^\\[daemon\\]\$/[daemon]\\ndatapath = $4/" "$CONF"
	# alternate-fastpath: each restart switches fastpath=, so every instance takes over a
	# redirect whose verdict is the other one (counted or not: struct vsockmap_gate).
	[[ ${5:-} != alternate-fastpath ]] || set_fastpath permanent
	rm -f "$T/sink.ready"
	systemd-run --quiet --unit="sink-$name" vsm-peer server vsock:any:5002 --sink --reply "$reply" \
		--count "$RESTARTS" --expect "$BULK" --timeout 1200 --ready-file "$T/sink.ready"
	wait_for_file "$T/sink.ready" 20 || {
		vmtest_fail "$name" "the vsock sink did not come up: $(journalctl -q -u "sink-$name" -o cat | tail -n 2)"
		return 1
	}
	timeout 60 systemctl restart "$SVC"
	for ((i = 1; i <= RESTARTS; i++)); do
		pid=$(prop "$SVC" MainPID)
		# Counted before the transfer: reading the journal takes seconds once it is long
		# (one vCPU under TCG, log-level debug), time that ran out the upload when taken
		# between the chosen moment and the restart.
		before=$(journalctl -q -u "$SVC" -o cat | grep -c 'took back [1-9][0-9]* of')
		point=$(upload_point)
		rm -f "$T/restart-$i.mark"
		vsm-peer client unix:/run/vsockmap/bulk.sock --send "$BULK" --after shutdown \
			--expect-reply "$reply" --mark-after "$point" --mark-file "$T/restart-$i.mark" \
			--timeout 300 >"$T/restart-$i.client" 2>&1 &
		local cpid=$!
		# A random point of the upload (upload_point()), or, every other round in mode
		# both, right after the client's half-close, while the reply flows. Before the
		# redirect is live (its client's pid in the list: the previous round's may still be
		# closing) a restart would only find the client in the listen backlog.
		for ((w = 0; w < 100; w++)); do
			vsockmapctl -j list --name bulk 2>/dev/null | grep -q "\"pid\":$cpid," && break
			sleep 0.1
		done
		if [[ $mode == upload ]] || ((i % 2)); then
			wait_for_file "$T/restart-$i.mark" 30
			delay="$((point >> 20))M"
		else
			for ((w = 0; w < 600; w++)); do
				vsockmapctl -j list --name bulk 2>/dev/null |
					grep -q "\"pid\":$cpid,[^}]*}[^}]*\"state\":\"half-closed\"" && break
				sleep 0.1
			done
			delay=$(awk -v r="$RANDOM" 'BEGIN { printf "h%.2f", 0.3 * r / 32767 }')
		fi
		[[ $delay != h* ]] || sleep "${delay#h}"
		state=$(vsockmapctl -j list --name bulk 2>/dev/null | grep -o '"state":"[a-z-]*"')
		[[ ${5:-} != alternate-fastpath ]] || set_fastpath "$( ((i % 2)) && echo counted || echo permanent)"
		timeout 60 systemctl restart "$SVC"
		rc=$?
		newpid=$(prop "$SVC" MainPID)
		# Taken back: the new instance lists it (or, if it ended since, the journal says so;
		# journald may drop lines of a daemon logging at debug level).
		listed=$(vsockmapctl -j list --name bulk 2>/dev/null | grep -c "\"pid\":$cpid,")
		wait "$cpid"
		crc=$?
		after=$(journalctl -q -u "$SVC" -o cat | grep -c 'took back [1-9][0-9]* of')
		((listed == 0)) || after=$((before + 1))
		if ((after <= before)); then
			missed+=("#$i at ${delay}, before it: ${state:-no live redirect}")
			vmtest_log "$name #$i: the restart took no redirect back; the journal:"
			journalctl -q -u "$SVC" -o short-monotonic | grep -v 'libbpf' | tail -n 25 |
				while read -r line; do vmtest_log "  $line"; done
		fi
		if ((rc != 0 || crc != 0)) || [[ $newpid == "$pid" ]]; then
			failed=$((failed + 1))
			lost+=("#$i: restart rc=$rc pid $pid->$newpid: $(tail_of "$T/restart-$i.client" 2)")
			vmtest_log "$name #$i failed; the daemon's journal:"
			journalctl -q -u "$SVC" -o short-monotonic | grep -v 'libbpf' | tail -n 40 |
				while read -r line; do vmtest_log "  $line"; done
			vmtest_log "  sink: $(journalctl -q -u "sink-$name" -o cat | tail -n 3 | tr '\n' ' ')"
		fi
		took+=("$delay")
	done
	systemctl stop "sink-$name" 2>/dev/null
	inv=$(prop "$SVC" InvocationID)
	# The new instance told systemd to drop what it took back.
	stored=$(prop "$SVC" NFileDescriptorStore)
	taken=$((RESTARTS - ${#missed[@]}))
	line=$(journalctl -q -u "sink-$name" -o cat | grep -m1 '^server total')
	# A redirect taken back must keep its exact drain signal (the queue probe).
	probe_missed=$(journalctl -q -u "$SVC" -o cat | grep -c 'queue probe does not answer')
	vmtest_log "$name: $(restart_exit_times)"
	cp "$T/vsockmap.conf.orig" "$CONF"
	if ((failed)); then
		vmtest_fail "$name" "$failed of $RESTARTS transfers failed: ${lost[*]}; sink: $line"
	elif ((taken < RESTARTS)); then
		vmtest_fail "$name" "every transfer verified, but only $taken of $RESTARTS restarts took a live redirect back: the test did not restart mid-transfer: ${missed[*]}"
	elif [[ ${5:-} == alternate-fastpath ]] &&
		(($(journalctl -q -u "$SVC" -o cat | grep -c 'fastpath: permanent;') < 3)); then
		vmtest_fail "$name" "every transfer verified, but the daemon did not start with fastpath=permanent every other time"
	elif [[ ${stored:-0} != 0 ]]; then
		vmtest_fail "$name" "every transfer verified, but $stored fds are left in the fd store"
	elif ((probe_missed)); then
		vmtest_fail "$name" "every transfer verified, but $probe_missed drains had no exact signal: $(journalctl -q -u "$SVC" -o cat | grep -m1 'queue probe does not answer')"
	elif ! grep -q "conns=$RESTARTS .*errors=0" <<<"$line"; then
		vmtest_fail "$name" "every client finished, but the sink says: ${line:-nothing}"
	else
		vmtest_pass "$name" "$RESTARTS of $RESTARTS transfers of $BULK verified at the sink (and $reply back each, after the client's half-close) with systemctl restart at ${took[*]} (NM: once the client had written N MiB; hN: N s after its half-close, during the reply), each taking the live redirect back ($taken times); fd store empty after; sink: $line"
	fi
	timeout 60 systemctl restart "$SVC"
}

# ---- 4a. a restart while a half-close drains ------------------------------------------------

# test_restart_while_draining: DRAIN_ROUNDS (3) clients each upload 4 MiB through a 4 MiB send
# buffer into a vsock sink that reads 32 KiB per 200 ms, half-close with part of the upload
# still in the kernel's backlog toward the sink (state "draining" for seconds), and
# systemctl restart comes then. The next instance takes the pair back, drains it and passes
# the half-close on: the sink gets every byte, the client its 1 MiB reply. Before, the
# stopping instance waited 3 s for the drain, then closed the pair with itself: the sink lost
# the tail, the client its whole reply. Each round must hand its pair over while it drains
# (the old instance's debug line says so): a drain that ended before the restart would not
# test the case (64 KiB per 100 ms did not).
test_restart_while_draining() {
	local name=restart-while-draining rounds=${DRAIN_ROUNDS:-3} i w cpid rc crc state line
	local failed=0 lost=() before after missed=() drained0 drained listed
	cp "$CONF" "$T/vsockmap.conf.orig"
	printf '\n[drain]\nlisten  = UNIX-LISTEN:/run/vsockmap/drain.sock\nconnect = VSOCK-CONNECT:1:5004\n' >>"$CONF"
	# The kernel path, asked for: the drain this is about happens in the kernel (auto runs a
	# vsock section in user space on a kernel without kernel/ patch 1).
	sed -i 's/^\[daemon\]$/[daemon]\nlog-level = debug\ndatapath = kernel/' "$CONF"
	rm -f "$T/drain-sink.ready"
	systemd-run --quiet --unit="sink-$name" vsm-peer server vsock:any:5004 --sink --slow 200000 \
		--read-size 32768 --reply 1M --count "$rounds" --expect 4M --timeout 900 \
		--ready-file "$T/drain-sink.ready"
	wait_for_file "$T/drain-sink.ready" 20 || {
		vmtest_fail "$name" "the slow vsock sink did not come up: $(journalctl -q -u "sink-$name" -o cat | tail -n 2)"
		cp "$T/vsockmap.conf.orig" "$CONF"
		return 1
	}
	timeout 60 systemctl restart "$SVC"
	for ((i = 1; i <= rounds; i++)); do
		before=$(journalctl -q -u "$SVC" -o cat | grep -c 'took back [1-9][0-9]* of')
		drained0=$(journalctl -q -u "$SVC" -o cat | grep -c 'handed over: [a-z-]*, client->target draining')
		vsm-peer client unix:/run/vsockmap/drain.sock --send 4M --sndbuf 4M --after shutdown \
			--expect-reply 1M --timeout 180 >"$T/drain-$i.client" 2>&1 &
		cpid=$!
		state=
		for ((w = 0; w < 900; w++)); do
			state=$(vsockmapctl -j list --name drain 2>/dev/null |
				grep -o "\"pid\":$cpid,[^}]*}[^}]*\"state\":\"[a-z-]*\"" | sed 's/.*"state":"\([a-z-]*\)"$/\1/')
			[[ $state == draining* ]] && break
			sleep 0.1
		done
		timeout 60 systemctl restart "$SVC"
		rc=$?
		listed=$(vsockmapctl -j list --name drain 2>/dev/null | grep -c "\"pid\":$cpid,")
		wait "$cpid"
		crc=$?
		after=$(journalctl -q -u "$SVC" -o cat | grep -c 'took back [1-9][0-9]* of')
		((listed == 0)) || after=$((before + 1))
		drained=$(journalctl -q -u "$SVC" -o cat | grep -c 'handed over: [a-z-]*, client->target draining')
		((after > before)) || missed+=("#$i (state before it: ${state:-none})")
		if ((rc != 0 || crc != 0 || drained <= drained0)) || [[ $state != draining* ]]; then
			failed=$((failed + 1))
			lost+=("#$i: state before the restart ${state:-none}, handed over draining $((drained - drained0)) times, restart rc=$rc: $(tail_of "$T/drain-$i.client" 2)")
			vmtest_log "$name #$i failed; the daemon's journal:"
			journalctl -q -u "$SVC" -o short-monotonic | grep -v 'libbpf' | tail -n 30 |
				while read -r line; do vmtest_log "  $line"; done
		fi
	done
	systemctl stop "sink-$name" 2>/dev/null
	line=$(journalctl -q -u "sink-$name" -o cat | grep -m1 '^server total')
	cp "$T/vsockmap.conf.orig" "$CONF"
	if ((failed)); then
		vmtest_fail "$name" "$failed of $rounds transfers failed: ${lost[*]}; sink: $line"
	elif ((${#missed[@]})); then
		vmtest_fail "$name" "every transfer verified, but the restart took no redirect back: ${missed[*]}"
	elif ! grep -q "conns=$rounds .*errors=0" <<<"$line"; then
		vmtest_fail "$name" "every client finished, but the sink says: ${line:-nothing}"
	else
		vmtest_pass "$name" "$rounds of $rounds clients restarted while their half-close drained into a slow sink (4 MiB up, 4 MiB send buffer, 32 KiB read per 200 ms): each pair handed over draining, taken back and drained by the next instance, every byte at the sink and 1 MiB back; sink: $line"
	fi
	timeout 60 systemctl restart "$SVC"
}

# ---- 4a'. a restart behind a slow server, and a restart into a start that fails ----------

# slow_section NAME PORT READ_USEC [DATAPATH]: a section [slow] to a vsock sink on PORT that
# reads 64 KiB every READ_USEC, then sends 64 KiB back, for one 1 MiB upload (a unit
# sink-NAME); the daemon restarted on it. 1 if the sink did not come up.
slow_section() {
	local name=$1 port=$2 usec=$3 dp=${4:-}
	cp "$CONF" "$T/vsockmap.conf.orig"
	printf '\n[slow]\nlisten  = UNIX-LISTEN:/run/vsockmap/slow.sock\nconnect = VSOCK-CONNECT:1:%s\n' \
		"$port" >>"$CONF"
	sed -i 's/^\[daemon\]$/[daemon]\nlog-level = debug/' "$CONF"
	[[ -z $dp ]] || sed -i "s/^\\[daemon\\]\$/[daemon]\\ndatapath = $dp/" "$CONF"
	cp "$CONF" "$T/$name.conf"
	rm -f "$T/$name-sink.ready"
	systemd-run --quiet --unit="sink-$name" vsm-peer server "vsock:any:$port" --sink \
		--slow "$usec" --read-size 65536 --reply 64K --count 1 --expect 1M --timeout 600 \
		--ready-file "$T/$name-sink.ready"
	if ! wait_for_file "$T/$name-sink.ready" 20; then
		vmtest_fail "$name" "the slow vsock sink did not come up: $(journalctl -q -u "sink-$name" -o cat | tail -n 2)"
		cp "$T/vsockmap.conf.orig" "$CONF"
		return 1
	fi
	timeout 60 systemctl restart "$SVC"
}

# The case a restart used to cut: an upload behind a server that reads 64 KiB every 3 s, and
# systemctl restart 8 s into it. The old instance hands over what it holds (its pipe on the
# user-space path) at once; every byte arrives, and the reply.
test_restart_slow_sink() {
	local dp=${1:-} name=restart-slow-sink-${1:-auto} cpid rc crc t0 t1 line exit_ms held
	slow_section "$name" 5006 3000000 "$dp" || return 1
	vsm-peer client unix:/run/vsockmap/slow.sock --send 1M --after shutdown --expect-reply 64K \
		--timeout 600 >"$T/$name.client" 2>&1 &
	cpid=$!
	sleep 8
	t0=$(now_ms)
	timeout 60 systemctl restart "$SVC"
	rc=$?
	t1=$(now_ms)
	wait "$cpid"
	crc=$?
	exit_ms=$(journalctl -q -u "$SVC" -o cat | sed -n 's/^restart: handed over in \([0-9]*\) ms.*/\1/p' | tail -n 1)
	held=$(journalctl -q -u "$SVC" -o cat | grep -o '\[slow\] redirect [0-9]*: taken back from the previous instance: .*' | tail -n 1)
	systemctl stop "sink-$name" 2>/dev/null
	line=$(journalctl -q -u "sink-$name" -o cat | grep -m1 '^server total')
	cp "$T/vsockmap.conf.orig" "$CONF"
	if ((rc != 0 || crc != 0)) || [[ $line != *"conns=1 bytes=1048576 errors=0"* ]]; then
		vmtest_fail "$name" "restart rc=$rc, client rc=$crc: $(tail_of "$T/$name.client" 2); sink: ${line:-nothing} | $(journalctl -q -u "$SVC" -o cat | grep -iE 'lost|not handed|could not|closes' | tail -n 3 | tr '\n' ' ')"
	elif [[ -z $held ]]; then
		vmtest_fail "$name" "every byte arrived, but the restart took no [slow] redirect back: the upload was over before it"
	else
		vmtest_pass "$name" "1 MiB into a sink reading 64 KiB per 3 s, systemctl restart 8 s in: $((t1 - t0)) ms, the old instance handed over in ${exit_ms:-?} ms; $held; every byte at the sink and 64 KiB back: $line"
	fi
	timeout 60 systemctl restart "$SVC"
}

# A restart into a configuration whose new section cannot listen (a file that is not a
# socket): the start fails and gives back what it took, and so does every start systemd tries
# after it (Restart=on-failure, no start limit). The section is removed and systemctl restart
# run again: the upload goes on to its end, the service runs, the stored listener of [echo]
# is found again (its file was never removed), and the fd store is empty after.
test_restart_failed_start() {
	local dp=${1:-} name=restart-failed-start-${1:-auto} cpid rc1 rc2 crc line gave state
	local stored out
	slow_section "$name" 5007 1000000 "$dp" || return 1
	vsm-peer client unix:/run/vsockmap/slow.sock --send 1M --after shutdown --expect-reply 64K \
		--timeout 600 >"$T/$name.client" 2>&1 &
	cpid=$!
	sleep 3
	printf '\n[bad]\nlisten  = UNIX-LISTEN:/etc/passwd\nconnect = VSOCK-CONNECT:1:5000\n' >>"$CONF"
	timeout 60 systemctl restart "$SVC"
	rc1=$?
	sleep 5 # the starts systemd tries meanwhile fail as well, each giving everything back
	gave=$(journalctl -q -u "$SVC" -o cat | grep -c 'not started: gave 1 redirect back')
	cp "$T/$name.conf" "$CONF"
	timeout 60 systemctl restart "$SVC"
	rc2=$?
	state=$(prop "$SVC" ActiveState)/$(prop "$SVC" SubState)
	wait "$cpid"
	crc=$?
	stored=$(prop "$SVC" NFileDescriptorStore)
	out=$(echo_check "$name-echo" /run/vsockmap/echo.sock 1M)
	systemctl stop "sink-$name" 2>/dev/null
	line=$(journalctl -q -u "sink-$name" -o cat | grep -m1 '^server total')
	cp "$T/vsockmap.conf.orig" "$CONF"
	if ((rc1 == 0 || rc2 != 0)) || [[ $state != active/running ]]; then
		vmtest_fail "$name" "restart into [bad]: rc=$rc1 (want a failure), after the fix: rc=$rc2, $state | $(journalctl -q -u "$SVC" -o cat | grep -E 'not started|bad\]|Stale' | tail -n 3 | tr '\n' ' ')"
	elif ((gave < 2)); then
		vmtest_fail "$name" "only $gave failed starts gave the redirect back (want the restart's and at least one of systemd's)"
	elif ((crc != 0)) || [[ $line != *"conns=1 bytes=1048576 errors=0"* ]]; then
		vmtest_fail "$name" "client rc=$crc: $(tail_of "$T/$name.client" 2); sink: ${line:-nothing} | $(journalctl -q -u "$SVC" -o cat | grep -iE 'lost|closes|gave' | tail -n 3 | tr '\n' ' ')"
	elif [[ $out != *"errors=0"* || ${stored:-0} != 0 ]]; then
		vmtest_fail "$name" "the upload arrived, but [echo] after the fix: ${out:-nothing}; fds left in the store: ${stored:-?}"
	else
		vmtest_pass "$name" "restart into [bad] on /etc/passwd failed (\"$(journalctl -q -u "$SVC" -o cat | grep -m1 -o '\[bad\] /etc/passwd: [^;]*')\"), $gave failed starts each gave the upload back; fixed and restarted: $state, 1 MiB at the sink and 64 KiB back, [echo] echoed 1 MiB, fd store empty; sink: $line"
	fi
	timeout 60 systemctl restart "$SVC"
}

# ---- 4b. the soak through restarts ----------------------------------------------------------------

# vsm-soak (tests/tools/vsm-soak.c) through the packaged service, unix to vsock on this VM:
# SOAK_COUNT connections (1000), 50 at once, each with its own ending, buffers and pauses
# (docs/behaviour-matrix.md), up to 2 MiB each way, while `systemctl restart` runs one after
# the other (200 ms between), at least 10 times. Every connection must end as if nothing had happened: a restart hands each pair
# over, and clients that connect meanwhile wait in the listen socket systemd keeps. A peer's
# reset or kill is seen by the other end within 10 s (as in the VM soak). DATAPATH: the
# default (auto: user space for vsock on a stock kernel) or kernel.
test_soak_restart() {
	local dp=${1:-auto} name=soak-restart-${1:-auto} out rc seed=${SOAK_SEED:-$RANDOM$RANDOM}
	local summary probe_missed cmds
	cp "$CONF" "$T/vsockmap.conf.orig"
	printf '\n[soak]\nlisten  = UNIX-LISTEN:/run/vsockmap/soak.sock,backlog=1024\nconnect = VSOCK-CONNECT:1:5003\n' >>"$CONF"
	sed -i "s/^\\[daemon\\]\$/[daemon]\\ndatapath = $dp/" "$CONF"
	timeout 60 systemctl restart "$SVC"
	vsm-soak --connect unix:/run/vsockmap/soak.sock --listen vsock:any:5003 \
		--count "${SOAK_COUNT:-1000}" --live 50 --max-size 2097152 --seed "$seed" --stall 60 \
		--end-bound-ms 10000 \
		--timeout 900 --ctl /run/vsockmap/control.sock \
		--cmd "timeout 60 systemctl restart $SVC" --cmd-ms 200 >"$T/$name.out" 2>&1
	rc=$?
	summary=$(grep '^soak ' "$T/$name.out")
	cmds=$(sed -n 's/.* cmds=\([0-9]*\).*/\1/p' <<<"$summary")
	probe_missed=$(journalctl -q -u "$SVC" -o cat | grep -c 'queue probe does not answer')
	cp "$T/vsockmap.conf.orig" "$CONF"
	if ((rc == 0 && probe_missed == 0 && ${cmds:-0} >= 10)); then
		vmtest_pass "$name" "seed $seed, $cmds restarts ($(restart_exit_times)): $summary"
	else
		vmtest_fail "$name" "seed $seed rc=$rc, ${cmds:-no} restarts (want 10 or more), $probe_missed drains without their exact signal: ${summary:-no summary} | $(grep -m6 '^conn ' "$T/$name.out" | tr '\n' ' ')"
		grep '^vsm-soak' "$T/$name.out" | sort | uniq -c | sort -rn | head -n 5 |
			while read -r out; do vmtest_log "  $out"; done
		journalctl -q -u "$SVC" -o short-monotonic | grep -v libbpf |
			grep -iE 'lost|did not|could not|cannot|not taken|not handed|closing [0-9]|failed' |
			tail -n 30 | while read -r out; do vmtest_log "  $out"; done
	fi
	timeout 60 systemctl restart "$SVC"
}

# ---- 4c. scale ------------------------------------------------------------------------------------

# cpu_ticks PID: the user and system clock ticks a process has used so far.
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# SCALE_CONNS (10,000) redirects through the packaged unit, unix to vsock, each proven by a byte
# echoed back (vsm-bench hold), on DATAPATH: how many the daemon holds, its RSS and idle CPU
# over 10 s, then a restart in their midst: every one must be taken back and echo again.
test_scale() {
	local dp=$1 name n=${SCALE_CONNS:-10000} hold pid newpid rss t0 t1 cpu line
	local listed taken ping rc w
	name=scale-$dp
	cp "$CONF" "$T/vsockmap.conf.orig"
	# All held by root: above max-redirects-per-uid's default.
	sed -i "s/^\[daemon\]\$/[daemon]\ndatapath = $dp\nmax-redirects-per-uid = 0/" "$CONF"
	printf '\n[scale]\nlisten  = UNIX-LISTEN:/run/vsockmap/scale.sock,backlog=4096\nconnect = VSOCK-CONNECT:1:5010\n' >>"$CONF"
	rm -f "$T/scale-echo.ready" "$T/$name.ready" "$T/$name.out"
	systemd-run --quiet --unit="echo-$name" -p LimitNOFILE=65536 vsm-bench pingpong-server \
		vsock:any:5010 --ready-file "$T/scale-echo.ready"
	timeout 60 systemctl restart "$SVC"
	if ! wait_for_file "$T/scale-echo.ready" 20; then
		vmtest_fail "$name" "the vsock echo server did not come up: $(journalctl -q -u "echo-$name" -o cat | tail -n 3 | tr '\n' ' ')"
		systemctl stop "echo-$name" 2>/dev/null
		cp "$T/vsockmap.conf.orig" "$CONF"
		timeout 60 systemctl restart "$SVC"
		return 1
	fi
	# One round trip through the section first: hold stops at its first failed connection,
	# and the daemon resets clients while its target cannot be reached yet.
	for ((w = 0; w < 30; w++)); do
		vsm-bench pingpong unix:/run/vsockmap/scale.sock --count 1 >/dev/null 2>&1 && break
		sleep 1
	done
	(
		ulimit -n 65536
		exec vsm-bench hold unix:/run/vsockmap/scale.sock --count "$n" --concurrency 64 \
			--ready-file "$T/$name.ready" --timeout 900 >"$T/$name.out" 2>&1
	) &
	hold=$!
	wait_for_file "$T/$name.ready" 900
	line=$(grep -m1 '"role":"hold"' "$T/$name.out")
	pid=$(prop "$SVC" MainPID)
	listed=$(vsockmapctl --no-legend list --name scale 2>/dev/null | grep -c .)
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
	t0=$(cpu_ticks "$pid")
	sleep 10
	t1=$(cpu_ticks "$pid")
	cpu=$(awk -v d=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", 100 * d / hz / 10 }')
	timeout 120 systemctl restart "$SVC"
	rc=$?
	newpid=$(prop "$SVC" MainPID)
	taken=$(journalctl -q -u "$SVC" -o cat _PID="$newpid" | sed -n 's/.*took back \([0-9]*\) of.*/\1/p' | tail -n 1)
	# One more byte through each, after the restart (SIGUSR1; again if the first was missed).
	for ((w = 0; w < 60; w++)); do
		((w % 10)) || kill -USR1 "$hold"
		ping=$(grep -m1 '"role":"hold-ping"' "$T/$name.out") && break
		sleep 1
	done
	kill "$hold"
	wait "$hold"
	systemctl stop "echo-$name"
	cp "$T/vsockmap.conf.orig" "$CONF"
	vmtest_log "$name: $line | listed $listed | RSS ${rss} KiB | idle CPU ${cpu}% | restart rc=$rc, took back ${taken:-none} | ${ping:-no ping} | $(grep -m1 hold-end "$T/$name.out")"
	if [[ $line != *"\"established\":$n,"* || $listed != "$n" ]]; then
		vmtest_fail "$name" "held $listed of $n: ${line:-no hold line} | $(journalctl -q -u "$SVC" -o cat | grep -iE 'scale|too many|cannot|refus' | tail -n 4 | tr '\n' ' ') | echo server: $(journalctl -q -u "echo-$name" -o cat | tail -n 2 | tr '\n' ' ')"
	elif ((rc != 0)) || [[ ${taken:-0} != "$n" || $ping != *"\"echoed\":$n}"* ]]; then
		vmtest_fail "$name" "$n held; the restart (rc=$rc) took back ${taken:-none}; after it: ${ping:-no ping answer} | $(journalctl -q -u "$SVC" -o cat | grep -E 'handed|carrier|not handed' | tail -n 3 | tr '\n' ' ')"
	else
		vmtest_pass "$name" "$n redirects held, each echoed a byte; daemon RSS $((rss / 1024)) MiB, idle CPU ${cpu}% over 10 s; systemctl restart took back all $n, and each echoed a byte again"
	fi
	timeout 60 systemctl restart "$SVC"
}

# ---- 2. socket activation ----------------------------------------------------------------------

test_socket_activation() {
	local out inv i state
	stop_all
	if ! timeout 30 systemctl start vsockmapd.socket vsockmapd-logs.socket; then
		vmtest_fail socket-activation "the socket units did not start: $(journalctl -q -u vsockmapd.socket -o cat | tail -n 2)"
		return 1
	fi
	state=$(prop "$SVC" ActiveState)
	if [[ ! -S /run/vsockmap/echo.sock || ! -S /run/vsockmap/logs.sock || $state != inactive ]]; then
		vmtest_fail socket-activation "after starting the sockets: echo.sock $([[ -S /run/vsockmap/echo.sock ]] && echo ok || echo missing), logs.sock $([[ -S /run/vsockmap/logs.sock ]] && echo ok || echo missing), vsockmapd $state"
		return 1
	fi
	# The first client starts the daemon.
	if ! out=$(echo_check activation /run/vsockmap/echo.sock 4M); then
		vmtest_fail socket-activation "client through the activated socket: $out; vsockmapd: $(prop "$SVC" ActiveState); $(jtail "$(prop "$SVC" InvocationID)")"
		return 1
	fi
	inv=$(prop "$SVC" InvocationID)
	wait_journal "$inv" 'logs.*socket passed by systemd' 5
	local passed
	passed=$(jlog "$inv" | grep -c 'socket passed by systemd')
	if [[ $(prop "$SVC" ActiveState) != active || $passed != 2 ]]; then
		vmtest_fail socket-activation "vsockmapd $(prop "$SVC" ActiveState), $passed listeners from systemd (want 2): $(jtail "$inv" 5)"
		return 1
	fi
	vmtest_pass socket-activation "vsockmapd started by the first connection to vsockmapd.socket; 4 MiB echoed via vsock: $out; both sockets taken from systemd ($(jlog "$inv" | grep -m1 -o 'systemd passed [0-9]* sockets'))"
}

# Datagrams sent while vsockmapd is not running wait in the activated socket and start it.
test_socket_activation_dgram() {
	local inv rc src i
	timeout 30 systemctl stop "$SVC"
	if [[ $(prop vsockmapd-logs.socket ActiveState) != active || $(prop "$SVC" ActiveState) != inactive ]]; then
		vmtest_fail socket-activation-dgram "logs socket $(prop vsockmapd-logs.socket ActiveState), vsockmapd $(prop "$SVC" ActiveState)"
		return 1
	fi
	rm -f "$T/sink.ready"
	vsm-peer server vsock:any:5001 --sink --count 1 --seed 11 --expect 200K --timeout 60 \
		--ready-file "$T/sink.ready" >"$T/sink.out" 2>&1 &
	local spid=$!
	wait_for_file "$T/sink.ready" 10
	vsm-peer client unix-dgram:/run/vsockmap/logs.sock --seed 11 --dgram-count 50 --msg-size 4K \
		--timeout 30 >"$T/dgram.client" 2>&1
	rc=$?
	for ((i = 0; i < 50; i++)); do
		[[ $(prop "$SVC" ActiveState) == active ]] && break
		sleep 0.2
	done
	inv=$(prop "$SVC" InvocationID)
	sleep 2
	# The target sees EOF when the daemon stops.
	timeout 30 systemctl stop "$SVC"
	wait $spid
	src=$?
	if ((rc != 0 || src != 0)); then
		vmtest_fail socket-activation-dgram "client rc=$rc ($(tail_of "$T/dgram.client" 1)), sink rc=$src ($(tail_of "$T/sink.out" 2)); $(jtail "$inv")"
		return 1
	fi
	vmtest_pass socket-activation-dgram "50 datagrams of 4 KiB sent to vsockmapd-logs.socket while vsockmapd was stopped started it and arrived in order: $(grep -m1 '^server total' "$T/sink.out")"
}

test_socket_activation_stop() {
	local left
	timeout 30 systemctl stop vsockmapd.socket vsockmapd-logs.socket "$SVC"
	left=$(find /run/vsockmap -type s 2>/dev/null | tr '\n' ' ')
	if [[ -n $left ]]; then
		vmtest_fail socket-activation-stop "socket files left after stopping the sockets and the service: $left"
	else
		vmtest_pass socket-activation-stop "stopping vsockmapd.socket, vsockmapd-logs.socket and the service leaves no socket file"
	fi
}

# A socket that does not fit the configuration stops vsockmapd with a message naming it.
# activation_error NAME REGEX TRIGGER SOCKET-PROPERTIES...
activation_error() {
	local name=$1 regex=$2 trigger=$3 unit=sa-$1 inv
	shift 3
	systemctl stop "$unit.socket" "$unit.service" 2>/dev/null
	systemctl reset-failed "$unit.socket" "$unit.service" 2>/dev/null
	local props=()
	for p in "$@"; do props+=(--socket-property="$p"); done
	if ! systemd-run --quiet --unit="$unit" "${props[@]}" -p Type=notify \
		/usr/sbin/vsockmapd -c /etc/vsockmap/vsockmap.conf 2>"$T/$unit.err"; then
		vmtest_fail "activation-$name" "systemd-run: $(tail_of "$T/$unit.err")"
		return 1
	fi
	eval "$trigger" >/dev/null 2>&1
	inv=$(prop "$unit.service" InvocationID)
	wait_journal "$inv" "$regex" 15
	# The socket would start it again and again (pending data): stop it, then look at the
	# first run's exit.
	systemctl stop "$unit.socket" "$unit.service" 2>/dev/null
	local line exited
	line=$(jlog "$inv" | grep -m1 -E -- "$regex")
	exited=$(journalctl -q --no-pager -o cat -u "$unit.service" | grep -m1 'Main process exited')
	systemctl reset-failed "$unit.socket" "$unit.service" 2>/dev/null
	if [[ -z $line || $exited != *status=1/FAILURE* ]]; then
		vmtest_fail "activation-$name" "${exited:-no exit seen}; no /$regex/ in: $(jtail "$inv" 4)"
		return 1
	fi
	vmtest_pass "activation-$name" "exit status 1: $line"
}

test_activation_errors() {
	stop_all
	activation_error unknown-name 'passed socket "bogus" \(fd 3\), which matches no section' \
		'socat -u /dev/null UNIX-CONNECT:/run/sa/bogus.sock' \
		ListenStream=/run/sa/bogus.sock FileDescriptorName=bogus
	activation_error wrong-type 'socket "echo" passed by systemd is a datagram .* but \[echo\] listens with UNIX-LISTEN' \
		'echo x | socat -u - UNIX-SENDTO:/run/vsockmap/echo.sock' \
		ListenDatagram=/run/vsockmap/echo.sock FileDescriptorName=echo
	activation_error wrong-path 'socket "echo" passed by systemd is bound to /run/sa/other.sock, but \[echo\] listens on /run/vsockmap/echo.sock' \
		'socat -u /dev/null UNIX-CONNECT:/run/sa/other.sock' \
		ListenStream=/run/sa/other.sock FileDescriptorName=echo
	rm -rf /run/sa
}

# ---- 5. watchdog -------------------------------------------------------------------------------

test_watchdog() {
	local pid inv i newpid restarts0 restarts
	stop_all
	dropin watchdog WatchdogSec=3s RestartSec=500ms TimeoutAbortSec=2s
	if ! timeout 60 systemctl start "$SVC"; then
		vmtest_fail watchdog "start with WatchdogSec=3s failed: $(jtail "$(prop "$SVC" InvocationID)")"
		clear_dropins
		return 1
	fi
	pid=$(prop "$SVC" MainPID)
	inv=$(prop "$SVC" InvocationID)
	restarts0=$(prop "$SVC" NRestarts)
	# Alive for three periods: WATCHDOG=1 keeps coming from the event loop.
	sleep 9
	if [[ $(prop "$SVC" MainPID) != "$pid" || $(prop "$SVC" NRestarts) != "$restarts0" ]]; then
		vmtest_fail watchdog-keepalive "a running daemon was restarted: MainPID $pid -> $(prop "$SVC" MainPID); $(journalctl -q -u "$SVC" -o cat | grep -i watchdog | tail -n 1)"
		clear_dropins
		return 1
	fi
	vmtest_pass watchdog-keepalive "WatchdogSec=3s: same MainPID after 9 s ($(jlog "$inv" | grep -m1 -o 'systemd watchdog: .*'))"
	kill -STOP "$pid"
	for ((i = 0; i < 150; i++)); do
		newpid=$(prop "$SVC" MainPID)
		if [[ $newpid != "$pid" && $newpid != 0 && $(prop "$SVC" ActiveState) == active ]]; then
			break
		fi
		sleep 0.2
	done
	restarts=$(prop "$SVC" NRestarts)
	kill -CONT "$pid" 2>/dev/null
	local why
	why=$(journalctl -q --no-pager -o cat -u "$SVC" | grep -m1 -i 'watchdog timeout')
	if [[ $newpid == "$pid" || $newpid == 0 || $(prop "$SVC" ActiveState) != active || -z $why ]]; then
		vmtest_fail watchdog "after SIGSTOP: MainPID $pid -> ${newpid:-?}, $(prop "$SVC" ActiveState), NRestarts $restarts0 -> $restarts, systemd said: ${why:-no watchdog timeout}"
	elif ! out=$(echo_check watchdog /run/vsockmap/echo.sock 1M); then
		vmtest_fail watchdog "restarted, but the echo failed: $out"
	else
		vmtest_pass watchdog "SIGSTOP'd daemon restarted by systemd in $((i / 5)).$((i % 5 * 2)) s: \"$why\"; MainPID $pid -> $newpid, NRestarts $restarts0 -> $restarts, echo ok"
	fi
	stop_all
	clear_dropins
}

# ---- capabilities and the system call filter ---------------------------------------------------

# cap_case NAME EXPECT(ok|fail) REGEX CONFIG DROPIN-LINES...: start the shipped unit with
# CONFIG and the extra lines; it must reach active (and log REGEX) or fail (logging REGEX).
cap_case() {
	local name=$1 expect=$2 regex=$3 conf=$4 rc inv line state out=
	shift 4
	stop_all
	dropin caps "ExecStart=" "ExecStart=/usr/sbin/vsockmapd -c $conf" "$@"
	timeout 60 systemctl start "$SVC" 2>/dev/null
	rc=$?
	inv=$(prop "$SVC" InvocationID)
	state=$(prop "$SVC" ActiveState)
	wait_journal "$inv" "$regex" 5
	line=$(jlog "$inv" | grep -m1 -E -- "$regex")
	if [[ $expect == ok && $rc == 0 && $state == active ]]; then
		out=$(echo_check "cap-$name" /run/vsockmap/cap.sock 1M) || {
			vmtest_fail "$name" "active, but the echo failed: $out"
			stop_all
			return 1
		}
	fi
	stop_all
	clear_dropins
	if [[ -z $line ]]; then
		vmtest_fail "$name" "start rc=$rc, $state; no /$regex/: $(jtail "$inv" 4)"
	elif [[ $expect == ok && ($rc != 0 || $state != active) ]]; then
		vmtest_fail "$name" "expected to run, got rc=$rc, $state: $(jtail "$inv" 3)"
	elif [[ $expect == fail && $rc == 0 ]]; then
		vmtest_fail "$name" "expected to fail, but it started: $line"
	elif [[ $expect == ok ]]; then
		vmtest_pass "$name" "active, 1 MiB echoed ($out); $line"
	else
		vmtest_pass "$name" "start refused as expected: $line"
		# The kernel's reason, for the record (verifier log lines, libbpf errors).
		jlog "$inv" | grep -E 'unknown func|helper|not permitted|must be|invalid' | head -n 4 |
			while IFS= read -r l; do vmtest_log "$name: $l"; done
	fi
}

test_capabilities() {
	cat >/etc/vsockmap/cap.conf <<-'EOF'
		[daemon]
		control = /run/vsockmap/cap-control.sock
		datapath = kernel
		[cap]
		listen  = UNIX-LISTEN:/run/vsockmap/cap.sock
		connect = VSOCK-CONNECT:1:5000
	EOF
	sed 's|^listen  = UNIX-LISTEN:/run/vsockmap/cap.sock$|&,group=nogroup,mode=0660|' \
		/etc/vsockmap/cap.conf >/etc/vsockmap/cap-group.conf
	local shipped
	shipped=$(prop "$SVC" CapabilityBoundingSet)
	vmtest_log "shipped CapabilityBoundingSet: $shipped"
	cap_case cap-shipped ok 'drain signal: queue (probe|iterator)' /etc/vsockmap/cap.conf
	# The verdict itself reads unix_sock->peer with bpf_probe_read_kernel, a perfmon helper.
	cap_case cap-no-perfmon fail "unknown func|prog 'vsockmap_verdict': failed to load" \
		/etc/vsockmap/cap.conf "CapabilityBoundingSet=~CAP_PERFMON"
	cap_case cap-no-bpf fail 'Operation not permitted|EPERM' /etc/vsockmap/cap.conf \
		"CapabilityBoundingSet=~CAP_BPF"
	cap_case cap-no-net-admin fail 'Operation not permitted|EPERM' /etc/vsockmap/cap.conf \
		"CapabilityBoundingSet=~CAP_NET_ADMIN"
	# The same without datapath=kernel: the daemon falls back to user space, and serves.
	grep -v '^datapath' /etc/vsockmap/cap.conf >/etc/vsockmap/cap-auto.conf
	cap_case cap-no-bpf-falls-back ok 'data path: user space, for every redirect: the BPF object did not load' \
		/etc/vsockmap/cap-auto.conf "CapabilityBoundingSet=~CAP_BPF"
	cap_case cap-group-needs-chown fail 'cap.sock: chown: Operation not permitted' \
		/etc/vsockmap/cap-group.conf
	cap_case cap-group-with-chown ok 'listening on /run/vsockmap/cap.sock' \
		/etc/vsockmap/cap-group.conf "CapabilityBoundingSet=CAP_CHOWN"
	cap_case syscall-filter-needs-bpf fail 'Operation not permitted|EPERM' /etc/vsockmap/cap.conf \
		"SystemCallFilter=" "SystemCallFilter=@system-service"
	# AF_INET and IPAddressAllow=localhost: a TCP-CONNECT target on this machine still works.
	sed 's|^connect = VSOCK-CONNECT:1:5000$|connect = TCP-CONNECT:127.0.0.1:7000|' \
		/etc/vsockmap/cap.conf >/etc/vsockmap/cap-tcp.conf
	systemd-run --quiet --unit=tcp-echo socat TCP-LISTEN:7000,bind=127.0.0.1,reuseaddr,fork EXEC:cat
	sleep 1
	cap_case hardened-tcp-localhost ok 'listening on /run/vsockmap/cap.sock' /etc/vsockmap/cap-tcp.conf
	systemctl stop tcp-echo 2>/dev/null
	test_protect_proc
}

# ProtectProc=invisible (hidepid=invisible) exempts the proc mount's group, gid 0: the daemon
# still reads the names of other users' clients.
test_protect_proc() {
	local json nobody root
	sed 's|^listen  = UNIX-LISTEN:/run/vsockmap/cap.sock$|&,mode=0666|' /etc/vsockmap/cap.conf \
		>/etc/vsockmap/cap-public.conf
	stop_all
	dropin caps "ExecStart=" "ExecStart=/usr/sbin/vsockmapd -c /etc/vsockmap/cap-public.conf"
	if ! timeout 60 systemctl start "$SVC"; then
		vmtest_fail protect-proc "start failed: $(jtail "$(prop "$SVC" InvocationID)")"
		clear_dropins
		return 1
	fi
	sleep 5 | setpriv --reuid=65534 --regid=65534 --clear-groups \
		socat -u - UNIX-CONNECT:/run/vsockmap/cap.sock &
	sleep 5 | socat -u - UNIX-CONNECT:/run/vsockmap/cap.sock &
	sleep 2
	json=$(vsockmapctl -s /run/vsockmap/cap-control.sock -j list 2>&1)
	wait
	stop_all
	clear_dropins
	nobody=$(grep -o '"client":{[^}]*"uid":65534[^}]*}' <<<"$json")
	root=$(grep -o '"client":{[^}]*"uid":0[^}]*}' <<<"$json")
	if [[ $nobody == *'"comm":"socat"'* && $root == *'"comm":"socat"'* ]]; then
		vmtest_pass protect-proc "with ProtectProc=invisible the daemon still names other users' clients: $nobody, $root"
	else
		vmtest_fail protect-proc "vsockmapctl list: $json"
	fi
}

# ---- rate-limited errors -----------------------------------------------------------------------

test_ratelimit() {
	local inv i n sup
	cat >/etc/vsockmap/refused.conf <<-'EOF'
		[refused]
		listen  = UNIX-LISTEN:/run/vsockmap/refused.sock
		connect = VSOCK-CONNECT:1:5999
	EOF
	stop_all
	dropin ratelimit "ExecStart=" "ExecStart=/usr/sbin/vsockmapd -c /etc/vsockmap/refused.conf"
	if ! timeout 60 systemctl start "$SVC"; then
		vmtest_fail ratelimit "start failed: $(jtail "$(prop "$SVC" InvocationID)")"
		clear_dropins
		return 1
	fi
	inv=$(prop "$SVC" InvocationID)
	for ((i = 0; i < 30; i++)); do
		socat -u /dev/null UNIX-CONNECT:/run/vsockmap/refused.sock 2>/dev/null
	done
	# The window is 10 s; the summary comes with the next 5 s status tick after it.
	wait_journal "$inv" 'suppressed [0-9]+ similar messages' 25
	sleep 1
	n=$(jlog "$inv" | grep -v suppressed | grep -c 'VSOCK-CONNECT:1:5999')
	sup=$(jlog "$inv" | grep -m1 -o 'suppressed [0-9]* similar messages in the last [0-9]* s')
	stop_all
	clear_dropins
	if [[ $n == 10 && $sup == "suppressed 20 similar messages"* ]]; then
		vmtest_pass ratelimit "30 refused connects: 10 warnings logged, then \"$sup\""
	else
		vmtest_fail ratelimit "30 refused connects: $n warnings logged (want 10), summary: ${sup:-none}"
	fi
}

# ---- 6. systemd-analyze --------------------------------------------------------------------------

test_analyze() {
	local out score bad
	out=$(systemd-analyze security --no-pager "$SVC" 2>&1)
	score=$(sed -n 's/.*Overall exposure level for vsockmapd.service: \([0-9.]*\).*/\1/p' <<<"$out")
	bad=$(grep '✗' <<<"$out" | awk '{print $2}' | tr '\n' ' ')
	printf '%s\n' "$out" | grep -E '✗|Overall' | while IFS= read -r l; do vmtest_log "security: $l"; done
	if [[ -z $score ]]; then
		vmtest_fail analyze-security "no score: $(tail -n 2 <<<"$out")"
	elif awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }'; then
		vmtest_pass analyze-security "exposure $score (<= 2.0); still exposed: $bad"
	else
		vmtest_fail analyze-security "exposure $score > 2.0; exposed: $bad"
	fi
	# The package's daemon has no test knob (Makefile, TEST_KNOBS; docs/hacking.md): a test
	# build's binary carries the variables' names.
	if grep -qa 'VSOCKMAPD_TEST_' /usr/sbin/vsockmapd; then
		vmtest_fail no-test-knobs "/usr/sbin/vsockmapd names $(grep -ao 'VSOCKMAPD_TEST_[A-Z_]*' /usr/sbin/vsockmapd | sort -u | tr '\n' ' ')"
	else
		vmtest_pass no-test-knobs "/usr/sbin/vsockmapd reads no VSOCKMAPD_TEST_ variable"
	fi
	# --man=no: the image carries no man pages.
	out=$(systemd-analyze verify --man=no /lib/systemd/system/vsockmapd.service \
		/etc/systemd/system/vsockmapd.socket /etc/systemd/system/vsockmapd-logs.socket 2>&1)
	if [[ $? == 0 && -z $out ]]; then
		vmtest_pass analyze-verify "systemd-analyze verify: vsockmapd.service, vsockmapd.socket, vsockmapd-logs.socket clean"
	else
		vmtest_fail analyze-verify "$(tr '\n' ' ' <<<"$out")"
	fi
}

# ---- run -------------------------------------------------------------------------------------

rc=0
if ! test_package_install; then
	printf 'VMSUITE-END rc=1\n' >"$VMTEST_CONSOLE"
	exit 0
fi
test_setup || rc=1
start_echo_service || rc=1
if want start; then
	if test_start; then
		test_status_refresh
		test_echo_hardened
		test_journal_fields
		test_journal_redirect_id
		test_reload
		test_reload_datapath kernel
		test_reload_datapath userspace
		# The kernel path, asked for: auto runs a vsock section in user space on a
		# kernel without kernel/ patch 1 (docs/datapath.md).
		want_one restart restart-no-loss && test_restart_no_loss restart-no-loss 1M upload kernel
		# The user-space path hands its pairs over too (no maps: slot "userspace").
		want_one restart restart-userspace &&
			RESTARTS=5 test_restart_no_loss restart-userspace 1M upload userspace
		# Verdicts with and without counters, handed over to each other.
		want_one restart restart-fastpath-switch && RESTARTS=4 test_restart_no_loss \
			restart-fastpath-switch 1M upload kernel alternate-fastpath
		# Half the restarts while the reply flows, after the client's half-close.
		want_one restart restart-during-reply &&
			RESTARTS=10 test_restart_no_loss restart-during-reply 128M both kernel
		want_one restart restart-while-draining && test_restart_while_draining
		# Behind a server that reads 64 KiB every 3 s; into a start that fails, then fixed.
		for dp in "" kernel; do
			want_one restart restart-slow-sink && test_restart_slow_sink ${dp:+"$dp"}
			want_one restart restart-failed-start && test_restart_failed_start ${dp:+"$dp"}
		done
		want_one soak-restart soak-restart-auto && test_soak_restart auto
		want_one soak-restart soak-restart-kernel && test_soak_restart kernel
		test_stop_clean
	fi
fi
if want activation; then
	test_socket_activation && test_socket_activation_dgram
	test_socket_activation_stop
	test_activation_errors
fi
if want scale; then
	test_scale kernel
	test_scale userspace
fi
want watchdog && test_watchdog
want capabilities && test_capabilities
want ratelimit && test_ratelimit
want analyze && test_analyze
if want package; then
	test_package_upgrade
	test_package_remove && test_package_purge
fi
stop_all
grep -q '^VMTEST FAIL' "$VMTEST_RESULTS" 2>/dev/null && rc=1
vmtest_log "suite done at $(cut -d' ' -f1 /proc/uptime)s uptime"
printf 'VMSUITE-END rc=%s\n' "$rc" >"$VMTEST_CONSOLE"
exit 0
