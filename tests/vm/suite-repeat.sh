# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
#
# suite-repeat.sh - the forced late-insert uploads over vsock, many times: the VM half of
# tests/repeat-late-insert.sh, which writes /usr/lib/vmtest/repeat.env (E2E_TAIL,
# E2E_TAIL_RUNS, REPEAT_ARGS: daemon options).

# shellcheck source=tests/lib/harness.sh
. "${VMTEST_LIB:-/usr/lib/vmtest/lib.sh}"
# shellcheck source=tests/e2e/scenarios.sh
. /usr/lib/vmtest/scenarios.sh
# shellcheck disable=SC1091
. /usr/lib/vmtest/repeat.env

E2E_DIR=$VMTEST_TMP/e2e
E2E_TARGET=vsock
# The forced late inserts are the kernel path's: asked for, since auto runs a vsock section in
# user space on a kernel without kernel/ patch 1 (docs/datapath.md).
E2E_DAEMON_ARGS=--datapath=kernel
mkdir -p "$E2E_DIR"
# shellcheck disable=SC2086 # the options are words
REPEAT_SIGNAL=$(e2e_drain_signal $REPEAT_ARGS)
vmtest_log "drain signal of a daemon started with '${REPEAT_ARGS:-}': $REPEAT_SIGNAL"
# Without an exact signal a stop waits drain-timeout out: give it that long (stop_wait_ticks).
[ "$REPEAT_SIGNAL" != timed ] || E2E_DRAIN_WAITS=1
# shellcheck disable=SC2086 # the options are words
e2e_run_late_insert_tail $REPEAT_ARGS
