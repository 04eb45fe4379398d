/* SPDX-License-Identifier: MIT */
/*
 * Calls answered from worker threads (RPCRDMA_SVC_WORKERS). A server
 * belongs to its poller thread: the reply functions, called from another
 * thread, hand their work to the poller and wait for its result, so the
 * connection's state is only ever touched by the poller and the hot path
 * takes no lock. The handoff is synchronous: the worker's arguments (the
 * message to copy, a payload to name) stay valid while it waits, and it
 * gets the exact result the call would have given on the poller.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rpcrdma/svc.h>

#include "svc_rdma.h"

/* One byte per thread: its address names the thread. */
static __thread char svc_rdma_thread_token;

static uintptr_t svc_rdma_self(void)
{
	return (uintptr_t)&svc_rdma_thread_token;
}

int svc_rdma_handoff_init(struct rpcrdma_svc *svc)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = svc };

	svc->sv_listen_epfd = -1;
	if (!(svc->sv_attr.flags & RPCRDMA_SVC_WORKERS))
		return 0;
	pthread_mutex_init(&svc->sv_handoff_lock, NULL);
	svc->sv_handoff_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (svc->sv_handoff_fd < 0)
		return -errno;
	if (epoll_ctl(svc->sv_epfd, EPOLL_CTL_ADD, svc->sv_handoff_fd, &ev))
		return -errno;
	/* For adapters that poll the listener by itself (rpcrdma_svc_listen_fd()). */
	svc->sv_listen_epfd = epoll_create1(EPOLL_CLOEXEC);
	if (svc->sv_listen_epfd < 0 ||
	    epoll_ctl(svc->sv_listen_epfd, EPOLL_CTL_ADD, svc->sv_cm_channel->fd, &ev) ||
	    epoll_ctl(svc->sv_listen_epfd, EPOLL_CTL_ADD, svc->sv_handoff_fd, &ev))
		return -errno;
	return 0;
}

int svc_rdma_listen_fd(const struct rpcrdma_svc *svc)
{
	return svc->sv_listen_epfd >= 0 ? svc->sv_listen_epfd : svc->sv_cm_channel->fd;
}

void svc_rdma_handoff_fini(struct rpcrdma_svc *svc)
{
	if (!(svc->sv_attr.flags & RPCRDMA_SVC_WORKERS) || svc->sv_handoff_fd < 0)
		return;
	close(svc->sv_handoff_fd);
	if (svc->sv_listen_epfd >= 0)
		close(svc->sv_listen_epfd);
	pthread_mutex_destroy(&svc->sv_handoff_lock);
}

void svc_rdma_note_poller(struct rpcrdma_svc *svc)
{
	if (svc->sv_attr.flags & RPCRDMA_SVC_WORKERS)
		atomic_store_explicit(&svc->sv_poller, svc_rdma_self(), memory_order_relaxed);
}

bool svc_rdma_foreign(const struct rpcrdma_svc_call *call)
{
	struct rpcrdma_svc *svc = call->rdma->sc_svc;

	/* Without a server (destroyed), the calls it left are the application's alone. */
	return svc && (svc->sv_attr.flags & RPCRDMA_SVC_WORKERS) &&
	       atomic_load_explicit(&svc->sv_poller, memory_order_relaxed) != svc_rdma_self();
}

int svc_rdma_handoff(struct svc_rdma_handoff *h)
{
	struct rpcrdma_svc *svc = h->call->rdma->sc_svc;
	uint64_t one = 1;
	bool queued;

	/* The worker's own: the server may be gone by the time it wakes. */
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->cv, NULL);
	h->done = false;
	pthread_mutex_lock(&svc->sv_handoff_lock);
	list_add_tail(&h->node, &svc->sv_handoffs);
	atomic_fetch_add(&svc->sv_nhandoffs, 1);
	/* Written under the lock: the poller cannot answer, nor the server go, before. */
	queued = write(svc->sv_handoff_fd, &one, sizeof(one)) == sizeof(one);
	if (!queued) {
		list_del(&h->node);
		atomic_fetch_sub(&svc->sv_nhandoffs, 1);
	}
	pthread_mutex_unlock(&svc->sv_handoff_lock);
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
		return rpcrdma_svc_reply_payload(h->call, h->pos, h->ptr, h->len, h->release,
						 h->arg);
	case SVC_HANDOFF_ERR_CHUNK:
		return rpcrdma_svc_reply_err_chunk(h->call);
	case SVC_HANDOFF_DROP:
		rpcrdma_svc_call_drop(h->call);
		return 0;
	}
	return -EINVAL;
}

int svc_rdma_run_handoffs(struct rpcrdma_svc *svc)
{
	struct list_node batch;
	struct svc_rdma_handoff *h;
	uint64_t count;
	int n = 0;

	if (!(svc->sv_attr.flags & RPCRDMA_SVC_WORKERS) || !atomic_load(&svc->sv_nhandoffs))
		return 0;
	if (read(svc->sv_handoff_fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		return 0;
	list_init(&batch);
	pthread_mutex_lock(&svc->sv_handoff_lock);
	list_splice_tail(&svc->sv_handoffs, &batch);
	pthread_mutex_unlock(&svc->sv_handoff_lock);
	while ((h = list_pop_entry(&batch, struct svc_rdma_handoff, node))) {
		int rc = svc_rdma_handoff_run(h);

		atomic_fetch_sub(&svc->sv_nhandoffs, 1);
		/* The worker's h dies as soon as it sees done: nothing touches it after. */
		pthread_mutex_lock(&h->lock);
		h->rc = rc;
		h->done = true;
		pthread_cond_signal(&h->cv);
		pthread_mutex_unlock(&h->lock);
		n++;
	}
	return n;
}
