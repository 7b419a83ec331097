/* SPDX-License-Identifier: GPL-2.0-only */
/* The kernel data path: the BPF object, its maps, and the per-redirect slots. */
#ifndef VSOCKMAP_BPF_DATAPLANE_H
#define VSOCKMAP_BPF_DATAPLANE_H

#include <stdbool.h>
#include <stdint.h>

#include "vsockmap.h"

struct dataplane;
struct dgram_plane;

/*
 * How the daemon tells that a redirect's kernel backlog is empty. Both exact signals read the
 * target's psock queues: the probe one socket at a time (a cgroup/getsockopt program), the
 * iterator the whole egress sockhash per pass.
 */
enum drain_mode {
	DRAIN_AUTO,	/* the probe, else the iterator, else timed: the best the kernel allows */
	DRAIN_PROBE,	/* require the probe */
	DRAIN_ITERATOR, /* require the iterator */
	DRAIN_TIMED,	/* neither: wait for the counters to settle */
};

/*
 * The timed drain: how long the counter must stand still, the target writable throughout.
 * The psock worker sends at once when it runs, so this is how long it may wait for a CPU:
 * 200 ms lost the end of an upload once in 30 host soaks with a test VM and a soak on two
 * cores (docs/kernel-notes.md).
 */
#define TIMED_DRAIN_QUIET_USEC (1000 * 1000)

struct dataplane_features {
	enum drain_mode drain; /* the signal in use: DRAIN_PROBE, DRAIN_ITERATOR or DRAIN_TIMED */
	int probe_error;       /* -errno: why the probe is not in use (-ECANCELED: not asked for) */
	int iterator_error;    /* -errno: why the iterator is not in use */
	bool permanent;	       /* fastpath=permanent: uncounted sk_skb verdict, sk_msg per 4 GiB */
	/* The kernel passes what a unix socket queued before its insert to the verdict. */
	bool insert_takes_queued;
	/*
	 * A unix server's shutdown() takes its peer, our target, out of the sockhash and frees
	 * what the kernel still held for it (unhash_probe.c).
	 */
	bool shutdown_unhashes_peer;
	/*
	 * A redirect target that has room again wakes its psock's backlog at once (kernel/
	 * patch 1, psock_wake.c); without it the worker waits out a one-jiffy retry.
	 */
	bool backlog_wakes;
	int backlog_wake_error; /* -errno: the kernel's BTF could not be read; assumed not */
};

/* An exact drain signal is in use (the probe or the iterator). */
static inline bool dataplane_exact_drain(const struct dataplane_features *f)
{
	return f->drain == DRAIN_PROBE || f->drain == DRAIN_ITERATOR;
}

/* Where a previous instance's maps are: fd() gives map NAME's (the caller's copy), or -ENOENT. */
struct dataplane_stored_maps {
	int (*fd)(void *ctx, const char *name);
	void *ctx;
};

/*
 * stored: NULL, or where to look for a previous instance's maps to load on top of.
 * permanent: fastpath=permanent, if an exact drain signal loads (the drain needs one when
 * nothing is counted); dataplane_features() says what is in force.
 */
int dataplane_open(struct dataplane **out, enum drain_mode mode, bool permanent,
		   const struct dataplane_stored_maps *stored);
/* Loaded on top of every map a previous instance stored: its redirects can go on. */
bool dataplane_maps_reused(const struct dataplane *dp);
/* Calls fn for each map of the object (not its internal .bss), with the daemon's fd. */
int dataplane_for_each_map(struct dataplane *dp,
			   int (*fn)(void *ctx, const char *name, int fd), void *ctx);
void dataplane_close(struct dataplane *dp);
const struct dataplane_features *dataplane_features(const struct dataplane *dp);
/* Why a drain signal is not in use, from its -errno in the features (text, never NULL). */
const char *dataplane_signal_why(int err);

/*
 * Slots in use at most (max-redirects=); 0 or VSOCKMAP_MAX_REDIRECTS: as many as the maps
 * hold. Slots already taken stay.
 */
void dataplane_set_slot_limit(struct dataplane *dp, uint32_t limit);
/* No slot left: a new connection would be refused. */
bool dataplane_slots_full(const struct dataplane *dp);
/* A free slot, or -ENOSPC at the limit: the sockhashes are sized so that they never fill. */
int dataplane_slot_alloc(struct dataplane *dp, uint32_t *slot);
void dataplane_slot_free(struct dataplane *dp, uint32_t slot);
/* Take slot out of the free ones: a redirect taken back from a previous instance uses it. */
int dataplane_slot_reserve(struct dataplane *dp, uint32_t slot);
/* The same, for a callback with a void * context (the dataplane). */
int dataplane_slot_reserve_cb(void *dp, uint32_t slot);

/* Link a source socket to its destination (direction dir of slot). */
int dataplane_link(struct dataplane *dp, uint64_t cookie, uint64_t partner, uint32_t slot,
		   uint32_t dir);
/*
 * Direction dir of slot counts its bytes and skbs: false when its source entered the sockhash
 * under the uncounted verdict, in this instance or the one that handed it over.
 */
bool dataplane_counted(struct dataplane *dp, uint32_t slot, uint32_t dir);
/* How often this instance's sk_msg verdict has run. */
uint64_t dataplane_msg_runs(const struct dataplane *dp);
/* A socket whose incoming data the verdict redirects. Link it first. */
int dataplane_add_source(struct dataplane *dp, uint64_t cookie, int fd);
/* A socket that redirected data is sent out of; its own incoming data is left alone. */
int dataplane_add_destination(struct dataplane *dp, uint64_t cookie, int fd);
/* Take a source out of the verdict's sockhash again; its link stays. */
void dataplane_remove_source(struct dataplane *dp, uint64_t cookie);
/* The source socket cookie is in the map: true, or false once the kernel took it out. */
bool dataplane_source_mapped(struct dataplane *dp, uint64_t cookie);
/* Take a destination out of egress. */
void dataplane_remove_destination(struct dataplane *dp, uint64_t cookie);
/* Drop the link of a source. */
void dataplane_unlink(struct dataplane *dp, uint64_t cookie);
/* Remove from both sockhashes and drop the link; missing entries are not an error. */
void dataplane_remove(struct dataplane *dp, uint64_t cookie);

struct vsockmap_gate *dataplane_gate(struct dataplane *dp, uint32_t slot, uint32_t dir);
int dataplane_counters(struct dataplane *dp, uint32_t slot, uint32_t dir,
		       struct vsockmap_counters *sum);
/*
 * Read every slot's counters in one batch (a status tick over thousands of redirects made
 * a system call for each). Until dataplane_counters_snapshot_drop(), dataplane_slot_counters()
 * answers from it. 0 (also when the kernel allows no batch: then nothing changes) or -errno.
 */
int dataplane_counters_snapshot(struct dataplane *dp);
void dataplane_counters_snapshot_drop(struct dataplane *dp);
/* Both directions of a slot, in one map read where the kernel allows. */
int dataplane_slot_counters(struct dataplane *dp, uint32_t slot,
			    struct vsockmap_counters sum[VSOCKMAP_NR_DIRS]);

/*
 * Queue lengths of one destination (fd, whose cookie is cookie). The probe asks the kernel
 * now, for this socket alone. Iterator passes are numbered; epoch is the number of the last
 * pass that may be too old for the caller: dataplane_queue_epoch() taken when a drain began,
 * since a pass from earlier in the same event-loop tick can predate the skbs the last
 * verdicts redirected. A newer pass less than 1 ms old (tick_usec is the current tick) is
 * reused, otherwise a new one is made. 0 accepts any recent pass. -EOPNOTSUPP without an
 * exact signal, -ENOENT if the socket is in no sockmap.
 */
uint64_t dataplane_queue_epoch(const struct dataplane *dp);
/*
 * The queue probe's cgroup link, or -ENOENT: the probe answers for sockets made in this
 * instance's cgroup only, so a restart hands the link over with the sockets (handover.c).
 */
int dataplane_probe_link_fd(const struct dataplane *dp);
/* dataplane_queue_info() would answer without walking the map: the probe, or a fresh pass. */
bool dataplane_queue_fresh(const struct dataplane *dp, uint64_t epoch, uint64_t tick_usec);
int dataplane_queue_info(struct dataplane *dp, int fd, uint64_t cookie, uint64_t epoch,
			 uint64_t tick_usec, struct vsockmap_queue_info *out);

/*
 * A UNIX-RECV listener: its own small sockhash and verdict program, sharing the counters,
 * with a slot of its own. take() hands out a spare plane, or loads one (-EPERM once sealed:
 * CAP_BPF is about to go, dgram_plane.c); give_back() keeps it as a spare for the next
 * listener.
 */
#define DGRAM_SPARES 4
int dgram_plane_take(struct dataplane *dp, struct dgram_plane **out);
void dgram_plane_give_back(struct dataplane *dp, struct dgram_plane *gp);
void dgram_plane_close(struct dataplane *dp, struct dgram_plane *gp);
uint32_t dgram_plane_slot(const struct dgram_plane *gp);
/*
 * Load spares up to DGRAM_SPARES + extra (the UNIX-RECV sections about to take theirs), at
 * start; after dataplane_dgram_seal() (the capabilities are about to go) take() loads none
 * but returns -EPERM.
 */
int dataplane_dgram_spares_fill(struct dataplane *dp, unsigned int extra);
void dataplane_dgram_seal(struct dataplane *dp);
/* Close the spares, before dataplane_close(). */
void dataplane_dgram_spares_close(struct dataplane *dp);
/* Hand the bound dgram socket to the verdict; fd < 0 takes it back. */
int dgram_plane_set_socket(struct dgram_plane *gp, int fd);
/* Where datagrams go: a destination added with dataplane_add_destination(); 0 for none. */
int dgram_plane_set_target(struct dgram_plane *gp, uint64_t cookie);
/*
 * The target keeps record bounds (seqpacket): a datagram the verdict cannot record the
 * length of is dropped whole, and counted in dropped_packets, instead of held merged.
 */
void dgram_plane_set_keep_bounds(struct dgram_plane *gp, bool keep);
/* How many held datagrams the kernel records the length of (the queue's size). */
uint64_t dgram_plane_held_max(const struct dgram_plane *gp);
/*
 * Length of the oldest datagram the verdict held for the daemon, -ENOENT if none is recorded:
 * peek it before reading the datagram, pop it once read.
 */
int dgram_plane_peek_len(struct dgram_plane *gp, uint32_t *len);
int dgram_plane_pop_len(struct dgram_plane *gp);

#endif
