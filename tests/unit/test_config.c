/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Unit tests for src/common/config.c. Each case writes a temporary file under /tmp and checks the
 * exact "PATH:LINE: " prefix of the message. Run from the repository root (the shipped
 * example is read from config/vsockmap.conf).
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>
#include <cmocka.h>

#include "config.h"

#define EXAMPLE_CONFIG "config/vsockmap.conf"
#define ECHO	       "[echo]\nlisten = UNIX-LISTEN:/run/t/echo.sock\nconnect = VSOCK-CONNECT:2:5000\n"

/* A config whose memory must survive a failed load unchanged. */
static struct config poisoned;

static void write_temp(char *path, const char *content, size_t len)
{
	int fd;

	strcpy(path, "/tmp/vsockmap-test-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, len), (ssize_t)len);
	close(fd);
}

static void load_ok(const char *content, struct config *cfg)
{
	char path[64], err[1024] = "";
	int r;

	write_temp(path, content, strlen(content));
	r = config_load(path, cfg, err, sizeof(err));
	unlink(path);
	if (r)
		fail_msg("config_load() = %d (%s), want 0 for:\n%s", r, err, content);
	assert_string_equal(cfg->path, path);
}

/* Fails with -EINVAL and "PATH:LINE: ...want..." (line 0: "PATH: ...want..."). */
static void load_bad_len(const char *content, size_t len, unsigned int line, const char *want)
{
	char path[64], err[1024] = "", prefix[96];
	struct config cfg;
	int r;

	write_temp(path, content, len);
	memset(&poisoned, 0x5a, sizeof(poisoned));
	cfg = poisoned;
	r = config_load(path, &cfg, err, sizeof(err));
	unlink(path);
	if (line)
		snprintf(prefix, sizeof(prefix), "%s:%u: ", path, line);
	else
		snprintf(prefix, sizeof(prefix), "%s: ", path);
	if (r != -EINVAL || strncmp(err, prefix, strlen(prefix)) ||
	    !strstr(err + strlen(prefix), want))
		fail_msg("config_load() = %d \"%s\", want -EINVAL and \"%s...%s\" for:\n%s", r, err,
			 prefix, want, content);
	assert_memory_equal(&cfg, &poisoned, sizeof(cfg));
}

static void load_bad(const char *content, unsigned int line, const char *want)
{
	load_bad_len(content, strlen(content), line, want);
}

static void test_full_config(void **state)
{
	struct config cfg;
	const struct redirect_config *r;

	(void)state;
	load_ok("[daemon]\n" /* 1 */
		"control = /run/t/ctl.sock\n"
		"connect-timeout = 2.5\n"
		"sndbuf = 1M\n"
		"drain-timeout = 0\n" /* 5 */
		"log-level = debug\n"
		"\n"
		"[echo]\n" /* 8 */
		"listen = UNIX-LISTEN:/run/t/echo.sock,mode=0660,user=root,group=0,backlog=64\n"
		"connect = VSOCK-CONNECT:2:5000,type=seqpacket,connect-timeout=0.5\n"
		"[logs]\n" /* 11 */
		"connect = VSOCK-CONNECT:3:5001\n"
		"listen = UNIX-RECV:/run/t/logs.sock,mode=0666\n"
		"[unix.to-unix_2]\n" /* 14 */
		"listen = UNIX-LISTEN:relative.sock,fork\n"
		"connect = UNIX-CONNECT:/run/peer.sock\n",
		&cfg);

	assert_string_equal(cfg.daemon.control_path, "/run/t/ctl.sock");
	assert_int_equal(cfg.daemon.connect_timeout_ms, 2500);
	assert_int_equal(cfg.daemon.sndbuf, 1 << 20);
	assert_int_equal(cfg.daemon.drain_timeout_ms, 0);
	assert_int_equal(cfg.daemon.log_level, LOG_DEBUG);

	assert_int_equal(cfg.n_redirects, 3);
	r = &cfg.redirects[0];
	assert_string_equal(r->name, "echo");
	assert_int_equal(r->line, 8);
	assert_int_equal(r->listen.kind, ADDRESS_UNIX_LISTEN);
	assert_string_equal(r->listen.path, "/run/t/echo.sock");
	assert_int_equal(r->listen.mode, 0660);
	assert_int_equal(r->listen.backlog, 64);
	assert_int_equal(r->connect.kind, ADDRESS_VSOCK_CONNECT);
	assert_int_equal(r->connect.cid, 2);
	assert_int_equal(r->connect.port, 5000);
	assert_int_equal(r->connect.sock_type, SOCK_SEQPACKET);
	assert_int_equal(r->connect.connect_timeout_ms, 500);

	r = &cfg.redirects[1];
	assert_string_equal(r->name, "logs");
	assert_int_equal(r->line, 11);
	assert_int_equal(r->listen.kind, ADDRESS_UNIX_RECV);
	assert_int_equal(r->listen.sock_type, SOCK_DGRAM);
	assert_int_equal(r->connect.cid, 3);

	r = &cfg.redirects[2];
	assert_string_equal(r->name, "unix.to-unix_2");
	assert_int_equal(r->line, 14);
	assert_string_equal(r->listen.path, "relative.sock");
	assert_int_equal(r->connect.kind, ADDRESS_UNIX_CONNECT);
	config_free(&cfg);
	assert_null(cfg.redirects);
	assert_int_equal(cfg.n_redirects, 0);
}

static void test_defaults_and_layout(void **state)
{
	struct config cfg;

	(void)state;
	load_ok(ECHO, &cfg);
	assert_string_equal(cfg.daemon.control_path, CONFIG_DEFAULT_CONTROL_PATH);
	assert_int_equal(cfg.daemon.connect_timeout_ms, 5000);
	assert_int_equal(cfg.daemon.sndbuf, 4 << 20);
	assert_int_equal(cfg.daemon.drain_timeout_ms, 10000);
	assert_int_equal(cfg.daemon.log_level, LOG_INFO);
	assert_int_equal(cfg.daemon.max_redirects_per_uid, 1024);
	assert_int_equal(cfg.redirects[0].line, 1);
	config_free(&cfg);

	/* BOM, CRLF, comments, indentation (not a continuation), key=value without spaces,
	 * [daemon] after the redirects, comment lines longer than inih's line buffer. */
	load_ok("\xef\xbb\xbf# leading comment\r\n"
		"; another "
		"0123456789012345678901234567890123456789012345678901234567890123456789"
		"0123456789012345678901234567890123456789012345678901234567890123456789"
		"0123456789012345678901234567890123456789012345678901234567890123456789\r\n"
		"  [a]   ; inline comment\r\n"
		"\tlisten=UNIX-LISTEN:/run/t/a b.sock  ; inline comment\r\n"
		"    connect   =   VSOCK-CONNECT:2:1 # inline comment\r\n"
		"\r\n"
		"[daemon]\n"
		"log-level = ERR\n",
		&cfg);
	assert_int_equal(cfg.n_redirects, 1);
	assert_string_equal(cfg.redirects[0].name, "a");
	assert_int_equal(cfg.redirects[0].line, 3);
	assert_string_equal(cfg.redirects[0].listen.path, "/run/t/a b.sock");
	assert_int_equal(cfg.redirects[0].connect.port, 1);
	assert_int_equal(cfg.daemon.log_level, LOG_ERR);
	config_free(&cfg);
}

static void test_example_config(void **state)
{
	const struct redirect_config *r;
	struct config cfg;
	char err[1024] = "";
	int ret;

	(void)state;
	ret = config_load(EXAMPLE_CONFIG, &cfg, err, sizeof(err));
	if (ret)
		fail_msg("%s does not load (%d): %s (run the tests from the repo root)",
			 EXAMPLE_CONFIG, ret, err);
	assert_string_equal(cfg.daemon.control_path, "/run/vsockmap/control.sock");
	assert_int_equal(cfg.n_redirects, 2);

	r = &cfg.redirects[0];
	assert_string_equal(r->name, "echo");
	assert_int_equal(r->listen.kind, ADDRESS_UNIX_LISTEN);
	assert_string_equal(r->listen.path, "/run/vsockmap/echo.sock");
	assert_true(r->listen.has_mode);
	assert_int_equal(r->listen.mode, 0660);
	assert_int_equal(r->connect.kind, ADDRESS_VSOCK_CONNECT);
	assert_int_equal(r->connect.cid, 1);
	assert_int_equal(r->connect.port, 5000);
	assert_int_equal(r->connect.sock_type, SOCK_STREAM);

	r = &cfg.redirects[1];
	assert_string_equal(r->name, "logs");
	assert_int_equal(r->listen.kind, ADDRESS_UNIX_RECV);
	assert_string_equal(r->listen.path, "/run/vsockmap/logs.sock");
	assert_int_equal(r->listen.mode, 0666);
	assert_int_equal(r->connect.cid, 1);
	assert_int_equal(r->connect.port, 5001);
	config_free(&cfg);
}

static void test_unknown_keys(void **state)
{
	(void)state;
	load_bad("[echo]\nlisten = UNIX-LISTEN:/x\nconect = VSOCK-CONNECT:2:1\n", 3,
		 "unknown key \"conect\" (did you mean \"connect\"?)");
	load_bad("[echo]\nListen = UNIX-LISTEN:/x\n", 2,
		 "unknown key \"Listen\" (did you mean \"listen\"?)");
	load_bad("[echo]\nbind = UNIX-LISTEN:/x\n", 2,
		 "unknown key \"bind\" (valid keys in a redirect section: listen, connect, "
		 "allow-uid, allow-gid)");
	load_bad("[echo]\ncontrol = /run/x.sock\n", 2, "unknown key \"control\"");
	load_bad("[daemon]\nsndbuff = 4M\n" ECHO, 2,
		 "unknown key \"sndbuff\" (did you mean \"sndbuf\"?)");
	load_bad("[daemon]\nconnect_timeout = 4\n" ECHO, 2, "(did you mean \"connect-timeout\"?)");
	load_bad(
	    ECHO "[daemon]\nlisten = UNIX-LISTEN:/x\n", 5,
	    "unknown key \"listen\" (valid keys in [daemon]: control, control-mode, control-group, "
	    "control-admin-group, connect-timeout, sndbuf, drain-timeout, log-level, idle-timeout, "
	    "max-redirects, max-redirects-per-uid, datapath, "
	    "fastpath)");
}

static void test_key_outside_section(void **state)
{
	(void)state;
	load_bad("# comment\nlisten = UNIX-LISTEN:/x\n" ECHO, 2,
		 "key \"listen\" is outside any section");
}

static void test_duplicates(void **state)
{
	(void)state;
	load_bad("[echo]\nlisten = UNIX-LISTEN:/x\nlisten = UNIX-LISTEN:/y\n", 3,
		 "duplicate key \"listen\" (first set at line 2)");
	load_bad("[daemon]\nsndbuf = 1M\n\nsndbuf = 2M\n" ECHO, 4,
		 "duplicate key \"sndbuf\" (first set at line 2)");
	load_bad(ECHO "[other]\nlisten = UNIX-LISTEN:/o\nconnect = VSOCK-CONNECT:2:2\n\n"
		      "[echo]\n",
		 8, "duplicate section [echo] (first defined at line 1)");
	load_bad("[daemon]\n" ECHO "[daemon]\n", 5,
		 "duplicate section [daemon] (first defined at line 1)");
}

static void test_missing_keys(void **state)
{
	(void)state;
	load_bad("[echo]\nconnect = VSOCK-CONNECT:2:1\n", 1, "[echo] has no listen= address");
	load_bad("\n[echo]\nlisten = UNIX-LISTEN:/x\n"
		 "[daemon]\n",
		 2, "[echo] has no connect= address");
	load_bad(ECHO "\n[empty]\n", 5, "[empty] has no listen= address");
	load_bad("[empty]\n" ECHO, 1, "[empty] has no listen= address");
}

static void test_wrong_roles(void **state)
{
	(void)state;
	load_bad("[echo]\nlisten = UNIX-LISTEN:/x\nconnect = UNIX-LISTEN:/y\n", 3,
		 "connect: UNIX-LISTEN:/y is a listen address; connect needs UNIX-CONNECT, "
		 "VSOCK-CONNECT or TCP-CONNECT");
	load_bad("[echo]\nconnect = UNIX-RECV:/y\n", 2,
		 "connect: UNIX-RECV:/y is a listen address");
	load_bad("[echo]\nlisten = VSOCK-CONNECT:2:1\n", 2,
		 "listen: VSOCK-CONNECT:2:1 is a connect address; listen needs UNIX-LISTEN, "
		 "UNIX-RECV, VSOCK-LISTEN or TCP-LISTEN");
	load_bad("[a]\nlisten = VSOCK-LISTEN:5000\nconnect = UNIX-CONNECT:/x\n"
		 "[b]\nlisten = VSOCK-LISTEN:5000\nconnect = UNIX-CONNECT:/y\n",
		 5, "listen: VSOCK-LISTEN port 5000 is already used by [a] at line 2");
	load_bad("[a]\nlisten = TCP-LISTEN:80\nconnect = UNIX-CONNECT:/x\nallow-uid = 0\n", 4,
		 "allow-uid and allow-gid need a UNIX-LISTEN address: a TCP-LISTEN peer has no "
		 "credentials the kernel vouches for");
	load_bad("[echo]\nlisten = UNIX-CONNECT:/x\n", 2, "listen: UNIX-CONNECT:/x is a connect");
}

static void test_path_conflicts(void **state)
{
	(void)state;
	load_bad("[one]\nlisten = UNIX-LISTEN:/run/x.sock\nconnect = VSOCK-CONNECT:2:1\n"
		 "[two]\nconnect = VSOCK-CONNECT:2:2\nlisten = UNIX-RECV:/run/x.sock\n",
		 6, "listen path /run/x.sock is already used by [one] at line 2");
	load_bad("[daemon]\ncontrol = /run/t/c.sock\n"
		 "[a]\nlisten = UNIX-LISTEN:/run/t/c.sock\nconnect = VSOCK-CONNECT:2:1\n",
		 4, "listen path /run/t/c.sock is also the daemon's control socket");
	load_bad("[loop]\nlisten = UNIX-LISTEN:/run/x.sock\nconnect = UNIX-CONNECT:/run/x.sock\n",
		 3, "connect path /run/x.sock is this redirect's own listen path");
}

static void test_address_errors(void **state)
{
	char text[512], path[121];

	(void)state;
	memset(path, 'p', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	snprintf(text, sizeof(text), "[echo]\nlisten = UNIX-LISTEN:%s\n", path);
	load_bad(text, 2, "listen: path is 120 bytes, longer than sun_path's 107");
	load_bad("[echo]\nlisten = UNIX-LISTEN:/x,mdoe=0600\n", 2,
		 "listen: unknown option \"mdoe\" (did you mean \"mode\"?)");
	load_bad("[echo]\nlisten = UNIX-LISTEN:/x\nconnect = VSOCK-CONNECT:host:1\n", 3,
		 "connect: CID \"host\" is not a decimal number");
	load_bad("[echo]\nlisten = UNIX-LISTEN:/x\nconnect = VSOCK-CONNECT:4294967295:1\n", 3,
		 "connect: CID 4294967295 is VMADDR_CID_ANY");
	load_bad("[echo]\nlisten = UNIX-LISTEN:/x\nconnect = VSOCK-CONNECT:2:1,mode=0600\n", 3,
		 "connect: option \"mode\" does not apply to VSOCK-CONNECT");
	load_bad("[echo]\nlisten = UNIX-LISTEN:/x,mode=0660#1\n", 2,
		 "mode \"0660#1\" is not an octal");
	load_bad("[echo]\nlisten =\n", 2, "key \"listen\" has an empty value");
	load_bad("[echo]\nlisten = ;\n", 2, "key \"listen\" has an empty value");
}

static void test_daemon_values(void **state)
{
	static const struct {
		const char *name;
		int level;
	} levels[] = {
	    {"err", LOG_ERR},	{"warning", LOG_WARNING}, {"notice", LOG_NOTICE},
	    {"info", LOG_INFO}, {"debug", LOG_DEBUG},
	};
	char text[512], path[121];
	struct config cfg;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		snprintf(text, sizeof(text), "[daemon]\nlog-level = %s\nsndbuf = 64K\n" ECHO,
			 levels[i].name);
		load_ok(text, &cfg);
		assert_int_equal(cfg.daemon.log_level, levels[i].level);
		assert_int_equal(cfg.daemon.sndbuf, 64 << 10);
		config_free(&cfg);
	}
	load_ok("[daemon]\nsndbuf = 256m\nconnect-timeout=3600\ndrain-timeout=0.5\n" ECHO, &cfg);
	assert_int_equal(cfg.daemon.sndbuf, 256 << 20);
	assert_int_equal(cfg.daemon.connect_timeout_ms, 3600000);
	assert_int_equal(cfg.daemon.drain_timeout_ms, 500);
	config_free(&cfg);
	load_ok("[daemon]\nsndbuf = 262144\ncontrol = ctl.sock\n" ECHO, &cfg);
	assert_int_equal(cfg.daemon.sndbuf, 262144);
	assert_string_equal(cfg.daemon.control_path, "ctl.sock");
	config_free(&cfg);

	memset(path, 'c', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	snprintf(text, sizeof(text), "[daemon]\ncontrol = %s\n" ECHO, path);
	load_bad(text, 2, "control: path is 120 bytes, longer than sun_path's 107");
	load_bad("[daemon]\ncontrol =\n" ECHO, 2, "key \"control\" has an empty value");
	load_bad("[daemon]\nconnect-timeout = 0\n" ECHO, 2,
		 "connect-timeout 0 must be greater than 0");
	load_bad("[daemon]\nconnect-timeout = 5s\n" ECHO, 2,
		 "connect-timeout \"5s\" is not a number of seconds");
	load_bad("[daemon]\nconnect-timeout = 3601\n" ECHO, 2, "longer than 3600 seconds");
	load_bad("[daemon]\ndrain-timeout = -1\n" ECHO, 2,
		 "drain-timeout \"-1\" is not a number of seconds");
	load_bad("[daemon]\ndrain-timeout = 7200\n" ECHO, 2,
		 "drain-timeout 7200 is longer than 3600");
	load_bad("[daemon]\nsndbuf = 63K\n" ECHO, 2, "sndbuf 63K is out of range (64K..256M)");
	load_bad("[daemon]\nsndbuf = 257M\n" ECHO, 2, "sndbuf 257M is out of range (64K..256M)");
	load_bad("[daemon]\nsndbuf = 1G\n" ECHO, 2, "sndbuf 1G is out of range");
	load_bad("[daemon]\nsndbuf = 99999999999999999999999K\n" ECHO, 2, "is out of range");
	load_bad("[daemon]\nsndbuf = 4MB\n" ECHO, 2, "sndbuf \"4MB\": trailing garbage \"B\"");
	load_bad("[daemon]\nsndbuf = big\n" ECHO, 2, "sndbuf \"big\" is not a size");
	load_ok("[daemon]\nmax-redirects-per-uid = 0\n" ECHO, &cfg);
	assert_int_equal(cfg.daemon.max_redirects_per_uid, 0); /* no limit */
	config_free(&cfg);
	load_ok("[daemon]\nmax-redirects-per-uid = 65536\n" ECHO, &cfg);
	assert_int_equal(cfg.daemon.max_redirects_per_uid, 65536);
	config_free(&cfg);
	load_bad("[daemon]\nmax-redirects-per-uid = 65537\n" ECHO, 2,
		 "max-redirects-per-uid \"65537\" is not a number from 0 (no limit) to 65536");
	load_bad("[daemon]\nmax-redirects-per-uid = -1\n" ECHO, 2,
		 "max-redirects-per-uid \"-1\" is not a number");
	load_bad("[daemon]\nmax-redirects-per-uid = 10k\n" ECHO, 2,
		 "max-redirects-per-uid \"10k\" is not a number");
	load_bad("[daemon]\nmax-redirects-per-uid = 99999999999999999999999\n" ECHO, 2,
		 "is not a number from 0");
	load_bad("[daemon]\nlog-level = inf\n" ECHO, 2,
		 "log-level \"inf\" is not one of err, warning, notice, info, debug (did you mean "
		 "\"info\"?)");
	load_bad("[daemon]\nlog-level = verbose\n" ECHO, 2,
		 "log-level \"verbose\" is not one of err, warning, notice, info, debug");
}

/* The packaged file has every section commented out: valid, with nothing to listen on. */
static void test_no_redirects(void **state)
{
	static const char *const files[] = {"", "# only comments\n", "#[echo]\n#listen = x\n",
					    "[daemon]\ncontrol = /run/x.sock\n"};
	struct config cfg;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		load_ok(files[i], &cfg);
		assert_int_equal(cfg.n_redirects, 0);
	}
	assert_string_equal(cfg.daemon.control_path, "/run/x.sock");
}

static void test_syntax_errors(void **state)
{
	static const char nul[] = "[echo]\nlisten = UNIX-LISTEN:/x\0y\n";
	char text[512], name[65];

	(void)state;
	load_bad(ECHO "[broken\nlisten = UNIX-LISTEN:/y\n", 4,
		 "section header \"[broken\" has no closing ']'");
	load_bad(ECHO "[other] trailing\n", 4,
		 "unexpected text \" trailing\" after section header");
	load_bad("[echo]\nlisten UNIX-LISTEN:/x\n", 2,
		 "expected \"KEY = VALUE\" or \"[SECTION]\", got \"listen UNIX-LISTEN:/x\"");
	load_bad("[echo]\nlisten: UNIX-LISTEN:/x\n", 2, "expected \"KEY = VALUE\"");
	load_bad("[echo]\n= UNIX-LISTEN:/x\n", 2, "missing key name before '='");
	load_bad("[echo]\nlisten = UNIX-LISTEN:/x\n  \nlonely\n", 4, "got \"lonely\"");
	load_bad_len(nul, sizeof(nul) - 1, 2, "line contains a NUL byte");

	snprintf(text, sizeof(text), "[echo]\nlisten = UNIX-LISTEN:/x,mode=0660%0*d\n", 200, 0);
	load_bad(text, 2, "bytes long without comments, the limit is 199");

	load_bad("[a b]\n", 1, "invalid section name \"a b\": use 1 to 63 characters");
	load_bad(ECHO "[]\n", 4, "invalid section name \"\"");
	load_bad("[caf\xc3\xa9]\n", 1, "invalid section name");
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	snprintf(text, sizeof(text), "[%s]\n", name);
	load_bad(text, 1, "invalid section name");
	/* 63 characters is the longest name. */
	snprintf(text, sizeof(text),
		 "[%.63s]\nlisten = UNIX-LISTEN:/x\nconnect = VSOCK-CONNECT:2:1\n", name);
	{
		struct config cfg;

		load_ok(text, &cfg);
		assert_int_equal(strlen(cfg.redirects[0].name), 63);
		config_free(&cfg);
	}
	load_bad("[Daemon]\n", 1, "section [Daemon] must be spelled [daemon]");
}

static void test_io_errors(void **state)
{
	char err[1024], want[PATH_MAX + 64], path[64];
	struct config cfg = {0};

	(void)state;
	assert_int_equal(config_load("/nonexistent/vsockmap.conf", &cfg, err, sizeof(err)),
			 -ENOENT);
	assert_string_equal(err,
			    "/nonexistent/vsockmap.conf: cannot open: No such file or directory");

	assert_int_equal(config_load("/tmp", &cfg, err, sizeof(err)), -EISDIR);
	assert_string_equal(err, "/tmp: cannot open: Is a directory");

	write_temp(path, ECHO, strlen(ECHO));
	snprintf(want, sizeof(want), "%s/x", path);
	assert_int_equal(config_load(want, &cfg, err, sizeof(err)), -ENOTDIR);
	assert_non_null(strstr(err, ": cannot open: Not a directory"));
	unlink(path);
	assert_null(cfg.redirects);
}

static void test_unreadable(void **state)
{
	char err[1024], want[128], path[64];
	struct config cfg = {0};

	(void)state;
	if (geteuid() == 0) {
		print_message("skipped: root reads files whatever their mode\n");
		skip();
	}
	write_temp(path, ECHO, strlen(ECHO));
	assert_int_equal(chmod(path, 0), 0);
	assert_int_equal(config_load(path, &cfg, err, sizeof(err)), -EACCES);
	unlink(path);
	snprintf(want, sizeof(want), "%s: cannot open: Permission denied", path);
	assert_string_equal(err, want);
}

static void test_config_free(void **state)
{
	struct config cfg = {0};

	(void)state;
	config_free(&cfg);
	config_free(&cfg);
	config_free(NULL);
	load_ok(ECHO, &cfg);
	assert_int_equal(cfg.n_redirects, 1);
	config_free(&cfg);
	config_free(&cfg);
	assert_null(cfg.redirects);
}

/* socat's command line: either order, fork, and the pairs it refuses. */
static void test_idle_timeout(void **state)
{
	struct config cfg;

	(void)state;
	load_ok(ECHO, &cfg);
	assert_int_equal(cfg.daemon.idle_timeout_ms, 0);
	config_free(&cfg);
	load_ok("[daemon]\nidle-timeout = 2.5\n" ECHO, &cfg);
	assert_int_equal(cfg.daemon.idle_timeout_ms, 2500);
	config_free(&cfg);
	load_ok("[daemon]\nidle-timeout = 0\n" ECHO, &cfg);
	assert_int_equal(cfg.daemon.idle_timeout_ms, 0);
	config_free(&cfg);
	load_bad("[daemon]\nidle-timeout = soon\n" ECHO, 2, "idle-timeout");
	load_bad("[daemon]\nidle-timeout = 3601\n" ECHO, 2, "idle-timeout");
}

static void test_fastpath(void **state)
{
	struct config cfg;

	(void)state;
	load_ok(ECHO, &cfg);
	assert_int_equal(cfg.daemon.fastpath, FASTPATH_COUNTED);
	config_free(&cfg);
	load_ok("[daemon]\nfastpath = permanent\n" ECHO, &cfg);
	assert_int_equal(cfg.daemon.fastpath, FASTPATH_PERMANENT);
	assert_string_equal(fastpath_mode_name(cfg.daemon.fastpath), "permanent");
	config_free(&cfg);
	load_ok("[daemon]\nfastpath = counted\nidle-timeout = 5\n" ECHO, &cfg);
	assert_int_equal(cfg.daemon.fastpath, FASTPATH_COUNTED);
	config_free(&cfg);
	load_bad("[daemon]\nfastpath = fast\n" ECHO, 2,
		 "fastpath \"fast\" is not one of counted, permanent");
	/* The idle check reads the counters: the error names the line of idle-timeout. */
	load_bad("[daemon]\nidle-timeout = 5\nfastpath = permanent\n" ECHO, 2,
		 "idle-timeout needs the byte counters, which fastpath=permanent drops");
	assert_int_equal(fastpath_mode_parse("Permanent"), -EINVAL);
}

static void test_allow_lists(void **state)
{
	struct config cfg;

	(void)state;
	load_ok(ECHO "allow-uid = 0, root 1000\tnobody\nallow-gid = 65534\n", &cfg);
	assert_int_equal(cfg.redirects[0].allow.n_uids, 3); /* root twice: one entry */
	assert_int_equal(cfg.redirects[0].allow.uids[0], 0);
	assert_int_equal(cfg.redirects[0].allow.uids[1], 1000);
	assert_int_equal(cfg.redirects[0].allow.uids[2], 65534);
	assert_int_equal(cfg.redirects[0].allow.n_gids, 1);
	assert_int_equal(cfg.redirects[0].allow.gids[0], 65534);
	config_free(&cfg);

	load_ok(ECHO, &cfg);
	assert_int_equal(cfg.redirects[0].allow.n_uids, 0);
	assert_int_equal(cfg.redirects[0].allow.n_gids, 0);
	config_free(&cfg);

	load_bad(ECHO "allow-uid = 0 no-such-user-zz\n", 4,
		 "allow-uid: unknown user \"no-such-user-zz\"");
	load_bad(ECHO "allow-gid = no-such-group-zz\n", 4,
		 "allow-gid: unknown group \"no-such-group-zz\"");
	load_bad(ECHO "allow-gid = ,\n", 4, "allow-gid has no group in it");
	load_bad(ECHO "allow-uid = 4294967295\n", 4, "allow-uid: ");
	load_bad(ECHO "allow-uid = 0\nallow-uid = 1\n", 5, "duplicate key \"allow-uid\"");
	load_bad(ECHO "allow-uids = 0\n", 4, "did you mean \"allow-uid\"");
	load_bad("[d]\nlisten = UNIX-RECV:/run/t/d.sock\nallow-gid = 0\n"
		 "connect = VSOCK-CONNECT:2:1\n",
		 3, "allow-uid and allow-gid need a UNIX-LISTEN address");
	{
		char text[1024] = ECHO "allow-uid =";
		int i;

		for (i = 0; i <= CONFIG_ALLOW_MAX; i++)
			snprintf(text + strlen(text), sizeof(text) - strlen(text), " %d", i);
		strcat(text, "\n");
		load_bad(text, 4, "allow-uid: more than 32 entries");
	}
}

static void test_from_addresses(void **state)
{
	struct config cfg;
	char err[512];

	(void)state;
	assert_int_equal(config_from_addresses("UNIX-LISTEN:/run/t/a.sock,mode=0660",
					       "VSOCK-CONNECT:2:1234", &cfg, err, sizeof(err)),
			 0);
	assert_int_equal(cfg.n_redirects, 1);
	assert_string_equal(cfg.redirects[0].name, "cmdline");
	assert_int_equal(cfg.redirects[0].listen.kind, ADDRESS_UNIX_LISTEN);
	assert_int_equal(cfg.redirects[0].connect.port, 1234);
	assert_true(cfg.redirects[0].once); /* no fork: one connection */
	assert_string_equal(cfg.path, "");
	assert_string_equal(cfg.daemon.control_path, "");
	assert_int_equal(cfg.daemon.log_level, LOG_WARNING);
	config_free(&cfg);

	/* The target first, as socat allows; UNIX-RECV never stops after one. */
	assert_int_equal(config_from_addresses("VSOCK-CONNECT:2:1234", "UNIX-RECV:/run/t/l.sock",
					       &cfg, err, sizeof(err)),
			 0);
	assert_int_equal(cfg.redirects[0].listen.kind, ADDRESS_UNIX_RECV);
	assert_int_equal(cfg.redirects[0].connect.kind, ADDRESS_VSOCK_CONNECT);
	assert_false(cfg.redirects[0].once);
	config_free(&cfg);

	assert_int_equal(config_from_addresses("UNIX-LISTEN:/run/t/a.sock,fork",
					       "TCP-CONNECT:127.0.0.1:80", &cfg, err, sizeof(err)),
			 0);
	assert_false(cfg.redirects[0].once);
	config_free(&cfg);

	assert_int_equal(config_from_addresses("UNIX-LISTEN:/a", "UNIX-RECV:/b", &cfg, err,
					       sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "one address must listen"));
	/* Host to guest, as socat takes it: the target may come first; no fork, one connection. */
	assert_int_equal(config_from_addresses("UNIX-CONNECT:/run/docker.sock", "VSOCK-LISTEN:1234",
					       &cfg, err, sizeof(err)),
			 0);
	assert_int_equal(cfg.redirects[0].listen.kind, ADDRESS_VSOCK_LISTEN);
	assert_int_equal(cfg.redirects[0].connect.kind, ADDRESS_UNIX_CONNECT);
	assert_true(cfg.redirects[0].once);
	config_free(&cfg);
	assert_int_equal(config_from_addresses("TCP-LISTEN:8080,fork,reuseaddr",
					       "VSOCK-CONNECT:2:8080", &cfg, err, sizeof(err)),
			 0);
	assert_false(cfg.redirects[0].once);
	config_free(&cfg);
	assert_int_equal(config_from_addresses("TCP6-LISTEN:80", "UNIX-CONNECT:/b", &cfg, err,
					       sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "TCP6-LISTEN:80: not supported: use TCP-LISTEN:PORT,bind=[::]"));
	assert_int_equal(config_from_addresses("STDIO", "UNIX-CONNECT:/b", &cfg, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "standard input"));
	assert_int_equal(config_from_addresses("UNIX-LISTEN:/a,bogus", "UNIX-CONNECT:/b", &cfg, err,
					       sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "UNIX-LISTEN:/a,bogus: unknown option \"bogus\""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_full_config),		cmocka_unit_test(test_defaults_and_layout),
	    cmocka_unit_test(test_example_config),	cmocka_unit_test(test_unknown_keys),
	    cmocka_unit_test(test_key_outside_section), cmocka_unit_test(test_duplicates),
	    cmocka_unit_test(test_missing_keys),	cmocka_unit_test(test_wrong_roles),
	    cmocka_unit_test(test_path_conflicts),	cmocka_unit_test(test_address_errors),
	    cmocka_unit_test(test_daemon_values),	cmocka_unit_test(test_no_redirects),
	    cmocka_unit_test(test_syntax_errors),	cmocka_unit_test(test_io_errors),
	    cmocka_unit_test(test_unreadable),		cmocka_unit_test(test_config_free),
	    cmocka_unit_test(test_from_addresses),	cmocka_unit_test(test_allow_lists),
	    cmocka_unit_test(test_idle_timeout),	cmocka_unit_test(test_fastpath),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
