/* SPDX-License-Identifier: MIT */
/*
 * The polling window (lib/base/spin.c): a fixed window stays as
 * set; the adaptive one follows how soon replies come, closes while they
 * are slow (probing now and then), opens again once they are quick, is
 * skipped for a while after a window that did not pay, and never opens on
 * one CPU.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "spin.h"

static void learn_n(struct rpcrdma_spin *s, int64_t us, int n)
{
	while (n-- > 0)
		rpcrdma_spin_learn(s, us);
}

static void test_fixed(void **state)
{
	struct rpcrdma_spin s;

	rpcrdma_spin_set(&s, 30);
	assert_false(rpcrdma_spin_auto(&s));
	assert_int_equal(rpcrdma_spin_window(&s), 30);
	learn_n(&s, 5000, 50);
	assert_int_equal(rpcrdma_spin_window(&s), 30);
	rpcrdma_spin_set(&s, 0);
	learn_n(&s, 1, 50);
	assert_int_equal(rpcrdma_spin_window(&s), 0);
}

static bool two_cpus(void)
{
	cpu_set_t set;

	return !sched_getaffinity(0, sizeof(set), &set) && CPU_COUNT(&set) > 1;
}

static void test_adaptive(void **state)
{
	unsigned int i, probes;
	struct rpcrdma_spin s;

	if (!two_cpus())
		skip();
	rpcrdma_spin_set(&s, RPCRDMA_SPIN_AUTO);
	assert_true(rpcrdma_spin_auto(&s));
	/* It starts open, as for replies in half the longest window. */
	assert_int_equal(rpcrdma_spin_window(&s), RPCRDMA_SPIN_AUTO_MAX);
	/* Quick replies: twice their time and 4 us; open, it never probes. */
	learn_n(&s, 2, 100);
	assert_int_equal(rpcrdma_spin_window(&s), 8);
	for (i = 0; i < 2 * RPCRDMA_SPIN_PROBE; i++)
		assert_int_equal(rpcrdma_spin_next(&s), 8);
	/* Slow ones close it, but for a probe of the longest window now and then... */
	learn_n(&s, 500, 100);
	assert_int_equal(rpcrdma_spin_window(&s), 0);
	probes = 0;
	for (i = 0; i < 10 * RPCRDMA_SPIN_PROBE; i++) {
		unsigned int w = rpcrdma_spin_next(&s);

		assert_true(w == 0 || w == RPCRDMA_SPIN_AUTO_MAX);
		probes += w != 0;
	}
	assert_int_equal(probes, 10);
	/* ...and quick ones, timed through the sleeps, open it again. */
	learn_n(&s, 10, 100);
	assert_int_equal(rpcrdma_spin_window(&s), 24);
	/* Replies just inside the longest window: capped. */
	learn_n(&s, 40, 100);
	assert_int_equal(rpcrdma_spin_window(&s), RPCRDMA_SPIN_AUTO_MAX);
	/* A reply that took hours or a clock gone back: bounded, no overflow. */
	learn_n(&s, INT64_MAX, 1000);
	assert_int_equal(rpcrdma_spin_window(&s), 0);
	learn_n(&s, -5, 200);
	assert_int_equal(rpcrdma_spin_window(&s), 4);
}

/* Calls in a row that get no window, from the next one on. */
static unsigned int skipped(struct rpcrdma_spin *s)
{
	unsigned int n = 0;

	while (rpcrdma_spin_next(s) == 0)
		assert_true(++n <= RPCRDMA_SPIN_BACKOFF_MAX);
	return n;
}

/*
 * Windows that do not pay are skipped for 1, 2, 4... calls, up to
 * RPCRDMA_SPIN_BACKOFF_MAX; one that pays halves that; a fixed window never skips.
 */
static void test_backoff(void **state)
{
	unsigned int i, want;
	struct rpcrdma_spin s;

	if (!two_cpus())
		skip();
	rpcrdma_spin_set(&s, RPCRDMA_SPIN_AUTO);
	learn_n(&s, 2, 100);
	assert_int_equal(rpcrdma_spin_next(&s), 8);
	rpcrdma_spin_paid(&s, true);
	assert_int_equal(rpcrdma_spin_next(&s), 8);
	for (want = 1; want < RPCRDMA_SPIN_BACKOFF_MAX; want *= 2) {
		rpcrdma_spin_paid(&s, false);
		assert_int_equal(skipped(&s), want);
	}
	for (i = 0; i < 3; i++) {
		rpcrdma_spin_paid(&s, false);
		assert_int_equal(skipped(&s), RPCRDMA_SPIN_BACKOFF_MAX);
	}
	/* Two windows that pay: a quarter, then the next that does not pay doubles it. */
	rpcrdma_spin_paid(&s, true);
	rpcrdma_spin_paid(&s, true);
	assert_int_equal(rpcrdma_spin_next(&s), 8);
	rpcrdma_spin_paid(&s, false);
	assert_int_equal(skipped(&s), RPCRDMA_SPIN_BACKOFF_MAX / 2);
	/* A fixed window is the caller's: outcomes change nothing. */
	rpcrdma_spin_set(&s, 30);
	for (i = 0; i < 10; i++) {
		rpcrdma_spin_paid(&s, false);
		assert_int_equal(rpcrdma_spin_next(&s), 30);
	}
	/* Setting the window again forgets the backoff. */
	rpcrdma_spin_set(&s, RPCRDMA_SPIN_AUTO);
	rpcrdma_spin_paid(&s, false);
	rpcrdma_spin_set(&s, RPCRDMA_SPIN_AUTO);
	assert_int_equal(rpcrdma_spin_next(&s), RPCRDMA_SPIN_AUTO_MAX);
}

/* Restricted to one CPU, the adaptive window never polls: the replier could not run. */
static void test_one_cpu(void **state)
{
	struct rpcrdma_spin s;
	unsigned int i;
	cpu_set_t all, one;

	assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	rpcrdma_spin_set(&s, RPCRDMA_SPIN_AUTO);
	assert_int_equal(sched_setaffinity(0, sizeof(all), &all), 0);
	assert_true(rpcrdma_spin_auto(&s));
	assert_int_equal(rpcrdma_spin_window(&s), 0);
	learn_n(&s, 1, 100);
	assert_int_equal(rpcrdma_spin_window(&s), 0);
	for (i = 0; i < 2 * RPCRDMA_SPIN_PROBE; i++)
		assert_int_equal(rpcrdma_spin_next(&s), 0);
	/* A fixed window is the caller's to choose, one CPU or not. */
	rpcrdma_spin_set(&s, 20);
	assert_int_equal(rpcrdma_spin_window(&s), 20);
}

/* RPCRDMA_SPIN_US: unset gives the caller's default; garbage gives 0. */
static void test_env(void **state)
{
	unsetenv("RPCRDMA_SPIN_US");
	assert_int_equal(rpcrdma_spin_default(RPCRDMA_SPIN_AUTO), RPCRDMA_SPIN_AUTO);
	assert_int_equal(rpcrdma_spin_default(0), 0);
	setenv("RPCRDMA_SPIN_US", "", 1);
	assert_int_equal(rpcrdma_spin_default(RPCRDMA_SPIN_AUTO), RPCRDMA_SPIN_AUTO);
	setenv("RPCRDMA_SPIN_US", "250", 1);
	assert_int_equal(rpcrdma_spin_default(RPCRDMA_SPIN_AUTO), 250);
	setenv("RPCRDMA_SPIN_US", "auto", 1);
	assert_int_equal(rpcrdma_spin_default(RPCRDMA_SPIN_AUTO), 0);
	setenv("RPCRDMA_SPIN_US", "1000001", 1);
	assert_int_equal(rpcrdma_spin_default(RPCRDMA_SPIN_AUTO), 0);
	unsetenv("RPCRDMA_SPIN_US");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixed),
		cmocka_unit_test(test_adaptive),
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_one_cpu),
		cmocka_unit_test(test_env),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
