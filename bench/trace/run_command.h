/* SPDX-License-Identifier: GPL-2.0-only */
/* What vsm-trace and vsm-profile share: the command they watch, and their number options. */
#ifndef VSM_RUN_COMMAND_H
#define VSM_RUN_COMMAND_H

/*
 * Run argv to its end. Its exit status, 128 + the signal that ended it, or -errno;
 * a command that cannot be started exits 127 after "PROG: ARGV0: why" on stderr.
 */
int run_command(const char *prog, char **argv);

/* --OPT ARG as a positive number into *v; 0, or -EINVAL after "PROG: --OPT ARG: ..." on stderr. */
int parse_positive(const char *prog, const char *opt, const char *arg, unsigned long long *v);

#endif
