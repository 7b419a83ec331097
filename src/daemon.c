// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <systemd/sd-daemon.h>

#include "bpf_object_id.h"

#include "control_server.h"
#include "daemon.h"
#include "dgram_forwarder.h"
#include "listener.h"
#include "log.h"
#include "redirect.h"
#include "util.h"

#define CONTROL_SOCKET_MODE 0600

uint64_t daemon_next_id(struct daemon *d)
{
	return ++d->next_id;
}

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

static int on_control(void *userdata, const char *command, struct json_object *request,
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

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	(void)userdata;
	log_info("received %s, shutting down", strsignal(si->ssi_signo));
	return sd_event_exit(sd_event_source_get_event(s), 0);
}

static int open_listeners(struct daemon *d)
{
	size_t i;
	int err;

	d->listeners = calloc(d->cfg.n_redirects, sizeof(*d->listeners));
	if (!d->listeners)
		return -ENOMEM;
	for (i = 0; i < d->cfg.n_redirects; i++) {
		err = listener_open(d, &d->cfg.redirects[i], &d->listeners[i]);
		if (err)
			return err;
		d->n_listeners++;
	}
	return 0;
}

static void log_datapath(struct daemon *d)
{
	const struct dataplane_features *f = dataplane_features(d->dp);
	struct utsname uts = {};

	uname(&uts);
	log_info("data path: kernel (sockmap), BPF object sha256:%s on kernel %s",
		 VSOCKMAP_BPF_SHA256, uts.release);
	if (f->iterator)
		log_info("drain signal: queue iterator");
	else
		log_notice("drain signal: timed; the queue iterator was not loaded (%s)",
			   f->iterator_error == -ECANCELED ? "--drain=timed"
			   : f->iterator_error == -EPERM   ? "refused by the kernel: EPERM"
							   : strerror(-f->iterator_error));
}

int daemon_start(struct daemon *d, const struct daemon_options *opts)
{
	char err_text[512];
	sigset_t mask;
	int err;

	memset(d, 0, sizeof(*d));
	d->started_usec = now_usec();
	err = config_load(opts->config_path, &d->cfg, err_text, sizeof(err_text));
	if (err) {
		log_err("%s", err_text);
		return err;
	}
	log_set_level(d->cfg.daemon.log_level);
	err = sd_event_default(&d->event);
	if (err < 0)
		goto out;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	err = sd_event_add_signal(d->event, NULL, SIGTERM, on_signal, d);
	err = err < 0 ? err : sd_event_add_signal(d->event, NULL, SIGINT, on_signal, d);
	if (err < 0)
		goto out;
	err = dataplane_open(&d->dp, opts->drain_mode);
	if (err)
		goto out;
	log_datapath(d);
	err = open_listeners(d);
	if (err)
		goto out;
	err = control_server_open(d->event, d->cfg.daemon.control_path, CONTROL_SOCKET_MODE,
				  on_control, d, &d->control);
	if (err)
		goto out;
	return 0;
out:
	if (err != -EINVAL)
		log_errno(LOG_ERR, err, "not started");
	daemon_stop(d);
	return err;
}

int daemon_run(struct daemon *d)
{
	sd_notify(0, "READY=1");
	return sd_event_loop(d->event);
}

void daemon_stop(struct daemon *d)
{
	size_t i;

	sd_notify(0, "STOPPING=1");
	if (d->late_inserts)
		log_info("%" PRIu64 " client sockets entered the map with bytes still queued; "
			 "those bytes followed the next write or EOF",
			 d->late_inserts);
	control_server_close(d->control);
	d->control = NULL;
	while (d->redirects)
		redirect_free(d->redirects);
	for (i = 0; i < d->n_listeners; i++)
		listener_close(&d->listeners[i]);
	free(d->listeners);
	d->listeners = NULL;
	d->n_listeners = 0;
	dataplane_close(d->dp);
	d->dp = NULL;
	d->event = sd_event_unref(d->event);
	config_free(&d->cfg);
}
