/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The daemon's side of a verdict's gate (struct vsockmap_gate, include/vsockmap.h): the
 * catch-up protocol that both the stream redirects (a client's bytes left with the daemon
 * at the insert) and the datagram forwarders (datagrams held while there was no target)
 * run. While the gate is closed the verdict passes skbs up and counts them in held; the
 * daemon reads and forwards exactly that many bytes, then opens the gate with released ==
 * held. A verdict that read the gate just before that holds one more skb: the daemon keeps
 * reading held bytes for GATE_VERDICT_GRACE_USEC after every change.
 */
#ifndef VSOCKMAP_GATE_H
#define VSOCKMAP_GATE_H

#include <stdbool.h>
#include <stdint.h>

#include "util.h"
#include "vsockmap.h"

/*
 * A verdict that read the gate (or ran for a send queued before our shutdown) has finished
 * this long after. A run takes microseconds; its sender may be preempted in it, for
 * scheduler ticks on a loaded one-vCPU guest. (The datagram side had 50 ms, the stream side
 * 20 ms, for the same race; the longer one is kept.)
 */
#define GATE_VERDICT_GRACE_USEC (50 * USEC_PER_MSEC)

/* Bytes the verdict has passed up so far. */
static inline uint64_t gate_held(const struct vsockmap_gate *g)
{
	return __atomic_load_n(&g->held, __ATOMIC_ACQUIRE);
}

/* From now on the verdict holds what it sees (the grace period starts). */
static inline void gate_close(struct vsockmap_gate *g)
{
	__atomic_store_n(&g->open, 0, __ATOMIC_RELEASE);
}

/*
 * The catch-up's end: the daemon has forwarded taken held bytes, all there were. Opens the
 * gate with released = taken; true if that changed it (the grace period starts), false if
 * it was open with that count already.
 */
static inline bool gate_release(struct vsockmap_gate *g, uint64_t taken)
{
	if (__atomic_load_n(&g->open, __ATOMIC_ACQUIRE) &&
	    __atomic_load_n(&g->released, __ATOMIC_ACQUIRE) == taken)
		return false;
	__atomic_store_n(&g->released, taken, __ATOMIC_RELEASE);
	__atomic_store_n(&g->open, 1, __ATOMIC_RELEASE);
	return true;
}

/* Open, and nothing held beyond the taken bytes: the kernel carries the way alone. */
static inline bool gate_settled(const struct vsockmap_gate *g, uint64_t taken)
{
	return __atomic_load_n(&g->open, __ATOMIC_ACQUIRE) && gate_held(g) == taken &&
	       __atomic_load_n(&g->released, __ATOMIC_ACQUIRE) == taken;
}

#endif
