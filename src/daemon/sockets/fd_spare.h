/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One file descriptor held in reserve (/dev/null) for when the process runs out: given up for
 * a moment to accept a client and refuse it, or to open the iterator pass that a closing
 * redirect needs before its descriptors can go, then taken back.
 */
#ifndef VSOCKMAP_FD_SPARE_H
#define VSOCKMAP_FD_SPARE_H

#include <stdbool.h>

/* Open the spare. Returns 0 or -errno. */
int fd_spare_init(void);
void fd_spare_fini(void);

/* Close the spare so that the next open() can have its number. False when there is none. */
bool fd_spare_release(void);

/* Take the spare back after fd_spare_release(); false if no descriptor was free for it. */
bool fd_spare_restore(void);

#endif
