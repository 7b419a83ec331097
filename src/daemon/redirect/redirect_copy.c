// SPDX-License-Identifier: GPL-2.0-only
/*
 * The bytes the daemon moves itself: the reply direction of every redirect, both directions
 * on the user-space path (datapath=userspace, or the fallback), and what a client sent before
 * the kernel took over. recv()/send() through the direction's buffer, or splice() through a
 * pipe where the source allows it; a source is read only while its destination takes more.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "redirect_internal.h"
#include "sockopt.h"
#include "util.h"

#define SPLICE_PIPE_SIZE (256 * 1024)
/* Out of the target, reads up to this size go by recv/send; a full one opens the splice pipe. */
#define SMALL_READ (4 * 1024)

/*
 * A write into the destination of direction src failed with errno err: nothing more can be
 * written there, and what the daemon still holds for it is dropped. A client that went away
 * while its reply was in flight is ordinary; a target that refuses bytes the client sent is
 * a loss, and says so once.
 */
static void dst_failed(struct redirect *r, int src, int err, size_t dropped)
{
	struct direction *dir = &r->dir[src];

	r->ep[1 - src].hup = true;
	if (src == CLIENT)
		redirect_cut(r);
	if (dir->send_failed_logged)
		return;
	dir->send_failed_logged = true;
	redirect_log(r, src == CLIENT ? LOG_WARNING : LOG_DEBUG,
		     "writing to the %s failed: %s; %zu bytes not delivered",
		     src == CLIENT ? "target" : "client", strerror(err), dropped);
}

/*
 * A write that failed for want of memory (ENOBUFS, ENOMEM) has not lost the destination: the
 * bytes stay with the daemon and the write is tried again in a moment, not on EPOLLOUT, which
 * a socket short of memory may well report.
 */
static bool write_deferred(struct direction *dir, int err)
{
	if (err != ENOBUFS && err != ENOMEM)
		return false;
	dir->retry_usec = now_usec() + WRITE_RETRY_USEC;
	return true;
}

/* Write the pending buffer of direction src into its destination. 1: empty, 0: blocked. */
int flush_buf(struct redirect *r, int src)
{
	struct direction *dir = &r->dir[src];
	struct endpoint *dst = &r->ep[1 - src];
	bool inject = dir_injecting(dir);
	ssize_t n;

	while (dir->buf_off < dir->buf_len) {
		if (dst->hup) {
			dir->buf_off = dir->buf_len = 0; /* nobody left to read it */
			break;
		}
		/* Into the injector, the bytes are the kernel's to carry and to count. */
		n = send(inject ? dir->inject_fd : dst->fd, dir->buf + dir->buf_off,
			 dir->buf_len - dir->buf_off, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN && inject) {
				/* No readiness says when its backlog moved on: look again soon. */
				dir->retry_usec = now_usec() + INJECT_RETRY_USEC;
				return 0;
			}
			if (errno == EAGAIN || write_deferred(dir, errno))
				return 0;
			dst_failed(r, src, errno, dir->buf_len - dir->buf_off);
			continue;
		}
		dir->buf_off += n;
		if (inject) {
			dir->inject_bytes += n;
			continue;
		}
		dir->user_bytes += n;
		dir->user_packets++;
	}
	dir->buf_off = dir->buf_len = 0;
	return 1;
}

/*
 * The source's peer will send no more (read before reading, see forward_some()). Once seen
 * it stays true: a shutdown is never taken back. Until then the kernel is asked, unless the
 * events batch being stepped said it had not happened (its interest mask held EPOLLRDHUP):
 * a shutdown since then is reported by the next batch, since epoll is level-triggered.
 */
bool peer_shut_down(struct endpoint *ep)
{
	struct pollfd pfd = {.fd = ep->fd, .events = POLLRDHUP};
	const struct redirect_loop *loop = ep->owner ? &ep->owner->env->loop : NULL;

	if (ep->shut_seen)
		return true;
	if (loop && loop->dispatching && ep->unshut_batch == loop->batch)
		return false;
	ep->shut_seen = poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP));
	return ep->shut_seen;
}

/*
 * The peer closed, not just shut down writing. A zero-length send fails with EPIPE once the
 * peer stopped receiving (vsock checks peer_shutdown before anything else); a unix peer's
 * close shows as EPOLLHUP instead. No readiness says it for vsock: vsock_poll() reports
 * EPOLLHUP for a closed peer only once this side has shut down writing too.
 */
static bool peer_closed(int fd)
{
	return send(fd, "", 0, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno == EPIPE;
}

/* Only while the daemon carries bytes: an idle redirect holds no buffer. */
char *dir_buf(struct direction *dir)
{
	if (!dir->buf) {
		dir->buf = malloc(SYNC_BUF_SIZE);
		dir->buf_size = dir->buf ? SYNC_BUF_SIZE : 0;
	}
	return dir->buf;
}

/*
 * After a read of fd failed with errno: -errno, or 1 to read once more. A vsock socket in a
 * sockmap never reads 0 at EOF: vsock_bpf_recvmsg() answers EAGAIN. So EAGAIN from a read
 * made after the peer's shutdown was seen counts as EOF (0); the peer's data is queued before
 * its shutdown arrives, so nothing can follow. The poll comes only after an EAGAIN, and then
 * the read is repeated: a read that returned data needs no poll.
 */
static int read_failed(struct endpoint *ep, bool *shut)
{
	if (errno != EAGAIN)
		return -errno;
	if (*shut)
		return 0;
	if (!peer_shut_down(ep))
		return -EAGAIN;
	*shut = true;
	return 1;
}

/* Read what the source holds and write it on. Returns bytes read, 0 at EOF, or -EAGAIN/-errno. */
ssize_t forward_some(struct redirect *r, int src)
{
	struct direction *dir = &r->dir[src];
	bool shut = false;
	ssize_t n;
	int err;

	if (!flush_buf(r, src))
		return -EAGAIN;
	if (src == CLIENT && redirect_client_reads_held(r))
		return 0; /* its end, as a shutdown(SHUT_RD) would read */
	if (!dir_buf(dir))
		return -ENOMEM;
	for (;;) {
		n = recv(r->ep[src].fd, dir->buf, dir->buf_size, MSG_DONTWAIT);
		if (n >= 0)
			break;
		err = read_failed(&r->ep[src], &shut);
		if (err <= 0)
			return err;
	}
	dir->buf_len = n;
	flush_buf(r, src);
	return n;
}

/* Move what the pipe holds into the destination. 1: empty, 0: destination full. */
static int splice_flush(struct redirect *r, int src)
{
	struct direction *dir = &r->dir[src];
	struct endpoint *dst = &r->ep[1 - src];
	ssize_t n;

	while (dir->in_pipe) {
		if (dst->hup) {
			/* Nobody left to read it: a fresh pipe drops what the old one held. */
			safe_close(dir->pipe[0]);
			safe_close(dir->pipe[1]);
			dir->pipe[0] = dir->pipe[1] = -1;
			dir->in_pipe = 0;
			break;
		}
		n = splice(dir->pipe[0], NULL, dst->fd, NULL, dir->in_pipe,
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n < 0) {
			if (errno == EAGAIN || write_deferred(dir, errno))
				return 0;
			dst_failed(r, src, errno, dir->in_pipe);
			continue;
		}
		dir->in_pipe -= n;
		dir->user_bytes += n;
		dir->user_packets++;
	}
	return 1;
}

/* Send n bytes read into a stack buffer; what the destination cannot take yet waits in dir->buf. */
static ssize_t send_small(struct redirect *r, int src, const char *data, ssize_t n)
{
	struct direction *dir = &r->dir[src];
	struct endpoint *dst = &r->ep[1 - src];
	ssize_t k = 0, w;

	while (k < n && !dst->hup) {
		w = send(dst->fd, data + k, n - k, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EAGAIN || write_deferred(dir, errno))
				break;
			dst_failed(r, src, errno, n - k);
			break;
		}
		k += w;
		dir->user_bytes += w;
		dir->user_packets++;
	}
	if (k < n && !dst->hup) {
		if (!dir_buf(dir))
			return -ENOMEM;
		memcpy(dir->buf, data + k, n - k);
		dir->buf_off = 0;
		dir->buf_len = n - k;
	}
	return n;
}

static int open_pipe(struct direction *dir)
{
	if (dir->pipe[0] >= 0)
		return 0;
	if (pipe2(dir->pipe, O_NONBLOCK | O_CLOEXEC))
		return -errno;
	fcntl(dir->pipe[1], F_SETPIPE_SZ, SPLICE_PIPE_SIZE); /* a bigger pipe if allowed */
	return 0;
}

/* Like forward_some(), through the pipe. -EOPNOTSUPP: no splice here, use forward_some(). */
static ssize_t splice_some(struct redirect *r, int src)
{
	struct direction *dir = &r->dir[src];
	bool shut = false;
	ssize_t n;
	int err;

	if (!flush_buf(r, src) || !splice_flush(r, src))
		return -EAGAIN;
	if (src == CLIENT && redirect_client_reads_held(r))
		return 0;
again:
	if (dir->pipe[0] < 0) {
		/*
		 * No pipe until a read fills SMALL_READ: a reply of a few bytes costs a recv and a
		 * send instead of pipe2, fcntl, two splices and two closes, and an idle redirect
		 * keeps 2 fds, not 4.
		 */
		char small[SMALL_READ];

		n = recv(r->ep[src].fd, small, sizeof(small), MSG_DONTWAIT);
		if (n < 0) {
			err = read_failed(&r->ep[src], &shut);
			if (err > 0)
				goto again;
			return err;
		}
		if (n == 0)
			return 0;
		if ((size_t)n == sizeof(small) && open_pipe(dir))
			dir->no_splice = true;
		return send_small(r, src, small, n);
	}
	n = splice(r->ep[src].fd, NULL, dir->pipe[1], NULL, SPLICE_PIPE_SIZE,
		   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	if (n < 0) {
		if (errno == EINVAL)
			return -EOPNOTSUPP;
		err = read_failed(&r->ep[src], &shut);
		if (err > 0)
			goto again;
		return err;
	}
	dir->in_pipe = n;
	splice_flush(r, src);
	return n;
}

int dir_pipe_into_buf(struct direction *dir)
{
	size_t held = dir->buf_len - dir->buf_off, want = held + dir->in_pipe;
	ssize_t n;
	int err;

	if (!dir->in_pipe)
		return 0;
	err = dir_buf_reserve(dir, want);
	if (err)
		return err;
	while (dir->in_pipe) {
		n = read(dir->pipe[0], dir->buf + dir->buf_len, dir->in_pipe);
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		dir->buf_len += (size_t)n;
		dir->in_pipe -= (size_t)n;
	}
	return 0;
}

int dir_buf_reserve(struct direction *dir, size_t want)
{
	size_t held = dir->buf_len - dir->buf_off, size;
	char *buf;

	if (dir->buf && dir->buf_size >= want) {
		memmove(dir->buf, dir->buf + dir->buf_off, held);
		dir->buf_off = 0;
		dir->buf_len = held;
		return 0;
	}
	size = want > SYNC_BUF_SIZE ? want : SYNC_BUF_SIZE;
	buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	if (held && dir->buf)
		memcpy(buf, dir->buf + dir->buf_off, held);
	free(dir->buf);
	dir->buf = buf;
	dir->buf_size = size;
	dir->buf_off = 0;
	dir->buf_len = held;
	return 0;
}

/*
 * A vsock socket shut down for reading never hands out its receive queue again
 * (__vsock_connectible_recvmsg() answers 0 once RCV_SHUTDOWN is set, whatever is queued):
 * before a close on request shuts the client down, copy what it has queued into the buffer,
 * after what the daemon holds already, however full the target is. Peeked, not read: a read
 * returns credit (a credit update as soon as the queue is empty), and a client writing at
 * full speed refilled the queue as fast as it was read, for as long as the loop went on. One
 * peek of the whole queue (SIOCINQ where vsock answers it, Linux 6.17, else the socket's
 * buffer size, all the peer may send unread) gives none; what arrives after it and before
 * the shutdown is lost, and counted where SIOCINQ works (dir->queued_peeked).
 */
void dir_take_queued(struct redirect *r, int src)
{
	struct direction *dir = &r->dir[src];
	int q = socket_inq(r->ep[src].fd);
	ssize_t n;

	if (dir->state != DIR_COPY || dir_pipe_into_buf(dir))
		return;
	if (q < 0)
		q = socket_vsock_buffer(r->ep[src].fd);
	if (q <= 0 || dir_buf_reserve(dir, dir->buf_len - dir->buf_off + (size_t)q))
		return;
	n = recv(r->ep[src].fd, dir->buf + dir->buf_len, (size_t)q, MSG_PEEK | MSG_DONTWAIT);
	if (n <= 0)
		return;
	dir->buf_len += (size_t)n;
	dir->queued_peeked = (size_t)n;
}

void dir_forget_queued(struct direction *dir)
{
	dir->buf_len -= dir->queued_peeked;
	dir->queued_peeked = 0;
}

/*
 * The daemon's own direction: copy until EOF, then pass the half-close on. Out of the target
 * it splices: the target is never a verdict source, so its own queue holds all its data
 * (splicing a source would miss what its psock holds). In user space nothing is in a
 * sockhash, and both ways splice.
 */
void dir_copy(struct redirect *r, int src)
{
	struct direction *dir = &r->dir[src];
	struct endpoint *dst = &r->ep[1 - src];
	ssize_t n;

	do {
		n = -EOPNOTSUPP;
		if (source_never_mapped(r, src) && !dir->no_splice)
			n = splice_some(r, src);
		if (n == -EOPNOTSUPP) {
			dir->no_splice = true;
			n = forward_some(r, src);
		}
	} while (n > 0 && !dir_pending(dir));
	if (n == -EAGAIN && src == TARGET && redirect_phase_stops_target(r->phase))
		n = 0;
	if (n > 0 || n == -EAGAIN)
		return; /* blocked on the destination, or nothing more yet */
	if (n < 0 || peer_closed(r->ep[src].fd)) {
		/* A reset, not an end: the client must not read a clean EOF. */
		if (n < 0 && src == TARGET && !r->cut)
			redirect_log(r, LOG_WARNING, "reading from the target failed: %s; what it "
				     "sent after the bytes delivered is lost", strerror((int)-n));
		if (n < 0 && src == TARGET)
			redirect_cut(r);
		redirect_enter(r, REDIRECT_PEER_GONE); /* the source is broken, or its peer gone */
		/*
		 * Nothing the daemon reads the other way can reach it now. A vsock peer's close
		 * shows no EPOLLHUP (poll_endpoint()): without this, a user-space pair would wait
		 * for the client forever, and the client for its EOF.
		 */
		if (r->dir[1 - src].state == DIR_COPY && !dir_pending(&r->dir[1 - src]))
			dir_enter(r, 1 - src, DIR_DEST_GONE);
	}
	if (dir_pending(dir))
		return;
	/*
	 * A source that is gone for good (the server closed) closes the pair right away, so the
	 * client's next write fails with EPIPE instead of vanishing; otherwise pass the half-close.
	 */
	if (!dst->hup && !r->ep[src].hup && !redirect_phase_closing(r->phase))
		shutdown(dst->fd, SHUT_WR);
	dir_enter(r, src, DIR_FINISHED);
}
