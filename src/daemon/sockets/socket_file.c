// SPDX-License-Identifier: GPL-2.0-only
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "socket_file.h"

/* fchmodat2() (Linux 6.6) is the same number on every architecture; older headers lack it. */
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif

/*
 * The kernel's form of the system.posix_acl_access attribute (include/uapi/linux/
 * posix_acl_xattr.h), read without libacl: a little-endian version, then entries of tag,
 * permissions and id.
 */
#define ACL_XATTR_NAME	  "system.posix_acl_access"
#define ACL_XATTR_VERSION 2
#define ACL_XATTR_HEADER  4
#define ACL_XATTR_ENTRY	  8
#define ACL_TAG_USER	  0x02
#define ACL_TAG_GROUP	  0x08
#define ACL_TAG_MASK	  0x10
#define ACL_PERM_WRITE	  0x02
/* XATTR_SIZE_MAX: no attribute is larger. */
#define ACL_XATTR_MAX (64 * 1024)

/*
 * With an ACL the mode's group bits are its mask, so they do not show who the named user
 * and group entries let write: a named entry other than root (the daemon's uid, for a user)
 * whose write the mask leaves in place. 0 when there is none (or no ACL), 1 with *id and
 * *group set, or -errno with msg set.
 */
static int acl_writer(const char *dir, unsigned int *id, bool *group, char *msg, size_t len)
{
	unsigned int mask = 07, perm, tag, who;
	uint8_t *buf;
	uint16_t le16;
	uint32_t le32;
	ssize_t n;
	size_t i;
	int r = 0;

	buf = malloc(ACL_XATTR_MAX);
	if (!buf) {
		snprintf(msg, len, "%s: out of memory to read its ACL", dir);
		return -ENOMEM;
	}
	n = lgetxattr(dir, ACL_XATTR_NAME, buf, ACL_XATTR_MAX);
	if (n < 0) {
		r = errno == ENODATA || errno == EOPNOTSUPP ? 0 : -errno;
		if (r)
			snprintf(msg, len, "%s: cannot read its ACL", dir);
		goto out;
	}
	le32 = 0;
	if (n >= ACL_XATTR_HEADER)
		memcpy(&le32, buf, sizeof(le32));
	if (le32toh(le32) != ACL_XATTR_VERSION || (n - ACL_XATTR_HEADER) % ACL_XATTR_ENTRY) {
		snprintf(msg, len, "%s: its ACL is not of a form this daemon knows (%zd bytes)",
			 dir, n);
		r = -EINVAL;
		goto out;
	}
	/* The mask limits every named entry, wherever it stands in the list. */
	for (i = ACL_XATTR_HEADER; i < (size_t)n; i += ACL_XATTR_ENTRY) {
		memcpy(&le16, buf + i, sizeof(le16));
		if (le16toh(le16) != ACL_TAG_MASK)
			continue;
		memcpy(&le16, buf + i + 2, sizeof(le16));
		mask = le16toh(le16);
	}
	for (i = ACL_XATTR_HEADER; i < (size_t)n; i += ACL_XATTR_ENTRY) {
		memcpy(&le16, buf + i, sizeof(le16));
		tag = le16toh(le16);
		memcpy(&le16, buf + i + 2, sizeof(le16));
		perm = le16toh(le16) & mask;
		memcpy(&le32, buf + i + 4, sizeof(le32));
		who = le32toh(le32);
		if (!(perm & ACL_PERM_WRITE) || who == 0)
			continue;
		if ((tag == ACL_TAG_USER && who != (unsigned int)geteuid()) ||
		    tag == ACL_TAG_GROUP) {
			*id = who;
			*group = tag == ACL_TAG_GROUP;
			r = 1;
			break;
		}
	}
out:
	free(buf);
	return r;
}

/*
 * A directory a socket file may live in: nobody but root and the daemon's uid can add,
 * rename or remove entries, or the sticky bit keeps them from touching entries they do not
 * own. Group 0 writing is root writing. Write granted through an ACL counts as the mode's.
 */
static int dir_safe(const char *dir, const struct stat *st, char *msg, size_t len)
{
	uid_t me = geteuid();
	unsigned int mode = st->st_mode & 07777, id = 0;
	bool sticky = st->st_mode & S_ISVTX, group = false;
	int r;

	if (st->st_uid != 0 && st->st_uid != me) {
		snprintf(msg, len, "%s: owned by uid %u, neither root nor the daemon's uid %u", dir,
			 (unsigned int)st->st_uid, (unsigned int)me);
		return -EPERM;
	}
	if (!sticky && (st->st_mode & S_IWOTH)) {
		snprintf(msg, len, "%s: writable by others and not sticky (mode %04o)", dir, mode);
		return -EPERM;
	}
	if (!sticky && (st->st_mode & S_IWGRP) && st->st_gid != 0) {
		snprintf(msg, len, "%s: writable by group %u and not sticky (mode %04o)", dir,
			 (unsigned int)st->st_gid, mode);
		return -EPERM;
	}
	if (sticky)
		return 0;
	r = acl_writer(dir, &id, &group, msg, len);
	if (r == 1) {
		snprintf(msg, len,
			 "%s: writable by %s %u through its ACL and not sticky (mode %04o)", dir,
			 group ? "group" : "uid", id, mode);
		return -EPERM;
	}
	return r;
}

static int check_walk(const char *dir, bool make, int depth, char *msg, size_t len);

/*
 * One directory on the way, named by prefix: the directory that holds its last component was
 * checked before it, so what lstat() sees here is what anyone else sees too.
 */
static int check_one(const char *prefix, int depth, char *msg, size_t len)
{
	char *real;
	struct stat st;
	int r;

	if (lstat(prefix, &st)) {
		r = -errno;
		snprintf(msg, len, "%s: cannot stat it", prefix);
		return r;
	}
	if (S_ISDIR(st.st_mode))
		return dir_safe(prefix, &st, msg, len);
	if (!S_ISLNK(st.st_mode)) {
		snprintf(msg, len, "%s: not a directory", prefix);
		return -ENOTDIR;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		snprintf(msg, len,
			 "%s: a symlink owned by uid %u, neither root nor the daemon's uid %u",
			 prefix, (unsigned int)st.st_uid, (unsigned int)geteuid());
		return -EPERM;
	}
	/* Where it points: every directory of the target, from /, by the same rule. */
	real = realpath(prefix, NULL);
	if (!real) {
		r = -errno;
		snprintf(msg, len, "%s: cannot resolve the symlink", prefix);
		return r;
	}
	r = depth ? -ELOOP : check_walk(real, false, depth + 1, msg, len);
	if (r == -ELOOP)
		snprintf(msg, len, "%s: changed while it was checked", prefix);
	free(real);
	return r;
}

/* dir and each of its ancestors from /, each made first if make. */
static int check_walk(const char *dir, bool make, int depth, char *msg, size_t len)
{
	char buf[PATH_MAX], *p;
	int r;

	if (dir[0] != '/') {
		/* A relative path hangs from the working directory: check that from / first. */
		p = realpath(".", NULL);
		r = p ? check_walk(p, false, depth, msg, len) : -errno;
		if (!p)
			snprintf(msg, len, "the working directory: cannot resolve it");
		free(p);
		if (r)
			return r;
	}
	if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf)) {
		snprintf(msg, len, "%s: too long", dir);
		return -ENAMETOOLONG;
	}
	if (buf[0] == '/') {
		r = check_one("/", depth, msg, len);
		if (r)
			return r;
	}
	for (p = buf + 1;; p++) {
		char c = *p;

		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (p[-1] != '/') {
			if (make && mkdir(buf, 0755) && errno != EEXIST) {
				r = -errno;
				snprintf(msg, len, "%s: cannot create it", buf);
				return r;
			}
			r = check_one(buf, depth, msg, len);
			if (r)
				return r;
		}
		*p = c;
		if (c == '\0')
			return 0;
	}
}

/* The directory part of path into buf: 0, 1 when path has none (a bare name), or -errno. */
static int dir_of(const char *path, char *buf, size_t len)
{
	char *p;

	if (snprintf(buf, len, "%s", path) >= (int)len)
		return -ENAMETOOLONG;
	p = strrchr(buf, '/');
	if (!p)
		return 1;
	p[p == buf] = '\0'; /* "/x.sock": the directory is "/" */
	return 0;
}

static int parents(const char *path, bool make, char *msg, size_t len)
{
	char dir[PATH_MAX];
	int r = dir_of(path, dir, sizeof(dir));

	if (r < 0) {
		snprintf(msg, len, "%s: too long", path);
		return r;
	}
	return check_walk(r ? "." : dir, make, 0, msg, len);
}

int socket_file_make_parents(const char *path, char *msg, size_t len)
{
	return parents(path, true, msg, len);
}

int socket_file_check_parents(const char *path, char *msg, size_t len)
{
	return parents(path, false, msg, len);
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

/*
 * The file at path itself, not what a symlink there points to: an O_PATH descriptor (a
 * socket file cannot be opened otherwise) and its stat. -ESTALE when it is not a socket, or
 * nothing is there.
 */
static int open_socket_file(const char *path, struct stat *st)
{
	int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	*st = (struct stat){0};
	if (fd < 0)
		return errno == ENOENT ? -ESTALE : -errno;
	if (fstat(fd, st)) {
		int r = -errno;

		close(fd);
		return r;
	}
	if (!S_ISSOCK(st->st_mode)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

static bool same_file(const struct socket_file_id *id, const struct stat *st)
{
	return id->known && S_ISSOCK(st->st_mode) && st->st_dev == id->dev && st->st_ino == id->ino;
}

int socket_file_identify(const char *path, struct socket_file_id *id)
{
	struct stat st;
	int fd = open_socket_file(path, &st);

	*id = (struct socket_file_id){0};
	if (fd < 0)
		return fd;
	close(fd);
	*id = (struct socket_file_id){.dev = st.st_dev, .ino = st.st_ino, .known = true};
	return 0;
}

int socket_file_bind(int fd, const struct sockaddr_un *sun, struct socket_file_id *id)
{
	mode_t old_umask;
	struct stat st;
	int r, file;

	*id = (struct socket_file_id){0};
	/* unix_bind() creates the file 0777 & ~umask: 0000 until socket_file_set_access(). */
	old_umask = umask(0777);
	r = bind(fd, (const struct sockaddr *)sun, sizeof(*sun)) ? -errno : 0;
	umask(old_umask);
	if (r)
		return r;
	/*
	 * bind() never reuses a name, so the file there now is the one just made, unless someone
	 * who may write the directory swapped it in between (root or our uid, once the parents
	 * were checked). A socket of ours that is not ours only fools this in that case.
	 */
	file = open_socket_file(sun->sun_path, &st);
	if (file < 0)
		return file;
	close(file);
	if (st.st_uid != geteuid())
		return -ESTALE;
	*id = (struct socket_file_id){.dev = st.st_dev, .ino = st.st_ino, .known = true};
	return 0;
}

/* chmod of the inode fd (O_PATH) holds: fchmodat2(), else the /proc magic link to it. */
static int chmod_opath(int fd, mode_t mode)
{
	char proc[64];

	if (!syscall(__NR_fchmodat2, fd, "", mode, AT_EMPTY_PATH))
		return 0;
	/* Before Linux 6.6, or a seccomp filter that does not know it (EPERM by systemd's). */
	if (errno != ENOSYS && errno != EPERM && errno != EINVAL && errno != EOPNOTSUPP)
		return -errno;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	return chmod(proc, mode) ? -errno : 0;
}

/*
 * The ACL a directory's default ACL gave the new file: its named entries would get the
 * mask that the mode's group bits set, so "0660" would let users the configuration never
 * names connect. Removed through the /proc magic link to the O_PATH descriptor; no ACL, or
 * a file system without them, is fine.
 */
static int remove_inherited_acl(int fd)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	/*
	 * Looked for first: a socket a reload keeps is published again, its ACL long gone and
	 * its owner maybe user=, and removing takes the owner or CAP_FOWNER (not kept).
	 */
	if (getxattr(proc, ACL_XATTR_NAME, NULL, 0) < 0)
		return errno == ENODATA || errno == EOPNOTSUPP ? 0 : -errno;
	if (!removexattr(proc, ACL_XATTR_NAME))
		return 0;
	return errno == ENODATA || errno == EOPNOTSUPP ? 0 : -errno;
}

int socket_file_set_access(const char *path, const struct socket_file_id *id, uid_t uid, gid_t gid,
			   mode_t mode, const char **step)
{
	const char *unused = NULL;
	struct stat st;
	int fd, r = 0;

	step = step ? step : &unused;
	*step = "open";
	fd = open_socket_file(path, &st);
	if (fd < 0)
		return fd;
	if (!same_file(id, &st)) {
		r = -ESTALE;
		goto out;
	}
	/* While it is still ours: removing it takes the owner (or CAP_FOWNER). */
	*step = "removing the ACL it inherited";
	r = remove_inherited_acl(fd);
	if (r)
		goto out;
	/*
	 * The group first: the file is 0000 until the mode, so nobody connects between. Then the
	 * mode, while the file is still the daemon's: a chmod after a chown to another uid takes
	 * CAP_FOWNER, which the daemon does not keep after its start (privileges.c). Until the
	 * owner follows, only the daemon's own uid has the owner's bits. What is already as
	 * asked is left alone: a socket a reload keeps may be user='s by now.
	 */
	*step = "chown";
	if (gid != (gid_t)-1 && gid != st.st_gid &&
	    fchownat(fd, "", (uid_t)-1, gid, AT_EMPTY_PATH)) {
		r = -errno;
		goto out;
	}
	*step = "chmod";
	if ((st.st_mode & 07777) != mode) {
		r = chmod_opath(fd, mode);
		if (r)
			goto out;
	}
	*step = "chown";
	if (uid != (uid_t)-1 && uid != st.st_uid && fchownat(fd, "", uid, (gid_t)-1, AT_EMPTY_PATH))
		r = -errno;
out:
	close(fd);
	return r;
}

int socket_file_unlink_if_ours(const char *path, const struct socket_file_id *id)
{
	struct stat st;

	if (lstat(path, &st))
		return -errno;
	/*
	 * A window between the lstat() and the unlink() stays: unlink() takes a name only. Under
	 * checked parents (socket_file_check_parents()) only root and our uid can use it.
	 */
	if (!same_file(id, &st))
		return -ESTALE;
	return unlink(path) && errno != ENOENT ? -errno : 0;
}
