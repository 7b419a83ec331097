// SPDX-License-Identifier: GPL-2.0-only
/*
 * vsockmapctl's plain printers, one per command payload. Each reads the daemon's JSON, the
 * very object -j prints, so the plain and the JSON output never tell different stories.
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

enum list_col {
	LIST_ID,
	LIST_NAME,
	LIST_CLIENT,
	LIST_LISTEN,
	LIST_TARGET,
	LIST_DATAPATH,
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
    [LIST_LISTEN] = {"LISTEN", false},
    [LIST_TARGET] = {"TARGET", false},
    [LIST_DATAPATH] = {"DATAPATH", false},
    [LIST_STATE] = {"STATE", false},
    [LIST_AGE] = {"AGE", true},
    [LIST_BYTES_OUT] = {"BYTES_OUT", true},
    [LIST_BYTES_IN] = {"BYTES_IN", true},
    [LIST_PKTS_OUT] = {"PKTS_OUT", true},
    [LIST_PKTS_IN] = {"PKTS_IN", true},
};

int print_redirects(struct json_object *redirects, FILE *out)
{
	struct table t = {.cols = list_columns, .n_cols = LIST_N_COLS, .legend = arg_legend};
	size_t i, n = json_object_array_length(redirects);
	int r;

	for (i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(redirects, i);
		char *row[LIST_N_COLS];

		row[LIST_ID] = cell_u64(o, "id");
		row[LIST_NAME] = cell_string(o, "name");
		row[LIST_CLIENT] = cell_client(o);
		row[LIST_LISTEN] = cell_string(o, "listen");
		row[LIST_TARGET] = cell_string(o, "target");
		row[LIST_DATAPATH] = cell_datapath(o);
		row[LIST_STATE] = cell_string(o, "state");
		row[LIST_AGE] = cell_age(o, "age_ms");
		row[LIST_BYTES_OUT] = cell_u64(o, "bytes_out");
		row[LIST_BYTES_IN] = cell_u64(o, "bytes_in");
		row[LIST_PKTS_OUT] = cell_u64(o, "packets_out");
		row[LIST_PKTS_IN] = cell_u64(o, "packets_in");
		table_add_row(&t, row);
	}
	r = table_print(&t, out);
	table_free(&t);
	return r;
}

/* ---- show ------------------------------------------------------------------------------- */

static const struct column pair_columns[2] = {{"KEY", false}, {"VALUE", false}};

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

/* ---- listeners ----------------------------------------------------------------------------- */

enum listeners_col {
	LSN_NAME,
	LSN_TYPE,
	LSN_LISTEN,
	LSN_MODE,
	LSN_OWNER,
	LSN_ACCEPTED,
	LSN_REFUSED,
	LSN_FAILED,
	LSN_LIVE,
	LSN_LIMIT,
	LSN_N_COLS
};

static const struct column listeners_columns[LSN_N_COLS] = {
    [LSN_NAME] = {"NAME", false},      [LSN_TYPE] = {"TYPE", false},
    [LSN_LISTEN] = {"LISTEN", false},  [LSN_MODE] = {"MODE", false},
    [LSN_OWNER] = {"OWNER", false},    [LSN_ACCEPTED] = {"ACCEPTED", true},
    [LSN_REFUSED] = {"REFUSED", true}, [LSN_FAILED] = {"FAILED", true},
    [LSN_LIVE] = {"LIVE", true},       [LSN_LIMIT] = {"LIMIT", true},
};

int print_listeners(struct json_object *listeners, FILE *out)
{
	struct table t = {.cols = listeners_columns, .n_cols = LSN_N_COLS, .legend = arg_legend};
	size_t i, n = json_object_array_length(listeners);
	int r;

	for (i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(listeners, i);
		char *row[LSN_N_COLS];

		row[LSN_NAME] = cell_string(o, "name");
		row[LSN_TYPE] = cell_string(o, "type");
		row[LSN_LISTEN] = cell_string(o, "listen");
		row[LSN_MODE] = cell_string(o, "mode");
		row[LSN_OWNER] = cell_owner(o);
		row[LSN_ACCEPTED] = cell_u64(o, "accepted");
		row[LSN_REFUSED] = cell_u64(o, "refused");
		row[LSN_FAILED] = cell_u64(o, "failed");
		row[LSN_LIVE] = cell_u64(o, "live");
		row[LSN_LIMIT] = cell_u64(o, "limit");
		table_add_row(&t, row);
	}
	r = table_print(&t, out);
	table_free(&t);
	return r;
}

/* ---- stats ------------------------------------------------------------------------------- */

enum stats_col {
	STATS_NAME,
	STATS_TYPE,
	STATS_ACCEPTED,
	STATS_REFUSED,
	STATS_FAILED,
	STATS_LIVE,
	STATS_BYTES_OUT,
	STATS_BYTES_IN,
	STATS_PKTS_OUT,
	STATS_PKTS_IN,
	STATS_N_COLS
};

static const struct column stats_columns[STATS_N_COLS] = {
    [STATS_NAME] = {"NAME", false},	     [STATS_TYPE] = {"TYPE", false},
    [STATS_ACCEPTED] = {"ACCEPTED", true},   [STATS_REFUSED] = {"REFUSED", true},
    [STATS_FAILED] = {"FAILED", true},	     [STATS_LIVE] = {"LIVE", true},
    [STATS_BYTES_OUT] = {"BYTES_OUT", true}, [STATS_BYTES_IN] = {"BYTES_IN", true},
    [STATS_PKTS_OUT] = {"PKTS_OUT", true},   [STATS_PKTS_IN] = {"PKTS_IN", true},
};

static void stats_add_row(struct table *t, struct json_object *o, char *name, char *type)
{
	char *row[STATS_N_COLS];

	row[STATS_NAME] = name;
	row[STATS_TYPE] = type;
	row[STATS_ACCEPTED] = cell_u64(o, "accepted");
	row[STATS_REFUSED] = cell_u64(o, "refused");
	row[STATS_FAILED] = cell_u64(o, "failed");
	row[STATS_LIVE] = cell_u64(o, "live");
	row[STATS_BYTES_OUT] = cell_u64(o, "bytes_out");
	row[STATS_BYTES_IN] = cell_u64(o, "bytes_in");
	row[STATS_PKTS_OUT] = cell_u64(o, "packets_out");
	row[STATS_PKTS_IN] = cell_u64(o, "packets_in");
	table_add_row(t, row);
}

/* One row per listener and a "(total)" row (section names cannot hold parentheses). */
int print_stats(struct json_object *stats, FILE *out)
{
	struct table t = {.cols = stats_columns, .n_cols = STATS_N_COLS, .legend = arg_legend};
	struct json_object *listeners;
	size_t i, n = 0;
	char *uptime;
	int r;

	if (json_object_object_get_ex(stats, "listeners", &listeners) &&
	    json_object_is_type(listeners, json_type_array))
		n = json_object_array_length(listeners);
	for (i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(listeners, i);

		stats_add_row(&t, o, cell_string(o, "name"), cell_string(o, "type"));
	}
	stats_add_row(&t, stats, strdup("(total)"), strdup("-"));
	if (arg_legend && !t.error) {
		uptime = cell_age(stats, "uptime_ms");
		if (!uptime) {
			table_free(&t);
			return -ENOMEM;
		}
		fprintf(out, "Since start %s ago.\n\n", uptime);
		free(uptime);
	}
	r = table_print(&t, out);
	table_free(&t);
	return r;
}

/* ---- stats, Prometheus text format (node_exporter's textfile collector) ------------------ */

/* A label value: backslash, double quote and newline are escaped. */
static void print_label_value(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(out, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", out);
		else
			fputc(*s, out);
	}
}

struct metric {
	const char *name;
	const char *type;
	const char *help;
	const char *member;    /* in each listener object */
	const char *direction; /* label direction= for bytes and packets */
};

static const struct metric listener_metrics[] = {
    {"vsockmap_connections_accepted_total", "counter",
     "Client connections accepted by a stream listener.", "accepted", NULL},
    {"vsockmap_connections_refused_total", "counter",
     "Client connections turned away by a listener's connection limit.", "refused", NULL},
    {"vsockmap_connections_failed_total", "counter",
     "Client connections closed because the target could not be connected.", "failed", NULL},
    {"vsockmap_redirects_live", "gauge", "Live redirects; a datagram listener counts as one.",
     "live", NULL},
    {"vsockmap_bytes_total", "counter",
     "Bytes moved; direction out is client to target, in is target to client.", "bytes_out", "out"},
    {NULL, NULL, NULL, "bytes_in", "in"},
    {"vsockmap_packets_total", "counter",
     "Packets (socket buffers or datagrams) moved, per direction.", "packets_out", "out"},
    {NULL, NULL, NULL, "packets_in", "in"},
};

int print_stats_prometheus(struct json_object *stats, FILE *out)
{
	struct json_object *listeners;
	uint64_t v;
	size_t i, m, n = 0;

	if (get_u64(stats, "uptime_ms", &v))
		fprintf(out,
			"# HELP vsockmap_uptime_seconds Seconds since vsockmapd started.\n"
			"# TYPE vsockmap_uptime_seconds gauge\n"
			"vsockmap_uptime_seconds %" PRIu64 ".%03" PRIu64 "\n",
			v / 1000, v % 1000);
	if (json_object_object_get_ex(stats, "listeners", &listeners) &&
	    json_object_is_type(listeners, json_type_array))
		n = json_object_array_length(listeners);
	for (m = 0; m < sizeof(listener_metrics) / sizeof(listener_metrics[0]); m++) {
		const struct metric *mt = &listener_metrics[m];
		const char *name = mt->name;

		if (name)
			fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, mt->help, name,
				mt->type);
		/* A continuation row: the other direction of the metric above. */
		else
			name = listener_metrics[m - 1].name;
		for (i = 0; i < n; i++) {
			struct json_object *o = json_object_array_get_idx(listeners, i);
			const char *listener = get_string(o, "name");

			/* null: not applicable (accepted and failed of a datagram listener). */
			if (!listener || !get_u64(o, mt->member, &v))
				continue;
			fprintf(out, "%s{listener=\"", name);
			print_label_value(out, listener);
			if (mt->direction)
				fprintf(out, "\",direction=\"%s", mt->direction);
			fprintf(out, "\"} %" PRIu64 "\n", v);
		}
	}
	if (get_u64(stats, "late_inserts", &v))
		fprintf(out,
			"# HELP vsockmap_late_inserts_total Client sockets that entered the "
			"sockmap with bytes still queued.\n"
			"# TYPE vsockmap_late_inserts_total counter\n"
			"vsockmap_late_inserts_total %" PRIu64 "\n",
			v);
	return 0;
}

/* ---- status ---------------------------------------------------------------------------- */

enum status_col { ST_NAME, ST_LISTEN, ST_TARGET, ST_DATAPATH, ST_N_COLS };

static const struct column status_columns[ST_N_COLS] = {
    [ST_NAME] = {"NAME", false},
    [ST_LISTEN] = {"LISTEN", false},
    [ST_TARGET] = {"TARGET", false},
    [ST_DATAPATH] = {"DATAPATH", false},
};

static char *cell_control(struct json_object *control)
{
	const char *path = get_string(control, "path"), *mode = get_string(control, "mode");
	const char *group = get_string(control, "group");
	char *p = cell_text(path), *m = cell_text(mode), *g = cell_text(group), *s = NULL;

	if (p && m && g)
		s = group ? cell_printf("%s (mode %s, group %s)", p, m, g)
			  : cell_printf("%s (mode %s, root only)", p, m);
	free(p);
	free(m);
	free(g);
	return s;
}

/* A drain signal (kernel.probe, kernel.iterator): in use, or why not. */
static char *cell_signal(struct json_object *kernel, const char *name)
{
	char key[32];
	const char *why;
	bool v;

	snprintf(key, sizeof(key), "%s_error", name);
	why = get_string(kernel, key);
	if (!get_bool(kernel, name, &v))
		return strdup("-");
	if (v)
		return strdup("yes (exact drain signal and queue lengths)");
	return cell_printf("no: %s", why ? why : "unknown reason");
}

static char *cell_lockdown(struct json_object *kernel)
{
	const char *level = get_string(kernel, "lockdown");

	if (!level)
		return strdup("unknown (/sys/kernel/security/lockdown not readable)");
	return cell_text(level);
}

static char *cell_datapath_mode(struct json_object *status)
{
	const char *mode = get_string(status, "datapath"), *why = get_string(status, "datapath_reason");

	if (!mode)
		return strdup("-");
	if (!strcmp(mode, "kernel"))
		return strdup("kernel (sockmap)");
	return cell_printf("user space: %s", why ? why : "no reason given");
}

/* "permanent (nothing counted; sk_msg verdict ran 2 times)" */
static char *cell_fastpath(struct json_object *kernel)
{
	const char *mode = get_string(kernel, "fastpath");
	uint64_t runs;

	if (!get_u64(kernel, "msg_verdict_runs", &runs))
		return cell_text(mode);
	return cell_printf("%s (%s; sk_msg verdict ran %" PRIu64 " times)", mode,
			   strcmp(mode, "permanent") ? "every message counted" : "nothing counted",
			   runs);
}

int print_status(struct json_object *status, FILE *out)
{
	struct table pairs = {.cols = pair_columns, .n_cols = 2};
	struct table t = {.cols = status_columns, .n_cols = ST_N_COLS, .legend = arg_legend};
	struct json_object *kernel = NULL, *control = NULL, *listeners;
	uint64_t pid = 0, redirects, late;
	size_t i, n = 0;
	int r;

	json_object_object_get_ex(status, "kernel", &kernel);
	json_object_object_get_ex(status, "control", &control);
	table_add_pair(&pairs, "version", cell_string(status, "version"));
	table_add_pair(&pairs, "pid",
		       get_u64(status, "pid", &pid) ? cell_printf("%" PRIu64, pid) : strdup("-"));
	table_add_pair(&pairs, "uptime", cell_age(status, "uptime_ms"));
	table_add_pair(&pairs, "config", cell_string(status, "config"));
	table_add_pair(&pairs, "control", cell_control(control));
	table_add_pair(&pairs, "kernel", cell_string(kernel, "release"));
	table_add_pair(&pairs, "data path", cell_datapath_mode(status));
	table_add_pair(&pairs, "lockdown", cell_lockdown(kernel));
	table_add_pair(&pairs, "probe", cell_signal(kernel, "probe"));
	table_add_pair(&pairs, "iterator", cell_signal(kernel, "iterator"));
	table_add_pair(&pairs, "drain", cell_string(status, "drain"));
	if (get_string(kernel, "fastpath"))
		table_add_pair(&pairs, "fastpath", cell_fastpath(kernel));
	table_add_pair(&pairs, "btf",
		       get_string(kernel, "btf") ? cell_string(kernel, "btf") : strdup("none"));
	if (get_string(kernel, "bpf_object_sha256"))
		table_add_pair(&pairs, "bpf object", cell_string(kernel, "bpf_object_sha256"));
	if (get_u64(status, "redirects", &redirects) && get_u64(status, "late_inserts", &late))
		table_add_pair(
		    &pairs, "redirects",
		    cell_printf("%" PRIu64 " live, %" PRIu64 " late inserts", redirects, late));

	if (json_object_object_get_ex(status, "listeners", &listeners) &&
	    json_object_is_type(listeners, json_type_array))
		n = json_object_array_length(listeners);
	for (i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(listeners, i);
		char *row[ST_N_COLS];

		row[ST_NAME] = cell_string(o, "name");
		row[ST_LISTEN] = cell_string(o, "listen");
		row[ST_TARGET] = cell_string(o, "target");
		row[ST_DATAPATH] = cell_datapath(o);
		table_add_row(&t, row);
	}
	r = table_print(&pairs, out);
	if (!r) {
		fputc('\n', out);
		r = table_print(&t, out);
	}
	table_free(&pairs);
	table_free(&t);
	return r;
}
