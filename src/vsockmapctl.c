// SPDX-License-Identifier: GPL-2.0-only
/*
 * vsockmapctl: query vsockmapd over its control socket.
 *
 * Commands live in one table and are matched by unique prefix, like bpftool. Every listing
 * has a plain printer (aligned columns, like ss) and a JSON twin; in JSON mode errors are
 * JSON on stdout too, so scripts never have to parse stderr.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "address.h"
#include "config.h"
#include "control_proto.h"

#define PROGRAM	   "vsockmapctl"
#define EXIT_USAGE 2

static const char *arg_socket = CONFIG_DEFAULT_CONTROL_PATH;
static bool arg_json;
static bool arg_pretty;
static bool arg_legend = true;

enum {
	OPT_NO_LEGEND = 0x100,
	OPT_VERSION,
};

struct cmd {
	const char *name;
	int (*func)(int argc, char **argv);
	const char *args;
	const char *help;
};

static const struct cmd *find_cmd(const char *word, int *err);

/* ---- errors ------------------------------------------------------------------------ */

static int print_json(struct json_object *obj)
{
	int flags = JSON_C_TO_STRING_NOSLASHESCAPE;

	flags |=
	    arg_pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED : JSON_C_TO_STRING_PLAIN;
	printf("%s\n", json_object_to_json_string_ext(obj, flags));
	return EXIT_SUCCESS;
}

static void __attribute__((format(printf, 2, 0)))
report_verror(int err, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (arg_json) {
		struct json_object *obj = control_error_response(err, msg);

		if (obj) {
			print_json(obj);
			json_object_put(obj);
			return;
		}
	}
	fprintf(stderr, "%s: %s\n", PROGRAM, msg);
}

/* Report a failure (plain on stderr, JSON on stdout) and return EXIT_FAILURE. */
static int __attribute__((format(printf, 2, 3))) fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report_verror(err, fmt, ap);
	va_end(ap);
	return EXIT_FAILURE;
}

/* Report a command line mistake and return EXIT_USAGE. */
static int __attribute__((format(printf, 1, 2))) usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report_verror(EINVAL, fmt, ap);
	va_end(ap);
	if (!arg_json)
		fprintf(stderr, "Try '%s --help' for more information.\n", PROGRAM);
	return EXIT_USAGE;
}

/* getopt was called with opterr = 0 and a leading ':' in optstring. */
static int option_error(int c, char **argv)
{
	const char *opt = argv[optind - 1];

	if (c == ':')
		return usage_error("option %s needs an argument", opt);
	if (optopt)
		return usage_error("unknown option -%c", optopt);
	return usage_error("unknown option %s", opt);
}

/* ---- talking to the daemon ---------------------------------------------------------- */

/*
 * Send req and return 0 with a successful *resp, or report why not and return an exit
 * code. In JSON mode a daemon's own error object is passed through unchanged.
 */
static int call_daemon(struct json_object *req, struct json_object **resp)
{
	const char *path = arg_socket;
	const char *text;
	int r, ret;

	r = control_request(path, req, resp, CONTROL_DEFAULT_TIMEOUT_MS);
	switch (r) {
	case 0:
		break;
	case -ENOENT:
	case -ECONNREFUSED:
		return fail(-r, "cannot reach vsockmapd at %s: %s (is vsockmapd running?)", path,
			    strerror(-r));
	case -EACCES:
	case -EPERM:
		return fail(-r, "cannot reach vsockmapd at %s: %s (are you root?)", path,
			    strerror(-r));
	case -ETIMEDOUT:
		return fail(-r, "vsockmapd at %s did not answer within %d ms", path,
			    CONTROL_DEFAULT_TIMEOUT_MS);
	case -EPROTO:
		return fail(-r, "vsockmapd at %s sent a malformed answer", path);
	case -ECONNRESET:
	case -EPIPE:
		return fail(-r, "vsockmapd at %s closed the connection without answering", path);
	case -EMSGSIZE:
		return fail(
		    -r, "request to or answer from vsockmapd at %s is too long for one line", path);
	default:
		return fail(-r, "cannot reach vsockmapd at %s: %s", path, strerror(-r));
	}

	r = control_response_status(*resp, &text);
	if (r == 0)
		return 0;
	if (r == -EPROTO) {
		ret = fail(EPROTO, "vsockmapd at %s sent an answer without \"ok\"", path);
	} else if (arg_json) {
		print_json(*resp);
		ret = EXIT_FAILURE;
	} else {
		ret = fail(-r, "vsockmapd: %s", text);
	}
	json_object_put(*resp);
	*resp = NULL;
	return ret;
}

/* ---- plain tables --------------------------------------------------------------------- */

struct column {
	const char *title;
	bool right; /* numbers align right */
};

struct table {
	const struct column *cols;
	size_t n_cols;
	char **cells; /* n_rows * n_cols malloc'd strings */
	size_t n_rows;
};

static int table_add_row(struct table *t, char **row)
{
	char **cells = realloc(t->cells, (t->n_rows + 1) * t->n_cols * sizeof(*cells));
	size_t i;

	if (!cells)
		return -ENOMEM;
	t->cells = cells;
	for (i = 0; i < t->n_cols; i++)
		cells[t->n_rows * t->n_cols + i] = row[i];
	t->n_rows++;
	return 0;
}

static int table_print(const struct table *t)
{
	size_t *width = calloc(t->n_cols, sizeof(*width));
	size_t r, c, w;
	const char *s;

	if (!width)
		return -ENOMEM;
	for (c = 0; c < t->n_cols; c++) {
		width[c] = arg_legend ? strlen(t->cols[c].title) : 0;
		for (r = 0; r < t->n_rows; r++) {
			w = strlen(t->cells[r * t->n_cols + c]);
			if (w > width[c])
				width[c] = w;
		}
	}
	/* Row 0 is the legend. */
	for (r = arg_legend ? 0 : 1; r <= t->n_rows; r++) {
		for (c = 0; c < t->n_cols; c++) {
			s = r == 0 ? t->cols[c].title : t->cells[(r - 1) * t->n_cols + c];
			if (t->cols[c].right)
				printf("%*s", (int)width[c], s);
			else if (c + 1 < t->n_cols)
				printf("%-*s", (int)width[c], s);
			else
				fputs(s, stdout); /* no trailing blanks */
			fputs(c + 1 < t->n_cols ? "  " : "\n", stdout);
		}
	}
	free(width);
	return 0;
}

static void table_free(struct table *t)
{
	size_t i;

	for (i = 0; i < t->n_rows * t->n_cols; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->n_rows = 0;
}

/* ---- field formatting ----------------------------------------------------------------- */

/* A copy safe for a column: no control characters, no blanks that would split it. */
static char *cell_text(const char *s)
{
	char *copy, *p;

	copy = strdup(s && *s ? s : "-");
	if (!copy)
		return NULL;
	for (p = copy; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			*p = '?';
	return copy;
}

static char *cell_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *cell_printf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	return r < 0 ? NULL : s;
}

static const char *get_string(struct json_object *obj, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static bool get_u64(struct json_object *obj, const char *key, uint64_t *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_int))
		return false;
	*out = json_object_get_uint64(v);
	return true;
}

static char *cell_u64(struct json_object *obj, const char *key)
{
	uint64_t v;

	if (!get_u64(obj, key, &v))
		return strdup("-");
	return cell_printf("%" PRIu64, v);
}

/* 3.2s, 5m02s, 1h03m, 2d04h: two units at most, like systemd's timespans. */
static char *cell_age(struct json_object *obj, const char *key)
{
	uint64_t ms, s;

	if (!get_u64(obj, key, &ms))
		return strdup("-");
	s = ms / 1000;
	if (s < 60)
		return cell_printf("%" PRIu64 ".%" PRIu64 "s", s, ms % 1000 / 100);
	if (s < 3600)
		return cell_printf("%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	if (s < 86400)
		return cell_printf("%" PRIu64 "h%02" PRIu64 "m", s / 3600, s % 3600 / 60);
	return cell_printf("%" PRIu64 "d%02" PRIu64 "h", s / 86400, s % 86400 / 3600);
}

/* pid=123,uid=0(curl) for a connected client (comm in parentheses), - for a dgram listener. */
static char *cell_client(struct json_object *obj)
{
	struct json_object *client;
	const char *comm;
	uint64_t pid, uid;
	char *s, *safe;

	if (!json_object_object_get_ex(obj, "client", &client) ||
	    !json_object_is_type(client, json_type_object))
		return strdup("-");
	if (!get_u64(client, "pid", &pid) || !get_u64(client, "uid", &uid))
		return strdup("-");
	comm = get_string(client, "comm");
	if (!comm || !*comm)
		return cell_printf("pid=%" PRIu64 ",uid=%" PRIu64, pid, uid);
	safe = cell_text(comm);
	if (!safe)
		return NULL;
	s = cell_printf("pid=%" PRIu64 ",uid=%" PRIu64 "(%s)", pid, uid, safe);
	free(safe);
	return s;
}

/* ---- list ----------------------------------------------------------------------------- */

enum list_col {
	LIST_ID,
	LIST_NAME,
	LIST_CLIENT,
	LIST_TARGET,
	LIST_STATE,
	LIST_AGE,
	LIST_BYTES_OUT,
	LIST_BYTES_IN,
	LIST_PKTS_OUT,
	LIST_PKTS_IN,
	LIST_N_COLS
};

static const struct column list_columns[LIST_N_COLS] = {
    [LIST_ID] = {"ID", true},
    [LIST_NAME] = {"NAME", false},
    [LIST_CLIENT] = {"CLIENT", false},
    [LIST_TARGET] = {"TARGET", false},
    [LIST_STATE] = {"STATE", false},
    [LIST_AGE] = {"AGE", true},
    [LIST_BYTES_OUT] = {"BYTES_OUT", true},
    [LIST_BYTES_IN] = {"BYTES_IN", true},
    [LIST_PKTS_OUT] = {"PKTS_OUT", true},
    [LIST_PKTS_IN] = {"PKTS_IN", true},
};

static int list_add_row(struct table *t, struct json_object *redirect)
{
	char *row[LIST_N_COLS];
	size_t i;
	int r;

	row[LIST_ID] = cell_u64(redirect, "id");
	row[LIST_NAME] = cell_text(get_string(redirect, "name"));
	row[LIST_CLIENT] = cell_client(redirect);
	row[LIST_TARGET] = cell_text(get_string(redirect, "target"));
	row[LIST_STATE] = cell_text(get_string(redirect, "state"));
	row[LIST_AGE] = cell_age(redirect, "age_ms");
	row[LIST_BYTES_OUT] = cell_u64(redirect, "bytes_out");
	row[LIST_BYTES_IN] = cell_u64(redirect, "bytes_in");
	row[LIST_PKTS_OUT] = cell_u64(redirect, "packets_out");
	row[LIST_PKTS_IN] = cell_u64(redirect, "packets_in");

	r = 0;
	for (i = 0; i < LIST_N_COLS; i++)
		if (!row[i])
			r = -ENOMEM;
	if (r == 0)
		r = table_add_row(t, row);
	if (r < 0)
		for (i = 0; i < LIST_N_COLS; i++)
			free(row[i]);
	return r;
}

static int print_redirects_plain(struct json_object *redirects)
{
	struct table t = {.cols = list_columns, .n_cols = LIST_N_COLS};
	size_t i, n = json_object_array_length(redirects);
	int r;

	for (i = 0; i < n; i++) {
		r = list_add_row(&t, json_object_array_get_idx(redirects, i));
		if (r < 0) {
			table_free(&t);
			return fail(-r, "cannot format the redirect list: %s", strerror(-r));
		}
	}
	r = table_print(&t);
	table_free(&t);
	if (r < 0)
		return fail(-r, "cannot print the redirect list: %s", strerror(-r));
	return EXIT_SUCCESS;
}

/* Keep only redirects of section name; the daemon filters too, an older one may not. */
static struct json_object *filter_by_name(struct json_object *redirects, const char *name)
{
	struct json_object *out = json_object_new_array();
	size_t i, n = json_object_array_length(redirects);
	const char *s;

	if (!out)
		return NULL;
	for (i = 0; i < n; i++) {
		struct json_object *entry = json_object_array_get_idx(redirects, i);

		s = get_string(entry, "name");
		if (!name || (s && strcmp(s, name) == 0))
			json_object_array_add(out, json_object_get(entry));
	}
	return out;
}

/* Options every command accepts after its name, too: "vsockmapctl list -j". */
/* clang-format off */
#define COMMON_LONG_OPTIONS					\
	{ "json", no_argument, NULL, 'j' },			\
	{ "pretty", no_argument, NULL, 'p' },			\
	{ "no-legend", no_argument, NULL, OPT_NO_LEGEND },	\
	{ "help", no_argument, NULL, 'h' }
/* clang-format on */

static void print_help(void);

/* Returns -1 when c was a common option (handled), or an exit code. */
static int common_option(int c, char **argv)
{
	switch (c) {
	case 'j':
		arg_json = true;
		return -1;
	case 'p':
		arg_json = arg_pretty = true;
		return -1;
	case OPT_NO_LEGEND:
		arg_legend = false;
		return -1;
	case 'h':
		print_help();
		return EXIT_SUCCESS;
	default:
		return option_error(c, argv);
	}
}

static int cmd_list(int argc, char **argv)
{
	static const struct option options[] = {
	    {"name", required_argument, NULL, 'n'}, COMMON_LONG_OPTIONS, {}};
	struct json_object *req, *resp = NULL, *redirects, *shown;
	const char *name = NULL;
	int c, ret;

	optind = 0;
	while ((c = getopt_long(argc, argv, ":n:jph", options, NULL)) >= 0) {
		if (c == 'n') {
			name = optarg;
			continue;
		}
		ret = common_option(c, argv);
		if (ret >= 0)
			return ret;
	}
	if (optind < argc)
		return usage_error("list: unexpected argument \"%s\"", argv[optind]);

	req = json_object_new_object();
	if (!req || json_object_object_add(req, "command", json_object_new_string("list")) < 0 ||
	    (name && json_object_object_add(req, "name", json_object_new_string(name)) < 0)) {
		json_object_put(req);
		return fail(ENOMEM, "cannot build the request: %s", strerror(ENOMEM));
	}
	ret = call_daemon(req, &resp);
	json_object_put(req);
	if (ret != 0)
		return ret;

	if (!json_object_object_get_ex(resp, "redirects", &redirects) ||
	    !json_object_is_type(redirects, json_type_array)) {
		json_object_put(resp);
		return fail(EPROTO, "vsockmapd at %s sent a list without a \"redirects\" array",
			    arg_socket);
	}
	shown = filter_by_name(redirects, name);
	if (!shown)
		ret = fail(ENOMEM, "cannot filter the redirect list: %s", strerror(ENOMEM));
	else if (arg_json)
		ret = print_json(shown);
	else
		ret = print_redirects_plain(shown);
	json_object_put(shown);
	json_object_put(resp);
	return ret;
}

/* ---- help and dispatch ---------------------------------------------------------------- */

static int cmd_help(int argc, char **argv)
{
	const struct cmd *cmd;
	int err;

	if (argc < 2) {
		print_help();
		return EXIT_SUCCESS;
	}
	cmd = find_cmd(argv[1], &err);
	if (!cmd)
		return usage_error("help: unknown command \"%s\"", argv[1]);
	printf("Usage: %s [OPTIONS] %s %s\n\n%s.\n", PROGRAM, cmd->name, cmd->args, cmd->help);
	return EXIT_SUCCESS;
}

/* New commands (show, listeners, stats, status, close, reload) go here. */
static const struct cmd commands[] = {
    {"list", cmd_list, "[--name NAME]", "list live redirects"},
    {"help", cmd_help, "[COMMAND]", "show this help, or a command's usage"},
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void print_help(void)
{
	char left[64];
	size_t i;

	printf("Usage: %s [OPTIONS] COMMAND [ARGS]\n"
	       "\n"
	       "Query vsockmapd through its control socket.\n"
	       "\n"
	       "Commands (any unique prefix works):\n",
	       PROGRAM);
	for (i = 0; i < N_COMMANDS; i++) {
		snprintf(left, sizeof(left), "%s %s", commands[i].name, commands[i].args);
		printf("  %-22s %s\n", left, commands[i].help);
	}
	printf("\n"
	       "Options:\n"
	       "  -s, --socket PATH      control socket (default %s)\n"
	       "  -j, --json             print JSON, errors too\n"
	       "  -p, --pretty           print indented JSON (implies --json)\n"
	       "      --no-legend        do not print column headers\n"
	       "  -h, --help             show this help\n"
	       "      --version          show the version\n"
	       "\n"
	       "Exit status: 0 success, 1 failure, 2 usage error.\n",
	       CONFIG_DEFAULT_CONTROL_PATH);
}

/* Exact name, else unique prefix. *err is -ENOENT (no match) or -EINVAL (ambiguous). */
static const struct cmd *find_cmd(const char *word, int *err)
{
	const struct cmd *found = NULL;
	size_t i, len = strlen(word);

	*err = -ENOENT;
	for (i = 0; i < N_COMMANDS; i++) {
		if (strcmp(commands[i].name, word) == 0)
			return &commands[i];
		if (len > 0 && strncmp(commands[i].name, word, len) == 0) {
			if (found) {
				*err = -EINVAL;
				return NULL;
			}
			found = &commands[i];
		}
	}
	return found;
}

static int unknown_command(const char *word, int err)
{
	const char *names[N_COMMANDS];
	char candidates[256] = "";
	const char *hint;
	size_t i;

	for (i = 0; i < N_COMMANDS; i++) {
		names[i] = commands[i].name;
		if (err == -EINVAL && strncmp(names[i], word, strlen(word)) == 0)
			snprintf(candidates + strlen(candidates),
				 sizeof(candidates) - strlen(candidates), "%s%s",
				 candidates[0] ? ", " : "", names[i]);
	}
	if (err == -EINVAL)
		return usage_error("ambiguous command \"%s\": %s", word, candidates);
	hint = address_closest_name(word, names, N_COMMANDS);
	if (hint)
		return usage_error("unknown command \"%s\" (did you mean \"%s\"?)", word, hint);
	return usage_error("unknown command \"%s\"", word);
}

/* Before getopt runs, so even a bad option is reported as JSON when -j is present. */
static void prescan_json(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (!strcmp(argv[i], "-j") || !strcmp(argv[i], "--json") ||
		    !strcmp(argv[i], "-p") || !strcmp(argv[i], "--pretty"))
			arg_json = true;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {{"socket", required_argument, NULL, 's'},
						{"version", no_argument, NULL, OPT_VERSION},
						COMMON_LONG_OPTIONS,
						{}};
	const struct cmd *cmd;
	int c, ret, err;

	prescan_json(argc, argv);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:s:jph", options, NULL)) >= 0) {
		switch (c) {
		case 's':
			if (!*optarg)
				return usage_error("--socket needs a non-empty path");
			arg_socket = optarg;
			break;
		case OPT_VERSION:
			printf("%s %s\n", PROGRAM, VSOCKMAP_VERSION);
			return EXIT_SUCCESS;
		default:
			ret = common_option(c, argv);
			if (ret >= 0)
				return ret;
		}
	}
	if (optind >= argc)
		return usage_error("no command given");

	cmd = find_cmd(argv[optind], &err);
	if (!cmd)
		return unknown_command(argv[optind], err);
	ret = cmd->func(argc - optind, argv + optind);

	if (fflush(stdout) != 0 || ferror(stdout)) {
		arg_json = false; /* stdout is what failed */
		return fail(errno, "cannot write to standard output: %s", strerror(errno));
	}
	return ret;
}
