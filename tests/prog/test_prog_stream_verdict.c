// SPDX-License-Identifier: GPL-2.0-only
/*
 * The stream verdict and its gate on real sockets, without the daemon, in the way of the
 * kernel's selftests/bpf prog_tests/sockmap_*.c: load the object through bpf_dataplane.c,
 * put socket pairs in the sockhashes by hand, send, and look at where every byte went and
 * what the counters and the gate say.
 *
 * Each test has a "client" pair (app <-> src: the daemon's end of an accepted connection)
 * and a "target" pair (dst <-> srv: the daemon's end of its connection to the server). The
 * verdict runs on src and sends what app wrote out of dst, so srv reads it.
 *
 * Needs root (CAP_BPF, CAP_NET_ADMIN) and a kernel with sockmap: otherwise every test is
 * skipped, saying why.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "bpf_dataplane.h"
#include "gate.h"
#include "log.h"
#include "sockopt.h"

struct fixture {
	struct dataplane *dp;
	int app, src, dst, srv; /* app <-> src (client pair), dst <-> srv (target pair) */
	uint64_t src_cookie, dst_cookie;
	uint32_t slot;
};

static int open_error; /* why the object did not load, for the skip */

static int setup_mode(void **state, bool permanent)
{
	struct fixture *f = calloc(1, sizeof(*f));
	int c[2], t[2], err;

	if (!f)
		return -1;
	f->app = f->src = f->dst = f->srv = -1;
	*state = f;
	err = dataplane_open(&f->dp, DRAIN_AUTO, permanent, NULL);
	if (err) {
		open_error = err;
		f->dp = NULL;
		return 0;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, c) ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, t))
		return -1;
	f->app = c[0];
	f->src = c[1];
	f->dst = t[0];
	f->srv = t[1];
	if (socket_cookie(f->src, &f->src_cookie) || socket_cookie(f->dst, &f->dst_cookie) ||
	    dataplane_slot_alloc(f->dp, &f->slot))
		return -1;
	return 0;
}

static int setup(void **state)
{
	return setup_mode(state, false);
}

/* fastpath=permanent: the verdict that counts nothing, where an exact drain signal loads. */
static int setup_permanent(void **state)
{
	return setup_mode(state, true);
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	if (f->dp) {
		dataplane_remove(f->dp, f->src_cookie);
		dataplane_remove(f->dp, f->dst_cookie);
		dataplane_close(f->dp);
	}
	safe_close(f->app);
	safe_close(f->src);
	safe_close(f->dst);
	safe_close(f->srv);
	free(f);
	return 0;
}

static void need_bpf(struct fixture *f)
{
	if (f->dp)
		return;
	print_message("skipped: the BPF object did not load (%s): needs root and sockmap\n",
		      strerror(-open_error));
	skip();
}

/* As the daemon joins a pair (link_pair(), dir_sync()): link, target in egress, gate open. */
static void join(struct fixture *f)
{
	assert_int_equal(
	    dataplane_link(f->dp, f->src_cookie, f->dst_cookie, f->slot, VSOCKMAP_DIR_TO_TARGET),
	    0);
	assert_int_equal(dataplane_add_destination(f->dp, f->dst_cookie, f->dst), 0);
	gate_release(dataplane_gate(f->dp, f->slot, VSOCKMAP_DIR_TO_TARGET), 0);
	assert_int_equal(dataplane_add_source(f->dp, f->src_cookie, f->src), 0);
}

static unsigned char pattern(size_t i)
{
	return (unsigned char)(i * 131 + (i >> 8) * 7 + 1);
}

/* Write n pattern bytes from offset off into fd, whole (waiting for room). */
static void send_pattern(int fd, size_t off, size_t n)
{
	unsigned char buf[16384];
	size_t done = 0, k, i;
	ssize_t w;

	while (done < n) {
		k = n - done < sizeof(buf) ? n - done : sizeof(buf);
		for (i = 0; i < k; i++)
			buf[i] = pattern(off + done + i);
		w = send(fd, buf, k, MSG_NOSIGNAL);
		if (w < 0 && errno == EAGAIN) {
			struct pollfd p = {.fd = fd, .events = POLLOUT};

			assert_true(poll(&p, 1, 5000) == 1);
			continue;
		}
		assert_true(w > 0);
		done += (size_t)w;
	}
}

/* Read exactly n bytes from fd within 5 s and check they are the pattern from offset off. */
static void expect_pattern(int fd, size_t off, size_t n)
{
	unsigned char buf[16384];
	size_t got = 0, i;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	ssize_t r;

	while (got < n) {
		r = recv(fd, buf, n - got < sizeof(buf) ? n - got : sizeof(buf), MSG_DONTWAIT);
		if (r < 0 && errno == EAGAIN) {
			assert_true(poll(&p, 1, 5000) == 1);
			continue;
		}
		assert_true(r > 0);
		for (i = 0; i < (size_t)r; i++)
			if (buf[i] != pattern(off + got + i))
				fail_msg("byte %zu: 0x%02x, want 0x%02x", off + got + i, buf[i],
					 pattern(off + got + i));
		got += (size_t)r;
	}
}

/* Nothing more to read on fd within ms milliseconds. */
static void expect_quiet(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	assert_int_equal(poll(&p, 1, ms), 0);
}

static struct vsockmap_counters counters(struct fixture *f)
{
	struct vsockmap_counters c;

	assert_int_equal(dataplane_counters(f->dp, f->slot, VSOCKMAP_DIR_TO_TARGET, &c), 0);
	return c;
}

/* Every byte the client sends comes out of the target, in order, and is counted once. */
static void test_redirects_in_order_and_counts(void **state)
{
	struct fixture *f = *state;
	const size_t total = 4 << 20;
	struct vsockmap_counters c;
	size_t off, step;

	need_bpf(f);
	join(f);
	send_pattern(f->app, 0, 1000);
	expect_pattern(f->srv, 0, 1000);
	/* In steps: one thread both writes and reads, and the buffers between are finite. */
	for (off = 1000; off < total; off += step) {
		step = total - off < 65536 ? total - off : 65536;
		send_pattern(f->app, off, step);
		expect_pattern(f->srv, off, step);
	}
	expect_quiet(f->srv, 50);
	/* Nothing was left for a reader of the source: the kernel carried it all. */
	assert_int_equal(socket_inq(f->src), 0);
	c = counters(f);
	assert_int_equal(c.bytes, total);
	assert_true(c.packets > 0 && c.packets <= total);
	assert_int_equal(c.held_packets, 0);
	assert_true(dataplane_counted(f->dp, f->slot, VSOCKMAP_DIR_TO_TARGET));
}

/*
 * A closed gate holds: the verdict passes the bytes up to the source, where the daemon reads
 * them, and counts them in held. Opened with released == held, it redirects again, and
 * nothing overtakes what was held.
 */
static void test_closed_gate_holds_then_releases(void **state)
{
	struct fixture *f = *state;
	struct vsockmap_gate *g;
	struct vsockmap_counters c;

	need_bpf(f);
	join(f);
	g = dataplane_gate(f->dp, f->slot, VSOCKMAP_DIR_TO_TARGET);
	gate_close(g);
	send_pattern(f->app, 0, 3000);
	expect_pattern(f->src, 0, 3000); /* held: the source's reader gets them */
	expect_quiet(f->srv, 50);
	assert_int_equal(gate_held(g), 3000);
	c = counters(f);
	assert_true(c.held_packets > 0);
	assert_false(gate_settled(g, 0));
	/* The daemon has forwarded them (here: by hand); open with all held bytes released. */
	send_pattern(f->dst, 0, 3000);
	expect_pattern(f->srv, 0, 3000);
	assert_true(gate_release(g, gate_held(g)));
	assert_false(gate_release(g, gate_held(g))); /* no change the second time */
	send_pattern(f->app, 3000, 5000);
	expect_pattern(f->srv, 3000, 5000);
	expect_quiet(f->src, 50);
	assert_true(gate_settled(g, 3000));
	assert_int_equal(counters(f).bytes, 5000); /* only what the kernel carried */
}

/*
 * An open gate whose released count lags held (bytes still owed by the daemon) holds too:
 * a redirect now would overtake them.
 */
static void test_open_gate_behind_holds(void **state)
{
	struct fixture *f = *state;
	struct vsockmap_gate *g;

	need_bpf(f);
	join(f);
	g = dataplane_gate(f->dp, f->slot, VSOCKMAP_DIR_TO_TARGET);
	gate_close(g);
	send_pattern(f->app, 0, 100);
	expect_pattern(f->src, 0, 100);
	gate_release(g, 0); /* open, but 100 held bytes not released */
	send_pattern(f->app, 100, 200);
	expect_pattern(f->src, 100, 200);
	expect_quiet(f->srv, 50);
	assert_int_equal(gate_held(g), 300);
}

/*
 * A target that left the egress map (a unix server's shutdown() unhashes it) is no place to
 * redirect to: the verdict passes the bytes up instead of dropping them.
 */
static void test_target_gone_passes_up(void **state)
{
	struct fixture *f = *state;

	need_bpf(f);
	join(f);
	dataplane_remove_destination(f->dp, f->dst_cookie);
	send_pattern(f->app, 0, 4096);
	expect_pattern(f->src, 0, 4096);
	expect_quiet(f->srv, 50);
}

/* A source without a link (its pair was dropped) keeps its bytes too. */
static void test_unlinked_source_passes_up(void **state)
{
	struct fixture *f = *state;

	need_bpf(f);
	join(f);
	dataplane_unlink(f->dp, f->src_cookie);
	send_pattern(f->app, 0, 2048);
	expect_pattern(f->src, 0, 2048);
	expect_quiet(f->srv, 50);
}

/* The same verdict sends into a TCP target: unix in, TCP out, every byte. */
static void test_redirects_into_tcp(void **state)
{
	struct fixture *f = *state;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int lfd, cfd, sfd;
	size_t off;

	need_bpf(f);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(lfd, 1), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
	cfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(cfd, (struct sockaddr *)&a, sizeof(a)), 0);
	sfd = accept(lfd, NULL, NULL);
	assert_true(sfd >= 0);
	close(lfd);
	/* The target pair is TCP now: dst is our connected end, srv the server's. */
	close(f->dst);
	close(f->srv);
	f->dst = cfd;
	f->srv = sfd;
	assert_int_equal(socket_cookie(f->dst, &f->dst_cookie), 0);
	join(f);
	for (off = 0; off < 1 << 20; off += 65536) {
		send_pattern(f->app, off, 65536);
		expect_pattern(f->srv, off, 65536);
	}
	assert_int_equal(counters(f).bytes, 1 << 20);
}

/* The uncounted verdict (fastpath=permanent) carries every byte and says it counts none. */
static void test_permanent_carries_uncounted(void **state)
{
	struct fixture *f = *state;
	size_t off;

	need_bpf(f);
	if (!dataplane_features(f->dp)->permanent) {
		print_message("skipped: fastpath=permanent needs an exact drain signal, "
			      "and this kernel allows none\n");
		skip();
	}
	join(f);
	for (off = 0; off < 1 << 20; off += 65536) {
		send_pattern(f->app, off, 65536);
		expect_pattern(f->srv, off, 65536);
	}
	assert_false(dataplane_counted(f->dp, f->slot, VSOCKMAP_DIR_TO_TARGET));
	assert_int_equal(counters(f).bytes, 0);
	assert_int_equal(socket_inq(f->src), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_redirects_in_order_and_counts, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_closed_gate_holds_then_releases, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_open_gate_behind_holds, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_target_gone_passes_up, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unlinked_source_passes_up, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_redirects_into_tcp, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_permanent_carries_uncounted, setup_permanent,
					    teardown),
	};

	log_init("test_prog_stream_verdict", LOG_WARNING);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
