// SPDX-License-Identifier: GPL-2.0-only
/* Apart from redirect.c, so that the control socket's filters need none of its insides. */
#include "redirect_client.h"
#include "redirect_internal.h"

const struct ucred *redirect_client(const struct redirect *r)
{
	return &r->cred;
}
