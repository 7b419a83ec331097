/* SPDX-License-Identifier: GPL-2.0-only */
/* The daemon's answers to control requests: a control_handler_t over struct daemon. */
#ifndef VSOCKMAP_CONTROL_COMMANDS_H
#define VSOCKMAP_CONTROL_COMMANDS_H

struct json_object;

/* userdata is the struct daemon. */
int control_commands_handle(void *userdata, const char *command, struct json_object *request,
			    struct json_object **response, char **error_text);

#endif
