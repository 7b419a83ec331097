// SPDX-License-Identifier: GPL-2.0-only
/*
 * A datagram listener's socket file (listen_socket.c) moves from its private name to its
 * path at the publish, and never over a file someone put there meanwhile: with
 * renameat2(RENAME_NOREPLACE), and where the file system lacks it. The last case stands in
 * for such a file system with a seccomp filter that answers renameat2() with EINVAL, so it
 * runs last: a filter stays for the rest of the process.
 */
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
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "address.h"
#include "listen_socket.h"

static char base[64];

static int setup(void **state)
{
	(void)state;
	snprintf(base, sizeof(base), "/tmp/vsm-listen.XXXXXX");
	return mkdtemp(base) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	return system(cmd) == 0 ? 0 : -1;
}

/* renameat2() fails with EINVAL from here on, as on a file system without its flags. */
static void no_renameat2(void)
{
	struct sock_filter filter[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_renameat2, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EINVAL),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(filter) / sizeof(filter[0]), .filter = filter};

	assert_int_equal(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	assert_int_equal(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), 0);
	assert_int_equal(syscall(__NR_renameat2, AT_FDCWD, "/nonexistent", AT_FDCWD, "/x", 0), -1);
	assert_int_equal(errno, EINVAL);
}

/*
 * Bind a UNIX-RECV listener in base, put a file at its path before the publish: the publish
 * fails with EEXIST and leaves the file; once it is gone, the publish moves the socket file
 * to its path and its private name is gone.
 */
static void publish_never_replaces(void)
{
	char text[PATH_MAX + 32], path[PATH_MAX], err[256], msg[PATH_MAX + 128], buf[8];
	struct socket_file_id id;
	struct address addr;
	const char *why;
	struct stat st;
	int fd, planted;

	snprintf(path, sizeof(path), "%s/d.sock", base);
	snprintf(text, sizeof(text), "UNIX-RECV:%s,mode=0660", path);
	assert_int_equal(address_parse(text, &addr, err, sizeof(err)), 0);
	fd = unix_listener_open(&addr, &id, msg, sizeof(msg), &why);
	assert_true(fd >= 0);
	assert_int_equal(access(path, F_OK), -1);

	planted = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(planted >= 0);
	assert_int_equal(write(planted, "theirs", 6), 6);
	close(planted);
	assert_int_equal(unix_listener_publish(&addr, &id, &why), -EEXIST);
	planted = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(planted >= 0);
	assert_int_equal(read(planted, buf, sizeof(buf)), 6);
	assert_memory_equal(buf, "theirs", 6);
	close(planted);

	assert_int_equal(unlink(path), 0);
	assert_int_equal(unix_listener_publish(&addr, &id, &why), 0);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0660);
	assert_int_equal(st.st_nlink, 1);
	assert_int_equal(unix_listener_unlink(&addr, &id), 0);
	assert_int_equal(access(path, F_OK), -1);
	close(fd);
}

static void test_publish_noreplace(void **state)
{
	(void)state;
	publish_never_replaces();
}

static void test_publish_without_noreplace(void **state)
{
	(void)state;
	no_renameat2();
	publish_never_replaces();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_publish_noreplace, setup, teardown),
	    /* Last: the seccomp filter cannot be taken away again. */
	    cmocka_unit_test_setup_teardown(test_publish_without_noreplace, setup, teardown),
	};

	umask(022);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
