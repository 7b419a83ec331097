// SPDX-License-Identifier: GPL-2.0-only
/*
 * Restart without loss. On "systemctl restart" (and only then: a stop drains, see
 * systemd_job.c) the daemon stops accepting, lets every redirect settle (nothing held in
 * the daemon, the kernel carrying client to target), and hands to systemd's fd store
 * (FDSTORE=1, FDNAME=) every listener it created, both sockets of every settled redirect,
 * and the maps of its BPF object. While no daemon runs, the kernel goes on redirecting client
 * to target (DESIGN fact 7): the maps keep their programs and the sockets stay in them, since
 * systemd holds a reference to each. Target to client waits in the target's receive queue.
 * New clients wait in the listen backlog.
 *
 * The next instance gets the fds back (LISTEN_FDS, LISTEN_FDNAMES), loads its object on top
 * of the stored maps, takes back the listeners and the redirects, and tells systemd to drop
 * what it stored (FDSTOREREMOVE=1): otherwise systemd's copy would keep a closed redirect's
 * sockets open.
 *
 * Names, all starting "vsm-" (FDNAME= allows 255 printable characters, no ':' since
 * LISTEN_FDNAMES is colon-separated; systemd renames an invalid one "stored"):
 *   vsm-map.SHA.NAME               a map of the main object; SHA: its first 16 hex digits
 *   vsm-listen.SECTION             a listening socket the daemon created
 *   vsm-pair.ID.SLOT.HALF.c.SECTION  a redirect's client socket; "t": its target socket;
 *                                  HALF: which ways are already half-closed (redirect.h)
 *   vsm-probe.N                    the queue probe's cgroup link (N = 0), and those of
 *                                  earlier instances this one still needs (1, 2, ...)
 *
 * Why the probe links: the queue probe answers getsockopt() for sockets made in the cgroup it
 * is attached to, and systemd gives each start of the unit a new cgroup. A target socket the
 * previous instance made stays in that instance's cgroup, whose programs go when their link
 * closes: without it, a redirect taken back would lose its exact drain signal and fall back to
 * the timed heuristic, which a vsock reader granting credit in bursts can fool into shutting
 * the target down before the kernel has sent everything (the bytes it still held were lost,
 * and the backlog's next send failed with EPIPE). Kept, the link keeps the probe on that
 * cgroup for as long as its sockets live. An instance keeps what it inherited until its own
 * end, and hands it on only while a redirect it took back is handed on too.
 *
 * Not handed over: UNIX-RECV sockets (closed and made again, so datagrams sent meanwhile
 * fail at the sender), listeners systemd passed by socket activation (the .socket unit keeps
 * them anyway), and a redirect that has not settled within HANDOVER_SETTLE_USEC (closed as
 * on a stop).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "bpf_dataplane.h"
#include "bpf_object_id.h"

#include "daemon_state.h"
#include "fd_carrier.h"
#include "handover.h"
#include "listener.h"
#include "passed_fds.h"
#include "stored_pair.h"
#include "log.h"
#include "redirect.h"
#include "sockopt.h"
#include "systemd_job.h"
#include "util.h"

#define HANDOVER_SETTLE_USEC (3 * USEC_PER_SEC)
#define HANDOVER_POLL_USEC   (5 * USEC_PER_MSEC)
#define SHA_LEN		     16
#define PAIR_NAME_LEN	     300

/* Stored for us by the previous instance (the rest is socket activation's). */
static bool stored(const struct daemon *d, size_t i)
{
	return d->passed.v[i].fd >= 0 && passed_fd_stored(&d->passed.v[i]);
}

static const char *stored_name(const struct daemon *d, size_t i)
{
	return d->passed.v[i].name;
}

int handover_map_fd(void *ctx, const char *name)
{
	struct daemon *d = ctx;
	const char *p;
	size_t i;
	int fd;

	for (i = 0; i < d->passed.n; i++) {
		if (!stored(d, i) || strncmp(stored_name(d, i), "vsm-map.", 8))
			continue;
		p = stored_name(d, i) + 8;
		if (strlen(p) <= SHA_LEN || p[SHA_LEN] != '.' || strcmp(p + SHA_LEN + 1, name))
			continue;
		if (strncmp(p, VSOCKMAP_BPF_SHA256, SHA_LEN)) {
			if (!d->handover.sha_warned)
				log_warn(
				    "the stored BPF maps belong to another build of the BPF object "
				    "(sha256:%.16s, this one is sha256:%.16s): the redirects "
				    "handed "
				    "over are closed",
				    p, VSOCKMAP_BPF_SHA256);
			d->handover.sha_warned = true;
			continue;
		}
		/* A copy: a second load attempt (without the iterator) asks again. */
		fd = fcntl(d->passed.v[i].fd, F_DUPFD_CLOEXEC, 3);
		return fd < 0 ? -errno : fd;
	}
	return -ENOENT;
}

struct pair_name {
	uint64_t id;
	uint32_t slot;
	unsigned int half; /* REDIRECT_HALF_* */
	char end;	   /* 'c': the client socket, 't': the target socket */
	const char *section;
};

/* "vsm-pair.ID.SLOT.HALF.c.SECTION": 0, or -EINVAL for another name. */
static int parse_pair(const char *name, struct pair_name *p)
{
	int off = 0;

	if (sscanf(name, "vsm-pair.%" SCNu64 ".%" SCNu32 ".%u.%c.%n", &p->id, &p->slot, &p->half,
		   &p->end, &off) != 4 ||
	    !off || (p->end != 'c' && p->end != 't') || p->slot > REDIRECT_SLOT_USERSPACE)
		return -EINVAL;
	p->section = name + off;
	return 0;
}

void handover_reserve_ids(struct daemon *d)
{
	struct pair_name p;
	size_t i;

	for (i = 0; i < d->passed.n; i++)
		if (stored(d, i) && !parse_pair(stored_name(d, i), &p))
			redirect_table_reserve_id(&d->env.redirects, p.id);
}

int handover_reserve_slots(struct daemon *d, int (*reserve)(void *ctx, uint32_t slot), void *ctx)
{
	struct pair_name p;
	size_t i;
	int err;

	for (i = 0; i < d->passed.n; i++) {
		if (!stored(d, i) || parse_pair(stored_name(d, i), &p) || p.end != 'c' ||
		    p.slot == REDIRECT_SLOT_USERSPACE)
			continue;
		err = reserve(ctx, p.slot);
		if (err)
			return log_errno(LOG_ERR, err,
					 "taking back slot %" PRIu32 " of redirect %" PRIu64,
					 p.slot, p.id);
	}
	return 0;
}

static struct listener *find_listener(struct daemon *d, const char *section)
{
	size_t i;

	for (i = 0; i < d->n_listeners; i++)
		if (!strcmp(d->listeners[i]->rc->name, section))
			return d->listeners[i];
	return NULL;
}

static bool is_target_of(struct daemon *d, size_t i, uint64_t id)
{
	struct pair_name p;

	return stored(d, i) && !parse_pair(stored_name(d, i), &p) && p.end == 't' && p.id == id;
}

/*
 * The target socket stored with redirect id, or -1. It comes right after its client (a
 * carrier's pairs, and the fd store keeps the order it was given): looked up there first, so
 * that taking back n pairs does not cost n times n lookups.
 */
static int find_target(struct daemon *d, uint64_t id, size_t client)
{
	size_t i;

	if (client + 1 < d->passed.n && is_target_of(d, client + 1, id))
		return passed_fds_take(&d->passed, client + 1);
	for (i = 0; i < d->passed.n; i++)
		if (is_target_of(d, i, id))
			return passed_fds_take(&d->passed, i);
	return -1;
}

/* The cookies of a pair's sockets (0 for a missing target): 0 or -errno. */
static int pair_cookies(int cfd, int tfd, uint64_t cookie[2])
{
	int err = socket_cookie(cfd, &cookie[0]);

	return err ?: tfd >= 0 ? socket_cookie(tfd, &cookie[1]) : 0;
}

/*
 * A pair that is not taken back: both ends see EOF (its fds are closed here, or were by
 * redirect_adopt()), and the slot handover_reserve_slots() kept for it goes back to the pool.
 * With the maps reused, systemd's copies keep its sockets in them until it handles
 * FDSTOREREMOVE, so their entries go first: a new redirect given the slot would otherwise be
 * charged for the old pair's bytes. Without its cookies (NULL), the slot stays reserved.
 */
static void drop_pair(struct daemon *d, const struct pair_name *p, bool maps_reused,
		      const uint64_t *cookie, int cfd, int tfd)
{
	safe_close(cfd);
	safe_close(tfd);
	if (p->slot == REDIRECT_SLOT_USERSPACE || !d->env.dp)
		return;
	if (maps_reused) {
		if (!cookie)
			return;
		dataplane_remove(d->env.dp, cookie[0]);
		if (cookie[1])
			dataplane_remove(d->env.dp, cookie[1]);
	}
	dataplane_slot_free(d->env.dp, p->slot);
}

/* 1 if the pair stored at i was taken back, 0 if not (or if i is not a pair's client). */
static int adopt_one(struct daemon *d, size_t i, bool maps_reused)
{
	struct listener *l, *placeholder = NULL;
	uint64_t cookie[2] = {0, 0};
	const char *why = NULL;
	enum address_kind ck, tk;
	bool in_maps, known;
	struct pair_name p;
	int cfd, tfd, err;

	if (parse_pair(stored_name(d, i), &p) || p.end != 'c')
		return 0;
	cfd = passed_fds_take(&d->passed, i);
	tfd = find_target(d, p.id, i);
	in_maps = p.slot != REDIRECT_SLOT_USERSPACE;
	err = in_maps && maps_reused ? pair_cookies(cfd, tfd, cookie) : 0;
	known = !err;
	if (tfd < 0)
		why = "without its target socket";
	else if (in_maps && !maps_reused)
		why = "with maps this build cannot use";
	else if (err)
		why = "with a socket whose cookie cannot be read";
	if (why) {
		/* The pair cannot go on: both ends see EOF. */
		log_warn("[%s] redirect %" PRIu64 " handed over %s: closed", p.section, p.id, why);
		drop_pair(d, &p, maps_reused, known ? cookie : NULL, cfd, tfd);
		return 0;
	}
	redirect_table_reserve_id(&d->env.redirects, p.id);
	ck = stored_pair_client_kind(cfd);
	tk = stored_pair_target_kind(tfd);
	l = find_listener(d, p.section);
	if (l && !stored_pair_fits(l->rc, ck, tk)) {
		/* Its rules (half-close, unhash, linger) are those of the ends it has. */
		log_info("[%s] redirect %" PRIu64 " taken back with ends of another kind than "
			 "the section has now: it runs to its end under its own",
			 p.section, p.id);
		l = NULL;
	}
	/* Its section left the configuration or changed: adopt it to close it cleanly. */
	if (!l)
		l = placeholder = listener_placeholder(&d->env, p.section, ck, tk);
	err = l ? redirect_adopt(&d->env, &l->owner, p.id, p.slot, p.half, cfd, tfd, cookie)
		: -ENOMEM;
	if (err) {
		log_errno(LOG_WARNING, err, "[%s] redirect %" PRIu64 " handed over: closed, "
			  "taking it back failed", p.section, p.id);
		/* redirect_adopt() closed both fds, or was not called */
		drop_pair(d, &p, maps_reused, cookie, l ? -1 : cfd, l ? -1 : tfd);
		listener_retire(placeholder); /* it has no redirect */
		return 0;
	}
	return 1;
}

/* "vsm-probe.N": kept for the sockets of the instance that made it (see the top). */
static void keep_probe_link(struct daemon *d, size_t i)
{
	struct handover_state *h = &d->handover;

	if (strncmp(stored_name(d, i), HANDOVER_PREFIX "probe.", strlen(HANDOVER_PREFIX "probe.")))
		return;
	if (h->n_probe_links == HANDOVER_PROBE_LINKS_MAX) {
		log_warn("restart: more than %d queue probe links stored; the redirects taken "
			 "back from the oldest instances may drain without an exact signal",
			 HANDOVER_PROBE_LINKS_MAX);
		safe_close(passed_fds_take(&d->passed, i));
		return;
	}
	h->probe_links[h->n_probe_links++] = passed_fds_take(&d->passed, i);
}

int handover_adopt(struct daemon *d)
{
	bool maps_reused = d->env.dp && dataplane_maps_reused(d->env.dp);
	size_t i, n_stored = 0;
	int n = 0;

	for (i = 0; i < d->passed.n; i++) {
		if (!stored(d, i))
			continue;
		keep_probe_link(d, i);
		if (!stored(d, i))
			continue;
		n += adopt_one(d, i, maps_reused);
	}
	/* systemd still holds its copies: drop them, or a closed redirect stays open there. */
	for (i = 0; i < d->passed.n; i++) {
		if (!passed_fd_stored(&d->passed.v[i]) || d->passed.v[i].carried)
			continue;
		sd_notifyf(0, "FDSTOREREMOVE=1\nFDNAME=%s", stored_name(d, i));
		n_stored++;
	}
	if (n_stored)
		log_info("took back %d redirect%s from the previous instance (%zu fds stored)", n,
			 n == 1 ? "" : "s", n_stored);
	return n;
}

int handover_collect(struct daemon *d)
{
	int pairs = fd_carrier_unpack(&d->passed);

	if (pairs < 0)
		return log_errno(LOG_ERR, pairs, "restart: reading the pairs the previous instance "
					       "handed over");
	if (pairs)
		log_info("restart: %d redirect%s carried over beside the fd store", pairs,
			 pairs == 1 ? "" : "s");
	return 0;
}

/* A stored listener nobody claimed: its section is gone, and so is its socket file. */
static void unlink_listener(int fd)
{
	struct sockaddr_un sa = {};
	socklen_t len = sizeof(sa);

	if (getsockname(fd, (struct sockaddr *)&sa, &len) || sa.sun_family != AF_UNIX ||
	    len <= offsetof(struct sockaddr_un, sun_path) || !sa.sun_path[0])
		return;
	sa.sun_path[sizeof(sa.sun_path) - 1] = '\0';
	unlink(sa.sun_path);
}

void handover_release(struct daemon *d)
{
	size_t i;

	for (i = 0; i < d->passed.n; i++) {
		if (!stored(d, i))
			continue;
		if (!strncmp(stored_name(d, i), STORED_LISTENER_PREFIX,
			     strlen(STORED_LISTENER_PREFIX)))
			unlink_listener(d->passed.v[i].fd);
		safe_close(passed_fds_take(&d->passed, i));
	}
}

void handover_close_probe_links(struct daemon *d)
{
	while (d->handover.n_probe_links)
		safe_close(d->handover.probe_links[--d->handover.n_probe_links]);
}

/* ---- the stopping side ---- */

static int store(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int store(int fd, const char *fmt, ...)
{
	char msg[320], name[256];
	va_list ap;
	int r;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	/*
	 * FDPOLL=0: systemd would otherwise drop an fd that reports EPOLLERR or EPOLLHUP. A BPF
	 * map fd always reports EPOLLERR (bpf_map_poll() without map_poll), and a pair whose
	 * client closes meanwhile must still reach the next instance, which drains it.
	 */
	snprintf(msg, sizeof(msg), "FDSTORE=1\nFDPOLL=0\nFDNAME=%s", name);
	r = sd_pid_notify_with_fds(0, 0, msg, &fd, 1);
	return r > 0 ? 0 : r < 0 ? r : -ENOTCONN;
}

static int store_named(int fd, const char *name)
{
	return store(fd, "%s", name);
}

/* A settled pair, into a carrier, or (a carrier failed) into the fd store itself. */
static int store_pair(struct fd_carrier *carrier, struct redirect *r, uint64_t id, uint32_t slot,
		      unsigned int half, int cfd, int tfd)
{
	const char *section = redirect_listener(r)->rc->name;
	char name[PAIR_NAME_LEN];
	int err;

	snprintf(name, sizeof(name), "%" PRIu64 ".%" PRIu32 ".%u.%s", id, slot, half, section);
	err = fd_carrier_send_pair(carrier, cfd, tfd, name);
	if (!err)
		return 0;
	if (!carrier->failed)
		log_errno(LOG_WARNING, err, "restart: a pair did not fit in a carrier; storing "
					    "it in the fd store (which holds FileDescriptorStoreMax)");
	carrier->failed = true;
	err = store(cfd, "vsm-pair.%" PRIu64 ".%" PRIu32 ".%u.c.%s", id, slot, half, section);
	return err ?: store(tfd, "vsm-pair.%" PRIu64 ".%" PRIu32 ".%u.t.%s", id, slot, half,
			    section);
}

static int store_map(void *ctx, const char *name, int fd)
{
	size_t *n = ctx;
	int err;

	err = store(fd, "vsm-map.%.16s.%s", VSOCKMAP_BPF_SHA256, name);
	if (!err)
		(*n)++;
	return err;
}

/*
 * The probe links the next instance needs for the pairs it takes back: this instance's, and
 * the inherited ones while a pair taken back from an earlier instance goes on.
 */
static void store_probe_links(struct daemon *d, size_t pairs, bool adopted_pairs)
{
	struct handover_state *h = &d->handover;
	int fd = d->env.dp ? dataplane_probe_link_fd(d->env.dp) : -ENOENT;
	size_t i, n = 0;

	if (!pairs)
		return;
	if (fd >= 0 && !store(fd, HANDOVER_PREFIX "probe.%zu", n))
		n++;
	for (i = 0; adopted_pairs && i < h->n_probe_links; i++)
		if (!store(h->probe_links[i], HANDOVER_PREFIX "probe.%zu", n))
			n++;
}

static void store_all(struct daemon *d)
{
	size_t i, pairs = 0, unsettled = 0, maps = 0, lost = 0;
	struct fd_carrier carrier;
	bool adopted_pairs = false;
	const char *why;
	struct redirect *r;
	uint64_t id;
	unsigned int half;
	uint32_t slot;
	int cfd, tfd, err;

	err = d->env.dp ? dataplane_for_each_map(d->env.dp, store_map, &maps) : 0;
	if (err) {
		log_errno(LOG_ERR, err, "handing the BPF maps to systemd: stopping instead");
		return;
	}
	for (i = 0; i < d->n_listeners; i++) {
		struct listener *l = d->listeners[i];

		if (l->dgram || l->activated || l->fd < 0)
			continue;
		if (!store(l->fd, STORED_LISTENER_PREFIX "%s", l->rc->name))
			l->handed_over = true;
	}
	fd_carrier_init(&carrier, store_named);
	for (r = redirect_table_first(&d->env.redirects); r; r = redirect_next(r)) {
		redirect_handover_info(r, &id, &slot, &half, &cfd, &tfd);
		if (!redirect_settle(r, &why)) {
			log_warn("[%s] redirect %" PRIu64 ": not settled after %d ms (%s): closes "
				 "with this instance",
				 redirect_listener(r)->rc->name, id,
				 (int)(HANDOVER_SETTLE_USEC / USEC_PER_MSEC), why);
			unsettled++;
			continue;
		}
		err = store_pair(&carrier, r, id, slot, half, cfd, tfd);
		if (err) {
			log_errno(LOG_ERR, err,
				  "[%s] redirect %" PRIu64 ": not handed over: closes with this "
				  "instance",
				  redirect_listener(r)->rc->name, id);
			lost++;
			continue;
		}
		adopted_pairs |= redirect_adopted(r);
		redirect_mark_handed_over(r);
		pairs++;
	}
	fd_carrier_finish(&carrier);
	store_probe_links(d, pairs, adopted_pairs);
	log_notice("restart: handed %zu redirect%s (%zu in %u carrier%s), the listeners and %zu "
		   "BPF maps to systemd; %zu not settled and %zu not handed over close",
		   pairs, pairs == 1 ? "" : "s", carrier.carried, carrier.n,
		   carrier.n == 1 ? "" : "s", maps, unsettled, lost);
}

static int on_settle_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;
	struct redirect *r;
	bool settled = true;
	const char *why;

	for (r = redirect_table_first(&d->env.redirects); r; r = redirect_next(r))
		if (!redirect_settle(r, &why))
			settled = false;
	if (!settled && usec < d->handover.settle_deadline) {
		/* A one-shot source is off once dispatched: arm it again. */
		sd_event_source_set_time(s, usec + HANDOVER_POLL_USEC);
		sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
		return 0;
	}
	store_all(d);
	return sd_event_exit(d->env.event, 0);
}

/* systemd restarts the unit: stop accepting, let redirects settle, store, leave the loop. */
static int handover_start(struct daemon *d)
{
	size_t i;
	int r;

	sd_notify(0, "STOPPING=1\nSTATUS=restarting: handing the sockets over");
	for (i = 0; i < d->n_listeners; i++)
		listener_pause(d->listeners[i]);
	d->handover.settle_deadline = now_usec() + HANDOVER_SETTLE_USEC;
	r = sd_event_add_time_relative(d->env.event, NULL, CLOCK_MONOTONIC, 0, 0, on_settle_timer,
				       d);
	if (r < 0)
		return log_errno(LOG_ERR, r, "restart: stopping instead");
	/* Only now: a plain stop after a failure above must not act as a handover. */
	d->env.handing_over = true;
	log_info("systemd is restarting the service: handing the sockets over");
	return 0;
}

/* Out of the bus's own dispatch: the query (and its bus) can go. */
static int on_answered(sd_event_source *s, void *userdata)
{
	struct daemon *d = userdata;
	int restart = d->handover.answer;

	(void)s;
	d->handover.answered = sd_event_source_disable_unref(d->handover.answered);
	d->handover.question = systemd_job_query_free(d->handover.question);
	if (restart < 0)
		log_errno(LOG_NOTICE, restart, "asking systemd whether this is a restart: stopping");
	else if (!restart)
		log_info("systemd is stopping the service: shutting down");
	if (restart <= 0 || handover_start(d) < 0)
		d->handover.stop(d);
	return 0;
}

static void on_job_answer(int restart, void *userdata)
{
	struct daemon *d = userdata;
	int r;

	d->handover.answer = restart;
	r = sd_event_add_defer(d->env.event, &d->handover.answered, on_answered, d);
	if (r < 0) {
		log_errno(LOG_ERR, r, "restart or stop: stopping");
		d->handover.stop(d);
	}
}

int handover_ask(struct daemon *d, void (*stop)(struct daemon *d))
{
	int r;

	d->handover.stop = stop;
	r = systemd_job_ask_restart(d->env.event, on_job_answer, d, &d->handover.question);
	if (r < 0 && r != -ENOTCONN)
		log_errno(LOG_NOTICE, r, "asking systemd whether this is a restart: stopping");
	if (!r)
		log_info("received SIGTERM: asking systemd whether this is a restart");
	return r;
}

bool handover_asking(const struct daemon *d)
{
	return d->handover.question;
}

void handover_forget_question(struct daemon *d)
{
	d->handover.answered = sd_event_source_disable_unref(d->handover.answered);
	d->handover.question = systemd_job_query_free(d->handover.question);
}
