/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The redirects a restart hands over travel beside systemd's fd store, not in it: the store
 * holds FileDescriptorStoreMax fds, and LISTEN_FDNAMES at most 128 KiB of names, a few
 * thousand sockets. A carrier is one end of a unix seqpacket socketpair, stored as
 * "vsm-carrier.N"; the stopping instance sends each redirect into it as one message (its
 * record as the payload, its descriptors as SCM_RIGHTS), and the next instance reads them
 * back. While no instance runs, the messages, and the descriptors in them, wait in the
 * carrier's receive queue, which systemd's copy of the fd keeps alive. The carrier knows
 * nothing of what a message means (redirect_record.h does).
 */
#ifndef VSOCKMAP_FD_CARRIER_H
#define VSOCKMAP_FD_CARRIER_H

#include <stdbool.h>
#include <stddef.h>

struct passed_fds;

/* Names: FD_CARRIER_PREFIX "N". */
#define FD_CARRIER_SNDBUF (64 * 1024 * 1024)
#define FD_CARRIER_PREFIX "vsm-carrier."
/* A message's payload and descriptors at most; a reader takes SCM_MAX_FD, the kernel's limit. */
#define FD_CARRIER_MSG_MAX 4096
#define FD_CARRIER_FDS_MAX 253

/* Stores fd in systemd's fd store under name: 0 or -errno (handover.c's store()). */
typedef int (*fd_carrier_store_fn)(int fd, const char *name);

struct fd_carrier {
	fd_carrier_store_fn store;
	int send_fd;	   /* the current carrier's sending end, -1 before the first */
	int sndbuf;	   /* the send buffer asked for each carrier (FD_CARRIER_SNDBUF) */
	unsigned int next; /* the number in the next carrier's name */
	unsigned int n;	   /* carriers stored so far */
	size_t carried;	   /* messages sent */
};

/* first: the number of the first carrier's name (past those a previous instance stored). */
void fd_carrier_init(struct fd_carrier *c, fd_carrier_store_fn store, unsigned int first);

/*
 * Send one message: len bytes of msg and n_fds descriptors (copies travel; the caller keeps
 * its own). A full carrier is closed and a new one stored. 0 or -errno: nothing travelled.
 */
int fd_carrier_send(struct fd_carrier *c, const void *msg, size_t len, const int *fds,
		    unsigned int n_fds);

/* Close the sending end: the carriers are complete. */
void fd_carrier_finish(struct fd_carrier *c);

/*
 * One message read back: its payload and its descriptors, which are take's from now on
 * (closed by it, whatever it returns). 0, or -ENOMEM to stop reading.
 */
typedef int (*fd_carrier_take_fn)(void *ctx, const void *msg, size_t len, int *fds,
				  unsigned int n_fds);

/*
 * The starting side: every message of every carrier in p, in order, to take(); each carrier
 * is closed once read to its end (its entry stays, without its fd, so that its name still
 * leaves the store); one read in part keeps its fd. A message cut short in transit (too long, too many descriptors) has its
 * descriptors closed and is counted in *bad. Returns the number of messages taken, or -errno.
 */
int fd_carrier_unpack(struct passed_fds *p, fd_carrier_take_fn take, void *ctx, unsigned int *bad);

/* The number after the highest "vsm-carrier.N" in p: where a new carrier's names begin. */
unsigned int fd_carrier_next_name(const struct passed_fds *p);

#endif
