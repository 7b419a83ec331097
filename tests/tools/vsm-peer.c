/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * vsm-peer: the client and the server of the vsockmap end-to-end tests.
 *
 * Both ends send a deterministic pseudo-random byte stream derived from a seed and
 * check every byte they receive, so a redirect that loses, duplicates or reorders
 * data is caught at the exact offset. One thread, one poll loop, libc only: the
 * binary is copied into the busybox initramfs of the test VM.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/vm_sockets.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "stream.h"
#include "tool_common.h"

#define EXIT_VERIFY 1 /* data mismatch, short stream, reset, timeout */
#define EXIT_SYSTEM 2 /* usage error or a failed setup call */

#define UNSET	      UINT64_MAX
#define RETRY_NS      (20 * NSEC_PER_MSEC)
#define MAX_IO_SIZE   (64U << 20)
#define FNV_OFFSET    0xcbf29ce484222325ULL
#define FNV_PRIME     0x100000001b3ULL
/*
 * unix_dgram_sendmsg() refuses a datagram longer than sk_sndbuf - 32 with EMSGSIZE and
 * charges the whole skb to the sender, so 64 KiB records need more than the defaults
 * of small systems. The kernel doubles the value and caps it at wmem_max/rmem_max
 * unless SO_*BUFFORCE (CAP_NET_ADMIN) is allowed.
 */
#define DGRAM_BUFFER_SIZE (4 << 20)

enum server_mode { MODE_SINK, MODE_ECHO, MODE_SOURCE };
enum after_send { AFTER_CLOSE, AFTER_SHUTDOWN, AFTER_ECHO };
enum conn_end { END_NONE, END_CLEAN, END_RESET, END_ERROR };

struct options {
	bool is_server;
	struct tool_addr addr;
	uint64_t seed;
	uint64_t timeout_s;
	uint64_t read_size, write_size, msg_size;
	uint64_t expect_len; /* server: per connection; client: read-only mode */
	/* server */
	enum server_mode mode;
	uint64_t source_len, reply_len, reply_first, slow_us, linger_ms, count, seeds;
	const char *ready_file;
	/* client */
	uint64_t send_len, expect_reply, parallel, dgram_count, kill_after, connect_timeout_s;
	uint64_t window; /* --after echo: most bytes sent and not yet read back, 0 for no limit */
	uint64_t sndbuf; /* client stream sockets: SO_SNDBUF(FORCE), 0 for the default */
	uint64_t mark_after; /* --mark-file is created once a connection has sent this much */
	const char *mark_file;
	const char *pause_file; /* once marked, no more sending while this file exists */
	enum after_send after;
	bool dgram_connect;
};

static struct options opt;
static volatile sig_atomic_t stop_signal;

struct conn {
	int fd;
	unsigned int id;
	bool msg_mode;	 /* seqpacket or dgram: one recv is one record */
	bool dgram;	 /* bound unix-dgram socket: no EOF, ends by --count */
	bool echo;	 /* server --echo: received bytes are sent back */
	bool receiving;	 /* reading until EOF */
	bool verify;	 /* received bytes must match the rx stream */
	bool seed_known; /* rx stream identified (server: from the first 8 bytes) */
	bool shut_wr;
	bool boundaries_broken;
	bool send_failed; /* a server's reply was refused; it reads on to the end */
	bool done;
	uint64_t seed; /* seed of the stream the client side sends */
	struct stream rx, tx;
	uint64_t rx_bytes, rx_msgs, rx_expect, mismatch_at;
	uint64_t tx_bytes, tx_msgs, tx_len;
	uint64_t fnv_rx, fnv_tx;
	uint8_t head[8];
	unsigned int head_len;
	enum conn_end end;
	int err;
	const char *write_after_eof;
	uint64_t start_ns, slow_until, linger_until;
	size_t rx_size, tx_chunk, tx_off, tx_fill;
	uint8_t *rxbuf, *txbuf;
};

struct peer {
	int listen_fd; /* server stream listener, -1 otherwise */
	struct conn **conns;
	size_t nconns, cap;
	unsigned int accepted, finished, errors;
	uint64_t rx_bytes, tx_bytes, msgs, payload;
	uint64_t deadline_ns, first_start_ns, last_end_ns;
	bool timed_out;
};

static uint64_t fnv1a(uint64_t hash, const uint8_t *data, size_t len)
{
	while (len--) {
		hash ^= *data++;
		hash *= FNV_PRIME;
	}
	return hash;
}

static const char *errno_name(int err)
{
	switch (err) {
	case EPIPE:
		return "epipe";
	case ECONNRESET:
		return "econnreset";
	case ENOTCONN:
		return "enotconn";
	case EAGAIN:
		return "eagain";
	case ETIMEDOUT:
		return "timeout";
	case EINTR:
		return "interrupted";
	default:
		return "error";
	}
}

static const char usage_text[] =
    "Usage: vsm-peer server ADDR [--sink | --echo | --source N] [OPTIONS]\n"
    "       vsm-peer client ADDR [OPTIONS]\n"
    "\n"
    "Test peer for vsockmap: sends a pseudo-random byte stream derived from a\n"
    "seed and verifies every byte it receives (reports the first mismatching\n"
    "offset and an FNV-1a of all bytes).\n"
    "\n"
    "Addresses:\n"
    "  unix:PATH  unix:@ABSTRACT  unix-seqpacket:PATH  unix-dgram:PATH\n"
    "  tcp:IPV4:PORT  vsock:CID:PORT  vsock-seqpacket:CID:PORT\n"
    "  hybrid:PATH:PORT (client only: a guest's vsock PORT through a hybrid-vsock\n"
    "  backend's unix socket PATH, \"CONNECT PORT\" then \"OK ...\")\n"
    "  (CID: a number or any; a server listens on VMADDR_CID_ANY regardless)\n"
    "\n"
    "Common options:\n"
    "  --seed S               stream seed (default 1)\n"
    "  --timeout SEC          overall deadline, 0 for none (default 60)\n"
    "  --read-size N          bytes per read (default 65536)\n"
    "  --write-size N         bytes per write (default 65536)\n"
    "  --msg-size N           record size on dgram/seqpacket addresses (4096)\n"
    "  --expect N             server: each connection must carry exactly N bytes;\n"
    "                         client (with --send 0): read to EOF, exactly N\n"
    "                         bytes of stream SEED, then probe one write\n"
    "  --slow USEC            sleep USEC between reads (a slow reader)\n"
    "  -h, --help             show this text\n"
    "\n"
    "Server options:\n"
    "  --sink                 read to EOF and verify (default)\n"
    "  --echo                 send back what is read; at EOF shutdown, close\n"
    "  --source N             send N bytes of stream SEED at accept, then close\n"
    "  --reply N              with --sink: after EOF send N bytes of the\n"
    "                         client's stream seed+1, then close\n"
    "  --seeds N              accept client streams SEED, SEED+2, ...,\n"
    "                         SEED+2*(N-1), told apart by their first 8 bytes\n"
    "  --reply-first N        with --sink: send N bytes of stream seed+1 at accept, shut\n"
    "                         down writing, then go on reading to EOF\n"
    "  --linger-ms MS         with --source: wait MS after the data, then close\n"
    "  --count K              exit after K connections (unix-dgram: K records)\n"
    "  --ready-file PATH      created once listening; holds the address\n"
    "\n"
    "Client options:\n"
    "  --send N               send N bytes of stream SEED\n"
    "  --after close|shutdown|echo\n"
    "                         then: close (default); shutdown(SHUT_WR) and read\n"
    "                         to EOF; or read back all N bytes while sending\n"
    "  --window N             with --after echo: never more than N bytes sent and\n"
    "                         not yet read back (as a request-reply client)\n"
    "  --expect-reply N       with --after shutdown: the reply must be exactly\n"
    "                         N bytes of stream SEED+1\n"
    "  --parallel P           P concurrent connections; connection i (from 1)\n"
    "                         uses SEED+2*(i-1) in place of SEED\n"
    "  --dgram-count K        send K records of --msg-size (dgram, seqpacket)\n"
    "  --connect              unix-dgram: connect() and send(), not sendto()\n"
    "  --kill-after BYTES     raise SIGKILL once BYTES have been sent\n"
    "  --connect-timeout SEC  retry refused connects for SEC (default 0)\n"
    "  --sndbuf N             SO_SNDBUFFORCE (root) or SO_SNDBUF on the socket, so that\n"
    "                         N bytes can queue in the peer before anyone reads\n"
    "  --mark-after BYTES     with --mark-file: create PATH once a connection has\n"
    "  --mark-file PATH       sent BYTES (a point of the stream a script can wait for)\n"
    "  --pause-file PATH      with --mark-file: once it is made, send nothing more\n"
    "                         while PATH exists (a script holds the stream there)\n"
    "\n"
    "Sizes take K, M, G suffixes (KiB, MiB, GiB). Exit status: 0 all verified,\n"
    "1 verification failure, reset or timeout, 2 usage or system error.\n";

enum option_id {
	/* common */
	OPT_SEED = 0x100,
	OPT_TIMEOUT,
	OPT_READ_SIZE,
	OPT_WRITE_SIZE,
	OPT_MSG_SIZE,
	OPT_EXPECT,
	OPT_SLOW,
	/* server only */
	OPT_SINK = 0x200,
	OPT_ECHO,
	OPT_SOURCE,
	OPT_REPLY,
	OPT_REPLY_FIRST,
	OPT_SEEDS,
	OPT_LINGER_MS,
	OPT_COUNT,
	OPT_READY_FILE,
	/* client only */
	OPT_SEND = 0x300,
	OPT_AFTER,
	OPT_EXPECT_REPLY,
	OPT_PARALLEL,
	OPT_DGRAM_COUNT,
	OPT_CONNECT,
	OPT_KILL_AFTER,
	OPT_CONNECT_TIMEOUT,
	OPT_SNDBUF,
	OPT_MARK_AFTER,
	OPT_MARK_FILE,
	OPT_PAUSE_FILE,
	OPT_WINDOW,
};

static const struct option long_options[] = {
    {"seed", required_argument, NULL, OPT_SEED},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"read-size", required_argument, NULL, OPT_READ_SIZE},
    {"write-size", required_argument, NULL, OPT_WRITE_SIZE},
    {"msg-size", required_argument, NULL, OPT_MSG_SIZE},
    {"expect", required_argument, NULL, OPT_EXPECT},
    {"sink", no_argument, NULL, OPT_SINK},
    {"echo", no_argument, NULL, OPT_ECHO},
    {"source", required_argument, NULL, OPT_SOURCE},
    {"reply", required_argument, NULL, OPT_REPLY},
    {"reply-first", required_argument, NULL, OPT_REPLY_FIRST},
    {"seeds", required_argument, NULL, OPT_SEEDS},
    {"slow", required_argument, NULL, OPT_SLOW},
    {"linger-ms", required_argument, NULL, OPT_LINGER_MS},
    {"count", required_argument, NULL, OPT_COUNT},
    {"ready-file", required_argument, NULL, OPT_READY_FILE},
    {"send", required_argument, NULL, OPT_SEND},
    {"after", required_argument, NULL, OPT_AFTER},
    {"expect-reply", required_argument, NULL, OPT_EXPECT_REPLY},
    {"parallel", required_argument, NULL, OPT_PARALLEL},
    {"dgram-count", required_argument, NULL, OPT_DGRAM_COUNT},
    {"connect", no_argument, NULL, OPT_CONNECT},
    {"kill-after", required_argument, NULL, OPT_KILL_AFTER},
    {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
    {"sndbuf", required_argument, NULL, OPT_SNDBUF},
    {"mark-after", required_argument, NULL, OPT_MARK_AFTER},
    {"mark-file", required_argument, NULL, OPT_MARK_FILE},
    {"pause-file", required_argument, NULL, OPT_PAUSE_FILE},
    {"window", required_argument, NULL, OPT_WINDOW},
    {"help", no_argument, NULL, 'h'},
    {}};

static int usage_error(const char *what, const char *detail)
{
	fprintf(stderr, "vsm-peer: %s%s\n", what, detail);
	return -EINVAL;
}

/* Where each numeric option is stored, and its largest value. */
static const struct number_option {
	int id;
	uint64_t *value;
	uint64_t max;
} number_options[] = {
    {OPT_SEED, &opt.seed, UNSET},
    {OPT_TIMEOUT, &opt.timeout_s, UINT32_MAX},
    {OPT_READ_SIZE, &opt.read_size, MAX_IO_SIZE},
    {OPT_WRITE_SIZE, &opt.write_size, MAX_IO_SIZE},
    {OPT_MSG_SIZE, &opt.msg_size, MAX_IO_SIZE},
    {OPT_EXPECT, &opt.expect_len, UNSET - 1},
    {OPT_SOURCE, &opt.source_len, UNSET},
    {OPT_REPLY, &opt.reply_len, UNSET},
    {OPT_REPLY_FIRST, &opt.reply_first, UNSET},
    {OPT_SEEDS, &opt.seeds, 1 << 20},
    {OPT_SLOW, &opt.slow_us, UINT32_MAX},
    {OPT_LINGER_MS, &opt.linger_ms, UINT32_MAX},
    {OPT_COUNT, &opt.count, UINT32_MAX},
    {OPT_SEND, &opt.send_len, UNSET},
    {OPT_EXPECT_REPLY, &opt.expect_reply, UNSET - 1},
    {OPT_PARALLEL, &opt.parallel, 4096},
    {OPT_DGRAM_COUNT, &opt.dgram_count, UINT32_MAX},
    {OPT_KILL_AFTER, &opt.kill_after, UNSET - 1},
    {OPT_CONNECT_TIMEOUT, &opt.connect_timeout_s, UINT32_MAX},
    {OPT_SNDBUF, &opt.sndbuf, INT32_MAX / 2},
    {OPT_MARK_AFTER, &opt.mark_after, UNSET - 1},
    {OPT_WINDOW, &opt.window, UNSET - 1},
};

static const struct number_option *find_number_option(int id)
{
	size_t i;

	for (i = 0; i < sizeof(number_options) / sizeof(number_options[0]); i++)
		if (number_options[i].id == id)
			return &number_options[i];
	return NULL;
}

static int check_options(int modes)
{
	bool msg_addr = opt.addr.type != SOCK_STREAM;
	bool dgram = opt.addr.type == SOCK_DGRAM;

	if (!opt.read_size || !opt.write_size || !opt.msg_size || !opt.seeds || !opt.parallel)
		return usage_error("sizes, --seeds and --parallel must be at least 1", "");
	if (opt.is_server) {
		if (modes > 1)
			return usage_error("choose one of --sink, --echo and --source", "");
		if ((opt.reply_len || opt.reply_first) && opt.mode != MODE_SINK)
			return usage_error("--reply and --reply-first need --sink", "");
		if (opt.reply_len && opt.reply_first)
			return usage_error("choose one of --reply and --reply-first", "");
		if (dgram && opt.mode != MODE_SINK)
			return usage_error("a unix-dgram server can only --sink", "");
		return 0;
	}
	if (opt.mark_after && !opt.mark_file)
		return usage_error("--mark-after needs --mark-file", "");
	if (opt.pause_file && !opt.mark_file)
		return usage_error("--pause-file needs --mark-file", "");
	if (opt.expect_len != UNSET && (opt.send_len || opt.dgram_count))
		return usage_error("--expect only reads: use it with --send 0", "");
	if (opt.expect_reply != UNSET && opt.after != AFTER_SHUTDOWN)
		return usage_error("--expect-reply needs --after shutdown", "");
	if (opt.window && opt.after != AFTER_ECHO)
		return usage_error("--window needs --after echo", "");
	if (msg_addr && opt.send_len)
		return usage_error("use --dgram-count and --msg-size with ", opt.addr.text);
	if (!msg_addr && opt.dgram_count)
		return usage_error("--dgram-count needs a dgram or seqpacket address, not ",
				   opt.addr.text);
	if (dgram && (opt.parallel > 1 || opt.after != AFTER_CLOSE || opt.expect_len != UNSET))
		return usage_error(
		    "a unix-dgram client only sends: no --parallel, --after, --expect", "");
	return 0;
}

/* Returns 0 to run, 1 when --help was shown, -EINVAL on a usage error. */
static int parse_options(int argc, char **argv)
{
	const struct number_option *number;
	int id, longindex, modes = 0;

	opt.seed = 1;
	opt.timeout_s = 60;
	opt.read_size = opt.write_size = 65536;
	opt.msg_size = 4096;
	opt.expect_len = opt.expect_reply = opt.kill_after = UNSET;
	opt.seeds = opt.parallel = 1;
	if (argc < 2)
		return usage_error("missing command (server or client)", "");
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage_text, stdout);
		return 1;
	}
	if (strcmp(argv[1], "server") && strcmp(argv[1], "client"))
		return usage_error("unknown command: ", argv[1]);
	opt.is_server = !strcmp(argv[1], "server");
	/* getopt names argv[0] in its messages: make that the program, not the command. */
	argv[1] = "vsm-peer";
	argc--;
	argv++;
	while ((id = getopt_long(argc, argv, "h", long_options, &longindex)) != -1) {
		if (id == 'h') {
			fputs(usage_text, stdout);
			return 1;
		}
		if (id == '?')
			return usage_error("", "see --help");
		/* Server options are 0x2xx and client options 0x3xx. */
		if ((id & 0x300) == (opt.is_server ? 0x300 : 0x200))
			return usage_error(opt.is_server ? "not a server option: --"
							 : "not a client option: --",
					   long_options[longindex].name);
		if (id == OPT_SINK || id == OPT_ECHO || id == OPT_SOURCE) {
			opt.mode = id == OPT_SINK   ? MODE_SINK
				   : id == OPT_ECHO ? MODE_ECHO
						    : MODE_SOURCE;
			modes++;
		}
		number = find_number_option(id);
		if (number && parse_number(optarg, number->max, number->value))
			return usage_error("invalid number: ", optarg);
		if (id == OPT_READY_FILE)
			opt.ready_file = optarg;
		if (id == OPT_MARK_FILE)
			opt.mark_file = optarg;
		if (id == OPT_PAUSE_FILE)
			opt.pause_file = optarg;
		if (id == OPT_CONNECT)
			opt.dgram_connect = true;
		if (id != OPT_AFTER)
			continue;
		if (!strcmp(optarg, "close"))
			opt.after = AFTER_CLOSE;
		else if (!strcmp(optarg, "shutdown"))
			opt.after = AFTER_SHUTDOWN;
		else if (!strcmp(optarg, "echo"))
			opt.after = AFTER_ECHO;
		else
			return usage_error("--after takes close, shutdown or echo, not ", optarg);
	}
	if (optind == argc)
		return usage_error("missing ADDR", "");
	if (optind + 1 != argc)
		return usage_error("extra argument: ", argv[optind + 1]);
	if (parse_addr(argv[optind], &opt.addr) || (opt.addr.hybrid && opt.is_server))
		return usage_error("invalid address: ", argv[optind]);
	return check_options(modes);
}

static struct conn *conn_new(int fd, unsigned int id, uint64_t now)
{
	struct conn *c = calloc(1, sizeof(*c));
	size_t buf_size;

	if (!c)
		return NULL;
	c->fd = fd;
	c->id = id;
	c->msg_mode = opt.addr.type != SOCK_STREAM;
	/* A record read with room to spare shows merged records whole. */
	c->rx_size = c->msg_mode ? 2 * opt.msg_size : opt.read_size;
	c->tx_chunk = c->msg_mode ? opt.msg_size : opt.write_size;
	buf_size = c->rx_size > c->tx_chunk ? c->rx_size : c->tx_chunk;
	c->rxbuf = malloc(buf_size);
	c->txbuf = malloc(buf_size);
	if (!c->rxbuf || !c->txbuf) {
		free(c->rxbuf);
		free(c->txbuf);
		free(c);
		return NULL;
	}
	c->rx_expect = c->mismatch_at = UNSET;
	c->fnv_rx = c->fnv_tx = FNV_OFFSET;
	c->start_ns = now;
	return c;
}

static void conn_free(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->rxbuf);
	free(c->txbuf);
	free(c);
}

static bool conn_has_output(const struct conn *c)
{
	return c->tx_off < c->tx_fill || c->tx.offset < c->tx_len;
}

/* --window: how many more bytes may be sent before some come back. */
static uint64_t window_room(const struct conn *c)
{
	uint64_t ahead = c->tx_bytes - c->rx_bytes;

	if (!opt.window || opt.is_server)
		return UINT64_MAX;
	return ahead < opt.window ? opt.window - ahead : 0;
}

static void conn_fail(struct conn *c, const char *call, int err)
{
	fprintf(stderr, "vsm-peer: conn %u: %s %s: %s\n", c->id, call, opt.addr.text,
		strerror(err));
	c->err = err;
	c->end = err == ECONNRESET || err == EPIPE ? END_RESET : END_ERROR;
	c->receiving = false;
	c->tx_len = c->tx.offset;
	c->tx_off = c->tx_fill;
	c->done = true;
}

static void verify_bytes(struct conn *c, const uint8_t *data, size_t len)
{
	static uint8_t expected[65536];

	while (len && c->mismatch_at == UNSET) {
		size_t n = min_u64(len, sizeof(expected)), i;
		uint64_t offset = c->rx.offset;

		stream_fill(&c->rx, expected, n);
		if (memcmp(expected, data, n)) {
			for (i = 0; expected[i] == data[i]; i++)
				;
			c->mismatch_at = offset + i;
		}
		data += n;
		len -= n;
	}
}

/*
 * A server does not know which client it talks to: it takes the first candidate
 * seed whose stream starts with the bytes seen, and falls back to --seed so that
 * a stranger is reported at the offset where it differs from that stream.
 */
static void conn_identify_seed(struct conn *c)
{
	uint8_t probe[sizeof(c->head)];
	uint64_t i;

	for (i = 0; i < opt.seeds; i++) {
		stream_init(&c->rx, opt.seed + 2 * i);
		stream_fill(&c->rx, probe, c->head_len);
		if (!memcmp(probe, c->head, c->head_len))
			break;
	}
	c->seed = opt.seed + 2 * (i < opt.seeds ? i : 0);
	stream_init(&c->rx, c->seed);
	c->seed_known = true;
	verify_bytes(c, c->head, c->head_len);
}

static void conn_consume(struct conn *c, const uint8_t *data, size_t len)
{
	size_t take;

	c->rx_bytes += len;
	c->fnv_rx = fnv1a(c->fnv_rx, data, len);
	if (!c->verify)
		return;
	if (!c->seed_known) {
		take = min_u64(sizeof(c->head) - c->head_len, len);
		memcpy(c->head + c->head_len, data, take);
		c->head_len += take;
		if (c->head_len < sizeof(c->head))
			return;
		conn_identify_seed(c);
		data += take;
		len -= take;
	}
	verify_bytes(c, data, len);
}

static void conn_recv(struct conn *c, uint64_t now)
{
	uint8_t *buf = c->echo ? c->txbuf : c->rxbuf;
	ssize_t n;

	/* MSG_TRUNC returns the real length of a record larger than the buffer. */
	n = recv(c->fd, buf, c->rx_size, c->msg_mode ? MSG_TRUNC : 0);
	if (n < 0) {
		if (errno != EINTR && errno != EAGAIN)
			conn_fail(c, "recv", errno);
		return;
	}
	if (n == 0 && !c->dgram) {
		c->receiving = false;
		c->end = c->send_failed ? END_RESET : END_CLEAN;
		return;
	}
	if (c->msg_mode) {
		if (c->dgram && !c->rx_msgs)
			c->start_ns = now;
		c->rx_msgs++;
		if ((uint64_t)n != opt.msg_size)
			c->boundaries_broken = true;
		n = min_u64(n, c->rx_size);
	}
	conn_consume(c, buf, n);
	if (c->echo) {
		c->tx_off = 0;
		c->tx_fill = n;
	}
	if (opt.slow_us)
		c->slow_until = now + opt.slow_us * 1000;
}

static void kill_self(const struct conn *c)
{
	fprintf(stderr, "vsm-peer: conn %u: sent %" PRIu64 " bytes, raising SIGKILL\n", c->id,
		c->tx_bytes);
	fflush(stdout);
	raise(SIGKILL);
}

static bool mark_written;

/* --mark-file, once: a failure is reported and the stream goes on. */
static void write_mark_file(void)
{
	int fd;

	if (mark_written)
		return;
	mark_written = true;
	fd = open(opt.mark_file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		fprintf(stderr, "vsm-peer: --mark-file %s: %s\n", opt.mark_file, strerror(errno));
	else
		close(fd);
}

/*
 * A sink server whose reply is refused (EPIPE, ECONNRESET) has been told that its bytes went
 * nowhere; what the client sent before may still wait in its receive queue, and a careful
 * server reads that to the end. Anything else ends the connection.
 */
static void conn_send_failed(struct conn *c, int err)
{
	if (!opt.is_server || c->echo || !c->receiving || (err != EPIPE && err != ECONNRESET)) {
		conn_fail(c, "send", err);
		return;
	}
	fprintf(stderr, "vsm-peer: conn %u: send %s: %s; reading on\n", c->id, opt.addr.text,
		strerror(err));
	c->err = err;
	c->send_failed = true;
	c->tx_len = c->tx.offset;
	c->tx_off = c->tx_fill;
}

static void conn_send(struct conn *c)
{
	size_t len;
	ssize_t n;

	if (c->tx_bytes == opt.kill_after)
		kill_self(c);
	if (c->tx_off == c->tx_fill) {
		len = min_u64(c->tx_chunk, c->tx_len - c->tx.offset);
		stream_fill(&c->tx, c->txbuf, len);
		c->tx_off = 0;
		c->tx_fill = len;
	}
	len = min_u64(c->tx_fill - c->tx_off, opt.kill_after - c->tx_bytes);
	len = min_u64(len, window_room(c));
	n = send(c->fd, c->txbuf + c->tx_off, len, MSG_NOSIGNAL);
	if (n < 0) {
		if (errno != EINTR && errno != EAGAIN)
			conn_send_failed(c, errno);
		return;
	}
	c->fnv_tx = fnv1a(c->fnv_tx, c->txbuf + c->tx_off, n);
	c->tx_off += n;
	c->tx_bytes += n;
	c->tx_msgs++;
	if (c->tx_bytes == opt.kill_after)
		kill_self(c);
	if (opt.mark_file && c->tx_bytes >= opt.mark_after)
		write_mark_file();
}

/* --pause-file: held once the mark is made, for as long as the file exists. */
static bool send_paused(void)
{
	return opt.pause_file && mark_written && access(opt.pause_file, F_OK) == 0;
}

static short conn_poll_events(const struct conn *c, uint64_t now)
{
	short events = 0;

	if (c->done)
		return 0;
	if (conn_has_output(c) && !send_paused() && window_room(c))
		events |= POLLOUT;
	/* An echo server reads into its output buffer: only once that is drained. */
	if (c->receiving && !(c->echo && conn_has_output(c)) && c->slow_until <= now)
		events |= POLLIN;
	return events;
}

static void server_conn_init(struct conn *c)
{
	c->receiving = c->verify = opt.mode != MODE_SOURCE;
	c->echo = opt.mode == MODE_ECHO;
	c->rx_expect = opt.expect_len;
	c->seed = opt.seed;
	if (opt.mode == MODE_SINK && opt.reply_first) {
		stream_init(&c->tx, c->seed + 1);
		c->tx_len = opt.reply_first;
	}
	if (opt.mode == MODE_SOURCE) {
		stream_init(&c->tx, opt.seed);
		c->tx_len = opt.source_len;
	}
}

/* Called once per loop turn: moves a server connection on when its I/O is over. */
static void server_conn_step(struct conn *c, uint64_t now)
{
	if (c->dgram) {
		c->done = opt.count && c->rx_msgs >= opt.count;
		return;
	}
	/* --reply-first: the server half-closes first and goes on reading. */
	if (opt.reply_first && !c->shut_wr && !conn_has_output(c)) {
		shutdown(c->fd, SHUT_WR);
		c->shut_wr = true;
	}
	if (c->done || c->receiving || conn_has_output(c))
		return;
	if (!c->seed_known && c->verify)
		conn_identify_seed(c);
	if (opt.mode == MODE_SINK && opt.reply_len && !c->tx_len) {
		stream_init(&c->tx, c->seed + 1);
		c->tx_len = opt.reply_len;
		return;
	}
	if (opt.mode == MODE_SOURCE && opt.linger_ms) {
		if (!c->linger_until)
			c->linger_until = now + opt.linger_ms * NSEC_PER_MSEC;
		if (now < c->linger_until)
			return;
	}
	if (opt.mode == MODE_ECHO)
		shutdown(c->fd, SHUT_WR);
	c->done = true;
}

static void client_conn_init(struct conn *c, unsigned int index)
{
	c->seed = opt.seed + 2ULL * index;
	c->seed_known = true;
	stream_init(&c->tx, c->seed);
	c->tx_len = c->msg_mode ? opt.dgram_count * opt.msg_size : opt.send_len;
	if (opt.expect_len != UNSET) {
		c->receiving = c->verify = true;
		stream_init(&c->rx, opt.seed);
		c->rx_expect = opt.expect_len;
	} else if (opt.after == AFTER_SHUTDOWN) {
		/* Read while sending too: a server may answer before it sees EOF. */
		c->receiving = true;
		c->verify = opt.expect_reply != UNSET;
		stream_init(&c->rx, c->seed + 1);
		c->rx_expect = opt.expect_reply;
	} else if (opt.after == AFTER_ECHO) {
		c->receiving = c->verify = true;
		stream_init(&c->rx, c->seed);
		c->rx_expect = c->tx_len;
	}
}

/* Sends one byte into a connection whose peer has closed: what does the kernel say? */
static const char *probe_write_after_eof(int fd)
{
	uint8_t byte = 0;
	ssize_t n;

	do
		n = send(fd, &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	return n >= 0 ? "ok" : errno_name(errno);
}

static void client_conn_step(struct conn *c)
{
	if (c->done || conn_has_output(c))
		return;
	if (opt.expect_len != UNSET) {
		if (c->receiving)
			return;
		if (c->end == END_CLEAN)
			c->write_after_eof = probe_write_after_eof(c->fd);
		c->done = true;
		return;
	}
	switch (opt.after) {
	case AFTER_CLOSE:
		c->done = true;
		break;
	case AFTER_SHUTDOWN:
		if (!c->shut_wr) {
			c->shut_wr = true;
			if (shutdown(c->fd, SHUT_WR)) {
				conn_fail(c, "shutdown", errno);
				return;
			}
		}
		c->done = !c->receiving;
		break;
	case AFTER_ECHO:
		c->done = !c->receiving || c->rx_bytes >= c->tx_len;
		break;
	}
}

static const char *conn_verdict(const struct conn *c, char *buf, size_t size)
{
	uint64_t bad = c->mismatch_at;

	/* Bytes past an expected length are wrong from that length on. */
	if (c->rx_expect != UNSET && c->rx_bytes > c->rx_expect)
		bad = min_u64(bad, c->rx_expect);
	if (bad != UNSET) {
		snprintf(buf, size, "mismatch@%" PRIu64, bad);
		return buf;
	}
	if (c->rx_expect != UNSET && c->rx_bytes < c->rx_expect)
		return "short";
	return "ok";
}

static void server_conn_report(const struct conn *c, const char *verdict, uint64_t ms)
{
	static const char *const end_names[] = {"none", "clean", "reset", "error"};

	printf("server conn=%u bytes=%" PRIu64 " fnv=%016" PRIx64 " verify=%s eof=%s ms=%" PRIu64,
	       c->id, c->rx_bytes, c->fnv_rx, verdict, end_names[c->end], ms);
	if (c->msg_mode)
		printf(" msgs=%" PRIu64 " boundaries=%s", c->rx_msgs,
		       c->boundaries_broken ? "broken" : "ok");
	if (opt.mode != MODE_SINK || opt.reply_len || opt.reply_first)
		printf(" sent=%" PRIu64 " fnv_sent=%016" PRIx64, c->tx_bytes, c->fnv_tx);
	if (opt.seeds > 1)
		printf(" seed=%" PRIu64, c->seed);
	if (c->err)
		printf(" err=%s", errno_name(c->err));
	putchar('\n');
}

static double mbps(uint64_t bytes, uint64_t ns)
{
	return ns ? bytes * 1e3 / ns : 0;
}

static void client_conn_report(const struct conn *c, const char *verdict, uint64_t ns)
{
	printf("client conn=%u sent=%" PRIu64 " recv=%" PRIu64 " fnv_sent=%016" PRIx64
	       " fnv_recv=%016" PRIx64 " verify=%s ms=%" PRIu64 " MBps=%.1f",
	       c->id, c->tx_bytes, c->rx_bytes, c->fnv_tx, c->fnv_rx, verdict, ns / NSEC_PER_MSEC,
	       mbps(c->tx_bytes > c->rx_bytes ? c->tx_bytes : c->rx_bytes, ns));
	if (c->msg_mode)
		printf(" msgs=%" PRIu64, c->tx_msgs);
	if (c->msg_mode && c->rx_msgs)
		printf(" recv_msgs=%" PRIu64 " boundaries=%s", c->rx_msgs,
		       c->boundaries_broken ? "broken" : "ok");
	if (c->write_after_eof)
		printf(" write_after_eof=%s", c->write_after_eof);
	if (opt.parallel > 1)
		printf(" seed=%" PRIu64, c->seed);
	if (c->err)
		printf(" err=%s", errno_name(c->err));
	putchar('\n');
}

/* Reports a finished (or abandoned) connection, adds it to the totals and frees it. */
static void peer_finish_conn(struct peer *p, struct conn *c, uint64_t now)
{
	char buf[40];
	const char *verdict;

	if (!c->seed_known && c->verify)
		conn_identify_seed(c);
	verdict = conn_verdict(c, buf, sizeof(buf));
	if (opt.is_server)
		server_conn_report(c, verdict, (now - c->start_ns) / NSEC_PER_MSEC);
	else
		client_conn_report(c, verdict, now - c->start_ns);
	p->finished++;
	if (strcmp(verdict, "ok") || c->err || c->boundaries_broken)
		p->errors++;
	p->rx_bytes += c->rx_bytes;
	p->tx_bytes += c->tx_bytes;
	p->msgs += opt.is_server ? c->rx_msgs : c->tx_msgs;
	p->payload += c->tx_bytes > c->rx_bytes ? c->tx_bytes : c->rx_bytes;
	if (!p->first_start_ns || c->start_ns < p->first_start_ns)
		p->first_start_ns = c->start_ns;
	p->last_end_ns = now;
	conn_free(c);
}

static int peer_add(struct peer *p, struct conn *c)
{
	if (p->nconns == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 16;
		struct conn **conns = realloc(p->conns, cap * sizeof(*conns));

		if (!conns)
			return -ENOMEM;
		p->conns = conns;
		p->cap = cap;
	}
	p->conns[p->nconns++] = c;
	return 0;
}

/* Steps every connection and reaps the finished ones. */
static void peer_step(struct peer *p, uint64_t now)
{
	size_t i, kept = 0;

	for (i = 0; i < p->nconns; i++) {
		struct conn *c = p->conns[i];

		if (opt.is_server)
			server_conn_step(c, now);
		else
			client_conn_step(c);
		if (c->done)
			peer_finish_conn(p, c, now);
		else
			p->conns[kept++] = c;
	}
	p->nconns = kept;
}

static bool peer_complete(const struct peer *p)
{
	if (p->listen_fd < 0)
		return !p->nconns;
	return opt.count && p->finished >= opt.count;
}

static int server_accept(struct peer *p, uint64_t now)
{
	struct conn *c;
	int fd;

	while (!opt.count || p->accepted < opt.count) {
		fd = accept4(p->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EAGAIN)
				return 0;
			fprintf(stderr, "vsm-peer: accept %s: %s\n", opt.addr.text,
				strerror(errno));
			return -errno;
		}
		c = conn_new(fd, ++p->accepted, now);
		if (!c) {
			close(fd);
			return -ENOMEM;
		}
		server_conn_init(c);
		if (peer_add(p, c)) {
			conn_free(c);
			return -ENOMEM;
		}
	}
	return 0;
}

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

static uint64_t conn_wake_time(const struct conn *c, uint64_t now)
{
	if (c->linger_until > now)
		return c->linger_until;
	if (c->receiving && c->slow_until > now)
		return c->slow_until;
	if (conn_has_output(c) && send_paused())
		return now + 10 * 1000 * 1000; /* look at the file again in 10 ms */
	return UNSET;
}

/* Polls until every connection is done, the deadline passes or a signal stops us. */
static int peer_loop(struct peer *p)
{
	struct sigaction sa = {.sa_handler = on_stop_signal};
	struct pollfd *pfds = NULL;
	sigset_t stop_set, orig_set;
	int ret = 0;

	/* Blocked outside ppoll(), so a signal can never slip in before the wait. */
	sigemptyset(&stop_set);
	sigaddset(&stop_set, SIGINT);
	sigaddset(&stop_set, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop_set, &orig_set);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	for (;;) {
		uint64_t now = now_ns(), wake = p->deadline_ns ? p->deadline_ns : UNSET;
		bool listening = p->listen_fd >= 0 && (!opt.count || p->accepted < opt.count);
		size_t i, base = listening, nconns;
		struct timespec ts;
		struct pollfd *grown;

		peer_step(p, now);
		if (peer_complete(p) || stop_signal)
			break;
		if (now >= wake) {
			p->timed_out = true;
			break;
		}
		nconns = p->nconns;
		grown = realloc(pfds, (nconns + 1) * sizeof(*pfds));
		if (!grown) {
			ret = -ENOMEM;
			break;
		}
		pfds = grown;
		if (listening)
			pfds[0] = (struct pollfd){.fd = p->listen_fd, .events = POLLIN};
		for (i = 0; i < nconns; i++) {
			short events = conn_poll_events(p->conns[i], now);

			pfds[base + i] =
			    (struct pollfd){.fd = events ? p->conns[i]->fd : -1, .events = events};
			wake = min_u64(wake, conn_wake_time(p->conns[i], now));
		}
		ts.tv_sec = (wake - now) / NSEC_PER_SEC;
		ts.tv_nsec = (wake - now) % NSEC_PER_SEC;
		if (ppoll(pfds, base + nconns, wake == UNSET ? NULL : &ts, &orig_set) < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			fprintf(stderr, "vsm-peer: poll: %s\n", strerror(errno));
			break;
		}
		now = now_ns();
		for (i = 0; i < nconns; i++) {
			struct conn *c = p->conns[i];
			short ev = pfds[base + i].events, rev = pfds[base + i].revents;

			if ((ev & POLLIN) && (rev & (POLLIN | POLLHUP | POLLERR)))
				conn_recv(c, now);
			if ((ev & POLLOUT) && (rev & (POLLOUT | POLLHUP | POLLERR)) && !c->done)
				conn_send(c);
		}
		if (listening && (pfds[0].revents & POLLIN)) {
			ret = server_accept(p, now);
			if (ret)
				break;
		}
	}
	free(pfds);
	if (p->timed_out)
		fprintf(stderr, "vsm-peer: timed out after %" PRIu64 " s: %u finished, %zu open\n",
			opt.timeout_s, p->finished, p->nconns);
	/* Whatever is still open has not finished: report it as it stands. */
	for (size_t i = 0; i < p->nconns; i++) {
		p->conns[i]->err = p->timed_out ? ETIMEDOUT : EINTR;
		peer_finish_conn(p, p->conns[i], now_ns());
	}
	p->nconns = 0;
	sigprocmask(SIG_SETMASK, &orig_set, NULL);
	return ret;
}

static void set_dgram_buffers(int fd)
{
	int size = DGRAM_BUFFER_SIZE;

	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
}

/* A send buffer this large lets a client queue that much in its peer before anyone reads. */
static void set_sndbuf(int fd, int size)
{
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
}

static int report_errno(const char *call, const struct tool_addr *a, int err)
{
	fprintf(stderr, "vsm-peer: %s %s: %s\n", call, a->text, strerror(err));
	return -err;
}

static int open_socket(const struct tool_addr *a, int flags)
{
	int fd = socket(a->family, a->type | SOCK_CLOEXEC | flags, 0);

	if (fd < 0)
		return report_errno("socket", a, errno);
	if (a->type == SOCK_DGRAM)
		set_dgram_buffers(fd);
	else if (opt.sndbuf && !opt.is_server)
		set_sndbuf(fd, (int)opt.sndbuf);
	return fd;
}

/*
 * hybrid:PATH:PORT: ask the backend for the guest's PORT and read its one-line answer,
 * "OK HOST_PORT\n". The backend closes the connection when the guest refuses, which is
 * reported as ECONNRESET so that a guest listener not up yet is retried as a refusal is.
 */
static int hybrid_handshake(int fd, const struct tool_addr *a)
{
	struct timeval tv = {.tv_sec = 10};
	char line[64];
	size_t len = 0;
	ssize_t n;

	n = snprintf(line, sizeof(line), "CONNECT %u\n", a->hybrid_port);
	if (write(fd, line, n) != n)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	/* Byte by byte: what follows the newline is the guest's stream. */
	while (len < sizeof(line) - 1) {
		n = read(fd, line + len, 1);
		if (n < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		if (!n)
			return -ECONNRESET;
		if (line[len++] == '\n')
			break;
	}
	line[len] = '\0';
	tv.tv_sec = 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return strncmp(line, "OK ", 3) ? -EPROTO : 0;
}

/* Returns a connected blocking socket or -errno, retrying refusals until retry_until. */
static int connect_with_retry(const struct tool_addr *a, uint64_t retry_until)
{
	int fd, err;

	for (;;) {
		fd = open_socket(a, 0);
		if (fd < 0)
			return fd;
		err = connect(fd, &a->u.sa, a->len) ? errno : 0;
		if (!err && a->hybrid)
			err = -hybrid_handshake(fd, a);
		if (!err)
			return fd;
		close(fd);
		if (!connect_retryable(err) || now_ns() >= retry_until)
			return report_errno("connect", a, err);
		usleep(RETRY_NS / 1000);
	}
}

static int write_ready_file(int fd)
{
	char tmp[PATH_MAX], text[64];
	const char *addr = opt.addr.text;
	struct sockaddr_in in;
	socklen_t len = sizeof(in);
	FILE *f;

	/* A tcp port 0 is resolved, so a script can find the port the kernel chose. */
	if (opt.addr.family == AF_INET && !opt.addr.u.in.sin_port &&
	    !getsockname(fd, (struct sockaddr *)&in, &len)) {
		snprintf(text, sizeof(text), "tcp:%s:%u", inet_ntoa(in.sin_addr),
			 ntohs(in.sin_port));
		addr = text;
	}
	/* Written aside and renamed: a waiting script never reads it half-written. */
	snprintf(tmp, sizeof(tmp), "%s.tmp", opt.ready_file);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%s\n", addr) < 0 || fclose(f) || rename(tmp, opt.ready_file)) {
		fprintf(stderr, "vsm-peer: --ready-file %s: %s\n", opt.ready_file, strerror(errno));
		return -errno;
	}
	return 0;
}

static const char *unix_socket_path(const struct tool_addr *a)
{
	if (a->family != AF_UNIX || !a->u.un.sun_path[0])
		return NULL;
	return a->u.un.sun_path;
}

static int server_listen(struct tool_addr *a)
{
	const char *path = unix_socket_path(a);
	struct stat st;
	int fd, one = 1;

	if (a->family == AF_VSOCK)
		a->u.vm.svm_cid = VMADDR_CID_ANY;
	fd = open_socket(a, SOCK_NONBLOCK);
	if (fd < 0)
		return fd;
	if (a->family == AF_INET)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* A socket file left by an earlier run would make bind() fail with EADDRINUSE. */
	if (path && !lstat(path, &st) && S_ISSOCK(st.st_mode))
		unlink(path);
	if (bind(fd, &a->u.sa, a->len)) {
		close(fd);
		return report_errno("bind", a, errno);
	}
	if (a->type != SOCK_DGRAM && listen(fd, SOMAXCONN)) {
		close(fd);
		return report_errno("listen", a, errno);
	}
	return fd;
}

static int server_main(void)
{
	struct peer p = {.listen_fd = -1};
	struct conn *c;
	int fd, ret;

	fd = server_listen(&opt.addr);
	if (fd < 0)
		return EXIT_SYSTEM;
	if (opt.timeout_s)
		p.deadline_ns = now_ns() + opt.timeout_s * NSEC_PER_SEC;
	if (opt.addr.type == SOCK_DGRAM) {
		/* The bound socket is the one "connection": every datagram is one record. */
		c = conn_new(fd, 1, now_ns());
		if (!c) {
			close(fd);
			return EXIT_SYSTEM;
		}
		server_conn_init(c);
		c->dgram = true;
		p.accepted = 1;
		if (peer_add(&p, c)) {
			conn_free(c);
			return EXIT_SYSTEM;
		}
	} else {
		p.listen_fd = fd;
	}
	ret = opt.ready_file ? write_ready_file(fd) : 0;
	if (!ret)
		ret = peer_loop(&p);
	printf("server total conns=%u bytes=%" PRIu64 " errors=%u", p.finished, p.rx_bytes,
	       p.errors);
	if (opt.addr.type != SOCK_STREAM)
		printf(" msgs=%" PRIu64, p.msgs);
	if (opt.mode != MODE_SINK || opt.reply_len || opt.reply_first)
		printf(" sent=%" PRIu64, p.tx_bytes);
	putchar('\n');
	if (p.listen_fd >= 0)
		close(p.listen_fd);
	if (unix_socket_path(&opt.addr))
		unlink(unix_socket_path(&opt.addr));
	free(p.conns);
	if (ret)
		return EXIT_SYSTEM;
	return p.errors || p.timed_out ? EXIT_VERIFY : EXIT_SUCCESS;
}

/* Blocking sends: a unix-dgram sender waits in the kernel while the receiver's queue is full. */
static void client_send_dgrams(struct conn *c, uint64_t retry_until)
{
	const struct tool_addr *a = &opt.addr;
	ssize_t n;

	while (c->tx_msgs < opt.dgram_count) {
		if (c->tx_off == c->tx_fill) {
			stream_fill(&c->tx, c->txbuf, opt.msg_size);
			c->tx_off = 0;
			c->tx_fill = opt.msg_size;
		}
		if (opt.dgram_connect)
			n = send(c->fd, c->txbuf, opt.msg_size, MSG_NOSIGNAL);
		else
			n = sendto(c->fd, c->txbuf, opt.msg_size, MSG_NOSIGNAL, &a->u.sa, a->len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (!c->tx_msgs && connect_retryable(errno) && now_ns() < retry_until) {
				usleep(RETRY_NS / 1000);
				continue;
			}
			conn_fail(c, opt.dgram_connect ? "send" : "sendto", errno);
			return;
		}
		c->fnv_tx = fnv1a(c->fnv_tx, c->txbuf, n);
		c->tx_bytes += n;
		c->tx_msgs++;
		c->tx_off = c->tx_fill;
		if (c->tx_bytes >= opt.kill_after)
			kill_self(c);
	}
}

static int client_run_dgram(struct peer *p, uint64_t retry_until)
{
	struct timeval tv = {.tv_sec = opt.timeout_s};
	struct conn *c;
	int fd;

	fd = opt.dgram_connect ? connect_with_retry(&opt.addr, retry_until)
			       : open_socket(&opt.addr, 0);
	if (fd < 0)
		return fd;
	/* The deadline for a receiver that stops reading. */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	c = conn_new(fd, 1, now_ns());
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	client_conn_init(c, 0);
	client_send_dgrams(c, retry_until);
	peer_finish_conn(p, c, now_ns());
	return 0;
}

static int client_main(void)
{
	uint64_t start = now_ns(), retry_until = start + opt.connect_timeout_s * NSEC_PER_SEC;
	struct peer p = {.listen_fd = -1};
	struct conn *c;
	unsigned int i;
	int fd, ret = 0;

	if (opt.timeout_s)
		p.deadline_ns = start + opt.timeout_s * NSEC_PER_SEC;
	if (opt.addr.type == SOCK_DGRAM) {
		ret = client_run_dgram(&p, retry_until);
	} else {
		for (i = 0; i < opt.parallel && !ret; i++) {
			fd = connect_with_retry(&opt.addr, retry_until);
			if (fd < 0) {
				ret = fd;
				break;
			}
			c = conn_new(fd, i + 1, now_ns());
			if (!c || peer_add(&p, c)) {
				fprintf(stderr, "vsm-peer: conn %u: %s\n", i + 1, strerror(ENOMEM));
				ret = -ENOMEM;
				if (c)
					conn_free(c);
				else
					close(fd);
				break;
			}
			/* Connected blocking (simple retries); driven non-blocking by the loop. */
			fcntl(fd, F_SETFL, O_NONBLOCK);
			client_conn_init(c, i);
		}
		if (!ret)
			ret = peer_loop(&p);
	}
	if (!p.finished && ret)
		goto out_free;
	printf("client total conns=%u sent=%" PRIu64 " recv=%" PRIu64 " errors=%u MBps=%.1f\n",
	       p.finished, p.tx_bytes, p.rx_bytes, p.errors,
	       mbps(p.payload, p.last_end_ns - p.first_start_ns));
out_free:
	for (i = 0; i < p.nconns; i++)
		conn_free(p.conns[i]);
	free(p.conns);
	if (ret)
		return EXIT_SYSTEM;
	return p.errors || p.timed_out ? EXIT_VERIFY : EXIT_SUCCESS;
}

int main(int argc, char **argv)
{
	int ret = parse_options(argc, argv);

	if (ret)
		return ret > 0 ? EXIT_SUCCESS : EXIT_SYSTEM;
	/* A peer that goes away must show up as EPIPE in the report, not kill us. */
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	return opt.is_server ? server_main() : client_main();
}
