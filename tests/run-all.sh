#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Run the test layers (default: unit lint host sanitize fuzz vm systemd bench) and end with
# "N passed, N failed".
#   unit      cmocka tests of the parsers, the control protocol and server, the socket queue helpers, the slot
#             pool and the phase tables; tests/prog: the BPF programs on real sockets (root)
#   host      the daemon on this machine's kernel, unix to unix (tests/host/run.sh)
#   sanitize  unit and host again, built with ASan and UBSan (.output-asan/)
#   fuzz      every checked-in fuzz input (seeds, fixed crashes) once through its libFuzzer
#             target (tests/fuzz/); `make fuzz` is the long run
#   lint      cppcheck and clang-tidy (scripts/lint.sh, make lint)
#   vm        real vsock in the QEMU test VM (tests/vm/run-suites.sh)
#   systemd   the daemon and its units under systemd as PID 1, in the VM (tests/systemd/run.sh)
#   bench     make bench's own self-test: tiny sizes, checks the harness, never the numbers
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tests/lib/summary.sh
. tests/lib/summary.sh

layers=("$@")
((${#layers[@]})) || layers=(unit lint host sanitize fuzz vm systemd bench)
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

# run_unit DIR LAYER: every cmocka binary in DIR; cmocka prints its own PASSED/FAILED/SKIPPED counts.
run_unit() {
	local t out count kind found=0
	for t in "$1"/tests/test_*; do
		[[ -x $t ]] || continue
		found=1
		out=$("$t" 2>&1)
		printf '%s\n' "$out" | sed 's/^/    /'
		summary_note_failures <(printf '%s\n' "$out") "$2 ${t##*/}"
		if ! grep -qE '^\[  (PASSED|FAILED)  \] [0-9]+ test' <<<"$out"; then
			echo "run-all: $t printed no cmocka summary" >&2
			summary_failed=$((summary_failed + 1))
			continue
		fi
		for kind in PASSED FAILED SKIPPED; do
			count=$(sed -n "s/^\[  *$kind  *\] \([0-9]\+\) test.*/\1/p" <<<"$out" | tail -n1)
			case $kind in
			PASSED) summary_passed=$((summary_passed + ${count:-0})) ;;
			FAILED) summary_failed=$((summary_failed + ${count:-0})) ;;
			SKIPPED) summary_skipped=$((summary_skipped + ${count:-0})) ;;
			esac
		done
	done
	if ((!found)); then
		echo "run-all: no unit test binaries in $1/tests (make unit-tests builds them)" >&2
		summary_failed=$((summary_failed + 1))
	fi
}

# SANITIZE (default address,undefined) picks the sanitizers: make check SANITIZE=address.
sanitize_build() {
	local san=${SANITIZE:-address,undefined}
	make -s OUTPUT=.output-asan \
		CFLAGS="-O1 -g -fsanitize=$san -fno-omit-frame-pointer -fno-sanitize-recover=all" \
		LDFLAGS="-fsanitize=$san" all unit-tests >/dev/null
}

tests/lib/machine-header.sh
timings=()
for layer in "${layers[@]}"; do
	echo "== $layer tests"
	layer_t0=$SECONDS
	case $layer in
	unit)
		run_unit .output unit
		;;
	host)
		tests/host/run.sh | tee "$tmp"
		summary_add "$tmp" host
		;;
	sanitize)
		if ! sanitize_build; then
			echo "run-all: the ASan/UBSan build failed" >&2
			summary_failed=$((summary_failed + 1))
			continue
		fi
		export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1
		run_unit .output-asan sanitize
		VSOCKMAP_OUTPUT=$PWD/.output-asan E2E_BIG=64M tests/host/run.sh 2>&1 | tee "$tmp"
		summary_add "$tmp" "host (ASan/UBSan)"
		if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$tmp"; then
			echo "run-all: the sanitizers reported errors (above)" >&2
			summary_failed=$((summary_failed + 1))
		fi
		unset ASAN_OPTIONS UBSAN_OPTIONS
		;;
	lint)
		scripts/lint.sh | tee "$tmp"
		summary_add "$tmp" lint
		;;
	fuzz)
		if ! make -s fuzz-build >/dev/null; then
			echo "run-all: building the fuzz targets failed" >&2
			summary_failed=$((summary_failed + 1))
			continue
		fi
		tests/fuzz/run.sh --replay | tee "$tmp"
		summary_add "$tmp" fuzz
		;;
	vm)
		tests/vm/run-suites.sh | tee "$tmp"
		summary_add "$tmp" vm
		;;
	systemd)
		tests/systemd/run.sh | tee "$tmp"
		summary_add "$tmp" systemd
		;;
	bench)
		bench/run.sh --selftest 2>&1 | tee "$tmp"
		summary_add "$tmp" "bench self-test"
		;;
	*)
		echo "run-all: unknown layer $layer" >&2
		exit 2
		;;
	esac
	timings+=("$layer $((SECONDS - layer_t0))s")
done
echo "== time per layer: $(IFS=,; echo "${timings[*]}" | sed 's/,/, /g')"
summary_print
