// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "bpf_object_id.h"

#include "control_commands.h"
#include "control_server.h"
#include "daemon.h"
#include "dgram_forwarder.h"
#include "fd_limit.h"
#include "fd_spare.h"
#include "handover.h"
#include "passed_fds.h"
#include "socket_activation.h"
#include "idle_sweep.h"
#include "source_watch.h"
#include "listener.h"
#include "log.h"
#include "privileges.h"
#include "psock_wake.h"
#include "redirect.h"
#include "reload.h"
#include "service.h"
#include "stop_drain.h"
#include "util.h"

#define CONTROL_SOCKET_MODE 0600

/* A stop: everything already sent is delivered before the redirects close. */
static void begin_stop(struct daemon *d)
{
	if (!stop_drain_start(d))
		sd_event_exit(d->env.event, 0);
}

/*
 * SIGTERM and SIGINT stop: everything already sent is delivered, then each redirect closes.
 * A second one closes what is left at once.
 */
static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct daemon *d = userdata;

	if (d->env.handing_over)
		return 0; /* already on its way out */
	if (d->env.stopping) {
		log_notice("received %s again: closing the remaining redirects now",
			   strsignal(si->ssi_signo));
		return sd_event_exit(sd_event_source_get_event(s), 0);
	}
	log_info("received %s, shutting down", strsignal(si->ssi_signo));
	begin_stop(d);
	return 0;
}

/*
 * SIGUSR2: systemd restarts the unit (RestartKillSignal=SIGUSR2 in vsockmapd.service; a stop
 * sends KillSignal=, SIGTERM). Everything goes to the fd store at once, for the next instance.
 */
static int on_restart_signal(sd_event_source *s, const struct signalfd_siginfo *si,
			     void *userdata)
{
	struct daemon *d = userdata;

	(void)s;
	(void)si;
	if (d->env.handing_over || d->env.stopping) {
		log_notice("received SIGUSR2 (restart) while %s: ignored",
			   d->env.stopping ? "stopping" : "handing over");
		return 0;
	}
	handover_start(d, begin_stop);
	return 0;
}

/* systemctl reload sends SIGHUP (ExecReload=). An error is logged; the daemon runs on. */
static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct reload_result res;
	char err[512];

	(void)s;
	log_info("received SIGHUP from pid %u: reloading", (unsigned int)si->ssi_pid);
	daemon_reload(userdata, &res, err, sizeof(err));
	return 0;
}

static int open_listeners(struct daemon *d)
{
	size_t i;
	int err;

	/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
	d->listeners = calloc(d->cfg.n_redirects + 1, sizeof(*d->listeners));
	if (!d->listeners)
		return -ENOMEM;
	for (i = 0; i < d->cfg.n_redirects; i++) {
		err = listener_open(&d->env, &d->cfg.redirects[i], &d->listeners[i]);
		if (err)
			return err;
		d->n_listeners++;
	}
	/* As packaged: every section commented out until the user writes one. */
	if (!d->cfg.n_redirects)
		log_notice("%s configures no redirects: listening on nothing; add a section with "
			   "listen= and connect=, then reload",
			   d->cfg.path);
	return 0;
}

static void log_datapath(struct daemon *d)
{
	const struct dataplane_features *f = dataplane_features(d->env.dp);
	struct utsname uts = {};

	uname(&uts);
	log_info("data path: kernel (sockmap), BPF object sha256:%s on kernel %s",
		 VSOCKMAP_BPF_SHA256, uts.release);
	if (f->drain == DRAIN_PROBE)
		log_info("drain signal: queue probe (the target's psock, asked per socket)");
	else if (f->drain == DRAIN_ITERATOR)
		log_info("drain signal: queue iterator; the probe was not loaded (%s)",
			 dataplane_signal_why(f->probe_error));
	else
		log_notice("drain signal: timed, not exact; the queue probe was not loaded (%s), "
			   "nor the queue iterator (%s)",
			   dataplane_signal_why(f->probe_error), dataplane_signal_why(f->iterator_error));
	if (f->insert_takes_queued)
		log_info("insert: at once; the kernel passes what a client queued before its "
			 "insert to the verdict");
	else
		log_info("insert: once the daemon has read a client empty; this kernel leaves what "
			 "was queued before the insert to later sends");
	if (f->shutdown_unhashes_peer)
		log_info("unix targets: a server's shutdown() takes its peer out of the sockhash");
	if (f->backlog_wakes)
		log_info("backlog wake: at once; this kernel wakes a psock's backlog when its "
			 "target has room (" PSOCK_WAKE_FUNC " in its BTF, kernel/ patch 1)");
	else if (f->backlog_wake_error)
		log_notice("backlog wake: unknown, taken as none (the kernel's BTF: %s)",
			   strerror(-f->backlog_wake_error));
	else
		log_info("backlog wake: none; this kernel leaves a full target's backlog to a "
			 "one-jiffy retry (no " PSOCK_WAKE_FUNC " in its BTF, kernel/ patch 1)");
	if (f->permanent)
		log_info("fastpath: permanent; the stream verdict counts nothing, and a TCP "
			 "socket's sk_msg verdict runs once per 4 GiB");
	else if (d->cfg.daemon.fastpath == FASTPATH_PERMANENT)
		log_notice("fastpath: counted, not permanent: with nothing counted the drain "
			   "needs an exact signal, and neither the probe nor the iterator loaded");
}

/*
 * The datagram verdicts of the UNIX-RECV sections, and DGRAM_SPARES more for those a reload
 * may add, all now: the daemon loads no program once it runs (drop_privileges()). Without
 * them the sections run in user space, and say so (dgram_forwarder.c).
 */
static void load_dgram_verdicts(struct daemon *d)
{
	unsigned int n = 0;
	size_t i;
	int err;

	for (i = 0; i < d->cfg.n_redirects; i++)
		if (d->cfg.redirects[i].listen.kind == ADDRESS_UNIX_RECV)
			n++;
	err = dataplane_dgram_spares_fill(d->env.dp, n);
	if (err)
		log_errno(LOG_WARNING, err, "loading the datagram verdicts");
}

/*
 * The kernel path, unless datapath=userspace, or unless it cannot load and datapath=auto (no
 * BPF rights, a kernel without sockmap or BTF): then every redirect runs in user space.
 */
static int open_dataplane(struct daemon *d, const struct daemon_options *opts)
{
	enum datapath_mode mode = d->cfg.daemon.datapath;
	int err;

	if (mode == DATAPATH_USERSPACE) {
		snprintf(d->env.userspace_why, sizeof(d->env.userspace_why), "datapath=userspace");
		log_info("data path: user space (datapath=userspace)");
		return 0;
	}
	/* On top of the maps a previous instance stored, if any (handover.c). */
	err = dataplane_open(&d->env.dp, opts->drain_mode,
			     d->cfg.daemon.fastpath == FASTPATH_PERMANENT,
			     &(struct dataplane_stored_maps){.fd = handover_map_fd, .ctx = d});
	err = err ?: handover_reserve_slots(d, dataplane_slot_reserve_cb, d->env.dp);
	if (!err) {
		dataplane_set_slot_limit(d->env.dp, d->cfg.daemon.max_redirects);
		log_datapath(d);
		load_dgram_verdicts(d);
		return 0;
	}
	dataplane_close(d->env.dp);
	d->env.dp = NULL;
	if (mode == DATAPATH_KERNEL || opts->drain_mode == DRAIN_ITERATOR ||
	    opts->drain_mode == DRAIN_PROBE)
		return err;
	/* In user space they could not go on: the start fails, and gives them back. */
	if (handover_kernel_pairs(d)) {
		log_errno(LOG_ERR, err,
			  "the BPF object did not load, and %zu redirects handed over run on the "
			  "kernel path",
			  handover_kernel_pairs(d));
		return err;
	}
	snprintf(d->env.userspace_why, sizeof(d->env.userspace_why),
		 "the BPF object did not load: %s", strerror(-err));
	log_notice("data path: user space, for every redirect: %s (datapath=kernel would make "
		   "this fatal)",
		   d->env.userspace_why);
	return 0;
}

static int load_config(struct daemon *d, const struct daemon_options *opts, char *err,
		       size_t errlen)
{
	struct daemon_config *dc = &d->cfg.daemon;
	int r;

	if (!opts->addresses[0])
		return config_load(opts->config_path, &d->cfg, err, errlen);
	r = config_from_addresses(opts->addresses[0], opts->addresses[1], &d->cfg, err, errlen);
	if (r)
		return r;
	dc->idle_timeout_ms = opts->idle_timeout_ms;
	dc->log_level += opts->verbosity;
	if (dc->log_level > LOG_DEBUG)
		dc->log_level = LOG_DEBUG;
	if (opts->control_path) {
		if (strlen(opts->control_path) >= sizeof(dc->control_path)) {
			snprintf(err, errlen, "--control %s: path too long", opts->control_path);
			config_free(&d->cfg);
			return -EINVAL;
		}
		strcpy(dc->control_path, opts->control_path);
		/* Both would bind the one path: the second would find the first listening. */
		if (!strcmp(dc->control_path, d->cfg.redirects[0].listen.path)) {
			snprintf(err, errlen, "--control %s: the listen address uses that path",
				 opts->control_path);
			config_free(&d->cfg);
			return -EINVAL;
		}
	}
	return 0;
}

/* Settings that each make sense alone and rule each other out. -EINVAL with the reason. */
static int check_options(const struct daemon *d, const struct daemon_options *opts, char *why,
			 size_t len)
{
	const struct daemon_config *dc = &d->cfg.daemon;

	if (dc->fastpath == FASTPATH_PERMANENT && dc->idle_timeout_ms) {
		snprintf(why, len, "the idle timeout needs the byte counters, which "
				   "fastpath=permanent drops; use one or the other");
		return -EINVAL;
	}
	if (dc->fastpath == FASTPATH_PERMANENT && dc->datapath != DATAPATH_USERSPACE &&
	    opts->drain_mode == DRAIN_TIMED) {
		snprintf(why, len,
			 "fastpath=permanent needs an exact drain signal, and --drain=timed rules "
			 "it out: the timed drain watches the counters the permanent fast path drops");
		return -EINVAL;
	}
	return 0;
}

/*
 * Whether anything the daemon serves needs CAP_NET_ADMIN: datapath=kernel, a section on the
 * kernel path (its SO_SNDBUFFORCE, docs/kernel-notes.md "Buffers"), a datagram section (its
 * forwarder's buffer holds a datagram as large as a client may send), or a pair the previous
 * instance handed over on the kernel path (read, not yet taken back: handover_adopt() comes
 * after the drop).
 */
static bool needs_kernel_path(const struct daemon *d)
{
	size_t i;

	if (!d->env.dp)
		return false;
	if (d->cfg.daemon.datapath == DATAPATH_KERNEL)
		return true; /* asked for: sections a reload adds take it too */
	for (i = 0; i < d->n_listeners; i++)
		if (!d->listeners[i]->userspace || d->listeners[i]->dgram)
			return true;
	return handover_kernel_path_used(d);
}

/*
 * Everything is open: keep only what serving and reloading need (privileges.h). The spare
 * datagram verdicts were loaded with the object (load_dgram_verdicts()): from now on the
 * daemon loads no BPF program. Where no section uses the kernel path, its capability goes
 * too, and sections a reload adds run in user space.
 */
static int drop_privileges(struct daemon *d)
{
	bool kernel = needs_kernel_path(d);
	char names[128];
	uint64_t kept;
	int err;

	if (d->env.dp)
		dataplane_dgram_seal(d->env.dp);
	err = privileges_drop(privileges_needed(&d->cfg, kernel), &kept);
	if (err)
		return log_errno(LOG_ERR, err, "dropping capabilities");
	privileges_format(kept, names, sizeof(names));
	log_info("capabilities kept: %s", names);
	if (d->env.dp && !kernel) {
		d->env.kernel_path_closed = true;
		log_info("no section uses the kernel path: CAP_NET_ADMIN dropped; sections a "
			 "reload adds run in user space until a restart");
	}
	return 0;
}

int daemon_start(struct daemon *d, const struct daemon_options *opts)
{
	char err_text[512];
	sigset_t mask;
	int err;

	memset(d, 0, sizeof(*d));
	redirect_loop_init(&d->env.loop);
	d->env.cfg = &d->cfg.daemon; /* a reload replaces d->cfg in place */
	d->env.passed = &d->passed;
	fd_spare_init(); /* without it, running out of descriptors only pauses accepting */
	d->started_usec = now_usec();
	err = load_config(d, opts, err_text, sizeof(err_text));
	if (err) {
		log_err("%s", err_text); /* a usage error: the one line says it all */
		return err;
	}
	if (opts->datapath >= 0)
		d->cfg.daemon.datapath = (enum datapath_mode)opts->datapath;
	if (opts->fastpath >= 0)
		d->cfg.daemon.fastpath = (enum fastpath_mode)opts->fastpath;
	err = check_options(d, opts, err_text, sizeof(err_text));
	if (err) {
		log_err("%s", err_text);
		daemon_stop(d);
		return err;
	}
	log_set_level(d->cfg.daemon.log_level);
	/* Descriptors for max-redirects before anything takes one; short of them is no reason
	 * not to start (it warns). */
	fd_limit_fit(&d->cfg);
	/*
	 * Blocked before the carriers are read: from then on the only copies of the redirects
	 * handed over are this process's, and a signal's default action would end it with them
	 * (they are served from the event loop's signalfd once it runs).
	 */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGUSR2);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* Before anything is opened: a socket systemd passed that fits no section is fatal. */
	err = passed_fds_collect(&d->passed);
	if (err < 0) {
		log_errno(LOG_ERR, err, "reading the sockets passed by systemd (LISTEN_FDS)");
		goto out;
	}
	/* From here a failure gives back what the previous instance handed over. */
	err = handover_collect(d);
	if (err < 0)
		goto out;
	err = socket_activation_check(&d->passed, &d->cfg);
	if (err)
		goto out;
	err = sd_event_default(&d->env.event);
	if (err < 0)
		goto out;
	err = sd_event_add_signal(d->env.event, NULL, SIGTERM, on_signal, d);
	err = err < 0 ? err : sd_event_add_signal(d->env.event, NULL, SIGINT, on_signal, d);
	err = err < 0 ? err : sd_event_add_signal(d->env.event, NULL, SIGHUP, on_sighup, d);
	err = err < 0 ? err
		      : sd_event_add_signal(d->env.event, NULL, SIGUSR2, on_restart_signal, d);
	if (err < 0)
		goto out;
	err = open_dataplane(d, opts);
	if (err)
		goto out;
	handover_reserve_ids(d);
	err = open_listeners(d);
	if (err)
		goto out;
	/* The command line has none unless asked: two socat replacements must not clash. */
	err = d->cfg.daemon.control_path[0]
		  ? control_server_open(d->env.event, d->cfg.daemon.control_path,
					CONTROL_SOCKET_MODE, &control_commands, d, &d->control)
		  : 0;
	if (err)
		goto out;
	err = service_start(d);
	if (err)
		goto out;
	err = idle_sweep_update(d);
	err = err ?: source_watch_start(d);
	err = err ?: drop_privileges(d);
	if (err)
		goto out;
	/* Last, once nothing can fail: the redirects run from here, and systemd lets go. */
	handover_adopt(d);
	handover_finish(d);
	passed_fds_release(&d->passed); /* all claimed: socket_activation_check() saw to it */
	return 0;
out:
	/* Each step said what failed; this line ends every failed start the same way. */
	log_errno(LOG_ERR, err, "not started");
	handover_give_back(d);
	daemon_stop(d);
	return err;
}

int daemon_run(struct daemon *d)
{
	/* Every listener and the control socket are up: clients may connect from now on. */
	service_notify_ready(d);
	return sd_event_loop(d->env.event);
}

void daemon_stop(struct daemon *d)
{
	struct redirect *r;
	size_t i;

	service_stop(d);
	idle_sweep_stop(d);
	source_watch_stop(d);
	passed_fds_release(&d->passed); /* copies: the fd store keeps what it stored */
	if (d->env.late_inserts)
		log_info("%" PRIu64 " client sockets entered the map with bytes still queued; "
			 "those bytes followed the next write or EOF",
			 d->env.late_inserts);
	control_server_close(d->control);
	d->control = NULL;
	for (i = 0; i < d->n_listeners; i++)
		listener_retire(d->listeners[i]);
	while ((r = redirect_table_first(&d->env.redirects)))
		redirect_free(r); /* frees retired listeners with their last one */
	uid_tally_free(&d->env.uids);
	free(d->listeners);
	d->listeners = NULL;
	d->n_listeners = 0;
	handover_close_probe_links(d);
	if (d->env.dp)
		dataplane_dgram_spares_close(d->env.dp);
	dataplane_close(d->env.dp);
	d->env.dp = NULL;
	d->env.event = sd_event_unref(d->env.event);
	fd_spare_fini();
	config_free(&d->cfg);
}
