// SPDX-License-Identifier: GPL-2.0-only
/*
 * The redirects' epoll set: every endpoint of every stream redirect, watched by the event
 * loop as one source, and the batch that steps the redirects it reports.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "redirect_internal.h"

/*
 * Every redirect endpoint is in one epoll set of our own, which the event loop watches as a
 * single source (owned by the loop, freed with it). sd-event dispatches one source per
 * iteration and asks epoll again every time: with an io source per endpoint, N redirects
 * ready at once (N clients closing) cost N epoll_wait()s over all N ready sockets, which made
 * tearing down 5,000 idle redirects take 3 s. Here one dispatch steps a whole batch. It also
 * saves two sd-event sources (RSS) per redirect.
 */
#define EVENTS_BATCH 256

/*
 * The redirects' epoll set has events: step each redirect that has some, once, with what epoll
 * said of both its endpoints (poll_endpoint() asks the kernel only what the interest mask
 * could not have reported).
 */
static int on_events(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct redirect_loop *events = userdata;
	struct redirect *ready[EVENTS_BATCH], *r;
	struct epoll_event ev[EVENTS_BATCH];
	int n, nr = 0, i;

	(void)s;
	(void)revents;
	/* A zero timeout never sleeps, so never sees EINTR. More than a batch ready: the set
	 * stays readable and the loop comes back after the other sources had their turn. */
	n = epoll_wait(fd, ev, EVENTS_BATCH, 0);
	events->batch++;
	events->dispatching = true;
	events->batch_pass = true;
	for (i = 0; i < n; i++) {
		struct endpoint *ep = ev[i].data.ptr;

		r = ep->owner;
		if (r->batch != events->batch) {
			r->batch = events->batch;
			r->ep[CLIENT].revents = r->ep[TARGET].revents = 0;
			ready[nr++] = r;
		}
		ep->revents = ev[i].events;
	}
	for (i = 0; i < nr; i++) {
		r = ready[i];
		if (r->phase == PHASE_FREED) /* freed earlier in the batch */
			continue;
		r->batch_fresh = true;
		redirect_step(r);
		r->batch_fresh = false;
	}
	/* One iterator pass for every drain that began in the batch (dir_drained()). */
	events->batch_pass = false;
	while (events->wants_pass) {
		r = events->wants_pass;
		events->wants_pass = r->next_wants_pass;
		r->wants_pass = false;
		if (r->phase != PHASE_FREED)
			redirect_step(r);
	}
	events->dispatching = false;
	while (events->zombies) {
		r = events->zombies;
		events->zombies = r->next_zombie;
		free(r);
	}
	return 0;
}

static void events_destroyed(void *userdata)
{
	struct redirect_loop *events = userdata;

	events->src = NULL;
	events->epfd = -1; /* closed with the source */
}

/* The redirects' epoll set, made with the first redirect. */
static int events_open(struct redirect_env *env)
{
	struct redirect_loop *events = &env->loop;
	int fd, err;

	if (events->src)
		return 0;
	fd = epoll_create1(EPOLL_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = sd_event_add_io(env->event, &events->src, fd, EPOLLIN, on_events, events);
	if (err < 0) {
		close(fd);
		return err;
	}
	sd_event_source_set_io_fd_own(events->src, true);
	sd_event_source_set_description(events->src, "redirects");
	sd_event_source_set_destroy_callback(events->src, events_destroyed);
	/* The loop owns it from here and frees it with itself. */
	sd_event_source_set_floating(events->src, true);
	sd_event_source_unref(events->src);
	events->epfd = fd;
	return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	(void)s;
	(void)usec;
	redirect_step(userdata);
	return 0;
}

/*
 * Level-triggered interest per endpoint. EPOLLIN only while the daemon itself reads (a
 * source is never read once its gate is open), EPOLLRDHUP while the kernel carries the
 * direction, EPOLLOUT while the daemon has bytes for it. epoll reports EPOLLHUP and EPOLLERR
 * whatever the mask, so a closed endpoint is dropped from the loop.
 */
int redirect_update_io(struct redirect *r)
{
	struct redirect_loop *events = &r->env->loop;
	struct epoll_event e;
	int i, err;

	for (i = 0; i < 2; i++) {
		struct direction *out = &r->dir[i];    /* data arriving on this endpoint */
		struct direction *in = &r->dir[1 - i]; /* data the daemon writes into it */
		uint32_t ev = 0;

		if (r->phase == PHASE_CONNECTING) {
			ev = i == TARGET ? EPOLLOUT : 0;
		} else {
			if ((out->state == DIR_SYNC || out->state == DIR_COPY ||
			     out->state == DIR_CATCHUP) &&
			    !dir_pending(out) && !out->sync_held_back)
				ev |= EPOLLIN | EPOLLRDHUP;
			if (out->state == DIR_OPEN || out->state == DIR_SWEEP ||
			    out->state == DIR_UNHASHED)
				ev |= EPOLLRDHUP;
			if (dir_pending(in) && now_usec() >= in->retry_usec)
				ev |= EPOLLOUT;
		}
		/*
		 * An endpoint a write failed on (hup) is dropped, unless the kernel still carries
		 * the way from it: a killed client's EPIPE can come before its HUP is seen, and
		 * only that HUP starts the drain that passes its end on to the target. Nor while
		 * the daemon still reads it and epoll has said no HUP: a client that shut down
		 * reading fails the daemon's writes with EPIPE and goes on sending.
		 */
		if ((r->ep[i].hup && out->state != DIR_OPEN && out->state != DIR_SWEEP &&
		     out->state != DIR_UNHASHED && (r->ep[i].broken || out->state == DIR_DONE)) ||
		    (r->phase == PHASE_CONNECTING && !ev)) {
			if (r->ep[i].watched)
				epoll_ctl(events->epfd, EPOLL_CTL_DEL, r->ep[i].fd, NULL);
			r->ep[i].watched = false;
			continue;
		}
		if (r->ep[i].watched && r->ep[i].events == ev)
			continue;
		err = events_open(r->env);
		if (err < 0)
			return err;
		e.events = ev;
		e.data.ptr = &r->ep[i]; /* which endpoint is ready: on_events() */
		r->ep[i].owner = r;
		if (epoll_ctl(events->epfd, r->ep[i].watched ? EPOLL_CTL_MOD : EPOLL_CTL_ADD,
			      r->ep[i].fd, &e))
			return -errno;
		r->ep[i].watched = true;
		r->ep[i].events = ev;
	}
	return 0;
}

/* The timer source is made the first time one is needed: most redirects never need one. */
int redirect_arm_timer(struct redirect *r, uint64_t deadline)
{
	if (!deadline) {
		sd_event_source_set_enabled(r->timer, SD_EVENT_OFF);
		return 0;
	}
	if (!r->timer)
		return sd_event_add_time(r->env->event, &r->timer, CLOCK_MONOTONIC, deadline,
					 TIMER_ACCURACY_USEC, on_timer, r);
	sd_event_source_set_time(r->timer, deadline);
	sd_event_source_set_enabled(r->timer, SD_EVENT_ONESHOT);
	return 0;
}

#ifdef VSOCKMAP_TEST_KNOBS
/* A test knob's value: the number in environment variable name, 0 if unset or negative. */
static long test_knob(const char *name)
{
	const char *e = getenv(name);
	long v = e ? strtol(e, NULL, 10) : 0;

	return v < 0 ? 0 : v;
}
#endif

void redirect_loop_init(struct redirect_loop *loop)
{
	*loop = (struct redirect_loop){.epfd = -1};
#ifdef VSOCKMAP_TEST_KNOBS
	/* Test builds only: the package's daemon has no knob (Makefile, TEST_KNOBS). */
	loop->test_insert_delay_us = test_knob("VSOCKMAPD_TEST_INSERT_DELAY_US");
	loop->test_insert_queued = test_knob("VSOCKMAPD_TEST_INSERT_QUEUED");
	loop->test_step_delay_us = test_knob("VSOCKMAPD_TEST_STEP_DELAY_US");
#endif
}

void redirect_events_forget(struct redirect *r)
{
	int i;

	for (i = 0; i < 2; i++)
		if (r->ep[i].watched)
			epoll_ctl(r->env->loop.epfd, EPOLL_CTL_DEL, r->ep[i].fd, NULL);
}

bool redirect_events_defer_free(struct redirect *r)
{
	struct redirect_loop *events = &r->env->loop;

	if (!events->dispatching)
		return false;
	/* The batch may still hold events for it: free() it once the batch is done. */
	r->next_zombie = events->zombies;
	events->zombies = r;
	return true;
}

bool redirect_events_in_batch(const struct redirect *r)
{
	return r->env->loop.batch_pass;
}

void redirect_events_want_pass(struct redirect *r)
{
	struct redirect_loop *events = &r->env->loop;

	if (r->wants_pass)
		return;
	r->wants_pass = true;
	r->next_wants_pass = events->wants_pass;
	events->wants_pass = r;
}
