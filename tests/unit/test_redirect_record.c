// SPDX-License-Identifier: GPL-2.0-only
/*
 * The hand-over format (redirect_record.c): what one instance writes the next reads back
 * field for field; a record of another version is refused as such, never read as this one;
 * a record cut short, out of range, or that does not come with the descriptors it names is
 * malformed; the name of version 0 (before records) still reads, as a settled pair.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "redirect.h"
#include "redirect_phase.h"
#include "redirect_record.h"

/* A redirect in the midst of a catch-up on the kernel path, bytes held both ways. */
static struct redirect_record busy_record(void)
{
	struct redirect_record rec = {
	    .version = REDIRECT_RECORD_VERSION,
	    .id = 0x1122334455667788ull,
	    .slot = 4242,
	    .phase = PHASE_RUNNING,
	    .linked = true,
	    .started_usec = 123456789,
	    .connect_deadline_usec = 5000,
	    .idle_since_usec = 987654321,
	    .idle_mark = 0xdeadbeefcafeull,
	    .origin = 41,
	    .ep_flags = {RECORD_EP_IN_MAP, RECORD_EP_IN_MAP | RECORD_EP_SHUT_SEEN | RECORD_EP_CUT},
	    .fds =
		1u << RECORD_FD_CLIENT | 1u << RECORD_FD_TARGET |
		1u << RECORD_FD(0, RECORD_DIR_PENDING) | 1u << RECORD_FD(0, RECORD_DIR_HOLD_READ) |
		1u << RECORD_FD(0, RECORD_DIR_HOLD_PEER) | 1u << RECORD_FD(1, RECORD_DIR_PENDING),
	};

	rec.dir[0].state = DIR_CATCHUP;
	rec.dir[0].pending = 65536;
	rec.dir[0].user_bytes = 1ull << 40;
	rec.dir[0].user_packets = 77;
	rec.dir[0].inject_bytes = 3;
	rec.dir[0].held_taken = 999999;
	rec.dir[1].state = DIR_COPY;
	rec.dir[1].flags = RECORD_DIR_NO_SPLICE;
	rec.dir[1].pending = 1;
	strcpy(rec.section, "echo.sec-1_x");
	return rec;
}

static void test_round_trip(void **state)
{
	struct redirect_record in = busy_record(), out;
	uint8_t buf[REDIRECT_RECORD_MAX];
	unsigned int version;
	int len;

	(void)state;
	len = redirect_record_encode(&in, buf, sizeof(buf));
	assert_int_equal(len, REDIRECT_RECORD_FIXED + strlen(in.section));
	assert_int_equal(redirect_record_fd_count(&in), 6);
	assert_int_equal(redirect_record_decode(buf, len, 6, &out, &version), 0);
	assert_int_equal(version, REDIRECT_RECORD_VERSION);
	assert_memory_equal(&in, &out, sizeof(in));
	/* Every phase a pair can be handed over in, and a pair in user space. */
	in.phase = PHASE_IDLE_CLOSING;
	in.slot = REDIRECT_SLOT_USERSPACE;
	in.userspace = true;
	in.linked = false;
	in.dir[0].state = DIR_COPY;
	in.dir[0].peeked = 4096;
	len = redirect_record_encode(&in, buf, sizeof(buf));
	assert_int_equal(redirect_record_decode(buf, len, 6, &out, &version), 0);
	assert_memory_equal(&in, &out, sizeof(in));
}

static void test_another_version_is_refused(void **state)
{
	struct redirect_record in = busy_record(), out;
	uint8_t buf[REDIRECT_RECORD_MAX];
	unsigned int version;
	int len;

	(void)state;
	len = redirect_record_encode(&in, buf, sizeof(buf));
	buf[4] = 2; /* version 2, little-endian */
	assert_int_equal(redirect_record_decode(buf, len, 6, &out, &version), -EPROTONOSUPPORT);
	assert_int_equal(version, 2);
	/* Longer, as a later version may well be: still refused for its version. */
	assert_int_equal(redirect_record_decode(buf, sizeof(buf), 9, &out, &version),
			 -EPROTONOSUPPORT);
}

static void test_malformed(void **state)
{
	struct redirect_record in = busy_record(), out;
	uint8_t buf[REDIRECT_RECORD_MAX], bad[REDIRECT_RECORD_MAX];
	unsigned int version;
	size_t i;
	int len;

	(void)state;
	len = redirect_record_encode(&in, buf, sizeof(buf));
	/* Cut anywhere: refused. */
	for (i = 0; i < (size_t)len; i++)
		assert_int_not_equal(redirect_record_decode(buf, i, 6, &out, &version), 0);
	/* Not the descriptors it names. */
	assert_int_equal(redirect_record_decode(buf, len, 5, &out, &version), -EINVAL);
	assert_int_equal(redirect_record_decode(buf, len, 7, &out, &version), -EINVAL);
	/* A state, a phase, a flag or a section name no daemon writes. */
	memcpy(bad, buf, len);
	bad[64] = NR_DIR_STATES;
	assert_int_equal(redirect_record_decode(bad, len, 6, &out, &version), -EINVAL);
	memcpy(bad, buf, len);
	bad[20] = PHASE_FREED;
	assert_int_equal(redirect_record_decode(bad, len, 6, &out, &version), -EINVAL);
	memcpy(bad, buf, len);
	bad[56] = 0x80;
	assert_int_equal(redirect_record_decode(bad, len, 6, &out, &version), -EINVAL);
	memcpy(bad, buf, len);
	bad[REDIRECT_RECORD_FIXED] = '/';
	assert_int_equal(redirect_record_decode(bad, len, 6, &out, &version), -EINVAL);
	memcpy(bad, buf, len);
	bad[REDIRECT_RECORD_FIXED + 2] = '\0'; /* found by fuzz_record */
	assert_int_equal(redirect_record_decode(bad, len, 6, &out, &version), -EINVAL);
	/* Bytes held with no memfd for them. */
	memcpy(bad, buf, len);
	bad[22] &= ~(1u << RECORD_FD(0, RECORD_DIR_PENDING));
	assert_int_equal(redirect_record_decode(bad, len, 5, &out, &version), -EINVAL);
	/* A kernel state on a pair the daemon carries, or on the target's way; a state before
	 * the connect; more held bytes than any daemon holds. */
	in.slot = REDIRECT_SLOT_USERSPACE;
	assert_int_equal(redirect_record_encode(&in, buf, sizeof(buf)), -EINVAL);
	in = busy_record();
	in.dir[1].state = DIR_DRAINING;
	assert_int_equal(redirect_record_encode(&in, buf, sizeof(buf)), -EINVAL);
	in = busy_record();
	in.phase = PHASE_CONNECTING;
	assert_int_equal(redirect_record_encode(&in, buf, sizeof(buf)), -EINVAL);
	in = busy_record();
	in.dir[0].pending = REDIRECT_RECORD_PENDING_MAX + 1;
	assert_int_equal(redirect_record_encode(&in, buf, sizeof(buf)), -EINVAL);
	memcpy(bad, buf, len);
	bad[68 + 3] = 0xff; /* pending, little-endian, past the limit */
	assert_int_equal(redirect_record_decode(bad, len, 6, &out, &version), -EINVAL);
	in = busy_record();
	/* Without its target socket. */
	in.fds &= ~(1u << RECORD_FD_TARGET);
	assert_int_equal(redirect_record_encode(&in, buf, sizeof(buf)), -EINVAL);
	/* Too small a buffer to write into. */
	in = busy_record();
	assert_int_equal(redirect_record_encode(&in, buf, REDIRECT_RECORD_FIXED), -ENOSPC);
}

/* Before records, a carrier message was the pair's name and its two sockets. */
static void test_version_0_name(void **state)
{
	const char kernel[] = "7.12.1.echo", user[] = "8.65536.2.a.b";
	struct redirect_record out;
	unsigned int version = 99;

	(void)state;
	assert_int_equal(redirect_record_decode(kernel, sizeof(kernel), 2, &out, &version), 0);
	assert_int_equal(version, 0);
	assert_int_equal(out.version, 0);
	assert_int_equal(out.id, 7);
	assert_int_equal(out.slot, 12);
	assert_string_equal(out.section, "echo");
	assert_int_equal(out.phase, PHASE_RUNNING);
	assert_true(out.linked && !out.userspace);
	assert_int_equal(out.dir[0].state, DIR_DONE); /* HALF 1: the client's way is done */
	assert_int_equal(out.dir[1].state, DIR_COPY);
	assert_int_equal(out.ep_flags[0], RECORD_EP_IN_MAP);
	assert_int_equal(out.origin, RECORD_ORIGIN_UNKNOWN);
	assert_int_equal(redirect_record_decode(user, sizeof(user), 2, &out, &version), 0);
	assert_int_equal(out.slot, REDIRECT_SLOT_USERSPACE);
	assert_true(!out.linked && out.userspace);
	assert_int_equal(out.dir[0].state, DIR_COPY);
	assert_int_equal(out.dir[1].state, DIR_DONE);
	assert_string_equal(out.section, "a.b");
	/* Not terminated, another number of fds, no section, a HALF beyond both ways. */
	assert_int_equal(redirect_record_decode(kernel, sizeof(kernel) - 1, 2, &out, &version),
			 -EINVAL);
	assert_int_equal(redirect_record_decode(kernel, sizeof(kernel), 3, &out, &version),
			 -EINVAL);
	assert_int_equal(redirect_record_from_name("7.12.1.", &out), -EINVAL);
	assert_int_equal(redirect_record_from_name("7.12.4.echo", &out), -EINVAL);
	assert_int_equal(redirect_record_from_name("7.65537.0.echo", &out), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_another_version_is_refused),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_version_0_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
