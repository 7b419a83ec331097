/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The data plane's insides, shared by its files and nothing else (these four and psock_wake.c are the
 * daemon's only users of libbpf): bpf_dataplane.c (load, attach, slots, the maps, counters),
 * dataplane_queues.c (queue lengths: the probe and the iterator), dgram_plane.c (a
 * UNIX-RECV listener's own verdict) and insert_probe.c (what an insert does with queued
 * bytes).
 */
#ifndef VSOCKMAP_DATAPLANE_INTERNAL_H
#define VSOCKMAP_DATAPLANE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf_dataplane.h"
#include "slot_pool.h"
#include "vsockmap.h"
#include "vsockmap.skel.h"

#ifndef ENOTSUPP
#define ENOTSUPP 524 /* the kernel's answer for a map without batch operations */
#endif

struct dataplane {
	struct vsockmap_bpf *skel;
	struct dataplane_features features;
	struct vsockmap_gate *gates; /* the gates map, mapped into this range as slots are used */
	size_t gates_len;
	size_t gates_mapped; /* bytes of it mapped so far, from the start */
	int ncpus;
	struct vsockmap_counters *percpu; /* scratch for counter reads, 2 * ncpus entries */
	bool no_batch;			  /* the kernel refused a batch op on counters */
	/* dataplane_counters_snapshot(): every slot's counters below snap_slots, per CPU */
	struct vsockmap_counters *snap;
	uint32_t *snap_keys;
	uint32_t snap_slots, snap_cap;
	struct slot_pool slots;
	struct vsockmap_queue_info *queues; /* the last iterator pass, sorted by cookie */
	size_t n_queues, queues_cap;
	uint64_t queues_usec;	 /* event-loop tick of that pass */
	uint64_t queues_pass;	 /* its number: passes are counted from 1; 0 is none */
	uint64_t passes;	 /* passes begun */
	uint64_t pass_tick_usec;
	struct bpf_link *iter_link;  /* the queue iterator over egress, attached once */
	struct bpf_link *probe_link; /* the queue probe, on the daemon's own cgroup */
	bool maps_reused;	     /* loaded on top of the maps a previous instance stored */
	struct dgram_plane *dgram_spares; /* loaded, unused: dgram_plane_take() hands them out */
	unsigned int n_dgram_spares;
	bool dgram_sealed; /* spares filled, capabilities about to go: no more loads */
};

struct dgram_plane {
	struct vsockmap_bpf *skel;
	uint32_t slot; /* its own, for its life: the verdict is loaded with it */
	struct dgram_plane *next; /* in dp->dgram_spares */
};

/* Zero a slot's gates and counters, for its next user. */
int dataplane_slot_clear(struct dataplane *dp, uint32_t slot);

/*
 * 1 if the kernel passes a unix socket's queued skbs to the verdict when it is added to the
 * sockhash sources_fd (its stream verdict attached), 0 if not (kernel/ patch 7), or -errno.
 */
int insert_probe_run(int sources_fd);

/*
 * 1 if a unix stream socket's shutdown() takes its peer out of the sockhash egress_fd (every
 * stock kernel with unix sockets in sockmap), 0 if not, or -errno.
 */
int unhash_probe_run(int egress_fd);

#endif
