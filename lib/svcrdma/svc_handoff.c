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


int svc_rdma_handoff(struct svc_rdma_reply_args a)
{
	struct svc_rdma_handoff h = { .args = &a };
	bool queued;

	/* The worker's own: the server may be gone by the time it wakes. */
	pthread_mutex_init(&h.lock, NULL);
	pthread_cond_init(&h.cv, NULL);
	queued = svc_rdma_poller_queue(a.call->rdma->sc_poller, &h);
	pthread_mutex_lock(&h.lock);
	while (queued && !h.done)
		pthread_cond_wait(&h.cv, &h.lock);
	pthread_mutex_unlock(&h.lock);
	pthread_cond_destroy(&h.cv);
	pthread_mutex_destroy(&h.lock);
	return queued ? h.rc : -EIO;
}

/* On the poller: what the worker asked for, as the poller would have run it. */
void svc_rdma_handoff_done(struct svc_rdma_handoff *h)
{
	int rc = svc_rdma_reply_run(h->args);

	/* The worker's h dies as soon as it sees done: nothing touches it after. */
	pthread_mutex_lock(&h->lock);
	h->rc = rc;
	h->done = true;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->lock);
}
