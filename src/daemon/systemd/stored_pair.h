/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What a pair taken back at a restart is, read from its own sockets: the kind of listener its
 * client came through and the kind of target it is connected to. Its section's name alone
 * does not say it: the section may have changed its ends since the pair was made.
 */
#ifndef VSOCKMAP_STORED_PAIR_H
#define VSOCKMAP_STORED_PAIR_H

#include <stdbool.h>

#include "address.h"
#include "config.h"

/* UNIX_LISTEN, TCP_LISTEN or VSOCK_LISTEN, from the client socket's family. */
enum address_kind stored_pair_client_kind(int client_fd);

/* UNIX_CONNECT, TCP_CONNECT or VSOCK_CONNECT, from the target socket's family. */
enum address_kind stored_pair_target_kind(int target_fd);

/* Whether a section of rc's ends can own a pair whose ends are of these kinds. */
bool stored_pair_fits(const struct redirect_config *rc, enum address_kind client,
		      enum address_kind target);

#endif
