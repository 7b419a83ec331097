# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
#
# suite-soak.sh - many connections through vsockmapd to real vsock, every byte checked
# (tests/tools/vsm-soak.c): random sizes from 0 to SOAK_MAX_SIZE each way, at most SOAK_LIVE
# at once, and every way of ending (client or server first, half-close each way, a client
# killed with SIGKILL, a server reset). Then the daemon must have no redirect left and its
# log no error. Runs in the VM as /suite.sh; `make soak` (full) and `make check` (QUICK)
# pass the profile in /usr/lib/vmtest/soak.env:
#
#	tests/vm/run.sh tests/vm/suite-soak.sh --file ENV:/usr/lib/vmtest/soak.env

# shellcheck source=tests/vm/lib.sh
. "${VMTEST_LIB:-/usr/lib/vmtest/lib.sh}"
SOAK_COUNT=10000 SOAK_LIVE=500 SOAK_MAX_SIZE=8388608 SOAK_SEED=1
# shellcheck disable=SC1091
[ -f /usr/lib/vmtest/soak.env ] && . /usr/lib/vmtest/soak.env

D=$VMTEST_TMP/soak
mkdir -p "$D"
cat >"$D/vsockmap.conf" <<CONF
[daemon]
control = $D/control.sock
log-level = notice

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
vsm-soak --connect "unix:$D/soak.sock" --listen vsock:7000 --count "$SOAK_COUNT" \
	--live "$SOAK_LIVE" --max-size "$SOAK_MAX_SIZE" --seed "$SOAK_SEED" \
	--end-bound-ms 3000 >"$D/soak.out" 2>&1
rc=$?
grep -v '^mode ' "$D/soak.out" | tail -n 20 | while read -r line; do vmtest_log "  $line"; done
grep '^mode ' "$D/soak.out" | while read -r line; do vmtest_log "  $line"; done
summary=$(grep '^soak ' "$D/soak.out")
if [ $rc -eq 0 ] && [ -n "$summary" ]; then
	vmtest_pass soak-connections "$summary"
else
	vmtest_fail soak-connections "rc=$rc ${summary:-no summary line}"
fi

# Every redirect gone, nothing logged at error level (warnings for the kills are expected).
live=-1
i=0
while [ $i -lt 50 ]; do
	if out=$(vsockmapctl -s "$D/control.sock" --json list 2>&1); then
		live=$(printf '%s' "$out" | grep -o '"id":' | wc -l)
	else
		live=-1
	fi
	[ "$live" -eq 0 ] && break
	sleep 0.2
	i=$((i + 1))
done
slab1=$(awk '/^Slab:/ {print $2}' /proc/meminfo)
errors=$(grep -ci 'error\|did not drain' "$D/daemon.log")
if [ "$live" -eq 0 ] && [ "$errors" -eq 0 ]; then
	vmtest_pass soak-clean-after "no redirect left, no error logged; slab ${slab0} -> ${slab1} kB"
else
	vmtest_fail soak-clean-after "$live redirects left, $errors error lines: $(grep -i -m3 'error\|did not drain' "$D/daemon.log" | tr '\n' ' ')"
fi
kill "$daemon"
wait "$daemon"
