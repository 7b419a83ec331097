/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A stream redirect on its way from one instance of the daemon to the next (a restart, or a
 * start that failed and gives back what it took): everything the next one needs to go on
 * where this one stopped, whatever the redirect was doing. The record travels as the payload
 * of one carrier message (fd_carrier.h), with the descriptors it names as SCM_RIGHTS: the two
 * sockets, and per direction the bytes the daemon held (a memfd), the hold socket and the
 * injector. What the kernel holds stays in those sockets and in the stored maps.
 *
 * The format is versioned (docs/systemd.md, "The hand-over format"). A record of another
 * version is refused whole (-EPROTONOSUPPORT): its pair is closed and logged, never guessed
 * at. Version 0 is the name the daemon used before records, "ID.SLOT.HALF.SECTION" with the
 * two sockets only, still read so that an upgrade from it takes its pairs back.
 */
#ifndef VSOCKMAP_REDIRECT_RECORD_H
#define VSOCKMAP_REDIRECT_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define REDIRECT_RECORD_MAGIC	"VSMP"
#define REDIRECT_RECORD_VERSION 1
/* The fixed part of version 1; the section's name follows it. */
#define REDIRECT_RECORD_FIXED 160
#define REDIRECT_RECORD_MAX   (REDIRECT_RECORD_FIXED + CONFIG_NAME_MAX)
/*
 * The most bytes a direction's memfd may hold: a sweep takes what a client left queued (its
 * send buffer, which it may have forced large), plus the daemon's buffer and pipe. A record
 * that says more is not a daemon's.
 */
#define REDIRECT_RECORD_PENDING_MAX (256u * 1024 * 1024)

/* Which ways are finished, in a version 0 name (and nowhere else). */
#define REDIRECT_HALF_CLIENT 1 /* client to target */
#define REDIRECT_HALF_TARGET 2 /* target to client */

/*
 * The descriptors a record may name, in the order they travel: the two sockets, then for
 * each direction (client to target first) what the daemon held of it.
 */
enum record_fd {
	RECORD_FD_CLIENT,
	RECORD_FD_TARGET,
	RECORD_FD_DIR0, /* + RECORD_FD_PER_DIR * direction + one of these: */
};
enum record_dir_fd {
	RECORD_DIR_PENDING,	/* a memfd: bytes read from the source, not yet written on */
	RECORD_DIR_HOLD_READ,	/* the hold socket's end the daemon reads (redirect_hold.c) */
	RECORD_DIR_HOLD_PEER,	/* its end in the egress sockhash, named by the gate */
	RECORD_DIR_INJECT,	/* the injector's end the daemon writes (redirect_inject.c) */
	RECORD_DIR_INJECT_PEER, /* its end in the sockhash, linked to the target */
	RECORD_FD_PER_DIR,
};
#define RECORD_FD(dir, what) (RECORD_FD_DIR0 + (dir)*RECORD_FD_PER_DIR + (what))
#define RECORD_NR_FDS	     RECORD_FD(2, 0)

#define RECORD_ORIGIN_UNKNOWN UINT32_MAX

/* Endpoint flags: what the daemon knew of each socket. */
#define RECORD_EP_IN_MAP    0x01 /* in a sockhash (the client as a source, the target in egress) */
#define RECORD_EP_HUP	    0x02 /* closed or broken: nothing more can be sent to it */
#define RECORD_EP_BROKEN    0x04 /* epoll said HUP or ERR */
#define RECORD_EP_SHUT_SEEN 0x08 /* its peer shut down writing */
#define RECORD_EP_LINGER_SHUT                                                                      \
	0x10 /* a TCP end's linger began (shut for writing, or a FIN held back: redirect_linger.c) \
	      */
#define RECORD_EP_CUT	0x20 /* the target: its stream broke; the client is reset at the close */
#define RECORD_EP_FLAGS 0x3f

/* Direction flags. */
#define RECORD_DIR_NO_SPLICE 0x01 /* its source cannot be spliced: recv/send */
#define RECORD_DIR_FLAGS     0x01

struct redirect_record {
	unsigned int version; /* as read: 0 for a version 0 name */
	uint64_t id;
	uint32_t slot;	       /* REDIRECT_SLOT_USERSPACE: carried in user space, no maps */
	unsigned int phase;    /* enum redirect_phase: connecting, running or a closing one */
	bool linked;	       /* the client's cookie is in the links map */
	bool userspace;	       /* carried in user space (a connecting pair: will be) */
	uint64_t started_usec; /* CLOCK_MONOTONIC, as the instances share it */
	uint64_t connect_deadline_usec; /* connecting: when the connect gives up */
	uint64_t idle_since_usec;	/* idle-timeout: nothing moved since (0: not looked yet) */
	uint64_t idle_mark;		/* ... and what had moved by then */
	/*
	 * The instance that made its target socket, by its number in the chain of instances
	 * (redirect_env.generation): the queue probe answers for that socket while that
	 * instance's probe link lives. RECORD_ORIGIN_UNKNOWN: any of them (version 0).
	 */
	uint32_t origin;
	unsigned int ep_flags[2];	/* RECORD_EP_*, client then target */
	struct {
		unsigned int state;		   /* enum dir_state */
		unsigned int flags;		   /* RECORD_DIR_* */
		uint32_t pending;		   /* bytes in its RECORD_DIR_PENDING memfd */
		uint64_t user_bytes, user_packets; /* what the daemon forwarded so far */
		uint64_t inject_bytes;		   /* written into its injector so far */
		uint64_t held_taken;		   /* of the gate's held count, read so far */
		uint32_t peeked; /* a vsock client shut down: bytes copied out of its queue */
	} dir[2];
	uint32_t fds; /* bit RECORD_FD_*: that descriptor travels, in that order */
	char section[CONFIG_NAME_MAX];
};

/* The number of descriptors a record names. */
unsigned int redirect_record_fd_count(const struct redirect_record *rec);

/*
 * Write rec (version REDIRECT_RECORD_VERSION) into buf: its length, or -ENOSPC (buf shorter
 * than REDIRECT_RECORD_MAX), -EINVAL (a field out of range).
 */
int redirect_record_encode(const struct redirect_record *rec, void *buf, size_t len);

/*
 * Read a record of any version this daemon knows from a carrier message's payload, which
 * came with n_fds descriptors: 0, -EPROTONOSUPPORT (another version: *version says which),
 * or -EINVAL (malformed, or not the descriptors it names).
 */
int redirect_record_decode(const void *buf, size_t len, unsigned int n_fds,
			   struct redirect_record *rec, unsigned int *version);

/*
 * A version 0 name, "ID.SLOT.HALF.SECTION", as a record: the pair had settled (nothing in
 * flight), the kernel or the daemon carrying each way that HALF does not say is finished.
 * 0 or -EINVAL.
 */
int redirect_record_from_name(const char *name, struct redirect_record *rec);

#endif
