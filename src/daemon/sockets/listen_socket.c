// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "listen_socket.h"
#include "socket_file.h"
#include "socket_address.h"
#include "util.h"

#define LISTEN_BACKLOG_DEFAULT 128
#define DGRAM_BIND_SUFFIX      ".vsm-new"

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
	const char *step;
	mode_t old_umask;
	bool removed;
	int fd, r;

	r = sockaddr_un_from_path(addr->path, &sun);
	*why = "socket path";
	if (r)
		return r;
	*why = "creating the parent directory";
	r = socket_file_make_parents(addr->path, path, sizeof(path));
	if (r)
		return r;
	if (addr->unlink_early) {
		*why = "unlink-early";
		r = unlink(addr->path) && errno != ENOENT ? -errno : 0;
	} else {
		*why = "checking the existing socket file";
		r = socket_file_remove_stale(addr->path, type, &removed, &step);
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
