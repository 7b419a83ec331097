// SPDX-License-Identifier: GPL-2.0-only
/*
 * The backlog-wake probe (psock_wake.c): the function kernel/ patch 1 adds found in a BTF,
 * or not. What datapath=auto makes of it is test_auto_datapath's.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <bpf/btf.h>

#include "psock_wake.h"

/* A BTF with one function NAME(void): what pahole writes for a global kernel function. */
static struct btf *btf_with_func(const char *name)
{
	struct btf *btf = btf__new_empty();
	int proto;

	assert_non_null(btf);
	proto = btf__add_func_proto(btf, 0);
	assert_true(proto > 0);
	assert_true(btf__add_func(btf, name, BTF_FUNC_GLOBAL, proto) > 0);
	return btf;
}

static void test_found_in_btf(void **state)
{
	struct btf *btf = btf_with_func(PSOCK_WAKE_FUNC);

	(void)state;
	assert_int_equal(psock_wake_in_btf(btf), 1);
	btf__free(btf);
}

/* A stock kernel has the other psock functions, but not this one. */
static void test_missing_from_btf(void **state)
{
	struct btf *btf = btf_with_func("sk_psock_start_verdict");

	(void)state;
	assert_int_equal(psock_wake_in_btf(btf), 0);
	btf__free(btf);
}

/* Only a function counts: a type or variable of that name is not the patch. */
static void test_name_of_another_kind(void **state)
{
	struct btf *btf = btf__new_empty();

	(void)state;
	assert_true(btf__add_int(btf, PSOCK_WAKE_FUNC, 4, 0) > 0);
	assert_int_equal(psock_wake_in_btf(btf), 0);
	btf__free(btf);
}

/* The running kernel's BTF gives an answer or an error, never anything else. */
static void test_probe_runs(void **state)
{
	int r = psock_wake_probe_run();

	(void)state;
	assert_true(r == 0 || r == 1 || (r < 0 && r != -EINVAL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_found_in_btf),
	    cmocka_unit_test(test_missing_from_btf),
	    cmocka_unit_test(test_name_of_another_kind),
	    cmocka_unit_test(test_probe_runs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
