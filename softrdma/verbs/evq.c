/* SPDX-License-Identifier: MIT */
/*
 * Event queues behind file descriptors (comp channels, the async fd, CM event
 * channels). An eventfd in semaphore mode holds one token per queued item, so
 * the fd polls readable exactly when an item waits, and O_NONBLOCK set by the
 * application on the fd gives EAGAIN as on the real devices. Tokens are
 * written when the fabric lock is released (fab_unlock), not under it. A
 * queue is guarded by fab.lock or by a lock of its owner's (soft_evq.lock):
 * the functions named *_locked expect that lock held, and those that owe a
 * token (push, raise, retire) fab.lock as well.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "soft.h"

int evq_init(struct soft_evq *q, pthread_mutex_t *lock)
{
	int fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);

	if (fd < 0)
		return -errno;
	q->lock = lock;
	signal_init(&q->sig, fd);
	q->fd = fd;
	soft_list_init(&q->items);
	q->stale = 0;
	return 0;
}

void evq_fini(struct soft_evq *q)
{
	signal_fini(&q->sig);	/* evq_retire_locked() cancelled it */
	close(q->fd);
	q->fd = -1;
}

void evq_push_locked(struct soft_evq *q, struct soft_list *item)
{
	soft_list_add_tail(item, &q->items);
	signal_add_locked(&q->sig, 1);
}

void evq_forget_locked(struct soft_evq *q, struct soft_list *item)
{
	soft_list_del(item);
	q->stale++;
}

void evq_raise_locked(struct soft_evq *q, struct soft_event *ev, bool token)
{
	if (ev->pending++ == 0)
		soft_list_add_tail(&ev->link, &q->items);
	if (token)
		signal_add_locked(&q->sig, 1);
}

void evq_taken_locked(struct soft_evq *q, struct soft_event *ev)
{
	/* Raised again meanwhile: it queues once more, behind the others. */
	if (--ev->pending)
		soft_list_add_tail(&ev->link, &q->items);
}

void evq_cancel_locked(struct soft_evq *q, struct soft_event *ev)
{
	if (!ev->pending)
		return;
	soft_list_del(&ev->link);
	q->stale += ev->pending;
	ev->pending = 0;
}

static void evq_lock(struct soft_evq *q)
{
	if (q->lock)
		pthread_mutex_lock(q->lock);
	else
		fab_lock();
}

static void evq_unlock(struct soft_evq *q)
{
	if (q->lock)
		pthread_mutex_unlock(q->lock);
	else
		fab_unlock();
}

/*
 * Another process may have written the token with its record (wire_shm.c):
 * whoever reads it runs the rings, event or not. That takes fab.lock, which
 * comes before a queue's own lock.
 */
static void evq_drain_wire(struct soft_evq *q)
{
	if (!wire_pollable())
		return;
	if (!q->lock) {
		wire_drain_locked();
		return;
	}
	pthread_mutex_unlock(q->lock);
	fab_lock();
	wire_drain_locked();
	fab_unlock();
	pthread_mutex_lock(q->lock);
}

struct soft_list *evq_pop_locked(struct soft_evq *q)
{
	q->readers++;
	for (;;) {
		uint64_t token;
		ssize_t n;
		int err;

		/* read() may block: never with a lock held. */
		evq_unlock(q);
		n = read(q->fd, &token, sizeof(token));
		err = errno;
		evq_lock(q);
		if (n != sizeof(token)) {
			q->readers--;
			errno = n < 0 ? err : EIO;
			return NULL;
		}
		/* Its owner was destroyed meanwhile: block on, as a reader in the kernel does. */
		if (q->retired)
			continue;
		evq_drain_wire(q);
		if (!soft_list_empty(&q->items)) {
			q->readers--;
			return soft_list_pop(&q->items);
		}
		if (q->stale)
			q->stale--;
	}
}

bool evq_retire_locked(struct soft_evq *q)
{
	signal_cancel_locked(&q->sig);
	if (!q->readers)
		return true;
	q->retired = true;
	return false;
}
