// SPDX-License-Identifier: GPL-2.0-only
/* The daemon's answers to control requests (docs/control-protocol.md). */
#include <errno.h>
#include <json-c/json.h>
#include <string.h>

#include "control_commands.h"
#include "daemon.h"
#include "dgram_forwarder.h"
#include "listener.h"
#include "redirect.h"

static struct json_object *redirect_json(const struct redirect_info *info,
					 const struct redirect_config *rc)
{
	struct json_object *o = json_object_new_object(), *client = NULL;
	char buf[160];

	json_object_object_add(o, "id", json_object_new_uint64(info->id));
	json_object_object_add(o, "name", json_object_new_string(info->name));
	address_format(&rc->listen, buf, sizeof(buf));
	json_object_object_add(o, "listen", json_object_new_string(buf));
	address_format(&rc->connect, buf, sizeof(buf));
	json_object_object_add(o, "target", json_object_new_string(buf));
	if (info->client.pid) {
		client = json_object_new_object();
		json_object_object_add(client, "pid", json_object_new_int(info->client.pid));
		json_object_object_add(client, "uid", json_object_new_int64(info->client.uid));
		json_object_object_add(client, "gid", json_object_new_int64(info->client.gid));
		if (info->comm[0])
			json_object_object_add(client, "comm", json_object_new_string(info->comm));
	}
	json_object_object_add(o, "client", client);
	json_object_object_add(o, "datapath", json_object_new_string("kernel"));
	json_object_object_add(o, "state", json_object_new_string(info->state));
	json_object_object_add(o, "age_ms", json_object_new_uint64(info->age_usec / 1000));
	json_object_object_add(o, "bytes_out",
			       json_object_new_uint64(info->bytes[VSOCKMAP_DIR_TO_TARGET]));
	json_object_object_add(o, "packets_out",
			       json_object_new_uint64(info->packets[VSOCKMAP_DIR_TO_TARGET]));
	json_object_object_add(o, "bytes_in",
			       json_object_new_uint64(info->bytes[VSOCKMAP_DIR_TO_CLIENT]));
	json_object_object_add(o, "packets_in",
			       json_object_new_uint64(info->packets[VSOCKMAP_DIR_TO_CLIENT]));
	return o;
}

static int cmd_list(struct daemon *d, struct json_object *request, struct json_object *response)
{
	struct json_object *arr = json_object_new_array(), *filter;
	const char *name = NULL;
	struct redirect_info info;
	struct redirect *r;
	size_t i;

	if (json_object_object_get_ex(request, "name", &filter))
		name = json_object_get_string(filter);
	for (i = 0; i < d->n_listeners; i++) {
		struct listener *l = &d->listeners[i];

		if (!l->dgram || (name && strcmp(name, l->rc->name)))
			continue;
		dgram_forwarder_get_info(l->dgram, &info);
		json_object_array_add(arr, redirect_json(&info, l->rc));
	}
	for (r = d->redirects; r; r = redirect_next(r)) {
		redirect_get_info(r, &info);
		if (name && strcmp(name, info.name))
			continue;
		json_object_array_add(arr, redirect_json(&info, redirect_listener(r)->rc));
	}
	json_object_object_add(response, "redirects", arr);
	return 0;
}

int control_commands_handle(void *userdata, const char *command, struct json_object *request,
		      struct json_object **response, char **error_text)
{
	struct daemon *d = userdata;
	int err;

	(void)error_text;
	*response = json_object_new_object();
	if (!strcmp(command, "list"))
		err = cmd_list(d, request, *response);
	else
		err = -EOPNOTSUPP;
	return err;
}

