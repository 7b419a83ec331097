/* SPDX-License-Identifier: GPL-2.0-only */
/* Small helpers shared by the daemon and the CLI. */
#ifndef VSOCKMAP_UTIL_H
#define VSOCKMAP_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define USEC_PER_MSEC ((uint64_t)1000)
#define USEC_PER_SEC  ((uint64_t)1000000)
/*
 * The accuracy the daemon's short timers ask of sd-event. Given 0, sd-event takes 250 ms
 * and fires anywhere in that window: a 1 ms poll for held bytes then ran four times a
 * second, and a catch-up moved one hold socket's worth per 250 ms.
 */
#define TIMER_ACCURACY_USEC ((uint64_t)100)

/* CLOCK_MONOTONIC in microseconds. */
uint64_t now_usec(void);

/* close() that keeps errno and accepts -1; returns -1 for "fd = safe_close(fd)". */
int safe_close(int fd);

/*
 * Replace control characters (newline, escape, ...) with '?' in place, so that text quoted
 * from input cannot break a message into lines or drive a terminal.
 */
void make_printable(char *s);

/*
 * An input error: its text, made printable, into err (if any), for the caller to show.
 * Returns -EINVAL, so that parsers read "return invalid_input(err, errlen, ...)".
 */
int invalid_input(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * A value that must stand still, with a condition holding, for a while: the timed drain's
 * signal. settle_clock_check() restarts the clock whenever value moved or ok is false, and
 * returns true once both held for quiet_usec.
 */
struct settle_clock {
	uint64_t value;
	uint64_t since_usec; /* 0: not started */
};

static inline bool settle_clock_check(struct settle_clock *c, uint64_t value, bool ok,
				      uint64_t now, uint64_t quiet_usec)
{
	if (!ok || value != c->value || !c->since_usec) {
		c->value = value;
		c->since_usec = now;
		return false;
	}
	return now - c->since_usec >= quiet_usec;
}

#endif
