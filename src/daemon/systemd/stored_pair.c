// SPDX-License-Identifier: GPL-2.0-only
/*
 * A stored pair's kinds come from its sockets' families (getsockname()). A socket whose name
 * cannot be read is taken for vsock, the one family a test of this machine cannot open: the
 * pair then gets the rules of a vsock end, which assume the least of the kernel.
 */
#include <sys/socket.h>

#include "stored_pair.h"

static int socket_family(int fd)
{
	struct sockaddr_storage sa = {};
	socklen_t len = sizeof(sa);

	return getsockname(fd, (struct sockaddr *)&sa, &len) ? AF_UNSPEC : sa.ss_family;
}

enum address_kind stored_pair_client_kind(int client_fd)
{
	switch (socket_family(client_fd)) {
	case AF_UNIX:
		return ADDRESS_UNIX_LISTEN;
	case AF_INET:
	case AF_INET6:
		return ADDRESS_TCP_LISTEN;
	default:
		return ADDRESS_VSOCK_LISTEN;
	}
}

enum address_kind stored_pair_target_kind(int target_fd)
{
	switch (socket_family(target_fd)) {
	case AF_UNIX:
		return ADDRESS_UNIX_CONNECT;
	case AF_INET:
	case AF_INET6:
		return ADDRESS_TCP_CONNECT;
	default:
		return ADDRESS_VSOCK_CONNECT;
	}
}

bool stored_pair_fits(const struct redirect_config *rc, enum address_kind client,
		      enum address_kind target)
{
	return rc->listen.kind == client && rc->connect.kind == target;
}
