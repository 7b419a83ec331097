// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
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

int unix_listener_open(const struct address *addr, struct socket_file_id *id, char *msg, size_t len,
		       const char **why)
{
	int type = addr->sock_type == SOCK_DGRAM ? SOCK_DGRAM : SOCK_STREAM;
	struct sockaddr_un sun;
	char path[sizeof(sun.sun_path)];
	const char *step;
	bool removed;
	int fd, r;

	*id = (struct socket_file_id){0};
	r = sockaddr_un_from_path(addr->path, &sun);
	*why = "socket path";
	if (r)
		return r;
	*why = msg;
	r = socket_file_make_parents(addr->path, msg, len);
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
	r = socket_file_bind(fd, &sun, id);
	*why = r == -ESTALE ? "the file at the path right after the bind is not the socket "
			      "this daemon bound"
			    : "bind";
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
	socket_file_unlink_if_ours(path, id);
out_close:
	safe_close(fd);
	return r;
}

/*
 * Give the socket file at from the name to, never over a file someone put there since the
 * stale one went. Where the file system has no RENAME_NOREPLACE (EINVAL: some network file
 * systems), rename() would replace such a file without a word; link() never replaces
 * anything (EEXIST) and a socket file may have a second name, so the file is linked to its
 * path and its private name removed. fs.protected_hardlinks does not stand in the way: the
 * file is the daemon's, or one it had CAP_FOWNER to give its mode after the chown.
 */
static int move_into_place(const char *from, const char *to, const struct socket_file_id *id,
			   const char **why)
{
	int r;

	if (!renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE))
		return 0;
	if (errno != EINVAL)
		return -errno;
	*why = "linking the socket file into place (no RENAME_NOREPLACE on this file system)";
	if (link(from, to))
		return -errno;
	if (!unlink(from))
		return 0;
	/* Two names would outlive the stop: unix_listener_unlink() removes only the private one. */
	r = -errno;
	*why = "removing the socket file's private name after linking it into place";
	socket_file_unlink_if_ours(to, id);
	return r;
}

int unix_listener_publish(const struct address *addr, const struct socket_file_id *id,
			  const char **why)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	mode_t mask = umask(0);
	int r;

	umask(mask);
	bind_path(addr, path, sizeof(path));
	r = socket_file_set_access(path, id, addr->has_user ? addr->user : (uid_t)-1,
				   addr->has_group ? addr->group : (gid_t)-1,
				   addr->has_mode ? addr->mode : 0666 & ~mask, why);
	if (r == -ESTALE)
		*why = "not the socket file this daemon bound (replaced since the bind): owner and "
		       "mode not set";
	if (r)
		return r;
	*why = "renaming the socket file into place";
	return strcmp(path, addr->path) ? move_into_place(path, addr->path, id, why) : 0;
}

int unix_listener_unlink(const struct address *addr, const struct socket_file_id *id)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int r;

	bind_path(addr, path, sizeof(path));
	/* A datagram socket's file has its private name until its publish. */
	if (strcmp(path, addr->path) && !socket_file_unlink_if_ours(path, id))
		return 0;
	r = socket_file_unlink_if_ours(addr->path, id);
	return r == -ENOENT ? 0 : r;
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
