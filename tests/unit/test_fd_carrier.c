// SPDX-License-Identifier: GPL-2.0-only
/*
 * Carriers (fd_carrier.c) with real sockets: messages sent by a "stopping" side come back to
 * the starting side's take() in order, each payload as sent and each fd the very socket sent
 * (proven by a byte through it), with the carriers' own entries left without fds. The store
 * function stands in for systemd's fd store: it keeps a copy of the fd, as systemd does,
 * under the name given.
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
	return passed_fds_add(&store_table, copy, strdup(name));
}

static int failing_store(int fd, const char *name)
{
	(void)fd;
	(void)name;
	return -ENOSPC;
}

/* What take() was given: each message's text and fds. */
struct taken {
	char text[64];
	int fds[4];
	unsigned int n_fds;
};

struct taken_list {
	struct taken *v;
	size_t n, cap;
};

static int take(void *ctx, const void *msg, size_t len, int *fds, unsigned int n_fds)
{
	struct taken_list *l = ctx;
	struct taken *t;

	assert_true(l->n < l->cap);
	assert_true(len < sizeof(t->text) && n_fds <= 4);
	t = &l->v[l->n++];
	memcpy(t->text, msg, len);
	t->text[len] = '\0';
	memcpy(t->fds, fds, n_fds * sizeof(int));
	t->n_fds = n_fds;
	return 0;
}

/* n messages of two sockets each: the daemon's ends sent, the peers' ends kept in peers[]. */
static void send_pairs(struct fd_carrier *c, int n, int *peers)
{
	char text[64];
	int i, a[2], b[2], fds[2];

	for (i = 0; i < n; i++) {
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a), 0);
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b), 0);
		snprintf(text, sizeof(text), "pair %d", i);
		fds[0] = a[0];
		fds[1] = b[0];
		assert_int_equal(fd_carrier_send(c, text, strlen(text), fds, 2), 0);
		/* Sent: the carrier holds its own reference, as after the daemon's exit. */
		close(a[0]);
		close(b[0]);
		peers[2 * i] = a[1];
		peers[2 * i + 1] = b[1];
	}
}

/* fd is the other end of peer: a byte written there arrives. */
static void assert_same_socket(int fd, int peer)
{
	char c = 0;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	assert_int_equal(read(peer, &c, 1), 1);
	assert_int_equal(c, 'x');
}

/* Each message back, in order, the very sockets; then everything closed. */
static void check_pairs(struct taken_list *l, int n, int *peers)
{
	char want[64];
	int i;

	assert_int_equal(l->n, n);
	for (i = 0; i < n; i++) {
		snprintf(want, sizeof(want), "pair %d", i);
		assert_string_equal(l->v[i].text, want);
		assert_int_equal(l->v[i].n_fds, 2);
		assert_same_socket(l->v[i].fds[0], peers[2 * i]);
		assert_same_socket(l->v[i].fds[1], peers[2 * i + 1]);
		close(l->v[i].fds[0]);
		close(l->v[i].fds[1]);
		close(peers[2 * i]);
		close(peers[2 * i + 1]);
	}
}

static void test_pairs_come_back_in_order(void **state)
{
	enum { N = 3000 };
	static int peers[2 * N];
	static struct taken v[N];
	struct taken_list l = {.v = v, .cap = N};
	unsigned int bad = 9;
	struct fd_carrier c;
	size_t i;

	(void)state;
	fd_carrier_init(&c, fake_store, 0);
	send_pairs(&c, N, peers);
	fd_carrier_finish(&c);
	assert_int_equal(c.carried, N);
	assert_true(c.n >= 1);
	assert_int_equal(store_table.n, c.n);
	assert_int_equal(fd_carrier_unpack(&store_table, take, &l, &bad), N);
	assert_int_equal(bad, 0);
	for (i = 0; i < store_table.n; i++) {
		assert_int_equal(store_table.v[i].fd, -1); /* read and closed */
		assert_non_null(strstr(store_table.v[i].name, FD_CARRIER_PREFIX));
	}
	check_pairs(&l, N, peers);
	passed_fds_release(&store_table);
}

/*
 * A carrier's buffer is what the kernel allows: without CAP_NET_ADMIN (the user-space data
 * path drops it) at most 2 * wmem_max, 416 KiB on a stock kernel. Full carriers make way for
 * new ones, and every message still comes back, in order. A 64 KiB buffer stands in for that.
 * The names go on from the number given (a start that gives back what it took).
 */
static void test_carriers_roll_over(void **state)
{
	enum { N = 1000 };
	static int peers[2 * N];
	static struct taken v[N];
	struct taken_list l = {.v = v, .cap = N};
	struct fd_carrier c;
	unsigned int bad;

	(void)state;
	fd_carrier_init(&c, fake_store, 5);
	c.sndbuf = 64 * 1024;
	send_pairs(&c, N, peers);
	fd_carrier_finish(&c);
	assert_int_equal(c.carried, N);
	assert_true(c.n >= 3);
	assert_string_equal(store_table.v[0].name, FD_CARRIER_PREFIX "5");
	assert_int_equal(fd_carrier_next_name(&store_table), 5 + c.n);
	assert_int_equal(fd_carrier_unpack(&store_table, take, &l, &bad), N);
	check_pairs(&l, N, peers);
	passed_fds_release(&store_table);
}

/* A carrier that cannot be stored: nothing travels, and the caller hears why. */
static void test_store_refused(void **state)
{
	struct fd_carrier c;
	int a[2];

	(void)state;
	fd_carrier_init(&c, failing_store, 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a), 0);
	assert_int_equal(fd_carrier_send(&c, "x", 1, a, 2), -ENOSPC);
	assert_int_equal(c.carried, 0);
	/* A message of no bytes would read as the end: refused before it is sent. */
	assert_int_equal(fd_carrier_send(&c, "", 0, a, 2), -EINVAL);
	fd_carrier_finish(&c);
	close(a[0]);
	close(a[1]);
}

/*
 * A message of no bytes that carries fds: recvmsg() returns 0 for it as for the end of the
 * carrier. Its fds are closed, not left open in the daemon, it counts as bad, and the message
 * after it still comes back.
 */
static void test_empty_message_with_fds(void **state)
{
	char buf[CMSG_SPACE(2 * sizeof(int))] = {};
	struct iovec iov = {.iov_base = "", .iov_len = 0};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = buf, .msg_controllen = sizeof(buf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	int sv[2], a[2], peers[2], fds[2];
	struct taken v[2];
	struct taken_list l = {.v = v, .cap = 2};
	struct fd_carrier c;
	unsigned int bad;

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
	/* Then a good message, in the same carrier. */
	assert_int_equal(passed_fds_add(&store_table, sv[1], strdup(FD_CARRIER_PREFIX "0")), 0);
	fd_carrier_init(&c, fake_store, 0);
	c.send_fd = sv[0];
	send_pairs(&c, 1, peers);
	fd_carrier_finish(&c);
	assert_int_equal(fd_carrier_unpack(&store_table, take, &l, &bad), 1);
	assert_int_equal(bad, 1);
	check_pairs(&l, 1, peers);
	passed_fds_release(&store_table);
	/* Both received copies of a[0] are closed: its peer sees EOF. */
	assert_int_equal(read(a[1], buf, 1), 0);
	close(a[1]);
}

/* A message longer than a reader takes is cut short: its fds closed, counted as bad. */
static void test_oversized_message(void **state)
{
	static char big[FD_CARRIER_MSG_MAX + 100];
	struct iovec iov = {.iov_base = big, .iov_len = sizeof(big)};
	char buf[CMSG_SPACE(sizeof(int))] = {};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = buf, .msg_controllen = sizeof(buf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	struct taken v[1];
	struct taken_list l = {.v = v, .cap = 1};
	unsigned int bad;
	int sv[2], a[2];

	(void)state;
	memset(big, 'x', sizeof(big));
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a), 0);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &a[0], sizeof(int));
	assert_int_equal(sendmsg(sv[0], &mh, 0), (ssize_t)sizeof(big));
	close(a[0]);
	close(sv[0]);
	assert_int_equal(passed_fds_add(&store_table, sv[1], strdup(FD_CARRIER_PREFIX "0")), 0);
	assert_int_equal(fd_carrier_unpack(&store_table, take, &l, &bad), 0);
	assert_int_equal(bad, 1);
	assert_int_equal(read(a[1], buf, 1), 0);
	close(a[1]);
	passed_fds_release(&store_table);
}

int main(void)
{
	struct rlimit rl = {.rlim_cur = 65536, .rlim_max = 65536};
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pairs_come_back_in_order),
	    cmocka_unit_test(test_carriers_roll_over),
	    cmocka_unit_test(test_store_refused),
	    cmocka_unit_test(test_empty_message_with_fds),
	    cmocka_unit_test(test_oversized_message),
	};

	/* 3000 pairs are 12,000 sockets at the peak; root may raise the hard limit too. */
	if (setrlimit(RLIMIT_NOFILE, &rl)) {
		getrlimit(RLIMIT_NOFILE, &rl);
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
