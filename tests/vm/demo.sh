#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make demo: boot the test VM, run vsockmapd with the shipped config and show it working.
set -uo pipefail
cd "$(dirname "$0")/../.."

tests/vm/run.sh tests/vm/suite-demo.sh --timeout 300 \
	--file config/vsockmap.conf:/usr/lib/vmtest/vsockmap.conf >/tmp/vsockmap-demo.$$ 2>&1
rc=$?
echo
sed -n 's/\r//; s/.*DEMO| \{0,1\}//p' .output/vm/suite-demo.log
echo
tail -n 2 /tmp/vsockmap-demo.$$
rm -f /tmp/vsockmap-demo.$$
exit $rc
