// SPDX-License-Identifier: GPL-2.0-only
/*
 * vsm-profile.bpf.c - where the CPU time goes while bytes move: a software cpu-clock sample
 * on every CPU at a fixed rate, counted by the interrupted kernel address and the running
 * task's name (user space counts as address 0). Loaded by vsm-profile.c for the length of
 * a command; it only counts.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "vsm_profile.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VSM_PROFILE_MAX_KEYS);
	__type(key, struct vsm_profile_key);
	__type(value, __u64);
} samples SEC(".maps");

/* Samples that found the map full: the report says so rather than drop them quietly. */
__u64 lost;

SEC("perf_event")
int vsm_profile_sample(struct bpf_perf_event_data *ctx)
{
	struct vsm_profile_key key = {};
	__u64 one = 1, *n;

	key.ip = PT_REGS_IP(&ctx->regs);
	if (!(key.ip >> 63))
		key.ip = 0; /* user space: one bucket per task name */
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	n = bpf_map_lookup_elem(&samples, &key);
	if (n)
		__sync_fetch_and_add(n, 1);
	else if (bpf_map_update_elem(&samples, &key, &one, BPF_NOEXIST))
		__sync_fetch_and_add(&lost, 1);
	return 0;
}
