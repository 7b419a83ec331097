#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench/run.sh - `make bench`: vsockmapd against socat, systemd-socket-proxyd and no relay
# at all, on this machine (unix to unix, unix to TCP), in the test VM (unix to vsock) and
# over virtio-vsock to a server on the host, every mode in turn in the same run or boot, each
# scenario repeated. Prints the tables, writes bench/results.json (every run) and
# bench/results.png. bench/README.md explains.
#
#	bench/run.sh               the full bench (about 30 minutes on 2 cores)
#	QUICK=1 bench/run.sh       fewer bytes, 3 rounds (about 6 minutes)
#	bench/run.sh --selftest    tiny sizes, a subset; checks the harness, not the numbers
#	bench/run.sh --part host|vm|virtio   one part only (the tables still cover what ran)
#	bench/run.sh --part "vm-stock vm-patched"   the kernels of make kernel-patched only
#	bench/run.sh --report      redo the tables, JSON and PNG from the last raw results
#
# Performance is reported, never asserted: the exit status says whether every mode that
# can run produced verified numbers (and, with --selftest, whether the outputs exist).

set -uo pipefail
shopt -s extglob
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
# shellcheck source=tests/lib/summary.sh
. tests/lib/summary.sh
OUT=$ROOT/.output

usage() {
	sed -n '4,17s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

selftest=0 report_only=0 parts=
while (($#)); do
	case $1 in
	--selftest) selftest=1 ;;
	--report) report_only=1 ;;
	--part)
		(($# >= 2)) || usage
		parts=$2
		shift
		;;
	-h | --help) usage ;;
	*) usage ;;
	esac
	shift
done
QUICK=${QUICK:-0}
[[ $QUICK == 1 ]] || QUICK=0

# The kernels kernel/build.sh (make kernel-patched) built from one tree, as Debian ships it
# and with kernel/patches: "KERNEL MODULES" of variant $1, or nothing.
KERNEL_CACHE=${VSOCKMAP_KERNEL_CACHE:-/var/cache/vsockmap-kernel}
# Every part there is, each with its raw results in $BENCH_OUT/PART.jsonl.
ALL_PARTS="host vm vm-stock vm-patched virtio"
built_kernel() {
	local k m
	k=$(compgen -G "$KERNEL_CACHE/out/$1/boot/vmlinuz-*" | head -n 1)
	m=$(compgen -G "$KERNEL_CACHE/out/$1/lib/modules/*" | head -n 1)
	[[ -n $k && -n $m ]] && echo "$k $m"
}
# By default the VM part boots the suites' kernel; where make kernel-patched has built both
# variants, the same run also measures one stream on each (vm-stock, vm-patched). The virtio
# part boots the suites' kernel again, with the virtio transport and the servers on the host.
if [[ -z $parts ]]; then
	parts="host vm"
	if ((!selftest && !report_only)); then
		if [[ -n $(built_kernel stock) && -n $(built_kernel patched) ]]; then
			parts+=" vm-stock vm-patched"
		else
			printf 'bench: no kernels of make kernel-patched in %s: no stock-versus-patched rows\n' \
				"$KERNEL_CACHE" >&2
		fi
	fi
	parts+=" virtio"
fi

# The self-test keeps to its own files (and VM log), so that it can run beside a real bench
# (make check next to make bench) without mixing their results or overwriting bench/results.*.
if ((selftest)); then
	BENCH_OUT=$OUT/bench-selftest
	RESULTS_JSON=$BENCH_OUT/results.json
	RESULTS_PNG=$BENCH_OUT/results.png
	VM_SUITE_NAME=suite-bench-selftest
else
	BENCH_OUT=$OUT/bench
	RESULTS_JSON=$ROOT/bench/results.json
	RESULTS_PNG=$ROOT/bench/results.png
	VM_SUITE_NAME=suite-bench
fi
RAW=$BENCH_OUT/raw.jsonl

# ---- profiles -------------------------------------------------------------------------------
# Each run of a throughput scenario lasts 1-2 s or more for the fastest mode in the full
# profile (direct unix at ~5 GB/s: 6 GiB; direct vsock in the TCG VM at ~100 MB/s: 128 MiB).
MODES_HOST_UU="direct socat socat-b64k proxyd vsockmapd vsockmapd-permanent vsockmapd-relay"
MODES_HOST_UT="direct socat socat-b64k proxyd vsockmapd vsockmapd-permanent vsockmapd-relay"
MODES_VM="direct socat socat-b64k proxyd vsockmapd vsockmapd-permanent vsockmapd-relay"
# On the kernels of make kernel-patched: one stream, the modes the issue's targets compare.
MODES_VM_KERNELS="direct socat vsockmapd vsockmapd-permanent vsockmapd-relay"
VM_SCENARIOS="uds-vsock uds-vsock-x8 dgram-vsock vsock-uds"
# The virtio part: the seed's setup, servers on the host (tests/vm/run.sh --virtio). Its kernel
# path moves a few MB/s there (docs/performance.md, "virtio"), so its runs are shorter.
MODES_VIRTIO="direct socat socat-b64k vsockmapd vsockmapd-permanent vsockmapd-relay"
VIRTIO_SCENARIOS="uds-vsock uds-vsock-x8 dgram-vsock"
CONN_CONCURRENCY=8
if ((selftest)); then
	profile=selftest
	REPS=3 CONN_REPS=3 HOST_BYTES=$((16 << 20)) VM_BYTES=$((4 << 20)) VM_PAR_BYTES=$((1 << 20))
	HOST_PP=500 HOST_PP_WARMUP=50 VM_PP=100 VM_PP_WARMUP=10
	HOST_CONNS=100 VM_CONNS=50 HOST_HOLD="100" VM_HOLD="100"
	VM_SCENARIOS="uds-vsock dgram-vsock vsock-uds"
	VM_TIMEOUT=150
	VIRTIO_SCENARIOS="uds-vsock dgram-vsock"
	VIRTIO_BYTES=$((2 << 20)) VIRTIO_PAR_BYTES=$((256 << 10)) VIRTIO_TIMEOUT=240
	export BENCH_SETTLE=0.3 BENCH_TEARDOWN_MAX=10 BENCH_HOLD_TIMEOUT=30
	export BENCH_IDLE_SECONDS=1 BENCH_FLOOD_PP=200
elif ((QUICK)); then
	profile=quick
	REPS=3 CONN_REPS=3 HOST_BYTES=$((512 << 20)) VM_BYTES=$((24 << 20)) VM_PAR_BYTES=$((3 << 20))
	HOST_PP=5000 HOST_PP_WARMUP=500 VM_PP=500 VM_PP_WARMUP=50
	HOST_CONNS=1000 VM_CONNS=150 HOST_HOLD="1000 10000" VM_HOLD="1000"
	VM_TIMEOUT=400
	VIRTIO_BYTES=$((16 << 20)) VIRTIO_PAR_BYTES=$((2 << 20)) VIRTIO_TIMEOUT=600
	export BENCH_SETTLE=1 BENCH_TEARDOWN_MAX=10 BENCH_HOLD_TIMEOUT=60
	export BENCH_IDLE_SECONDS=5 BENCH_FLOOD_PP=1000
else
	profile=full
	# Connection setup in the VM costs socat a fork under TCG (~8 ms): 3 rounds of 2,000.
	REPS=5 CONN_REPS=3 HOST_BYTES=$((6 << 30)) VM_BYTES=$((128 << 20)) VM_PAR_BYTES=$((16 << 20))
	HOST_PP=20000 HOST_PP_WARMUP=1000 VM_PP=2000 VM_PP_WARMUP=200
	HOST_CONNS=2000 VM_CONNS=2000 HOST_HOLD="1000 10000" VM_HOLD="1000 10000"
	VM_TIMEOUT=1100
	VIRTIO_BYTES=$((64 << 20)) VIRTIO_PAR_BYTES=$((8 << 20)) VIRTIO_TIMEOUT=1800
	export BENCH_SETTLE=1 BENCH_TEARDOWN_MAX=20 BENCH_HOLD_TIMEOUT=120
	export BENCH_IDLE_SECONDS=10 BENCH_FLOOD_PP=2000
fi

log() {
	printf 'bench: %s\n' "$*" >&2
}

elapsed_since() { # EPOCHREALTIME at the start: whole seconds since
	awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", b - a + 0.5 }'
}

fmt_duration() { # SECONDS
	printf '%dm%02ds' $(($1 / 60)) $(($1 % 60))
}

# ---- the host part --------------------------------------------------------------------------

# A free TCP port on 127.0.0.1 for the unix->TCP target (nothing answers a connect there).
free_port() {
	local p
	for p in $(seq 47310 47390); do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# host_scenario SCENARIO MODES TARGET_KIND: one host part, in a scratch directory.
host_scenario() {
	local scen=$1 port
	export BENCH_PART=host BENCH_DIR=$HOST_TMP/$scen BENCH_MODES=$2
	mkdir -p "$BENCH_DIR"
	if [[ $3 == unix ]]; then
		BENCH_TARGET_LISTEN=unix:$BENCH_DIR/target.sock
		BENCH_TARGET_DIRECT=$BENCH_TARGET_LISTEN
		BENCH_TARGET_SOCAT=UNIX-CONNECT:$BENCH_DIR/target.sock
		BENCH_TARGET_DAEMON=$BENCH_TARGET_SOCAT
		BENCH_TARGET_PROXYD=$BENCH_DIR/target.sock
	else
		port=$(free_port) || {
			log "no free TCP port in 47310-47390"
			return 1
		}
		BENCH_TARGET_LISTEN=tcp:127.0.0.1:$port
		BENCH_TARGET_DIRECT=$BENCH_TARGET_LISTEN
		BENCH_TARGET_SOCAT=TCP:127.0.0.1:$port
		BENCH_TARGET_DAEMON=TCP-CONNECT:127.0.0.1:$port
		BENCH_TARGET_PROXYD=127.0.0.1:$port
	fi
	log "host $scen: modes $BENCH_MODES"
	bench_part_start
	bench_scenario "$scen" stream "$REPS" "$HOST_BYTES" 1
	bench_pingpong_phase "$scen" "$REPS" "$HOST_PP" "$HOST_PP_WARMUP" "$HOST_CONNS" \
		"$CONN_CONCURRENCY" "$CONN_REPS"
	if [[ $3 == unix ]]; then
		# shellcheck disable=SC2086 # a list of counts
		bench_memory_phase "$scen" $HOST_HOLD
	else
		bench_stop_pid "$PINGPONG_PID" pingpong-server
	fi
	bench_part_stop
}

host_part() {
	local t0=$EPOCHREALTIME
	HOST_TMP=$(mktemp -d /tmp/vsockmap-bench.XXXXXX)
	export BENCH_RESULTS=$BENCH_OUT/host.jsonl BENCH_TOOL=$OUT/tools/vsm-bench
	export BENCH_DAEMON=$OUT/vsockmapd BENCH_CTL=$OUT/vsockmapctl
	# The list flood of the memory phase (the host case's own client; it needs python3).
	BENCH_FLOOD_TOOL=
	! command -v python3 >/dev/null || BENCH_FLOOD_TOOL=$ROOT/tests/host/hostile-control.py
	export BENCH_FLOOD_TOOL
	: >"$BENCH_RESULTS"
	# shellcheck source=bench/lib.sh
	. bench/lib.sh
	bench_emit "{\"part\":\"host\",\"metric\":\"machine\",\"kernel\":\"$(uname -r)\",\"cpus\":$(nproc),\"mem_kb\":$(bench_meminfo MemTotal),\"nofile\":\"$(ulimit -n)\",\"socat\":\"$(socat -V 2>/dev/null | sed -n 's/^socat version \([^ ]*\).*/\1/p')\",\"systemd\":\"$(systemd-socket-activate --version 2>/dev/null | sed -n '1s/^systemd \([0-9]*\).*/\1/p')\",\"loadavg_before\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
	if ((EUID != 0)); then
		log "host: vsockmapd needs root to load its BPF programs; its modes will be n/a"
	fi
	host_scenario unix-unix "$MODES_HOST_UU" unix
	host_scenario unix-tcp "$MODES_HOST_UT" tcp
	bench_emit "{\"part\":\"host\",\"metric\":\"duration\",\"seconds\":$(elapsed_since "$t0"),\"loadavg_after\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
	rm -rf "$HOST_TMP"
	HOST_SECONDS=$(elapsed_since "$t0")
	log "host part: $(fmt_duration "$HOST_SECONDS")"
}

# ---- the VM part ----------------------------------------------------------------------------

# vm_part [PART]: one boot. PART vm boots the suites' kernel and runs every VM scenario;
# vm-stock and vm-patched boot the kernels of make kernel-patched and measure one stream;
# virtio boots the suites' kernel with the virtio transport, the servers on the host.
vm_part() {
	local part=${1:-vm} t0=$EPOCHREALTIME rc suite scenarios=$VM_SCENARIOS modes=$MODES_VM
	local params=$BENCH_OUT/$part-params.sh kernel modules only=0 seconds virtio=0
	local bytes=$VM_BYTES par_bytes=$VM_PAR_BYTES vm_timeout=$VM_TIMEOUT vm_args=()
	suite=$VM_SUITE_NAME
	[[ $part == vm ]] || suite+=-${part#vm-}
	if [[ $part == virtio ]]; then
		scenarios=$VIRTIO_SCENARIOS modes=$MODES_VIRTIO only=1 virtio=1 vm_args=(--virtio)
		bytes=$VIRTIO_BYTES par_bytes=$VIRTIO_PAR_BYTES vm_timeout=$VIRTIO_TIMEOUT
	elif [[ $part != vm ]]; then
		read -r kernel modules < <(built_kernel "${part#vm-}") || {
			log "$part: no ${part#vm-} kernel in $KERNEL_CACHE (make kernel-patched)"
			return 1
		}
		scenarios=uds-vsock modes=$MODES_VM_KERNELS only=1
	fi
	cat >"$params" <<EOF
BENCH_PART_NAME=$part
BENCH_VIRTIO=$virtio
BENCH_THROUGHPUT_ONLY=$only
BENCH_REPS=$REPS
BENCH_CONN_REPS=$CONN_REPS
BENCH_VM_BYTES=$bytes
BENCH_VM_PAR_BYTES=$par_bytes
BENCH_VM_SCENARIOS="$scenarios"
BENCH_PP_COUNT=$VM_PP
BENCH_PP_WARMUP=$VM_PP_WARMUP
BENCH_CONNS=$VM_CONNS
BENCH_CONN_CONCURRENCY=$CONN_CONCURRENCY
BENCH_HOLD_COUNTS="$VM_HOLD"
BENCH_MODES="$modes"
BENCH_SETTLE=${BENCH_SETTLE:-2}
BENCH_TEARDOWN_MAX=${BENCH_TEARDOWN_MAX:-60}
BENCH_HOLD_TIMEOUT=${BENCH_HOLD_TIMEOUT:-120}
BENCH_IDLE_SECONDS=${BENCH_IDLE_SECONDS:-10}
BENCH_DGRAM_SOURCE_ARGS=$([[ ${BENCH_DGRAM_CONNECT:-0} == 1 ]] && echo --connect)
EOF
	log "$part: one boot${kernel:+ of $kernel}, scenarios $scenarios (timeout ${vm_timeout}s)"
	# run.sh names the log and initramfs after the suite file.
	cp tests/vm/suite-bench.sh "$BENCH_OUT/$suite.sh"
	VSOCKMAP_VM_KERNEL=${kernel:-${VSOCKMAP_VM_KERNEL:-}} \
		VSOCKMAP_VM_MODULES=${modules:-${VSOCKMAP_VM_MODULES:-}} \
		tests/vm/run.sh "$BENCH_OUT/$suite.sh" --timeout "$vm_timeout" \
		${vm_args[@]+"${vm_args[@]}"} \
		--file bench/lib.sh:/usr/lib/vmtest/bench-lib.sh \
		--file "$params":/usr/lib/vmtest/bench-params.sh >"$BENCH_OUT/$part.txt" 2>&1
	rc=$?
	sed 's/^/  /' "$BENCH_OUT/$part.txt" >&2
	tr -d '\r' <"$OUT/vm/$suite.log" | sed -n 's/.*BENCH \({.*}\)$/\1/p' >"$BENCH_OUT/$part.jsonl"
	((!virtio)) || virtio_backend_record >>"$BENCH_OUT/$part.jsonl"
	seconds=$(elapsed_since "$t0")
	VM_SECONDS=$((${VM_SECONDS:-0} + seconds))
	echo "{\"part\":\"$part\",\"metric\":\"duration\",\"seconds\":$seconds,\"vm_rc\":$rc}" >>"$BENCH_OUT/$part.jsonl"
	log "$part part: $(fmt_duration "$seconds") (tests/vm/run.sh exit $rc)"
	return $rc
}

# virtio_backend_record: the virtio part's backend, its version and tx-buffer-size, as a
# record (the binary asked for its version under vsm-novsock, as the tier runs it).
virtio_backend_record() {
	local bin version package tx
	bin=$(scripts/fetch-vhost-device-vsock.sh 2>/dev/null | sed -n 's/^VHOST_DEVICE_VSOCK=//p')
	version=$("$OUT/tools/vsm-novsock" "$bin" --version 2>/dev/null | head -n 1)
	package=$(sed -n 's|.*/vhost-device-vsock_\([^/]*\)/.*|\1|p' <<<"$bin")
	# shellcheck source=tests/vm/virtio-host.sh
	tx=$(. tests/vm/virtio-host.sh && echo "$VIRTIO_TX_BUFFER_SIZE")
	printf '{"part":"virtio","metric":"backend","backend":"%s","backend_package":"%s","tx_buffer_size":%d}\n' \
		"${version:-unknown}" "${package:-unknown}" "${tx:-0}"
}

# ---- outputs --------------------------------------------------------------------------------

# vm_machine PART FIELD: FIELD (kernel, cpus) of the machine row PART's VM wrote; empty if none.
vm_machine() {
	sed -n "s/.*\"metric\":\"machine\",.*\"$2\":\"\{0,1\}\([^\",]*\).*/\1/p" "$BENCH_OUT/$1.jsonl" 2>/dev/null | head -n 1
}

# first_vm_part: the first VM part of this run that booted (vm, or vm-stock and vm-patched alone).
first_vm_part() {
	local part
	for part in $parts; do
		[[ $part == @(vm*|virtio) && -n $(vm_machine "$part" kernel) ]] || continue
		echo "$part"
		return
	done
}

machine_json() {
	local commit dirty vm
	commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
	dirty=false
	[[ -z $(git status --porcelain 2>/dev/null) ]] || dirty=true
	printf '{"date":"%s","git_commit":"%s","git_dirty":%s,"profile":"%s","quick":%s,' \
		"$(date -Iseconds)" "$commit" "$dirty" "$profile" "$([[ $QUICK == 1 ]] && echo true || echo false)"
	# shellcheck disable=SC1003 # a backslash, not an escaped quote
	printf '"host_kernel":"%s","cpu_model":"%s","host_cpus":%d,' "$(uname -r)" \
		"$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1 | tr -d '"\\')" "$(nproc)"
	for f in ${ALL_PARTS#host }; do
		printf '"%s_kernel":"%s",' "${f//-/_}" "$(vm_machine "$f" kernel)"
	done
	vm=$(first_vm_part)
	printf '"vm_cpus":%s,' "$([[ -n $vm ]] && vm_machine "$vm" cpus || echo null)"
	printf '"virtio_backend":"%s",' "$(sed -n 's/.*"metric":"backend","backend":"\([^"]*\)".*"tx_buffer_size":\([0-9]*\).*/\1, tx-buffer-size \2/p' \
		"$BENCH_OUT/virtio.jsonl" 2>/dev/null | head -n 1)"
	printf '"parameters":{"reps":%d,"conn_reps":%d,"host_bytes":%d,"vm_bytes":%d,"vm_parallel_bytes_each":%d,' \
		"$REPS" "$CONN_REPS" "$HOST_BYTES" "$VM_BYTES" "$VM_PAR_BYTES"
	printf '"write_size":65536,"host_pingpong":%d,"vm_pingpong":%d,"host_conns":%d,"vm_conns":%d,' \
		"$HOST_PP" "$VM_PP" "$HOST_CONNS" "$VM_CONNS"
	printf '"conn_concurrency":%d,"host_hold":"%s","vm_hold":"%s",' "$CONN_CONCURRENCY" \
		"$HOST_HOLD" "$VM_HOLD"
	printf '"virtio_bytes":%d,"virtio_parallel_bytes_each":%d},' "$VIRTIO_BYTES" "$VIRTIO_PAR_BYTES"
	printf '"durations_s":{"host":%s,"vm":%s,"total":%s}}' "${HOST_SECONDS:-null}" \
		"${VM_SECONDS:-null}" "${TOTAL_SECONDS:-null}"
}

plot_subtitle() {
	local vm vmk='' vcpus=''
	vm=$(first_vm_part)
	if [[ -n $vm ]]; then
		vmk=$(vm_machine "$vm" kernel)
		vcpus=$(vm_machine "$vm" cpus)
	fi
	[[ ${vcpus:-1} == 1 ]] && vcpus="1 vCPU" || vcpus="$vcpus vCPUs"
	printf '%s, %s profile, %s rounds, commit %s; host %s, %d CPUs%s' "$(date +%F)" "$profile" \
		"$REPS" "$(git rev-parse --short HEAD 2>/dev/null)" "$(uname -r)" "$(nproc)" \
		"${vmk:+; VM $vmk, $vcpus, TCG}"
}

# write_outputs: the tables (stdout), results.json, results.png.
write_outputs() {
	local summary=$BENCH_OUT/summary.jsonl
	local f
	for f in $ALL_PARTS; do
		cat "$BENCH_OUT/$f.jsonl" 2>/dev/null
	done | grep '^{' >"$RAW"
	awk -f bench/report.awk -v summary="$summary" -v plotdata="$BENCH_OUT/plot" "$RAW" ||
		OWN_FAILURES=1
	{
		# --report keeps the machine record of the run that measured.
		((report_only)) && [[ -s $BENCH_OUT/machine.json ]] || machine_json >"$BENCH_OUT/machine.json"
		printf '{"machine":%s,\n"runs":[\n' "$(cat "$BENCH_OUT/machine.json")"
		sed '$!s/$/,/' "$RAW"
		printf '],\n"summary":[\n'
		sed '$!s/$/,/' "$summary"
		printf ']}\n'
	} >"$RESULTS_JSON.tmp" && mv "$RESULTS_JSON.tmp" "$RESULTS_JSON"
	if ! command -v gnuplot >/dev/null; then
		log "gnuplot not installed (apt-get install gnuplot-nox): no results.png"
	elif gnuplot -e "datadir='$BENCH_OUT/plot'; outfile='$RESULTS_PNG.tmp'; subtitle='$(plot_subtitle)'" \
		bench/plot.gp 2>"$BENCH_OUT/gnuplot.err"; then
		mv "$RESULTS_PNG.tmp" "$RESULTS_PNG"
	else
		log "gnuplot failed: $(grep -v 'no valid points' "$BENCH_OUT/gnuplot.err" | tail -n 3)"
	fi
	echo
	echo "Every run: ${RESULTS_JSON#"$ROOT"/}; chart: ${RESULTS_PNG#"$ROOT"/}"
}

# ---- self-test ------------------------------------------------------------------------------

st_pass=0 st_fail=0
st_check() { # NAME CONDITION-RESULT DETAIL
	if [[ $2 == 0 ]]; then
		printf '  PASS %s %s\n' "$1" "$3"
		st_pass=$((st_pass + 1))
	else
		printf '  FAIL %s %s\n' "$1" "$3"
		st_fail=$((st_fail + 1))
	fi
}

# Every mode that can run must have REPS verified runs per metric it takes part in; the
# outputs must exist. The one expected failure is socat's default buffer on 64 KiB datagrams.
selftest_verdict() {
	local key ok total line
	while IFS=$'\t' read -r key ok total; do
		[[ -n $key ]] || continue
		line="$ok of $total runs verified"
		if [[ $key == @(vm|virtio)/dgram-vsock/socat/throughput ]]; then
			grep -q "\"part\":\"${key%%/*}\",\"scenario\":\"dgram-vsock\",\"mode\":\"socat\".*truncates" "$RAW"
			st_check "$key" $? "expected to fail: socat's default buffer truncates datagrams ($line)"
			continue
		fi
		# Memory is measured once per count; everything else REPS times.
		if [[ $key == */memory ]]; then
			[[ $ok -ge 1 && $ok == "$total" ]]
		else
			[[ $ok -ge $REPS ]]
		fi
		st_check "$key" $? "$line"
	done < <(awk -F'"' '
		/"metric":"(throughput|latency|connrate|memory)"/ && !/"status":"n\/a"/ {
			for (i = 2; i < NF; i += 2) v[$i] = $(i + 2)
			k = v["part"] "/" v["scenario"] "/" v["mode"] "/" v["metric"]
			if (!(k in total)) order[++n] = k
			total[k]++
			if (v["status"] == "ok") ok[k]++
			delete v
		}
		END { for (i = 1; i <= n; i++) printf "%s\t%d\t%d\n", order[i], ok[order[i]], total[order[i]] }' "$RAW")
	[[ -s $RESULTS_JSON ]] && grep -q '"summary"' "$RESULTS_JSON"
	st_check results-json $? "${RESULTS_JSON#"$ROOT"/}"
	[[ -s $RESULTS_PNG ]] && [[ $(head -c 4 "$RESULTS_PNG" | tail -c 3) == PNG ]]
	st_check results-png $? "${RESULTS_PNG#"$ROOT"/}"
	for part in $parts; do
		grep -q "^{\"part\":\"$part\",\"scenario\"" "$RAW"
		st_check "part-$part" $? "measurements from the $part part"
	done
}

# ---- main -----------------------------------------------------------------------------------

mkdir -p "$BENCH_OUT"
# One bench at a time per output directory: two would measure each other and mix results.
# (A pid file rather than flock: relays and QEMU would inherit a lock descriptor.)
LOCK=$BENCH_OUT/lock
said=0
until (set -o noclobber && echo $$ >"$LOCK") 2>/dev/null; do
	other=$(cat "$LOCK" 2>/dev/null)
	if [[ -n $other ]] && kill -0 "$other" 2>/dev/null; then
		((said)) || log "another bench/run.sh (pid $other) is using ${BENCH_OUT#"$ROOT"/}; waiting for it"
		said=1
		sleep 2
	else
		rm -f "$LOCK"
	fi
done
trap 'rm -f "$LOCK"' EXIT
if ((report_only)); then
	write_outputs
	exit 0
fi
for f in "$OUT/vsockmapd" "$OUT/vsockmapctl" "$OUT/tools/vsm-bench"; do
	[[ -x $f ]] || {
		log "$f not built: run make first"
		exit 2
	}
done
command -v socat >/dev/null || {
	log "socat not found (apt-get install socat)"
	exit 2
}
# 10,000 idle redirects: 10,000 descriptors in the client, the server, twice that in the daemon.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null
if (($(ulimit -n) < 30000)); then
	log "ulimit -n is $(ulimit -n) (hard limit $(ulimit -Hn), raising it needs CAP_SYS_RESOURCE): 10,000 host redirects will not all fit in the daemon"
fi
log "profile $profile: $REPS rounds; host $((HOST_BYTES >> 20)) MiB per run, VM $((VM_BYTES >> 20)) MiB"
T0=$EPOCHREALTIME
rc=0
for f in $ALL_PARTS; do
	: >"$BENCH_OUT/$f.jsonl"
done
for part in $parts; do
	[[ " $ALL_PARTS " == *" $part "* ]] || {
		log "unknown part $part"
		exit 2
	}
done
if ((selftest)) && [[ $parts == "host vm"* ]]; then
	# Numbers do not count here: the host part runs while the VM boots and measures.
	(host_part) &
	host_pid=$!
	vm_part || rc=1
	wait $host_pid || rc=1
	parts_left=${parts#host vm}
else
	parts_left=$parts
fi
for part in $parts_left; do
	case $part in
	host) (host_part) || rc=1 ;;
	vm) vm_part || rc=1 ;;
	vm-* | virtio) vm_part "$part" || rc=1 ;;
	esac
done
HOST_SECONDS=$(sed -n 's/.*"part":"host","metric":"duration","seconds":\([0-9]*\).*/\1/p' "$BENCH_OUT/host.jsonl" | tail -n 1)
TOTAL_SECONDS=$(elapsed_since "$T0")
OWN_FAILURES=0
write_outputs
((OWN_FAILURES == 0)) || rc=1
echo "Durations: host part $(fmt_duration "${HOST_SECONDS:-0}"), VM part $(fmt_duration "${VM_SECONDS:-0}"), total $(fmt_duration "$TOTAL_SECONDS") (profile $profile)"
if ((selftest)); then
	selftest_verdict
	result_line "$st_pass" "$st_fail"
	((st_fail == 0))
	exit
fi
exit $rc
