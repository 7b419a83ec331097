// SPDX-License-Identifier: GPL-2.0-only
/*
 * Reload applies a changed configuration file and leaves alone what did not change:
 *
 * - the new file is parsed completely first; an invalid file changes nothing;
 * - a section with the same name, listen and connect addresses (options included) keeps its
 *   listener and every live redirect;
 * - a removed section stops listening at once (its socket file goes); its live redirects go
 *   on until their client or target ends them, or `vsockmapctl close` does;
 * - a section whose addresses changed is removed, then added again; when its listen address
 *   stayed (a new target, a new name), the new listener takes the old one's socket, so no
 *   client is refused or reset by the change;
 * - [daemon] settings apply to redirects started from now on; the control socket keeps its
 *   path, mode and group until the next start.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf_dataplane.h"
#include "daemon_state.h"
#include "fd_limit.h"
#include "idle_sweep.h"
#include "listener.h"
#include "log.h"
#include "reload.h"
#include "service.h"

static struct listener *find_unchanged(struct daemon *d, const struct redirect_config *rc)
{
	size_t i;

	for (i = 0; i < d->n_listeners; i++) {
		const struct redirect_config *old = d->listeners[i]->rc;

		if (!strcmp(old->name, rc->name) && address_equal(&old->listen, &rc->listen) &&
		    address_equal(&old->connect, &rc->connect))
			return d->listeners[i];
	}
	return NULL;
}

static bool kept(struct listener **next, size_t n, const struct listener *l);

/*
 * The listening socket of a removed section that listened on rc's address, for the section
 * that replaces it (listener_give_socket()); -ENOENT.
 */
static int socket_to_keep(struct daemon *d, struct listener **next, size_t n,
			  const struct redirect_config *rc, bool *activated,
			  struct socket_file_id *file)
{
	size_t i;
	int fd;

	if (!address_is_stream_listener(&rc->listen))
		return -ENOENT;
	for (i = 0; i < d->n_listeners; i++) {
		struct listener *l = d->listeners[i];

		if (kept(next, n, l) || !address_equal(&l->rc->listen, &rc->listen))
			continue;
		fd = listener_give_socket(l, activated, file);
		if (fd >= 0)
			log_info("reload: [%s] takes over %s from [%s], with its backlog", rc->name,
				 l->where, l->rc->name);
		return fd;
	}
	return -ENOENT;
}

static bool kept(struct listener **next, size_t n, const struct listener *l)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (next[i] == l)
			return true;
	return false;
}

/* The control socket stays as it was opened; say so if the file asks for another. */
static void keep_control_settings(const struct daemon_config *old, struct daemon_config *new)
{
	if (strcmp(old->control_path, new->control_path) ||
	    old->control_mode != new->control_mode ||
	    old->has_control_group != new->has_control_group ||
	    (old->has_control_group && old->control_group != new->control_group) ||
	    old->has_control_admin_group != new->has_control_admin_group ||
	    (old->has_control_admin_group && old->control_admin_group != new->control_admin_group))
		log_notice("reload: control, control-mode, control-group and control-admin-group "
			   "take effect at the next start; the control socket stays %s",
			   old->control_path);
	memcpy(new->control_path, old->control_path, sizeof(new->control_path));
	new->control_mode = old->control_mode;
	new->has_control_group = old->has_control_group;
	new->control_group = old->control_group;
	memcpy(new->control_group_name, old->control_group_name, sizeof(new->control_group_name));
	new->has_control_admin_group = old->has_control_admin_group;
	new->control_admin_group = old->control_admin_group;
	memcpy(new->control_admin_group_name, old->control_admin_group_name,
	       sizeof(new->control_admin_group_name));
	if (old->datapath != new->datapath)
		log_notice("reload: datapath=%s takes effect at the next start; still %s",
			   datapath_mode_name(new->datapath), datapath_mode_name(old->datapath));
	new->datapath = old->datapath;
	if (old->fastpath != new->fastpath)
		log_notice("reload: fastpath=%s takes effect at the next start; still %s",
			   fastpath_mode_name(new->fastpath), fastpath_mode_name(old->fastpath));
	new->fastpath = old->fastpath;
	if (new->fastpath == FASTPATH_PERMANENT && new->idle_timeout_ms)
		log_notice("reload: idle-timeout does not apply to redirects on the permanent fast "
			   "path: nothing counts their bytes");
}

static void retire_removed(struct daemon *d, struct listener **next, size_t n,
			   struct reload_result *res)
{
	struct listener *l;
	size_t i;

	for (i = 0; i < d->n_listeners; i++) {
		l = d->listeners[i];
		if (kept(next, n, l))
			continue;
		log_info("[%s] removed or changed: no longer listening on %s; live redirects left "
			 "to finish: %zu",
			 l->rc->name, l->where, l->live);
		listener_retire(l);
		res->removed++;
	}
}

int daemon_reload(struct daemon *d, struct reload_result *res, char *err, size_t errlen)
{
	struct listener **next;
	struct config cfg;
	size_t i, n = 0;
	int ret, first_err = 0, *keep_fd;
	bool *keep_activated;
	struct socket_file_id *keep_file;

	memset(res, 0, sizeof(*res));
	if (!d->cfg.path[0]) {
		snprintf(err, errlen, "reload: started with addresses on the command line, not a "
				      "configuration file: nothing to reload");
		log_err("%s", err);
		return -EOPNOTSUPP;
	}
	/*
	 * A reload would open listeners again while the redirects finish (stop_drain.c), or,
	 * during a restart's hand-over, accept on sockets kept paused for the next instance.
	 */
	if (d->env.stopping || d->env.handing_over) {
		snprintf(err, errlen, "reload: the daemon is %s",
			 d->env.stopping ? "stopping" : "handing over to its next instance");
		log_notice("%s", err);
		return -ESHUTDOWN;
	}
	ret = config_load(d->cfg.path, &cfg, err, errlen);
	if (ret) {
		log_err("reload: %s; still running the previous configuration", err);
		return ret;
	}
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
	next = calloc(cfg.n_redirects + 1, sizeof(*next));
	keep_fd = calloc(cfg.n_redirects + 1, sizeof(*keep_fd));
	keep_activated = calloc(cfg.n_redirects + 1, sizeof(*keep_activated));
	keep_file = calloc(cfg.n_redirects + 1, sizeof(*keep_file));
	if (!next || !keep_fd || !keep_activated || !keep_file) {
		free(next);
		free(keep_fd);
		free(keep_activated);
		free(keep_file);
		config_free(&cfg);
		snprintf(err, errlen, "reload: out of memory; still running the previous "
				      "configuration");
		return -ENOMEM;
	}
	service_notify_reloading(d);
	for (i = 0; i < cfg.n_redirects; i++)
		next[i] = find_unchanged(d, &cfg.redirects[i]);
	for (i = 0; i < cfg.n_redirects; i++)
		keep_fd[i] = next[i] ? -ENOENT
				     : socket_to_keep(d, next, cfg.n_redirects, &cfg.redirects[i],
						      &keep_activated[i], &keep_file[i]);
	/* Removed ones first: a changed section may want its socket path back. */
	retire_removed(d, next, cfg.n_redirects, res);
	keep_control_settings(&d->cfg.daemon, &cfg.daemon);
	config_free(&d->cfg); /* every listener has its own copy of its section */
	d->cfg = cfg;
	log_set_level(d->cfg.daemon.log_level);
	idle_sweep_update(d); /* logs its own failure; the old timer, if any, keeps going */
	fd_limit_fit(&d->cfg); /* a higher max-redirects, more sections: the soft limit follows */
	/*
	 * max-redirects: slot_left() (listener.c) reads d->cfg at each accept, on either path;
	 * the kernel path's slot pool has its own copy. In user space there is no pool.
	 */
	if (d->env.dp)
		dataplane_set_slot_limit(d->env.dp, d->cfg.daemon.max_redirects);
	for (i = 0; i < d->cfg.n_redirects; i++) {
		if (next[i]) {
			/* The limit and who may connect change in place: no socket is re-made. */
			if (next[i]->conf.listen.max_children !=
			    d->cfg.redirects[i].listen.max_children) {
				next[i]->conf.listen.max_children =
				    d->cfg.redirects[i].listen.max_children;
				listener_limit_changed(next[i]);
				log_notice("reload: [%s] max-children is now %u (0: none)",
					   next[i]->conf.name, next[i]->conf.listen.max_children);
			}
			if (memcmp(&next[i]->conf.allow, &d->cfg.redirects[i].allow,
				   sizeof(next[i]->conf.allow))) {
				next[i]->conf.allow = d->cfg.redirects[i].allow;
				log_notice("reload: [%s] allow-uid/allow-gid updated for new "
					   "connections",
					   next[i]->conf.name);
			}
			res->unchanged++;
			next[n++] = next[i];
			continue;
		}
		ret = keep_fd[i] >= 0 ? listener_open_on(&d->env, &d->cfg.redirects[i], keep_fd[i],
							 keep_activated[i], &keep_file[i], &next[n])
				      : listener_open(&d->env, &d->cfg.redirects[i], &next[n]);
		if (ret) {
			if (!first_err)
				snprintf(err, errlen, "[%s] %s: %s (the other sections are applied)",
					 d->cfg.redirects[i].name,
					 address_has_file(&d->cfg.redirects[i].listen)
					     ? d->cfg.redirects[i].listen.path
					     : address_kind_name(d->cfg.redirects[i].listen.kind),
					 strerror(-ret));
			first_err = first_err ?: ret;
			res->failed++;
			continue;
		}
		res->added++;
		n++;
	}
	free(keep_fd);
	free(keep_activated);
	free(keep_file);
	free(d->listeners);
	d->listeners = next;
	d->n_listeners = n;
	log_notice("reloaded %s: %zu section%s added, %zu removed, %zu unchanged%s", d->cfg.path,
		   res->added, res->added == 1 ? "" : "s", res->removed, res->unchanged,
		   res->failed ? ", some could not be opened" : "");
	service_notify_ready(d);
	return first_err;
}
