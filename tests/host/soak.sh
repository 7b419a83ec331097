#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make soak-host: the host soak (tests/host/soak-cases.sh) as a long run. Each case that is
# not a stopped one runs SOAK_COUNT connections (default 20,000; make check runs 400 to 600);
# the stopped ones run 400. SOAK_SEED fixes the seed, SOAK_TIMEOUT bounds each run (3600 s).
# Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
((EUID == 0)) || { echo "the host soak loads BPF programs: run as root" >&2; exit 2; }
out=${VSOCKMAP_OUTPUT:-$PWD/.output}
export PATH="$out:$out/tools:$PATH"
E2E_DIR=$(mktemp -d /tmp/vsockmap-soak.XXXXXX)
export E2E_DIR VMTEST_CONSOLE=/nonexistent VMTEST_RESULTS=$E2E_DIR/results VMTEST_TMP=$E2E_DIR
export SOAK_COUNT=${SOAK_COUNT:-20000} SOAK_TIMEOUT=${SOAK_TIMEOUT:-3600}
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$E2E_DIR"' EXIT
# shellcheck source=tests/lib/harness.sh
. tests/lib/harness.sh
# shellcheck source=tests/lib/summary.sh
. tests/lib/summary.sh
# shellcheck source=tests/host/tcp-close-cases.sh
. tests/host/tcp-close-cases.sh
# shellcheck source=tests/host/soak-cases.sh
. tests/host/soak-cases.sh
host_soak_cases | sed -u 's/^VMTEST /  /'
results_of "$VMTEST_RESULTS"
