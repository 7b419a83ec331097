/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The test streams: xorshift64* keyed through splitmix64, so every seed (0 too) gives a live
 * state. Bytes are the output words, low byte first. Shared by vsm-peer and vsm-soak, which
 * must produce and check the same bytes; vsm-bench's reference block is stream 0's first
 * 64 KiB.
 */
#ifndef VSM_STREAM_H
#define VSM_STREAM_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct stream {
	uint64_t state;
	uint64_t word;	   /* current output word, consumed low byte first */
	unsigned int left; /* bytes of word not yet produced */
	uint64_t offset;   /* bytes produced so far */
};

static inline void stream_init(struct stream *s, uint64_t seed)
{
	uint64_t z = seed + 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	s->state = z ? z : 0x9e3779b97f4a7c15ULL;
	s->left = 0;
	s->offset = 0;
}

static inline uint64_t stream_next_word(struct stream *s)
{
	s->state ^= s->state >> 12;
	s->state ^= s->state << 25;
	s->state ^= s->state >> 27;
	return s->state * 0x2545f4914f6cdd1dULL;
}

static inline void stream_fill(struct stream *s, uint8_t *buf, size_t len)
{
	size_t i = 0;

	s->offset += len;
	for (; i < len && s->left; s->left--)
		buf[i++] = s->word >> (8 * (8 - s->left));
	for (; len - i >= 8; i += 8) {
		uint64_t le = htole64(stream_next_word(s));

		memcpy(buf + i, &le, sizeof(le));
	}
	if (i < len) {
		s->word = stream_next_word(s);
		for (s->left = 8; i < len; s->left--)
			buf[i++] = s->word >> (8 * (8 - s->left));
	}
}

#endif
