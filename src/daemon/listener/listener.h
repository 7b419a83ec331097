/* SPDX-License-Identifier: GPL-2.0-only */
/* A configured listener: a UNIX-LISTEN stream socket, or a UNIX-RECV dgram socket. */
#ifndef VSOCKMAP_LISTENER_H
#define VSOCKMAP_LISTENER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "config.h"
#include "redirect.h"
#include "socket_file.h"
#include "traffic.h"

struct dgram_forwarder;
struct listener;

struct listener {
	struct redirect_owner owner;	  /* handed to its redirects and its forwarder */
	struct redirect_env *env;	  /* the daemon's part it sees (redirect.h) */
	const struct redirect_config *rc; /* &conf */
	struct redirect_config conf;	  /* its own copy: a reload frees the old configuration */
	bool retired;	  /* its section was removed: not listening, freed with its last redirect */
	bool handed_over; /* in systemd's fd store for the next instance: keep the socket file */
	bool adopted;	  /* taken back from the previous instance through the fd store */
	bool kept;	  /* the socket of the section a reload replaced, on the same address */
	int fd;
	bool activated; /* fd passed by systemd: its socket file belongs to the .socket unit */
	struct socket_file_id file; /* the socket file bound: only it is published and removed */
	sd_event_source *io;
	struct dgram_forwarder *dgram; /* UNIX-RECV only */
	bool userspace;		       /* its redirects run in the daemon, not the kernel */
	char where[160];	       /* for the log: its path, or VSOCK-LISTEN:PORT etc. */
	char userspace_why[256];
	sd_event_source *retry; /* accepting again after running out of file descriptors */
	/* Written by listener.c alone; redirects report through owner.ops (listener_ops). */
	uint64_t accepted;
	uint64_t failed;  /* target refused, timed out, or set-up failed */
	uint64_t refused; /* not in allow-uid/allow-gid, or no file descriptor left */
	uint64_t refused_uid_limit; /* of refused, at max-redirects-per-uid */
	size_t live;
	struct traffic closed; /* moved by its redirects that have closed */
};

/* Open the section's socket (or take the one systemd passed) and serve it. */
int listener_open(struct redirect_env *env, const struct redirect_config *rc,
		  struct listener **out);

/*
 * The same on a listening socket a removed section gave up (listener_give_socket()): fd,
 * whether systemd passed it, and its socket file. The socket is taken, also on failure.
 */
int listener_open_on(struct redirect_env *env, const struct redirect_config *rc, int fd,
		     bool activated, const struct socket_file_id *file, struct listener **out);

/*
 * A reload replaces l's section with one on the same listen address: l gives its listening
 * socket up, backlog and file included, so that no client waiting there, or connecting
 * meanwhile, is reset or refused. Returns the fd, with *activated and *file; -ENOENT when l has
 * none to give (a datagram section, or none open).
 */
int listener_give_socket(struct listener *l, bool *activated, struct socket_file_id *file);

/*
 * Stop listening (its socket file goes) but leave its live redirects to finish: the listener
 * is freed with the last of them, or now if it has none.
 */
void listener_retire(struct listener *l);

/* Its redirects run in user space, for the reason given (logged with the listener). */
void listener_set_userspace(struct listener *l, const char *why);

/* Stop accepting for now (a restart hands the socket over; clients wait in the backlog). */
void listener_pause(struct listener *l);

/*
 * A retired listener for redirects taken back from a previous instance whose section is no
 * longer configured, or now has ends of other kinds, so they can be closed cleanly;
 * listen_kind and target_kind: what their clients and targets are. NULL without memory.
 */
struct listener *listener_placeholder(struct redirect_env *env, const char *section,
				      enum address_kind listen_kind, enum address_kind target_kind);

/* A reload changed max-children: accept again, or stop, as the new limit says. */
void listener_limit_changed(struct listener *l);

/* What l's closed redirects moved. */
const struct traffic *listener_closed_traffic(const struct listener *l);

#endif
