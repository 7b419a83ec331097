// SPDX-License-Identifier: GPL-2.0-only
/*
 * The daemon's answers to control requests. docs/control-protocol.md documents every member
 * built here; tests/unit/test_ctl_output.c checks the CLI against those tables, so a member
 * added here is added there too.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bpf_dataplane.h"
#include "bpf_object_id.h"
#include "control_commands.h"
#include "control_proto.h"
#include "control_server.h"
#include "daemon_state.h"
#include "dgram_forwarder.h"
#include "listener.h"
#include "log.h"
#include "redirect.h"
#include "reload.h"
#include "traffic_total.h"
#include "util.h"

#define LOCKDOWN_PATH "/sys/kernel/security/lockdown"
#define BTF_PATH      "/sys/kernel/btf/vmlinux"

struct command {
	const char *name;
	enum control_role role; /* the least role that may run it */
	int (*func)(struct daemon *d, const struct control_peer *peer, struct json_object *request,
		    struct json_object *response, char **error_text);
};

/* ---- building blocks ------------------------------------------------------------------- */

static void add(struct json_object *o, const char *key, struct json_object *value)
{
	json_object_object_add(o, key, value);
}

static void add_string(struct json_object *o, const char *key, const char *s)
{
	add(o, key, s ? json_object_new_string(s) : NULL);
}

static void add_u64(struct json_object *o, const char *key, uint64_t v)
{
	add(o, key, json_object_new_uint64(v));
}

static void add_address(struct json_object *o, const char *key, const struct address *a)
{
	char buf[160];

	if (address_format(a, buf, sizeof(buf)) < 0)
		snprintf(buf, sizeof(buf), "%s", address_kind_name(a->kind));
	add_string(o, key, buf);
}

/* "0660", the way chmod(1) and ls -l readers think of modes. */
static struct json_object *mode_string(unsigned int mode)
{
	char buf[8];

	snprintf(buf, sizeof(buf), "%04o", mode & 07777);
	return json_object_new_string(buf);
}

static int set_error(char **error_text, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int set_error(char **error_text, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(error_text, fmt, ap) < 0)
		*error_text = NULL;
	va_end(ap);
	return -err;
}

/* Why peer is not an admin: "uid 1000 is not root and not in group vsockadm". */
static void not_admin_why(const struct daemon *d, const struct control_peer *peer, char *buf,
			  size_t size)
{
	const struct daemon_config *dc = &d->cfg.daemon;
	char self[48] = "";

	if (geteuid() != 0)
		snprintf(self, sizeof(self), ", not vsockmapd's own uid %u",
			 (unsigned int)geteuid());
	if (dc->has_control_admin_group)
		snprintf(buf, size, "uid %u is not root%s and not in group %s",
			 (unsigned int)peer->uid, self, dc->control_admin_group_name);
	else
		snprintf(buf, size, "uid %u is not root%s, and no control-admin-group is set",
			 (unsigned int)peer->uid, self);
}

static bool is_dgram(const struct listener *l)
{
	return l->rc->listen.kind == ADDRESS_UNIX_RECV;
}

static const char *datapath_name(const struct redirect_info *info, int dir)
{
	if (info->datapath[dir])
		return info->datapath[dir];
	/* A UNIX-RECV pseudo-redirect: datagrams go through the kernel, nothing comes back. */
	return dir == VSOCKMAP_DIR_TO_TARGET ? "kernel" : "none";
}

/* ---- redirects ----------------------------------------------------------------------- */

/*
 * bytes_out, packets_out, bytes_in, packets_in; null for a direction the kernel carried
 * without counting (fastpath=permanent).
 */
static void add_counters(struct json_object *o, const struct traffic *t)
{
	static const char *const names[VSOCKMAP_NR_DIRS][2] = {{"bytes_out", "packets_out"},
							       {"bytes_in", "packets_in"}};
	int dir;

	for (dir = 0; dir < VSOCKMAP_NR_DIRS; dir++) {
		add(o, names[dir][0],
		    t->uncounted[dir] ? NULL : json_object_new_uint64(t->bytes[dir]));
		add(o, names[dir][1],
		    t->uncounted[dir] ? NULL : json_object_new_uint64(t->packets[dir]));
	}
}

static struct json_object *redirect_json(const struct redirect_info *info,
					 const struct redirect_config *rc)
{
	struct json_object *o = json_object_new_object(), *client = NULL;

	add_u64(o, "id", info->id);
	add_string(o, "name", info->name);
	add_address(o, "listen", &rc->listen);
	add_address(o, "target", &rc->connect);
	if (info->client.pid) {
		client = json_object_new_object();
		add_u64(client, "pid", (uint64_t)info->client.pid);
		add_u64(client, "uid", info->client.uid);
		add_u64(client, "gid", info->client.gid);
		if (info->comm[0])
			add_string(client, "comm", info->comm);
	}
	add(o, "client", client);
	add_string(o, "datapath", datapath_name(info, VSOCKMAP_DIR_TO_TARGET));
	add_string(o, "datapath_in", datapath_name(info, VSOCKMAP_DIR_TO_CLIENT));
	add_string(o, "state", info->state);
	add_u64(o, "age_ms", info->age_usec / USEC_PER_MSEC);
	add_counters(o, &info->moved);
	add(o, "client_cookie", info->cookie[0] ? json_object_new_uint64(info->cookie[0]) : NULL);
	add(o, "target_cookie", info->cookie[1] ? json_object_new_uint64(info->cookie[1]) : NULL);
	add(o, "target_backlog_skbs",
	    info->has_queues ? json_object_new_uint64(info->target_backlog_skbs) : NULL);
	add(o, "client_rcvq_bytes",
	    info->client_rcvq_bytes >= 0 && info->client.pid
		? json_object_new_uint64((uint64_t)info->client_rcvq_bytes)
		: NULL);
	return o;
}

/*
 * Which redirects a request is about. All of it is decided from what the daemon holds in
 * memory (the section's name, the client's uid, the id), before redirect_get_info(): that
 * costs socket calls and map lookups per redirect, and a reader asking over and over for a
 * list it mostly may not see must not make the daemon pay them for every live redirect.
 */
struct redirect_filter {
	const struct control_peer *peer; /* NULL: every client's */
	const char *name;		 /* NULL: every section's */
};

static bool filter_section(const struct redirect_filter *f, const struct listener *l)
{
	return !f->name || !strcmp(f->name, l->rc->name);
}

/*
 * A reader sees the datagram listeners (they have no client: never filtered here) and the
 * stream redirects whose client runs as its own uid; an admin sees all (docs/security.md,
 * "The control socket's roles"). Not by client pid: SO_PEERCRED gives pid 0 for a client in
 * another pid namespace, and its uid is still real.
 */
static bool filter_client(const struct redirect_filter *f, const struct redirect *r)
{
	return !f->peer || f->peer->role >= CONTROL_ROLE_ADMIN ||
	       redirect_client(r)->uid == f->peer->uid;
}

/*
 * Every live redirect that passes the filter, datagram listeners first (in configuration
 * order), then stream redirects, newest first; only those are asked for their info. fn
 * returns non-zero to stop.
 */
static void for_each_redirect(struct daemon *d, const struct redirect_filter *filter,
			      int (*fn)(void *ctx, const struct redirect_info *info,
					struct redirect *r, struct listener *l),
			      void *ctx)
{
	struct redirect_info info;
	struct listener *l;
	struct redirect *r;
	size_t i;

	for (i = 0; i < d->n_listeners; i++) {
		l = d->listeners[i];
		if (!l->dgram || !filter_section(filter, l))
			continue;
		dgram_forwarder_get_info(l->dgram, &info);
		if (fn(ctx, &info, NULL, l))
			return;
	}
	for (r = redirect_table_first(&d->env.redirects); r; r = redirect_next(r)) {
		l = redirect_listener(r);
		if (!filter_section(filter, l) || !filter_client(filter, r))
			continue;
		redirect_get_info(r, &info, false);
		if (fn(ctx, &info, r, l))
			return;
	}
}

static int list_one(void *ctx, const struct redirect_info *info, struct redirect *r,
		    struct listener *l)
{
	(void)r;
	json_object_array_add(ctx, redirect_json(info, l->rc));
	return 0;
}

static int cmd_list(struct daemon *d, const struct control_peer *peer, struct json_object *request,
		    struct json_object *response, char **error_text)
{
	struct redirect_filter filter = {.peer = peer};
	struct json_object *arr, *name;

	if (json_object_object_get_ex(request, "name", &name) && name) {
		if (!json_object_is_type(name, json_type_string))
			return set_error(error_text, EINVAL, "\"name\" must be a string");
		filter.name = json_object_get_string(name);
	}
	arr = json_object_new_array();
	if (!arr)
		return -ENOMEM;
	for_each_redirect(d, &filter, list_one, arr);
	add(response, "redirects", arr);
	return 0;
}

/* The request's "id": a positive integer. */
static int request_id(struct json_object *request, const char *command, uint64_t *id,
		      char **error_text)
{
	struct json_object *v;

	if (!json_object_object_get_ex(request, "id", &v) || !json_object_is_type(v, json_type_int))
		return set_error(error_text, EINVAL, "%s needs an integer member \"id\"", command);
	/* json-c gives 0 for a negative number here. */
	*id = json_object_get_uint64(v);
	if (*id == 0)
		return set_error(error_text, EINVAL, "%s: \"id\" must be positive", command);
	return 0;
}

/* One redirect by id: r is NULL for a datagram listener's pseudo-redirect. */
struct find_ctx {
	uint64_t id;
	struct redirect *r;
	struct listener *l;
};

/*
 * The redirect with the request's id, found by the table's id alone (no info read), or a
 * datagram listener's (one per UNIX-RECV section, a handful at most). Returns 0 with c->l
 * set, or -errno with *error_text.
 */
static int find_redirect(struct daemon *d, const char *command, struct json_object *request,
			 struct find_ctx *c, char **error_text)
{
	struct redirect_info info;
	size_t i;
	int r;

	memset(c, 0, sizeof(*c));
	r = request_id(request, command, &c->id, error_text);
	if (r < 0)
		return r;
	c->r = redirect_table_find(&d->env.redirects, c->id);
	if (c->r) {
		c->l = redirect_listener(c->r);
		return 0;
	}
	for (i = 0; i < d->n_listeners; i++) {
		if (!d->listeners[i]->dgram)
			continue;
		dgram_forwarder_get_info(d->listeners[i]->dgram, &info);
		if (info.id == c->id) {
			c->l = d->listeners[i];
			return 0;
		}
	}
	set_error(error_text, ENOENT, "no redirect with id %" PRIu64, c->id);
	return -ENOENT; /* and 0 only with c->l set */
}

/* Its info, read once it is known to be answered; with_queues: one BPF iteration more. */
static void found_info(const struct find_ctx *c, struct redirect_info *info, bool with_queues)
{
	if (c->r)
		redirect_get_info(c->r, info, with_queues);
	else
		dgram_forwarder_get_info(c->l->dgram, info);
}

static int cmd_show(struct daemon *d, const struct control_peer *peer, struct json_object *request,
		    struct json_object *response, char **error_text)
{
	struct redirect_filter filter = {.peer = peer};
	struct redirect_info info;
	struct find_ctx c;
	char why[160];
	int r;

	r = find_redirect(d, "show", request, &c, error_text);
	if (r < 0)
		return r;
	if (c.r && !filter_client(&filter, c.r)) {
		not_admin_why(d, peer, why, sizeof(why));
		return set_error(error_text, EPERM,
				 "redirect %" PRIu64 " is another user's: show needs the admin "
				 "role for it: %s",
				 c.id, why);
	}
	found_info(&c, &info, true); /* with the kernel queue lengths */
	add(response, "redirect", redirect_json(&info, c.l->rc));
	return 0;
}

static int cmd_close(struct daemon *d, const struct control_peer *peer, struct json_object *request,
		     struct json_object *response, char **error_text)
{
	struct redirect_info info;
	struct json_object *snapshot;
	struct find_ctx c;
	const char *name;
	int r;

	r = find_redirect(d, "close", request, &c, error_text);
	if (r < 0)
		return r;
	if (!c.r)
		return set_error(error_text, EINVAL,
				 "redirect %" PRIu64 " is the datagram listener [%s]; it closes "
				 "with the daemon",
				 c.id, c.l->rc->name);
	found_info(&c, &info, false);
	name = c.l->rc->name;
	log_fields(LOG_INFO,
		   LOG_CTX(.redirect = name, .redirect_id = c.id, .client_pid = info.client.pid),
		   "[%s] redirect %" PRIu64 ": close requested by uid %u (pid %d)", name, c.id,
		   (unsigned int)peer->uid, (int)peer->pid);
	/* The snapshot first: redirect_request_close() may free the redirect at once. */
	snapshot = redirect_json(&info, c.l->rc);
	add_string(snapshot, "state", "closing");
	redirect_request_close(c.r);
	add(response, "redirect", snapshot);
	return 0;
}

/* ---- listeners and totals ---------------------------------------------------------------- */

/* A UNIX-RECV listener has one pseudo-redirect and accepts nothing. */
static uint64_t listener_live(const struct listener *l)
{
	return is_dgram(l) ? 1 : l->live;
}

static void add_connection_counts(struct json_object *o, const struct listener *l)
{
	bool dgram = is_dgram(l);

	add(o, "accepted", dgram ? NULL : json_object_new_uint64(l->accepted));
	add(o, "refused", dgram ? NULL : json_object_new_uint64(l->refused));
	add(o, "refused_uid_limit", dgram ? NULL : json_object_new_uint64(l->refused_uid_limit));
	add(o, "failed", dgram ? NULL : json_object_new_uint64(l->failed));
	add_u64(o, "live", listener_live(l));
}

/* allow-uid/allow-gid as an array of numbers, or null when the list is not set. */
static struct json_object *id_array(const uint32_t *ids, unsigned int n)
{
	struct json_object *arr;
	unsigned int i;

	if (!n)
		return NULL;
	arr = json_object_new_array();
	for (i = 0; arr && i < n; i++)
		json_object_array_add(arr, json_object_new_uint64(ids[i]));
	return arr;
}

static int cmd_listeners(struct daemon *d, const struct control_peer *peer,
			 struct json_object *request, struct json_object *response,
			 char **error_text)
{
	struct json_object *arr = json_object_new_array();
	size_t i;

	(void)peer;
	(void)request;
	(void)error_text;
	for (i = 0; i < d->n_listeners; i++) {
		const struct listener *l = d->listeners[i];
		struct json_object *o = json_object_new_object();
		struct stat st;
		bool ok;

		add_string(o, "name", l->rc->name);
		add_address(o, "listen", &l->rc->listen);
		add_string(o, "type", is_dgram(l) ? "dgram" : "stream");
		add_string(o, "path", address_has_file(&l->rc->listen) ? l->rc->listen.path : NULL);
		/* What is on disk now, not what was configured: someone may have changed it. */
		ok = address_has_file(&l->rc->listen) && stat(l->rc->listen.path, &st) == 0;
		add(o, "mode", ok ? mode_string(st.st_mode) : NULL);
		add(o, "uid", ok ? json_object_new_uint64(st.st_uid) : NULL);
		add(o, "gid", ok ? json_object_new_uint64(st.st_gid) : NULL);
		add_connection_counts(o, l);
		add(o, "limit",
		    l->rc->listen.max_children ? json_object_new_uint64(l->rc->listen.max_children)
					       : NULL);
		add(o, "allow_uid", id_array(l->rc->allow.uids, l->rc->allow.n_uids));
		add(o, "allow_gid", id_array(l->rc->allow.gids, l->rc->allow.n_gids));
		json_object_array_add(arr, o);
	}
	add(response, "listeners", arr);
	return 0;
}

static int cmd_stats(struct daemon *d, const struct control_peer *peer, struct json_object *request,
		     struct json_object *response, char **error_text)
{
	struct json_object *stats, *arr;
	uint64_t accepted = 0, refused = 0, refused_uid_limit = 0, failed = 0, live = 0;
	struct traffic *t, all;
	size_t i;
	int err;

	(void)peer;
	(void)request;
	(void)error_text;
	err = traffic_since_start(d, &t, &all);
	if (err)
		return err;
	stats = json_object_new_object();
	arr = json_object_new_array();
	add_u64(stats, "uptime_ms", (now_usec() - d->started_usec) / USEC_PER_MSEC);
	for (i = 0; i < d->n_listeners; i++) {
		const struct listener *l = d->listeners[i];
		struct json_object *o = json_object_new_object();

		add_string(o, "name", l->rc->name);
		add_string(o, "type", is_dgram(l) ? "dgram" : "stream");
		add_connection_counts(o, l);
		add_counters(o, &t[i]);
		json_object_array_add(arr, o);
		if (!is_dgram(l)) {
			accepted += l->accepted;
			refused += l->refused;
			refused_uid_limit += l->refused_uid_limit;
			failed += l->failed;
		}
		live += listener_live(l);
	}
	add_u64(stats, "accepted", accepted);
	add_u64(stats, "refused", refused);
	add_u64(stats, "refused_uid_limit", refused_uid_limit);
	add_u64(stats, "failed", failed);
	add_u64(stats, "live", live);
	add_counters(stats, &all);
	add_u64(stats, "late_inserts", d->env.late_inserts);
	add(stats, "listeners", arr);
	add(response, "stats", stats);
	free(t);
	return 0;
}

/* ---- status -------------------------------------------------------------------------- */

/* The active level in "none [integrity] confidentiality"; NULL when the file is unreadable. */
static struct json_object *lockdown_level(void)
{
	char buf[128], *lb, *rb;
	ssize_t n;
	int fd;

	fd = open(LOCKDOWN_PATH, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	lb = strchr(buf, '[');
	rb = lb ? strchr(lb, ']') : NULL;
	if (!rb)
		return NULL;
	*rb = '\0';
	return json_object_new_string(lb + 1);
}

/* Why a drain signal is not in use; null when it is. */
static struct json_object *signal_error(const struct dataplane_features *f, enum drain_mode which,
					int err)
{
	return f->drain == which ? NULL : json_object_new_string(dataplane_signal_why(err));
}

static const char *const drain_names[] = {[DRAIN_AUTO] = "auto",
					  [DRAIN_PROBE] = "probe",
					  [DRAIN_ITERATOR] = "iterator",
					  [DRAIN_TIMED] = "timed"};

static int cmd_status(struct daemon *d, const struct control_peer *peer,
		      struct json_object *request, struct json_object *response, char **error_text)
{
	static const struct dataplane_features none = {
	    .drain = DRAIN_TIMED, .probe_error = -ENOENT, .iterator_error = -ENOENT};
	const struct dataplane_features *f = d->env.dp ? dataplane_features(d->env.dp) : &none;
	struct json_object *status, *control, *kernel, *arr;
	const struct daemon_config *dc = &d->cfg.daemon;
	struct redirect_info info;
	struct utsname uts = {};
	char path[PATH_MAX];
	size_t i;

	(void)request;
	(void)error_text;
	uname(&uts);
	status = json_object_new_object();
	add_string(status, "version", VSOCKMAP_VERSION);
	add_u64(status, "pid", (uint64_t)getpid());
	add_u64(status, "uptime_ms", (now_usec() - d->started_usec) / USEC_PER_MSEC);
	/* An absolute path, whatever the daemon was started with. */
	add_string(status, "config", realpath(d->cfg.path, path) ? path : d->cfg.path);

	control = json_object_new_object();
	add_string(control, "path", dc->control_path);
	add(control, "mode", mode_string(dc->control_mode));
	add_string(control, "group", dc->has_control_group ? dc->control_group_name : NULL);
	add_string(control, "admin_group",
		   dc->has_control_admin_group ? dc->control_admin_group_name : NULL);
	add_string(control, "role", control_role_name(peer->role));
	add(status, "control", control);

	kernel = json_object_new_object();
	add_string(kernel, "release", uts.release);
	add(kernel, "lockdown", lockdown_level());
	add(kernel, "probe", json_object_new_boolean(f->drain == DRAIN_PROBE));
	add(kernel, "probe_error", signal_error(f, DRAIN_PROBE, f->probe_error));
	add(kernel, "iterator", json_object_new_boolean(f->drain == DRAIN_ITERATOR));
	add(kernel, "iterator_error", signal_error(f, DRAIN_ITERATOR, f->iterator_error));
	add_string(kernel, "btf", access(BTF_PATH, R_OK) == 0 ? BTF_PATH : NULL);
	add_string(kernel, "bpf_object_sha256", VSOCKMAP_BPF_SHA256);
	add_string(kernel, "fastpath", f->permanent ? "permanent" : "counted");
	add(kernel, "insert_takes_queued",
	    d->env.dp ? json_object_new_boolean(f->insert_takes_queued) : NULL);
	add(kernel, "shutdown_unhashes_peer",
	    d->env.dp ? json_object_new_boolean(f->shutdown_unhashes_peer) : NULL);
	add(kernel, "backlog_wakes", d->env.dp ? json_object_new_boolean(f->backlog_wakes) : NULL);
	add(kernel, "msg_verdict_runs",
	    d->env.dp ? json_object_new_uint64(dataplane_msg_runs(d->env.dp)) : NULL);
	add(status, "kernel", kernel);
	add_string(status, "drain", drain_names[f->drain]);
	add_string(status, "datapath", d->env.dp ? "kernel" : "userspace");
	add_string(status, "datapath_reason", d->env.dp ? NULL : d->env.userspace_why);

	arr = json_object_new_array();
	for (i = 0; i < d->n_listeners; i++) {
		const struct listener *l = d->listeners[i];
		struct json_object *o = json_object_new_object();

		add_string(o, "name", l->rc->name);
		add_address(o, "listen", &l->rc->listen);
		add_address(o, "target", &l->rc->connect);
		if (l->dgram) {
			dgram_forwarder_get_info(l->dgram, &info);
		} else {
			/* Every stream redirect starts so (redirect.c): in is carried by us. */
			memset(&info, 0, sizeof(info));
			info.datapath[VSOCKMAP_DIR_TO_TARGET] = l->userspace ? "daemon" : "kernel";
			info.datapath[VSOCKMAP_DIR_TO_CLIENT] = "daemon";
		}
		add_string(o, "datapath", datapath_name(&info, VSOCKMAP_DIR_TO_TARGET));
		add_string(o, "datapath_in", datapath_name(&info, VSOCKMAP_DIR_TO_CLIENT));
		add_string(o, "datapath_reason", l->userspace ? l->userspace_why : NULL);
		json_object_array_add(arr, o);
	}
	add(status, "listeners", arr);
	add_u64(status, "redirects", d->env.redirects.n);
	add_u64(status, "late_inserts", d->env.late_inserts);
	add(response, "status", status);
	return 0;
}

static int cmd_reload(struct daemon *d, const struct control_peer *peer,
		      struct json_object *request, struct json_object *response, char **error_text)
{
	struct reload_result res;
	struct json_object *o;
	char err[512];
	int ret;

	(void)request;
	log_info("reload requested over the control socket by pid %d", (int)peer->pid);
	ret = daemon_reload(d, &res, err, sizeof(err));
	if (ret)
		return set_error(error_text, -ret, "%s", err);
	o = json_object_new_object();
	add_u64(o, "added", res.added);
	add_u64(o, "removed", res.removed);
	add_u64(o, "unchanged", res.unchanged);
	add(response, "reload", o);
	return 0;
}

/* ---- dispatch -------------------------------------------------------------------------- */

/* Reading is the read role's; whatever changes the daemon's state needs the admin role. */
static const struct command commands[] = {
    {"list", CONTROL_ROLE_READ, cmd_list},	     {"show", CONTROL_ROLE_READ, cmd_show},
    {"listeners", CONTROL_ROLE_READ, cmd_listeners}, {"stats", CONTROL_ROLE_READ, cmd_stats},
    {"status", CONTROL_ROLE_READ, cmd_status},	     {"close", CONTROL_ROLE_ADMIN, cmd_close},
    {"reload", CONTROL_ROLE_ADMIN, cmd_reload},
};

static int refuse_command(struct daemon *d, const struct control_peer *peer,
			  const struct command *cmd, char **error_text)
{
	char why[160];

	not_admin_why(d, peer, why, sizeof(why));
	log_notice("control: %s refused to pid %d: it needs the %s role, and %s", cmd->name,
		   (int)peer->pid, control_role_name(cmd->role), why);
	return set_error(error_text, EPERM, "%s needs the %s role: %s", cmd->name,
			 control_role_name(cmd->role), why);
}

static int handle(void *userdata, const struct control_peer *peer, const char *command,
		  struct json_object *request, struct json_object **response, char **error_text)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(commands); i++) {
		if (strcmp(command, commands[i].name))
			continue;
		if (peer->role < commands[i].role)
			return refuse_command(userdata, peer, &commands[i], error_text);
		*response = json_object_new_object();
		if (!*response)
			return -ENOMEM;
		return commands[i].func(userdata, peer, request, *response, error_text);
	}
	return -EOPNOTSUPP;
}

static int access_policy(void *userdata, struct control_access *access)
{
	const struct daemon_config *dc = &((struct daemon *)userdata)->cfg.daemon;

	access->mode = dc->control_mode;
	access->has_group = dc->has_control_group;
	access->group = dc->control_group;
	snprintf(access->group_name, sizeof(access->group_name), "%s", dc->control_group_name);
	access->has_admin_group = dc->has_control_admin_group;
	access->admin_group = dc->control_admin_group;
	snprintf(access->admin_group_name, sizeof(access->admin_group_name), "%s",
		 dc->control_admin_group_name);
	return 0;
}

const struct control_handler control_commands = {
    .access = access_policy,
    .handle = handle,
};
