// SPDX-License-Identifier: GPL-2.0-only
#include <arpa/inet.h>
#include <errno.h>
#include <linux/vm_sockets.h>
#include <stddef.h>
#include <string.h>

#include "socket_address.h"

int sockaddr_un_from_path(const char *path, struct sockaddr_un *sun)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun->sun_path))
		return -ENAMETOOLONG;
	strcpy(sun->sun_path, path);
	return 0;
}

/* CID:PORT into ss; returns its length. */
static socklen_t make_sockaddr_vm(uint32_t cid, uint32_t port, struct sockaddr_storage *ss)
{
	struct sockaddr_vm *svm = (struct sockaddr_vm *)ss;

	svm->svm_family = AF_VSOCK;
	svm->svm_cid = cid;
	svm->svm_port = port;
	return sizeof(*svm);
}

/* The address's numeric IPv4 or IPv6 address and its port into ss; returns its length. */
static socklen_t make_sockaddr_inet(const struct address *addr, struct sockaddr_storage *ss)
{
	if (addr->inet_family == AF_INET6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(addr->port);
		memcpy(&sin6->sin6_addr, addr->inet_addr, sizeof(sin6->sin6_addr));
		return sizeof(*sin6);
	} else {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(addr->port);
		memcpy(&sin->sin_addr, addr->inet_addr, sizeof(sin->sin_addr));
		return sizeof(*sin);
	}
}

int address_sockaddr(const struct address *addr, struct sockaddr_storage *ss, socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	switch (addr->kind) {
	case ADDRESS_VSOCK_LISTEN:
		*len = make_sockaddr_vm(VMADDR_CID_ANY, addr->port, ss);
		return 0;
	case ADDRESS_VSOCK_CONNECT:
		*len = make_sockaddr_vm(addr->cid, addr->port, ss);
		return 0;
	case ADDRESS_TCP_LISTEN:
	case ADDRESS_TCP_CONNECT:
		*len = make_sockaddr_inet(addr, ss);
		return 0;
	case ADDRESS_UNIX_CONNECT:
		*len = sizeof(struct sockaddr_un);
		return sockaddr_un_from_path(addr->path, (struct sockaddr_un *)ss);
	default:
		return -EINVAL;
	}
}

/* The same address, field by field (getsockname() leaves padding as it likes). */
static bool same_sockaddr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	switch (a->ss_family) {
	case AF_VSOCK: {
		const struct sockaddr_vm *x = (const void *)a, *y = (const void *)b;

		return x->svm_cid == y->svm_cid && x->svm_port == y->svm_port;
	}
	case AF_INET: {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;

		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	case AF_INET6: {
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;

		return x->sin6_port == y->sin6_port &&
		       !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr));
	}
	default:
		return false;
	}
}

bool socket_bound_to(int fd, const struct address *addr)
{
	struct sockaddr_storage bound, want;
	struct sockaddr_un *sun = (struct sockaddr_un *)&bound;
	socklen_t len = sizeof(bound), want_len;

	memset(&bound, 0, sizeof(bound));
	if (getsockname(fd, (struct sockaddr *)&bound, &len))
		return false;
	if (address_has_file(addr))
		return bound.ss_family == AF_UNIX &&
		       len > offsetof(struct sockaddr_un, sun_path) && sun->sun_path[0] &&
		       !strncmp(sun->sun_path, addr->path, sizeof(sun->sun_path));
	return !address_sockaddr(addr, &want, &want_len) && same_sockaddr(&bound, &want);
}
