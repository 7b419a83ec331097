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

/* Every stored name starts with this; other passed fds are socket activation's. */
#define HANDOVER_PREFIX "vsm-"

/* Keep a passed fd whose name starts with HANDOVER_PREFIX. Takes fd and name. */
void handover_collect(int fd, char *name);

/* The stored fd of the main object's map NAME, if it came from this very object, or -ENOENT. */
int handover_map_fd(const char *name);

/* Slots of the stored redirects, so that nothing else takes them: calls reserve() for each. */
int handover_reserve_slots(int (*reserve)(void *ctx, uint32_t slot), void *ctx);

/* The stored listening socket of a section, or -ENOENT. */
int handover_claim_listener(const struct redirect_config *rc);

/*
 * Take back the stored redirects (after the listeners are open), then tell systemd to drop
 * every stored fd: from now on the daemon holds them. Returns how many were adopted.
 */
int handover_adopt(struct daemon *d);

/* Close what nobody claimed. */
void handover_release(void);

/*
 * SIGTERM: if systemd is restarting the unit, stop accepting, let redirects settle, store
 * everything and leave the event loop; returns true. Otherwise false: a normal stop.
 */
bool handover_start(struct daemon *d);

#endif
