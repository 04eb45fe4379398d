/* SPDX-License-Identifier: MIT */
/*
 * The fabric lock (fab.lock), the gate that keeps the fast paths out while
 * it is held (soft.h), and the wake-ups owed at unlock: eventfd writes that
 * a lock holder queues (signal_add_locked()) and its unlock performs, so
 * that no system call runs under the lock. Its state is its own (fab_lk:
 * the comments of every layer still call the lock fab.lock); the rest of the
 * fabric reaches it through these functions.
 */
#include <sched.h>
#include <unistd.h>

#include "base.h"
#include "softrdma.h"

static struct {
	pthread_mutex_t lock;
	/* The gate between the lock and the send fast path (soft.h). */
	bool gate_closed;		/* atomic: a lock holder is inside */
	unsigned int fast_inflight;	/* atomic: fast paths inside */
	pthread_mutex_t signal_lock;	/* signals, and each soft_signal's owed and queued */
	struct soft_list signals;	/* soft_signals owed a write (fab_unlock) */
} fab_lk = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.signal_lock = PTHREAD_MUTEX_INITIALIZER,
	.signals = { &fab_lk.signals, &fab_lk.signals },
};

static pthread_once_t fab_once = PTHREAD_ONCE_INIT;
/* The fabric's start (fab_lock_set_start()), run by the first fab_lock(). */
static void (*fab_start)(void);

void fab_lock_set_start(void (*start)(void))
{
	fab_start = start;
}

static void fab_start_once(void)
{
	if (fab_start)
		fab_start();
}

/* Does this thread hold fab.lock? (softrdma_lock_held(), for the tests of its rules) */
static __thread bool fab_held;

/* This thread added a signal since it last wrote them (fab_signals_flush()). */
static __thread bool signal_added;

/*
 * The gate (soft.h): a fab.lock holder closes it, then waits for the fast
 * paths inside to leave; a fast path counts itself in, then looks. With
 * both in seq_cst, at least one of the two sees the other.
 */
static void gate_close(void)
{
	__atomic_store_n(&fab_lk.gate_closed, true, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&fab_lk.fast_inflight, __ATOMIC_SEQ_CST))
		sched_yield();
}

static void gate_open(void)
{
	__atomic_store_n(&fab_lk.gate_closed, false, __ATOMIC_RELEASE);
}

bool fab_fast_enter(void)
{
	__atomic_add_fetch(&fab_lk.fast_inflight, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&fab_lk.gate_closed, __ATOMIC_SEQ_CST))
		return true;
	__atomic_sub_fetch(&fab_lk.fast_inflight, 1, __ATOMIC_SEQ_CST);
	return false;
}

void fab_fast_exit(void)
{
	__atomic_sub_fetch(&fab_lk.fast_inflight, 1, __ATOMIC_SEQ_CST);
}

void fab_lock(void)
{
	pthread_once(&fab_once, fab_start_once);
	pthread_mutex_lock(&fab_lk.lock);
	gate_close();
	fab_held = true;
}

/* Signals written per batch; an unlocker with more owed takes the lock again. */
#define SIGNAL_BATCH 8

struct signal_write {
	struct soft_signal *sig;
	int fd;
	uint64_t count;
};

static unsigned int take_signals(struct signal_write *out)
{
	unsigned int n = 0;
	struct soft_list *node;

	pthread_mutex_lock(&fab_lk.signal_lock);
	while (n < SIGNAL_BATCH && (node = soft_list_pop(&fab_lk.signals))) {
		struct soft_signal *s = soft_list_entry(node, struct soft_signal, link);

		s->queued = false;
		out[n].sig = s;
		out[n].fd = s->fd;
		out[n].count = s->owed;
		s->owed = 0;
		__atomic_add_fetch(&s->writers, 1, __ATOMIC_RELAXED);
		n++;
	}
	pthread_mutex_unlock(&fab_lk.signal_lock);
	return n;
}

static bool signals_owed(void)
{
	bool owed;

	pthread_mutex_lock(&fab_lk.signal_lock);
	owed = !soft_list_empty(&fab_lk.signals);
	pthread_mutex_unlock(&fab_lk.signal_lock);
	return owed;
}

static void write_signals(const struct signal_write *w, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		/* Cannot fail: the counter would have to reach 2^64 - 1. */
		ssize_t ret = write(w[i].fd, &w[i].count, sizeof(w[i].count));

		(void)ret;
		__atomic_sub_fetch(&w[i].sig->writers, 1, __ATOMIC_RELEASE);
	}
}

void fab_unlock(void)
{
	struct signal_write batch[SIGNAL_BATCH];
	unsigned int n;

	for (;;) {
		n = take_signals(batch);
		fab_held = false;
		gate_open();
		pthread_mutex_unlock(&fab_lk.lock);
		write_signals(batch, n);
		if (n < SIGNAL_BATCH)
			return;
		fab_lock();
	}
}

void fab_signals_flush(void)
{
	struct signal_write batch[SIGNAL_BATCH];
	unsigned int n;

	if (!signal_added)
		return;
	signal_added = false;
	do {
		n = take_signals(batch);
		write_signals(batch, n);
	} while (n == SIGNAL_BATCH);
}

int fab_wait_locked(pthread_cond_t *cv, const struct timespec *deadline)
{
	int ret;

	if (signals_owed()) {
		fab_unlock();
		fab_lock();
		return 0;
	}
	fab_held = false;
	/* Asleep, it touches nothing: fast paths may run. */
	gate_open();
	ret = deadline ? pthread_cond_timedwait(cv, &fab_lk.lock, deadline)
		       : pthread_cond_wait(cv, &fab_lk.lock);
	gate_close();
	fab_held = true;
	return ret;
}

bool softrdma_lock_held(void)
{
	return fab_held;
}

void signal_init(struct soft_signal *s, int fd)
{
	s->fd = fd;
	s->owed = 0;
	s->queued = false;
	s->writers = 0;
}

void signal_add_locked(struct soft_signal *s, uint64_t n)
{
	signal_added = true;
	pthread_mutex_lock(&fab_lk.signal_lock);
	s->owed += n;
	if (!s->queued) {
		s->queued = true;
		soft_list_add_tail(&s->link, &fab_lk.signals);
	}
	pthread_mutex_unlock(&fab_lk.signal_lock);
}

void signal_cancel_locked(struct soft_signal *s)
{
	pthread_mutex_lock(&fab_lk.signal_lock);
	if (s->queued)
		soft_list_del(&s->link);
	s->queued = false;
	s->owed = 0;
	pthread_mutex_unlock(&fab_lk.signal_lock);
}

void signal_fini(struct soft_signal *s)
{
	/* An unlocker took its count before the cancel: its write() ends without the lock. */
	while (__atomic_load_n(&s->writers, __ATOMIC_ACQUIRE))
		sched_yield();
}

/*
 * fork() (fabric.c): the lock and the signal lock are held across it, so
 * that no thread of the parent is inside the fabric, nor writing its
 * signals, when the copy is made.
 */
void fab_lock_fork_prepare(void)
{
	fab_lock();
	/* A fast path that left the gate may still be writing its signals. */
	pthread_mutex_lock(&fab_lk.signal_lock);
}

void fab_lock_fork_parent(void)
{
	pthread_mutex_unlock(&fab_lk.signal_lock);
	fab_unlock();
}

/*
 * In the child, this thread holds both locks, released here after the
 * state is reset: POSIX leaves initialising a locked mutex undefined (and
 * TSan then still sees it held). No signal is owed to the parent's
 * descriptors, so the lock is released directly, not by fab_unlock().
 */
void fab_lock_fork_child(void)
{
	struct soft_list *node;

	while ((node = soft_list_pop(&fab_lk.signals))) {
		struct soft_signal *sig = soft_list_entry(node, struct soft_signal, link);

		sig->queued = false;
		sig->owed = 0;
		sig->writers = 0;
	}
	pthread_mutex_unlock(&fab_lk.signal_lock);
	fab_held = false;
	__atomic_store_n(&fab_lk.fast_inflight, 0, __ATOMIC_RELAXED);
	gate_open();
	pthread_mutex_unlock(&fab_lk.lock);
}
