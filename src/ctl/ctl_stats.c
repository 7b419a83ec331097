// SPDX-License-Identifier: GPL-2.0-only
/*
 * vsockmapctl stats: the totals since the daemon started, as a table, as JSON or in
 * Prometheus's text format.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "ctl.h"

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

/* ---- stats ------------------------------------------------------------------------------- */

enum stats_col {
	STATS_NAME,
	STATS_TYPE,
	STATS_COUNTERS,					    /* N_COUNTER_COLUMNS of them */
	STATS_TRAFFIC = STATS_COUNTERS + N_COUNTER_COLUMNS, /* N_TRAFFIC_COLUMNS of them */
	STATS_N_COLS = STATS_TRAFFIC + N_TRAFFIC_COLUMNS
};

static const struct column stats_columns[STATS_N_COLS] = {
    {"NAME", false},
    {"TYPE", false},
    COUNTER_COLUMNS,
    TRAFFIC_COLUMNS,
};

static void stats_cells(char **row, struct json_object *o)
{
	cells_counters(row + STATS_COUNTERS, o);
	cells_traffic(row + STATS_TRAFFIC, o);
}

static void stats_listener_row(char **row, struct json_object *o)
{
	row[STATS_NAME] = cell_string(o, "name");
	row[STATS_TYPE] = cell_string(o, "type");
	stats_cells(row, o);
}

/* One row per listener and a "(total)" row (section names cannot hold parentheses). */
int print_stats(struct json_object *stats, FILE *out)
{
	struct table t = {.cols = stats_columns, .n_cols = STATS_N_COLS, .legend = arg_legend};
	struct json_object *listeners = NULL;
	char *uptime, *total[STATS_N_COLS];
	int r;

	json_object_object_get_ex(stats, "listeners", &listeners);
	table_add_rows(&t, listeners, stats_listener_row);
	total[STATS_NAME] = strdup("(total)");
	total[STATS_TYPE] = strdup("-");
	stats_cells(total, stats);
	table_add_row(&t, total);
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
    {"vsockmap_connections_refused_uid_limit_total", "counter",
     "Of those, turned away because their uid had max-redirects-per-uid live.",
     "refused_uid_limit", NULL},
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
