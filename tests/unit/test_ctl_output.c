// SPDX-License-Identifier: GPL-2.0-only
/*
 * vsockmapctl against a fake daemon that answers with canned responses: the plain tables
 * against golden output, and the JSON of every command against the schema tables of
 * docs/control-protocol.md (parsed from the document itself, so the two cannot drift).
 * The real binary runs, so options, exit codes and error lines are covered too.
 *
 * Run from the repository root; vsockmapctl is taken from the build directory this test
 * sits in ($(OUTPUT)/tests/.. ). With "--validate TYPE" it checks the JSON on standard input
 * instead, for the end-to-end tests: test_ctl_output --validate 'array of redirect' < x.json
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <regex.h>
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

#define PROTOCOL_DOC "docs/control-protocol.md"

/* ---- the schema, from docs/control-protocol.md ------------------------------------------ */

enum kind { K_U64, K_STRING, K_BOOL, K_ENUM, K_OBJECT, K_ARRAY };

struct type {
	enum kind kind;
	char ref[48];	     /* K_OBJECT, K_ARRAY: the object's name */
	char values[12][24]; /* K_ENUM */
	int n_values;
	bool nullable;
	bool optional;
};

struct member {
	char name[48];
	struct type type;
};

struct schema {
	char name[48];
	struct member members[32];
	int n_members;
};

static struct schema schemas[32];
static int n_schemas;

/*
 * "u64", "string or null", "object client or null", "array of redirect", "array of u64 or
 * null", "one of "a", "b"".
 */
static int parse_type(const char *text, struct type *t, char *why, size_t whylen)
{
	char buf[512], *s = buf, *end, *q;
	size_t n;

	memset(t, 0, sizeof(*t));
	snprintf(buf, sizeof(buf), "%s", text);
	n = strlen(s);
	while (n && s[n - 1] == ' ')
		s[--n] = '\0';
	if (n > 10 && !strcmp(s + n - 10, ", optional")) {
		t->optional = true;
		s[n -= 10] = '\0';
	}
	if (n > 8 && !strcmp(s + n - 8, " or null")) {
		t->nullable = true;
		s[n -= 8] = '\0';
	}
	if (!strcmp(s, "u64")) {
		t->kind = K_U64;
	} else if (!strcmp(s, "string")) {
		t->kind = K_STRING;
	} else if (!strcmp(s, "bool")) {
		t->kind = K_BOOL;
	} else if (!strncmp(s, "object ", 7)) {
		t->kind = K_OBJECT;
		snprintf(t->ref, sizeof(t->ref), "%.*s", (int)sizeof(t->ref) - 1, s + 7);
	} else if (!strncmp(s, "array of ", 9)) {
		t->kind = K_ARRAY;
		snprintf(t->ref, sizeof(t->ref), "%.*s", (int)sizeof(t->ref) - 1, s + 9);
	} else if (!strncmp(s, "one of ", 7)) {
		t->kind = K_ENUM;
		for (q = s + 7; (q = strchr(q, '"')) && t->n_values < 12; q = end + 1) {
			end = strchr(q + 1, '"');
			if (!end)
				break;
			snprintf(t->values[t->n_values++], sizeof(t->values[0]), "%.*s",
				 (int)(end - q - 1), q + 1);
		}
		if (!t->n_values)
			goto bad;
	} else {
		goto bad;
	}
	return 0;
bad:
	snprintf(why, whylen, "unknown type \"%s\"", text);
	return -1;
}

static char *cell(char *row, int index)
{
	char *p = row, *end;
	int i;

	for (i = 0; i <= index; i++) {
		p = strchr(p, '|');
		if (!p)
			return NULL;
		p++;
	}
	end = strchr(p, '|');
	if (!end)
		return NULL;
	*end = '\0';
	while (*p == ' ')
		p++;
	return p;
}

static void load_schemas(void)
{
	FILE *f = fopen(PROTOCOL_DOC, "r");
	struct schema *cur = NULL;
	char line[2048], why[256];
	unsigned int lineno = 0;

	if (!f)
		fail_msg("cannot open %s (run from the repository root): %s", PROTOCOL_DOC,
			 strerror(errno));
	n_schemas = 0;
	while (fgets(line, sizeof(line), f)) {
		char *name, *type, *end, row[2048];

		lineno++;
		if (!strncmp(line, "#### Object `", 13)) {
			assert_true(n_schemas < 32);
			cur = &schemas[n_schemas++];
			memset(cur, 0, sizeof(*cur));
			end = strchr(line + 13, '`');
			assert_non_null(end);
			snprintf(cur->name, sizeof(cur->name), "%.*s", (int)(end - line - 13),
				 line + 13);
			continue;
		}
		if (line[0] == '#') {
			cur = NULL;
			continue;
		}
		if (!cur || strncmp(line, "| `", 3))
			continue;
		memcpy(row, line, sizeof(row));
		name = cell(row, 0);
		assert_non_null(name);
		end = strrchr(name, '`');
		assert_true(end && end > name + 1);
		assert_true(cur->n_members < 32);
		snprintf(cur->members[cur->n_members].name, sizeof(cur->members[0].name), "%.*s",
			 (int)(end - name - 1), name + 1);
		memcpy(row, line, sizeof(row));
		type = cell(row, 1);
		assert_non_null(type);
		if (parse_type(type, &cur->members[cur->n_members].type, why, sizeof(why)))
			fail_msg("%s:%u: %s", PROTOCOL_DOC, lineno, why);
		cur->n_members++;
	}
	fclose(f);
}

static const struct schema *find_schema(const char *name)
{
	int i;

	for (i = 0; i < n_schemas; i++)
		if (!strcmp(schemas[i].name, name))
			return &schemas[i];
	return NULL;
}

static bool validate_value(struct json_object *v, const struct type *t, const char *path, char *why,
			   size_t whylen);

static bool validate_object(struct json_object *o, const char *schema_name, const char *path,
			    char *why, size_t whylen)
{
	const struct schema *s = find_schema(schema_name);
	char sub[256];
	int i;

	if (!s) {
		snprintf(why, whylen, "%s: no \"Object `%s`\" table in %s", path, schema_name,
			 PROTOCOL_DOC);
		return false;
	}
	if (!json_object_is_type(o, json_type_object)) {
		snprintf(why, whylen, "%s: expected object %s, got %s", path, schema_name,
			 json_type_to_name(json_object_get_type(o)));
		return false;
	}
	json_object_object_foreach(o, key, val)
	{
		for (i = 0; i < s->n_members; i++)
			if (!strcmp(s->members[i].name, key))
				break;
		if (i == s->n_members) {
			snprintf(why, whylen, "%s.%s: not documented in object %s", path, key,
				 schema_name);
			return false;
		}
		snprintf(sub, sizeof(sub), "%s.%s", path, key);
		if (!validate_value(val, &s->members[i].type, sub, why, whylen))
			return false;
	}
	for (i = 0; i < s->n_members; i++) {
		if (!s->members[i].type.optional &&
		    !json_object_object_get_ex(o, s->members[i].name, NULL)) {
			snprintf(why, whylen, "%s: member \"%s\" of object %s is missing", path,
				 s->members[i].name, schema_name);
			return false;
		}
	}
	return true;
}

static bool validate_value(struct json_object *v, const struct type *t, const char *path, char *why,
			   size_t whylen)
{
	char sub[256];
	size_t i, n;
	int k;

	if (!v) {
		if (t->nullable)
			return true;
		snprintf(why, whylen, "%s: null where the schema does not allow it", path);
		return false;
	}
	switch (t->kind) {
	case K_U64:
		if (json_object_is_type(v, json_type_int) && json_object_get_int64(v) >= 0)
			return true;
		snprintf(why, whylen, "%s: expected u64, got %s", path,
			 json_object_to_json_string(v));
		return false;
	case K_STRING:
		if (json_object_is_type(v, json_type_string))
			return true;
		break;
	case K_BOOL:
		if (json_object_is_type(v, json_type_boolean))
			return true;
		break;
	case K_ENUM:
		if (!json_object_is_type(v, json_type_string))
			break;
		for (k = 0; k < t->n_values; k++)
			if (!strcmp(json_object_get_string(v), t->values[k]))
				return true;
		snprintf(why, whylen, "%s: \"%s\" is not one of the documented values", path,
			 json_object_get_string(v));
		return false;
	case K_OBJECT:
		return validate_object(v, t->ref, path, why, whylen);
	case K_ARRAY:
		if (!json_object_is_type(v, json_type_array))
			break;
		n = json_object_array_length(v);
		for (i = 0; i < n; i++) {
			snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
			/* "array of u64", "array of string": scalars, not a documented object */
			if (!strcmp(t->ref, "u64") || !strcmp(t->ref, "string")) {
				struct type elem = {.kind = t->ref[0] == 'u' ? K_U64 : K_STRING};

				if (!validate_value(json_object_array_get_idx(v, i), &elem, sub,
						    why, whylen))
					return false;
				continue;
			}
			if (!validate_object(json_object_array_get_idx(v, i), t->ref, sub, why,
					     whylen))
				return false;
		}
		return true;
	}
	snprintf(why, whylen, "%s: wrong type %s", path,
		 json_type_to_name(json_object_get_type(v)));
	return false;
}

/* Parse text as exactly one JSON value and check it against a type such as "array of redirect". */
static void assert_schema(const char *text, const char *type_text)
{
	struct json_object *obj;
	struct json_tokener *tok;
	struct type t;
	char why[512];
	bool ok;

	assert_int_equal(parse_type(type_text, &t, why, sizeof(why)), 0);
	tok = json_tokener_new();
	obj = json_tokener_parse_ex(tok, text, (int)strlen(text));
	if (json_tokener_get_error(tok) != json_tokener_success)
		fail_msg("not one JSON value (%s): %s",
			 json_tokener_error_desc(json_tokener_get_error(tok)), text);
	if (strspn(text + json_tokener_get_parse_end(tok), " \n") !=
	    strlen(text + json_tokener_get_parse_end(tok)))
		fail_msg("more than one JSON value: %s", text);
	json_tokener_free(tok);
	ok = validate_value(obj, &t, "$", why, sizeof(why));
	json_object_put(obj);
	if (!ok)
		fail_msg("%s\nin: %s", why, text);
}

/* ---- canned daemon ------------------------------------------------------------------------ */

static const char list_response[] =
    "{\"ok\":true,\"redirects\":["
    "{\"id\":1,\"name\":\"logs\",\"listen\":\"UNIX-RECV:/run/vsockmap/logs.sock\","
    "\"target\":\"VSOCK-CONNECT:2:5001\",\"client\":null,\"datapath\":\"kernel\","
    "\"datapath_in\":\"daemon\",\"state\":\"open\",\"age_ms\":4100,\"bytes_out\":105,"
    "\"packets_out\":5,\"bytes_in\":0,\"packets_in\":0,\"client_cookie\":null,"
    "\"target_cookie\":null,\"target_backlog_skbs\":null,\"client_rcvq_bytes\":null},"
    "{\"id\":17,\"name\":\"echo\",\"listen\":\"UNIX-LISTEN:/run/vsockmap/echo.sock\","
    "\"target\":\"VSOCK-CONNECT:2:5000\",\"client\":{\"pid\":2001,\"uid\":4000000,"
    "\"gid\":4000000,\"comm\":\"evil name\\t\\u001b\"},\"datapath\":\"daemon\","
    "\"datapath_in\":\"daemon\",\"state\":\"half-closed\",\"age_ms\":7384000,"
    "\"bytes_out\":18446744073709551615,\"packets_out\":12,\"bytes_in\":7,\"packets_in\":1,"
    "\"client_cookie\":8193,\"target_cookie\":8194,\"target_backlog_skbs\":null,"
    "\"client_rcvq_bytes\":0},"
    "{\"id\":4,\"name\":\"echo\",\"listen\":\"UNIX-LISTEN:/run/vsockmap/echo.sock\","
    "\"target\":\"VSOCK-CONNECT:2:5000\",\"client\":{\"pid\":194,\"uid\":0,\"gid\":0,"
    "\"comm\":\"socat\"},\"datapath\":\"kernel\",\"datapath_in\":\"daemon\","
    "\"state\":\"open\",\"age_ms\":2634,\"bytes_out\":3145728,\"packets_out\":379,"
    "\"bytes_in\":3145728,\"packets_in\":116,\"client_cookie\":4097,\"target_cookie\":4098,"
    "\"target_backlog_skbs\":0,\"client_rcvq_bytes\":0}]}";

#define REDIRECT_4                                                                                 \
	"{\"id\":4,\"name\":\"echo\",\"listen\":\"UNIX-LISTEN:/run/vsockmap/echo.sock\","          \
	"\"target\":\"VSOCK-CONNECT:2:5000\",\"client\":{\"pid\":194,\"uid\":0,\"gid\":0,"         \
	"\"comm\":\"socat\"},\"datapath\":\"kernel\",\"datapath_in\":\"daemon\","                  \
	"\"state\":\"%s\",\"age_ms\":62634,\"bytes_out\":3145728,\"packets_out\":379,"             \
	"\"bytes_in\":3145728,\"packets_in\":116,\"client_cookie\":4097,"                          \
	"\"target_cookie\":4098,\"target_backlog_skbs\":3,\"client_rcvq_bytes\":0}"

static const char show_response[] = "{\"ok\":true,\"redirect\":" REDIRECT_4 "}";
static const char close_response[] = "{\"ok\":true,\"redirect\":" REDIRECT_4 "}";

static const char listeners_response[] =
    "{\"ok\":true,\"listeners\":["
    "{\"name\":\"echo\",\"listen\":\"UNIX-LISTEN:/run/vsockmap/echo.sock\",\"type\":\"stream\","
    "\"path\":\"/run/vsockmap/echo.sock\",\"mode\":\"0660\",\"uid\":0,\"gid\":4000000,"
    "\"accepted\":12,\"refused\":0,\"refused_uid_limit\":0,\"failed\":1,\"live\":2,"
    "\"limit\":null,\"allow_uid\":[0,1000],"
    "\"allow_gid\":null},"
    "{\"name\":\"logs\",\"listen\":\"UNIX-RECV:/run/vsockmap/logs.sock\",\"type\":\"dgram\","
    "\"path\":\"/run/vsockmap/logs.sock\",\"mode\":null,\"uid\":null,\"gid\":null,"
    "\"accepted\":null,\"refused\":null,\"refused_uid_limit\":null,\"failed\":null,"
    "\"live\":1,\"limit\":null,\"allow_uid\":"
    "null,\"allow_gid\":null}]}";

static const char stats_response[] =
    "{\"ok\":true,\"stats\":{\"uptime_ms\":3723456,\"accepted\":12,\"refused\":0,"
    "\"refused_uid_limit\":0,\"failed\":1,"
    "\"live\":3,\"bytes_out\":6291561,\"packets_out\":763,\"bytes_in\":6291456,"
    "\"packets_in\":232,\"late_inserts\":0,\"listeners\":["
    "{\"name\":\"echo\",\"type\":\"stream\",\"accepted\":12,\"refused\":0,"
    "\"refused_uid_limit\":0,\"failed\":1,"
    "\"live\":2,\"bytes_out\":6291456,\"packets_out\":758,\"bytes_in\":6291456,"
    "\"packets_in\":232},"
    "{\"name\":\"logs\",\"type\":\"dgram\",\"accepted\":null,\"refused\":null,"
    "\"refused_uid_limit\":null,\"failed\":null,"
    "\"live\":1,\"bytes_out\":105,\"packets_out\":5,\"bytes_in\":0,\"packets_in\":0}]}}";

static const char status_response[] =
    "{\"ok\":true,\"status\":{\"version\":\"0.1.0\",\"pid\":591,\"uptime_ms\":128945,"
    "\"config\":\"/etc/vsockmap/vsockmap.conf\",\"control\":{\"path\":"
    "\"/run/vsockmap/control.sock\",\"mode\":\"0660\",\"group\":\"vsockmap\","
    "\"admin_group\":\"vsockadm\",\"role\":\"read\"},\"kernel\":{"
    "\"release\":\"6.12.95+deb12-cloud-amd64\",\"lockdown\":\"none\","
    "\"probe\":false,\"probe_error\":\"no cgroup v2 hierarchy shows the daemon's cgroup\","
    "\"iterator\":false,\"iterator_error\":\"refused by the kernel: EPERM\","
    "\"btf\":\"/sys/kernel/btf/vmlinux\",\"bpf_object_sha256\":\"97d704b63d48\","
    "\"fastpath\":\"counted\",\"insert_takes_queued\":true,\"shutdown_unhashes_peer\":true,"
    "\"backlog_wakes\":false,"
    "\"msg_verdict_runs\":3},\"drain\":\"timed\",\"datapath\":\"kernel\",\"datapath_reason\":null,"
    "\"listeners\":["
    "{\"name\":\"echo\",\"listen\":\"UNIX-LISTEN:/run/vsockmap/echo.sock\",\"target\":"
    "\"VSOCK-CONNECT:2:5000\",\"datapath\":\"daemon\",\"datapath_in\":\"daemon\","
    "\"datapath_reason\":\"vsock, and this kernel leaves a full target's backlog to a "
    "one-jiffy retry (no sk_psock_start_write_space: kernel/ patch 1)\"},"
    "{\"name\":\"logs\",\"listen\":\"UNIX-RECV:/run/vsockmap/logs.sock\",\"target\":"
    "\"TCP-CONNECT:127.0.0.1:5001\",\"datapath\":\"kernel\",\"datapath_in\":\"daemon\","
    "\"datapath_reason\":null}],"
    "\"redirects\":2,\"late_inserts\":0}}";

static const char no_such_redirect[] =
    "{\"ok\":false,\"error\":\"no redirect with id 99\",\"errno\":2}";
static const char reload_response[] =
    "{\"ok\":true,\"reload\":{\"added\":1,\"removed\":2,\"unchanged\":3}}";

struct canned {
	const char *command;
	uint64_t id;	  /* 0: any */
	const char *name; /* NULL: any */
	const char *response;
	const char *response_schema;
};

/* fastpath=permanent: the kernel's way is not counted. */
static const char show_uncounted[] =
    "{\"ok\":true,\"redirect\":{\"id\":5,\"name\":\"echo\",\"listen\":"
    "\"UNIX-LISTEN:/run/vsockmap/echo.sock\",\"target\":\"TCP-CONNECT:127.0.0.1:80\","
    "\"client\":null,\"datapath\":\"kernel\",\"datapath_in\":\"daemon\",\"state\":\"open\","
    "\"age_ms\":1000,\"bytes_out\":null,\"packets_out\":null,\"bytes_in\":12,"
    "\"packets_in\":1,\"client_cookie\":4099,\"target_cookie\":4100,"
    "\"target_backlog_skbs\":0,\"client_rcvq_bytes\":null}}";

static char close_text[2048], show_text[2048];

static const struct canned canned[] = {
    {"list", 0, NULL, list_response, "object list-response"}, /* unfiltered: the CLI filters */
    {"show", 4, NULL, show_text, "object show-response"},
    {"show", 5, NULL, show_uncounted, "object show-response"},
    {"show", 0, NULL, no_such_redirect, "object error"},
    {"close", 4, NULL, close_text, "object close-response"},
    {"close", 0, NULL, no_such_redirect, "object error"},
    {"listeners", 0, NULL, listeners_response, "object listeners-response"},
    {"stats", 0, NULL, stats_response, "object stats-response"},
    {"status", 0, NULL, status_response, "object status-response"},
    {"reload", 0, NULL, reload_response, "object reload-response"},
};

static char sock_dir[64], sock_path[128], ctl_path[PATH_MAX];
static pid_t daemon_pid;

static const char *answer(struct json_object *req)
{
	struct json_object *v;
	const char *command = NULL, *name = NULL;
	uint64_t id = 0;
	size_t i;

	if (json_object_object_get_ex(req, "command", &v))
		command = json_object_get_string(v);
	if (json_object_object_get_ex(req, "id", &v))
		id = json_object_get_uint64(v);
	if (json_object_object_get_ex(req, "name", &v))
		name = json_object_get_string(v);
	for (i = 0; command && i < sizeof(canned) / sizeof(canned[0]); i++) {
		const struct canned *c = &canned[i];

		if (strcmp(c->command, command) || (c->id && c->id != id))
			continue;
		if (c->name && (!name || strcmp(c->name, name)))
			continue;
		return c->response;
	}
	return "{\"ok\":false,\"error\":\"the fake daemon has no answer for this\",\"errno\":95}";
}

static void serve(int lfd)
{
	for (;;) {
		struct line_buffer lb;
		struct json_object *req;
		const char *resp;
		char *line;
		size_t len;
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0)
			continue;
		line_buffer_init(&lb, CONTROL_REQUEST_MAX);
		while (line_buffer_fill(&lb, fd, 4096) > 0) {
			while (line_buffer_next(&lb, &line, &len) > 0) {
				if (control_parse_line(line, len, &req, NULL, 0) < 0)
					continue;
				resp = answer(req);
				json_object_put(req);
				if (write(fd, resp, strlen(resp)) < 0 || write(fd, "\n", 1) < 0)
					break;
			}
		}
		line_buffer_free(&lb);
		close(fd);
	}
}

static int start_daemon(void **state)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char exe[PATH_MAX];
	ssize_t n;
	int lfd;

	(void)state;
	load_schemas();
	snprintf(show_text, sizeof(show_text), show_response, "open");
	snprintf(close_text, sizeof(close_text), close_response, "closing");

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	/* $(OUTPUT)/tests/test_ctl_output -> $(OUTPUT)/vsockmapctl */
	snprintf(ctl_path, sizeof(ctl_path), "%s/../vsockmapctl", dirname(exe));
	if (access(ctl_path, X_OK))
		fail_msg("%s: %s (build it first: make)", ctl_path, strerror(errno));

	strcpy(sock_dir, "/tmp/vsockmapctl-test-XXXXXX");
	assert_non_null(mkdtemp(sock_dir));
	snprintf(sock_path, sizeof(sock_path), "%s/control.sock", sock_dir);
	memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 16), 0);
	daemon_pid = fork();
	assert_true(daemon_pid >= 0);
	if (daemon_pid == 0) {
		serve(lfd);
		_exit(0);
	}
	close(lfd);
	return 0;
}

static int stop_daemon(void **state)
{
	(void)state;
	if (daemon_pid > 0) {
		kill(daemon_pid, SIGKILL);
		waitpid(daemon_pid, NULL, 0);
	}
	unlink(sock_path);
	rmdir(sock_dir);
	return 0;
}

/* ---- running vsockmapctl ----------------------------------------------------------------- */

struct run {
	int status; /* exit code */
	char out[16384];
	char err[4096];
};

static void slurp(int fd, char *buf, size_t size)
{
	ssize_t n;
	size_t len;

	lseek(fd, 0, SEEK_SET);
	n = read(fd, buf, size - 1);
	len = n > 0 ? (size_t)n : 0;
	buf[len] = '\0';
	close(fd);
}

/* Run vsockmapctl with the arguments up to NULL; "@SOCK" stands for the fake daemon. */
static void ctl(struct run *r, ...)
{
	char *argv[32], outname[] = "/tmp/vsockmapctl-out-XXXXXX",
			errname[] = "/tmp/vsockmapctl-err-XXXXXX";
	int argc = 0, out, err, status;
	const char *a;
	va_list ap;
	pid_t pid;

	argv[argc++] = ctl_path;
	va_start(ap, r);
	while ((a = va_arg(ap, const char *)) && argc < 31)
		argv[argc++] = (char *)(strcmp(a, "@SOCK") ? a : sock_path);
	va_end(ap);
	argv[argc] = NULL;

	out = mkstemp(outname);
	err = mkstemp(errname);
	assert_true(out >= 0 && err >= 0);
	unlink(outname);
	unlink(errname);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(out, 1);
		dup2(err, 2);
		execv(ctl_path, argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	r->status = WEXITSTATUS(status);
	slurp(out, r->out, sizeof(r->out));
	slurp(err, r->err, sizeof(r->err));
}

static unsigned int count_lines(const char *s)
{
	unsigned int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void expect_output(const struct run *r, int status, const char *out)
{
	if (r->status != status || strcmp(r->out, out))
		fail_msg("exit %d (want %d)\n--- got:\n%s--- want:\n%s--- stderr:\n%s", r->status,
			 status, r->out, out, r->err);
	assert_string_equal(r->err, "");
}

/* ---- golden plain output ---------------------------------------------------------------- */

static void test_list_plain(void **state)
{
	struct run r;

	(void)state;
	ctl(&r, "-s", "@SOCK", "list", NULL);
	expect_output(&r, 0,
		      "ID  NAME  CLIENT                                         "
		      "LISTEN                               TARGET                "
		      "DATAPATH       STATE          AGE             BYTES_OUT  BYTES_IN  "
		      "PKTS_OUT  PKTS_IN\n"
		      " 1  logs  -                                              "
		      "UNIX-RECV:/run/vsockmap/logs.sock    VSOCK-CONNECT:2:5001  "
		      "kernel/daemon  open          4.1s                   105         0  "
		      "       5        0\n"
		      "17  echo  pid=2001(evil?name?\?),uid=4000000,gid=4000000  "
		      "UNIX-LISTEN:/run/vsockmap/echo.sock  VSOCK-CONNECT:2:5000  "
		      "daemon/daemon  half-closed  2h03m  18446744073709551615         7  "
		      "      12        1\n"
		      " 4  echo  pid=194(socat),uid=0,gid=0                     "
		      "UNIX-LISTEN:/run/vsockmap/echo.sock  VSOCK-CONNECT:2:5000  "
		      "kernel/daemon  open          2.6s               3145728   3145728  "
		      "     379      116\n");
}

static void test_list_no_legend_and_name(void **state)
{
	struct run r;

	(void)state;
	/* Options may follow the command, "l" is list (a prefix of listeners too), and the
	 * CLI filters what an older daemon may not have. */
	ctl(&r, "-s", "@SOCK", "l", "--no-legend", "--name", "echo", NULL);
	expect_output(
	    &r, 0,
	    "17  echo  pid=2001(evil?name?\?),uid=4000000,gid=4000000  "
	    "UNIX-LISTEN:/run/vsockmap/echo.sock  VSOCK-CONNECT:2:5000  "
	    "daemon/daemon  half-closed  2h03m  18446744073709551615        7   12    1\n"
	    " 4  echo  pid=194(socat),uid=0,gid=0                     "
	    "UNIX-LISTEN:/run/vsockmap/echo.sock  VSOCK-CONNECT:2:5000  "
	    "kernel/daemon  open          2.6s               3145728  3145728  379  116\n");
}

static void test_show_plain(void **state)
{
	struct run r;

	(void)state;
	ctl(&r, "--socket", "@SOCK", "show", "4", NULL);
	expect_output(&r, 0,
		      "id:              4\n"
		      "name:            echo\n"
		      "state:           open\n"
		      "client:          pid=194(socat),uid=0,gid=0\n"
		      "listen:          UNIX-LISTEN:/run/vsockmap/echo.sock\n"
		      "target:          VSOCK-CONNECT:2:5000\n"
		      "age:             1m02s\n"
		      "out:             3145728 bytes, 379 packets via kernel\n"
		      "in:              3145728 bytes, 116 packets via daemon\n"
		      "client cookie:   4097\n"
		      "target cookie:   4098\n"
		      "target backlog:  3 skbs\n"
		      "client rcvq:     0 bytes\n");
}

static void test_show_uncounted(void **state)
{
	struct run r;

	(void)state;
	ctl(&r, "-s", "@SOCK", "show", "5", NULL);
	expect_output(&r, 0,
		      "id:              5\n"
		      "name:            echo\n"
		      "state:           open\n"
		      "client:          -\n"
		      "listen:          UNIX-LISTEN:/run/vsockmap/echo.sock\n"
		      "target:          TCP-CONNECT:127.0.0.1:80\n"
		      "age:             1.0s\n"
		      "out:             not counted (fastpath=permanent), via kernel\n"
		      "in:              12 bytes, 1 packets via daemon\n"
		      "client cookie:   4099\n"
		      "target cookie:   4100\n"
		      "target backlog:  0 skbs\n"
		      "client rcvq:     -\n");
}

static void test_listeners_plain(void **state)
{
	struct run r;

	(void)state;
	ctl(&r, "-s", "@SOCK", "listeners", NULL);
	expect_output(
	    &r, 0,
	    "NAME  TYPE    LISTEN                               MODE  OWNER         "
	    "ACCEPTED  REFUSED  FAILED  LIVE  LIMIT\n"
	    "echo  stream  UNIX-LISTEN:/run/vsockmap/echo.sock  0660  root:4000000        "
	    "12        0       1     2      -\n"
	    "logs  dgram   UNIX-RECV:/run/vsockmap/logs.sock    -     -                   "
	    " -        -       -     1      -\n");
}

static void test_stats_plain(void **state)
{
	struct run r;

	(void)state;
	ctl(&r, "-s", "@SOCK", "stats", NULL);
	expect_output(
	    &r, 0,
	    "Since start 1h02m ago.\n"
	    "\n"
	    "NAME     TYPE    ACCEPTED  REFUSED  FAILED  LIVE  BYTES_OUT  BYTES_IN  "
	    "PKTS_OUT  PKTS_IN\n"
	    "echo     stream        12        0       1     2    6291456   6291456       "
	    "758      232\n"
	    "logs     dgram          -        -       -     1        105         0         "
	    "5        0\n"
	    "(total)  -             12        0       1     3    6291561   6291456       "
	    "763      232\n");
	ctl(&r, "-s", "@SOCK", "stats", "--no-legend", NULL);
	expect_output(&r, 0,
		      "echo     stream  12  0  1  2  6291456  6291456  758  232\n"
		      "logs     dgram    -  -  -  1      105        0    5    0\n"
		      "(total)  -       12  0  1  3  6291561  6291456  763  232\n");
}

static void test_status_plain(void **state)
{
	struct run r;

	(void)state;
	ctl(&r, "-s", "@SOCK", "status", NULL);
	expect_output(
	    &r, 0,
	    "version:     0.1.0\n"
	    "pid:         591\n"
	    "uptime:      2m08s\n"
	    "config:      /etc/vsockmap/vsockmap.conf\n"
	    "control:     /run/vsockmap/control.sock (mode 0660, group vsockmap, admin group "
	    "vsockadm)\n"
	    "role:        read (list, show, listeners, stats, status; close and reload need "
	    "admin)\n"
	    "kernel:      6.12.95+deb12-cloud-amd64\n"
	    "data path:   kernel (sockmap)\n"
	    "lockdown:    none\n"
	    "probe:       no: no cgroup v2 hierarchy shows the daemon's cgroup\n"
	    "iterator:    no: refused by the kernel: EPERM\n"
	    "drain:       timed\n"
	    "fastpath:    counted (every message counted; sk_msg verdict ran 3 times)\n"
	    "insert:      at once (the kernel passes what a client queued to the verdict)\n"
	    "unix peer:   a unix server's shutdown() takes its peer out of the sockhash\n"
	    "backlog:     a full target's backlog waits out a one-jiffy retry\n"
	    "btf:         /sys/kernel/btf/vmlinux\n"
	    "bpf object:  97d704b63d48\n"
	    "redirects:   2 live, 0 late inserts\n"
	    "\n"
	    "NAME  LISTEN                               TARGET                      DATAPATH       "
	    "WHY\n"
	    "echo  UNIX-LISTEN:/run/vsockmap/echo.sock  VSOCK-CONNECT:2:5000        daemon/daemon  "
	    "vsock, and this kernel leaves a full target's backlog to a one-jiffy retry (no "
	    "sk_psock_start_write_space: kernel/ patch 1)\n"
	    "logs  UNIX-RECV:/run/vsockmap/logs.sock    TCP-CONNECT:127.0.0.1:5001  kernel/daemon  "
	    "-\n");
}

static void test_close_plain(void **state)
{
	struct run r;

	(void)state;
	ctl(&r, "-s", "@SOCK", "close", "4", NULL);
	expect_output(&r, 0,
		      "redirect 4 [echo] is closing: what both ends sent is delivered, then each "
		      "gets EOF\n");
}

/* ---- Prometheus text format --------------------------------------------------------------- */

static void test_stats_prometheus(void **state)
{
	regex_t sample, help, type;
	char *saveptr, *line, names[32][64];
	int n_names = 0, i;
	struct run r;

	(void)state;
	ctl(&r, "-s", "@SOCK", "stats", "--prometheus", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.err, "");
	assert_non_null(strstr(r.out, "vsockmap_uptime_seconds 3723.456\n"));
	assert_non_null(
	    strstr(r.out, "vsockmap_bytes_total{listener=\"echo\",direction=\"out\"} 6291456\n"));
	assert_non_null(
	    strstr(r.out, "vsockmap_bytes_total{listener=\"logs\",direction=\"out\"} 105\n"));
	assert_non_null(
	    strstr(r.out, "vsockmap_connections_accepted_total{listener=\"echo\"} 12\n"));
	/* null means "not applicable": no sample rather than a made-up 0. */
	assert_null(strstr(r.out, "vsockmap_connections_accepted_total{listener=\"logs\"}"));

	assert_int_equal(regcomp(&sample,
				 "^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{[a-zA-Z_][a-zA-Z0-9_]*=\"[^\"]*\""
				 "(,[a-zA-Z_][a-zA-Z0-9_]*=\"[^\"]*\")*\\})? [0-9]+(\\.[0-9]+)?$",
				 REG_EXTENDED),
			 0);
	assert_int_equal(regcomp(&help, "^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .+$", REG_EXTENDED), 0);
	assert_int_equal(
	    regcomp(&type, "^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge)$", REG_EXTENDED), 0);
	for (line = strtok_r(r.out, "\n", &saveptr); line; line = strtok_r(NULL, "\n", &saveptr)) {
		regmatch_t m[2];

		if (!regexec(&help, line, 2, m, 0))
			continue;
		if (!regexec(&type, line, 2, m, 0)) {
			assert_true(n_names < 32);
			snprintf(names[n_names++], sizeof(names[0]), "%.*s",
				 (int)(m[1].rm_eo - m[1].rm_so), line + m[1].rm_so);
			continue;
		}
		if (regexec(&sample, line, 2, m, 0))
			fail_msg("not a Prometheus sample line: \"%s\"", line);
		/* Every sample belongs to the metric whose TYPE came last. */
		assert_true(n_names > 0);
		if ((int)strlen(names[n_names - 1]) != m[1].rm_eo - m[1].rm_so ||
		    strncmp(line, names[n_names - 1], strlen(names[n_names - 1])))
			fail_msg("sample \"%s\" follows TYPE of %s", line, names[n_names - 1]);
	}
	for (i = 0; i < n_names; i++)
		assert_true(strstr(names[i], "vsockmap_") == names[i]);
	regfree(&sample);
	regfree(&help);
	regfree(&type);
}

/* ---- JSON against the documented schema ------------------------------------------------- */

static void test_canned_responses_match_schema(void **state)
{
	size_t i;

	(void)state;
	/* The fake daemon's answers are examples of the protocol too. */
	for (i = 0; i < sizeof(canned) / sizeof(canned[0]); i++)
		assert_schema(canned[i].response, canned[i].response_schema);
}

static void expect_invalid(const char *text, const char *type_text, const char *why_part)
{
	struct json_object *obj = json_tokener_parse(text);
	char why[512] = "";
	struct type t;

	assert_non_null(obj);
	assert_int_equal(parse_type(type_text, &t, why, sizeof(why)), 0);
	if (validate_value(obj, &t, "$", why, sizeof(why)))
		fail_msg("accepted as %s: %s", type_text, text);
	json_object_put(obj);
	if (!strstr(why, why_part))
		fail_msg("rejected for \"%s\", want \"%s\"", why, why_part);
}

/* The checker is not vacuous: each kind of drift is caught. */
static void test_schema_checker_rejects(void **state)
{
	(void)state;
	expect_invalid("{\"pid\":1,\"uid\":0,\"gid\":0,\"cwd\":\"/\"}", "object client",
		       "$.cwd: not documented in object client");
	expect_invalid("{\"pid\":1,\"uid\":0}", "object client",
		       "member \"gid\" of object client is missing");
	expect_invalid("{\"pid\":-1,\"uid\":0,\"gid\":0}", "object client", "$.pid: expected u64");
	expect_invalid("{\"pid\":\"1\",\"uid\":0,\"gid\":0}", "object client",
		       "$.pid: expected u64");
	expect_invalid("{\"pid\":1,\"uid\":null,\"gid\":0}", "object client",
		       "$.uid: null where the schema does not allow it");
	expect_invalid("[{\"name\":\"a\",\"type\":\"seqpacket\"}]", "array of listener-stats",
		       "$[0].type: \"seqpacket\" is not one of the documented values");
	expect_invalid("{\"ok\":true}", "object nonexistent", "no \"Object `nonexistent`\" table");
}

static void expect_json(const char *type, ...)
{
	const char *args[16] = {NULL};
	int n = 0;
	struct run r;
	va_list ap;

	va_start(ap, type);
	while ((args[n] = va_arg(ap, const char *)) && n < 15)
		n++;
	va_end(ap);
	args[n] = NULL;
	ctl(&r, "-s", "@SOCK", args[0], args[1], args[2], args[3], args[4], NULL);
	if (r.status != 0)
		fail_msg("exit %d: %s%s", r.status, r.out, r.err);
	assert_string_equal(r.err, "");
	assert_int_equal(count_lines(r.out), 1);
	assert_schema(r.out, type);
}

static void test_json_schema(void **state)
{
	(void)state;
	expect_json("array of redirect", "-j", "list", NULL);
	expect_json("array of redirect", "list", "--json", "--name", "echo", NULL);
	expect_json("object redirect", "-j", "show", "4", NULL);
	expect_json("array of listener", "-j", "listeners", NULL);
	expect_json("object stats", "-j", "stats", NULL);
	expect_json("object status", "-j", "status", NULL);
	expect_json("object redirect", "close", "4", "-j", NULL);
}

static void test_json_list_filtered(void **state)
{
	struct json_object *arr;
	struct run r;

	(void)state;
	ctl(&r, "-s", "@SOCK", "-j", "list", "--name", "logs", NULL);
	assert_int_equal(r.status, 0);
	arr = json_tokener_parse(r.out);
	assert_non_null(arr);
	assert_int_equal(json_object_array_length(arr), 1);
	json_object_put(arr);
}

static void test_pretty_is_json(void **state)
{
	struct run r;

	(void)state;
	ctl(&r, "-s", "@SOCK", "-p", "show", "4", NULL);
	assert_int_equal(r.status, 0);
	assert_true(count_lines(r.out) > 10);
	assert_schema(r.out, "object redirect");
}

/* ---- errors and exit codes --------------------------------------------------------------- */

static void test_daemon_errors(void **state)
{
	struct run r;

	(void)state;
	ctl(&r, "-s", "@SOCK", "show", "99", NULL);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.out, "");
	assert_string_equal(r.err, "vsockmapctl: vsockmapd: no redirect with id 99\n");

	ctl(&r, "-s", "@SOCK", "-j", "close", "99", NULL);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "");
	assert_schema(r.out, "object error");
	assert_non_null(strstr(r.out, "\"errno\":2}"));

	ctl(&r, "-s", "@SOCK", "reload", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "vsockmapd reloaded its configuration: 1 added, 2 removed, 3 "
				   "unchanged\n");
	ctl(&r, "-s", "@SOCK", "reload", "-j", NULL);
	assert_int_equal(r.status, 0);
	assert_schema(r.out, "object reload");
}

static void test_no_daemon(void **state)
{
	char path[160];
	struct run r;

	(void)state;
	snprintf(path, sizeof(path), "%s/none.sock", sock_dir);
	ctl(&r, "-s", path, "list", NULL);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.out, "");
	assert_int_equal(count_lines(r.err), 1);
	assert_non_null(strstr(r.err, "cannot reach vsockmapd at "));
	assert_non_null(strstr(r.err, "No such file or directory (is vsockmapd running?)\n"));

	ctl(&r, "-s", path, "status", "-j", NULL);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "");
	assert_int_equal(count_lines(r.out), 1);
	assert_schema(r.out, "object error");
}

static void expect_usage_error(const char *want, ...)
{
	const char *args[8] = {NULL};
	struct run r;
	va_list ap;
	int n = 0;

	va_start(ap, want);
	while ((args[n] = va_arg(ap, const char *)) && n < 7)
		n++;
	va_end(ap);
	ctl(&r, "-s", "@SOCK", args[0], args[1], args[2], args[3], NULL);
	if (r.status != 2 || !strstr(r.err, want))
		fail_msg("exit %d, stderr \"%s\"; want 2 and \"%s\"", r.status, r.err, want);
	assert_string_equal(r.out, "");
}

static void test_usage_errors(void **state)
{
	struct run r;

	(void)state;
	expect_usage_error("unknown command \"lsit\" (did you mean \"list\"?)", "lsit", NULL);
	expect_usage_error("ambiguous command \"s\": show, stats, status", "s", NULL);
	expect_usage_error("show: missing redirect ID", "show", NULL);
	expect_usage_error("show: \"abc\" is not a redirect ID", "show", "abc", NULL);
	expect_usage_error("close: \"0\" is not a redirect ID", "close", "0", NULL);
	expect_usage_error("close: unexpected argument \"5\"", "close", "4", "5", NULL);
	expect_usage_error("list: unexpected argument \"x\"", "list", "x", NULL);
	expect_usage_error("option --name needs an argument", "list", "--name", NULL);
	expect_usage_error("unknown option --bogus", "status", "--bogus", NULL);
	ctl(&r, "-s", "@SOCK", NULL);
	assert_int_equal(r.status, 2);

	/* With -j the usage error is JSON on stdout, too. */
	ctl(&r, "-j", "frobnicate", NULL);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.err, "");
	assert_schema(r.out, "object error");
	ctl(&r, "-s", "@SOCK", "stats", "--prometheus", "-j", NULL);
	assert_int_equal(r.status, 2);
	assert_schema(r.out, "object error");
	assert_non_null(strstr(r.out, "--prometheus and --json exclude each other"));
}

static void test_help_and_version(void **state)
{
	struct run r;

	(void)state;
	ctl(&r, "--version", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "vsockmapctl " VSOCKMAP_VERSION "\n");
	ctl(&r, "-h", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "  close ID "));
	assert_non_null(strstr(r.out, "  stats [--prometheus] "));
	ctl(&r, "show", "-h", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "Usage: vsockmapctl [OPTIONS] show ID\n\n"
				   "Show everything known about one redirect.\n");
	ctl(&r, "help", "listeners", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "Usage: vsockmapctl [OPTIONS] listeners\n\n"
				   "List the configured listeners and their counters.\n");
}

/* test_ctl_output --validate TYPE: check the JSON on standard input (end-to-end tests). */
static int validate_stdin(const char *type_text)
{
	struct json_object *obj;
	char buf[1 << 20], why[512];
	struct type t;
	size_t n;

	load_schemas();
	n = fread(buf, 1, sizeof(buf) - 1, stdin);
	buf[n] = '\0';
	if (parse_type(type_text, &t, why, sizeof(why))) {
		fprintf(stderr, "%s\n", why);
		return 2;
	}
	obj = json_tokener_parse(buf);
	if (!obj || !validate_value(obj, &t, "$", why, sizeof(why))) {
		fprintf(stderr, "%s\n", obj ? why : "not JSON");
		json_object_put(obj);
		return 1;
	}
	json_object_put(obj);
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_schema_checker_rejects),
	    cmocka_unit_test(test_canned_responses_match_schema),
	    cmocka_unit_test(test_list_plain),
	    cmocka_unit_test(test_list_no_legend_and_name),
	    cmocka_unit_test(test_show_plain),
	    cmocka_unit_test(test_show_uncounted),
	    cmocka_unit_test(test_listeners_plain),
	    cmocka_unit_test(test_stats_plain),
	    cmocka_unit_test(test_status_plain),
	    cmocka_unit_test(test_close_plain),
	    cmocka_unit_test(test_stats_prometheus),
	    cmocka_unit_test(test_json_schema),
	    cmocka_unit_test(test_json_list_filtered),
	    cmocka_unit_test(test_pretty_is_json),
	    cmocka_unit_test(test_daemon_errors),
	    cmocka_unit_test(test_no_daemon),
	    cmocka_unit_test(test_usage_errors),
	    cmocka_unit_test(test_help_and_version),
	};

	if (argc == 3 && !strcmp(argv[1], "--validate"))
		return validate_stdin(argv[2]);
	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
