// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: socat-style addresses (address_parse) and the seconds parser. A parsed
 * address must format back into text that parses to the same socket.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "address.h"

static void check_round_trip(const struct address *a)
{
	char text[ADDRESS_PATH_MAX + 64], err[256];
	struct address b;

	if (address_format(a, text, sizeof(text)) < 0)
		abort();
	if (address_parse(text, &b, err, sizeof(err)) < 0)
		abort();
	if (a->kind != b.kind || a->sock_type != b.sock_type || strcmp(a->path, b.path) ||
	    a->cid != b.cid || a->port != b.port || a->inet_family != b.inet_family ||
	    memcmp(a->inet_addr, b.inet_addr, sizeof(a->inet_addr)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256], *text;
	struct address a;
	unsigned int ms;

	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	if (address_parse(text, &a, err, sizeof(err)) == 0)
		check_round_trip(&a);
	else if (!memchr(err, '\0', sizeof(err)) || strchr(err, '\n'))
		abort(); /* the message must be one terminated line */
	(void)address_parse_seconds("fuzz", text, true, &ms, err, sizeof(err));
	free(text);
	return 0;
}
