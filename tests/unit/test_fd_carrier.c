// SPDX-License-Identifier: GPL-2.0-only
/*
 * Carriers (fd_carrier.c) with real sockets: pairs sent by a "stopping" side come back as
 * passed_fds entries named as the fd store would name them, each fd the very socket sent
 * (proven by a byte through it), in order, with the carriers' own entries left without fds.
 * The store function stands in for systemd's fd store: it keeps a copy of the fd, as systemd
 * does, under the name given.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "fd_carrier.h"
#include "passed_fds.h"

static struct passed_fds store_table;

/* The fd store: a copy of fd under name, as LISTEN_FDS would pass it to the next instance. */
static int fake_store(int fd, const char *name)
{
	int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);

	if (copy < 0)
		return -errno;
	return passed_fds_add(&store_table, copy, strdup(name), false);
}

static int failing_store(int fd, const char *name)
{
	(void)fd;
	(void)name;
	return -ENOSPC;
}

/* n pairs: the daemon's ends (sent) in ours[], the peers' ends (kept) in peers[]. */
static void send_pairs(struct fd_carrier *c, int n, int *peers)
{
	char name[64];
	int i, a[2], b[2];

	for (i = 0; i < n; i++) {
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a), 0);
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b), 0);
		snprintf(name, sizeof(name), "%d.%d.0.sec.tion", i + 1, i);
		assert_int_equal(fd_carrier_send_pair(c, a[0], b[0], name), 0);
		/* Sent: the carrier holds its own reference, as after the daemon's exit. */
		close(a[0]);
		close(b[0]);
		peers[2 * i] = a[1];
		peers[2 * i + 1] = b[1];
	}
}

/* The socket in entry e is the other end of peer: a byte written there arrives. */
static void assert_same_socket(const struct passed_fd *e, int peer)
{
	char c = 0;

	assert_true(e->fd >= 0);
	assert_int_equal(write(e->fd, "x", 1), 1);
	assert_int_equal(read(peer, &c, 1), 1);
	assert_int_equal(c, 'x');
}

static void test_pairs_come_back_in_order(void **state)
{
	enum { N = 3000 };
	static int peers[2 * N];
	struct fd_carrier c;
	char want[64];
	size_t first;
	int i;

	(void)state;
	fd_carrier_init(&c, fake_store);
	send_pairs(&c, N, peers);
	fd_carrier_finish(&c);
	assert_int_equal(c.carried, N);
	assert_true(c.n >= 1);
	first = store_table.n;
	assert_int_equal(first, c.n);
	assert_int_equal(fd_carrier_unpack(&store_table), N);
	assert_int_equal(store_table.n, first + 2 * N);
	for (i = 0; i < (int)first; i++) {
		assert_int_equal(store_table.v[i].fd, -1); /* read and closed */
		assert_non_null(strstr(store_table.v[i].name, FD_CARRIER_PREFIX));
	}
	for (i = 0; i < N; i++) {
		const struct passed_fd *cl = &store_table.v[first + 2 * i];
		const struct passed_fd *tg = &store_table.v[first + 2 * i + 1];

		snprintf(want, sizeof(want), "vsm-pair.%d.%d.0.c.sec.tion", i + 1, i);
		assert_string_equal(cl->name, want);
		want[strlen("vsm-pair.") + strlen(want + strlen("vsm-pair.")) - strlen("c.sec.tion")] =
		    't';
		assert_string_equal(tg->name, want);
		assert_true(cl->carried && tg->carried);
		assert_true(passed_fd_stored(cl));
		assert_same_socket(cl, peers[2 * i]);
		assert_same_socket(tg, peers[2 * i + 1]);
		close(peers[2 * i]);
		close(peers[2 * i + 1]);
	}
	passed_fds_release(&store_table);
}

/*
 * A carrier's buffer is what the kernel allows: without CAP_NET_ADMIN (the user-space data
 * path drops it) at most 2 * wmem_max, 416 KiB on a stock kernel. Full carriers make way for
 * new ones, and every pair still comes back, in order. A 64 KiB buffer stands in for that.
 */
static void test_carriers_roll_over(void **state)
{
	enum { N = 1000 };
	static int peers[2 * N];
	struct fd_carrier c;
	int i;

	(void)state;
	fd_carrier_init(&c, fake_store);
	c.sndbuf = 64 * 1024;
	send_pairs(&c, N, peers);
	fd_carrier_finish(&c);
	assert_int_equal(c.carried, N);
	assert_true(c.n >= 3);
	assert_int_equal(fd_carrier_unpack(&store_table), N);
	assert_int_equal(store_table.n, c.n + 2 * N);
	for (i = 0; i < N; i++) {
		assert_same_socket(&store_table.v[c.n + 2 * i], peers[2 * i]);
		assert_same_socket(&store_table.v[c.n + 2 * i + 1], peers[2 * i + 1]);
		close(peers[2 * i]);
		close(peers[2 * i + 1]);
	}
	passed_fds_release(&store_table);
}

/* A carrier that cannot be stored: the pair does not travel, and says why. */
static void test_store_refused(void **state)
{
	struct fd_carrier c;
	int a[2];

	(void)state;
	fd_carrier_init(&c, failing_store);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a), 0);
	assert_int_equal(fd_carrier_send_pair(&c, a[0], a[1], "1.0.0.s"), -ENOSPC);
	assert_int_equal(c.carried, 0);
	fd_carrier_finish(&c);
	close(a[0]);
	close(a[1]);
}

/* A message that is not a pair (one fd, or a name without its dots) is closed, not taken. */
static void test_malformed_messages(void **state)
{
	char buf[CMSG_SPACE(sizeof(int))] = {};
	struct iovec iov = {.iov_base = "7.1.0.s", .iov_len = 8};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = buf,
			    .msg_controllen = sizeof(buf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	struct fd_carrier c;
	int sv[2], a[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a), 0);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &a[0], sizeof(int));
	assert_int_equal(sendmsg(sv[0], &mh, 0), 8); /* one fd */
	fd_carrier_init(&c, fake_store);
	assert_int_equal(fd_carrier_send_pair(&c, a[0], a[0], "no-dots"), 0);
	fd_carrier_finish(&c);
	assert_int_equal(passed_fds_add(&store_table, sv[1], strdup(FD_CARRIER_PREFIX "9"), false),
			 0);
	close(sv[0]);
	close(a[0]);
	assert_int_equal(fd_carrier_unpack(&store_table), 0);
	/* Both sent copies of a[0] are closed: its peer sees EOF. */
	assert_int_equal(read(a[1], buf, 1), 0);
	close(a[1]);
	passed_fds_release(&store_table);
}

/*
 * A message of no bytes that carries fds: recvmsg() returns 0 for it as for the end of the
 * carrier. Its fds are closed, not left open in the daemon, and the pair after it still
 * comes back.
 */
static void test_empty_message_with_fds(void **state)
{
	char buf[CMSG_SPACE(2 * sizeof(int))] = {};
	struct iovec iov = {.iov_base = "", .iov_len = 0};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = buf,
			    .msg_controllen = sizeof(buf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	int sv[2], a[2], peers[2], fds[2];
	struct fd_carrier c;
	size_t first;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a), 0);
	fds[0] = fds[1] = a[0];
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	assert_int_equal(sendmsg(sv[0], &mh, 0), 0);
	close(a[0]);
	/* Then a good pair, in the same carrier: this test's store hands it sv[0]. */
	assert_int_equal(passed_fds_add(&store_table, sv[1], strdup(FD_CARRIER_PREFIX "0"), false),
			 0);
	first = store_table.n;
	fd_carrier_init(&c, fake_store);
	c.send_fd = sv[0];
	send_pairs(&c, 1, peers);
	fd_carrier_finish(&c);
	assert_int_equal(fd_carrier_unpack(&store_table), 1);
	assert_int_equal(store_table.n, first + 2);
	assert_same_socket(&store_table.v[first], peers[0]);
	assert_same_socket(&store_table.v[first + 1], peers[1]);
	close(peers[0]);
	close(peers[1]);
	passed_fds_release(&store_table);
	/* Both received copies of a[0] are closed: its peer sees EOF. */
	assert_int_equal(read(a[1], buf, 1), 0);
	close(a[1]);
}

int main(void)
{
	struct rlimit rl = {.rlim_cur = 65536, .rlim_max = 65536};
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pairs_come_back_in_order),
	    cmocka_unit_test(test_carriers_roll_over),
	    cmocka_unit_test(test_store_refused),
	    cmocka_unit_test(test_malformed_messages),
	    cmocka_unit_test(test_empty_message_with_fds),
	};

	/* 3000 pairs are 12,000 sockets at the peak; root may raise the hard limit too. */
	if (setrlimit(RLIMIT_NOFILE, &rl)) {
		getrlimit(RLIMIT_NOFILE, &rl);
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
