// SPDX-License-Identifier: GPL-2.0-only
/* vsockmapd: redirect unix sockets to vsock inside the kernel. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control_proto.h"
#include "daemon.h"
#include "log.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: vsockmapd [-c FILE] [--drain=auto|iterator|timed]\n"
		   "\n"
		   "  -c, --config FILE   configuration file (default " CONFIG_DEFAULT_PATH ")\n"
		   "      --drain MODE    how to tell that a redirect's kernel backlog is empty:\n"
		   "                      auto (queue iterator if allowed), iterator, timed\n"
		   "  -h, --help          this text\n"
		   "      --version       print the version\n");
}

static int parse_drain(const char *s, enum drain_mode *mode)
{
	if (!strcmp(s, "auto"))
		*mode = DRAIN_AUTO;
	else if (!strcmp(s, "iterator"))
		*mode = DRAIN_ITERATOR;
	else if (!strcmp(s, "timed"))
		*mode = DRAIN_TIMED;
	else
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"drain", required_argument, NULL, 'D'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {},
	};
	struct daemon_options opts = {.config_path = CONFIG_DEFAULT_PATH};
	struct daemon d;
	int c, err;

	log_init("vsockmapd", LOG_INFO);
	while ((c = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			opts.config_path = optarg;
			break;
		case 'D':
			if (parse_drain(optarg, &opts.drain_mode)) {
				log_err("--drain: unknown mode \"%s\" (auto, iterator or timed)",
					optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("vsockmapd %s\n", VSOCKMAP_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		log_err("unexpected argument \"%s\"", argv[optind]);
		return 2;
	}
	err = daemon_start(&d, &opts);
	if (err)
		return 1;
	err = daemon_run(&d);
	daemon_stop(&d);
	return err < 0 ? 1 : 0;
}
