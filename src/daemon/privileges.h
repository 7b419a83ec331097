/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Giving up capabilities once the daemon is set up. What it keeps, and why
 * (docs/security.md):
 *   CAP_NET_ADMIN  SO_SNDBUFFORCE on every new connection
 *   CAP_CHOWN      only when the configuration uses user=, group= or control-group=
 * Not CAP_BPF or CAP_PERFMON: every BPF program is loaded before the drop, the datagram
 * verdicts a reload may need included (dgram_plane.c).
 * Without the kernel path (datapath=userspace, or BPF unavailable) it keeps only CAP_CHOWN.
 */
#ifndef VSOCKMAP_PRIVILEGES_H
#define VSOCKMAP_PRIVILEGES_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

/* Bit mask of the capabilities to keep for cfg; bpf: the kernel data path is in use. */
uint64_t privileges_needed(const struct config *cfg, bool bpf);

/*
 * Drop every capability not in keep: from the bounding set (when we may), the ambient and
 * inheritable sets, and the permitted and effective sets. Capabilities in keep that the
 * process does not have stay absent. Returns 0 or -errno; *kept gets the mask now in effect.
 */
int privileges_drop(uint64_t keep, uint64_t *kept);

/* "cap_net_admin cap_bpf" for a mask, into buf. */
void privileges_format(uint64_t mask, char *buf, size_t len);

#endif
