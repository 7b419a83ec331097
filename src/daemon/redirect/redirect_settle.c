// SPDX-License-Identifier: GPL-2.0-only
#include <stddef.h>

#include "redirect_settle.h"

/*
 * What the next instance re-derives, and so needs not be carried: a client's EOF (a unix
 * peer's shutdown stays RCV_SHUTDOWN on our socket, EPOLLRDHUP at every look), and whether its
 * socket is still in the sockhash. What it cannot: bytes in the daemon's hands (its buffers,
 * bytes the verdict held), and a client way the daemon copies itself.
 */
const char *settle_blocker(const struct settle_view *v)
{
	if (v->userspace)
		return v->client_pending || v->target_pending ? "bytes not yet written on" : NULL;
	/*
	 * A client way that is done has passed its EOF on; whether its socket is still in the
	 * sockhash no longer matters (a unix client's shutdown() unhashes it). One that drains
	 * has ended too: what the client sent is in the kernel's backlog toward the target (the
	 * verdict's or the injector's), or in its socket's own queue (left behind at the insert,
	 * or sent after the socket left the sockhash), which the drain reads once that backlog
	 * is out. The next instance finds the EOF again and drains it the same way (settle_half()).
	 */
	if (v->client != DIR_DONE && v->client != DIR_DRAINING) {
		if (v->client == DIR_SYNC)
			return "client bytes still carried by the daemon";
		if (v->client != DIR_OPEN || !v->client_mapped)
			return "catching up";
		if (v->left_behind)
			return "client bytes left behind at the insert";
	}
	if (v->client_pending)
		return "client bytes not yet written to the target";
	if (v->target != DIR_COPY && v->target != DIR_DONE)
		return "target half-closed, its last bytes not yet read";
	if (v->target_pending)
		return "target bytes not yet written to the client";
	if (v->client == DIR_DONE || v->gate_settled)
		return NULL;
	return "client bytes held by the verdict";
}

/* Only DIR_DONE: a draining way is taken back as open, and its EOF found again. */
unsigned int settle_half(enum dir_state client, enum dir_state target)
{
	return (client == DIR_DONE ? REDIRECT_HALF_CLIENT : 0) |
	       (target == DIR_DONE ? REDIRECT_HALF_TARGET : 0);
}
