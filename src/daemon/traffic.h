/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What moved, per direction (VSOCKMAP_DIR_*): one redirect's counters, a listener's closed
 * redirects, or the daemon's totals since it started (traffic_total.c, the one place they
 * are summed).
 */
#ifndef VSOCKMAP_TRAFFIC_H
#define VSOCKMAP_TRAFFIC_H

#include <stdbool.h>
#include <stdint.h>

#include "vsockmap.h"

struct traffic {
	uint64_t bytes[VSOCKMAP_NR_DIRS];
	uint64_t packets[VSOCKMAP_NR_DIRS];
	/* The kernel carried bytes this way under the verdict that counts nothing
	 * (fastpath=permanent): bytes and packets only say what the daemon carried. */
	bool uncounted[VSOCKMAP_NR_DIRS];
};

static inline void traffic_add(struct traffic *sum, const struct traffic *t)
{
	int dir;

	for (dir = 0; dir < VSOCKMAP_NR_DIRS; dir++) {
		sum->bytes[dir] += t->bytes[dir];
		sum->packets[dir] += t->packets[dir];
		sum->uncounted[dir] |= t->uncounted[dir];
	}
}

#endif
