/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Restart without loss: the sockets and BPF maps go to systemd's fd store on "systemctl
 * restart", and the next instance takes them back.
 */
#ifndef VSOCKMAP_HANDOVER_H
#define VSOCKMAP_HANDOVER_H

#include <stdbool.h>
#include <stdint.h>

struct daemon;
struct redirect_config;

/*
 * What the previous instance stored comes in d->passed (passed_fds.h), named
 * HANDOVER_PREFIX...; these take it from there. Its state is d->handover (struct
 * handover_state, daemon_state.h).
 */

/*
 * The stored fd of the main object's map NAME, if it came from this very object, or -ENOENT.
 * ctx: the struct daemon (a dataplane_stored_map_fn).
 */
int handover_map_fd(void *ctx, const char *name);

/*
 * Right after passed_fds_collect(): the pairs the previous instance sent beside the fd store
 * (fd_carrier.h) join d->passed, named as if stored. 0 or -errno (logged).
 */
int handover_collect(struct daemon *d);

/*
 * IDs of the stored redirects, so that nothing started before they are taken back (a
 * UNIX-RECV listener's forwarder) gets one of them: daemon_next_id() goes on from the highest.
 */
void handover_reserve_ids(struct daemon *d);

/* Slots of the stored redirects, so that nothing else takes them: calls reserve() for each. */
int handover_reserve_slots(struct daemon *d, int (*reserve)(void *ctx, uint32_t slot), void *ctx);


/*
 * Take back the stored redirects (after the listeners are open), then tell systemd to drop
 * every stored fd: from now on the daemon holds them. Returns how many were adopted; a pair
 * that cannot be is closed, and logged.
 */
int handover_adopt(struct daemon *d);

/* Close what nobody claimed (a stored listener's socket file goes with it). */
void handover_release(struct daemon *d);

/* Close the inherited probe links (the daemon is done with every redirect). */
void handover_close_probe_links(struct daemon *d);

/*
 * SIGTERM under systemd: ask systemd whether it is restarting the unit, without waiting;
 * redirects go on moving meanwhile. Returns 0 once the question is on its way: on a restart
 * the daemon stops accepting, lets redirects settle, stores everything and leaves the event
 * loop; on anything else (another job, an error, no answer in SYSTEMD_JOB_TIMEOUT_USEC)
 * stop(d) runs. -ENOTCONN: not started by systemd; another -errno (logged): not asked.
 * Either way the caller stops at once.
 */
int handover_ask(struct daemon *d, void (*stop)(struct daemon *d));

/* A question asked above has no answer yet. */
bool handover_asking(const struct daemon *d);

/* Drop the question: its answer will not come (a second signal, or the daemon's end). */
void handover_forget_question(struct daemon *d);

#endif
