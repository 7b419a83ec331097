/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Does the kernel wake a psock's backlog as soon as its redirect target has room again?
 */
#ifndef VSOCKMAP_PSOCK_WAKE_H
#define VSOCKMAP_PSOCK_WAKE_H

struct btf;

/* The function kernel/ patch 1 adds; it shows in the kernel's BTF and kallsyms. */
#define PSOCK_WAKE_FUNC "sk_psock_start_write_space"

/* 1 if btf describes PSOCK_WAKE_FUNC, 0 if not. */
int psock_wake_in_btf(const struct btf *btf);

/* The same, asked of the running kernel's BTF: 1, 0, or -errno (no vmlinux BTF to read). */
int psock_wake_probe_run(void);

#endif
