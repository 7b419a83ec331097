/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The daemon's control socket: a unix stream listener on the sd-event loop that reads one
 * JSON request per line and answers each with one line (docs/control-protocol.md).
 *
 * Access: only peers whose SO_PEERCRED uid is 0 are served; others get an EACCES error line
 * and are closed. A group= option to admit a group of operators is planned.
 */
#ifndef VSOCKMAP_CONTROL_SERVER_H
#define VSOCKMAP_CONTROL_SERVER_H

#include <systemd/sd-event.h>

struct json_object;
struct control_server;

#define CONTROL_SOCKET_MODE_DEFAULT 0600
/* Further clients are accepted, sent an EUSERS error line and closed. */
#define CONTROL_CLIENTS_MAX 64

/*
 * Called for each request whose "command" is a non-empty string; request is the whole
 * parsed object (borrowed). On success return >= 0 and set *response to a JSON object
 * holding the payload members (ownership passes to the server, which adds "ok":true), or
 * leave it NULL for a bare {"ok":true}. On failure return -errno and optionally set
 * *error_text to a malloc'd message, which the server frees; without one the server sends
 * strerror(), or 'unknown command "NAME"' for -EOPNOTSUPP. A *response set on failure is
 * freed and ignored. The handler runs on the event loop and must not block.
 */
typedef int (*control_handler_t)(void *userdata, const char *command, struct json_object *request,
				 struct json_object **response, char **error_text);

/*
 * Create the parent directories of path (mode 0755) if missing, replace a stale socket
 * file at path (one nobody listens on), bind, chmod to mode, listen and serve on event.
 * Returns 0 and *out, or -errno after logging the cause: -EADDRINUSE when another process
 * listens on path, -EEXIST when path exists and is not a socket.
 */
int control_server_open(sd_event *event, const char *path, unsigned int mode,
			control_handler_t handler, void *userdata, struct control_server **out);

/* Close all clients and the listener; unlink the socket file if it is still ours. NULL is fine. */
void control_server_close(struct control_server *srv);

/* Clients currently connected (refused ones are never counted). */
unsigned int control_server_client_count(const struct control_server *srv);

#endif
