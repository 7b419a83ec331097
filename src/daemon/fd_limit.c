// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <inttypes.h>
#include <sys/resource.h>

#include "config.h"
#include "control_server.h"
#include "fd_limit.h"
#include "log.h"

/*
 * A section's own: its listening socket; a UNIX-RECV one also its target and its datagram
 * verdict's BPF object (dgram_plane.c: its maps, the main object's it reuses, its program),
 * 14 in all as measured.
 */
#define FD_LIMIT_PER_SECTION 16
/*
 * Everything else, 24 measured on the kernel path: stdio, the log, the event loop's epoll,
 * signalfd and timers, the redirects' epoll set, the BPF object's maps and programs, the
 * spare (fd_spare.c); then the control socket and its clients.
 */
#define FD_LIMIT_BASE (32 + 1 + CONTROL_CLIENTS_MAX)

uint64_t fd_limit_need(const struct config *cfg)
{
	return FD_LIMIT_BASE + (uint64_t)cfg->n_redirects * FD_LIMIT_PER_SECTION +
	       (uint64_t)cfg->daemon.max_redirects * FD_LIMIT_PER_REDIRECT;
}

/* How many redirects limit descriptors hold, each at its most. */
static uint64_t redirects_within(const struct config *cfg, uint64_t limit)
{
	uint64_t fixed = fd_limit_need(cfg) -
			 (uint64_t)cfg->daemon.max_redirects * FD_LIMIT_PER_REDIRECT;

	return limit > fixed ? (limit - fixed) / FD_LIMIT_PER_REDIRECT : 0;
}

int fd_limit_fit(const struct config *cfg)
{
	uint64_t need = fd_limit_need(cfg), want, old;
	unsigned int max = cfg->daemon.max_redirects;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return log_errno(LOG_WARNING, errno, "file descriptors: reading RLIMIT_NOFILE");
	want = rl.rlim_max == RLIM_INFINITY || need < rl.rlim_max ? need : rl.rlim_max;
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
		goto check_hard;
	old = rl.rlim_cur;
	/*
	 * prlimit(), not setrlimit(): the packaged unit's SystemCallFilter=~@resources refuses the
	 * setrlimit system call (EPERM), which an older libc's setrlimit() makes, and allows
	 * prlimit64, which systemd counts in @default.
	 */
	rl.rlim_cur = want;
	if (prlimit(0, RLIMIT_NOFILE, &rl, NULL)) {
		int err = errno;

		if (getrlimit(RLIMIT_NOFILE, &rl))
			rl.rlim_cur = 0;
		return log_errno(LOG_WARNING, err,
				 "file descriptors: max-redirects=%u needs %" PRIu64 ", and the soft "
				 "limit stays %" PRIu64 ": %" PRIu64 " redirects fit at %d each; "
				 "cannot raise it",
				 max, need, (uint64_t)rl.rlim_cur,
				 redirects_within(cfg, rl.rlim_cur), FD_LIMIT_PER_REDIRECT);
	}
	log_info("file descriptors: soft limit %" PRIu64 " raised to %" PRIu64
		 " (max-redirects=%u needs %" PRIu64 ", hard limit %" PRIu64 ")",
		 old, want, max, need, (uint64_t)rl.rlim_max);
check_hard:
	if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need)
		return 0;
	log_warn("file descriptors: max-redirects=%u needs %" PRIu64 " file descriptors, and the "
		 "hard limit (RLIMIT_NOFILE) is %" PRIu64 ": %" PRIu64 " redirects fit at %d each "
		 "(idle ones take 2); raise LimitNOFILE= or ulimit -Hn, or lower max-redirects",
		 max, need, (uint64_t)rl.rlim_max, redirects_within(cfg, rl.rlim_max),
		 FD_LIMIT_PER_REDIRECT);
	return -ERANGE;
}
