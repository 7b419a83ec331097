// SPDX-License-Identifier: GPL-2.0-only
/*
 * Control protocol framing and the client side. Library-like: nothing here prints; every
 * function returns 0 or -errno and leaves the message to the caller.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "control_proto.h"

#define READ_CHUNK (64 * 1024)

void line_buffer_init(struct line_buffer *lb, size_t max)
{
	*lb = (struct line_buffer){.max = max};
}

void line_buffer_free(struct line_buffer *lb)
{
	free(lb->data);
	line_buffer_init(lb, lb->max);
}

/* Move the unread bytes to the front and make room for want more plus a NUL. */
static int line_buffer_reserve(struct line_buffer *lb, size_t want)
{
	size_t pending = lb->len - lb->start;
	size_t need, cap;
	char *data;

	if (lb->start > 0) {
		memmove(lb->data, lb->data + lb->start, pending);
		lb->len = pending;
		lb->start = 0;
	}
	if (want > SIZE_MAX - 1 - pending)
		return -ENOMEM;
	need = pending + want + 1;
	if (need <= lb->cap)
		return 0;
	cap = lb->cap ? lb->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	data = realloc(lb->data, cap);
	if (!data)
		return -ENOMEM;
	lb->data = data;
	lb->cap = cap;
	return 0;
}

int line_buffer_append(struct line_buffer *lb, const void *data, size_t len)
{
	int r;

	if (len == 0)
		return 0;
	r = line_buffer_reserve(lb, len);
	if (r < 0)
		return r;
	memcpy(lb->data + lb->len, data, len);
	lb->len += len;
	return 0;
}

long line_buffer_fill(struct line_buffer *lb, int fd, size_t chunk)
{
	ssize_t n;
	int r;

	r = line_buffer_reserve(lb, chunk);
	if (r < 0)
		return r;
	do
		n = read(fd, lb->data + lb->len, chunk);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		lb->eof = true;
	lb->len += n;
	return n;
}

void line_buffer_set_eof(struct line_buffer *lb)
{
	lb->eof = true;
}

size_t line_buffer_pending(const struct line_buffer *lb)
{
	return lb->len - lb->start;
}

int line_buffer_next(struct line_buffer *lb, char **line, size_t *len)
{
	size_t pending = lb->len - lb->start;
	char *begin, *nl;
	size_t n;

	if (pending == 0)
		return 0; /* data may still be NULL */
	begin = lb->data + lb->start;
	nl = memchr(begin + lb->scanned, '\n', pending - lb->scanned);
	if (!nl) {
		lb->scanned = pending;
		if (pending > lb->max)
			return -EMSGSIZE;
		if (!lb->eof)
			return 0;
		/* reserve() always leaves room for this NUL. */
		begin[pending] = '\0';
		*line = begin;
		*len = pending;
		lb->start = lb->len;
		lb->scanned = 0;
		return 1;
	}
	n = nl - begin;
	if (n > lb->max)
		return -EMSGSIZE;
	*nl = '\0';
	*line = begin;
	*len = n;
	lb->start += n + 1;
	lb->scanned = 0;
	return 1;
}

static bool is_blank(const char *s, size_t len)
{
	for (; len > 0; s++, len--)
		if (*s != ' ' && *s != '\t' && *s != '\r')
			return false;
	return true;
}

int control_parse_line(const char *line, size_t len, struct json_object **out, char *err,
		       size_t errlen)
{
	struct json_object *obj;
	struct json_tokener *tok;
	enum json_tokener_error jerr;
	const char *why = NULL;
	size_t end;

	if (!err || errlen == 0) {
		err = NULL;
		errlen = 0;
	}
	if (len > INT32_MAX)
		return -EMSGSIZE;
	if (memchr(line, '\0', len)) {
		why = "line contains a NUL byte";
		goto malformed;
	}

	if (is_blank(line, len)) {
		why = "empty line";
		goto malformed;
	}

	tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS |
					JSON_TOKENER_VALIDATE_UTF8);
	obj = json_tokener_parse_ex(tok, line, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	if (!obj && jerr == json_tokener_continue) {
		/* json-c cannot tell "42" from the start of "4242": a NUL marks the end. */
		obj = json_tokener_parse_ex(tok, "", 1);
		jerr = json_tokener_get_error(tok);
		end = len;
	}
	json_tokener_free(tok);

	if (!obj) {
		if (jerr == json_tokener_success)
			why = "null is not an object";
		else if (jerr == json_tokener_error_parse_eof)
			why = "truncated JSON";
		else
			why = json_tokener_error_desc(jerr);
		goto malformed;
	}
	if (!is_blank(line + end, len - end)) {
		json_object_put(obj);
		why = "trailing characters after the JSON object";
		goto malformed;
	}
	if (!json_object_is_type(obj, json_type_object)) {
		if (err)
			snprintf(err, errlen, "expected a JSON object, got %s",
				 json_type_to_name(json_object_get_type(obj)));
		json_object_put(obj);
		return -EPROTO;
	}
	*out = obj;
	return 0;

malformed:
	if (err)
		snprintf(err, errlen, "malformed JSON: %s", why);
	return -EPROTO;
}

int control_request_decode(const char *line, size_t len, struct json_object **out,
			   const char **command, char *err, size_t errlen)
{
	struct json_object *req, *cmd;
	int r;

	r = control_parse_line(line, len, &req, err, errlen);
	if (r < 0)
		return r;
	if (!json_object_object_get_ex(req, "command", &cmd) ||
	    !json_object_is_type(cmd, json_type_string) || json_object_get_string_len(cmd) == 0) {
		json_object_put(req);
		if (err && errlen)
			snprintf(err, errlen, "request has no \"command\" string member");
		return -EINVAL;
	}
	*command = json_object_get_string(cmd);
	*out = req;
	return 0;
}

int control_format_line(struct json_object *obj, size_t max, char **line, size_t *len)
{
	const char *text;
	size_t n;
	char *buf;

	text = json_object_to_json_string_length(
	    obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
	if (!text)
		return -ENOMEM;
	if (n > max)
		return -EMSGSIZE;
	buf = malloc(n + 2);
	if (!buf)
		return -ENOMEM;
	/* json-c escapes control characters inside strings, so text holds no newline. */
	memcpy(buf, text, n);
	buf[n] = '\n';
	buf[n + 1] = '\0';
	*line = buf;
	*len = n + 1;
	return 0;
}

struct json_object *control_error_response(int err, const char *text)
{
	struct json_object *obj = json_object_new_object();

	if (!obj)
		return NULL;
	err = abs(err);
	if (json_object_object_add(obj, "ok", json_object_new_boolean(0)) < 0 ||
	    json_object_object_add(obj, "error",
				   json_object_new_string(text ? text : strerror(err))) < 0 ||
	    json_object_object_add(obj, "errno", json_object_new_int(err)) < 0) {
		json_object_put(obj);
		return NULL;
	}
	return obj;
}

int control_response_status(struct json_object *resp, const char **error_text)
{
	struct json_object *ok, *text, *num;
	int err = EIO;

	if (!json_object_object_get_ex(resp, "ok", &ok) ||
	    !json_object_is_type(ok, json_type_boolean))
		return -EPROTO;
	if (json_object_get_boolean(ok))
		return 0;
	if (json_object_object_get_ex(resp, "errno", &num) &&
	    json_object_is_type(num, json_type_int)) {
		int64_t v = json_object_get_int64(num);

		if (v > 0 && v < 4096)
			err = (int)v;
	}
	if (error_text) {
		if (json_object_object_get_ex(resp, "error", &text) &&
		    json_object_is_type(text, json_type_string))
			*error_text = json_object_get_string(text);
		else
			*error_text = strerror(err);
	}
	return -err;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left until deadline for poll(); -1 (forever) when deadline is negative. */
static int remaining_ms(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - now_ms();
	if (left <= 0)
		return 0;
	return left > INT32_MAX ? INT32_MAX : (int)left;
}

static int64_t deadline_after(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
}

static int wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd pfd = {.fd = fd, .events = events};
	int r;

	for (;;) {
		r = poll(&pfd, 1, remaining_ms(deadline));
		if (r > 0)
			return 0;
		if (r == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

static int client_open_until(struct control_client *c, const char *path, int64_t deadline)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t plen = strlen(path);
	int fd, r, flags;

	c->fd = -1;
	line_buffer_init(&c->in, CONTROL_RESPONSE_MAX);
	if (plen == 0)
		return -EINVAL;
	if (plen >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, plen + 1);

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;

	/*
	 * A unix connect() has no in-progress state: on a full backlog a nonblocking one fails
	 * with EAGAIN at once, a blocking one sleeps up to SO_SNDTIMEO (unix_stream_connect()).
	 */
	if (deadline >= 0) {
		int ms = remaining_ms(deadline);
		struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};

		if (ms == 0)
			tv.tv_usec = 1000;
		if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
			goto fail_errno;
	}
	do
		r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	while (r < 0 && errno == EINTR && remaining_ms(deadline) != 0);
	if (r < 0) {
		if (errno == EAGAIN || errno == EINTR)
			errno = ETIMEDOUT;
		goto fail_errno;
	}

	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		goto fail_errno;
	c->fd = fd;
	return 0;

fail_errno:
	r = -errno;
	close(fd);
	return r;
}

int control_client_open(struct control_client *c, const char *path, int timeout_ms)
{
	return client_open_until(c, path, deadline_after(timeout_ms));
}

static int send_all(int fd, const char *buf, size_t len, int64_t deadline)
{
	ssize_t n;
	int r;

	while (len > 0) {
		n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			r = wait_fd(fd, POLLOUT, deadline);
			if (r < 0)
				return r;
			continue;
		}
		buf += n;
		len -= n;
	}
	return 0;
}

static int client_call_until(struct control_client *c, struct json_object *req,
			     struct json_object **resp, int64_t deadline)
{
	size_t len, line_len;
	char *buf, *line;
	int r, send_err;
	long n;

	if (c->fd < 0)
		return -ENOTCONN;
	r = control_format_line(req, CONTROL_REQUEST_MAX, &buf, &len);
	if (r < 0)
		return r;
	/*
	 * The daemon may refuse us (not root, too many clients) with an error line and close
	 * before reading the request; that line is still queued for us, so read on.
	 */
	send_err = send_all(c->fd, buf, len, deadline);
	free(buf);
	if (send_err == -ETIMEDOUT)
		return send_err;

	for (;;) {
		r = line_buffer_next(&c->in, &line, &line_len);
		if (r < 0)
			return r;
		if (r > 0) {
			if (is_blank(line, line_len))
				continue;
			return control_parse_line(line, line_len, resp, NULL, 0);
		}
		if (c->in.eof)
			return send_err < 0 ? send_err : -ECONNRESET;
		r = wait_fd(c->fd, POLLIN, deadline);
		if (r < 0)
			return r;
		n = line_buffer_fill(&c->in, c->fd, READ_CHUNK);
		if (n == -EAGAIN)
			continue;
		if (n < 0)
			return (int)n;
	}
}

int control_client_call(struct control_client *c, struct json_object *req,
			struct json_object **resp, int timeout_ms)
{
	return client_call_until(c, req, resp, deadline_after(timeout_ms));
}

void control_client_close(struct control_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	line_buffer_free(&c->in);
}

int control_request(const char *path, struct json_object *req, struct json_object **resp,
		    int timeout_ms)
{
	int64_t deadline = deadline_after(timeout_ms);
	struct control_client c;
	int r;

	r = client_open_until(&c, path, deadline);
	if (r < 0)
		return r;
	r = client_call_until(&c, req, resp, deadline);
	control_client_close(&c);
	return r;
}
