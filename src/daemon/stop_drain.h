/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A stop that finishes what was sent. On SIGTERM or SIGINT that is not a restart (handover.c),
 * the daemon stops accepting and closes every live redirect as the idle timeout does
 * (redirect_request_close(): what either side sent before the stop is delivered, then EOF;
 * the client's later writes get EPIPE), and exits once none is left and every datagram
 * listener has passed on what it was sent, or once nothing still owed has moved toward its
 * reader for drain-timeout and one second more. A second signal exits at once.
 */
#ifndef VSOCKMAP_STOP_DRAIN_H
#define VSOCKMAP_STOP_DRAIN_H

#include <stdbool.h>

struct daemon;

/*
 * Begin the stop. Returns true while redirects finish (the event loop exits by itself when
 * they are done), false when the caller should exit now: nothing is live, a stop is already
 * under way, or the timer could not be set.
 */
bool stop_drain_start(struct daemon *d);

#endif
