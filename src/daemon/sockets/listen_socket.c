// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "listen_socket.h"
#include "socket_address.h"
#include "util.h"

#define LISTEN_BACKLOG_DEFAULT 128
#define DGRAM_BIND_SUFFIX      ".vsm-new"

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

	r = sockaddr_un_from_path(addr->path, &sun);
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
	sockaddr_un_from_path(path, &sun);
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

int net_listener_open(const struct address *addr, const char **why)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, r, on = 1;

	*why = "address";
	r = address_sockaddr(addr, &ss, &len);
	if (r)
		return r;
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
