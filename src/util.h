/* SPDX-License-Identifier: GPL-2.0-only */
/* Small helpers shared by the daemon and the CLI. */
#ifndef VSOCKMAP_UTIL_H
#define VSOCKMAP_UTIL_H

#include <stdint.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define USEC_PER_MSEC ((uint64_t)1000)
#define USEC_PER_SEC  ((uint64_t)1000000)

/* CLOCK_MONOTONIC in microseconds. */
uint64_t now_usec(void);

/* close() that keeps errno and accepts -1; returns -1 for "fd = safe_close(fd)". */
int safe_close(int fd);

/*
 * Replace control characters (newline, escape, ...) with '?' in place, so that text quoted
 * from input cannot break a message into lines or drive a terminal.
 */
void make_printable(char *s);

#endif
