/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The config loader's insides, shared by its two files: config.c (the file, its lines,
 * sections and keys) and config_values.c (each key's value: sizes, levels, modes, names).
 */
#ifndef VSOCKMAP_CONFIG_INTERNAL_H
#define VSOCKMAP_CONFIG_INTERNAL_H

#include <stdio.h>

#include "config.h"

#define DAEMON_SECTION	   "daemon"
#define DEFAULT_CONNECT_MS 5000
#define DEFAULT_DRAIN_MS   10000
#define DEFAULT_SNDBUF	   (4u << 20)
/* max-redirects-per-uid=: far above what one user's programs hold at once in a guest */
#define DEFAULT_MAX_REDIRECTS_PER_UID 1024u
#define SNDBUF_MIN	   (64u << 10)
#define SNDBUF_MAX	   (256u << 20)
#define MSG_MAX		   512

enum section_kind {
	SECTION_NONE, /* before the first header */
	SECTION_DAEMON,
	SECTION_REDIRECT, /* the last entry of loader.redirects */
};

enum daemon_key {
	KEY_CONTROL,
	KEY_CONTROL_MODE,
	KEY_CONTROL_GROUP,
	KEY_CONTROL_ADMIN_GROUP,
	KEY_CONNECT_TIMEOUT,
	KEY_SNDBUF,
	KEY_DRAIN_TIMEOUT,
	KEY_LOG_LEVEL,
	KEY_IDLE_TIMEOUT,
	KEY_MAX_REDIRECTS,
	KEY_MAX_REDIRECTS_PER_UID,
	KEY_DATAPATH,
	KEY_FASTPATH,
};
enum redirect_key { KEY_LISTEN, KEY_CONNECT, KEY_ALLOW_UID, KEY_ALLOW_GID };

#define N_DAEMON_KEYS	(KEY_FASTPATH + 1)
#define N_REDIRECT_KEYS (KEY_ALLOW_GID + 1)

_Static_assert(N_REDIRECT_KEYS <= N_DAEMON_KEYS, "loader.key_lines holds either section's keys");

struct loader {
	const char *path;
	FILE *file;
	char *buf; /* getline() buffer */
	size_t buf_size;
	unsigned int line; /* number of the line inih is working on */

	char *err;
	size_t errlen;
	int error; /* first error (-errno), 0 while none */
	unsigned int error_line;

	enum section_kind section;
	unsigned int section_line;
	unsigned int key_lines[N_DAEMON_KEYS]; /* where each key of the section was set */
	unsigned int daemon_line;	       /* header of [daemon], 0 if none yet */
	unsigned int control_line;
	unsigned int control_mode_line; /* where control-mode= was set, 0 if not */

	struct daemon_config daemon;
	struct redirect_config *redirects;
	unsigned int *listen_lines; /* parallel to redirects */
	size_t n_redirects;
	size_t capacity;
};

/* The first error of the load, at line (0: none), as "path:line: message"; returns -EINVAL. */
int loader_error(struct loader *ld, unsigned int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A read or open of the file failed: "path: what: strerror"; returns -errnum. */
int loader_io_error(struct loader *ld, const char *what, int errnum);

/* ---- config_values.c: 0, or loader_error()'s -EINVAL ---- */
int parse_size(struct loader *ld, const char *text, unsigned int *bytes);
int parse_max_redirects(struct loader *ld, const char *text);
int parse_max_redirects_per_uid(struct loader *ld, const char *text);
int parse_log_level(struct loader *ld, const char *text);
int parse_control_mode(struct loader *ld, const char *text);
/* control-group= and control-admin-group=: name is the key, for messages. */
int parse_control_group(struct loader *ld, const char *name, const char *text, bool *has,
			gid_t *gid, char *group_name);
int parse_datapath(struct loader *ld, const char *text);
int parse_fastpath(struct loader *ld, const char *text);
int parse_allow_list(struct loader *ld, const char *name, const char *value, uint32_t *ids,
		     unsigned int *n);

#endif
