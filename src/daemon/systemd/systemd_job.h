/* SPDX-License-Identifier: GPL-2.0-only */
/* Asking systemd what it is doing to our unit: a stop, or the stop half of a restart. */
#ifndef VSOCKMAP_SYSTEMD_JOB_H
#define VSOCKMAP_SYSTEMD_JOB_H

#include <systemd/sd-event.h>

struct systemd_job_query;

/*
 * The answer: 1 if the job systemd runs on the unit of this process is a restart, 0 if it
 * is something else or there is none, -errno if systemd could not be asked or did not
 * answer within SYSTEMD_JOB_TIMEOUT_USEC.
 */
typedef void (*systemd_job_answer_fn)(int restart, void *userdata);

/*
 * Ask without waiting: fn gets the answer from event's loop, once. -ENOTCONN: not started
 * by systemd; another -errno: the question could not be sent (fn is not called).
 */
int systemd_job_ask_restart(sd_event *event, systemd_job_answer_fn fn, void *userdata,
			    struct systemd_job_query **out);

/* Forget the question (fn is not called after this), and close the bus. Returns NULL. */
struct systemd_job_query *systemd_job_query_free(struct systemd_job_query *q);

#define SYSTEMD_JOB_TIMEOUT_USEC (2 * 1000 * 1000)

#endif
