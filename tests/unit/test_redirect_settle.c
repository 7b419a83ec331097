// SPDX-License-Identifier: GPL-2.0-only
/*
 * Which pairs a restart hands over (redirect_settle.c): a pair that is not handed over is
 * closed by the stopping instance, so a "no" for a pair the next instance could carry on cuts
 * its stream, and a "yes" for one whose bytes the daemon still holds loses them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "redirect.h"
#include "redirect_settle.h"

/* The kernel carries client to target, the daemon target to client, nothing in flight. */
static struct settle_view open_pair(void)
{
	return (struct settle_view){
	    .client = DIR_OPEN, .target = DIR_COPY, .client_mapped = true, .gate_settled = true};
}

/* The client half-closed; its last bytes are in the kernel's backlog toward the target. */
static struct settle_view draining_pair(void)
{
	struct settle_view v = open_pair();

	v.client = DIR_DRAINING;
	return v;
}

static void test_open_pair_settles(void **state)
{
	struct settle_view v = open_pair();

	(void)state;
	assert_null(settle_blocker(&v));
	assert_int_equal(settle_half(v.client, v.target), 0);
}

/* What the daemon holds or the verdict held must reach its reader first. */
static void test_bytes_in_hand_keep_it(void **state)
{
	struct settle_view v;

	(void)state;
	v = open_pair();
	v.gate_settled = false;
	assert_string_equal(settle_blocker(&v), "client bytes held by the verdict");
	v = open_pair();
	v.left_behind = true;
	assert_string_equal(settle_blocker(&v), "client bytes left behind at the insert");
	v = open_pair();
	v.client_pending = true;
	assert_string_equal(settle_blocker(&v), "client bytes not yet written to the target");
	v = open_pair();
	v.target_pending = true;
	assert_string_equal(settle_blocker(&v), "target bytes not yet written to the client");
	v = open_pair();
	v.client = DIR_SYNC;
	v.client_mapped = false;
	assert_string_equal(settle_blocker(&v), "client bytes still carried by the daemon");
	v = open_pair();
	v.client = DIR_CATCHUP;
	assert_string_equal(settle_blocker(&v), "catching up");
	v = open_pair();
	v.target = DIR_DRAINING;
	assert_non_null(settle_blocker(&v));
}

/* The reply of a half-closed client: the next instance reads the target on. */
static void test_half_closed_pair_settles(void **state)
{
	struct settle_view v = open_pair();

	(void)state;
	v.client = DIR_DONE;
	v.gate_settled = false; /* a finished way has no gate to wait for */
	assert_null(settle_blocker(&v));
	assert_int_equal(settle_half(v.client, v.target), REDIRECT_HALF_CLIENT);
	/*
	 * The client's shutdown() took its socket out of the sockhash (unix_shutdown() unhashes
	 * the peer) and the source watch saw it before the EOF: nothing of that way is left, so
	 * it does not matter. It kept such a pair from settling: the stopping instance closed it,
	 * and its reply ended there with a clean EOF.
	 */
	v.client_mapped = false;
	assert_null(settle_blocker(&v));
}

/*
 * The client half-closed and its last bytes wait in the kernel's backlog toward a slow
 * reader. Nothing of them is in the daemon's hands: the next instance finds the client's
 * EOF again (EPOLLRDHUP stays), drains the backlog and passes the half-close on. Kept back,
 * the pair was closed after 3 s with the stopping instance: the target lost the tail of the
 * upload and the client its whole reply.
 */
static void test_draining_pair_settles(void **state)
{
	struct settle_view v = draining_pair();

	(void)state;
	assert_null(settle_blocker(&v));
	/* Handed over as not yet finished: the next instance drains it itself. */
	assert_int_equal(settle_half(v.client, v.target), 0);
	/* Bytes left behind at the insert are read at the end of that drain too. */
	v.left_behind = true;
	assert_null(settle_blocker(&v));
}

/*
 * A drain whose socket the daemon read to its EOF before the insert (its bytes went to the
 * target or into the injector, whose verdict queued them on the same backlog), or whose socket
 * left the sockhash (its own queue is read after the backlog): the same drain again.
 */
static void test_draining_pair_outside_the_sockhash_settles(void **state)
{
	struct settle_view v = draining_pair();

	(void)state;
	v.client_mapped = false;
	assert_null(settle_blocker(&v));
}

/* A drain with bytes in the daemon's hands waits for them. */
static void test_draining_pair_with_bytes_in_hand_waits(void **state)
{
	struct settle_view v;

	(void)state;
	v = draining_pair();
	v.gate_settled = false; /* held bytes counted, not yet read */
	assert_string_equal(settle_blocker(&v), "client bytes held by the verdict");
	v = draining_pair();
	v.client_pending = true; /* read from the client's queue, the target (or injector) full */
	assert_string_equal(settle_blocker(&v), "client bytes not yet written to the target");
}

static void test_userspace_pair(void **state)
{
	struct settle_view v = {.userspace = true, .client = DIR_COPY, .target = DIR_COPY};

	(void)state;
	assert_null(settle_blocker(&v));
	v.target_pending = true;
	assert_string_equal(settle_blocker(&v), "bytes not yet written on");
	assert_int_equal(settle_half(DIR_DONE, DIR_DONE),
			 REDIRECT_HALF_CLIENT | REDIRECT_HALF_TARGET);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_open_pair_settles),
	    cmocka_unit_test(test_bytes_in_hand_keep_it),
	    cmocka_unit_test(test_half_closed_pair_settles),
	    cmocka_unit_test(test_draining_pair_settles),
	    cmocka_unit_test(test_draining_pair_outside_the_sockhash_settles),
	    cmocka_unit_test(test_draining_pair_with_bytes_in_hand_waits),
	    cmocka_unit_test(test_userspace_pair),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
