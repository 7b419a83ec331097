// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: the hand-over record's decoder (redirect_record.c) as the next instance
 * runs it on a carrier message. The first byte is the number of descriptors the message came
 * with; the rest is its payload. A record that decodes must name that many descriptors and
 * encode back into one that decodes to the same record; any other input must be refused
 * with -EINVAL or -EPROTONOSUPPORT.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "redirect_record.h"

/* Field by field: the struct has padding, which memcmp() would compare too. */
static int same_record(const struct redirect_record *a, const struct redirect_record *b)
{
	int d;

	if (a->id != b->id || a->slot != b->slot || a->phase != b->phase ||
	    a->linked != b->linked || a->userspace != b->userspace ||
	    a->started_usec != b->started_usec ||
	    a->connect_deadline_usec != b->connect_deadline_usec ||
	    a->idle_since_usec != b->idle_since_usec || a->idle_mark != b->idle_mark ||
	    a->ep_flags[0] != b->ep_flags[0] || a->ep_flags[1] != b->ep_flags[1] ||
	    a->fds != b->fds || a->origin != b->origin || strcmp(a->section, b->section))
		return 0;
	for (d = 0; d < 2; d++)
		if (a->dir[d].state != b->dir[d].state || a->dir[d].flags != b->dir[d].flags ||
		    a->dir[d].pending != b->dir[d].pending ||
		    a->dir[d].user_bytes != b->dir[d].user_bytes ||
		    a->dir[d].user_packets != b->dir[d].user_packets ||
		    a->dir[d].inject_bytes != b->dir[d].inject_bytes ||
		    a->dir[d].held_taken != b->dir[d].held_taken ||
		    a->dir[d].peeked != b->dir[d].peeked)
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct redirect_record rec, again;
	uint8_t buf[REDIRECT_RECORD_MAX];
	unsigned int n_fds, version, version2;
	int r, len;

	if (!size)
		return 0;
	n_fds = data[0] & 0x1f;
	r = redirect_record_decode(data + 1, size - 1, n_fds, &rec, &version);
	if (r) {
		if (r != -EINVAL && r != -EPROTONOSUPPORT)
			abort();
		return 0;
	}
	if (redirect_record_fd_count(&rec) != n_fds ||
	    !memchr(rec.section, '\0', sizeof(rec.section)))
		abort();
	len = redirect_record_encode(&rec, buf, sizeof(buf));
	if (len < 0)
		abort();
	if (redirect_record_decode(buf, (size_t)len, n_fds, &again, &version2) ||
	    version2 != REDIRECT_RECORD_VERSION)
		abort();
	/* Version 0 reads as a record of this version; the rest must be the same. */
	if (!same_record(&rec, &again))
		abort();
	return 0;
}
