/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * UNIX-RECV: the datagrams of one bound unix dgram socket go to one target connection
 * (a vsock stream, or a vsock seqpacket that keeps message boundaries). The target is
 * redialled with back-off when it goes away; meanwhile datagrams wait in the socket's own
 * receive queue, so senders block instead of losing data.
 */
#ifndef VSOCKMAP_DGRAM_FORWARDER_H
#define VSOCKMAP_DGRAM_FORWARDER_H

#include <stdbool.h>
#include <stdint.h>

#include "redirect.h"

struct dgram_forwarder;

/* Forward the datagrams of the owner's socket fd (activated: passed by systemd) to its target;
 * userspace: the daemon reads them itself (no sockhash). */
int dgram_forwarder_start(struct redirect_env *env, const struct redirect_owner *owner, int fd,
			  bool activated, bool userspace, struct dgram_forwarder **out);
void dgram_forwarder_stop(struct dgram_forwarder *f);
void dgram_forwarder_get_info(struct dgram_forwarder *f, struct redirect_info *info);
/*
 * Every datagram already sent to the socket has reached the target: none waits in the
 * socket, in the daemon or in the target's psock backlog (asked of an iterator pass newer
 * than epoch, dataplane_queue_epoch()). Also true while the target is away: nothing can be
 * delivered then.
 */
bool dgram_forwarder_settled(struct dgram_forwarder *f, uint64_t epoch);
/* As redirect_progress_mark(): the daemon's bytes written less the target's send queue. */
/* Forwarding in user space: asked for, or no datagram verdict was left (kernel_start()). */
bool dgram_forwarder_userspace(const struct dgram_forwarder *f);
uint64_t dgram_forwarder_progress_mark(const struct dgram_forwarder *f);

#endif
