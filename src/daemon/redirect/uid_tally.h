/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Live redirects per client uid, for max-redirects-per-uid= (docs/security.md, "What one
 * connection costs"). A guest has few users, so the tally is a short array searched in
 * order; an uid whose count falls to 0 leaves it.
 */
#ifndef VSOCKMAP_UID_TALLY_H
#define VSOCKMAP_UID_TALLY_H

#include <stddef.h>
#include <sys/types.h>

struct uid_count {
	uid_t uid;
	unsigned int n;
};

struct uid_tally {
	struct uid_count *v;
	size_t n, size;
};

/* Live redirects of uid: 0 for one the tally does not hold. */
unsigned int uid_tally_get(const struct uid_tally *t, uid_t uid);
/* One more for uid. 0 or -ENOMEM. */
int uid_tally_add(struct uid_tally *t, uid_t uid);
/* One fewer for uid (one uid_tally_add() took). */
void uid_tally_remove(struct uid_tally *t, uid_t uid);
void uid_tally_free(struct uid_tally *t);

#endif
