// SPDX-License-Identifier: GPL-2.0-only
/*
 * vsockmapctl listeners: the configured listeners and their counters, and the plain printer.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "ctl.h"

int cmd_listeners(int argc, char **argv)
{
	return query_and_print(argc, argv, "listeners", json_type_array, print_listeners,
			       "the listeners");
}

/* ---- listeners ----------------------------------------------------------------------------- */

enum listeners_col {
	LSN_NAME,
	LSN_TYPE,
	LSN_LISTEN,
	LSN_MODE,
	LSN_OWNER,
	LSN_COUNTERS, /* N_COUNTER_COLUMNS of them */
	LSN_LIMIT = LSN_COUNTERS + N_COUNTER_COLUMNS,
	LSN_N_COLS
};

static const struct column listeners_columns[LSN_N_COLS] = {
    {"NAME", false},  {"TYPE", false}, {"LISTEN", false}, {"MODE", false},
    {"OWNER", false}, COUNTER_COLUMNS, {"LIMIT", true},
};

static void listener_row(char **row, struct json_object *o)
{
	row[LSN_NAME] = cell_string(o, "name");
	row[LSN_TYPE] = cell_string(o, "type");
	row[LSN_LISTEN] = cell_string(o, "listen");
	row[LSN_MODE] = cell_string(o, "mode");
	row[LSN_OWNER] = cell_owner(o);
	cells_counters(row + LSN_COUNTERS, o);
	row[LSN_LIMIT] = cell_u64(o, "limit");
}

int print_listeners(struct json_object *listeners, FILE *out)
{
	struct table t = {.cols = listeners_columns, .n_cols = LSN_N_COLS, .legend = arg_legend};
	int r;

	table_add_rows(&t, listeners, listener_row);
	r = table_print(&t, out);
	table_free(&t);
	return r;
}
