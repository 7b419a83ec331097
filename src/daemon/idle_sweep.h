/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The idle timeout (idle-timeout=, socat's -T): a timer that closes redirects which have
 * moved no byte either way for that long. The kernel moves the bytes, so the timer reads
 * each redirect's counters rather than watching its sockets.
 */
#ifndef VSOCKMAP_IDLE_SWEEP_H
#define VSOCKMAP_IDLE_SWEEP_H

struct daemon;

/* Start, change or stop the timer for d->cfg.daemon.idle_timeout_ms (0: stop). 0 or -errno. */
int idle_sweep_update(struct daemon *d);

void idle_sweep_stop(struct daemon *d);

#endif
