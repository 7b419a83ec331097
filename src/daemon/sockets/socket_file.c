// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "socket_file.h"

int socket_file_make_parents(const char *path, char *buf, size_t len)
{
	char *p;

	if (snprintf(buf, len, "%s", path) >= (int)len)
		return -ENAMETOOLONG;
	p = strrchr(buf, '/');
	if (!p || p == buf)
		return 0;
	*p = '\0';
	for (p = buf + 1;; p++) {
		char c = *p;

		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno; /* buf names the directory that failed */
		*p = c;
		if (c == '\0')
			return 0;
	}
}

int socket_file_remove_stale(const char *path, int type, bool *removed, const char **what)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct stat st;
	int fd, r;

	*removed = false;
	*what = "cannot stat it";
	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	*what = "cannot create a probe socket";
	/* Non-blocking: a listener whose backlog is full answers EAGAIN, not a wait. */
	fd = socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	r = connect(fd, (const struct sockaddr *)&sun, sizeof(sun)) ? -errno : 0;
	close(fd);
	*what = "cannot tell whether it is in use";
	/* EAGAIN: a full backlog, very much alive; EPROTOTYPE: alive, of another type. */
	if (r == 0 || r == -EAGAIN || r == -EPROTOTYPE)
		return -EADDRINUSE;
	if (r == -ENOENT)
		return 0; /* gone since the lstat() */
	if (r != -ECONNREFUSED)
		return r;
	*what = "cannot remove the stale socket";
	if (unlink(path) && errno != ENOENT)
		return -errno;
	*removed = true;
	return 0;
}
