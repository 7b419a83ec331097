/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Leveled logging. To stderr ("vsockmapd: message") normally; when stderr is the journal
 * (systemd's JOURNAL_STREAM names it), each message goes to the journal with sd_journal_send
 * and carries structured fields (REDIRECT=, LISTEN=, TARGET=, CLIENT_PID=, ...).
 *
 * Warnings and errors are rate-limited: of the messages that are identical apart from their
 * numbers (redirect ids, pids, millisecond counts), at most LOG_RATELIMIT_BURST go out per
 * LOG_RATELIMIT_INTERVAL_SEC; then one line says how many were suppressed.
 */
#ifndef VSOCKMAP_LOG_H
#define VSOCKMAP_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <syslog.h>

#define LOG_RATELIMIT_BURST	   10
#define LOG_RATELIMIT_INTERVAL_SEC 10

/* Journal fields of one message; members left 0/NULL are not sent. */
struct log_context {
	const char *redirect; /* REDIRECT=: the configuration section */
	uint64_t redirect_id; /* REDIRECT_ID=: as vsockmapctl list shows it */
	const char *listen;   /* LISTEN=: the listen address, socat syntax */
	const char *target;   /* TARGET=: the target address, socat syntax */
	pid_t client_pid;     /* CLIENT_PID= */
	int err;	      /* ERRNO= (sign ignored) */
	const char *fd_name;  /* FDNAME=: a socket passed by systemd */
};

/* log_fields(LOG_INFO, LOG_CTX(.redirect = rc->name, .listen = text), "...", ...) */
#define LOG_CTX(...) (&(const struct log_context){__VA_ARGS__})

void log_init(const char *ident, int max_level);
void log_set_level(int max_level);
int log_get_level(void);
/* Whether messages go to the journal (stderr is the journal stream). */
bool log_to_journal(void);
void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Logs and returns -abs(err), so error paths read "return log_errno(r, ...)". */
int log_errno(int level, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A message with journal fields; ctx may be NULL. The text must stand on its own on stderr. */
void log_fields(int level, const struct log_context *ctx, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same, appending ": strerror(err)" and ERRNO=; returns -abs(err). */
int log_fields_errno(int level, const struct log_context *ctx, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * Report rate-limit windows that have ended with messages suppressed. Called from a timer, so
 * the count appears even when no further message of that kind comes.
 */
void log_flush_suppressed(void);

#define log_err(...)	log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...)	log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...)	log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)	log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
