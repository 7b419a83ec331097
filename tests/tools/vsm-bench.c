// SPDX-License-Identifier: GPL-2.0-only
/*
 * vsm-bench: the measuring peer of `make bench`.
 *
 * vsm-peer checks every byte with a byte-serial FNV hash and tops out near 0.6 GB/s; the
 * bench must see 5 GB/s on the host. This tool sends one fixed 64 KiB pseudo-random
 * block over and over, with the first 8 bytes of every 64 KiB block of the stream (by
 * stream offset, whatever the write sizes) replaced by (stream id << 48 | block index).
 * The receiver checks each byte with memcmp against that reference, so a lost,
 * duplicated, reordered or crossed-over block is still caught at its offset, at memory
 * speed. Each result is one flat JSON object on one line of stdout. libc only: the binary
 * also runs in the test VM's busybox initramfs.
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
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "stream.h"
#include "tool_common.h"

#define EXIT_VERIFY 1 /* a mismatch, short stream, reset, timeout or failed connection */
#define EXIT_SYSTEM 2 /* usage error or a failed setup call */

#define BLOCK_SIZE    65536U
#define HEADER_SIZE   8U
#define INDEX_BITS    48
#define INDEX_MASK    ((UINT64_C(1) << INDEX_BITS) - 1)
#define RETRY_NS      (20 * NSEC_PER_MSEC)
#define MAX_EVENTS    256
#define ECHO_BUF_SIZE 512
/* unix_dgram_sendmsg() refuses a datagram longer than sk_sndbuf - 32 (EMSGSIZE). */
#define DGRAM_BUFFER_SIZE (4 << 20)

struct options {
	const char *command;
	struct tool_addr addr;
	uint64_t bytes, expect, conns, parallel, count, warmup, concurrency;
	uint64_t write_size, read_size, max_failures;
	double timeout_s, connect_timeout_s, conn_timeout_s, start_delay_s;
	const char *ready_file;
	bool no_eof;
	bool dgram_connect;
};

static struct options opt = {
    .expect = UINT64_MAX,
    .conns = 1,
    .parallel = 1,
    .count = 1000,
    .warmup = 100,
    .concurrency = 1,
    .write_size = 64 << 10,
    .read_size = 256 << 10,
    .max_failures = UINT64_MAX, /* hold: 1, connect-rate: no limit */
    .timeout_s = 120,
    .connect_timeout_s = 10,
    .conn_timeout_s = 10,
};

static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t ping_signal; /* hold: SIGUSR1 asks for a round of echoes */
static uint8_t pattern[BLOCK_SIZE];

/* 0 means no deadline: used for --timeout. */
static uint64_t deadline_after(double seconds)
{
	return seconds > 0 ? now_ns() + (uint64_t)(seconds * NSEC_PER_SEC) : UINT64_MAX;
}

/* Until when refused connects are retried; 0 means one attempt. */
static uint64_t retry_window(void)
{
	return now_ns() + (uint64_t)(opt.connect_timeout_s * NSEC_PER_SEC);
}

/* epoll_wait() timeout in ms until deadline; at least 1 so that a due deadline is seen. */
static int ms_until(uint64_t deadline)
{
	uint64_t now = now_ns();

	if (deadline == UINT64_MAX)
		return -1;
	if (deadline <= now)
		return 0;
	return (int)min_u64((deadline - now) / NSEC_PER_MSEC + 1, INT_MAX);
}

static void pattern_init(void)
{
	struct stream st;

	stream_init(&st, 0);
	stream_fill(&st, pattern, BLOCK_SIZE);
}
static uint64_t block_header(uint64_t id, uint64_t index)
{
	return htole64(id << INDEX_BITS | (index & INDEX_MASK));
}

/* Writes the block headers that fall into [off, off + len) of stream id into buf. */
static void patch_headers(uint8_t *buf, uint64_t id, uint64_t off, size_t len)
{
	uint64_t k, start, lo, hi, hdr;

	for (k = off / BLOCK_SIZE; k * BLOCK_SIZE < off + len; k++) {
		start = k * BLOCK_SIZE;
		lo = start > off ? start : off;
		hi = min_u64(start + HEADER_SIZE, off + len);
		if (lo >= hi)
			continue;
		hdr = block_header(id, k);
		memcpy(buf + (lo - off), (uint8_t *)&hdr + (lo - start), hi - lo);
	}
}

static void pattern_fill(uint8_t *buf, uint64_t id, uint64_t off, size_t len)
{
	uint64_t o = off;
	size_t done = 0, in, n;

	while (done < len) {
		in = o % BLOCK_SIZE;
		n = min_u64(len - done, BLOCK_SIZE - in);
		memcpy(buf + done, pattern + in, n);
		done += n;
		o += n;
	}
	patch_headers(buf, id, off, len);
}

/* Offset of the first byte of data (at stream offset off) that differs from stream id. */
static uint64_t first_mismatch(const uint8_t *data, uint64_t id, uint64_t off, size_t len)
{
	uint8_t ref[256];
	size_t i, n;

	for (i = 0; i < len; i += n) {
		n = min_u64(sizeof(ref), len - i);
		pattern_fill(ref, id, off + i, n);
		if (memcmp(ref, data + i, n))
			break;
	}
	for (; i < len; i++) {
		pattern_fill(ref, id, off + i, 1);
		if (ref[0] != data[i])
			return off + i;
	}
	return off + len;
}

/* True when data is exactly stream id at offset off. */
static bool pattern_matches(const uint8_t *data, uint64_t id, uint64_t off, size_t len)
{
	uint64_t hdr;
	size_t done = 0, in, n, h;

	while (done < len) {
		in = (off + done) % BLOCK_SIZE;
		n = min_u64(len - done, BLOCK_SIZE - in);
		h = 0;
		if (in < HEADER_SIZE) {
			h = min_u64(HEADER_SIZE - in, n);
			hdr = block_header(id, (off + done) / BLOCK_SIZE);
			if (memcmp(data + done, (uint8_t *)&hdr + in, h))
				return false;
		}
		if (memcmp(data + done + h, pattern + in + h, n - h))
			return false;
		done += n;
	}
	return true;
}

/* ---- addresses and sockets ------------------------------------------------------------- */

static int parse_seconds(const char *arg, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(arg, &end);
	if (errno || end == arg || *end || *out < 0)
		return -EINVAL;
	return 0;
}

static int report_errno(const char *call, const struct tool_addr *a, int err)
{
	fprintf(stderr, "vsm-bench: %s %s: %s\n", call, a->text, strerror(err));
	return -err;
}

static int open_socket(const struct tool_addr *a, int flags)
{
	int fd = socket(a->family, a->type | SOCK_CLOEXEC | flags, 0), size = DGRAM_BUFFER_SIZE;

	if (fd < 0)
		return report_errno("socket", a, errno);
	if (a->type == SOCK_DGRAM &&
	    setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	return fd;
}

static void set_nodelay(int fd)
{
	int one = 1;

	if (opt.addr.family == AF_INET)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int set_nonblock(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	return flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) ? -errno : 0;
}

/* A connected blocking socket, or -errno; refusals are retried until retry_until. */
static int connect_with_retry(const struct tool_addr *a, uint64_t retry_until, bool quiet)
{
	int fd, err;

	for (;;) {
		fd = open_socket(a, 0);
		if (fd < 0)
			return fd;
		if (!connect(fd, &a->u.sa, a->len)) {
			set_nodelay(fd);
			return fd;
		}
		err = errno;
		close(fd);
		if (!connect_retryable(err) || now_ns() >= retry_until || stop_signal)
			return quiet ? -err : report_errno("connect", a, err);
		usleep(RETRY_NS / NSEC_PER_USEC);
	}
}

static int write_ready_file(int fd)
{
	char tmp[PATH_MAX];
	struct sockaddr_in in;
	socklen_t len = sizeof(in);
	unsigned int port = 0;
	FILE *f;

	/* A tcp port 0 is resolved, so that a script can find the port the kernel chose. */
	if (opt.addr.family == AF_INET && !getsockname(fd, (struct sockaddr *)&in, &len))
		port = ntohs(in.sin_port);
	/* Written aside and renamed: a waiting script never reads it half-written. */
	snprintf(tmp, sizeof(tmp), "%s.tmp", opt.ready_file);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%u\n", port) < 0 || fclose(f) || rename(tmp, opt.ready_file)) {
		fprintf(stderr, "vsm-bench: --ready-file %s: %s\n", opt.ready_file,
			strerror(errno));
		return -1;
	}
	return 0;
}

static int listen_socket(struct tool_addr *a)
{
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
	if (a->family == AF_UNIX && !lstat(a->u.un.sun_path, &st) && S_ISSOCK(st.st_mode))
		unlink(a->u.un.sun_path);
	if (bind(fd, &a->u.sa, a->len)) {
		close(fd);
		return report_errno("bind", a, errno);
	}
	/* 10,000 idle connections arrive in a burst; the kernel caps this at somaxconn. */
	if (listen(fd, 65535)) {
		close(fd);
		return report_errno("listen", a, errno);
	}
	if (opt.ready_file && write_ready_file(fd)) {
		close(fd);
		return -EIO;
	}
	return fd;
}

static void listen_cleanup(int fd)
{
	if (fd >= 0)
		close(fd);
	if (opt.addr.family == AF_UNIX)
		unlink(opt.addr.u.un.sun_path);
}

static int epoll_add(int ep, int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev = {.events = events, .data.ptr = ptr};

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static double seconds_between(uint64_t t0, uint64_t t1)
{
	return t1 > t0 ? (double)(t1 - t0) / NSEC_PER_SEC : 0;
}

static void print_cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	printf(",\"utime\":%.3f,\"stime\":%.3f", ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
}

/* ---- bulk transfers: sink, fetch (receivers), source, serve (senders) ------------------ */

struct xconn {
	int fd;
	bool sender;
	bool done;
	bool id_known;
	uint64_t id;	/* stream id: the sender's connection number, from 1 */
	uint64_t off;	/* bytes sent or received */
	uint64_t total; /* bytes to send; bytes expected (UINT64_MAX: to EOF) */
	uint8_t head[HEADER_SIZE];
	char verdict[64]; /* empty while all is well */
	size_t tx_pos, tx_len;
	uint64_t tx_phase; /* stream offset % BLOCK_SIZE the buffer was built for */
	uint8_t *txbuf;
};

struct xfer {
	const char *role;
	bool sender; /* this side sends (source, serve) */
	bool server; /* this side accepts (sink, serve) */
	int ep, listen_fd;
	struct xconn *conns;
	size_t nconns, want, finished;
	uint64_t bytes, t_begin, t_end;
	uint8_t *rxbuf;
};

static void xconn_fail(struct xconn *c, const char *what, int err)
{
	if (!c->verdict[0])
		snprintf(c->verdict, sizeof(c->verdict), "%s@%" PRIu64 "%s%s", what, c->off,
			 err ? ":" : "", err ? strerror(err) : "");
}

static void xconn_finish(struct xfer *x, struct xconn *c, uint64_t now)
{
	if (c->done)
		return;
	c->done = true;
	x->finished++;
	x->bytes += c->off;
	if (now > x->t_end)
		x->t_end = now;
	close(c->fd);
	c->fd = -1;
}

/* Builds the next write; when only the block headers differ from the last one, only those. */
static void xconn_prepare(struct xconn *c)
{
	size_t len = min_u64(opt.write_size, c->total - c->off);

	if (c->tx_len == len && c->tx_phase == c->off % BLOCK_SIZE)
		patch_headers(c->txbuf, c->id, c->off, len);
	else
		pattern_fill(c->txbuf, c->id, c->off, len);
	c->tx_len = len;
	c->tx_phase = c->off % BLOCK_SIZE;
	c->tx_pos = 0;
}

static void xconn_send(struct xfer *x, struct xconn *c)
{
	ssize_t n;

	for (;;) {
		if (c->tx_pos == c->tx_len) {
			if (c->off == c->total) {
				xconn_finish(x, c, now_ns());
				return;
			}
			xconn_prepare(c);
		}
		n = write(c->fd, c->txbuf + c->tx_pos, c->tx_len - c->tx_pos);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			xconn_fail(c, "error", errno);
			xconn_finish(x, c, now_ns());
			return;
		}
		c->tx_pos += n;
		c->off += n;
	}
}

/* Checks len received bytes at c->off; the first 8 bytes name the stream. */
static void xconn_verify(struct xconn *c, const uint8_t *data, size_t len)
{
	size_t h;

	if (!c->id_known && len) {
		h = min_u64(HEADER_SIZE - c->off, len);
		memcpy(c->head + c->off, data, h);
		c->off += h;
		data += h;
		len -= h;
		if (c->off < HEADER_SIZE)
			return;
		memcpy(&c->id, c->head, HEADER_SIZE);
		c->id = le64toh(c->id) >> INDEX_BITS;
		c->id_known = true;
		if (!pattern_matches(c->head, c->id, 0, HEADER_SIZE)) {
			c->off = first_mismatch(c->head, c->id, 0, HEADER_SIZE);
			xconn_fail(c, "mismatch", 0);
			return;
		}
	}
	if (len && !pattern_matches(data, c->id, c->off, len)) {
		c->off = first_mismatch(data, c->id, c->off, len);
		xconn_fail(c, "mismatch", 0);
		return;
	}
	c->off += len;
}

static void xconn_recv(struct xfer *x, struct xconn *c)
{
	uint64_t room;
	ssize_t n;

	for (;;) {
		/* Never read past the expected length: extra bytes are the sender's error. */
		room = c->total == UINT64_MAX ? opt.read_size : c->total - c->off + 1;
		n = read(c->fd, x->rxbuf, min_u64(opt.read_size, room));
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			xconn_fail(c, "error", errno);
			xconn_finish(x, c, now_ns());
			return;
		}
		if (!x->t_begin && n > 0)
			x->t_begin = now_ns();
		if (n == 0) {
			if (c->total != UINT64_MAX && c->off != c->total)
				xconn_fail(c, "short", 0);
			xconn_finish(x, c, now_ns());
			return;
		}
		xconn_verify(c, x->rxbuf, n);
		if (c->total != UINT64_MAX && c->off > c->total) {
			c->off = c->total;
			xconn_fail(c, "long", 0);
		}
		/* A dgram target never sees EOF: with --no-eof the expected length ends it. */
		if (c->verdict[0] || (opt.no_eof && c->off == c->total)) {
			xconn_finish(x, c, now_ns());
			return;
		}
	}
}

static int xfer_add(struct xfer *x, int fd)
{
	struct xconn *c = &x->conns[x->nconns];

	if (set_nonblock(fd) ||
	    epoll_add(x->ep, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, c)) {
		close(fd);
		return report_errno("epoll", &opt.addr, errno);
	}
	x->nconns++;
	c->fd = fd;
	c->sender = x->sender;
	c->total = x->sender ? opt.bytes : opt.expect;
	if (c->sender) {
		/* Stream ids count from 1, in connect or accept order. */
		c->id = x->nconns;
		c->txbuf = malloc(opt.write_size);
		if (!c->txbuf)
			return -ENOMEM;
		c->tx_phase = UINT64_MAX;
		if (!x->t_begin)
			x->t_begin = now_ns();
	}
	return 0;
}

static int xfer_accept(struct xfer *x)
{
	int fd;

	while (x->nconns < x->want) {
		fd = accept4(x->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			return errno == EAGAIN || errno == EINTR
				   ? 0
				   : report_errno("accept", &opt.addr, errno);
		if (xfer_add(x, fd))
			return -1;
		if (x->sender)
			xconn_send(x, &x->conns[x->nconns - 1]);
	}
	/* All expected connections are in: a level-triggered listener must not spin. */
	epoll_ctl(x->ep, EPOLL_CTL_DEL, x->listen_fd, NULL);
	return 0;
}

/* The streams of all connections must be distinct: a crossed-over stream shows here. */
static const char *xfer_verdict(const struct xfer *x, char *buf, size_t size)
{
	size_t i, j;

	for (i = 0; i < x->nconns; i++)
		if (x->conns[i].verdict[0])
			return x->conns[i].verdict;
	if (x->nconns < x->want) {
		snprintf(buf, size, "missing:%zu-of-%zu", x->want - x->nconns, x->want);
		return buf;
	}
	for (i = 0; i < x->nconns && !x->sender; i++)
		for (j = 0; j < i; j++)
			if (x->conns[i].id_known && x->conns[i].id == x->conns[j].id) {
				snprintf(buf, size, "duplicate-stream:%" PRIu64, x->conns[i].id);
				return buf;
			}
	return "ok";
}

static int xfer_report(struct xfer *x)
{
	const char *verdict;
	char buf[96];
	double secs;

	verdict = xfer_verdict(x, buf, sizeof(buf));
	secs = seconds_between(x->t_begin, x->t_end);
	printf("{\"role\":\"%s\",\"conns\":%zu,\"bytes\":%" PRIu64
	       ",\"seconds\":%.6f,\"mbps\":%.1f,\"verify\":\"%s\"",
	       x->role, x->nconns, x->bytes, secs, secs > 0 ? x->bytes / secs / 1e6 : 0.0, verdict);
	print_cpu();
	printf("}\n");
	return strcmp(verdict, "ok") ? EXIT_VERIFY : EXIT_SUCCESS;
}

static int xfer_main(const char *role, bool sender, bool server)
{
	struct epoll_event ev[MAX_EVENTS];
	struct xfer x = {.role = role, .sender = sender, .server = server, .listen_fd = -1};
	uint64_t deadline, retry_until;
	struct xconn *c;
	int n, i, fd, ret = EXIT_SYSTEM;
	size_t k;

	x.want = server ? opt.conns : opt.parallel;
	x.conns = calloc(x.want, sizeof(*x.conns));
	x.rxbuf = malloc(opt.read_size);
	x.ep = epoll_create1(EPOLL_CLOEXEC);
	if (!x.conns || !x.rxbuf || x.ep < 0)
		goto out;
	if (server) {
		x.listen_fd = listen_socket(&opt.addr);
		if (x.listen_fd < 0 || epoll_add(x.ep, x.listen_fd, EPOLLIN, NULL))
			goto out;
	}
	deadline = deadline_after(opt.timeout_s);
	if (!server) {
		retry_until = retry_window();
		for (k = 0; k < x.want; k++) {
			fd = connect_with_retry(&opt.addr, retry_until, false);
			if (fd < 0 || xfer_add(&x, fd))
				goto out;
		}
		if (sender && opt.start_delay_s > 0) {
			uint64_t ns = (uint64_t)(opt.start_delay_s * 1e9);
			struct timespec pause = {.tv_sec = (time_t)(ns / 1000000000),
						 .tv_nsec = (long)(ns % 1000000000)};

			nanosleep(&pause, NULL);
			x.t_begin = now_ns(); /* the rate counts from the first byte */
		}
		for (k = 0; k < x.nconns && sender; k++)
			xconn_send(&x, &x.conns[k]);
	}
	while (x.finished < x.want && !stop_signal) {
		n = epoll_wait(x.ep, ev, MAX_EVENTS, ms_until(deadline));
		if (n < 0 && errno != EINTR) {
			report_errno("epoll_wait", &opt.addr, errno);
			goto out;
		}
		if (n == 0 && now_ns() >= deadline)
			break;
		for (i = 0; i < n; i++) {
			c = ev[i].data.ptr;
			if (!c) {
				if (xfer_accept(&x))
					goto out;
			} else if (!c->done) {
				if (c->sender)
					xconn_send(&x, c);
				else
					xconn_recv(&x, c);
			}
		}
	}
	/* Connections still open at the deadline or on a signal did not complete. */
	for (k = 0; k < x.nconns; k++) {
		if (x.conns[k].done)
			continue;
		xconn_fail(&x.conns[k], stop_signal ? "interrupted" : "timeout", 0);
		xconn_finish(&x, &x.conns[k], now_ns());
	}
	ret = xfer_report(&x);
out:
	for (k = 0; k < x.nconns; k++) {
		if (x.conns[k].fd >= 0)
			close(x.conns[k].fd);
		free(x.conns[k].txbuf);
	}
	if (server)
		listen_cleanup(x.listen_fd);
	if (x.ep >= 0)
		close(x.ep);
	free(x.conns);
	free(x.rxbuf);
	return ret;
}

/*
 * unix-dgram source: consecutive pieces of one pattern stream, one datagram per piece, with
 * sendto() like syslog clients that do not connect; --connect uses connect() and send().
 */
static int dgram_source_main(void)
{
	uint64_t off = 0, t0, t1, msgs = 0, retry_until = retry_window();
	size_t len;
	uint8_t *buf = malloc(opt.write_size);
	int fd, ret = EXIT_SYSTEM;
	ssize_t n;
	double secs;

	if (!buf)
		return EXIT_SYSTEM;
	if (opt.dgram_connect)
		fd = connect_with_retry(&opt.addr, retry_until, false);
	else
		fd = open_socket(&opt.addr, 0);
	if (fd < 0)
		goto out;
	t0 = now_ns();
	while (off < opt.bytes && !stop_signal) {
		len = min_u64(opt.write_size, opt.bytes - off);
		pattern_fill(buf, 1, off, len);
		if (opt.dgram_connect)
			n = send(fd, buf, len, 0);
		else
			n = sendto(fd, buf, len, 0, &opt.addr.u.sa, opt.addr.len);
		if (n < 0 && errno == EINTR)
			continue;
		/* The receiving socket may not be bound yet: wait for it like a connect. */
		if (n < 0 && !msgs && connect_retryable(errno) && now_ns() < retry_until) {
			usleep(RETRY_NS / NSEC_PER_USEC);
			t0 = now_ns();
			continue;
		}
		if (n != (ssize_t)len) {
			report_errno(opt.dgram_connect ? "send" : "sendto", &opt.addr,
				     n < 0 ? errno : EMSGSIZE);
			break;
		}
		off += len;
		msgs++;
	}
	t1 = now_ns();
	close(fd);
	secs = seconds_between(t0, t1);
	printf("{\"role\":\"source\",\"conns\":1,\"bytes\":%" PRIu64 ",\"msgs\":%" PRIu64
	       ",\"seconds\":%.6f,\"mbps\":%.1f,\"verify\":\"%s\"",
	       off, msgs, secs, secs > 0 ? off / secs / 1e6 : 0.0,
	       off == opt.bytes ? "ok" : "short");
	print_cpu();
	printf("}\n");
	ret = off == opt.bytes ? EXIT_SUCCESS : EXIT_VERIFY;
out:
	free(buf);
	return ret;
}

/* ---- ping-pong: an echo server for thousands of connections, and its clients ------------ */

struct echo_conn {
	struct echo_conn *prev, *next; /* every open connection, to free them at exit */
	int fd;
	size_t pending, pos;
	uint8_t buf[ECHO_BUF_SIZE];
};

static struct echo_conn echo_conns = {.prev = &echo_conns, .next = &echo_conns};

static void echo_close(struct echo_conn *e, size_t *open)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	close(e->fd);
	free(e);
	(*open)--;
}

/* Echoes what arrives; stops reading while an echo waits for room. False: connection ends. */
static bool echo_io(struct echo_conn *e)
{
	ssize_t n;

	for (;;) {
		while (e->pos < e->pending) {
			n = write(e->fd, e->buf + e->pos, e->pending - e->pos);
			if (n < 0)
				return errno == EAGAIN || errno == EINTR;
			e->pos += n;
		}
		n = read(e->fd, e->buf, sizeof(e->buf));
		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		if (n == 0)
			return false;
		e->pending = n;
		e->pos = 0;
	}
}

static int pingpong_server_main(void)
{
	struct epoll_event ev[MAX_EVENTS];
	size_t open = 0, max_open = 0;
	uint64_t accepted = 0, emfile_seen = 0;
	struct echo_conn *e;
	int ep, lfd, fd, n, i;

	ep = epoll_create1(EPOLL_CLOEXEC);
	lfd = listen_socket(&opt.addr);
	if (ep < 0 || lfd < 0 || epoll_add(ep, lfd, EPOLLIN, NULL))
		return EXIT_SYSTEM;
	while (!stop_signal) {
		n = epoll_wait(ep, ev, MAX_EVENTS, -1);
		for (i = 0; i < n; i++) {
			e = ev[i].data.ptr;
			if (e) {
				if (!echo_io(e))
					echo_close(e, &open);
				continue;
			}
			while ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
				e = calloc(1, sizeof(*e));
				if (!e || epoll_add(ep, fd, EPOLLIN | EPOLLOUT | EPOLLET, e)) {
					close(fd);
					free(e);
					continue;
				}
				e->fd = fd;
				e->next = &echo_conns;
				e->prev = echo_conns.prev;
				e->prev->next = e;
				echo_conns.prev = e;
				set_nodelay(fd);
				accepted++;
				if (++open > max_open)
					max_open = open;
				if (!echo_io(e))
					echo_close(e, &open);
			}
			/* Out of descriptors: say so once, and back off rather than spin. */
			if (errno == EMFILE || errno == ENFILE) {
				if (!emfile_seen++)
					fprintf(stderr, "vsm-bench: accept %s: %s\n", opt.addr.text,
						strerror(errno));
				usleep(10000);
			}
		}
	}
	printf("{\"role\":\"pingpong-server\",\"accepted\":%" PRIu64 ",\"max_open\":%zu}\n",
	       accepted, max_open);
	while (echo_conns.next != &echo_conns)
		echo_close(echo_conns.next, &open);
	listen_cleanup(lfd);
	close(ep);
	return EXIT_SUCCESS;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The q-quantile (nearest rank) of n sorted values, in microseconds. */
static double quantile_us(const uint64_t *v, size_t n, double q)
{
	size_t rank = (size_t)(q * n + 0.999999);

	if (!n)
		return 0;
	rank = rank < 1 ? 1 : rank > n ? n : rank;
	return v[rank - 1] / 1e3;
}

static int pingpong_main(void)
{
	uint64_t *lat = calloc(opt.count ? opt.count : 1, sizeof(*lat)), t0, sum = 0, i;
	uint64_t total = opt.warmup + opt.count, done = 0;
	const char *verdict = "ok";
	char buf[64];
	uint8_t b, r;
	int fd, ret = EXIT_SYSTEM;

	if (!lat)
		return EXIT_SYSTEM;
	fd = connect_with_retry(&opt.addr, retry_window(), false);
	if (fd < 0)
		goto out;
	for (i = 0; i < total && !stop_signal; i++) {
		b = (uint8_t)i;
		t0 = now_ns();
		if (write(fd, &b, 1) != 1 || read(fd, &r, 1) != 1) {
			snprintf(buf, sizeof(buf), "error@%" PRIu64 ":%s", i,
				 errno ? strerror(errno) : "EOF");
			verdict = buf;
			break;
		}
		if (r != b) {
			snprintf(buf, sizeof(buf), "mismatch@%" PRIu64, i);
			verdict = buf;
			break;
		}
		if (i >= opt.warmup) {
			lat[done] = now_ns() - t0;
			sum += lat[done++];
		}
	}
	close(fd);
	qsort(lat, done, sizeof(*lat), cmp_u64);
	printf("{\"role\":\"pingpong\",\"count\":%" PRIu64 ",\"p50_us\":%.1f,\"p99_us\":%.1f,"
	       "\"mean_us\":%.1f,\"min_us\":%.1f,\"max_us\":%.1f,\"verify\":\"%s\"",
	       done, quantile_us(lat, done, 0.5), quantile_us(lat, done, 0.99),
	       done ? sum / 1e3 / done : 0.0, quantile_us(lat, done, 0), quantile_us(lat, done, 1),
	       done == opt.count ? "ok" : verdict);
	print_cpu();
	printf("}\n");
	ret = done == opt.count ? EXIT_SUCCESS : EXIT_VERIFY;
out:
	free(lat);
	return ret;
}

/*
 * connect-rate and hold: connections that each send one byte and wait for its echo, so a
 * connection counts only once it works end to end through the relay.
 */
struct probe {
	int fd;
	uint64_t t0;
};

struct prober {
	int ep;
	struct probe *slots;
	size_t in_flight;
	uint64_t started, ok, failures;
	int first_err;
};

/* Connects a probe and sends its byte; false (and a failure counted) if that fails. */
static bool probe_start(struct prober *p, struct probe *s)
{
	struct timeval tv = {.tv_sec = (time_t)opt.conn_timeout_s};
	uint8_t b = 0x5a;
	int fd;

	p->started++;
	s->t0 = now_ns();
	fd = open_socket(&opt.addr, 0);
	if (fd < 0)
		goto fail;
	/* A blocking unix connect waits for backlog room; bounded like the reply. */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, &opt.addr.u.sa, opt.addr.len) || write(fd, &b, 1) != 1 ||
	    set_nonblock(fd) || epoll_add(p->ep, fd, EPOLLIN | EPOLLRDHUP, s))
		goto fail;
	set_nodelay(fd);
	s->fd = fd;
	p->in_flight++;
	return true;
fail:
	if (!p->first_err)
		p->first_err = errno;
	if (fd >= 0)
		close(fd);
	s->fd = -1;
	p->failures++;
	return false;
}

/* The echo arrived (true) or the connection failed; either way it leaves the epoll set. */
static bool probe_reply(struct prober *p, struct probe *s)
{
	uint8_t r = 0;
	ssize_t n = read(s->fd, &r, 1);

	epoll_ctl(p->ep, EPOLL_CTL_DEL, s->fd, NULL);
	p->in_flight--;
	if (n == 1 && r == 0x5a) {
		p->ok++;
		return true;
	}
	if (!p->first_err)
		p->first_err = n < 0 ? errno : ECONNRESET;
	p->failures++;
	close(s->fd);
	s->fd = -1;
	return false;
}

/* Gives up on probes that waited longer than --conn-timeout for their echo. */
static void probe_expire(struct prober *p, size_t nslots, bool *waiting)
{
	uint64_t limit = (uint64_t)(opt.conn_timeout_s * NSEC_PER_SEC), now = now_ns();
	size_t i;

	for (i = 0; i < nslots; i++) {
		if (!waiting[i] || now - p->slots[i].t0 < limit)
			continue;
		epoll_ctl(p->ep, EPOLL_CTL_DEL, p->slots[i].fd, NULL);
		close(p->slots[i].fd);
		p->slots[i].fd = -1;
		waiting[i] = false;
		p->in_flight--;
		p->failures++;
		if (!p->first_err)
			p->first_err = ETIMEDOUT;
	}
}

static int connect_rate_main(void)
{
	struct epoll_event ev[MAX_EVENTS];
	size_t nslots = min_u64(opt.concurrency, opt.count), i, done = 0;
	struct prober p = {.ep = epoll_create1(EPOLL_CLOEXEC)};
	uint64_t *lat = calloc(opt.count + 1, sizeof(*lat)), t0, t1, deadline;
	bool *waiting = calloc(nslots + 1, sizeof(*waiting));
	struct probe *s;
	int n, k, ret = EXIT_SYSTEM;
	double secs;

	p.slots = calloc(nslots + 1, sizeof(*p.slots));
	if (p.ep < 0 || !lat || !waiting || !p.slots)
		goto out;
	deadline = deadline_after(opt.timeout_s);
	t0 = now_ns();
	for (i = 0; i < nslots; i++)
		while (p.started < opt.count && p.failures < opt.max_failures &&
		       !(waiting[i] = probe_start(&p, &p.slots[i])))
			;
	while (p.in_flight && !stop_signal && now_ns() < deadline) {
		n = epoll_wait(p.ep, ev, MAX_EVENTS, 100);
		for (k = 0; k < n; k++) {
			s = ev[k].data.ptr;
			i = s - p.slots;
			waiting[i] = false;
			if (probe_reply(&p, s)) {
				lat[done++] = now_ns() - s->t0;
				close(s->fd);
			}
			while (p.started < opt.count && p.failures < opt.max_failures &&
			       !(waiting[i] = probe_start(&p, s)))
				;
		}
		probe_expire(&p, nslots, waiting);
	}
	t1 = now_ns();
	qsort(lat, done, sizeof(*lat), cmp_u64);
	secs = seconds_between(t0, t1);
	printf("{\"role\":\"connect-rate\",\"count\":%" PRIu64 ",\"ok\":%" PRIu64
	       ",\"failures\":%" PRIu64 ",\"attempted\":%" PRIu64
	       ",\"concurrency\":%zu,\"seconds\":%.6f,"
	       "\"conns_per_s\":%.1f,\"p50_us\":%.1f,\"p99_us\":%.1f,\"first_error\":\"%s\"",
	       opt.count, p.ok, opt.count - p.ok, p.started, nslots, secs,
	       secs > 0 ? p.ok / secs : 0.0, quantile_us(lat, done, 0.5),
	       quantile_us(lat, done, 0.99), p.first_err ? strerror(p.first_err) : "");
	print_cpu();
	printf("}\n");
	ret = p.ok < opt.count ? EXIT_VERIFY : EXIT_SUCCESS;
	for (i = 0; i < nslots; i++)
		if (waiting[i])
			close(p.slots[i].fd);
out:
	if (p.ep >= 0)
		close(p.ep);
	free(p.slots);
	free(waiting);
	free(lat);
	return ret;
}

static int write_text_file(const char *path, const char *text)
{
	char tmp[PATH_MAX];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) || rename(tmp, path)) {
		fprintf(stderr, "vsm-bench: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * One byte through every held connection, and its echo back within --timeout: the
 * connections are not only open but carry bytes (after a relay's restart, say). Prints a
 * "hold-ping" line; returns how many echoed.
 */
static size_t hold_ping(const int *held, uint64_t nheld)
{
	struct epoll_event ev[MAX_EVENTS];
	int ep = epoll_create1(EPOLL_CLOEXEC), n, k;
	uint64_t i, sent = 0, echoed = 0, deadline = deadline_after(opt.timeout_s);
	uint8_t b = 0x5a;

	for (i = 0; ep >= 0 && i < nheld; i++) {
		struct epoll_event e = {.events = EPOLLIN, .data.fd = held[i]};

		if (write(held[i], &b, 1) == 1 && !epoll_ctl(ep, EPOLL_CTL_ADD, held[i], &e))
			sent++;
	}
	while (ep >= 0 && echoed < sent && !stop_signal && now_ns() < deadline) {
		n = epoll_wait(ep, ev, MAX_EVENTS, 100);
		for (k = 0; k < n; k++) {
			epoll_ctl(ep, EPOLL_CTL_DEL, ev[k].data.fd, NULL);
			echoed += read(ev[k].data.fd, &b, 1) == 1 && b == 0x5a;
		}
	}
	if (ep >= 0)
		close(ep);
	printf("{\"role\":\"hold-ping\",\"held\":%" PRIu64 ",\"sent\":%" PRIu64
	       ",\"echoed\":%" PRIu64 "}\n",
	       nheld, sent, echoed);
	fflush(stdout);
	return echoed;
}

static int hold_main(void)
{
	struct epoll_event ev[MAX_EVENTS];
	size_t nslots = min_u64(opt.concurrency, opt.count), i, alive = 0;
	struct prober p = {.ep = epoll_create1(EPOLL_CLOEXEC)};
	bool *waiting = calloc(nslots + 1, sizeof(*waiting));
	int *held = calloc(opt.count + 1, sizeof(*held)), n, k, ret = EXIT_SYSTEM;
	uint64_t t0, deadline, nheld = 0;
	char line[512];
	struct probe *s;

	p.slots = calloc(nslots + 1, sizeof(*p.slots));
	if (p.ep < 0 || !waiting || !held || !p.slots)
		goto out;
	deadline = deadline_after(opt.timeout_s);
	t0 = now_ns();
	/* Stop opening connections after --max-failures: what fits has been found. */
	for (i = 0; i < nslots && p.failures < opt.max_failures; i++)
		while (p.started < opt.count && p.failures < opt.max_failures &&
		       !(waiting[i] = probe_start(&p, &p.slots[i])))
			;
	while (p.in_flight && !stop_signal && now_ns() < deadline) {
		n = epoll_wait(p.ep, ev, MAX_EVENTS, 100);
		for (k = 0; k < n; k++) {
			s = ev[k].data.ptr;
			i = s - p.slots;
			waiting[i] = false;
			if (probe_reply(&p, s))
				held[nheld++] = s->fd;
			while (p.started < opt.count && p.failures < opt.max_failures &&
			       !(waiting[i] = probe_start(&p, s)))
				;
		}
		probe_expire(&p, nslots, waiting);
	}
	for (i = 0; i < nslots; i++)
		if (waiting[i]) {
			close(p.slots[i].fd);
			p.failures++;
		}
	snprintf(line, sizeof(line),
		 "{\"role\":\"hold\",\"requested\":%" PRIu64 ",\"established\":%" PRIu64
		 ",\"failures\":%" PRIu64 ",\"seconds\":%.3f,\"first_error\":\"%s\"}\n",
		 opt.count, nheld, p.failures, seconds_between(t0, now_ns()),
		 p.first_err ? strerror(p.first_err) : "");
	fputs(line, stdout);
	fflush(stdout);
	if (opt.ready_file && write_text_file(opt.ready_file, line))
		goto out;
	while (!stop_signal) {
		pause();
		if (ping_signal && !stop_signal) {
			ping_signal = 0;
			hold_ping(held, nheld);
		}
	}
	/* Which connections survived the hold: a relay that dropped some shows here. */
	for (i = 0; i < nheld; i++) {
		char b;
		ssize_t r = recv(held[i], &b, 1, MSG_DONTWAIT | MSG_PEEK);

		alive += r < 0 && errno == EAGAIN;
	}
	printf("{\"role\":\"hold-end\",\"held\":%" PRIu64 ",\"alive\":%zu}\n", nheld, alive);
	ret = nheld == opt.count && alive == nheld ? EXIT_SUCCESS : EXIT_VERIFY;
out:
	for (i = 0; i < nheld; i++)
		close(held[i]);
	if (p.ep >= 0)
		close(p.ep);
	free(p.slots);
	free(waiting);
	free(held);
	return ret;
}

/* ---- command line ----------------------------------------------------------------------- */

static const char usage_text[] =
    "Usage: vsm-bench COMMAND ADDR [OPTIONS]\n"
    "\n"
    "Measuring peer of `make bench`: one JSON object per result on stdout.\n"
    "\n"
    "Commands:\n"
    "  sink ADDR --conns N [--expect BYTES] [--no-eof]\n"
    "                     accept N connections, read each to EOF, verify\n"
    "  source ADDR --bytes N [--parallel P] [--write-size 64K]\n"
    "                     connect P times, send N bytes on each, close\n"
    "                     (unix-dgram: N bytes in datagrams of --write-size, sent\n"
    "                     with sendto(); --connect: connect() and send())\n"
    "  serve ADDR --bytes N --conns K\n"
    "                     accept K connections, send N bytes on each, close\n"
    "  fetch ADDR --bytes N [--parallel P]\n"
    "                     connect P times, read each to EOF, verify N bytes\n"
    "  pingpong-server ADDR\n"
    "                     echo every byte back, any number of connections\n"
    "  pingpong ADDR --count N [--warmup W]\n"
    "                     N one-byte round trips: p50, p99, mean in us\n"
    "  connect-rate ADDR --count N [--concurrency C] [--max-failures K]\n"
    "                     N short connections (connect, 1 byte each way, close);\n"
    "                     stops early after K failed ones (those not tried fail too)\n"
    "  hold ADDR --count N --ready-file F [--concurrency C] [--max-failures K]\n"
    "                     open N connections, each proven by a byte echoed back;\n"
    "                     write F, then hold them until SIGTERM; SIGUSR1: one\n"
    "                     more echoed byte through each (a \"hold-ping\" line)\n"
    "\n"
    "Addresses: unix:PATH  unix-dgram:PATH  tcp:IPV4:PORT  vsock:CID:PORT\n"
    "(a vsock server listens on VMADDR_CID_ANY)\n"
    "\n"
    "Options:\n"
    "  --bytes N            bytes per connection (K, M, G suffixes: KiB, MiB, GiB)\n"
    "  --expect N           sink: each connection must carry exactly N bytes\n"
    "  --no-eof             sink: a connection ends at --expect bytes (dgram targets)\n"
    "  --write-size N       bytes per write or datagram (64K)\n"
    "  --read-size N        bytes per read (256K)\n"
    "  --timeout SEC        overall deadline, 0 for none (120)\n"
    "  --connect-timeout S  retry refused connects for S seconds (10)\n"
    "  --conn-timeout S     connect-rate, hold: give up on one connection after S (10)\n"
    "  --ready-file PATH    servers: written once listening (holds the tcp port)\n"
    "  --start-delay S      source: wait S seconds after connecting, then send (a\n"
    "                       client that writes once its peer is ready)\n"
    "  -h, --help           this text\n"
    "\n"
    "Exit status: 0 verified, 1 verification failure, timeout or failed connections,\n"
    "2 usage or system error.\n";

enum option_id {
	OPT_BYTES = 0x100,
	OPT_EXPECT,
	OPT_NO_EOF,
	OPT_CONNECT,
	OPT_CONNS,
	OPT_PARALLEL,
	OPT_COUNT,
	OPT_WARMUP,
	OPT_CONCURRENCY,
	OPT_MAX_FAILURES,
	OPT_WRITE_SIZE,
	OPT_READ_SIZE,
	OPT_TIMEOUT,
	OPT_CONNECT_TIMEOUT,
	OPT_CONN_TIMEOUT,
	OPT_READY_FILE,
	OPT_START_DELAY,
};

static const struct option long_options[] = {
    {"bytes", required_argument, NULL, OPT_BYTES},
    {"expect", required_argument, NULL, OPT_EXPECT},
    {"no-eof", no_argument, NULL, OPT_NO_EOF},
    {"connect", no_argument, NULL, OPT_CONNECT},
    {"conns", required_argument, NULL, OPT_CONNS},
    {"parallel", required_argument, NULL, OPT_PARALLEL},
    {"count", required_argument, NULL, OPT_COUNT},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"concurrency", required_argument, NULL, OPT_CONCURRENCY},
    {"max-failures", required_argument, NULL, OPT_MAX_FAILURES},
    {"write-size", required_argument, NULL, OPT_WRITE_SIZE},
    {"read-size", required_argument, NULL, OPT_READ_SIZE},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
    {"conn-timeout", required_argument, NULL, OPT_CONN_TIMEOUT},
    {"ready-file", required_argument, NULL, OPT_READY_FILE},
    {"start-delay", required_argument, NULL, OPT_START_DELAY},
    {"help", no_argument, NULL, 'h'},
    {},
};

static int usage_error(const char *what, const char *arg)
{
	fprintf(stderr, "vsm-bench: %s%s%s\n(vsm-bench --help lists the options)\n", what,
		arg ? ": " : "", arg ? arg : "");
	return -1;
}

static uint64_t *number_option(int id)
{
	switch (id) {
	case OPT_BYTES:
		return &opt.bytes;
	case OPT_EXPECT:
		return &opt.expect;
	case OPT_CONNS:
		return &opt.conns;
	case OPT_PARALLEL:
		return &opt.parallel;
	case OPT_COUNT:
		return &opt.count;
	case OPT_WARMUP:
		return &opt.warmup;
	case OPT_CONCURRENCY:
		return &opt.concurrency;
	case OPT_MAX_FAILURES:
		return &opt.max_failures;
	case OPT_WRITE_SIZE:
		return &opt.write_size;
	case OPT_READ_SIZE:
		return &opt.read_size;
	}
	return NULL;
}

static double *seconds_option(int id)
{
	switch (id) {
	case OPT_TIMEOUT:
		return &opt.timeout_s;
	case OPT_CONNECT_TIMEOUT:
		return &opt.connect_timeout_s;
	case OPT_CONN_TIMEOUT:
		return &opt.conn_timeout_s;
	case OPT_START_DELAY:
		return &opt.start_delay_s;
	}
	return NULL;
}

/* 0 to run, 1 after --help, -1 on a usage error. */
static int parse_options(int argc, char **argv)
{
	uint64_t *num;
	double *secs;
	int c;

	while ((c = getopt_long(argc, argv, "h", long_options, NULL)) != -1) {
		if (c == 'h') {
			fputs(usage_text, stdout);
			return 1;
		}
		num = number_option(c);
		secs = seconds_option(c);
		if (num && parse_number(optarg, UINT64_MAX, num))
			return usage_error("not a size or count", optarg);
		if (secs && parse_seconds(optarg, secs))
			return usage_error("not a number of seconds", optarg);
		if (c == OPT_NO_EOF)
			opt.no_eof = true;
		else if (c == OPT_CONNECT)
			opt.dgram_connect = true;
		else if (c == OPT_READY_FILE)
			opt.ready_file = optarg;
		else if (!num && !secs)
			return -1;
	}
	if (argc - optind != 2)
		return usage_error("expected COMMAND ADDR", NULL);
	opt.command = argv[optind];
	if (parse_addr(argv[optind + 1], &opt.addr))
		return usage_error("bad address", argv[optind + 1]);
	if (!opt.write_size || !opt.read_size || !opt.conns || !opt.parallel || !opt.concurrency)
		return usage_error("sizes and counts must be at least 1", NULL);
	if (opt.addr.type == SOCK_DGRAM && strcmp(opt.command, "source"))
		return usage_error("unix-dgram: is only for source", NULL);
	if (opt.no_eof && opt.expect == UINT64_MAX)
		return usage_error("--no-eof needs --expect", NULL);
	return 0;
}

static void on_ping_signal(int sig)
{
	(void)sig;
	ping_signal = 1;
}

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

/* 10,000 idle connections need more than the usual soft limit of 1024 descriptors. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_stop_signal};
	int ret = parse_options(argc, argv);

	if (ret)
		return ret > 0 ? EXIT_SUCCESS : EXIT_SYSTEM;
	/* A peer that goes away must show in the report, not kill us. */
	signal(SIGPIPE, SIG_IGN);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_ping_signal;
	sigaction(SIGUSR1, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	raise_nofile();
	pattern_init();
	/* "vsm-sink", "vsm-source": a profile (vsm-profile) tells the two ends apart by name. */
	{
		char name[16];

		snprintf(name, sizeof(name), "vsm-%s", opt.command);
		prctl(PR_SET_NAME, name);
	}
	if (!strcmp(opt.command, "sink"))
		return xfer_main("sink", false, true);
	if (!strcmp(opt.command, "fetch")) {
		opt.expect = opt.bytes ? opt.bytes : opt.expect;
		return xfer_main("fetch", false, false);
	}
	if (!strcmp(opt.command, "source"))
		return opt.addr.type == SOCK_DGRAM ? dgram_source_main()
						   : xfer_main("source", true, false);
	if (!strcmp(opt.command, "serve"))
		return xfer_main("serve", true, true);
	if (!strcmp(opt.command, "pingpong-server"))
		return pingpong_server_main();
	if (!strcmp(opt.command, "pingpong"))
		return pingpong_main();
	if (!strcmp(opt.command, "connect-rate"))
		return connect_rate_main();
	if (!strcmp(opt.command, "hold")) {
		/* Stop at the first failure: what fits has been found. */
		if (opt.max_failures == UINT64_MAX)
			opt.max_failures = 1;
		return hold_main();
	}
	usage_error("unknown command", opt.command);
	return EXIT_SYSTEM;
}
