// SPDX-License-Identifier: GPL-2.0-only
/*
 * vsockmapctl's redirect commands: list, show and close, with their plain printers. Each
 * reads the daemon's JSON, the very object -j prints, so the plain and the JSON output never
 * tell different stories.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "ctl.h"

/* "3145728 bytes, 379 packets via kernel" for show; NULL if out of memory. */
static char *cell_direction(struct json_object *obj, const char *dir, const char *datapath_key)
{
	char bytes_key[16], packets_key[16], *path, *s = NULL;
	uint64_t bytes, packets;

	snprintf(bytes_key, sizeof(bytes_key), "bytes_%s", dir);
	snprintf(packets_key, sizeof(packets_key), "packets_%s", dir);
	path = cell_string(obj, datapath_key);
	if (!path)
		return NULL;
	if (get_u64(obj, bytes_key, &bytes) && get_u64(obj, packets_key, &packets))
		s = cell_printf("%" PRIu64 " bytes, %" PRIu64 " packets via %s", bytes, packets,
				path);
	else if (json_object_object_get_ex(obj, bytes_key, NULL))
		s = cell_printf("not counted (fastpath=permanent), via %s", path); /* null */
	else
		s = strdup("-");
	free(path);
	return s;
}

static char *cell_with_unit(struct json_object *obj, const char *key, const char *unit)
{
	uint64_t v;

	if (!get_u64(obj, key, &v))
		return strdup("-");
	return cell_printf("%" PRIu64 " %s", v, unit);
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

/* ---- list ------------------------------------------------------------------------------ */

enum list_col {
	LIST_ID,
	LIST_NAME,
	LIST_CLIENT,
	LIST_LISTEN,
	LIST_TARGET,
	LIST_DATAPATH,
	LIST_STATE,
	LIST_AGE,
	LIST_TRAFFIC, /* N_TRAFFIC_COLUMNS of them */
	LIST_N_COLS = LIST_TRAFFIC + N_TRAFFIC_COLUMNS
};

static const struct column list_columns[LIST_N_COLS] = {
    {"ID", true},	 {"NAME", false},  {"CLIENT", false}, {"LISTEN", false}, {"TARGET", false},
    {"DATAPATH", false}, {"STATE", false}, {"AGE", true},     TRAFFIC_COLUMNS,
};

static void redirect_row(char **row, struct json_object *o)
{
	row[LIST_ID] = cell_u64(o, "id");
	row[LIST_NAME] = cell_string(o, "name");
	row[LIST_CLIENT] = cell_client(o);
	row[LIST_LISTEN] = cell_string(o, "listen");
	row[LIST_TARGET] = cell_string(o, "target");
	row[LIST_DATAPATH] = cell_datapath(o);
	row[LIST_STATE] = cell_string(o, "state");
	row[LIST_AGE] = cell_age(o, "age_ms");
	cells_traffic(row + LIST_TRAFFIC, o);
}

int print_redirects(struct json_object *redirects, FILE *out)
{
	struct table t = {.cols = list_columns, .n_cols = LIST_N_COLS, .legend = arg_legend};
	int r;

	table_add_rows(&t, redirects, redirect_row);
	r = table_print(&t, out);
	table_free(&t);
	return r;
}

/* ---- show ------------------------------------------------------------------------------- */

int print_redirect_detail(struct json_object *o, FILE *out)
{
	struct table t = {.cols = pair_columns, .n_cols = 2};
	int r;

	table_add_pair(&t, "id", cell_u64(o, "id"));
	table_add_pair(&t, "name", cell_string(o, "name"));
	table_add_pair(&t, "state", cell_string(o, "state"));
	table_add_pair(&t, "client", cell_client(o));
	table_add_pair(&t, "listen", cell_string(o, "listen"));
	table_add_pair(&t, "target", cell_string(o, "target"));
	table_add_pair(&t, "age", cell_age(o, "age_ms"));
	table_add_pair(&t, "out", cell_direction(o, "out", "datapath"));
	table_add_pair(&t, "in", cell_direction(o, "in", "datapath_in"));
	table_add_pair(&t, "client cookie", cell_u64(o, "client_cookie"));
	table_add_pair(&t, "target cookie", cell_u64(o, "target_cookie"));
	table_add_pair(&t, "target backlog", cell_with_unit(o, "target_backlog_skbs", "skbs"));
	table_add_pair(&t, "client rcvq", cell_with_unit(o, "client_rcvq_bytes", "bytes"));
	r = table_print(&t, out);
	table_free(&t);
	return r;
}
