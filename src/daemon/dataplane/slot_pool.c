// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>

#include "slot_pool.h"

int slot_pool_init(struct slot_pool *p, uint32_t size)
{
	uint32_t i;

	p->free = calloc(size ? size : 1, sizeof(*p->free));
	p->where = calloc(size ? size : 1, sizeof(*p->where));
	if (!p->free || !p->where) {
		free(p->free);
		free(p->where);
		p->free = p->where = NULL;
		return -ENOMEM;
	}
	for (i = 0; i < size; i++) {
		p->free[i] = size - 1 - i;
		p->where[size - 1 - i] = i;
	}
	p->n_free = p->size = size;
	p->limit = 0;
	p->high = 0;
	return 0;
}

void slot_pool_fini(struct slot_pool *p)
{
	free(p->free);
	free(p->where);
	p->free = p->where = NULL;
	p->n_free = p->size = 0;
}

void slot_pool_set_limit(struct slot_pool *p, uint32_t limit)
{
	p->limit = limit < p->size ? limit : 0;
}

bool slot_pool_full(const struct slot_pool *p)
{
	return !p->n_free || (p->limit && p->size - p->n_free >= p->limit);
}

int slot_pool_take(struct slot_pool *p, uint32_t *slot)
{
	if (slot_pool_full(p))
		return -ENOSPC;
	*slot = p->free[--p->n_free];
	p->where[*slot] = SLOT_TAKEN;
	if (*slot >= p->high)
		p->high = *slot + 1;
	return 0;
}

void slot_pool_put(struct slot_pool *p, uint32_t slot)
{
	p->where[slot] = p->n_free;
	p->free[p->n_free++] = slot;
}

int slot_pool_take_this(struct slot_pool *p, uint32_t slot)
{
	uint32_t i, last;

	if (slot >= p->size)
		return -ERANGE;
	i = p->where[slot];
	if (i == SLOT_TAKEN)
		return -EBUSY; /* taken twice */
	/* The top of the stack fills the hole. */
	last = p->free[--p->n_free];
	p->free[i] = last;
	p->where[last] = i;
	p->where[slot] = SLOT_TAKEN;
	if (slot >= p->high)
		p->high = slot + 1;
	return 0;
}
