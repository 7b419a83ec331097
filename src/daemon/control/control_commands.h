/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The daemon's answers to control requests (list, show, listeners, stats, status, close,
 * reload) and its access policy, as a control_handler over struct daemon.
 */
#ifndef VSOCKMAP_CONTROL_COMMANDS_H
#define VSOCKMAP_CONTROL_COMMANDS_H

#include "control_server.h"

/* userdata is the struct daemon. */
extern const struct control_handler control_commands;

#endif
