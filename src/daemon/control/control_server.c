// SPDX-License-Identifier: GPL-2.0-only
/*
 * Control socket server: the listening socket (its file, group and mode), accept, and who
 * may use it: each peer's role from its credentials, and an error line to those it refuses
 * (no role, or over the client limits). An accepted client is served by control_conn.c.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include <json-c/json.h>
#include <systemd/sd-event.h>

#include "control_proto.h"
#include "control_server.h"
#include "control_server_internal.h"
#include "socket_file.h"
#include "log.h"
#include "peer_access.h"
#include "util.h"

/* Accepts per wakeup, so that a flood of clients cannot starve the rest of the loop. */
#define ACCEPT_BURST 16
/* Pause after EMFILE and friends before accepting again. */
#define ACCEPT_RETRY_USEC (1000 * 1000)

/* Best effort: one nonblocking send of an error line to a client we do not keep. */
static void refuse_client(int fd, int err, const char *text)
{
	struct json_object *resp = control_error_response(err, text);
	size_t len;
	char *line;

	if (resp && control_format_line(resp, CONTROL_RESPONSE_MAX, &line, &len) == 0) {
		if (send(fd, line, len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			log_debug("control: cannot send refusal: %s", strerror(errno));
		free(line);
	}
	json_object_put(resp);
	close(fd);
}

const char *control_role_name(enum control_role role)
{
	switch (role) {
	case CONTROL_ROLE_READ:
		return "read";
	case CONTROL_ROLE_ADMIN:
		return "admin";
	default:
		return "none";
	}
}

/* The group named in the policy: its gid, or one of the peer's supplementary groups. */
static bool peer_is_member(int fd, const struct ucred *cred, gid_t group)
{
	return cred->gid == group || peer_in_group(fd, group);
}

static enum control_role peer_role(const struct control_server *srv, int fd,
				   const struct ucred *cred)
{
	/* The daemon's own user too: one that runs unprivileged (in user space) owns it. */
	if (cred->uid == 0 || cred->uid == geteuid())
		return CONTROL_ROLE_ADMIN;
	if (srv->access.has_admin_group && peer_is_member(fd, cred, srv->access.admin_group))
		return CONTROL_ROLE_ADMIN;
	if (srv->access.has_group && peer_is_member(fd, cred, srv->access.group))
		return CONTROL_ROLE_READ;
	return CONTROL_ROLE_NONE;
}

/* "root", "root and members of group G", "root and members of groups G and A". */
static void who_may_connect(const struct control_access *a, char *buf, size_t size)
{
	if (a->has_group && a->has_admin_group)
		snprintf(buf, size, "root and members of groups %s and %s", a->group_name,
			 a->admin_group_name);
	else if (a->has_group || a->has_admin_group)
		snprintf(buf, size, "root and members of group %s",
			 a->has_group ? a->group_name : a->admin_group_name);
	else
		snprintf(buf, size, "root");
}
static void accept_client(struct control_server *srv, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	enum control_role role;
	char msg[256], who[160];

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		log_errno(LOG_WARNING, errno, "control socket %s: cannot read peer credentials",
			  srv->path);
		close(fd);
		return;
	}
	role = peer_role(srv, fd, &cred);
	if (role == CONTROL_ROLE_NONE) {
		who_may_connect(&srv->access, who, sizeof(who));
		log_notice("control socket %s: refused uid %u (pid %d): only %s may use it",
			   srv->path, (unsigned int)cred.uid, (int)cred.pid, who);
		snprintf(msg, sizeof(msg),
			 "permission denied: uid %u may not use the control socket, only %s may",
			 (unsigned int)cred.uid, who);
		refuse_client(fd, EACCES, msg);
		return;
	}
	if (srv->n_conns >= CONTROL_CLIENTS_MAX) {
		log_warn("control socket %s: refused pid %d: already %u clients connected",
			 srv->path, (int)cred.pid, srv->n_conns);
		snprintf(msg, sizeof(msg), "too many control clients (%u connected)", srv->n_conns);
		refuse_client(fd, EUSERS, msg);
		return;
	}
	/*
	 * The group may hold readers the admins do not fully trust: a reader that keeps
	 * connections open (each up to the idle timeout) must not take the admins' slots too.
	 */
	if (role == CONTROL_ROLE_READ && srv->n_read_conns >= CONTROL_CLIENTS_READ_MAX) {
		log_warn("control socket %s: refused uid %u (pid %d): read-role clients already "
			 "hold %u connections, the most they may; the other %d are kept for the "
			 "admin role",
			 srv->path, (unsigned int)cred.uid, (int)cred.pid, srv->n_read_conns,
			 CONTROL_CLIENTS_MAX - CONTROL_CLIENTS_READ_MAX);
		snprintf(msg, sizeof(msg),
			 "too many control clients of the read role (%u connected, the most they "
			 "may hold; the other %d slots are kept for the admin role)",
			 srv->n_read_conns, CONTROL_CLIENTS_MAX - CONTROL_CLIENTS_READ_MAX);
		refuse_client(fd, EUSERS, msg);
		return;
	}
	control_conn_add(srv, fd, &cred, role);
}

static int accept_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct control_server *srv = userdata;

	(void)usec;
	(void)s;
	srv->accept_retry = sd_event_source_disable_unref(srv->accept_retry);
	sd_event_source_set_enabled(srv->listen_io, SD_EVENT_ON);
	return 0;
}

static int listener_handler(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct control_server *srv = userdata;
	int cfd, i, r;

	(void)revents;
	for (i = 0; i < ACCEPT_BURST; i++) {
		cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd >= 0) {
			accept_client(srv, cfd);
			continue;
		}
		if (errno == EAGAIN)
			break;
		if (errno == ECONNABORTED)
			continue;
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			/* Level-triggered: without a pause the loop would spin on this listener. */
			log_errno(LOG_WARNING, errno,
				  "control socket %s: cannot accept, pausing for a second",
				  srv->path);
			if (srv->accept_retry)
				break;
			r = sd_event_add_time_relative(srv->event, &srv->accept_retry,
						       CLOCK_MONOTONIC, ACCEPT_RETRY_USEC, 0,
						       accept_retry, srv);
			if (r >= 0)
				sd_event_source_set_enabled(s, SD_EVENT_OFF);
			break;
		}
		log_errno(LOG_WARNING, errno, "control socket %s: accept failed", srv->path);
		break;
	}
	return 0;
}

/* The socket file's directory, and a stale file of an earlier run out of the way. */
static int prepare_socket_file(const char *path)
{
	char msg[PATH_MAX + 128];
	const char *what;
	bool removed;
	int r;

	r = socket_file_make_parents(path, msg, sizeof(msg));
	if (r < 0)
		return log_errno(LOG_ERR, r, "control socket %s: %s", path, msg);
	r = socket_file_remove_stale(path, SOCK_STREAM, &removed, &what);
	if (r == -EEXIST)
		log_err("control socket %s: the path exists and is not a socket, "
			"refusing to replace it",
			path);
	else if (r == -EADDRINUSE)
		log_err("control socket %s: another process is listening on it "
			"(is vsockmapd already running?)",
			path);
	else if (r < 0)
		log_errno(LOG_ERR, r, "control socket %s: %s", path, what);
	else if (removed)
		log_info("control socket %s: removed a stale socket file", path);
	return r;
}

int control_server_open(sd_event *event, const char *path, unsigned int mode,
			const struct control_handler *handler, void *userdata,
			struct control_server **out)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct control_server *srv;
	size_t plen = strlen(path);
	const char *file_group = NULL;
	gid_t file_gid = (gid_t)-1;
	int r;

	if (plen == 0 || plen >= sizeof(sa.sun_path)) {
		log_err("control socket \"%s\": path must have 1 to %zu bytes", path,
			sizeof(sa.sun_path) - 1);
		return -EINVAL;
	}
	memcpy(sa.sun_path, path, plen + 1);

	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return log_errno(LOG_ERR, ENOMEM, "control socket %s", path);
	srv->fd = -1;
	srv->handler = handler;
	srv->userdata = userdata;
	srv->stall_usec = CONTROL_STALL_USEC;
	srv->idle_usec = CONTROL_IDLE_USEC;
	srv->access.mode = mode;
	if (handler->access) {
		r = handler->access(userdata, &srv->access);
		if (r < 0) {
			log_errno(LOG_ERR, r, "control socket %s: no access policy", path);
			goto out_free;
		}
	}
	mode = srv->access.mode;
	/* The readers' group owns the file; without one, the admins'. */
	if (srv->access.has_group) {
		file_group = srv->access.group_name;
		file_gid = srv->access.group;
	} else if (srv->access.has_admin_group) {
		file_group = srv->access.admin_group_name;
		file_gid = srv->access.admin_group;
	}
	if (mode & ~07777u) {
		log_err("control socket %s: invalid mode %#o", path, mode);
		r = -EINVAL;
		goto out_free;
	}
	srv->path = strdup(path);
	if (!srv->path) {
		r = log_errno(LOG_ERR, ENOMEM, "control socket %s", path);
		goto out_free;
	}

	r = prepare_socket_file(path);
	if (r < 0)
		goto out_free;

	srv->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (srv->fd < 0) {
		r = log_errno(LOG_ERR, errno, "control socket %s: cannot create socket", path);
		goto out_free;
	}
	/* Mode 0000 until the group and the mode are set on that very file. */
	r = socket_file_bind(srv->fd, &sa, &srv->file);
	if (r < 0) {
		r = log_errno(LOG_ERR, r, "control socket %s: cannot bind%s", path,
			      r == -ESTALE ? ": the file there is not the socket just bound" : "");
		goto out_unlink;
	}
	r = socket_file_set_access(path, &srv->file, (uid_t)-1, file_gid, mode, NULL);
	if (r < 0) {
		if (r == -ESTALE)
			log_errno(LOG_ERR, r, "control socket %s: replaced since the bind", path);
		else if (file_group)
			log_errno(LOG_ERR, r,
				  "control socket %s: cannot give it group %s and mode %#o", path,
				  file_group, mode);
		else
			log_errno(LOG_ERR, r, "control socket %s: cannot set mode %#o", path, mode);
		goto out_unlink;
	}
	if (listen(srv->fd, SOMAXCONN) < 0) {
		r = log_errno(LOG_ERR, errno, "control socket %s: cannot listen", path);
		goto out_unlink;
	}

	srv->event = sd_event_ref(event);
	r = sd_event_add_io(event, &srv->listen_io, srv->fd, EPOLLIN, listener_handler, srv);
	if (r < 0) {
		log_errno(LOG_ERR, r, "control socket %s: cannot add it to the event loop", path);
		goto out_unref;
	}
	if (srv->access.has_admin_group)
		log_info("control socket %s: listening (mode %04o, group %s, admin group %s)", path,
			 mode, file_group, srv->access.admin_group_name);
	else if (file_group)
		log_info("control socket %s: listening (mode %04o, group %s)", path, mode,
			 file_group);
	else
		log_info("control socket %s: listening (mode %04o)", path, mode);
	*out = srv;
	return 0;

out_unref:
	sd_event_source_disable_unref(srv->listen_io);
	sd_event_unref(srv->event);
out_unlink:
	socket_file_unlink_if_ours(path, &srv->file);
	close(srv->fd);
out_free:
	free(srv->path);
	free(srv);
	return r;
}

void control_server_close(struct control_server *srv)
{
	int r;

	if (!srv)
		return;
	/* control_conn_free() unlinks each one from the list first. */
	while (srv->conns)
		control_conn_free(srv->conns); /* NOLINT(clang-analyzer-unix.Malloc) */
	sd_event_source_disable_unref(srv->accept_retry);
	sd_event_source_disable_unref(srv->listen_io);
	close(srv->fd);
	/* A successor daemon may already have replaced the file: only remove our own. */
	r = socket_file_unlink_if_ours(srv->path, &srv->file);
	if (r == -ESTALE)
		log_notice("control socket %s: replaced since this daemon bound it; left in place",
			   srv->path);
	else if (r < 0 && r != -ENOENT)
		log_errno(LOG_WARNING, r, "control socket %s: cannot remove it", srv->path);
	sd_event_unref(srv->event);
	free(srv->path);
	free(srv);
}

unsigned int control_server_client_count(const struct control_server *srv)
{
	return srv ? srv->n_conns : 0;
}

size_t control_server_answer_bytes(const struct control_server *srv)
{
	return srv ? srv->answer_bytes : 0;
}

size_t control_server_read_answer_bytes(const struct control_server *srv)
{
	return srv ? srv->read_answer_bytes : 0;
}

void control_server_set_timeouts(struct control_server *srv, uint64_t stall_usec,
				 uint64_t idle_usec)
{
	struct control_conn *conn;

	srv->stall_usec = stall_usec;
	srv->idle_usec = idle_usec;
	for (conn = srv->conns; conn; conn = conn->next)
		control_conn_arm_timer(conn);
}
