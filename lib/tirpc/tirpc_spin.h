/* SPDX-License-Identifier: MIT */
/* The libtirpc adapters' polling windows (RPCRDMA_CLSET_SPIN_US, RPCRDMA_SVCSET_SPIN_US). */
#ifndef RPCRDMA_TIRPC_SPIN_H
#define RPCRDMA_TIRPC_SPIN_H

#include <stdbool.h>
#include <stdint.h>
#include <rpc/types.h>

#include <rpcrdma/tirpc.h>

/* The longest fixed window, in microseconds: one second. */
#define TIRPC_SPIN_MAX 1000000u

/*
 * The adaptive window (RPCRDMA_SPIN_AUTO) polls at most this long: about
 * what a sleep and the wake-up after it cost a thread (ski rental: polling
 * longer than a sleep costs can lose more than it saves).
 */
#define TIRPC_SPIN_AUTO_MAX 50u

/* While the adaptive window is closed, one call in this many polls the longest one. */
#define TIRPC_SPIN_PROBE 16u

/*
 * A CLIENT's window. With RPCRDMA_SPIN_AUTO, est follows how long its
 * replies took to come (an average that weighs the last one 1/8), and the
 * window is twice that plus a little, or none once replies take longer
 * than TIRPC_SPIN_AUTO_MAX. Learning goes on while it sleeps; and since a
 * reply timed through a sleep includes the wake-up, a closed window still
 * polls the longest window once every TIRPC_SPIN_PROBE calls, so that quick
 * replies open it again where wake-ups are slow.
 */
struct tirpc_spin {
	u_int us;				/* a fixed window, or RPCRDMA_SPIN_AUTO */
	uint32_t est;				/* RPCRDMA_SPIN_AUTO: reply time, 1/16 us */
	uint32_t closed;			/* calls made while closed */
};

/* RPCRDMA_SPIN_US from the environment, checked; @unset when it is not set. */
u_int tirpc_spin_default(u_int unset);

/* Set @s to @us (RPCRDMA_SPIN_AUTO, or at most TIRPC_SPIN_MAX). */
void tirpc_spin_set(struct tirpc_spin *s, u_int us);

/* A reply came @waited_us after the thread began to look for it. */
void tirpc_spin_learn(struct tirpc_spin *s, int64_t waited_us);

static inline bool tirpc_spin_auto(const struct tirpc_spin *s)
{
	return s->us == RPCRDMA_SPIN_AUTO;
}

/* How long to poll before a sleep, in microseconds, as learnt so far. */
static inline u_int tirpc_spin_window(const struct tirpc_spin *s)
{
	uint32_t est = s->est / 16;

	if (!tirpc_spin_auto(s))
		return s->us;
	if (est > TIRPC_SPIN_AUTO_MAX)
		return 0;
	return 2 * est + 4 < TIRPC_SPIN_AUTO_MAX ? 2 * est + 4 : TIRPC_SPIN_AUTO_MAX;
}

/* The window of the next call: tirpc_spin_window(), or a probe. */
static inline u_int tirpc_spin_next(struct tirpc_spin *s)
{
	u_int w = tirpc_spin_window(s);

	if (w || !tirpc_spin_auto(s) || s->est == UINT32_MAX)
		return w;
	return ++s->closed % TIRPC_SPIN_PROBE ? 0 : TIRPC_SPIN_AUTO_MAX;
}

#endif /* RPCRDMA_TIRPC_SPIN_H */
