// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: the config file parser (libinih plus our checks), read from memory. A
 * rejected file must get one "fuzz.conf:..." line that names the cause.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#define NAME "fuzz.conf"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config cfg;
	char err[512];
	FILE *f;
	int r;

	/* fmemopen() wants a buffer it may call its own; a zero-size one is fine. */
	f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	err[0] = '\0';
	r = config_load_stream(f, NAME, &cfg, err, sizeof(err));
	fclose(f);
	if (r == 0) {
		if (strcmp(cfg.path, NAME))
			abort();
		config_free(&cfg);
		return 0;
	}
	if (!memchr(err, '\0', sizeof(err)) || strchr(err, '\n') ||
	    strncmp(err, NAME ":", strlen(NAME ":")))
		abort();
	return 0;
}
