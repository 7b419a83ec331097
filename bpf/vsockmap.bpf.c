// SPDX-License-Identifier: GPL-2.0-only
/*
 * vsockmap data path: each daemon socket's incoming data goes straight out of its partner.
 *
 * sk_skb verdict (BPF_SK_SKB_VERDICT) is the only program type that runs for unix and vsock
 * sockets; sk_msg runs only for TCP senders. Data is redirected to the partner's egress: an
 * ingress redirect to vsock is dropped by the kernel.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "vsockmap.h"

#define AF_UNIX		     1
#define SOL_SOCKET	     1
#define SK_USER_DATA_PTRMASK (~7UL) /* sk_user_data low bits: NOCOPY, BPF, PSOCK */

/* 6.2 and later; the program that needs it is loaded only where the kernel has it. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

char LICENSE[] SEC("license") = "GPL";

/* Sockets whose incoming data the kernel redirects (the verdict runs on them), by cookie. */
struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, VSOCKMAP_MAX_SOCKETS);
	__type(key, __u64);
	__type(value, __u64);
} sockets SEC(".maps");

/*
 * Redirect destinations, by cookie. No sk_skb program is attached, so their own incoming data
 * stays in their receive queue, where the daemon reads it with the socket's normal flow
 * control. The sk_msg verdict is: it runs when a TCP destination sends.
 */
struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, VSOCKMAP_MAX_SOCKETS);
	__type(key, __u64);
	__type(value, __u64);
} egress SEC(".maps");

/* Socket cookie -> its partner, redirect slot and direction. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VSOCKMAP_MAX_SOCKETS);
	__type(key, __u64);
	__type(value, struct vsockmap_link);
} links SEC(".maps");

/* Per-direction ordering gate, mmapped by the daemon (see struct vsockmap_gate). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, VSOCKMAP_MAX_REDIRECTS *VSOCKMAP_NR_DIRS);
	__type(key, __u32);
	__type(value, struct vsockmap_gate);
} gates SEC(".maps");

/* Per-direction byte and packet counters. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, VSOCKMAP_MAX_REDIRECTS *VSOCKMAP_NR_DIRS);
	__type(key, __u32);
	__type(value, struct vsockmap_counters);
} counters SEC(".maps");

/* A UNIX-RECV instance of this object: its bound dgram socket (key 0). */
struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} dgram_sockets SEC(".maps");

/* A UNIX-RECV instance: lengths of the datagrams held for the daemon, oldest first. */
struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, VSOCKMAP_DGRAM_HELD_MAX);
	__type(value, __u32);
} dgram_held_lens SEC(".maps");

/* A UNIX-RECV instance: the cookie of its current target in egress (0: none). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} dgram_target SEC(".maps");

/* Set by the daemon before load, for a dgram instance of this object. */
const volatile __u32 dgram_slot = 0;

/*
 * A UNIX-RECV instance whose target keeps record bounds (seqpacket), written by the daemon:
 * a datagram whose length cannot be recorded is dropped whole, and counted, instead of being
 * held without its bounds (it would reach the target merged with its neighbours).
 */
__u32 dgram_keep_bounds = 0;

/* Cookie that the queue iterator reports on; 0 reports every socket. */
__u64 iter_cookie = 0;

/*
 * Direct loads through BTF pointers, not BPF_CORE_READ(): bpf_probe_read_kernel() is refused
 * on a kernel locked down for confidentiality, and the data path must not depend on it.
 */
static __always_inline __u64 sock_cookie(struct sock *sk)
{
	return sk ? sk->__sk_common.skc_cookie.counter : 0;
}

/*
 * The cookie of the daemon socket that received skb. A unix skb is still charged to its
 * sender, the external client, so bpf_get_socket_cookie() names the wrong socket; the
 * receiver is the sender's peer. For vsock and TCP the skb belongs to the receiver.
 * Returns 0 for a unix sender without a peer (a dgram sent with sendto()).
 */
static __always_inline __u64 receiver_cookie(struct __sk_buff *skb, struct sock **unix_receiver)
{
	struct bpf_sock *bsk = skb->sk;
	struct unix_sock *sender;

	*unix_receiver = NULL;
	if (!bsk)
		return 0;
	if (skb->family != AF_UNIX)
		return bpf_get_socket_cookie(skb);
	sender = bpf_skc_to_unix_sock(bsk);
	if (!sender)
		return 0;
	*unix_receiver = sender->peer;
	return sock_cookie(sender->peer);
}

/*
 * Bytes the verdict passed up to a unix socket that nobody has read yet. A unix stream skb
 * stays charged to its sender while it waits in the receiver's own queue; only the psock
 * queue is charged to the receiver (skb_set_owner_r() in sk_psock_skb_ingress_self()).
 */
static __always_inline int held_unread(struct sock *unix_receiver)
{
	return unix_receiver ? unix_receiver->sk_backlog.rmem_alloc.counter : 0;
}

static __always_inline void count(__u32 idx, __u32 len, int what)
{
	struct vsockmap_counters *c = bpf_map_lookup_elem(&counters, &idx);

	if (!c)
		return;
	if (what == SK_PASS) {
		c->held_packets++;
	} else if (what == SK_DROP) {
		c->dropped_packets++;
	} else {
		c->bytes += len;
		c->packets++;
	}
}

/*
 * Redirect skb to the destination socket, unless the gate says the daemon still owns the
 * stream (closed, or held bytes not yet forwarded) or the destination has left the map; then
 * the verdict holds it, counted as held, and the daemon forwards it in order: it goes to the
 * gate's hold socket, or, without one, up to the receiving socket. Returns the verdict:
 * SK_DROP only for a datagram that must keep its bounds and whose length could not be
 * recorded. With counted false nothing is counted: the gate's held bytes are not
 * statistics but the ordering, and stay.
 */
static __always_inline int redirect_or_hold(struct __sk_buff *skb, __u32 idx, __u64 *dest,
					     struct sock *unix_receiver, bool record_len,
					     bool counted)
{
	struct vsockmap_gate *gate = bpf_map_lookup_elem(&gates, &idx);
	__u32 len = skb->len;
	__u64 hold;

	if (!gate)
		return SK_PASS;
	/*
	 * held is counted here, before the kernel queues the skb for the daemon: an skb the
	 * daemon has counted as released may still be on its way into the psock queue. Its
	 * sender's next skb sees it there (held_unread) and is held behind it.
	 */
	if (gate->open && gate->held == gate->released && *dest && !held_unread(unix_receiver) &&
	    bpf_sk_redirect_hash(skb, &egress, dest, 0) == SK_PASS) {
		if (counted)
			count(idx, len, -1);
		return SK_PASS;
	}
	/*
	 * A datagram's length goes in before held grows: the daemon treats a non-empty length
	 * queue as "held, not yet read", which covers the moment before the skb is queued.
	 * Queue full: a seqpacket target loses this datagram whole, counted, rather than the
	 * bounds of every later one; a stream target takes it merged (bounds mean nothing there).
	 */
	if (record_len && bpf_map_push_elem(&dgram_held_lens, &len, 0)) {
		count(idx, len, SK_DROP);
		if (dgram_keep_bounds)
			return SK_DROP;
	}
	/*
	 * To the daemon's hold socket where it has one. Passed up instead, the skb would be
	 * charged to our socket (no sk_rcvbuf check: the sender is no longer slowed down), and
	 * a unix peer's shutdown() unhashes our socket and frees its psock queue with it.
	 */
	hold = gate->hold_cookie;
	if (hold)
		bpf_sk_redirect_hash(skb, &egress, &hold, 0);
	__sync_fetch_and_add(&gate->held, len);
	if (counted)
		count(idx, len, SK_PASS);
	return SK_PASS;
}

static __always_inline int stream_verdict(struct __sk_buff *skb, bool counted)
{
	struct sock *unix_receiver;
	__u64 key = receiver_cookie(skb, &unix_receiver);
	struct vsockmap_link *link;

	link = bpf_map_lookup_elem(&links, &key);
	if (!link)
		return SK_PASS; /* not ours, or not yet linked: leave it to the socket */
	redirect_or_hold(skb, link->slot * VSOCKMAP_NR_DIRS + (link->dir & 1),
			 &link->partner_cookie, unix_receiver, false, counted);
	return SK_PASS;
}

/* Stream pairs: unix <-> vsock, unix <-> unix, unix <-> TCP. */
SEC("sk_skb")
int vsockmap_verdict(struct __sk_buff *skb)
{
	return stream_verdict(skb, true);
}

/*
 * fastpath=permanent: the same decisions, no counters. The daemon then never reads this
 * direction's counters (struct vsockmap_gate, uncounted) and needs the queue iterator.
 */
SEC("sk_skb")
int vsockmap_verdict_uncounted(struct __sk_buff *skb)
{
	return stream_verdict(skb, false);
}

/*
 * UNIX-RECV: every datagram goes to the current target. While the daemon forwards held
 * datagrams itself it needs each one's length, since reading a psock queue merges messages.
 */
SEC("sk_skb")
int vsockmap_dgram_verdict(struct __sk_buff *skb)
{
	__u32 idx = dgram_slot * VSOCKMAP_NR_DIRS, zero = 0;
	__u64 *target = bpf_map_lookup_elem(&dgram_target, &zero);

	if (!target)
		return SK_PASS;
	return redirect_or_hold(skb, idx, target, NULL, true, true);
}

/* Runs of the sk_msg verdicts below, for vsockmapctl status. */
__u64 msg_runs = 0;

/*
 * sk_msg runs when a TCP socket in one of our sockhashes sends: a TCP target in egress, for
 * every chunk the psock backlog worker sends out of it and for the daemon's own writes. It
 * never runs for unix or vsock. Pass everything: the data is already where it should be.
 */
SEC("sk_msg")
int vsockmap_msg(struct sk_msg_md *msg)
{
	__sync_fetch_and_add(&msg_runs, 1);
	return SK_PASS;
}

/*
 * fastpath=permanent: the verdict covers the next 4 GiB the socket sends, so it runs once per
 * 4 GiB instead of once per send (DESIGN fact 9; BPF_F_PERMANENT was never merged).
 */
SEC("sk_msg")
int vsockmap_msg_permanent(struct sk_msg_md *msg)
{
	__sync_fetch_and_add(&msg_runs, 1);
	bpf_msg_apply_bytes(msg, 0xffffffff);
	return SK_PASS;
}

/*
 * Queue lengths of each socket in the sockhash, for an exact drain signal: redirected data
 * waits in the egress socket's psock->ingress_skb until the backlog worker sends it. Reading
 * kernel memory here is refused on a locked-down kernel; the daemon then falls back to a
 * timed drain.
 */
SEC("iter/sockmap")
int vsockmap_queues(struct bpf_iter__sockmap *ctx)
{
	struct vsockmap_queue_info info = {};
	struct sock *sk = ctx->sk;
	struct sk_psock *psock;

	if (!sk)
		return 0;
	info.cookie = sock_cookie(sk);
	if (iter_cookie && info.cookie != iter_cookie)
		return 0;
	psock = (struct sk_psock *)((unsigned long)BPF_CORE_READ(sk, sk_user_data) &
				    SK_USER_DATA_PTRMASK);
	if (psock) {
		info.backlog_skbs = BPF_CORE_READ(psock, ingress_skb.qlen);
		info.partial_bytes = BPF_CORE_READ(psock, work_state.len);
	}
	info.rcvq_skbs = BPF_CORE_READ(sk, sk_receive_queue.qlen);
	info.flags = psock ? VSOCKMAP_QUEUE_PSOCK : 0;
	bpf_seq_write(ctx->meta->seq, &info, sizeof(info));
	return 0;
}

/*
 * The same for one socket, on demand: the daemon asks getsockopt(fd, SOL_SOCKET,
 * VSOCKMAP_SO_QUEUES) and this program, attached to the daemon's cgroup, answers from the
 * socket's psock. The reads go through bpf_rdonly_cast() and BTF, with no
 * bpf_probe_read_kernel() and no tracing program type, so it loads where the iterator does
 * not: a kernel locked down for confidentiality, or one that refuses tracing programs. Any
 * other option passes through untouched.
 */
SEC("cgroup/getsockopt")
int vsockmap_queue_probe(struct bpf_sockopt *ctx)
{
	struct vsockmap_queue_info info = {};
	void *optval = ctx->optval;
	struct sk_psock *psock;
	unsigned long data;
	struct sock *sk;

	if (ctx->level != SOL_SOCKET || ctx->optname != VSOCKMAP_SO_QUEUES)
		return 1;
	if (optval + sizeof(info) > ctx->optval_end)
		return 1;
	sk = bpf_rdonly_cast(ctx->sk, bpf_core_type_id_kernel(struct sock));
	if (!sk)
		return 1;
	info.cookie = sk->__sk_common.skc_cookie.counter;
	info.rcvq_skbs = sk->sk_receive_queue.qlen;
	data = (unsigned long)sk->sk_user_data & SK_USER_DATA_PTRMASK;
	psock = bpf_rdonly_cast((void *)data, bpf_core_type_id_kernel(struct sk_psock));
	if (data && psock) {
		info.backlog_skbs = psock->ingress_skb.qlen;
		info.partial_bytes = psock->work_state.len;
		info.flags = VSOCKMAP_QUEUE_PSOCK;
	}
	__builtin_memcpy(optval, &info, sizeof(info));
	ctx->optlen = sizeof(info);
	ctx->retval = 0;
	return 1;
}
