/* SPDX-License-Identifier: MIT */
/*
 * The receive chain (lib/core/ep.c): the WRs linked from a free list, and what
 * leaves the list once a post took all of them or stopped at a bad WR.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ep.h"

#define NBUFS 8

struct buf {
	struct list_node node;
	struct ibv_recv_wr wr;
	int id;
};

static struct buf bufs[NBUFS];
static struct list_node free_list;

#define WR_OFF RPCRDMA_RECV_WR_OFF(struct buf, node, wr)

/* @n buffers on the free list, in order. */
static void fill(int n)
{
	int i;

	list_init(&free_list);
	for (i = 0; i < n; i++) {
		bufs[i].id = i;
		bufs[i].wr.next = (void *)&bufs[i];	/* garbage the chain must overwrite */
		list_add_tail(&bufs[i].node, &free_list);
	}
}

/* The ids left on the free list, in order, into @ids; returns how many. */
static int left(int *ids)
{
	struct list_node *pos;
	int n = 0;

	list_for_each(pos, &free_list) {
		assert_true(n < NBUFS);
		assert_ptr_equal(pos->next->prev, pos);
		ids[n++] = list_entry(pos, struct buf, node)->id;
	}
	assert_ptr_equal(free_list.prev->next, &free_list);
	return n;
}

/* The chain holds the first @n buffers, in order, and ends there. */
static void check_chain(const struct rpcrdma_recv_chain *c, int n)
{
	struct ibv_recv_wr *wr = c->first;
	int i;

	assert_int_equal(c->count, n);
	for (i = 0; i < n; i++) {
		assert_ptr_equal(wr, &bufs[i].wr);
		wr = wr->next;
	}
	assert_null(wr);
}

static void test_all_posted(void **state)
{
	struct rpcrdma_recv_chain c;
	int ids[NBUFS];

	(void)state;
	fill(NBUFS);
	rpcrdma_recv_chain(&c, &free_list, 5, WR_OFF);
	check_chain(&c, 5);
	assert_int_equal(rpcrdma_recv_chain_posted(&free_list, &c, NULL), 5);
	assert_int_equal(left(ids), 3);
	assert_int_equal(ids[0], 5);
	assert_int_equal(ids[2], 7);
}

static void test_whole_list(void **state)
{
	struct rpcrdma_recv_chain c;
	int ids[NBUFS];

	(void)state;
	fill(NBUFS);
	rpcrdma_recv_chain(&c, &free_list, UINT32_MAX, WR_OFF);
	check_chain(&c, NBUFS);
	assert_ptr_equal(c.rest, &free_list);
	assert_int_equal(rpcrdma_recv_chain_posted(&free_list, &c, NULL), NBUFS);
	assert_int_equal(left(ids), 0);
	/* The list works on: a buffer given back goes on it again. */
	list_add_tail(&bufs[3].node, &free_list);
	assert_int_equal(left(ids), 1);
	assert_int_equal(ids[0], 3);
}

static void test_stopped_at_bad(void **state)
{
	struct rpcrdma_recv_chain c;
	int ids[NBUFS];

	(void)state;
	fill(6);
	rpcrdma_recv_chain(&c, &free_list, 6, WR_OFF);
	check_chain(&c, 6);
	/* The post took two: the third and those after it stay, in order. */
	assert_int_equal(rpcrdma_recv_chain_posted(&free_list, &c, &bufs[2].wr), 2);
	assert_int_equal(left(ids), 4);
	assert_int_equal(ids[0], 2);
	assert_int_equal(ids[3], 5);
}

static void test_empty(void **state)
{
	struct rpcrdma_recv_chain c;
	int ids[NBUFS];

	(void)state;
	fill(0);
	rpcrdma_recv_chain(&c, &free_list, 4, WR_OFF);
	assert_int_equal(c.count, 0);
	assert_null(c.first);
	fill(3);
	rpcrdma_recv_chain(&c, &free_list, 0, WR_OFF);
	assert_int_equal(c.count, 0);
	assert_null(c.first);
	assert_int_equal(left(ids), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_posted),
		cmocka_unit_test(test_whole_list),
		cmocka_unit_test(test_stopped_at_bad),
		cmocka_unit_test(test_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
