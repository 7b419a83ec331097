// SPDX-License-Identifier: GPL-2.0-only
/*
 * The control server's bound on answer memory (CONTROL_ANSWER_BYTES_MAX): clients that do
 * not read their answers hold them in the daemon, and together they may hold at most that
 * much. The server runs on a real sd-event loop with a handler that answers "big" with a
 * string of the asked size; the clients are real unix sockets in this same thread, so the
 * test pumps the loop while they read. The stall and idle timeouts, shortened, close the
 * clients that hold an answer or a slot without using it, and only those. A client that
 * sends many requests at once is answered a few per turn of the loop (fewer when the
 * answers are big), beside a source of the data path's priority.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>
#include <systemd/sd-event.h>

#include "control_proto.h"
#include "control_server.h"
#include "log.h"
#include "util.h"

/* Longer than any test here runs. */
#define NO_TIMEOUT_USEC (3600ULL * USEC_PER_SEC)

/* Four of these fit under the limit, five do not. */
#define BIG_ANSWER (15 * 1024 * 1024)
#define N_BIG	   5

struct fixture {
	sd_event *event;
	struct control_server *srv;
	char dir[64];
	char path[108]; /* sun_path */
};

/* Requests the handler has answered. */
static unsigned int handled;

static int handle(void *userdata, const struct control_peer *peer, const char *command,
		  struct json_object *request, struct json_object **response, char **error_text)
{
	struct json_object *size;
	char *blob;
	size_t n;

	(void)userdata;
	handled++;
	(void)peer;
	(void)error_text;
	*response = json_object_new_object();
	if (strcmp(command, "big"))
		return 0;
	json_object_object_get_ex(request, "size", &size);
	n = (size_t)json_object_get_uint64(size);
	blob = malloc(n);
	assert_non_null(blob);
	memset(blob, 'x', n);
	json_object_object_add(*response, "blob", json_object_new_string_len(blob, (int)n));
	free(blob);
	return 0;
}

static const struct control_handler handler = {.handle = handle};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	log_init("test_control_server", LOG_ERR);
	snprintf(f->dir, sizeof(f->dir), "/tmp/vsockmap-ctlsrv.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/control.sock", f->dir);
	assert_int_equal(sd_event_new(&f->event), 0);
	assert_int_equal(control_server_open(f->event, f->path, 0600, &handler, NULL, &f->srv), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	control_server_close(f->srv);
	sd_event_unref(f->event);
	rmdir(f->dir);
	free(f);
	return 0;
}

static void turn_done(void);

/* Run the loop until it has nothing left to do right now. */
static void pump(struct fixture *f)
{
	int i, r;

	for (i = 0; i < 1000; i++) {
		r = sd_event_run(f->event, 0);
		turn_done();
		if (r == 0)
			return;
	}
}

static int client(struct fixture *f)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	pump(f); /* accepted */
	return fd;
}

/* count copies of line (a request and its newline) in one send(): one read for the server. */
static void send_copies(int fd, const char *line, int count)
{
	size_t len = strlen(line), i;
	char *batch = malloc(len * (size_t)count);

	assert_non_null(batch);
	for (i = 0; i < (size_t)count; i++)
		memcpy(batch + i * len, line, len);
	assert_int_equal(send(fd, batch, len * (size_t)count, MSG_NOSIGNAL),
			 (ssize_t)(len * (size_t)count));
	free(batch);
}

static void send_request(struct fixture *f, int fd, const char *command, size_t size)
{
	char line[128];
	int n;

	n = snprintf(line, sizeof(line), "{\"command\":\"%s\",\"size\":%zu}\n", command, size);
	assert_int_equal(send(fd, line, (size_t)n, MSG_NOSIGNAL), n);
	pump(f);
}

/* Read one whole answer line, pumping the loop in between; returns it parsed. */
static struct json_object *read_answer(struct fixture *f, int fd, size_t *len)
{
	struct json_object *obj;
	size_t cap = 1 << 16, used = 0;
	char *buf = malloc(cap);
	ssize_t n;
	int idle = 0, r;

	assert_non_null(buf);
	while (used == 0 || buf[used - 1] != '\n') {
		if (used == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		n = recv(fd, buf + used, cap - used, MSG_DONTWAIT);
		if (n > 0) {
			used += (size_t)n;
			idle = 0;
			continue;
		}
		if (n == 0)
			fail_msg("the server hung up after %zu bytes of the answer", used);
		if (errno != EAGAIN)
			fail_msg("recv: %s after %zu bytes of the answer", strerror(errno), used);
		r = sd_event_run(f->event, 10 * 1000);
		turn_done();
		if (r == 0 && ++idle > 100)
			fail_msg("no answer after %zu bytes", used);
	}
	obj = json_tokener_parse(buf);
	assert_non_null(obj);
	free(buf);
	*len = used;
	return obj;
}

static bool answer_ok(struct json_object *obj)
{
	struct json_object *ok;

	return json_object_object_get_ex(obj, "ok", &ok) && json_object_get_boolean(ok);
}

static int answer_errno(struct json_object *obj)
{
	struct json_object *e;

	return json_object_object_get_ex(obj, "errno", &e) ? json_object_get_int(e) : 0;
}

static void test_answer_memory_bounded(void **state)
{
	struct fixture *f = *state;
	struct json_object *obj, *text;
	int fds[N_BIG], small, i;
	size_t held, len;

	/* Not a test of the timeouts: a machine that pauses this process must not close a
	 * client that waits here by design. */
	control_server_set_timeouts(f->srv, NO_TIMEOUT_USEC, NO_TIMEOUT_USEC);
	/* Four clients ask for 15 MiB each and read nothing: all four answers are held. */
	for (i = 0; i < N_BIG; i++)
		fds[i] = client(f);
	for (i = 0; i < N_BIG - 1; i++)
		send_request(f, fds[i], "big", BIG_ANSWER);
	held = control_server_answer_bytes(f->srv);
	assert_true(held >= (size_t)(N_BIG - 1) * BIG_ANSWER);
	assert_true(held <= CONTROL_ANSWER_BYTES_MAX);

	/* A fifth would pass the limit: it gets ENOBUFS and a reason instead. */
	send_request(f, fds[N_BIG - 1], "big", BIG_ANSWER);
	assert_true(control_server_answer_bytes(f->srv) <= CONTROL_ANSWER_BYTES_MAX);
	obj = read_answer(f, fds[N_BIG - 1], &len);
	assert_false(answer_ok(obj));
	assert_int_equal(answer_errno(obj), ENOBUFS);
	assert_true(json_object_object_get_ex(obj, "error", &text));
	if (!strstr(json_object_get_string(text), "unsent answers to other control clients"))
		fail_msg("error text: %s", json_object_get_string(text));
	json_object_put(obj);

	/* A small answer is not held back by the big ones. */
	small = client(f);
	send_request(f, small, "status", 0);
	obj = read_answer(f, small, &len);
	assert_true(answer_ok(obj));
	json_object_put(obj);
	close(small);

	/* One reader takes its answer: that memory is free again, and the refused client's
	 * retry is answered in full. */
	obj = read_answer(f, fds[0], &len);
	assert_true(answer_ok(obj));
	assert_true(len > BIG_ANSWER);
	json_object_put(obj);
	assert_true(control_server_answer_bytes(f->srv) <= held - BIG_ANSWER);
	send_request(f, fds[N_BIG - 1], "big", BIG_ANSWER);
	obj = read_answer(f, fds[N_BIG - 1], &len);
	assert_true(answer_ok(obj));
	assert_true(len > BIG_ANSWER);
	json_object_put(obj);

	/* A client that hangs up without reading gives its answer back. */
	held = control_server_answer_bytes(f->srv);
	close(fds[1]);
	pump(f);
	assert_true(control_server_answer_bytes(f->srv) <= held - BIG_ANSWER);

	for (i = 2; i < N_BIG - 1; i++)
		close(fds[i]);
	close(fds[0]);
	close(fds[N_BIG - 1]);
	pump(f);
	assert_int_equal(control_server_answer_bytes(f->srv), 0);
}

/*
 * Shortened timeouts, so that the cases below take seconds; the clients that keep theirs
 * act every 50 or 100 ms, far inside them even on a loaded machine. A machine that stops
 * this process for longer than PAUSE_VOIDS_USEC (a VM descheduled or snapshotted) voids the
 * round: the client that keeps its connection could not act, so the round is run again, and
 * the case is skipped, saying so, only when every try was paused.
 */
#define STALL_USEC	 (2000 * 1000)
#define IDLE_USEC	 (2000 * 1000)
#define ROUNDS		 40 /* of 100 ms: past both timeouts */
#define PAUSE_VOIDS_USEC (500 * 1000)
#define TURN_WAIT_USEC	 (10 * 1000) /* the longest a turn of pump_for() waits for events */
#define TIMING_TRIES	 3

/*
 * The longest time this process was off the CPU between two turns of the loop, beyond the
 * 10 ms a turn may wait, since pause_watch_start(): a pause, not work (building a 15 MiB
 * answer is CPU time, and so is a server that got slow: that fails the case, not voids it).
 */
static struct {
	bool on;
	uint64_t wall_usec, cpu_usec, longest_usec;
} watch;

static uint64_t clock_usec(clockid_t clock)
{
	struct timespec ts;

	assert_int_equal(clock_gettime(clock, &ts), 0);
	return (uint64_t)ts.tv_sec * USEC_PER_SEC + (uint64_t)ts.tv_nsec / 1000;
}

static void pause_watch_start(void)
{
	watch.on = true;
	watch.longest_usec = 0;
	watch.wall_usec = clock_usec(CLOCK_MONOTONIC);
	watch.cpu_usec = clock_usec(CLOCK_THREAD_CPUTIME_ID);
}

/* After each turn of the loop. */
static void turn_done(void)
{
	uint64_t wall, cpu, off;

	if (!watch.on)
		return;
	wall = clock_usec(CLOCK_MONOTONIC);
	cpu = clock_usec(CLOCK_THREAD_CPUTIME_ID);
	off = wall - watch.wall_usec > cpu - watch.cpu_usec
		      ? wall - watch.wall_usec - (cpu - watch.cpu_usec)
		      : 0;
	off = off > TURN_WAIT_USEC ? off - TURN_WAIT_USEC : 0;
	if (off > watch.longest_usec)
		watch.longest_usec = off;
	watch.wall_usec = wall;
	watch.cpu_usec = cpu;
}

static bool paused(void)
{
	return watch.longest_usec > PAUSE_VOIDS_USEC;
}

/* Run the loop for about usec, whether or not it has work. */
static void pump_for(struct fixture *f, uint64_t usec)
{
	uint64_t start = clock_usec(CLOCK_MONOTONIC);

	do {
		assert_true(sd_event_run(f->event, TURN_WAIT_USEC) >= 0);
		turn_done();
	} while (clock_usec(CLOCK_MONOTONIC) - start < usec);
}

/* Every try of a timing round was paused: say so, and skip. */
static void skip_paused(const char *what)
{
	print_message("%s: this machine paused the test for %" PRIu64
		      " ms, past the clients' %d ms margin, in each of %d tries; the timeouts "
		      "were not checked\n",
		      what, watch.longest_usec / 1000, PAUSE_VOIDS_USEC / 1000, TIMING_TRIES);
	skip();
}

/* The client's end has seen the server hang up: EOF after whatever was sent. */
static bool hung_up(int fd)
{
	char buf[1 << 16];
	ssize_t n;

	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		;
	return n == 0;
}

/* Read up to max bytes of whatever is there. */
static size_t drain_some(int fd, size_t max)
{
	char buf[1 << 14];
	size_t got = 0;
	ssize_t n;

	while (got < max) {
		n = recv(fd, buf, sizeof(buf) < max - got ? sizeof(buf) : max - got, MSG_DONTWAIT);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

/* Close the round's clients and check that the server let go of everything they held. */
static void end_round(struct fixture *f, int a, int b)
{
	close(a);
	close(b);
	pump(f);
	assert_int_equal(control_server_client_count(f->srv), 0);
	assert_int_equal(control_server_answer_bytes(f->srv), 0);
}

/* One try: false if the machine paused it (nothing checked), else true once all held. */
static bool stalled_reader_round(struct fixture *f)
{
	int stalled, slow, i;
	size_t got = 0;

	pause_watch_start();
	stalled = client(f);
	slow = client(f);
	send_request(f, stalled, "big", BIG_ANSWER);
	send_request(f, slow, "big", BIG_ANSWER);

	/* The slow reader takes up to 128 KiB every 50 ms, so its answer is still pending at the
	 * end: as long as it takes some, it keeps its connection. */
	for (i = 0; i < 2 * ROUNDS; i++) {
		pump_for(f, 50 * 1000);
		got += drain_some(slow, 128 * 1024);
	}
	watch.on = false;
	if (!paused()) {
		assert_true(got > 0 && got < BIG_ANSWER);
		assert_int_equal(control_server_client_count(f->srv), 1);
		assert_true(control_server_answer_bytes(f->srv) < 2 * (size_t)BIG_ANSWER);
		assert_true(hung_up(stalled));
		assert_false(hung_up(slow));
	}
	end_round(f, stalled, slow);
	return !paused();
}

static void test_stalled_reader_closed(void **state)
{
	struct fixture *f = *state;
	int i;

	control_server_set_timeouts(f->srv, STALL_USEC, NO_TIMEOUT_USEC);
	for (i = 0; i < TIMING_TRIES; i++)
		if (stalled_reader_round(f))
			return;
	skip_paused("stalled reader");
}

static bool idle_client_round(struct fixture *f)
{
	struct json_object *obj;
	int idle, talking, i;
	size_t len;

	pause_watch_start();
	idle = client(f);
	talking = client(f);
	/* Blank lines are keep-alives: one every 100 ms keeps the second client. */
	for (i = 0; i < ROUNDS; i++) {
		assert_int_equal(send(talking, "\n", 1, MSG_NOSIGNAL), 1);
		pump_for(f, 100 * 1000);
	}
	watch.on = false;
	if (!paused()) {
		assert_int_equal(control_server_client_count(f->srv), 1);
		assert_true(hung_up(idle));
		/* Done with the timeout: a pause from here on must not close the client asked. */
		control_server_set_timeouts(f->srv, NO_TIMEOUT_USEC, NO_TIMEOUT_USEC);
		send_request(f, talking, "status", 0);
		obj = read_answer(f, talking, &len);
		assert_true(answer_ok(obj));
		json_object_put(obj);
	}
	end_round(f, idle, talking);
	control_server_set_timeouts(f->srv, NO_TIMEOUT_USEC, IDLE_USEC);
	return !paused();
}

static void test_idle_client_closed(void **state)
{
	struct fixture *f = *state;
	int i;

	control_server_set_timeouts(f->srv, NO_TIMEOUT_USEC, IDLE_USEC);
	for (i = 0; i < TIMING_TRIES; i++)
		if (idle_client_round(f))
			return;
	skip_paused("idle client");
}

static int count_dispatch(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	(void)s;
	(void)fd;
	(void)revents;
	++*(unsigned int *)userdata;
	return 0;
}

/*
 * One sd_event_run() dispatches one source, so each step below is one turn of the loop. A
 * data path that is always ready (a pipe never read) and a client that sent ten
 * requests at once take turns: at most four answers a turn, the data path between two
 * batches, and the client is not starved.
 */
static void test_requests_bounded_per_turn(void **state)
{
	struct fixture *f = *state;
	unsigned int data_runs = 0, runs_then = 0, before;
	char answers[4096], *p;
	sd_event_source *data;
	int fd, i, turn, busy[2];
	ssize_t n;

	fd = client(f);
	send_copies(fd, "{\"command\":\"status\"}\n", 10);
	handled = 0;
	assert_int_equal(pipe(busy), 0);
	assert_int_equal(write(busy[1], "x", 1), 1);
	assert_int_equal(sd_event_add_io(f->event, &data, busy[0], EPOLLIN, count_dispatch,
					 &data_runs),
			 0);
	for (turn = 0; turn < 40 && handled < 10; turn++) {
		before = handled;
		assert_true(sd_event_run(f->event, 0) > 0);
		assert_true(handled - before <= 4);
		if (handled == before)
			continue;
		/* A batch: the data path ran since the one before. */
		assert_true(before == 0 || data_runs > runs_then);
		runs_then = data_runs;
	}
	assert_int_equal(handled, 10);
	assert_true(data_runs >= 2);
	sd_event_source_disable_unref(data);
	close(busy[0]);
	close(busy[1]);
	pump(f);
	/* All ten answered, in order; they came as one read. */
	n = recv(fd, answers, sizeof(answers) - 1, MSG_DONTWAIT);
	assert_true(n > 0);
	answers[n] = '\0';
	for (i = 0, p = answers; (p = strstr(p, "{\"ok\":true")); p++)
		i++;
	assert_int_equal(i, 10);
	close(fd);
	pump(f);
}

/*
 * Answers that are big cost more turns: six requests for 40 KiB each, sent at once, are
 * answered at most two a turn (the second passes ANSWER_BYTES_PER_DISPATCH, 64 KiB), and
 * all six in the end.
 */
static void test_answer_bytes_bounded_per_turn(void **state)
{
	struct fixture *f = *state;
	unsigned int before, turns_used = 0;
	char sink[65536];
	size_t got = 0;
	int fd, turn;
	ssize_t n;

	fd = client(f);
	send_copies(fd, "{\"command\":\"big\",\"size\":40960}\n", 6);
	handled = 0;
	for (turn = 0; turn < 60 && handled < 6; turn++) {
		before = handled;
		assert_true(sd_event_run(f->event, 0) >= 0);
		assert_true(handled - before <= 2);
		turns_used += handled > before;
		while ((n = recv(fd, sink, sizeof(sink), MSG_DONTWAIT)) > 0)
			got += (size_t)n;
	}
	assert_int_equal(handled, 6);
	assert_true(turns_used >= 3);
	pump(f);
	while ((n = recv(fd, sink, sizeof(sink), MSG_DONTWAIT)) > 0)
		got += (size_t)n;
	assert_true(got > 6 * 40960);
	close(fd);
	pump(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_answer_memory_bounded, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stalled_reader_closed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_idle_client_closed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_requests_bounded_per_turn, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_answer_bytes_bounded_per_turn, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
