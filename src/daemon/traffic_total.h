/* SPDX-License-Identifier: GPL-2.0-only */
/* The daemon's totals since it started: the one sum of what moved (struct traffic). */
#ifndef VSOCKMAP_TRAFFIC_TOTAL_H
#define VSOCKMAP_TRAFFIC_TOTAL_H

#include "traffic.h"

struct daemon;

/*
 * Since the daemon started: per listener (d->listeners' order; NULL for none) and in all,
 * each the redirects that closed plus the live ones and the datagram forwarders. A live
 * redirect of a section a reload removed counts in all only. 0 or -ENOMEM.
 */
int traffic_since_start(struct daemon *d, struct traffic **per_listener, struct traffic *all);

#endif
