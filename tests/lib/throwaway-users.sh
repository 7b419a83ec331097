# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# Throwaway users and groups for one test run (names the caller makes unique, e.g. with $$),
# and running a command as one of them. Whatever throwaway_group and throwaway_user made,
# throwaway_cleanup removes (call it from an EXIT trap). Used by
# tests/host/control-role-cases.sh and tests/host/hostile-control-cases.sh.

THROWAWAY_USERS=() THROWAWAY_GROUPS=()

# throwaway_group NAME: a system group.
throwaway_group() {
	groupadd -r "$1" && THROWAWAY_GROUPS+=("$1")
}

# throwaway_user NAME [GROUP,...]: a system user with no home and no login shell; its primary
# group is its own (useradd -U), so any role comes from the supplementary GROUPs alone.
throwaway_user() {
	useradd -r -M -U -s /usr/sbin/nologin ${2:+-G "$2"} "$1" &&
		THROWAWAY_USERS+=("$1") THROWAWAY_GROUPS+=("$1")
}

# throwaway_cleanup: userdel refuses a user who still runs a process (a helper of the case
# still exiting): those are killed, and userdel is asked again for up to 5 s.
throwaway_cleanup() {
	local u g i
	for u in "${THROWAWAY_USERS[@]}"; do
		for ((i = 0; i < 50; i++)); do
			id -u "$u" >/dev/null 2>&1 || break
			pkill -KILL -u "$u" 2>/dev/null
			userdel "$u" 2>/dev/null && break
			sleep 0.1
		done
	done
	for g in "${THROWAWAY_GROUPS[@]}"; do
		groupdel "$g" 2>/dev/null
	done
	THROWAWAY_USERS=() THROWAWAY_GROUPS=()
}

# run_as USER CMD...: CMD as USER with its real primary and supplementary groups.
run_as() {
	local user=$1
	shift
	setpriv --reuid="$user" --regid="$user" --init-groups "$@"
}
