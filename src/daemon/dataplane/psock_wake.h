/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Does the kernel wake a psock's backlog as soon as its redirect target has room again? And,
 * with datapath=auto, which sections take the user-space path where it does not.
 */
#ifndef VSOCKMAP_PSOCK_WAKE_H
#define VSOCKMAP_PSOCK_WAKE_H

#include <stdbool.h>

#include "address.h"

struct btf;

/* The function kernel/ patch 1 adds; it shows in the kernel's BTF and kallsyms. */
#define PSOCK_WAKE_FUNC "sk_psock_start_write_space"

/* 1 if btf describes PSOCK_WAKE_FUNC, 0 if not. */
int psock_wake_in_btf(const struct btf *btf);

/* The same, asked of the running kernel's BTF: 1, 0, or -errno (no vmlinux BTF to read). */
int psock_wake_probe_run(void);

/*
 * datapath=auto on a kernel whose backlog waits out a retry (wakes false): why a section
 * from listen to target runs in user space, or NULL where it keeps the kernel path.
 */
const char *psock_wake_userspace_why(bool wakes, enum address_kind listen,
				     enum address_kind target);

#endif
