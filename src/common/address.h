/* SPDX-License-Identifier: GPL-2.0-only */
/* socat-style address parsing: "UNIX-LISTEN:/run/x.sock,mode=0660", "VSOCK-CONNECT:2:1234". */
#ifndef VSOCKMAP_ADDRESS_H
#define VSOCKMAP_ADDRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/un.h>

enum address_kind {
	ADDRESS_UNIX_LISTEN,   /* stream listener, one redirect per accepted connection */
	ADDRESS_UNIX_RECV,     /* bound dgram socket, datagrams go to one target */
	ADDRESS_UNIX_CONNECT,  /* connect to a unix stream socket */
	ADDRESS_VSOCK_CONNECT, /* connect to CID:PORT */
	ADDRESS_TCP_CONNECT,   /* connect to a numeric IPv4 or [IPv6] address and port */
	ADDRESS_VSOCK_LISTEN,  /* vsock stream listener on PORT, any CID (host to guest) */
	ADDRESS_TCP_LISTEN,    /* TCP listener on PORT; bind= picks the address */
};

#define ADDRESS_PATH_MAX sizeof(((struct sockaddr_un *)0)->sun_path)

struct address {
	enum address_kind kind;
	char path[ADDRESS_PATH_MAX]; /* UNIX-*: NUL-terminated, strlen < sizeof(sun_path) */
	uint32_t cid;		     /* VSOCK-CONNECT */
	uint32_t port;		     /* VSOCK-*, TCP-* */
	int inet_family;	     /* TCP-*: AF_INET or AF_INET6 */
	unsigned char inet_addr[16]; /* TCP-*: network order; TCP-LISTEN: 0 = any */
	int sock_type;		     /* SOCK_STREAM, SOCK_DGRAM (UNIX-RECV) or SOCK_SEQPACKET */
	bool has_mode;
	mode_t mode; /* mode=0660: socket file mode */
	bool has_user;
	uid_t user; /* user=NAME|UID: socket file owner */
	bool has_group;
	gid_t group; /* group=NAME|GID: socket file group */
	/* connect-timeout=SECONDS (may be fractional); 0 = the daemon's default */
	unsigned int connect_timeout_ms;
	int backlog; /* backlog=N; 0 = default */
	/* max-children=N (max-connections=N): live connections at most; 0 = no limit */
	unsigned int max_children;
	bool fork; /* fork: every connection (a config file's sections always do) */
	bool reuseaddr;	   /* reuseaddr: SO_REUSEADDR on a TCP or vsock listener */
	bool unlink_early; /* unlink-early: remove whatever is at the path before bind() */
	int rcvbuf, sndbuf; /* rcvbuf=, sndbuf=: SO_RCVBUF/SO_SNDBUF on its connections; 0: default */
};

/*
 * Parse one socat-style address. Returns 0, or -EINVAL (-ENOMEM) with a message that names
 * the offending part in err (no file/line prefix, no newline; the caller adds the prefix).
 * user= and group= names are resolved here (getpwnam_r/getgrnam_r). *out is only written
 * on success.
 */
int address_parse(const char *text, struct address *out, char *err, size_t errlen);

/*
 * Format an address back into socat syntax ("UNIX-LISTEN:/run/x.sock", "VSOCK-CONNECT:2:1234"):
 * options are left out except ",type=seqpacket". Returns 0, -ENOSPC if buf is too small, or
 * -EINVAL for an unknown kind.
 */
int address_format(const struct address *addr, char *buf, size_t len);

/*
 * Same socket, same options: a reload leaves such a section alone. max-children is not
 * compared: a reload changes it in place.
 */
bool address_equal(const struct address *a, const struct address *b);

bool address_is_listener(const struct address *addr);
/* UNIX-LISTEN, VSOCK-LISTEN or TCP-LISTEN: accepts stream connections. */
bool address_is_stream_listener(const struct address *addr);
/* UNIX-LISTEN or UNIX-RECV: has a socket file. */
bool address_has_file(const struct address *addr);
bool address_is_target(const struct address *addr);

/* "UNIX-LISTEN", "VSOCK-CONNECT", ...: the canonical keyword of a kind. */
const char *address_kind_name(enum address_kind kind);

/*
 * Check a socket path: not empty, fits sun_path with its NUL, no control characters, no
 * surrounding whitespace. Returns 0 or -EINVAL with the reason in err.
 */
int address_check_path(const char *path, char *err, size_t errlen);

/*
 * Parse "SECONDS" (decimal, fractional allowed, at most 3600) into milliseconds, rounding up.
 * name is the key or option the value belongs to, for the message. 0 is rejected unless
 * allow_zero. Returns 0 or -EINVAL with the reason in err.
 */
int address_parse_seconds(const char *name, const char *text, bool allow_zero, unsigned int *ms,
			  char *err, size_t errlen);

/*
 * A user (what is "user") or group ("group") given as a name or a number; names are looked
 * up with getpwnam_r()/getgrnam_r(). (uid_t)-1 is refused: chown() reads it as "unchanged".
 * Returns 0 and *id, or -EINVAL (-ENOMEM) with the reason in err.
 */
int address_parse_owner(const char *what, const char *text, uint32_t *id, char *err, size_t errlen);

/*
 * The entry of names closest to word (case-insensitive, edit distance <= 2), for
 * "did you mean" hints; NULL when none is close.
 */
const char *address_closest_name(const char *word, const char *const *names, size_t n);

#endif
