// SPDX-License-Identifier: GPL-2.0-only
/*
 * The redirect slots (slot_pool.c): lowest first, reused as given back, the max-redirects
 * limit, and taking back a handed-over slot, with each error.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "slot_pool.h"

static void test_lowest_first_then_reused(void **state)
{
	struct slot_pool p;
	uint32_t a, b, c;

	(void)state;
	assert_int_equal(slot_pool_init(&p, 4), 0);
	assert_int_equal(slot_pool_take(&p, &a), 0);
	assert_int_equal(slot_pool_take(&p, &b), 0);
	assert_int_equal(a, 0);
	assert_int_equal(b, 1);
	slot_pool_put(&p, a);
	assert_int_equal(slot_pool_take(&p, &c), 0);
	assert_int_equal(c, 0); /* the one given back comes next */
	slot_pool_fini(&p);
}

static void test_full_at_size(void **state)
{
	struct slot_pool p;
	uint32_t s, i;

	(void)state;
	assert_int_equal(slot_pool_init(&p, 3), 0);
	for (i = 0; i < 3; i++) {
		assert_false(slot_pool_full(&p));
		assert_int_equal(slot_pool_take(&p, &s), 0);
		assert_int_equal(s, i);
	}
	assert_true(slot_pool_full(&p));
	assert_int_equal(slot_pool_take(&p, &s), -ENOSPC);
	slot_pool_put(&p, 1);
	assert_int_equal(slot_pool_take(&p, &s), 0);
	assert_int_equal(s, 1);
	slot_pool_fini(&p);
}

static void test_limit(void **state)
{
	struct slot_pool p;
	uint32_t s;

	(void)state;
	assert_int_equal(slot_pool_init(&p, 8), 0);
	slot_pool_set_limit(&p, 2);
	assert_int_equal(slot_pool_take(&p, &s), 0);
	assert_int_equal(slot_pool_take(&p, &s), 0);
	assert_true(slot_pool_full(&p));
	assert_int_equal(slot_pool_take(&p, &s), -ENOSPC);
	/* A reload raising the limit lets the next one in; a limit past the size is none. */
	slot_pool_set_limit(&p, 100);
	assert_false(slot_pool_full(&p));
	assert_int_equal(slot_pool_take(&p, &s), 0);
	assert_int_equal(s, 2);
	/* Lowering it below what is taken refuses new ones, takes none away. */
	slot_pool_set_limit(&p, 1);
	assert_true(slot_pool_full(&p));
	slot_pool_fini(&p);
}

static void test_take_this(void **state)
{
	bool seen[4] = {false};
	struct slot_pool p;
	uint32_t s, i;

	(void)state;
	assert_int_equal(slot_pool_init(&p, 4), 0);
	assert_int_equal(p.high, 0);
	slot_pool_set_limit(&p, 1);
	assert_int_equal(slot_pool_take_this(&p, 2), 0);
	assert_int_equal(p.high, 3); /* a counters snapshot reads slots 0 .. 2 */
	assert_int_equal(slot_pool_take_this(&p, 2), -EBUSY);
	assert_int_equal(slot_pool_take_this(&p, 4), -ERANGE);
	/* Handed-over slots count against the limit for new redirects. */
	assert_true(slot_pool_full(&p));
	slot_pool_set_limit(&p, 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(slot_pool_take(&p, &s), 0);
		assert_true(s < 4 && s != 2 && !seen[s]); /* 2 is taken */
		seen[s] = true;
	}
	assert_int_equal(slot_pool_take(&p, &s), -ENOSPC);
	assert_int_equal(p.high, 4);
	slot_pool_put(&p, 2);
	assert_int_equal(slot_pool_take_this(&p, 2), 0);
	slot_pool_fini(&p);
}

/*
 * A restart takes back every slot of a full pool, in whatever order the pairs arrive, with
 * new redirects taking and giving back slots between: each slot is taken exactly once.
 */
static void test_take_this_every_slot(void **state)
{
	enum { N = 65536 };
	static bool taken[N];
	struct slot_pool p;
	uint32_t i, s, x = 12345, order[N];

	(void)state;
	assert_int_equal(slot_pool_init(&p, N), 0);
	for (i = 0; i < N; i++)
		order[i] = i;
	for (i = N - 1; i > 0; i--) { /* a fixed shuffle */
		x = x * 1103515245 + 12345;
		s = order[i];
		order[i] = order[x % (i + 1)];
		order[x % (i + 1)] = s;
	}
	for (i = 0; i < N / 2; i++) {
		assert_int_equal(slot_pool_take_this(&p, order[i]), 0);
		taken[order[i]] = true;
	}
	/* A new redirect between: it gets a free slot, and gives it back. */
	assert_int_equal(slot_pool_take(&p, &s), 0);
	assert_false(taken[s]);
	slot_pool_put(&p, s);
	for (; i < N; i++) {
		assert_int_equal(slot_pool_take_this(&p, order[i]), 0);
		taken[order[i]] = true;
	}
	assert_int_equal(p.n_free, 0);
	assert_int_equal(slot_pool_take(&p, &s), -ENOSPC);
	assert_int_equal(slot_pool_take_this(&p, order[7]), -EBUSY);
	slot_pool_put(&p, order[7]);
	assert_int_equal(slot_pool_take(&p, &s), 0);
	assert_int_equal(s, order[7]);
	slot_pool_fini(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lowest_first_then_reused),
	    cmocka_unit_test(test_full_at_size),
	    cmocka_unit_test(test_limit),
	    cmocka_unit_test(test_take_this),
	    cmocka_unit_test(test_take_this_every_slot),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
