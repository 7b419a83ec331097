// SPDX-License-Identifier: GPL-2.0-only
/* A pair taken back at a restart: its ends' kinds from its sockets, and the sections that fit. */
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "stored_pair.h"

static void test_unix_ends(void **state)
{
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(stored_pair_client_kind(sv[0]), ADDRESS_UNIX_LISTEN);
	assert_int_equal(stored_pair_target_kind(sv[1]), ADDRESS_UNIX_CONNECT);
	close(sv[0]);
	close(sv[1]);
}

static void test_tcp_ends(void **state)
{
	int v4 = socket(AF_INET, SOCK_STREAM, 0), v6 = socket(AF_INET6, SOCK_STREAM, 0);

	(void)state;
	assert_true(v4 >= 0);
	assert_int_equal(stored_pair_client_kind(v4), ADDRESS_TCP_LISTEN);
	assert_int_equal(stored_pair_target_kind(v4), ADDRESS_TCP_CONNECT);
	if (v6 >= 0) { /* a host without IPv6 has none to check */
		assert_int_equal(stored_pair_target_kind(v6), ADDRESS_TCP_CONNECT);
		close(v6);
	}
	close(v4);
}

/* No name to read: the rules of a vsock end (no AF_VSOCK socket is opened on this host). */
static void test_unreadable_is_vsock(void **state)
{
	(void)state;
	assert_int_equal(stored_pair_client_kind(-1), ADDRESS_VSOCK_LISTEN);
	assert_int_equal(stored_pair_target_kind(-1), ADDRESS_VSOCK_CONNECT);
}

static void test_fits(void **state)
{
	struct redirect_config rc = {.listen.kind = ADDRESS_UNIX_LISTEN,
				     .connect.kind = ADDRESS_UNIX_CONNECT};

	(void)state;
	assert_true(stored_pair_fits(&rc, ADDRESS_UNIX_LISTEN, ADDRESS_UNIX_CONNECT));
	/* The section now has a TCP target: the unix-target pair keeps its own rules. */
	rc.connect.kind = ADDRESS_TCP_CONNECT;
	assert_false(stored_pair_fits(&rc, ADDRESS_UNIX_LISTEN, ADDRESS_UNIX_CONNECT));
	rc.connect.kind = ADDRESS_UNIX_CONNECT;
	rc.listen.kind = ADDRESS_TCP_LISTEN;
	assert_false(stored_pair_fits(&rc, ADDRESS_UNIX_LISTEN, ADDRESS_UNIX_CONNECT));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_unix_ends),
	    cmocka_unit_test(test_tcp_ends),
	    cmocka_unit_test(test_unreadable_is_vsock),
	    cmocka_unit_test(test_fits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
