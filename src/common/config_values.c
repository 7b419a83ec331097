// SPDX-License-Identifier: GPL-2.0-only
/*
 * The values of vsockmap.conf's keys: sizes, the redirect limit, log levels, the control
 * socket's mode and group, the data path and fast path modes, allow lists. Each parser
 * reports through loader_error() with the line inih is on.
 */
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>
#include <ini.h>

#include "config.h"
#include "util.h"
#include "vsockmap.h"

#include "config_internal.h"

static const char *const log_level_names[] = {"err", "warning", "notice", "info", "debug"};
static const int log_level_values[] = {LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG};

#define N_LOG_LEVELS (sizeof(log_level_names) / sizeof(log_level_names[0]))

/* "4M", "65536", "64K": bytes for sndbuf=. */
int parse_size(struct loader *ld, const char *text, unsigned int *bytes)
{
	const char *p = text;
	uint64_t v = 0;

	if (!isdigit((unsigned char)*p))
		return loader_error(ld, ld->line, "sndbuf \"%s\" is not a size (e.g. 4M or 262144)",
				    text);
	for (; isdigit((unsigned char)*p); p++)
		if (v <= UINT32_MAX)
			v = v * 10 + (uint64_t)(*p - '0');
	switch (*p) {
	case 'k':
	case 'K':
		v <<= 10;
		p++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		p++;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		p++;
		break;
	}
	if (*p)
		return loader_error(ld, ld->line,
				    "sndbuf \"%s\": trailing garbage \"%s\" (suffixes are K, M, G)",
				    text, p);
	if (v < SNDBUF_MIN || v > SNDBUF_MAX)
		return loader_error(ld, ld->line, "sndbuf %s is out of range (64K..256M)", text);
	*bytes = (unsigned int)v;
	return 0;
}

/* max-redirects = N: live redirects (and datagram listeners) at most, 1 to 65536. */
int parse_max_redirects(struct loader *ld, const char *text)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = isdigit((unsigned char)*text) ? strtoul(text, &end, 10) : 0;
	if (!v || errno || *end || v > VSOCKMAP_MAX_REDIRECTS)
		return loader_error(ld, ld->line,
				    "max-redirects \"%s\" is not a number from 1 to %d", text,
				    VSOCKMAP_MAX_REDIRECTS);
	ld->daemon.max_redirects = (unsigned int)v;
	return 0;
}

int parse_max_redirects_per_uid(struct loader *ld, const char *text)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = isdigit((unsigned char)*text) ? strtoul(text, &end, 10) : ULONG_MAX;
	if (v == ULONG_MAX || errno || *end || v > VSOCKMAP_MAX_REDIRECTS)
		return loader_error(ld, ld->line,
				    "max-redirects-per-uid \"%s\" is not a number from 0 (no limit) "
				    "to %d",
				    text, VSOCKMAP_MAX_REDIRECTS);
	ld->daemon.max_redirects_per_uid = (unsigned int)v;
	return 0;
}

int parse_log_level(struct loader *ld, const char *text)
{
	const char *hint;
	size_t i;

	for (i = 0; i < N_LOG_LEVELS; i++) {
		if (!strcasecmp(text, log_level_names[i])) {
			ld->daemon.log_level = log_level_values[i];
			return 0;
		}
	}
	hint = address_closest_name(text, log_level_names, N_LOG_LEVELS);
	return loader_error(
	    ld, ld->line, "log-level \"%s\" is not one of err, warning, notice, info, debug%s%s%s",
	    text, hint ? " (did you mean \"" : "", hint ? hint : "", hint ? "\"?)" : "");
}

/* "0660": the control socket's file mode; no setuid, setgid or sticky bits. */
int parse_control_mode(struct loader *ld, const char *text)
{
	unsigned int v = 0;
	const char *p;

	for (p = text; *p >= '0' && *p <= '7'; p++)
		v = v > 07777 ? v : v * 8 + (unsigned int)(*p - '0');
	if (*p || p == text)
		return loader_error(ld, ld->line,
				    "control-mode \"%s\" is not an octal file mode (e.g. 0660)",
				    text);
	if (v > 0777)
		return loader_error(
		    ld, ld->line, "control-mode %s has bits beyond 0777 (setuid, setgid or sticky)",
		    text);
	ld->daemon.control_mode = v;
	ld->control_mode_line = ld->line;
	return 0;
}

/*
 * control-group = NAME or GID, and control-admin-group the same way: resolved now, so that a
 * typo fails at load time. group_name has CONFIG_NAME_MAX bytes.
 */
int parse_control_group(struct loader *ld, const char *name, const char *text, bool *has,
			gid_t *gid, char *group_name)
{
	long hint = sysconf(_SC_GETGR_R_SIZE_MAX);
	size_t size = hint > 0 ? (size_t)hint : 16384;
	struct group gr, *res = NULL;
	unsigned long v;
	char *buf, *end;
	int r;

	if (strlen(text) >= CONFIG_NAME_MAX)
		return loader_error(ld, ld->line, "%s \"%s\" is too long", name, text);
	if (isdigit((unsigned char)text[0])) {
		errno = 0;
		v = strtoul(text, &end, 10);
		if (*end || errno || v >= (gid_t)-1)
			return loader_error(ld, ld->line,
					    "%s \"%s\" is neither a group name nor a GID", name,
					    text);
		*gid = (gid_t)v;
		goto found;
	}
	for (;;) {
		buf = malloc(size);
		if (!buf)
			return loader_io_error(ld, "cannot load", ENOMEM);
		r = getgrnam_r(text, &gr, buf, size, &res);
		if (r != ERANGE || size >= 1 << 20)
			break;
		free(buf);
		size *= 2;
	}
	free(buf);
	if (!res) {
		if (r == 0 || r == ENOENT || r == ESRCH || r == EBADF || r == EPERM)
			return loader_error(ld, ld->line, "%s: unknown group \"%s\"", name, text);
		return loader_error(ld, ld->line, "%s: cannot look up group \"%s\": %s", name, text,
				    strerror(r));
	}
	*gid = gr.gr_gid;
found:
	*has = true;
	memcpy(group_name, text, strlen(text) + 1);
	return 0;
}

static const char *const datapath_names[] = {"auto", "kernel", "userspace"};
static const char *const fastpath_names[] = {"counted", "permanent"};

#define N_NAMES(a) (sizeof(a) / sizeof((a)[0]))

static int name_index(const char *const *names, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(name, names[i]))
			return (int)i;
	return -EINVAL;
}

const char *datapath_mode_name(enum datapath_mode mode)
{
	return datapath_names[mode];
}

int datapath_mode_parse(const char *name)
{
	return name_index(datapath_names, N_NAMES(datapath_names), name);
}

const char *fastpath_mode_name(enum fastpath_mode mode)
{
	return fastpath_names[mode];
}

int fastpath_mode_parse(const char *name)
{
	return name_index(fastpath_names, N_NAMES(fastpath_names), name);
}

int parse_datapath(struct loader *ld, const char *text)
{
	int mode = datapath_mode_parse(text);

	if (mode < 0)
		return loader_error(ld, ld->line,
				    "datapath \"%s\" is not one of auto, kernel, userspace", text);
	ld->daemon.datapath = (enum datapath_mode)mode;
	return 0;
}

int parse_fastpath(struct loader *ld, const char *text)
{
	int mode = fastpath_mode_parse(text);

	if (mode < 0)
		return loader_error(ld, ld->line,
				    "fastpath \"%s\" is not one of counted, permanent", text);
	ld->daemon.fastpath = (enum fastpath_mode)mode;
	return 0;
}

/* allow-uid = 0 1000 alice / allow-gid = wheel,100: names or numbers, space or comma. */
int parse_allow_list(struct loader *ld, const char *name, const char *value, uint32_t *ids,
		     unsigned int *n)
{
	const char *what = !strcmp(name, "allow-uid") ? "user" : "group";
	char msg[MSG_MAX], word[256];
	const char *p = value;
	size_t len;
	uint32_t id;
	unsigned int i;

	for (;;) {
		p += strspn(p, " \t,");
		if (!*p)
			break;
		len = strcspn(p, " \t,");
		if (len >= sizeof(word))
			return loader_error(ld, ld->line, "%s: \"%.32s...\" is too long", name, p);
		memcpy(word, p, len);
		word[len] = '\0';
		p += len;
		if (address_parse_owner(what, word, &id, msg, sizeof(msg)))
			return loader_error(ld, ld->line, "%s: %s", name, msg);
		for (i = 0; i < *n && ids[i] != id; i++)
			;
		if (i < *n)
			continue; /* listed twice: harmless */
		if (*n == CONFIG_ALLOW_MAX)
			return loader_error(ld, ld->line, "%s: more than %d entries (use a group)",
					    name, CONFIG_ALLOW_MAX);
		ids[(*n)++] = id;
	}
	if (!*n)
		return loader_error(ld, ld->line, "%s has no %s in it", name, what);
	return 0;
}
