// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "privileges.h"

#define CAP_BIT(c) (UINT64_C(1) << (c))

/* The highest capability this kernel knows, from /proc; CAP_LAST_CAP of our headers else. */
static int last_cap(void)
{
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
	char buf[16], *end = buf;
	long last = -1;

	if (f) {
		if (fgets(buf, sizeof(buf), f))
			last = strtol(buf, &end, 10);
		if (end == buf || (*end && *end != '\n'))
			last = -1;
		fclose(f);
	}
	return last >= 0 && last <= 63 ? (int)last : CAP_LAST_CAP;
}

uint64_t privileges_needed(const struct config *cfg, bool bpf)
{
	uint64_t keep = bpf ? CAP_BIT(CAP_NET_ADMIN) : 0;
	size_t i;

	if (cfg->daemon.has_control_group)
		keep |= CAP_BIT(CAP_CHOWN);
	for (i = 0; i < cfg->n_redirects; i++)
		if (cfg->redirects[i].listen.has_user || cfg->redirects[i].listen.has_group)
			keep |= CAP_BIT(CAP_CHOWN);
	return keep;
}

int privileges_drop(uint64_t keep, uint64_t *kept)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	uint64_t permitted;
	int cap, last = last_cap();

	/* The bounding set first, while CAP_SETPCAP may still be ours; EPERM: it is not. */
	for (cap = 0; cap <= last; cap++)
		if (!(keep & CAP_BIT(cap)) && prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1 &&
		    prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EPERM)
			return -errno;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) < 0)
		return -errno;
	permitted = ((uint64_t)data[1].permitted << 32 | data[0].permitted) & keep;
	memset(data, 0, sizeof(data));
	data[0].permitted = data[0].effective = (uint32_t)permitted;
	data[1].permitted = data[1].effective = (uint32_t)(permitted >> 32);
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -errno;
	*kept = permitted;
	return 0;
}

void privileges_format(uint64_t mask, char *buf, size_t len)
{
	static const struct {
		int cap;
		const char *name;
	} names[] = {
	    {CAP_CHOWN, "cap_chown"},
	    {CAP_NET_ADMIN, "cap_net_admin"},
	    {CAP_BPF, "cap_bpf"},
	    {CAP_PERFMON, "cap_perfmon"},
	};
	size_t i, used = 0;
	int cap;

	buf[0] = '\0';
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (mask & CAP_BIT(names[i].cap)) {
			used += (size_t)snprintf(buf + used, len > used ? len - used : 0, "%s%s",
						 used ? " " : "", names[i].name);
			mask &= ~CAP_BIT(names[i].cap);
		}
	for (cap = 0; cap < 64 && used < len; cap++)
		if (mask & CAP_BIT(cap))
			used += (size_t)snprintf(buf + used, len > used ? len - used : 0,
						 "%scap_%d", used ? " " : "", cap);
	if (!buf[0])
		snprintf(buf, len, "none");
}
