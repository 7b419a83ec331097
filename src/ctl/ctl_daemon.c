// SPDX-License-Identifier: GPL-2.0-only
/*
 * vsockmapctl's commands about the daemon itself: status (version, uptime, kernel
 * features) with its plain printer, and reload.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "ctl.h"

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

/* ---- status ---------------------------------------------------------------------------- */

enum status_col { ST_NAME, ST_LISTEN, ST_TARGET, ST_DATAPATH, ST_WHY, ST_N_COLS };

static const struct column status_columns[ST_N_COLS] = {
    [ST_NAME] = {"NAME", false},
    [ST_LISTEN] = {"LISTEN", false},
    [ST_TARGET] = {"TARGET", false},
    [ST_DATAPATH] = {"DATAPATH", false},
    [ST_WHY] = {"WHY", false},
};

static char *cell_control(struct json_object *control)
{
	const char *path = get_string(control, "path"), *mode = get_string(control, "mode");
	const char *group = get_string(control, "group"),
		   *admin = get_string(control, "admin_group");
	char *p = cell_text(path), *m = cell_text(mode), *g = cell_text(group),
	     *a = cell_text(admin);
	char *s = NULL;

	if (p && m && g && a) {
		if (group && admin)
			s = cell_printf("%s (mode %s, group %s, admin group %s)", p, m, g, a);
		else if (group || admin)
			s = cell_printf("%s (mode %s, %sgroup %s)", p, m, admin ? "admin " : "",
					group ? g : a);
		else
			s = cell_printf("%s (mode %s, root only)", p, m);
	}
	free(p);
	free(m);
	free(g);
	free(a);
	return s;
}

/* control.role: what the one asking may do. */
static char *cell_role(struct json_object *control)
{
	const char *role = get_string(control, "role");

	if (role && !strcmp(role, "read"))
		return strdup("read (list, show, listeners, stats, status; close and reload need "
			      "admin)");
	return cell_string(control, "role");
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
	const char *mode = get_string(status, "datapath"),
		   *why = get_string(status, "datapath_reason");

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

/* When a unix client is handed to the kernel (kernel.insert_takes_queued, a bool). */
static char *cell_insert(bool v)
{
	if (v)
		return strdup("at once (the kernel passes what a client queued to the verdict)");
	return strdup("once the daemon has read the client empty");
}

/*
 * Why a listener runs in user space: the last column, so its spaces stay (no control
 * character passes); "-" on the kernel path, and from a daemon that does not say.
 */
static char *cell_reason(const char *why)
{
	char *copy = strdup(why && *why ? why : "-"), *p;

	for (p = copy; p && *p; p++)
		if ((unsigned char)*p < ' ' || *p == 0x7f)
			*p = '?';
	return copy;
}

static void status_listener_row(char **row, struct json_object *o)
{
	row[ST_NAME] = cell_string(o, "name");
	row[ST_LISTEN] = cell_string(o, "listen");
	row[ST_TARGET] = cell_string(o, "target");
	row[ST_DATAPATH] = cell_datapath(o);
	row[ST_WHY] = cell_reason(get_string(o, "datapath_reason"));
}

/* kernel.backlog_wakes: what a full target's backlog waits for (datapath=auto weighs it). */
static char *cell_backlog_wake(bool wakes)
{
	if (wakes)
		return strdup("a target with room wakes its backlog at once (kernel/ patch 1)");
	return strdup("a full target's backlog waits out a one-jiffy retry");
}

/* kernel.shutdown_unhashes_peer: what a unix server's shutdown() does to our target. */
static const char targets_unhashed[] =
    "a unix server's shutdown() takes its peer out of the sockhash";
static const char targets_kept[] = "a unix server's shutdown() leaves its peer in the sockhash";

int print_status(struct json_object *status, FILE *out)
{
	struct table pairs = {.cols = pair_columns, .n_cols = 2};
	struct table t = {.cols = status_columns, .n_cols = ST_N_COLS, .legend = arg_legend};
	struct json_object *kernel = NULL, *control = NULL, *listeners = NULL;
	uint64_t pid = 0, redirects, late;
	bool takes_queued, unhashes, wakes;
	int r;

	json_object_object_get_ex(status, "kernel", &kernel);
	json_object_object_get_ex(status, "control", &control);
	table_add_pair(&pairs, "version", cell_string(status, "version"));
	table_add_pair(&pairs, "pid",
		       get_u64(status, "pid", &pid) ? cell_printf("%" PRIu64, pid) : strdup("-"));
	table_add_pair(&pairs, "uptime", cell_age(status, "uptime_ms"));
	table_add_pair(&pairs, "config", cell_string(status, "config"));
	table_add_pair(&pairs, "control", cell_control(control));
	if (get_string(control, "role"))
		table_add_pair(&pairs, "role", cell_role(control));
	table_add_pair(&pairs, "kernel", cell_string(kernel, "release"));
	table_add_pair(&pairs, "data path", cell_datapath_mode(status));
	table_add_pair(&pairs, "lockdown", cell_lockdown(kernel));
	table_add_pair(&pairs, "probe", cell_signal(kernel, "probe"));
	table_add_pair(&pairs, "iterator", cell_signal(kernel, "iterator"));
	table_add_pair(&pairs, "drain", cell_string(status, "drain"));
	if (get_string(kernel, "fastpath"))
		table_add_pair(&pairs, "fastpath", cell_fastpath(kernel));
	if (get_bool(kernel, "insert_takes_queued", &takes_queued))
		table_add_pair(&pairs, "insert", cell_insert(takes_queued));
	if (get_bool(kernel, "shutdown_unhashes_peer", &unhashes))
		table_add_pair(&pairs, "unix peer",
			       strdup(unhashes ? targets_unhashed : targets_kept));
	if (get_bool(kernel, "backlog_wakes", &wakes))
		table_add_pair(&pairs, "backlog", cell_backlog_wake(wakes));
	table_add_pair(&pairs, "btf",
		       get_string(kernel, "btf") ? cell_string(kernel, "btf") : strdup("none"));
	if (get_string(kernel, "bpf_object_sha256"))
		table_add_pair(&pairs, "bpf object", cell_string(kernel, "bpf_object_sha256"));
	if (get_u64(status, "redirects", &redirects) && get_u64(status, "late_inserts", &late))
		table_add_pair(
		    &pairs, "redirects",
		    cell_printf("%" PRIu64 " live, %" PRIu64 " late inserts", redirects, late));

	json_object_object_get_ex(status, "listeners", &listeners);
	table_add_rows(&t, listeners, status_listener_row);
	r = table_print(&pairs, out);
	if (!r) {
		fputc('\n', out);
		r = table_print(&t, out);
	}
	table_free(&pairs);
	table_free(&t);
	return r;
}
