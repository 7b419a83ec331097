#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Static analysis (make lint): cppcheck and clang-tidy over src/ (all its folders) and tests/fuzz/,
# and no circle of includes or calls between the modules of the daemon or of the CLI
# (scripts/module-cycles.py). clang-tidy's
# configuration is .clang-tidy (each disabled check says why); the few findings that are
# false positives carry an inline NOLINT or cppcheck-suppress with the reason. cppcheck runs
# the warning, performance and portability checks; its style checks are off because most of
# what they report (variableScope) is the kernel style of declaring at the top of a block.
# Needs a build (make lint builds the daemon and the CLI first). Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."

out=.output
passed=0
failed=0
mapfile -t sources < <(find src -name "*.c" | sort; ls tests/fuzz/*.c)
mapfile -t src_dirs < <(find src -type d | sort)
includes=("${src_dirs[@]/#/-I}")
flags=(-std=gnu11 -D_GNU_SOURCE -Iinclude -I"$out" "${includes[@]}")
read -ra pkg_flags <<<"$(pkg-config --cflags libbpf libsystemd inih json-c 2>/dev/null)"

echo "== cppcheck $(cppcheck --version | awk '{print $2}')"
if cppcheck --quiet --enable=warning,performance,portability --inline-suppr \
	--error-exitcode=1 \
	-D_GNU_SOURCE -D__x86_64__ -Iinclude "${includes[@]}" --library=posix \
	--library=scripts/cppcheck-libbpf.cfg \
	"${sources[@]}" 2>&1; then
	echo "ok cppcheck: ${#sources[@]} files clean"
	passed=$((passed + 1))
else
	echo "not ok cppcheck: findings above"
	failed=$((failed + 1))
fi

echo "== clang-tidy $(clang-tidy --version | sed -n 's/.*version \([0-9.]*\).*/\1/p' | head -n1)"
# Findings in .output/ are in the skeleton bpftool generates (a leak the analyzer imagines on
# an error path of vsockmap_bpf__open_opts()), not in our code.
# -Wunreachable-code, which gcc accepts and ignores: a statement after a return (a probe that
# never ran, found at a merge) is a finding.
clang-tidy --quiet "${sources[@]}" -- "${flags[@]}" -Wunreachable-code "${pkg_flags[@]}" >"$out/clang-tidy.log" 2>&1
tidy_rc=$?
findings=$(grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error):' "$out/clang-tidy.log" | grep -v '/\.output/\|^\.output/')
if ((tidy_rc >= 128)); then
	# killed by a signal (a crash): it did not look at every file, whatever it printed
	cat "$out/clang-tidy.log"
	echo "not ok clang-tidy: exited with status $tidy_rc"
	failed=$((failed + 1))
elif [[ -n $findings ]]; then
	cat "$out/clang-tidy.log"
	echo "not ok clang-tidy: $(wc -l <<<"$findings") findings above"
	failed=$((failed + 1))
else
	echo "ok clang-tidy: ${#sources[@]} files clean (.clang-tidy)"
	passed=$((passed + 1))
fi
echo "== module includes and calls (scripts/module-cycles.py)"
if cycles=$(python3 scripts/module-cycles.py 2>&1); then
	echo "ok module-cycles: $(tail -n1 <<<"$cycles")"
	passed=$((passed + 1))
else
	echo "$cycles"
	echo "not ok module-cycles: a module includes or calls back into one that uses it"
	failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
((failed == 0))
