/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the daemon tells the service manager with sd_notify (READY=1, STATUS=, RELOADING=1,
 * STOPPING=1, and WATCHDOG=1 from the event loop). Outside systemd every call is a no-op.
 * (The sockets systemd passes: passed_fds.c, socket_activation.c, handover.c.)
 */
#ifndef VSOCKMAP_SERVICE_H
#define VSOCKMAP_SERVICE_H

#include <stddef.h>

struct daemon;

/* How often STATUS= is refreshed (and suppressed log messages are reported). */
#define SERVICE_STATUS_INTERVAL_SEC 5

/* Watchdog keep-alives from the event loop, and the periodic STATUS= refresh. */
int service_start(struct daemon *d);
/* READY=1 with the first STATUS=. */
void service_notify_ready(struct daemon *d);
/* RELOADING=1 before a reload; service_notify_ready() after it. */
void service_notify_reloading(struct daemon *d);

/* STOPPING=1 (unless handing over); stops the timer. */
void service_stop(struct daemon *d);

/* "2 listeners, 5 live redirects, 4.0 GiB moved" */
void service_status_text(struct daemon *d, char *buf, size_t len);

#endif
