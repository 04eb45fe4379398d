/* SPDX-License-Identifier: MIT */
/*
 * The shared receive queue (RPCRDMA_SVC_SRQ): per poller and device, one
 * SRQ whose receive buffers serve all the poller's connections there, a
 * few CQs they share, and send contexts drawn from one pool. An idle
 * connection then holds no buffers of its own.
 *
 * Credits stay honest. An RNR is fatal (clients may connect with
 * rnr_retry 0), so every client's worst case must find a receive posted:
 * the SRQ always holds at least the sum, over the connections, of the
 * calls each may still send (sc_srq_bound - sc_srq_recvd, "committed"). A
 * reply grants what fits in what is posted beyond that, and never less
 * than 1: each connection that may send nothing keeps one receive in
 * reserve for the grant of 1 its next reply carries ("idle"). The pool
 * grows with what is committed, up to srq_size; a connection that cannot
 * get its reserve is refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "svc_rdma.h"

/* Buffers allocated at a time, receive and send. */
#define SVC_SRQ_CHUNK 64
/* Receives posted at a time, when nothing promised is missing. */
#define SVC_SRQ_REFILL_BATCH 8
/* Shared CQs per SRQ at most; each takes as many connections as fit. */
#define SVC_SRQ_MAX_CQS 64
/* A shared CQ's room for its connections' send queues, beyond the SRQ's receives. */
#define SVC_SRQ_CQ_SENDS 16384
#define SVC_SRQ_BUCKETS 1024
/* Events taken before an acknowledgement (ibv_ack_cq_events locks). */
#define SVC_SRQ_ACK_BATCH 16
/*
 * A grant is at least this (fitting): calls a client may start at once
 * whatever it did before, such as several the server holds a while.
 */
#define SVC_SRQ_MIN_GRANT 4

/* One shared CQ; its cq_context. */
struct svc_srq_cq {
	struct svc_rdma_srq *sh;
	struct ibv_cq *cq;
	uint32_t cqe;			/* its size */
	uint32_t used;			/* reserved by its connections */
	unsigned int events;		/* channel events not yet acknowledged */
	bool armed;
	bool busy;			/* on the poller's srq_busy: poll it on the next pass */
	struct list_node busy_node;
};

/* What one allocation holds: contexts and their registered buffers. */
struct svc_srq_chunk {
	struct list_node node;
	struct rpcrdma_slab slab;
	size_t bytes;			/* of this struct with its contexts */
	bool recv;
};

struct svc_rdma_srq {
	struct svc_rdma_poller *poller;
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct rpcrdma_stats *stats;		/* the poller's, or own_stats once orphaned */
	struct rpcrdma_stats own_stats;
	uint32_t inline_size;
	uint32_t max_requests;
	struct ibv_comp_channel *channel;	/* in the poller's epoll set */
	struct ibv_srq *srq;
	struct svc_srq_cq cqs[SVC_SRQ_MAX_CQS];
	unsigned int ncqs;
	uint32_t cq_max;			/* the device's largest CQ */
	uint32_t srq_max;			/* srq_size, fitted to the device */

	struct list_node chunks;
	struct list_node recv_free;
	struct list_node send_free;
	uint32_t posted;			/* receives on the SRQ */
	uint32_t held;				/* receive contexts out with connections */
	uint32_t committed;			/* receives the clients may still use */
	uint32_t idle;				/* connections that may use none */
	uint32_t nconns;
	unsigned int slot;			/* in poller->srqs */
	bool orphan;				/* the server is gone; free once held is 0 */
	struct svcxprt_rdma *table[SVC_SRQ_BUCKETS];	/* by QP number */
};

/* Polled on the poller's next pass, until it is drained and armed. */
static void svc_srq_cq_busy(struct svc_srq_cq *c)
{
	if (c->busy)
		return;
	c->busy = true;
	list_add_tail(&c->busy_node, &c->sh->poller->srq_busy);
}

static struct svcxprt_rdma **svc_srq_bucket(struct svc_rdma_srq *sh, uint32_t qp_num)
{
	return &sh->table[(qp_num ^ (qp_num >> 10)) % SVC_SRQ_BUCKETS];
}

static struct svcxprt_rdma *svc_srq_lookup(struct svc_rdma_srq *sh, uint32_t qp_num)
{
	struct svcxprt_rdma *rdma = *svc_srq_bucket(sh, qp_num);

	while (rdma && rdma->sc_ep.qp->qp_num != qp_num)
		rdma = rdma->sc_hash_next;
	return rdma;
}

static void svc_srq_unhash(struct svc_rdma_srq *sh, struct svcxprt_rdma *rdma)
{
	struct svcxprt_rdma **pp = svc_srq_bucket(sh, rdma->sc_ep.qp->qp_num);

	while (*pp && *pp != rdma)
		pp = &(*pp)->sc_hash_next;
	if (*pp)
		*pp = rdma->sc_hash_next;
	rdma->sc_hash_next = NULL;
}

/* One more chunk of receive (@recv) or send contexts, on the free lists. */
static int svc_srq_grow(struct svc_rdma_srq *sh, bool recv)
{
	size_t one = recv ? sizeof(struct svc_rdma_recv_ctxt) : sizeof(struct svc_rdma_send_ctxt);
	size_t bytes = sizeof(struct svc_srq_chunk) + SVC_SRQ_CHUNK * one;
	struct svc_srq_chunk *c = calloc(1, bytes);
	unsigned char *ctxts = (unsigned char *)(c + 1);
	uint32_t i;

	if (!c)
		return -ENOMEM;
	/* The server never exposes memory: local access only. */
	if (rpcrdma_slab_create(&c->slab, sh->pd, SVC_SRQ_CHUNK, sh->inline_size,
				recv ? IBV_ACCESS_LOCAL_WRITE : 0)) {
		free(c);
		return -ENOMEM;
	}
	c->bytes = bytes;
	c->recv = recv;
	list_add_tail(&c->node, &sh->chunks);
	rpcrdma_count_add(sh->stats->heap_bytes, bytes + rpcrdma_slab_bytes(&c->slab));
	rpcrdma_count_add(sh->stats->registered_bytes, rpcrdma_slab_bytes(&c->slab));
	for (i = 0; i < SVC_SRQ_CHUNK; i++) {
		unsigned char *buf = rpcrdma_slab_buf(&c->slab, i);

		if (recv) {
			struct svc_rdma_recv_ctxt *r = (struct svc_rdma_recv_ctxt *)(void *)ctxts + i;

			svc_rdma_recv_ctxt_init(r, buf, sh->inline_size, rpcrdma_slab_lkey(&c->slab));
			r->rc_cqe.done = svc_rdma_wc_srq_receive;
			r->rc_srq = sh;
			list_add_tail(&r->rc_list, &sh->recv_free);
		} else {
			struct svc_rdma_send_ctxt *s = (struct svc_rdma_send_ctxt *)(void *)ctxts + i;

			svc_rdma_send_ctxt_init(s, buf, rpcrdma_slab_lkey(&c->slab));
			s->sc_srq = sh;
			list_add_tail(&s->sc_chain.sq.list, &sh->send_free);
		}
	}
	return 0;
}

/*
 * Post what is committed, a reserve for each idle connection and room for
 * two connections' full grants, up to srq_size: the pool grows with use.
 */
void svc_rdma_srq_refill(struct svc_rdma_srq *sh)
{
	uint64_t want = (uint64_t)sh->committed + sh->idle + 2 * sh->max_requests;
	struct ibv_recv_wr *bad = NULL;
	struct rpcrdma_recv_chain c;
	int rc;

	if (want > sh->srq_max)
		want = sh->srq_max;
	/* In batches, but never below what is promised and reserved. */
	if (sh->posted + SVC_SRQ_REFILL_BATCH > want &&
	    sh->posted >= (uint64_t)sh->committed + sh->idle)
		return;
	while (sh->posted < want && sh->srq) {
		/* Short of memory, grants shrink to what is posted. */
		if (list_empty(&sh->recv_free) && svc_srq_grow(sh, true))
			return;
		rpcrdma_recv_chain(&c, &sh->recv_free, (uint32_t)want - sh->posted,
				   RPCRDMA_RECV_WR_OFF(struct svc_rdma_recv_ctxt, rc_list, rc_recv_wr));
		rc = ibv_post_srq_recv(sh->srq, c.first, &bad);
		sh->posted += rpcrdma_recv_chain_posted(&sh->recv_free, &c, rc ? bad : NULL);
		if (rc) {
			rpcrdma_err("server: posting to the SRQ failed: %s",
				    strerror(rc > 0 ? rc : EIO));
			return;
		}
	}
}

/*
 * RFC 8166 3.3.1 grant for the reply about to be sent: twice the most
 * calls the client had in progress lately (over the last 2 x max_requests
 * replies or so), at least SVC_SRQ_MIN_GRANT, up to max_requests and to
 * what fits in what is posted beyond the commitments and the other idle
 * connections' reserves; at least 1, which fits in this connection's own
 * reserve when it may send nothing. A pipelining client's grant doubles
 * per round trip; one that calls one at a time, then idles, keeps
 * SVC_SRQ_MIN_GRANT receives committed.
 */
uint32_t svc_rdma_srq_grant(struct svcxprt_rdma *rdma)
{
	struct svc_rdma_srq *sh = rdma->sc_srq;
	uint64_t j = rdma->sc_srq_replies + 1, bound = rdma->sc_srq_bound;
	bool was_idle = bound == rdma->sc_srq_recvd;
	uint64_t reserved, room, g, want, next;

	svc_rdma_srq_refill(sh);
	reserved = (uint64_t)sh->committed + sh->idle - was_idle;
	room = sh->posted > reserved ? sh->posted - reserved : 0;
	g = bound + room > j ? bound + room - j : 0;
	want = 2 * (uint64_t)(rdma->sc_srq_demand > rdma->sc_srq_demand_prev ?
			      rdma->sc_srq_demand : rdma->sc_srq_demand_prev);
	if (want < SVC_SRQ_MIN_GRANT)
		want = SVC_SRQ_MIN_GRANT;
	if (g > want)
		g = want;
	if (g > rdma->sc_max_requests)
		g = rdma->sc_max_requests;
	if (g < 1)
		g = 1;
	next = j + g > bound ? j + g : bound;
	sh->committed += (uint32_t)(next - bound);
	if (was_idle && next > bound)
		sh->idle--;
	rdma->sc_srq_bound = next;
	rdma->sc_srq_replies = j;
	/* Demand is the most in progress over the last one or two windows of replies. */
	if (++rdma->sc_srq_window == 2 * rdma->sc_max_requests) {
		rdma->sc_srq_window = 0;
		rdma->sc_srq_demand_prev = rdma->sc_srq_demand;
		rdma->sc_srq_demand = 1;
	}
	return (uint32_t)g;
}

void svc_rdma_srq_recv_put(struct svc_rdma_srq *sh, struct svc_rdma_recv_ctxt *ctxt)
{
	list_add_tail(&ctxt->rc_list, &sh->recv_free);
	ctxt->rc_rdma = NULL;
	sh->held--;
	if (unlikely(sh->orphan) && sh->held == 0)
		svc_rdma_srq_destroy(sh);
}

/*
 * A receive from the SRQ: find its connection by QP number and count it
 * against the connection's bound. A client past its credits breaks RFC
 * 8166 3.3.1 and takes receives promised to others: it is closed.
 */
void svc_rdma_wc_srq_receive(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct svc_rdma_srq *sh = ((struct svc_srq_cq *)cq->cq_context)->sh;
	struct svc_rdma_recv_ctxt *ctxt =
		container_of(rpcrdma_wc_cqe(wc), struct svc_rdma_recv_ctxt, rc_cqe);
	struct svcxprt_rdma *rdma = svc_srq_lookup(sh, wc->qp_num);

	sh->posted--;
	sh->held++;
	if (unlikely(!rdma)) {
		svc_rdma_srq_recv_put(sh, ctxt);
		return;
	}
	ctxt->rc_rdma = rdma;
	svc_rdma_mark_ready(rdma);
	if (unlikely(wc->status != IBV_WC_SUCCESS)) {
		rpcrdma_ep_wc_error(&rdma->sc_ep, wc, "server receive (SRQ)");
		svc_rdma_srq_recv_put(sh, ctxt);
		return;
	}
	if (unlikely(rdma->sc_srq_recvd == rdma->sc_srq_bound)) {
		/*
		 * Past its credits: a peer that counts a dropped message's
		 * credit as free (RFC 8166 4.5 drops get no reply), or one that
		 * ignores them. Served from a receive no one was promised, if
		 * one was left and it has fewer than max_requests calls in
		 * progress (so no client makes the server hold more); closed if
		 * not.
		 */
		if (sh->posted < (uint64_t)sh->committed + sh->idle ||
		    rdma->sc_srq_recvd - rdma->sc_srq_replies >= rdma->sc_max_requests) {
			rpcrdma_count_inc(rdma->sc_stats->dropped);
			svc_rdma_credit_overrun(rdma, "more calls than it was granted");
			svc_rdma_srq_recv_put(sh, ctxt);
			return;
		}
		rdma->sc_srq_bound++;
		sh->committed++;
	}
	rdma->sc_srq_recvd++;
	sh->committed--;
	if (rdma->sc_srq_recvd == rdma->sc_srq_bound)
		sh->idle++;
	if (rdma->sc_srq_recvd - rdma->sc_srq_replies > rdma->sc_srq_demand)
		rdma->sc_srq_demand = (uint32_t)(rdma->sc_srq_recvd - rdma->sc_srq_replies);
	if (unlikely(rdma->sc_state >= SVCXPRT_CLOSING)) {
		svc_rdma_srq_recv_put(sh, ctxt);
		return;
	}
	ctxt->rc_byte_len = wc->byte_len;
	list_add_tail(&ctxt->rc_list, &rdma->sc_rq_dto_q);
}

struct svc_rdma_send_ctxt *svc_rdma_srq_send_get(struct svcxprt_rdma *rdma)
{
	struct svc_rdma_srq *sh = rdma->sc_srq;
	struct svc_rdma_send_ctxt *ctxt;

	/* Bounded per connection as without the SRQ: no client drains the pool. */
	if (unlikely(rdma->sc_sends_out >= svc_rdma_send_max(rdma)))
		return NULL;
	if (unlikely(list_empty(&sh->send_free)) && svc_srq_grow(sh, false))
		return NULL;
	ctxt = list_pop_entry(&sh->send_free, struct svc_rdma_send_ctxt, sc_chain.sq.list);
	rdma->sc_sends_out++;
	return ctxt;
}

void svc_rdma_srq_send_put(struct svc_rdma_send_ctxt *ctxt)
{
	ctxt->sc_rdma->sc_sends_out--;
	ctxt->sc_rdma = NULL;
	list_add_tail(&ctxt->sc_chain.sq.list, &ctxt->sc_srq->send_free);
}

static int svc_srq_add_cq(struct svc_rdma_srq *sh)
{
	struct svc_srq_cq *c = &sh->cqs[sh->ncqs];

	if (sh->ncqs == SVC_SRQ_MAX_CQS)
		return -ENOSPC;
	c->cqe = sh->cq_max;
	if (c->cqe > sh->srq_max + SVC_SRQ_CQ_SENDS)
		c->cqe = sh->srq_max + SVC_SRQ_CQ_SENDS;
	c->sh = sh;
	c->cq = ibv_create_cq(sh->verbs, (int)c->cqe, c, sh->channel, 0);
	if (!c->cq)
		return rpcrdma_errno(-ENOMEM);
	/* Any QP on it may take every posted receive: that much is the SRQ's. */
	c->used = sh->srq_max;
	sh->ncqs++;
	svc_srq_cq_busy(c);	/* the first pass arms it */
	return 0;
}

/* A CQ with room for @need more entries, made if none has. */
static int svc_srq_pick_cq(struct svc_rdma_srq *sh, uint32_t need, unsigned int *index)
{
	unsigned int i;
	int rc;

	for (i = 0; i < sh->ncqs; i++) {
		if (sh->cqs[i].cqe - sh->cqs[i].used >= need) {
			*index = i;
			return 0;
		}
	}
	rc = svc_srq_add_cq(sh);
	if (rc)
		return rc;
	if (sh->cqs[sh->ncqs - 1].cqe - sh->cqs[sh->ncqs - 1].used < need)
		return -ENOSPC;
	*index = sh->ncqs - 1;
	return 0;
}

int svc_rdma_srq_join(struct svc_rdma_srq *sh, struct svcxprt_rdma *rdma,
		      struct rpcrdma_ep_attr *attr)
{
	uint32_t need = attr->send_wrs + 1;	/* its send queue and drain marker */
	int rc;

	/* Its initial credit of 1 must be posted, and kept with every other reserve. */
	if ((uint64_t)sh->committed + sh->idle + 1 > sh->srq_max)
		return -ENOBUFS;
	rc = svc_srq_pick_cq(sh, need, &rdma->sc_cq_index);
	if (rc)
		return rc;
	sh->cqs[rdma->sc_cq_index].used += need;
	rdma->sc_cq_used = need;
	rdma->sc_srq = sh;
	rdma->sc_srq_bound = 1;
	rdma->sc_srq_demand = 1;
	sh->committed++;
	sh->nconns++;
	svc_rdma_srq_refill(sh);
	attr->cq = sh->cqs[rdma->sc_cq_index].cq;
	attr->srq = sh->srq;
	return 0;
}

void svc_rdma_srq_attach(struct svcxprt_rdma *rdma)
{
	struct svcxprt_rdma **bucket = svc_srq_bucket(rdma->sc_srq, rdma->sc_ep.qp->qp_num);

	rdma->sc_hash_next = *bucket;
	*bucket = rdma;
}

void svc_rdma_srq_leave(struct svcxprt_rdma *rdma)
{
	struct svc_rdma_srq *sh = rdma->sc_srq;
	uint64_t left = rdma->sc_srq_bound - rdma->sc_srq_recvd;
	struct svc_srq_cq *c;
	unsigned int i;

	if (!sh)
		return;
	c = &sh->cqs[rdma->sc_cq_index];
	if (rdma->sc_ep.qp) {
		/* Its last receives are in the CQ by now (Last WQE Reached): take them. */
		for (i = 0; i <= c->cqe / RPCRDMA_POLL_BATCH; i++)
			if (rpcrdma_cq_poll(c->cq, RPCRDMA_POLL_BATCH) < RPCRDMA_POLL_BATCH)
				break;
		svc_srq_unhash(sh, rdma);
	}
	c->used -= rdma->sc_cq_used;
	sh->committed -= (uint32_t)left;
	if (!left)
		sh->idle--;
	sh->nconns--;
	rdma->sc_srq = NULL;
}

static int svc_srq_create(struct svc_rdma_srq *sh, const struct rpcrdma_svc_attr *a)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = sh };
	struct ibv_srq_init_attr init;
	struct ibv_device_attr dev;
	int flags;

	if (ibv_query_device(sh->verbs, &dev) || dev.max_srq_wr < 1 || dev.max_cqe < 2)
		return -EOPNOTSUPP;
	sh->srq_max = a->srq_size < (uint32_t)dev.max_srq_wr ? a->srq_size
							     : (uint32_t)dev.max_srq_wr;
	sh->cq_max = (uint32_t)dev.max_cqe;
	memset(&init, 0, sizeof(init));
	init.attr.max_wr = sh->srq_max;
	init.attr.max_sge = 1;
	sh->srq = ibv_create_srq(sh->pd, &init);
	if (!sh->srq)
		return rpcrdma_errno(-EOPNOTSUPP);
	sh->channel = ibv_create_comp_channel(sh->verbs);
	if (!sh->channel)
		return rpcrdma_errno(-ENOMEM);
	flags = fcntl(sh->channel->fd, F_GETFL);
	if (flags < 0 || fcntl(sh->channel->fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
	    epoll_ctl(sh->poller->epfd, EPOLL_CTL_ADD, sh->channel->fd, &ev))
		return -errno;
	return 0;
}

struct svc_rdma_srq *svc_rdma_srq_get(struct svc_rdma_poller *p, struct ibv_context *verbs)
{
	struct rpcrdma_svc *svc = p->svc;
	struct svc_rdma_srq *sh;
	unsigned int i;

	for (i = 0; i < svc->sv_npds && svc->sv_pds[i].verbs != verbs; i++)
		;
	if (i == svc->sv_npds)
		return NULL;
	if (p->srqs[i])
		return p->srqs[i];
	sh = calloc(1, sizeof(*sh));
	if (!sh)
		return NULL;
	sh->poller = p;
	sh->verbs = verbs;
	sh->pd = svc->sv_pds[i].pd;
	sh->stats = &p->stats;
	sh->inline_size = svc->sv_attr.inline_size;
	sh->max_requests = svc->sv_attr.max_requests;
	list_init(&sh->chunks);
	list_init(&sh->recv_free);
	list_init(&sh->send_free);
	rpcrdma_count_add(sh->stats->heap_bytes, sizeof(*sh));
	if (svc_srq_create(sh, &svc->sv_attr)) {
		rpcrdma_warn("server: cannot create a shared receive queue on %s",
			     ibv_get_device_name(verbs->device));
		svc_rdma_srq_destroy(sh);
		return NULL;
	}
	sh->slot = i;
	p->srqs[i] = sh;
	p->nsrqs++;
	return sh;
}

void svc_rdma_srq_put(struct svc_rdma_srq *sh)
{
	if (sh->nconns)
		return;
	/* Its last connection went: an idle server holds no pool. */
	sh->poller->srqs[sh->slot] = NULL;
	sh->poller->nsrqs--;
	svc_rdma_srq_destroy(sh);
}

/* Take the channel's events: each marks its CQ busy. */
static void svc_srq_take_events(struct svc_rdma_srq *sh)
{
	struct ibv_cq *cq;
	void *ctx;

	while (ibv_get_cq_event(sh->channel, &cq, &ctx) == 0) {
		struct svc_srq_cq *c = ctx;

		svc_srq_cq_busy(c);
		c->armed = false;
		if (++c->events >= SVC_SRQ_ACK_BATCH) {
			ibv_ack_cq_events(cq, c->events);
			c->events = 0;
		}
	}
}

/* Poll a busy CQ; once it is drained, arm it and look once more. Still busy? */
static bool svc_srq_poll_cq(struct svc_srq_cq *c, int budget, int *n)
{
	int m;

	*n = rpcrdma_cq_poll(c->cq, budget);
	if (*n < 0 || *n >= budget) {
		*n = *n < 0 ? 0 : *n;
		return true;
	}
	if (ibv_req_notify_cq(c->cq, 0))
		return true;
	c->armed = true;
	m = rpcrdma_cq_poll(c->cq, budget);
	if (m <= 0)
		return false;
	*n += m;
	return true;	/* an event may or may not come: poll again */
}

int svc_rdma_srq_poll(struct svc_rdma_poller *p, int budget)
{
	struct svc_srq_cq *c;
	struct list_node batch;
	int n = 0, got;

	if (list_empty(&p->srq_busy))
		return 0;
	list_init(&batch);
	list_splice_tail(&p->srq_busy, &batch);
	while ((c = list_pop_entry(&batch, struct svc_srq_cq, busy_node))) {
		c->busy = false;
		if (svc_srq_poll_cq(c, budget, &got))
			svc_srq_cq_busy(c);
		n += got;
	}
	return n;
}

bool svc_rdma_srq_busy(const struct svc_rdma_poller *p)
{
	return !list_empty(&p->srq_busy);
}

bool svc_rdma_srq_woken(struct svc_rdma_poller *p, void *ptr)
{
	unsigned int d;

	for (d = 0; p->nsrqs && d < SVC_RDMA_MAX_DEVICES; d++) {
		if (p->srqs[d] && p->srqs[d] == ptr) {
			svc_srq_take_events(p->srqs[d]);
			return true;
		}
	}
	return false;
}

static void svc_srq_release_verbs(struct svc_rdma_srq *sh)
{
	struct list_node *pos;
	unsigned int i;

	for (i = 0; i < sh->ncqs; i++) {
		if (sh->cqs[i].busy)
			list_del(&sh->cqs[i].busy_node);
		sh->cqs[i].busy = false;
		if (sh->cqs[i].events)
			ibv_ack_cq_events(sh->cqs[i].cq, sh->cqs[i].events);
		ibv_destroy_cq(sh->cqs[i].cq);
	}
	sh->ncqs = 0;
	if (sh->srq)
		ibv_destroy_srq(sh->srq);
	if (sh->channel)
		epoll_ctl(sh->poller->epfd, EPOLL_CTL_DEL, sh->channel->fd, NULL);
	sh->srq = NULL;
	if (sh->channel)
		ibv_destroy_comp_channel(sh->channel);
	sh->channel = NULL;
	list_for_each(pos, &sh->chunks) {
		struct svc_srq_chunk *c = list_entry(pos, struct svc_srq_chunk, node);

		if (c->slab.mr)
			rpcrdma_count_sub(sh->stats->registered_bytes, rpcrdma_slab_bytes(&c->slab));
		rpcrdma_slab_dereg(&c->slab);
	}
}

/* What a chunk's send contexts grew while they served (svc_rw.c, svc_sendto.c). */
static void svc_srq_free_grown(struct svc_rdma_srq *sh, struct svc_rdma_send_ctxt *ctxts)
{
	uint32_t i;

	for (i = 0; i < SVC_SRQ_CHUNK; i++) {
		struct svc_rdma_send_ctxt *ctxt = &ctxts[i];

		rpcrdma_free(sh->stats, ctxt->sc_wrs, ctxt->sc_max_wrs * sizeof(*ctxt->sc_wrs));
		rpcrdma_free(sh->stats, ctxt->sc_wr_sges,
			     ctxt->sc_max_wrs * sizeof(*ctxt->sc_wr_sges));
		rpcrdma_free(sh->stats, ctxt->sc_releases,
			     ctxt->sc_max_releases * sizeof(*ctxt->sc_releases));
	}
}

static void svc_srq_move_stats(struct svc_rdma_srq *sh)
{
	struct list_node *pos;
	size_t bytes = sizeof(*sh);

	list_for_each(pos, &sh->chunks) {
		struct svc_srq_chunk *c = list_entry(pos, struct svc_srq_chunk, node);

		bytes += c->bytes + rpcrdma_slab_bytes(&c->slab);
	}
	rpcrdma_count_sub(sh->stats->heap_bytes, bytes);
	sh->own_stats.heap_bytes = bytes;
	sh->stats = &sh->own_stats;
}

void svc_rdma_srq_destroy(struct svc_rdma_srq *sh)
{
	struct svc_srq_chunk *c;

	if (!sh->orphan)
		svc_srq_release_verbs(sh);
	/*
	 * Calls the application holds keep their buffers: the last one frees,
	 * counted apart from the poller's (which may be gone by then).
	 */
	if (sh->held) {
		if (!sh->orphan) {
			svc_srq_move_stats(sh);
			sh->orphan = true;
		}
		return;
	}
	while ((c = list_pop_entry(&sh->chunks, struct svc_srq_chunk, node))) {
		if (!c->recv)
			svc_srq_free_grown(sh, (struct svc_rdma_send_ctxt *)(void *)(c + 1));
		rpcrdma_count_sub(sh->stats->heap_bytes, c->bytes + rpcrdma_slab_bytes(&c->slab));
		rpcrdma_slab_free(&c->slab);
		free(c);
	}
	rpcrdma_count_sub(sh->stats->heap_bytes, sizeof(*sh));
	free(sh);
}
