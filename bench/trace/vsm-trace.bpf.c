// SPDX-License-Identifier: GPL-2.0-only
/*
 * vsm-trace.bpf.c - counts what the kernel does to move bytes between sockets: the vsock
 * packets it sends and their sizes, the psock backlog worker's runs, its -EAGAIN retries
 * and how long they sleep, sendmsg calls by family and by caller, and the bytes that go
 * through the iov_iter copy routines. Loaded by vsm-trace.c for the length of a command;
 * all counters are per CPU and summed there. Every program only counts: none changes what
 * the kernel does. kprobes, not fentry: some hosts refuse tracing programs (EPERM) but
 * allow kprobes, and the same object must count there and in the VM.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "vsm_trace.h"

char LICENSE[] SEC("license") = "GPL";

#define VIRTIO_VSOCK_OP_RW 5

/* sk_psock_backlog's address (from /proc/kallsyms): tells the worker's work items apart. */
const volatile __u64 backlog_addr;

/* The counters, one struct per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vsm_trace_counters);
} counters SEC(".maps");

/* Threads inside sk_psock_backlog() now, with the time they entered. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} in_worker SEC(".maps");

/* queue_delayed_work_on()'s arguments, from its entry to its return, by thread. */
struct queue_call {
	__u64 dwork;
	__u64 delay;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct queue_call);
} queue_calls SEC(".maps");

/* A psock's work queued with a delay, and when: the next run's sleep is measured from it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u64);
} retry_since SEC(".maps");

static struct vsm_trace_counters *cnt(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&counters, &zero);
}

static __u32 bucket(__u64 v)
{
	__u32 b = 0;

	if (v >> 32) {
		v >>= 32;
		b += 32;
	}
	if (v >> 16) {
		v >>= 16;
		b += 16;
	}
	if (v >> 8) {
		v >>= 8;
		b += 8;
	}
	if (v >> 4) {
		v >>= 4;
		b += 4;
	}
	if (v >> 2) {
		v >>= 2;
		b += 2;
	}
	if (v >> 1)
		b += 1;
	return b < VSM_TRACE_BUCKETS ? b : VSM_TRACE_BUCKETS - 1;
}

static __u32 context(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	char comm[16];

	if (bpf_map_lookup_elem(&in_worker, &tid))
		return VSM_TRACE_WORKER;
	bpf_get_current_comm(comm, sizeof(comm));
	if (comm[0] == 'v' && comm[1] == 's' && comm[2] == 'o' && comm[3] == 'c' &&
	    comm[4] == 'k' && comm[5] == 'm' && comm[6] == 'a' && comm[7] == 'p' && comm[8] == 'd')
		return VSM_TRACE_DAEMON;
	return VSM_TRACE_OTHER;
}

SEC("kprobe/sk_psock_backlog")
int BPF_KPROBE(backlog_enter, struct work_struct *work)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct vsm_trace_counters *c = cnt();
	__u64 now = bpf_ktime_get_ns(), key = (__u64)work, *since;

	if (!c)
		return 0;
	c->worker_runs++;
	since = bpf_map_lookup_elem(&retry_since, &key);
	if (since) {
		c->retry_sleep_ns += now - *since;
		c->retries_waited++;
		bpf_map_delete_elem(&retry_since, &key);
	}
	bpf_map_update_elem(&in_worker, &tid, &now, BPF_ANY);
	return 0;
}

SEC("kretprobe/sk_psock_backlog")
int BPF_KRETPROBE(backlog_exit)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct vsm_trace_counters *c = cnt();
	__u64 *start = bpf_map_lookup_elem(&in_worker, &tid);

	if (c && start)
		c->worker_ns += bpf_ktime_get_ns() - *start;
	bpf_map_delete_elem(&in_worker, &tid);
	return 0;
}

static void queued(__u64 dwork, __u64 delay, bool done)
{
	struct vsm_trace_counters *c;
	__u64 key = dwork, now;

	c = cnt();
	if (!c)
		return;
	if (!delay) {
		if (done)
			c->kick_queued++;
		else
			c->kick_pending++;
		return;
	}
	if (!done)
		return;
	c->retry_queued++;
	c->retry_jiffies += delay;
	now = bpf_ktime_get_ns();
	bpf_map_update_elem(&retry_since, &key, &now, BPF_ANY);
}

/* Only the psock worker's own work items are of interest. */
static bool is_backlog(struct delayed_work *dwork)
{
	return backlog_addr && (__u64)BPF_CORE_READ(dwork, work.func) == backlog_addr;
}

SEC("kprobe/queue_delayed_work_on")
int BPF_KPROBE(queue_delayed_enter, int cpu, struct workqueue_struct *wq,
	       struct delayed_work *dwork, unsigned long delay)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct queue_call call = {(__u64)dwork, delay};

	if (is_backlog(dwork))
		bpf_map_update_elem(&queue_calls, &tid, &call, BPF_ANY);
	return 0;
}

/* Returns true when it queued the work, false when the work was already pending. */
SEC("kretprobe/queue_delayed_work_on")
int BPF_KRETPROBE(queue_delayed_exit, bool ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct queue_call *call = bpf_map_lookup_elem(&queue_calls, &tid);

	if (!call)
		return 0;
	queued(call->dwork, call->delay, ret);
	bpf_map_delete_elem(&queue_calls, &tid);
	return 0;
}

/* Always (re)arms the work with the new delay: "pending" does not stop it. */
SEC("kprobe/mod_delayed_work_on")
int BPF_KPROBE(mod_delayed_enter, int cpu, struct workqueue_struct *wq, struct delayed_work *dwork,
	       unsigned long delay)
{
	if (is_backlog(dwork))
		queued((__u64)dwork, delay, true);
	return 0;
}

SEC("kprobe/sk_psock_write_space")
int BPF_KPROBE(write_space, struct sock *sk)
{
	struct vsm_trace_counters *c = cnt();

	if (c)
		c->write_space_calls++;
	return 0;
}

static void sent(__u32 family, __u64 len)
{
	struct vsm_trace_counters *c = cnt();
	__u32 who = context();

	if (!c || family >= VSM_TRACE_FAMILIES || who >= VSM_TRACE_CONTEXTS)
		return;
	c->sendmsg_calls[family][who]++;
	c->sendmsg_bytes[family][who] += len;
	c->sendmsg_size[family][bucket(len)]++;
}

SEC("kprobe/vsock_connectible_sendmsg")
int BPF_KPROBE(vsock_sendmsg, struct socket *sock, struct msghdr *msg, size_t len)
{
	sent(VSM_TRACE_VSOCK, len);
	return 0;
}

SEC("kprobe/unix_stream_sendmsg")
int BPF_KPROBE(unix_sendmsg, struct socket *sock, struct msghdr *msg, size_t len)
{
	sent(VSM_TRACE_UNIX, len);
	return 0;
}

/* tcp_sendmsg() and the sk_msg redirect path (tcp_bpf_push) both end here. */
SEC("kprobe/tcp_sendmsg_locked")
int BPF_KPROBE(tcp_sendmsg, struct sock *sk, struct msghdr *msg, size_t size)
{
	sent(VSM_TRACE_TCP, size);
	return 0;
}

/*
 * Copies of the bytes, counted where skbs are filled from and emptied into an iov_iter (the
 * iov_iter routines themselves take no kprobes on Debian's kernels): unix_stream_sendmsg()
 * fills its skbs with skb_copy_datagram_from_iter(), and every stream recvmsg (unix, vsock,
 * TCP) empties them with skb_copy_datagram_iter(), and vsock's virtio_transport_fill_skb()
 * fills its packets with skb_copy_datagram_from_iter() unless MSG_ZEROCOPY is set (the
 * direct client's one copy in, seen on 6.12 and 7.3).
 */
SEC("kprobe/skb_copy_datagram_from_iter")
int BPF_KPROBE(copy_into_skb, struct sk_buff *skb, int offset, struct iov_iter *from, int len)
{
	struct vsm_trace_counters *c = cnt();
	__u32 who = context();

	if (c && who < VSM_TRACE_CONTEXTS && len > 0)
		c->copy_into_skb_bytes[who] += len;
	return 0;
}

SEC("kprobe/skb_copy_datagram_iter")
int BPF_KPROBE(copy_out_of_skb, const struct sk_buff *skb, int offset, struct iov_iter *to, int len)
{
	struct vsm_trace_counters *c = cnt();
	__u32 who = context();

	if (c && who < VSM_TRACE_CONTEXTS && len > 0)
		c->copy_out_of_skb_bytes[who] += len;
	return 0;
}

/* The tracepoint's fields (include/trace/events/vsock_virtio_transport_common.h), stable
 * since 5.x; later kernels add fields after these. */
struct alloc_pkt_args {
	__u64 common;
	__u32 src_cid;
	__u32 src_port;
	__u32 dst_cid;
	__u32 dst_port;
	__u32 len;
	__u16 type;
	__u16 op;
};

SEC("tracepoint/vsock/virtio_transport_alloc_pkt")
int vsock_alloc_pkt(struct alloc_pkt_args *args)
{
	struct vsm_trace_counters *c = cnt();

	if (!c)
		return 0;
	if (args->op != VIRTIO_VSOCK_OP_RW) {
		c->vsock_ctrl_pkts++;
		return 0;
	}
	c->vsock_data_pkts++;
	c->vsock_data_bytes += args->len;
	c->vsock_data_size[bucket(args->len)]++;
	return 0;
}
