// SPDX-License-Identifier: GPL-2.0-only
/*
 * vsockmapctl's plain output, the generic part: aligned columns like ss(8), "key: value"
 * blocks, and cells made from members of the daemon's JSON (a member left out or null
 * prints as "-"). The printers of each command are in ctl_print.c.
 */
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "ctl.h"

/* ---- tables ------------------------------------------------------------------------------ */

void table_add_row(struct table *t, char **row)
{
	char **cells = NULL;
	size_t i;
	int err = t->error;

	for (i = 0; i < t->n_cols; i++)
		if (!row[i]) /* NOLINT(clang-analyzer-core.uninitialized.Branch): n_cols cells */
			err = -ENOMEM;
	if (!err) {
		/* NOLINTNEXTLINE(clang-analyzer-optin.portability.UnixAPI): n_cols > 0 */
		cells = realloc(t->cells, (t->n_rows + 1) * t->n_cols * sizeof(*cells));
		if (!cells)
			err = -ENOMEM;
	}
	if (err) {
		t->error = err;
		for (i = 0; i < t->n_cols; i++)
			free(row[i]);
		return;
	}
	t->cells = cells;
	for (i = 0; i < t->n_cols; i++)
		cells[t->n_rows * t->n_cols + i] = row[i];
	t->n_rows++;
}

const struct column pair_columns[2] = {{"KEY", false}, {"VALUE", false}};

void table_add_pair(struct table *t, const char *key, char *value)
{
	char *row[2] = {cell_printf("%s:", key), value};

	table_add_row(t, row);
}

int table_print(const struct table *t, FILE *out)
{
	size_t *width, r, c, w, first;
	const char *s;

	if (t->error)
		return t->error;
	width = calloc(t->n_cols, sizeof(*width));
	if (!width)
		return -ENOMEM;
	for (c = 0; c < t->n_cols; c++) {
		width[c] = t->legend ? strlen(t->cols[c].title) : 0;
		for (r = 0; r < t->n_rows; r++) {
			w = strlen(t->cells[r * t->n_cols + c]);
			if (w > width[c])
				width[c] = w;
		}
	}
	/* Row 0 is the legend. */
	first = t->legend ? 0 : 1;
	for (r = first; r <= t->n_rows; r++) {
		for (c = 0; c < t->n_cols; c++) {
			s = r == 0 ? t->cols[c].title : t->cells[(r - 1) * t->n_cols + c];
			if (t->cols[c].right)
				fprintf(out, "%*s", (int)width[c], s);
			else if (c + 1 < t->n_cols)
				fprintf(out, "%-*s", (int)width[c], s);
			else
				fputs(s, out); /* no trailing blanks */
			fputs(c + 1 < t->n_cols ? "  " : "\n", out);
		}
	}
	free(width);
	return 0;
}

void table_free(struct table *t)
{
	size_t i;

	for (i = 0; i < t->n_rows * t->n_cols; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->n_rows = 0;
}

/* ---- members and cells ------------------------------------------------------------------ */

const char *get_string(struct json_object *obj, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

bool get_u64(struct json_object *obj, const char *key, uint64_t *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_int))
		return false;
	*out = json_object_get_uint64(v);
	return true;
}

bool get_bool(struct json_object *obj, const char *key, bool *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_boolean))
		return false;
	*out = json_object_get_boolean(v);
	return true;
}

char *cell_text(const char *s)
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

char *cell_printf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	return r < 0 ? NULL : s;
}

char *cell_u64(struct json_object *obj, const char *key)
{
	uint64_t v;

	if (!get_u64(obj, key, &v))
		return strdup("-");
	return cell_printf("%" PRIu64, v);
}

char *cell_string(struct json_object *obj, const char *key)
{
	return cell_text(get_string(obj, key));
}

/* 3.2s, 5m02s, 1h03m, 2d04h: two units at most, like systemd's timespans. */
char *cell_age(struct json_object *obj, const char *key)
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

/* pid=123(curl),uid=0,gid=0; the command name only when the daemon could read it. */
char *cell_client(struct json_object *obj)
{
	struct json_object *client;
	uint64_t pid, uid, gid;
	const char *comm;
	char *s, *safe;

	if (!json_object_object_get_ex(obj, "client", &client) ||
	    !json_object_is_type(client, json_type_object))
		return strdup("-");
	if (!get_u64(client, "pid", &pid) || !get_u64(client, "uid", &uid) ||
	    !get_u64(client, "gid", &gid))
		return strdup("-");
	comm = get_string(client, "comm");
	if (!comm || !*comm)
		return cell_printf("pid=%" PRIu64 ",uid=%" PRIu64 ",gid=%" PRIu64, pid, uid, gid);
	safe = cell_text(comm);
	if (!safe)
		return NULL;
	s = cell_printf("pid=%" PRIu64 "(%s),uid=%" PRIu64 ",gid=%" PRIu64, pid, safe, uid, gid);
	free(safe);
	return s;
}

/* Who carries each direction, out/in: "kernel/daemon". */
char *cell_datapath(struct json_object *obj)
{
	const char *out = get_string(obj, "datapath"), *in = get_string(obj, "datapath_in");
	char *a = cell_text(out), *b = cell_text(in), *s = NULL;

	if (a && b)
		s = cell_printf("%s/%s", a, b);
	free(a);
	free(b);
	return s;
}

/* A local name for a uid or gid, else the number. Buffers for getpw*_r grow as needed. */
static char *id_name(uint64_t id, bool is_user)
{
	long hint = sysconf(is_user ? _SC_GETPW_R_SIZE_MAX : _SC_GETGR_R_SIZE_MAX);
	size_t size = hint > 0 ? (size_t)hint : 16384;
	struct passwd pw, *pw_res = NULL;
	struct group gr, *gr_res = NULL;
	char *buf, *name = NULL;
	int r;

	for (;;) {
		buf = malloc(size);
		if (!buf)
			return NULL;
		if (is_user)
			r = getpwuid_r((uid_t)id, &pw, buf, size, &pw_res);
		else
			r = getgrgid_r((gid_t)id, &gr, buf, size, &gr_res);
		if (r != ERANGE || size >= 1 << 20)
			break;
		free(buf);
		size *= 2;
	}
	if (pw_res)
		name = cell_text(pw.pw_name);
	else if (gr_res)
		name = cell_text(gr.gr_name);
	else
		name = cell_printf("%" PRIu64, id);
	free(buf);
	return name;
}

char *cell_owner(struct json_object *obj)
{
	uint64_t uid, gid;
	char *u, *g, *s = NULL;

	if (!get_u64(obj, "uid", &uid) || !get_u64(obj, "gid", &gid))
		return strdup("-");
	u = id_name(uid, true);
	g = id_name(gid, false);
	if (u && g)
		s = cell_printf("%s:%s", u, g);
	free(u);
	free(g);
	return s;
}

static void cells_u64(char **row, struct json_object *obj, const char *const *keys, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		row[i] = cell_u64(obj, keys[i]);
}

void cells_counters(char **row, struct json_object *obj)
{
	static const char *const keys[N_COUNTER_COLUMNS] = {"accepted", "refused", "failed",
							    "live"};

	cells_u64(row, obj, keys, N_COUNTER_COLUMNS);
}

void cells_traffic(char **row, struct json_object *obj)
{
	static const char *const keys[N_TRAFFIC_COLUMNS] = {"bytes_out", "bytes_in", "packets_out",
							    "packets_in"};

	cells_u64(row, obj, keys, N_TRAFFIC_COLUMNS);
}

void table_add_rows(struct table *t, struct json_object *array,
		    void (*fill)(char **row, struct json_object *obj))
{
	size_t i, n = array && json_object_is_type(array, json_type_array)
			  ? json_object_array_length(array)
			  : 0;
	char *row[TABLE_MAX_COLS];

	if (t->n_cols > TABLE_MAX_COLS) {
		t->error = t->error ?: -E2BIG;
		return;
	}
	for (i = 0; i < n; i++) {
		fill(row, json_object_array_get_idx(array, i));
		table_add_row(t, row);
	}
}
