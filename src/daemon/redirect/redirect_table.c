// SPDX-License-Identifier: GPL-2.0-only
#include "redirect_table.h"

uint64_t redirect_table_new_id(struct redirect_table *t)
{
	return ++t->last_id;
}

void redirect_table_reserve_id(struct redirect_table *t, uint64_t id)
{
	if (id > t->last_id)
		t->last_id = id;
}

void redirect_table_add(struct redirect_table *t, struct redirect_table_entry *e, struct redirect *r,
			uint64_t id)
{
	e->r = r;
	e->id = id;
	e->prev = NULL;
	e->next = t->head;
	if (t->head)
		t->head->prev = e;
	t->head = e;
	t->n++;
}

void redirect_table_remove(struct redirect_table *t, struct redirect_table_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else if (t->head == e)
		t->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	e->next = e->prev = NULL;
	t->n--;
}

struct redirect *redirect_table_first(const struct redirect_table *t)
{
	return t->head ? t->head->r : NULL;
}

struct redirect *redirect_table_next(const struct redirect_table_entry *e)
{
	return e->next ? e->next->r : NULL;
}

struct redirect *redirect_table_find(const struct redirect_table *t, uint64_t id)
{
	const struct redirect_table_entry *e;

	for (e = t->head; e; e = e->next)
		if (e->id == id)
			return e->r;
	return NULL;
}
