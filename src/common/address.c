/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * socat-style address parsing: "KEYWORD:BODY[,name=value...]".
 *
 * Only the four kinds vsockmap can redirect are accepted. Parsing never touches a socket;
 * user= and group= names are resolved here, so a typo fails at config load time instead
 * of at the first accept().
 */
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/vm_sockets.h>

#include "address.h"
#include "address_internal.h"
#include "util.h"

#define KIND_BIT(kind)	(1u << (kind))
#define UNIX_FILE_KINDS (KIND_BIT(ADDRESS_UNIX_LISTEN) | KIND_BIT(ADDRESS_UNIX_RECV))
#define NET_LISTEN_KINDS (KIND_BIT(ADDRESS_VSOCK_LISTEN) | KIND_BIT(ADDRESS_TCP_LISTEN))
#define STREAM_LISTEN_KINDS (KIND_BIT(ADDRESS_UNIX_LISTEN) | NET_LISTEN_KINDS)
#define TARGET_KINDS                                                                               \
	(KIND_BIT(ADDRESS_UNIX_CONNECT) | KIND_BIT(ADDRESS_VSOCK_CONNECT) |                        \
	 KIND_BIT(ADDRESS_TCP_CONNECT))

#define BACKLOG_MAX   65535
#define MAX_CHILDREN_MAX 1000000
#define BUF_MAX	      (1 << 30) /* rcvbuf=, sndbuf= */

static const char *const kind_names[] = {
    [ADDRESS_UNIX_LISTEN] = "UNIX-LISTEN",
    [ADDRESS_UNIX_RECV] = "UNIX-RECV",
    [ADDRESS_UNIX_CONNECT] = "UNIX-CONNECT",
    [ADDRESS_VSOCK_CONNECT] = "VSOCK-CONNECT",
    [ADDRESS_TCP_CONNECT] = "TCP-CONNECT",
    [ADDRESS_VSOCK_LISTEN] = "VSOCK-LISTEN",
    [ADDRESS_TCP_LISTEN] = "TCP-LISTEN",
};

#define N_KINDS (sizeof(kind_names) / sizeof(kind_names[0]))

static const struct address_keyword {
	const char *name;
	enum address_kind kind;
} keywords[] = {
    {"UNIX-LISTEN", ADDRESS_UNIX_LISTEN},
    {"UNIX-L", ADDRESS_UNIX_LISTEN}, /* socat's abbreviation */
    {"UNIX-RECV", ADDRESS_UNIX_RECV},
    {"UNIX-CONNECT", ADDRESS_UNIX_CONNECT},
    {"UNIX-CLIENT", ADDRESS_UNIX_CONNECT},
    {"VSOCK-CONNECT", ADDRESS_VSOCK_CONNECT},
    {"TCP-CONNECT", ADDRESS_TCP_CONNECT},
    {"TCP", ADDRESS_TCP_CONNECT}, /* socat's short form */
    {"VSOCK-LISTEN", ADDRESS_VSOCK_LISTEN},
    {"VSOCK-L", ADDRESS_VSOCK_LISTEN},
    {"TCP-LISTEN", ADDRESS_TCP_LISTEN},
    {"TCP-L", ADDRESS_TCP_LISTEN},
    {"TCP4-LISTEN", ADDRESS_TCP_LISTEN}, /* IPv4 is TCP-LISTEN's default anyway */
};

#define N_KEYWORDS (sizeof(keywords) / sizeof(keywords[0]))

enum option_id {
	OPT_MODE,
	OPT_USER,
	OPT_GROUP,
	OPT_TYPE,
	OPT_CONNECT_TIMEOUT,
	OPT_BACKLOG,
	OPT_FORK,
	OPT_MAX_CHILDREN,
	OPT_REUSEADDR,
	OPT_BIND,
	OPT_RCVBUF,
	OPT_SNDBUF,
	OPT_UNLINK_EARLY,
	OPT_UNLINK_CLOSE,
};

static const struct address_option {
	const char *name;
	enum option_id id;
	unsigned int kinds; /* KIND_BIT()s the option applies to */
	bool takes_value;
} options[] = {
    {"mode", OPT_MODE, UNIX_FILE_KINDS, true},
    {"perm", OPT_MODE, UNIX_FILE_KINDS, true}, /* socat alias */
    {"user", OPT_USER, UNIX_FILE_KINDS, true},
    {"owner", OPT_USER, UNIX_FILE_KINDS, true}, /* socat alias */
    {"group", OPT_GROUP, UNIX_FILE_KINDS, true},
    {"type", OPT_TYPE, KIND_BIT(ADDRESS_VSOCK_CONNECT), true},
    {"connect-timeout", OPT_CONNECT_TIMEOUT, TARGET_KINDS, true},
    {"backlog", OPT_BACKLOG, STREAM_LISTEN_KINDS, true},
    /* socat needs fork for one child per connection; a config file's sections redirect each
     * one anyway, and on the command line it means what it means to socat. */
    {"fork", OPT_FORK, STREAM_LISTEN_KINDS, false},
    /* socat's name: at most N connections at once; the next ones wait in the backlog. */
    {"max-children", OPT_MAX_CHILDREN, STREAM_LISTEN_KINDS, true},
    {"max-connections", OPT_MAX_CHILDREN, STREAM_LISTEN_KINDS, true},
    {"reuseaddr", OPT_REUSEADDR, NET_LISTEN_KINDS, false},
    {"bind", OPT_BIND, KIND_BIT(ADDRESS_TCP_LISTEN), true},
    {"rcvbuf", OPT_RCVBUF, STREAM_LISTEN_KINDS | TARGET_KINDS, true},
    {"sndbuf", OPT_SNDBUF, STREAM_LISTEN_KINDS | TARGET_KINDS, true},
    {"unlink-early", OPT_UNLINK_EARLY, UNIX_FILE_KINDS, false},
    /* socat's default for a listener: the file goes at close. vsockmapd always does so. */
    {"unlink-close", OPT_UNLINK_CLOSE, UNIX_FILE_KINDS, false},
};

#define N_OPTIONS (sizeof(options) / sizeof(options[0]))

const char *address_kind_name(enum address_kind kind)
{
	return (unsigned int)kind < N_KINDS ? kind_names[kind] : "?";
}

bool address_is_listener(const struct address *addr)
{
	return addr && (addr->kind == ADDRESS_UNIX_RECV || address_is_stream_listener(addr));
}

bool address_is_stream_listener(const struct address *addr)
{
	return addr && (STREAM_LISTEN_KINDS & KIND_BIT(addr->kind));
}

bool address_has_file(const struct address *addr)
{
	return addr && (UNIX_FILE_KINDS & KIND_BIT(addr->kind));
}

bool address_is_target(const struct address *addr)
{
	return addr && (addr->kind == ADDRESS_UNIX_CONNECT || addr->kind == ADDRESS_VSOCK_CONNECT ||
			addr->kind == ADDRESS_TCP_CONNECT);
}

int address_check_path(const char *path, char *err, size_t errlen)
{
	size_t len = strlen(path), i;

	if (!len)
		return invalid_input(err, errlen, "path is empty");
	if (len >= ADDRESS_PATH_MAX)
		return invalid_input(err, errlen, "path is %zu bytes, longer than sun_path's %zu", len,
			       ADDRESS_PATH_MAX - 1);
	for (i = 0; i < len; i++)
		if (iscntrl((unsigned char)path[i]))
			return invalid_input(err, errlen, "path contains control character 0x%02x",
				       (unsigned char)path[i]);
	if (isspace((unsigned char)path[0]) || isspace((unsigned char)path[len - 1]))
		return invalid_input(err, errlen, "path \"%s\" starts or ends with whitespace", path);
	return 0;
}

static void kinds_list(unsigned int kinds, char *buf, size_t len)
{
	size_t k, used = 0;

	buf[0] = '\0';
	for (k = 0; k < N_KINDS; k++)
		if (kinds & KIND_BIT(k))
			used += (size_t)snprintf(buf + used, len > used ? len - used : 0, "%s%s",
						 used ? ", " : "", kind_names[k]);
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

/* bind=IP for TCP-LISTEN: a numeric IPv4 or IPv6 address, optionally in brackets. */
static int parse_bind(struct address *addr, char *value, char *err, size_t errlen)
{
	size_t n = strlen(value);

	if (value[0] == '[' && n > 2 && value[n - 1] == ']') {
		value[n - 1] = '\0';
		value++;
	}
	addr->inet_family = strchr(value, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(addr->inet_family, value, addr->inet_addr) != 1)
		return invalid_input(err, errlen,
			       "bind=%s is not a numeric IPv4 or IPv6 address (vsockmapd does not "
			       "resolve names)",
			       value);
	return 0;
}

static int apply_option(struct address *addr, const struct address_option *opt, char *value,
			char *err, size_t errlen)
{
	uint32_t id = 0;
	uint64_t v = 0;
	int r = 0;

	switch (opt->id) {
	case OPT_MODE:
		r = parse_mode(value, &addr->mode, err, errlen);
		addr->has_mode = true;
		break;
	case OPT_USER:
		r = address_parse_owner("user", value, &id, err, errlen);
		addr->user = (uid_t)id;
		addr->has_user = true;
		break;
	case OPT_GROUP:
		r = address_parse_owner("group", value, &id, err, errlen);
		addr->group = (gid_t)id;
		addr->has_group = true;
		break;
	case OPT_TYPE:
		if (!strcasecmp(value, "stream"))
			addr->sock_type = SOCK_STREAM;
		else if (!strcasecmp(value, "seqpacket"))
			addr->sock_type = SOCK_SEQPACKET;
		else
			r = invalid_input(err, errlen,
				    "type \"%s\" is not supported for %s (use stream or seqpacket)",
				    value, kind_names[addr->kind]);
		break;
	case OPT_CONNECT_TIMEOUT:
		r = address_parse_seconds("connect-timeout", value, false,
					  &addr->connect_timeout_ms, err, errlen);
		break;
	case OPT_BACKLOG:
		r = parse_number("backlog", value, 1, BACKLOG_MAX, &v, err, errlen);
		if (!r)
			addr->backlog = (int)v;
		break;
	case OPT_MAX_CHILDREN:
		r = parse_number(opt->name, value, 1, MAX_CHILDREN_MAX, &v, err, errlen);
		if (!r)
			addr->max_children = (unsigned int)v;
		break;
	case OPT_BIND:
		r = parse_bind(addr, value, err, errlen);
		break;
	case OPT_RCVBUF:
	case OPT_SNDBUF:
		r = parse_number(opt->name, value, 1, BUF_MAX, &v, err, errlen);
		if (!r && opt->id == OPT_RCVBUF)
			addr->rcvbuf = (int)v;
		else if (!r)
			addr->sndbuf = (int)v;
		break;
	case OPT_FORK:
	case OPT_REUSEADDR:
	case OPT_UNLINK_EARLY:
	case OPT_UNLINK_CLOSE:
		break; /* flags: parse_options() */
	}
	return r;
}

static int parse_options(struct address *addr, char *text, char *err, size_t errlen)
{
	const char *names[N_OPTIONS], *hint;
	const struct address_option *opt;
	unsigned int seen = 0;
	char *item, *next, *value, *name;
	char applies[128];
	size_t i;
	int r;

	for (item = text; item; item = next) {
		next = strchr(item, ',');
		if (next)
			*next++ = '\0';
		value = strchr(item, '=');
		if (value)
			*value++ = '\0';
		name = trim(item);
		if (!*name)
			return invalid_input(err, errlen, "empty option (stray ',')");

		opt = NULL;
		for (i = 0; i < N_OPTIONS; i++) {
			names[i] = options[i].name;
			if (!strcasecmp(name, options[i].name))
				opt = &options[i];
		}
		if (!opt) {
			hint = address_closest_name(name, names, N_OPTIONS);
			if (hint)
				return invalid_input(err, errlen,
					       "unknown option \"%s\" (did you mean \"%s\"?)", name,
					       hint);
			return invalid_input(err, errlen, "unknown option \"%s\"", name);
		}
		if (!(opt->kinds & KIND_BIT(addr->kind))) {
			kinds_list(opt->kinds, applies, sizeof(applies));
			return invalid_input(err, errlen,
				       "option \"%s\" does not apply to %s (only to %s)", opt->name,
				       kind_names[addr->kind], applies);
		}
		if (seen & (1u << opt->id)) {
			for (i = 0; options[i].id != opt->id; i++)
				;
			if (options[i].name == opt->name)
				return invalid_input(err, errlen, "duplicate option \"%s\"", opt->name);
			return invalid_input(err, errlen,
				       "duplicate option \"%s\" (given as its alias \"%s\")",
				       options[i].name, opt->name);
		}
		seen |= 1u << opt->id;

		if (!opt->takes_value) {
			if (value)
				return invalid_input(err, errlen, "option \"%s\" takes no value",
					       opt->name);
			addr->fork |= opt->id == OPT_FORK;
			addr->reuseaddr |= opt->id == OPT_REUSEADDR;
			addr->unlink_early |= opt->id == OPT_UNLINK_EARLY;
			continue;
		}
		value = value ? trim(value) : NULL;
		if (!value || !*value)
			return invalid_input(err, errlen, "option \"%s\" needs a value (%s=...)",
				       opt->name, opt->name);
		r = apply_option(addr, opt, value, err, errlen);
		if (r)
			return r;
	}
	return 0;
}

static int parse_vsock(struct address *addr, char *body, char *err, size_t errlen)
{
	char *port = strchr(body, ':');
	uint64_t v = 0;
	int r;

	if (!*body)
		return invalid_input(err, errlen, "missing CID:PORT after VSOCK-CONNECT:");
	if (!port)
		return invalid_input(err, errlen, "missing port: expected VSOCK-CONNECT:CID:PORT");
	*port++ = '\0';
	if (!*body)
		return invalid_input(err, errlen, "missing CID: expected VSOCK-CONNECT:CID:PORT");
	if (!*port)
		return invalid_input(err, errlen, "missing port: expected VSOCK-CONNECT:CID:PORT");

	r = parse_number("CID", body, 0, UINT32_MAX, &v, err, errlen);
	if (r)
		return r;
	if (v == VMADDR_CID_ANY)
		return invalid_input(err, errlen,
			       "CID %s is VMADDR_CID_ANY, which only makes sense for bind(); "
			       "a connect target needs a real CID (2 is the host)",
			       body);
	addr->cid = (uint32_t)v;

	r = parse_number("port", port, 0, UINT32_MAX, &v, err, errlen);
	if (r)
		return r;
	if (v == VMADDR_PORT_ANY)
		return invalid_input(err, errlen,
			       "port %s is VMADDR_PORT_ANY, which only makes sense for bind(); "
			       "a connect target needs a real port",
			       port);
	addr->port = (uint32_t)v;
	return 0;
}

/* HOST:PORT with a numeric IPv4 host, or [IPv6]:PORT. Names are not resolved. */
static int parse_tcp(struct address *addr, char *body, char *err, size_t errlen)
{
	char *host = body, *port;
	uint64_t v = 0;
	int r;

	if (*host == '[') {
		port = strchr(++host, ']');
		if (!port || port[1] != ':')
			return invalid_input(err, errlen,
				       "expected TCP-CONNECT:[IPV6]:PORT, e.g. TCP-CONNECT:[::1]:80");
		*port = '\0';
		port += 2;
		addr->inet_family = AF_INET6;
	} else {
		port = strrchr(host, ':');
		if (!port)
			return invalid_input(err, errlen,
				       "missing port: expected TCP-CONNECT:HOST:PORT");
		*port++ = '\0';
		addr->inet_family = AF_INET;
	}
	if (!*host)
		return invalid_input(err, errlen, "missing host: expected TCP-CONNECT:HOST:PORT");
	if (inet_pton(addr->inet_family, host, addr->inet_addr) != 1)
		return invalid_input(err, errlen,
			       "host \"%s\" is not a numeric %s address (vsockmapd does not "
			       "resolve names)",
			       host, addr->inet_family == AF_INET ? "IPv4" : "IPv6");
	r = parse_number("port", port, 1, 65535, &v, err, errlen);
	if (!r)
		addr->port = (uint32_t)v;
	return r;
}

/* VSOCK-LISTEN:PORT and TCP-LISTEN:PORT. */
static int parse_listen_port(struct address *addr, const char *body, char *err, size_t errlen)
{
	bool vsock = addr->kind == ADDRESS_VSOCK_LISTEN;
	uint64_t v = 0;
	int r;

	if (!*body)
		return invalid_input(err, errlen, "missing port: expected %s:PORT",
			       kind_names[addr->kind]);
	r = parse_number("port", body, 1, vsock ? UINT32_MAX - 1 : 65535, &v, err, errlen);
	if (!r)
		addr->port = (uint32_t)v;
	addr->inet_family = AF_INET; /* TCP-LISTEN: any IPv4 address unless bind= says */
	return r;
}

static int parse_copy(char *text, struct address *addr, char *err, size_t errlen)
{
	const char *names[N_KINDS], *hint;
	const struct address_keyword *kw = NULL;
	char *body, *opts, supported[128];
	size_t kwlen, i;
	int r;

	kwlen = strcspn(text, ":,");
	if (!kwlen)
		return invalid_input(err, errlen, "missing address type before \"%s\"", text);
	for (i = 0; i < N_KEYWORDS; i++)
		if (strlen(keywords[i].name) == kwlen &&
		    !strncasecmp(text, keywords[i].name, kwlen))
			kw = &keywords[i];
	if (!kw) {
		text[kwlen] = '\0';
		for (i = 0; i < N_KINDS; i++)
			names[i] = kind_names[i];
		kinds_list(~0u, supported, sizeof(supported));
		hint = address_closest_name(text, names, N_KINDS);
		if (hint)
			return invalid_input(
			    err, errlen,
			    "unknown address type \"%s\" (did you mean \"%s\"? supported: %s)",
			    text, hint, supported);
		return invalid_input(err, errlen, "unknown address type \"%s\" (supported: %s)", text,
			       supported);
	}
	addr->kind = kw->kind;
	addr->sock_type = kw->kind == ADDRESS_UNIX_RECV ? SOCK_DGRAM : SOCK_STREAM;

	if (text[kwlen] != ':') {
		if (kw->kind == ADDRESS_VSOCK_CONNECT)
			return invalid_input(err, errlen,
				       "missing CID:PORT: expected VSOCK-CONNECT:CID:PORT");
		if (kw->kind == ADDRESS_TCP_CONNECT)
			return invalid_input(err, errlen,
				       "missing HOST:PORT: expected TCP-CONNECT:HOST:PORT");
		if (!address_has_file(addr))
			return invalid_input(err, errlen, "missing port: expected %s:PORT",
				       kind_names[kw->kind]);
		return invalid_input(err, errlen, "missing path: expected %s:PATH", kind_names[kw->kind]);
	}
	body = text + kwlen + 1;
	opts = strchr(body, ',');
	if (opts)
		*opts++ = '\0';

	if (kw->kind == ADDRESS_VSOCK_CONNECT) {
		r = parse_vsock(addr, body, err, errlen);
	} else if (kw->kind == ADDRESS_TCP_CONNECT) {
		r = parse_tcp(addr, body, err, errlen);
	} else if (kw->kind == ADDRESS_VSOCK_LISTEN || kw->kind == ADDRESS_TCP_LISTEN) {
		r = parse_listen_port(addr, body, err, errlen);
	} else if (!*body) {
		r = invalid_input(err, errlen, "missing path after %s:", kind_names[kw->kind]);
	} else {
		r = address_check_path(body, err, errlen);
		if (!r)
			memcpy(addr->path, body, strlen(body) + 1);
	}
	if (!r && opts)
		r = parse_options(addr, opts, err, errlen);
	return r;
}

int address_parse(const char *text, struct address *out, char *err, size_t errlen)
{
	struct address addr = {0};
	char *copy;
	int r;

	if (!text || !*text)
		return invalid_input(err, errlen, "empty address");
	copy = strdup(text);
	if (!copy) {
		invalid_input(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = parse_copy(copy, &addr, err, errlen);
	free(copy);
	if (!r)
		*out = addr;
	return r;
}

int address_format(const struct address *addr, char *buf, size_t len)
{
	int n;

	if (!addr || (unsigned int)addr->kind >= N_KINDS)
		return -EINVAL;
	if (addr->kind == ADDRESS_VSOCK_CONNECT) {
		n = snprintf(buf, len, "VSOCK-CONNECT:%u:%u%s", addr->cid, addr->port,
			     addr->sock_type == SOCK_SEQPACKET ? ",type=seqpacket" : "");
	} else if (addr->kind == ADDRESS_VSOCK_LISTEN) {
		n = snprintf(buf, len, "VSOCK-LISTEN:%u", addr->port);
	} else if (addr->kind == ADDRESS_TCP_LISTEN) {
		static const unsigned char any[16];
		char ip[INET6_ADDRSTRLEN];

		if (!inet_ntop(addr->inet_family, addr->inet_addr, ip, sizeof(ip)))
			return -EINVAL;
		if (addr->inet_family == AF_INET6)
			n = snprintf(buf, len, "TCP-LISTEN:%u,bind=[%s]", addr->port, ip);
		else if (memcmp(addr->inet_addr, any, 4))
			n = snprintf(buf, len, "TCP-LISTEN:%u,bind=%s", addr->port, ip);
		else
			n = snprintf(buf, len, "TCP-LISTEN:%u", addr->port);
	} else if (addr->kind == ADDRESS_TCP_CONNECT) {
		char ip[INET6_ADDRSTRLEN];

		if (!inet_ntop(addr->inet_family, addr->inet_addr, ip, sizeof(ip)))
			return -EINVAL;
		n = snprintf(buf, len, addr->inet_family == AF_INET6 ? "TCP-CONNECT:[%s]:%u" :
								       "TCP-CONNECT:%s:%u",
			     ip, addr->port);
	} else {
		n = snprintf(buf, len, "%s:%s", kind_names[addr->kind], addr->path);
	}
	if (n < 0)
		return -EINVAL;
	return (size_t)n < len ? 0 : -ENOSPC;
}

bool address_equal(const struct address *a, const struct address *b)
{
	return a->kind == b->kind && !strcmp(a->path, b->path) && a->cid == b->cid &&
	       a->port == b->port && a->inet_family == b->inet_family &&
	       !memcmp(a->inet_addr, b->inet_addr, sizeof(a->inet_addr)) &&
	       a->sock_type == b->sock_type && a->has_mode == b->has_mode &&
	       (!a->has_mode || a->mode == b->mode) && a->has_user == b->has_user &&
	       (!a->has_user || a->user == b->user) && a->has_group == b->has_group &&
	       (!a->has_group || a->group == b->group) &&
	       a->connect_timeout_ms == b->connect_timeout_ms && a->backlog == b->backlog &&
	       a->reuseaddr == b->reuseaddr && a->unlink_early == b->unlink_early &&
	       a->rcvbuf == b->rcvbuf && a->sndbuf == b->sndbuf;
}
