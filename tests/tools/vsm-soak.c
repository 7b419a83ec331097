// SPDX-License-Identifier: GPL-2.0-only
/*
 * vsm-soak: many connections through a relay, every byte checked.
 *
 *   vsm-soak --connect unix:PATH|tcp:IPV4:PORT --listen vsock:CID:PORT|unix:PATH|tcp:IPV4:PORT
 *            [OPTIONS]
 *
 * This one process plays both ends. Its clients connect to the relay's listen socket (the
 * --connect address); the relay dials this process's listener (--listen) for each of them.
 * Every connection gets random sizes for both directions (0 to --max-size, log-uniform),
 * random write sizes, and one of eleven ways to end:
 *
 *   client-first   both sides send; the client closes once it has everything
 *   server-first   both sides send; the server closes once it has everything
 *   half-client    the client sends, shuts down writing; the server answers after EOF
 *   half-server    the server sends, shuts down writing; the client answers after EOF
 *   client-kill    a forked client sends part of its bytes and is killed with SIGKILL
 *   server-reset   the server resets the connection (SO_LINGER 0) part-way
 *   client-shut-rd the client shuts down reading at once, sends, then closes; the server
 *                  sends too, and none of it may reach the client
 *   server-half-first  the server sends and shuts down writing at once, while the client
 *                  sends; the client closes once it has everything
 *   daemon-close   (with --ctl) both sides send and neither closes; once the client has sent
 *                  its cut, the daemon is asked to "close ID" (the client connects from a
 *                  forked child, so its pid names the redirect in "list")
 *   idle           (with --idle-ms) both sides send everything, then wait: the daemon's
 *                  idle-timeout must close the redirect
 *   client-reset   (a tcp: client) the client sends part, then closes with SO_LINGER 0
 *
 * A tcp: client draws neither client-shut-rd (its close with bytes unread would reset and
 * discard what it had not sent yet: TCP's rule, not the relay's) nor daemon-close ("list"
 * names no pid for it); its client-kill gets nothing from the server, so the kill is a
 * plain close.
 *
 * With --term-pid, the daemon is sent SIGTERM (a stop) once --term-after connections have
 * started; no more start, and every connection live at that moment ends as a daemon-close.
 * The ends each side must see are in docs/behaviour-matrix.md; in short, after a close, an
 * idle timeout or a stop, each direction delivers a correct prefix of what its sender wrote:
 * at least all it wrote before the close was asked (a TCP sender: all its TCP had sent by
 * then), at most all its writes accepted; then EOF, never an error.
 *
 * And, drawn apart from the ending, ways to behave meanwhile: a client send buffer from 4 KiB
 * to 32 MiB (SO_SNDBUFFORCE), a client that pauses up to 60 ms after some writes, a server
 * that reads 16 KiB every 2 ms, and a server that stops reading for 200 ms once. With
 * --hup-pid the daemon is sent SIGHUP (a reload that keeps every section) every --hup-ms
 * or so; with --swap-conf too, half of those reloads remove the section the live
 * connections came through and add one on the same address. Each connection's plan and choices come from its own generator, keyed by --seed
 * and its id; --only ID runs that connection alone, for a replay.
 *
 * Each stream is keyed by the connection's seed (stream.h) and verified byte by byte, so a
 * lost, duplicated or reordered byte shows at its offset. For the first four every byte must
 * arrive, then a clean EOF. A killed client's bytes must all reach the server, then EOF, within
 * --end-bound-ms of the kill; after a reset the client must see EOF or an error within the
 * same bound, having received a correct prefix: an error where both ends are TCP (the relay
 * sees the server's reset as one, and can pass it on to a TCP client).
 *
 * With --role client or --role server this process plays one end only, and another vsm-soak
 * given the same --seed, --count, --max-size and --modes plays the other (both draw the same
 * plans): the virtio tier's clients in the guest, its servers on the host. Each then checks
 * what its own end can see: every byte it received, its length and its end. The endings that
 * need both ends' clocks or the daemon (daemon-close, idle, --term-pid, client-kill's
 * end bound) are not drawn or not checked. A server-reset's server keeps its last byte
 * until the moment it resets, so that the client can time the reset from its own clock.
 *
 * With --kill-no-reply a client-kill's server sends nothing back (as for a tcp: client): once
 * the client is gone nothing waits unread in the relay.
 *
 * Output: one line per failed connection, a line per ending, then
 *   soak conns=N ok=N failed=N lost=B mismatched=N up=B down=B max_live=N
 *        kill_end_ms_max=T reset_end_ms_max=T secs=S
 * Exit status 0 when every connection passed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/sockios.h>
#include <linux/vm_sockets.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stream.h"
#include "tool_common.h"

#define MAGIC	    0x534d5356u /* "VSMS" */
#define HEADER_LEN  8		/* magic, connection id: the first bytes of every up stream */
#define BUF_SIZE    (64 * 1024)
#define NSEC_PER_MS 1000000ull
#define TAG_LISTEN  (UINT64_C(1) << 62)
#define TAG_PENDING (UINT64_C(1) << 61)
#define TAG_SERVER  (UINT64_C(1) << 60)

enum mode {
	CLIENT_FIRST,
	SERVER_FIRST,
	HALF_CLIENT,
	HALF_SERVER,
	CLIENT_KILL,
	SERVER_RESET,
	CLIENT_SHUT_RD,
	SERVER_HALF_FIRST,
	DAEMON_CLOSE,
	IDLE,
	CLIENT_RESET,
};
#define N_MODES 11
static const char *const mode_names[N_MODES] = {
    "client-first",	 "server-first", "half-client", "half-server",  "client-kill",
    "server-reset",	 "client-shut-rd", "server-half-first", "daemon-close", "idle",
    "client-reset"};
/* How often each mode is drawn, relative to the others, in enum order. */
static const unsigned int mode_weights[N_MODES] = {250, 150, 150, 150, 50, 50,
						   100, 100, 60,  30,  50};
/* A TCP client (--connect tcp:) cannot shut down reading as a unix one does, and "list"
 * names no pid for it; a unix one cannot reset. */
#define TCP_CLIENT_ONLY	 (1u << CLIENT_RESET)
#define UNIX_CLIENT_ONLY ((1u << CLIENT_SHUT_RD) | (1u << DAEMON_CLOSE))
/* The client's send buffers, drawn per connection (0: the system's default). */
static const int sndbufs[] = {0, 4096, 65536, 1 << 20, 8 << 20, 32 << 20};
#define SLOW_READ    (16 * 1024) /* a slow server reads this much ... */
#define SLOW_READ_NS (2 * NSEC_PER_MS) /* ... this often */
#define STALL_NS     (200 * NSEC_PER_MS) /* a stalling server stops reading this long, once */
/* --small-share: a writer in small pieces, as an RPC or a logger writes (the 6.12.92+ vsock
 * packet ceiling resets a receiver of many packets smaller than about 600 bytes). */
#define SMALL_MIN 64
#define SMALL_MAX 512
#define SLOW_READ_CLIENT (4 * 1024) /* a slow client reads this much every SLOW_READ_NS */

/* One end of a connection. */
struct end {
	int fd;
	struct stream tx, rx;
	uint64_t sent, recvd; /* payload bytes, header excluded */
	uint64_t mismatch;    /* offset of the first wrong byte, UINT64_MAX if none */
	bool shut, eof, done;
	bool failed_io;	   /* a read or a write failed */
	bool read_failed;  /* a read failed: an error, not an EOF */
	int read_errno;	   /* ... with this */
	bool write_failed; /* writing failed: stop writing, go on reading to EOF */
	uint64_t data_ns;  /* the last byte received */
	uint64_t tx_ns;	   /* the last byte sent */
	uint64_t end_ns;   /* EOF or a read error */
	uint8_t hdr[HEADER_LEN];
	unsigned int hdr_len; /* client: header bytes sent */
};

struct conn {
	uint32_t id;
	enum mode mode;
	uint64_t up_len, down_len;
	uint64_t cut; /* client-kill: up bytes before the kill; server-reset: up bytes read first */
	struct end c, s;
	pid_t child;
	bool started, connected, finished, ok;
	uint64_t start_ns, last_ns, cut_ns;
	const char *why;
	uint64_t rng;	       /* this connection's own generator: plan and choices */
	int sndbuf;	       /* the client's SO_SNDBUF, 0: default */
	bool pausy;	       /* the client pauses after some writes */
	bool slow;	       /* the server reads SLOW_READ every SLOW_READ_NS */
	bool small_up;	       /* the client writes in pieces of SMALL_MIN to SMALL_MAX bytes */
	bool small_down;       /* the server does */
	bool slow_client;      /* the client reads SLOW_READ_CLIENT every SLOW_READ_NS */
	uint64_t stall_at;     /* the server stops reading once at this many bytes, 0: never */
	bool stalls;	       /* it was planned to (stall_at is 0 once it has) */
	uint64_t c_resume_ns;  /* the client writes again from then */
	uint64_t s_resume_ns;  /* the server reads again from then */
	uint64_t c_read_ns;    /* a slow client reads again from then */
	bool hit;	       /* a close by the daemon was asked (close ID, or the stop) */
	pid_t connector;       /* daemon-close: the child that connected, until the close */
	bool close_failed;     /* daemon-close: the redirect was not found; ends as client-first */
	uint64_t hit_c_sent;   /* what each side had sent when it was asked */
	uint64_t hit_s_sent;
};

static struct {
	const char *connect, *listen;
	unsigned int count, live;
	uint64_t max_size, seed;
	unsigned int timeout_s, end_bound_ms, stall_s;
	pid_t hup_pid;
	unsigned int hup_ms;
	long only; /* -1: every connection */
	const char *ctl;   /* the daemon's control socket: daemon-close */
	unsigned int idle_ms; /* the daemon's idle-timeout: idle */
	pid_t term_pid;
	unsigned int term_after;
	unsigned int modes; /* bit per enum mode: the ones drawn */
	const char *modes_text;
	const char *swap_conf; /* at each reload, PATH.a or PATH.b becomes PATH first */
	const char *cmd;       /* run in the background every --cmd-ms or so */
	unsigned int cmd_ms;
	bool no_client, no_server; /* --role: the other end is another process's */
	bool kill_no_reply;	   /* client-kill's server sends nothing */
	unsigned int small_share;  /* percent of connections with a small writer */
	const char *ready_file;	   /* created once listening */
} opt = {.modes = (1u << N_MODES) - 1,
	 .only = -1,
	 .hup_ms = 500,
	 .cmd_ms = 3000,
	 .count = 10000,
	 .live = 500,
	 .max_size = 8 << 20,
	 .seed = 1,
	 .timeout_s = 1800,
	 .end_bound_ms = 3000,
	 .stall_s = 60};

static struct conn *conns;
static int ep, listen_fd;
static struct tool_addr relay; /* --connect */
static bool tcp_client;	     /* the relay listens on TCP: its clients can reset */
static bool tcp_server;	     /* --listen is TCP: the relay dials a TCP server */
static uint64_t rng_state;
static uint8_t buf[BUF_SIZE], want[BUF_SIZE];
static int pending[4096]; /* accepted, header not yet read */
static unsigned int pending_hdr[4096];
static uint8_t pending_buf[4096][HEADER_LEN];

static uint64_t xorshift(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 0x2545f4914f6cdd1dULL;
}

static uint64_t rnd(void)
{
	return xorshift(&rng_state);
}

/* Connection k's own: its plan and its choices do not depend on the others' timing. */
static uint64_t krnd(struct conn *k)
{
	return xorshift(&k->rng);
}

/* 0..max, log-uniform: small sizes as often as large ones, so the soak stays short. */
static uint64_t rnd_size(struct conn *k, uint64_t max)
{
	unsigned int bits = 0;
	uint64_t v;

	while (bits < 63 && (UINT64_C(1) << bits) <= max)
		bits++;
	v = krnd(k) & ((UINT64_C(1) << (krnd(k) % (bits + 1))) - 1);
	return v > max ? max : v;
}

/* The next write of end e: 1 to 64 KiB, log-uniform, or a small writer's piece. */
static size_t write_size(struct conn *k, const struct end *e)
{
	if (e == &k->c ? k->small_up : k->small_down)
		return SMALL_MIN + (size_t)(krnd(k) % (SMALL_MAX - SMALL_MIN + 1));
	return 1 + (size_t)rnd_size(k, BUF_SIZE - 1);
}

static void die(const char *what)
{
	fprintf(stderr, "vsm-soak: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* Also after finish(): a child reaped later can still fail its connection. */
static void fail(struct conn *k, const char *why)
{
	if (!k->why)
		k->why = why;
	k->ok = false;
}

static void watch(int fd, uint64_t tag, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.u64 = tag};

	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) && errno == EEXIST)
		epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
}

static void close_end(struct end *e)
{
	if (e->fd >= 0) {
		epoll_ctl(ep, EPOLL_CTL_DEL, e->fd, NULL);
		close(e->fd);
		e->fd = -1;
	}
	e->done = true;
}

/*
 * Read what is there, at most max bytes, into the end's rx stream. Returns false on EOF or
 * error.
 */
static bool end_read(struct conn *k, struct end *e, uint64_t limit, uint64_t max)
{
	uint64_t taken = 0;
	ssize_t n;
	size_t i;

	for (; taken < max; taken += (uint64_t)n) {
		n = recv(e->fd, buf, max - taken < sizeof(buf) ? (size_t)(max - taken) : sizeof(buf),
			 MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return true;
			e->failed_io = e->read_failed = true;
			e->read_errno = errno;
		}
		if (n <= 0) {
			e->eof = true;
			e->end_ns = k->last_ns = now_ns();
			return false;
		}
		e->data_ns = k->last_ns = now_ns();
		stream_fill(&e->rx, want, (size_t)n);
		if (e->mismatch == UINT64_MAX && memcmp(buf, want, (size_t)n))
			for (i = 0; i < (size_t)n; i++)
				if (buf[i] != want[i]) {
					e->mismatch = e->recvd + i;
					break;
				}
		e->recvd += (uint64_t)n;
		if (e->recvd > limit && e->mismatch == UINT64_MAX)
			e->mismatch = limit; /* bytes past the end */
	}
	return true;
}

/* Send up to len - sent more bytes of the tx stream, random write sizes. */
static void end_write(struct conn *k, struct end *e, uint64_t len)
{
	uint8_t out[BUF_SIZE];
	ssize_t n;
	size_t chunk;

	while (e->sent < len) {
		if (e == &k->c && now_ns() < k->c_resume_ns)
			return; /* pausing */
		chunk = write_size(k, e);
		if (chunk > len - e->sent)
			chunk = (size_t)(len - e->sent);
		/* Peek: generate, and keep the generator's state only for what was taken. */
		struct stream save = e->tx;

		stream_fill(&e->tx, out, chunk);
		n = send(e->fd, out, chunk, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			e->tx = save;
			if (errno != EAGAIN && errno != EINTR)
				e->failed_io = e->write_failed = true;
			return;
		}
		if ((size_t)n < chunk) {
			e->tx = save;
			stream_fill(&e->tx, out, (size_t)n);
		}
		e->sent += (uint64_t)n;
		e->tx_ns = k->last_ns = now_ns();
		/*
		 * A client that pauses: about one write in eight is followed by 1 to 60 ms; one
		 * in 160 for a small writer, whose writes are about twenty times smaller, so that
		 * it pauses as often per byte.
		 */
		if (e == &k->c && k->pausy && !(krnd(k) % (k->small_up ? 160 : 8))) {
			k->c_resume_ns = k->last_ns + (1 + krnd(k) % 60) * NSEC_PER_MS;
			return;
		}
	}
}

/*
 * How long the other end took to see the end after the kill (reaped) or the reset: from the
 * later of that and its last byte (bytes sent before the end are delivered first, as fast
 * as the reader takes them) to its EOF or error.
 */
static uint64_t end_delay_ms(const struct conn *k)
{
	const struct end *e = k->mode == CLIENT_KILL || k->mode == CLIENT_RESET ? &k->s : &k->c;
	uint64_t from = k->cut_ns > e->data_ns ? k->cut_ns : e->data_ns;

	return from && e->end_ns > from ? (e->end_ns - from) / NSEC_PER_MS : 0;
}

/* How long after its last byte the server end's EOF or read error came, in ms; -1: not both. */
static int64_t server_eof_gap_ms(const struct conn *k)
{
	return k->s.end_ns && k->s.data_ns && k->s.end_ns >= k->s.data_ns
		       ? (int64_t)((k->s.end_ns - k->s.data_ns) / NSEC_PER_MS)
		       : -1;
}

static uint64_t close_window; /* bytes written during a close that did not arrive */
static uint64_t hit_lost;     /* bytes owed by a close that did not arrive */
static unsigned int closes;    /* "close ID" answered */

/*
 * A connection the daemon closed (close ID, the stop; docs/behaviour-matrix.md):
 * - up: every byte the client's writes handed over arrives (the daemon shuts the client's
 *   side for reading first, so a later write fails with EPIPE), then EOF; a killed client's
 *   bytes are the child's, cut at most; a server that resets reads what it reads;
 * - down: at least what the server had written when the close was asked, at most all it
 *   wrote (the target's side is not shut for reading: vsock would drop what is queued), then
 *   EOF; the server reads an error only if some of its bytes were not delivered (a unix
 *   target closed with bytes unread resets its peer: the honest end);
 * - a client that shut down reading gets nothing; one the daemon never accepted before a
 *   stop gets nothing and an error or EOF.
 */
static void finish_hit(struct conn *k)
{
	bool client_ended = k->mode == CLIENT_KILL || k->mode == CLIENT_RESET;
	uint64_t up_hi = k->mode == CLIENT_KILL ? k->cut : k->c.sent;

	if (!k->connected) {
		if (k->c.recvd)
			fail(k, "client: bytes on a connection no server end came for");
		return;
	}
	/*
	 * A TCP client cannot be stopped from sending: shutdown(SHUT_RD) on our side tells it
	 * nothing, and what it sends after the close is answered with a reset, which also
	 * drops what its own send queue held. Its stream is cut somewhere after the close.
	 */
	if (k->mode == SERVER_RESET || client_ended || tcp_client ? k->s.recvd > up_hi
								   : k->s.recvd != up_hi) {
		fail(k, "server: not every byte the client's writes handed over, or more");
		hit_lost += k->s.recvd < up_hi ? up_hi - k->s.recvd : 0;
	} else if (tcp_client) {
		close_window += up_hi - k->s.recvd;
	}
	if (k->mode == CLIENT_SHUT_RD) {
		if (k->c.recvd)
			fail(k, "client: bytes after its shutdown(SHUT_RD)");
		return;
	}
	/* A killed client reads nothing; a reset ends the down stream its own way. */
	if (k->mode == SERVER_RESET || client_ended)
		return;
	if (k->c.recvd < k->hit_s_sent || k->c.recvd > k->s.sent) {
		fail(k, "client: not every byte the server wrote before the close, or more than it wrote");
		hit_lost += k->c.recvd < k->hit_s_sent ? k->hit_s_sent - k->c.recvd : 0;
	} else
		close_window += k->s.sent - k->c.recvd;
	if (k->c.read_failed && !(tcp_client && k->s.recvd < up_hi))
		fail(k, "client: an error instead of EOF after the daemon's close");
	if (k->s.read_failed && k->c.recvd == k->s.sent)
		fail(k, "server: an error after the daemon's close, though every byte it wrote arrived");
}

static unsigned int n_finished;

static void finish(struct conn *k, unsigned int *live)
{
	uint64_t t;

	if (k->finished || !k->c.done || !k->s.done)
		return;
	k->finished = true;
	n_finished++;
	(*live)--;
	if (k->hit) {
		finish_hit(k);
		goto verify;
	}
	switch (k->mode) {
	case CLIENT_KILL:
		if (!opt.no_server && k->s.recvd != k->cut)
			fail(k, "the server did not get every byte the killed client sent");
		t = end_delay_ms(k);
		if (t > opt.end_bound_ms)
			fail(k, "the server saw the killed client's end too late");
		break;
	case SERVER_RESET:
		t = end_delay_ms(k);
		if (t > opt.end_bound_ms)
			fail(k, "the client saw the reset too late");
		/*
		 * A TCP server's reset reaches the relay as an error, and a TCP client can be
		 * told: a clean EOF there would make a cut stream look complete.
		 */
		if (tcp_client && tcp_server && !opt.no_client && !k->c.failed_io)
			fail(k, "client: a clean EOF after the server's reset");
		break;
	case CLIENT_RESET: /* a correct prefix of its cut (end_read's limit), then the end */
		t = end_delay_ms(k);
		if (t > opt.end_bound_ms)
			fail(k, "the server saw the client's reset too late");
		break;
	case CLIENT_SHUT_RD:
		/* What the server sends cannot be delivered; its writes may fail at the close. */
		if (!opt.no_server && k->s.recvd != k->up_len)
			fail(k, "server: wrong number of bytes");
		if (k->c.recvd)
			fail(k, "client: bytes after its shutdown(SHUT_RD)");
		break;
	default:
		if (!opt.no_server && k->s.recvd != k->up_len)
			fail(k, "server: wrong number of bytes");
		if (!opt.no_client && k->c.recvd != k->down_len)
			fail(k, "client: wrong number of bytes");
		if (k->c.failed_io || k->s.failed_io)
			fail(k, "an I/O error on a connection that should end cleanly");
		/*
		 * idle: the daemon ended it, and not before idle-timeout after the last write
		 * (it moves each byte after its write, and a slow reader may take it later).
		 */
		t = k->c.tx_ns > k->s.tx_ns ? k->c.tx_ns : k->s.tx_ns;
		if (k->mode == IDLE && k->c.end_ns < (t ? t : k->start_ns) +
							 opt.idle_ms * NSEC_PER_MS * 9 / 10)
			fail(k, "idle: closed before idle-timeout");
	}
verify:
	if (k->c.mismatch != UINT64_MAX || k->s.mismatch != UINT64_MAX)
		fail(k, "wrong bytes");
	k->ok = !k->why;
}

/*
 * With --role server the client cannot read this process's clock, so a server-reset that has
 * sent all but its last byte keeps that byte until its cut and sends it just before the
 * reset: the client's last byte then marks the reset (end_delay_ms).
 */
static bool server_marks_reset(const struct conn *k)
{
	return k->mode == SERVER_RESET && opt.no_client && k->down_len;
}

/* How much the server end sends for now. */
static uint64_t server_send_len(const struct conn *k)
{
	return server_marks_reset(k) && k->s.recvd < k->cut && !k->s.eof ? k->down_len - 1
									  : k->down_len;
}

/*
 * Level-triggered interest in what the end waits for now: input until EOF, output while it
 * has bytes it may send. Without this a writable socket with nothing to send would spin.
 */
static void rearm(struct conn *k, struct end *e, bool is_server)
{
	uint64_t tag = is_server ? TAG_SERVER | k->id : k->id;
	uint64_t len = is_server ? server_send_len(k) : k->mode == CLIENT_RESET ? k->cut : k->up_len;
	uint32_t events = 0;
	bool may_send;

	if (e->done || e->fd < 0)
		return;
	if (is_server)
		may_send = k->mode != HALF_CLIENT || e->eof;
	else
		may_send = (k->mode != HALF_SERVER || e->eof) && e->hdr_len == HEADER_LEN &&
			   now_ns() >= k->c_resume_ns;
	/*
	 * A server waiting out its pace or its stall reads again from the main loop; a
	 * server-reset past its cut reads no more (what it left unread would wake it for ever).
	 */
	if (!e->eof && now_ns() >= (is_server ? k->s_resume_ns : k->c_read_ns) &&
	    !(is_server && k->mode == SERVER_RESET && e->recvd >= k->cut))
		events |= EPOLLIN | EPOLLRDHUP;
	if ((may_send && e->sent < len && !e->write_failed) ||
	    (!is_server && e->hdr_len < HEADER_LEN))
		events |= EPOLLOUT;
	watch(e->fd, tag, events);
}

/* The client end's next steps; called on its events. */
static void client_step(struct conn *k)
{
	struct end *c = &k->c;
	bool send_now;

	if (c->done)
		return;
	while (c->hdr_len < HEADER_LEN) {
		ssize_t n = send(c->fd, c->hdr + c->hdr_len, HEADER_LEN - c->hdr_len,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			c->failed_io = true;
			close_end(c);
			return;
		}
		c->hdr_len += (unsigned int)n;
	}
	if (k->mode == CLIENT_SHUT_RD && !c->eof) {
		shutdown(c->fd, SHUT_RD); /* reads 0 from now on: its EOF */
		c->eof = true;
		c->end_ns = now_ns();
	}
	if (!c->eof && now_ns() >= k->c_read_ns) {
		end_read(k, c, k->down_len, k->slow_client ? SLOW_READ_CLIENT : UINT64_MAX);
		if (k->slow_client && !c->eof)
			k->c_read_ns = now_ns() + SLOW_READ_NS;
	}
	send_now = k->mode != HALF_SERVER || c->eof;
	if (send_now && !c->write_failed)
		end_write(k, c, k->mode == CLIENT_RESET ? k->cut : k->up_len);
	if (k->mode == SERVER_RESET && c->eof) {
		close_end(c);
		return;
	}
	/* client-reset: its cut bytes handed over, an abortive close (SO_LINGER 0: an RST). */
	if (k->mode == CLIENT_RESET && (c->sent == k->cut || c->eof || c->write_failed)) {
		struct linger lg = {.l_onoff = 1, .l_linger = 0};

		setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		k->cut_ns = now_ns();
		close_end(c);
		return;
	}
	if (c->sent == k->up_len && !c->shut && k->mode == HALF_CLIENT) {
		shutdown(c->fd, SHUT_WR);
		c->shut = true;
	}
	switch (k->mode) {
	case DAEMON_CLOSE: /* as client-first when the close could not be asked */
		if (k->close_failed && !k->hit ? c->sent == k->up_len && c->recvd >= k->down_len
				    : c->eof && (c->sent == k->up_len || c->write_failed))
			close_end(c);
		break;
	case CLIENT_FIRST: /* or at an early EOF: a close by the daemon, or a loss to report */
		if ((c->sent == k->up_len && c->recvd >= k->down_len) ||
		    (c->eof && (c->sent == k->up_len || c->write_failed)))
			close_end(c);
		break;
	case HALF_SERVER:
		if (c->eof && (c->sent == k->up_len || c->write_failed))
			close_end(c);
		break;
	default:
		if (c->eof && (c->sent == k->up_len || c->write_failed))
			close_end(c);
	}
	/* A read error ends the connection; after a write error the bytes queued are read. */
	if (c->eof && c->failed_io && !c->done)
		close_end(c);
	rearm(k, c, false);
}

static void server_step(struct conn *k)
{
	struct end *s = &k->s;
	uint64_t limit = k->mode == SERVER_RESET ? k->cut : UINT64_MAX;

	if (s->done)
		return;
	if (!s->eof && now_ns() >= k->s_resume_ns) {
		uint64_t max = k->slow ? SLOW_READ : UINT64_MAX;

		if (k->stall_at && s->recvd < k->stall_at && max > k->stall_at - s->recvd)
			max = k->stall_at - s->recvd;
		/* server-reset reads its first cut bytes, then resets with the rest unread. */
		if (s->recvd < limit)
			end_read(k, s,
				 k->mode == CLIENT_KILL || k->mode == CLIENT_RESET ? k->cut : k->up_len,
				 max);
		if (k->stall_at && s->recvd >= k->stall_at) {
			k->stall_at = 0;
			k->s_resume_ns = now_ns() + STALL_NS;
		} else if (k->slow) {
			k->s_resume_ns = now_ns() + SLOW_READ_NS;
		}
	}
	if (k->mode == SERVER_RESET && s->recvd >= k->cut) {
		struct linger lg = {.l_onoff = 1, .l_linger = 0};

		if (server_marks_reset(k) && s->sent + 1 == k->down_len && !s->write_failed) {
			end_write(k, s, k->down_len);
			if (s->sent < k->down_len && !s->write_failed) {
				rearm(k, s, true); /* writable again soon: the client reads */
				return;
			}
		}
		setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		k->cut_ns = now_ns();
		close_end(s);
		return;
	}
	if ((k->mode != HALF_CLIENT || s->eof) && !s->write_failed)
		end_write(k, s, server_send_len(k));
	if ((k->mode == HALF_SERVER || k->mode == SERVER_HALF_FIRST) && s->sent == k->down_len &&
	    !s->shut) {
		shutdown(s->fd, SHUT_WR);
		s->shut = true;
	}
	switch (k->mode) {
	case SERVER_FIRST: /* or at an early EOF, as client-first */
		if ((s->sent == k->down_len && s->recvd >= k->up_len) ||
		    (s->eof && (s->sent == k->down_len || s->write_failed)))
			close_end(s);
		break;
	case CLIENT_KILL:
	case CLIENT_RESET:
		if (s->eof)
			close_end(s);
		break;
	default:
		if (s->eof && (s->sent == k->down_len || s->write_failed))
			close_end(s);
	}
	if (s->eof && s->failed_io && !s->done)
		close_end(s);
	rearm(k, s, true);
}

static void end_init(struct end *e, uint64_t tx_seed, uint64_t rx_seed)
{
	memset(e, 0, sizeof(*e));
	e->fd = -1;
	e->mismatch = UINT64_MAX;
	stream_init(&e->tx, tx_seed);
	stream_init(&e->rx, rx_seed);
}

/* A mode by the weights, among those --modes allows. */
static enum mode draw_mode(void)
{
	unsigned int total = 0, w, m;

	for (m = 0; m < N_MODES; m++)
		total += opt.modes & (1u << m) ? mode_weights[m] : 0;
	w = (unsigned int)(rnd() % total);
	for (m = 0; m < N_MODES; m++) {
		if (!(opt.modes & (1u << m)))
			continue;
		if (w < mode_weights[m])
			break;
		w -= mode_weights[m];
	}
	return (enum mode)m;
}

static void conn_plan(struct conn *k, uint32_t id)
{
	enum mode m = draw_mode();
	uint64_t seed = opt.seed * 1000003u + id * 2u;

	memset(k, 0, sizeof(*k));
	k->rng = seed * 0x9e3779b97f4a7c15ULL | 1;
	k->id = id;
	k->mode = m;
	k->up_len = rnd_size(k, opt.max_size);
	/* client-shut-rd: the server answers anyway; the daemon's writes to the client fail. */
	k->down_len = rnd_size(k, opt.max_size);
	/* A TCP socket closed with bytes unread resets (RFC 1122, 4.2.2.13), and a reset
	 * discards what the client had not sent yet: its kill is a plain close only when
	 * nothing came for it. */
	if (m == CLIENT_KILL && (tcp_client || opt.kill_no_reply))
		k->down_len = 0;
	k->cut = k->up_len ? krnd(k) % (k->up_len + 1) : 0;
	k->sndbuf = sndbufs[krnd(k) % (sizeof(sndbufs) / sizeof(sndbufs[0]))];
	k->pausy = !(krnd(k) % 4);
	k->slow = !(krnd(k) % 8) && k->up_len <= (4 << 20); /* at 8 MB/s: half a second */
	k->stall_at = !(krnd(k) % 8) && k->up_len ? 1 + krnd(k) % k->up_len : 0;
	k->stalls = k->stall_at;
	/* Drawn after the rest, so that a seed plans the same connections as before. */
	if (krnd(k) % 100 < opt.small_share) {
		unsigned int which = (unsigned int)(krnd(k) % 3);

		k->small_up = which != 1;
		k->small_down = which != 0;
	}
	k->slow_client = k->small_down && !(krnd(k) % 2);
	end_init(&k->c, seed, seed + 1);
	end_init(&k->s, seed + 1, seed);
	k->c.done = opt.no_client;
	k->s.done = opt.no_server;
	uint32_t hdr[2] = {MAGIC, id};

	memcpy(k->c.hdr, hdr, HEADER_LEN);
}

/* SO_SNDBUFFORCE as root, else SO_SNDBUF (capped by wmem_max); 0 leaves the default. */
static void set_sndbuf(int fd, int size)
{
	if (fd >= 0 && size &&
	    setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
}

/* client-kill: a child sends the header and cut bytes with blocking writes, then dies. */
static void start_killed_client(struct conn *k)
{
	uint8_t out[BUF_SIZE];
	size_t chunk, off;
	ssize_t n;
	pid_t pid;
	int fd;

	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid > 0) {
		k->child = pid;
		/* The parent has nothing to do for this end; alone, it waits for the kill. */
		k->c.done = !opt.no_server;
		return;
	}
	/* Copies of the other connections' sockets would hold them open after their close. */
	syscall(SYS_close_range, 3u, ~0u, 0u);
	fd = socket(relay.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	set_sndbuf(fd, k->sndbuf);
	if (fd < 0 || connect(fd, &relay.u.sa, relay.len) ||
	    send(fd, k->c.hdr, HEADER_LEN, MSG_NOSIGNAL) != HEADER_LEN)
		_exit(3);
	while (k->c.sent < k->cut) {
		chunk = write_size(k, &k->c);
		if (chunk > k->cut - k->c.sent)
			chunk = (size_t)(k->cut - k->c.sent);
		stream_fill(&k->c.tx, out, chunk);
		/*
		 * A blocking write returns short when the relay shuts our peer's reading side
		 * down in its midst (a stop): what it took counts, and the next write fails.
		 */
		for (off = 0; off < chunk; off += (size_t)n) {
			n = send(fd, out + off, chunk - off, MSG_NOSIGNAL);
			if (n < 0)
				_exit(errno == EPIPE ? 4 : errno == ECONNRESET ? 6 : 7);
		}
		k->c.sent += chunk;
	}
	raise(SIGKILL);
	_exit(5);
}

/*
 * daemon-close: a forked child connects and hands the socket back, so that the redirect's
 * client pid (SO_PEERCRED, taken at connect()) names this connection alone in "list".
 */
static int connect_from_child(struct conn *k)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {};
	struct iovec iov = {.iov_base = &(char){0}, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *cm;
	int sv[2], fd = -1;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv))
		die("socketpair");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		fd = socket(relay.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		set_sndbuf(fd, k->sndbuf);
		if (fd < 0 || connect(fd, &relay.u.sa, relay.len))
			_exit(3);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
		_exit(sendmsg(sv[1], &msg, 0) == 1 ? 0 : 4);
	}
	close(sv[1]);
	if (recvmsg(sv[0], &msg, MSG_CMSG_CLOEXEC) == 1 && (cm = CMSG_FIRSTHDR(&msg)) &&
	    cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	close(sv[0]);
	waitpid(pid, NULL, 0);
	if (fd < 0) {
		fprintf(stderr, "vsm-soak: conn %u: the connecting child failed\n", k->id);
		exit(2);
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	k->connector = pid;
	return fd;
}

/*
 * One request on the daemon's control socket (docs/control-protocol.md), its answer line in
 * ans. Blocking, but a round trip takes milliseconds; no process is spawned per close. 0 or
 * -1 (the connection is dropped and made again next time).
 */
static int ctl_fd = -1;
static char ans[16 << 20];

static int ctl_call(const char *req)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = 10};
	size_t len = 0, off = 0;
	ssize_t n;

	if (ctl_fd < 0) {
		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", opt.ctl);
		ctl_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (ctl_fd < 0)
			return -1;
		setsockopt(ctl_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (connect(ctl_fd, (struct sockaddr *)&sun, sizeof(sun)))
			goto drop;
	}
	while (off < strlen(req)) {
		n = send(ctl_fd, req + off, strlen(req) - off, MSG_NOSIGNAL);
		if (n <= 0)
			goto drop;
		off += (size_t)n;
	}
	while (!len || ans[len - 1] != '\n') {
		if (len == sizeof(ans) - 1)
			goto drop;
		n = recv(ctl_fd, ans + len, sizeof(ans) - 1 - len, 0);
		if (n <= 0)
			goto drop;
		len += (size_t)n;
	}
	ans[len] = 0;
	return 0;
drop:
	close(ctl_fd);
	ctl_fd = -1;
	return -1;
}

/* The id of the redirect whose client has this pid, from "list"; -1. */
static long redirect_of_pid(pid_t pid)
{
	char key[32], *obj, *next, *at;

	if (ctl_call("{\"command\":\"list\"}\n"))
		return -1;
	snprintf(key, sizeof(key), "\"pid\":%d,", (int)pid);
	for (obj = strstr(ans, "{\"id\":"); obj; obj = next) {
		next = strstr(obj + 1, "{\"id\":");
		at = strstr(obj, key);
		if (at && (!next || at < next))
			return strtol(obj + 6, NULL, 10);
	}
	return -1;
}

/* Mark k as closed by the daemon: what each side has sent by now must all arrive. */
/*
 * What end e had handed to the relay by now. A unix write puts its bytes in the relay's
 * socket. A TCP write may leave them in the writer's own send queue, not yet sent: the relay
 * has not opened its window, or Nagle waits for an ACK. Those are not the relay's yet
 * (docs/behaviour-matrix.md); SIOCOUTQNSD counts them. What TCP has sent over loopback is in
 * the relay's socket before the close it is asked for can be read.
 */
static uint64_t handed_over(const struct end *e, bool tcp)
{
	int q = 0;

	if (!tcp || e->fd < 0 || e->done || ioctl(e->fd, SIOCOUTQNSD, &q) || q < 0)
		return e->sent;
	return e->sent > (uint64_t)q ? e->sent - (uint64_t)q : 0;
}

static void hit(struct conn *k)
{
	k->hit = true;
	k->hit_c_sent = handed_over(&k->c, tcp_client);
	k->hit_s_sent = handed_over(&k->s, tcp_server);
}

/* --term-pid has exited (or is a zombie): no dial can come from it any more. */
static bool daemon_gone(void)
{
	char path[64], state = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)opt.term_pid);
	f = fopen(path, "re");
	if (!f)
		return true;
	if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
		state = 0;
	fclose(f);
	return state == 'Z' || state == 'X';
}

/* daemon-close: "close ID" once the client has sent its cut. */
static void ask_close(struct conn *k)
{
	long id = redirect_of_pid(k->connector);
	char req[64];

	k->connector = 0;
	if (id >= 0) {
		hit(k); /* before the request: what was sent by now must all arrive */
		snprintf(req, sizeof(req), "{\"command\":\"close\",\"id\":%ld}\n", id);
		if (!ctl_call(req) && strstr(ans, "\"ok\":true")) {
			closes++;
			return;
		}
	}
	fprintf(stderr, "vsm-soak: conn %u: %s\n", k->id,
		id < 0 ? "its redirect is not in the list" : "close failed");
	k->hit = false;
	k->close_failed = true;
	client_step(k); /* it ends as client-first now */
}

static bool start_conn(struct conn *k)
{
	int fd;

	k->start_ns = k->last_ns = now_ns();
	if (k->mode == CLIENT_KILL) {
		start_killed_client(k);
		k->started = true;
		return true;
	}
	if (k->mode == DAEMON_CLOSE) {
		k->c.fd = connect_from_child(k);
		k->started = true;
		watch(k->c.fd, k->id, EPOLLIN | EPOLLOUT | EPOLLRDHUP);
		return true;
	}
	fd = socket(relay.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket");
	set_sndbuf(fd, k->sndbuf);
	if (connect(fd, &relay.u.sa, relay.len) && errno != EINPROGRESS) {
		close(fd);
		if (errno == EAGAIN) /* the relay's backlog is full: later */
			return false;
		die("connect to the relay");
	}
	k->c.fd = fd;
	k->started = true;
	watch(fd, k->id, EPOLLIN | EPOLLOUT | EPOLLRDHUP);
	return true;
}

static void accept_all(void)
{
	unsigned int i;
	int fd;

	for (;;) {
		fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
				return;
			die("accept");
		}
		for (i = 0; i < sizeof(pending) / sizeof(pending[0]) && pending[i] >= 0; i++)
			;
		if (i == sizeof(pending) / sizeof(pending[0])) {
			fprintf(stderr, "vsm-soak: more than %zu connections without a header\n",
				sizeof(pending) / sizeof(pending[0]));
			exit(2);
		}
		pending[i] = fd;
		pending_hdr[i] = 0;
		watch(fd, TAG_PENDING | i, EPOLLIN | EPOLLRDHUP);
	}
}

/*
 * A server connection's first 8 bytes say which client it belongs to. Returns true when
 * they named one (alone, --role server, its connection is live from then).
 */
static bool read_header(unsigned int i)
{
	uint32_t hdr[2];
	struct conn *k;
	ssize_t n;

	n = recv(pending[i], pending_buf[i] + pending_hdr[i], HEADER_LEN - pending_hdr[i],
		 MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return false;
	if (n <= 0) {
		fprintf(stderr, "vsm-soak: a relayed connection ended before its header\n");
		epoll_ctl(ep, EPOLL_CTL_DEL, pending[i], NULL);
		close(pending[i]);
		pending[i] = -1;
		return false;
	}
	pending_hdr[i] += (unsigned int)n;
	if (pending_hdr[i] < HEADER_LEN)
		return false;
	memcpy(hdr, pending_buf[i], HEADER_LEN);
	if (hdr[0] != MAGIC || hdr[1] >= opt.count || conns[hdr[1]].s.fd >= 0 ||
	    conns[hdr[1]].s.done) {
		fprintf(stderr,
			"vsm-soak: seed %" PRIu64 ": a relayed connection has a bad header: %08x %u "
			"(magic %08x)\n",
			opt.seed, hdr[0], hdr[1], MAGIC);
		if (hdr[1] < opt.count)
			fprintf(stderr, "  conn %u: %s s.fd=%d s.done=%d finished=%d c.done=%d\n",
				hdr[1], mode_names[conns[hdr[1]].mode], conns[hdr[1]].s.fd,
				conns[hdr[1]].s.done, conns[hdr[1]].finished, conns[hdr[1]].c.done);
		exit(1);
	}
	k = &conns[hdr[1]];
	k->s.fd = pending[i];
	k->connected = true;
	pending[i] = -1;
	if (opt.no_client) {
		k->started = true;
		k->start_ns = k->last_ns = now_ns();
	}
	watch(k->s.fd, TAG_SERVER | k->id, EPOLLIN | EPOLLOUT | EPOLLRDHUP);
	server_step(k);
	return true;
}

/* --ready-file: an empty file, once the listener is up. */
static void write_ready_file(void)
{
	FILE *f = fopen(opt.ready_file, "w");

	if (!f || fclose(f))
		die(opt.ready_file);
}

static int open_listener(const char *text)
{
	struct tool_addr a;
	int fd, one = 1;

	if (parse_addr(text, &a) || a.type != SOCK_STREAM || a.u.un.sun_path[0] == '@') {
		fprintf(stderr, "vsm-soak: --listen takes vsock:CID:PORT, unix:PATH or "
				"tcp:IPV4:PORT\n");
		exit(2);
	}
	if (a.family == AF_UNIX)
		unlink(a.u.un.sun_path);
	fd = socket(a.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0 && a.family == AF_INET)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, &a.u.sa, a.len))
		die(text);
	if (listen(fd, 4096))
		die("listen");
	return fd;
}

/*
 * --swap-conf: PATH.a or PATH.b, drawn, replaces PATH (a rename: the daemon never reads half
 * a file). When the two name the section apart, the reload that follows removes the section
 * every live connection came through and adds one that listens on the same address.
 * Returns 1 when the file changed.
 */
static unsigned int swap_conf(void)
{
	static int current = -1;
	char from[4096], tmp[4096];
	int pick = (int)(rnd() % 2), in, out;
	ssize_t n;

	if (pick == current)
		return 0;
	snprintf(from, sizeof(from), "%s.%c", opt.swap_conf, 'a' + pick);
	snprintf(tmp, sizeof(tmp), "%s.tmp", opt.swap_conf);
	in = open(from, O_RDONLY | O_CLOEXEC);
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (in < 0 || out < 0)
		die(in < 0 ? from : tmp);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			die(tmp);
	close(in);
	if (n < 0 || close(out) || rename(tmp, opt.swap_conf))
		die(opt.swap_conf);
	current = pick;
	return 1;
}

/* --cmd: its child while it runs, how many ran, how many failed */
static pid_t cmd_pid;
static unsigned int cmds, cmds_failed;

static void start_cmd(void)
{
	pid_t pid;

	if (cmd_pid)
		return;
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		syscall(SYS_close_range, 3u, ~0u, 0u); /* no copy of a connection's socket */
		execl("/bin/sh", "sh", "-c", opt.cmd, (char *)NULL);
		_exit(127);
	}
	cmd_pid = pid;
	cmds++;
}

/*
 * A client-kill's child dies of its own SIGKILL once its cut is sent; on a connection the
 * daemon was stopped on, its connect (exit 3) or a write may fail first: the stop shuts the
 * client's side for reading, and a later write fails with EPIPE (exit 4), or for a TCP client
 * is answered with a reset (exit 6; docs/behaviour-matrix.md).
 */
static bool child_ended_as_it_may(const struct conn *k, int status)
{
	int rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;

	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		return true;
	return k->hit && (rc == 3 || rc == 4 || (rc == 6 && tcp_client));
}

/* What the child of a client-kill that ended otherwise than it may did (its exit code). */
static const char *killed_child_why(int status)
{
	switch (WIFEXITED(status) ? WEXITSTATUS(status) : -1) {
	case 3:
		return "the killed client failed before its kill: its connect failed (exit 3)";
	case 4:
		return "the killed client failed before its kill: a write failed with EPIPE (exit 4)";
	case 6:
		return "the killed client failed before its kill: a write failed with ECONNRESET "
		       "(exit 6)";
	case 7:
		return "the killed client failed before its kill: a write failed (exit 7)";
	default:
		return "the killed client failed before its kill: it ended otherwise (a signal "
		       "other than its SIGKILL?)";
	}
}

static void reap_children(void)
{
	unsigned int i;
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid == cmd_pid) {
			cmd_pid = 0;
			if (!WIFEXITED(status) || WEXITSTATUS(status)) {
				cmds_failed++;
				fprintf(stderr, "vsm-soak: --cmd exited with status %d\n", status);
			}
			continue;
		}
		for (i = 0; i < opt.count; i++)
			if (conns[i].child == pid) {
				conns[i].cut_ns = now_ns();
				conns[i].c.done = true;
				if (!child_ended_as_it_may(&conns[i], status))
					fail(&conns[i], killed_child_why(status));
				break;
			}
	}
}

/* "a,b": those modes; "-a,-b": all but those. 0 (then usage) on an unknown name. */
static unsigned int parse_modes(const char *list)
{
	unsigned int set = list[0] == '-' ? (1u << N_MODES) - 1 : 0, m;
	char *copy = strdup(list), *save = NULL, *name;

	for (name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		bool minus = name[0] == '-';

		for (m = 0; m < N_MODES && strcmp(name + minus, mode_names[m]); m++)
			;
		if (m == N_MODES) {
			fprintf(stderr, "vsm-soak: --modes: unknown mode \"%s\"\n", name);
			exit(2);
		}
		set = minus ? set & ~(1u << m) : set | (1u << m);
	}
	free(copy);
	return set;
}

static void usage(int rc)
{
	fprintf(rc ? stderr : stdout,
		"usage: vsm-soak --connect unix:PATH|tcp:IPV4:PORT|vsock:CID:PORT (direct)\n"
		"                --listen vsock:CID:PORT|unix:PATH|tcp:IPV4:PORT [OPTIONS]\n"
		"  --count N          connections in all (10000)\n"
		"  --live N           at most N at once (500)\n"
		"  --max-size BYTES   largest stream each way (8388608)\n"
		"  --seed S           random seed (1)\n"
		"  --end-bound-ms MS  a kill or reset must be seen within MS (3000)\n"
		"  --stall SEC        a connection without progress for SEC fails (60)\n"
		"  --timeout SEC      give up after SEC (1800)\n"
		"  --hup-pid PID      send PID (the daemon) SIGHUP, a reload, every --hup-ms or so\n"
		"  --hup-ms MS        (500)\n"
		"  --only ID          run connection ID alone (a replay of a failed one)\n"
		"  --modes A,B,...    draw only these endings (all); -A,-B: all but these\n"
		"  --ctl PATH         the daemon's control socket: draws daemon-close\n"
		"  --idle-ms MS       the daemon's idle-timeout: draws idle\n"
		"  --term-pid PID     send PID (the daemon) SIGTERM once --term-after\n"
		"  --term-after N     connections have started (a stop)\n"
		"  --swap-conf PATH   before each reload, copy PATH.a or PATH.b (drawn) to PATH\n"
		"  --cmd CMD          run sh -c CMD in the background every --cmd-ms or so, one\n"
		"  --cmd-ms MS        at a time (3000): a restart of the daemon, say\n"
		"  --role client|server  play one end only (--connect or --listen); another\n"
		"                     vsm-soak with the same seed, count, sizes and modes plays\n"
		"                     the other\n"
		"  --ready-file PATH  created once listening\n"
		"  --kill-no-reply    client-kill's server sends nothing back\n"
		"  --small-share PCT  PCT%% of connections write in pieces of 64 to 512 bytes\n"
		"                     (the client, the server, or both), and half of those\n"
		"                     whose server does read 4 KiB every 2 ms on the client\n");
	exit(rc);
}

static void parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"connect", required_argument, NULL, 'c'},
	    {"listen", required_argument, NULL, 'l'},
	    {"count", required_argument, NULL, 'n'},
	    {"live", required_argument, NULL, 'L'},
	    {"max-size", required_argument, NULL, 'm'},
	    {"seed", required_argument, NULL, 's'},
	    {"end-bound-ms", required_argument, NULL, 'e'},
	    {"stall", required_argument, NULL, 'S'},
	    {"timeout", required_argument, NULL, 't'},
	    {"hup-pid", required_argument, NULL, 'H'},
	    {"hup-ms", required_argument, NULL, 'M'},
	    {"only", required_argument, NULL, 'o'},
	    {"modes", required_argument, NULL, 'x'},
	    {"ctl", required_argument, NULL, 'C'},
	    {"idle-ms", required_argument, NULL, 'I'},
	    {"term-pid", required_argument, NULL, 'T'},
	    {"term-after", required_argument, NULL, 'A'},
	    {"swap-conf", required_argument, NULL, 'W'},
	    {"cmd", required_argument, NULL, 'X'},
	    {"cmd-ms", required_argument, NULL, 'Y'},
	    {"role", required_argument, NULL, 'R'},
	    {"ready-file", required_argument, NULL, 'F'},
	    {"kill-no-reply", no_argument, NULL, 'K'},
	    {"small-share", required_argument, NULL, 'w'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			opt.connect = optarg;
			break;
		case 'l':
			opt.listen = optarg;
			break;
		case 'n':
			opt.count = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'L':
			opt.live = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'm':
			opt.max_size = strtoull(optarg, NULL, 0);
			break;
		case 's':
			opt.seed = strtoull(optarg, NULL, 0);
			break;
		case 'e':
			opt.end_bound_ms = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'S':
			opt.stall_s = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 't':
			opt.timeout_s = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'H':
			opt.hup_pid = (pid_t)strtol(optarg, NULL, 0);
			break;
		case 'M':
			opt.hup_ms = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'o':
			opt.only = strtol(optarg, NULL, 0);
			break;
		case 'x':
			opt.modes = parse_modes(optarg);
			opt.modes_text = optarg;
			break;
		case 'C':
			opt.ctl = optarg;
			break;
		case 'I':
			opt.idle_ms = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'T':
			opt.term_pid = (pid_t)strtol(optarg, NULL, 0);
			break;
		case 'A':
			opt.term_after = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'W':
			opt.swap_conf = optarg;
			break;
		case 'X':
			opt.cmd = optarg;
			break;
		case 'Y':
			opt.cmd_ms = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'R':
			opt.no_server = !strcmp(optarg, "client");
			opt.no_client = !strcmp(optarg, "server");
			if (!opt.no_server && !opt.no_client)
				usage(2);
			break;
		case 'F':
			opt.ready_file = optarg;
			break;
		case 'K':
			opt.kill_no_reply = true;
			break;
		case 'w':
			opt.small_share = (unsigned int)strtoul(optarg, NULL, 10);
			if (opt.small_share > 100)
				usage(2);
			break;
		case 'h':
			usage(0);
			break;
		default:
			usage(2);
		}
	}
	if ((!opt.connect && !opt.no_client) || (!opt.listen && !opt.no_server) || !opt.count ||
	    !opt.live || opt.live > 2000 || optind != argc || !opt.hup_ms || !opt.modes ||
	    opt.only >= (long)opt.count)
		usage(2);
	/* Alone, an end cannot check what needs the other's clock or the daemon's help. */
	if ((opt.no_client || opt.no_server) &&
	    (opt.ctl || opt.idle_ms || opt.term_pid || opt.swap_conf ||
	     (opt.no_client ? opt.connect : opt.listen))) {
		fprintf(stderr, "vsm-soak: --role client takes --connect, --role server --listen; "
				"neither takes --ctl, --idle-ms, --term-pid or --swap-conf\n");
		exit(2);
	}
	/* vsock: the control, straight to this process's own vsock listener (no relay). */
	if (opt.connect && (parse_addr(opt.connect, &relay) || relay.type != SOCK_STREAM ||
			    (relay.family == AF_UNIX && relay.u.un.sun_path[0] == '@'))) {
		fprintf(stderr, "vsm-soak: --connect takes unix:PATH, tcp:IPV4:PORT or "
				"vsock:CID:PORT\n");
		exit(2);
	}
	tcp_client = relay.family == AF_INET;
	tcp_server = opt.listen && !strncmp(opt.listen, "tcp:", 4);
	/* The modes that need the daemon's help are drawn only when it is given. */
	if (!opt.modes_text) {
		if (!opt.ctl)
			opt.modes &= ~(1u << DAEMON_CLOSE);
		if (!opt.idle_ms)
			opt.modes &= ~(1u << IDLE);
	}
	/* "all" and "all but": those the client's kind can play */
	if (!opt.modes_text || opt.modes_text[0] == '-')
		opt.modes &= ~(tcp_client ? UNIX_CLIENT_ONLY : TCP_CLIENT_ONLY);
	if ((opt.modes & (1u << DAEMON_CLOSE) && !opt.ctl) ||
	    (opt.modes & (1u << IDLE) && !opt.idle_ms) || !opt.modes ||
	    (opt.term_after && !opt.term_pid) || (opt.swap_conf && !opt.hup_pid) || !opt.cmd_ms ||
	    (opt.modes & (tcp_client ? UNIX_CLIENT_ONLY : TCP_CLIENT_ONLY))) {
		fprintf(stderr, "vsm-soak: daemon-close needs --ctl, idle needs --idle-ms, "
				"--term-after needs --term-pid; client-reset needs a tcp: client, "
				"client-shut-rd and daemon-close a unix: one\n");
		exit(2);
	}
}

int main(int argc, char **argv)
{
	struct rlimit rl = {.rlim_cur = 65536, .rlim_max = 65536};
	struct epoll_event evs[256];
	unsigned int next = 0, live = 0, max_live = 0, n_ok = 0, i, counts[N_MODES][2] = {};
	uint64_t t0, deadline, last_sweep = 0, lost = 0, up = 0, down = 0, kill_ms = 0,
			       reset_ms = 0, next_hup = 0, next_cmd = 0;
	unsigned int mismatched = 0, hups = 0, first_live = 0, stopped = 0, not_run = 0, swaps = 0;
	unsigned int small = 0, enobufs = 0;
	char small_share_text[32] = "";
	bool waiting = false, termed = false;
	int n, j;

	parse_args(argc, argv);
	setrlimit(RLIMIT_NOFILE, &rl); /* two descriptors per live connection, and the relay's */
	signal(SIGPIPE, SIG_IGN);
	rng_state = opt.seed * 0x9e3779b97f4a7c15ULL | 1;
	conns = calloc(opt.count, sizeof(*conns));
	if (!conns)
		die("calloc");
	for (i = 0; i < opt.count; i++)
		conn_plan(&conns[i], i);
	memset(pending, -1, sizeof(pending));
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!opt.no_server) {
		listen_fd = open_listener(opt.listen);
		watch(listen_fd, TAG_LISTEN, EPOLLIN);
	}
	if (opt.ready_file && !opt.no_server)
		write_ready_file();
	if (opt.no_client) { /* the server ends come as the other process's clients connect */
		for (i = 0; i < opt.count; i++)
			if (opt.only >= 0 && i != opt.only) {
				conns[i].finished = conns[i].ok = true; /* not run */
				n_finished++;
			}
		next = opt.count;
	}
	t0 = now_ns();
	if (opt.small_share)
		snprintf(small_share_text, sizeof(small_share_text), " --small-share %u",
			 opt.small_share);
	deadline = t0 + opt.timeout_s * 1000000000ull;

	for (;;) {
		uint64_t now;

		if (opt.term_pid && !termed && next >= opt.term_after) {
			/* The stop: every connection live now is closed by the daemon. */
			for (i = first_live; i < next; i++)
				if (!conns[i].finished && !conns[i].hit) {
					hit(&conns[i]);
					stopped++;
				}
			if (kill(opt.term_pid, SIGTERM))
				die("kill --term-pid");
			termed = true;
		}
		while (!termed && live < opt.live && next < opt.count) {
			if (opt.only >= 0 && next != opt.only) {
				conns[next].finished = conns[next].ok = true; /* not run */
				next++;
				continue;
			}
			if (!start_conn(&conns[next]))
				break;
			next++;
			if (++live > max_live)
				max_live = live;
		}
		/* A pausing client or a paced server is stepped from here, every millisecond. */
		n = epoll_wait(ep, evs, 256, waiting ? 1 : 100);
		if (n < 0 && errno != EINTR)
			die("epoll_wait");
		for (j = 0; j < n; j++) {
			uint64_t tag = evs[j].data.u64;
			struct conn *k;

			if (tag == TAG_LISTEN) {
				accept_all();
				continue;
			}
			if (tag & TAG_PENDING) {
				if (read_header((unsigned int)(tag & 0xffff)) && opt.no_client &&
				    ++live > max_live)
					max_live = live;
				continue;
			}
			k = &conns[tag & 0xffffffff];
			if (tag & TAG_SERVER)
				server_step(k);
			else
				client_step(k);
			finish(k, &live);
		}
		reap_children();
		now = now_ns();
		while (first_live < next && conns[first_live].finished)
			first_live++;
		waiting = false;
		for (i = first_live; i < next; i++) {
			struct conn *k = &conns[i];

			if (k->finished)
				continue;
			if (k->mode == DAEMON_CLOSE && k->connector && !k->hit && k->connected &&
			    !k->c.done && k->c.sent >= k->cut)
				ask_close(k);
			/* The stop came before the daemon dialled for it: no server end will come. */
			if (termed && k->c.done && !k->connected && !k->s.done && daemon_gone())
				k->s.done = true;
			if (k->c_resume_ns && !k->c.done) {
				if (now >= k->c_resume_ns) {
					k->c_resume_ns = 0;
					client_step(k);
				} else {
					waiting = true;
				}
			}
			if (k->c_read_ns && !k->c.done) {
				if (now >= k->c_read_ns) {
					k->c_read_ns = 0;
					client_step(k);
				} else {
					waiting = true;
				}
			}
			if (k->s_resume_ns && k->s.fd >= 0 && !k->s.done) {
				if (now >= k->s_resume_ns) {
					k->s_resume_ns = 0;
					server_step(k);
				} else {
					waiting = true;
				}
			}
			/* A step above may have set the next pause or read: it is waited for too. */
			if (((k->c_resume_ns || k->c_read_ns) && !k->c.done) ||
			    (k->s_resume_ns && k->s.fd >= 0 && !k->s.done))
				waiting = true;
			finish(k, &live);
		}
		if (opt.hup_pid && now >= next_hup) {
			if (next_hup && opt.swap_conf)
				swaps += swap_conf();
			if (next_hup && !kill(opt.hup_pid, SIGHUP))
				hups++;
			next_hup = now + (opt.hup_ms / 2 + rnd() % opt.hup_ms) * NSEC_PER_MS;
		}
		if (opt.cmd && !termed && now >= next_cmd) {
			if (next_cmd)
				start_cmd();
			next_cmd = now + (opt.cmd_ms / 2 + rnd() % opt.cmd_ms) * NSEC_PER_MS;
		}
		/* Once a second: the kills reaped above, stalls, and connections that ended. */
		if (now - last_sweep > 1000000000ull) {
			last_sweep = now;
			for (i = 0; i < next; i++) {
				struct conn *k = &conns[i];

				if (k->finished || !k->started)
					continue;
				/*
				 * Stopped before the daemon dialled for it: it waits in the
				 * listener's backlog, which the stop keeps open, until the
				 * daemon exits, as long as a slow reader elsewhere keeps the
				 * stop going (docs/behaviour-matrix.md): not a stall.
				 */
				if (termed && k->hit && !k->connected && !daemon_gone())
					k->last_ns = now;
				/* Steps above may have made progress after now was taken. */
				if (now > k->last_ns &&
				    now - k->last_ns > opt.stall_s * 1000000000ull) {
					fail(k, "stalled");
					close_end(&k->c);
					close_end(&k->s);
				}
				finish(k, &live);
			}
		}
		if (now > deadline) {
			fprintf(stderr, "vsm-soak: timeout after %u s\n", opt.timeout_s);
			break;
		}
		if (opt.no_client ? n_finished == opt.count
				  : (next == opt.count || termed) && !live)
			break;
	}

	for (i = 0; i < opt.count; i++) {
		struct conn *k = &conns[i];
		uint64_t t = end_delay_ms(k);

		if ((opt.only >= 0 && i != opt.only) || (termed && !k->started)) {
			n_ok++; /* not run */
			not_run += termed && !k->started;
			continue;
		}
		if (!k->finished)
			fail(k, "never finished");
		counts[k->mode][k->ok]++;
		n_ok += k->ok;
		up += k->s.recvd;
		down += k->c.recvd;
		if (k->hit) {
			/* counted by finish_hit() in hit_lost */
		} else if (k->mode != CLIENT_KILL && k->mode != SERVER_RESET &&
			   k->mode != CLIENT_RESET) {
			if (!opt.no_server && k->s.recvd < k->up_len)
				lost += k->up_len - k->s.recvd;
			if (k->mode != CLIENT_SHUT_RD && !opt.no_client)
				lost += k->down_len -
					(k->c.recvd < k->down_len ? k->c.recvd : k->down_len);
		} else if (k->mode == CLIENT_KILL && !opt.no_server && k->s.recvd < k->cut) {
			lost += k->cut - k->s.recvd;
		}
		if (k->c.mismatch != UINT64_MAX || k->s.mismatch != UINT64_MAX)
			mismatched++;
		/* vsock's packet ceiling (Linux 6.12.92+): the receiver's read fails with ENOBUFS. */
		if (k->c.read_errno == ENOBUFS || k->s.read_errno == ENOBUFS)
			enobufs++;
		small += k->small_up || k->small_down;
		if (k->mode == CLIENT_KILL && t > kill_ms)
			kill_ms = t;
		if ((k->mode == SERVER_RESET || k->mode == CLIENT_RESET) && t > reset_ms)
			reset_ms = t;
		if (!k->ok)
			printf("conn %u %s up=%" PRIu64 "/%" PRIu64 " down=%" PRIu64 "/%" PRIu64
			       " cut=%" PRIu64 " mismatch=%" PRId64 "/%" PRId64
			       " server_eof_gap_ms=%" PRId64
			       " sndbuf=%d%s%s%s%s%s%s%s%s%s: %s (replay: --seed %" PRIu64 " --count %u "
			       "--max-size %" PRIu64 "%s%s%s%s --only %u)\n",
			       i, mode_names[k->mode], k->s.recvd, k->up_len, k->c.recvd,
			       k->down_len, k->cut, (int64_t)k->s.mismatch, (int64_t)k->c.mismatch,
			       server_eof_gap_ms(k), k->sndbuf, k->pausy ? " pausing" : "",
			       k->slow ? " slow-server" : "",
			       k->stalls ? " stalling-server" : "",
			       k->hit ? (k->mode == DAEMON_CLOSE ? " closed" : " stopped") : "",
			       k->small_up ? " small-up" : "", k->small_down ? " small-down" : "",
			       k->slow_client ? " slow-client" : "",
			       k->c.read_errno ? " client-read-error" : "",
			       k->s.read_errno ? " server-read-error" : "", k->why, opt.seed, opt.count,
			       opt.max_size, small_share_text,
			       opt.modes_text ? " --modes " : "", opt.modes_text ? opt.modes_text : "",
			       opt.no_client	 ? " --role server"
			       : opt.no_server ? " --role client"
					       : "",
			       i);
	}
	lost += hit_lost;
	for (i = 0; i < N_MODES; i++)
		printf("mode %s ok=%u failed=%u\n", mode_names[i], counts[i][1], counts[i][0]);
	printf("soak conns=%u ok=%u failed=%u lost=%" PRIu64 " mismatched=%u up=%" PRIu64
	       " down=%" PRIu64 " max_live=%u kill_end_ms_max=%" PRIu64 " reset_end_ms_max=%" PRIu64
	       " hups=%u swaps=%u cmds=%u closes=%u stopped=%u not_run=%u close_window=%" PRIu64
	       " small=%u enobufs=%u secs=%.1f\n",
	       opt.count, n_ok, opt.count - n_ok, lost, mismatched, up, down, max_live, kill_ms,
	       reset_ms, hups, swaps, cmds, closes, stopped, not_run, close_window, small, enobufs,
	       (double)(now_ns() - t0) / 1e9);
	while (cmd_pid && waitpid(cmd_pid, NULL, 0) < 0 && errno == EINTR)
		;
	return n_ok == opt.count && !cmds_failed ? 0 : 1;
}
