// SPDX-License-Identifier: GPL-2.0-only
/*
 * The hand-over format of a stream redirect (redirect_record.h), version 1, all integers
 * little-endian:
 *
 *   0   "VSMP"          4   u16 version        6   u16 length (fixed part + section)
 *   8   u64 id          16  u32 slot           20  u8 phase     21  u8 flags (1: linked,
 *                                                                    2: user space)
 *   22  u16 fds         24  u64 started_usec   32  u64 connect_deadline_usec
 *   40  u64 idle_since_usec                    48  u64 idle_mark
 *   56  u8 client flags 57  u8 target flags    58  u8 section length   59  0
 *   60  u32 origin (the instance that made the target socket)
 *   64  client to target, 112 target to client, 48 bytes each:
 *       +0 u8 state  +1 u8 flags  +2 u16 0  +4 u32 pending  +8 u64 user_bytes
 *       +16 u64 user_packets  +24 u64 inject_bytes  +32 u64 held_taken
 *       +40 u32 peeked  +44 u32 0
 *   160 the section's name, not terminated
 *
 * Phases and states travel as numbers of their own (the tables below), not as the enums'
 * values, so that the enums can change without changing what a record means.
 *
 * Pure functions over bytes: no socket, no map (tests/unit/test_redirect_record.c).
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "redirect_phase.h"
#include "redirect_record.h"
#include "util.h"
#include "vsockmap.h"

#define SLOT_USERSPACE VSOCKMAP_MAX_REDIRECTS /* REDIRECT_SLOT_USERSPACE (redirect.h) */
#define DIR_OFF(d)     (64 + 48 * (d))

static void put16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, sizeof(v));
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof(v));
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return le16toh(v);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

/* The phases a redirect is handed over in, by their number in the format. */
static const unsigned int wire_phase[] = {
    [0] = PHASE_CONNECTING, [1] = PHASE_RUNNING,      [2] = PHASE_CLOSING,
    [3] = PHASE_STOPPING,   [4] = PHASE_IDLE_CLOSING,
};

/* Direction states, by their number in the format. */
static const unsigned int wire_state[] = {
    [0] = DIR_SYNC,	[1] = DIR_OPEN,	    [2] = DIR_SWEEP, [3] = DIR_CATCHUP,
    [4] = DIR_DRAINING, [5] = DIR_UNHASHED, [6] = DIR_COPY,  [7] = DIR_DONE,
};

/* A value's number in a table, or -1. */
static int wire_of(const unsigned int *table, size_t n, unsigned int value)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (table[i] == value)
			return (int)i;
	return -1;
}

unsigned int redirect_record_fd_count(const struct redirect_record *rec)
{
	return (unsigned int)__builtin_popcount(rec->fds);
}

/* A phase a redirect can be handed over in: not handed over or freed already. */
static bool phase_valid(unsigned int phase)
{
	return phase == PHASE_CONNECTING || phase == PHASE_RUNNING || phase == PHASE_CLOSING ||
	       phase == PHASE_STOPPING || phase == PHASE_IDLE_CLOSING;
}

/* Section names as the configuration allows them (config.c): nothing to escape in a log. */
static bool section_valid(const char *s, size_t len)
{
	size_t i;

	if (!len || len >= CONFIG_NAME_MAX)
		return false;
	for (i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || strchr("_.-", s[i])) ||
		    !s[i])
			return false;
	return true;
}

/*
 * The states a direction can be in on its path: the kernel's (sync, open, sweep, catch-up,
 * draining, unhashed) on the client's way of a pair in the maps only; the target's way is
 * the daemon's on every path. A connecting pair has states only once it is connected.
 */
static bool state_fits(const struct redirect_record *rec, int d)
{
	unsigned int st = rec->dir[d].state;

	if (rec->phase == PHASE_CONNECTING)
		return st == DIR_SYNC;
	if (st == DIR_COPY || st == DIR_DONE)
		return true;
	return d == 0 && rec->slot != SLOT_USERSPACE;
}

/* What every version must hold: both sockets, known states, a slot in range. */
static bool record_valid(const struct redirect_record *rec)
{
	int d;

	if (!phase_valid(rec->phase) || rec->slot > SLOT_USERSPACE ||
	    (rec->fds & ~((1u << RECORD_NR_FDS) - 1)) || !(rec->fds & (1u << RECORD_FD_CLIENT)) ||
	    !(rec->fds & (1u << RECORD_FD_TARGET)) ||
	    (rec->ep_flags[0] | rec->ep_flags[1]) & ~RECORD_EP_FLAGS ||
	    !section_valid(rec->section, strnlen(rec->section, sizeof(rec->section))))
		return false;
	for (d = 0; d < 2; d++) {
		if (rec->dir[d].state >= NR_DIR_STATES || rec->dir[d].flags & ~RECORD_DIR_FLAGS ||
		    !state_fits(rec, d) || rec->dir[d].pending > REDIRECT_RECORD_PENDING_MAX)
			return false;
		/* Bytes held, and the memfd that holds them, come together. */
		if (!rec->dir[d].pending != !(rec->fds & (1u << RECORD_FD(d, RECORD_DIR_PENDING))))
			return false;
	}
	return true;
}

int redirect_record_encode(const struct redirect_record *rec, void *buf, size_t len)
{
	size_t name_len = strnlen(rec->section, sizeof(rec->section));
	uint8_t *p = buf;
	int d;

	if (len < REDIRECT_RECORD_FIXED + name_len)
		return -ENOSPC;
	if (!record_valid(rec))
		return -EINVAL;
	memset(p, 0, REDIRECT_RECORD_FIXED);
	memcpy(p, REDIRECT_RECORD_MAGIC, sizeof(REDIRECT_RECORD_MAGIC) - 1); /* not terminated */
	put16(p + 4, REDIRECT_RECORD_VERSION);
	put16(p + 6, (uint16_t)(REDIRECT_RECORD_FIXED + name_len));
	put64(p + 8, rec->id);
	put32(p + 16, rec->slot);
	p[20] = (uint8_t)wire_of(wire_phase, ARRAY_SIZE(wire_phase), rec->phase);
	p[21] = (rec->linked ? 1 : 0) | (rec->userspace ? 2 : 0);
	put16(p + 22, (uint16_t)rec->fds);
	put64(p + 24, rec->started_usec);
	put64(p + 32, rec->connect_deadline_usec);
	put64(p + 40, rec->idle_since_usec);
	put64(p + 48, rec->idle_mark);
	p[56] = (uint8_t)rec->ep_flags[0];
	p[57] = (uint8_t)rec->ep_flags[1];
	p[58] = (uint8_t)name_len;
	put32(p + 60, rec->origin);
	for (d = 0; d < 2; d++) {
		uint8_t *q = p + DIR_OFF(d);

		q[0] = (uint8_t)wire_of(wire_state, ARRAY_SIZE(wire_state), rec->dir[d].state);
		q[1] = (uint8_t)rec->dir[d].flags;
		put32(q + 4, rec->dir[d].pending);
		put64(q + 8, rec->dir[d].user_bytes);
		put64(q + 16, rec->dir[d].user_packets);
		put64(q + 24, rec->dir[d].inject_bytes);
		put64(q + 32, rec->dir[d].held_taken);
		put32(q + 40, rec->dir[d].peeked);
	}
	memcpy(p + REDIRECT_RECORD_FIXED, rec->section, name_len);
	return (int)(REDIRECT_RECORD_FIXED + name_len);
}

int redirect_record_decode(const void *buf, size_t len, unsigned int n_fds,
			   struct redirect_record *rec, unsigned int *version)
{
	const uint8_t *p = buf;
	size_t name_len;
	int d;

	*version = 0;
	memset(rec, 0, sizeof(*rec));
	/* Before records: the name as text, with the two sockets. */
	if (len < 4 || memcmp(p, REDIRECT_RECORD_MAGIC, 4)) {
		char name[CONFIG_NAME_MAX + 64];

		if (!len || len >= sizeof(name) || memchr(p, '\0', len) != p + len - 1 ||
		    n_fds != 2)
			return -EINVAL;
		memcpy(name, p, len);
		return redirect_record_from_name(name, rec);
	}
	if (len < 8)
		return -EINVAL;
	*version = get16(p + 4);
	if (*version != REDIRECT_RECORD_VERSION)
		return -EPROTONOSUPPORT;
	name_len = len >= REDIRECT_RECORD_FIXED ? p[58] : 0;
	if (len < REDIRECT_RECORD_FIXED || get16(p + 6) != len ||
	    len != REDIRECT_RECORD_FIXED + name_len || name_len >= sizeof(rec->section))
		return -EINVAL;
	rec->version = *version;
	rec->id = get64(p + 8);
	rec->slot = get32(p + 16);
	if (p[20] >= ARRAY_SIZE(wire_phase))
		return -EINVAL;
	rec->phase = wire_phase[p[20]];
	rec->linked = p[21] & 1;
	rec->userspace = p[21] & 2;
	rec->fds = get16(p + 22);
	rec->started_usec = get64(p + 24);
	rec->connect_deadline_usec = get64(p + 32);
	rec->idle_since_usec = get64(p + 40);
	rec->idle_mark = get64(p + 48);
	rec->ep_flags[0] = p[56];
	rec->ep_flags[1] = p[57];
	rec->origin = get32(p + 60);
	for (d = 0; d < 2; d++) {
		const uint8_t *q = p + DIR_OFF(d);

		if (q[0] >= ARRAY_SIZE(wire_state))
			return -EINVAL;
		rec->dir[d].state = wire_state[q[0]];
		rec->dir[d].flags = q[1];
		rec->dir[d].pending = get32(q + 4);
		rec->dir[d].user_bytes = get64(q + 8);
		rec->dir[d].user_packets = get64(q + 16);
		rec->dir[d].inject_bytes = get64(q + 24);
		rec->dir[d].held_taken = get64(q + 32);
		rec->dir[d].peeked = get32(q + 40);
	}
	/* The name as it stands, all of it: a NUL inside would cut it short. */
	if (memchr(p + REDIRECT_RECORD_FIXED, '\0', name_len))
		return -EINVAL;
	memcpy(rec->section, p + REDIRECT_RECORD_FIXED, name_len);
	rec->section[name_len] = '\0';
	if (!record_valid(rec) || redirect_record_fd_count(rec) != n_fds)
		return -EINVAL;
	return 0;
}

int redirect_record_from_name(const char *name, struct redirect_record *rec)
{
	unsigned int half;
	int off = 0;

	memset(rec, 0, sizeof(*rec));
	if (sscanf(name, "%" SCNu64 ".%" SCNu32 ".%u.%n", &rec->id, &rec->slot, &half, &off) != 3 ||
	    !off || half > (REDIRECT_HALF_CLIENT | REDIRECT_HALF_TARGET) ||
	    strlen(name + off) >= sizeof(rec->section))
		return -EINVAL;
	strcpy(rec->section, name + off);
	rec->phase = PHASE_RUNNING;
	rec->fds = 1u << RECORD_FD_CLIENT | 1u << RECORD_FD_TARGET;
	rec->linked = rec->slot != SLOT_USERSPACE;
	rec->userspace = !rec->linked;
	rec->origin = RECORD_ORIGIN_UNKNOWN;
	if (rec->linked)
		rec->ep_flags[0] = rec->ep_flags[1] = RECORD_EP_IN_MAP;
	/* A client way that was not done settled in the kernel's hands: open (or copied). */
	rec->dir[0].state = half & REDIRECT_HALF_CLIENT ? DIR_DONE
			    : rec->linked		? DIR_OPEN
							: DIR_COPY;
	rec->dir[1].state = half & REDIRECT_HALF_TARGET ? DIR_DONE : DIR_COPY;
	return record_valid(rec) ? 0 : -EINVAL;
}
