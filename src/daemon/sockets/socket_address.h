/* SPDX-License-Identifier: GPL-2.0-only */
/* A configured address as the sockaddr that socket(), bind() and connect() take. */
#ifndef VSOCKMAP_SOCKET_ADDRESS_H
#define VSOCKMAP_SOCKET_ADDRESS_H

#include <stdbool.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "address.h"

/* A unix socket path into sun: 0, or -ENAMETOOLONG. */
int sockaddr_un_from_path(const char *path, struct sockaddr_un *sun);

/*
 * addr into ss and *len: a VSOCK-LISTEN on any CID, VSOCK-CONNECT on its CID, TCP (IPv4 or
 * IPv6, numeric), UNIX-CONNECT. 0, -ENAMETOOLONG, or -EINVAL for another kind.
 */
int address_sockaddr(const struct address *addr, struct sockaddr_storage *ss, socklen_t *len);

/* fd is bound to addr (a unix socket to its path, another to its address and port). */
bool socket_bound_to(int fd, const struct address *addr);

#endif
