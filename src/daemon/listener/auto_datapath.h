/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * datapath=auto: which sections the daemon carries in user space instead of the kernel, and
 * why. One rule per measured loss of the kernel path (docs/performance.md, "Which path wins
 * where"); everything else keeps the kernel path.
 */
#ifndef VSOCKMAP_AUTO_DATAPATH_H
#define VSOCKMAP_AUTO_DATAPATH_H

#include "address.h"

struct dataplane_features;

/* Why a section from listen to target runs in user space under auto, or NULL: the kernel. */
const char *auto_datapath_userspace_why(const struct dataplane_features *f,
					enum address_kind listen, enum address_kind target);

/* A unix stream target that its server's shutdown() takes out of the sockhash (unhash_probe.c). */
bool auto_datapath_unix_target_unhashed(const struct dataplane_features *f,
					enum address_kind listen, enum address_kind target);

#endif
