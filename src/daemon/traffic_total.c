// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bpf_dataplane.h"
#include "daemon_state.h"
#include "dgram_forwarder.h"
#include "listener.h"
#include "redirect.h"
#include "traffic_total.h"

static size_t listener_index(const struct daemon *d, const struct listener *l)
{
	size_t i;

	for (i = 0; i < d->n_listeners && d->listeners[i] != l; i++)
		;
	return i; /* d->n_listeners: a section a reload removed */
}

int traffic_since_start(struct daemon *d, struct traffic **per_listener, struct traffic *all)
{
	struct traffic *t = calloc(d->n_listeners + 1, sizeof(*t)), moved;
	struct redirect_info info;
	struct redirect *r;
	size_t i;

	if (!t)
		return -ENOMEM;
	for (i = 0; i < d->n_listeners; i++) {
		struct listener *l = d->listeners[i];

		t[i] = *listener_closed_traffic(l);
		if (l->dgram) {
			dgram_forwarder_get_info(l->dgram, &info);
			traffic_add(&t[i], &info.moved);
		}
	}
	/* One read of the kernel's counters for all (a failed one: slot by slot). */
	if (d->env.dp)
		dataplane_counters_snapshot(d->env.dp);
	for (r = redirect_table_first(&d->env.redirects); r; r = redirect_next(r)) {
		redirect_get_traffic(r, &moved);
		traffic_add(&t[listener_index(d, redirect_listener(r))], &moved);
	}
	if (d->env.dp)
		dataplane_counters_snapshot_drop(d->env.dp);
	memset(all, 0, sizeof(*all));
	for (i = 0; i <= d->n_listeners; i++)
		traffic_add(all, &t[i]);
	if (per_listener)
		*per_listener = t;
	else
		free(t);
	return 0;
}
