/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A unix socket's file before the bind: its directory made, and a file left by an earlier
 * run taken away if nobody listens on it. For the listeners and the control socket alike.
 */
#ifndef VSOCKMAP_SOCKET_FILE_H
#define VSOCKMAP_SOCKET_FILE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * mkdir -p (mode 0755) of the directory part of path. 0 or -errno; buf (len bytes) holds the
 * directory that failed.
 */
int socket_file_make_parents(const char *path, char *buf, size_t len);

/*
 * A socket file at path that a connect() of a socket of type is refused on is stale:
 * unlinked, *removed set. 0 also when nothing is there. -EEXIST: something that is not a
 * socket; -EADDRINUSE: someone listens (or its backlog is full); another -errno with *what
 * naming the step that failed.
 */
int socket_file_remove_stale(const char *path, int type, bool *removed, const char **what);

#endif
