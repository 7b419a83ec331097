# SPDX-License-Identifier: GPL-2.0-only
#
# conffile.awk - the installed /etc/vsockmap/vsockmap.conf, made from config/vsockmap.conf
# (the example the demo runs): every section header and setting is commented out with '#',
# so that a fresh install starts the daemon listening on nothing until the user configures
# it. Comments and blank lines are kept as they are.

/^# vsockmap\.conf - / {
	print
	print "#"
	print "# As installed, every section and setting below is commented out: vsockmapd starts,"
	print "# answers vsockmapctl and listens on nothing. Remove the '#' before a section header"
	print "# and its keys (on a guest the host is CID 2), then run: systemctl reload vsockmapd"
	next
}
/^[ \t]*$/ || /^[ \t]*[#;]/ { print; next }
{ print "#" $0 }
