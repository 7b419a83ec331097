// SPDX-License-Identifier: GPL-2.0-only
/*
 * Live redirects per uid (uid_tally.c): counted per uid, an uid leaves at 0, the array
 * grows past its first size, and a remove of an uid it never held changes nothing.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "uid_tally.h"

static void test_counts_per_uid(void **state)
{
	struct uid_tally t = {0};

	(void)state;
	assert_int_equal(uid_tally_add(&t, 1000), 0);
	assert_int_equal(uid_tally_add(&t, 1000), 0);
	assert_int_equal(uid_tally_add(&t, 0), 0);
	assert_int_equal(uid_tally_get(&t, 1000), 2);
	assert_int_equal(uid_tally_get(&t, 0), 1);
	assert_int_equal(uid_tally_get(&t, 7), 0);
	uid_tally_remove(&t, 1000);
	assert_int_equal(uid_tally_get(&t, 1000), 1);
	uid_tally_free(&t);
}

static void test_uid_leaves_at_zero(void **state)
{
	struct uid_tally t = {0};

	(void)state;
	assert_int_equal(uid_tally_add(&t, 5), 0);
	assert_int_equal(uid_tally_add(&t, 6), 0);
	uid_tally_remove(&t, 5);
	assert_int_equal(t.n, 1);
	assert_int_equal(uid_tally_get(&t, 5), 0);
	assert_int_equal(uid_tally_get(&t, 6), 1); /* moved into 5's place */
	uid_tally_remove(&t, 42);		   /* never held: nothing changes */
	assert_int_equal(t.n, 1);
	uid_tally_free(&t);
	assert_null(t.v);
}

static void test_grows(void **state)
{
	struct uid_tally t = {0};
	uid_t u;

	(void)state;
	for (u = 0; u < 100; u++)
		assert_int_equal(uid_tally_add(&t, u), 0);
	for (u = 0; u < 100; u++)
		assert_int_equal(uid_tally_get(&t, u), 1);
	for (u = 0; u < 100; u++)
		uid_tally_remove(&t, u);
	assert_int_equal(t.n, 0);
	uid_tally_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_counts_per_uid),
	    cmocka_unit_test(test_uid_leaves_at_zero),
	    cmocka_unit_test(test_grows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
