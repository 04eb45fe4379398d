/* SPDX-License-Identifier: MIT */
/*
 * librpcrdma 0.1's entry points whose structs have since changed layout,
 * for programs built against 0.1's headers: 0.1's struct layouts (before
 * struct_size; abi/librpcrdma-0.1.abi has them as abidw saw them), and each
 * entry point exported at version RPCRDMA_0.1 only, by the .symver above
 * it. Each converts to the current struct and calls the current function,
 * whose version (the default, RPCRDMA_0.2) is that of the node listing it
 * in lib/librpcrdma.map. Programs built now link to those directly.
 *
 * The only file that names an older version: when a release changes a
 * function's layout, its name moves to that release's node of the map and
 * its old form comes here, beside the old layout.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <rpcrdma/clnt.h>
#include <rpcrdma/proto.h>
#include <rpcrdma/svc.h>

#include "compat_0_1.h"
#include "xprt_rdma.h"

/*
 * @impl is @name as version node RPCRDMA_0.1 had it. The map must not
 * make @name local in that node (its "local: *" is in the newest node).
 */
#define COMPAT_0_1(impl, name) __asm__(".symver " #impl ", " #name "@RPCRDMA_0.1")

/* Frozen: the layouts of a released ABI. */
struct rpcrdma_clnt_attr_0_1 {
	const struct sockaddr *addr;
	const struct sockaddr *src_addr;
	uint32_t max_requests;
	uint32_t inline_size;
	int connect_timeout_ms;
	int call_timeout_ms;
	unsigned int retries;
	uint8_t rnr_retry;
	uint32_t flags;
	uint32_t max_segment;
};

struct rpcrdma_svc_attr_0_1 {
	const struct sockaddr *addr;
	int backlog;
	uint32_t max_requests;
	uint32_t inline_size;
	void (*on_call)(struct rpcrdma_svc_call *call, void *arg);
	void (*on_conn)(struct rpcrdma_svc_conn *conn, enum rpcrdma_conn_event event, void *arg);
	void *arg;
	uint32_t flags;
	uint64_t max_read;
	uint64_t max_reply;
};

struct rpcrdma_call_0_1 {
	const void *msg;
	size_t msg_len;
	const void *payload;
	size_t payload_len;
	uint32_t payload_pos;
	void *reply;
	size_t reply_max;
	void *result;
	size_t result_max;
	int timeout_ms;
	void (*done)(struct rpcrdma_call_0_1 *call);
	void *arg;
	int status;
	size_t reply_len;
	size_t result_len;
};

/* The 18 counters, as &struct rpcrdma_stats has them after struct_size. */
struct rpcrdma_stats_0_1 {
	uint64_t counters[18];
};

struct rpcrdma_clnt_info_0_1 {
	int connected;
	uint32_t credits;
	uint32_t inline_send;
	uint32_t inline_recv;
	int remote_invalidate;
	unsigned int connects;
};

struct rpcrdma_hdr_enc_0_1 {
	uint32_t xid;
	uint32_t credit;
	uint32_t proc;
	uint32_t read_segs;
	const struct rpcrdma_read_segment *read;
	uint32_t write_chunks;
	const struct rpcrdma_chunk_desc *write;
	const struct rpcrdma_chunk_desc *reply;
	uint32_t err;
	uint32_t vers_low;
	uint32_t vers_high;
};

_Static_assert(offsetof(struct rpcrdma_stats, heap_bytes) - offsetof(struct rpcrdma_stats, calls) ==
	       sizeof(struct rpcrdma_stats_0_1) - sizeof(uint64_t),
	       "the 0.1 counters lie contiguous in struct rpcrdma_stats");

/* The entry points as 0.1 had them; rpcrdma_clnt_stats_0_1() is in compat_0_1.h. */
RPCRDMA_EXPORT int rpcrdma_clnt_connect_0_1(const struct rpcrdma_clnt_attr_0_1 *old,
					    struct rpcrdma_clnt **out);
RPCRDMA_EXPORT int rpcrdma_svc_listen_0_1(const struct rpcrdma_svc_attr_0_1 *old,
					  struct rpcrdma_svc **out);
RPCRDMA_EXPORT int rpcrdma_clnt_submit_0_1(struct rpcrdma_clnt *clnt, struct rpcrdma_call_0_1 *old);
RPCRDMA_EXPORT int rpcrdma_clnt_cancel_0_1(struct rpcrdma_clnt *clnt, struct rpcrdma_call_0_1 *old);
RPCRDMA_EXPORT int rpcrdma_svc_stats_0_1(const struct rpcrdma_svc *svc,
					 struct rpcrdma_stats_0_1 *out);
RPCRDMA_EXPORT int rpcrdma_clnt_info_0_1(const struct rpcrdma_clnt *clnt,
					 struct rpcrdma_clnt_info_0_1 *out);
RPCRDMA_EXPORT long rpcrdma_hdr_encode_0_1(void *buf, size_t len,
					   const struct rpcrdma_hdr_enc_0_1 *old);
RPCRDMA_EXPORT long rpcrdma_hdr_encoded_len_0_1(const struct rpcrdma_hdr_enc_0_1 *old);
RPCRDMA_EXPORT int rpcrdma_clnt_next_timeout_0_1(const struct rpcrdma_clnt *clnt);

static void stats_to_0_1(const struct rpcrdma_stats *stats, struct rpcrdma_stats_0_1 *out)
{
	memcpy(out->counters, &stats->calls, sizeof(out->counters));
}

COMPAT_0_1(rpcrdma_clnt_connect_0_1, rpcrdma_clnt_connect);
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

COMPAT_0_1(rpcrdma_svc_listen_0_1, rpcrdma_svc_listen);
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

COMPAT_0_1(rpcrdma_clnt_submit_0_1, rpcrdma_clnt_submit);
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

COMPAT_0_1(rpcrdma_clnt_cancel_0_1, rpcrdma_clnt_cancel);
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

COMPAT_0_1(rpcrdma_clnt_stats_0_1, rpcrdma_clnt_stats);
int rpcrdma_clnt_stats_0_1(const struct rpcrdma_clnt *clnt, struct rpcrdma_stats_0_1 *out)
{
	struct rpcrdma_stats stats = { RPCRDMA_SIZED(stats) };
	int rc;

	if (!out)
		return -EINVAL;
	rc = rpcrdma_clnt_stats(clnt, &stats);
	if (!rc)
		stats_to_0_1(&stats, out);
	return rc;
}

COMPAT_0_1(rpcrdma_svc_stats_0_1, rpcrdma_svc_stats);
int rpcrdma_svc_stats_0_1(const struct rpcrdma_svc *svc, struct rpcrdma_stats_0_1 *out)
{
	struct rpcrdma_stats stats = { RPCRDMA_SIZED(stats) };
	int rc;

	if (!out)
		return -EINVAL;
	rc = rpcrdma_svc_stats(svc, &stats);
	if (!rc)
		stats_to_0_1(&stats, out);
	return rc;
}

COMPAT_0_1(rpcrdma_clnt_info_0_1, rpcrdma_clnt_info);
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
COMPAT_0_1(rpcrdma_clnt_next_timeout_0_1, rpcrdma_clnt_next_timeout);
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

COMPAT_0_1(rpcrdma_hdr_encode_0_1, rpcrdma_hdr_encode);
long rpcrdma_hdr_encode_0_1(void *buf, size_t len, const struct rpcrdma_hdr_enc_0_1 *old)
{
	struct rpcrdma_hdr_enc enc;

	if (hdr_enc_from_0_1(old, &enc))
		return -EINVAL;
	return rpcrdma_hdr_encode(buf, len, &enc);
}

COMPAT_0_1(rpcrdma_hdr_encoded_len_0_1, rpcrdma_hdr_encoded_len);
long rpcrdma_hdr_encoded_len_0_1(const struct rpcrdma_hdr_enc_0_1 *old)
{
	struct rpcrdma_hdr_enc enc;

	if (hdr_enc_from_0_1(old, &enc))
		return -EINVAL;
	return rpcrdma_hdr_encoded_len(&enc);
}
