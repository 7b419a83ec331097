/* SPDX-License-Identifier: GPL-2.0-only */
/* Unit tests for src/common/address.c. Parsing only: nothing here opens a socket. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "address.h"

static struct address parse_ok(const char *text)
{
	struct address addr;
	char err[512] = "";
	int r;

	r = address_parse(text, &addr, err, sizeof(err));
	if (r)
		fail_msg("address_parse(\"%s\") = %d (%s), want 0", text, r, err);
	return addr;
}

/* Every rejected address: -EINVAL, the message contains want, and *out is untouched. */
static void parse_bad(const char *text, const char *want)
{
	struct address addr, before;
	char err[512] = "";
	int r;

	memset(&addr, 0x5a, sizeof(addr));
	before = addr;
	r = address_parse(text, &addr, err, sizeof(err));
	if (r != -EINVAL || !strstr(err, want))
		fail_msg("address_parse(\"%s\") = %d \"%s\", want -EINVAL and \"%s\"", text, r, err,
			 want);
	if (err[0] && err[strlen(err) - 1] == '\n')
		fail_msg("message for \"%s\" ends with a newline", text);
	assert_memory_equal(&addr, &before, sizeof(addr));
}

static void format_is(const char *text, const char *want)
{
	struct address addr = parse_ok(text);
	char buf[256];

	assert_int_equal(address_format(&addr, buf, sizeof(buf)), 0);
	assert_string_equal(buf, want);
}

static void test_unix_listen(void **state)
{
	struct address a;

	(void)state;
	a = parse_ok("UNIX-LISTEN:/run/vsockmap/echo.sock");
	assert_int_equal(a.kind, ADDRESS_UNIX_LISTEN);
	assert_string_equal(a.path, "/run/vsockmap/echo.sock");
	assert_int_equal(a.sock_type, SOCK_STREAM);
	assert_false(a.has_mode);
	assert_false(a.has_user);
	assert_false(a.has_group);
	assert_int_equal(a.backlog, 0);
	assert_true(address_is_listener(&a));
	assert_false(address_is_target(&a));

	a = parse_ok("UNIX-LISTEN:/x.sock,mode=0660,user=root,group=0,backlog=128,fork");
	assert_true(a.has_mode);
	assert_int_equal(a.mode, 0660);
	assert_true(a.has_user);
	assert_int_equal(a.user, 0);
	assert_true(a.has_group);
	assert_int_equal(a.group, 0);
	assert_int_equal(a.backlog, 128);

	/* Keyword and option names are case-insensitive, like socat's; UNIX-L is its alias. */
	a = parse_ok("unix-l:relative.sock,MODE=600");
	assert_int_equal(a.kind, ADDRESS_UNIX_LISTEN);
	assert_string_equal(a.path, "relative.sock");
	assert_int_equal(a.mode, 0600);

	a = parse_ok("UNIX-LISTEN:/x, user = 1000 ,group=root,backlog=65535,PERM=0");
	assert_int_equal(a.user, 1000);
	assert_int_equal(a.backlog, 65535);
	assert_true(a.has_mode);
	assert_int_equal(a.mode, 0);
}

static void test_unix_listen_alias_duplicate(void **state)
{
	(void)state;
	/* perm and owner are socat's aliases of mode and user: one value each. */
	parse_bad("UNIX-LISTEN:/x,backlog=1,backlog=2", "duplicate option \"backlog\"");
	parse_bad("UNIX-L:/x,mode=0600,perm=0600",
		  "duplicate option \"mode\" (given as its alias \"perm\")");
	parse_bad("UNIX-LISTEN:/x,user=0,owner=0", "duplicate option \"user\"");
	parse_bad("UNIX-LISTEN:/x,fork,fork", "duplicate option \"fork\"");
}

static void test_unix_recv_and_connect(void **state)
{
	struct address a;

	(void)state;
	a = parse_ok("UNIX-RECV:/run/vsockmap/logs.sock,mode=0666,user=0,group=root");
	assert_int_equal(a.kind, ADDRESS_UNIX_RECV);
	assert_int_equal(a.sock_type, SOCK_DGRAM);
	assert_int_equal(a.mode, 0666);
	assert_true(address_is_listener(&a));
	assert_false(address_is_target(&a));

	a = parse_ok("UNIX-CONNECT:/run/peer.sock,connect-timeout=2.5");
	assert_int_equal(a.kind, ADDRESS_UNIX_CONNECT);
	assert_int_equal(a.sock_type, SOCK_STREAM);
	assert_string_equal(a.path, "/run/peer.sock");
	assert_int_equal(a.connect_timeout_ms, 2500);
	assert_true(address_is_target(&a));
	assert_false(address_is_listener(&a));

	a = parse_ok("UNIX-CLIENT:peer.sock");
	assert_int_equal(a.kind, ADDRESS_UNIX_CONNECT);
	assert_int_equal(a.connect_timeout_ms, 0);
}

static void test_vsock_connect(void **state)
{
	struct address a;

	(void)state;
	a = parse_ok("VSOCK-CONNECT:2:1234");
	assert_int_equal(a.kind, ADDRESS_VSOCK_CONNECT);
	assert_int_equal(a.cid, 2);
	assert_int_equal(a.port, 1234);
	assert_int_equal(a.sock_type, SOCK_STREAM);
	assert_true(address_is_target(&a));
	assert_false(address_is_listener(&a));

	a = parse_ok("vsock-connect:0:0,type=seqpacket,connect-timeout=0.001");
	assert_int_equal(a.cid, 0);
	assert_int_equal(a.port, 0);
	assert_int_equal(a.sock_type, SOCK_SEQPACKET);
	assert_int_equal(a.connect_timeout_ms, 1);

	a = parse_ok("VSOCK-CONNECT:4294967294:4294967294,type=STREAM,connect-timeout=3600");
	assert_int_equal(a.cid, 4294967294u);
	assert_int_equal(a.port, 4294967294u);
	assert_int_equal(a.sock_type, SOCK_STREAM);
	assert_int_equal(a.connect_timeout_ms, 3600000);

	a = parse_ok("VSOCK-CONNECT:0003:0080");
	assert_int_equal(a.cid, 3);
	assert_int_equal(a.port, 80);
}

/* What a reload compares: the same text is equal, any option or address difference is not. */
static void test_equal(void **state)
{
	struct address a, b;

	(void)state;
	a = parse_ok("UNIX-LISTEN:/run/x.sock,mode=0660");
	b = parse_ok("unix-listen:/run/x.sock,mode=660");
	assert_true(address_equal(&a, &b));
	b = parse_ok("UNIX-LISTEN:/run/x.sock");
	assert_false(address_equal(&a, &b));
	b = parse_ok("UNIX-LISTEN:/run/y.sock,mode=0660");
	assert_false(address_equal(&a, &b));
	b = parse_ok("UNIX-RECV:/run/x.sock,mode=0660");
	assert_false(address_equal(&a, &b));

	a = parse_ok("VSOCK-CONNECT:2:1234");
	b = parse_ok("VSOCK-CONNECT:2:1234");
	assert_true(address_equal(&a, &b));
	b = parse_ok("VSOCK-CONNECT:3:1234");
	assert_false(address_equal(&a, &b));
	b = parse_ok("VSOCK-CONNECT:2:1234,type=seqpacket");
	assert_false(address_equal(&a, &b));
	b = parse_ok("VSOCK-CONNECT:2:1234,connect-timeout=2");
	assert_false(address_equal(&a, &b));

	a = parse_ok("TCP-CONNECT:127.0.0.1:80");
	b = parse_ok("TCP-CONNECT:127.0.0.2:80");
	assert_false(address_equal(&a, &b));
}

static void test_tcp_connect(void **state)
{
	struct address a;

	(void)state;
	a = parse_ok("TCP-CONNECT:127.0.0.1:8080,connect-timeout=2");
	assert_int_equal(a.kind, ADDRESS_TCP_CONNECT);
	assert_int_equal(a.inet_family, AF_INET);
	assert_int_equal(a.port, 8080);
	assert_int_equal(a.connect_timeout_ms, 2000);
	assert_true(address_is_target(&a));
	a = parse_ok("TCP:[::1]:443");
	assert_int_equal(a.inet_family, AF_INET6);
	assert_int_equal(a.inet_addr[15], 1);
	format_is("TCP:127.0.0.1:80", "TCP-CONNECT:127.0.0.1:80");
	format_is("tcp-connect:[::1]:80", "TCP-CONNECT:[::1]:80");
	parse_bad("TCP-CONNECT:localhost:80", "host \"localhost\" is not a numeric IPv4 address");
	parse_bad("TCP-CONNECT:127.0.0.1", "missing port");
	parse_bad("TCP-CONNECT:127.0.0.1:0", "port");
	parse_bad("TCP-CONNECT:127.0.0.1:65536", "port");
	parse_bad("TCP-CONNECT:[::1:80", "expected TCP-CONNECT:[IPV6]:PORT");
	parse_bad("TCP-CONNECT", "missing HOST:PORT");
	parse_bad("TCP-CONNECT::80", "missing host");
	parse_bad("TCP-CONNECT:127.0.0.1:80,mode=0600", "does not apply to TCP-CONNECT");
}

static void test_port_listeners(void **state)
{
	struct address a;

	(void)state;
	a = parse_ok("VSOCK-LISTEN:1234,fork,backlog=8,max-children=4");
	assert_int_equal(a.kind, ADDRESS_VSOCK_LISTEN);
	assert_int_equal(a.port, 1234);
	assert_true(a.fork);
	assert_int_equal(a.backlog, 8);
	assert_int_equal(a.max_children, 4);
	assert_true(address_is_listener(&a));
	assert_true(address_is_stream_listener(&a));
	assert_false(address_has_file(&a));
	assert_false(address_is_target(&a));
	a = parse_ok("TCP-LISTEN:8080,fork,reuseaddr,rcvbuf=65536,sndbuf=131072");
	assert_int_equal(a.kind, ADDRESS_TCP_LISTEN);
	assert_int_equal(a.inet_family, AF_INET);
	assert_true(a.reuseaddr);
	assert_int_equal(a.rcvbuf, 65536);
	assert_int_equal(a.sndbuf, 131072);
	a = parse_ok("TCP-L:80,bind=[::1]");
	assert_int_equal(a.inet_family, AF_INET6);
	assert_int_equal(a.inet_addr[15], 1);
	format_is("VSOCK-L:5,fork", "VSOCK-LISTEN:5");
	format_is("TCP4-LISTEN:80", "TCP-LISTEN:80");
	format_is("TCP-LISTEN:80,bind=127.0.0.1", "TCP-LISTEN:80,bind=127.0.0.1");
	format_is("TCP-LISTEN:80,bind=::", "TCP-LISTEN:80,bind=[::]");
	parse_bad("VSOCK-LISTEN", "missing port: expected VSOCK-LISTEN:PORT");
	parse_bad("VSOCK-LISTEN:", "missing port: expected VSOCK-LISTEN:PORT");
	parse_bad("TCP-LISTEN:0", "port");
	parse_bad("TCP-LISTEN:65536", "port");
	parse_bad("VSOCK-LISTEN:4294967295", "port"); /* VMADDR_PORT_ANY */
	parse_bad("TCP-LISTEN:80,bind=localhost", "bind=localhost is not a numeric IPv4 or IPv6");
	parse_bad("VSOCK-LISTEN:80,bind=0.0.0.0", "option \"bind\" does not apply to VSOCK-LISTEN");
	parse_bad("TCP-LISTEN:80,mode=0600", "option \"mode\" does not apply to TCP-LISTEN");
	parse_bad("UNIX-LISTEN:/x,reuseaddr",
		  "option \"reuseaddr\" does not apply to UNIX-LISTEN (only to VSOCK-LISTEN, "
		  "TCP-LISTEN)");
	parse_bad("TCP-LISTEN:80,rcvbuf=0", "rcvbuf 0 is out of range");
	parse_bad("TCP-LISTEN:80,reuseaddr=1", "option \"reuseaddr\" takes no value");
	a = parse_ok("UNIX-LISTEN:/x,unlink-early,unlink-close");
	assert_true(a.unlink_early);
	parse_bad("TCP-LISTEN:80,unlink-early",
		  "option \"unlink-early\" does not apply to TCP-LISTEN");
}

static void test_unknown_type(void **state)
{
	(void)state;
	parse_bad("TCP-LISTN:8080", "did you mean \"TCP-LISTEN\"? supported: UNIX-LISTEN, "
				    "UNIX-RECV, UNIX-CONNECT, VSOCK-CONNECT, TCP-CONNECT, "
				    "VSOCK-LISTEN, TCP-LISTEN)");
	parse_bad("UNIX-LISTN:/x", "did you mean \"UNIX-LISTEN\"?");
	parse_bad("UNIX:/x", "unknown address type \"UNIX\"");
	parse_bad("/run/x.sock", "unknown address type \"/run/x.sock\"");
	parse_bad(":/x", "missing address type");
	parse_bad("", "empty address");
}

static void test_missing_path(void **state)
{
	(void)state;
	parse_bad("UNIX-LISTEN:", "missing path after UNIX-LISTEN:");
	parse_bad("UNIX-LISTEN", "missing path: expected UNIX-LISTEN:PATH");
	parse_bad("UNIX-RECV:,mode=0600", "missing path after UNIX-RECV:");
	parse_bad("UNIX-CONNECT:", "missing path after UNIX-CONNECT:");
	parse_bad("UNIX-LISTEN,mode=0600", "missing path");
	parse_bad("VSOCK-CONNECT", "missing CID:PORT");
	parse_bad("VSOCK-CONNECT:", "missing CID:PORT");
}

static void test_path_length(void **state)
{
	char text[256], path[200];

	(void)state;
	memset(path, 'a', sizeof(path));
	path[0] = '/';

	snprintf(text, sizeof(text), "UNIX-LISTEN:%.120s", path);
	parse_bad(text, "path is 120 bytes, longer than sun_path's 107");
	snprintf(text, sizeof(text), "UNIX-CONNECT:%.108s", path);
	parse_bad(text, "path is 108 bytes, longer than sun_path's 107");

	/* 107 bytes plus the NUL fill sun_path exactly. */
	snprintf(text, sizeof(text), "UNIX-RECV:%.107s,mode=0600", path);
	assert_int_equal(strlen(parse_ok(text).path), 107);

	parse_bad("UNIX-LISTEN: /x", "starts or ends with whitespace");
	parse_bad("UNIX-LISTEN:/x\t", "control character 0x09");
}

static void test_cid(void **state)
{
	(void)state;
	parse_bad("VSOCK-CONNECT:host:1234", "CID \"host\" is not a decimal number");
	parse_bad("VSOCK-CONNECT:-1:1234", "CID \"-1\" is not a decimal number");
	parse_bad("VSOCK-CONNECT:0x2:1234", "CID \"0x2\" is not a decimal number");
	parse_bad("VSOCK-CONNECT:4294967296:1234",
		  "CID 4294967296 is out of range (0..4294967295)");
	parse_bad("VSOCK-CONNECT:99999999999999999999999:1", "is out of range (0..4294967295)");
	parse_bad("VSOCK-CONNECT:4294967295:1234", "CID 4294967295 is VMADDR_CID_ANY");
	parse_bad("VSOCK-CONNECT:4294967295:1234", "only makes sense for bind()");
	parse_bad("VSOCK-CONNECT::1234", "missing CID");
	parse_bad("VSOCK-CONNECT:2x:1234", "trailing garbage \"x\" after CID 2");
}

static void test_port(void **state)
{
	(void)state;
	parse_bad("VSOCK-CONNECT:2", "missing port: expected VSOCK-CONNECT:CID:PORT");
	parse_bad("VSOCK-CONNECT:2:", "missing port");
	parse_bad("VSOCK-CONNECT:2:,type=stream", "missing port");
	parse_bad("VSOCK-CONNECT:2:http", "port \"http\" is not a decimal number");
	parse_bad("VSOCK-CONNECT:2:4294967296", "port 4294967296 is out of range (0..4294967295)");
	parse_bad("VSOCK-CONNECT:2:4294967295", "port 4294967295 is VMADDR_PORT_ANY");
}

static void test_trailing_garbage(void **state)
{
	(void)state;
	parse_bad("VSOCK-CONNECT:2:1234x", "trailing garbage \"x\" after port 1234");
	parse_bad("VSOCK-CONNECT:2:1234:5", "trailing garbage \":5\" after port 1234");
	parse_bad("VSOCK-CONNECT:2:1234 ", "trailing garbage \" \" after port 1234");
	parse_bad("UNIX-LISTEN:/x,backlog=10k", "trailing garbage \"k\" after backlog 10");
	parse_bad("UNIX-LISTEN:/x,mode=0660x", "mode \"0660x\" is not an octal number");
	parse_bad("UNIX-CONNECT:/x,connect-timeout=5s", "connect-timeout \"5s\" is not a number");
	parse_bad("UNIX-LISTEN:/x,user=12ab", "trailing garbage \"ab\" after user 12");
}

static void test_option_applies(void **state)
{
	(void)state;
	parse_bad(
	    "VSOCK-CONNECT:2:1,mode=0660",
	    "option \"mode\" does not apply to VSOCK-CONNECT (only to UNIX-LISTEN, UNIX-RECV)");
	parse_bad("VSOCK-CONNECT:2:1,user=root", "option \"user\" does not apply to VSOCK-CONNECT");
	parse_bad("UNIX-CONNECT:/x,group=root", "option \"group\" does not apply to UNIX-CONNECT");
	parse_bad("UNIX-LISTEN:/x,type=seqpacket",
		  "option \"type\" does not apply to UNIX-LISTEN (only to VSOCK-CONNECT)");
	parse_bad("UNIX-CONNECT:/x,type=stream", "option \"type\" does not apply to UNIX-CONNECT");
	parse_bad("UNIX-LISTEN:/x,connect-timeout=1",
		  "option \"connect-timeout\" does not apply to UNIX-LISTEN (only to UNIX-CONNECT, "
		  "VSOCK-CONNECT, TCP-CONNECT)");
	parse_bad("UNIX-RECV:/x,backlog=5", "option \"backlog\" does not apply to UNIX-RECV");
	parse_bad("VSOCK-CONNECT:2:1,backlog=5",
		  "option \"backlog\" does not apply to VSOCK-CONNECT");
	parse_bad("UNIX-RECV:/x,fork", "option \"fork\" does not apply to UNIX-RECV");
	parse_bad("VSOCK-CONNECT:2:1,fork", "option \"fork\" does not apply to VSOCK-CONNECT");
}

static void test_unknown_option(void **state)
{
	(void)state;
	parse_bad("UNIX-LISTEN:/x,mdoe=0660", "unknown option \"mdoe\" (did you mean \"mode\"?)");
	parse_bad("UNIX-LISTEN:/x,usr=root", "unknown option \"usr\" (did you mean \"user\"?)");
	parse_bad("UNIX-LISTEN:/x,backlg=3", "(did you mean \"backlog\"?)");
	parse_bad("UNIX-CONNECT:/x,connect_timeout=3", "(did you mean \"connect-timeout\"?)");
	parse_bad("VSOCK-CONNECT:2:1,typ=stream", "(did you mean \"type\"?)");
	parse_bad("UNIX-LISTEN:/x,reuseaddrr", "unknown option \"reuseaddrr\" (did you mean \"reuseaddr\"?)");
	parse_bad("UNIX-LISTEN:/x,ip-pktinfo", "unknown option \"ip-pktinfo\"");
	parse_bad("UNIX-LISTEN:/x,", "empty option");
	parse_bad("UNIX-LISTEN:/x,,mode=0600", "empty option");
	parse_bad("UNIX-LISTEN:/x,=0600", "empty option");
}

static void test_option_values(void **state)
{
	struct address a;

	(void)state;
	parse_bad("UNIX-LISTEN:/x,mode", "option \"mode\" needs a value (mode=...)");
	parse_bad("UNIX-LISTEN:/x,mode=", "option \"mode\" needs a value");
	parse_bad("UNIX-LISTEN:/x,mode=0968", "mode \"0968\" is not an octal number");
	parse_bad("UNIX-LISTEN:/x,mode=rw", "mode \"rw\" is not an octal number");
	parse_bad("UNIX-LISTEN:/x,mode=010000", "mode 010000 is larger than 07777");
	parse_bad("UNIX-LISTEN:/x,mode=777777777777777777777", "is larger than 07777");
	a = parse_ok("UNIX-LISTEN:/x,mode=07777");
	assert_int_equal(a.mode, 07777);

	parse_bad("UNIX-LISTEN:/x,user=no-such-user-vsockmap",
		  "unknown user \"no-such-user-vsockmap\"");
	parse_bad("UNIX-LISTEN:/x,group=no-such-group-vsockmap",
		  "unknown group \"no-such-group-vsockmap\"");
	parse_bad("UNIX-LISTEN:/x,user=4294967295", "user 4294967295 is out of range");
	parse_bad("UNIX-LISTEN:/x,group=4294967296", "group 4294967296 is out of range");
	a = parse_ok("UNIX-LISTEN:/x,user=4294967294,group=12345");
	assert_int_equal(a.user, 4294967294u);
	assert_int_equal(a.group, 12345);

	parse_bad("VSOCK-CONNECT:2:1,type=dgram",
		  "type \"dgram\" is not supported for VSOCK-CONNECT (use stream or seqpacket)");
	parse_bad("VSOCK-CONNECT:2:1,type=", "option \"type\" needs a value");

	parse_bad("UNIX-LISTEN:/x,backlog=0", "backlog 0 is out of range (1..65535)");
	parse_bad("UNIX-LISTEN:/x,backlog=65536", "backlog 65536 is out of range (1..65535)");
	parse_bad("UNIX-LISTEN:/x,backlog=-1", "backlog \"-1\" is not a decimal number");

	parse_bad("UNIX-LISTEN:/x,fork=yes", "option \"fork\" takes no value");
}

static void test_connect_timeout(void **state)
{
	(void)state;
	assert_int_equal(parse_ok("VSOCK-CONNECT:2:1,connect-timeout=5").connect_timeout_ms, 5000);
	assert_int_equal(parse_ok("VSOCK-CONNECT:2:1,connect-timeout=0.25").connect_timeout_ms,
			 250);
	assert_int_equal(parse_ok("VSOCK-CONNECT:2:1,connect-timeout=1.5").connect_timeout_ms,
			 1500);
	/* Rounded up: a tiny timeout must not turn into "no timeout". */
	assert_int_equal(parse_ok("VSOCK-CONNECT:2:1,connect-timeout=0.0001").connect_timeout_ms,
			 1);
	assert_int_equal(parse_ok("VSOCK-CONNECT:2:1,connect-timeout=3599.9999").connect_timeout_ms,
			 3600000);

	parse_bad("VSOCK-CONNECT:2:1,connect-timeout=0",
		  "connect-timeout 0 must be greater than 0");
	parse_bad("VSOCK-CONNECT:2:1,connect-timeout=0.000", "must be greater than 0");
	parse_bad("VSOCK-CONNECT:2:1,connect-timeout=3600.5",
		  "connect-timeout 3600.5 is longer than 3600 seconds");
	parse_bad("VSOCK-CONNECT:2:1,connect-timeout=99999999999999999999", "longer than 3600");
	parse_bad("VSOCK-CONNECT:2:1,connect-timeout=-1", "connect-timeout \"-1\" is not a number");
	parse_bad("VSOCK-CONNECT:2:1,connect-timeout=.5", "is not a number of seconds");
	parse_bad("VSOCK-CONNECT:2:1,connect-timeout=1.", "is not a number of seconds");
	parse_bad("VSOCK-CONNECT:2:1,connect-timeout=1e3", "is not a number of seconds");
	parse_bad("VSOCK-CONNECT:2:1,connect-timeout=1,5", "unknown option \"5\"");
}

static void test_format(void **state)
{
	struct address a = parse_ok("VSOCK-CONNECT:2:1234");
	char small[8];

	(void)state;
	format_is("UNIX-LISTEN:/path,mode=0600,fork", "UNIX-LISTEN:/path");
	format_is("unix-l:/path", "UNIX-LISTEN:/path");
	format_is("UNIX-RECV:/logs.sock", "UNIX-RECV:/logs.sock");
	format_is("UNIX-CLIENT:/peer", "UNIX-CONNECT:/peer");
	format_is("VSOCK-CONNECT:2:1234,connect-timeout=1", "VSOCK-CONNECT:2:1234");
	format_is("VSOCK-CONNECT:2:1234,type=stream", "VSOCK-CONNECT:2:1234");
	format_is("VSOCK-CONNECT:2:1234,type=seqpacket", "VSOCK-CONNECT:2:1234,type=seqpacket");

	assert_int_equal(address_format(&a, small, sizeof(small)), -ENOSPC);
	a.kind = (enum address_kind)42;
	assert_int_equal(address_format(&a, small, sizeof(small)), -EINVAL);
	assert_false(address_is_listener(NULL));
	assert_false(address_is_target(NULL));
}

static void test_max_children(void **state)
{
	struct address a, b;

	(void)state;
	a = parse_ok("UNIX-LISTEN:/x.sock,max-children=2");
	assert_int_equal(a.max_children, 2);
	b = parse_ok("UNIX-LISTEN:/x.sock,max-connections=7");
	assert_int_equal(b.max_children, 7);
	/* A reload changes it in place: not part of the socket's identity. */
	assert_true(address_equal(&a, &b));
	assert_int_equal(parse_ok("UNIX-LISTEN:/x.sock").max_children, 0);
	parse_bad("UNIX-LISTEN:/x.sock,max-children=0", "max-children");
	parse_bad("UNIX-LISTEN:/x.sock,max-children=1000001", "max-children");
	parse_bad("UNIX-RECV:/x.sock,max-children=2", "max-children");
	parse_bad("VSOCK-CONNECT:2:1,max-children=2", "max-children");
}

/* Input quoted in a message cannot add lines or terminal escapes to it. */
static void test_message_printable(void **state)
{
	char err[256];
	struct address a;

	(void)state;
	assert_int_equal(address_parse("VSOCK-\nX\x1b[31m:1", &a, err, sizeof(err)), -EINVAL);
	assert_null(strchr(err, '\n'));
	assert_null(strchr(err, '\x1b'));
	assert_non_null(strstr(err, "\"VSOCK-?X?[31m\""));
}

static void test_helpers(void **state)
{
	static const char *const names[] = {"listen", "connect"};
	unsigned int ms = 7;
	char err[256];

	(void)state;
	assert_string_equal(address_closest_name("conect", names, 2), "connect");
	assert_string_equal(address_closest_name("LISTEN", names, 2), "listen");
	assert_null(address_closest_name("bind", names, 2));
	assert_null(address_closest_name("x", names, 2));
	assert_string_equal(address_kind_name(ADDRESS_UNIX_RECV), "UNIX-RECV");

	assert_int_equal(address_check_path("/run/x.sock", err, sizeof(err)), 0);
	assert_int_equal(address_check_path("", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "path is empty");

	assert_int_equal(address_parse_seconds("drain-timeout", "0", true, &ms, err, sizeof(err)),
			 0);
	assert_int_equal(ms, 0);
	assert_int_equal(address_parse_seconds("x", "0", false, &ms, NULL, 0), -EINVAL);
	/* No err buffer: still fails cleanly. */
	assert_int_equal(address_parse("BOGUS:1", &(struct address){0}, NULL, 0), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_unix_listen),
	    cmocka_unit_test(test_unix_listen_alias_duplicate),
	    cmocka_unit_test(test_unix_recv_and_connect),
	    cmocka_unit_test(test_vsock_connect),
	    cmocka_unit_test(test_equal),
	    cmocka_unit_test(test_tcp_connect),
	    cmocka_unit_test(test_unknown_type),
	    cmocka_unit_test(test_missing_path),
	    cmocka_unit_test(test_path_length),
	    cmocka_unit_test(test_cid),
	    cmocka_unit_test(test_port),
	    cmocka_unit_test(test_trailing_garbage),
	    cmocka_unit_test(test_option_applies),
	    cmocka_unit_test(test_unknown_option),
	    cmocka_unit_test(test_option_values),
	    cmocka_unit_test(test_connect_timeout),
	    cmocka_unit_test(test_format),
	    cmocka_unit_test(test_helpers),
	    cmocka_unit_test(test_port_listeners),
	    cmocka_unit_test(test_max_children),
	    cmocka_unit_test(test_message_printable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
