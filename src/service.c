// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "daemon.h"
#include "dgram_forwarder.h"
#include "handover.h"
#include "listener.h"
#include "log.h"
#include "redirect.h"
#include "service.h"
#include "traffic.h"
#include "util.h"

/* A socket systemd passed: LISTEN_FDS counts them from SD_LISTEN_FDS_START. */
struct passed_fd {
	int fd; /* -1 once claimed */
	char *name;
};

static struct passed_fd *passed;
static size_t n_passed;
static sd_event_source *status_timer;
static char last_status[160];

static void passed_free(void)
{
	size_t i;

	for (i = 0; i < n_passed; i++) {
		safe_close(passed[i].fd);
		free(passed[i].name);
	}
	free(passed);
	passed = NULL;
	n_passed = 0;
}

static const struct redirect_config *find_section(const struct config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->n_redirects; i++)
		if (!strcmp(cfg->redirects[i].name, name))
			return &cfg->redirects[i];
	return NULL;
}

static void section_list(const struct config *cfg, char *buf, size_t len)
{
	size_t i, off = 0;

	buf[0] = '\0';
	for (i = 0; i < cfg->n_redirects && off < len; i++)
		off +=
		    snprintf(buf + off, len - off, "%s%s", i ? ", " : "", cfg->redirects[i].name);
}

int service_fds_collect(const struct config *cfg)
{
	char **names = NULL, sections[256];
	size_t i, j;
	int n, err = 0;

	/* Unset LISTEN_*: nothing the daemon starts may believe they are its own. */
	n = sd_listen_fds_with_names(1, &names);
	if (n < 0)
		return log_errno(LOG_ERR, n, "reading the sockets passed by systemd (LISTEN_FDS)");
	if (n == 0)
		return 0;
	passed = calloc(n, sizeof(*passed));
	if (!passed) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < (size_t)n; i++) {
		passed[i].fd = SD_LISTEN_FDS_START + (int)i;
		/* Without LISTEN_FDNAMES every name is "unknown". */
		passed[i].name = names && names[i] ? names[i] : NULL;
		if (names)
			names[i] = NULL;
		n_passed++;
	}
	section_list(cfg, sections, sizeof(sections));
	for (i = 0; i < n_passed; i++) {
		/* What the previous instance stored for a restart (handover.c). */
		if (passed[i].name && !strncmp(passed[i].name, HANDOVER_PREFIX,
					       strlen(HANDOVER_PREFIX))) {
			handover_collect(passed[i].fd, passed[i].name);
			passed[i].fd = -1;
			passed[i].name = NULL;
		}
	}
	for (i = 0; i < n_passed; i++) {
		const char *name = passed[i].name ? passed[i].name : "unknown";

		if (passed[i].fd < 0)
			continue;

		for (j = 0; j < i; j++)
			if (passed[j].name && !strcmp(passed[j].name, name))
				break;
		if (j < i) {
			log_fields(LOG_ERR, LOG_CTX(.fd_name = name),
				   "systemd passed two sockets named \"%s\" (fds %d and %d); give "
				   "each ListenStream=/ListenDatagram= its own .socket unit or "
				   "FileDescriptorName=",
				   name, passed[j].fd, passed[i].fd);
			err = -EINVAL;
			continue;
		}
		if (!find_section(cfg, name)) {
			log_fields(
			    LOG_ERR, LOG_CTX(.fd_name = name),
			    "systemd passed socket \"%s\" (fd %d), which matches no section of "
			    "%s (sections: %s); set FileDescriptorName= in the .socket unit to "
			    "the section name",
			    name, passed[i].fd, cfg->path, sections);
			err = -EINVAL;
		}
	}
	for (i = j = 0; i < n_passed; i++)
		j += passed[i].fd >= 0;
	if (!err && j)
		log_info("systemd passed %zu socket%s", j, j == 1 ? "" : "s");
out:
	if (names) {
		for (i = 0; i < (size_t)n; i++)
			free(names[i]);
		free(names);
	}
	if (err)
		passed_free();
	return err;
}

static const char *type_name(int type)
{
	switch (type) {
	case SOCK_STREAM:
		return "stream (ListenStream=)";
	case SOCK_DGRAM:
		return "datagram (ListenDatagram=)";
	case SOCK_SEQPACKET:
		return "seqpacket (ListenSequentialPacket=)";
	default:
		return "of another type";
	}
}

/* The path a unix socket is bound to, "@name" for an abstract one, "" if unnamed. */
static int bound_path(int fd, char *buf, size_t len)
{
	struct sockaddr_un sun = {};
	socklen_t slen = sizeof(sun);
	size_t n;

	if (getsockname(fd, (struct sockaddr *)&sun, &slen))
		return -errno;
	n = slen > offsetof(struct sockaddr_un, sun_path)
		? slen - offsetof(struct sockaddr_un, sun_path)
		: 0;
	if (n && sun.sun_path[0] == '\0')
		snprintf(buf, len, "@%.*s", (int)(n - 1), sun.sun_path + 1);
	else
		snprintf(buf, len, "%.*s", (int)strnlen(sun.sun_path, n), sun.sun_path);
	return 0;
}

static int sockopt_int(int fd, int opt, int *val)
{
	socklen_t len = sizeof(*val);

	return getsockopt(fd, SOL_SOCKET, opt, val, &len) ? -errno : 0;
}

static int check_passed(int fd, const char *name, const struct redirect_config *rc)
{
	const struct address *a = &rc->listen;
	int want = a->kind == ADDRESS_UNIX_RECV ? SOCK_DGRAM : SOCK_STREAM;
	const struct log_context *ctx = LOG_CTX(.redirect = rc->name, .fd_name = name);
	int domain = 0, type = 0, listening = 0, err, flags;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 2] = "";

	err = sockopt_int(fd, SO_DOMAIN, &domain);
	err = err ?: sockopt_int(fd, SO_TYPE, &type);
	err = err ?: sockopt_int(fd, SO_ACCEPTCONN, &listening);
	if (err)
		return log_fields_errno(LOG_ERR, ctx, err, "[%s] socket \"%s\" passed by systemd",
					rc->name, name);
	if (domain != AF_UNIX) {
		log_fields(LOG_ERR, ctx,
			   "[%s] socket \"%s\" passed by systemd is not a unix socket (family %d), "
			   "but [%s] listens on %s %s",
			   rc->name, name, domain, rc->name, address_kind_name(a->kind), a->path);
		return -EINVAL;
	}
	if (type != want) {
		log_fields(LOG_ERR, ctx,
			   "[%s] socket \"%s\" passed by systemd is a %s socket, but [%s] listens "
			   "with %s, which needs a %s socket",
			   rc->name, name, type_name(type), rc->name, address_kind_name(a->kind),
			   type_name(want));
		return -EINVAL;
	}
	if (want == SOCK_STREAM && !listening) {
		log_fields(LOG_ERR, ctx,
			   "[%s] socket \"%s\" passed by systemd is not listening (Accept=yes is "
			   "not supported: use Accept=no)",
			   rc->name, name);
		return -EINVAL;
	}
	err = bound_path(fd, path, sizeof(path));
	if (err)
		return log_fields_errno(LOG_ERR, ctx, err, "[%s] socket \"%s\": getsockname",
					rc->name, name);
	if (strcmp(path, a->path)) {
		log_fields(LOG_ERR, ctx,
			   "[%s] socket \"%s\" passed by systemd is bound to %s, but [%s] "
			   "listens on %s",
			   rc->name, name, path[0] ? path : "no path", rc->name, a->path);
		return -EINVAL;
	}
	/* systemd passes blocking sockets; the event loop must never block. */
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return log_fields_errno(LOG_ERR, ctx, errno, "[%s] socket \"%s\": fcntl", rc->name,
					name);
	return 0;
}

/* The socket file belongs to the .socket unit: say so when it differs from the config. */
static void compare_mode(const struct redirect_config *rc, const char *name)
{
	const struct address *a = &rc->listen;
	struct stat st;

	if (stat(a->path, &st))
		return;
	if ((a->has_mode && (st.st_mode & 07777) != a->mode) ||
	    (a->has_user && st.st_uid != a->user) || (a->has_group && st.st_gid != a->group))
		log_fields(LOG_NOTICE, LOG_CTX(.redirect = rc->name, .fd_name = name),
			   "[%s] %s is mode %04o, owner %u:%u as the .socket unit made it; the "
			   "mode=, user= and group= options of [%s] apply only to sockets "
			   "vsockmapd creates (use SocketMode=, SocketUser=, SocketGroup=)",
			   rc->name, a->path, (unsigned int)(st.st_mode & 07777),
			   (unsigned int)st.st_uid, (unsigned int)st.st_gid, rc->name);
}

int service_fd_claim(const struct redirect_config *rc)
{
	size_t i;
	int fd, err;

	for (i = 0; i < n_passed; i++) {
		if (passed[i].fd < 0 || !passed[i].name || strcmp(passed[i].name, rc->name))
			continue;
		fd = passed[i].fd;
		err = check_passed(fd, passed[i].name, rc);
		if (err)
			return err;
		compare_mode(rc, passed[i].name);
		passed[i].fd = -1;
		return fd;
	}
	return -ENOENT;
}

void service_fds_release(void)
{
	passed_free();
}

/* ---- status ---------------------------------------------------------------------------- */

static void format_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
	double v = (double)bytes;
	size_t u = 0;

	if (bytes < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", bytes);
		return;
	}
	v /= 1024;
	while (v >= 1024 && u + 1 < ARRAY_SIZE(units)) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, units[u]);
}

void service_status_text(struct daemon *d, char *buf, size_t len)
{
	struct traffic all = {};
	char moved[32];

	traffic_since_start(d, NULL, &all); /* without memory: 0 B, for this once */
	format_bytes(all.bytes[0] + all.bytes[1], moved, sizeof(moved));
	snprintf(buf, len, "%zu listener%s, %zu live redirect%s, %s moved%s", d->n_listeners,
		 d->n_listeners == 1 ? "" : "s", d->n_redirects, d->n_redirects == 1 ? "" : "s",
		 moved, all.uncounted[0] || all.uncounted[1] ? " (+ the uncounted fast path)" : "");
}

static void send_status(struct daemon *d, const char *extra)
{
	char text[sizeof(last_status)];

	service_status_text(d, text, sizeof(text));
	if (!extra && !strcmp(text, last_status))
		return;
	snprintf(last_status, sizeof(last_status), "%s", text);
	sd_notifyf(0, "%sSTATUS=%s", extra ? extra : "", text);
}

static int on_status_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;

	log_flush_suppressed();
	if (getenv("NOTIFY_SOCKET"))
		send_status(d, NULL);
	sd_event_source_set_time(s, usec + SERVICE_STATUS_INTERVAL_SEC * USEC_PER_SEC);
	return 0;
}

int service_start(struct daemon *d)
{
	uint64_t watchdog_usec = 0;
	int err;

	/* WATCHDOG=1 at a quarter of WatchdogSec=, whenever the loop runs (a no-op without it). */
	err = sd_event_set_watchdog(d->event, true);
	if (err < 0)
		return log_errno(LOG_ERR, err, "enabling the systemd watchdog");
	if (err > 0 && sd_event_get_watchdog(d->event) > 0 &&
	    sd_watchdog_enabled(0, &watchdog_usec) > 0)
		log_info("systemd watchdog: keep-alive from the event loop, timeout %" PRIu64 " ms",
			 watchdog_usec / USEC_PER_MSEC);
	err = sd_event_add_time_relative(d->event, &status_timer, CLOCK_MONOTONIC,
					 SERVICE_STATUS_INTERVAL_SEC * USEC_PER_SEC,
					 USEC_PER_SEC / 2, on_status_timer, d);
	if (err < 0)
		return log_errno(LOG_ERR, err, "adding the status timer");
	sd_event_source_set_enabled(status_timer, SD_EVENT_ON);
	return 0;
}

void service_notify_ready(struct daemon *d)
{
	last_status[0] = '\0';
	send_status(d, "READY=1\n");
}

void service_notify_reloading(struct daemon *d)
{
	/* MONOTONIC_USEC: systemd 253 matches it to its reload job (Type=notify-reload). */
	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64 "\nSTATUS=reloading %s", now_usec(),
		   d->cfg.path);
}

void service_stop(struct daemon *d)
{
	if (!d->handing_over)
		sd_notify(0, "STOPPING=1\nSTATUS=stopping: closing redirects and listeners");
	status_timer = sd_event_source_disable_unref(status_timer);
	log_flush_suppressed();
	service_fds_release();
}
