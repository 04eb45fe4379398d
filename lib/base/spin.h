/* SPDX-License-Identifier: MIT */
/*
 * Polling windows: how long a thread polls for a reply before it sleeps.
 * rpcrdma_clnt_call() and the libtirpc CLIENT (RPCRDMA_CLSET_SPIN_US) use
 * the adaptive one by default, the libtirpc listeners a fixed one
 * (RPCRDMA_SVCSET_SPIN_US); RPCRDMA_SPIN_US in the environment sets them.
 */
#ifndef RPCRDMA_SPIN_H
#define RPCRDMA_SPIN_H

#include <stdbool.h>
#include <stdint.h>

/* The adaptive window: the same value as <rpcrdma/tirpc.h>'s. */
#define RPCRDMA_SPIN_AUTO 0xffffffffu

/* The longest fixed window, in microseconds: one second. */
#define RPCRDMA_SPIN_MAX_US 1000000u

/*
 * The adaptive window (RPCRDMA_SPIN_AUTO) polls at most this long: about
 * what a sleep and the wake-up after it cost a thread (ski rental: polling
 * longer than a sleep costs can lose more than it saves).
 */
#define RPCRDMA_SPIN_AUTO_MAX 50u

/* While the adaptive window is closed, one call in this many polls the longest one. */
#define RPCRDMA_SPIN_PROBE 16u

/*
 * An adaptive window that did not pay (no reply in it, or the thread lost
 * its CPU while it polled) is skipped for the next calls: 1, then twice as
 * many after each such window, up to this many; one that pays halves the
 * count. On a machine with no core to spare, polling takes the CPU that
 * the replier or another process needs, and loses more than a sleep costs.
 */
#define RPCRDMA_SPIN_BACKOFF_MAX 256u

/*
 * Consecutive polls this far apart (microseconds): the thread did not run
 * in between (preempted, or its virtual CPU was). One poll of an idle
 * client takes well under a microsecond.
 */
#define RPCRDMA_SPIN_GAP_US 20

/*
 * A caller's window. With RPCRDMA_SPIN_AUTO, est follows how long its
 * replies took to come (an average that weighs the last one 1/8), and the
 * window is twice that plus a little, or none once replies take longer
 * than RPCRDMA_SPIN_AUTO_MAX. Learning goes on while it sleeps; and since a
 * reply timed through a sleep includes the wake-up, a closed window still
 * polls the longest window once every RPCRDMA_SPIN_PROBE calls, so that quick
 * replies open it again where wake-ups are slow. Each window's outcome
 * counts too (rpcrdma_spin_paid()): one that did not pay is skipped for a
 * while (RPCRDMA_SPIN_BACKOFF_MAX).
 */
struct rpcrdma_spin {
	unsigned int us;			/* a fixed window, or RPCRDMA_SPIN_AUTO */
	uint32_t est;				/* RPCRDMA_SPIN_AUTO: reply time, 1/16 us */
	uint32_t closed;			/* calls made while closed */
	uint32_t backoff;			/* calls to skip after a window that did not pay */
	uint32_t skip;				/* of those, still to skip */
};

/* RPCRDMA_SPIN_US from the environment, checked; @unset when it is not set. */
unsigned int rpcrdma_spin_default(unsigned int unset);

/* Set @s to @us (RPCRDMA_SPIN_AUTO, or at most RPCRDMA_SPIN_MAX_US). */
void rpcrdma_spin_set(struct rpcrdma_spin *s, unsigned int us);

/* A reply came @waited_us after the thread began to look for it. */
void rpcrdma_spin_learn(struct rpcrdma_spin *s, int64_t waited_us);

/*
 * The adaptive window just polled @paid: true if the reply came in it and
 * the thread kept its CPU throughout; false if it ran out, or the thread
 * was descheduled while polling (RPCRDMA_SPIN_GAP_US). A fixed window
 * ignores it.
 */
void rpcrdma_spin_paid(struct rpcrdma_spin *s, bool paid);

static inline bool rpcrdma_spin_auto(const struct rpcrdma_spin *s)
{
	return s->us == RPCRDMA_SPIN_AUTO;
}

/* How long to poll before a sleep, in microseconds, as learnt so far. */
static inline unsigned int rpcrdma_spin_window(const struct rpcrdma_spin *s)
{
	uint32_t est = s->est / 16;

	if (!rpcrdma_spin_auto(s))
		return s->us;
	if (est > RPCRDMA_SPIN_AUTO_MAX)
		return 0;
	return 2 * est + 4 < RPCRDMA_SPIN_AUTO_MAX ? 2 * est + 4 : RPCRDMA_SPIN_AUTO_MAX;
}

/* The window of the next call: none while skipping, rpcrdma_spin_window(), or a probe. */
static inline unsigned int rpcrdma_spin_next(struct rpcrdma_spin *s)
{
	unsigned int w;

	if (!rpcrdma_spin_auto(s))
		return s->us;
	if (s->skip) {
		s->skip--;
		return 0;
	}
	w = rpcrdma_spin_window(s);
	if (w || s->est == UINT32_MAX)
		return w;
	return ++s->closed % RPCRDMA_SPIN_PROBE ? 0 : RPCRDMA_SPIN_AUTO_MAX;
}

#endif /* RPCRDMA_SPIN_H */
