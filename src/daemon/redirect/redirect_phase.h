/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The state machine of one stream redirect, as two tables and nothing else: the redirect's
 * phase, and in the phases that move bytes, the state of each of its two directions. Every
 * change of either goes through redirect_enter() or dir_enter() (redirect_step.c), which
 * look the change up here; a change the tables do not hold is a bug and aborts.
 *
 *   CONNECTING --connected--> RUNNING --peer gone--> CLOSING (finish the other way)
 *                                |  \--close requested--> STOPPING (deliver what is queued)
 *                                 \--idle timeout-------> IDLE_CLOSING (same, said so)
 *   any phase but FREED --handed over--> HANDED_OVER (a restart: the next instance goes on)
 *   any phase --freed--> FREED
 *
 * A direction (indexed by its source endpoint):
 *
 *   SYNC --inserted--> OPEN --left behind--> SWEEP --swept--> CATCHUP --caught up--> OPEN
 *   SYNC, OPEN, CATCHUP --source ended--> DRAINING --finished--> DONE
 *   SYNC --insert failed--> COPY;  SYNC, OPEN --target unhashed--> COPY --finished--> DONE
 *   OPEN --source unhashed--> UNHASHED --backlog sent--> COPY;  UNHASHED --source ended-->
 *   DRAINING
 *   any but DONE --destination gone--> DONE
 *
 * COPY is never left for the kernel again: once the daemon has read a source, a verdict
 * run could overtake what it holds (dir_sync()).
 */
#ifndef VSOCKMAP_REDIRECT_PHASE_H
#define VSOCKMAP_REDIRECT_PHASE_H

enum redirect_phase {
	PHASE_CONNECTING,   /* dialling the target: no byte moves yet */
	PHASE_RUNNING,	    /* both ways carried, each as its direction's state says */
	PHASE_CLOSING,	    /* an endpoint is gone or broken: finish the other way, then close */
	PHASE_STOPPING,	    /* close requested: deliver what is queued, read the target no more */
	PHASE_IDLE_CLOSING, /* the same, asked by the idle timeout */
	PHASE_HANDED_OVER,  /* the next instance's: this one touches none of it again */
	PHASE_FREED,	    /* gone; its memory waits for the end of an events batch */
	NR_REDIRECT_PHASES,
};

enum redirect_event {
	REDIRECT_CONNECTED,	  /* the target accepted the connection */
	REDIRECT_PEER_GONE,	  /* an endpoint closed or broke, or a source ended for good */
	REDIRECT_CLOSE_REQUESTED, /* `vsockmapctl close`, or the daemon stops */
	REDIRECT_IDLE_TIMEOUT,	  /* no byte either way for idle-timeout */
	REDIRECT_HANDED_OVER,	  /* its record and descriptors went to the next instance */
	REDIRECT_FREED,		  /* closed: both sockets, its slot and its map entries */
	NR_REDIRECT_EVENTS,
};

enum dir_state {
	DIR_SYNC,     /* the daemon forwards what arrived before the kernel takes over */
	DIR_OPEN,     /* the kernel redirects */
	DIR_SWEEP,    /* gate closed: take what was left behind at the insert (dir_sweep()) */
	DIR_CATCHUP,  /* gate closed: forward what the verdict held, then open it */
	DIR_DRAINING, /* the source hit EOF: wait for the kernel backlog, then shut down */
	DIR_UNHASHED, /* the source left the map: wait for the kernel backlog, then carry it */
	DIR_COPY,     /* the daemon carries this direction for good (see link_pair()) */
	DIR_DONE,
	NR_DIR_STATES,
};

enum dir_event {
	DIR_INSERTED,	     /* the client's socket is in the sockhash: the kernel carries */
	DIR_INSERT_FAILED,   /* it could not be added: the daemon carries */
	DIR_LEFT_BEHIND,     /* bytes left behind at the insert stalled: the gate closes */
	DIR_SWEPT,	     /* what was left behind is read and written on */
	DIR_CAUGHT_UP,	     /* every held byte is written on and the gate is open again */
	DIR_SOURCE_ENDED,    /* EOF or an error on the source, or its reading shut down */
	DIR_TARGET_UNHASHED, /* a unix server's shutdown() took the target out of the map */
	DIR_SOURCE_UNHASHED, /* a unix client's shutdown() took its socket out of the map */
	DIR_BACKLOG_SENT,    /* what the kernel redirected before that has left */
	DIR_FINISHED,	     /* the last byte is written on and the half-close passed */
	DIR_DEST_GONE,	     /* nothing more can be sent to the destination */
	NR_DIR_EVENTS,
};

/* The phase event ev leads to from phase from, or -EINVAL if it cannot happen there. */
int redirect_phase_after(enum redirect_phase from, enum redirect_event ev);
/* The state event ev leads a direction to from state from, or -EINVAL. */
int dir_state_after(enum dir_state from, enum dir_event ev);

/* A closing phase: no new work is taken on, the pair closes once both ways are done. */
static inline int redirect_phase_closing(enum redirect_phase p)
{
	return p == PHASE_CLOSING || p == PHASE_STOPPING || p == PHASE_IDLE_CLOSING;
}

/* The daemon reads no more from the target than it has queued (close on request). */
static inline int redirect_phase_stops_target(enum redirect_phase p)
{
	return p == PHASE_STOPPING || p == PHASE_IDLE_CLOSING;
}

const char *redirect_phase_name(enum redirect_phase p);
const char *redirect_event_name(enum redirect_event ev);
const char *dir_state_name(enum dir_state s);
const char *dir_event_name(enum dir_event ev);

#endif
