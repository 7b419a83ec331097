/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Whether a stream redirect can be handed to the next instance at a restart (handover.c):
 * the decision alone, on what redirect_settle() (redirect.c) reads off the redirect, so that
 * it can be tested without sockets or maps.
 */
#ifndef VSOCKMAP_REDIRECT_SETTLE_H
#define VSOCKMAP_REDIRECT_SETTLE_H

#include <stdbool.h>

#include "redirect_phase.h"

/* Which ways of a settled pair are done (their EOF passed on): REDIRECT_HALF_* bits. A way
 * whose half-close still drains is not: the next instance finds the EOF again. */
#define REDIRECT_HALF_CLIENT 1 /* client to target */
#define REDIRECT_HALF_TARGET 2 /* target to client */

struct settle_view {
	bool userspace;	       /* the daemon carries both ways: no sockhash */
	enum dir_state client; /* client to target */
	enum dir_state target; /* target to client */
	bool client_mapped;  /* the client's socket is in the sockhash as far as the daemon knows */
	bool left_behind;    /* client bytes left behind at the insert, watched in DIR_OPEN */
	bool client_pending; /* read from the client, not yet written to the target */
	bool target_pending; /* read from the target, not yet written to the client */
	bool gate_settled;   /* the client's gate is open with nothing held beyond what was taken */
};

/* NULL if the pair can be handed over as it is, or what it still waits for. */
const char *settle_blocker(const struct settle_view *v);
/* Which ways of a settled pair the next instance takes as finished: REDIRECT_HALF_* bits. */
unsigned int settle_half(enum dir_state client, enum dir_state target);

#endif
