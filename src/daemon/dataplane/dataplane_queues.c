// SPDX-License-Identifier: GPL-2.0-only
/*
 * A destination's queue lengths, as the kernel holds them: from the queue probe (a
 * cgroup/getsockopt program asked for one socket) or from a pass of the queue iterator over
 * the egress sockhash, kept sorted by cookie and reused while it is fresh.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_dataplane.h"
#include "cgroup_self.h"
#include "fd_spare.h"
#include "log.h"
#include "slot_pool.h"
#include "util.h"
#include "dataplane_internal.h"

/*
 * How long one pass of the queue iterator answers for, in event-loop ticks (drain polls come
 * every 2 ms). Only for drains that began before the pass (dataplane_queue_info()).
 */
#define QUEUE_CACHE_USEC 1000
#define QUEUE_READ_RECORDS 1024
static int queue_info_cmp(const void *a, const void *b)
{
	const struct vsockmap_queue_info *x = a, *y = b;

	return x->cookie < y->cookie ? -1 : x->cookie > y->cookie;
}

/*
 * One pass of the iterator over every destination, kept for QUEUE_CACHE_USEC: a thousand
 * redirects draining at once would otherwise walk the whole map a thousand times per tick.
 */
static int refresh_queues(struct dataplane *dp)
{
	struct vsockmap_queue_info info, *grown;
	bool spare_taken = false;
	int iter_fd, err = 0;
	ssize_t n = 0;

	/* One link for the daemon's lifetime: each pass then costs one BPF_ITER_CREATE. */
	if (!dp->iter_link) {
		union bpf_iter_link_info linfo = {};
		LIBBPF_OPTS(bpf_iter_attach_opts, opts, .link_info = &linfo,
			    .link_info_len = sizeof(linfo));

		dp->skel->bss->iter_cookie = 0;
		linfo.map.map_fd = bpf_map__fd(dp->skel->maps.egress);
		dp->iter_link = bpf_program__attach_iter(dp->skel->progs.vsockmap_queues, &opts);
		if (!dp->iter_link)
			return -errno;
	}
	dp->queues_pass = 0;
	iter_fd = bpf_iter_create(bpf_link__fd(dp->iter_link));
	/* Out of descriptors: the pass is what lets closing redirects give theirs back. */
	if (iter_fd < 0 && errno == EMFILE && fd_spare_release()) {
		iter_fd = bpf_iter_create(bpf_link__fd(dp->iter_link));
		if (iter_fd < 0) {
			err = -errno;
			fd_spare_restore();
			return err;
		}
		spare_taken = true;
	}
	if (iter_fd < 0)
		return -errno;
	dp->passes++;
	dp->n_queues = 0;
	for (;;) {
		if (dp->queues_cap - dp->n_queues < QUEUE_READ_RECORDS) {
			size_t cap = dp->queues_cap * 2 + QUEUE_READ_RECORDS;

			grown = realloc(dp->queues, cap * sizeof(*grown));
			if (!grown) {
				err = -ENOMEM;
				break;
			}
			dp->queues = grown;
			dp->queues_cap = cap;
		}
		/* Many records per read: a seq_file read returns whole records only. */
		n = read(iter_fd, dp->queues + dp->n_queues, QUEUE_READ_RECORDS * sizeof(info));
		if (n <= 0)
			break;
		dp->n_queues += n / sizeof(info);
	}
	if (n < 0)
		err = -errno;
	close(iter_fd);
	if (spare_taken)
		fd_spare_restore();
	qsort(dp->queues, dp->n_queues, sizeof(*dp->queues), queue_info_cmp);
	dp->queues_usec = dp->pass_tick_usec;
	dp->queues_pass = err ? 0 : dp->passes;
	return err;
}

uint64_t dataplane_queue_epoch(const struct dataplane *dp)
{
	return dp->passes;
}

bool dataplane_queue_fresh(const struct dataplane *dp, uint64_t epoch, uint64_t tick_usec)
{
	if (dp->features.drain == DRAIN_PROBE)
		return true;
	return dp->queues_pass > epoch && tick_usec - dp->queues_usec < QUEUE_CACHE_USEC;
}

/* The probe's answer for fd: asked now, so it is never older than the caller's question. */
static int probe_queues(int fd, struct vsockmap_queue_info *out)
{
	socklen_t len = sizeof(*out);

	memset(out, 0, sizeof(*out));
	if (getsockopt(fd, SOL_SOCKET, VSOCKMAP_SO_QUEUES, out, &len))
		return -errno;
	if (len != sizeof(*out))
		return -EPROTO;
	return out->flags & VSOCKMAP_QUEUE_PSOCK ? 0 : -ENOENT;
}

int dataplane_queue_info(struct dataplane *dp, int fd, uint64_t cookie, uint64_t epoch,
			 uint64_t tick_usec, struct vsockmap_queue_info *out)
{
	struct vsockmap_queue_info key = { .cookie = cookie }, *found;
	int err;

	if (dp->features.drain == DRAIN_PROBE)
		return probe_queues(fd, out);
	if (dp->features.drain != DRAIN_ITERATOR)
		return -EOPNOTSUPP;
	if (!dataplane_queue_fresh(dp, epoch, tick_usec)) {
		dp->pass_tick_usec = tick_usec;
		err = refresh_queues(dp);
		if (err)
			return err;
	}
	found = bsearch(&key, dp->queues, dp->n_queues, sizeof(key), queue_info_cmp);
	if (!found)
		return -ENOENT;
	*out = *found;
	return 0;
}
