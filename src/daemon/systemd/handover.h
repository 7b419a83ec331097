/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Restart without loss: on "systemctl restart" (RestartKillSignal=SIGUSR2) every redirect, the
 * listeners and the BPF maps go to systemd's fd store, and the next instance takes them back;
 * a start that fails gives back what it took.
 */
#ifndef VSOCKMAP_HANDOVER_H
#define VSOCKMAP_HANDOVER_H

#include <stdbool.h>
#include <stdint.h>

struct daemon;

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
 * Right after passed_fds_collect(): read the redirects out of the carriers (and any a version
 * before carriers stored in the fd store itself) into d->handover.pairs. From here on, a start
 * that fails must call handover_give_back(). 0 or -errno (logged).
 */
int handover_collect(struct daemon *d);

/*
 * IDs of the redirects read, so that nothing started before they are taken back (a
 * UNIX-RECV listener's forwarder) gets one of them: daemon_next_id() goes on from the highest.
 */
void handover_reserve_ids(struct daemon *d);

/* How many of the redirects read run on the kernel path (they need the stored maps). */
size_t handover_kernel_pairs(const struct daemon *d);
/* Whether a redirect read runs on the kernel path, or will once it connects. */
bool handover_kernel_path_used(const struct daemon *d);

/* Slots of the redirects read, so that nothing else takes them: calls reserve() for each. */
int handover_reserve_slots(struct daemon *d, int (*reserve)(void *ctx, uint32_t slot), void *ctx);

/*
 * Take back the redirects read (the last step of a start: nothing after it can fail). Returns
 * how many were; one that cannot be is closed, and logged.
 */
int handover_adopt(struct daemon *d);

/*
 * The start succeeded: tell systemd to drop every stored fd (from now on the daemon holds
 * them: systemd's copy would keep a closed redirect's sockets open), and close what nobody
 * claimed (a stored listener of a removed section: its socket file goes with it).
 */
void handover_finish(struct daemon *d);

/*
 * The start failed after handover_collect(): the redirects not taken back go to systemd's fd
 * store again, in a new carrier, as they came; the stored listeners keep their socket files
 * (still in the store). The next start finds everything as this one did.
 */
void handover_give_back(struct daemon *d);

/* Close the inherited probe links (the daemon is done with every redirect). */
void handover_close_probe_links(struct daemon *d);

/*
 * The daemon's exit status once it handed everything over (EX_TEMPFAIL): the unit counts it
 * a success (SuccessExitStatus=) and starts the daemon again whatever else happens
 * (RestartForceExitStatus=), so that a SIGUSR2 that is no restart job (a stray kill, say)
 * restarts the service too, instead of leaving its fd store to be dropped.
 */
#define HANDOVER_EXIT_STATUS 75

/*
 * systemd restarts the unit (its RestartKillSignal=): stop accepting, hand every redirect,
 * the listeners and the maps to the fd store at once, and leave the event loop. Redirects
 * that cannot be handed over (no fd store, a failed send) finish as on a stop: stop(d) runs
 * for them, and for every redirect if the maps cannot be stored.
 */
void handover_start(struct daemon *d, void (*stop)(struct daemon *d));

#endif
