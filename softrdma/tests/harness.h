/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers for the softrdma conformance tests: a pair of RC QPs wired
 * to each other by hand, bounded waits that drive progress in STEP mode and
 * wait in THREAD mode, and rdma_cm helpers. Every wait has a deadline.
 */
#ifndef SOFTRDMA_HARNESS_H
#define SOFTRDMA_HARNESS_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <netinet/in.h>

#include "softrdma.h"

#define H_TIMEOUT_MS 5000

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t h_now_ms(void);
/* 127.0.0.1, @port. */
struct sockaddr_in h_loopback(uint16_t port);

struct h_opts {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_sge;
	uint32_t max_inline;
	int sq_sig_all;
	uint8_t rnr_retry;
	uint8_t retry_cnt;
	int qp_access;		/* IBV_ACCESS_REMOTE_* on the QPs */
	uint8_t rd_atomic;
	int cqe;
	int use_srq;		/* QP 1 receives from an SRQ */
	uint8_t min_rnr_timer;	/* 0: 12 (0.64 ms) */
	uint8_t timeout;	/* local ACK timeout; 0: 14 (67 ms) */
};

/* Two connected RC QPs on one PD; each QP has one CQ for sends and receives. */
struct h_pair {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch[2];
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];
	struct ibv_srq *srq;
};

void h_opts_default(struct h_opts *o);
void h_pair_open(struct h_pair *p, const struct h_opts *o);
void h_pair_close(struct h_pair *p);
void h_qp_to_rts(struct ibv_qp *qp, uint32_t dest_qpn, const struct h_opts *o);
/* RESET (or a new QP) to INIT to RTR only: it receives, it does not send. */
void h_qp_to_rtr(struct ibv_qp *qp, uint32_t dest_qpn, const struct h_opts *o);

/*
 * The fixture most tests share: open @p with @o and register @buf[i] (@len
 * bytes each) with @access into @mr[i]; and the reverse: settle, drain
 * both CQs, deregister, close. The buffers stay the caller's.
 */
void h_pair_open_reg(struct h_pair *p, const struct h_opts *o, void *const buf[2], size_t len,
		     int access, struct ibv_mr *mr[2]);
void h_pair_close_reg(struct h_pair *p, struct ibv_mr *mr[2]);
/* The same over two zeroed buffers of @len bytes allocated into @buf, and freed. */
void h_pair_open_bufs(struct h_pair *p, const struct h_opts *o, uint8_t *buf[2], size_t len,
		      int access, struct ibv_mr *mr[2]);
void h_pair_close_bufs(struct h_pair *p, uint8_t *buf[2], struct ibv_mr *mr[2]);

struct ibv_mr *h_reg(struct ibv_pd *pd, void *buf, size_t len, int access);
int h_post(struct ibv_qp *qp, uint64_t wr_id, enum ibv_wr_opcode op, void *buf, uint32_t len,
	   uint32_t lkey, unsigned int flags, uint64_t raddr, uint32_t rkey);
int h_post_recv(struct ibv_qp *qp, uint64_t wr_id, void *buf, uint32_t len, uint32_t lkey);

/* The QP's state, as ibv_query_qp() reports it. */
enum ibv_qp_state h_qp_state(struct ibv_qp *qp);

/* Group setups: the progress mode a group of tests runs in. */
int h_group_step(void **state);
int h_group_thread(void **state);
int h_group_async(void **state);
/* Run the array @tests in STEP, THREAD and ASYNC mode; the failures of all three. */
#define h_run_all_modes(tests)                                                   \
	(cmocka_run_group_tests_name("step", tests, h_group_step, NULL) +          \
	 cmocka_run_group_tests_name("thread", tests, h_group_thread, NULL) +      \
	 cmocka_run_group_tests_name("async", tests, h_group_async, NULL))

/* Drive the fabric until idle (STEP) or wait for it to be idle (THREAD). */
void h_settle(void);
/* Collect exactly n completions within the timeout; returns how many arrived. */
int h_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n);
/* Assert that cq holds nothing now (after settling). */
void h_assert_empty(struct ibv_cq *cq);
/*
 * Assert that the fast path (fast.c) ran @n WRs of @op since it had run
 * @before of them: in THREAD mode; the other modes have no fast path.
 */
void h_assert_fast(enum ibv_wr_opcode op, unsigned long before, unsigned long n);
/* Next async event of ctx within the timeout; acks it. */
void h_expect_async(struct ibv_context *ctx, enum ibv_event_type type, void *obj);

/* rdma_cm: client and server over 127.0.0.1, each with its own channel. */
struct h_conn {
	struct rdma_event_channel *sch, *cch;
	struct rdma_cm_id *listen, *server, *client;
	struct ibv_cq *scq, *ccq;
	uint16_t port;
};

struct rdma_cm_event *h_cm_get(struct rdma_event_channel *ch);
void h_cm_expect(struct rdma_event_channel *ch, enum rdma_cm_event_type type);
void h_cm_listen(struct h_conn *c);
/* Resolve, create QPs (with own CQs) and connect; pdata may be NULL. */
void h_cm_connect(struct h_conn *c, const void *pdata, uint8_t len);
void h_cm_close(struct h_conn *c);

#endif /* SOFTRDMA_HARNESS_H */
