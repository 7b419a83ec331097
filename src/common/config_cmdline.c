// SPDX-License-Identifier: GPL-2.0-only
/* socat's command line: "vsockmapd UNIX-LISTEN:/run/x.sock,fork VSOCK-CONNECT:2:1234". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>

#include "config.h"
#include "util.h"

/* socat address types vsockmapd does not take, and what to do instead. */
static const struct {
	const char *prefix;
	const char *instead;
} unsupported[] = {
    {"TCP6-LISTEN", "use TCP-LISTEN:PORT,bind=[::]"},
    {"VSOCK-RECV", "vsock has no datagrams here; use VSOCK-LISTEN (stream)"},
    {"UNIX-RECVFROM", "use UNIX-RECV (datagrams to one target)"},
    {"UNIX-SENDTO", "vsockmapd connects to stream sockets: UNIX-CONNECT, VSOCK-CONNECT, "
		    "TCP-CONNECT"},
    {"UNIX-CLIENT", "use UNIX-CONNECT"},
    {"TCP4:", "use TCP-CONNECT:HOST:PORT"},
    {"TCP6:", "use TCP-CONNECT:[HOST]:PORT"},
    {"EXEC", "vsockmapd joins sockets only; keep socat to run a program"},
    {"SYSTEM", "vsockmapd joins sockets only; keep socat to run a program"},
    {"STDIO", "vsockmapd joins sockets only; keep socat for standard input and output"},
    {"-", "vsockmapd joins sockets only; keep socat for standard input and output"},
    {"OPENSSL", "vsockmapd does not speak TLS; keep socat for it"},
};

static int parse_one(const char *text, struct address *addr, char *err, size_t errlen)
{
	char why[320];
	size_t i, n;

	for (i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++) {
		n = strlen(unsupported[i].prefix);
		if (!strncasecmp(text, unsupported[i].prefix, n) &&
		    (unsupported[i].prefix[n - 1] == ':' || !text[n] || strchr(":,", text[n])))
			return invalid_input(err, errlen, "%s: not supported: %s", text,
				       unsupported[i].instead);
	}
	if (address_parse(text, addr, why, sizeof(why)))
		return invalid_input(err, errlen, "%s: %s", text, why);
	return 0;
}

int config_from_addresses(const char *a, const char *b, struct config *out, char *err,
			  size_t errlen)
{
	struct address first = {}, second = {};
	struct redirect_config *rc;
	const struct address *listen, *connect;
	int r;

	r = parse_one(a, &first, err, errlen);
	if (r)
		return r;
	r = parse_one(b, &second, err, errlen);
	if (r)
		return r;
	/* socat takes the two in either order. */
	if (address_is_listener(&first) && address_is_target(&second)) {
		listen = &first;
		connect = &second;
	} else if (address_is_listener(&second) && address_is_target(&first)) {
		listen = &second;
		connect = &first;
	} else {
		return invalid_input(err, errlen,
			       "%s and %s: one address must listen (UNIX-LISTEN, UNIX-RECV, "
			       "VSOCK-LISTEN, TCP-LISTEN) and the other connect (UNIX-CONNECT, "
			       "VSOCK-CONNECT, TCP-CONNECT)",
			       a, b);
	}
	rc = calloc(1, sizeof(*rc));
	if (!rc) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	snprintf(rc->name, sizeof(rc->name), "cmdline");
	rc->listen = *listen;
	rc->connect = *connect;
	rc->once = address_is_stream_listener(listen) && !listen->fork;
	memset(out, 0, sizeof(*out));
	config_daemon_defaults(&out->daemon);
	out->daemon.control_path[0] = '\0'; /* none unless --control */
	out->daemon.log_level = LOG_WARNING; /* like socat: errors and warnings; -d for more */
	out->redirects = rc;
	out->n_redirects = 1;
	return 0;
}
