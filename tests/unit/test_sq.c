/* SPDX-License-Identifier: MIT */
/*
 * The send queue's ledger (lib/core/ep.h, ep.c): slots taken and given back,
 * the one FIFO of chains waiting for them (rpcrdma_sq_post/wake/flush), and
 * the slots unsignaled chain ends hold until a signaled one covers them.
 * No verbs: the waiters' post and abort only record what ran, in order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ep.h"

#define NWAITERS 6

struct chain {
	struct rpcrdma_sq_waiter w;
	int id;
};

static struct rpcrdma_ep ep;
static struct rpcrdma_stats stats;
static struct chain chains[NWAITERS];
static int posted[NWAITERS], nposted;
static int aborted[NWAITERS], naborted;
static uint32_t avail_at_post[NWAITERS];

/* What a waiter's post must find: its slots taken already. */
static void chain_post(struct rpcrdma_ep *e, struct rpcrdma_sq_waiter *w)
{
	assert_ptr_equal(e, &ep);
	assert_true(nposted < NWAITERS);
	avail_at_post[nposted] = e->sq_avail;
	posted[nposted++] = container_of(w, struct chain, w)->id;
}

static void chain_abort(struct rpcrdma_ep *e, struct rpcrdma_sq_waiter *w)
{
	assert_ptr_equal(e, &ep);
	assert_true(naborted < NWAITERS);
	aborted[naborted++] = container_of(w, struct chain, w)->id;
}

/* An endpoint with @slots free send-queue slots and no waiter. */
static void ep_init(uint32_t slots)
{
	memset(&ep, 0, sizeof(ep));
	memset(&stats, 0, sizeof(stats));
	list_init(&ep.sq_waiters);
	ep.stats = &stats;
	ep.sq_avail = slots;
	nposted = naborted = 0;
}

static struct rpcrdma_sq_waiter *chain(int id, uint32_t sqecount)
{
	struct chain *c = &chains[id];

	c->id = id;
	c->w.sqecount = sqecount;
	c->w.post = chain_post;
	c->w.abort = chain_abort;
	return &c->w;
}

static unsigned int waiters(void)
{
	struct list_node *pos;
	unsigned int n = 0;

	list_for_each(pos, &ep.sq_waiters)
		n++;
	return n;
}

/* Slots are taken while they last, and given back. */
static void test_get_put(void **state)
{
	(void)state;
	ep_init(4);
	assert_true(rpcrdma_sq_get(&ep, 3));
	assert_int_equal(ep.sq_avail, 1);
	assert_false(rpcrdma_sq_get(&ep, 2));
	assert_int_equal(ep.sq_avail, 1);
	assert_true(rpcrdma_sq_get(&ep, 1));
	assert_false(rpcrdma_sq_get(&ep, 1));
	rpcrdma_sq_put(&ep, 4);
	assert_int_equal(ep.sq_avail, 4);
}

/* A chain that fits with no one waiting is posted at once, uncounted. */
static void test_post_at_once(void **state)
{
	(void)state;
	ep_init(4);
	rpcrdma_sq_post(&ep, chain(0, 3));
	assert_int_equal(nposted, 1);
	assert_int_equal(avail_at_post[0], 1);
	assert_int_equal(waiters(), 0);
	assert_int_equal(stats.sq_waits, 0);
	/* One that does not fit waits, and is counted. */
	rpcrdma_sq_post(&ep, chain(1, 2));
	assert_int_equal(nposted, 1);
	assert_int_equal(waiters(), 1);
	assert_int_equal(stats.sq_waits, 1);
	assert_int_equal(ep.sq_avail, 1);
}

/*
 * Waiters go in the order they came, as slots come back: a small chain
 * never passes a large one ahead of it, neither through rpcrdma_sq_post()
 * nor through rpcrdma_sq_get().
 */
static void test_fifo_order(void **state)
{
	(void)state;
	ep_init(0);
	rpcrdma_sq_post(&ep, chain(0, 3));
	rpcrdma_sq_post(&ep, chain(1, 1));
	rpcrdma_sq_post(&ep, chain(2, 2));
	assert_int_equal(waiters(), 3);
	assert_int_equal(stats.sq_waits, 3);

	/* Room for chain 1, not for chain 0 ahead of it: nothing goes. */
	rpcrdma_sq_put(&ep, 2);
	rpcrdma_sq_wake(&ep);
	assert_int_equal(nposted, 0);
	assert_false(rpcrdma_sq_get(&ep, 1));
	rpcrdma_sq_post(&ep, chain(3, 1));
	assert_int_equal(nposted, 0);
	assert_int_equal(waiters(), 4);
	assert_int_equal(ep.sq_avail, 2);

	/* Chain 0 fits: it goes, and chain 1 behind it, with the slots each took. */
	rpcrdma_sq_put(&ep, 2);
	rpcrdma_sq_wake(&ep);
	assert_int_equal(nposted, 2);
	assert_int_equal(posted[0], 0);
	assert_int_equal(avail_at_post[0], 1);
	assert_int_equal(posted[1], 1);
	assert_int_equal(avail_at_post[1], 0);
	assert_int_equal(waiters(), 2);

	/* Chains 0 and 1 complete: 2 and 3 go, in order, and the slots add up. */
	rpcrdma_sq_put(&ep, 4);
	rpcrdma_sq_wake(&ep);
	assert_int_equal(nposted, 4);
	assert_int_equal(posted[2], 2);
	assert_int_equal(posted[3], 3);
	assert_int_equal(waiters(), 0);
	assert_int_equal(ep.sq_avail, 1);
	assert_int_equal(naborted, 0);
}

/* A close pending stops the wake-ups: nothing is posted on a closing endpoint. */
static void test_wake_not_when_closing(void **state)
{
	(void)state;
	ep_init(0);
	rpcrdma_sq_post(&ep, chain(0, 1));
	rpcrdma_ep_close_deferred(&ep);
	rpcrdma_sq_put(&ep, 4);
	rpcrdma_sq_wake(&ep);
	assert_int_equal(nposted, 0);
	assert_int_equal(waiters(), 1);
	assert_int_equal(ep.sq_avail, 4);
}

/* The endpoint closes: every waiter is handed back, in order, none posted. */
static void test_flush_on_close(void **state)
{
	int i;

	(void)state;
	ep_init(1);
	for (i = 0; i < 4; i++)
		rpcrdma_sq_post(&ep, chain(i, 2));
	assert_int_equal(waiters(), 4);
	rpcrdma_ep_close_deferred(&ep);
	rpcrdma_sq_flush(&ep);
	assert_int_equal(naborted, 4);
	for (i = 0; i < 4; i++)
		assert_int_equal(aborted[i], i);
	assert_int_equal(nposted, 0);
	assert_int_equal(waiters(), 0);
	/* The slots were never taken: the ledger is as it was. */
	assert_int_equal(ep.sq_avail, 1);
	/* A second flush finds nothing. */
	rpcrdma_sq_flush(&ep);
	assert_int_equal(naborted, 4);
}

/* A waiter given up on (a timeout) leaves the queue; the rest keep their order. */
static void test_unwait(void **state)
{
	(void)state;
	ep_init(0);
	rpcrdma_sq_post(&ep, chain(0, 2));
	rpcrdma_sq_post(&ep, chain(1, 1));
	rpcrdma_sq_post(&ep, chain(2, 1));
	rpcrdma_sq_unwait(&chains[0].w);
	rpcrdma_sq_put(&ep, 1);
	rpcrdma_sq_wake(&ep);
	assert_int_equal(nposted, 1);
	assert_int_equal(posted[0], 1);
	rpcrdma_sq_put(&ep, 1);
	rpcrdma_sq_wake(&ep);
	assert_int_equal(nposted, 2);
	assert_int_equal(posted[1], 2);
	assert_int_equal(waiters(), 0);
}

/* Unsignaled ends may hold an eighth of the queue, up to what the owner asks. */
static void test_unsignaled_reserve(void **state)
{
	(void)state;
	ep_init(256);
	assert_int_equal(rpcrdma_sq_reserve_unsignaled(&ep, 16), 240);
	assert_int_equal(ep.sq_unsig_max, 16);
	ep_init(64);
	assert_int_equal(rpcrdma_sq_reserve_unsignaled(&ep, 16), 56);
	assert_int_equal(ep.sq_unsig_max, 8);
	/* Too small a queue: every end signaled. */
	ep_init(7);
	assert_int_equal(rpcrdma_sq_reserve_unsignaled(&ep, 16), 7);
	assert_true(rpcrdma_sq_get(&ep, 1));
	assert_false(rpcrdma_sq_unsignaled(&ep, 1));
	assert_int_equal(rpcrdma_sq_signaled(&ep), 0);
}

/*
 * One Send in sq_unsig_max + 1 is signaled: the others hold their slots,
 * never more than sq_unsig_max, and the signaled one's completion gives
 * them all back with its own. Taken and held always add up to the queue.
 */
static void test_unsignaled_ledger(void **state)
{
	uint32_t total = 64, depth, covered = 0, i, signaled = 0;

	(void)state;
	ep_init(total);
	depth = rpcrdma_sq_reserve_unsignaled(&ep, 16);
	assert_int_equal(ep.sq_unsig_max, 8);
	assert_int_equal(depth, 56);
	for (i = 0; i < 3 * 9; i++) {
		assert_true(rpcrdma_sq_get(&ep, 1));
		if (rpcrdma_sq_unsignaled(&ep, 1)) {
			assert_true(ep.sq_unsig <= ep.sq_unsig_max);
			assert_int_equal(ep.sq_avail + ep.sq_unsig, total);
			continue;
		}
		/* The ninth: signaled, covering the eight before it. */
		assert_int_equal(i % 9, 8);
		covered = rpcrdma_sq_signaled(&ep);
		assert_int_equal(covered, 8);
		assert_int_equal(ep.sq_unsig, 0);
		assert_int_equal(ep.sq_avail, total - 9);
		/* Its completion. */
		rpcrdma_sq_put(&ep, 1 + covered);
		assert_int_equal(ep.sq_avail, total);
		signaled++;
	}
	assert_int_equal(signaled, 3);
}

/*
 * A chain of several slots (a client's call with its binds) holds them all
 * when it goes unsignaled, never past sq_unsig_max: one that would pass it
 * is signaled, covers what is held, and gives it back with its own.
 */
static void test_unsignaled_chains(void **state)
{
	uint32_t total = 64, covered;

	(void)state;
	ep_init(total);
	rpcrdma_sq_reserve_unsignaled(&ep, 16);
	assert_int_equal(ep.sq_unsig_max, 8);
	assert_true(rpcrdma_sq_get(&ep, 3));
	assert_true(rpcrdma_sq_unsignaled(&ep, 3));
	assert_true(rpcrdma_sq_get(&ep, 3));
	assert_true(rpcrdma_sq_unsignaled(&ep, 3));
	assert_int_equal(ep.sq_unsig, 6);
	/* 6 + 3 > 8: this one is signaled. */
	assert_true(rpcrdma_sq_get(&ep, 3));
	assert_false(rpcrdma_sq_unsignaled(&ep, 3));
	assert_int_equal(ep.sq_unsig, 6);
	assert_int_equal(ep.sq_avail + ep.sq_unsig + 3, total);
	covered = rpcrdma_sq_signaled(&ep);
	assert_int_equal(covered, 6);
	rpcrdma_sq_put(&ep, 3 + covered);
	assert_int_equal(ep.sq_avail, total);
	/* Exactly up to the bound, then nothing more, not even one slot. */
	assert_true(rpcrdma_sq_get(&ep, 8));
	assert_true(rpcrdma_sq_unsignaled(&ep, 8));
	assert_true(rpcrdma_sq_get(&ep, 1));
	assert_false(rpcrdma_sq_unsignaled(&ep, 1));
	assert_int_equal(rpcrdma_sq_signaled(&ep), 8);
}

/*
 * The held slots are beyond what chains may take: a chain of the whole
 * depth waits while Sends in flight hold slots, and goes when the signaled
 * Send's completion gives back what it covered.
 */
static void test_unsignaled_wakes_waiter(void **state)
{
	uint32_t depth, covered, i;

	(void)state;
	ep_init(64);
	depth = rpcrdma_sq_reserve_unsignaled(&ep, 16);
	for (i = 0; i < 8; i++) {
		assert_true(rpcrdma_sq_get(&ep, 1));
		assert_true(rpcrdma_sq_unsignaled(&ep, 1));
	}
	assert_true(rpcrdma_sq_get(&ep, 1));
	assert_false(rpcrdma_sq_unsignaled(&ep, 1));
	covered = rpcrdma_sq_signaled(&ep);
	rpcrdma_sq_post(&ep, chain(0, depth));
	assert_int_equal(nposted, 0);
	assert_int_equal(waiters(), 1);
	rpcrdma_sq_put(&ep, 1 + covered);
	rpcrdma_sq_wake(&ep);
	assert_int_equal(nposted, 1);
	assert_int_equal(posted[0], 0);
	assert_int_equal(ep.sq_avail, 64 - depth);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get_put),
		cmocka_unit_test(test_post_at_once),
		cmocka_unit_test(test_fifo_order),
		cmocka_unit_test(test_wake_not_when_closing),
		cmocka_unit_test(test_flush_on_close),
		cmocka_unit_test(test_unwait),
		cmocka_unit_test(test_unsignaled_reserve),
		cmocka_unit_test(test_unsignaled_ledger),
		cmocka_unit_test(test_unsignaled_chains),
		cmocka_unit_test(test_unsignaled_wakes_waiter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
