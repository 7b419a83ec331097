// SPDX-License-Identifier: GPL-2.0-only
/*
 * A restart and a stop both start with SIGTERM. Only the job systemd is running on the unit
 * tells them apart: systemd keeps the fd store across "systemctl restart" (a start job
 * follows) and empties it on "systemctl stop", so the daemon hands its sockets over only for
 * a restart and drains otherwise.
 *
 * The question takes three calls (the unit, its job, the job's type). They run on the
 * daemon's event loop, so redirects go on moving while systemd answers; the daemon never
 * waits on the bus.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#include "systemd_job.h"

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define PROPERTIES "org.freedesktop.DBus.Properties"

struct systemd_job_query {
	sd_bus *bus;
	sd_bus_slot *slot; /* the call on its way */
	/*
	 * The bound on the whole question: sd-bus applies its call timeout only once the bus
	 * is authenticated, and a bus that never answers the handshake holds it for minutes.
	 */
	sd_event_source *timeout;
	bool answered;
	systemd_job_answer_fn answer;
	void *userdata;
};

/* systemd's private socket (root only) works without a D-Bus broker, as systemctl does. */
static int open_bus(sd_event *event, sd_bus **out)
{
	sd_bus *bus = NULL;
	int r;

	r = sd_bus_new(&bus);
	if (r < 0)
		return r;
	r = sd_bus_set_address(bus, "unix:path=/run/systemd/private");
	r = r < 0 ? r : sd_bus_start(bus);
	if (r < 0) {
		sd_bus_unref(bus);
		r = sd_bus_open_system(&bus);
		if (r < 0)
			return r;
	}
	/*
	 * Attached, sd-bus would flush the bus when the loop exits, and a flush waits for the
	 * handshake: a stop whose loop ends while the question is open would hang on a bus
	 * that never answers.
	 */
	r = sd_bus_set_method_call_timeout(bus, SYSTEMD_JOB_TIMEOUT_USEC);
	r = r < 0 ? r : sd_bus_set_close_on_exit(bus, 0);
	r = r < 0 ? r : sd_bus_attach_event(bus, event, SD_EVENT_PRIORITY_NORMAL);
	if (r < 0) {
		sd_bus_close_unref(bus); /* no flush: it would wait for the bus */
		return r;
	}
	*out = bus;
	return 0;
}

/* The answer, once: the query is freed by whoever asked, not here. */
static void answer(struct systemd_job_query *q, int restart)
{
	q->slot = sd_bus_slot_unref(q->slot);
	sd_event_source_set_enabled(q->timeout, SD_EVENT_OFF);
	if (q->answered)
		return;
	q->answered = true;
	q->answer(restart, q->userdata);
}

static int on_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	(void)s;
	(void)usec;
	answer(userdata, -ETIMEDOUT);
	return 0;
}

/* A reply that is a method error (a timeout included) answers the question as -errno. */
static bool answered_error(struct systemd_job_query *q, sd_bus_message *m)
{
	int r;

	if (!sd_bus_message_is_method_error(m, NULL))
		return false;
	r = sd_bus_message_get_errno(m);
	answer(q, r > 0 ? -r : -EIO);
	return true;
}

static int on_job_type(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct systemd_job_query *q = userdata;
	const char *type;
	int r;

	(void)ret_error;
	if (answered_error(q, m))
		return 0;
	r = sd_bus_message_read(m, "v", "s", &type);
	if (r < 0) {
		answer(q, r);
		return 0;
	}
	answer(q, !strcmp(type, "restart") || !strcmp(type, "try-restart"));
	return 0;
}

static int on_unit_job(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct systemd_job_query *q = userdata;
	const char *job_path;
	uint32_t job_id;
	int r;

	(void)ret_error;
	if (answered_error(q, m))
		return 0;
	r = sd_bus_message_read(m, "v", "(uo)", &job_id, &job_path);
	if (r < 0 || !job_id) {
		answer(q, r < 0 ? r : 0); /* no job: nothing is restarting us */
		return 0;
	}
	q->slot = sd_bus_slot_unref(q->slot);
	r = sd_bus_call_method_async(q->bus, &q->slot, SD_DEST, job_path, PROPERTIES, "Get",
				     on_job_type, q, "ss", SD_DEST ".Job", "JobType");
	if (r < 0)
		answer(q, r);
	return 0;
}

static int on_unit(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct systemd_job_query *q = userdata;
	const char *unit_path;
	int r;

	(void)ret_error;
	if (answered_error(q, m))
		return 0;
	r = sd_bus_message_read(m, "o", &unit_path);
	q->slot = sd_bus_slot_unref(q->slot);
	r = r < 0 ? r
		  : sd_bus_call_method_async(q->bus, &q->slot, SD_DEST, unit_path, PROPERTIES,
					     "Get", on_unit_job, q, "ss", SD_DEST ".Unit", "Job");
	if (r < 0)
		answer(q, r);
	return 0;
}

int systemd_job_ask_restart(sd_event *event, systemd_job_answer_fn fn, void *userdata,
			    struct systemd_job_query **out)
{
	struct systemd_job_query *q;
	int r;

	if (!getenv("INVOCATION_ID"))
		return -ENOTCONN; /* not started by systemd */
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->answer = fn;
	q->userdata = userdata;
	r = sd_event_add_time_relative(event, &q->timeout, CLOCK_MONOTONIC,
				       SYSTEMD_JOB_TIMEOUT_USEC, 0, on_timeout, q);
	r = r < 0 ? r : open_bus(event, &q->bus);
	r = r < 0 ? r
		  : sd_bus_call_method_async(q->bus, &q->slot, SD_DEST, SD_PATH, SD_DEST ".Manager",
					     "GetUnitByPID", on_unit, q, "u", (uint32_t)getpid());
	if (r < 0) {
		systemd_job_query_free(q);
		return r;
	}
	*out = q;
	return 0;
}

struct systemd_job_query *systemd_job_query_free(struct systemd_job_query *q)
{
	if (!q)
		return NULL;
	sd_event_source_disable_unref(q->timeout);
	sd_bus_slot_unref(q->slot);
	sd_bus_close_unref(q->bus); /* no flush: it would wait for the bus */
	free(q);
	return NULL;
}
