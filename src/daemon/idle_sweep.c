// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <time.h>

#include "bpf_dataplane.h"
#include "daemon_state.h"
#include "idle_sweep.h"
#include "log.h"
#include "redirect.h"
#include "util.h"

/* Checks per timeout: a redirect closes between 1 and 1.25 timeouts after its last byte. */
#define CHECKS_PER_TIMEOUT 4
#define CHECK_MIN_USEC	   (50 * USEC_PER_MSEC)
#define CHECK_MAX_USEC	   (1000 * USEC_PER_MSEC)

static uint64_t check_interval(const struct daemon *d)
{
	uint64_t usec =
	    (uint64_t)d->cfg.daemon.idle_timeout_ms * USEC_PER_MSEC / CHECKS_PER_TIMEOUT;

	return usec < CHECK_MIN_USEC   ? CHECK_MIN_USEC
	       : usec > CHECK_MAX_USEC ? CHECK_MAX_USEC
				       : usec;
}

static int on_idle_check(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;
	uint64_t timeout = (uint64_t)d->cfg.daemon.idle_timeout_ms * USEC_PER_MSEC;
	uint64_t now = now_usec();
	struct redirect *r, *next;

	/* One read of the kernel's counters for all (a failed one: slot by slot). */
	if (d->env.dp)
		dataplane_counters_snapshot(d->env.dp);
	for (r = redirect_table_first(&d->env.redirects); r; r = next) {
		next = redirect_next(r); /* r may be freed below */
		redirect_idle_check(r, now, timeout);
	}
	if (d->env.dp)
		dataplane_counters_snapshot_drop(d->env.dp);
	return sd_event_source_set_time(s, usec + check_interval(d));
}

int idle_sweep_update(struct daemon *d)
{
	int r;

	if (!d->cfg.daemon.idle_timeout_ms) {
		idle_sweep_stop(d);
		return 0;
	}
	if (d->idle_timer)
		return 0; /* the next check uses the new timeout and interval */
	r = sd_event_add_time_relative(d->env.event, &d->idle_timer, CLOCK_MONOTONIC,
				       check_interval(d), 0, on_idle_check, d);
	if (r < 0)
		return log_errno(LOG_ERR, r, "starting the idle timeout");
	r = sd_event_source_set_enabled(d->idle_timer, SD_EVENT_ON);
	if (r < 0)
		return log_errno(LOG_ERR, r, "starting the idle timeout");
	return 0;
}

void idle_sweep_stop(struct daemon *d)
{
	d->idle_timer = sd_event_source_disable_unref(d->idle_timer);
}
