/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Who a stream redirect's client is, read from the redirect alone: no socket call and no map
 * lookup, unlike redirect_get_info(). For filters that must run on every live redirect
 * before any of them costs a system call (the control socket's list and show).
 */
#ifndef VSOCKMAP_REDIRECT_CLIENT_H
#define VSOCKMAP_REDIRECT_CLIENT_H

#include <sys/socket.h>

struct redirect;

/* The client's SO_PEERCRED at accept; pid 0: unknown. */
const struct ucred *redirect_client(const struct redirect *r);

#endif
