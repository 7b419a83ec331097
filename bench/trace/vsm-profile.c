// SPDX-License-Identifier: GPL-2.0-only
/*
 * vsm-profile - run a command and sample where the CPUs spent their time meanwhile: a
 * software cpu-clock sample on every CPU (vsm-profile.bpf.c), by kernel function and by task.
 *
 *   vsm-profile [--bytes N] [--freq HZ] -- COMMAND [ARG...]
 *
 * Prints "PROFILE TASK FUNCTION SAMPLES MS_PER_MIB" lines, most samples first: every
 * function with at least 0.2 % of the samples, and one "TASK *total*" line per task. TASK is
 * the task's name with a kworker's or idle task's number left out; FUNCTION is "[user]" for
 * user space. MS_PER_MIB (with --bytes, the bytes the command moved) is CPU time per MiB.
 * Exits with the command's status. Needs root. bench/trace/run.sh --profile runs it.
 */
#include <errno.h>
#include <getopt.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "run_command.h"
#include "vsm_profile.h"
#include "vsm-profile.skel.h"

#define MIB (1024.0 * 1024.0)
#define MAX_CPUS 256
#define SHOWN_PERMILLE 2 /* a function below 0.2 % of all samples is not printed */

struct ksym {
	unsigned long long addr;
	char name[64];
};

struct entry {
	char task[VSM_PROFILE_COMM_LEN];
	const char *func;
	unsigned long long samples;
};

static struct ksym *ksyms;
static size_t nksyms;

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The kernel's text symbols, sorted by address. 0 or -errno. */
static int load_ksyms(void)
{
	char line[256], type;
	size_t cap = 0;
	struct ksym s, *grown;
	FILE *f = fopen("/proc/kallsyms", "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %63s", &s.addr, &type, s.name) != 3 || !s.addr ||
		    (type != 't' && type != 'T'))
			continue;
		if (nksyms == cap) {
			cap = cap ? cap * 2 : 65536;
			grown = realloc(ksyms, cap * sizeof(*ksyms));
			if (!grown) {
				fclose(f);
				return -ENOMEM;
			}
			ksyms = grown;
		}
		ksyms[nksyms++] = s;
	}
	fclose(f);
	if (!nksyms)
		return -ENOENT; /* kptr_restrict hides the addresses */
	qsort(ksyms, nksyms, sizeof(*ksyms), cmp_ksym);
	return 0;
}

static const char *ksym_name(unsigned long long ip)
{
	size_t lo = 0, hi = nksyms;

	if (!ip)
		return "[user]";
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (ksyms[mid].addr <= ip)
			lo = mid;
		else
			hi = mid;
	}
	return nksyms && ksyms[lo].addr <= ip ? ksyms[lo].name : "[unknown]";
}

/* "kworker/0:1H" and "swapper/0" as "kworker" and "idle": one row for all of them. */
static void task_class(const char *comm, char *out)
{
	if (!strncmp(comm, "kworker/", 8))
		snprintf(out, VSM_PROFILE_COMM_LEN, "kworker");
	else if (!strncmp(comm, "swapper/", 8))
		snprintf(out, VSM_PROFILE_COMM_LEN, "idle");
	else if (!strncmp(comm, "ksoftirqd/", 10))
		snprintf(out, VSM_PROFILE_COMM_LEN, "ksoftirqd");
	else
		snprintf(out, VSM_PROFILE_COMM_LEN, "%.15s", comm);
}

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	return x->samples < y->samples ? 1 : x->samples > y->samples ? -1 : 0;
}

/* Adds n samples to (task, func) in list; entries are few enough for a linear search. */
static int add(struct entry **list, size_t *len, size_t *cap, const char *task, const char *func,
	       unsigned long long n)
{
	struct entry *grown;
	size_t i;

	for (i = 0; i < *len; i++)
		if ((*list)[i].func == func && !strcmp((*list)[i].task, task)) {
			(*list)[i].samples += n;
			return 0;
		}
	if (*len == *cap) {
		*cap = *cap ? *cap * 2 : 1024;
		grown = realloc(*list, *cap * sizeof(**list));
		if (!grown)
			return -ENOMEM;
		*list = grown;
	}
	snprintf((*list)[*len].task, VSM_PROFILE_COMM_LEN, "%s", task);
	(*list)[*len].func = func;
	(*list)[(*len)++].samples = n;
	return 0;
}

static void print_row(const char *task, const char *func, unsigned long long samples,
		      unsigned int freq, unsigned long long bytes)
{
	double ms = samples * 1000.0 / freq;

	if (bytes)
		printf("PROFILE %s %s %llu %.3f\n", task, func, samples, ms * MIB / (double)bytes);
	else
		printf("PROFILE %s %s %llu -\n", task, func, samples);
}

static int report(struct vsm_profile_bpf *skel, unsigned int freq, unsigned long long bytes)
{
	struct vsm_profile_key key, next, *prev = NULL;
	struct entry *funcs = NULL, *tasks = NULL;
	size_t nfuncs = 0, cfuncs = 0, ntasks = 0, ctasks = 0, i;
	unsigned long long total = 0, n;
	char task[VSM_PROFILE_COMM_LEN];
	int fd = bpf_map__fd(skel->maps.samples), err = 0;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &n))
			continue;
		task_class(key.comm, task);
		err = add(&funcs, &nfuncs, &cfuncs, task, ksym_name(key.ip), n);
		if (!err)
			err = add(&tasks, &ntasks, &ctasks, task, "*total*", n);
		if (err)
			goto out;
		total += n;
	}
	qsort(funcs, nfuncs, sizeof(*funcs), cmp_entry);
	qsort(tasks, ntasks, sizeof(*tasks), cmp_entry);
	print_row("all", "*total*", total, freq, bytes);
	for (i = 0; i < ntasks; i++)
		print_row(tasks[i].task, tasks[i].func, tasks[i].samples, freq, bytes);
	for (i = 0; i < nfuncs; i++)
		if (funcs[i].samples * 1000 >= total * SHOWN_PERMILLE)
			print_row(funcs[i].task, funcs[i].func, funcs[i].samples, freq, bytes);
	if (skel->bss->lost)
		printf("PROFILE all *lost* %llu -\n", (unsigned long long)skel->bss->lost);
out:
	free(funcs);
	free(tasks);
	return err;
}

/* One sampling event per online CPU, each with the program attached. Links opened, or -errno. */
static int attach_cpus(struct vsm_profile_bpf *skel, unsigned int freq, struct bpf_link **links)
{
	struct perf_event_attr attr = {
	    .type = PERF_TYPE_SOFTWARE,
	    .size = sizeof(attr),
	    .config = PERF_COUNT_SW_CPU_CLOCK,
	    .sample_freq = freq,
	    .freq = 1,
	};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int cpu, fd, n = 0;

	if (ncpu > MAX_CPUS)
		ncpu = MAX_CPUS;
	for (cpu = 0; cpu < ncpu; cpu++) {
		fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0)
			return n ? n : -errno;
		links[n] = bpf_program__attach_perf_event(skel->progs.vsm_profile_sample, fd);
		if (!links[n]) {
			close(fd);
			return n ? n : -errno;
		}
		n++;
	}
	return n;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {{"bytes", required_argument, NULL, 'b'},
						{"freq", required_argument, NULL, 'f'},
						{"help", no_argument, NULL, 'h'},
						{}};
	unsigned long long bytes = 0, freq = 999;
	struct bpf_link *links[MAX_CPUS] = {};
	struct vsm_profile_bpf *skel;
	int opt, rc, err, n, i;

	while ((opt = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
		if (opt == 'b' || opt == 'f') {
			if (parse_positive("vsm-profile", opt == 'b' ? "bytes" : "freq", optarg,
					   opt == 'b' ? &bytes : &freq))
				return 2;
		} else {
			fprintf(opt == 'h' ? stdout : stderr,
				"Usage: vsm-profile [--bytes N] [--freq HZ] -- COMMAND [ARG...]\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "vsm-profile: no command given (vsm-profile --help)\n");
		return 2;
	}
	err = load_ksyms();
	if (err) {
		fprintf(stderr, "vsm-profile: /proc/kallsyms: %s\n", strerror(-err));
		return 2;
	}
	skel = vsm_profile_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "vsm-profile: loading the BPF object failed: %s\n", strerror(errno));
		return 2;
	}
	n = attach_cpus(skel, (unsigned int)freq, links);
	if (n <= 0) {
		fprintf(stderr, "vsm-profile: no sampling event: %s\n", strerror(-n));
		vsm_profile_bpf__destroy(skel);
		return 2;
	}
	rc = run_command("vsm-profile", argv + optind);
	for (i = 0; i < n; i++)
		bpf_link__destroy(links[i]);
	err = rc < 0 ? rc : report(skel, (unsigned int)freq, bytes);
	vsm_profile_bpf__destroy(skel);
	free(ksyms);
	if (err) {
		fprintf(stderr, "vsm-profile: %s\n", strerror(-err));
		return 2;
	}
	return rc;
}
