/* SPDX-License-Identifier: GPL-2.0-only */
/* vsockmap.conf: INI (libinih), one section per redirect plus [daemon]. */
#ifndef VSOCKMAP_CONFIG_H
#define VSOCKMAP_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "address.h"

#define CONFIG_DEFAULT_PATH	    "/etc/vsockmap/vsockmap.conf"
#define CONFIG_DEFAULT_CONTROL_PATH "/run/vsockmap/control.sock"
#define CONFIG_NAME_MAX		    64
/* control-mode= without control-group= or control-admin-group=, and with one. */
#define CONFIG_DEFAULT_CONTROL_MODE	  0600
#define CONFIG_DEFAULT_CONTROL_GROUP_MODE 0660

/* allow-uid=, allow-gid=: who may connect to a UNIX-LISTEN section (SO_PEERCRED). */
#define CONFIG_ALLOW_MAX 32
struct peer_allow {
	unsigned int n_uids; /* 0 and n_gids 0: no list, everyone the file mode lets in */
	unsigned int n_gids;
	uid_t uids[CONFIG_ALLOW_MAX];
	gid_t gids[CONFIG_ALLOW_MAX]; /* matched against the primary and supplementary groups */
};

struct redirect_config {
	char name[CONFIG_NAME_MAX]; /* the section name */
	unsigned int line;	    /* line of the section header */
	struct address listen;
	struct address connect;
	struct peer_allow allow;
	bool once; /* command line without fork: one connection, then the daemon exits */
};

/* datapath=: who moves the bytes. auto: the kernel where it can, else the daemon. */
enum datapath_mode { DATAPATH_AUTO, DATAPATH_KERNEL, DATAPATH_USERSPACE };

/*
 * fastpath=: what the kernel path's verdicts do per message. counted: the sk_skb verdict
 * counts every skb and the sk_msg verdict runs per send; permanent: a verdict that counts
 * nothing, and an sk_msg verdict that applies to the next 4 GiB (bpf_msg_apply_bytes()).
 */
enum fastpath_mode { FASTPATH_COUNTED, FASTPATH_PERMANENT };

struct daemon_config {
	char control_path[ADDRESS_PATH_MAX]; /* control= ; default CONFIG_DEFAULT_CONTROL_PATH */
	unsigned int control_mode;	     /* control-mode= octal, at most 0777 */
	bool has_control_group;		     /* control-group= set: its members may read */
	gid_t control_group;
	char control_group_name[CONFIG_NAME_MAX]; /* as written: a name or a number */
	bool has_control_admin_group; /* control-admin-group= set: its members are admins */
	gid_t control_admin_group;
	char control_admin_group_name[CONFIG_NAME_MAX];
	unsigned int connect_timeout_ms; /* connect-timeout= seconds; default 5 s */
	unsigned int sndbuf; /* sndbuf= bytes forced on the daemon's sockets; default 4 MiB */
	unsigned int drain_timeout_ms; /* drain-timeout= seconds; default 10 s */
	unsigned int idle_timeout_ms;  /* idle-timeout= seconds (socat's -T); 0 (default): none */
	unsigned int max_redirects;    /* max-redirects=; default VSOCKMAP_MAX_REDIRECTS */
	/* max-redirects-per-uid=: live redirects of unix clients of one uid; 0: no limit */
	unsigned int max_redirects_per_uid;
	int log_level;		       /* log-level= err|warning|notice|info|debug */
	enum datapath_mode datapath;   /* datapath= auto|kernel|userspace; default auto */
	enum fastpath_mode fastpath;   /* fastpath= counted|permanent; default counted */
};

/* "auto", "kernel" or "userspace". */
const char *datapath_mode_name(enum datapath_mode mode);
/* The mode a name gives, or -EINVAL. */
int datapath_mode_parse(const char *name);
/* "counted" or "permanent". */
const char *fastpath_mode_name(enum fastpath_mode mode);
/* The mode a name gives, or -EINVAL. */
int fastpath_mode_parse(const char *name);

struct config {
	char path[PATH_MAX];
	struct daemon_config daemon;
	struct redirect_config *redirects;
	size_t n_redirects;
};

/*
 * Load and validate a whole file. On error returns -errno and writes one line
 * "PATH:LINE: what is wrong" (or "PATH: cause" for I/O errors) into err; *out is untouched.
 */
int config_load(const char *path, struct config *out, char *err, size_t errlen);
/*
 * The same from an open stream; path names it in messages and in out->path. The stream is
 * read to its end (or to the first error) and not closed.
 */
int config_load_stream(FILE *file, const char *path, struct config *out, char *err, size_t errlen);
void config_free(struct config *cfg);

/* The [daemon] section's defaults. */
void config_daemon_defaults(struct daemon_config *d);

/*
 * socat's command line, "vsockmapd ADDRESS1 ADDRESS2": one section named "cmdline", in either
 * order (one address listens, the other connects), no control socket, no file (path ""). A
 * UNIX-LISTEN without fork serves one connection (redirect_config.once). Returns 0, or
 * -EINVAL with a one-line message in err.
 */
int config_from_addresses(const char *a, const char *b, struct config *out, char *err,
			  size_t errlen);

#endif
