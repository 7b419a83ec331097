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

# private_apt DIR SUITE: a private apt state in DIR (sources.list, lists/, cache/) for SUITE of
# this machine's Debian archive, component main, so the host's own apt state is not touched.
# Sets the array APT_OPTS for apt-get and apt-cache; returns 1 when no Debian source is found.
private_apt() {
	local dir=$1 suite=$2 line uri signed_by
	line=$(find_debian_source | head -n1)
	[[ -n $line ]] || return 1
	read -r uri signed_by <<<"$line"
	# A deb822 Signed-By may hold an inline key; only keep a file path.
	[[ $signed_by == /* && -f $signed_by ]] || signed_by=
	mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" || return 1
	echo "deb${signed_by:+ [signed-by=$signed_by]} $uri $suite main" >"$dir/sources.list"
	APT_OPTS=(
		-o "Dir::Etc::SourceList=$dir/sources.list"
		-o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$dir/lists"
		-o "Dir::Cache=$dir/cache"
	)
	# Downloads as root into a root-owned private directory: skip the _apt sandbox.
	[[ $(id -u) -ne 0 ]] || APT_OPTS+=(-o APT::Sandbox::User=root)
}

# vm_cache_dir: print the cache directory of the test VM's downloads,
# ${VSOCKMAP_VM_CACHE:-/var/cache/vsockmap-vm}, falling back to ~/.cache/vsockmap-vm when the
# default is not writable; returns 1 when none can be made.
vm_cache_dir() {
	local cache
	if [[ -n ${VSOCKMAP_VM_CACHE:-} ]]; then
		cache=$VSOCKMAP_VM_CACHE
		mkdir -p "$cache" 2>/dev/null && [[ -w $cache ]] || return 1
	else
		cache=/var/cache/vsockmap-vm
		if ! mkdir -p "$cache" 2>/dev/null || [[ ! -w $cache ]]; then
			cache=${XDG_CACHE_HOME:-$HOME/.cache}/vsockmap-vm
			mkdir -p "$cache" 2>/dev/null || return 1
		fi
	fi
	(cd "$cache" && pwd)
}
