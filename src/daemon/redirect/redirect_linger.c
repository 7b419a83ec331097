// SPDX-License-Identifier: GPL-2.0-only
/*
 * The last bytes toward a TCP peer, before the pair closes.
 *
 * When both ways are done, the daemon has handed every byte to the destination socket, but
 * a TCP peer that reads slowly may not have them yet: they wait in our socket's send queue.
 * Closing the socket then is safe only if nothing is unread on it. tcp_close() sends a reset
 * instead of a FIN when its receive queue holds data, and tcp_write_queue_purge() throws
 * away what the send queue still held (the same happens at the peer's reset). A server that
 * answered something nobody reads (a client that shut down reading, or was killed) would
 * lose the end of the client's stream, and read ECONNRESET where the stream was cut.
 *
 * So the pair waits: each TCP endpoint with bytes its peer has not acknowledged (SIOCOUTQ)
 * is shut for writing, so that its FIN follows the last byte, and the pair closes once the
 * queue is empty or nothing left it for drain-timeout (the loss is then logged). What the
 * peer sent and nobody read stays unread, so the close still resets it: its honest end, since
 * those bytes did not arrive (docs/behaviour-matrix.md). By then ours are in its receive
 * queue, which a reset does not purge: a peer that reads on after the error gets them all.
 *
 * Two kinds of client get no FIN before their last byte is acknowledged. One the daemon
 * closes (a stop, close ID, the idle timeout) and that still sends: a TCP socket shut for
 * reading resets its connection at the first byte that arrives once its FIN has gone
 * (tcp_rcv_state_process(), FIN_WAIT1 and FIN_WAIT2 with RCV_SHUTDOWN), and the reset throws
 * away what it had not delivered yet. A client on the kernel path is shut for reading at the
 * close; one in user space is only read no more (redirect_client_reads_held()), since a FIN
 * passed on with a half-close may have gone already. Its close after the wait sends a FIN,
 * or a reset if it had sent more, behind bytes it already has. And one whose target broke (a
 * reset, ENOBUFS, a failed write: redirect_cut()), which must not end in a clean EOF, taking
 * a cut stream for a complete one: it is closed with SO_LINGER 0, a reset, read as
 * ECONNRESET once the bytes before it are read.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "redirect_internal.h"
#include "sockopt.h"

/* How often the queue is looked at: from 5 ms, doubled while it does not move, to 160 ms. */
#define LINGER_POLL_USEC     (5 * USEC_PER_MSEC)
#define LINGER_POLL_MAX_USEC (160 * USEC_PER_MSEC)

static bool is_tcp(const struct redirect *r, int i)
{
	const struct redirect_config *rc = r->owner->rc;

	return i == TARGET ? rc->connect.kind == ADDRESS_TCP_CONNECT
			   : rc->listen.kind == ADDRESS_TCP_LISTEN;
}

static const char *end_name(int i)
{
	return i == TARGET ? "target" : "client";
}

/* Endpoint i waits for its peer to take our last bytes before a FIN, if any (above). */
static bool fin_after_ack(const struct redirect *r, int i)
{
	return i == CLIENT && (r->cut || redirect_phase_stops_target(r->phase));
}

/* Still waiting for endpoint i's peer; *poll: when to look again (from now). */
static bool endpoint_lingers(struct redirect *r, int i, uint64_t now, uint64_t *poll)
{
	struct endpoint *ep = &r->ep[i];
	uint64_t limit = (uint64_t)r->env->cfg->drain_timeout_ms * USEC_PER_MSEC;
	int q, err;

	/*
	 * Not ep->broken: epoll says HUP once both halves are shut, ours and the peer's, while
	 * our bytes may still be on their way. A reset closes the connection (TCP_CLOSE), and
	 * leaves SIOCOUTQ as it was.
	 */
	if (ep->fd < 0 || ep->linger_over || !is_tcp(r, i))
		return false;
	q = socket_outq(ep->fd);
	if (q <= 0)
		return false;
	ep->linger_over = true; /* unless it is waited for, below */
	/* drain-timeout = 0: close at once, whatever is still on its way */
	if (!limit) {
		redirect_log(r, LOG_INFO, "closing with %d bytes the %s has not acknowledged "
			     "(drain-timeout = 0)", q, end_name(i));
		return false;
	}
	err = socket_error(ep->fd);
	if (err || socket_tcp_closed(ep->fd)) {
		redirect_log(r, LOG_WARNING, "the %s's connection was reset with %d bytes not "
			     "acknowledged%s%s; they are lost",
			     end_name(i), q, err ? ": " : "", err ? strerror(-err) : "");
		return false;
	}
	if (!ep->linger_shut) {
		ep->linger_shut = true;
		ep->linger_outq = q;
		ep->linger_usec = now;
		ep->linger_poll_usec = LINGER_POLL_USEC;
		if (fin_after_ack(r, i)) {
			redirect_log(r, LOG_DEBUG, "waiting for the client to take %d bytes before "
				     "the %s", q, r->cut ? "reset" : "close");
		} else if (shutdown(ep->fd, SHUT_WR) && errno != ENOTCONN) {
			redirect_log_errno(r, LOG_WARNING, -errno, "shutting the %s down for "
					   "writing, with %d bytes not acknowledged", end_name(i), q);
			return false;
		} else {
			redirect_log(r, LOG_DEBUG, "waiting for the %s to take %d bytes before the "
				     "close", end_name(i), q);
		}
	}
	if (q != ep->linger_outq) {
		ep->linger_outq = q;
		ep->linger_usec = now;
		ep->linger_poll_usec = LINGER_POLL_USEC;
	} else if (ep->linger_poll_usec < LINGER_POLL_MAX_USEC) {
		ep->linger_poll_usec *= 2; /* a reader that stalls is asked less often */
	}
	if (now - ep->linger_usec <= limit) {
		ep->linger_over = false;
		*poll = ep->linger_poll_usec;
		return true;
	}
	redirect_log(r, LOG_WARNING,
		     "the %s took nothing for drain-timeout (%u ms); %d bytes it has not "
		     "acknowledged are lost",
		     end_name(i), r->env->cfg->drain_timeout_ms, q);
	return false;
}

bool redirect_linger(struct redirect *r, uint64_t now, uint64_t *deadline)
{
	uint64_t poll = 0, next = UINT64_MAX;
	bool waiting = false;
	int i;

	for (i = 0; i < 2; i++)
		if (endpoint_lingers(r, i, now, &poll)) {
			waiting = true;
			if (poll < next)
				next = poll;
		}
	if (waiting)
		*deadline = now + next;
	return waiting;
}

/*
 * A TCP socket shut for reading resets its connection at the first byte that arrives after
 * its FIN, which a half-close passed on may have sent long before a close: a user-space TCP
 * client is not shut down for reading at a close, the daemon just reads it no more
 * (splice_some(), forward_some()). What it sends after stays unread, and the close that
 * follows the linger resets it then, behind every byte it was owed.
 */
bool redirect_client_reads_held(const struct redirect *r)
{
	return r->userspace && is_tcp(r, CLIENT) && redirect_phase_stops_target(r->phase);
}

void redirect_cut(struct redirect *r)
{
	r->cut = true;
}

void redirect_close_client(struct redirect *r)
{
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	struct endpoint *ep = &r->ep[CLIENT];

	if (!r->cut || ep->fd < 0 || !is_tcp(r, CLIENT) || r->phase == PHASE_HANDED_OVER)
		return;
	if (setsockopt(ep->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)))
		redirect_log_errno(r, LOG_WARNING, -errno, "SO_LINGER 0 on the client: its close "
				   "may read as a clean end");
	else
		redirect_log(r, LOG_INFO, "resetting the client: the target's stream was cut");
}
