// SPDX-License-Identifier: GPL-2.0-only
/*
 * A UNIX-RECV listener's own small sockhash and datagram verdict, opened from the main
 * object's program and sharing its counters and gates.
 *
 * Loading one needs CAP_BPF and CAP_PERFMON, which the daemon drops once it has started
 * (docs/security.md). So it loads DGRAM_SPARES of them at start, and a listener's plane goes
 * back to the spares when the listener closes: a reload can add that many UNIX-RECV
 * sections beyond those it runs (and any that replace ones it removes) on the kernel path.
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

/* Load a new plane with a slot of its own; needs CAP_BPF (and CAP_PERFMON). NULL: *err. */
static struct dgram_plane *dgram_plane_open(struct dataplane *dp, int *err)
{
	struct vsockmap_bpf *main = dp->skel;
	struct dgram_plane *gp;
	struct bpf_program *prog;

	gp = calloc(1, sizeof(*gp));
	if (!gp) {
		*err = -ENOMEM;
		return NULL;
	}
	*err = dataplane_slot_alloc(dp, &gp->slot);
	if (*err) {
		free(gp);
		return NULL;
	}
	gp->skel = vsockmap_bpf__open();
	if (!gp->skel) {
		*err = errno ? -errno : -ENOMEM;
		goto out_free;
	}
	bpf_object__for_each_program(prog, gp->skel->obj)
	    bpf_program__set_autoload(prog, prog == gp->skel->progs.vsockmap_dgram_verdict);
	gp->skel->rodata->dgram_slot = gp->slot;
	/* Share everything but the pair's own sockhash with the main instance. */
	*err = bpf_map__reuse_fd(gp->skel->maps.counters, bpf_map__fd(main->maps.counters));
	*err = *err ?: bpf_map__reuse_fd(gp->skel->maps.links, bpf_map__fd(main->maps.links));
	*err = *err ?: bpf_map__reuse_fd(gp->skel->maps.gates, bpf_map__fd(main->maps.gates));
	*err = *err ?: bpf_map__reuse_fd(gp->skel->maps.sockets, bpf_map__fd(main->maps.sockets));
	*err = *err ?: bpf_map__reuse_fd(gp->skel->maps.egress, bpf_map__fd(main->maps.egress));
#ifdef VSOCKMAP_TEST_KNOBS
	/* Test builds only: a short length queue, to fill it in a test (Makefile, TEST_KNOBS). */
	const char *held_max = getenv("VSOCKMAPD_TEST_DGRAM_HELD_MAX");

	if (held_max && strtoul(held_max, NULL, 10) > 0)
		*err = *err ?: bpf_map__set_max_entries(gp->skel->maps.dgram_held_lens,
						       strtoul(held_max, NULL, 10));
#endif
	*err = *err ?: vsockmap_bpf__load(gp->skel);
	if (*err)
		goto out_free;
	if (bpf_prog_attach(bpf_program__fd(gp->skel->progs.vsockmap_dgram_verdict),
			    bpf_map__fd(gp->skel->maps.dgram_sockets), BPF_SK_SKB_VERDICT, 0)) {
		*err = -errno;
		goto out_free;
	}
	return gp;

out_free:
	dgram_plane_close(dp, gp);
	return NULL;
}

void dgram_plane_close(struct dataplane *dp, struct dgram_plane *gp)
{
	if (!gp)
		return;
	vsockmap_bpf__destroy(gp->skel);
	dataplane_slot_free(dp, gp->slot);
	free(gp);
}

static void spare_push(struct dataplane *dp, struct dgram_plane *gp)
{
	gp->next = dp->dgram_spares;
	dp->dgram_spares = gp;
	dp->n_dgram_spares++;
}

int dgram_plane_take(struct dataplane *dp, struct dgram_plane **out)
{
	struct dgram_plane *gp = dp->dgram_spares;
	int err;

	if (!gp) {
		if (dp->dgram_sealed)
			return -EPERM;
		*out = dgram_plane_open(dp, &err);
		return *out ? 0 : err;
	}
	err = dataplane_slot_clear(dp, gp->slot);
	if (err)
		return err;
	dp->dgram_spares = gp->next;
	dp->n_dgram_spares--;
	gp->next = NULL;
	*out = gp;
	return 0;
}

void dgram_plane_give_back(struct dataplane *dp, struct dgram_plane *gp)
{
	if (!gp)
		return;
	/* Empty, as dgram_plane_open() left it: no socket, no target, no length recorded. */
	if (dgram_plane_set_socket(gp, -1) || dgram_plane_set_target(gp, 0) ||
	    dp->n_dgram_spares >= DGRAM_SPARES) {
		dgram_plane_close(dp, gp);
		return;
	}
	while (!dgram_plane_pop_len(gp))
		;
	spare_push(dp, gp);
}

uint32_t dgram_plane_slot(const struct dgram_plane *gp)
{
	return gp->slot;
}

int dataplane_dgram_spares_fill(struct dataplane *dp, unsigned int extra)
{
	struct dgram_plane *gp;
	int err;

	while (dp->n_dgram_spares < DGRAM_SPARES + extra) {
		gp = dgram_plane_open(dp, &err);
		if (!gp)
			return err;
		spare_push(dp, gp);
	}
	return 0;
}

void dataplane_dgram_seal(struct dataplane *dp)
{
	dp->dgram_sealed = true;
}

void dataplane_dgram_spares_close(struct dataplane *dp)
{
	struct dgram_plane *gp;

	while ((gp = dp->dgram_spares)) {
		dp->dgram_spares = gp->next;
		dgram_plane_close(dp, gp);
	}
	dp->n_dgram_spares = 0;
}

int dgram_plane_set_socket(struct dgram_plane *gp, int fd)
{
	int map = bpf_map__fd(gp->skel->maps.dgram_sockets);
	uint64_t value = fd;
	uint32_t key = 0;
	int err;

	if (fd < 0)
		err = bpf_map_delete_elem(map, &key);
	else
		err = bpf_map_update_elem(map, &key, &value, BPF_ANY);
	return err && errno != ENOENT ? -errno : 0;
}

void dgram_plane_set_keep_bounds(struct dgram_plane *gp, bool keep)
{
	__atomic_store_n(&gp->skel->bss->dgram_keep_bounds, keep, __ATOMIC_RELEASE);
}

uint64_t dgram_plane_held_max(const struct dgram_plane *gp)
{
	return bpf_map__max_entries(gp->skel->maps.dgram_held_lens);
}

int dgram_plane_set_target(struct dgram_plane *gp, uint64_t cookie)
{
	uint32_t key = 0;

	if (bpf_map_update_elem(bpf_map__fd(gp->skel->maps.dgram_target), &key, &cookie, BPF_ANY))
		return -errno;
	return 0;
}

int dgram_plane_peek_len(struct dgram_plane *gp, uint32_t *len)
{
	if (bpf_map_lookup_elem(bpf_map__fd(gp->skel->maps.dgram_held_lens), NULL, len))
		return -errno;
	return 0;
}

int dgram_plane_pop_len(struct dgram_plane *gp)
{
	uint32_t len;

	if (bpf_map_lookup_and_delete_elem(bpf_map__fd(gp->skel->maps.dgram_held_lens), NULL, &len))
		return -errno;
	return 0;
}
