// SPDX-License-Identifier: GPL-2.0-only
/*
 * vsm-trace - run a command and count what the kernel did meanwhile to move its bytes
 * (vsm-trace.bpf.c): vsock packets and their sizes, psock worker runs and retries,
 * sendmsg calls, bytes copied into and out of skbs, and busy and idle CPU time.
 *
 *   vsm-trace [--bytes N] -- COMMAND [ARG...]
 *
 * Prints one "TRACE name total per_mib" line per counter (per_mib only with --bytes, the
 * bytes the command moved), for bench/trace/run.sh to tabulate; exits with the command's
 * status. Needs root (BPF kprobes). A hook this kernel lacks (vsock's, where the vsock
 * modules are not loaded) is left out, and stderr says so.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "run_command.h"
#include "vsm_trace.h"
#include "vsm-trace.skel.h"

#define MIB (1024.0 * 1024.0)

struct cpu_times {
	unsigned long long busy, idle;
};

static const char *const family_names[VSM_TRACE_FAMILIES] = {"vsock", "unix", "tcp"};
static const char *const context_names[VSM_TRACE_CONTEXTS] = {"worker", "daemon", "other"};

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_WARN && getenv("VSM_TRACE_VERBOSE"))
		return vfprintf(stderr, fmt, args);
	return 0;
}

/* The address of a kernel text symbol, or 0. */
static unsigned long long kallsyms_lookup(const char *name)
{
	char line[256], sym[128], type;
	unsigned long long addr, found = 0;
	FILE *f = fopen("/proc/kallsyms", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %127s", &addr, &type, sym) == 3 && !strcmp(sym, name) &&
		    (type == 't' || type == 'T')) {
			found = addr;
			break;
		}
	fclose(f);
	return found;
}

/* The first line of /proc/stat: busy and idle (idle + iowait) clock ticks of all CPUs. */
static int read_cpu_times(struct cpu_times *t)
{
	unsigned long long v[8] = {};
	FILE *f = fopen("/proc/stat", "re");
	int n;

	if (!f)
		return -errno;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (n < 5)
		return -EINVAL;
	t->idle = v[3] + v[4];
	t->busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
	return 0;
}

/* Opens and loads the object. */
static struct vsm_trace_bpf *load(unsigned long long backlog)
{
	struct vsm_trace_bpf *skel = vsm_trace_bpf__open();

	if (!skel)
		return NULL;
	skel->rodata->backlog_addr = backlog;
	if (!vsm_trace_bpf__load(skel))
		return skel;
	vsm_trace_bpf__destroy(skel);
	return NULL;
}

/*
 * Attaches every program that can be: a hook whose function or tracepoint this kernel lacks
 * (vsock's, where the vsock modules are not loaded) is named on stderr and left out. Returns
 * how many programs are attached, or -errno.
 */
static int attach(struct vsm_trace_bpf *skel, struct bpf_link **links, size_t max)
{
	struct bpf_program *prog;
	size_t n = 0;
	int attached = 0;

	bpf_object__for_each_program(prog, skel->obj)
	{
		if (n == max)
			return -E2BIG;
		links[n] = bpf_program__attach(prog);
		if (!links[n]) {
			fprintf(stderr, "vsm-trace: not counted: %s (%s: %s)\n",
				bpf_program__name(prog), bpf_program__section_name(prog),
				strerror(errno));
		} else {
			attached++;
		}
		n++;
	}
	return attached;
}

static int read_counters(struct vsm_trace_bpf *skel, struct vsm_trace_counters *sum)
{
	int ncpu = libbpf_num_possible_cpus(), cpu, i;
	struct vsm_trace_counters *per;
	__u64 *dst = (__u64 *)sum;
	__u32 zero = 0;
	size_t words = sizeof(*sum) / sizeof(__u64);

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	per = calloc((size_t)ncpu, sizeof(*per));
	if (!per)
		return -ENOMEM;
	if (bpf_map__lookup_elem(skel->maps.counters, &zero, sizeof(zero), per,
				 (size_t)ncpu * sizeof(*per), 0)) {
		free(per);
		return -errno;
	}
	memset(sum, 0, sizeof(*sum));
	for (cpu = 0; cpu < ncpu; cpu++)
		for (i = 0; i < (int)words; i++)
			dst[i] += ((__u64 *)&per[cpu])[i];
	free(per);
	return 0;
}

/* Runs the kernel skipped (a program of ours already running on that CPU): not counted. */
static unsigned long long missed_runs(struct vsm_trace_bpf *skel)
{
	struct bpf_program *prog;
	unsigned long long sum = 0;

	bpf_object__for_each_program(prog, skel->obj)
	{
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);

		if (!bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
			sum += info.recursion_misses;
	}
	return sum;
}

static void print(const char *name, double total, unsigned long long bytes)
{
	if (bytes)
		printf("TRACE %s %.0f %.3f\n", name, total, total * MIB / (double)bytes);
	else
		printf("TRACE %s %.0f -\n", name, total);
}

static void print_sizes(const char *what, const __u64 *buckets, unsigned long long bytes)
{
	char name[64];
	int i;

	for (i = 0; i < VSM_TRACE_BUCKETS; i++)
		if (buckets[i]) {
			snprintf(name, sizeof(name), "%s_size_%u", what, i ? 1U << i : 0);
			print(name, (double)buckets[i], bytes);
		}
}

static void report(const struct vsm_trace_counters *c, const struct cpu_times *cpu,
		   unsigned long long bytes)
{
	char name[64];
	int f, w;

	print("vsock_data_pkts", (double)c->vsock_data_pkts, bytes);
	print("vsock_data_bytes", (double)c->vsock_data_bytes, bytes);
	print("vsock_ctrl_pkts", (double)c->vsock_ctrl_pkts, bytes);
	print_sizes("vsock_data", c->vsock_data_size, bytes);
	print("worker_runs", (double)c->worker_runs, bytes);
	print("worker_us", (double)c->worker_ns / 1e3, bytes);
	print("retry_queued", (double)c->retry_queued, bytes);
	print("retry_jiffies", (double)c->retry_jiffies, bytes);
	print("retry_sleep_us", (double)c->retry_sleep_ns / 1e3, bytes);
	print("retries_waited", (double)c->retries_waited, bytes);
	print("kick_queued", (double)c->kick_queued, bytes);
	print("kick_pending", (double)c->kick_pending, bytes);
	print("write_space_calls", (double)c->write_space_calls, bytes);
	for (f = 0; f < VSM_TRACE_FAMILIES; f++) {
		for (w = 0; w < VSM_TRACE_CONTEXTS; w++) {
			if (!c->sendmsg_calls[f][w])
				continue;
			snprintf(name, sizeof(name), "sendmsg_%s_%s_calls", family_names[f],
				 context_names[w]);
			print(name, (double)c->sendmsg_calls[f][w], bytes);
			snprintf(name, sizeof(name), "sendmsg_%s_%s_bytes", family_names[f],
				 context_names[w]);
			print(name, (double)c->sendmsg_bytes[f][w], bytes);
		}
		snprintf(name, sizeof(name), "sendmsg_%s", family_names[f]);
		print_sizes(name, c->sendmsg_size[f], bytes);
	}
	for (w = 0; w < VSM_TRACE_CONTEXTS; w++) {
		snprintf(name, sizeof(name), "copy_into_skb_%s_bytes", context_names[w]);
		print(name, (double)c->copy_into_skb_bytes[w], bytes);
		snprintf(name, sizeof(name), "copy_out_of_skb_%s_bytes", context_names[w]);
		print(name, (double)c->copy_out_of_skb_bytes[w], bytes);
	}
	print("cpu_busy_ticks", (double)cpu->busy, bytes);
	print("cpu_idle_ticks", (double)cpu->idle, bytes);
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
	    {"bytes", required_argument, NULL, 'b'}, {"help", no_argument, NULL, 'h'}, {}};
	struct cpu_times before, after, delta;
	struct vsm_trace_counters sum;
	unsigned long long bytes = 0, backlog, missed = 0;
	struct bpf_link *links[32] = {};
	struct vsm_trace_bpf *skel;
	int opt, rc, err;
	size_t i;

	while ((opt = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
		if (opt == 'b') {
			if (parse_positive("vsm-trace", "bytes", optarg, &bytes))
				return 2;
		} else {
			fprintf(opt == 'h' ? stdout : stderr,
				"Usage: vsm-trace [--bytes N] -- COMMAND [ARG...]\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "vsm-trace: no command given (vsm-trace --help)\n");
		return 2;
	}
	libbpf_set_print(libbpf_quiet);
	backlog = kallsyms_lookup("sk_psock_backlog");
	if (!backlog)
		fprintf(stderr, "vsm-trace: sk_psock_backlog not in /proc/kallsyms: worker retries "
				"and kicks are not counted\n");
	skel = load(backlog);
	if (!skel) {
		fprintf(stderr,
			"vsm-trace: loading the BPF object failed: %s (VSM_TRACE_VERBOSE=1 "
			"shows libbpf's messages)\n",
			strerror(errno));
		return 2;
	}
	err = attach(skel, links, sizeof(links) / sizeof(links[0]));
	if (err <= 0) {
		fprintf(stderr, "vsm-trace: no program attached%s%s\n", err ? ": " : "",
			err ? strerror(-err) : "");
		for (i = 0; i < sizeof(links) / sizeof(links[0]); i++)
			bpf_link__destroy(links[i]);
		vsm_trace_bpf__destroy(skel);
		return 2;
	}
	if (read_cpu_times(&before))
		memset(&before, 0, sizeof(before));
	rc = run_command("vsm-trace", argv + optind);
	if (read_cpu_times(&after))
		after = before;
	err = rc < 0 ? rc : read_counters(skel, &sum);
	missed = missed_runs(skel);
	for (i = 0; i < sizeof(links) / sizeof(links[0]); i++)
		bpf_link__destroy(links[i]);
	vsm_trace_bpf__destroy(skel);
	if (err) {
		fprintf(stderr, "vsm-trace: %s\n", strerror(-err));
		return 2;
	}
	delta.busy = after.busy - before.busy;
	delta.idle = after.idle - before.idle;
	report(&sum, &delta, bytes);
	print("missed_runs", (double)missed, 0);
	return rc;
}
