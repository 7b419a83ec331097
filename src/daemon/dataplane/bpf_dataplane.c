// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_dataplane.h"
#include "cgroup_self.h"
#include "fd_spare.h"
#include "log.h"
#include "slot_pool.h"
#include "util.h"
#include "vsockmap.skel.h"

/*
 * The gates map is mapped a chunk at a time, as far as the highest slot in use (slots are
 * handed out lowest first): a mapping of a BPF array brings all its pages in at once, and the
 * whole map (3 MiB) was most of an idle daemon's RSS.
 */
#define GATES_CHUNK (64 * 1024)
/* Address space only: the gates map's pages are mapped into it chunk by chunk. */
#define GATES_RESERVE_FLAGS (MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE)

#include "dataplane_internal.h"
#include "psock_wake.h"

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[1024];
	int prio = level == LIBBPF_WARN ? LOG_NOTICE : LOG_DEBUG; /* one level lower */
	size_t n;

	if (prio > log_get_level())
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	if (n && line[n - 1] == '\n')
		line[n - 1] = '\0';
	/* libbpf's own messages begin with "libbpf: "; others (verifier logs) get it here. */
	log_msg(prio, "%s%s", strncmp(line, "libbpf: ", 8) ? "libbpf: " : "", line);
	return 0;
}

/*
 * Use the maps a previous instance stored (restart without loss, handover.c): all of them or
 * none. Internal maps (.bss) are per program and never shared.
 */
static int reuse_stored_maps(struct dataplane *dp, struct vsockmap_bpf *skel,
			     const struct dataplane_stored_maps *stored)
{
	int fds[16], n = 0, i, err = 0;
	struct bpf_map *map;
	bool all = true;

	bpf_object__for_each_map(map, skel->obj) {
		if (bpf_map__is_internal(map))
			continue;
		if (n == (int)(sizeof(fds) / sizeof(fds[0])))
			return -E2BIG;
		fds[n] = stored->fd(stored->ctx, bpf_map__name(map));
		all = all && fds[n] >= 0;
		n++;
	}
	i = 0;
	bpf_object__for_each_map(map, skel->obj) {
		if (bpf_map__is_internal(map))
			continue;
		if (i == n)
			break; /* the same maps as above: never */
		if (all && !err && bpf_map__reuse_fd(map, fds[i]))
			err = -errno;
		if (fds[i] >= 0)
			close(fds[i]); /* bpf_map__reuse_fd() took its own copy */
		i++;
	}
	dp->maps_reused = all && n && !err;
	return err;
}

/*
 * signal: the exact drain signal to load with the verdicts (DRAIN_PROBE, DRAIN_ITERATOR), or
 * none (DRAIN_TIMED); with one, fastpath=permanent if asked for.
 */
static int skel_load(struct dataplane *dp, enum drain_mode signal, bool permanent,
		     const struct dataplane_stored_maps *stored)
{
	struct vsockmap_bpf *skel;
	int err;

	skel = vsockmap_bpf__open();
	if (!skel)
		return -errno;
	permanent = permanent && signal != DRAIN_TIMED;
	bpf_program__set_autoload(skel->progs.vsockmap_dgram_verdict, false);
	bpf_program__set_autoload(skel->progs.vsockmap_queues, signal == DRAIN_ITERATOR);
	bpf_program__set_autoload(skel->progs.vsockmap_queue_probe, signal == DRAIN_PROBE);
	bpf_program__set_autoload(skel->progs.vsockmap_verdict, !permanent);
	bpf_program__set_autoload(skel->progs.vsockmap_msg, !permanent);
	bpf_program__set_autoload(skel->progs.vsockmap_verdict_uncounted, permanent);
	bpf_program__set_autoload(skel->progs.vsockmap_msg_permanent, permanent);
	err = stored ? reuse_stored_maps(dp, skel, stored) : 0;
	if (err) {
		vsockmap_bpf__destroy(skel);
		return log_errno(LOG_ERR, err, "taking over the stored BPF maps");
	}
	err = vsockmap_bpf__load(skel);
	if (err) {
		vsockmap_bpf__destroy(skel);
		return err;
	}
	dp->skel = skel;
	dp->features.permanent = permanent;
	return 0;
}

/*
 * The sk_skb verdict on sources; the sk_msg verdict on both sockhashes, since a TCP socket
 * sends as a destination (sk_msg never runs for unix or vsock). A socket keeps the programs
 * its map had when it entered: redirects a previous instance handed over keep theirs.
 */
static int attach_verdicts(struct dataplane *dp)
{
	struct vsockmap_bpf *skel = dp->skel;
	bool permanent = dp->features.permanent;
	int verdict = bpf_program__fd(permanent ? skel->progs.vsockmap_verdict_uncounted
						: skel->progs.vsockmap_verdict);
	int msg = bpf_program__fd(permanent ? skel->progs.vsockmap_msg_permanent
					    : skel->progs.vsockmap_msg);

	/* bpf_program__attach_sockmap() needs libbpf 1.5; bookworm has 1.1. */
	if (bpf_prog_attach(verdict, bpf_map__fd(skel->maps.sockets), BPF_SK_SKB_VERDICT, 0))
		return log_errno(LOG_ERR, errno, "attaching the sk_skb verdict to the sockhash");
	if (bpf_prog_attach(msg, bpf_map__fd(skel->maps.sockets), BPF_SK_MSG_VERDICT, 0))
		return log_errno(LOG_ERR, errno, "attaching the sk_msg verdict to the sockhash");
	if (bpf_prog_attach(msg, bpf_map__fd(skel->maps.egress), BPF_SK_MSG_VERDICT, 0))
		return log_errno(LOG_ERR, errno, "attaching the sk_msg verdict to egress");
	return 0;
}

/* Map the gates map as far as slot's gates (see GATES_CHUNK). */
static int map_gates(struct dataplane *dp, uint32_t slot)
{
	size_t need = (size_t)(slot + 1) * VSOCKMAP_NR_DIRS * sizeof(struct vsockmap_gate);
	size_t len;
	void *p;

	while (dp->gates_mapped < need) {
		len = dp->gates_len - dp->gates_mapped;
		if (len > GATES_CHUNK)
			len = GATES_CHUNK;
		p = mmap((char *)dp->gates + dp->gates_mapped, len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, bpf_map__fd(dp->skel->maps.gates),
			 (off_t)dp->gates_mapped);
		if (p == MAP_FAILED)
			return -errno;
		dp->gates_mapped += len;
	}
	return 0;
}

/*
 * The queue probe answers getsockopt() for sockets created in the cgroup it is attached to:
 * the daemon's own, where it creates its targets. A link, so that it goes with the daemon.
 */
static int attach_probe(struct dataplane *dp)
{
	char dir[4096];
	int fd, err;

	err = cgroup_self_dir(dir, sizeof(dir));
	if (err)
		return err;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dp->probe_link = bpf_program__attach_cgroup(dp->skel->progs.vsockmap_queue_probe, fd);
	err = dp->probe_link ? 0 : -errno;
	close(fd);
	return err;
}

int dataplane_probe_link_fd(const struct dataplane *dp)
{
	return dp->probe_link ? bpf_link__fd(dp->probe_link) : -ENOENT;
}

static void unload(struct dataplane *dp)
{
	bpf_link__destroy(dp->probe_link);
	dp->probe_link = NULL;
	vsockmap_bpf__destroy(dp->skel);
	dp->skel = NULL;
}

/*
 * The verdicts with the best drain signal the kernel allows and mode asks for: the probe
 * (no tracing program, no bpf_probe_read_kernel(): it loads on a kernel locked down for
 * confidentiality and on one that refuses tracing programs; it needs a cgroup v2 mount and
 * Linux 6.2 for bpf_rdonly_cast()), else the iterator, else none. Why each is not in use
 * stays in the features, for the log and vsockmapctl status.
 */
static int load_with_drain_signal(struct dataplane *dp, enum drain_mode mode, bool permanent,
				  const struct dataplane_stored_maps *stored)
{
	int err = -ECANCELED; /* not asked for */

	if (mode == DRAIN_AUTO || mode == DRAIN_PROBE) {
		err = skel_load(dp, DRAIN_PROBE, permanent, stored);
		err = err ?: attach_probe(dp);
		if (!err) {
			dp->features.drain = DRAIN_PROBE;
			/* Not tried: one exact signal is enough. */
			dp->features.iterator_error = mode == DRAIN_AUTO ? -EEXIST : -ECANCELED;
			return 0;
		}
		unload(dp);
		if (mode == DRAIN_PROBE)
			return log_errno(LOG_ERR, err, "loading the BPF object with its queue probe");
	}
	dp->features.probe_error = err;
	err = -ECANCELED;
	if (mode == DRAIN_AUTO || mode == DRAIN_ITERATOR) {
		err = skel_load(dp, DRAIN_ITERATOR, permanent, stored);
		if (!err) {
			dp->features.drain = DRAIN_ITERATOR;
			return 0;
		}
		if (mode == DRAIN_ITERATOR)
			return log_errno(LOG_ERR, err,
					 "loading the BPF object with its queue iterator");
	}
	dp->features.iterator_error = err;
	err = skel_load(dp, DRAIN_TIMED, false, stored);
	if (err)
		return log_errno(LOG_ERR, err, "loading the BPF object");
	dp->features.drain = DRAIN_TIMED;
	return 0;
}

int dataplane_open(struct dataplane **out, enum drain_mode mode, bool permanent,
		   const struct dataplane_stored_maps *stored)
{
	struct dataplane *dp;
	int err;

	libbpf_set_print(libbpf_print);
	dp = calloc(1, sizeof(*dp));
	if (!dp)
		return -ENOMEM;
	dp->ncpus = libbpf_num_possible_cpus();
	if (dp->ncpus <= 0) {
		err = dp->ncpus ? dp->ncpus : -EINVAL;
		goto out_free;
	}
	dp->percpu = calloc((size_t)dp->ncpus * VSOCKMAP_NR_DIRS, sizeof(*dp->percpu));
	err = dp->percpu ? slot_pool_init(&dp->slots, VSOCKMAP_MAX_REDIRECTS) : -ENOMEM;
	if (err)
		goto out_free;

	err = load_with_drain_signal(dp, mode, permanent, stored);
	if (err)
		goto out_free;

	dp->gates_len = sizeof(struct vsockmap_gate) * VSOCKMAP_MAX_REDIRECTS * VSOCKMAP_NR_DIRS;
	/* Address space for all of it; map_gates() maps the map's pages into it. */
	/* cppcheck-suppress invalidFunctionArg ; MAP_ANONYMOUS wants fd -1 (mmap(2)) */
	dp->gates = mmap(NULL, dp->gates_len, PROT_NONE, GATES_RESERVE_FLAGS, -1, 0);
	if (dp->gates == MAP_FAILED) {
		dp->gates = NULL;
		err = log_errno(LOG_ERR, errno, "mapping the gates map");
		goto out_free;
	}
	err = map_gates(dp, 0);
	if (err) {
		log_errno(LOG_ERR, err, "mapping the gates map");
		goto out_free;
	}
	err = attach_verdicts(dp);
	if (err)
		goto out_free;
	err = insert_probe_run(bpf_map__fd(dp->skel->maps.sockets));
	if (err < 0)
		log_errno(LOG_WARNING, err,
			  "asking whether the kernel passes what a socket queued before its insert "
			  "to the verdict; assuming it does not");
	dp->features.insert_takes_queued = err > 0;
	err = unhash_probe_run(bpf_map__fd(dp->skel->maps.egress));
	if (err < 0)
		log_errno(LOG_WARNING, err,
			  "asking whether a unix server's shutdown() takes its peer out of the "
			  "sockhash; assuming it does");
	dp->features.shutdown_unhashes_peer = err != 0;
	err = psock_wake_probe_run();
	dp->features.backlog_wake_error = err < 0 ? err : 0;
	dp->features.backlog_wakes = err > 0;
	*out = dp;
	return 0;

out_free:
	dataplane_close(dp);
	return err;
}

void dataplane_close(struct dataplane *dp)
{
	if (!dp)
		return;
	if (dp->gates)
		munmap(dp->gates, dp->gates_len);
	bpf_link__destroy(dp->iter_link);
	unload(dp);
	slot_pool_fini(&dp->slots);
	free(dp->percpu);
	free(dp->snap);
	free(dp->snap_keys);
	free(dp->queues);
	free(dp);
}

/* Why a drain signal is not in use, for the log and vsockmapctl status. */
const char *dataplane_signal_why(int err)
{
	if (err == -ECANCELED)
		return "not asked for (--drain)";
	if (err == -EEXIST)
		return "not tried: the queue probe is in use";
	if (err == -EPERM)
		return "refused by the kernel: EPERM";
	if (err == -EINVAL)
		return "refused by the verifier: EINVAL (a helper or kfunc it needs is not offered "
		       "here; lockdown or an older kernel)";
	if (err == -ENOENT)
		return "no cgroup v2 hierarchy shows the daemon's cgroup";
	return strerror(-err);
}

const struct dataplane_features *dataplane_features(const struct dataplane *dp)
{
	return &dp->features;
}

/* Zero both counters of a slot: one BPF_MAP_UPDATE_BATCH, or two updates. */
static int zero_counters(struct dataplane *dp, uint32_t s)
{
	int fd = bpf_map__fd(dp->skel->maps.counters);
	uint32_t keys[VSOCKMAP_NR_DIRS], count = VSOCKMAP_NR_DIRS, dir;

	memset(dp->percpu, 0, sizeof(*dp->percpu) * dp->ncpus * VSOCKMAP_NR_DIRS);
	for (dir = 0; dir < VSOCKMAP_NR_DIRS; dir++)
		keys[dir] = s * VSOCKMAP_NR_DIRS + dir;
	if (!dp->no_batch) {
		if (!bpf_map_update_batch(fd, keys, dp->percpu, &count, NULL))
			return 0;
		if (errno != EINVAL && errno != EOPNOTSUPP && errno != ENOTSUPP)
			return -errno;
		dp->no_batch = true;
	}
	for (dir = 0; dir < VSOCKMAP_NR_DIRS; dir++)
		if (bpf_map_update_elem(fd, &keys[dir], dp->percpu, BPF_ANY))
			return -errno;
	return 0;
}

/* The spare datagram planes hold slots of their own, which no redirect can use anyway. */
void dataplane_set_slot_limit(struct dataplane *dp, uint32_t limit)
{
	slot_pool_set_limit(&dp->slots, limit ? limit + DGRAM_SPARES : 0);
}

bool dataplane_slots_full(const struct dataplane *dp)
{
	return slot_pool_full(&dp->slots);
}

int dataplane_slot_alloc(struct dataplane *dp, uint32_t *slot)
{
	uint32_t s;
	int err;

	err = slot_pool_take(&dp->slots, &s);
	if (err)
		return err;
	err = map_gates(dp, s);
	err = err ?: dataplane_slot_clear(dp, s);
	if (err) {
		slot_pool_put(&dp->slots, s);
		return err;
	}
	*slot = s;
	return 0;
}

int dataplane_slot_clear(struct dataplane *dp, uint32_t slot)
{
	uint32_t dir;

	for (dir = 0; dir < VSOCKMAP_NR_DIRS; dir++)
		memset(&dp->gates[slot * VSOCKMAP_NR_DIRS + dir], 0, sizeof(*dp->gates));
	return zero_counters(dp, slot);
}

void dataplane_slot_free(struct dataplane *dp, uint32_t slot)
{
	slot_pool_put(&dp->slots, slot);
}

int dataplane_slot_reserve(struct dataplane *dp, uint32_t slot)
{
	int err;

	err = slot_pool_take_this(&dp->slots, slot);
	if (err)
		return err;
	err = map_gates(dp, slot);
	if (err)
		slot_pool_put(&dp->slots, slot); /* still free */
	return err;
}

int dataplane_slot_reserve_cb(void *dp, uint32_t slot)
{
	return dataplane_slot_reserve(dp, slot);
}

bool dataplane_maps_reused(const struct dataplane *dp)
{
	return dp->maps_reused;
}

int dataplane_for_each_map(struct dataplane *dp,
			   int (*fn)(void *ctx, const char *name, int fd), void *ctx)
{
	struct bpf_map *map;
	int err;

	bpf_object__for_each_map(map, dp->skel->obj) {
		if (bpf_map__is_internal(map))
			continue;
		err = fn(ctx, bpf_map__name(map), bpf_map__fd(map));
		if (err)
			return err;
	}
	return 0;
}

int dataplane_link(struct dataplane *dp, uint64_t cookie, uint64_t partner, uint32_t slot,
		   uint32_t dir)
{
	struct vsockmap_link link = {.partner_cookie = partner, .slot = slot, .dir = dir};

	if (bpf_map_update_elem(bpf_map__fd(dp->skel->maps.links), &cookie, &link, BPF_ANY))
		return -errno;
	/* The source enters the sockhash under this instance's verdict, and keeps it. */
	dataplane_gate(dp, slot, dir)->uncounted = dp->features.permanent;
	return 0;
}

bool dataplane_counted(struct dataplane *dp, uint32_t slot, uint32_t dir)
{
	return !dataplane_gate(dp, slot, dir)->uncounted;
}

uint64_t dataplane_msg_runs(const struct dataplane *dp)
{
	return __atomic_load_n(&dp->skel->bss->msg_runs, __ATOMIC_RELAXED);
}

static int sockhash_add(struct bpf_map *map, uint64_t cookie, int fd)
{
	uint64_t value = fd;

	return bpf_map_update_elem(bpf_map__fd(map), &cookie, &value, BPF_ANY) ? -errno : 0;
}

int dataplane_add_source(struct dataplane *dp, uint64_t cookie, int fd)
{
	return sockhash_add(dp->skel->maps.sockets, cookie, fd);
}

int dataplane_add_destination(struct dataplane *dp, uint64_t cookie, int fd)
{
	return sockhash_add(dp->skel->maps.egress, cookie, fd);
}

void dataplane_remove_source(struct dataplane *dp, uint64_t cookie)
{
	bpf_map_delete_elem(bpf_map__fd(dp->skel->maps.sockets), &cookie);
}

bool dataplane_source_mapped(struct dataplane *dp, uint64_t cookie)
{
	uint64_t value;

	/* Any other error says nothing: as mapped. */
	return bpf_map_lookup_elem(bpf_map__fd(dp->skel->maps.sockets), &cookie, &value) == 0 ||
	       errno != ENOENT;
}

void dataplane_remove_destination(struct dataplane *dp, uint64_t cookie)
{
	bpf_map_delete_elem(bpf_map__fd(dp->skel->maps.egress), &cookie);
}

void dataplane_unlink(struct dataplane *dp, uint64_t cookie)
{
	bpf_map_delete_elem(bpf_map__fd(dp->skel->maps.links), &cookie);
}

void dataplane_remove(struct dataplane *dp, uint64_t cookie)
{
	bpf_map_delete_elem(bpf_map__fd(dp->skel->maps.sockets), &cookie);
	bpf_map_delete_elem(bpf_map__fd(dp->skel->maps.egress), &cookie);
	bpf_map_delete_elem(bpf_map__fd(dp->skel->maps.links), &cookie);
}

/*
 * Every slot is mapped before it is handed out (dataplane_slot_alloc(), _reserve()), which
 * fail when the mapping does: a slot past the mapping is a bug, and stopping beats writing
 * into the PROT_NONE reservation.
 */
struct vsockmap_gate *dataplane_gate(struct dataplane *dp, uint32_t slot, uint32_t dir)
{
	size_t idx = (size_t)slot * VSOCKMAP_NR_DIRS + dir;

	if ((idx + 1) * sizeof(struct vsockmap_gate) > dp->gates_mapped) {
		log_err("BUG: gate %zu used before its page was mapped", idx);
		abort();
	}
	return &dp->gates[idx];
}

static void sum_percpu(const struct vsockmap_counters *percpu, int ncpus,
		       struct vsockmap_counters *sum)
{
	int cpu;

	memset(sum, 0, sizeof(*sum));
	for (cpu = 0; cpu < ncpus; cpu++) {
		sum->bytes += percpu[cpu].bytes;
		sum->packets += percpu[cpu].packets;
		sum->held_packets += percpu[cpu].held_packets;
		sum->dropped_packets += percpu[cpu].dropped_packets;
	}
}

int dataplane_counters(struct dataplane *dp, uint32_t slot, uint32_t dir,
		       struct vsockmap_counters *sum)
{
	uint32_t idx = slot * VSOCKMAP_NR_DIRS + dir;

	if (slot < dp->snap_slots) {
		sum_percpu(dp->snap + (size_t)idx * dp->ncpus, dp->ncpus, sum);
		return 0;
	}
	if (bpf_map_lookup_elem(bpf_map__fd(dp->skel->maps.counters), &idx, dp->percpu))
		return -errno;
	sum_percpu(dp->percpu, dp->ncpus, sum);
	return 0;
}

int dataplane_counters_snapshot(struct dataplane *dp)
{
	uint32_t want = dp->slots.high * VSOCKMAP_NR_DIRS, count = want, out;
	struct vsockmap_counters *snap;
	uint32_t *keys;
	int err;

	dp->snap_slots = 0;
	if (dp->no_batch || !want)
		return 0;
	if (want > dp->snap_cap) {
		snap = reallocarray(dp->snap, (size_t)want * dp->ncpus, sizeof(*snap));
		if (!snap)
			return -ENOMEM;
		dp->snap = snap;
		keys = reallocarray(dp->snap_keys, want, sizeof(*keys));
		if (!keys)
			return -ENOMEM;
		dp->snap_keys = keys;
		dp->snap_cap = want;
	}
	/* An array batch from key 0 (in_batch NULL); ENOENT: it reached the map's end. */
	err = bpf_map_lookup_batch(bpf_map__fd(dp->skel->maps.counters), NULL, &out,
				   dp->snap_keys, dp->snap, &count, NULL);
	if (err && errno != ENOENT) {
		if (errno == EINVAL || errno == EOPNOTSUPP || errno == ENOTSUPP)
			dp->no_batch = true;
		return dp->no_batch ? 0 : -errno;
	}
	if (count != want || dp->snap_keys[0] != 0 || dp->snap_keys[count - 1] != want - 1)
		return 0; /* not the range asked for: read slot by slot */
	dp->snap_slots = dp->slots.high;
	return 0;
}

void dataplane_counters_snapshot_drop(struct dataplane *dp)
{
	dp->snap_slots = 0;
}

int dataplane_slot_counters(struct dataplane *dp, uint32_t slot,
			    struct vsockmap_counters sum[VSOCKMAP_NR_DIRS])
{
	int fd = bpf_map__fd(dp->skel->maps.counters), err, dir;
	uint32_t first = slot * VSOCKMAP_NR_DIRS, prev = first - 1, out, keys[VSOCKMAP_NR_DIRS];
	uint32_t count = VSOCKMAP_NR_DIRS;

	if (slot < dp->snap_slots) {
		for (dir = 0; dir < VSOCKMAP_NR_DIRS; dir++)
			sum_percpu(dp->snap + (size_t)(first + dir) * dp->ncpus, dp->ncpus,
				   &sum[dir]);
		return 0;
	}
	if (!dp->no_batch) {
		/* An array batch starts after in_batch (NULL: at key 0). */
		err = bpf_map_lookup_batch(fd, first ? &prev : NULL, &out, keys, dp->percpu,
					   &count, NULL);
		if (!err || errno == ENOENT) {
			if (count == VSOCKMAP_NR_DIRS && keys[0] == first && keys[1] == first + 1) {
				for (dir = 0; dir < VSOCKMAP_NR_DIRS; dir++)
					sum_percpu(dp->percpu + dir * dp->ncpus, dp->ncpus,
						   &sum[dir]);
				return 0;
			}
		} else if (errno != EINVAL && errno != EOPNOTSUPP && errno != ENOTSUPP) {
			return -errno;
		} else {
			dp->no_batch = true;
		}
	}
	for (dir = 0; dir < VSOCKMAP_NR_DIRS; dir++) {
		err = dataplane_counters(dp, slot, dir, &sum[dir]);
		if (err)
			return err;
	}
	return 0;
}
