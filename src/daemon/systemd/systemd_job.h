/* SPDX-License-Identifier: GPL-2.0-only */
/* Asking systemd what it is doing to our unit: a stop, or the stop half of a restart. */
#ifndef VSOCKMAP_SYSTEMD_JOB_H
#define VSOCKMAP_SYSTEMD_JOB_H

/*
 * 1 if the job systemd runs on the unit of this process is a restart, 0 if it is something
 * else or there is none, -errno if systemd could not be asked (not under systemd, no bus).
 * Blocks for at most SYSTEMD_JOB_TIMEOUT_USEC.
 */
int systemd_job_is_restart(void);

#define SYSTEMD_JOB_TIMEOUT_USEC (2 * 1000 * 1000)

#endif
