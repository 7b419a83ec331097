// SPDX-License-Identifier: GPL-2.0-only
/*
 * What every vsockmapctl command is made of: JSON out, errors (plain on stderr, JSON on
 * stdout with -j), option parsing, the one request to the daemon, and the usual shapes of a
 * command (no options, an ID argument, query and print).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "config.h"
#include "control_proto.h"
#include "ctl.h"

const char *arg_socket = CONFIG_DEFAULT_CONTROL_PATH;
bool arg_json;
bool arg_pretty;
bool arg_legend = true;
void (*ctl_show_help)(void);

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
int common_option(int c, char **argv)
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
		if (ctl_show_help)
			ctl_show_help();
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
			    "cannot reach vsockmapd at %s: %s (root and the members of "
			    "control-group or control-admin-group in vsockmap.conf may)",
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

/* ---- the shapes of a command ------------------------------------------------------------ */

/* The usual end of a command: print payload as JSON or through its plain printer. */
int print_payload(struct json_object *payload, int (*plain)(struct json_object *, FILE *),
		  const char *what)
{
	int r;

	if (arg_json)
		return print_json(payload);
	r = plain(payload, stdout);
	if (r < 0)
		return fail(-r, "cannot print %s: %s", what, strerror(-r));
	return EXIT_SUCCESS;
}

/* Commands without options of their own: check the argument count. */
int simple_options(int argc, char **argv, int n_args, int *first)
{
	static const struct option options[] = {COMMON_LONG_OPTIONS, {}};
	int ret;

	ret = parse_command_options(argc, argv, "", options, NULL, NULL, first);
	if (ret >= 0)
		return ret;
	if (argc - *first > n_args)
		return usage_error("%s: unexpected argument \"%s\"", argv[0],
				   argv[*first + n_args]);
	if (argc - *first < n_args)
		return usage_error("%s: missing redirect ID (see \"%s list\")", argv[0], PROGRAM);
	return -1;
}

/* "42" into a redirect id: decimal, 1 to 2^64-1. */
int parse_redirect_id(const char *text, uint64_t *id)
{
	uint64_t v = 0;
	const char *p;

	if (!*text)
		return -EINVAL;
	for (p = text; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (v == 0)
		return -ERANGE;
	*id = v;
	return 0;
}

/* ID argument of show and close, as a request {"id":N}. */
int id_request(int argc, char **argv, struct json_object **args, uint64_t *id)
{
	int first, ret;

	ret = simple_options(argc, argv, 1, &first);
	if (ret >= 0)
		return ret;
	if (parse_redirect_id(argv[first], id) < 0)
		return usage_error("%s: \"%s\" is not a redirect ID (a number from 1, as listed "
				   "by \"%s list\")",
				   argv[0], argv[first], PROGRAM);
	*args = json_object_new_object();
	if (!*args || json_object_object_add(*args, "id", json_object_new_uint64(*id)) < 0) {
		json_object_put(*args);
		return fail(ENOMEM, "cannot build the request: %s", strerror(ENOMEM));
	}
	return -1;
}

/* A command with no options or arguments whose answer's member key has the given type. */
int query_and_print(int argc, char **argv, const char *command, int type,
		    int (*print)(struct json_object *payload, FILE *out), const char *what)
{
	struct json_object *payload;
	int first, ret;

	ret = simple_options(argc, argv, 0, &first);
	if (ret >= 0)
		return ret;
	ret = call_daemon(command, NULL, command, type, &payload);
	if (ret)
		return ret;
	ret = print_payload(payload, print, what);
	json_object_put(payload);
	return ret;
}
