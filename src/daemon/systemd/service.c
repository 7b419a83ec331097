// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "daemon_state.h"
#include "log.h"
#include "service.h"
#include "traffic_total.h"
#include "util.h"


/* ---- status ---------------------------------------------------------------------------- */

static void format_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
	double v = (double)bytes;
	size_t u = 0;

	if (bytes < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", bytes);
		return;
	}
	v /= 1024;
	while (v >= 1024 && u + 1 < ARRAY_SIZE(units)) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, units[u]);
}

void service_status_text(struct daemon *d, char *buf, size_t len)
{
	struct traffic all = {};
	char moved[32];

	traffic_since_start(d, NULL, &all); /* without memory: 0 B, for this once */
	format_bytes(all.bytes[0] + all.bytes[1], moved, sizeof(moved));
	snprintf(buf, len, "%zu listener%s, %zu live redirect%s, %s moved%s", d->n_listeners,
		 d->n_listeners == 1 ? "" : "s", d->env.redirects.n,
		 d->env.redirects.n == 1 ? "" : "s", moved,
		 all.uncounted[0] || all.uncounted[1] ? " (+ the uncounted fast path)" : "");
}

static void send_status(struct daemon *d, const char *extra)
{
	char text[sizeof(d->service.last_status)];

	service_status_text(d, text, sizeof(text));
	if (!extra && !strcmp(text, d->service.last_status))
		return;
	snprintf(d->service.last_status, sizeof(d->service.last_status), "%s", text);
	sd_notifyf(0, "%sSTATUS=%s", extra ? extra : "", text);
}

static int on_status_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;

	log_flush_suppressed();
	if (getenv("NOTIFY_SOCKET"))
		send_status(d, NULL);
	sd_event_source_set_time(s, usec + SERVICE_STATUS_INTERVAL_SEC * USEC_PER_SEC);
	return 0;
}

int service_start(struct daemon *d)
{
	uint64_t watchdog_usec = 0;
	int err;

	/* WATCHDOG=1 at a quarter of WatchdogSec=, whenever the loop runs (a no-op without it). */
	err = sd_event_set_watchdog(d->env.event, true);
	if (err < 0)
		return log_errno(LOG_ERR, err, "enabling the systemd watchdog");
	if (err > 0 && sd_event_get_watchdog(d->env.event) > 0 &&
	    sd_watchdog_enabled(0, &watchdog_usec) > 0)
		log_info("systemd watchdog: keep-alive from the event loop, timeout %" PRIu64 " ms",
			 watchdog_usec / USEC_PER_MSEC);
	err = sd_event_add_time_relative(d->env.event, &d->service.status_timer, CLOCK_MONOTONIC,
					 SERVICE_STATUS_INTERVAL_SEC * USEC_PER_SEC,
					 USEC_PER_SEC / 2, on_status_timer, d);
	if (err < 0)
		return log_errno(LOG_ERR, err, "adding the status timer");
	sd_event_source_set_enabled(d->service.status_timer, SD_EVENT_ON);
	return 0;
}

void service_notify_ready(struct daemon *d)
{
	d->service.last_status[0] = '\0';
	send_status(d, "READY=1\n");
}

void service_notify_reloading(struct daemon *d)
{
	/* MONOTONIC_USEC: systemd 253 matches it to its reload job (Type=notify-reload). */
	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64 "\nSTATUS=reloading %s", now_usec(),
		   d->cfg.path);
}

void service_stop(struct daemon *d)
{
	if (!d->env.handing_over)
		sd_notify(0, "STOPPING=1\nSTATUS=stopping: closing redirects and listeners");
	d->service.status_timer = sd_event_source_disable_unref(d->service.status_timer);
	log_flush_suppressed();
}
