# SPDX-License-Identifier: GPL-2.0-only
# apt-source.sh - sourced by scripts that fetch Debian packages (fetch-vm-kernel.sh,
# build-systemd-rootfs.sh): where this machine's own apt configuration says the Debian
# archive is, so that no registry's host name is written into the repo.

# find_debian_source: print "URI SIGNED_BY" for this machine's Debian archive entry
# carrying suite bookworm (SIGNED_BY may be empty).
find_debian_source() {
	local f
	shopt -s nullglob
	# deb822 files: paragraphs separated by blank lines.
	for f in /etc/apt/sources.list.d/*.sources; do
		awk '
		function flush() {
			if (types ~ /(^| )deb( |$)/ && suites ~ /(^| )bookworm( |$)/ && enabled != "no") {
				n = split(uris, u, " ")
				for (i = 1; i <= n; i++)
					if (u[i] ~ /\/debian\/?$/) { print u[i], signed; found = 1; exit }
			}
			types = suites = uris = signed = ""; enabled = "yes"
		}
		BEGIN { enabled = "yes" }
		/^[ \t]*#/ { next }
		/^[ \t]*$/ { flush(); next }
		{
			key = tolower($1); sub(/:$/, "", key)
			val = $0; sub(/^[^:]*:[ \t]*/, "", val); gsub(/[ \t]+/, " ", val)
			if (key == "types") types = val
			else if (key == "suites") suites = val
			else if (key == "uris") uris = val
			else if (key == "signed-by") signed = val
			else if (key == "enabled") enabled = tolower(val)
		}
		END { if (!found) flush() }
		' "$f" | head -n1
	done
	# One-line format: deb [options] URI SUITE COMPONENTS...
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -f $f ]] || continue
		awk '
		$1 != "deb" { next }
		{
			signed = ""; i = 2
			if ($2 ~ /^\[/) {
				while (i <= NF) {
					if ($i ~ /^\[?signed-by=/) { s = $i; sub(/^\[?signed-by=/, "", s); sub(/\]$/, "", s); signed = s }
					if ($i ~ /\]$/) { i++; break }
					i++
				}
			}
			if ($(i + 1) == "bookworm" && $i ~ /\/debian\/?$/) { print $i, signed; exit }
		}
		' "$f"
	done
}
