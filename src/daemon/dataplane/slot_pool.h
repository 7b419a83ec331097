/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The redirect slots: indexes into the BPF maps' per-redirect arrays (gates, counters), one
 * per live redirect or datagram forwarder. Pure bookkeeping, no kernel: bpf_dataplane.c maps
 * a slot's gates before it hands it out.
 */
#ifndef VSOCKMAP_SLOT_POOL_H
#define VSOCKMAP_SLOT_POOL_H

#include <stdbool.h>
#include <stdint.h>

#define SLOT_TAKEN UINT32_MAX

struct slot_pool {
	uint32_t *free; /* stack of unused slots; the lowest on top at first */
	uint32_t *where; /* where[slot]: its index in free, or SLOT_TAKEN */
	uint32_t n_free;
	uint32_t size;	/* slots 0 .. size-1 */
	uint32_t limit; /* at most this many taken (max-redirects=); 0: size */
	uint32_t high;	/* every slot ever taken is below this */
};

/* size slots, all free. 0 or -ENOMEM. */
int slot_pool_init(struct slot_pool *p, uint32_t size);
void slot_pool_fini(struct slot_pool *p);

/* max-redirects=: at most limit taken; 0 or limit >= size: no limit but the size. */
void slot_pool_set_limit(struct slot_pool *p, uint32_t limit);
bool slot_pool_full(const struct slot_pool *p);

/* Take a free slot (the lowest, until slots come back out of order): 0, or -ENOSPC when full. */
int slot_pool_take(struct slot_pool *p, uint32_t *slot);
/* Give back a slot taken (it is the next one taken). */
void slot_pool_put(struct slot_pool *p, uint32_t slot);
/*
 * Take this very slot (one a previous instance handed over): 0, -EBUSY if it is taken,
 * -ERANGE past the size. The limit does not apply: the redirect exists already. Constant
 * time, so that a restart takes back tens of thousands in one pass.
 */
int slot_pool_take_this(struct slot_pool *p, uint32_t slot);

#endif
