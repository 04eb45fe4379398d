/* SPDX-License-Identifier: MIT */
/*
 * Calls answered from worker threads (RPCRDMA_SVC_WORKERS). A connection
 * belongs to its poller thread: the reply functions, called from another
 * thread, hand their work to that poller and wait for its result, so the
 * connection's state is only ever touched by its poller and the hot path
 * takes no lock. The handoff is synchronous: the worker's arguments (the
 * message to copy, a payload to name) stay valid while it waits, and it
 * gets the exact result the call would have given on the poller.
 */
#include <errno.h>
#include <stdint.h>

#include <rpcrdma/svc.h>

#include "svc_rdma.h"


int svc_rdma_handoff(struct svc_rdma_handoff *h)
{
	bool queued;

	/* The worker's own: the server may be gone by the time it wakes. */
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->cv, NULL);
	h->done = false;
	queued = svc_rdma_poller_queue(h->call->rdma->sc_poller, h);
	pthread_mutex_lock(&h->lock);
	while (queued && !h->done)
		pthread_cond_wait(&h->cv, &h->lock);
	pthread_mutex_unlock(&h->lock);
	pthread_cond_destroy(&h->cv);
	pthread_mutex_destroy(&h->lock);
	return queued ? h->rc : -EIO;
}

/* On the poller: what the worker asked for, through the same entry points. */
static int svc_rdma_handoff_run(struct svc_rdma_handoff *h)
{
	switch (h->op) {
	case SVC_HANDOFF_REPLY:
		return rpcrdma_svc_reply(h->call, h->ptr, h->len);
	case SVC_HANDOFF_REPLY_BUF:
		return rpcrdma_svc_reply_buf(h->call, h->buf, h->max);
	case SVC_HANDOFF_COMMIT:
		return rpcrdma_svc_reply_commit(h->call, h->len);
	case SVC_HANDOFF_PAYLOAD:
		return svc_rdma_reply_payload_src(h->call, h->pos, h->ptr, h->len, h->release,
						  h->arg, h->mem, h->copy);
	case SVC_HANDOFF_ERR_CHUNK:
		return rpcrdma_svc_reply_err_chunk(h->call);
	case SVC_HANDOFF_DROP:
		rpcrdma_svc_call_drop(h->call);
		return 0;
	}
	return -EINVAL;
}

void svc_rdma_handoff_done(struct svc_rdma_handoff *h)
{
	int rc = svc_rdma_handoff_run(h);

	/* The worker's h dies as soon as it sees done: nothing touches it after. */
	pthread_mutex_lock(&h->lock);
	h->rc = rc;
	h->done = true;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->lock);
}
