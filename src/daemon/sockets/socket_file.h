/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A unix socket's file: its directory made and checked, a file left by an earlier run taken
 * away if nobody listens on it, the bind, the owner and mode given to exactly the file bound,
 * and the file removed only while it is still that one. For the listeners and the control
 * socket alike. Why each step is safe in a directory others can change: docs/security.md,
 * "Socket files".
 */
#ifndef VSOCKMAP_SOCKET_FILE_H
#define VSOCKMAP_SOCKET_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

/* Which file a socket was bound at: st_dev and st_ino of the file, not of the socket. */
struct socket_file_id {
	dev_t dev;
	ino_t ino;
	bool known; /* false: nothing to compare with, the file is never touched */
};

/*
 * mkdir -p (mode 0755) of the directory part of path, then socket_file_check_parents(). 0 or
 * -errno; msg (len bytes) names the directory that failed and why.
 */
int socket_file_make_parents(const char *path, char *msg, size_t len);

/*
 * Whether path's directories are safe for a socket file: each directory on the way (as the
 * kernel resolves it) is owned by root or the daemon's uid, and writable by no one else, by
 * its mode or through its POSIX ACL, unless it has the sticky bit (group write is fine for
 * group 0, and for a named root user or group in the ACL); each symlink on the way is
 * owned by root or the daemon's uid, and its target is checked the same way. 0, -EPERM with
 * msg saying which one and why, or another -errno (msg names the path).
 */
int socket_file_check_parents(const char *path, char *msg, size_t len);

/*
 * A socket file at path that a connect() of a socket of type is refused on is stale:
 * unlinked, *removed set. 0 also when nothing is there. -EEXIST: something that is not a
 * socket; -EADDRINUSE: someone listens (or its backlog is full); another -errno with *what
 * naming the step that failed.
 */
int socket_file_remove_stale(const char *path, int type, bool *removed, const char **what);

/*
 * bind() fd to sun with the file created mode 0000, so that nobody but root may connect
 * before socket_file_set_access(), and remember which file it made in *id. 0 or -errno;
 * -ESTALE when the file at the path right after the bind is not a socket of ours (the file
 * bound is then left where it is, whatever is at the path untouched).
 */
int socket_file_bind(int fd, const struct sockaddr_un *sun, struct socket_file_id *id);

/* *id of the socket file at path (not following a symlink there), for a socket bound by an
 * earlier instance. -ESTALE when it is not a socket. */
int socket_file_identify(const char *path, struct socket_file_id *id);

/*
 * Give the file at path group gid, mode, then owner uid ((uid_t)-1 / (gid_t)-1: unchanged;
 * what is already as asked is not touched, so CAP_CHOWN is all a chown to another uid takes),
 * only if it is still *id's file: the changes go to the inode checked, through an
 * O_PATH descriptor, never through a symlink. An ACL the file inherited from its
 * directory's default ACL is removed first, so that the mode alone says who may connect.
 * 0 or -errno; -ESTALE: it is not (a symlink, another file, nothing), and nothing was
 * changed. *step (step may be NULL): what failed, "open", "removing the ACL it inherited", "chown" or "chmod", for
 * the message.
 */
int socket_file_set_access(const char *path, const struct socket_file_id *id, uid_t uid, gid_t gid,
			   mode_t mode, const char **step);

/*
 * Unlink path if it is still *id's file. 0 when removed; -ENOENT when nothing is there;
 * -ESTALE when another file is there now (left in place); another -errno from lstat() or
 * unlink().
 */
int socket_file_unlink_if_ours(const char *path, const struct socket_file_id *id);

#endif
