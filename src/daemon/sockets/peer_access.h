/* SPDX-License-Identifier: GPL-2.0-only */
/* Who is on the other end of a unix stream socket, and whether they may use it. */
#ifndef VSOCKMAP_PEER_ACCESS_H
#define VSOCKMAP_PEER_ACCESS_H

#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "config.h"

/* Whether gid is one of the peer's supplementary groups (SO_PEERGROUPS). */
bool peer_in_group(int fd, gid_t gid);

/*
 * Read the peer's credentials (SO_PEERCRED) into *cred and check them against allow: the
 * peer's uid is listed, or its primary or a supplementary group is. An empty allow lets
 * everyone in. Returns 0 when allowed, -EACCES when not (*cred is set), or -errno when the
 * credentials cannot be read.
 */
int peer_access_check(int fd, const struct peer_allow *allow, struct ucred *cred);

#endif
