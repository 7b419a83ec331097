// SPDX-License-Identifier: GPL-2.0-only
/*
 * The values inside an address and the config alike: numbers, durations, file modes, user
 * and group names, and the closest known name for a typo ("did you mean ...?").
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

static unsigned int edit_distance(const char *a, const char *b)
{
	unsigned int row[NAME_CMP_MAX + 1];
	size_t la = strlen(a), lb = strlen(b), i, j;

	if (la > NAME_CMP_MAX || lb > NAME_CMP_MAX)
		return UINT32_MAX;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		unsigned int diag = row[0], up;

		row[0] = i;
		for (j = 1; j <= lb; j++) {
			unsigned int best;

			up = row[j];
			best = diag + (tolower((unsigned char)a[i - 1]) !=
				       tolower((unsigned char)b[j - 1]));
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

const char *address_closest_name(const char *word, const char *const *names, size_t n)
{
	unsigned int best = SUGGEST_MAX + 1, d;
	const char *found = NULL;
	size_t i;

	for (i = 0; i < n; i++) {
		d = edit_distance(word, names[i]);
		/* "ab" is two edits from any two-letter name: that is noise, not a typo. */
		if (d < best && d < strlen(word)) {
			best = d;
			found = names[i];
		}
	}
	return found;
}

/*
 * Unsigned decimal with no sign, no base prefix. Returns 0, -EINVAL when text does not start
 * with a digit, -ERANGE when the value exceeds max; *end points past the digits.
 */
int parse_decimal(const char *text, uint64_t max, uint64_t *val, const char **end)
{
	const char *p = text;
	uint64_t v = 0;
	bool overflow = false;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		if (!overflow && v > (max - (uint64_t)(*p - '0')) / 10)
			overflow = true;
		if (!overflow)
			v = v * 10 + (uint64_t)(*p - '0');
	}
	*end = p;
	*val = v;
	return overflow ? -ERANGE : 0;
}

/* A whole decimal number "what" in [min, max]; every error names what and the text. */
int parse_number(const char *what, const char *text, uint64_t min, uint64_t max, uint64_t *val,
		 char *err, size_t errlen)
{
	const char *end;
	int r;

	r = parse_decimal(text, UINT64_MAX, val, &end);
	if (r == -EINVAL || (text[0] == '0' && (text[1] == 'x' || text[1] == 'X')))
		return invalid_input(err, errlen, "%s \"%s\" is not a decimal number", what, text);
	if (*end)
		return invalid_input(err, errlen, "trailing garbage \"%s\" after %s %.*s", end,
				     what, (int)(end - text), text);
	if (r || *val < min || *val > max)
		return invalid_input(err, errlen, "%s %s is out of range (%llu..%llu)", what, text,
				     (unsigned long long)min, (unsigned long long)max);
	return 0;
}

int address_parse_seconds(const char *name, const char *text, bool allow_zero, unsigned int *ms,
			  char *err, size_t errlen)
{
	uint64_t sec = 0, frac_ns = 0, scale = 100000000;
	unsigned int int_digits = 0, frac_digits = 0;
	const char *p = text;

	/* By hand rather than strtod(): no locale decimal comma, no "inf", no "1e3". */
	for (; isdigit((unsigned char)*p); p++, int_digits++)
		if (sec <= TIMEOUT_MAX_S)
			sec = sec * 10 + (uint64_t)(*p - '0');
	if (*p == '.') {
		for (p++; isdigit((unsigned char)*p); p++, frac_digits++) {
			frac_ns += (uint64_t)(*p - '0') * scale;
			scale /= 10;
		}
		if (!frac_digits)
			int_digits = 0;
	}
	if (!int_digits || *p)
		return invalid_input(err, errlen,
				     "%s \"%s\" is not a number of seconds (e.g. 5 or 0.5)", name,
				     text);
	if (sec > TIMEOUT_MAX_S || (sec == TIMEOUT_MAX_S && frac_ns))
		return invalid_input(err, errlen, "%s %s is longer than %u seconds", name, text,
				     TIMEOUT_MAX_S);
	if (!sec && !frac_ns && !allow_zero)
		return invalid_input(err, errlen, "%s %s must be greater than 0", name, text);
	/* Round up so that 0.0001 s does not become "no timeout". */
	*ms = (unsigned int)(sec * 1000 + (frac_ns + 999999) / 1000000);
	return 0;
}

int parse_mode(const char *text, mode_t *mode, char *err, size_t errlen)
{
	unsigned long v = 0;
	const char *p;

	for (p = text; *p >= '0' && *p <= '7'; p++)
		if (v <= 07777)
			v = v * 8 + (unsigned long)(*p - '0');
	if (p == text || *p)
		return invalid_input(err, errlen, "mode \"%s\" is not an octal number (e.g. 0660)",
				     text);
	if (v > 07777)
		return invalid_input(err, errlen, "mode %s is larger than 07777", text);
	*mode = (mode_t)v;
	return 0;
}

/* getpwnam_r()/getgrnam_r() report "no such entry" as 0 plus NULL, or as one of these. */
static bool nss_not_found(int r)
{
	return r == 0 || r == ENOENT || r == ESRCH || r == EBADF || r == EPERM;
}

int address_parse_owner(const char *what, const char *text, uint32_t *id, char *err, size_t errlen)
{
	bool is_user = !strcmp(what, "user");
	long hint = sysconf(is_user ? _SC_GETPW_R_SIZE_MAX : _SC_GETGR_R_SIZE_MAX);
	size_t size = hint > 0 ? (size_t)hint : 16384;
	struct passwd pw, *pw_res = NULL;
	struct group gr, *gr_res = NULL;
	uint64_t v = 0;
	char *buf;
	int r;

	if (isdigit((unsigned char)text[0])) {
		r = parse_number(what, text, 0, UINT32_MAX - 1, &v, err, errlen);
		if (!r)
			*id = (uint32_t)v;
		return r;
	}
	for (;;) {
		buf = malloc(size);
		if (!buf) {
			invalid_input(err, errlen, "out of memory");
			return -ENOMEM;
		}
		if (is_user)
			r = getpwnam_r(text, &pw, buf, size, &pw_res);
		else
			r = getgrnam_r(text, &gr, buf, size, &gr_res);
		if (r != ERANGE || size >= 1 << 20)
			break;
		free(buf);
		size *= 2;
	}
	free(buf);
	if (pw_res || gr_res) {
		*id = pw_res ? pw.pw_uid : gr.gr_gid;
		return 0;
	}
	if (nss_not_found(r))
		return invalid_input(err, errlen, "unknown %s \"%s\"", what, text);
	return invalid_input(err, errlen, "cannot look up %s \"%s\": %s", what, text, strerror(r));
}
