// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run_command.h"

int run_command(const char *prog, char **argv)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (!pid) {
		execvp(argv[0], argv);
		fprintf(stderr, "%s: %s: %s\n", prog, argv[0], strerror(errno));
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int parse_positive(const char *prog, const char *opt, const char *arg, unsigned long long *v)
{
	char *end;

	errno = 0;
	*v = strtoull(arg, &end, 0);
	if (errno || *end || !*v) {
		fprintf(stderr, "%s: --%s %s: not a positive number\n", prog, opt, arg);
		return -EINVAL;
	}
	return 0;
}
