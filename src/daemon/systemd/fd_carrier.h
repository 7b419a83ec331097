/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The redirects a restart hands over travel beside systemd's fd store, not in it: the store
 * holds FileDescriptorStoreMax fds, and LISTEN_FDNAMES at most 128 KiB of names, a few
 * thousand sockets. A carrier is one end of a unix seqpacket socketpair, stored as
 * "vsm-carrier.N"; the stopping instance sends each pair into it as one message (its two
 * sockets as SCM_RIGHTS, its name as the payload), and the next instance reads them back.
 * While no instance runs, the messages, and the sockets in them, wait in the carrier's
 * receive queue, which systemd's copy of the fd keeps alive.
 */
#ifndef VSOCKMAP_FD_CARRIER_H
#define VSOCKMAP_FD_CARRIER_H

#include <stdbool.h>
#include <stddef.h>

struct passed_fds;

/* Names: HANDOVER_PREFIX "carrier.N". */
#define FD_CARRIER_SNDBUF (64 * 1024 * 1024)
#define FD_CARRIER_PREFIX "vsm-carrier."

/* Stores fd in systemd's fd store under name: 0 or -errno (handover.c's store()). */
typedef int (*fd_carrier_store_fn)(int fd, const char *name);

struct fd_carrier {
	fd_carrier_store_fn store;
	int send_fd;	   /* the current carrier's sending end, -1 before the first */
	int sndbuf;	   /* the send buffer asked for each carrier (FD_CARRIER_SNDBUF) */
	unsigned int n;	   /* carriers stored so far */
	size_t carried;	   /* pairs sent */
	bool failed;	   /* a send failed (the caller's note: logged once) */
};

void fd_carrier_init(struct fd_carrier *c, fd_carrier_store_fn store);

/*
 * Send one pair: its client and target sockets, and name (what follows "vsm-pair." in the
 * fd store's naming, "ID.SLOT.HALF.SECTION"). A full carrier is closed and a new one stored.
 * 0 or -errno: the pair did not travel.
 */
int fd_carrier_send_pair(struct fd_carrier *c, int client_fd, int target_fd, const char *name);

/* Close the sending end: the carriers are complete. */
void fd_carrier_finish(struct fd_carrier *c);

/*
 * The starting side: read every pair out of the carriers in p (and close them), and add
 * their sockets to p as "vsm-pair.ID.SLOT.HALF.c.SECTION" and ".t." entries, marked carried
 * (systemd does not hold them). Returns the number of pairs, or -errno.
 */
int fd_carrier_unpack(struct passed_fds *p);

#endif
