/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous events. A device context has one async fd for every QP on it,
 * whichever transport (and thread) owns the QP, so whoever reads an event
 * looks the QP or CQ up in a registry of the library's endpoints and raises
 * that endpoint's atomic async_error flag; the owner acts on it (a deferred
 * close) in its next poll. Events are acknowledged at once, which lets
 * ibv_destroy_qp, which waits for the acknowledgement, proceed: the endpoint
 * is only freed after its QP is destroyed, so the lookup never reaches freed
 * memory.
 *
 * The library reads the async events of the devices it uses; an application
 * that shares a device context should not read them as well.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>

#include "ep.h"

struct async_entry {
	struct rpcrdma_ep *ep;
	struct async_entry *next;
};

static pthread_mutex_t async_lock = PTHREAD_MUTEX_INITIALIZER;
static struct async_entry *async_eps;

void rpcrdma_async_register(struct rpcrdma_ep *ep)
{
	struct async_entry *e = malloc(sizeof(*e));
	int flags;

	/* Without an entry the endpoint still closes on its flushed completions. */
	if (!e)
		return;
	e->ep = ep;
	flags = fcntl(ep->id->verbs->async_fd, F_GETFL);
	if (flags >= 0 && !(flags & O_NONBLOCK))
		fcntl(ep->id->verbs->async_fd, F_SETFL, flags | O_NONBLOCK);
	pthread_mutex_lock(&async_lock);
	e->next = async_eps;
	async_eps = e;
	pthread_mutex_unlock(&async_lock);
}

void rpcrdma_async_unregister(struct rpcrdma_ep *ep)
{
	struct async_entry **pp, *e = NULL;

	pthread_mutex_lock(&async_lock);
	for (pp = &async_eps; *pp; pp = &(*pp)->next) {
		if ((*pp)->ep == ep) {
			e = *pp;
			*pp = e->next;
			break;
		}
	}
	pthread_mutex_unlock(&async_lock);
	free(e);
}

/* Raise the flag of the endpoints the event concerns. Called under async_lock. */
static void rpcrdma_async_dispatch(struct ibv_context *ctx, const struct ibv_async_event *ev)
{
	struct async_entry *e;

	for (e = async_eps; e; e = e->next) {
		struct rpcrdma_ep *ep = e->ep;
		bool hit;

		switch (ev->event_type) {
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
		case IBV_EVENT_PATH_MIG_ERR:
			hit = ep->qp == ev->element.qp;
			break;
		case IBV_EVENT_CQ_ERR:
			hit = ep->cq == ev->element.cq;
			break;
		case IBV_EVENT_SRQ_ERR:
			hit = ep->srq && ep->srq == ev->element.srq;
			break;
		case IBV_EVENT_QP_LAST_WQE_REACHED:
			/* Not an error: the drain of a QP on an SRQ waits for it. */
			if (ep->qp == ev->element.qp)
				atomic_store(&ep->last_wqe, true);
			hit = false;
			break;
		case IBV_EVENT_DEVICE_FATAL:
			hit = ep->id->verbs == ctx;
			break;
		default:
			hit = false;
			break;
		}
		if (hit)
			atomic_store(&ep->async_error, true);
	}
}

void rpcrdma_async_poll(struct ibv_context *ctx)
{
	struct ibv_async_event ev;

	while (ibv_get_async_event(ctx, &ev) == 0) {
		if (ev.event_type != IBV_EVENT_QP_LAST_WQE_REACHED)
			rpcrdma_warn("async event: %s", ibv_event_type_str(ev.event_type));
		pthread_mutex_lock(&async_lock);
		rpcrdma_async_dispatch(ctx, &ev);
		pthread_mutex_unlock(&async_lock);
		ibv_ack_async_event(&ev);
	}
}
