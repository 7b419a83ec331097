/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the test tools share: their address syntax (unix:PATH, unix:@ABSTRACT,
 * unix-seqpacket:PATH, unix-dgram:PATH, tcp:IPV4:PORT, vsock:CID:PORT, vsock-seqpacket:CID:PORT;
 * CID a number or "any"; hybrid:PATH:PORT, a guest's vsock PORT reached from the host through
 * a hybrid-vsock backend's unix socket PATH), sizes with K/M/G suffixes, the monotonic clock, and which connect
 * errors are worth a retry. Header-only: each tool is one file linked with libc alone, since
 * it is copied into the test VM's busybox initramfs.
 */
#ifndef VSM_TOOL_COMMON_H
#define VSM_TOOL_COMMON_H

#include <arpa/inet.h>
#include <errno.h>
#include <linux/vm_sockets.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#define NSEC_PER_SEC  UINT64_C(1000000000)
#define NSEC_PER_MSEC UINT64_C(1000000)
#define NSEC_PER_USEC UINT64_C(1000)

struct tool_addr {
	const char *text;
	int family;
	int type;
	socklen_t len;
	/* hybrid:PATH:PORT: after connect(), "CONNECT PORT\n" is written and "OK ...\n" read. */
	int hybrid;
	uint32_t hybrid_port;
	union {
		struct sockaddr sa;
		struct sockaddr_un un;
		struct sockaddr_in in;
		struct sockaddr_vm vm;
	} u;
};

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static inline uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* A decimal number, with an optional K, M or G (KiB, MiB, GiB), at most max. */
static inline int parse_number(const char *arg, uint64_t max, uint64_t *out)
{
	unsigned long long value;
	unsigned int shift = 0;
	char *end;

	if (*arg < '0' || *arg > '9')
		return -EINVAL;
	errno = 0;
	value = strtoull(arg, &end, 10);
	if (errno)
		return -errno;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'M':
		shift = 20;
		break;
	case 'G':
		shift = 30;
		break;
	}
	if (shift && !strcmp(++end, "iB"))
		end += 2;
	if (*end)
		return -EINVAL;
	if (value > (max >> shift))
		return -ERANGE;
	*out = (uint64_t)value << shift;
	return 0;
}

static inline int parse_unix_addr(const char *path, struct tool_addr *a)
{
	size_t len = strlen(path);

	if (!len || len >= sizeof(a->u.un.sun_path))
		return -ENAMETOOLONG;
	a->u.un.sun_family = AF_UNIX;
	memcpy(a->u.un.sun_path, path, len);
	/* "@name" is an abstract name: a leading NUL and no terminating one. */
	if (path[0] == '@')
		a->u.un.sun_path[0] = '\0';
	else
		len++;
	a->len = offsetof(struct sockaddr_un, sun_path) + len;
	return 0;
}

/* Splits "HOST:PORT" at the last colon. */
static inline int split_host_port(const char *text, char *host, size_t size, uint64_t max_port,
				  uint64_t *port)
{
	const char *colon = strrchr(text, ':');

	if (!colon || (size_t)(colon - text) >= size || parse_number(colon + 1, max_port, port))
		return -EINVAL;
	memcpy(host, text, colon - text);
	host[colon - text] = '\0';
	return 0;
}

static inline int parse_vsock_addr(const char *text, struct tool_addr *a)
{
	uint64_t cid = VMADDR_CID_ANY, port;
	char host[16];

	if (split_host_port(text, host, sizeof(host), UINT32_MAX, &port) ||
	    (strcmp(host, "any") && parse_number(host, UINT32_MAX, &cid)))
		return -EINVAL;
	a->u.vm.svm_family = AF_VSOCK;
	a->u.vm.svm_cid = cid;
	a->u.vm.svm_port = port;
	a->len = sizeof(a->u.vm);
	return 0;
}

static inline int parse_tcp_addr(const char *text, struct tool_addr *a)
{
	char host[INET_ADDRSTRLEN];
	uint64_t port;

	if (split_host_port(text, host, sizeof(host), UINT16_MAX, &port) ||
	    inet_pton(AF_INET, host, &a->u.in.sin_addr) != 1)
		return -EINVAL;
	a->u.in.sin_family = AF_INET;
	a->u.in.sin_port = htons(port);
	a->len = sizeof(a->u.in);
	return 0;
}

/* hybrid:PATH:PORT, the hybrid-vsock form of vhost-user backends (and Firecracker's). */
static inline int parse_hybrid_addr(const char *text, struct tool_addr *a)
{
	char path[sizeof(a->u.un.sun_path)];
	uint64_t port;

	if (split_host_port(text, path, sizeof(path), UINT32_MAX, &port) || path[0] == '@')
		return -EINVAL;
	a->hybrid = 1;
	a->hybrid_port = port;
	return parse_unix_addr(path, a);
}

static inline int parse_addr(const char *text, struct tool_addr *a)
{
	static const struct {
		const char *prefix;
		int family, type;
	} kinds[] = {
	    {"unix:", AF_UNIX, SOCK_STREAM},
	    {"unix-seqpacket:", AF_UNIX, SOCK_SEQPACKET},
	    {"unix-dgram:", AF_UNIX, SOCK_DGRAM},
	    {"vsock:", AF_VSOCK, SOCK_STREAM},
	    {"vsock-seqpacket:", AF_VSOCK, SOCK_SEQPACKET},
	    {"tcp:", AF_INET, SOCK_STREAM},
	    {"hybrid:", AF_UNIX, SOCK_STREAM},
	};
	size_t i, len;

	memset(a, 0, sizeof(*a));
	a->text = text;
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		len = strlen(kinds[i].prefix);
		if (strncmp(text, kinds[i].prefix, len))
			continue;
		a->family = kinds[i].family;
		a->type = kinds[i].type;
		if (!strcmp(kinds[i].prefix, "hybrid:"))
			return parse_hybrid_addr(text + len, a);
		if (a->family == AF_UNIX)
			return parse_unix_addr(text + len, a);
		if (a->family == AF_VSOCK)
			return parse_vsock_addr(text + len, a);
		return parse_tcp_addr(text + len, a);
	}
	return -EINVAL;
}

/* A connect that may work a moment later: nobody listening yet, or a full backlog. */
static inline bool connect_retryable(int err)
{
	/* vsock reports a port nobody listens on as a reset, not a refusal. */
	return err == ECONNREFUSED || err == ENOENT || err == EAGAIN || err == ECONNRESET;
}

#endif
