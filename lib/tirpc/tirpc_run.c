/* SPDX-License-Identifier: MIT */
/*
 * rpcrdma_svc_run(): a listener of rpcrdma_svc_create_mt() served on N
 * threads. Thread i drives poller i of the native server: its pass queues
 * the calls of its connections (tsvc_on_call), then it dispatches them
 * through libtirpc (svc_getreq_common()), connection by connection, a
 * turn each. A connection belongs to the thread that accepted it; others
 * that destroy it leave the rest to that thread.
 */
#include <errno.h>
#include <stdlib.h>

#include <rpcrdma/tirpc.h>

#include "tirpc_svc.h"
#include "util.h"

/* The connections other threads destroyed (svc_destroy()) while this one served them. */
static void tsvc_thread_reap(struct tsvc_thread *t)
{
	struct list_node kill;
	struct tconn *tc;

	list_init(&kill);
	pthread_mutex_lock(&t->lock);
	list_splice_tail(&t->kill, &kill);
	pthread_mutex_unlock(&t->lock);
	while ((tc = list_pop_entry(&kill, struct tconn, kill_node)))
		tconn_destroy_now(tc);
}

/* svc_exit() empties libtirpc's descriptor table, which svc_run() watches too. */
static bool tsvc_exited(void)
{
	return svc_max_pollfd == 0 && svc_pollfd == NULL;
}

/* Dispatch what the pass queued, connection by connection, a turn each. */
static void tsvc_dispatch_ready(struct tsvc_thread *t)
{
	struct list_node batch;
	struct tconn *tc;

	list_init(&batch);
	list_splice_tail(&t->ready, &batch);
	while ((tc = list_pop_entry(&batch, struct tconn, ready_node))) {
		tc->ready = false;
		/* It may be destroyed inside (XPRT_DIED); it marks itself again if it must. */
		svc_getreq_common(tc->xprt.xp_fd);
	}
}

static void *tsvc_thread_main(void *arg)
{
	struct tsvc_thread *t = arg;
	struct tsvc *ts = t->ts;

	tsvc_self = t;
	while (!atomic_load(&ts->stop)) {
		rpcrdma_svc_poller_wait(ts->native, t->index, 100);
		tsvc_dispatch_ready(t);
		tsvc_thread_reap(t);
		if (tsvc_exited())
			atomic_store(&ts->stop, true);
	}
	tsvc_thread_reap(t);
	tsvc_self = NULL;
	return NULL;
}

/* Every thread has stopped: the connections are the caller's (svc_destroy()). */
static void tsvc_forget_threads(struct tsvc *ts, struct tsvc_thread *threads)
{
	struct list_node *pos;
	unsigned int i;

	list_for_each(pos, &ts->conns) {
		struct tconn *tc = list_entry(pos, struct tconn, node);

		tc->owner = NULL;
		if (tc->ready)
			list_del(&tc->ready_node);
		tc->ready = false;
	}
	for (i = 0; i < ts->nthreads; i++) {
		pthread_mutex_destroy(&threads[i].lock);
		/* This thread polls them all from now on (calls it drops are its own). */
		rpcrdma_svc_poller_poll(ts->native, i, TSVC_BUDGET);
	}
	free(threads);
	atomic_store(&ts->running, false);
}

RPCRDMA_EXPORT int rpcrdma_svc_run(SVCXPRT *listener)
{
	struct tsvc *ts = tsvc_of(listener);
	struct tsvc_thread *threads;
	unsigned int i, started;
	int rc = 0;

	if (!ts || !ts->nthreads || !ts->native || tsvc_self)
		return -EINVAL;
	/* One run at a time: a second would poll the same pollers from two threads. */
	if (atomic_exchange(&ts->running, true))
		return -EBUSY;
	threads = calloc(ts->nthreads, sizeof(*threads));
	if (!threads) {
		atomic_store(&ts->running, false);
		return -ENOMEM;
	}
	atomic_store(&ts->stop, false);
	for (i = 0; i < ts->nthreads; i++) {
		threads[i].ts = ts;
		threads[i].index = i;
		list_init(&threads[i].ready);
		list_init(&threads[i].kill);
		pthread_mutex_init(&threads[i].lock, NULL);
	}
	for (started = 1; started < ts->nthreads; started++) {
		rc = -pthread_create(&threads[started].thread, NULL, tsvc_thread_main,
				     &threads[started]);
		if (rc) {
			atomic_store(&ts->stop, true);
			break;
		}
	}
	if (!rc)
		tsvc_thread_main(&threads[0]);
	for (i = 1; i < started; i++)
		pthread_join(threads[i].thread, NULL);
	tsvc_forget_threads(ts, threads);
	if (ts->destroy_pending)
		svc_destroy(&ts->xprt);
	return rc;
}
