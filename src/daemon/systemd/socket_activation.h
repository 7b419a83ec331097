/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Socket activation: the listening sockets a .socket unit passed, each named after the
 * section it is for (FileDescriptorName=), checked against that section's listen address.
 */
#ifndef VSOCKMAP_SOCKET_ACTIVATION_H
#define VSOCKMAP_SOCKET_ACTIVATION_H

#include "config.h"
#include "passed_fds.h"

/*
 * Each passed socket that is not a restart's (HANDOVER_PREFIX) must be named after a
 * section, once. 0, or -EINVAL after logging which socket is wrong.
 */
int socket_activation_check(const struct passed_fds *p, const struct config *cfg);

/*
 * The socket passed for section rc, checked against its listen address: family, type
 * (stream for UNIX-LISTEN, datagram for UNIX-RECV), listening, and bound to the configured
 * path. Returns the fd (now non-blocking and owned by the caller), -ENOENT when none was
 * passed for it, or -EINVAL after logging what does not match.
 */
int socket_activation_claim(struct passed_fds *p, const struct redirect_config *rc);

#endif
