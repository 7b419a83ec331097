// SPDX-License-Identifier: GPL-2.0-only
/*
 * vsockmapctl's commands. Each one sends one request, takes the payload member of the
 * answer, and prints it: as it is with -j (the schema is in docs/control-protocol.md), or
 * through its plain printer in ctl_table.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "ctl.h"

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

/* The usual end of a command: print payload as JSON or through its plain printer. */
static int print_payload(struct json_object *payload, int (*plain)(struct json_object *, FILE *),
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
static int simple_options(int argc, char **argv, int n_args, int *first)
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

/* ID argument of show and close, as a request {"id":N}. */
static int id_request(int argc, char **argv, struct json_object **args, uint64_t *id)
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

/* ---- list ------------------------------------------------------------------------------ */

static int list_option(int c, const char *arg, void *ctx)
{
	(void)c;
	*(const char **)ctx = arg;
	return 0;
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

int cmd_list(int argc, char **argv)
{
	static const struct option options[] = {
	    {"name", required_argument, NULL, 'n'}, COMMON_LONG_OPTIONS, {}};
	struct json_object *args = NULL, *redirects, *shown;
	const char *name = NULL;
	int first, ret;

	ret = parse_command_options(argc, argv, "n:", options, list_option, &name, &first);
	if (ret >= 0)
		return ret;
	if (first < argc)
		return usage_error("list: unexpected argument \"%s\"", argv[first]);
	if (name) {
		args = json_object_new_object();
		if (!args || json_object_object_add(args, "name", json_object_new_string(name))) {
			json_object_put(args);
			return fail(ENOMEM, "cannot build the request: %s", strerror(ENOMEM));
		}
	}
	ret = call_daemon("list", args, "redirects", json_type_array, &redirects);
	if (ret)
		return ret;
	shown = filter_by_name(redirects, name);
	json_object_put(redirects);
	if (!shown)
		return fail(ENOMEM, "cannot filter the redirect list: %s", strerror(ENOMEM));
	ret = print_payload(shown, print_redirects, "the redirect list");
	json_object_put(shown);
	return ret;
}

/* ---- show, close ---------------------------------------------------------------------- */

int cmd_show(int argc, char **argv)
{
	struct json_object *args = NULL, *redirect;
	uint64_t id;
	int ret;

	ret = id_request(argc, argv, &args, &id);
	if (ret >= 0)
		return ret;
	ret = call_daemon("show", args, "redirect", json_type_object, &redirect);
	if (ret)
		return ret;
	ret = print_payload(redirect, print_redirect_detail, "the redirect");
	json_object_put(redirect);
	return ret;
}

int cmd_close(int argc, char **argv)
{
	struct json_object *args = NULL, *redirect;
	const char *name;
	uint64_t id = 0;
	int ret;

	ret = id_request(argc, argv, &args, &id);
	if (ret >= 0)
		return ret;
	ret = call_daemon("close", args, "redirect", json_type_object, &redirect);
	if (ret)
		return ret;
	if (arg_json) {
		ret = print_json(redirect);
	} else {
		name = get_string(redirect, "name");
		printf("redirect %" PRIu64 " [%s] is closing: what both ends sent is delivered, "
		       "then each gets EOF\n",
		       id, name ? name : "?");
		ret = EXIT_SUCCESS;
	}
	json_object_put(redirect);
	return ret;
}

/* ---- listeners, stats, status ------------------------------------------------------------ */

/* A command with no options or arguments whose answer's member key has the given type. */
static int query_and_print(int argc, char **argv, const char *command, json_type type,
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

int cmd_listeners(int argc, char **argv)
{
	return query_and_print(argc, argv, "listeners", json_type_array, print_listeners,
			       "the listeners");
}

static int stats_option(int c, const char *arg, void *ctx)
{
	(void)c;
	(void)arg;
	*(bool *)ctx = true;
	return 0;
}

int cmd_stats(int argc, char **argv)
{
	static const struct option options[] = {
	    {"prometheus", no_argument, NULL, OPT_PROMETHEUS}, COMMON_LONG_OPTIONS, {}};
	struct json_object *stats;
	bool prometheus = false;
	int first, ret, r;

	ret = parse_command_options(argc, argv, "", options, stats_option, &prometheus, &first);
	if (ret >= 0)
		return ret;
	if (first < argc)
		return usage_error("stats: unexpected argument \"%s\"", argv[first]);
	if (prometheus && arg_json)
		return usage_error("stats: --prometheus and --json exclude each other");
	ret = call_daemon("stats", NULL, "stats", json_type_object, &stats);
	if (ret)
		return ret;
	if (prometheus) {
		r = print_stats_prometheus(stats, stdout);
		ret = r < 0 ? fail(-r, "cannot print the statistics: %s", strerror(-r))
			    : EXIT_SUCCESS;
	} else {
		ret = print_payload(stats, print_stats, "the statistics");
	}
	json_object_put(stats);
	return ret;
}

int cmd_status(int argc, char **argv)
{
	return query_and_print(argc, argv, "status", json_type_object, print_status, "the status");
}

/* ---- reload ------------------------------------------------------------------------------ */

int cmd_reload(int argc, char **argv)
{
	struct json_object *res;
	int first, ret;

	ret = simple_options(argc, argv, 0, &first);
	if (ret >= 0)
		return ret;
	/* An invalid file comes back as the daemon's "PATH:LINE: ..." error. */
	ret = call_daemon("reload", NULL, "reload", json_type_object, &res);
	if (ret)
		return ret;
	if (arg_json)
		ret = print_json(res);
	else
		printf("vsockmapd reloaded its configuration: %s added, %s removed, %s unchanged\n",
		       json_object_get_string(json_object_object_get(res, "added")),
		       json_object_get_string(json_object_object_get(res, "removed")),
		       json_object_get_string(json_object_object_get(res, "unchanged")));
	json_object_put(res);
	return ret;
}
