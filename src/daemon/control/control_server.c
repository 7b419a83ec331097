// SPDX-License-Identifier: GPL-2.0-only
/*
 * Control socket server. Single-threaded on sd-event: every socket is nonblocking, a
 * client's answer that does not fit into the socket buffer waits for EPOLLOUT, and while an
 * answer is pending that client's input is not read, so a client that never reads costs
 * at most one answer plus one read chunk of memory. All clients' unsent answers together
 * stay under CONTROL_ANSWER_BYTES_MAX (conn_queue()). A client that reads none of its
 * answer for the stall timeout, or sends no request for the idle timeout, is closed
 * (conn_timer()), so that neither the answer memory nor the client slots stay held.
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
#include "socket_file.h"
#include "log.h"
#include "peer_access.h"
#include "util.h"

#define READ_CHUNK (16 * 1024)
/* Accepts per wakeup, so that a flood of clients cannot starve the rest of the loop. */
#define ACCEPT_BURST 16
/* Pause after EMFILE and friends before accepting again. */
#define ACCEPT_RETRY_USEC (1000 * 1000)
/* Bytes of a command name quoted back in messages. */
#define COMMAND_SHOW_MAX 64

struct control_conn {
	struct control_server *srv;
	struct control_conn *prev, *next;
	int fd;
	sd_event_source *io;
	sd_event_source *timer; /* the stall or idle deadline, from last_activity */
	uint64_t last_activity; /* CLOCK_MONOTONIC usec: a byte read or sent */
	uint64_t id;
	struct control_peer peer;
	struct line_buffer in;
	char *out; /* answer not yet fully sent */
	size_t out_len, out_off;
	bool close_after_flush; /* after an oversize line: answer, then hang up */
};

struct control_server {
	sd_event *event;
	char *path;
	int fd;
	struct socket_file_id file; /* ours: close() never unlinks a successor's socket */
	sd_event_source *listen_io;
	sd_event_source *accept_retry;
	const struct control_handler *handler;
	void *userdata;
	struct control_access access;
	struct control_conn *conns;
	unsigned int n_conns;
	unsigned int n_read_conns; /* of n_conns, those of the read role */
	uint64_t next_conn_id;
	size_t answer_bytes; /* the conns' out_len, summed */
	uint64_t stall_usec, idle_usec;
};

static void conn_free(struct control_conn *conn)
{
	struct control_server *srv = conn->srv;

	if (conn->prev)
		conn->prev->next = conn->next;
	else
		srv->conns = conn->next;
	if (conn->next)
		conn->next->prev = conn->prev;
	srv->n_conns--;
	if (conn->peer.role == CONTROL_ROLE_READ)
		srv->n_read_conns--;

	/* sd-event defers the actual free when this is the source being dispatched. */
	sd_event_source_disable_unref(conn->io);
	sd_event_source_disable_unref(conn->timer);
	close(conn->fd);
	line_buffer_free(&conn->in);
	srv->answer_bytes -= conn->out_len;
	free(conn->out);
	free(conn);
}

static void conn_active(struct control_conn *conn)
{
	sd_event_now(conn->srv->event, CLOCK_MONOTONIC, &conn->last_activity);
}

/* While an answer waits, the stall timeout counts; else the idle one. */
static uint64_t conn_deadline(const struct control_conn *conn)
{
	const struct control_server *srv = conn->srv;

	return conn->last_activity + (conn->out ? srv->stall_usec : srv->idle_usec);
}

static int conn_arm_timer(struct control_conn *conn)
{
	int r = sd_event_source_set_time(conn->timer, conn_deadline(conn));

	return r < 0 ? r : sd_event_source_set_enabled(conn->timer, SD_EVENT_ONESHOT);
}

/* Send what is pending. Returns 0 (done or would block) or -errno. */
static int conn_flush(struct control_conn *conn)
{
	ssize_t n;

	while (conn->out_off < conn->out_len) {
		n = send(conn->fd, conn->out + conn->out_off, conn->out_len - conn->out_off,
			 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN)
				return 0;
			return -errno;
		}
		conn->out_off += n;
		conn_active(conn);
	}
	conn->srv->answer_bytes -= conn->out_len;
	free(conn->out);
	conn->out = NULL;
	conn->out_len = conn->out_off = 0;
	return 0;
}

/*
 * An answer that would take the unsent answers of all clients past the limit is replaced by
 * an error: a few clients that never read must not make the daemon hold 64 full answers.
 * The refused client may ask again once others have read theirs.
 */
static int over_answer_limit(struct control_conn *conn, size_t len, char **line, size_t *line_len)
{
	struct control_server *srv = conn->srv;
	struct json_object *err;
	char msg[256];
	int r;

	log_warn("control client %" PRIu64 " (pid %d): answer of %zu bytes refused: unsent "
		 "answers already hold %zu bytes, the limit is %d",
		 conn->id, (int)conn->peer.pid, len, srv->answer_bytes, CONTROL_ANSWER_BYTES_MAX);
	snprintf(msg, sizeof(msg),
		 "answer of %zu bytes not sent: unsent answers to other control clients already "
		 "hold %zu bytes of the daemon's limit of %d; ask again once they have read them",
		 len, srv->answer_bytes, CONTROL_ANSWER_BYTES_MAX);
	err = control_error_response(ENOBUFS, msg);
	if (!err)
		return -ENOMEM;
	r = control_format_line(err, CONTROL_RESPONSE_MAX, line, line_len);
	json_object_put(err);
	return r;
}

static int conn_queue(struct control_conn *conn, struct json_object *resp)
{
	size_t len;
	char *line, *out;
	int r;

	r = control_format_line(resp, CONTROL_RESPONSE_MAX, &line, &len);
	if (r == -EMSGSIZE) {
		struct json_object *err;

		log_warn("control client %" PRIu64
			 ": answer exceeds %d bytes, sending an error instead",
			 conn->id, CONTROL_RESPONSE_MAX);
		err = control_error_response(EMSGSIZE, "response too large for one line");
		if (!err)
			return -ENOMEM;
		r = control_format_line(err, CONTROL_RESPONSE_MAX, &line, &len);
		json_object_put(err);
	}
	if (r < 0)
		return r;
	if (len > CONTROL_ANSWER_SMALL &&
	    conn->srv->answer_bytes + len > (size_t)CONTROL_ANSWER_BYTES_MAX) {
		free(line);
		r = over_answer_limit(conn, len, &line, &len);
		if (r < 0)
			return r;
	}

	conn->srv->answer_bytes += len;
	if (!conn->out) {
		conn->out = line;
		conn->out_len = len;
		conn->out_off = 0;
		return 0;
	}
	out = realloc(conn->out, conn->out_len + len);
	if (!out) {
		conn->srv->answer_bytes -= len;
		free(line);
		return -ENOMEM;
	}
	memcpy(out + conn->out_len, line, len);
	free(line);
	conn->out = out;
	conn->out_len += len;
	return 0;
}

static int conn_queue_error(struct control_conn *conn, int err, const char *text)
{
	struct json_object *resp = control_error_response(err, text);
	int r;

	if (!resp)
		return -ENOMEM;
	r = conn_queue(conn, resp);
	json_object_put(resp);
	return r;
}

/* {"ok":true} followed by the handler's members, so "ok" always comes first. */
static struct json_object *make_ok_response(struct json_object *payload)
{
	struct json_object *resp = json_object_new_object();

	if (!resp)
		return NULL;
	if (json_object_object_add(resp, "ok", json_object_new_boolean(1)) < 0)
		goto fail;
	if (payload) {
		json_object_object_foreach(payload, key, val)
		{
			if (strcmp(key, "ok") == 0)
				continue;
			if (json_object_object_add(resp, key, json_object_get(val)) < 0) {
				json_object_put(val);
				goto fail;
			}
		}
	}
	return resp;
fail:
	json_object_put(resp);
	return NULL;
}

static int conn_handle_line(struct control_conn *conn, const char *line, size_t len)
{
	struct control_server *srv = conn->srv;
	struct json_object *req = NULL, *payload = NULL, *resp;
	char *error_text = NULL;
	const char *command;
	char msg[256];
	int r;

	r = control_request_decode(line, len, &req, &command, msg, sizeof(msg));
	if (r == -EPROTO || r == -EINVAL) {
		log_debug("control client %" PRIu64 ": %s", conn->id, msg);
		return conn_queue_error(conn, -r, msg);
	}
	if (r < 0)
		return r;
	log_debug("control client %" PRIu64 " (pid %d): %.*s", conn->id, (int)conn->peer.pid,
		  COMMAND_SHOW_MAX, command);

	r = srv->handler->handle(srv->userdata, &conn->peer, command, req, &payload, &error_text);
	if (r < 0) {
		const char *text = error_text;

		if (!text && r == -EOPNOTSUPP) {
			snprintf(msg, sizeof(msg), "unknown command \"%.*s\"", COMMAND_SHOW_MAX,
				 command);
			text = msg;
		}
		r = conn_queue_error(conn, r, text);
		goto out;
	}
	if (payload && !json_object_is_type(payload, json_type_object)) {
		log_err("control: handler for \"%.*s\" returned a JSON %s, not an object",
			COMMAND_SHOW_MAX, command,
			json_type_to_name(json_object_get_type(payload)));
		r = conn_queue_error(conn, EIO, "internal error: malformed handler result");
		goto out;
	}
	resp = make_ok_response(payload);
	if (!resp) {
		r = -ENOMEM;
		goto out;
	}
	r = conn_queue(conn, resp);
	json_object_put(resp);
out:
	free(error_text);
	json_object_put(payload);
	json_object_put(req);
	return r;
}

/*
 * Answer buffered requests one at a time, stopping while an answer is pending. Returns 0
 * to keep the client, or -errno (or 1 for an orderly end) to drop it.
 */
static int conn_process(struct control_conn *conn)
{
	size_t len;
	char *line;
	int r;

	r = conn_flush(conn);
	if (r < 0)
		return r;
	while (!conn->out && !conn->close_after_flush) {
		r = line_buffer_next(&conn->in, &line, &len);
		if (r == 0)
			break;
		if (r == -EMSGSIZE) {
			char msg[96];

			log_debug("control client %" PRIu64 ": request line longer than %d bytes",
				  conn->id, CONTROL_REQUEST_MAX);
			snprintf(msg, sizeof(msg), "request line longer than %d bytes",
				 CONTROL_REQUEST_MAX);
			conn->close_after_flush = true;
			r = conn_queue_error(conn, EMSGSIZE, msg);
		} else if (r > 0) {
			/* Blank lines are keep-alives of an interactive session (socat). */
			if (len == strspn(line, " \t\r"))
				continue;
			r = conn_handle_line(conn, line, len);
		}
		if (r < 0)
			return r;
		r = conn_flush(conn);
		if (r < 0)
			return r;
	}
	if (conn->out)
		return 0;
	if (conn->close_after_flush || (conn->in.eof && line_buffer_pending(&conn->in) == 0))
		return 1;
	return 0;
}

static int conn_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct control_conn *conn = userdata;
	int r;

	(void)s;
	if (usec < conn_deadline(conn)) {
		/* Some bytes moved since the timer was set: wait from then. */
		r = conn_arm_timer(conn);
		if (r >= 0)
			return 0;
		log_errno(LOG_ERR, r, "control client %" PRIu64 ": cannot set its timer", conn->id);
	} else if (conn->out)
		log_warn("control client %" PRIu64 " (pid %d, uid %u): read none of its answer "
			 "(%zu bytes left) in %" PRIu64 " s; closing it",
			 conn->id, (int)conn->peer.pid, (unsigned int)conn->peer.uid,
			 conn->out_len - conn->out_off, conn->srv->stall_usec / USEC_PER_SEC);
	else
		log_notice("control client %" PRIu64 " (pid %d, uid %u): no request in %" PRIu64
			   " s; closing it",
			   conn->id, (int)conn->peer.pid, (unsigned int)conn->peer.uid,
			   conn->srv->idle_usec / USEC_PER_SEC);
	conn_free(conn);
	return 0;
}

static int conn_handler(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct control_conn *conn = userdata;
	long n;
	int r;

	(void)s;
	if ((revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !conn->out && !conn->in.eof &&
	    !conn->close_after_flush) {
		n = line_buffer_fill(&conn->in, fd, READ_CHUNK);
		if (n > 0)
			conn_active(conn);
		if (n < 0 && n != -EAGAIN) {
			log_debug("control client %" PRIu64 ": read failed: %s", conn->id,
				  strerror((int)-n));
			conn_free(conn);
			return 0;
		}
	}

	r = conn_process(conn);
	if (r < 0 && r != -EPIPE && r != -ECONNRESET)
		log_debug("control client %" PRIu64 ": %s", conn->id, strerror(-r));
	if (r != 0) {
		conn_free(conn);
		return 0;
	}
	r = sd_event_source_set_io_events(conn->io, conn->out ? EPOLLOUT : EPOLLIN);
	if (r >= 0)
		r = conn_arm_timer(conn);
	if (r < 0) {
		log_errno(LOG_ERR, r, "control client %" PRIu64 ": cannot update its event mask",
			  conn->id);
		conn_free(conn);
	}
	return 0;
}

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
	struct control_conn *conn;
	enum control_role role;
	char msg[256], who[160];
	int r;

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

	conn = calloc(1, sizeof(*conn));
	if (!conn) {
		log_err("control socket %s: out of memory for a new client", srv->path);
		close(fd);
		return;
	}
	conn->srv = srv;
	conn->fd = fd;
	conn->id = ++srv->next_conn_id;
	conn->peer =
	    (struct control_peer){.pid = cred.pid, .uid = cred.uid, .gid = cred.gid, .role = role};
	line_buffer_init(&conn->in, CONTROL_REQUEST_MAX);
	conn_active(conn);
	r = sd_event_add_io(srv->event, &conn->io, fd, EPOLLIN, conn_handler, conn);
	if (r >= 0)
		r = sd_event_add_time(srv->event, &conn->timer, CLOCK_MONOTONIC,
				      conn_deadline(conn), 0, conn_timer, conn);
	if (r < 0) {
		log_errno(LOG_ERR, r, "control socket %s: cannot watch a new client", srv->path);
		sd_event_source_disable_unref(conn->io);
		close(fd);
		free(conn);
		return;
	}
	conn->next = srv->conns;
	if (srv->conns)
		srv->conns->prev = conn;
	srv->conns = conn;
	srv->n_conns++;
	if (role == CONTROL_ROLE_READ)
		srv->n_read_conns++;
	log_debug("control client %" PRIu64 " connected (pid %d, uid %u, role %s)", conn->id,
		  (int)cred.pid, (unsigned int)cred.uid, control_role_name(role));
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
	/* conn_free() unlinks each one from the list first. */
	while (srv->conns)
		conn_free(srv->conns); /* NOLINT(clang-analyzer-unix.Malloc) */
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

void control_server_set_timeouts(struct control_server *srv, uint64_t stall_usec,
				 uint64_t idle_usec)
{
	struct control_conn *conn;

	srv->stall_usec = stall_usec;
	srv->idle_usec = idle_usec;
	for (conn = srv->conns; conn; conn = conn->next)
		conn_arm_timer(conn);
}
