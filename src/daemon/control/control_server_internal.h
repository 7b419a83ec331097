/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The control server's insides, shared by its files and nothing else:
 *   control_server.c   the listening socket, accept, and access: roles, refusals
 *   control_conn.c     one client's connection: reading, requests, answers and their
 *                      budgets, timers
 */
#ifndef VSOCKMAP_CONTROL_SERVER_INTERNAL_H
#define VSOCKMAP_CONTROL_SERVER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "control_proto.h"
#include "control_server.h"
#include "socket_file.h"

struct control_conn {
	struct control_server *srv;
	struct control_conn *prev, *next;
	int fd;
	sd_event_source *io;
	sd_event_source *timer; /* the stall or idle deadline, from last_activity */
	uint64_t last_activity; /* CLOCK_MONOTONIC usec: a byte read or sent */
	uint64_t id;
	struct control_peer peer;
	struct line_buffer in;
	char *out; /* answer not yet fully sent */
	size_t out_len, out_off;
	bool close_after_flush; /* after an oversize line: answer, then hang up */
	bool backlog;		/* stopped at the dispatch's bound: more may be buffered */
	size_t turn_bytes;	/* answers queued in this dispatch (conn_process()) */
};

struct control_server {
	sd_event *event;
	char *path;
	int fd;
	struct socket_file_id file; /* ours: close() never unlinks a successor's socket */
	sd_event_source *listen_io;
	sd_event_source *accept_retry;
	const struct control_handler *handler;
	void *userdata;
	struct control_access access;
	struct control_conn *conns;
	unsigned int n_conns;
	unsigned int n_read_conns; /* of n_conns, those of the read role */
	uint64_t next_conn_id;
	size_t answer_bytes;	  /* the conns' out_len, summed */
	size_t read_answer_bytes; /* of answer_bytes, the read-role conns' */
	uint64_t stall_usec, idle_usec;
};

/* In control_conn.c. */
void control_conn_add(struct control_server *srv, int fd, const struct ucred *cred,
		      enum control_role role);
/* Close conn, drop it from its server's list and give back what its answer held. */
void control_conn_free(struct control_conn *conn);
/* Set the timer to conn's stall or idle deadline. */
int control_conn_arm_timer(struct control_conn *conn);

#endif
