// SPDX-License-Identifier: GPL-2.0-only
/* datapath=auto: each section kind's path, on each kind of kernel the probes tell apart. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "auto_datapath.h"
#include "bpf_dataplane.h"

/* A stock kernel: no backlog wake, and unix shutdown() unhashes the peer. */
static const struct dataplane_features stock = {.shutdown_unhashes_peer = true};
/* kernel/ patch 1 (the wake), a unix shutdown() that leaves the peer in the map. */
static const struct dataplane_features patched = {.backlog_wakes = true};

static const char *why(const struct dataplane_features *f, enum address_kind listen,
		       enum address_kind target)
{
	return auto_datapath_userspace_why(f, listen, target);
}

static void test_stock_kernel_streams_in_userspace(void **state)
{
	(void)state;
	assert_non_null(why(&stock, ADDRESS_UNIX_LISTEN, ADDRESS_VSOCK_CONNECT));
	assert_non_null(why(&stock, ADDRESS_UNIX_LISTEN, ADDRESS_UNIX_CONNECT));
	assert_non_null(why(&stock, ADDRESS_UNIX_LISTEN, ADDRESS_TCP_CONNECT));
	assert_non_null(strstr(why(&stock, ADDRESS_UNIX_LISTEN, ADDRESS_UNIX_CONNECT), "shutdown"));
	assert_non_null(strstr(why(&stock, ADDRESS_UNIX_LISTEN, ADDRESS_TCP_CONNECT), "TCP"));
	assert_true(auto_datapath_unix_target_unhashed(&stock, ADDRESS_UNIX_LISTEN,
						       ADDRESS_UNIX_CONNECT));
}

static void test_stock_kernel_datagrams(void **state)
{
	(void)state;
	/* Datagrams into vsock wait out the retry like a stream... */
	assert_non_null(why(&stock, ADDRESS_UNIX_RECV, ADDRESS_VSOCK_CONNECT));
	/* ...into unix and TCP they keep the kernel path (no row measures them against it). */
	assert_null(why(&stock, ADDRESS_UNIX_RECV, ADDRESS_UNIX_CONNECT));
	assert_null(why(&stock, ADDRESS_UNIX_RECV, ADDRESS_TCP_CONNECT));
	assert_false(auto_datapath_unix_target_unhashed(&stock, ADDRESS_UNIX_RECV,
							ADDRESS_UNIX_CONNECT));
}

static void test_patched_kernel(void **state)
{
	(void)state;
	/* With the wake, vsock is level and keeps the kernel path; so does a unix target... */
	assert_null(why(&patched, ADDRESS_UNIX_LISTEN, ADDRESS_VSOCK_CONNECT));
	assert_null(why(&patched, ADDRESS_UNIX_RECV, ADDRESS_VSOCK_CONNECT));
	assert_null(why(&patched, ADDRESS_UNIX_LISTEN, ADDRESS_UNIX_CONNECT));
	assert_false(auto_datapath_unix_target_unhashed(&patched, ADDRESS_UNIX_LISTEN,
							ADDRESS_UNIX_CONNECT));
	/* ...while TCP does not depend on the wake. */
	assert_non_null(why(&patched, ADDRESS_UNIX_LISTEN, ADDRESS_TCP_CONNECT));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stock_kernel_streams_in_userspace),
	    cmocka_unit_test(test_stock_kernel_datagrams),
	    cmocka_unit_test(test_patched_kernel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
