/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ddp.h"

static struct ddp_tally ddp_counters_here;
struct ddp_tally *ddp_counters_p = &ddp_counters_here;

void ddp_fill(unsigned char *buf, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = ddp_pattern(seed, i);
}

size_t ddp_check(const unsigned char *buf, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != ddp_pattern(seed, i))
			return i;
	return len;
}

struct ddp_buf {
	void *data;
	int kept;	/* 1: from rpcrdma_svc_call_keep_payload */
};

static void ddp_release(void *arg)
{
	struct ddp_buf *b = arg;

	if (b->kept)
		rpcrdma_svc_payload_free(b->data);
	else
		free(b->data);
	free(b);
	atomic_fetch_add(&ddp_counters.released, 1);
}

static int ddp_name(struct rpcrdma_svc_call *call, uint32_t pos, void *data, size_t len, int kept)
{
	struct ddp_buf *b = malloc(sizeof(*b));

	if (!b) {
		if (kept)
			rpcrdma_svc_payload_free(data);
		else
			free(data);
		return -ENOMEM;
	}
	b->data = data;
	b->kept = kept;
	atomic_fetch_add(&ddp_counters.named, 1);
	/* On failure the library has run the release already. */
	return rpcrdma_svc_reply_payload(call, pos, data, len, ddp_release, b);
}

void ddp_serve_call(struct rpcrdma_svc_call *call)
{
	size_t len;
	const unsigned char *msg = rpcrdma_svc_call_msg(call, &len);
	unsigned int i, n = rpcrdma_svc_call_payloads(call);
	int rc = 0;

	atomic_fetch_add(&ddp_counters.calls, 1);
	if (len < DDP_CALL_MIN || !rpcmsg_is_call(msg, len)) {
		rpcrdma_svc_call_drop(call);
		return;
	}
	if (get32(msg, DDP_W_OP) == DDP_OP_ERR_CHUNK) {
		unsigned char *data = malloc(16);

		rc = data ? ddp_name(call, DDP_READ_POS, data, 16, 0) : -ENOMEM;
		if (!rc)
			rc = rpcrdma_svc_reply_err_chunk(call);
		else
			rpcrdma_svc_call_drop(call);
	} else if (get32(msg, DDP_W_OP) == DDP_OP_READ && len >= DDP_CALL_LEN) {
		unsigned char head[RPCMSG_HEAD];
		size_t bytes = get32(msg, DDP_W_ARG0);
		unsigned char *data = malloc(bytes ? bytes : 1);

		if (!data) {
			rpcrdma_svc_call_drop(call);
			return;
		}
		rpcmsg_reply_head(head, get32(msg, 0));
		ddp_fill(data, bytes, get32(msg, DDP_W_ARG1));
		rc = ddp_name(call, DDP_READ_POS, data, bytes, 0);
		if (!rc)
			rc = rpcrdma_svc_reply(call, head, sizeof(head));
		else
			rpcrdma_svc_call_drop(call);
	} else {
		for (i = 0; i < n && !rc; i++) {
			const void *pdata;
			size_t plen, klen;
			uint32_t pos;
			void *kept;

			rpcrdma_svc_call_payload(call, i, &pdata, &plen, &pos);
			atomic_fetch_add(&ddp_counters.payload_bytes, (unsigned int)plen);
			/* Keep the pulled buffer (no copy) and send it back from there. */
			kept = rpcrdma_svc_call_keep_payload(call, i, &klen);
			if (!kept || klen != plen) {
				rc = -EIO;
				break;
			}
			rc = ddp_name(call, pos, kept, plen, 1);
		}
		if (!rc)
			rc = rpcmsg_svc_echo(call);
		else
			rpcrdma_svc_call_drop(call);
	}
	if (rc)
		atomic_fetch_add(&ddp_counters.reply_errors, 1);
}
