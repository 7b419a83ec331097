/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A redirect's insides, shared by the files of one stream redirect and nothing else:
 *   redirect.c             its life: set-up, counters, close on request
 *   redirect_handover.c    a restart: its state and descriptors to the next instance, and back
 *   redirect_phase.c       the transition tables of the phase and of each direction
 *   redirect_step.c        one step: both endpoints looked at, each direction moved on;
 *                          every transition applied (redirect_enter(), dir_enter())
 *   redirect_kernel_path.c the way the kernel carries: insert, left-behind bytes, gate
 *                          catch-up, drain at EOF
 *   redirect_copy.c        the bytes the daemon moves itself
 *   redirect_inject.c      the injector: the daemon's bytes handed to the kernel before the
 *                          insert, while the target is full
 *   redirect_hold.c        the hold socket: where the verdict puts a client's bytes while
 *                          the gate is closed
 *   redirect_events.c      the epoll set of all redirects and its batch
 */
#ifndef VSOCKMAP_REDIRECT_INTERNAL_H
#define VSOCKMAP_REDIRECT_INTERNAL_H

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "bpf_dataplane.h"
#include "config.h"
#include "redirect.h"
#include "redirect_phase.h"
#include "redirect_table.h"
#include "target_connect.h"
#include "log.h"
#include "util.h"
#include "vsockmap.h"

/* A write that failed for want of memory is tried again this much later. */
#define WRITE_RETRY_USEC (10 * 1000)

/* A write into the injector that found it full is tried again this much later. */
#define INJECT_RETRY_USEC (1 * 1000)

/* A direction's buffer, while the daemon carries its bytes; never smaller once grown. */
#define SYNC_BUF_SIZE (256 * 1024)

enum { CLIENT = 0, TARGET = 1 };

struct endpoint {
	int fd;
	uint64_t cookie;
	struct redirect *owner; /* the epoll registration points here (redirect_update_io()) */
	uint32_t events;	/* what it is registered for in the redirects' epoll set */
	uint32_t revents;	/* what the batch being stepped reported for it */
	bool watched;		/* registered there */
	bool in_map;
	bool hup;	/* closed or broken: nothing more can be sent to it */
	bool broken;	/* epoll said HUP or ERR: it would say so at every wait */
	bool shut_seen; /* its peer shut down writing: that never changes back */
	unsigned int unshut_batch; /* epoll said in this batch: not shut down (peer_shut_down()) */
	/* A TCP endpoint at the pair's close (redirect_linger.c): */
	bool linger_shut;     /* shut for writing, waiting for its peer to take the rest */
	bool linger_over;     /* waited as long as it may, or its connection failed */
	int linger_outq;      /* SIOCOUTQ when it last changed */
	uint64_t linger_usec; /* ... and when */
	uint64_t linger_poll_usec; /* the next look, from the last */
};

struct direction {
	enum dir_state state; /* changed by dir_enter() only, once set up */
	char *buf; /* bytes read from the source, not yet written to the destination */
	size_t buf_len, buf_off;
	uint64_t user_bytes; /* forwarded by the daemon (the kernel counts the rest) */
	uint64_t user_packets;
	uint64_t drain_started_usec;
	uint64_t drain_epoch; /* iterator passes made before the drain began: too old for it */
	/* An exact drain signal: the target's backlog as last seen (skbs << 32 + partial bytes)
	 * and when it last changed. drain-timeout counts from then, not from the drain's start:
	 * a slow reader moves the backlog on in vsock-credit bursts, and that is not a stall. */
	uint64_t drain_mark;
	uint64_t drain_moved_usec;
	size_t buf_size;
	/* DIR_COPY out of the target: splice() through a pipe, one copy fewer than recv/send */
	int pipe[2];
	size_t in_pipe;
	bool no_splice;
	bool probe_missed; /* the queue probe did not answer for the destination: logged */
	bool drain_over; /* seen empty, or given up (and logged once): true until the next drain */
	int64_t left_behind;	  /* DIR_OPEN: SIOCINQ when last checked; 0: nothing left behind */
	uint64_t left_verdicts;	  /* verdict runs (redirected + held) when last checked */
	uint64_t left_check_usec; /* when to look at it again */
	uint64_t gate_usec;	  /* when the gate was last closed or opened */
	uint64_t held_taken;	  /* bytes of the gate's held count read by the daemon */
	bool held_in_flight;	  /* DIR_CATCHUP: held bytes counted, not yet queued */
	struct settle_clock drain_quiet; /* timed drain: the counter, still, the target writable */
	uint64_t drain_not_before_usec;	 /* a drain we began ourselves: verdicts still in flight */
	uint64_t held_wait_usec; /* the source's peer is gone, held bytes still owed since */
	bool send_failed_logged; /* a failed write into the destination was logged */
	bool sync_held_back;	 /* DIR_SYNC: the insert waits (test knob) */
	uint64_t retry_usec;	 /* a write short of memory is tried again then */
	/* DIR_SYNC, target full: the daemon writes into the injector (redirect_inject.c) */
	int inject_fd;		  /* X: the daemon writes here; -1: not injecting */
	int inject_peer;	  /* Y: in the sockhash, linked to the target */
	uint64_t inject_cookie;	  /* Y's */
	uint64_t inject_bytes;	  /* written into it (the kernel counts them as its own) */
	/* Where the verdict puts what it holds while the gate is closed (redirect_hold.c) */
	int hold_fd;		  /* R: the daemon reads the held bytes here; -1: no hold socket */
	int hold_peer;		  /* H: in egress, the gate's hold_cookie */
	uint64_t hold_cookie;	  /* H's */
	bool inject_error_logged; /* an injector that could not be opened was logged */
	bool hold_error_logged;	  /* a hold socket that could not be made was logged */
	bool insert_error_logged; /* an insert that failed while injecting was logged */
	int carry_fd; /* a restart: the memfd that carries the pending bytes (redirect_handover.c) */
	size_t queued_peeked; /* a vsock client shut down: bytes of its queue the daemon copied */
};

struct redirect {
	struct redirect_table_entry live; /* in the table of live redirects (redirect_table.c) */
	struct redirect *next_zombie;	 /* freed during a batch: free()d at its end */
	struct redirect_env *env;
	const struct redirect_owner *owner; /* its listener */
	uint64_t id;
	struct endpoint ep[2];
	struct direction dir[VSOCKMAP_NR_DIRS]; /* indexed by source endpoint */
	uint32_t slot;
	bool has_slot;
	bool userspace; /* the daemon carries both ways: no sockhash (datapath=userspace) */
	bool adopted;	/* taken back from a previous instance (redirect_adopt()) */
	uint32_t origin; /* the instance that made its target socket (redirect_record.h) */
	bool linked;	/* the client's cookie is in the links map */
	enum redirect_phase phase; /* changed by redirect_enter() only */
	/*
	 * The target's stream broke (an error, not an EOF), or the client's bytes could not all
	 * be written to it: the client's close says so where its socket can (redirect_cut()).
	 */
	bool cut;
	uint64_t idle_bytes;	  /* bytes moved both ways at the last idle check */
	uint64_t idle_since_usec; /* when idle_bytes last changed */
	uint64_t idle_counted;	  /* of idle_bytes, what the counters said (no queue) */
	bool idle_unqueued;	  /* and nothing waited toward either peer: no queue, no backlog */
	sd_event_source *timer;
	unsigned int batch; /* the last events batch that reported it */
	bool batch_fresh;   /* being stepped by it: ep[].revents is what epoll saw just now */
	bool wants_pass;    /* on events.wants_pass: step again after the batch's pass */
	struct redirect *next_wants_pass;
	uint64_t started_usec;
	struct timed_connect connect;
	struct ucred cred;
	bool uid_counted; /* a unix client: counted in env->uids under cred.uid */
	char comm[32];
};

/*
 * A message about one redirect: "[section] redirect ID: ...", sent to the journal with
 * REDIRECT=, REDIRECT_ID= and CLIENT_PID=, so that `journalctl REDIRECT_ID=7` finds them all.
 */
#define redirect_log(r, level, fmt, ...)                                                           \
	log_fields(level, REDIRECT_LOG_CTX(r), "[%s] redirect %" PRIu64 ": " fmt,                  \
		   (r)->owner->rc->name, (r)->id, ##__VA_ARGS__)
/* Same, appending ": strerror(err)" and ERRNO=. */
#define redirect_log_errno(r, level, err, fmt, ...)                                                \
	log_fields_errno(level, REDIRECT_LOG_CTX(r), err, "[%s] redirect %" PRIu64 ": " fmt,       \
			 (r)->owner->rc->name, (r)->id, ##__VA_ARGS__)
#define REDIRECT_LOG_CTX(r)                                                                        \
	LOG_CTX(.redirect = (r)->owner->rc->name, .redirect_id = (r)->id,                          \
		.client_pid = (r)->cred.pid)

/* Bytes read from the source and not yet written to the destination. */
static inline bool dir_pending(const struct direction *dir)
{
	return dir->buf_off < dir->buf_len || dir->in_pipe;
}

/*
 * A source the daemon may read, splice from and stop reading at will: one never in a
 * sockhash (the target; both ends on the user-space path). A mapped source's bytes may sit
 * in its psock, where a read or splice of the socket does not see them.
 */
static inline bool source_never_mapped(const struct redirect *r, int src)
{
	return src == TARGET || r->userspace;
}

/* The time of this event-loop iteration: the same for everything handled in it. */
static inline uint64_t loop_tick(struct redirect *r)
{
	uint64_t t;

	return sd_event_now(r->env->event, CLOCK_MONOTONIC, &t) < 0 ? now_usec() : t;
}

/* ---- redirect.c ---- */

/* A redirect on the daemon's list, owning both fds (closed here without memory). */
struct redirect *redirect_new(struct redirect_env *env, const struct redirect_owner *owner,
			      bool userspace, uint64_t id, int client_fd, int target_fd);

/* The target is connected: join the pair in the maps, then step. */
void redirect_connected(struct redirect *r);
/* Set-up failed: say why, count it, close the client. */
void redirect_fail(struct redirect *r, int err, const char *what);
/* "VSOCK-CONNECT:2:1234", for messages. */
const char *redirect_target_text(struct redirect *r, char *buf, size_t len);

/* ---- redirect_step.c ---- */

void redirect_step(struct redirect *r);
/* The one way the phase changes: the change ev makes (redirect_phase.c), or abort. */
void redirect_enter(struct redirect *r, enum redirect_event ev);
/* The one way a direction's state changes, with what entering the new state does. */
void dir_enter(struct redirect *r, int src, enum dir_event ev);

/* ---- redirect_linger.c ---- */
/*
 * The target's stream broke: mark the pair cut, so that a TCP client is reset at
 * the close instead of reading a clean EOF (a unix client reads ECONNRESET only if it sent
 * bytes the daemon had not read; a vsock client has no way to be told).
 */
void redirect_cut(struct redirect *r);
/* Before the client's socket closes: a cut pair resets a TCP client (SO_LINGER 0). */
void redirect_close_client(struct redirect *r);
/*
 * A close (a stop, close ID, the idle timeout) ends the client's way: true where the daemon
 * stops reading a user-space TCP client itself instead of shutting it down for reading.
 */
bool redirect_client_reads_held(const struct redirect *r);

/*
 * Both ways are done: true while a TCP endpoint's peer has not yet taken every byte sent to
 * it, with the time to look again in *deadline. The pair closes once this is false.
 */
bool redirect_linger(struct redirect *r, uint64_t now, uint64_t *deadline);

/* ---- redirect_kernel_path.c: one function per direction state ---- */

void dir_sync(struct redirect *r, int src);		 /* DIR_SYNC */
void dir_check_left_behind(struct redirect *r, int src); /* DIR_OPEN */
void dir_sweep(struct redirect *r, int src);		 /* DIR_SWEEP */
void dir_catchup(struct redirect *r, int src);		 /* DIR_CATCHUP */
void dir_drain(struct redirect *r, int src);		 /* DIR_DRAINING */
void dir_unhashed(struct redirect *r, int src);		 /* DIR_UNHASHED */
/*
 * DIR_OPEN, just inserted or taken back: bytes already in the source's own queue were left
 * behind (they move on only as the client sends): watch them. Returns how many, or 0.
 */
int dir_watch_left_behind(struct redirect *r, int src);
/* For the idle timeout: changes whenever the verdict runs or the kernel's backlog toward a
 * reader changes (queue probe only). */
uint64_t redirect_kernel_runs(struct redirect *r);
uint64_t redirect_kernel_backlog(struct redirect *r, bool *known);

/* ---- redirect_inject.c ---- */

/* The daemon writes direction src's bytes into the injector: they reach the target in order. */
static inline bool dir_injecting(const struct direction *dir)
{
	return dir->inject_fd >= 0;
}
/* Open the injector of direction src (the client's only). 0 or -errno (-EOPNOTSUPP). */
int dir_inject_open(struct redirect *r, int src);
/* Close it: what it was given is in the target's backlog by now. */
void dir_inject_close(struct redirect *r, int src);

/* ---- redirect_hold.c ---- */

/* The verdict sends what it holds for direction src to the daemon's hold socket. */
static inline bool dir_holding(const struct direction *dir)
{
	return dir->hold_fd >= 0;
}
/* Make the hold socket of direction src and name it in its gate. 0 or -errno. */
int dir_hold_open(struct redirect *r, int src);
/* Close it and take it out of the gate: what it held has been read. */
void dir_hold_close(struct redirect *r, int src);
/* Read held bytes from it: bytes read, -EINPROGRESS (none yet), or -errno. */
ssize_t dir_hold_read(struct redirect *r, int src, void *buf, size_t len);

/* ---- redirect_events.c ---- */

/* The epoll interest of both endpoints, as r's state asks. 0 or -errno. */
int redirect_update_io(struct redirect *r);
/* Step r at deadline (CLOCK_MONOTONIC); 0: no timer. 0 or -errno. */
int redirect_arm_timer(struct redirect *r, uint64_t deadline);
/* r's endpoints leave the epoll set. */
void redirect_events_forget(struct redirect *r);
/* r is freed during a batch: true if its free() must wait for the batch's end. */
bool redirect_events_defer_free(struct redirect *r);
/* The batch is being stepped: a drain that begins now waits for the pass after it. */
bool redirect_events_in_batch(const struct redirect *r);
/* Step r again after the batch, once its iterator pass is made. */
void redirect_events_want_pass(struct redirect *r);

/* ---- redirect_copy.c ---- */

/* Write the pending buffer of direction src into its destination. 1: empty, 0: blocked. */
int flush_buf(struct redirect *r, int src);
/* The endpoint's peer shut down writing, or closed (remembered once seen). */
bool peer_shut_down(struct endpoint *ep);
/* The direction's buffer, allocated on first use; NULL without memory. */
char *dir_buf(struct direction *dir);
/* Read what the source holds and write it on. Bytes read, 0 at EOF, or -EAGAIN/-errno. */
ssize_t forward_some(struct redirect *r, int src);
/* DIR_COPY: copy until EOF (splice() where the source allows), then pass the half-close on. */
void dir_copy(struct redirect *r, int src);
/* Room for want bytes in the direction's buffer, what it holds moved to its start. 0 or -errno. */
int dir_buf_reserve(struct direction *dir, size_t want);
/* What the splice pipe holds, after what the buffer holds: all in the buffer. 0 or -errno. */
int dir_pipe_into_buf(struct direction *dir);
/* DIR_COPY: read everything the source has queued now into the buffer (a vsock client's,
 * before a close on request shuts it down for reading). */
void dir_take_queued(struct redirect *r, int src);
/* The shutdown that was to follow failed: the bytes copied are read again, drop the copy. */
void dir_forget_queued(struct direction *dir);

#endif
