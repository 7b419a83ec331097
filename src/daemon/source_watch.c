// SPDX-License-Identifier: GPL-2.0-only
#include "daemon_state.h"
#include "log.h"
#include "redirect.h"
#include "source_watch.h"
#include "util.h"

/*
 * Once a second: a client stuck behind a full send buffer waits at most that long. Each
 * check is one SIOCINQ per kernel-path redirect, and a map lookup only where bytes wait.
 */
#define SOURCE_WATCH_USEC USEC_PER_SEC

static int on_source_watch(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;
	struct redirect *r, *next;

	for (r = redirect_table_first(&d->env.redirects); r; r = next) {
		next = redirect_next(r); /* r may be freed below */
		redirect_check_source_mapped(r);
	}
	return sd_event_source_set_time(s, usec + SOURCE_WATCH_USEC);
}

int source_watch_start(struct daemon *d)
{
	int r;

	if (!d->env.dp || d->source_watch)
		return 0;
	r = sd_event_add_time_relative(d->env.event, &d->source_watch, CLOCK_MONOTONIC,
				       SOURCE_WATCH_USEC, USEC_PER_MSEC * 100, on_source_watch, d);
	if (r < 0)
		return log_errno(LOG_ERR, r, "starting the source watch");
	r = sd_event_source_set_enabled(d->source_watch, SD_EVENT_ON);
	if (r < 0)
		return log_errno(LOG_ERR, r, "starting the source watch");
	return 0;
}

void source_watch_stop(struct daemon *d)
{
	d->source_watch = sd_event_source_disable_unref(d->source_watch);
}
