/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Structs and constants shared by the BPF object and the daemon. Fixed-width types only. */
#ifndef VSOCKMAP_SHARED_H
#define VSOCKMAP_SHARED_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Live redirects the kernel side can track; each has two directions. */
#define VSOCKMAP_MAX_REDIRECTS 65536
#define VSOCKMAP_MAX_SOCKETS   (2 * VSOCKMAP_MAX_REDIRECTS)
/* Datagrams a UNIX-RECV socket can hold, with their boundaries, while it has no target. */
#define VSOCKMAP_DGRAM_HELD_MAX 65536

enum vsockmap_dir {
	VSOCKMAP_DIR_TO_TARGET = 0, /* client -> target ("out") */
	VSOCKMAP_DIR_TO_CLIENT = 1, /* target -> client ("in", the reply direction) */
	VSOCKMAP_NR_DIRS = 2,
};

/*
 * links[cookie of one of our sockets]: where its incoming data goes. Written by the daemon
 * only, before the socket enters the sockhash.
 */
struct vsockmap_link {
	__u64 partner_cookie; /* key of the egress socket in the sockhash */
	__u32 slot;	      /* redirect slot: index into gates/counters (x2 + dir) */
	__u32 dir;	      /* enum vsockmap_dir of data arriving on this socket */
};

/*
 * gates[slot * 2 + dir], shared with the daemon through mmap. While the daemon still
 * forwards bytes that arrived before the pair was complete, the verdict holds data for it
 * (sends it to the hold socket, or passes it up) instead of redirecting it to the partner,
 * and counts it in "held". The daemon opens the gate
 * with released == held once it has read and written everything held so far; from then on
 * the verdict redirects as long as held == released, so no byte overtakes another.
 */
struct vsockmap_gate {
	__u64 held;	/* bytes passed up to the socket (written by BPF, atomic add) */
	__u64 released; /* value of held the daemon has fully forwarded (written by daemon) */
	__u32 open;	/* 1 once the partner is in the sockhash (written by daemon) */
	/*
	 * 1: the source entered the sockhash under the verdict that counts nothing
	 * (fastpath=permanent). Written by the daemon at the link, kept across restarts.
	 */
	__u32 uncounted;
	/*
	 * Where held skbs go: the cookie of the daemon's hold socket in egress, one end of a
	 * unix socketpair whose other end only the daemon reads (0: none, pass them up). A
	 * redirect to it keeps each skb charged to its sender until sent, and no peer of ours
	 * can unhash it (docs/kernel-notes.md, "Where held bytes wait"). Written by the daemon.
	 */
	__u64 hold_cookie;
};

/* counters[slot * 2 + dir], per CPU. */
struct vsockmap_counters {
	__u64 bytes;
	__u64 packets;
	__u64 held_packets;    /* passed to the daemon while the gate was closed */
	/*
	 * UNIX-RECV: held datagrams whose length could not be recorded (the queue was full):
	 * dropped for a seqpacket target, merged with their neighbours for a stream target.
	 */
	__u64 dropped_packets;
};

/*
 * A socket's queues, as the kernel holds them: one record per socket in the sockhash from the
 * queue iterator, or the answer of the queue probe (getsockopt(fd, SOL_SOCKET,
 * VSOCKMAP_SO_QUEUES), served by a cgroup/getsockopt program) for one socket.
 */
struct vsockmap_queue_info {
	__u64 cookie;
	__u32
	    backlog_skbs; /* psock->ingress_skb: redirected data not yet sent out of this socket */
	__u32 partial_bytes; /* psock->work_state.len: an skb the worker is part-way through */
	__u32 rcvq_skbs;     /* sk->sk_receive_queue length */
	__u32 flags;	     /* VSOCKMAP_QUEUE_* */
};

/* vsockmap_queue_info.flags: the socket has a psock (it is in a sockmap). */
#define VSOCKMAP_QUEUE_PSOCK 1
/* The queue probe's option name at SOL_SOCKET ("vsmq"); no kernel option has it. */
#define VSOCKMAP_SO_QUEUES 0x76736d71

#endif
