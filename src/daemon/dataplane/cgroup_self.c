// SPDX-License-Identifier: GPL-2.0-only
/*
 * The cgroup v2 directory of the daemon itself: where its queue probe is attached
 * (bpf_dataplane.c). A socket's cgroup programs are those of the cgroup it was created in, and
 * the daemon creates its targets itself.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cgroup_self.h"

/* From a /proc/self/mountinfo line: its root and mount point if it is a cgroup2 mount. */
static int cgroup2_mount(char *line, char **root, char **mnt)
{
	char *sep = strstr(line, " - ");
	char *save = NULL, *f;
	int i;

	if (!sep || strncmp(sep + 3, "cgroup2 ", 8))
		return -ENOENT;
	*sep = '\0';
	/* mount ID, parent ID, major:minor, root, mount point, ... */
	for (i = 0, f = strtok_r(line, " ", &save); f && i < 5; i++, f = strtok_r(NULL, " ", &save)) {
		if (i == 3)
			*root = f;
		else if (i == 4)
			*mnt = f;
	}
	/* A mount point with a space or another escape would be octal-coded: not for us. */
	return i == 5 && !strchr(*root, '\\') && !strchr(*mnt, '\\') ? 0 : -ENOENT;
}

/* The daemon's own cgroup v2 path, relative to the cgroup namespace ("0::PATH"). */
static int own_path(char *buf, size_t len)
{
	char line[4096];
	FILE *f = fopen("/proc/self/cgroup", "re");
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3))
			continue;
		line[strcspn(line, "\n")] = '\0';
		err = snprintf(buf, len, "%s", line + 3) < (int)len ? 0 : -ENAMETOOLONG;
		break;
	}
	fclose(f);
	return err;
}

int cgroup_self_dir(char *buf, size_t len)
{
	char line[4096], path[4096] = "", *root = NULL, *mnt = NULL;
	size_t root_len;
	FILE *f;
	int err;

	err = own_path(path, sizeof(path));
	if (err)
		return err;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	err = -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (cgroup2_mount(line, &root, &mnt))
			continue;
		/* The mount shows the hierarchy from its root down: our path must be under it. */
		root_len = strcmp(root, "/") ? strlen(root) : 0;
		if (strlen(path) < root_len || strncmp(path, root, root_len) ||
		    (path[root_len] && path[root_len] != '/'))
			continue;
		err = snprintf(buf, len, "%s%s", mnt, path + root_len) < (int)len ? 0 : -ENAMETOOLONG;
		break;
	}
	fclose(f);
	return err;
}
