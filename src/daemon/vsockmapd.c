// SPDX-License-Identifier: GPL-2.0-only
/* vsockmapd: redirect unix sockets to vsock inside the kernel. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "address.h"
#include "control_proto.h"
#include "daemon.h"
#include "log.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: vsockmapd [-c FILE] [--drain=auto|probe|iterator|timed] [--datapath=MODE]\n"
		   "                 [--fastpath=counted|permanent]\n"
		   "       vsockmapd [-d]... [-T SECONDS] [--control PATH] ADDRESS1 ADDRESS2\n"
		   "\n"
		   "  -c, --config FILE   configuration file (default " CONFIG_DEFAULT_PATH ")\n"
		   "      --drain MODE    how to tell that a redirect's kernel backlog is empty:\n"
		   "                      auto (the queue probe, else the iterator, else timed),\n"
		   "                      probe, iterator, timed\n"
		   "      --datapath MODE who moves the bytes: auto (the kernel where it can and\n"
		   "                      is not slower, else the daemon), kernel, userspace\n"
		   "                      (splice() in the daemon); overrides datapath=\n"
		   "      --fastpath MODE the kernel path's verdicts: counted (every message is\n"
		   "                      counted), permanent (nothing is counted; a TCP socket's\n"
		   "                      sk_msg verdict runs once per 4 GiB); overrides fastpath=\n"
		   "  -h, --help          this text\n"
		   "      --version       print the version\n"
		   "\n"
		   "With two addresses, as socat takes them (either order; one listens, the other\n"
		   "connects), vsockmapd runs that one redirect in the foreground, without a\n"
		   "configuration file:\n"
		   "  vsockmapd UNIX-LISTEN:/run/x.sock,fork,mode=0660 VSOCK-CONNECT:2:1234\n"
		   "  vsockmapd VSOCK-CONNECT:2:1234 UNIX-RECV:/run/log.sock\n"
		   "Without fork, one connection is served and vsockmapd exits, as socat does.\n"
		   "  -d                  log more: notice, then info, then debug\n"
		   "  -T SECONDS          close a redirect that moved no byte either way for that\n"
		   "                      long (socat's idle timeout)\n"
		   "  -b SIZE             accepted for socat's sake; the kernel path has no buffer\n"
		   "      --control PATH  a control socket for vsockmapctl (default: none)\n");
}

static int parse_drain(const char *s, enum drain_mode *mode)
{
	if (!strcmp(s, "auto"))
		*mode = DRAIN_AUTO;
	else if (!strcmp(s, "probe"))
		*mode = DRAIN_PROBE;
	else if (!strcmp(s, "iterator"))
		*mode = DRAIN_ITERATOR;
	else if (!strcmp(s, "timed"))
		*mode = DRAIN_TIMED;
	else
		return -1;
	return 0;
}

/* socat options that have no meaning here: refused, naming why and what to use. */
static const char *socat_option_refusal(int c)
{
	switch (c) {
	case 'v':
	case 'x':
		return "dumps the transferred data, which never passes through vsockmapd";
	case 'u':
	case 'U':
		return "makes the redirect one-way; vsockmapd always carries both directions";
	case 't':
		return "the half-close timeout is not supported: vsockmapd passes a half-close on "
		       "and waits for the other side";
	case 'l':
		return "logging goes to stderr, or to the journal under systemd";
	default:
		return NULL;
	}
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"drain", required_argument, NULL, 'D'},
	    {"control", required_argument, NULL, 'C'},
	    {"datapath", required_argument, NULL, 'P'},
	    {"fastpath", required_argument, NULL, 'F'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {},
	};
	struct daemon_options opts = {.config_path = CONFIG_DEFAULT_PATH, .datapath = -1,
				     .fastpath = -1};
	bool has_config = false;
	const char *why;
	struct daemon d;
	int c, err;

	log_init("vsockmapd", LOG_INFO);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+c:hdb:vxuUT:t:l:", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			opts.config_path = optarg;
			has_config = true;
			break;
		case 'D':
			if (parse_drain(optarg, &opts.drain_mode)) {
				log_err("--drain: unknown mode \"%s\" (auto, probe, iterator or timed)",
					optarg);
				return 1;
			}
			break;
		case 'C':
			opts.control_path = optarg;
			break;
		case 'P':
			opts.datapath = datapath_mode_parse(optarg);
			if (opts.datapath < 0) {
				log_err("--datapath: unknown mode \"%s\" (auto, kernel or userspace)",
					optarg);
				return 1;
			}
			break;
		case 'F':
			opts.fastpath = fastpath_mode_parse(optarg);
			if (opts.fastpath < 0) {
				log_err("--fastpath: unknown mode \"%s\" (counted or permanent)",
					optarg);
				return 1;
			}
			break;
		case 'd':
			opts.verbosity++;
			break;
		case 'b':
			break; /* socat's buffer size: the kernel moves the data, no buffer to size */
		case 'T': {
			char msg[256];

			if (address_parse_seconds("-T", optarg, false, &opts.idle_timeout_ms, msg,
						  sizeof(msg))) {
				log_err("%s", msg);
				return 1;
			}
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("vsockmapd %s\n", VSOCKMAP_VERSION);
			return 0;
		default:
			why = socat_option_refusal(c);
			if (why) {
				log_err("option -%c is socat's, and vsockmapd does not take it: it %s",
					c, why);
			} else if (optopt && strchr("cbTtl", optopt)) {
				log_err("option -%c needs a value", optopt);
			} else if (optopt) {
				log_err("unknown option -%c (see vsockmapd --help)", optopt);
			} else {
				log_err("unknown option %s (see vsockmapd --help)", argv[optind - 1]);
			}
			return 1;
		}
	}
	switch (argc - optind) {
	case 0:
		break;
	case 2:
		if (has_config) {
			log_err("-c and two addresses: give either a configuration file or the "
				"addresses of one redirect, not both");
			return 1;
		}
		opts.addresses[0] = argv[optind];
		opts.addresses[1] = argv[optind + 1];
		break;
	case 1:
		log_err("one address given (\"%s\"): a redirect needs two, one that listens and "
			"one to connect to", argv[optind]);
		return 1;
	default:
		log_err("%d addresses given: a redirect takes two (the extra one is \"%s\")",
			argc - optind, argv[optind + 2]);
		return 1;
	}
	if (!opts.addresses[0] && (opts.verbosity || opts.control_path || opts.idle_timeout_ms)) {
		log_err("-d, -T and --control go with two addresses; a configuration file sets "
			"log-level=, idle-timeout= and control= itself");
		return 1;
	}
	err = daemon_start(&d, &opts);
	if (err)
		return 1;
	err = daemon_run(&d);
	daemon_stop(&d);
	/* The loop's own exit status (a restart's hand-over: HANDOVER_EXIT_STATUS), or 1. */
	return err < 0 ? 1 : err;
}
