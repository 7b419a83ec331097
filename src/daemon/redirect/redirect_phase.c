// SPDX-License-Identifier: GPL-2.0-only
/*
 * The transition tables of a stream redirect (redirect_phase.h has the picture). A zero
 * entry is a change that cannot happen; the tables hold each target plus one, so that the
 * first enumerator can be a target too.
 */
#include <errno.h>

#include "redirect_phase.h"

#define TO(p) ((p) + 1)

static const unsigned char phase_table[NR_REDIRECT_PHASES][NR_REDIRECT_EVENTS] = {
    [PHASE_CONNECTING] =
	{
	    [REDIRECT_CONNECTED] = TO(PHASE_RUNNING),
	    [REDIRECT_HANDED_OVER] = TO(PHASE_HANDED_OVER),
	    [REDIRECT_FREED] = TO(PHASE_FREED),
	},
    [PHASE_RUNNING] =
	{
	    [REDIRECT_PEER_GONE] = TO(PHASE_CLOSING),
	    [REDIRECT_CLOSE_REQUESTED] = TO(PHASE_STOPPING),
	    [REDIRECT_IDLE_TIMEOUT] = TO(PHASE_IDLE_CLOSING),
	    [REDIRECT_HANDED_OVER] = TO(PHASE_HANDED_OVER),
	    [REDIRECT_FREED] = TO(PHASE_FREED),
	},
    /* A request to close stops reading the target, whatever closed the pair first. */
    [PHASE_CLOSING] =
	{
	    [REDIRECT_PEER_GONE] = TO(PHASE_CLOSING),
	    [REDIRECT_CLOSE_REQUESTED] = TO(PHASE_STOPPING),
	    [REDIRECT_HANDED_OVER] = TO(PHASE_HANDED_OVER),
	    [REDIRECT_FREED] = TO(PHASE_FREED),
	},
    [PHASE_STOPPING] =
	{
	    [REDIRECT_PEER_GONE] = TO(PHASE_STOPPING),
	    [REDIRECT_CLOSE_REQUESTED] = TO(PHASE_STOPPING),
	    [REDIRECT_HANDED_OVER] = TO(PHASE_HANDED_OVER),
	    [REDIRECT_FREED] = TO(PHASE_FREED),
	},
    [PHASE_IDLE_CLOSING] =
	{
	    [REDIRECT_PEER_GONE] = TO(PHASE_IDLE_CLOSING),
	    [REDIRECT_CLOSE_REQUESTED] = TO(PHASE_IDLE_CLOSING),
	    [REDIRECT_HANDED_OVER] = TO(PHASE_HANDED_OVER),
	    [REDIRECT_FREED] = TO(PHASE_FREED),
	},
    /* Its descriptors belong to the next instance now: nothing of this one touches them. */
    [PHASE_HANDED_OVER] =
	{
	    [REDIRECT_FREED] = TO(PHASE_FREED),
	},
    [PHASE_FREED] = {0},
};

static const unsigned char dir_table[NR_DIR_STATES][NR_DIR_EVENTS] = {
    [DIR_SYNC] =
	{
	    [DIR_INSERTED] = TO(DIR_OPEN),
	    [DIR_INSERT_FAILED] = TO(DIR_COPY),
	    [DIR_SOURCE_ENDED] = TO(DIR_DRAINING),
	    [DIR_TARGET_UNHASHED] = TO(DIR_COPY),
	    [DIR_DEST_GONE] = TO(DIR_DONE),
	},
    [DIR_OPEN] =
	{
	    [DIR_LEFT_BEHIND] = TO(DIR_SWEEP),
	    [DIR_SOURCE_ENDED] = TO(DIR_DRAINING),
	    [DIR_TARGET_UNHASHED] = TO(DIR_COPY),
	    [DIR_SOURCE_UNHASHED] = TO(DIR_UNHASHED),
	    [DIR_DEST_GONE] = TO(DIR_DONE),
	},
    /* The daemon takes the source over once the kernel has sent what it redirected. */
    [DIR_UNHASHED] =
	{
	    [DIR_BACKLOG_SENT] = TO(DIR_COPY),
	    [DIR_SOURCE_ENDED] = TO(DIR_DRAINING),
	    [DIR_DEST_GONE] = TO(DIR_DONE),
	},
    [DIR_SWEEP] =
	{
	    [DIR_SWEPT] = TO(DIR_CATCHUP),
	    [DIR_DEST_GONE] = TO(DIR_DONE),
	},
    [DIR_CATCHUP] =
	{
	    [DIR_CAUGHT_UP] = TO(DIR_OPEN),
	    [DIR_SOURCE_ENDED] = TO(DIR_DRAINING),
	    [DIR_DEST_GONE] = TO(DIR_DONE),
	},
    [DIR_DRAINING] =
	{
	    [DIR_FINISHED] = TO(DIR_DONE),
	    [DIR_DEST_GONE] = TO(DIR_DONE),
	},
    [DIR_COPY] =
	{
	    [DIR_FINISHED] = TO(DIR_DONE),
	    [DIR_DEST_GONE] = TO(DIR_DONE),
	},
    [DIR_DONE] = {0},
};

int redirect_phase_after(enum redirect_phase from, enum redirect_event ev)
{
	if ((unsigned int)from >= NR_REDIRECT_PHASES || (unsigned int)ev >= NR_REDIRECT_EVENTS ||
	    !phase_table[from][ev])
		return -EINVAL;
	return phase_table[from][ev] - 1;
}

int dir_state_after(enum dir_state from, enum dir_event ev)
{
	if ((unsigned int)from >= NR_DIR_STATES || (unsigned int)ev >= NR_DIR_EVENTS ||
	    !dir_table[from][ev])
		return -EINVAL;
	return dir_table[from][ev] - 1;
}

const char *redirect_phase_name(enum redirect_phase p)
{
	static const char *const names[NR_REDIRECT_PHASES] = {
	    [PHASE_CONNECTING] = "connecting",	 [PHASE_RUNNING] = "running",
	    [PHASE_CLOSING] = "closing",
	    [PHASE_STOPPING] = "stopping",	 [PHASE_IDLE_CLOSING] = "idle-closing",
	    [PHASE_HANDED_OVER] = "handed-over", [PHASE_FREED] = "freed",
	};

	return (unsigned int)p < NR_REDIRECT_PHASES ? names[p] : "?";
}

const char *redirect_event_name(enum redirect_event ev)
{
	static const char *const names[NR_REDIRECT_EVENTS] = {
	    [REDIRECT_CONNECTED] = "connected",
	    [REDIRECT_PEER_GONE] = "peer gone",
	    [REDIRECT_CLOSE_REQUESTED] = "close requested",
	    [REDIRECT_IDLE_TIMEOUT] = "idle timeout",
	    [REDIRECT_HANDED_OVER] = "handed over",
	    [REDIRECT_FREED] = "freed",
	};

	return (unsigned int)ev < NR_REDIRECT_EVENTS ? names[ev] : "?";
}

const char *dir_state_name(enum dir_state s)
{
	static const char *const names[NR_DIR_STATES] = {
	    [DIR_SYNC] = "sync",	[DIR_OPEN] = "open",	     [DIR_SWEEP] = "sweep",
	    [DIR_CATCHUP] = "catch-up", [DIR_DRAINING] = "draining", [DIR_UNHASHED] = "unhashed",
	    [DIR_COPY] = "copy",	[DIR_DONE] = "done",
	};

	return (unsigned int)s < NR_DIR_STATES ? names[s] : "?";
}

const char *dir_event_name(enum dir_event ev)
{
	static const char *const names[NR_DIR_EVENTS] = {
	    [DIR_INSERTED] = "inserted",
	    [DIR_INSERT_FAILED] = "insert failed",
	    [DIR_LEFT_BEHIND] = "left behind",
	    [DIR_SWEPT] = "swept",
	    [DIR_CAUGHT_UP] = "caught up",
	    [DIR_SOURCE_ENDED] = "source ended",
	    [DIR_TARGET_UNHASHED] = "target unhashed",
	    [DIR_SOURCE_UNHASHED] = "source unhashed",
	    [DIR_BACKLOG_SENT] = "backlog sent",
	    [DIR_FINISHED] = "finished",
	    [DIR_DEST_GONE] = "destination gone",
	};

	return (unsigned int)ev < NR_DIR_EVENTS ? names[ev] : "?";
}
