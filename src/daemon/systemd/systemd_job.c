// SPDX-License-Identifier: GPL-2.0-only
/*
 * A restart and a stop both start with SIGTERM. Only the job systemd is running on the unit
 * tells them apart: systemd keeps the fd store across "systemctl restart" (a start job
 * follows) and empties it on "systemctl stop", so the daemon hands its sockets over only for
 * a restart and drains otherwise.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "systemd_job.h"

#define SD_DEST "org.freedesktop.systemd1"

/* systemd's private socket (root only) works without a D-Bus broker, as systemctl does. */
static int open_bus(sd_bus **out)
{
	sd_bus *bus = NULL;
	int r;

	r = sd_bus_new(&bus);
	if (r < 0)
		return r;
	r = sd_bus_set_address(bus, "unix:path=/run/systemd/private");
	r = r < 0 ? r : sd_bus_set_method_call_timeout(bus, SYSTEMD_JOB_TIMEOUT_USEC);
	r = r < 0 ? r : sd_bus_start(bus);
	if (r < 0) {
		sd_bus_unref(bus);
		r = sd_bus_open_system(&bus);
		if (r < 0)
			return r;
		sd_bus_set_method_call_timeout(bus, SYSTEMD_JOB_TIMEOUT_USEC);
	}
	*out = bus;
	return 0;
}

static int job_type(sd_bus *bus, char **type)
{
	sd_bus_error error = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	const char *unit_path, *job_path;
	char *unit = NULL;
	uint32_t job_id = 0;
	int r;

	r = sd_bus_call_method(bus, SD_DEST, "/org/freedesktop/systemd1",
			       SD_DEST ".Manager", "GetUnitByPID", &error, &reply, "u",
			       (uint32_t)getpid());
	r = r < 0 ? r : sd_bus_message_read(reply, "o", &unit_path);
	if (r >= 0)
		unit = strdup(unit_path);
	reply = sd_bus_message_unref(reply);
	if (r >= 0 && !unit)
		r = -ENOMEM;
	if (r >= 0)
		r = sd_bus_get_property(bus, SD_DEST, unit, SD_DEST ".Unit", "Job", &error, &reply,
					"(uo)");
	r = r < 0 ? r : sd_bus_message_read(reply, "(uo)", &job_id, &job_path);
	*type = NULL;
	if (r >= 0 && job_id)
		r = sd_bus_get_property_string(bus, SD_DEST, job_path, SD_DEST ".Job", "JobType",
					       &error, type);
	sd_bus_message_unref(reply);
	sd_bus_error_free(&error);
	free(unit);
	return r < 0 ? r : 0;
}

int systemd_job_is_restart(void)
{
	sd_bus *bus = NULL;
	char *type = NULL;
	bool restart;
	int r;

	if (!getenv("INVOCATION_ID"))
		return -ENOTCONN; /* not started by systemd */
	r = open_bus(&bus);
	if (r < 0)
		return r;
	r = job_type(bus, &type);
	sd_bus_flush_close_unref(bus);
	if (r < 0)
		return r;
	restart = type && (!strcmp(type, "restart") || !strcmp(type, "try-restart"));
	free(type);
	return restart;
}
