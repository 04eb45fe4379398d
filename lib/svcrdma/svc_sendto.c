/* SPDX-License-Identifier: MIT */
/*
 * Server reply path: send contexts, send-queue accounting with FIFO waiters,
 * the Send completion handler, and replies: inline, with Write-list payloads
 * placed by RDMA Write, through a Reply chunk, by Send With Invalidate, or
 * RDMA_ERROR.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rpcrdma/proto.h>

#include "proto_plain.h"
#include "svc_pcl.h"
#include "svc_rdma.h"

#define SVC_RDMA_DEF_MAX_REPLY (64ull << 20)

void svc_rdma_send_release(struct svcxprt_rdma *rdma, struct svc_rdma_chain *chain)
{
	svc_rdma_send_ctxt_put(rdma, container_of(chain, struct svc_rdma_send_ctxt, sc_chain));
}

void svc_rdma_send_ctxt_init(struct svc_rdma_send_ctxt *ctxt, unsigned char *buf, uint32_t lkey)
{
	svc_rdma_chain_init(&ctxt->sc_chain, svc_rdma_send_release);
	ctxt->sc_cqe.done = svc_rdma_wc_send;
	ctxt->sc_write_cqe.done = svc_rdma_write_done;
	ctxt->sc_reply_cqe.done = svc_rdma_reply_done;
	/* The Send's one SGE is the context's buffer, for good: only its length changes. */
	ctxt->sc_xprt_buf = buf;
	ctxt->sc_sge.addr = (uintptr_t)buf;
	ctxt->sc_sge.lkey = lkey;
	rpcrdma_send_wr_init(&ctxt->sc_send_wr, &ctxt->sc_cqe, &ctxt->sc_sge);
}

/* The warmest free send context of the connection's own, or NULL. */
static rpcrdma_always_inline struct svc_rdma_send_ctxt *
svc_rdma_send_ctxt_pop(struct svcxprt_rdma *rdma)
{
	struct svc_rdma_send_ctxt *ctxt = rdma->sc_send_free;

	if (likely(ctxt))
		rdma->sc_send_free = ctxt->sc_free_next;
	return ctxt;
}

int svc_rdma_send_ctxts_grow(struct svcxprt_rdma *rdma, uint32_t n)
{
	size_t bytes = sizeof(struct svc_rdma_send_chunk) + n * sizeof(struct svc_rdma_send_ctxt);
	struct svc_rdma_send_chunk *c = svc_rdma_alloc(rdma, bytes);
	size_t slab;
	uint32_t i;

	if (!c)
		return -ENOMEM;
	/* The server never exposes memory: local access only. */
	if (rpcrdma_slab_create(&c->slab, rdma->sc_pd, n, rdma->sc_buf_size, 0)) {
		svc_rdma_free_mem(rdma, c, bytes);
		return -ENOMEM;
	}
	c->count = n;
	c->next = rdma->sc_send_chunks;
	rdma->sc_send_chunks = c;
	rdma->sc_nsend += n;
	slab = rpcrdma_slab_bytes(&c->slab);
	rdma->sc_heap += slab;
	rpcrdma_count_add(rdma->sc_stats->heap_bytes, slab);
	rpcrdma_count_add(rdma->sc_stats->registered_bytes, slab);
	for (i = 0; i < n; i++) {
		svc_rdma_send_ctxt_init(&c->ctxts[i], rpcrdma_slab_buf(&c->slab, i),
					rpcrdma_slab_lkey(&c->slab));
		svc_rdma_send_ctxt_push(rdma, &c->ctxts[i]);
	}
	return 0;
}

void svc_rdma_send_ctxts_dereg(struct svcxprt_rdma *rdma)
{
	struct svc_rdma_send_chunk *c;

	for (c = rdma->sc_send_chunks; c; c = c->next) {
		if (c->slab.mr)
			rpcrdma_count_sub(rdma->sc_stats->registered_bytes,
					  rpcrdma_slab_bytes(&c->slab));
		rpcrdma_slab_dereg(&c->slab);
	}
}

void svc_rdma_send_ctxts_free(struct svcxprt_rdma *rdma)
{
	struct svc_rdma_send_chunk *c;
	uint32_t i;

	while ((c = rdma->sc_send_chunks)) {
		rdma->sc_send_chunks = c->next;
		for (i = 0; i < c->count; i++) {
			struct svc_rdma_send_ctxt *ctxt = &c->ctxts[i];

			svc_rdma_free_mem(rdma, ctxt->sc_wrs,
					  ctxt->sc_max_wrs * sizeof(*ctxt->sc_wrs));
			svc_rdma_free_mem(rdma, ctxt->sc_wr_sges,
					  ctxt->sc_max_wrs * sizeof(*ctxt->sc_wr_sges));
			svc_rdma_free_mem(rdma, ctxt->sc_releases,
					  ctxt->sc_max_releases * sizeof(*ctxt->sc_releases));
		}
		rpcrdma_count_sub(rdma->sc_stats->heap_bytes, rpcrdma_slab_bytes(&c->slab));
		rpcrdma_slab_free(&c->slab);
		svc_rdma_free_mem(rdma, c, sizeof(*c) + c->count * sizeof(c->ctxts[0]));
	}
	rdma->sc_nsend = 0;
}

/*
 * Out of memory for a reply the application handed over (or is building):
 * close the connection rather than leave the client waiting for a reply
 * that will never come. Its calls fail, and go again on a new connection.
 * Returns -ENOMEM.
 */
static __attribute__((noinline)) int svc_rdma_reply_nomem(struct svcxprt_rdma *rdma)
{
	if (svc_rdma_can_send(rdma)) {
		rpcrdma_warn("server: no memory for a reply; closing the connection");
		rpcrdma_ep_close_deferred(&rdma->sc_ep);
		svc_rdma_mark_ready(rdma);
	}
	return -ENOMEM;
}

/*
 * A reply found no send context free: its connection's are all taken, or
 * (with the SRQ) it holds svc_rdma_send_max() of its poller's pool, or that
 * pool could not grow. Below the bound the connection makes a chunk of
 * its own. At the bound the client is far past its credits, and out of
 * memory no reply can go: the connection is closed either way, so that
 * the client learns its calls failed (a reply is never dropped with the
 * connection left up). Returns a context, or NULL with *@rc -ENOTCONN
 * (closed, or closing already) or -ENOMEM (closed now).
 */
static __attribute__((noinline)) struct svc_rdma_send_ctxt *
svc_rdma_send_ctxt_get_slow(struct svcxprt_rdma *rdma, int *rc)
{
	uint32_t held = rdma->sc_srq ? rdma->sc_sends_out : rdma->sc_nsend;
	uint32_t max = svc_rdma_send_max(rdma);

	*rc = -ENOTCONN;
	/* A closing connection sends nothing more: it needs no more memory. */
	if (!svc_rdma_can_send(rdma))
		return NULL;
	if (held >= max) {
		svc_rdma_credit_overrun(rdma, "more replies due than its send contexts");
		return NULL;
	}
	if (!rdma->sc_srq && svc_rdma_send_ctxts_grow(rdma, max - held < SVC_RDMA_SEND_EXTRA ?
							      max - held : SVC_RDMA_SEND_EXTRA) == 0)
		return svc_rdma_send_ctxt_pop(rdma);
	*rc = svc_rdma_reply_nomem(rdma);
	return NULL;
}

/*
 * A send context for a reply: the top of the connection's free stack, or
 * with the SRQ (which leaves that stack empty) one of its poller's pool.
 * Returns it, or NULL with *@rc as svc_rdma_send_ctxt_get_slow() says.
 */
static rpcrdma_always_inline struct svc_rdma_send_ctxt *
svc_rdma_send_ctxt_get(struct svcxprt_rdma *rdma, int *rc)
{
	struct svc_rdma_send_ctxt *ctxt = svc_rdma_send_ctxt_pop(rdma);

	if (unlikely(!ctxt)) {
		if (rdma->sc_srq)
			ctxt = svc_rdma_srq_send_get(rdma);
		if (!ctxt && !(ctxt = svc_rdma_send_ctxt_get_slow(rdma, rc)))
			return NULL;
	}
	ctxt->sc_rdma = rdma;
	ctxt->sc_chain.first = &ctxt->sc_send_wr;
	ctxt->sc_chain.sq.sqecount = 1;
	ctxt->sc_sq_extra = 0;
	ctxt->sc_nwrs = 0;
	ctxt->sc_send_wr.next = NULL;
	ctxt->sc_send_wr.opcode = IBV_WR_SEND;
	return ctxt;
}

int svc_rdma_add_release(struct svcxprt_rdma *rdma, struct svc_rdma_send_ctxt *ctxt,
			 const struct svc_rdma_release *rel)
{
	if (ctxt->sc_nreleases == ctxt->sc_max_releases) {
		uint32_t n = ctxt->sc_max_releases ? 2 * ctxt->sc_max_releases : 4;
		struct svc_rdma_release *r =
			svc_rdma_realloc(rdma, ctxt->sc_releases,
					 ctxt->sc_max_releases * sizeof(*r), n * sizeof(*r));

		if (!r)
			return -ENOMEM;
		ctxt->sc_releases = r;
		ctxt->sc_max_releases = n;
	}
	ctxt->sc_releases[ctxt->sc_nreleases++] = *rel;
	return 0;
}

static __attribute__((noinline)) void svc_rdma_send_releases(struct svcxprt_rdma *rdma,
								struct svc_rdma_send_ctxt *ctxt)
{
	uint32_t i;

	for (i = 0; i < ctxt->sc_nreleases; i++) {
		struct svc_rdma_release *rel = &ctxt->sc_releases[i];

		svc_rdma_long_reply_put(rdma, &rel->buf);
		if (rel->mem)
			rel->mem->rm_users--;
		if (rel->release)
			rel->release(rel->arg);
	}
	ctxt->sc_nreleases = 0;
}

/*
 * Release what the context holds: buffers, registrations, payloads (exactly
 * once). Most replies hold nothing: the loop is apart, for them.
 */
void svc_rdma_send_ctxt_put(struct svcxprt_rdma *rdma, struct svc_rdma_send_ctxt *ctxt)
{
	if (ctxt->sc_nreleases)
		svc_rdma_send_releases(rdma, ctxt);
	if (ctxt->sc_srq)
		svc_rdma_srq_send_put(ctxt);
	else
		svc_rdma_send_ctxt_push(rdma, ctxt);
}

uint32_t svc_rdma_grant(struct svcxprt_rdma *rdma)
{
	uint32_t grant = rdma->sc_ep.recv_posted;

	if (rdma->sc_srq)
		return svc_rdma_srq_grant(rdma);
	if (grant > rdma->sc_max_requests)
		grant = rdma->sc_max_requests;
	/* A grant of 0 would deadlock the client (RFC 8166 3.3.1). */
	return grant ? grant : 1;
}

/*
 * The Send ending a chain completed (or flushed): every WR before it on this
 * send queue has completed too, by RC ordering. Return the chain's SQ slots
 * first, then release the context and whatever it holds, on success and
 * error alike; an error schedules a close.
 */
void svc_rdma_wc_send(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct svc_rdma_send_ctxt *ctxt =
		container_of(rpcrdma_wc_cqe(wc), struct svc_rdma_send_ctxt, sc_cqe);
	struct svcxprt_rdma *rdma = ctxt->sc_rdma;

	if (!rdma->sc_ep.own_cq)
		svc_rdma_mark_ready(rdma);	/* its waiters: no visit polls a shared CQ */
	rpcrdma_sq_put(&rdma->sc_ep, ctxt->sc_chain.sq.sqecount + ctxt->sc_sq_extra);
	ctxt->sc_sq_extra = 0;
	if (unlikely(wc->status != IBV_WC_SUCCESS))
		rpcrdma_ep_wc_error(&rdma->sc_ep, wc, "server send");
	svc_rdma_send_ctxt_put(rdma, ctxt);
}

/* An unsignaled reply completes only in error (a flush): its slot went with a later Send's. */
void svc_rdma_wc_send_unsignaled(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct svcxprt_rdma *rdma =
		container_of(rpcrdma_wc_cqe(wc), struct svcxprt_rdma, sc_unsig_cqe);

	(void)cq;
	if (!rdma->sc_ep.own_cq)
		svc_rdma_mark_ready(rdma);
	rpcrdma_ep_wc_error(&rdma->sc_ep, wc, "server send");
}

bool svc_rdma_can_send(const struct svcxprt_rdma *rdma)
{
	return (rdma->sc_state == SVCXPRT_CONNECTED || rdma->sc_state == SVCXPRT_ACCEPTING) &&
	       !rdma->sc_ep.close_pending;
}

/*
 * After a failed post: a chain none of whose WRs went is given back (its
 * slots are back already); one whose head went waits for the drain.
 */
static void svc_rdma_chain_unposted(struct svcxprt_rdma *rdma, struct svc_rdma_chain *chain,
				    bool head_posted)
{
	if (head_posted)
		list_add_tail(&chain->sq.list, &rdma->sc_orphans);
	else
		chain->release(rdma, chain);
}

/* A batch of one, as most passes make: the chain is posted as it is. */
static rpcrdma_always_inline void svc_rdma_post_one(struct svcxprt_rdma *rdma,
						    struct svc_rdma_chain *chain)
{
	int rc = rpcrdma_ep_post_send(&rdma->sc_ep, chain->first, chain->sq.sqecount, NULL);

	if (unlikely(rc))
		svc_rdma_chain_unposted(rdma, chain, rc == -EINPROGRESS);
}

/* The chain's slots are taken: post it, or batch it. A failure already asked for a close. */
static void svc_rdma_chain_post(struct rpcrdma_ep *ep, struct rpcrdma_sq_waiter *w)
{
	struct svcxprt_rdma *rdma = container_of(ep, struct svcxprt_rdma, sc_ep);
	struct svc_rdma_chain *chain = container_of(w, struct svc_rdma_chain, sq);

	if (rdma->sc_batching)
		list_add_tail(&w->list, &rdma->sc_batch);
	else
		svc_rdma_post_one(rdma, chain);
}

/* The last WR of @chain: its sqecount WRs are one each. */
static struct ibv_send_wr *svc_rdma_chain_last(const struct svc_rdma_chain *chain)
{
	struct ibv_send_wr *wr = chain->first;
	uint32_t i;

	for (i = 1; i < chain->sq.sqecount; i++)
		wr = wr->next;
	return wr;
}

/*
 * Each chain's last WR is linked to the next chain's first for the post and
 * unlinked right after it, before any completion is polled: the WRs are the
 * chains' own again when their handlers run. On a failure, the count of WRs
 * that went tells each chain whether it went whole, in part or not at all.
 */
static __attribute__((noinline)) void svc_rdma_post_many(struct svcxprt_rdma *rdma)
{
	struct ibv_send_wr *first = NULL, **link = &first;
	uint32_t sqecount = 0, posted = 0, seen = 0;
	struct svc_rdma_chain *chain;
	struct list_node *pos, *tmp;
	int rc;

	list_for_each(pos, &rdma->sc_batch) {
		chain = list_entry(pos, struct svc_rdma_chain, sq.list);
		*link = chain->first;
		link = &svc_rdma_chain_last(chain)->next;
		sqecount += chain->sq.sqecount;
	}
	rc = rpcrdma_ep_post_send(&rdma->sc_ep, first, sqecount, &posted);
	list_for_each_safe(pos, tmp, &rdma->sc_batch) {
		chain = list_entry(pos, struct svc_rdma_chain, sq.list);
		list_del(pos);
		svc_rdma_chain_last(chain)->next = NULL;
		if (unlikely(rc) && seen + chain->sq.sqecount > posted)
			svc_rdma_chain_unposted(rdma, chain, rc == -EINPROGRESS && seen < posted);
		seen += chain->sq.sqecount;
	}
}

void svc_rdma_post_batched(struct svcxprt_rdma *rdma)
{
	struct list_node *only = rdma->sc_batch.next;

	if (only->next != &rdma->sc_batch) {
		svc_rdma_post_many(rdma);
		return;
	}
	list_init(&rdma->sc_batch);
	svc_rdma_post_one(rdma, list_entry(only, struct svc_rdma_chain, sq.list));
}

static void svc_rdma_chain_abort(struct rpcrdma_ep *ep, struct rpcrdma_sq_waiter *w)
{
	struct svc_rdma_chain *chain = container_of(w, struct svc_rdma_chain, sq);

	chain->release(container_of(ep, struct svcxprt_rdma, sc_ep), chain);
}

void svc_rdma_chain_init(struct svc_rdma_chain *chain,
			 void (*release)(struct svcxprt_rdma *, struct svc_rdma_chain *))
{
	chain->sq.post = svc_rdma_chain_post;
	chain->sq.abort = svc_rdma_chain_abort;
	chain->release = release;
}

/*
 * The kernel's svc_rdma_sq_wait() sleeps until the send queue has room; a
 * poll loop cannot, so the chain posts now or queues behind earlier ones
 * (FIFO) and posts from svc_rdma_wake_send_waiters(). Returns 0 (the chain
 * is the connection's now, posted, queued or released) or -ENOTCONN (the
 * caller still owns it).
 */
static rpcrdma_always_inline int
svc_rdma_sq_wait_inline(struct svcxprt_rdma *rdma, struct svc_rdma_chain *chain)
{
	if (unlikely(!svc_rdma_can_send(rdma)))
		return -ENOTCONN;
	/* Room, no one ahead, no batch: what svc_rdma_chain_post() would do, without the call. */
	if (likely(!rdma->sc_batching) && rpcrdma_sq_get(&rdma->sc_ep, chain->sq.sqecount)) {
		svc_rdma_post_one(rdma, chain);
		return 0;
	}
	rpcrdma_sq_post(&rdma->sc_ep, &chain->sq);
	return 0;
}

int svc_rdma_sq_wait(struct svcxprt_rdma *rdma, struct svc_rdma_chain *chain)
{
	return svc_rdma_sq_wait_inline(rdma, chain);
}

/*
 * A reply that is one inline Send holding nothing (no Writes, no releases)
 * goes unsignaled when the send queue's ledger lets it, as the client's
 * calls do: its completion would only wake a server asleep between calls.
 * Its slot is held until a later signaled Send covers it. Only a post made
 * now qualifies (not a batch, nobody waiting ahead), so that every Send that
 * covers it is posted after it. True if it went (or failed): the context is
 * free again.
 */
static rpcrdma_always_inline bool
svc_rdma_post_unsignaled(struct svcxprt_rdma *rdma, struct svc_rdma_send_ctxt *ctxt)
{
	struct ibv_send_wr *wr = &ctxt->sc_send_wr;
	struct rpcrdma_ep *ep = &rdma->sc_ep;
	int rc;

	if (ctxt->sc_nwrs || ctxt->sc_nreleases || !(wr->send_flags & IBV_SEND_INLINE) ||
	    rdma->sc_batching || !svc_rdma_can_send(rdma) || !rpcrdma_sq_get(ep, 1))
		return false;
	if (!rpcrdma_sq_unsignaled(ep, 1)) {
		rpcrdma_sq_put(ep, 1);
		return false;
	}
	wr->wr_id = rpcrdma_cqe_id(&rdma->sc_unsig_cqe);
	wr->send_flags &= ~(unsigned int)IBV_SEND_SIGNALED;
	rc = rpcrdma_ep_post_send(ep, wr, 1, NULL);
	wr->wr_id = rpcrdma_cqe_id(&ctxt->sc_cqe);
	wr->send_flags |= IBV_SEND_SIGNALED;
	(void)rc;	/* a failed post closed the endpoint, and its ledger with it */
	svc_rdma_send_ctxt_put(rdma, ctxt);
	return true;
}

/* Post a send context's chain; on -ENOTCONN release it. Inline: every reply's last step. */
static rpcrdma_always_inline int
svc_rdma_post_send(struct svcxprt_rdma *rdma, struct svc_rdma_send_ctxt *ctxt)
{
	int rc;

	rpcrdma_send_inline(&rdma->sc_ep, &ctxt->sc_send_wr);
	if (svc_rdma_post_unsignaled(rdma, ctxt))
		return 0;
	/* Signaled: it gives back the slots the unsignaled replies before it hold. */
	ctxt->sc_sq_extra = rpcrdma_sq_signaled(&rdma->sc_ep);
	rc = svc_rdma_sq_wait_inline(rdma, &ctxt->sc_chain);

	if (rc)
		svc_rdma_send_ctxt_put(rdma, ctxt);
	return rc;
}

/*
 * Answer RDMA_ERROR: the failing message's rdma_xid, and for ERR_VERS its
 * rdma_vers too, with the one version we speak (RFC 8166 4.5).
 */
int svc_rdma_send_error(struct svcxprt_rdma *rdma, const struct rpcrdma_hdr *failing,
			uint32_t err)
{
	struct rpcrdma_hdr_enc enc = {
		.xid = failing->xid,
		.proc = RPCRDMA_ERROR,
		.err = err,
		.vers_low = RPCRDMA_VERSION,
		.vers_high = RPCRDMA_VERSION,
		.vers = failing->vers,
	};
	struct svc_rdma_send_ctxt *ctxt;
	long len;
	int rc;

	ctxt = svc_rdma_send_ctxt_get(rdma, &rc);
	if (!ctxt)
		return rc;
	enc.credit = svc_rdma_grant(rdma);
	len = rpcrdma_hdr_encode(ctxt->sc_xprt_buf, rdma->sc_buf_size, &enc);
	if (len < 0) {
		svc_rdma_send_ctxt_put(rdma, ctxt);
		return (int)len;
	}
	/* An error reply carries no chunks and never invalidates. */
	ctxt->sc_send_wr.opcode = IBV_WR_SEND;
	ctxt->sc_sge.length = (uint32_t)len;
	rpcrdma_count_inc(rdma->sc_stats->rdma_errors);
	return svc_rdma_post_send(rdma, ctxt);
}

/* The lkey @buf[0..len) can be read under: a registration, or a bounce copy. */
int svc_rdma_payload_lkey(struct svcxprt_rdma *rdma, struct svc_rdma_send_ctxt *ctxt,
			  const struct svc_rdma_payload *p, const unsigned char **src,
			  uint32_t *lkey)
{
	struct svc_rdma_release rel = { 0 };
	struct ibv_mr *mr;
	int rc;

	if (p->len == 0) {
		/* Nothing to write: no lkey needed. */
		*src = p->buf;
		*lkey = 0;
		return 0;
	}
	if (p->mem && !p->copy) {
		/* The owner holds it registered; no user count to keep. */
		mr = rpcrdma_mem_mr(p->mem, rdma->sc_pd);
		if (mr) {
			*src = p->buf;
			*lkey = mr->lkey;
			return 0;
		}
	} else if (rdma->sc_svc && !p->copy) {
		rel.mem = svc_rdma_mem_use(rdma->sc_svc, p->buf, p->len, rdma->sc_pd, &mr);
		if (rel.mem) {
			*src = p->buf;
			*lkey = mr->lkey;
			return svc_rdma_add_release(rdma, ctxt, &rel);
		}
	}
	rc = rpcrdma_buf_alloc(&rel.buf, rdma->sc_pd, p->len, 0, rdma->sc_stats);
	if (rc)
		return rc;
	memcpy(rel.buf.data, p->buf, p->len);
	rpcrdma_count_add(rdma->sc_stats->bounce_bytes, p->len);
	*src = rel.buf.data;
	*lkey = rel.buf.mr->lkey;
	rc = svc_rdma_add_release(rdma, ctxt, &rel);
	if (rc)
		rpcrdma_buf_free(&rel.buf, rdma->sc_stats);
	return rc;
}

/* The payloads' release callbacks move to the context: they run at its Send completion. */
static int svc_rdma_take_payloads(struct svc_rdma_send_ctxt *ctxt, struct rpcrdma_svc_call *call)
{
	unsigned int i;

	for (i = 0; i < call->npayloads; i++) {
		struct svc_rdma_release rel = {
			.release = call->payloads[i].release,
			.arg = call->payloads[i].arg,
		};

		if (!rel.release)
			continue;
		if (svc_rdma_add_release(call->rdma, ctxt, &rel))
			return -ENOMEM;
		call->payloads[i].release = NULL;
	}
	return 0;
}

/* Echo a client chunk with the bytes written into each segment. */
void svc_rdma_echo(const struct rpcrdma_chunk *chunk, const uint32_t *written,
		   struct rpcrdma_segment *segs, struct rpcrdma_chunk_desc *desc)
{
	uint32_t i;

	for (i = 0; i < chunk->nsegs; i++) {
		rpcrdma_chunk_segment(chunk, i, &segs[i]);
		segs[i].length = written[i];
	}
	desc->nsegs = chunk->nsegs;
	desc->segs = segs;
}

/* The echo arrays of @nsegs segments: on the stack up to SVC_RDMA_STACK_SEGS. */
static inline void svc_rdma_free_echo(struct svcxprt_rdma *rdma, struct svc_rdma_reply *r)
{
	if (likely(r->nsegs <= SVC_RDMA_STACK_SEGS))
		return;
	svc_rdma_free_mem(rdma, r->written, r->nsegs * sizeof(*r->written));
	svc_rdma_free_mem(rdma, r->echo, r->nsegs * sizeof(*r->echo));
}

/*
 * Start a reply: the payloads' releases move to @ctxt, the stream's length
 * with its inline payloads, and room to echo every chunk segment. Returns
 * 0, -EINVAL (a payload placed beyond the message), or -ENOMEM.
 */
static int svc_rdma_reply_init(struct svcxprt_rdma *rdma, struct svc_rdma_send_ctxt *ctxt,
			       struct rpcrdma_svc_call *call, const struct svc_rdma_msg *m,
			       struct svc_rdma_reply *r)
{
	const struct rpcrdma_hdr *hdr = call->hdr;
	uint32_t i;
	int rc;

	r->msg = m;
	r->enc = (struct rpcrdma_hdr_enc){ .xid = call->xid, .proc = RPCRDMA_MSG };
	r->stream_len = m->len;
	r->nsegs = hdr->has_reply ? hdr->reply.nsegs : 0;
	r->written = NULL;
	r->echo = NULL;
	rc = svc_rdma_take_payloads(ctxt, call);
	if (rc)
		return rc;
	for (i = 0; i < call->npayloads; i++) {
		if (call->payloads[i].pos > m->len)
			return -EINVAL;
		if (!svc_rdma_payload_ddp(hdr, i))
			r->stream_len += xdr_round4(call->payloads[i].len);
	}
	r->ninl = svc_rdma_inline_payloads(call, r->inl);
	for (i = 0; i < hdr->write_chunks; i++)
		r->nsegs += hdr->write[i].nsegs;
	/* Most replies echo a few segments, or none: the stack serves them. */
	if (r->nsegs <= SVC_RDMA_STACK_SEGS) {
		/* Segments of chunks left unused are echoed with 0 bytes written. */
		r->written = r->written_stack;
		if (r->nsegs)
			memset(r->written, 0, r->nsegs * sizeof(*r->written));
		r->echo = r->echo_stack;
		return 0;
	}
	r->written = svc_rdma_alloc(rdma, r->nsegs * sizeof(*r->written));
	r->echo = svc_rdma_alloc(rdma, r->nsegs * sizeof(*r->echo));
	return r->written && r->echo ? 0 : -ENOMEM;
}

/*
 * The transport header and, inline, the message with its inline payloads
 * into @ctxt's buffer; the Send (or Send With Invalidate) ends the chain of
 * Writes before it. Returns 0 or -EMSGSIZE.
 */
static int svc_rdma_map_reply_msg(struct svcxprt_rdma *rdma, struct svc_rdma_send_ctxt *ctxt,
				  const struct rpcrdma_svc_call *call, struct svc_rdma_reply *r)
{
	const struct svc_rdma_msg *m = r->msg;
	long hdr_len;
	uint32_t i;

	r->enc.credit = svc_rdma_grant(rdma);
	/* A reply that returns no chunk has the fixed header: nothing to size. */
	if (likely(r->enc.proc == RPCRDMA_MSG && !r->enc.write_chunks && !r->enc.reply))
		hdr_len = RPCRDMA_HDR_MIN_LEN;
	else
		hdr_len = rpcrdma_hdr_encoded_len(&r->enc);
	if (hdr_len < 0)
		return -EMSGSIZE;
	if (r->enc.proc == RPCRDMA_NOMSG) {
		if ((size_t)hdr_len > rdma->sc_inline.send_max)
			return -EMSGSIZE;
		ctxt->sc_sge.length = (uint32_t)hdr_len;
	} else {
		/* Inline: the header ends where the message starts, at hdr_reserve. */
		if ((size_t)hdr_len != call->hdr_reserve ||
		    call->hdr_reserve + r->stream_len > rdma->sc_inline.send_max ||
		    call->hdr_reserve + r->stream_len > rdma->sc_buf_size)
			return -EMSGSIZE;
		svc_rdma_splice(ctxt->sc_xprt_buf + call->hdr_reserve,
				m->in_place ? ctxt->sc_xprt_buf + call->hdr_reserve : m->msg, m->len,
				r->inl, r->ninl);
		ctxt->sc_sge.length = (uint32_t)(hdr_len + r->stream_len);
	}
	if (rpcrdma_hdr_encode(ctxt->sc_xprt_buf, (size_t)hdr_len, &r->enc) != hdr_len)
		return -EMSGSIZE;

	if (call->inv) {
		ctxt->sc_send_wr.opcode = IBV_WR_SEND_WITH_INV;
		ctxt->sc_send_wr.invalidate_rkey = call->inv_rkey;
	} else {
		ctxt->sc_send_wr.opcode = IBV_WR_SEND;
	}
	/* The Writes go first on the send queue; the Send, signaled, ends the chain. */
	for (i = 0; i < ctxt->sc_nwrs; i++)
		ctxt->sc_wrs[i].next = i + 1 < ctxt->sc_nwrs ? &ctxt->sc_wrs[i + 1] : &ctxt->sc_send_wr;
	ctxt->sc_chain.first = ctxt->sc_nwrs ? &ctxt->sc_wrs[0] : &ctxt->sc_send_wr;
	ctxt->sc_chain.sq.sqecount = ctxt->sc_nwrs + 1;
	return ctxt->sc_chain.sq.sqecount > rdma->sc_sq_depth ? -EMSGSIZE : 0;
}

/*
 * The commonest reply: inline RDMA_MSG returning no chunk, with no payload
 * and no invalidation, into a fresh context. The bytes and the WR are the
 * general path's, without sizing or echoing anything. Returns false, @ctxt
 * untouched, for anything else, which the general path builds (or refuses).
 * sc_inline.send_max never exceeds sc_buf_size (rpcrdma_cm_negotiate() caps
 * it by the server's inline size, the buffers' size).
 */
static rpcrdma_always_inline bool svc_rdma_send_plain(struct svcxprt_rdma *rdma,
						       const struct rpcrdma_svc_call *call,
						       struct svc_rdma_send_ctxt *ctxt,
						       const struct svc_rdma_msg *m)
{
	const struct rpcrdma_hdr *hdr = call->hdr;
	size_t len = RPCRDMA_HDR_MIN_LEN + m->len;

	if (hdr->write_chunks | hdr->has_reply | call->npayloads | call->inv | ctxt->sc_nwrs ||
	    m->long_buf || len > rdma->sc_inline.send_max)
		return false;
	if (!m->in_place)
		memcpy(ctxt->sc_xprt_buf + RPCRDMA_HDR_MIN_LEN, m->msg, m->len);
	rpcrdma_hdr_plain_encode(ctxt->sc_xprt_buf, call->xid, svc_rdma_grant(rdma));
	/* The rest of the WR is as svc_rdma_send_ctxt_get() left it (sc_nwrs == 0). */
	ctxt->sc_sge.length = (uint32_t)len;
	return true;
}

/* Any reply but the plain one; svc_rdma_sendto() says what it does and returns. */
static __attribute__((noinline)) int svc_rdma_sendto_general(struct svcxprt_rdma *rdma,
							     struct rpcrdma_svc_call *call,
							     struct svc_rdma_send_ctxt *ctxt,
							     const struct svc_rdma_msg *m)
{
	struct svc_rdma_reply r;
	int rc;

	r.nsegs = 0;
	if (!svc_rdma_can_send(rdma)) {
		rc = -ENOTCONN;
		goto out_put;
	}
	rc = svc_rdma_reply_init(rdma, ctxt, call, m, &r);
	if (rc == -EINVAL)
		goto out_err;
	if (rc)
		goto out_put;
	if (call->hdr->write_chunks) {
		rc = svc_rdma_prepare_write_list(rdma, ctxt, call, &r);
		if (rc)
			goto out_err;
	}
	if (call->hdr->has_reply) {
		rc = svc_rdma_prepare_reply_chunk(rdma, ctxt, call, &r);
		if (rc)
			goto out_err;
	}
	rc = svc_rdma_map_reply_msg(rdma, ctxt, call, &r);
	if (rc)
		goto out_err;
	svc_rdma_free_echo(rdma, &r);
	rpcrdma_count_inc(rdma->sc_stats->replies);
	return svc_rdma_post_send(rdma, ctxt);

out_err:
	svc_rdma_send_ctxt_put(rdma, ctxt);
	svc_rdma_free_echo(rdma, &r);
	/* No memory for a bounce or a Write: the client learns it by the close. */
	if (rc == -ENOMEM)
		return svc_rdma_reply_nomem(rdma);
	/* Never a truncated or half-built reply: the client gets ERR_CHUNK. */
	if (rc == -EMSGSIZE)	/* larger than the room the client offered (RFC 8166 4.5) */
		rpcrdma_count_inc(rdma->sc_stats->reply_overflows);
	svc_rdma_send_error(rdma, call->hdr, RPCRDMA_ERR_CHUNK);
	return rc == -EINVAL ? -EINVAL : -EMSGSIZE;
out_put:
	svc_rdma_send_ctxt_put(rdma, ctxt);
	svc_rdma_free_echo(rdma, &r);
	return rc == -ENOMEM ? svc_rdma_reply_nomem(rdma) : rc;
}

/*
 * Build and post the reply. Consumes @ctxt and the call's payloads whatever
 * happens. Returns 0, -ENOTCONN, -EMSGSIZE (the client got ERR_CHUNK),
 * -EINVAL (a misplaced payload; ERR_CHUNK too), or -ENOMEM (the
 * connection is closed).
 */
static rpcrdma_always_inline int svc_rdma_sendto(struct svcxprt_rdma *rdma,
						 struct rpcrdma_svc_call *call,
						 struct svc_rdma_send_ctxt *ctxt,
						 const struct svc_rdma_msg *m)
{
	/* svc_rdma_post_send() refuses (-ENOTCONN) a plain reply the connection cannot send. */
	if (svc_rdma_send_plain(rdma, call, ctxt, m)) {
		int rc = svc_rdma_post_send(rdma, ctxt);

		if (!rc)
			rpcrdma_count_inc(rdma->sc_stats->replies);
		return rc;
	}
	return svc_rdma_sendto_general(rdma, call, ctxt, m);
}

/* The context rpcrdma_svc_reply_buf() took, or a new one (NULL: *@rc says why). */
static rpcrdma_always_inline struct svc_rdma_send_ctxt *
svc_rdma_call_take_ctxt(struct rpcrdma_svc_call *call, int *rc)
{
	struct svc_rdma_send_ctxt *ctxt = call->reply_ctxt;

	call->reply_ctxt = NULL;
	return ctxt ? ctxt : svc_rdma_send_ctxt_get(call->rdma, rc);
}

/*
 * The reply functions' bodies follow, each run on its call's poller
 * (svc_rdma_reply_enter() sees to it). Inline: the plain reply.
 */
static rpcrdma_always_inline int svc_rdma_reply_msg(struct rpcrdma_svc_call *call,
						    const void *msg, size_t len)
{
	struct svc_rdma_msg m = { .msg = msg, .len = len };
	struct svcxprt_rdma *rdma;
	struct svc_rdma_send_ctxt *ctxt;
	int rc;

	if (!call)
		return -EINVAL;
	rdma = call->rdma;
	/* svc_rdma_sendto() says -ENOTCONN when the connection cannot send. */
	if (!msg && len)
		rc = -EINVAL;
	else if ((ctxt = svc_rdma_call_take_ctxt(call, &rc)))
		rc = svc_rdma_sendto(rdma, call, ctxt, &m);
	svc_rdma_recv_ctxt_put(rdma, svc_rdma_call_ctxt(call));
	return rc;
}

static uint64_t svc_rdma_max_reply(const struct svcxprt_rdma *rdma)
{
	uint64_t max = rdma->sc_svc ? rdma->sc_svc->sv_attr.max_reply : 0;

	return max ? max : SVC_RDMA_DEF_MAX_REPLY;
}

static int svc_rdma_reply_buf(struct rpcrdma_svc_call *call, void **buf, size_t *max)
{
	struct svcxprt_rdma *rdma;

	if (!call || !buf || !max)
		return -EINVAL;
	rdma = call->rdma;
	if (!svc_rdma_can_send(rdma))
		return -ENOTCONN;
	if (call->hdr->has_reply) {
		/*
		 * A long reply is encoded where the RDMA Writes will read it. The
		 * peer names the room; only what the reply uses is registered, at
		 * commit, so a call offering a huge Reply chunk costs no memory.
		 */
		uint64_t room = call->hdr->reply.total;
		int rc;

		if (room > svc_rdma_max_reply(rdma))
			room = svc_rdma_max_reply(rdma);
		if (!call->long_reply.data) {
			rc = svc_rdma_long_reply_get(rdma, &call->long_reply, room ? room : 4);
			if (rc)
				return svc_rdma_reply_nomem(rdma);
			call->long_room = room;
		}
		*buf = call->long_reply.data;
		*max = call->long_room;
		return 0;
	}
	if (!call->reply_ctxt) {
		int rc;

		call->reply_ctxt = svc_rdma_send_ctxt_get(rdma, &rc);
		if (!call->reply_ctxt)
			return rc;
	}
	*buf = call->reply_ctxt->sc_xprt_buf + call->hdr_reserve;
	*max = rdma->sc_buf_size - call->hdr_reserve;
	return 0;
}

static int svc_rdma_reply_commit(struct rpcrdma_svc_call *call, size_t len)
{
	struct svc_rdma_msg m = { .len = len };
	struct svc_rdma_send_ctxt *ctxt;
	struct svcxprt_rdma *rdma;
	int rc;

	if (!call)
		return -EINVAL;
	rdma = call->rdma;
	if (call->hdr->has_reply && call->long_reply.data) {
		m.msg = call->long_reply.data;
		m.long_buf = &call->long_reply;
		/* A closed connection's PD may be gone: nothing is registered for it. */
		if (len > call->long_room)
			rc = -EINVAL;
		else if (!svc_rdma_can_send(rdma))
			rc = -ENOTCONN;
		else if (rpcrdma_buf_reg_prefix(&call->long_reply, rdma->sc_pd, len, 0,
						rdma->sc_stats))
			rc = svc_rdma_reply_nomem(rdma);
		else if ((ctxt = svc_rdma_call_take_ctxt(call, &rc)))
			rc = svc_rdma_sendto(rdma, call, ctxt, &m);
	} else if (call->reply_ctxt && !call->hdr->has_reply) {
		ctxt = svc_rdma_call_take_ctxt(call, &rc);
		m.in_place = true;
		m.msg = ctxt->sc_xprt_buf + call->hdr_reserve;
		if (call->hdr_reserve + len > rdma->sc_buf_size) {
			svc_rdma_send_ctxt_put(rdma, ctxt);
			rc = -EINVAL;
		} else {
			rc = svc_rdma_sendto(rdma, call, ctxt, &m);
		}
	} else {
		rc = -EINVAL;
	}
	svc_rdma_recv_ctxt_put(rdma, svc_rdma_call_ctxt(call));
	return rc;
}

static int svc_rdma_reply_payload(struct rpcrdma_svc_call *call, uint32_t pos, const void *buf,
				  size_t len, void (*release)(void *arg), void *arg,
				  const struct rpcrdma_mem *mem, bool copy)
{
	struct svc_rdma_payload *p;
	int rc = -EINVAL;

	if (!call || (!buf && len) || (pos & 3) || call->npayloads == SVC_RDMA_MAX_PAYLOADS ||
	    (call->npayloads && pos < call->payloads[call->npayloads - 1].pos))
		goto fail;
	rc = -ENOTCONN;
	if (!svc_rdma_can_send(call->rdma))
		goto fail;
	if (!call->payloads) {
		call->payloads = svc_rdma_alloc(call->rdma,
						SVC_RDMA_MAX_PAYLOADS * sizeof(*call->payloads));
		if (!call->payloads) {
			rc = svc_rdma_reply_nomem(call->rdma);
			goto fail;
		}
	}
	p = &call->payloads[call->npayloads++];
	p->pos = pos;
	p->buf = buf;
	p->len = len;
	p->release = release;
	p->arg = arg;
	p->mem = mem;
	p->copy = copy;
	return 0;
fail:
	if (release)
		release(arg);
	return rc;
}

static int svc_rdma_reply_err_chunk(struct rpcrdma_svc_call *call)
{
	struct svcxprt_rdma *rdma;
	int rc;

	if (!call)
		return -EINVAL;
	rdma = call->rdma;
	/* A send context taken for an in-place reply goes back first: the error takes one. */
	if (call->reply_ctxt) {
		svc_rdma_send_ctxt_put(rdma, call->reply_ctxt);
		call->reply_ctxt = NULL;
	}
	if (svc_rdma_can_send(rdma))
		rc = svc_rdma_send_error(rdma, call->hdr, RPCRDMA_ERR_CHUNK);
	else
		rc = -ENOTCONN;
	svc_rdma_recv_ctxt_put(rdma, svc_rdma_call_ctxt(call));
	return rc;
}

static int svc_rdma_call_drop(struct rpcrdma_svc_call *call)
{
	if (call)
		svc_rdma_recv_ctxt_put(call->rdma, svc_rdma_call_ctxt(call));
	return 0;
}

/* Each reply function by its op. Inline: an entry point names a constant op, the switch folds. */
static rpcrdma_always_inline int svc_rdma_reply_do(const struct svc_rdma_reply_args *a)
{
	switch (a->op) {
	case SVC_REPLY_MSG:
		return svc_rdma_reply_msg(a->call, a->ptr, a->len);
	case SVC_REPLY_BUF:
		return svc_rdma_reply_buf(a->call, a->buf, a->max);
	case SVC_REPLY_COMMIT:
		return svc_rdma_reply_commit(a->call, a->len);
	case SVC_REPLY_PAYLOAD:
		return svc_rdma_reply_payload(a->call, a->pos, a->ptr, a->len, a->release, a->arg,
					      a->mem, a->copy);
	case SVC_REPLY_ERR_CHUNK:
		return svc_rdma_reply_err_chunk(a->call);
	case SVC_REPLY_DROP:
		return svc_rdma_call_drop(a->call);
	}
	return -EINVAL;
}

int svc_rdma_reply_run(const struct svc_rdma_reply_args *a)
{
	return svc_rdma_reply_do(a);
}

/*
 * The one door of the reply functions. A connection belongs to its
 * poller's thread, which alone touches its state, lock-free: called from
 * another thread (a worker of a server with RPCRDMA_SVC_WORKERS), a reply
 * function is handed to that poller, which runs it (svc_rdma_reply_run()),
 * and the caller waits for its result (svc_handoff.c). Most servers have
 * no workers: one test of the call says so.
 */
static rpcrdma_always_inline int svc_rdma_reply_enter(const struct svc_rdma_reply_args a)
{
	if (unlikely(a.call && svc_rdma_foreign(a.call)))
		return svc_rdma_handoff(a);
	return svc_rdma_reply_do(&a);
}

RPCRDMA_EXPORT int rpcrdma_svc_reply(struct rpcrdma_svc_call *call, const void *msg, size_t len)
{
	struct svc_rdma_reply_args a;

	/* Field by field: an initializer would zero the others on every reply. */
	a.op = SVC_REPLY_MSG;
	a.call = call;
	a.ptr = msg;
	a.len = len;
	return svc_rdma_reply_enter(a);
}

RPCRDMA_EXPORT int rpcrdma_svc_reply_buf(struct rpcrdma_svc_call *call, void **buf, size_t *max)
{
	const struct svc_rdma_reply_args a = { .op = SVC_REPLY_BUF, .call = call, .buf = buf,
					       .max = max };

	return svc_rdma_reply_enter(a);
}

RPCRDMA_EXPORT int rpcrdma_svc_reply_commit(struct rpcrdma_svc_call *call, size_t len)
{
	const struct svc_rdma_reply_args a = { .op = SVC_REPLY_COMMIT, .call = call, .len = len };

	return svc_rdma_reply_enter(a);
}

int svc_rdma_reply_payload_src(struct rpcrdma_svc_call *call, uint32_t pos, const void *buf,
			       size_t len, void (*release)(void *arg), void *arg,
			       const struct rpcrdma_mem *mem, bool copy)
{
	const struct svc_rdma_reply_args a = { .op = SVC_REPLY_PAYLOAD, .call = call, .pos = pos,
					       .ptr = buf, .len = len, .release = release,
					       .arg = arg, .mem = mem, .copy = copy };

	return svc_rdma_reply_enter(a);
}

RPCRDMA_EXPORT int rpcrdma_svc_reply_payload(struct rpcrdma_svc_call *call, uint32_t pos,
					     const void *buf, size_t len,
					     void (*release)(void *arg), void *arg)
{
	return svc_rdma_reply_payload_src(call, pos, buf, len, release, arg, NULL, false);
}

RPCRDMA_EXPORT int rpcrdma_svc_reply_err_chunk(struct rpcrdma_svc_call *call)
{
	const struct svc_rdma_reply_args a = { .op = SVC_REPLY_ERR_CHUNK, .call = call };

	return svc_rdma_reply_enter(a);
}

int svc_rdma_reply_overflow(struct rpcrdma_svc_call *call)
{
	if (call)
		rpcrdma_count_inc(call->rdma->sc_stats->reply_overflows);
	return rpcrdma_svc_reply_err_chunk(call);
}

RPCRDMA_EXPORT void rpcrdma_svc_call_drop(struct rpcrdma_svc_call *call)
{
	const struct svc_rdma_reply_args a = { .op = SVC_REPLY_DROP, .call = call };

	svc_rdma_reply_enter(a);
}
