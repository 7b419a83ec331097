// SPDX-License-Identifier: GPL-2.0-only
/*
 * The control socket's keys in [daemon]: control-mode=, control-group= and
 * control-admin-group=, their defaults, and the refusal of a mode that would lock the group
 * out.
 */
#include <errno.h>
#include <grp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"

#define ECHO "[echo]\nlisten = UNIX-LISTEN:/run/t/echo.sock\nconnect = VSOCK-CONNECT:2:5000\n"

static int load(const char *content, struct config *cfg, char *err, size_t errlen)
{
	char path[] = "/tmp/vsockmap-ctlconf-XXXXXX";
	int fd, r;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
	r = config_load(path, cfg, err, errlen);
	unlink(path);
	return r;
}

static void load_ok(const char *content, struct config *cfg)
{
	char err[512] = "";

	if (load(content, cfg, err, sizeof(err)))
		fail_msg("config_load: %s, for:\n%s", err, content);
}

/* Fails at line with want in the message. */
static void load_bad(const char *content, unsigned int line, const char *want)
{
	char err[512] = "", at[16];
	struct config cfg;

	if (!load(content, &cfg, err, sizeof(err))) {
		config_free(&cfg);
		fail_msg("loaded, want \"%s\", for:\n%s", want, content);
	}
	snprintf(at, sizeof(at), ":%u: ", line);
	if (!strstr(err, at) || !strstr(err, want))
		fail_msg("got \"%s\", want line %u and \"%s\"", err, line, want);
}

static void test_defaults(void **state)
{
	struct config cfg;

	(void)state;
	load_ok(ECHO, &cfg);
	assert_string_equal(cfg.daemon.control_path, CONFIG_DEFAULT_CONTROL_PATH);
	assert_int_equal(cfg.daemon.control_mode, 0600);
	assert_false(cfg.daemon.has_control_group);
	assert_false(cfg.daemon.has_control_admin_group);
	config_free(&cfg);
}

static void test_mode(void **state)
{
	struct config cfg;

	(void)state;
	load_ok("[daemon]\ncontrol-mode = 0666\n" ECHO, &cfg);
	assert_int_equal(cfg.daemon.control_mode, 0666);
	config_free(&cfg);
	load_ok("[daemon]\ncontrol-mode = 600\n" ECHO, &cfg);
	assert_int_equal(cfg.daemon.control_mode, 0600);
	config_free(&cfg);
	load_ok("[daemon]\ncontrol-mode = 0\n" ECHO, &cfg);
	assert_int_equal(cfg.daemon.control_mode, 0);
	config_free(&cfg);

	load_bad("[daemon]\ncontrol-mode = 0680\n" ECHO, 2,
		 "control-mode \"0680\" is not an octal file mode (e.g. 0660)");
	load_bad("[daemon]\ncontrol-mode = rw-rw----\n" ECHO, 2, "is not an octal file mode");
	load_bad("[daemon]\ncontrol-mode = 04660\n" ECHO, 2,
		 "control-mode 04660 has bits beyond 0777");
	load_bad("[daemon]\ncontrol-mode = 77777777777777777777\n" ECHO, 2, "has bits beyond 0777");
	load_bad("[daemon]\ncontrol-mod = 0660\n" ECHO, 2,
		 "unknown key \"control-mod\" (did you mean \"control-mode\"?)");
	load_bad("[daemon]\ncontrol-mode = 0660\ncontrol-mode = 0600\n" ECHO, 3,
		 "duplicate key \"control-mode\"");
}

static void test_group(void **state)
{
	struct config cfg;

	(void)state;
	/* A group without a mode opens the socket to it: 0660. */
	load_ok("[daemon]\ncontrol-group = root\n" ECHO, &cfg);
	assert_true(cfg.daemon.has_control_group);
	assert_int_equal(cfg.daemon.control_group, 0);
	assert_string_equal(cfg.daemon.control_group_name, "root");
	assert_int_equal(cfg.daemon.control_mode, 0660);
	config_free(&cfg);

	/* A GID needs no entry in /etc/group, as with chown(1). */
	load_ok("[daemon]\ncontrol-group = 4242\ncontrol-mode = 0670\n" ECHO, &cfg);
	assert_int_equal(cfg.daemon.control_group, 4242);
	assert_string_equal(cfg.daemon.control_group_name, "4242");
	assert_int_equal(cfg.daemon.control_mode, 0670);
	config_free(&cfg);

	load_bad("[daemon]\ncontrol-group = no-such-group-vsockmap\n" ECHO, 2,
		 "control-group: unknown group \"no-such-group-vsockmap\"");
	load_bad("[daemon]\ncontrol-group = 12abc\n" ECHO, 2,
		 "control-group \"12abc\" is neither a group name nor a GID");
	load_bad("[daemon]\ncontrol-group = 4294967295\n" ECHO, 2,
		 "neither a group name nor a GID");
	/* Connecting needs write permission on the socket file. */
	load_bad("[daemon]\ncontrol-mode = 0640\ncontrol-group = 0\n" ECHO, 2,
		 "control-mode 0640 does not let group 0 connect (connecting needs write "
		 "permission: use 0660)");
}

static void test_admin_group(void **state)
{
	struct config cfg;

	(void)state;
	/* Both: the file belongs to control-group (the readers), 0660 by default. */
	load_ok("[daemon]\ncontrol-group = 4242\ncontrol-admin-group = root\n" ECHO, &cfg);
	assert_true(cfg.daemon.has_control_group);
	assert_true(cfg.daemon.has_control_admin_group);
	assert_int_equal(cfg.daemon.control_admin_group, 0);
	assert_string_equal(cfg.daemon.control_admin_group_name, "root");
	assert_int_equal(cfg.daemon.control_mode, 0660);
	config_free(&cfg);

	/* Alone: admins only, and the file is theirs. */
	load_ok("[daemon]\ncontrol-admin-group = 4243\n" ECHO, &cfg);
	assert_false(cfg.daemon.has_control_group);
	assert_true(cfg.daemon.has_control_admin_group);
	assert_int_equal(cfg.daemon.control_admin_group, 4243);
	assert_string_equal(cfg.daemon.control_admin_group_name, "4243");
	assert_int_equal(cfg.daemon.control_mode, 0660);
	config_free(&cfg);

	load_bad("[daemon]\ncontrol-admin-group = no-such-group-vsockmap\n" ECHO, 2,
		 "control-admin-group: unknown group \"no-such-group-vsockmap\"");
	load_bad("[daemon]\ncontrol-admin-group = 7x\n" ECHO, 2,
		 "control-admin-group \"7x\" is neither a group name nor a GID");
	load_bad("[daemon]\ncontrol-admin-group = "
		 "a-group-name-much-longer-than-any-system-would-give-one-at-all-really\n" ECHO,
		 2, "control-admin-group \"a-group-name-much-longer");
	load_bad("[daemon]\ncontrol-admin-group = 0\ncontrol-admin-group = 1\n" ECHO, 3,
		 "duplicate key \"control-admin-group\"");
	load_bad("[daemon]\ncontrol-mode = 0600\ncontrol-admin-group = 4243\n" ECHO, 2,
		 "control-mode 0600 does not let group 4243 connect");
	load_bad("[daemon]\ncontrol-admin-grup = 0\n" ECHO, 2,
		 "(did you mean \"control-admin-group\"?)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_mode),
	    cmocka_unit_test(test_group),
	    cmocka_unit_test(test_admin_group),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
