// SPDX-License-Identifier: GPL-2.0-only
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <systemd/sd-journal.h>

#include "log.h"
#include "util.h"

#define LOG_LINE_MAX	1024
#define RATELIMIT_SLOTS 32
#define SAMPLE_MAX	200

static const char *log_ident = "vsockmap";
static int log_max_level = LOG_INFO;
static bool journal;

/* One kind of warning or error: messages equal once digit runs are folded. */
struct ratelimit_slot {
	uint64_t key; /* 0: free */
	int level;
	uint64_t window_start_usec;
	unsigned int logged;	 /* in this window */
	unsigned int suppressed; /* in this window */
	char sample[SAMPLE_MAX]; /* the last suppressed one */
};

static struct ratelimit_slot ratelimit[RATELIMIT_SLOTS];

/*
 * systemd sets JOURNAL_STREAM=DEV:INODE when it connects stderr to the journal. Compare it
 * with stderr itself: a daemon started from a shell in a unit's environment, with stderr
 * redirected to a file, must keep writing to that file.
 */
static bool stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
		return false;
	if (fstat(STDERR_FILENO, &st))
		return false;
	return st.st_dev == (dev_t)dev && st.st_ino == (ino_t)ino;
}

void log_init(const char *ident, int max_level)
{
	log_ident = ident;
	log_max_level = max_level;
	journal = stderr_is_journal();
}

void log_set_level(int max_level)
{
	log_max_level = max_level;
}

int log_get_level(void)
{
	return log_max_level;
}

bool log_to_journal(void)
{
	return journal;
}

struct field_buf {
	struct iovec iov[12];
	char text[12][160];
	int n;
};

static void add_field(struct field_buf *fb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void add_field(struct field_buf *fb, const char *fmt, ...)
{
	va_list ap;
	int len;

	if (fb->n >= (int)ARRAY_SIZE(fb->iov))
		return;
	va_start(ap, fmt);
	len = vsnprintf(fb->text[fb->n], sizeof(fb->text[0]), fmt, ap);
	va_end(ap);
	if (len < 0)
		return;
	if (len >= (int)sizeof(fb->text[0]))
		len = sizeof(fb->text[0]) - 1;
	fb->iov[fb->n].iov_base = fb->text[fb->n];
	fb->iov[fb->n].iov_len = len;
	fb->n++;
}

static void emit(int level, const struct log_context *ctx, const char *line)
{
	struct field_buf fb = {};
	struct iovec iov[ARRAY_SIZE(fb.iov) + 1];
	char *message;
	int n;

	if (!journal) {
		fprintf(stderr, "%s: %s\n", log_ident, line);
		return;
	}
	if (asprintf(&message, "MESSAGE=%s", line) < 0)
		goto fallback;
	add_field(&fb, "PRIORITY=%d", level);
	add_field(&fb, "SYSLOG_IDENTIFIER=%s", log_ident);
	add_field(&fb, "SYSLOG_FACILITY=%d", LOG_DAEMON >> 3);
	if (ctx) {
		if (ctx->redirect)
			add_field(&fb, "REDIRECT=%s", ctx->redirect);
		if (ctx->redirect_id)
			add_field(&fb, "REDIRECT_ID=%" PRIu64, ctx->redirect_id);
		if (ctx->listen)
			add_field(&fb, "LISTEN=%s", ctx->listen);
		if (ctx->target)
			add_field(&fb, "TARGET=%s", ctx->target);
		if (ctx->client_pid > 0)
			add_field(&fb, "CLIENT_PID=%d", (int)ctx->client_pid);
		if (ctx->err)
			add_field(&fb, "ERRNO=%d", abs(ctx->err));
		if (ctx->fd_name)
			add_field(&fb, "FDNAME=%s", ctx->fd_name);
	}
	iov[0].iov_base = message;
	iov[0].iov_len = strlen(message);
	for (n = 0; n < fb.n; n++)
		iov[n + 1] = fb.iov[n];
	n = sd_journal_sendv(iov, fb.n + 1);
	free(message);
	if (n >= 0)
		return;
fallback:
	/* The journal socket is gone (journald restarting): stderr still reaches it. */
	fprintf(stderr, "<%d>%s\n", level, line);
}

/* FNV-1a of the message with every run of digits folded into one '#', and of the level. */
static uint64_t message_key(int level, const char *line)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	bool in_digits = false;
	const char *p;

	for (p = line; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if (isdigit(c)) {
			if (in_digits)
				continue;
			in_digits = true;
			c = '#';
		} else {
			in_digits = false;
		}
		h = (h ^ c) * 0x100000001b3ULL;
	}
	h = (h ^ (unsigned int)level) * 0x100000001b3ULL;
	return h ?: 1;
}

static void report_suppressed(struct ratelimit_slot *s, uint64_t now)
{
	char line[LOG_LINE_MAX];

	if (!s->suppressed)
		return;
	snprintf(line, sizeof(line),
		 "suppressed %u similar messages in the last %" PRIu64 " s; the last: %s",
		 s->suppressed, (now - s->window_start_usec + USEC_PER_SEC / 2) / USEC_PER_SEC,
		 s->sample);
	emit(s->level, NULL, line);
	s->suppressed = 0;
}

/* Whether this warning or error may go out now. */
static bool ratelimit_pass(int level, const char *line)
{
	const uint64_t interval = LOG_RATELIMIT_INTERVAL_SEC * USEC_PER_SEC;
	uint64_t key = message_key(level, line), now = now_usec();
	struct ratelimit_slot *s = NULL, *oldest = &ratelimit[0];
	size_t i;

	for (i = 0; i < RATELIMIT_SLOTS; i++) {
		if (ratelimit[i].key == key) {
			s = &ratelimit[i];
			break;
		}
		if (ratelimit[i].window_start_usec < oldest->window_start_usec)
			oldest = &ratelimit[i];
	}
	if (!s) {
		s = oldest;
		report_suppressed(s, now);
		memset(s, 0, sizeof(*s));
		s->key = key;
		s->level = level;
		s->window_start_usec = now;
	}
	if (now - s->window_start_usec >= interval) {
		report_suppressed(s, now);
		s->window_start_usec = now;
		s->logged = 0;
	}
	if (s->logged < LOG_RATELIMIT_BURST) {
		s->logged++;
		return true;
	}
	s->suppressed++;
	snprintf(s->sample, sizeof(s->sample), "%.*s", (int)sizeof(s->sample) - 1, line);
	return false;
}

void log_flush_suppressed(void)
{
	const uint64_t interval = LOG_RATELIMIT_INTERVAL_SEC * USEC_PER_SEC;
	uint64_t now = now_usec();
	size_t i;

	for (i = 0; i < RATELIMIT_SLOTS; i++) {
		struct ratelimit_slot *s = &ratelimit[i];

		if (s->key && s->suppressed && now - s->window_start_usec >= interval) {
			report_suppressed(s, now);
			s->window_start_usec = now;
			s->logged = 0;
		}
	}
}

static void log_vfields(int level, const struct log_context *ctx, const char *suffix,
			const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));

static void log_vfields(int level, const struct log_context *ctx, const char *suffix,
			const char *fmt, va_list ap)
{
	char line[LOG_LINE_MAX];
	int len;

	if (level > log_max_level)
		return;
	len = vsnprintf(line, sizeof(line), fmt, ap);
	if (suffix && len >= 0 && (size_t)len < sizeof(line))
		snprintf(line + len, sizeof(line) - len, ": %s", suffix);
	if (level <= LOG_WARNING && !ratelimit_pass(level, line))
		return;
	emit(level, ctx, line);
}

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vfields(level, NULL, NULL, fmt, ap);
	va_end(ap);
}

int log_errno(int level, int err, const char *fmt, ...)
{
	const struct log_context ctx = {.err = err};
	va_list ap;

	err = abs(err);
	va_start(ap, fmt);
	log_vfields(level, &ctx, strerror(err), fmt, ap);
	va_end(ap);
	return -err;
}

void log_fields(int level, const struct log_context *ctx, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vfields(level, ctx, NULL, fmt, ap);
	va_end(ap);
}

int log_fields_errno(int level, const struct log_context *ctx, int err, const char *fmt, ...)
{
	struct log_context c = ctx ? *ctx : (struct log_context){};
	va_list ap;

	err = abs(err);
	c.err = err;
	va_start(ap, fmt);
	log_vfields(level, &c, strerror(err), fmt, ap);
	va_end(ap);
	return -err;
}
