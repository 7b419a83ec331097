/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The daemon's control socket: a unix stream listener on the sd-event loop that reads one
 * JSON request per line and answers each with one line (docs/control-protocol.md).
 *
 * Access: the socket file has the mode and group of the handler's policy. At accept, a peer
 * gets a role from its SO_PEERCRED credentials: admin when its uid is 0 or the daemon's own,
 * or when the policy's admin group is its gid or one of its supplementary groups
 * (SO_PEERGROUPS); else read when the policy's group is. Others get an EACCES error line and
 * are closed. What each role may do is the handler's to decide.
 */
#ifndef VSOCKMAP_CONTROL_SERVER_H
#define VSOCKMAP_CONTROL_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

struct json_object;
struct control_server;

#define CONTROL_SOCKET_MODE_DEFAULT 0600
/*
 * Further clients are accepted, sent an EUSERS error line and closed. Read-role clients
 * may take at most CONTROL_CLIENTS_READ_MAX of the slots: the rest are kept for the admin
 * role, so that idle connections of a reader never lock root and the admins out.
 */
#define CONTROL_CLIENTS_MAX	 64
#define CONTROL_CLIENTS_READ_MAX 56
#define CONTROL_GROUP_NAME_MAX	 64

/*
 * The most bytes of unsent answers held for all clients together: four answers of the
 * largest size (CONTROL_RESPONSE_MAX), not 64 of them. Read-role clients together may hold
 * at most CONTROL_ANSWER_BYTES_READ_MAX of it, two such answers: the rest is kept for the
 * admin role, so that readers who ask for big answers and read them slowly (or never) cannot
 * make an administrator's answer fail. An answer that would pass its limit is replaced by an
 * ENOBUFS error line that names the limit; answers of at most CONTROL_ANSWER_SMALL bytes
 * (errors among them) always pass, so the total stays below CONTROL_ANSWER_BYTES_MAX plus
 * CONTROL_CLIENTS_MAX of those, and an answer of any size to an admin fits whenever no
 * other admin's is pending.
 */
#define CONTROL_ANSWER_BYTES_MAX      (64 * 1024 * 1024)
#define CONTROL_ANSWER_BYTES_READ_MAX (32 * 1024 * 1024)
#define CONTROL_ANSWER_SMALL	      4096


/*
 * A client with an answer pending is closed when none of it has been read for
 * CONTROL_STALL_USEC; one with nothing pending, when it has sent no byte for
 * CONTROL_IDLE_USEC (a blank line is a keep-alive). So a client that stops reading cannot
 * hold its share of CONTROL_ANSWER_BYTES_MAX, nor an idle one a slot, for good.
 */
#define CONTROL_STALL_USEC (30 * USEC_PER_SEC)
#define CONTROL_IDLE_USEC  (600 * USEC_PER_SEC)

/* What a client may do, decided once at accept. Ordered: a higher role may do more. */
enum control_role {
	CONTROL_ROLE_NONE, /* refused at accept, never served */
	CONTROL_ROLE_READ,
	CONTROL_ROLE_ADMIN,
};

/* "read" or "admin" ("none" for CONTROL_ROLE_NONE). */
const char *control_role_name(enum control_role role);

/* Who sent a request, from SO_PEERCRED when it connected. */
struct control_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	enum control_role role;
};

/* Who may connect, besides root and the daemon's own uid (both admin). */
struct control_access {
	unsigned int mode; /* of the socket file */
	bool has_group;	   /* members of group have the read role */
	gid_t group;
	char group_name[CONTROL_GROUP_NAME_MAX]; /* for messages */
	bool has_admin_group;			 /* members of admin_group have the admin role */
	gid_t admin_group;
	char admin_group_name[CONTROL_GROUP_NAME_MAX];
	/* The socket file's group: group if set, else admin_group, else root's. */
};

struct control_handler {
	/*
	 * Optional; called once by control_server_open() with *access preset to the mode
	 * argument and no group. Return 0, or -errno to make the open fail.
	 */
	int (*access)(void *userdata, struct control_access *access);
	/*
	 * Called for each request whose "command" is a non-empty string; request is the
	 * whole parsed object (borrowed). On success return >= 0 and set *response to a JSON
	 * object holding the payload members (ownership passes to the server, which adds
	 * "ok":true), or leave it NULL for a bare {"ok":true}. On failure return -errno and
	 * optionally set *error_text to a malloc'd message, which the server frees; without
	 * one the server sends strerror(), or 'unknown command "NAME"' for -EOPNOTSUPP. A
	 * *response set on failure is freed and ignored. It runs on the event loop and must
	 * not block.
	 */
	int (*handle)(void *userdata, const struct control_peer *peer, const char *command,
		      struct json_object *request, struct json_object **response,
		      char **error_text);
};

/*
 * Create the parent directories of path (mode 0755) if missing, replace a stale socket
 * file at path (one nobody listens on), bind, set the file's group and mode, listen and
 * serve on event. mode applies unless handler->access sets another. Returns 0 and *out,
 * or -errno after logging the cause: -EADDRINUSE when another process listens on path,
 * -EEXIST when path exists and is not a socket.
 */
int control_server_open(sd_event *event, const char *path, unsigned int mode,
			const struct control_handler *handler, void *userdata,
			struct control_server **out);

/* Close all clients and the listener; unlink the socket file if it is still ours. NULL is fine. */
void control_server_close(struct control_server *srv);

/* Other stall and idle timeouts than CONTROL_STALL_USEC and CONTROL_IDLE_USEC (tests). */
void control_server_set_timeouts(struct control_server *srv, uint64_t stall_usec,
				 uint64_t idle_usec);

/* Clients currently connected (refused ones are never counted). */
unsigned int control_server_client_count(const struct control_server *srv);

/* Bytes of answers queued and not yet sent, for all clients together. */
size_t control_server_answer_bytes(const struct control_server *srv);
/* Of those, the read-role clients' (limited to CONTROL_ANSWER_BYTES_READ_MAX). */
size_t control_server_read_answer_bytes(const struct control_server *srv);

#endif
