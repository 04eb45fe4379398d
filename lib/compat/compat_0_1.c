/* SPDX-License-Identifier: MIT */
/*
 * librpcrdma 0.1's entry points whose structs have since changed layout,
 * kept under version node RPCRDMA_0.1 for programs built against its
 * headers: each converts to the current struct and calls the current
 * function (the default version, RPCRDMA_0.2). Programs built now link to
 * those directly and never come here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "compat_0_1.h"
#include "xprt_rdma.h"

_Static_assert(offsetof(struct rpcrdma_stats, heap_bytes) - offsetof(struct rpcrdma_stats, calls) ==
	       sizeof(struct rpcrdma_stats_0_1) - sizeof(uint64_t),
	       "the 0.1 counters lie contiguous in struct rpcrdma_stats");

void rpcrdma_stats_to_0_1(const struct rpcrdma_stats *stats, struct rpcrdma_stats_0_1 *out)
{
	memcpy(out->counters, &stats->calls, sizeof(out->counters));
}

RPCRDMA_SYMVER_COMPAT(rpcrdma_clnt_connect_0_1, rpcrdma_clnt_connect, 0_1);
int rpcrdma_clnt_connect_0_1(const struct rpcrdma_clnt_attr_0_1 *old, struct rpcrdma_clnt **out)
{
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };

	if (!old)
		return -EINVAL;
	attr.addr = old->addr;
	attr.src_addr = old->src_addr;
	attr.max_requests = old->max_requests;
	attr.inline_size = old->inline_size;
	attr.connect_timeout_ms = old->connect_timeout_ms;
	attr.call_timeout_ms = old->call_timeout_ms;
	attr.retries = old->retries;
	attr.rnr_retry = old->rnr_retry;
	attr.flags = old->flags;
	attr.max_segment = old->max_segment;
	return rpcrdma_clnt_connect(&attr, out);
}

RPCRDMA_SYMVER_COMPAT(rpcrdma_svc_listen_0_1, rpcrdma_svc_listen, 0_1);
int rpcrdma_svc_listen_0_1(const struct rpcrdma_svc_attr_0_1 *old, struct rpcrdma_svc **out)
{
	struct rpcrdma_svc_attr attr = { RPCRDMA_SIZED(attr) };

	if (!old)
		return -EINVAL;
	attr.addr = old->addr;
	attr.backlog = old->backlog;
	attr.max_requests = old->max_requests;
	attr.inline_size = old->inline_size;
	attr.on_call = old->on_call;
	attr.on_conn = old->on_conn;
	attr.arg = old->arg;
	attr.flags = old->flags;
	attr.max_read = old->max_read;
	attr.max_reply = old->max_reply;
	return rpcrdma_svc_listen(&attr, out);
}

/* A 0.1 call rides in a current one; its results are copied back before its done() runs. */
struct compat_call {
	struct rpcrdma_call call;
	struct rpcrdma_call_0_1 *old;
	struct rpcrdma_xprt *x;		/* whose stats count this wrapper */
};

static void compat_call_done(struct rpcrdma_call *call)
{
	struct compat_call *w = container_of(call, struct compat_call, call);
	struct rpcrdma_call_0_1 *old = w->old;

	old->status = call->status;
	old->reply_len = call->reply_len;
	old->result_len = call->result_len;
	rpcrdma_free(&w->x->rx_stats, w, sizeof(*w));
	old->done(old);
}

RPCRDMA_SYMVER_COMPAT(rpcrdma_clnt_submit_0_1, rpcrdma_clnt_submit, 0_1);
int rpcrdma_clnt_submit_0_1(struct rpcrdma_clnt *clnt, struct rpcrdma_call_0_1 *old)
{
	struct rpcrdma_xprt *x = rpcrdma_clnt_xprt(clnt);
	struct compat_call *w;
	int rc;

	if (!clnt || !old || !old->done)
		return -EINVAL;
	w = rpcrdma_zalloc(&x->rx_stats, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->x = x;
	w->old = old;
	w->call.struct_size = sizeof(w->call);
	w->call.msg = old->msg;
	w->call.msg_len = old->msg_len;
	w->call.payload = old->payload;
	w->call.payload_len = old->payload_len;
	w->call.payload_pos = old->payload_pos;
	w->call.reply = old->reply;
	w->call.reply_max = old->reply_max;
	w->call.result = old->result;
	w->call.result_max = old->result_max;
	w->call.timeout_ms = old->timeout_ms;
	w->call.done = compat_call_done;
	old->status = 0;
	old->reply_len = 0;
	old->result_len = 0;
	rc = rpcrdma_clnt_submit(clnt, &w->call);
	if (rc)
		rpcrdma_free(&x->rx_stats, w, sizeof(*w));
	return rc;
}

RPCRDMA_SYMVER_COMPAT(rpcrdma_clnt_cancel_0_1, rpcrdma_clnt_cancel, 0_1);
int rpcrdma_clnt_cancel_0_1(struct rpcrdma_clnt *clnt, struct rpcrdma_call_0_1 *old)
{
	struct rpcrdma_xprt *x = rpcrdma_clnt_xprt(clnt);
	uint32_t i;

	if (!clnt || !old)
		return -EINVAL;
	for (i = 0; i < x->rx_nreqs; i++) {
		struct rpcrdma_call *call = x->rx_reqs[i].rl_call;

		if (call && call->done == compat_call_done &&
		    container_of(call, struct compat_call, call)->old == old)
			return rpcrdma_clnt_cancel(clnt, call);
	}
	return -ENOENT;
}

RPCRDMA_SYMVER_COMPAT(rpcrdma_clnt_stats_0_1, rpcrdma_clnt_stats, 0_1);
int rpcrdma_clnt_stats_0_1(const struct rpcrdma_clnt *clnt, struct rpcrdma_stats_0_1 *out)
{
	struct rpcrdma_stats stats = { RPCRDMA_SIZED(stats) };
	int rc;

	if (!out)
		return -EINVAL;
	rc = rpcrdma_clnt_stats(clnt, &stats);
	if (!rc)
		rpcrdma_stats_to_0_1(&stats, out);
	return rc;
}

RPCRDMA_SYMVER_COMPAT(rpcrdma_svc_stats_0_1, rpcrdma_svc_stats, 0_1);
int rpcrdma_svc_stats_0_1(const struct rpcrdma_svc *svc, struct rpcrdma_stats_0_1 *out)
{
	struct rpcrdma_stats stats = { RPCRDMA_SIZED(stats) };
	int rc;

	if (!out)
		return -EINVAL;
	rc = rpcrdma_svc_stats(svc, &stats);
	if (!rc)
		rpcrdma_stats_to_0_1(&stats, out);
	return rc;
}

RPCRDMA_SYMVER_COMPAT(rpcrdma_clnt_info_0_1, rpcrdma_clnt_info, 0_1);
int rpcrdma_clnt_info_0_1(const struct rpcrdma_clnt *clnt, struct rpcrdma_clnt_info_0_1 *out)
{
	struct rpcrdma_clnt_info info = { RPCRDMA_SIZED(info) };
	int rc;

	if (!out)
		return -EINVAL;
	rc = rpcrdma_clnt_info(clnt, &info);
	if (rc)
		return rc;
	out->connected = info.connected;
	out->credits = info.credits;
	out->inline_send = info.inline_send;
	out->inline_recv = info.inline_recv;
	out->remote_invalidate = info.remote_invalidate;
	out->connects = info.connects;
	return 0;
}

/* 0.1 returned the milliseconds, or -1 (which reads as -EPERM) for none and for NULL. */
RPCRDMA_SYMVER_COMPAT(rpcrdma_clnt_next_timeout_0_1, rpcrdma_clnt_next_timeout, 0_1);
int rpcrdma_clnt_next_timeout_0_1(const struct rpcrdma_clnt *clnt)
{
	int ms;

	return rpcrdma_clnt_next_timeout(clnt, &ms) == 0 ? ms : -1;
}

/* 0.1 had no rdma_vers to set: every header it encoded carried version 1. */
static int hdr_enc_from_0_1(const struct rpcrdma_hdr_enc_0_1 *old, struct rpcrdma_hdr_enc *enc)
{
	if (!old)
		return -EINVAL;
	memset(enc, 0, sizeof(*enc));
	enc->xid = old->xid;
	enc->credit = old->credit;
	enc->proc = old->proc;
	enc->read_segs = old->read_segs;
	enc->read = old->read;
	enc->write_chunks = old->write_chunks;
	enc->write = old->write;
	enc->reply = old->reply;
	enc->err = old->err;
	enc->vers_low = old->vers_low;
	enc->vers_high = old->vers_high;
	enc->vers = RPCRDMA_VERSION;
	return 0;
}

RPCRDMA_SYMVER_COMPAT(rpcrdma_hdr_encode_0_1, rpcrdma_hdr_encode, 0_1);
long rpcrdma_hdr_encode_0_1(void *buf, size_t len, const struct rpcrdma_hdr_enc_0_1 *old)
{
	struct rpcrdma_hdr_enc enc;

	if (hdr_enc_from_0_1(old, &enc))
		return -EINVAL;
	return rpcrdma_hdr_encode(buf, len, &enc);
}

RPCRDMA_SYMVER_COMPAT(rpcrdma_hdr_encoded_len_0_1, rpcrdma_hdr_encoded_len, 0_1);
long rpcrdma_hdr_encoded_len_0_1(const struct rpcrdma_hdr_enc_0_1 *old)
{
	struct rpcrdma_hdr_enc enc;

	if (hdr_enc_from_0_1(old, &enc))
		return -EINVAL;
	return rpcrdma_hdr_encoded_len(&enc);
}
