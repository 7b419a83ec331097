/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One stream redirect: a client connection accepted on a listener and its target
 * connection, joined in the kernel. The daemon sets the pair up without losing or
 * reordering a byte, watches both ends for EOF, propagates a half-close once the kernel
 * backlog has drained, and closes the pair.
 */
#ifndef VSOCKMAP_REDIRECT_H
#define VSOCKMAP_REDIRECT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <systemd/sd-event.h>

#include "redirect_record.h"
#include "redirect_table.h"
#include "uid_tally.h"
#include "traffic.h"
#include "vsockmap.h"

struct daemon_config;
struct redirect_config;
struct dataplane;
struct listener;
struct passed_fds;
struct redirect;

/* The redirects' epoll set and its batch: one per daemon, written by redirect_events.c. */
struct redirect_loop {
	sd_event_source *src; /* borrowed: the loop owns it; NULL until the first redirect */
	int epfd;
	bool dispatching;
	bool batch_pass; /* stepping the batch: drains wait for one iterator pass after it */
	unsigned int batch;
	struct redirect *zombies;    /* freed during the batch, free()d at its end */
	struct redirect *wants_pass; /* drains that began in this batch */
	/* Tests only, read at start. VSOCKMAPD_TEST_INSERT_DELAY_US widens the window between
	 * the last read and the insert, so that a sending client leaves bytes behind (the rare
	 * case dir_sweep() handles). VSOCKMAPD_TEST_INSERT_QUEUED=BYTES holds the insert back,
	 * without reading the client, until BYTES are queued in its socket (or 5 s have
	 * passed), so that all of them are left behind: the client that queues MiBs as it
	 * connects, forced. VSOCKMAPD_TEST_STEP_DELAY_US sleeps in every step of a connected
	 * pair between the look at both sockets and the copy, so that a peer can go away
	 * between the two (the window redirect_step() closes at its end). */
	long test_insert_delay_us;
	long test_insert_queued;
	long test_step_delay_us;
};

/* Empty, with the test knobs read from the environment. */
void redirect_loop_init(struct redirect_loop *loop);

/*
 * What the daemon lends the layers below it: its listeners, their redirects and datagram
 * forwarders see this and not struct daemon. One per daemon (d->env, daemon_state.h).
 */
struct redirect_env {
	sd_event *event;
	struct dataplane *dp;	 /* NULL: no kernel path, every redirect runs in user space */
	char userspace_why[128]; /* why dp is NULL, for each listener's log line */
	const struct daemon_config *cfg; /* the [daemon] settings, as the last reload left them */
	struct passed_fds *passed;	 /* what systemd passed at start, until each is taken */
	struct redirect_table redirects; /* live stream redirects, newest first, and their ids */
	struct uid_tally uids;		 /* of those, the unix clients' per uid */
	struct redirect_loop loop;	 /* their epoll set (redirect_events.c) */
	uint64_t late_inserts;		 /* client bytes arrived while its socket entered the map */
	bool handing_over;		 /* restarting: every redirect goes to the fd store */
	uint32_t generation; /* this instance's number in the chain of restarts (handover.c) */
	bool stopping; /* stopping: redirects finish, then the loop exits (stop_drain.c) */
	/* CAP_NET_ADMIN dropped at start, no section used the kernel path: new ones run in
	 * user space until a restart */
	bool kernel_path_closed;
};

/*
 * What a listener's redirects and datagram forwarder tell it: the calls up, as a table the
 * listener hands down (listener.c fills it), so that redirect/ never calls listener.c.
 */
struct listener_ops {
	void (*redirect_opened)(struct listener *l);
	void (*redirect_failed)(struct listener *l);
	void (*redirect_closed)(struct listener *l, const struct traffic *moved);
	/* err from adding a target to the sockhash: true if the redirect should run in user
	 * space instead (EOPNOTSUPP, datapath=auto); the listener's later ones do too. */
	bool (*target_refused)(struct listener *l, int err);
};

/*
 * What a listener hands its redirects and its datagram forwarder, for as long as they live
 * (it outlives them): its section, the calls up, and itself, only passed back in those calls.
 */
struct redirect_owner {
	struct listener *l;
	const struct redirect_config *rc;
	const struct listener_ops *ops;
};

struct redirect_info {
	uint64_t id;
	const char *name;
	const char *state;
	const char *datapath[VSOCKMAP_NR_DIRS]; /* "kernel" or "daemon", per direction */
	struct ucred client;			/* pid 0: unknown */
	char comm[32];
	uint64_t age_usec;
	struct traffic moved;
	uint64_t cookie[2]; /* socket cookies: [0] client side, [1] target side; 0 if none */
	/* Kernel queues, when the queue iterator is loaded (has_queues). */
	bool has_queues;
	uint32_t target_backlog_skbs; /* redirected, not yet sent out of the target socket */
	int64_t client_rcvq_bytes;    /* SIOCINQ of the client socket; -1 if unknown */
};

/* Take over an accepted client connection and dial the owner's target; userspace: the daemon
 * carries both ways (no sockhash). */
int redirect_start(struct redirect_env *env, const struct redirect_owner *owner, bool userspace,
		   int client_fd);

/* Close at once, without draining (daemon shutdown). */
void redirect_free(struct redirect *r);

/*
 * End a redirect cleanly, as if both ends had shut down writing: the kernel backlog drains,
 * each side gets EOF after everything already sent to it, then the pair closes.
 */
void redirect_request_close(struct redirect *r);

/*
 * The idle timeout: when no byte has moved either way since timeout_usec before now (as
 * seen by these calls), close r as redirect_request_close() does. Returns true if it did;
 * r may be freed then.
 */
bool redirect_idle_check(struct redirect *r, uint64_t now, uint64_t timeout_usec);
/* A kernel-path client whose socket left the sockhash is carried by the daemon from now. */
/* Whether redirect_check_source_mapped() has a socket to ask (no system call). */
bool redirect_source_watched(const struct redirect *r);
void redirect_check_source_mapped(struct redirect *r);

/* The next older live redirect (redirect_table_first() gives the newest); NULL: none. */
struct redirect *redirect_next(struct redirect *r);
/*
 * A mark that changes whenever r's bytes move on toward a reader: what the daemon has
 * written, both ways, less what still waits in both sockets' send queues (socket_outq()).
 * A stop compares two marks to tell a slow reader from a stuck one.
 */
uint64_t redirect_progress_mark(const struct redirect *r);
/* with_queues also asks the queue iterator for kernel queue lengths: one BPF iteration. */
void redirect_get_info(struct redirect *r, struct redirect_info *info, bool with_queues);
/* Only what moved each way (redirect_get_info()'s moved), with no socket call. */
void redirect_get_traffic(struct redirect *r, struct traffic *moved);
struct listener *redirect_listener(struct redirect *r);
/*
 * The client's SO_PEERCRED at accept (pid 0: unknown), from the redirect alone: no socket
 * call and no map lookup, for filters that run on every live redirect before any of them
 * costs a system call (the control socket's list and show).
 */
const struct ucred *redirect_client(const struct redirect *r);

/*
 * Restart without loss (redirect_handover.c, for handover.c): a redirect goes to the next
 * instance at once, whatever it is doing, as a record (redirect_record.h) and the descriptors
 * that hold its bytes.
 */
/* The slot of a pair carried in user space, which has none in the maps. */
#define REDIRECT_SLOT_USERSPACE VSOCKMAP_MAX_REDIRECTS
/*
 * r as a record and its descriptors: rec->fds says which travel, fds[] holds them in their
 * RECORD_FD_* places (-1 elsewhere), still r's. The bytes the daemon holds go into a memfd r
 * keeps until it is freed. r runs on unchanged, should the hand-over fail. 0 or -errno.
 */
int redirect_freeze(struct redirect *r, struct redirect_record *rec, int fds[RECORD_NR_FDS]);
/* Its record and descriptors went to the next instance: this one touches none of it again. */
void redirect_mark_handed_over(struct redirect *r);
/* Marked so: redirect_free() closes only this instance's copies of its descriptors. */
bool redirect_handed_over(const struct redirect *r);
/* The instance that made its target socket (the queue probe's link it needs). */
uint32_t redirect_origin(const struct redirect *r);
/*
 * Build back the redirect a record describes, from its descriptors (fds[] in RECORD_FD_*
 * places, -1 for those it does not name), and step it; cookie: its sockets' (read by the
 * caller; unused for REDIRECT_SLOT_USERSPACE). Takes every fd. 0, or -errno with every fd
 * closed and nothing else done: its slot and the owner (a placeholder) stay the caller's.
 */
int redirect_adopt(struct redirect_env *env, const struct redirect_owner *owner,
		   const struct redirect_record *rec, int fds[RECORD_NR_FDS],
		   const uint64_t cookie[2]);

#endif
