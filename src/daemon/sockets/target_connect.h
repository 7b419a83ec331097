/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Connecting to a target without blocking the loop, within its connect-timeout=: the stream
 * redirects and the datagram forwarders dial the same way.
 */
#ifndef VSOCKMAP_TARGET_CONNECT_H
#define VSOCKMAP_TARGET_CONNECT_H

#include <stdint.h>

#include "address.h"

/* Start a non-blocking connect to a target. Returns the fd (connected or in progress). */
int target_connect_start(const struct address *addr, int *in_progress);

struct timed_connect {
	uint64_t deadline_usec;
};

/*
 * target_connect_start(), with a deadline: the address's connect-timeout=, or default_ms,
 * from now. The fd or -errno; *in_progress as there.
 */
int timed_connect_start(struct timed_connect *tc, const struct address *addr,
			unsigned int default_ms, uint64_t now, int *in_progress);

/*
 * A connect in progress on fd, at now: 1 once it has finished, 0 while it may still, or
 * -errno: the connect's own error (SO_ERROR), or -ETIMEDOUT past the deadline.
 */
int timed_connect_check(const struct timed_connect *tc, int fd, uint64_t now);

#endif
