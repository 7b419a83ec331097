/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The table of live stream redirects: newest first, their count, and the ids (1, 2, ...; a
 * restart carries on from the largest taken back). One per daemon; this file alone edits it.
 * A redirect is in it from redirect_new() to redirect_free(), through the entry it embeds.
 */
#ifndef VSOCKMAP_REDIRECT_TABLE_H
#define VSOCKMAP_REDIRECT_TABLE_H

#include <stddef.h>
#include <stdint.h>

struct redirect;

struct redirect_table_entry {
	struct redirect_table_entry *next, *prev;
	struct redirect *r;
	uint64_t id;
};

struct redirect_table {
	struct redirect_table_entry *head; /* the newest */
	size_t n;
	uint64_t last_id; /* the largest id given or taken back */
};

/* A new id: one more than any given or taken back. */
uint64_t redirect_table_new_id(struct redirect_table *t);
/* An id taken back from a previous instance: new ones come after it. */
void redirect_table_reserve_id(struct redirect_table *t, uint64_t id);

/* r, with its id, first in the table through e (embedded in r). */
void redirect_table_add(struct redirect_table *t, struct redirect_table_entry *e, struct redirect *r,
			uint64_t id);
void redirect_table_remove(struct redirect_table *t, struct redirect_table_entry *e);

/* The newest live redirect; NULL: none. */
struct redirect *redirect_table_first(const struct redirect_table *t);
/* The one after e (older); NULL: e is the oldest. */
struct redirect *redirect_table_next(const struct redirect_table_entry *e);
/* The live redirect with this id; NULL: none. */
struct redirect *redirect_table_find(const struct redirect_table *t, uint64_t id);

#endif
