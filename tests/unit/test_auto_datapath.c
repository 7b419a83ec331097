// SPDX-License-Identifier: GPL-2.0-only
/*
 * datapath=auto: each rule of auto_datapath.c, on each kind of kernel the probes tell apart.
 * A section keeps the kernel path only where no hazard applies.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "auto_datapath.h"
#include "bpf_dataplane.h"

/* A stock kernel: no backlog wake, unix shutdown() unhashes the peer, the queue probe loads. */
static const struct dataplane_features stock = {.drain = DRAIN_PROBE,
						 .shutdown_unhashes_peer = true};
/* kernel/ patches 1-8: the wake, the insert that passes queued skbs. */
static const struct dataplane_features patched = {
    .drain = DRAIN_PROBE, .backlog_wakes = true, .insert_takes_queued = true,
    .shutdown_unhashes_peer = true};
/* A kernel whose unix shutdown() leaves the peer in the map (none released so far). */
static const struct dataplane_features keeps_peer = {.drain = DRAIN_PROBE, .backlog_wakes = true};

static const struct address unix_listen = {.kind = ADDRESS_UNIX_LISTEN, .sock_type = SOCK_STREAM};
static const struct address unix_recv = {.kind = ADDRESS_UNIX_RECV, .sock_type = SOCK_DGRAM};
static const struct address vsock_listen = {.kind = ADDRESS_VSOCK_LISTEN,
					    .sock_type = SOCK_STREAM};
static const struct address to_vsock = {.kind = ADDRESS_VSOCK_CONNECT, .sock_type = SOCK_STREAM};
static const struct address to_vsock_seqpacket = {.kind = ADDRESS_VSOCK_CONNECT,
						  .sock_type = SOCK_SEQPACKET};
static const struct address to_unix = {.kind = ADDRESS_UNIX_CONNECT, .sock_type = SOCK_STREAM};
static const struct address to_unix_seqpacket = {.kind = ADDRESS_UNIX_CONNECT,
						 .sock_type = SOCK_SEQPACKET};
static const struct address to_tcp = {.kind = ADDRESS_TCP_CONNECT, .sock_type = SOCK_STREAM};

struct seen {
	const char *names[8];
	int n, losses;
};

static void collect(void *ctx, const struct auto_hazard *h)
{
	struct seen *s = ctx;

	assert_true(s->n < 8);
	assert_non_null(h->why);
	s->names[s->n++] = h->name;
	s->losses += h->loses;
}

/* The hazards of a section, as "name,name,...", and the first one's why. */
static const char *hazards(const struct dataplane_features *f, const struct address *listen,
			   const struct address *target, char *buf, size_t size)
{
	struct seen s = {0};
	int i, n = auto_datapath_hazards(f, listen, target, collect, &s);

	assert_int_equal(n, s.n);
	buf[0] = 0;
	for (i = 0; i < s.n; i++) {
		strncat(buf, s.names[i], size - strlen(buf) - 1);
		if (i + 1 < s.n)
			strncat(buf, ",", size - strlen(buf) - 1);
	}
	return buf;
}

#define assert_hazards(f, listen, target, expected)                                           \
	do {                                                                                   \
		char _buf[256];                                                                \
		assert_string_equal(hazards(f, listen, target, _buf, sizeof(_buf)), expected); \
	} while (0)

static const char *why(const struct dataplane_features *f, const struct address *listen,
		       const struct address *target)
{
	return auto_datapath_userspace_why(f, listen, target);
}

/* vsock-backlog-retry: first for every vsock end on a kernel without the wake. */
static void test_backlog_retry(void **state)
{
	(void)state;
	assert_non_null(strstr(why(&stock, &unix_listen, &to_vsock), "one-jiffy retry"));
	assert_non_null(strstr(why(&stock, &unix_recv, &to_vsock), "one-jiffy retry"));
	assert_non_null(strstr(why(&stock, &vsock_listen, &to_unix), "one-jiffy retry"));
	assert_hazards(&stock, &unix_recv, &to_vsock, "vsock-backlog-retry,vsock-packet-ceiling");
}

/* vsock-packet-ceiling: the wake alone no longer takes vsock to the kernel path. */
static void test_packet_ceiling(void **state)
{
	(void)state;
	assert_non_null(strstr(why(&patched, &unix_listen, &to_vsock), "ENOBUFS"));
	assert_non_null(strstr(why(&patched, &unix_recv, &to_vsock), "ENOBUFS"));
	assert_non_null(strstr(why(&keeps_peer, &unix_recv, &to_vsock_seqpacket), "ENOBUFS"));
	assert_hazards(&patched, &unix_listen, &to_vsock, "vsock-packet-ceiling,insert-order");
}

/* unix-target-unhashed: datagram sections too, stream and seqpacket targets alike. */
static void test_unix_target_unhashed(void **state)
{
	(void)state;
	assert_non_null(strstr(why(&stock, &unix_listen, &to_unix), "shutdown()"));
	assert_non_null(strstr(why(&stock, &unix_recv, &to_unix), "shutdown()"));
	assert_non_null(strstr(why(&patched, &unix_recv, &to_unix_seqpacket), "shutdown()"));
	assert_hazards(&stock, &unix_recv, &to_unix, "unix-target-unhashed");
	assert_hazards(&keeps_peer, &unix_recv, &to_unix, "");
}

/* tcp-relay-faster: stream sections on every kernel; datagram sections keep the kernel. */
static void test_tcp_relay_faster(void **state)
{
	(void)state;
	assert_non_null(strstr(why(&stock, &unix_listen, &to_tcp), "TCP"));
	assert_non_null(strstr(why(&patched, &unix_listen, &to_tcp), "TCP"));
	assert_null(why(&stock, &unix_recv, &to_tcp));
	assert_null(why(&patched, &unix_recv, &to_tcp));
}

/* insert-order: a stream client on any kernel, with patch 7 or without. */
static void test_insert_order(void **state)
{
	(void)state;
	assert_non_null(strstr(why(&keeps_peer, &unix_listen, &to_unix), "patches 6 and 7"));
	assert_hazards(&keeps_peer, &unix_listen, &to_unix, "insert-order");
	assert_hazards(&stock, &unix_listen, &to_unix, "unix-target-unhashed,insert-order");
	assert_hazards(&keeps_peer, &unix_recv, &to_tcp, "");
}

/* drain-not-exact: a timed drain takes every section to user space. */
static void test_drain_not_exact(void **state)
{
	struct dataplane_features timed = keeps_peer, iterator = keeps_peer;

	(void)state;
	timed.drain = DRAIN_TIMED;
	iterator.drain = DRAIN_ITERATOR;
	assert_non_null(strstr(why(&timed, &unix_recv, &to_tcp), "drain signal"));
	assert_non_null(strstr(why(&timed, &unix_recv, &to_unix), "drain signal"));
	assert_null(why(&iterator, &unix_recv, &to_tcp));
	assert_hazards(&timed, &unix_listen, &to_unix, "insert-order,drain-not-exact");
}

/* held-records-capped: a seqpacket target of a datagram section. */
static void test_held_records_capped(void **state)
{
	(void)state;
	assert_non_null(strstr(why(&keeps_peer, &unix_recv, &to_unix_seqpacket), "65,536"));
	assert_null(why(&keeps_peer, &unix_recv, &to_unix));
	assert_hazards(&keeps_peer, &unix_recv, &to_vsock_seqpacket,
		       "vsock-packet-ceiling,held-records-capped");
}

/* Only the speed rules are not losses: datapath=kernel warns about the others. */
static void test_losses(void **state)
{
	struct seen s = {0};

	(void)state;
	auto_datapath_hazards(&stock, &unix_listen, &to_vsock, collect, &s);
	assert_int_equal(s.n, 3); /* retry, ceiling, insert order */
	assert_int_equal(s.losses, 2);
	memset(&s, 0, sizeof(s));
	auto_datapath_hazards(&stock, &unix_listen, &to_tcp, collect, &s);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.losses, 1);
	assert_int_equal(auto_datapath_hazards(&keeps_peer, &unix_recv, &to_unix, NULL, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_backlog_retry),	  cmocka_unit_test(test_packet_ceiling),
	    cmocka_unit_test(test_unix_target_unhashed), cmocka_unit_test(test_tcp_relay_faster),
	    cmocka_unit_test(test_insert_order),	  cmocka_unit_test(test_drain_not_exact),
	    cmocka_unit_test(test_held_records_capped),  cmocka_unit_test(test_losses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
