/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * vsockmapctl's pieces, one file per object as bpftool has them: the command table, help
 * and main() (vsockmapctl.c); one file per object with its commands and plain printers
 * (ctl_redirect.c: list, show, close; ctl_listener.c: listeners; ctl_stats.c: stats;
 * ctl_daemon.c: status, reload); what every command is made of (ctl_common.c); the tables
 * and cells the printers use (ctl_table.c). Calls go down that list only: -h reaches the
 * help through ctl_show_help, set by main().
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

/* ---- ctl_common.c ----------------------------------------------------------------------- */

/* Print the help -h asks for (the command's usage, or the whole help); set by main(). */
extern void (*ctl_show_help)(void);
/* A common option (-j, -p, --no-legend, -h) or an option error: -1 if handled, else an exit code. */
int common_option(int c, char **argv);

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

/* The usual end of a command: payload as JSON, or through its plain printer. An exit code. */
int print_payload(struct json_object *payload, int (*plain)(struct json_object *, FILE *),
		  const char *what);
/* A command with n_args arguments and no options of its own: -1 to go on, or an exit code. */
int simple_options(int argc, char **argv, int n_args, int *first);
/* "42" into a redirect id: decimal, 1 to 2^64-1. */
int parse_redirect_id(const char *text, uint64_t *id);
/* The ID argument of show and close, as the request {"id":N}: -1 to go on, or an exit code. */
int id_request(int argc, char **argv, struct json_object **args, uint64_t *id);
/* A command with no options or arguments whose answer's member `command` has json_type type. */
int query_and_print(int argc, char **argv, const char *command, int type,
		    int (*print)(struct json_object *payload, FILE *out), const char *what);

/* ---- the commands, one file per object --------------------------------------------------- */

int cmd_list(int argc, char **argv);	  /* ctl_redirect.c */
int cmd_show(int argc, char **argv);	  /* ctl_redirect.c */
int cmd_close(int argc, char **argv);	  /* ctl_redirect.c */
int cmd_listeners(int argc, char **argv); /* ctl_listener.c */
int cmd_stats(int argc, char **argv);	  /* ctl_stats.c */
int cmd_status(int argc, char **argv);	  /* ctl_daemon.c */
int cmd_reload(int argc, char **argv);	  /* ctl_daemon.c */

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

/* The two columns of a key and value table. */
extern const struct column pair_columns[2];
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

/* A listener's counters, shown alike by listeners and stats: the columns, and their cells. */
#define COUNTER_COLUMNS {"ACCEPTED", true}, {"REFUSED", true}, {"FAILED", true}, {"LIVE", true}
#define N_COUNTER_COLUMNS 4
/* row[0..N_COUNTER_COLUMNS - 1]: accepted, refused, failed and live of obj. */
void cells_counters(char **row, struct json_object *obj);
/* The bytes and packets each way, shown alike by list and stats. */
#define TRAFFIC_COLUMNS                                                                            \
	{"BYTES_OUT", true}, {"BYTES_IN", true}, {"PKTS_OUT", true}, { "PKTS_IN", true }
#define N_TRAFFIC_COLUMNS 4
/* row[0..N_TRAFFIC_COLUMNS - 1]: bytes_out, bytes_in, packets_out and packets_in of obj. */
void cells_traffic(char **row, struct json_object *obj);
/* Up to this many columns in a table filled by table_add_rows(). */
#define TABLE_MAX_COLS 16
/* One row per object of array (none if it is NULL or no array), its cells from fill(). */
void table_add_rows(struct table *t, struct json_object *array,
		    void (*fill)(char **row, struct json_object *obj));

/* Members of a daemon object, NULL/false when absent or of another type. */
const char *get_string(struct json_object *obj, const char *key);
bool get_u64(struct json_object *obj, const char *key, uint64_t *out);
bool get_bool(struct json_object *obj, const char *key, bool *out);

/* ---- the plain printers, one per command payload, beside their commands; 0 or -errno ---- */

int print_redirects(struct json_object *redirects, FILE *out);
int print_redirect_detail(struct json_object *redirect, FILE *out);
int print_listeners(struct json_object *listeners, FILE *out);
int print_stats(struct json_object *stats, FILE *out);
int print_stats_prometheus(struct json_object *stats, FILE *out);
int print_status(struct json_object *status, FILE *out);

#endif
