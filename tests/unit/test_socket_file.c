// SPDX-License-Identifier: GPL-2.0-only
/*
 * Socket files (socket_file.c) on real directories and sockets in a scratch directory: which
 * parent directories are refused and what the message says, the bind's file mode 0000, owner
 * and mode only for the file bound, and removal only of that file. The cases that need
 * another uid's file skip as non-root.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cmocka.h>

#include "socket_file.h"

#define NOBODY 65534

static char base[64];

static int setup(void **state)
{
	(void)state;
	snprintf(base, sizeof(base), "/tmp/vsm-sockfile.XXXXXX");
	return mkdtemp(base) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	return system(cmd) == 0 ? 0 : -1;
}

/* base/name into buf. */
static const char *at(char *buf, const char *name)
{
	snprintf(buf, PATH_MAX, "%s/%s", base, name);
	return buf;
}

static int bound(const char *path, struct socket_file_id *id)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%.*s", (int)sizeof(sun.sun_path) - 1, path);
	assert_int_equal(socket_file_bind(fd, &sun, id), 0);
	return fd;
}

static void test_parents_made_and_checked(void **state)
{
	char p[PATH_MAX], msg[PATH_MAX + 128];
	struct stat st;

	(void)state;
	assert_int_equal(socket_file_make_parents(at(p, "a/b/c.sock"), msg, sizeof(msg)), 0);
	assert_int_equal(stat(at(p, "a/b"), &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 022, 0);
	/* A bare name lives in the working directory, which is checked from /. */
	assert_int_equal(socket_file_check_parents("x.sock", msg, sizeof(msg)), 0);
	assert_int_equal(socket_file_check_parents("/x.sock", msg, sizeof(msg)), 0);

	assert_int_equal(socket_file_check_parents(at(p, "none/c.sock"), msg, sizeof(msg)),
			 -ENOENT);
	assert_non_null(strstr(msg, "none: cannot stat it"));
	assert_int_equal(close(open(at(p, "file"), O_CREAT | O_WRONLY | O_CLOEXEC, 0600)), 0);
	assert_int_equal(socket_file_make_parents(at(p, "file/c.sock"), msg, sizeof(msg)),
			 -ENOTDIR);
	assert_non_null(strstr(msg, "file: not a directory"));
}

static void test_writable_parents(void **state)
{
	char p[PATH_MAX], msg[PATH_MAX + 128];

	(void)state;
	assert_int_equal(mkdir(at(p, "open"), 0700), 0);
	assert_int_equal(chmod(p, 0777), 0);
	assert_int_equal(socket_file_make_parents(at(p, "open/c.sock"), msg, sizeof(msg)), -EPERM);
	assert_non_null(strstr(msg, "open: writable by others and not sticky (mode 0777)"));
	/* Nothing is made under a refused directory. */
	assert_int_equal(socket_file_make_parents(at(p, "open/sub/c.sock"), msg, sizeof(msg)),
			 -EPERM);
	assert_int_equal(access(at(p, "open/sub"), F_OK), -1);
	assert_int_equal(chmod(at(p, "open"), 01777), 0);
	assert_int_equal(socket_file_make_parents(at(p, "open/sub/c.sock"), msg, sizeof(msg)), 0);

	/* Group 0 writing is root writing; another group's is not. */
	assert_int_equal(mkdir(at(p, "grp"), 0700), 0);
	assert_int_equal(chmod(p, 0770), 0);
	if (getegid() != 0) {
		assert_int_equal(socket_file_check_parents(at(p, "grp/c.sock"), msg, sizeof(msg)),
				 -EPERM);
		assert_non_null(strstr(msg, "writable by group"));
		return;
	}
	assert_int_equal(socket_file_check_parents(at(p, "grp/c.sock"), msg, sizeof(msg)), 0);
	assert_int_equal(chown(at(p, "grp"), 0, NOBODY), 0);
	assert_int_equal(socket_file_check_parents(at(p, "grp/c.sock"), msg, sizeof(msg)), -EPERM);
	assert_non_null(strstr(msg, "grp: writable by group 65534 and not sticky (mode 0770)"));
}

/*
 * Give path the ACL u::rwx, u:USER:UPERM, g::r-x, g:GROUP:GPERM, m::MASK, o::r-x, written
 * as the kernel's system.posix_acl_access value (little-endian, version 2), so that no acl
 * package is needed. A negative USER or GROUP leaves that entry out.
 */
static void set_acl(const char *path, long user, unsigned int uperm, long group, unsigned int gperm,
		    unsigned int mask)
{
	uint8_t buf[4 + 6 * 8], *e = buf + 4;
	struct {
		uint16_t tag, perm;
		uint32_t id;
	} ent[6] = {
	    {0x01, 7, UINT32_MAX},	    /* ACL_USER_OBJ */
	    {0x02, uperm, (uint32_t)user},  /* ACL_USER */
	    {0x04, 5, UINT32_MAX},	    /* ACL_GROUP_OBJ */
	    {0x08, gperm, (uint32_t)group}, /* ACL_GROUP */
	    {0x10, mask, UINT32_MAX},	    /* ACL_MASK */
	    {0x20, 5, UINT32_MAX},	    /* ACL_OTHER */
	};
	uint32_t version = htole32(2);
	size_t i;

	memcpy(buf, &version, 4);
	for (i = 0; i < 6; i++) {
		uint16_t tag = htole16(ent[i].tag), perm = htole16(ent[i].perm);
		uint32_t id = htole32(ent[i].id);

		if ((i == 1 && user < 0) || (i == 3 && group < 0))
			continue;
		memcpy(e, &tag, 2);
		memcpy(e + 2, &perm, 2);
		memcpy(e + 4, &id, 4);
		e += 8;
	}
	assert_int_equal(setxattr(path, "system.posix_acl_access", buf, e - buf, 0), 0);
}

/* A named user or group entry that lets someone else write counts as the mode's write. */
static void test_acl_parents(void **state)
{
	char p[PATH_MAX], msg[PATH_MAX + 128];

	(void)state;
	if (getegid() != 0) {
		/* The directory's own group would be refused first, by its mode. */
		print_message("skipped: a directory of group 0 needs root to make\n");
		skip();
	}
	assert_int_equal(mkdir(at(p, "acl"), 0755), 0);
	set_acl(p, NOBODY, 7, -1, 0, 7);
	assert_int_equal(socket_file_check_parents(at(p, "acl/c.sock"), msg, sizeof(msg)), -EPERM);
	assert_non_null(
	    strstr(msg, "acl: writable by uid 65534 through its ACL and not sticky (mode 0775)"));

	/* The mask takes the write away: the mode shows 0755, and nobody but root writes. */
	set_acl(at(p, "acl"), NOBODY, 7, -1, 0, 5);
	assert_int_equal(socket_file_check_parents(at(p, "acl/c.sock"), msg, sizeof(msg)), 0);
	set_acl(at(p, "acl"), NOBODY, 5, -1, 0, 7);
	assert_int_equal(socket_file_check_parents(at(p, "acl/c.sock"), msg, sizeof(msg)), 0);
	/* Root and the daemon's uid (root here) may; group 0 is root's. */
	set_acl(at(p, "acl"), 0, 7, 0, 7, 7);
	assert_int_equal(socket_file_check_parents(at(p, "acl/c.sock"), msg, sizeof(msg)), 0);

	set_acl(at(p, "acl"), -1, 0, NOBODY, 7, 7);
	assert_int_equal(socket_file_check_parents(at(p, "acl/sub/c.sock"), msg, sizeof(msg)),
			 -EPERM);
	assert_non_null(
	    strstr(msg, "acl: writable by group 65534 through its ACL and not sticky (mode 0775)"));
	/* Nothing is made under it. */
	assert_int_equal(socket_file_make_parents(at(p, "acl/sub/c.sock"), msg, sizeof(msg)),
			 -EPERM);
	assert_int_equal(access(at(p, "acl/sub"), F_OK), -1);

	/* The sticky bit keeps them from renaming what they do not own, as for o+w. */
	assert_int_equal(chmod(at(p, "acl"), 01775), 0);
	assert_int_equal(socket_file_check_parents(at(p, "acl/c.sock"), msg, sizeof(msg)), 0);
}

static void test_other_owners(void **state)
{
	char p[PATH_MAX], msg[PATH_MAX + 128];

	(void)state;
	if (geteuid() != 0) {
		print_message("skipped: another uid's files need root to make\n");
		skip();
	}
	assert_int_equal(mkdir(at(p, "real"), 0755), 0);
	assert_int_equal(mkdir(at(p, "theirs"), 0755), 0);
	assert_int_equal(chown(p, NOBODY, NOBODY), 0);
	assert_int_equal(socket_file_check_parents(at(p, "theirs/c.sock"), msg, sizeof(msg)),
			 -EPERM);
	assert_non_null(strstr(msg, "theirs: owned by uid 65534, neither root nor"));

	assert_int_equal(symlink("real", at(p, "planted")), 0);
	assert_int_equal(lchown(p, NOBODY, NOBODY), 0);
	assert_int_equal(socket_file_check_parents(at(p, "planted/c.sock"), msg, sizeof(msg)),
			 -EPERM);
	assert_non_null(strstr(msg, "planted: a symlink owned by uid 65534"));

	/* root's symlink is followed, and where it points is checked all the way from /. */
	assert_int_equal(symlink("real", at(p, "mine")), 0);
	assert_int_equal(socket_file_check_parents(at(p, "mine/c.sock"), msg, sizeof(msg)), 0);
	assert_int_equal(symlink("theirs/deeper", at(p, "into-theirs")), 0);
	assert_int_equal(mkdir(at(p, "theirs/deeper"), 0755), 0);
	assert_int_equal(socket_file_check_parents(at(p, "into-theirs/c.sock"), msg, sizeof(msg)),
			 -EPERM);
	assert_non_null(strstr(msg, "theirs: owned by uid 65534"));
}

static void test_bind_and_access(void **state)
{
	char p[PATH_MAX], q[PATH_MAX];
	struct socket_file_id id, none = {0};
	struct stat st;
	int fd;

	(void)state;
	fd = bound(at(p, "s.sock"), &id);
	assert_true(id.known);
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0);
	assert_int_equal(socket_file_set_access(p, &none, (uid_t)-1, (gid_t)-1, 0660, NULL), -ESTALE);
	assert_int_equal(socket_file_set_access(p, &id, (uid_t)-1, (gid_t)-1, 0660, NULL), 0);
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0660);

	/* Moved away and a symlink put in its place: nothing changes, the target least of all. */
	assert_int_equal(rename(p, at(q, "s.moved")), 0);
	assert_int_equal(close(open(at(q, "victim"), O_CREAT | O_WRONLY | O_CLOEXEC, 0600)), 0);
	assert_int_equal(symlink("victim", p), 0);
	assert_int_equal(socket_file_set_access(p, &id, (uid_t)-1, (gid_t)-1, 0666, NULL), -ESTALE);
	assert_int_equal(stat(q, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(socket_file_unlink_if_ours(p, &id), -ESTALE);
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(socket_file_identify(p, &none), -ESTALE);
	assert_false(none.known);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(socket_file_set_access(p, &id, (uid_t)-1, (gid_t)-1, 0666, NULL), -ESTALE);
	assert_int_equal(socket_file_unlink_if_ours(p, &id), -ENOENT);

	/* Back where it was: ours again, found by identify() as well, and removed. */
	assert_int_equal(rename(at(q, "s.moved"), p), 0);
	assert_int_equal(socket_file_identify(p, &none), 0);
	assert_true(none.known && none.ino == id.ino && none.dev == id.dev);
	assert_int_equal(socket_file_unlink_if_ours(p, &id), 0);
	assert_int_equal(access(p, F_OK), -1);
	close(fd);
}

static void test_owner_set(void **state)
{
	char p[PATH_MAX];
	struct socket_file_id id;
	struct stat st;
	int fd;

	(void)state;
	if (geteuid() != 0) {
		print_message("skipped: a chown to another uid needs root\n");
		skip();
	}
	fd = bound(at(p, "o.sock"), &id);
	assert_int_equal(socket_file_set_access(p, &id, NOBODY, NOBODY, 0600, NULL), 0);
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(st.st_uid, NOBODY);
	assert_int_equal(st.st_gid, NOBODY);
	assert_int_equal(st.st_mode & 07777, 0600);
	close(fd);
}

/* Whether CAP_FOWNER is in this process's effective set; set it on or off. 0 or -errno. */
static int fowner_effective(bool on)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	if (on)
		data[CAP_TO_INDEX(CAP_FOWNER)].effective |= CAP_TO_MASK(CAP_FOWNER);
	else
		data[CAP_TO_INDEX(CAP_FOWNER)].effective &= ~CAP_TO_MASK(CAP_FOWNER);
	return syscall(SYS_capset, &hdr, data) ? -errno : 0;
}

/*
 * The daemon keeps CAP_CHOWN for user= and group=, never CAP_FOWNER (privileges.c): a
 * section with user= that a reload adds, or whose socket a reload keeps (published again
 * with its owner already set), must get its owner and mode with CAP_CHOWN alone.
 */
static void test_owner_set_without_fowner(void **state)
{
	char p[PATH_MAX];
	struct socket_file_id id;
	const char *step = NULL;
	struct stat st;
	int fd, r1, r2;

	(void)state;
	if (geteuid() != 0) {
		print_message("skipped: a chown to another uid needs root\n");
		skip();
	}
	fd = bound(at(p, "f.sock"), &id);
	assert_int_equal(fowner_effective(false), 0);
	r1 = socket_file_set_access(p, &id, NOBODY, NOBODY, 0660, &step);
	r2 = socket_file_set_access(p, &id, NOBODY, NOBODY, 0660, &step);
	assert_int_equal(fowner_effective(true), 0);
	if (r1 || r2)
		print_message("failed at: %s\n", step);
	assert_int_equal(r1, 0);
	assert_int_equal(r2, 0);
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(st.st_uid, NOBODY);
	assert_int_equal(st.st_gid, NOBODY);
	assert_int_equal(st.st_mode & 07777, 0660);
	close(fd);
}

static void test_bind_errors(void **state)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct socket_file_id id;
	char p[PATH_MAX];
	int fd, fd2;

	(void)state;
	fd = bound(at(p, "twice.sock"), &id);
	fd2 = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%.*s", (int)sizeof(sun.sun_path) - 1, p);
	assert_int_equal(socket_file_bind(fd2, &sun, &id), -EADDRINUSE);
	assert_false(id.known);
	/* The umask is the process's again after the bind. */
	assert_int_equal(umask(022), 022);
	close(fd);
	close(fd2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_parents_made_and_checked, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_writable_parents, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_acl_parents, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_other_owners, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bind_and_access, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_owner_set, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_owner_set_without_fowner, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bind_errors, setup, teardown),
	};

	umask(022);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
