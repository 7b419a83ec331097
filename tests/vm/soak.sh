#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make soak: tests/vm/suite-soak.sh in one VM boot. QUICK=1 (what make check runs): 1,000
# connections, at most 100 live, up to 1 MiB each way, slow readers for 10 s. Full: 10,000,
# 500 live, up to 8 MiB, slow readers for 60 s. SOAK_COUNT, SOAK_LIVE, SOAK_MAX_SIZE,
# SOAK_SEED and SOAK_SLOW_SECONDS override either profile. Ends with
# "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."

if [[ ${QUICK:-} == 1 ]]; then
	count=1000 live=100 max=1048576 slow=10 timeout=600
else
	count=10000 live=500 max=8388608 slow=60 timeout=3000
fi
env=$(mktemp)
trap 'rm -f "$env"' EXIT
cat >"$env" <<ENV
SOAK_COUNT=${SOAK_COUNT:-$count}
SOAK_LIVE=${SOAK_LIVE:-$live}
SOAK_MAX_SIZE=${SOAK_MAX_SIZE:-$max}
SOAK_SEED=${SOAK_SEED:-$(date +%s)}
SOAK_SLOW_SECONDS=${SOAK_SLOW_SECONDS:-$slow}
ENV
echo "soak: $(tr '\n' ' ' <"$env")"
exec tests/vm/run.sh tests/vm/suite-soak.sh --timeout "$timeout" --file "$env:/usr/lib/vmtest/soak.env"
