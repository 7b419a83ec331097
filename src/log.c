// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static const char *log_ident = "vsockmap";
static int log_max_level = LOG_INFO;
static bool log_to_journal;

void log_init(const char *ident, int max_level)
{
	log_ident = ident;
	log_max_level = max_level;
	/* systemd sets JOURNAL_STREAM when stderr is connected to the journal. */
	log_to_journal = getenv("JOURNAL_STREAM") != NULL;
}

void log_set_level(int max_level)
{
	log_max_level = max_level;
}

int log_get_level(void)
{
	return log_max_level;
}

static void log_vmsg(int level, const char *fmt, va_list ap)
{
	char line[1024];

	if (level > log_max_level)
		return;
	vsnprintf(line, sizeof(line), fmt, ap);
	if (log_to_journal)
		fprintf(stderr, "<%d>%s\n", level, line);
	else
		fprintf(stderr, "%s: %s\n", log_ident, line);
}

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

int log_errno(int level, int err, const char *fmt, ...)
{
	char buf[768];
	va_list ap;

	err = abs(err);
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log_msg(level, "%s: %s", buf, strerror(err));
	return -err;
}
