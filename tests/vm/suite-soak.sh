# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
#
# suite-soak.sh - many connections through vsockmapd to real vsock, every byte checked
# (tests/tools/vsm-soak.c): random sizes from 0 to SOAK_MAX_SIZE each way, at most SOAK_LIVE
# at once, every way of ending (client or server first, half-close each way, a client
# killed with SIGKILL, a server reset, a client that shuts down reading, a server that
# half-closes first), send buffers from 4 KiB to 32 MiB, pausing clients, slow and stalling
# servers, a redirect the daemon is asked to close ("close ID"), one left to the daemon's
# idle-timeout, and a SIGHUP (a reload) to the daemon every half second or so. Then the
# daemon must have no redirect left and its log no error. Last, a slow reader in each direction for SOAK_SLOW_SECONDS, with kernel
# memory sampled every second. Last, a short soak stopped part-way (SIGTERM once two thirds
# of its connections have started): each live one must end as the stop promises
# (docs/behaviour-matrix.md), and the daemon exit 0. Runs in the VM as /suite.sh; `make soak` (full) and `make check` (QUICK)
# pass the profile in /usr/lib/vmtest/soak.env:
#
#	tests/vm/run.sh tests/vm/suite-soak.sh --file ENV:/usr/lib/vmtest/soak.env

# shellcheck source=tests/lib/harness.sh
. "${VMTEST_LIB:-/usr/lib/vmtest/lib.sh}"
SOAK_COUNT=10000 SOAK_LIVE=500 SOAK_MAX_SIZE=8388608 SOAK_SEED=1 SOAK_SLOW_SECONDS=60
SOAK_MODES= # every ending (vsm-soak --modes)
# A killed client's or reset server's other end must see EOF or an error within this long
# of the later of the kill and its last byte: the daemon's drain-timeout (10 s), the longest
# it waits for the kernel before passing an end on. Under the VM's full load (500 live
# connections, one emulated CPU) the largest measured is about 4.5 s.
SOAK_END_BOUND_MS=10000
# shellcheck disable=SC1091
[ -f /usr/lib/vmtest/soak.env ] && . /usr/lib/vmtest/soak.env

D=$VMTEST_TMP/soak
mkdir -p "$D"
cat >"$D/vsockmap.conf" <<CONF
[daemon]
control = $D/control.sock
log-level = notice
# The kernel path, asked for: auto runs vsock sections in user space on a kernel without
# kernel/ patch 1 (docs/datapath.md).
datapath = kernel
idle-timeout = 5

[soak]
listen  = UNIX-LISTEN:$D/soak.sock,backlog=1024
connect = VSOCK-CONNECT:1:7000
CONF

# Two descriptors per live redirect (four while a reply runs through a pipe).
ulimit -n 16384
vsockmapd -c "$D/vsockmap.conf" 2>"$D/daemon.log" &
daemon=$!
if ! wait_for_socket "$D/control.sock" 20; then
	vmtest_fail soak-start "vsockmapd did not come up: $(tail -n 3 "$D/daemon.log")"
	exit 0
fi
slab0=$(awk '/^Slab:/ {print $2}' /proc/meminfo)

vmtest_log "soak: $SOAK_COUNT connections, at most $SOAK_LIVE live, up to $SOAK_MAX_SIZE bytes each way"
vsm-soak --connect "unix:$D/soak.sock" --listen vsock:any:7000 --count "$SOAK_COUNT" \
	--live "$SOAK_LIVE" --max-size "$SOAK_MAX_SIZE" --seed "$SOAK_SEED" \
	--end-bound-ms "$SOAK_END_BOUND_MS" ${SOAK_MODES:+--modes "$SOAK_MODES"} \
	--hup-pid "$daemon" --ctl "$D/control.sock" --idle-ms 5000 >"$D/soak.out" 2>&1
rc=$?
n_failed=$(grep -c '^conn ' "$D/soak.out")
[ "$n_failed" -gt 100 ] && vmtest_log "  (the first 100 of $n_failed failed connections)"
grep '^conn ' "$D/soak.out" | head -n 100 | while read -r line; do vmtest_log "  $line"; done
grep -v '^conn \|^mode \|^soak ' "$D/soak.out" | tail -n 5 | while read -r line; do vmtest_log "  $line"; done
grep '^mode ' "$D/soak.out" | while read -r line; do vmtest_log "  $line"; done
summary=$(grep '^soak ' "$D/soak.out")
if [ $rc -eq 0 ] && [ -n "$summary" ]; then
	vmtest_pass soak-connections "$summary"
else
	vmtest_fail soak-connections "rc=$rc ${summary:-no summary line}"
fi

# Every redirect gone, nothing logged at error level (warnings for the kills are expected).
live=$(redirects_left "$D/control.sock")
slab1=$(awk '/^Slab:/ {print $2}' /proc/meminfo)
errors=$(grep -ci 'error\|did not drain' "$D/daemon.log")
if [ "$live" -eq 0 ] && [ "$errors" -eq 0 ]; then
	vmtest_pass soak-clean-after "no redirect left, no error logged; slab ${slab0} -> ${slab1} kB"
else
	vmtest_fail soak-clean-after "$live redirects left, $errors error lines: $(grep -i -m3 'error\|did not drain' "$D/daemon.log" | tr '\n' ' ')"
fi
# ---- a slow reader in each direction ----------------------------------------------------
# The reader takes 16 KiB every 10 ms (about 1.6 MB/s) for SOAK_SLOW_SECONDS; the writer
# offers more than that as fast as it can. Kernel memory (Slab) and the redirect's queues
# are sampled every second; the peak growth must stay under SLOW_SLAB_BOUND_KB.
SLOW_SLAB_BOUND_KB=65536
slow_bytes=$((SOAK_SLOW_SECONDS * 1600000))

# sample_until PID OUT: until PID exits, one line per second: slab kB, sockets used, and
# the live redirect's target_backlog_skbs and client_rcvq_bytes.
sample_until() {
	while kill -0 "$1" 2>/dev/null; do
		_slab=$(awk '/^Slab:/ {print $2}' /proc/meminfo)
		_socks=$(awk '/^sockets:/ {print $3}' /proc/net/sockstat)
		# list leaves the kernel queues out (an iterator pass each); show has them.
		_id=$(vsockmapctl -s "$D/control.sock" --json list 2>/dev/null |
			sed -n 's/^\[{"id":\([0-9]*\).*/\1/p')
		_q=
		[ -n "$_id" ] && _q=$(vsockmapctl -s "$D/control.sock" --json show "$_id" 2>/dev/null |
			sed -n 's/.*"target_backlog_skbs":\([0-9null]*\).*"client_rcvq_bytes":\([0-9null]*\).*/\1 \2/p')
		echo "$_slab $_socks ${_q:-- -}" >>"$2"
		sleep 1
	done
}

# slow_report NAME SLAB0 SAMPLES RC DETAIL
slow_report() {
	_peak=$(awk -v b="$2" '{ if ($1 - b > m) m = $1 - b } END { print m + 0 }' "$3")
	_skbs=$(awk '$3 ~ /^[0-9]+$/ { n++; if ($3 > m) m = $3 } END { print (n ? m + 0 : "n/a") }' "$3")
	_rcvq=$(awk '$4 ~ /^[0-9]+$/ { if ($4 > m) m = $4 } END { print m + 0 }' "$3")
	_n=$(wc -l <"$3")
	if [ "$4" -eq 0 ] && [ "$_peak" -lt $SLOW_SLAB_BOUND_KB ]; then
		vmtest_pass "$1" "$5; peak Slab growth ${_peak} kB over $_n samples, target backlog <= $_skbs skbs, client rcvq <= $_rcvq B"
	else
		vmtest_fail "$1" "rc=$4 $5; peak Slab growth ${_peak} kB (bound $SLOW_SLAB_BOUND_KB), backlog <= $_skbs skbs"
	fi
}

# slow_run NAME TAG 'SERVER ARGS' 'CLIENT ARGS' CHECKER WHAT: one slow transfer through the
# daemon with memory sampled, reported by slow_report; CHECKER (server or client) is the
# side whose verify= result is shown.
slow_run() {
	_t=$SOAK_SLOW_SECONDS
	# shellcheck disable=SC2086
	vsm-peer server vsock:any:7000 $3 --count 1 --timeout $((_t * 4)) \
		--ready-file "$D/$2.ready" >"$D/$2.server" 2>&1 &
	_srv=$!
	wait_for_file "$D/$2.ready" 10
	_slab0=$(awk '/^Slab:/ {print $2}' /proc/meminfo)
	# shellcheck disable=SC2086
	vsm-peer client "unix:$D/soak.sock" $4 --timeout $((_t * 4)) >"$D/$2.client" 2>&1 &
	_cli=$!
	: >"$D/$2.samples"
	sample_until "$_cli" "$D/$2.samples"
	wait "$_cli"
	_crc=$?
	wait "$_srv"
	_rc=$((_crc + $?))
	tail -n 2 "$D/$2.client" "$D/$2.server" | while read -r line; do vmtest_log "  $line"; done
	slow_report "$1" "$_slab0" "$D/$2.samples" "$_rc" \
		"$6: $(grep -o 'verify=[a-z@0-9]*' "$D/$2.$5" | head -n1)"
}

# unix -> vsock: the vsock server reads slowly.
slow_run soak-slow-reader-vsock up "--sink --slow 10000 --read-size 16384" \
	"--send $slow_bytes" server "unix->vsock $slow_bytes B into a 1.6 MB/s reader"
# vsock -> unix: the host side sends fast, the unix client reads slowly.
slow_run soak-slow-reader-unix down "--source $slow_bytes" \
	"--send 0 --expect $slow_bytes --slow 10000 --read-size 16384" client \
	"vsock->unix $slow_bytes B to a 1.6 MB/s reader"

# ---- a stop in the middle of a soak ------------------------------------------------------
stop_count=$((SOAK_COUNT / 4 < 300 ? SOAK_COUNT / 4 : 300))
vsm-soak --connect "unix:$D/soak.sock" --listen vsock:any:7000 --count "$stop_count" \
	--live "$SOAK_LIVE" --max-size "$SOAK_MAX_SIZE" --seed "$((SOAK_SEED + 1))" \
	--end-bound-ms "$SOAK_END_BOUND_MS" ${SOAK_MODES:+--modes "$SOAK_MODES"} \
	--hup-pid "$daemon" --ctl "$D/control.sock" --idle-ms 5000 --term-pid "$daemon" --term-after "$((stop_count * 2 / 3))" >"$D/stop.out" 2>&1
rc=$?
wait "$daemon"
drc=$?
grep '^conn ' "$D/stop.out" | head -n 20 | while read -r line; do vmtest_log "  $line"; done
summary=$(grep '^soak ' "$D/stop.out")
if [ $rc -eq 0 ] && [ $drc -eq 0 ] && [ -n "$summary" ]; then
	vmtest_pass soak-stop "seed $((SOAK_SEED + 1)): $summary; the daemon exited 0"
else
	vmtest_fail soak-stop "rc=$rc, daemon exit $drc: ${summary:-no summary line} | $(grep -v '^conn \|^mode \|^soak ' "$D/stop.out" | tail -n 3 | tr '\n' ' ')"
fi
