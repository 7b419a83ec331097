// SPDX-License-Identifier: GPL-2.0-only
/*
 * Restart without loss. systemd sends RestartKillSignal= (SIGUSR2, in the unit) for a restart
 * job and KillSignal= (SIGTERM) for a stop, so the daemon knows which without asking. On a
 * restart it stops accepting and, at once, hands to systemd's fd store (FDSTORE=1, FDNAME=)
 * every listener it created, every redirect whatever it is doing (redirect_handover.c: a
 * record and the descriptors that hold its bytes, in carriers, fd_carrier.h), and the maps
 * of its BPF object; then it exits. Nothing waits for a slow reader. While no daemon runs,
 * the kernel goes on redirecting client to target where it did (DESIGN fact 7): the maps
 * keep their programs and the sockets stay in them, since the carriers hold a reference to
 * each; what the daemon held waits in a memfd, target to client in the target's receive
 * queue, new clients in the listen backlog.
 *
 * The next instance gets the fds back (LISTEN_FDS, LISTEN_FDNAMES), reads the redirects out
 * of the carriers, opens everything else on top of what was stored (the maps, the
 * listeners), and takes the redirects back last, once nothing can fail any more; then it
 * tells systemd to drop what it stored (FDSTOREREMOVE=1): otherwise systemd's copy would keep
 * a closed listener open. A start that fails before that gives the redirects back in a new
 * carrier and leaves the rest in the store, so that the start after the fix finds all of it.
 *
 * Names, all starting "vsm-" (FDNAME= allows 255 printable characters, no ':' since
 * LISTEN_FDNAMES is colon-separated; systemd renames an invalid one "stored"):
 *   vsm-map.SHA.NAME               a map of the main object; SHA: its first 16 hex digits
 *   vsm-listen.SECTION             a listening socket the daemon created
 *   vsm-carrier.N                  a carrier: redirects, each one message
 *   vsm-probe.G                    the queue probe's cgroup link of instance G: this
 *                                  instance's, and those of earlier instances whose target
 *                                  sockets a redirect handed over still has
 *   vsm-pair.ID.SLOT.HALF.c.SECTION  read only: a redirect's client socket as a version
 *                                  before carriers stored it ("t": its target socket)
 *
 * Why the probe links: the queue probe answers getsockopt() for sockets made in the cgroup it
 * is attached to, and systemd gives each start of the unit a new cgroup. A target socket the
 * previous instance made stays in that instance's cgroup, whose programs go when their link
 * closes: without it, a redirect taken back would lose its exact drain signal and fall back to
 * the timed heuristic, which a vsock reader granting credit in bursts can fool into shutting
 * the target down before the kernel has sent everything (the bytes it still held were lost,
 * and the backlog's next send failed with EPIPE). Kept, the link keeps the probe on that
 * cgroup for as long as its sockets live. Instances are numbered in the chain of restarts
 * (redirect_env.generation), each redirect's record says which made its target socket
 * (origin), and a link is handed on only while a redirect made by its instance is: a chain
 * of restarts would otherwise carry every link while one old pair lived.
 *
 * Not handed over: UNIX-RECV sockets (closed and made again, so datagrams sent meanwhile
 * fail at the sender), and listeners systemd passed by socket activation (the .socket unit
 * keeps them anyway).
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
#include "util.h"

#define SHA_LEN	      16
#define PAIR_NAME_LEN 300

/* Stored for us by the previous instance (the rest is socket activation's). */
static bool stored(const struct daemon *d, size_t i)
{
	return d->passed.v[i].fd >= 0 && passed_fd_stored(&d->passed.v[i]);
}

static const char *stored_name(const struct daemon *d, size_t i)
{
	return d->passed.v[i].name;
}

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
	 * map fd always reports EPOLLERR (bpf_map_poll() without map_poll).
	 */
	snprintf(msg, sizeof(msg), "FDSTORE=1\nFDPOLL=0\nFDNAME=%s", name);
	r = sd_pid_notify_with_fds(0, 0, msg, &fd, 1);
	return r > 0 ? 0 : r < 0 ? r : -ENOTCONN;
}

static int store_named(int fd, const char *name)
{
	return store(fd, "%s", name);
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
				    "handed over on the kernel path are closed",
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

/* ---- the starting side: what was handed over ---- */

static void pair_close(struct handed_pair *p)
{
	int i;

	for (i = 0; i < RECORD_NR_FDS; i++)
		p->fds[i] = safe_close(p->fds[i]);
	free(p->raw);
	p->raw = NULL;
}

static struct handed_pair *pair_append(struct handover_state *h)
{
	struct handed_pair *v;
	size_t cap;
	int i;

	if (h->n_pairs == h->cap_pairs) {
		cap = h->cap_pairs ? 2 * h->cap_pairs : 64;
		v = reallocarray(h->pairs, cap, sizeof(*v));
		if (!v)
			return NULL;
		h->pairs = v;
		h->cap_pairs = cap;
	}
	v = &h->pairs[h->n_pairs++];
	memset(v, 0, sizeof(*v));
	for (i = 0; i < RECORD_NR_FDS; i++)
		v->fds[i] = -1;
	return v;
}

/* The descriptors of a message, in the order the record names them, into their places. */
static void place_fds(struct handed_pair *p, int *fds)
{
	unsigned int k = 0;
	int i;

	for (i = 0; i < RECORD_NR_FDS; i++)
		if (p->rec.fds & (1u << i))
			p->fds[i] = fds[k++];
}

struct collect_ctx {
	struct daemon *d;
	unsigned int unreadable; /* a version this build does not read */
	unsigned int malformed;
};

/* One carrier message: a redirect to take back, or one to close and say why. */
static int take_message(void *ctx, const void *msg, size_t len, int *fds, unsigned int n_fds)
{
	struct collect_ctx *c = ctx;
	struct redirect_record rec;
	struct handed_pair *p;
	unsigned int version, i;
	int err;

	err = redirect_record_decode(msg, len, n_fds, &rec, &version);
	if (err) {
		if (err == -EPROTONOSUPPORT) {
			log_warn("restart: a redirect handed over in format version %u, which this "
				 "build does not read (it reads 0 and %d): closed",
				 version, REDIRECT_RECORD_VERSION);
			c->unreadable++;
		} else {
			c->malformed++;
		}
		for (i = 0; i < n_fds; i++)
			safe_close(fds[i]);
		return 0;
	}
	p = pair_append(&c->d->handover);
	if (p)
		p->raw = malloc(len);
	if (!p || !p->raw) {
		if (p)
			c->d->handover.n_pairs--;
		for (i = 0; i < n_fds; i++)
			safe_close(fds[i]);
		return -ENOMEM;
	}
	memcpy(p->raw, msg, len);
	p->raw_len = len;
	p->rec = rec;
	place_fds(p, fds);
	return 0;
}

/* "vsm-pair.ID.SLOT.HALF.c.SECTION": 0 with its end ('c' or 't'), or -EINVAL. */
static int parse_stored_pair(const char *name, struct redirect_record *rec, char *end)
{
	char plain[PAIR_NAME_LEN];
	int off = 0;
	uint64_t id;
	uint32_t slot;
	unsigned int half;

	if (sscanf(name, "vsm-pair.%" SCNu64 ".%" SCNu32 ".%u.%c.%n", &id, &slot, &half, end,
		   &off) != 4 ||
	    !off || (*end != 'c' && *end != 't'))
		return -EINVAL;
	snprintf(plain, sizeof(plain), "%" PRIu64 ".%" PRIu32 ".%u.%s", id, slot, half, name + off);
	return redirect_record_from_name(plain, rec);
}

/* The target stored with client entry i (right after it, as it was stored), taken; or -1. */
static int stored_target(struct daemon *d, size_t client, uint64_t id)
{
	struct redirect_record rec;
	size_t i, k;
	char end;

	for (k = 0; k < d->passed.n; k++) {
		i = (client + 1 + k) % d->passed.n;
		if (stored(d, i) && !parse_stored_pair(stored_name(d, i), &rec, &end) &&
		    end == 't' && rec.id == id)
			return passed_fds_take(&d->passed, i);
	}
	return -1;
}

/*
 * Pairs a version before carriers put in the fd store itself (when a carrier failed): they
 * join the list as version 0 records. They stay in the store until handover_finish().
 */
static int collect_stored_pairs(struct daemon *d)
{
	struct redirect_record rec;
	struct handed_pair *p;
	size_t i;
	char end;
	int tfd;

	for (i = 0; i < d->passed.n; i++) {
		if (!stored(d, i) || parse_stored_pair(stored_name(d, i), &rec, &end) || end != 'c')
			continue;
		tfd = stored_target(d, i, rec.id);
		if (tfd < 0) {
			log_warn("[%s] redirect %" PRIu64 " handed over without its target socket: "
				 "closed",
				 rec.section, rec.id);
			safe_close(passed_fds_take(&d->passed, i));
			continue;
		}
		p = pair_append(&d->handover);
		if (!p) {
			safe_close(tfd);
			return -ENOMEM;
		}
		p->rec = rec;
		p->fds[RECORD_FD_CLIENT] = passed_fds_take(&d->passed, i);
		p->fds[RECORD_FD_TARGET] = tfd;
	}
	return 0;
}

/* "vsm-probe.G": the link of instance G, or -1 for another name. */
static int64_t probe_link_generation(const char *name)
{
	size_t len = strlen(HANDOVER_PREFIX "probe.");
	uint32_t g;

	if (strncmp(name, HANDOVER_PREFIX "probe.", len) || sscanf(name + len, "%" SCNu32, &g) != 1)
		return -1;
	return g;
}

/*
 * This instance's number: one past every instance whose probe link or target sockets were
 * handed over (the numbers start again at 0 once none is).
 */
static uint32_t next_generation(const struct daemon *d)
{
	uint32_t next = 0, o;
	int64_t g;
	size_t i;

	for (i = 0; i < d->passed.n; i++) {
		g = d->passed.v[i].name ? probe_link_generation(d->passed.v[i].name) : -1;
		if (g >= 0 && g + 1 > next)
			next = (uint32_t)(g + 1);
	}
	for (i = 0; i < d->handover.n_pairs; i++) {
		o = d->handover.pairs[i].rec.origin;
		if (o != RECORD_ORIGIN_UNKNOWN && o + 1 > next)
			next = o + 1;
	}
	return next;
}

int handover_collect(struct daemon *d)
{
	struct collect_ctx c = {.d = d};
	unsigned int bad = 0;
	int n;

	n = fd_carrier_unpack(&d->passed, take_message, &c, &bad);
	n = n < 0 ? n : collect_stored_pairs(d);
	if (n < 0)
		return log_errno(LOG_ERR, n,
				 "restart: reading the redirects the previous instance "
				 "handed over");
	if (bad + c.malformed)
		log_warn("restart: %u malformed messages in the carriers of the previous instance: "
			 "those redirects close",
			 bad + c.malformed);
	d->env.generation = next_generation(d);
	if (d->handover.n_pairs)
		log_info("restart: %zu redirect%s handed over by the previous instance",
			 d->handover.n_pairs, d->handover.n_pairs == 1 ? "" : "s");
	return 0;
}

void handover_reserve_ids(struct daemon *d)
{
	size_t i;

	for (i = 0; i < d->handover.n_pairs; i++)
		redirect_table_reserve_id(&d->env.redirects, d->handover.pairs[i].rec.id);
}

size_t handover_kernel_pairs(const struct daemon *d)
{
	size_t i, n = 0;

	for (i = 0; i < d->handover.n_pairs; i++)
		n += d->handover.pairs[i].rec.slot != REDIRECT_SLOT_USERSPACE;
	return n;
}

bool handover_kernel_path_used(const struct daemon *d)
{
	const struct redirect_record *rec;
	size_t i;

	for (i = 0; i < d->handover.n_pairs; i++) {
		rec = &d->handover.pairs[i].rec;
		if (rec->slot != REDIRECT_SLOT_USERSPACE || !rec->userspace)
			return true;
	}
	return false;
}

int handover_reserve_slots(struct daemon *d, int (*reserve)(void *ctx, uint32_t slot), void *ctx)
{
	struct handover_state *h = &d->handover;
	struct handed_pair *p;
	size_t i, kept = 0;
	int err;

	for (i = 0; i < h->n_pairs; i++) {
		p = &h->pairs[i];
		err = p->rec.slot == REDIRECT_SLOT_USERSPACE ? 0 : reserve(ctx, p->rec.slot);
		if (err == -ENOMEM)
			return log_errno(LOG_ERR, err, "taking back the slots of the redirects");
		if (err) {
			/* Another pair's slot, or one this object does not have: it cannot go on.
			 */
			log_errno(LOG_WARNING, err,
				  "[%s] redirect %" PRIu64 " handed over in slot %" PRIu32
				  ", which cannot be taken back: closed",
				  p->rec.section, p->rec.id, p->rec.slot);
			pair_close(p);
			continue;
		}
		h->pairs[kept++] = *p;
	}
	h->n_pairs = kept;
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

/* The cookies of a pair's sockets: 0 or -errno. */
static int pair_cookies(int cfd, int tfd, uint64_t cookie[2])
{
	int err = socket_cookie(cfd, &cookie[0]);

	return err ?: socket_cookie(tfd, &cookie[1]);
}

/*
 * A pair that is not taken back: both ends see EOF (its fds are closed here, or were by
 * redirect_adopt()), and the slot handover_reserve_slots() kept for it goes back to the pool.
 * With the maps reused, systemd's copies of a stored pair keep its sockets in them until it
 * handles FDSTOREREMOVE, so their entries go first: a new redirect given the slot would
 * otherwise be charged for the old pair's bytes. Without its cookies (NULL), the slot stays
 * reserved.
 */
static void drop_pair(struct daemon *d, struct handed_pair *p, bool maps_reused,
		      const uint64_t *cookie)
{
	pair_close(p);
	if (p->rec.slot == REDIRECT_SLOT_USERSPACE || !d->env.dp)
		return;
	if (maps_reused) {
		if (!cookie)
			return;
		dataplane_remove(d->env.dp, cookie[0]);
		dataplane_remove(d->env.dp, cookie[1]);
	}
	dataplane_slot_free(d->env.dp, p->rec.slot);
}

/* 1 if the pair was taken back, 0 if not (closed, and logged). */
static int adopt_one(struct daemon *d, struct handed_pair *p, bool maps_reused)
{
	const struct redirect_record *rec = &p->rec;
	struct listener *l, *placeholder = NULL;
	uint64_t cookie[2] = {0, 0};
	enum address_kind ck, tk;
	const char *why = NULL;
	bool in_maps;
	int err;

	in_maps = rec->slot != REDIRECT_SLOT_USERSPACE;
	err = in_maps && maps_reused
		  ? pair_cookies(p->fds[RECORD_FD_CLIENT], p->fds[RECORD_FD_TARGET], cookie)
		  : 0;
	if (in_maps && !maps_reused)
		why = "with maps this build cannot use";
	else if (err)
		why = "with a socket whose cookie cannot be read";
	if (why) {
		/* The pair cannot go on: both ends see EOF. */
		log_warn("[%s] redirect %" PRIu64 " handed over %s: closed", rec->section, rec->id,
			 why);
		drop_pair(d, p, maps_reused, err ? NULL : cookie);
		return 0;
	}
	free(p->raw);
	p->raw = NULL;
	ck = stored_pair_client_kind(p->fds[RECORD_FD_CLIENT]);
	tk = stored_pair_target_kind(p->fds[RECORD_FD_TARGET]);
	l = find_listener(d, rec->section);
	if (l && !stored_pair_fits(l->rc, ck, tk)) {
		/* Its rules (half-close, unhash, linger) are those of the ends it has. */
		log_info("[%s] redirect %" PRIu64 " taken back with ends of another kind than "
			 "the section has now: it runs to its end under its own",
			 rec->section, rec->id);
		l = NULL;
	}
	/* Its section left the configuration or changed: adopt it to close it cleanly. */
	if (!l)
		l = placeholder = listener_placeholder(&d->env, rec->section, ck, tk);
	err = l ? redirect_adopt(&d->env, &l->owner, rec, p->fds, cookie) : -ENOMEM;
	if (err) {
		log_errno(LOG_WARNING, err,
			  "[%s] redirect %" PRIu64 " handed over: closed, "
			  "taking it back failed",
			  rec->section, rec->id);
		/* redirect_adopt() closed every fd, or was not called */
		drop_pair(d, p, maps_reused, cookie);
		listener_retire(placeholder); /* it has no redirect */
		return 0;
	}
	return 1;
}

/* "vsm-probe.G": kept for the sockets of instance G (see the top). */
static void keep_probe_link(struct daemon *d, size_t i)
{
	struct handover_state *h = &d->handover;
	int64_t g = probe_link_generation(stored_name(d, i));

	if (g < 0)
		return;
	if (h->n_probe_links == HANDOVER_PROBE_LINKS_MAX) {
		log_warn("restart: more than %d queue probe links stored; the redirects taken "
			 "back from the oldest instances may drain without an exact signal",
			 HANDOVER_PROBE_LINKS_MAX);
		safe_close(passed_fds_take(&d->passed, i));
		return;
	}
	h->probe_links[h->n_probe_links].generation = (uint32_t)g;
	h->probe_links[h->n_probe_links++].fd = passed_fds_take(&d->passed, i);
}

static void forget_pairs(struct handover_state *h)
{
	free(h->pairs);
	h->pairs = NULL;
	h->n_pairs = h->cap_pairs = 0;
}

int handover_adopt(struct daemon *d)
{
	bool maps_reused = d->env.dp && dataplane_maps_reused(d->env.dp);
	struct handover_state *h = &d->handover;
	size_t i, n_pairs = h->n_pairs;
	int n = 0;

	for (i = 0; i < d->passed.n; i++)
		if (stored(d, i))
			keep_probe_link(d, i);
	for (i = 0; i < h->n_pairs; i++)
		n += adopt_one(d, &h->pairs[i], maps_reused);
	forget_pairs(h);
	if (n_pairs)
		log_info("took back %d of %zu redirect%s from the previous instance", n, n_pairs,
			 n_pairs == 1 ? "" : "s");
	return n;
}

/*
 * A stored listener nobody claimed: its section is gone, and so is its socket file, unless a
 * listener of this instance uses that path now (a socket systemd passed, one bound anew).
 */
static void unlink_listener(struct daemon *d, int fd)
{
	struct sockaddr_un sa = {};
	socklen_t len = sizeof(sa);
	size_t i;

	if (getsockname(fd, (struct sockaddr *)&sa, &len) || sa.sun_family != AF_UNIX ||
	    len <= offsetof(struct sockaddr_un, sun_path) || !sa.sun_path[0])
		return;
	sa.sun_path[sizeof(sa.sun_path) - 1] = '\0';
	for (i = 0; i < d->n_listeners; i++)
		if (address_has_file(&d->listeners[i]->rc->listen) &&
		    !strcmp(d->listeners[i]->rc->listen.path, sa.sun_path))
			return;
	unlink(sa.sun_path);
}

void handover_finish(struct daemon *d)
{
	size_t i, n_stored = 0;

	/* systemd still holds its copies: drop them, or a closed redirect stays open there. */
	for (i = 0; i < d->passed.n; i++) {
		if (!passed_fd_stored(&d->passed.v[i]))
			continue;
		sd_notifyf(0, "FDSTOREREMOVE=1\nFDNAME=%s", stored_name(d, i));
		n_stored++;
		if (!stored(d, i))
			continue;
		if (!strncmp(stored_name(d, i), STORED_LISTENER_PREFIX,
			     strlen(STORED_LISTENER_PREFIX)))
			unlink_listener(d, d->passed.v[i].fd);
		safe_close(passed_fds_take(&d->passed, i));
	}
	if (n_stored)
		log_debug("restart: %zu stored fds taken from systemd's fd store", n_stored);
}

/* Carriers read to their end (fd_carrier_unpack() left their entries without an fd). */
static void drop_read_carriers(struct daemon *d)
{
	size_t i, len = strlen(FD_CARRIER_PREFIX);

	for (i = 0; i < d->passed.n; i++)
		if (d->passed.v[i].fd < 0 && d->passed.v[i].name &&
		    !strncmp(d->passed.v[i].name, FD_CARRIER_PREFIX, len))
			sd_notifyf(0, "FDSTOREREMOVE=1\nFDNAME=%s", d->passed.v[i].name);
}

/* The descriptors of a pair in the order its record names them. */
static unsigned int ordered_fds(const struct handed_pair *p, int *out)
{
	unsigned int n = 0;
	int i;

	for (i = 0; i < RECORD_NR_FDS; i++)
		if (p->rec.fds & (1u << i))
			out[n++] = p->fds[i];
	return n;
}

void handover_give_back(struct daemon *d)
{
	struct handover_state *h = &d->handover;
	int fds[RECORD_NR_FDS], err;
	size_t i, given = 0, lost = 0;
	struct fd_carrier carrier;

	for (i = 0; i < d->n_listeners; i++)
		d->listeners[i]->handed_over |= d->listeners[i]->adopted;
	fd_carrier_init(&carrier, store_named, fd_carrier_next_name(&d->passed));
	for (i = 0; i < h->n_pairs; i++) {
		struct handed_pair *p = &h->pairs[i];

		/* One the fd store holds itself stays there: no FDSTOREREMOVE was sent. */
		if (!p->raw) {
			pair_close(p);
			continue;
		}
		err = fd_carrier_send(&carrier, p->raw, p->raw_len, fds, ordered_fds(p, fds));
		if (err) {
			log_errno(LOG_ERR, err,
				  "[%s] redirect %" PRIu64 ": giving it back to the fd "
				  "store failed: it closes",
				  p->rec.section, p->rec.id);
			lost++;
		} else {
			given++;
		}
		pair_close(p);
	}
	fd_carrier_finish(&carrier);
	forget_pairs(h);
	/*
	 * The carriers read empty leave the store, or each failed start would add one more
	 * until FileDescriptorStoreMax refused the next: the one that holds them now.
	 */
	if (carrier.n)
		drop_read_carriers(d);
	if (given || lost)
		log_notice(
		    "not started: gave %zu redirect%s back to systemd's fd store for the next "
		    "start (%zu could not be)",
		    given, given == 1 ? "" : "s", lost);
}

void handover_close_probe_links(struct daemon *d)
{
	while (d->handover.n_probe_links)
		safe_close(d->handover.probe_links[--d->handover.n_probe_links].fd);
}

/* ---- the stopping side ---- */

/* The instances that made the target sockets of the pairs handed over. */
struct origins {
	uint32_t v[HANDOVER_PROBE_LINKS_MAX];
	size_t n;
	bool overflow;
};

static int store_map(void *ctx, const char *name, int fd)
{
	size_t *n = ctx;
	int err;

	err = store(fd, "vsm-map.%.16s.%s", VSOCKMAP_BPF_SHA256, name);
	if (!err)
		(*n)++;
	return err;
}

/* Instance g made the target socket of a pair handed over (or one whose maker is unknown). */
static bool origin_handed_over(const struct origins *o, uint32_t g)
{
	size_t i;

	for (i = 0; i < o->n; i++)
		if (o->v[i] == g || o->v[i] == RECORD_ORIGIN_UNKNOWN)
			return true;
	return o->overflow;
}

static void origin_add(struct origins *o, uint32_t g)
{
	size_t i;

	for (i = 0; i < o->n; i++)
		if (o->v[i] == g)
			return;
	if (o->n == HANDOVER_PROBE_LINKS_MAX)
		o->overflow = true; /* then every link goes on */
	else
		o->v[o->n++] = g;
}

/*
 * The probe links the next instance needs for the pairs it takes back: those of the instances
 * that made their target sockets, this one's included, and no other: a chain of restarts
 * would otherwise carry every link it ever made while one old pair lived.
 */
static void store_probe_links(struct daemon *d, const struct origins *o)
{
	struct handover_state *h = &d->handover;
	int fd = d->env.dp ? dataplane_probe_link_fd(d->env.dp) : -ENOENT;
	size_t i;

	if (fd >= 0 && origin_handed_over(o, d->env.generation))
		store(fd, HANDOVER_PREFIX "probe.%" PRIu32, d->env.generation);
	for (i = 0; i < h->n_probe_links; i++)
		if (origin_handed_over(o, h->probe_links[i].generation))
			store(h->probe_links[i].fd, HANDOVER_PREFIX "probe.%" PRIu32,
			      h->probe_links[i].generation);
}

/* The listening sockets the daemon made: how many went to the fd store. */
static size_t store_listeners(struct daemon *d)
{
	size_t i, n = 0;
	int err;

	for (i = 0; i < d->n_listeners; i++) {
		struct listener *l = d->listeners[i];

		if (l->dgram || l->activated || l->fd < 0)
			continue;
		err = store(l->fd, STORED_LISTENER_PREFIX "%s", l->rc->name);
		if (err) {
			log_errno(LOG_WARNING, err,
				  "[%s] restart: storing the listening socket: "
				  "the next instance binds a new one",
				  l->rc->name);
			continue;
		}
		l->handed_over = true;
		n++;
	}
	return n;
}

/* One redirect into the carrier: 0 once it travelled, or -errno (it runs on here). */
static int hand_over(struct fd_carrier *carrier, struct redirect *r)
{
	uint8_t msg[REDIRECT_RECORD_MAX];
	int fds[RECORD_NR_FDS], ordered[RECORD_NR_FDS];
	struct redirect_record rec;
	unsigned int n = 0;
	int len, i, err;

	err = redirect_freeze(r, &rec, fds);
	if (err)
		return err;
	len = redirect_record_encode(&rec, msg, sizeof(msg));
	if (len < 0)
		return len;
	for (i = 0; i < RECORD_NR_FDS; i++)
		if (rec.fds & (1u << i))
			ordered[n++] = fds[i];
	return fd_carrier_send(carrier, msg, (size_t)len, ordered, n);
}

/* Every redirect into the carriers; those handed over are freed. Returns those that were. */
static size_t hand_over_all(struct daemon *d, struct origins *origins, size_t *failed)
{
	struct redirect *r, *next;
	struct fd_carrier carrier;
	size_t handed = 0;
	int err;

	*failed = 0;
	fd_carrier_init(&carrier, store_named, 0);
	for (r = redirect_table_first(&d->env.redirects); r; r = redirect_next(r)) {
		err = hand_over(&carrier, r);
		if (err) {
			if (!*failed)
				log_errno(LOG_ERR, err,
					  "[%s] restart: a redirect could not be "
					  "handed over (it is finished as on a stop, as are any "
					  "others that cannot)",
					  redirect_listener(r)->rc->name);
			(*failed)++;
			continue;
		}
		origin_add(origins, redirect_origin(r));
		redirect_mark_handed_over(r);
		handed++;
	}
	fd_carrier_finish(&carrier);
	for (r = redirect_table_first(&d->env.redirects); r; r = next) {
		next = redirect_next(r);
		if (redirect_handed_over(r))
			redirect_free(r); /* this instance's copies of its descriptors */
	}
	log_notice("restart: handed %zu redirect%s (in %u carrier%s) to systemd's fd store", handed,
		   handed == 1 ? "" : "s", carrier.n, carrier.n == 1 ? "" : "s");
	return handed;
}

void handover_start(struct daemon *d, void (*stop)(struct daemon *d))
{
	size_t i, maps = 0, listeners, handed, failed;
	static struct origins origins; /* a restart's, once: too large for the stack */
	uint64_t t0 = now_usec();
	int err;

	if (!getenv("NOTIFY_SOCKET")) {
		log_notice("received SIGUSR2 (restart), but there is no fd store to hand over to "
			   "(not started by systemd: NOTIFY_SOCKET is not set): stopping instead, "
			   "everything already sent is delivered");
		stop(d);
		return;
	}
	sd_notify(0, "STOPPING=1\nSTATUS=restarting: handing everything over");
	log_info("systemd is restarting the service: handing the listeners, the redirects and "
		 "the maps over");
	for (i = 0; i < d->n_listeners; i++)
		listener_pause(d->listeners[i]);
	/* The maps first: without them the redirects on the kernel path cannot go on. */
	err = d->env.dp ? dataplane_for_each_map(d->env.dp, store_map, &maps) : 0;
	if (err) {
		log_errno(LOG_ERR, err,
			  "restart: handing the BPF maps to systemd's fd store: "
			  "stopping instead, everything already sent is delivered");
		stop(d);
		return;
	}
	d->env.handing_over = true;
	listeners = store_listeners(d);
	handed = hand_over_all(d, &origins, &failed);
	store_probe_links(d, &origins);
	log_info("restart: handed over in %" PRIu64 " ms: %zu redirect%s, %zu listener%s and %zu "
		 "BPF maps%s",
		 (now_usec() - t0) / USEC_PER_MSEC, handed, handed == 1 ? "" : "s", listeners,
		 listeners == 1 ? "" : "s", maps, failed ? "; the rest finish here first" : "");
	if (failed) {
		d->env.handing_over = false;
		stop(d);
		return;
	}
	sd_event_exit(d->env.event, HANDOVER_EXIT_STATUS);
}
