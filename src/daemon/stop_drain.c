// SPDX-License-Identifier: GPL-2.0-only
#include <inttypes.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "bpf_dataplane.h"
#include "daemon_state.h"
#include "dgram_forwarder.h"
#include "listener.h"
#include "log.h"
#include "redirect.h"
#include "stop_drain.h"
#include "util.h"

/* How often to look whether every redirect has finished. */
#define STOP_POLL_USEC (20 * USEC_PER_MSEC)
/* Beyond drain-timeout: a redirect's last flush and close after its drain gave up. */
#define STOP_GRACE_USEC (1000 * USEC_PER_MSEC)

/* How often to look whether the bytes still owed have moved. */
#define STOP_PROGRESS_USEC (250 * USEC_PER_MSEC)

/*
 * The stop gives up drain-timeout and STOP_GRACE_USEC after bytes last moved toward a
 * reader (or after it began). Each drain waits for the kernel's backlog at most
 * drain-timeout itself; what the daemon holds (a late insert's held bytes, the user-space
 * path's buffers) is finite once every source is shut down for reading, and is written out
 * as long as the readers take it. A fixed deadline cut it off on a loaded machine: with
 * --drain=timed the backlog wait alone takes drain-timeout, and 16 MiB held at 5 MB/s need
 * seconds more. A reader is seen to take bytes by the daemon's writes, or by the send
 * queues shrinking while a unix socket is not yet writable again (it is once a quarter of
 * its send buffer is left). systemd's TimeoutStopSec= bounds the whole stop.
 */
static uint64_t stop_patience_usec(const struct daemon *d)
{
	return (uint64_t)d->cfg.daemon.drain_timeout_ms * USEC_PER_MSEC + STOP_GRACE_USEC;
}

/* Changes whenever a live redirect's or datagram listener's bytes move toward a reader. */
static uint64_t stop_progress_mark(struct daemon *d)
{
	struct redirect *r;
	uint64_t mark = 0;
	size_t i;

	for (r = redirect_table_first(&d->env.redirects); r; r = redirect_next(r))
		mark += redirect_progress_mark(r);
	for (i = 0; i < d->n_listeners; i++)
		if (d->listeners[i]->dgram)
			mark += dgram_forwarder_progress_mark(d->listeners[i]->dgram);
	return mark;
}

/* Move the deadline on if anything moved since the last look. */
static void stop_look_for_progress(struct daemon *d, uint64_t usec)
{
	uint64_t mark;

	if (usec < d->stop.next_look)
		return;
	d->stop.next_look = usec + STOP_PROGRESS_USEC;
	/* A redirect that finished takes its part along: that, too, is a change. */
	mark = stop_progress_mark(d);
	if (mark != d->stop.mark) {
		d->stop.mark = mark;
		d->stop.deadline = usec + stop_patience_usec(d);
	}
}

/* Datagram listeners whose datagrams have not all reached their target. */
static size_t dgram_unsettled(struct daemon *d)
{
	size_t i, n = 0;

	for (i = 0; i < d->n_listeners; i++)
		if (d->listeners[i]->dgram &&
		    !dgram_forwarder_settled(d->listeners[i]->dgram, d->stop.epoch))
			n++;
	return n;
}

static int on_stop_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;
	size_t dgram = dgram_unsettled(d), lost_dgram;
	bool exact;

	stop_look_for_progress(d, usec);
	if ((d->env.redirects.n || dgram) && usec < d->stop.deadline) {
		/* A one-shot source is off once dispatched: arm it again. */
		sd_event_source_set_time(s, usec + STOP_POLL_USEC);
		sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
		return 0;
	}
	exact = !d->env.dp || dataplane_exact_drain(dataplane_features(d->env.dp));
	lost_dgram = exact ? dgram : 0;
	/*
	 * A redirect still open here had bytes left to deliver (held by the daemon, or in the
	 * kernel's backlog), whatever the drain signal. A datagram listener without an exact
	 * signal cannot tell: it waited drain-timeout for what the kernel may hold.
	 */
	if (d->env.redirects.n || lost_dgram)
		log_warn("stopping: %zu redirect%s and %zu datagram listener%s still had bytes to "
			 "deliver and none moved on for drain-timeout; closing now, they are lost",
			 d->env.redirects.n, d->env.redirects.n == 1 ? "" : "s", lost_dgram,
			 lost_dgram == 1 ? "" : "s");
	if (!exact && dgram)
		log_notice("stopping: no exact drain signal on this kernel: waited drain-timeout for "
			   "what it may still hold for %zu datagram listener%s; closing now",
			   dgram, dgram == 1 ? "" : "s");
	return sd_event_exit(d->env.event, 0);
}

bool stop_drain_start(struct daemon *d)
{
	struct redirect *r, *next;
	size_t i, dgram;
	uint64_t now;
	int err;

	if (d->env.stopping)
		return false;
	d->stop.epoch = d->env.dp ? dataplane_queue_epoch(d->env.dp) : 0;
	dgram = dgram_unsettled(d);
	if (!d->env.redirects.n && !dgram)
		return false;
	d->env.stopping = true;
	for (i = 0; i < d->n_listeners; i++)
		listener_pause(d->listeners[i]);
	now = now_usec();
	d->stop.deadline = now + stop_patience_usec(d);
	d->stop.next_look = now + STOP_PROGRESS_USEC;
	d->stop.mark = stop_progress_mark(d);
	err = sd_event_add_time_relative(d->env.event, NULL, CLOCK_MONOTONIC, STOP_POLL_USEC,
					 TIMER_ACCURACY_USEC, on_stop_timer, d);
	if (err < 0) {
		log_errno(LOG_ERR, err, "stopping: closing the redirects at once");
		return false;
	}
	sd_notifyf(0, "STOPPING=1\nSTATUS=stopping: finishing %zu live redirect%s",
		   d->env.redirects.n, d->env.redirects.n == 1 ? "" : "s");
	log_info("stopping: finishing %zu live redirect%s and %zu datagram listener%s "
		 "(everything already sent is delivered; at most drain-timeout)",
		 d->env.redirects.n, d->env.redirects.n == 1 ? "" : "s", dgram,
		 dgram == 1 ? "" : "s");
	for (r = redirect_table_first(&d->env.redirects); r; r = next) {
		next = redirect_next(r); /* a redirect still connecting is freed at once */
		redirect_request_close(r);
	}
	return true;
}
