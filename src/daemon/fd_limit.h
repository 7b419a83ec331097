/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Descriptors for max-redirects: the soft RLIMIT_NOFILE raised, within the hard limit, to
 * what the configuration needs. A service manager's default soft limit (1024) would hold
 * about 500 redirects; the hard limit is the administrator's (LimitNOFILE=, ulimit -Hn).
 */
#ifndef VSOCKMAP_FD_LIMIT_H
#define VSOCKMAP_FD_LIMIT_H

#include <stdint.h>

struct config;

/*
 * Descriptors one stream redirect can hold at once: its client and target sockets; the
 * reply direction's splice pipe (redirect_copy.c); and in the client direction one more
 * pair: the splice pipe in user space, or on the kernel path the injector's or the hold
 * socket's socketpair (the injector is closed at the insert, before a hold socket opens).
 * An idle redirect holds 2.
 */
#define FD_LIMIT_PER_REDIRECT 6

/* What cfg needs at most: every redirect max-redirects allows, its sections, the rest. */
uint64_t fd_limit_need(const struct config *cfg);

/*
 * Raise the soft limit to fd_limit_need(cfg), or to the hard limit if that is lower; never
 * lower it. Logs what it did. 0; -ERANGE when the hard limit is below the need (a warning
 * names the figures); -errno when the raise is refused.
 */
int fd_limit_fit(const struct config *cfg);

#endif
