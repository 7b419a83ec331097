// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>

#include "uid_tally.h"

static struct uid_count *find(const struct uid_tally *t, uid_t uid)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (t->v[i].uid == uid)
			return &t->v[i];
	return NULL;
}

unsigned int uid_tally_get(const struct uid_tally *t, uid_t uid)
{
	const struct uid_count *c = find(t, uid);

	return c ? c->n : 0;
}

int uid_tally_add(struct uid_tally *t, uid_t uid)
{
	struct uid_count *c = find(t, uid), *v;

	if (c) {
		c->n++;
		return 0;
	}
	if (t->n == t->size) {
		size_t size = t->size ? 2 * t->size : 8;

		v = realloc(t->v, size * sizeof(*v));
		if (!v)
			return -ENOMEM;
		t->v = v;
		t->size = size;
	}
	t->v[t->n++] = (struct uid_count){.uid = uid, .n = 1};
	return 0;
}

void uid_tally_remove(struct uid_tally *t, uid_t uid)
{
	struct uid_count *c = find(t, uid);

	if (!c || --c->n)
		return;
	*c = t->v[--t->n];
}

void uid_tally_free(struct uid_tally *t)
{
	free(t->v);
	*t = (struct uid_tally){0};
}
