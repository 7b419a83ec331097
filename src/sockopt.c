// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <limits.h>
#include <arpa/inet.h>
#include <linux/sockios.h>
#include <linux/vm_sockets.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "sockopt.h"
#include "util.h"

#define LISTEN_BACKLOG_DEFAULT 128
#define DGRAM_BIND_SUFFIX ".vsm-new"

static int make_sockaddr_un(const char *path, struct sockaddr_un *sun)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun->sun_path))
		return -ENAMETOOLONG;
	strcpy(sun->sun_path, path);
	return 0;
}

static int mkdir_parents(const char *path)
{
	char dir[PATH_MAX];
	char *p;

	if (strlen(path) >= sizeof(dir))
		return -ENAMETOOLONG;
	strcpy(dir, path);
	p = strrchr(dir, '/');
	if (!p || p == dir)
		return 0;
	*p = '\0';
	for (p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

/* A socket file left by an earlier run is stale if connecting to it is refused. */
static int remove_stale_socket(const struct sockaddr_un *sun, int type)
{
	struct stat st;
	int fd, r;

	if (lstat(sun->sun_path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	r = connect(fd, (const struct sockaddr *)sun, sizeof(*sun));
	r = r ? -errno : 0;
	close(fd);
	if (r == 0)
		return -EADDRINUSE;
	if (r != -ECONNREFUSED)
		return r == -EPROTOTYPE ? -EADDRINUSE : r;
	return unlink(sun->sun_path) ? -errno : 0;
}

/*
 * Where the socket is bound. A datagram socket is bound under a private name, and renamed to
 * its path once it is in its sockhash: a datagram sent before then would never meet the
 * verdict and could overtake the ones that did (dgram_forwarder.c). The file mode does not
 * keep root out. A path too long for the private name is bound in place.
 */
static void bind_path(const struct address *addr, char *buf, size_t len)
{
	if (addr->sock_type != SOCK_DGRAM ||
	    snprintf(buf, len, "%s%s", addr->path, DGRAM_BIND_SUFFIX) >= (int)len)
		snprintf(buf, len, "%s", addr->path);
}

int unix_listener_open(const struct address *addr, const char **why)
{
	int type = addr->sock_type == SOCK_DGRAM ? SOCK_DGRAM : SOCK_STREAM;
	struct sockaddr_un sun;
	char path[sizeof(sun.sun_path)];
	mode_t old_umask;
	int fd, r;

	r = make_sockaddr_un(addr->path, &sun);
	*why = "socket path";
	if (r)
		return r;
	*why = "creating the parent directory";
	r = mkdir_parents(addr->path);
	if (r)
		return r;
	if (addr->unlink_early) {
		*why = "unlink-early";
		r = unlink(addr->path) && errno != ENOENT ? -errno : 0;
	} else {
		*why = "checking the existing socket file";
		r = remove_stale_socket(&sun, type);
	}
	if (r)
		return r;
	bind_path(addr, path, sizeof(path));
	*why = "removing the file of an earlier bind";
	if (strcmp(path, addr->path) && unlink(path) && errno != ENOENT)
		return -errno;
	make_sockaddr_un(path, &sun);
	*why = "socket";
	fd = socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Nobody may connect before the configured mode and owner are in place. */
	old_umask = umask(0177);
	*why = "bind";
	r = bind(fd, (struct sockaddr *)&sun, sizeof(sun)) ? -errno : 0;
	umask(old_umask);
	if (r)
		goto out_close;
	*why = "listen";
	if (type == SOCK_STREAM &&
	    listen(fd, addr->backlog ? addr->backlog : LISTEN_BACKLOG_DEFAULT)) {
		r = -errno;
		goto out_unlink;
	}
	return fd;

out_unlink:
	unlink(path);
out_close:
	safe_close(fd);
	return r;
}

int unix_listener_publish(const struct address *addr, const char **why)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	mode_t mask = umask(0);

	umask(mask);
	bind_path(addr, path, sizeof(path));
	*why = "chown";
	if ((addr->has_user || addr->has_group) &&
	    chown(path, addr->has_user ? addr->user : (uid_t)-1,
		  addr->has_group ? addr->group : (gid_t)-1))
		return -errno;
	*why = "chmod";
	if (chmod(path, addr->has_mode ? addr->mode : 0666 & ~mask))
		return -errno;
	*why = "renaming the socket file into place";
	if (strcmp(path, addr->path) && rename(path, addr->path))
		return -errno;
	return 0;
}

void unix_listener_unlink(const struct address *addr)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];

	bind_path(addr, path, sizeof(path));
	if (strcmp(path, addr->path))
		unlink(path);
	unlink(addr->path);
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

int net_listener_open(const struct address *addr, const char **why)
{
	struct sockaddr_storage ss = {};
	socklen_t len;
	int fd, r, on = 1;

	if (addr->kind == ADDRESS_VSOCK_LISTEN)
		len = make_sockaddr_vm(VMADDR_CID_ANY, addr->port, &ss);
	else
		len = make_sockaddr_inet(addr, &ss);
	*why = "socket";
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	*why = "reuseaddr";
	r = addr->reuseaddr ? setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) : 0;
	if (!r) {
		*why = "bind";
		r = bind(fd, (struct sockaddr *)&ss, len);
	}
	if (!r) {
		*why = "listen";
		r = listen(fd, addr->backlog ? addr->backlog : LISTEN_BACKLOG_DEFAULT);
	}
	if (r) {
		r = -errno;
		safe_close(fd);
		return r;
	}
	return fd;
}

void socket_set_bufs(int fd, const struct address *addr)
{
	if (addr->rcvbuf)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &addr->rcvbuf, sizeof(addr->rcvbuf));
	if (addr->sndbuf)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &addr->sndbuf, sizeof(addr->sndbuf));
}

int target_connect_start(const struct address *addr, int *in_progress)
{
	struct sockaddr_storage ss = {};
	socklen_t len;
	int fd, type = SOCK_STREAM;

	if (addr->kind == ADDRESS_VSOCK_CONNECT) {
		type = addr->sock_type == SOCK_SEQPACKET ? SOCK_SEQPACKET : SOCK_STREAM;
		len = make_sockaddr_vm(addr->cid, addr->port, &ss);
	} else if (addr->kind == ADDRESS_TCP_CONNECT) {
		len = make_sockaddr_inet(addr, &ss);
	} else if (addr->kind == ADDRESS_UNIX_CONNECT) {
		if (make_sockaddr_un(addr->path, (struct sockaddr_un *)&ss))
			return -ENAMETOOLONG;
		len = sizeof(struct sockaddr_un);
	} else {
		return -EINVAL;
	}
	fd = socket(ss.ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	socket_set_bufs(fd, addr);
	*in_progress = 0;
	if (connect(fd, (struct sockaddr *)&ss, len)) {
		/* A unix connect never completes later: EAGAIN means the listen backlog is full. */
		if (errno != EINPROGRESS) {
			int r = -errno;

			safe_close(fd);
			return r;
		}
		*in_progress = 1;
	}
	return fd;
}

int socket_error(int fd)
{
	socklen_t len = sizeof(int);
	int err = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
		return -errno;
	return -err;
}

int socket_cookie(int fd, uint64_t *cookie)
{
	socklen_t len = sizeof(*cookie);

	return getsockopt(fd, SOL_SOCKET, SO_COOKIE, cookie, &len) ? -errno : 0;
}

int socket_force_sndbuf(int fd, unsigned int bytes)
{
	int v = bytes > INT_MAX ? INT_MAX : (int)bytes;

	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)) == 0)
		return 0;
	/* Without CAP_NET_ADMIN take what net.core.wmem_max allows. */
	return setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)) ? -errno : 0;
}

bool socket_writable(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLOUT};

	return poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLOUT);
}

int socket_inq(int fd)
{
	int n = 0;

	return ioctl(fd, SIOCINQ, &n) ? -errno : n;
}

int socket_outq(int fd)
{
	int n = 0;

	return ioctl(fd, SIOCOUTQ, &n) ? -errno : n;
}
