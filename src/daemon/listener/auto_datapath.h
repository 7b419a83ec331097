/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * datapath=auto: which sections the daemon carries in user space instead of the kernel, and
 * why. One rule per hazard of the kernel path that docs/ lists (a loss, a reorder, or a
 * measured loss of speed); a section keeps the kernel path only where none applies.
 */
#ifndef VSOCKMAP_AUTO_DATAPATH_H
#define VSOCKMAP_AUTO_DATAPATH_H

#include <stdbool.h>

#include "address.h"

struct dataplane_features;

/* A hazard of the kernel path that applies to one section on the running kernel. */
struct auto_hazard {
	const char *name; /* the rule's short name, for tests and docs */
	const char *why;  /* what goes wrong, for the log and vsockmapctl status */
	bool loses;	  /* loses or reorders bytes (not only slower): datapath=kernel warns */
};

/*
 * Calls fn for each hazard of the kernel path for a section from listen to target on a kernel
 * with features f, in the order auto weighs them. Returns how many applied.
 */
int auto_datapath_hazards(const struct dataplane_features *f, const struct address *listen,
			  const struct address *target,
			  void (*fn)(void *ctx, const struct auto_hazard *h), void *ctx);

/* Why a section from listen to target runs in user space under auto (the first hazard), or
 * NULL: the kernel path. */
const char *auto_datapath_userspace_why(const struct dataplane_features *f,
					const struct address *listen,
					const struct address *target);

#endif
