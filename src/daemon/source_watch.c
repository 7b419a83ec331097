// SPDX-License-Identifier: GPL-2.0-only
#include "daemon_state.h"
#include "log.h"
#include "redirect.h"
#include "source_watch.h"
#include "util.h"

/*
 * Once a second, the next SOURCE_WATCH_CHECKS_PER_TICK of the redirects it watches (kernel
 * path, client->target open): each check is one SIOCINQ, and a map lookup only where bytes
 * wait. So an idle daemon's checks cost the same whatever it holds (10,000 SIOCINQ a second
 * took 0.55% of a CPU on the host, several % under TCG), and a client stuck behind a full
 * send buffer waits at most n / 1,000 + 1 seconds for n such redirects: 1 s below 1,000,
 * 11 s at 10,000. Walking the list without a system call costs microseconds.
 */
#define SOURCE_WATCH_USEC	      USEC_PER_SEC
#define SOURCE_WATCH_CHECKS_PER_TICK 1000

static int on_source_watch(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;
	uint64_t seen = 0, checked = 0;
	struct redirect *r, *next;

	for (r = redirect_table_first(&d->env.redirects); r; r = next) {
		next = redirect_next(r); /* r may be freed below */
		if (!redirect_source_watched(r) || seen++ < d->source_watch_next)
			continue;
		redirect_check_source_mapped(r);
		if (++checked == SOURCE_WATCH_CHECKS_PER_TICK)
			break;
	}
	/* Past the end: from the first again (one missed as others came and went: next round). */
	d->source_watch_next = checked == SOURCE_WATCH_CHECKS_PER_TICK ? seen : 0;
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
