// SPDX-License-Identifier: GPL-2.0-only
/*
 * The transition tables of a stream redirect (redirect_phase.c): the lives a redirect has,
 * and the promises the rest of the daemon relies on. A closing pair never runs again, a
 * direction the daemon copies never goes back to the kernel, every state can still end,
 * and nothing leaves the end.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "redirect_phase.h"

/* Apply events in turn from phase p; the phase reached, or -EINVAL at the first refused. */
static int phase_walk(enum redirect_phase p, const enum redirect_event *ev, size_t n)
{
	int to = p;
	size_t i;

	for (i = 0; i < n && to >= 0; i++)
		to = redirect_phase_after(to, ev[i]);
	return to;
}

static int dir_walk(enum dir_state s, const enum dir_event *ev, size_t n)
{
	int to = s;
	size_t i;

	for (i = 0; i < n && to >= 0; i++)
		to = dir_state_after(to, ev[i]);
	return to;
}

/* The phase (state) reached from `from` by the events given, in turn. */
#define PHASE_WALK(from, ...)                                                                      \
	phase_walk(from, (const enum redirect_event[]){__VA_ARGS__},                               \
		   sizeof((const enum redirect_event[]){__VA_ARGS__}) /                            \
		       sizeof(enum redirect_event))
#define DIR_WALK(from, ...)                                                                        \
	dir_walk(from, (const enum dir_event[]){__VA_ARGS__},                                      \
		 sizeof((const enum dir_event[]){__VA_ARGS__}) / sizeof(enum dir_event))

static void test_lives_of_a_redirect(void **state)
{
	(void)state;
	/* The ordinary life: connect, one side closes, the pair is freed. */
	assert_int_equal(
	    PHASE_WALK(PHASE_CONNECTING, REDIRECT_CONNECTED, REDIRECT_PEER_GONE, REDIRECT_FREED),
	    PHASE_FREED);
	/* A restart: handed over at once, freed by the old instance. */
	assert_int_equal(PHASE_WALK(PHASE_CONNECTING, REDIRECT_CONNECTED, REDIRECT_HANDED_OVER,
				    REDIRECT_FREED),
			 PHASE_FREED);
	/* Whatever it is doing: still dialling, or closing. */
	assert_int_equal(PHASE_WALK(PHASE_CONNECTING, REDIRECT_HANDED_OVER), PHASE_HANDED_OVER);
	assert_int_equal(PHASE_WALK(PHASE_RUNNING, REDIRECT_IDLE_TIMEOUT, REDIRECT_HANDED_OVER),
			 PHASE_HANDED_OVER);
	/* A connect that fails or is cancelled frees it from connecting. */
	assert_int_equal(redirect_phase_after(PHASE_CONNECTING, REDIRECT_FREED), PHASE_FREED);
	/* `close ID`, then the client hangs up: still stopping (the target stays unread). */
	assert_int_equal(PHASE_WALK(PHASE_RUNNING, REDIRECT_CLOSE_REQUESTED, REDIRECT_PEER_GONE),
			 PHASE_STOPPING);
	/* The peer first, then the daemon stops: the request wins. */
	assert_int_equal(PHASE_WALK(PHASE_RUNNING, REDIRECT_PEER_GONE, REDIRECT_CLOSE_REQUESTED),
			 PHASE_STOPPING);
	/* The idle timeout is remembered through a later stop (its messages differ). */
	assert_int_equal(PHASE_WALK(PHASE_RUNNING, REDIRECT_IDLE_TIMEOUT, REDIRECT_CLOSE_REQUESTED,
				    REDIRECT_PEER_GONE),
			 PHASE_IDLE_CLOSING);
	/* Nothing of a handed-over pair changes in the old instance but its free. */
	assert_int_equal(PHASE_WALK(PHASE_RUNNING, REDIRECT_HANDED_OVER, REDIRECT_PEER_GONE),
			 -EINVAL);
}

static void test_phase_promises(void **state)
{
	int p, ev, to;

	(void)state;
	for (p = 0; p < NR_REDIRECT_PHASES; p++) {
		/* Every phase but the end can be freed, exactly once. */
		to = redirect_phase_after(p, REDIRECT_FREED);
		assert_int_equal(to, p == PHASE_FREED ? -EINVAL : PHASE_FREED);
		for (ev = 0; ev < NR_REDIRECT_EVENTS; ev++) {
			to = redirect_phase_after(p, ev);
			if (to < 0) {
				assert_int_equal(to, -EINVAL);
				continue;
			}
			assert_true(to < NR_REDIRECT_PHASES);
			/* Nothing goes back to dialling. */
			assert_int_not_equal(to, PHASE_CONNECTING);
			/* Only the hand-over leads there, from any live phase. */
			if (to == PHASE_HANDED_OVER)
				assert_true(ev == REDIRECT_HANDED_OVER);
			if (ev == REDIRECT_HANDED_OVER)
				assert_true(to == PHASE_HANDED_OVER ||
					    (p == PHASE_HANDED_OVER || p == PHASE_FREED));
			/* A closing pair never runs again (or is handed over as closing). */
			if (redirect_phase_closing(p))
				assert_true(redirect_phase_closing(to) || to == PHASE_FREED ||
					    to == PHASE_HANDED_OVER);
			/* A close on request is never forgotten. */
			if (redirect_phase_stops_target(p))
				assert_true(redirect_phase_stops_target(to) || to == PHASE_FREED ||
					    to == PHASE_HANDED_OVER);
			/* The sockets of a handed-over pair are the next instance's. */
			if (p == PHASE_HANDED_OVER)
				assert_int_equal(to, PHASE_FREED);
		}
	}
	/* A close cannot happen to a pair still dialling: it is freed at once instead. */
	assert_int_equal(redirect_phase_after(PHASE_CONNECTING, REDIRECT_CLOSE_REQUESTED), -EINVAL);
	assert_int_equal(redirect_phase_after(PHASE_CONNECTING, REDIRECT_PEER_GONE), -EINVAL);
	/* Out of range. */
	assert_int_equal(redirect_phase_after(NR_REDIRECT_PHASES, REDIRECT_FREED), -EINVAL);
	assert_int_equal(redirect_phase_after(PHASE_RUNNING, NR_REDIRECT_EVENTS), -EINVAL);
}

/* Every phase is reached from connecting, and the end is reached from every phase. */
static void test_phases_reachable(void **state)
{
	bool seen[NR_REDIRECT_PHASES] = {[PHASE_CONNECTING] = true};
	bool grew = true;
	int p, ev, to;

	(void)state;
	while (grew) {
		grew = false;
		for (p = 0; p < NR_REDIRECT_PHASES; p++)
			for (ev = 0; seen[p] && ev < NR_REDIRECT_EVENTS; ev++) {
				to = redirect_phase_after(p, ev);
				if (to >= 0 && !seen[to])
					seen[to] = grew = true;
			}
	}
	for (p = 0; p < NR_REDIRECT_PHASES; p++)
		assert_true(seen[p]);
}

static void test_lives_of_a_direction(void **state)
{
	(void)state;
	/* Synced, inserted, a late skb swept and caught up, then EOF and the drain. */
	assert_int_equal(DIR_WALK(DIR_SYNC, DIR_INSERTED, DIR_LEFT_BEHIND, DIR_SWEPT, DIR_CAUGHT_UP,
				  DIR_SOURCE_ENDED, DIR_FINISHED),
			 DIR_DONE);
	/* EOF before the insert. */
	assert_int_equal(DIR_WALK(DIR_SYNC, DIR_SOURCE_ENDED, DIR_FINISHED), DIR_DONE);
	/* The insert refused: the daemon carries it to the end. */
	assert_int_equal(DIR_WALK(DIR_SYNC, DIR_INSERT_FAILED, DIR_FINISHED), DIR_DONE);
	/* A unix server's shutdown() while the kernel carries. */
	assert_int_equal(DIR_WALK(DIR_SYNC, DIR_INSERTED, DIR_TARGET_UNHASHED), DIR_COPY);
	/* A unix client's shutdown(SHUT_RD): the backlog first, then the daemon carries. */
	assert_int_equal(DIR_WALK(DIR_OPEN, DIR_SOURCE_UNHASHED, DIR_BACKLOG_SENT, DIR_FINISHED),
			 DIR_DONE);
	/* ... or its EOF comes first: the drain takes the rest. */
	assert_int_equal(DIR_WALK(DIR_OPEN, DIR_SOURCE_UNHASHED, DIR_SOURCE_ENDED), DIR_DRAINING);
	/* Only the kernel's way can lose its source. */
	assert_int_equal(DIR_WALK(DIR_SYNC, DIR_SOURCE_UNHASHED), -EINVAL);
	/* EOF in the middle of a catch-up drains what the verdict held. */
	assert_int_equal(DIR_WALK(DIR_OPEN, DIR_LEFT_BEHIND, DIR_SWEPT, DIR_SOURCE_ENDED),
			 DIR_DRAINING);
	/* An open gate is not swept twice without a catch-up between. */
	assert_int_equal(DIR_WALK(DIR_OPEN, DIR_LEFT_BEHIND, DIR_LEFT_BEHIND), -EINVAL);
}

static void test_direction_promises(void **state)
{
	bool ends[NR_DIR_STATES] = {[DIR_DONE] = true};
	bool grew = true;
	int s, ev, to;

	(void)state;
	for (s = 0; s < NR_DIR_STATES; s++)
		for (ev = 0; ev < NR_DIR_EVENTS; ev++) {
			to = dir_state_after(s, ev);
			if (to < 0) {
				assert_int_equal(to, -EINVAL);
				continue;
			}
			assert_true(to < NR_DIR_STATES);
			/* Nothing goes back to the sync before the insert. */
			assert_int_not_equal(to, DIR_SYNC);
			/* What the daemon has read it carries for good: a verdict could overtake.
			 */
			if (s == DIR_COPY)
				assert_int_equal(to, DIR_DONE);
			/* A drain ends; it never hands the source back to the kernel. */
			if (s == DIR_DRAINING)
				assert_int_equal(to, DIR_DONE);
			/* The gate opens only through a catch-up, or at the insert. */
			if (to == DIR_OPEN)
				assert_true((s == DIR_CATCHUP && ev == DIR_CAUGHT_UP) ||
					    (s == DIR_SYNC && ev == DIR_INSERTED));
		}
	for (s = 0; s < NR_DIR_STATES; s++) {
		/* A destination that is gone ends every direction at once. */
		to = dir_state_after(s, DIR_DEST_GONE);
		assert_int_equal(to, s == DIR_DONE ? -EINVAL : DIR_DONE);
		/* The end is final. */
		for (ev = 0; s == DIR_DONE && ev < NR_DIR_EVENTS; ev++)
			assert_int_equal(dir_state_after(s, ev), -EINVAL);
	}
	/* Every state can still end without DIR_DEST_GONE: each has a way to DIR_DONE. */
	while (grew) {
		grew = false;
		for (s = 0; s < NR_DIR_STATES; s++)
			for (ev = 0; !ends[s] && ev < NR_DIR_EVENTS; ev++) {
				to = dir_state_after(s, ev);
				if (ev != DIR_DEST_GONE && to >= 0 && ends[to])
					ends[s] = grew = true;
			}
	}
	for (s = 0; s < NR_DIR_STATES; s++)
		assert_true(ends[s]);
	assert_int_equal(dir_state_after(NR_DIR_STATES, DIR_FINISHED), -EINVAL);
	assert_int_equal(dir_state_after(DIR_OPEN, NR_DIR_EVENTS), -EINVAL);
}

static void test_names(void **state)
{
	int i;

	(void)state;
	for (i = 0; i < NR_REDIRECT_PHASES; i++)
		assert_string_not_equal(redirect_phase_name(i), "?");
	for (i = 0; i < NR_REDIRECT_EVENTS; i++)
		assert_string_not_equal(redirect_event_name(i), "?");
	for (i = 0; i < NR_DIR_STATES; i++)
		assert_string_not_equal(dir_state_name(i), "?");
	for (i = 0; i < NR_DIR_EVENTS; i++)
		assert_string_not_equal(dir_event_name(i), "?");
	assert_string_equal(redirect_phase_name(NR_REDIRECT_PHASES), "?");
	assert_string_equal(dir_event_name(NR_DIR_EVENTS), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lives_of_a_redirect), cmocka_unit_test(test_phase_promises),
	    cmocka_unit_test(test_phases_reachable),	cmocka_unit_test(test_lives_of_a_direction),
	    cmocka_unit_test(test_direction_promises),	cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
