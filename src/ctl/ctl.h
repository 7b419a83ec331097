/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * vsockmapctl's pieces: the main program and its error reporting (vsockmapctl.c), the
 * commands (ctl_commands.c), the plain printers (ctl_print.c) and the tables and cells
 * they are made of (ctl_table.c).
 */
#ifndef VSOCKMAP_CTL_H
#define VSOCKMAP_CTL_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct json_object;

#define PROGRAM	   "vsockmapctl"
#define EXIT_USAGE 2

/* Long-only options; getopt_long returns these values. */
#define OPT_NO_LEGEND  0x100
#define OPT_PROMETHEUS 0x101

/* Options every command accepts after its name, too: "vsockmapctl list -j". */
/* clang-format off */
#define COMMON_LONG_OPTIONS					\
	{ "json", no_argument, NULL, 'j' },			\
	{ "pretty", no_argument, NULL, 'p' },			\
	{ "no-legend", no_argument, NULL, OPT_NO_LEGEND },	\
	{ "help", no_argument, NULL, 'h' }
/* clang-format on */

/* Global options. */
extern const char *arg_socket;
extern bool arg_json;
extern bool arg_pretty;
extern bool arg_legend;

struct cmd {
	const char *name;
	int (*func)(int argc, char **argv);
	const char *args;
	const char *help;
};

/* ---- vsockmapctl.c ---------------------------------------------------------------------- */

/* Print obj as JSON on stdout (one line, or indented with --pretty). Returns EXIT_SUCCESS. */
int print_json(struct json_object *obj);

/* Report a failure (plain on stderr, JSON on stdout with -j) and return EXIT_FAILURE. */
int fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Report a command line mistake and return EXIT_USAGE. */
int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Parse a command's options: options holds its long options with COMMON_LONG_OPTIONS,
 * shortopts its short ones besides -j, -p and -h. on_option(c, optarg, ctx) handles the
 * command's own and returns 0 or an exit code. Positional arguments are left in
 * argv[*first..argc-1]. Returns -1 to go on, or an exit code (after -h, or on a usage error).
 */
int parse_command_options(int argc, char **argv, const char *shortopts, const struct option *extra,
			  int (*on_option)(int c, const char *arg, void *ctx), void *ctx,
			  int *first);

/*
 * Send {"command":command, ...members of args} and return 0 with the payload member
 * want of a successful answer (a new reference in *payload), or report why not and return
 * an exit code. args may be NULL; it is consumed. want_type is a json_type.
 */
int call_daemon(const char *command, struct json_object *args, const char *want, int want_type,
		struct json_object **payload);

/* ---- ctl_commands.c ------------------------------------------------------------------- */

int cmd_list(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_listeners(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_close(int argc, char **argv);
int cmd_reload(int argc, char **argv);

/* "42" into a redirect id: decimal, 1 to 2^64-1. */
int parse_redirect_id(const char *text, uint64_t *id);

/* ---- ctl_table.c ---------------------------------------------------------------------- */

struct column {
	const char *title;
	bool right; /* numbers align right */
};

struct table {
	const struct column *cols;
	size_t n_cols;
	bool legend;  /* print the titles as a first row */
	char **cells; /* n_rows * n_cols malloc'd strings */
	size_t n_rows;
	int error; /* first -errno of table_add_row() */
};

/*
 * Append one row; takes ownership of the n_cols strings in row, of which any may be NULL
 * after a failed allocation (the table then remembers -ENOMEM and frees the rest).
 */
void table_add_row(struct table *t, char **row);
/* Print with aligned columns, no trailing blanks. Returns 0 or t->error. */
int table_print(const struct table *t, FILE *out);
void table_free(struct table *t);

/* Key and value rows ("name:  value"), for a single object such as show or status. */
void table_add_pair(struct table *t, const char *key, char *value);

/* Cells: every one returns a malloc'd string, or NULL when out of memory. */
char *cell_text(const char *s); /* "-" for NULL/empty; control chars and blanks become '?' */
char *cell_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *cell_u64(struct json_object *obj, const char *key);    /* "-" when absent or null */
char *cell_string(struct json_object *obj, const char *key); /* cell_text of a member */
char *cell_age(struct json_object *obj, const char *key);    /* 3.2s 5m02s 1h03m 2d04h */
char *cell_client(struct json_object *obj);		     /* pid=1(comm),uid=0,gid=0 */
char *cell_datapath(struct json_object *obj);		     /* kernel/daemon */
char *cell_owner(struct json_object *obj);		     /* root:adm, numbers if unknown */

/* Members of a daemon object, NULL/false when absent or of another type. */
const char *get_string(struct json_object *obj, const char *key);
bool get_u64(struct json_object *obj, const char *key, uint64_t *out);
bool get_bool(struct json_object *obj, const char *key, bool *out);

/* ---- ctl_print.c ---------------------------------------------------------------------- */

/* The plain printers, one per command payload; they return 0 or -errno. */
int print_redirects(struct json_object *redirects, FILE *out);
int print_redirect_detail(struct json_object *redirect, FILE *out);
int print_listeners(struct json_object *listeners, FILE *out);
int print_stats(struct json_object *stats, FILE *out);
int print_stats_prometheus(struct json_object *stats, FILE *out);
int print_status(struct json_object *status, FILE *out);

#endif
