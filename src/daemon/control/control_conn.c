// SPDX-License-Identifier: GPL-2.0-only
/*
 * One control client's connection: its requests read line by line and answered through the
 * handler table, the answers queued within their budgets and sent, and its timers. The
 * listening socket and who may connect are control_server.c's. Single-threaded on sd-event,
 * sharing the loop with the data path, which must never wait long for it:
 *  - One dispatch answers at most REQUESTS_PER_DISPATCH requests of a client, fewer once
 *    their answers pass ANSWER_BYTES_PER_DISPATCH; the rest of
 *    what it sent waits in its line buffer (its socket is not read meanwhile) for the next
 *    epoll_wait(), so that every other source that is ready runs in between
 *    (conn_process(), conn_settle()). Every source keeps the data path's priority: sd-event
 *    dispatches the ready sources of one priority oldest first, so neither side can starve
 *    the other (a lower one for control would let busy redirects, or a client looping on
 *    connect() at its max-redirects-per-uid, hold off every administrator).
 *  - Every socket is nonblocking, a client's answer that does not fit into the socket buffer
 *    waits for EPOLLOUT, and while an answer is pending that client's input is not read, so a
 *    client that never reads costs at most one answer plus one read chunk of memory.
 *  - All clients' unsent answers together stay under CONTROL_ANSWER_BYTES_MAX, and those of
 *    read-role clients under CONTROL_ANSWER_BYTES_READ_MAX, so that the rest is kept for the
 *    admin role (conn_queue()).
 *  - A client that reads none of its answer for the stall timeout, or sends no request for
 *    the idle timeout, is closed (conn_timer()), so that neither the answer memory nor the
 *    client slots stay held.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <json-c/json.h>
#include <systemd/sd-event.h>

#include "control_proto.h"
#include "control_server.h"
#include "control_server_internal.h"
#include "log.h"
#include "util.h"

#define READ_CHUNK (16 * 1024)
/* Bytes of a command name quoted back in messages. */
#define COMMAND_SHOW_MAX 64
/*
 * Requests of one client answered in one dispatch. A list may cost a millisecond or more
 * with thousands of redirects, and a client may send hundreds of requests in one write: a
 * few per turn keep the loop's stall short whatever it sends, while a burst of small
 * requests (vsockmapctl sends one per connection) is still answered at once.
 */
#define REQUESTS_PER_DISPATCH 4
/*
 * And no further request in a dispatch once its answers passed this many bytes: what an
 * answer costs to build (a list: every visible redirect asked, then JSON made and printed)
 * grows with its length, about 7 ms per 387 KB (1,000 redirects) on the host, so a client
 * listing many redirects gets one list a turn, not four.
 */
#define ANSWER_BYTES_PER_DISPATCH (64 * 1024)

/* Count bytes of conn's unsent answers in (delta > 0) or out of its budgets. */
static void conn_held(struct control_conn *conn, ssize_t delta)
{
	struct control_server *srv = conn->srv;

	srv->answer_bytes += (size_t)delta;
	if (conn->peer.role == CONTROL_ROLE_READ)
		srv->read_answer_bytes += (size_t)delta;
}

void control_conn_free(struct control_conn *conn)
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
	conn_held(conn, -(ssize_t)conn->out_len);
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

int control_conn_arm_timer(struct control_conn *conn)
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
	conn_held(conn, -(ssize_t)conn->out_len);
	free(conn->out);
	conn->out = NULL;
	conn->out_len = conn->out_off = 0;
	return 0;
}

/*
 * An answer over CONTROL_ANSWER_SMALL that would take the unsent answers past a limit is
 * replaced by an error: a few clients that never read must not make the daemon hold 64 full
 * answers, nor readers the admins' share. Returns the limit it would pass (0: none) and its
 * text for messages.
 */
static size_t answer_over_limit(const struct control_conn *conn, size_t len, size_t *held,
				const char **whose)
{
	const struct control_server *srv = conn->srv;

	if (len <= CONTROL_ANSWER_SMALL)
		return 0;
	if (conn->peer.role == CONTROL_ROLE_READ &&
	    srv->read_answer_bytes + len > (size_t)CONTROL_ANSWER_BYTES_READ_MAX) {
		*held = srv->read_answer_bytes;
		*whose = "read-role control clients";
		return CONTROL_ANSWER_BYTES_READ_MAX;
	}
	if (srv->answer_bytes + len > (size_t)CONTROL_ANSWER_BYTES_MAX) {
		*held = srv->answer_bytes;
		*whose = "all control clients";
		return CONTROL_ANSWER_BYTES_MAX;
	}
	return 0;
}

/*
 * The ENOBUFS line sent instead of an answer over a limit. The refused client may ask again
 * once the others have read theirs.
 */
static int refuse_answer(struct control_conn *conn, size_t len, size_t limit, size_t held,
			 const char *whose, char **line, size_t *line_len)
{
	bool read_limit = limit == CONTROL_ANSWER_BYTES_READ_MAX;
	struct json_object *err;
	char msg[320];
	int r;

	log_warn("control client %" PRIu64 " (pid %d, uid %u, role %s): answer of %zu bytes "
		 "refused: unsent answers to %s already hold %zu bytes, the limit is %zu%s",
		 conn->id, (int)conn->peer.pid, (unsigned int)conn->peer.uid,
		 control_role_name(conn->peer.role), len, whose, held, limit,
		 read_limit ? " (the rest is kept for the admin role)" : "");
	if (read_limit)
		snprintf(msg, sizeof(msg),
			 "answer of %zu bytes not sent: unsent answers to read-role control "
			 "clients already hold %zu bytes of the %zu they may hold together (the "
			 "rest is kept for the admin role); ask again once they have read them",
			 len, held, limit);
	else
		snprintf(msg, sizeof(msg),
			 "answer of %zu bytes not sent: unsent answers to other control clients "
			 "already hold %zu bytes of the daemon's limit of %zu; ask again once they "
			 "have read them",
			 len, held, limit);
	err = control_error_response(ENOBUFS, msg);
	if (!err)
		return -ENOMEM;
	r = control_format_line(err, CONTROL_RESPONSE_MAX, line, line_len);
	json_object_put(err);
	return r;
}

static int conn_queue(struct control_conn *conn, struct json_object *resp)
{
	size_t len, limit, held;
	const char *whose;
	char *line, *out;
	int r;

	r = control_format_line(resp, CONTROL_RESPONSE_MAX, &line, &len);
	/* What this turn spent building it, whatever is sent in its place (conn_process()). */
	conn->turn_bytes += r == -EMSGSIZE ? CONTROL_RESPONSE_MAX : r < 0 ? 0 : len;
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
	limit = answer_over_limit(conn, len, &held, &whose);
	if (limit) {
		free(line);
		r = refuse_answer(conn, len, limit, held, whose, &line, &len);
		if (r < 0)
			return r;
	}

	conn_held(conn, (ssize_t)len);
	if (!conn->out) {
		conn->out = line;
		conn->out_len = len;
		conn->out_off = 0;
		return 0;
	}
	out = realloc(conn->out, conn->out_len + len);
	if (!out) {
		conn_held(conn, -(ssize_t)len);
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
 * Answer buffered requests one at a time, stopping while an answer is pending, and after
 * REQUESTS_PER_DISPATCH of them or ANSWER_BYTES_PER_DISPATCH of answers (conn->backlog:
 * conn_settle() resumes later). Returns 0 to
 * keep the client, or -errno (or 1 for an orderly end) to drop it.
 */
static int conn_process(struct control_conn *conn)
{
	unsigned int answered = 0;
	size_t len;
	char *line;
	int r;

	conn->backlog = false;
	conn->turn_bytes = 0;
	r = conn_flush(conn);
	if (r < 0)
		return r;
	while (!conn->out && !conn->close_after_flush) {
		if (answered == REQUESTS_PER_DISPATCH ||
		    conn->turn_bytes >= ANSWER_BYTES_PER_DISPATCH) {
			conn->backlog = true;
			return 0;
		}
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
		answered++;
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
		r = control_conn_arm_timer(conn);
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
	control_conn_free(conn);
	return 0;
}

/*
 * After conn_process(): wait for the socket to take the pending answer (EPOLLOUT) or to
 * bring more requests (EPOLLIN). With requests left over (conn->backlog: nothing pending
 * then), wait for EPOLLOUT too, which the socket reports at once: the rest is answered at
 * the next epoll_wait(), after every source it reported ready now, and the socket is not
 * read meanwhile. Not a defer source: sd-event dispatches a pending one before it polls
 * again, so the data path would wait for the whole backlog.
 */
static int conn_settle(struct control_conn *conn)
{
	int r;

	r = sd_event_source_set_io_events(conn->io,
					  conn->out || conn->backlog ? EPOLLOUT : EPOLLIN);
	if (r >= 0)
		r = control_conn_arm_timer(conn);
	return r;
}

/* conn_process() and conn_settle(); conn is freed when it is done or broken. */
static void conn_run(struct control_conn *conn)
{
	int r = conn_process(conn);

	if (r < 0 && r != -EPIPE && r != -ECONNRESET)
		log_debug("control client %" PRIu64 ": %s", conn->id, strerror(-r));
	if (r != 0) {
		control_conn_free(conn);
		return;
	}
	r = conn_settle(conn);
	if (r < 0) {
		log_errno(LOG_ERR, r, "control client %" PRIu64 ": cannot update its event mask",
			  conn->id);
		control_conn_free(conn);
	}
}

static int conn_handler(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct control_conn *conn = userdata;
	long n;

	(void)s;
	if ((revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !conn->out && !conn->backlog &&
	    !conn->in.eof && !conn->close_after_flush) {
		n = line_buffer_fill(&conn->in, fd, READ_CHUNK);
		if (n > 0)
			conn_active(conn);
		if (n < 0 && n != -EAGAIN) {
			log_debug("control client %" PRIu64 ": read failed: %s", conn->id,
				  strerror((int)-n));
			control_conn_free(conn);
			return 0;
		}
	}
	conn_run(conn);
	return 0;
}

/*
 * Serve fd, a client accepted with role (not CONTROL_ROLE_NONE), and count it in srv; on
 * failure it is logged and closed.
 */
void control_conn_add(struct control_server *srv, int fd, const struct ucred *cred,
		      enum control_role role)
{
	struct control_conn *conn;
	int r;

	conn = calloc(1, sizeof(*conn));
	if (!conn) {
		log_err("control socket %s: out of memory for a new client", srv->path);
		close(fd);
		return;
	}
	conn->srv = srv;
	conn->fd = fd;
	conn->id = ++srv->next_conn_id;
	conn->peer = (struct control_peer){
	    .pid = cred->pid, .uid = cred->uid, .gid = cred->gid, .role = role};
	line_buffer_init(&conn->in, CONTROL_REQUEST_MAX);
	conn_active(conn);
	r = sd_event_add_io(srv->event, &conn->io, fd, EPOLLIN, conn_handler, conn);
	if (r >= 0)
		r = sd_event_add_time(srv->event, &conn->timer, CLOCK_MONOTONIC,
				      conn_deadline(conn), 0, conn_timer, conn);
	if (r < 0) {
		log_errno(LOG_ERR, r, "control socket %s: cannot watch a new client", srv->path);
		sd_event_source_disable_unref(conn->io);
		sd_event_source_disable_unref(conn->timer);
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
		  (int)cred->pid, (unsigned int)cred->uid, control_role_name(role));
}
