#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# build-deb.sh - build the Debian package vsockmap (debian/) from a clean copy of this tree.
#
#   scripts/build-deb.sh [--version VERSION] [--out DIR] [--no-lintian]
#
# Copies the tree's files (git's tracked and new, not ignored ones: never .output) into
# DIR/build/vsockmap-VERSION, runs "dpkg-buildpackage -us -uc -b" there and leaves the
# .deb, the .buildinfo and the .changes in DIR (default .output/deb). --version adds a
# changelog entry for VERSION to the copy, for an upgrade to test against. The build is
# reproducible: SOURCE_DATE_EPOCH comes from debian/changelog, the build path is mapped
# away, so two builds of one tree give the same .deb (tests/systemd/run.sh checks it).
# The BPF object's types come from the build machine's kernel BTF (VMLINUX_BTF), which
# is an input like the compiler: the same on one machine, not across kernels.
#
# Then lintian --pedantic (with info and experimental tags) checks the result and the build
# fails on any tag that debian/vsockmap.lintian-overrides does not justify; --no-lintian
# skips that (tests/systemd/run.sh runs it as a test of its own).
#
# Prints one line per package made: "DEB=path sha256".

set -euo pipefail

PROG=build-deb
die() {
	echo "$PROG: $*" >&2
	exit 1
}

version=
out=.output/deb
lint=1
while (($#)); do
	case $1 in
	--version) version=${2:?--version needs a value}; shift 2 ;;
	--out) out=${2:?--out needs a directory}; shift 2 ;;
	--no-lintian) lint=0; shift ;;
	*) die "unknown argument \"$1\" (usage: $0 [--version VERSION] [--out DIR] [--no-lintian])" ;;
	esac
done

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
for t in dpkg-buildpackage dh; do
	command -v "$t" >/dev/null || die "$t is missing (make deps installs it)"
done
base=$(dpkg-parsechangelog -l debian/changelog -S Version)
version=${version:-$base}
if [[ $version != "$base" ]] && ! dpkg --compare-versions "$version" gt "$base"; then
	die "version $version is not higher than debian/changelog's $base"
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$out/build
src=$stage/vsockmap-$version
rm -rf "$stage"
mkdir -p "$src"

# The files of the tree, as they are in the work tree (edits included), without build output.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do [[ -e $f ]] && printf '%s\0' "$f"; done |
		tar --null -T - -cf - | tar -xf - -C "$src"
else
	tar --exclude='./.output*' --exclude=./debian/vsockmap -cf - . | tar -xf - -C "$src"
fi

if [[ $version != "$base" ]]; then
	{
		printf 'vsockmap (%s) unstable; urgency=medium\n\n' "$version"
		printf '  * Rebuilt as %s (scripts/build-deb.sh --version).\n\n' "$version"
		# A day after the entry below it: a new entry has a new date (and its own
		# SOURCE_DATE_EPOCH).
		printf ' -- %s  %s\n\n' "$(dpkg-parsechangelog -l debian/changelog -S Maintainer)" \
			"$(date -u -R -d "@$(($(dpkg-parsechangelog -l debian/changelog -S Timestamp) + 86400))")"
		cat debian/changelog
	} >"$src/debian/changelog"
fi

log=$stage/build.log
if ! (cd "$src" && dpkg-buildpackage -us -uc -b) >"$log" 2>&1; then
	tail -n 30 "$log" >&2
	die "dpkg-buildpackage failed; the whole log is $log"
fi
rm -f "$out"/vsockmap*_"$version"_*
mv "$stage"/vsockmap*_"$version"_* "$out"/
for f in "$out"/vsockmap*_"$version"_*.deb; do
	echo "DEB=$f $(sha256sum "$f" | cut -d' ' -f1)"
done
if ((lint)); then
	command -v lintian >/dev/null || die "lintian is missing (make deps installs it; or --no-lintian)"
	tags=$(lintian --pedantic -I -E "$out/vsockmap_${version}_amd64.changes" 2>&1 |
		grep -v 'running with root privileges' || true)
	[[ -z $tags ]] || die "lintian: $tags"
	echo "lintian: clean (--pedantic -I -E; overrides in debian/vsockmap.lintian-overrides)"
fi
