/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef VSOCKMAP_CGROUP_SELF_H
#define VSOCKMAP_CGROUP_SELF_H

#include <stddef.h>

/*
 * The directory of this process's cgroup in the mounted cgroup v2 hierarchy (for example
 * /sys/fs/cgroup/system.slice/vsockmapd.service), or -ENOENT when no cgroup2 mount shows it.
 */
int cgroup_self_dir(char *buf, size_t len);

#endif
