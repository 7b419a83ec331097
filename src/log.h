/* SPDX-License-Identifier: GPL-2.0-only */
/* Leveled logging to stderr; journald-friendly "<N>" prefixes when stderr is the journal. */
#ifndef VSOCKMAP_LOG_H
#define VSOCKMAP_LOG_H

#include <syslog.h>

void log_init(const char *ident, int max_level);
void log_set_level(int max_level);
int log_get_level(void);
void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Logs and returns -abs(err), so error paths read "return log_errno(r, ...)". */
int log_errno(int level, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define log_err(...)	log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...)	log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...)	log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)	log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
