/* SPDX-License-Identifier: MIT */
/*
 * The client's chunk registration (lib/xprtrdma/frwr.c) on its own: a
 * library client connected on softrdma to a raw server, whose free call
 * slot the test drives through frwr_map(), the binds, frwr_reminv(),
 * frwr_unmap_async()/_sync() and the frwr_wc_* handlers, with the raw
 * server reading and writing the windows to see what is open, and when.
 *
 * The rules: a window exposes exactly its segment, for reading (Read
 * chunk) or writing (Write and Reply chunks) only; after the reply every
 * window is invalidated, by the server (Send With Invalidate, RFC 8797) or
 * by a LOCAL_INV, before the call completes (the Requester fences its
 * memory from the Responder before the ULP sees the reply: RFC 8166
 * section 8.1, memory protection); a window is reused
 * only after an invalidation that succeeded, with a new rkey; one that saw
 * a flush or an error is deallocated.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rpcrdma/rpcrdma.h>

#include "../e2e/rawpeer.h"
#include "xprt_rdma.h"

#define WAIT_MS 5000
#define SEG 4096u

static struct rawpeer rp;
static struct rpcrdma_clnt *clnt;
static struct rpcrdma_xprt *x;
static struct rpcrdma_req *req;
static uint32_t sq_base;
static unsigned char local[4 * SEG];	/* the raw server's side of its Reads and Writes */
static unsigned char buf[4 * SEG];	/* the call's buffer */
static struct rpcrdma_segment segs[RPCRDMA_CLNT_MAX_SEGS];
static uint32_t nsegs;

static int connect_client(void)
{
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };

	memset(&rp, 0, sizeof(rp));
	attr.max_requests = 4;
	attr.max_segment = SEG;
	attr.connect_timeout_ms = WAIT_MS;
	return rawpeer_serve_client(&rp, &attr, NULL, 0, &clnt);
}

static int setup(void **state)
{
	(void)state;
	if (connect_client())
		return -1;
	x = rpcrdma_clnt_xprt(clnt);
	req = xprt_rdma_req_get(x);
	if (!req || !rawpeer_reg(&rp, local, sizeof(local), IBV_ACCESS_LOCAL_WRITE))
		return -1;
	sq_base = x->rx_ep.sq_avail;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 7 + 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	/*
	 * A case that failed with LOCAL_INVs in flight leaves their windows
	 * listed: the destroy's flush completes them on the call's slot.
	 */
	if (!(req->rl_flags & RPCRDMA_REQ_LINV_PENDING))
		frwr_release(x, req);
	req->rl_flags = 0;
	xprt_rdma_req_put(x, req);
	rpcrdma_clnt_destroy(clnt);
	rawpeer_close(&rp);
	return 0;
}

static unsigned int count(const struct list_node *head)
{
	const struct list_node *pos;
	unsigned int n = 0;

	list_for_each(pos, head)
		n++;
	return n;
}

static bool on_list(const struct list_node *head, const struct rpcrdma_mw *mw)
{
	const struct list_node *pos;

	list_for_each(pos, head)
		if (pos == &mw->mw_list)
			return true;
	return false;
}

/* The @i'th window the call lists. */
static struct rpcrdma_mw *registered(unsigned int i)
{
	struct list_node *pos = req->rl_registered.next;

	while (i--)
		pos = pos->next;
	assert_ptr_not_equal(pos, &req->rl_registered);
	return list_entry(pos, struct rpcrdma_mw, mw_list);
}

/* Poll the client's CQ until @flag leaves rl_flags (bounded). */
static void poll_until_clear(unsigned int flag)
{
	int64_t deadline = rpcrdma_now_ms() + WAIT_MS;

	while (req->rl_flags & flag) {
		assert_true(rpcrdma_ep_poll(&x->rx_ep, 16) >= 0);
		assert_true(rpcrdma_now_ms() < deadline);
	}
}

/*
 * Post the call's binds ahead of a 4-byte Send, as frwr_send() does, and
 * wait until the raw server has the Send (the binds before it are done:
 * RC order) and the client its completion, which gives the slots back.
 */
static void send_binds(void)
{
	unsigned char got[16];
	uint32_t posted = 0;

	memcpy(req->rl_buf, "frwr", 4);
	req->rl_sge.length = 4;
	req->rl_send_wr.send_flags = IBV_SEND_SIGNALED;
	req->rl_sq_extra = 0;
	req->rl_sqecount = 1 + req->rl_nmws;
	assert_true(rpcrdma_sq_get(&x->rx_ep, req->rl_sqecount));
	req->rl_flags |= RPCRDMA_REQ_SEND_PENDING;
	assert_int_equal(frwr_send_binds(x, req, &posted), 0);
	assert_int_equal(rawpeer_recv(&rp, got, sizeof(got), WAIT_MS), 4);
	poll_until_clear(RPCRDMA_REQ_SEND_PENDING);
	assert_int_equal(x->rx_ep.sq_avail, sq_base);
}

/* What the raw server's one RDMA op on segment @s returns. */
static int remote(enum ibv_wr_opcode op, const struct rpcrdma_segment *s)
{
	return rawpeer_rdma(&rp, op, local, s->length, s->offset, s->handle);
}

/*
 * A Read chunk of an unregistered buffer: a bounce buffer filled with it,
 * split at max_segment, one window per segment over exactly its bytes,
 * readable by the server once bound and not writable.
 */
static void test_map_read_chunk(void **state)
{
	const size_t len = 3 * SEG + 100;
	const unsigned char *bounce;
	uint32_t i;

	(void)state;
	assert_int_equal(frwr_map(x, req, RPCRDMA_BOUNCE_PAYLOAD, buf, len, true, segs, &nsegs),
			 0);
	assert_int_equal(nsegs, 4);
	assert_int_equal(req->rl_nmws, 4);
	assert_int_equal(count(&req->rl_registered), 4);
	bounce = req->rl_bounce[RPCRDMA_BOUNCE_PAYLOAD].data;
	assert_non_null(bounce);
	assert_memory_equal(bounce, buf, len);
	for (i = 0; i < nsegs; i++) {
		struct rpcrdma_mw *mw = registered(i);

		assert_int_equal(segs[i].length, i < 3 ? SEG : 100);
		assert_int_equal(segs[i].offset, (uintptr_t)bounce + i * SEG);
		assert_int_equal(segs[i].handle, mw->mw_rkey);
		assert_ptr_equal(mw->mw_req, req);
		assert_ptr_equal(mw->mw_cqe.done, frwr_wc_fastreg);
		assert_int_equal(mw->mw_wr.opcode, IBV_WR_BIND_MW);
		assert_int_equal(mw->mw_wr.send_flags & IBV_SEND_SIGNALED, 0);
		assert_int_equal(mw->mw_wr.bind_mw.bind_info.mw_access_flags,
				 IBV_ACCESS_REMOTE_READ);
		assert_int_equal(mw->mw_wr.bind_mw.bind_info.length, segs[i].length);
		assert_int_equal(mw->mw_wr.bind_mw.bind_info.addr, segs[i].offset);
		if (i)
			assert_int_not_equal(segs[i].handle, segs[i - 1].handle);
	}
	send_binds();
	for (i = 0; i < nsegs; i++) {
		memset(local, 0, sizeof(local));
		assert_int_equal(remote(IBV_WR_RDMA_READ, &segs[i]), IBV_WC_SUCCESS);
		assert_memory_equal(local, buf + i * SEG, segs[i].length);
	}
	/* One byte past the segment is not exposed. */
	segs[3].length++;
	assert_int_not_equal(remote(IBV_WR_RDMA_READ, &segs[3]), IBV_WC_SUCCESS);
}

/*
 * A Write chunk of registered memory: no bounce, the windows over the
 * application's own bytes, writable by the server, not readable.
 */
static void test_map_write_chunk_registered(void **state)
{
	static unsigned char region[2 * SEG];
	struct rpcrdma_mem *mem;

	(void)state;
	assert_int_equal(rpcrdma_clnt_mem_register(clnt, region, sizeof(region), &mem), 0);
	memset(region, 0, sizeof(region));
	assert_int_equal(frwr_map(x, req, RPCRDMA_BOUNCE_RESULT, region + 4, SEG + 8, false,
				  segs, &nsegs),
			 0);
	assert_int_equal(nsegs, 2);
	assert_null(req->rl_bounce[RPCRDMA_BOUNCE_RESULT].data);
	assert_ptr_equal(req->rl_mems[RPCRDMA_BOUNCE_RESULT], mem);
	assert_int_equal(segs[0].offset, (uintptr_t)(region + 4));
	assert_int_equal(segs[1].offset, (uintptr_t)(region + 4 + SEG));
	assert_int_equal(segs[1].length, 8);
	assert_int_equal(registered(0)->mw_wr.bind_mw.bind_info.mw_access_flags,
			 IBV_ACCESS_REMOTE_WRITE);
	send_binds();
	memset(local, 0x5a, sizeof(local));
	assert_int_equal(remote(IBV_WR_RDMA_WRITE, &segs[1]), IBV_WC_SUCCESS);
	assert_memory_equal(region + 4 + SEG, local, 8);
	assert_int_equal(region[4 + SEG + 8], 0);
	assert_int_not_equal(remote(IBV_WR_RDMA_READ, &segs[0]), IBV_WC_SUCCESS);
}

/*
 * After the reply, frwr_unmap_async() invalidates every window with one
 * chain of LOCAL_INVs: once its last completes the call is fenced (the old
 * rkeys reach nothing), the slots are back, and the windows are free to be
 * bound again, each with a new rkey.
 */
static void test_unmap_async(void **state)
{
	struct rpcrdma_mw *mw[2];
	uint32_t old[2], nmws;

	(void)state;
	assert_int_equal(frwr_map(x, req, RPCRDMA_BOUNCE_PAYLOAD, buf, SEG + 4, true, segs,
				  &nsegs),
			 0);
	mw[0] = registered(0);
	mw[1] = registered(1);
	old[0] = segs[0].handle;
	old[1] = segs[1].handle;
	nmws = x->rx_nmws;
	send_binds();
	assert_int_equal(remote(IBV_WR_RDMA_READ, &segs[1]), IBV_WC_SUCCESS);

	frwr_unmap_async(x, req);
	assert_true(req->rl_flags & RPCRDMA_REQ_LINV_PENDING);
	assert_ptr_equal(mw[0]->mw_cqe.done, frwr_wc_localinv);
	assert_ptr_equal(mw[1]->mw_cqe.done, frwr_wc_localinv_done);
	poll_until_clear(RPCRDMA_REQ_LINV_PENDING);
	assert_false(req->rl_flags & RPCRDMA_REQ_LINV_FAILED);
	assert_int_equal(req->rl_nmws, 0);
	assert_int_equal(req->rl_linv_pending, 0);
	assert_true(list_empty(&req->rl_registered));
	assert_int_equal(x->rx_ep.sq_avail, sq_base);
	assert_int_equal(x->rx_nmws, nmws);
	assert_true(on_list(&x->rx_mws_free, mw[0]));
	assert_true(on_list(&x->rx_mws_free, mw[1]));

	/* Reused, rebound with new rkeys. */
	assert_int_equal(frwr_map(x, req, RPCRDMA_BOUNCE_PAYLOAD, buf, SEG + 4, true, segs,
				  &nsegs),
			 0);
	assert_int_equal(x->rx_nmws, nmws);
	assert_true(registered(0) == mw[0] || registered(0) == mw[1]);
	assert_true(registered(1) == mw[0] || registered(1) == mw[1]);
	assert_true(segs[0].handle != old[0] && segs[0].handle != old[1]);
	assert_true(segs[1].handle != old[0] && segs[1].handle != old[1]);

	/* The old rkey reaches nothing (this error ends the connection). */
	segs[1].handle = old[1];
	assert_int_not_equal(remote(IBV_WR_RDMA_READ, &segs[1]), IBV_WC_SUCCESS);
}

/*
 * The server invalidated one window with its Send (RFC 8797 remote
 * invalidation): frwr_reminv() frees it without a LOCAL_INV, the others
 * are invalidated by frwr_unmap_sync(), which returns once they are. An
 * rkey the call never offered is refused and closes the connection.
 */
static void test_reminv_and_sync(void **state)
{
	struct rpcrdma_mw *mw1;

	(void)state;
	assert_int_equal(frwr_map(x, req, RPCRDMA_BOUNCE_REPLY, buf, 2 * SEG + 4, false, segs,
				  &nsegs),
			 0);
	assert_int_equal(nsegs, 3);
	mw1 = registered(1);
	send_binds();

	assert_true(frwr_reminv(x, req, segs[1].handle));
	assert_int_equal(req->rl_nmws, 2);
	assert_int_equal(count(&req->rl_registered), 2);
	assert_false(on_list(&req->rl_registered, mw1));
	assert_true(on_list(&x->rx_mws_free, mw1));
	assert_false(x->rx_ep.close_pending);

	assert_int_equal(frwr_unmap_sync(x, req), 0);
	assert_true(req->rl_wake);
	assert_false(req->rl_flags & RPCRDMA_REQ_LINV_PENDING);
	assert_int_equal(req->rl_nmws, 0);
	assert_true(list_empty(&req->rl_registered));
	assert_int_equal(x->rx_ep.sq_avail, sq_base);

	/* Retired already, or never offered: refused, and the connection goes. */
	assert_false(frwr_reminv(x, req, segs[1].handle));
	assert_true(x->rx_ep.close_pending);
	assert_int_not_equal(remote(IBV_WR_RDMA_WRITE, &segs[0]), IBV_WC_SUCCESS);
}

static struct ibv_wc wc_for(struct rpcrdma_mw *mw, enum ibv_wc_status status,
			    enum ibv_wc_opcode opcode)
{
	return (struct ibv_wc){ .wr_id = rpcrdma_cqe_id(&mw->mw_cqe), .status = status,
				.opcode = opcode, .qp_num = x->rx_ep.qp->qp_num };
}

/*
 * The LOCAL_INV handlers, given completions as the CQ would: success
 * frees a window for reuse; a flush (the connection went) marks it bad, it
 * is deallocated, and the call's reply is void; the last one ends the
 * pending state either way. Each returns its slot.
 */
static void test_localinv_completions(void **state)
{
	struct ibv_cq cq = { .cq_context = NULL };
	struct rpcrdma_mw *mw[3];
	struct ibv_wc wc;
	uint32_t nmws;

	(void)state;
	cq.cq_context = x;
	assert_int_equal(frwr_map(x, req, RPCRDMA_BOUNCE_PAYLOAD, buf, 3 * SEG, true, segs,
				  &nsegs),
			 0);
	mw[0] = registered(0);
	mw[1] = registered(1);
	mw[2] = registered(2);
	nmws = x->rx_nmws;
	/* As frwr_unmap_segments() leaves it once its chain is posted. */
	assert_true(rpcrdma_sq_get(&x->rx_ep, 3));
	req->rl_flags |= RPCRDMA_REQ_LINV_PENDING;
	req->rl_linv_pending = 3;

	wc = wc_for(mw[0], IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
	frwr_wc_localinv(&cq, &wc);
	assert_int_equal(req->rl_linv_pending, 2);
	assert_int_equal(req->rl_nmws, 2);
	assert_true(on_list(&x->rx_mws_free, mw[0]));
	assert_false(mw[0]->mw_bad);
	assert_int_equal(x->rx_ep.sq_avail, sq_base - 2);
	assert_false(req->rl_flags & RPCRDMA_REQ_LINV_FAILED);
	assert_false(x->rx_ep.close_pending);

	wc = wc_for(mw[1], IBV_WC_WR_FLUSH_ERR, IBV_WC_LOCAL_INV);
	frwr_wc_localinv(&cq, &wc);
	assert_int_equal(req->rl_linv_pending, 1);
	assert_int_equal(req->rl_nmws, 1);
	assert_int_equal(x->rx_nmws, nmws - 1);	/* deallocated, never reused */
	assert_int_equal(count(&x->rx_mws_free), 1);
	assert_true(req->rl_flags & RPCRDMA_REQ_LINV_FAILED);
	assert_true(x->rx_ep.close_pending);
	assert_int_equal(x->rx_ep.sq_avail, sq_base - 1);
	assert_true(req->rl_flags & RPCRDMA_REQ_LINV_PENDING);

	wc = wc_for(mw[2], IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
	frwr_wc_localinv_done(&cq, &wc);
	assert_false(req->rl_flags & RPCRDMA_REQ_LINV_PENDING);
	assert_true(req->rl_flags & RPCRDMA_REQ_LINV_FAILED);
	assert_int_equal(req->rl_linv_pending, 0);
	assert_int_equal(req->rl_nmws, 0);
	assert_true(on_list(&x->rx_mws_free, mw[2]));
	assert_int_equal(x->rx_ep.sq_avail, sq_base);
}

/* The synchronous unmap's last LOCAL_INV wakes its waiter, even when it failed. */
static void test_localinv_wake(void **state)
{
	struct ibv_cq cq = { .cq_context = NULL };
	struct ibv_wc wc;
	struct rpcrdma_mw *mw;
	uint32_t nmws;

	(void)state;
	cq.cq_context = x;
	assert_int_equal(frwr_map(x, req, RPCRDMA_BOUNCE_PAYLOAD, buf, 64, true, segs, &nsegs),
			 0);
	mw = registered(0);
	nmws = x->rx_nmws;
	assert_true(rpcrdma_sq_get(&x->rx_ep, 1));
	req->rl_flags |= RPCRDMA_REQ_LINV_PENDING;
	req->rl_linv_pending = 1;
	req->rl_wake = false;
	wc = wc_for(mw, IBV_WC_REM_ACCESS_ERR, IBV_WC_LOCAL_INV);
	frwr_wc_localinv_wake(&cq, &wc);
	assert_true(req->rl_wake);
	assert_false(req->rl_flags & RPCRDMA_REQ_LINV_PENDING);
	assert_true(req->rl_flags & RPCRDMA_REQ_LINV_FAILED);
	assert_int_equal(x->rx_nmws, nmws - 1);
	assert_int_equal(x->rx_ep.sq_avail, sq_base);
}

/*
 * A bind is unsignaled: its handler sees only failures and flushes, which
 * leave the window's state unknown: it is deallocated when the call lets
 * go of it, while a window whose bind went well is reused.
 */
static void test_bind_failure(void **state)
{
	struct ibv_cq cq = { .cq_context = NULL };
	struct rpcrdma_mw *good, *bad;
	struct ibv_wc wc;
	uint32_t nmws;

	(void)state;
	cq.cq_context = x;
	assert_int_equal(frwr_map(x, req, RPCRDMA_BOUNCE_PAYLOAD, buf, 2 * SEG, true, segs,
				  &nsegs),
			 0);
	good = registered(0);
	bad = registered(1);
	nmws = x->rx_nmws;
	wc = wc_for(good, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	frwr_wc_fastreg(&cq, &wc);
	assert_false(good->mw_bad);
	assert_false(x->rx_ep.close_pending);
	wc = wc_for(bad, IBV_WC_MW_BIND_ERR, IBV_WC_BIND_MW);
	frwr_wc_fastreg(&cq, &wc);
	assert_true(bad->mw_bad);
	assert_true(x->rx_ep.close_pending);

	frwr_release(x, req);
	assert_int_equal(x->rx_nmws, nmws - 1);
	assert_int_equal(count(&x->rx_mws_free), 1);
	assert_true(on_list(&x->rx_mws_free, good));
	assert_int_equal(req->rl_nmws, 0);
	assert_false(req->rl_regions);
}

/* A lost connection: every window a call lists is deallocated, none reused. */
static void test_conn_lost(void **state)
{
	uint32_t nmws;

	(void)state;
	assert_int_equal(frwr_map(x, req, RPCRDMA_BOUNCE_PAYLOAD, buf, 3 * SEG, true, segs,
				  &nsegs),
			 0);
	send_binds();
	req->rl_flags |= RPCRDMA_REQ_MAPPED;
	nmws = x->rx_nmws;
	frwr_conn_lost(x);
	assert_int_equal(x->rx_nmws, nmws - 3);
	assert_int_equal(count(&x->rx_mws_free), 0);
	assert_true(list_empty(&req->rl_registered));
	assert_int_equal(req->rl_nmws, 0);
	assert_false(req->rl_flags & RPCRDMA_REQ_MAPPED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_map_read_chunk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_map_write_chunk_registered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unmap_async, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reminv_and_sync, setup, teardown),
		cmocka_unit_test_setup_teardown(test_localinv_completions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_localinv_wake, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bind_failure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_conn_lost, setup, teardown),
	};
	int rc = connect_client();
	bool windows;

	if (rc) {
		fprintf(stderr, "skip: no softrdma connection to a raw server (%s)\n",
			strerror(-rc));
		rawpeer_close(&rp);
		return 77;
	}
	windows = rpcrdma_clnt_xprt(clnt)->rx_reg == RPCRDMA_REG_MW;
	rpcrdma_clnt_destroy(clnt);
	rawpeer_close(&rp);
	if (!windows) {
		fprintf(stderr, "skip: the device has no type-2 memory windows "
			"(SOFTRDMA_PROFILE=%s?)\n", getenv("SOFTRDMA_PROFILE") ?: "");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
