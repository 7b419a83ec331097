// SPDX-License-Identifier: GPL-2.0-only
/*
 * vsockmapctl: query and steer vsockmapd over its control socket.
 *
 * Commands live in one table and are matched by unique prefix, like bpftool. Every listing
 * has a plain printer (aligned columns, like ss) and a JSON twin; in JSON mode errors are
 * JSON on stdout too, so scripts never have to parse stderr. Exit status: 0 success, 1 the
 * operation failed, 2 the command line is wrong.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "address.h"
#include "config.h"
#include "control_proto.h"
#include "ctl.h"

const char *arg_socket = CONFIG_DEFAULT_CONTROL_PATH;
bool arg_json;
bool arg_pretty;
bool arg_legend = true;

#define OPT_VERSION 0x1ff

static const struct cmd *current_cmd;
static void print_help(void);
static void print_cmd_usage(const struct cmd *cmd);

/* ---- output and errors ------------------------------------------------------------------ */

int print_json(struct json_object *obj)
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

int fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report_verror(err, fmt, ap);
	va_end(ap);
	return EXIT_FAILURE;
}

int usage_error(const char *fmt, ...)
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
	if (optopt > 0 && optopt < 0x100)
		return usage_error("unknown option -%c", optopt);
	return usage_error("unknown option %s", opt);
}

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
		if (current_cmd)
			print_cmd_usage(current_cmd);
		else
			print_help();
		return EXIT_SUCCESS;
	default:
		return option_error(c, argv);
	}
}

int parse_command_options(int argc, char **argv, const char *shortopts,
			  const struct option *options,
			  int (*on_option)(int c, const char *arg, void *ctx), void *ctx,
			  int *first)
{
	char optstring[32];
	int c, ret;

	snprintf(optstring, sizeof(optstring), ":%sjph", shortopts);
	optind = 0;
	while ((c = getopt_long(argc, argv, optstring, options, NULL)) >= 0) {
		if (c != 'j' && c != 'p' && c != 'h' && c != OPT_NO_LEGEND && c != '?' &&
		    c != ':' && on_option) {
			ret = on_option(c, optarg, ctx);
			if (ret)
				return ret;
			continue;
		}
		ret = common_option(c, argv);
		if (ret >= 0)
			return ret;
	}
	*first = optind;
	return -1;
}

/* ---- talking to the daemon ---------------------------------------------------------------- */

static int report_transport_error(int r)
{
	const char *path = arg_socket;

	switch (r) {
	case -ENOENT:
	case -ECONNREFUSED:
		return fail(-r, "cannot reach vsockmapd at %s: %s (is vsockmapd running?)", path,
			    strerror(-r));
	case -EACCES:
	case -EPERM:
		return fail(-r,
			    "cannot reach vsockmapd at %s: %s (root and the control-group of "
			    "vsockmap.conf may)",
			    path, strerror(-r));
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
}

int call_daemon(const char *command, struct json_object *args, const char *want, int want_type,
		struct json_object **payload)
{
	struct json_object *req = args ? args : json_object_new_object(), *resp = NULL, *member;
	const char *text;
	int r, ret;

	*payload = NULL;
	if (!req || json_object_object_add(req, "command", json_object_new_string(command)) < 0) {
		json_object_put(req);
		return fail(ENOMEM, "cannot build the request: %s", strerror(ENOMEM));
	}
	r = control_request(arg_socket, req, &resp, CONTROL_DEFAULT_TIMEOUT_MS);
	json_object_put(req);
	if (r < 0)
		return report_transport_error(r);

	r = control_response_status(resp, &text);
	if (r == -EPROTO) {
		ret = fail(EPROTO, "vsockmapd at %s sent an answer without \"ok\"", arg_socket);
	} else if (r < 0 && arg_json) {
		/* The daemon's own error object, unchanged. */
		print_json(resp);
		ret = EXIT_FAILURE;
	} else if (r < 0) {
		ret = fail(-r, "vsockmapd: %s", text);
	} else if (!want) {
		*payload = resp;
		return 0;
	} else if (!json_object_object_get_ex(resp, want, &member) ||
		   !json_object_is_type(member, want_type)) {
		ret = fail(EPROTO, "vsockmapd at %s answered \"%s\" without a \"%s\" %s",
			   arg_socket, command, want, json_type_to_name(want_type));
	} else {
		*payload = json_object_get(member);
		ret = 0;
	}
	json_object_put(resp);
	return ret;
}

/* ---- help and dispatch ------------------------------------------------------------------- */

static int cmd_help(int argc, char **argv);

static const struct cmd commands[] = {
    {"list", cmd_list, "[--name NAME]", "list live redirects"},
    {"show", cmd_show, "ID", "show everything known about one redirect"},
    {"listeners", cmd_listeners, "", "list the configured listeners and their counters"},
    {"stats", cmd_stats, "[--prometheus]", "show totals since the daemon started"},
    {"status", cmd_status, "", "show the daemon's version, uptime and kernel features"},
    {"close", cmd_close, "ID", "close one redirect cleanly"},
    {"reload", cmd_reload, "", "ask the daemon to re-read its configuration"},
    {"help", cmd_help, "[COMMAND]", "show this help, or a command's usage"},
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

/*
 * Exact name, else a prefix of one command only, or of several whose shortest is a prefix
 * of the others ("l" and "li" are list, "liste" is listeners). *err is -ENOENT (no match) or
 * -EINVAL (ambiguous).
 */
static const struct cmd *find_cmd(const char *word, int *err)
{
	const struct cmd *found = NULL;
	size_t i, len = strlen(word);

	*err = -ENOENT;
	for (i = 0; i < N_COMMANDS; i++)
		if (strcmp(commands[i].name, word) == 0)
			return &commands[i];
	for (i = 0; i < N_COMMANDS && len > 0; i++) {
		if (strncmp(commands[i].name, word, len))
			continue;
		if (!found || strlen(commands[i].name) < strlen(found->name))
			found = &commands[i];
	}
	for (i = 0; found && i < N_COMMANDS; i++) {
		if (!strncmp(commands[i].name, word, len) &&
		    strncmp(commands[i].name, found->name, strlen(found->name))) {
			*err = -EINVAL;
			return NULL;
		}
	}
	return found;
}

static void print_cmd_usage(const struct cmd *cmd)
{
	printf("Usage: %s [OPTIONS] %s%s%s\n\n%c%s.\n", PROGRAM, cmd->name, *cmd->args ? " " : "",
	       cmd->args, cmd->help[0] - 'a' + 'A', cmd->help + 1);
}

static int cmd_help(int argc, char **argv)
{
	const struct cmd *cmd;
	int err;

	if (argc < 2) {
		print_help();
		return EXIT_SUCCESS;
	}
	if (argc > 2)
		return usage_error("help: unexpected argument \"%s\"", argv[2]);
	cmd = find_cmd(argv[1], &err);
	if (!cmd)
		return usage_error("help: unknown command \"%s\"", argv[1]);
	print_cmd_usage(cmd);
	return EXIT_SUCCESS;
}

static void print_help(void)
{
	char left[64];
	size_t i;

	printf("Usage: %s [OPTIONS] COMMAND [ARGS]\n"
	       "\n"
	       "Query and steer vsockmapd through its control socket.\n"
	       "\n"
	       "Commands (any unique prefix works):\n",
	       PROGRAM);
	for (i = 0; i < N_COMMANDS; i++) {
		snprintf(left, sizeof(left), "%s %s", commands[i].name, commands[i].args);
		printf("  %-24s %s\n", left, commands[i].help);
	}
	printf("\n"
	       "Options:\n"
	       "  -s, --socket PATH        control socket (default %s)\n"
	       "  -j, --json               print JSON, errors too\n"
	       "  -p, --pretty             print indented JSON (implies --json)\n"
	       "      --no-legend          do not print column headers\n"
	       "  -h, --help               show this help\n"
	       "      --version            show the version\n"
	       "\n"
	       "Exit status: 0 success, 1 failure, 2 usage error.\n"
	       "See vsockmapctl(8).\n",
	       CONFIG_DEFAULT_CONTROL_PATH);
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
	current_cmd = cmd;
	ret = cmd->func(argc - optind, argv + optind);

	if (fflush(stdout) != 0 || ferror(stdout)) {
		arg_json = false; /* stdout is what failed */
		return fail(errno, "cannot write to standard output: %s", strerror(errno));
	}
	return ret;
}
