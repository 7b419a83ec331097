// SPDX-License-Identifier: GPL-2.0-only
/*
 * vsockmapctl: query and steer vsockmapd over its control socket.
 *
 * Commands live in one table and are matched by unique prefix, like bpftool. Every listing
 * has a plain printer (aligned columns, like ss) and a JSON twin; in JSON mode errors are
 * JSON on stdout too, so scripts never have to parse stderr. Exit status: 0 success, 1 the
 * operation failed, 2 the command line is wrong.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "address.h"
#include "config.h"
#include "control_proto.h"
#include "ctl.h"

#define OPT_VERSION 0x1ff

static const struct cmd *current_cmd;
static void print_help(void);
static void print_cmd_usage(const struct cmd *cmd);

/* -h after a command name: that command's usage; before one, the whole help. */
static void show_help(void)
{
	if (current_cmd)
		print_cmd_usage(current_cmd);
	else
		print_help();
}

/* ---- help and dispatch ------------------------------------------------------------------- */

static int cmd_help(int argc, char **argv);

static const struct cmd commands[] = {
    {"list", cmd_list, "[--name NAME]", "list live redirects"},
    {"show", cmd_show, "ID", "show everything known about one redirect"},
    {"listeners", cmd_listeners, "", "list the configured listeners and their counters"},
    {"stats", cmd_stats, "[--prometheus]", "show totals since the daemon started"},
    {"status", cmd_status, "", "show the daemon's version, uptime and kernel features"},
    {"close", cmd_close, "ID", "close one redirect cleanly"},
    {"reload", cmd_reload, "", "ask the daemon to re-read its configuration"},
    {"help", cmd_help, "[COMMAND]", "show this help, or a command's usage"},
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

/*
 * Exact name, else a prefix of one command only, or of several whose shortest is a prefix
 * of the others ("l" and "li" are list, "liste" is listeners). *err is -ENOENT (no match) or
 * -EINVAL (ambiguous).
 */
static const struct cmd *find_cmd(const char *word, int *err)
{
	const struct cmd *found = NULL;
	size_t i, len = strlen(word);

	*err = -ENOENT;
	for (i = 0; i < N_COMMANDS; i++)
		if (strcmp(commands[i].name, word) == 0)
			return &commands[i];
	for (i = 0; i < N_COMMANDS && len > 0; i++) {
		if (strncmp(commands[i].name, word, len))
			continue;
		if (!found || strlen(commands[i].name) < strlen(found->name))
			found = &commands[i];
	}
	for (i = 0; found && i < N_COMMANDS; i++) {
		if (!strncmp(commands[i].name, word, len) &&
		    strncmp(commands[i].name, found->name, strlen(found->name))) {
			*err = -EINVAL;
			return NULL;
		}
	}
	return found;
}

static void print_cmd_usage(const struct cmd *cmd)
{
	printf("Usage: %s [OPTIONS] %s%s%s\n\n%c%s.\n", PROGRAM, cmd->name, *cmd->args ? " " : "",
	       cmd->args, cmd->help[0] - 'a' + 'A', cmd->help + 1);
}

static int cmd_help(int argc, char **argv)
{
	const struct cmd *cmd;
	int err;

	if (argc < 2) {
		print_help();
		return EXIT_SUCCESS;
	}
	if (argc > 2)
		return usage_error("help: unexpected argument \"%s\"", argv[2]);
	cmd = find_cmd(argv[1], &err);
	if (!cmd)
		return usage_error("help: unknown command \"%s\"", argv[1]);
	print_cmd_usage(cmd);
	return EXIT_SUCCESS;
}

static void print_help(void)
{
	char left[64];
	size_t i;

	printf("Usage: %s [OPTIONS] COMMAND [ARGS]\n"
	       "\n"
	       "Query and steer vsockmapd through its control socket.\n"
	       "\n"
	       "Commands (any unique prefix works):\n",
	       PROGRAM);
	for (i = 0; i < N_COMMANDS; i++) {
		snprintf(left, sizeof(left), "%s %s", commands[i].name, commands[i].args);
		printf("  %-24s %s\n", left, commands[i].help);
	}
	printf("\n"
	       "Options:\n"
	       "  -s, --socket PATH        control socket (default %s)\n"
	       "  -j, --json               print JSON, errors too\n"
	       "  -p, --pretty             print indented JSON (implies --json)\n"
	       "      --no-legend          do not print column headers\n"
	       "  -h, --help               show this help\n"
	       "      --version            show the version\n"
	       "\n"
	       "Exit status: 0 success, 1 failure, 2 usage error.\n"
	       "See vsockmapctl(8).\n",
	       CONFIG_DEFAULT_CONTROL_PATH);
}

static int unknown_command(const char *word, int err)
{
	const char *names[N_COMMANDS];
	char candidates[256] = "";
	const char *hint;
	size_t i;

	for (i = 0; i < N_COMMANDS; i++) {
		names[i] = commands[i].name;
		if (err == -EINVAL && strncmp(names[i], word, strlen(word)) == 0)
			snprintf(candidates + strlen(candidates),
				 sizeof(candidates) - strlen(candidates), "%s%s",
				 candidates[0] ? ", " : "", names[i]);
	}
	if (err == -EINVAL)
		return usage_error("ambiguous command \"%s\": %s", word, candidates);
	hint = address_closest_name(word, names, N_COMMANDS);
	if (hint)
		return usage_error("unknown command \"%s\" (did you mean \"%s\"?)", word, hint);
	return usage_error("unknown command \"%s\"", word);
}

/* Before getopt runs, so even a bad option is reported as JSON when -j is present. */
static void prescan_json(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (!strcmp(argv[i], "-j") || !strcmp(argv[i], "--json") ||
		    !strcmp(argv[i], "-p") || !strcmp(argv[i], "--pretty"))
			arg_json = true;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {{"socket", required_argument, NULL, 's'},
						{"version", no_argument, NULL, OPT_VERSION},
						COMMON_LONG_OPTIONS,
						{}};
	const struct cmd *cmd;
	int c, ret, err;

	ctl_show_help = show_help;
	prescan_json(argc, argv);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:s:jph", options, NULL)) >= 0) {
		switch (c) {
		case 's':
			if (!*optarg)
				return usage_error("--socket needs a non-empty path");
			arg_socket = optarg;
			break;
		case OPT_VERSION:
			printf("%s %s\n", PROGRAM, VSOCKMAP_VERSION);
			return EXIT_SUCCESS;
		default:
			ret = common_option(c, argv);
			if (ret >= 0)
				return ret;
		}
	}
	if (optind >= argc)
		return usage_error("no command given");

	cmd = find_cmd(argv[optind], &err);
	if (!cmd)
		return unknown_command(argv[optind], err);
	current_cmd = cmd;
	ret = cmd->func(argc - optind, argv + optind);

	if (fflush(stdout) != 0 || ferror(stdout)) {
		arg_json = false; /* stdout is what failed */
		return fail(errno, "cannot write to standard output: %s", strerror(errno));
	}
	return ret;
}
