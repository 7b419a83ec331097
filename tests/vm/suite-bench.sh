# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh disable=SC3045 # busybox ash and bash both have ulimit -n
#
# suite-bench.sh - the VM part of `make bench` (bench/run.sh boots it once): unix clients to a
# vsock service on CID 1 through each relay mode, every mode in turn in the same boot. Every
# measurement is a "BENCH {json}" console line; bench/run.sh collects them from the log.
# One VMTEST line per scenario says whether the harness got verified numbers.
#
#	tests/vm/run.sh tests/vm/suite-bench.sh --file bench/lib.sh:/usr/lib/vmtest/bench-lib.sh \
#		--file PARAMS:/usr/lib/vmtest/bench-params.sh
#
# PARAMS (written by bench/run.sh) sets BENCH_REPS, BENCH_CONN_REPS, BENCH_VM_BYTES, BENCH_VM_PAR_BYTES,
# BENCH_VM_SCENARIOS, BENCH_PP_COUNT, BENCH_PP_WARMUP, BENCH_CONNS, BENCH_CONN_CONCURRENCY,
# BENCH_HOLD_COUNTS and BENCH_MODES; BENCH_PART_NAME (default vm) names the part in every record,
# and BENCH_THROUGHPUT_ONLY=1 leaves out latency, connection rate and memory. BENCH_VIRTIO=1
# (a boot with tests/vm/run.sh --virtio: make bench's virtio part) puts the servers on the host,
# started through the host agent, and the clients and relays dial CID 2.

# shellcheck source=tests/lib/harness.sh
. "${VMTEST_LIB:-/usr/lib/vmtest/lib.sh}"
# shellcheck source=bench/lib.sh
. /usr/lib/vmtest/bench-lib.sh
# shellcheck disable=SC1091
. /usr/lib/vmtest/bench-params.sh
if [ "${BENCH_VIRTIO:-0}" = 1 ]; then
	# shellcheck source=tests/vm/virtio-guest.sh
	. /usr/lib/vmtest/virtio.sh
fi

bench_vm_part "$VMTEST_TMP/bench"

# 10,000 idle redirects are 30,000 descriptors in the daemon's process alone.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
bench_log "vm: $(uname -r), $(grep -c ^processor /proc/cpuinfo) CPU, $(bench_meminfo MemTotal) kB, ulimit -n $(ulimit -n)"
bench_emit "{\"part\":\"$BENCH_PART\",\"metric\":\"machine\",\"kernel\":\"$(uname -r)\",\"cpus\":$(grep -c ^processor /proc/cpuinfo),\"mem_kb\":$(bench_meminfo MemTotal),\"nofile\":\"$(ulimit -n)\",\"socat\":\"$(socat -V 2>/dev/null | sed -n 's/^socat version \([^ ]*\).*/\1/p')\"}"

# scenario_verdict SCENARIO METRIC: PASS when every mode that runs has a verified number.
scenario_verdict() {
	_ok=$(grep "\"scenario\":\"$1\"" "$BENCH_RESULTS" | grep "\"metric\":\"$2\"" | grep -c '"status":"ok"')
	_bad=$(grep "\"scenario\":\"$1\"" "$BENCH_RESULTS" | grep "\"metric\":\"$2\"" |
		grep -v '"status":"ok"' | grep -v '"status":"n/a"' |
		sed -n 's/.*"mode":"\([^"]*\)".*"reason":"\([^"]*\)".*/\1: \2/p' | sort -u | head -n 3 | tr '\n' ';')
	_na=$(grep "\"scenario\":\"$1\"" "$BENCH_RESULTS" | grep "\"metric\":\"$2\"" |
		grep -c '"status":"n/a"')
	if [ "$_ok" -gt 0 ] && [ -z "$_bad" ]; then
		vmtest_pass "bench-$1-$2" "$_ok verified runs, $_na modes n/a"
	elif [ "$_ok" -gt 0 ]; then
		# A relay that breaks the bytes is a result of the bench, not a harness failure.
		vmtest_pass "bench-$1-$2" "$_ok verified runs, $_na modes n/a; failed runs: $_bad"
	else
		vmtest_fail "bench-$1-$2" "no verified run: $_bad"
	fi
}

bench_part_start
for _scen in $BENCH_VM_SCENARIOS; do
	case $_scen in
	uds-vsock) bench_scenario uds-vsock stream "$BENCH_REPS" "$BENCH_VM_BYTES" 1 ;;
	uds-vsock-x8) bench_scenario uds-vsock-x8 stream "$BENCH_REPS" "$BENCH_VM_PAR_BYTES" 8 ;;
	dgram-vsock) bench_scenario dgram-vsock dgram "$BENCH_REPS" "$BENCH_VM_BYTES" 1 ;;
	vsock-uds) bench_scenario vsock-uds reply "$BENCH_REPS" "$BENCH_VM_BYTES" 1 ;;
	esac
	scenario_verdict "$_scen" throughput
done
# The kernels of make kernel-patched (vm-stock, vm-patched) and the virtio part: throughput only.
if [ "${BENCH_THROUGHPUT_ONLY:-0}" = 1 ]; then
	bench_part_stop
	exit 0
fi
bench_pingpong_phase uds-vsock "$BENCH_REPS" "$BENCH_PP_COUNT" "$BENCH_PP_WARMUP" \
	"$BENCH_CONNS" "$BENCH_CONN_CONCURRENCY" "${BENCH_CONN_REPS:-$BENCH_REPS}"
scenario_verdict uds-vsock latency
scenario_verdict uds-vsock connrate
# shellcheck disable=SC2086 # a list of counts
bench_memory_phase uds-vsock $BENCH_HOLD_COUNTS
scenario_verdict uds-vsock memory
bench_part_stop
bench_log "daemon log tail:"
tail -n 5 "$BENCH_DIR/vsockmapd.log" 2>/dev/null | while read -r _l; do bench_log "  $_l"; done
exit 0
