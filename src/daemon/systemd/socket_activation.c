// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "log.h"
#include "socket_activation.h"

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

int socket_activation_check(const struct passed_fds *p, const struct config *cfg)
{
	char sections[256];
	size_t i, j, n = 0;
	int err = 0;

	section_list(cfg, sections, sizeof(sections));
	for (i = 0; i < p->n; i++) {
		const char *name = p->v[i].name ? p->v[i].name : "unknown";

		if (passed_fd_stored(&p->v[i]))
			continue; /* the previous instance's, for a restart (handover.c) */
		for (j = 0; j < i; j++)
			if (p->v[j].name && !strcmp(p->v[j].name, name))
				break;
		if (j < i) {
			log_fields(LOG_ERR, LOG_CTX(.fd_name = name),
				   "systemd passed two sockets named \"%s\" (fds %d and %d); give "
				   "each ListenStream=/ListenDatagram= its own .socket unit or "
				   "FileDescriptorName=",
				   name, p->v[j].fd, p->v[i].fd);
			err = -EINVAL;
			continue;
		}
		if (!find_section(cfg, name)) {
			log_fields(
			    LOG_ERR, LOG_CTX(.fd_name = name),
			    "systemd passed socket \"%s\" (fd %d), which matches no section of "
			    "%s (sections: %s); set FileDescriptorName= in the .socket unit to "
			    "the section name",
			    name, p->v[i].fd, cfg->path, sections);
			err = -EINVAL;
		}
		n++;
	}
	if (!err && n)
		log_info("systemd passed %zu socket%s", n, n == 1 ? "" : "s");
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

int socket_activation_claim(struct passed_fds *p, const struct redirect_config *rc)
{
	size_t i;
	int err;

	for (i = 0; i < p->n; i++) {
		if (p->v[i].fd < 0 || !p->v[i].name || strcmp(p->v[i].name, rc->name))
			continue;
		err = check_passed(p->v[i].fd, p->v[i].name, rc);
		if (err)
			return err;
		compare_mode(rc, p->v[i].name);
		return passed_fds_take(p, i);
	}
	return -ENOENT;
}
