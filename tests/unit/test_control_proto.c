// SPDX-License-Identifier: GPL-2.0-only
/*
 * Control protocol: line framing, JSON line parsing and formatting, response status, and
 * the client against a real unix socket in /tmp served by a forked child.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "control_proto.h"

/* ---- line_buffer ---------------------------------------------------------------------- */

static void expect_line(struct line_buffer *lb, const char *want)
{
	size_t len;
	char *line;

	assert_int_equal(line_buffer_next(lb, &line, &len), 1);
	assert_int_equal(len, strlen(want));
	assert_string_equal(line, want);
}

static void expect_no_line(struct line_buffer *lb)
{
	size_t len;
	char *line;

	assert_int_equal(line_buffer_next(lb, &line, &len), 0);
}

static void append_str(struct line_buffer *lb, const char *s)
{
	assert_int_equal(line_buffer_append(lb, s, strlen(s)), 0);
}

static void test_line_single(void **state)
{
	struct line_buffer lb;

	(void)state;
	line_buffer_init(&lb, 64);
	expect_no_line(&lb);
	append_str(&lb, "{\"command\":\"list\"}\n");
	expect_line(&lb, "{\"command\":\"list\"}");
	expect_no_line(&lb);
	assert_int_equal(line_buffer_pending(&lb), 0);
	line_buffer_free(&lb);
}

static void test_line_several_in_one_chunk(void **state)
{
	struct line_buffer lb;

	(void)state;
	line_buffer_init(&lb, 64);
	append_str(&lb, "a\nbb\n\nccc");
	expect_line(&lb, "a");
	expect_line(&lb, "bb");
	expect_line(&lb, "");
	expect_no_line(&lb);
	assert_int_equal(line_buffer_pending(&lb), 3);
	append_str(&lb, "c\r\nd");
	expect_line(&lb, "cccc\r"); /* \r is the JSON parser's business: it is blank */
	expect_no_line(&lb);
	line_buffer_free(&lb);
}

static void test_line_byte_by_byte(void **state)
{
	const char *text = "{\"command\":\"list\",\"name\":\"metrics\"}\n";
	struct line_buffer lb;
	size_t i, len;
	char *line;

	(void)state;
	line_buffer_init(&lb, 64);
	for (i = 0; i + 1 < strlen(text); i++) {
		assert_int_equal(line_buffer_append(&lb, text + i, 1), 0);
		assert_int_equal(line_buffer_next(&lb, &line, &len), 0);
	}
	assert_int_equal(line_buffer_append(&lb, "\n", 1), 0);
	expect_line(&lb, "{\"command\":\"list\",\"name\":\"metrics\"}");
	line_buffer_free(&lb);
}

static void test_line_max_length(void **state)
{
	struct line_buffer lb;
	size_t len;
	char *line;

	(void)state;
	line_buffer_init(&lb, 8);
	append_str(&lb, "12345678\n");
	expect_line(&lb, "12345678");
	append_str(&lb, "123456789\n");
	assert_int_equal(line_buffer_next(&lb, &line, &len), -EMSGSIZE);
	line_buffer_free(&lb);
}

/* An oversize line is caught before its newline arrives, so it is never buffered whole. */
static void test_line_oversize_without_newline(void **state)
{
	struct line_buffer lb;
	size_t len;
	char *line;

	(void)state;
	line_buffer_init(&lb, 8);
	append_str(&lb, "12345678");
	assert_int_equal(line_buffer_next(&lb, &line, &len), 0);
	append_str(&lb, "9");
	assert_int_equal(line_buffer_next(&lb, &line, &len), -EMSGSIZE);
	line_buffer_free(&lb);

	/* The limit holds for a line that follows complete ones, too. */
	line_buffer_init(&lb, 8);
	append_str(&lb, "ok\n0123456789abcdef");
	expect_line(&lb, "ok");
	assert_int_equal(line_buffer_next(&lb, &line, &len), -EMSGSIZE);
	line_buffer_free(&lb);
}

static void test_line_eof_tail(void **state)
{
	struct line_buffer lb;

	(void)state;
	line_buffer_init(&lb, 64);
	append_str(&lb, "one\ntwo");
	expect_line(&lb, "one");
	expect_no_line(&lb);
	line_buffer_set_eof(&lb);
	expect_line(&lb, "two");
	expect_no_line(&lb);
	line_buffer_free(&lb);

	/* eof on an empty buffer yields nothing, not an empty line. */
	line_buffer_init(&lb, 64);
	line_buffer_set_eof(&lb);
	expect_no_line(&lb);
	line_buffer_free(&lb);
}

static void test_line_fill_from_pipe(void **state)
{
	struct line_buffer lb;
	int fds[2];

	(void)state;
	assert_int_equal(pipe(fds), 0);
	line_buffer_init(&lb, 64);
	assert_int_equal(write(fds[1], "x\ny", 3), 3);
	assert_int_equal(line_buffer_fill(&lb, fds[0], 2), 2);
	expect_line(&lb, "x");
	assert_int_equal(line_buffer_fill(&lb, fds[0], 16), 1);
	expect_no_line(&lb);
	close(fds[1]);
	assert_int_equal(line_buffer_fill(&lb, fds[0], 16), 0);
	assert_true(lb.eof);
	expect_line(&lb, "y");
	close(fds[0]);
	line_buffer_free(&lb);
}

/* Many lines in odd chunk sizes: compaction and growth must keep every byte in order. */
static void test_line_many_chunks(void **state)
{
	char text[32 * 1024], want[32], *line;
	struct line_buffer lb;
	size_t off = 0, len, chunk = 1, got = 0;
	int i, r;

	(void)state;
	for (i = 0; i < 2000; i++)
		off += snprintf(text + off, sizeof(text) - off, "line %d\n", i);
	line_buffer_init(&lb, 16);
	for (size_t pos = 0; pos < off; pos += chunk, chunk = chunk % 97 + 13) {
		size_t n = pos + chunk > off ? off - pos : chunk;

		assert_int_equal(line_buffer_append(&lb, text + pos, n), 0);
		while ((r = line_buffer_next(&lb, &line, &len)) == 1) {
			snprintf(want, sizeof(want), "line %zu", got++);
			assert_string_equal(line, want);
		}
		assert_int_equal(r, 0);
	}
	assert_int_equal(got, 2000);
	line_buffer_free(&lb);
}

/* ---- parse and format ----------------------------------------------------------------- */

static void test_parse_ok(void **state)
{
	const char *text = "  {\"command\":\"list\",\"name\":\"metrics\"} \r";
	struct json_object *obj, *v;
	char err[128] = "";

	(void)state;
	assert_int_equal(control_parse_line(text, strlen(text), &obj, err, sizeof(err)), 0);
	assert_true(json_object_object_get_ex(obj, "command", &v));
	assert_string_equal(json_object_get_string(v), "list");
	assert_true(json_object_object_get_ex(obj, "name", &v));
	assert_string_equal(json_object_get_string(v), "metrics");
	json_object_put(obj);
}

static void expect_malformed(const char *text, size_t len, const char *why)
{
	struct json_object *obj = NULL;
	char err[128] = "";

	assert_int_equal(control_parse_line(text, len, &obj, err, sizeof(err)), -EPROTO);
	assert_null(obj);
	if (!strstr(err, why))
		fail_msg("parsing \"%.40s\": message \"%s\" lacks \"%s\"", text, err, why);
}

static void test_parse_malformed(void **state)
{
	static const struct {
		const char *text;
		const char *why;
	} cases[] = {
	    {"", "empty line"},
	    {"  \t", "empty line"},
	    {"not json", "malformed JSON"},
	    {"{\"command\":", "truncated JSON"},
	    {"{\"command\":\"list\"", "truncated JSON"},
	    {"\"abc", "truncated JSON"},
	    {"nul", "malformed JSON"},
	    {"[1,2]", "expected a JSON object, got array"},
	    {"\"list\"", "expected a JSON object, got string"},
	    {"42 ", "expected a JSON object, got int"},
	    {"42", "expected a JSON object, got int"},
	    {"true", "expected a JSON object, got boolean"},
	    {"null", "null is not an object"},
	    {"{} {}", "trailing characters"},
	    {"{\"command\":\"list\"}x", "trailing characters"},
	    {"{\"a\":1,}", "malformed JSON"},		/* strict: no trailing comma */
	    {"{\"a\":\"\xff\xfe\"}", "malformed JSON"}, /* invalid UTF-8 */
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_malformed(cases[i].text, strlen(cases[i].text), cases[i].why);
	expect_malformed("{\"a\":\"b\0\"}", 10, "NUL byte");
}

static void test_parse_too_deep(void **state)
{
	char text[2 * 100 + 16];
	int i, off = 0;

	(void)state;
	off += sprintf(text + off, "{\"a\":");
	for (i = 0; i < 100; i++)
		text[off++] = '[';
	for (i = 0; i < 100; i++)
		text[off++] = ']';
	off += sprintf(text + off, "}");
	expect_malformed(text, off, "malformed JSON");
}

/* Callers that do not want the reason may pass NULL. */
static void test_parse_without_err_buffer(void **state)
{
	struct json_object *obj = NULL;

	(void)state;
	assert_int_equal(control_parse_line("nope", 4, &obj, NULL, 0), -EPROTO);
	assert_null(obj);
}

static void test_format_line(void **state)
{
	struct json_object *obj = json_object_new_object(), *back, *v;
	size_t len;
	char *line;

	(void)state;
	json_object_object_add(obj, "command", json_object_new_string("list"));
	json_object_object_add(obj, "name", json_object_new_string("two\nlines /x\ty\"z"));
	assert_int_equal(control_format_line(obj, CONTROL_REQUEST_MAX, &line, &len), 0);
	assert_true(len > 1);
	assert_int_equal(line[len - 1], '\n');
	assert_null(memchr(line, '\n', len - 1));
	assert_non_null(memmem(line, len, " /x", 3)); /* no "\/" noise */
	assert_int_equal(control_parse_line(line, len - 1, &back, NULL, 0), 0);
	assert_true(json_object_object_get_ex(back, "name", &v));
	assert_string_equal(json_object_get_string(v), "two\nlines /x\ty\"z");
	assert_true(json_object_equal(obj, back));
	json_object_put(back);
	free(line);

	assert_int_equal(control_format_line(obj, 10, &line, &len), -EMSGSIZE);
	json_object_put(obj);
}

static void test_response_status(void **state)
{
	struct json_object *resp;
	const char *text = NULL;
	size_t len;
	char *line;

	(void)state;
	resp = control_error_response(-EOPNOTSUPP, "unknown command \"foo\"");
	assert_non_null(resp);
	assert_int_equal(control_format_line(resp, 1024, &line, &len), 0);
	assert_int_equal(len, strlen(line));
	assert_string_equal(line, "{\"ok\":false,"
				  "\"error\":\"unknown command \\\"foo\\\"\","
				  "\"errno\":95}\n");
	free(line);
	assert_int_equal(control_response_status(resp, &text), -EOPNOTSUPP);
	assert_string_equal(text, "unknown command \"foo\"");
	json_object_put(resp);

	/* Without text the message is strerror(). */
	resp = control_error_response(ENOENT, NULL);
	assert_int_equal(control_response_status(resp, &text), -ENOENT);
	assert_string_equal(text, strerror(ENOENT));
	json_object_put(resp);

	resp = json_tokener_parse("{\"ok\":true,\"redirects\":[]}");
	assert_int_equal(control_response_status(resp, &text), 0);
	json_object_put(resp);

	resp = json_tokener_parse("{\"ok\":false}");
	assert_int_equal(control_response_status(resp, &text), -EIO);
	assert_non_null(text);
	json_object_put(resp);

	resp = json_tokener_parse("{\"ok\":false,\"errno\":-3,\"error\":\"x\"}");
	assert_int_equal(control_response_status(resp, &text), -EIO);
	assert_string_equal(text, "x");
	json_object_put(resp);

	resp = json_tokener_parse("{\"ok\":\"yes\"}");
	assert_int_equal(control_response_status(resp, &text), -EPROTO);
	json_object_put(resp);

	resp = json_tokener_parse("{\"redirects\":[]}");
	assert_int_equal(control_response_status(resp, NULL), -EPROTO);
	json_object_put(resp);
}

/* ---- client against a real socket ---------------------------------------------------- */

enum server_mode {
	SERVE,	/* answer each request by its "command" */
	REFUSE, /* send an error line at once and hang up, like a full daemon */
};

struct fixture {
	char dir[64];
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	pid_t server;
};

static int send_str(int fd, const char *s)
{
	size_t len = strlen(s);

	return send(fd, s, len, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

/*
 * The child's answers: "echo" returns the request, "garbage" a non-JSON line, "silent"
 * nothing, "hangup" closes, "split" arrives in three pieces, "big" is 1 MiB long.
 */
static int serve_request(int fd, const char *line, size_t len)
{
	struct json_object *req, *cmd, *resp;
	const char *command;
	size_t out_len;
	char *out;
	int r = 0;

	if (control_parse_line(line, len, &req, NULL, 0) < 0)
		return send_str(fd, "{\"ok\":false,\"error\":\"bad\",\"errno\":71}\n");
	if (!json_object_object_get_ex(req, "command", &cmd)) {
		json_object_put(req);
		return -1;
	}
	command = json_object_get_string(cmd);
	if (!strcmp(command, "garbage")) {
		r = send_str(fd, "this is not json\n");
	} else if (!strcmp(command, "silent")) {
		r = 0;
	} else if (!strcmp(command, "hangup")) {
		r = 1;
	} else if (!strcmp(command, "split")) {
		r = send_str(fd, "{\"ok\":tr");
		usleep(20000);
		r |= send_str(fd, "ue,\"par");
		usleep(20000);
		r |= send_str(fd, "ts\":3}\n");
	} else {
		resp = json_object_new_object();
		json_object_object_add(resp, "ok", json_object_new_boolean(1));
		if (!strcmp(command, "big")) {
			char *blob = malloc(1 << 20);

			memset(blob, 'b', (1 << 20) - 1);
			blob[(1 << 20) - 1] = '\0';
			json_object_object_add(resp, "blob", json_object_new_string(blob));
			free(blob);
		} else {
			json_object_object_add(resp, "echo", json_object_get(req));
		}
		r = control_format_line(resp, CONTROL_RESPONSE_MAX, &out, &out_len);
		if (r == 0) {
			r = send(fd, out, out_len, MSG_NOSIGNAL) == (ssize_t)out_len ? 0 : -1;
			free(out);
		}
		json_object_put(resp);
	}
	json_object_put(req);
	return r;
}

static void serve_connection(int fd)
{
	struct line_buffer lb;
	size_t len;
	char *line;
	long n;
	int r;

	line_buffer_init(&lb, CONTROL_REQUEST_MAX);
	for (;;) {
		while ((r = line_buffer_next(&lb, &line, &len)) == 1)
			if (serve_request(fd, line, len) != 0)
				goto out;
		if (r < 0 || lb.eof)
			break;
		n = line_buffer_fill(&lb, fd, 4096);
		if (n < 0)
			break;
	}
out:
	line_buffer_free(&lb);
	close(fd);
}

static void run_server(int lfd, enum server_mode mode)
{
	int fd;

	for (;;) {
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			_exit(1);
		if (mode == REFUSE) {
			send_str(fd, "{\"ok\":false,\"error\":\"too many control clients\","
				     "\"errno\":87}\n");
			close(fd);
			continue;
		}
		serve_connection(fd);
	}
}

static int listen_at(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 8) < 0)
		return -1;
	return fd;
}

static struct fixture *fixture_new(void)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/vsockmap-test-XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	snprintf(fx->path, sizeof(fx->path), "%s/control.sock", fx->dir);
	fx->server = -1;
	return fx;
}

static void fixture_serve(struct fixture *fx, enum server_mode mode)
{
	int lfd = listen_at(fx->path);

	/* The socket listens before fork(), so clients never race the child's start. */
	assert_true(lfd >= 0);
	fx->server = fork();
	assert_true(fx->server >= 0);
	if (fx->server == 0)
		run_server(lfd, mode);
	close(lfd);
}

static int setup(void **state)
{
	*state = fixture_new();
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	if (fx->server > 0) {
		kill(fx->server, SIGKILL);
		waitpid(fx->server, NULL, 0);
	}
	unlink(fx->path);
	rmdir(fx->dir);
	free(fx);
	return 0;
}

static struct json_object *make_request(const char *command)
{
	struct json_object *req = json_object_new_object();

	json_object_object_add(req, "command", json_object_new_string(command));
	return req;
}

static void test_request_round_trip(void **state)
{
	struct fixture *fx = *state;
	struct json_object *req, *resp, *echo;

	fixture_serve(fx, SERVE);
	req = make_request("list");
	json_object_object_add(req, "name", json_object_new_string("metrics"));
	assert_int_equal(control_request(fx->path, req, &resp, 2000), 0);
	assert_int_equal(control_response_status(resp, NULL), 0);
	assert_true(json_object_object_get_ex(resp, "echo", &echo));
	assert_true(json_object_equal(echo, req));
	json_object_put(resp);
	json_object_put(req);
}

static void test_client_several_requests(void **state)
{
	struct fixture *fx = *state;
	struct control_client c;
	struct json_object *req, *resp, *v;
	int i;

	fixture_serve(fx, SERVE);
	assert_int_equal(control_client_open(&c, fx->path, 2000), 0);
	for (i = 0; i < 3; i++) {
		req = make_request("status");
		json_object_object_add(req, "seq", json_object_new_int(i));
		assert_int_equal(control_client_call(&c, req, &resp, 2000), 0);
		assert_true(json_object_object_get_ex(resp, "echo", &v));
		assert_true(json_object_object_get_ex(v, "seq", &v));
		assert_int_equal(json_object_get_int(v), i);
		json_object_put(resp);
		json_object_put(req);
	}

	/* An answer that arrives in pieces, then one larger than any socket buffer. */
	req = make_request("split");
	assert_int_equal(control_client_call(&c, req, &resp, 2000), 0);
	assert_true(json_object_object_get_ex(resp, "parts", &v));
	assert_int_equal(json_object_get_int(v), 3);
	json_object_put(resp);
	json_object_put(req);

	req = make_request("big");
	assert_int_equal(control_client_call(&c, req, &resp, 5000), 0);
	assert_true(json_object_object_get_ex(resp, "blob", &v));
	assert_int_equal(json_object_get_string_len(v), (1 << 20) - 1);
	json_object_put(resp);
	json_object_put(req);

	control_client_close(&c);
	control_client_close(&c); /* idempotent */
}

static void expect_request_error(const char *path, const char *command, int timeout_ms, int err)
{
	struct json_object *req = make_request(command), *resp = NULL;

	assert_int_equal(control_request(path, req, &resp, timeout_ms), err);
	assert_null(resp);
	json_object_put(req);
}

static void test_request_bad_answers(void **state)
{
	struct fixture *fx = *state;

	fixture_serve(fx, SERVE);
	expect_request_error(fx->path, "garbage", 2000, -EPROTO);
	expect_request_error(fx->path, "silent", 200, -ETIMEDOUT);
	expect_request_error(fx->path, "hangup", 2000, -ECONNRESET);
}

/* The daemon refuses (too many clients, not root) before reading: its line still counts. */
static void test_request_refused_before_send(void **state)
{
	struct fixture *fx = *state;
	struct json_object *req = make_request("list"), *resp;
	struct control_client c;
	const char *text;

	fixture_serve(fx, REFUSE);
	assert_int_equal(control_client_open(&c, fx->path, 2000), 0);
	usleep(100000); /* let the server hang up first, so our send() meets EPIPE */
	assert_int_equal(control_client_call(&c, req, &resp, 2000), 0);
	assert_int_equal(control_response_status(resp, &text), -EUSERS);
	assert_string_equal(text, "too many control clients");
	json_object_put(resp);
	control_client_close(&c);
	json_object_put(req);
}

static void test_request_no_daemon(void **state)
{
	struct fixture *fx = *state;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char long_path[200];
	int fd;

	expect_request_error(fx->path, "list", 1000, -ENOENT);

	/* A socket file nobody listens on, as a crashed daemon leaves behind. */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", fx->path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	expect_request_error(fx->path, "list", 1000, -ECONNREFUSED);

	memset(long_path, 'x', sizeof(long_path) - 1);
	long_path[0] = '/';
	long_path[sizeof(long_path) - 1] = '\0';
	expect_request_error(long_path, "list", 1000, -ENAMETOOLONG);
}

static void test_request_too_long(void **state)
{
	struct fixture *fx = *state;
	struct json_object *req = make_request("list"), *resp = NULL;
	char *big = malloc(CONTROL_REQUEST_MAX + 1);

	fixture_serve(fx, SERVE);
	memset(big, 'n', CONTROL_REQUEST_MAX);
	big[CONTROL_REQUEST_MAX] = '\0';
	json_object_object_add(req, "name", json_object_new_string(big));
	assert_int_equal(control_request(fx->path, req, &resp, 1000), -EMSGSIZE);
	assert_null(resp);
	free(big);
	json_object_put(req);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_line_single),
	    cmocka_unit_test(test_line_several_in_one_chunk),
	    cmocka_unit_test(test_line_byte_by_byte),
	    cmocka_unit_test(test_line_max_length),
	    cmocka_unit_test(test_line_oversize_without_newline),
	    cmocka_unit_test(test_line_eof_tail),
	    cmocka_unit_test(test_line_fill_from_pipe),
	    cmocka_unit_test(test_line_many_chunks),
	    cmocka_unit_test(test_parse_ok),
	    cmocka_unit_test(test_parse_malformed),
	    cmocka_unit_test(test_parse_too_deep),
	    cmocka_unit_test(test_parse_without_err_buffer),
	    cmocka_unit_test(test_format_line),
	    cmocka_unit_test(test_response_status),
	    cmocka_unit_test_setup_teardown(test_request_round_trip, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_client_several_requests, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_request_bad_answers, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_request_refused_before_send, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_request_no_daemon, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_request_too_long, setup, teardown),
	};

	return cmocka_run_group_tests_name("control_proto", tests, NULL, NULL);
}
