// SPDX-License-Identifier: GPL-2.0-only
/*
 * The socket queue helpers a drain and a stop read (socket_inq(), socket_outq(),
 * socket_writable()), on a real unix stream socketpair, and their errors.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "sockopt.h"

static void test_queues_follow_the_bytes(void **state)
{
	char buf[4096] = {0};
	int sv[2], out;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(socket_inq(sv[1]), 0);
	assert_int_equal(socket_outq(sv[0]), 0);
	assert_true(socket_writable(sv[0]));

	assert_int_equal(write(sv[0], buf, 1000), 1000);
	assert_int_equal(socket_inq(sv[1]), 1000);
	/* unix charges the sender with the skb's whole size until the peer reads it */
	out = socket_outq(sv[0]);
	assert_true(out >= 1000);

	assert_int_equal(read(sv[1], buf, sizeof(buf)), 1000);
	assert_int_equal(socket_inq(sv[1]), 0);
	assert_int_equal(socket_outq(sv[0]), 0);
	close(sv[0]);
	close(sv[1]);
}

static void test_errors_are_negative_errno(void **state)
{
	int p[2];

	(void)state;
	assert_int_equal(socket_inq(-1), -EBADF);
	assert_int_equal(socket_outq(-1), -EBADF);
	assert_false(socket_writable(-1));
	/* a pipe answers FIONREAD (SIOCINQ's number) but not SIOCOUTQ */
	assert_int_equal(pipe(p), 0);
	assert_int_equal(socket_outq(p[0]), -ENOTTY);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queues_follow_the_bytes),
		cmocka_unit_test(test_errors_are_negative_errno),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
