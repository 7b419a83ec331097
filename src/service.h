/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * vsockmapd as a systemd service: sockets passed by socket activation (LISTEN_FDS), and what
 * the daemon tells the service manager with sd_notify (READY=1, STATUS=, STOPPING=1, and
 * WATCHDOG=1 from the event loop). Outside systemd every call here is a no-op.
 */
#ifndef VSOCKMAP_SERVICE_H
#define VSOCKMAP_SERVICE_H

#include "config.h"

struct daemon;
struct redirect_config;

/* How often STATUS= is refreshed (and suppressed log messages are reported). */
#define SERVICE_STATUS_INTERVAL_SEC 5

/*
 * Take the sockets systemd passed (sd_listen_fds_with_names) and check their names against
 * the configuration: each must be the name of a redirect section, once. Returns 0 (also when
 * nothing was passed) or -EINVAL after logging which socket is wrong.
 */
int service_fds_collect(const struct config *cfg);

/*
 * The socket passed for section rc, checked against its listen address: family, type
 * (stream for UNIX-LISTEN, datagram for UNIX-RECV), listening, and bound to the configured
 * path. Returns the fd (now non-blocking and owned by the caller), -ENOENT when none was
 * passed for it, or -EINVAL after logging what does not match.
 */
int service_fd_claim(const struct redirect_config *rc);

/* Close the passed sockets nobody claimed. */
void service_fds_release(void);

/* Watchdog keep-alives from the event loop, and the periodic STATUS= refresh. */
int service_start(struct daemon *d);
/* READY=1 with the first STATUS=. */
void service_notify_ready(struct daemon *d);
/* STOPPING=1; stops the timer. */
/* RELOADING=1 before a reload; service_notify_ready() after it. */
void service_notify_reloading(struct daemon *d);

void service_stop(struct daemon *d);

/* "2 listeners, 5 live redirects, 4.0 GiB moved" */
void service_status_text(struct daemon *d, char *buf, size_t len);

#endif
