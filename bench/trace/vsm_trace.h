/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * vsm_trace.h - the counters that vsm-trace.bpf.c keeps and vsm-trace.c prints: what the
 * kernel did per byte moved (vsock packets, psock worker runs and retries, sendmsg calls,
 * bytes copied into and out of skbs). Shared by the BPF and the user side.
 */
#ifndef VSM_TRACE_H
#define VSM_TRACE_H

/* Packet and call sizes by power of two: bucket i holds [2^i, 2^(i+1)), bucket 0 also 0. */
#define VSM_TRACE_BUCKETS 24

/* Which socket family a sendmsg call went into. */
enum vsm_trace_family {
	VSM_TRACE_VSOCK,
	VSM_TRACE_UNIX,
	VSM_TRACE_TCP,
	VSM_TRACE_FAMILIES,
};

/* Who ran the call: the psock backlog worker, the daemon, anyone else (clients, peers). */
enum vsm_trace_context {
	VSM_TRACE_WORKER,
	VSM_TRACE_DAEMON,
	VSM_TRACE_OTHER,
	VSM_TRACE_CONTEXTS,
};

struct vsm_trace_counters {
	/* vsock:virtio_transport_alloc_pkt, by op: data (OP_RW) and all the others. */
	__u64 vsock_data_pkts;
	__u64 vsock_data_bytes;
	__u64 vsock_ctrl_pkts;
	__u64 vsock_data_size[VSM_TRACE_BUCKETS];
	/* sk_psock_backlog(): runs and the time spent in them. */
	__u64 worker_runs;
	__u64 worker_ns;
	/* The worker's own work queued with a delay (its -EAGAIN retry): how often, the
	 * jiffies asked for, and the time from the queueing to the run that followed. */
	__u64 retry_queued;
	__u64 retry_jiffies;
	__u64 retry_sleep_ns;
	__u64
	    retries_waited; /* runs that followed a delayed queueing (retry_sleep_ns over these) */
	/* The worker queued at once (delay 0: a redirect, a write-space wake-up): done, or a
	 * no-op because the work was already pending. */
	__u64 kick_queued;
	__u64 kick_pending;
	__u64 write_space_calls; /* sk_psock_write_space() */
	/* sendmsg calls and their lengths, by family and by who called. */
	__u64 sendmsg_calls[VSM_TRACE_FAMILIES][VSM_TRACE_CONTEXTS];
	__u64 sendmsg_bytes[VSM_TRACE_FAMILIES][VSM_TRACE_CONTEXTS];
	__u64 sendmsg_size[VSM_TRACE_FAMILIES][VSM_TRACE_BUCKETS];
	/* Bytes copied into skbs from an iov_iter and out of skbs into one, by who called. */
	__u64 copy_into_skb_bytes[VSM_TRACE_CONTEXTS];
	__u64 copy_out_of_skb_bytes[VSM_TRACE_CONTEXTS];
};

#endif /* VSM_TRACE_H */
