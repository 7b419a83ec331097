/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Reading what the verdict held on a unix socket that is in a sockhash, and nothing else.
 *
 * unix_bpf_recvmsg() serves a read from the socket's own receive queue whenever the psock
 * queue is empty, even while a sender is about to hand that skb to the verdict: the read then
 * takes data the verdict never saw, ahead of data it already redirected (docs/kernel-notes.md).
 * Only the psock queue holds held data, and only the daemon takes from it, so a peek that
 * proves the next read comes from there stays true until the read.
 */
#ifndef VSOCKMAP_HELD_READ_H
#define VSOCKMAP_HELD_READ_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Prepare fd for held_read(): SO_PASSCRED, so that a read from the socket's own queue carries
 * SCM_CREDENTIALS, which a read from the psock queue (sk_msg_recvmsg()) never does.
 */
int held_read_prepare(int fd);

/* 1 if the next read would come from the socket's own queue, 0 from the psock, or -errno. */
int held_read_native(int fd);

/*
 * Read up to len held bytes from fd (non-blocking). Returns the count, 0 at EOF, -EAGAIN if
 * nothing is queued, -EINPROGRESS if the next bytes have not been through the verdict yet,
 * or -errno.
 */
ssize_t held_read(int fd, void *buf, size_t len);

#endif
