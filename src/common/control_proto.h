/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The control protocol shared by vsockmapd and vsockmapctl: one JSON object per line over a
 * unix stream socket. docs/control-protocol.md is the reference for other tools.
 */
#ifndef VSOCKMAP_CONTROL_PROTO_H
#define VSOCKMAP_CONTROL_PROTO_H

#include <stdbool.h>
#include <stddef.h>

struct json_object;

#ifndef VSOCKMAP_VERSION
#define VSOCKMAP_VERSION "0.1.0"
#endif

/* Longest request line the daemon accepts, without its newline. */
#define CONTROL_REQUEST_MAX (64 * 1024)
/* Longest response line: a "list" of thousands of redirects does not fit in 64 KiB. */
#define CONTROL_RESPONSE_MAX	   (16 * 1024 * 1024)
#define CONTROL_DEFAULT_TIMEOUT_MS 5000

/*
 * Input framing: bytes go in, newline-terminated lines come out. A line longer than max
 * (without its newline) is an error, so a peer cannot make us buffer without bound.
 */
struct line_buffer {
	char *data;
	size_t start; /* first byte not yet returned as a line */
	size_t len;   /* bytes in data, including those before start */
	size_t cap;
	size_t scanned; /* bytes after start known to hold no newline */
	size_t max;
	bool eof; /* no more input: a final unterminated line is returned as is */
};

void line_buffer_init(struct line_buffer *lb, size_t max);
void line_buffer_free(struct line_buffer *lb);

/* Append bytes. Returns 0 or -ENOMEM. */
int line_buffer_append(struct line_buffer *lb, const void *data, size_t len);

/*
 * One read(2) of at most chunk bytes from fd into the buffer. Returns the number of bytes
 * read, 0 at end of file (and marks eof), or -errno (-EAGAIN on a nonblocking fd).
 */
long line_buffer_fill(struct line_buffer *lb, int fd, size_t chunk);

/* Mark end of input: line_buffer_next() then returns an unterminated tail as a last line. */
void line_buffer_set_eof(struct line_buffer *lb);

/*
 * Take the next complete line. Returns 1 and sets *line (NUL-terminated in place, without
 * the newline, valid until lb is next appended to, filled or freed) and *len; 0 when more
 * input is needed (or at eof with nothing left); -EMSGSIZE when the line is, or is bound to
 * become, longer than max.
 */
int line_buffer_next(struct line_buffer *lb, char **line, size_t *len);

/* Bytes buffered that have not been returned as lines yet. */
size_t line_buffer_pending(const struct line_buffer *lb);

/*
 * Parse one line (without its newline) into a JSON object. Whitespace around the object is
 * allowed; anything else (an array, two objects, trailing garbage, invalid UTF-8) is not.
 * Returns 0 and *out (caller puts it), -EPROTO for malformed JSON (with the reason in err
 * when err is not NULL) or -ENOMEM.
 */
int control_parse_line(const char *line, size_t len, struct json_object **out, char *err,
		       size_t errlen);

/*
 * Decode one request line: control_parse_line(), then the "command" member, which must be a
 * non-empty string. Returns 0 with *out (caller puts it) and *command (owned by *out),
 * -EPROTO for malformed JSON or -EINVAL for a missing or empty command (with the reason in
 * err when err is not NULL), or -ENOMEM.
 */
int control_request_decode(const char *line, size_t len, struct json_object **out,
			   const char **command, char *err, size_t errlen);

/*
 * Serialize obj as one compact line ending with "\n". Returns 0 and a malloc'd,
 * NUL-terminated *line with *len (including the newline, not the NUL), -EMSGSIZE when the
 * line without newline exceeds max, or -ENOMEM.
 */
int control_format_line(struct json_object *obj, size_t max, char **line, size_t *len);

/* {"ok":false,"error":text,"errno":err} with err positive. NULL on allocation failure. */
struct json_object *control_error_response(int err, const char *text);

/*
 * Read a response's status: 0 when "ok" is true; otherwise the negative "errno" member
 * (-EIO when absent or invalid) with *error_text pointing into resp (or a generic text).
 * -EPROTO when resp has no boolean "ok".
 */
int control_response_status(struct json_object *resp, const char **error_text);

/* A client connection that may carry several requests. */
struct control_client {
	int fd;
	struct line_buffer in;
};

/*
 * Connect to the control socket at path within timeout_ms. Returns 0 or -errno:
 * -ENOENT / -ECONNREFUSED when no daemon listens, -EACCES, -ETIMEDOUT, -ENAMETOOLONG.
 */
int control_client_open(struct control_client *c, const char *path, int timeout_ms);

/*
 * Send one request and wait at most timeout_ms for its one-line answer. Returns 0 and
 * *resp (a JSON object, caller puts it; also for {"ok":false,...}) or -errno: -ETIMEDOUT,
 * -EPROTO for a malformed answer, -ECONNRESET when the daemon closed without answering,
 * -EMSGSIZE when the request or the answer is too long.
 */
int control_client_call(struct control_client *c, struct json_object *req,
			struct json_object **resp, int timeout_ms);

/* Close the connection; safe after a failed open and on a client already closed. */
void control_client_close(struct control_client *c);

/* One request on a fresh connection: open, call, close. timeout_ms covers the whole. */
int control_request(const char *path, struct json_object *req, struct json_object **resp,
		    int timeout_ms);

#endif
