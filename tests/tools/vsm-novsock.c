/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * vsm-novsock: run a command under a seccomp filter that makes socket(AF_VSOCK, ...) and
 * socketpair(AF_VSOCK, ...) fail with EPERM.
 *
 *	vsm-novsock CMD [ARG]...
 *
 * Every host-side process of the virtio tier (the vhost-user backend, QEMU, the host peers)
 * runs under it: no AF_VSOCK socket may exist on the host, even by mistake. The filter is
 * inherited across fork and exec, and cannot be removed. A raw classic-BPF filter rather than
 * libseccomp: it is ten instructions, and the tool stays linked with libc alone, as every
 * tests/tools binary is (tests/vm/suite-virtio.sh proves the filter inside the VM, where
 * vsock exists). Syscalls of another ABI (i386, x32) fail with EPERM as a whole, so the
 * socketcall(2) and x32 socket(2) doors are shut too.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#if !defined(__x86_64__)
#error "vsm-novsock checks the x86_64 syscall ABI only"
#endif

#define X32_SYSCALL_BIT 0x40000000U
#define RET_EPERM	(SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))
/* The low 32 bits of the first argument: socket()'s int domain (little endian). */
#define ARG0_LOW offsetof(struct seccomp_data, args[0])

static struct sock_filter filter[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, RET_EPERM),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, RET_EPERM),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 1, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socketpair, 0, 3),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_LOW),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_VSOCK, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, RET_EPERM),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};

static int install_filter(void)
{
	struct sock_fprog prog = {
	    .len = sizeof(filter) / sizeof(filter[0]),
	    .filter = filter,
	};

	/* Without CAP_SYS_ADMIN the kernel wants no_new_privs first; as root it costs nothing. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -errno;
	return 0;
}

int main(int argc, char **argv)
{
	int ret;

	if (argc < 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: vsm-novsock CMD [ARG]...\n"
				"Runs CMD with socket(AF_VSOCK) and socketpair(AF_VSOCK) failing "
				"with EPERM.\n");
		return argc == 2 && !strcmp(argv[1], "--help") ? 0 : 2;
	}
	ret = install_filter();
	if (ret) {
		fprintf(stderr, "vsm-novsock: seccomp filter: %s\n", strerror(-ret));
		return 2;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "vsm-novsock: %s: %s\n", argv[1], strerror(errno));
	return 127;
}
