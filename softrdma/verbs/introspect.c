/* SPDX-License-Identifier: MIT */
/* Introspection: what exists, what is outstanding, what a remote peer could reach. */
#include <errno.h>
#include <stdlib.h>

#include "soft.h"

void softrdma_get_counts(struct softrdma_counts *counts)
{
	fab_lock();
	*counts = fab.counts;
	counts->recv_wrs = __atomic_load_n(&fab.recv_wrs, __ATOMIC_RELAXED);
	fab_unlock();
}

int softrdma_rkey_reach(uint32_t rkey, uint64_t *addr, uint64_t *length, int *access)
{
	uint64_t a = 0, l = 0;
	int acc = 0, ret;

	fab_lock();
	ret = mem_reach_locked(rkey, &a, &l, &acc);
	fab_unlock();
	if (addr)
		*addr = a;
	if (length)
		*length = l;
	if (access)
		*access = acc;
	return ret;
}

struct span {
	uintptr_t start;
	uintptr_t end;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Union of the host ranges that a live rkey on pd reaches: overlaps count once. */
size_t softrdma_pd_exposed_bytes(struct ibv_pd *pd)
{
	struct soft_pd *spd = to_spd(pd);
	struct span *spans;
	size_t n = 0, i, total = 0;
	uintptr_t end = 0;

	fab_lock();
	spans = calloc(fab.nkeys ? fab.nkeys : 1, sizeof(*spans));
	if (!spans) {
		fab_unlock();
		return 0;
	}
	for (i = 1; i < fab.nkeys; i++) {
		if (key_slot(i)->kind == SOFT_KEY_MR) {
			struct soft_mr *smr = key_slot(i)->obj;

			if (!pd_same(smr->pd, spd) || !(smr->access & (IBV_ACCESS_REMOTE_READ |
				IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)))
				continue;
			spans[n].start = (uintptr_t)smr->base;
			spans[n++].end = (uintptr_t)smr->base + smr->length;
		} else if (key_slot(i)->kind == SOFT_KEY_MW) {
			struct soft_mw *smw = key_slot(i)->obj;

			if (!pd_same(smw->pd, spd) || smw->state != SOFTRDMA_MW_VALID || !smw->qp)
				continue;
			spans[n].start = (uintptr_t)(smw->mr->base + (smw->addr - smw->mr->iova));
			spans[n].end = spans[n].start + smw->length;
			n++;
		}
	}
	fab_unlock();
	qsort(spans, n, sizeof(*spans), span_cmp);
	for (i = 0; i < n; i++) {
		uintptr_t start = spans[i].start > end ? spans[i].start : end;

		if (spans[i].end > start)
			total += spans[i].end - start;
		if (spans[i].end > end)
			end = spans[i].end;
	}
	free(spans);
	return total;
}

unsigned long softrdma_fast_executed(enum ibv_wr_opcode opcode)
{
	if ((unsigned int)opcode > IBV_WR_DRIVER1)
		return 0;
	return __atomic_load_n(&fab.fast_executed[opcode], __ATOMIC_RELAXED);
}

unsigned long softrdma_executed(enum ibv_wr_opcode opcode)
{
	unsigned long n = 0;

	if ((unsigned int)opcode > IBV_WR_DRIVER1)
		return 0;
	fab_lock();
	n = fab.executed[opcode];
	fab_unlock();
	return n;
}

unsigned int softrdma_qp_max_inflight(struct ibv_qp *qp)
{
	unsigned int n;

	fab_lock();
	n = to_sqp(qp)->max_inflight;
	fab_unlock();
	return n;
}

const char *softrdma_qp_transport(struct ibv_qp *qp)
{
	struct soft_qp *sqp = to_sqp(qp);
	const char *name;

	fab_lock();
	if (sqp->attr.qp_state == IBV_QPS_RTR || sqp->attr.qp_state == IBV_QPS_RTS)
		wire_is_local_locked(&sqp->wire);
	name = sqp->wire.transport ? sqp->wire.transport->name : NULL;
	fab_unlock();
	return name;
}

unsigned long softrdma_qp_resends(struct ibv_qp *qp)
{
	unsigned long n;

	fab_lock();
	n = to_sqp(qp)->resends;
	fab_unlock();
	return n;
}

/* A QP's counters, with its receive CQ's arms. */
static struct softrdma_qp_stats qp_stats_locked(struct soft_qp *sqp)
{
	struct softrdma_qp_stats st;

	/* The receive counters are the posters', who hold only the RQ's lock. */
	pthread_mutex_lock(&sqp->rq.lock);
	st = sqp->stats;
	pthread_mutex_unlock(&sqp->rq.lock);
	st.recv_cq_arms = sqp->rcq ? __atomic_load_n(&sqp->rcq->arms, __ATOMIC_RELAXED) : 0;
	return st;
}

void softrdma_qp_stats(struct ibv_qp *qp, struct softrdma_qp_stats *stats)
{
	fab_lock();
	*stats = qp_stats_locked(to_sqp(qp));
	fab_unlock();
}

static void qp_stats_add(struct softrdma_qp_stats *sum, const struct softrdma_qp_stats *st)
{
	sum->send_posts += st->send_posts;
	sum->recv_posts += st->recv_posts;
	sum->send_wrs += st->send_wrs;
	sum->recv_wrs += st->recv_wrs;
	sum->send_cqes += st->send_cqes;
	sum->recv_cq_arms += st->recv_cq_arms;
}

void softrdma_qp_stats_sum(struct softrdma_qp_stats *active, struct softrdma_qp_stats *passive)
{
	struct softrdma_qp_stats a = { 0 }, p = { 0 };
	struct soft_list *pos;

	fab_lock();
	soft_list_for_each(pos, &fab.qps) {
		struct soft_qp *sqp = container_of(pos, struct soft_qp, link);
		struct softrdma_qp_stats st = qp_stats_locked(sqp);

		qp_stats_add(sqp->cm_passive ? &p : &a, &st);
	}
	fab_unlock();
	if (active)
		*active = a;
	if (passive)
		*passive = p;
}
