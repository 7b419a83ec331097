/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * vsockmap.conf loader on top of libinih.
 *
 * inih (r55 as shipped by Debian 12) neither passes line numbers to the handler nor reports
 * empty sections, so every line goes through config_reader() first: it counts lines, tracks
 * section headers (and so sees [empty] ones), rejects what inih would reject, and
 * normalises each line before inih splits it. Comments start with ';' or '#' at the start
 * of a line or after whitespace. The first error stops the parse; config_load() reports
 * exactly one.
 */
#include <ctype.h>
#include <errno.h>
#include <grp.h>
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

static const char *const daemon_keys[] = {
    "control",	       "control-mode",	"control-group", "control-admin-group",
    "connect-timeout", "sndbuf",	"drain-timeout", "log-level",
    "idle-timeout",    "max-redirects", "max-redirects-per-uid", "datapath",
    "fastpath",
};

static const char *const redirect_keys[] = {"listen", "connect", "allow-uid", "allow-gid"};

_Static_assert(sizeof(daemon_keys) / sizeof(daemon_keys[0]) == N_DAEMON_KEYS, "one name per key");
_Static_assert(sizeof(redirect_keys) / sizeof(redirect_keys[0]) == N_REDIRECT_KEYS, "one name per key");

int loader_error(struct loader *ld, unsigned int line, const char *fmt, ...)
{
	char msg[MSG_MAX];
	va_list ap;

	if (ld->error)
		return ld->error;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	make_printable(msg);
	if (ld->err && ld->errlen) {
		if (line)
			snprintf(ld->err, ld->errlen, "%s:%u: %s", ld->path, line, msg);
		else
			snprintf(ld->err, ld->errlen, "%s: %s", ld->path, msg);
	}
	ld->error = -EINVAL;
	ld->error_line = line;
	return ld->error;
}

int loader_io_error(struct loader *ld, const char *what, int errnum)
{
	if (ld->err && ld->errlen)
		snprintf(ld->err, ld->errlen, "%s: %s: %s", ld->path, what, strerror(errnum));
	ld->error = -errnum;
	return ld->error;
}

static int check_key(struct loader *ld, const char *name, const char *const *keys, size_t n)
{
	const char *hint;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!strcmp(name, keys[i])) {
			if (ld->key_lines[i])
				return loader_error(ld, ld->line,
						    "duplicate key \"%s\" (first set at line %u)",
						    name, ld->key_lines[i]);
			ld->key_lines[i] = ld->line;
			return (int)i;
		}
	}
	hint = address_closest_name(name, keys, n);
	if (hint)
		return loader_error(ld, ld->line, "unknown key \"%s\" (did you mean \"%s\"?)", name,
				    hint);
	if (ld->section == SECTION_DAEMON)
		return loader_error(ld, ld->line,
				    "unknown key \"%s\" (valid keys in [daemon]: control, "
				    "control-mode, control-group, control-admin-group, "
				    "connect-timeout, sndbuf, "
				    "drain-timeout, log-level, idle-timeout, max-redirects, "
				    "max-redirects-per-uid, datapath, fastpath)",
				    name);
	return loader_error(ld, ld->line,
			    "unknown key \"%s\" (valid keys in a redirect section: "
			    "listen, connect, allow-uid, allow-gid)",
			    name);
}

static int daemon_key(struct loader *ld, const char *name, const char *value)
{
	char msg[MSG_MAX];
	int key, r = 0;

	key = check_key(ld, name, daemon_keys, N_DAEMON_KEYS);
	if (key < 0)
		return key;
	switch ((enum daemon_key)key) {
	case KEY_CONTROL:
		r = address_check_path(value, msg, sizeof(msg));
		if (r)
			return loader_error(ld, ld->line, "control: %s", msg);
		memcpy(ld->daemon.control_path, value, strlen(value) + 1);
		ld->control_line = ld->line;
		break;
	case KEY_CONTROL_MODE:
		return parse_control_mode(ld, value);
	case KEY_CONTROL_GROUP:
		return parse_control_group(ld, name, value, &ld->daemon.has_control_group,
					   &ld->daemon.control_group,
					   ld->daemon.control_group_name);
	case KEY_CONTROL_ADMIN_GROUP:
		return parse_control_group(ld, name, value, &ld->daemon.has_control_admin_group,
					   &ld->daemon.control_admin_group,
					   ld->daemon.control_admin_group_name);
	case KEY_CONNECT_TIMEOUT:
		r = address_parse_seconds(name, value, false, &ld->daemon.connect_timeout_ms, msg,
					  sizeof(msg));
		break;
	case KEY_DRAIN_TIMEOUT:
		r = address_parse_seconds(name, value, true, &ld->daemon.drain_timeout_ms, msg,
					  sizeof(msg));
		break;
	case KEY_MAX_REDIRECTS:
		return parse_max_redirects(ld, value);
	case KEY_MAX_REDIRECTS_PER_UID:
		return parse_max_redirects_per_uid(ld, value);
	case KEY_IDLE_TIMEOUT:
		r = address_parse_seconds(name, value, true, &ld->daemon.idle_timeout_ms, msg,
					  sizeof(msg));
		break;
	case KEY_SNDBUF:
		return parse_size(ld, value, &ld->daemon.sndbuf);
	case KEY_LOG_LEVEL:
		return parse_log_level(ld, value);
	case KEY_DATAPATH:
		return parse_datapath(ld, value);
	case KEY_FASTPATH:
		return parse_fastpath(ld, value);
	}
	return r ? loader_error(ld, ld->line, "%s", msg) : 0;
}

static int redirect_key(struct loader *ld, const char *name, const char *value)
{
	struct redirect_config *rd = &ld->redirects[ld->n_redirects - 1];
	char msg[MSG_MAX], text[ADDRESS_PATH_MAX + 32];
	struct address addr;
	size_t i;
	int key;

	key = check_key(ld, name, redirect_keys, N_REDIRECT_KEYS);
	if (key < 0)
		return key;
	if (key == KEY_ALLOW_UID)
		return parse_allow_list(ld, name, value, rd->allow.uids, &rd->allow.n_uids);
	if (key == KEY_ALLOW_GID)
		return parse_allow_list(ld, name, value, rd->allow.gids, &rd->allow.n_gids);
	if (address_parse(value, &addr, msg, sizeof(msg)))
		return loader_error(ld, ld->line, "%s: %s", name, msg);
	address_format(&addr, text, sizeof(text));

	if (key == KEY_CONNECT) {
		if (!address_is_target(&addr))
			return loader_error(ld, ld->line,
					    "connect: %s is a listen address; connect needs "
					    "UNIX-CONNECT, VSOCK-CONNECT or TCP-CONNECT",
					    text);
		rd->connect = addr;
		return 0;
	}
	if (!address_is_listener(&addr))
		return loader_error(
		    ld, ld->line,
		    "listen: %s is a connect address; listen needs UNIX-LISTEN, UNIX-RECV, "
		    "VSOCK-LISTEN or TCP-LISTEN",
		    text);
	/* Two binds on one path: the second would unlink the first one's socket. */
	for (i = 0; i + 1 < ld->n_redirects; i++) {
		const struct address *other = &ld->redirects[i].listen;

		if (address_has_file(&addr) && address_has_file(other) &&
		    !strcmp(other->path, addr.path))
			return loader_error(ld, ld->line,
					    "listen path %s is already used by [%s] at line %u",
					    addr.path, ld->redirects[i].name, ld->listen_lines[i]);
		/* The same port twice: the second bind would fail at start. */
		if (!address_has_file(&addr) && other->kind == addr.kind &&
		    other->port == addr.port)
			return loader_error(ld, ld->line,
					    "listen: %s port %u is already used by [%s] at line %u",
					    address_kind_name(addr.kind), addr.port,
					    ld->redirects[i].name, ld->listen_lines[i]);
	}
	rd->listen = addr;
	ld->listen_lines[ld->n_redirects - 1] = ld->line;
	return 0;
}

static int config_handler(void *user, const char *section, const char *name, const char *value)
{
	struct loader *ld = user;

	(void)section; /* config_reader() tracks sections, with their line numbers */
	if (ld->error)
		return 0;
	if (ld->section == SECTION_NONE)
		loader_error(ld, ld->line,
			     "key \"%s\" is outside any section "
			     "(put it under [daemon] or a [NAME] redirect section)",
			     name);
	else if (!*value)
		loader_error(ld, ld->line, "key \"%s\" has an empty value", name);
	else if (ld->section == SECTION_DAEMON)
		daemon_key(ld, name, value);
	else
		redirect_key(ld, name, value);
	return !ld->error;
}

/* A redirect is complete when its section ends: both keys, and not connected to itself. */
/* [daemon] keys that depend on each other. */
static int close_daemon_section(struct loader *ld)
{
	if (ld->daemon.fastpath == FASTPATH_PERMANENT && ld->daemon.idle_timeout_ms)
		return loader_error(
		    ld, ld->key_lines[KEY_IDLE_TIMEOUT],
		    "idle-timeout needs the byte counters, which fastpath=permanent "
		    "drops; use one or the other");
	return 0;
}

static int close_section(struct loader *ld)
{
	const struct redirect_config *rd;
	unsigned int allow_line;
	bool has_allow;

	if (ld->section == SECTION_DAEMON)
		return close_daemon_section(ld);
	if (ld->section != SECTION_REDIRECT)
		return 0;
	rd = &ld->redirects[ld->n_redirects - 1];
	if (!ld->key_lines[KEY_LISTEN])
		return loader_error(ld, ld->section_line, "[%s] has no listen= address", rd->name);
	if (!ld->key_lines[KEY_CONNECT])
		return loader_error(ld, ld->section_line, "[%s] has no connect= address", rd->name);
	has_allow = rd->allow.n_uids || rd->allow.n_gids;
	allow_line = ld->key_lines[KEY_ALLOW_UID] ?: ld->key_lines[KEY_ALLOW_GID];
	if (has_allow && rd->listen.kind == ADDRESS_UNIX_RECV)
		return loader_error(
		    ld, allow_line,
		    "allow-uid and allow-gid need a UNIX-LISTEN address (a datagram "
		    "has no connected peer to check); limit %s with mode=, user= "
		    "and group=",
		    rd->listen.path);
	if (has_allow && rd->listen.kind != ADDRESS_UNIX_LISTEN)
		return loader_error(ld, allow_line,
				    "allow-uid and allow-gid need a UNIX-LISTEN address: a %s peer "
				    "has no credentials the kernel vouches for",
				    address_kind_name(rd->listen.kind));
	if (rd->connect.kind == ADDRESS_UNIX_CONNECT && !strcmp(rd->connect.path, rd->listen.path))
		return loader_error(ld, ld->key_lines[KEY_CONNECT],
				    "connect path %s is this redirect's own listen path",
				    rd->listen.path);
	return 0;
}

static int add_redirect(struct loader *ld, const char *name, size_t len)
{
	struct redirect_config *rds;
	unsigned int *lines;
	size_t cap, i;

	for (i = 0; i < ld->n_redirects; i++)
		if (strlen(ld->redirects[i].name) == len &&
		    !memcmp(ld->redirects[i].name, name, len))
			return loader_error(ld, ld->line,
					    "duplicate section [%.*s] (first defined at line %u)",
					    (int)len, name, ld->redirects[i].line);
	if (ld->n_redirects == ld->capacity) {
		cap = ld->capacity ? ld->capacity * 2 : 8;
		rds = realloc(ld->redirects, cap * sizeof(*rds));
		if (rds)
			ld->redirects = rds;
		lines = realloc(ld->listen_lines, cap * sizeof(*lines));
		if (lines)
			ld->listen_lines = lines;
		if (!rds || !lines)
			return loader_io_error(ld, "cannot load", ENOMEM);
		ld->capacity = cap;
	}
	memset(&ld->redirects[ld->n_redirects], 0, sizeof(*ld->redirects));
	memcpy(ld->redirects[ld->n_redirects].name, name, len);
	ld->redirects[ld->n_redirects].line = ld->line;
	ld->listen_lines[ld->n_redirects] = 0;
	ld->n_redirects++;
	return 0;
}

static int open_section(struct loader *ld, const char *header)
{
	const char *name = header + 1, *end = strchr(header, ']');
	size_t len, i;
	int r;

	r = close_section(ld);
	if (r)
		return r;
	if (!end)
		return loader_error(ld, ld->line, "section header \"%s\" has no closing ']'",
				    header);
	if (end[1])
		return loader_error(ld, ld->line, "unexpected text \"%s\" after section header",
				    end + 1);
	len = (size_t)(end - name);
	if (len == strlen(DAEMON_SECTION) && !strncasecmp(name, DAEMON_SECTION, len)) {
		if (strncmp(name, DAEMON_SECTION, len))
			return loader_error(ld, ld->line, "section [%.*s] must be spelled [daemon]",
					    (int)len, name);
		if (ld->daemon_line)
			return loader_error(ld, ld->line,
					    "duplicate section [daemon] (first defined at line %u)",
					    ld->daemon_line);
		ld->daemon_line = ld->line;
		ld->section = SECTION_DAEMON;
	} else {
		for (i = 0; i < len; i++)
			if (!isalnum((unsigned char)name[i]) && !strchr("_.-", name[i]))
				break;
		if (!len || len >= CONFIG_NAME_MAX || i < len)
			return loader_error(ld, ld->line,
					    "invalid section name \"%.*s\": use 1 to %d "
					    "characters from A-Z a-z 0-9 _ . -",
					    (int)len, name, CONFIG_NAME_MAX - 1);
		r = add_redirect(ld, name, len);
		if (r)
			return r;
		ld->section = SECTION_REDIRECT;
	}
	ld->section_line = ld->line;
	memset(ld->key_lines, 0, sizeof(ld->key_lines));
	return 0;
}

/*
 * inih's line source. Leading whitespace is stripped because inih would read an indented
 * line as the continuation of the previous value (INI_ALLOW_MULTILINE); comments are
 * stripped so that only the meaningful part counts against inih's fixed line buffer.
 */
static char *config_reader(char *str, int num, void *stream)
{
	struct loader *ld = stream;
	char *s, *end, *c;
	ssize_t n;

	if (ld->error)
		return NULL;
	errno = 0;
	n = getline(&ld->buf, &ld->buf_size, ld->file);
	if (n < 0) {
		if (ferror(ld->file))
			loader_io_error(ld, "cannot read", errno ? errno : EIO);
		return NULL;
	}
	ld->line++;
	if (strlen(ld->buf) != (size_t)n) {
		loader_error(ld, ld->line, "line contains a NUL byte");
		return NULL;
	}
	s = ld->buf;
	if (ld->line == 1 && !strncmp(s, "\xef\xbb\xbf", 3))
		s += 3;
	while (isspace((unsigned char)*s))
		s++;
	if (!*s || *s == ';' || *s == '#') {
		str[0] = '\0';
		return str;
	}
	for (c = s + 1; *c; c++) {
		if ((*c == ';' || *c == '#') && isspace((unsigned char)c[-1])) {
			*c = '\0';
			break;
		}
	}
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';

	if (*s == '[') {
		if (open_section(ld, s))
			return NULL;
	} else if (s[strcspn(s, "=:")] != '=') {
		loader_error(ld, ld->line, "expected \"KEY = VALUE\" or \"[SECTION]\", got \"%s\"",
			     s);
		return NULL;
	} else if (*s == '=') {
		loader_error(ld, ld->line, "missing key name before '='");
		return NULL;
	}
	if (end - s >= num) {
		loader_error(ld, ld->line,
			     "line is %zu bytes long without comments, the limit is %d",
			     (size_t)(end - s), num - 1);
		return NULL;
	}
	memcpy(str, s, (size_t)(end - s) + 1);
	return str;
}

static int finish(struct loader *ld)
{
	const char *group;
	size_t i;
	int r;

	r = close_section(ld);
	if (r)
		return r;
	for (i = 0; i < ld->n_redirects; i++)
		if (!strcmp(ld->redirects[i].listen.path, ld->daemon.control_path))
			return loader_error(ld, ld->listen_lines[i],
					    "listen path %s is also the daemon's control socket",
					    ld->daemon.control_path);
	/*
	 * connect() on a unix socket file needs write permission on it. The file's group is
	 * control-group, else control-admin-group (control_commands.c, access_policy()).
	 */
	group = ld->daemon.has_control_group	     ? ld->daemon.control_group_name
		: ld->daemon.has_control_admin_group ? ld->daemon.control_admin_group_name
						     : NULL;
	if (group && !ld->control_mode_line)
		ld->daemon.control_mode = CONFIG_DEFAULT_CONTROL_GROUP_MODE;
	if (group && !(ld->daemon.control_mode & 0020))
		return loader_error(ld, ld->control_mode_line,
				    "control-mode %04o does not let group %s connect (connecting "
				    "needs write permission: use 0660)",
				    ld->daemon.control_mode, group);
	return 0;
}

void config_daemon_defaults(struct daemon_config *d)
{
	memset(d, 0, sizeof(*d));
	memcpy(d->control_path, CONFIG_DEFAULT_CONTROL_PATH, sizeof(CONFIG_DEFAULT_CONTROL_PATH));
	d->control_mode = CONFIG_DEFAULT_CONTROL_MODE;
	d->connect_timeout_ms = DEFAULT_CONNECT_MS;
	d->sndbuf = DEFAULT_SNDBUF;
	d->drain_timeout_ms = DEFAULT_DRAIN_MS;
	d->max_redirects = VSOCKMAP_MAX_REDIRECTS;
	d->max_redirects_per_uid = DEFAULT_MAX_REDIRECTS_PER_UID;
	d->log_level = LOG_INFO;
}

int config_load(const char *path, struct config *out, char *err, size_t errlen)
{
	struct loader ld = {.path = path, .err = err, .errlen = errlen};
	struct stat st;
	FILE *file;
	int r;

	if (strlen(path) >= sizeof(out->path))
		return loader_io_error(&ld, "cannot open", ENAMETOOLONG);
	file = fopen(path, "re");
	if (!file)
		return loader_io_error(&ld, "cannot open", errno);
	/* fopen() happily opens a directory; only the first read would fail, with EISDIR. */
	r = fstat(fileno(file), &st) < 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
	if (r) {
		fclose(file);
		return loader_io_error(&ld, "cannot open", r);
	}
	r = config_load_stream(file, path, out, err, errlen);
	fclose(file);
	return r;
}

int config_load_stream(FILE *file, const char *path, struct config *out, char *err, size_t errlen)
{
	struct loader ld = {.path = path, .file = file, .err = err, .errlen = errlen};
	int r;

	if (strlen(path) >= sizeof(out->path))
		return loader_io_error(&ld, "cannot open", ENAMETOOLONG);
	config_daemon_defaults(&ld.daemon);

	r = ini_parse_stream(config_reader, &ld, config_handler, &ld);
	/* config_reader() catches what inih rejects; this is a fallback, not the main path. */
	if (r > 0 && (!ld.error || (unsigned int)r < ld.error_line)) {
		ld.error = 0;
		loader_error(&ld, (unsigned int)r, "syntax error");
	} else if (r < 0 && !ld.error) {
		loader_io_error(&ld, "cannot parse", ENOMEM);
	}
	if (!ld.error)
		finish(&ld);

	free(ld.buf);
	free(ld.listen_lines);
	if (ld.error) {
		free(ld.redirects);
		return ld.error;
	}
	memset(out, 0, sizeof(*out));
	memcpy(out->path, path, strlen(path) + 1);
	out->daemon = ld.daemon;
	out->redirects = ld.redirects;
	out->n_redirects = ld.n_redirects;
	return 0;
}

void config_free(struct config *cfg)
{
	if (!cfg)
		return;
	free(cfg->redirects);
	cfg->redirects = NULL;
	cfg->n_redirects = 0;
}
