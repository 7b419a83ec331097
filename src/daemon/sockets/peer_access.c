// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>

#include "peer_access.h"

bool peer_in_group(int fd, gid_t gid)
{
	gid_t small[64], *groups = small;
	socklen_t len = sizeof(small);
	bool found = false;
	size_t i, n;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
		if (errno != ERANGE)
			return false;
		/* len now holds the size needed. */
		groups = malloc(len);
		if (!groups || getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
			free(groups);
			return false;
		}
	}
	n = len / sizeof(gid_t);
	for (i = 0; i < n && !found; i++)
		found = groups[i] == gid;
	if (groups != small)
		free(groups);
	return found;
}

int peer_access_check(int fd, const struct peer_allow *allow, struct ucred *cred)
{
	socklen_t len = sizeof(*cred);
	unsigned int i;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &len) < 0)
		return -errno;
	if (!allow->n_uids && !allow->n_gids)
		return 0;
	for (i = 0; i < allow->n_uids; i++)
		if (allow->uids[i] == cred->uid)
			return 0;
	for (i = 0; i < allow->n_gids; i++)
		if (allow->gids[i] == cred->gid || peer_in_group(fd, allow->gids[i]))
			return 0;
	return -EACCES;
}
