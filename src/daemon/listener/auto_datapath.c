// SPDX-License-Identifier: GPL-2.0-only
/*
 * datapath=auto: the kernel path only where none of its hazards applies.
 *
 * Every hazard of the kernel path that docs/ lists is one rule here, and a section keeps the
 * kernel path only where each of them is shown absent on the running kernel by what the
 * kernel does (the probes at load: insert_probe.c, unhash_probe.c, the drain signal's load;
 * psock_wake.c asks BTF, since a retry of one jiffy cannot be timed under emulation). A
 * hazard no probe can rule out counts as present. The rules, in the order they are weighed:
 *
 * - vsock-backlog-retry (speed): a full vsock target's backlog waits out a one-jiffy retry
 *   unless the kernel has kernel/ patch 1: the relay moves 1.4-1.9x the kernel path on
 *   vsock_loopback, 12-16x over virtio (docs/performance.md, "Which path wins where").
 * - vsock-packet-ceiling (loss): the kernel path sends the peer one vsock packet per skb the
 *   client wrote, and a receiver whose kernel counts queued packets against its buffer
 *   resets the connection with ENOBUFS once a small writer's packets fill it with credit to
 *   spare (Debian's 6.12.92 and later; docs/kernel-notes.md, "The vsock packet ceiling").
 *   The receiver is the peer's kernel, which no probe here can ask; the relay sends what it
 *   read in one write, so its packets are as large as the client's backlog allows.
 * - unix-target-unhashed (loss): a unix server's shutdown() takes our socket out of the
 *   sockhash and frees what the kernel still holds for it (unhash_probe.c), for stream and
 *   datagram sources alike.
 * - tcp-relay-faster (speed): into TCP the relay was ahead or level in every run, with less
 *   CPU per GB (1726 against 1240 and 2163 against 1432 MB/s, one stream; 0.72 against 0.90
 *   s/GB; 10,079 against 6,777 connections/s). kernel/ patch 1 does not change what bounds
 *   a TCP target. Datagram sections are not measured against it and keep the kernel path.
 * - insert-order (reorder): a unix client's skbs can pass one another where the kernel takes
 *   it over. Without kernel/ patch 7 (insert_probe.c) the daemon reads what the client
 *   queued before the insert, and a client that resumes in that moment can have one skb
 *   passed on after the bytes behind it (docs/limitations.md); with patch 7 the insert's
 *   verdict run and a concurrent send's keep their order only with patch 6, which no probe
 *   shows. A datagram source enters its sockhash before anyone can send, so it has neither.
 * - drain-not-exact (loss or reorder at a stop): without the queue probe or the iterator a
 *   stop waits drain-timeout for the kernel's backlog and cannot tell one that needs longer,
 *   whose bytes the daemon's would then overtake (docs/limitations.md).
 * - held-records-capped (loss): while a UNIX-RECV section's target is away the kernel path
 *   keeps the bounds of at most 65,536 held datagrams and drops the rest for a seqpacket
 *   target; in user space they wait in the socket's own queue and hold the sender back.
 */
#include <stddef.h>
#include <sys/socket.h>

#include "auto_datapath.h"
#include "bpf_dataplane.h"
#include "psock_wake.h"

struct auto_rule {
	struct auto_hazard hazard;
	bool (*applies)(const struct dataplane_features *f, const struct address *listen,
			const struct address *target);
};

static bool vsock_backlog_retry(const struct dataplane_features *f, const struct address *listen,
				const struct address *target)
{
	return !f->backlog_wakes &&
	       (target->kind == ADDRESS_VSOCK_CONNECT || listen->kind == ADDRESS_VSOCK_LISTEN);
}

static bool vsock_packet_ceiling(const struct dataplane_features *f,
				 const struct address *listen, const struct address *target)
{
	(void)f;
	(void)listen;
	return target->kind == ADDRESS_VSOCK_CONNECT;
}

static bool unix_target_unhashed(const struct dataplane_features *f,
				 const struct address *listen, const struct address *target)
{
	(void)listen;
	return target->kind == ADDRESS_UNIX_CONNECT && f->shutdown_unhashes_peer;
}

static bool tcp_relay_faster(const struct dataplane_features *f, const struct address *listen,
			     const struct address *target)
{
	(void)f;
	return target->kind == ADDRESS_TCP_CONNECT && listen->kind != ADDRESS_UNIX_RECV;
}

static bool insert_order(const struct dataplane_features *f, const struct address *listen,
			 const struct address *target)
{
	(void)f;
	(void)target;
	return listen->kind == ADDRESS_UNIX_LISTEN;
}

static bool drain_not_exact(const struct dataplane_features *f, const struct address *listen,
			    const struct address *target)
{
	(void)listen;
	(void)target;
	return !dataplane_exact_drain(f);
}

static bool held_records_capped(const struct dataplane_features *f,
				const struct address *listen, const struct address *target)
{
	(void)f;
	return listen->kind == ADDRESS_UNIX_RECV && target->sock_type == SOCK_SEQPACKET;
}

static const struct auto_rule rules[] = {
    {{"vsock-backlog-retry",
      "vsock, and this kernel leaves a full target's backlog to a one-jiffy retry (no " PSOCK_WAKE_FUNC
      ": kernel/ patch 1)",
      false},
     vsock_backlog_retry},
    {{"vsock-packet-ceiling",
      "vsock: the kernel path sends one packet per client write, and a receiver on Linux 6.12.92 "
      "or later resets a connection queued full of small ones (ENOBUFS; the peer's kernel "
      "cannot be asked)",
      true},
     vsock_packet_ceiling},
    {{"unix-target-unhashed",
      "a unix server's shutdown() would free what the kernel still holds for it", true},
     unix_target_unhashed},
    {{"tcp-relay-faster",
      "into TCP the daemon's relay is at least as fast as the kernel path, with less CPU per GB",
      false},
     tcp_relay_faster},
    {{"insert-order",
      "a unix client's bytes can pass one another where the kernel takes it over (in order "
      "only with kernel/ patches 6 and 7; no probe shows patch 6)",
      true},
     insert_order},
    {{"drain-not-exact",
      "no exact drain signal: a stop cannot tell when the kernel has sent what it holds", true},
     drain_not_exact},
    {{"held-records-capped",
      "the kernel path keeps at most 65,536 datagrams while the target is away and drops the "
      "rest for a seqpacket target",
      true},
     held_records_capped},
};

int auto_datapath_hazards(const struct dataplane_features *f, const struct address *listen,
			  const struct address *target,
			  void (*fn)(void *ctx, const struct auto_hazard *h), void *ctx)
{
	int n = 0;
	size_t i;

	for (i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		if (rules[i].applies(f, listen, target)) {
			if (fn)
				fn(ctx, &rules[i].hazard);
			n++;
		}
	return n;
}

static void take_first(void *ctx, const struct auto_hazard *h)
{
	const char **why = ctx;

	if (!*why)
		*why = h->why;
}

const char *auto_datapath_userspace_why(const struct dataplane_features *f,
					const struct address *listen,
					const struct address *target)
{
	const char *why = NULL;

	auto_datapath_hazards(f, listen, target, take_first, &why);
	return why;
}
