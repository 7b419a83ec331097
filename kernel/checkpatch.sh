#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# checkpatch.sh - scripts/checkpatch.pl --strict, from the kernel source kernel/build.sh
# unpacked, on every patch of kernel/patches; writes kernel/checkpatch.txt and exits
# non-zero if any patch has an error, a warning or a check.

set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${VSOCKMAP_KERNEL_CACHE:-/var/cache/vsockmap-kernel}
tree=$(compgen -G "$CACHE/tree/linux-source-*" | sort -V | tail -n 1) ||
	{ echo "checkpatch: no kernel source in $CACHE: run make kernel-patched first" >&2; exit 1; }
rc=0
for p in "$HERE"/patches/0*.patch; do
	[[ $p == */0000-* ]] && continue
	echo "== $(basename "$p")"
	(cd "$tree" && perl scripts/checkpatch.pl --strict "$p") | sed "s|$HERE/||" || rc=1
done >"$HERE/checkpatch.txt"
grep -E '^total' "$HERE/checkpatch.txt"
exit $rc
