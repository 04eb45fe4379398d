/* SPDX-License-Identifier: MIT */
/*
 * The fabric's global state, its progress thread and the scheduler that
 * decides which unit of work runs next: the oldest (by posting sequence)
 * send WQE or CM message whose time has come.
 */
#include <errno.h>
#include <sched.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "net.h"
#include "soft.h"
#include "tap.h"

struct soft_fabric fab = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.signal_lock = PTHREAD_MUTEX_INITIALIZER,
	.active_qps = { &fab.active_qps, &fab.active_qps },
	.work = { &fab.work, &fab.work },
	.qps = { &fab.qps, &fab.qps },
	.signals = { &fab.signals, &fab.signals },
	.faults = { &fab.faults, &fab.faults },
	.next_qpn = SOFT_FIRST_QPN,
	.next_fault_id = 1,
};

static pthread_once_t fab_once = PTHREAD_ONCE_INIT;

/*
 * A process that may talk to others over the socket backend starts its QP
 * numbers at a place of its own, so that two processes' QPs rarely share a
 * number: a capture file they share then tells their flows apart (the UDP
 * source port is the sending QP's number, tap.c).
 */
static uint32_t first_qpn(void)
{
	const char *dir = getenv("SOFTRDMA_DIR");
#ifdef SOFTRDMA_DROPIN
	bool multi = !dir || *dir;
#else
	bool multi = dir && *dir;
#endif

	return multi ? SOFT_FIRST_QPN + (((uint32_t)getpid() & 0xfff) << 8) : SOFT_FIRST_QPN;
}

/* The condition variables wait on CLOCK_MONOTONIC deadlines (soft_now_ns()). */
static void init_conds(void)
{
	pthread_condattr_t attr;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&fab.work_cv, &attr);
	pthread_cond_init(&fab.idle_cv, &attr);
	pthread_cond_init(&fab.ack_cv, &attr);
	pthread_cond_init(&fab.mem_cv, &attr);
	pthread_cond_init(&fab.step_cv, &attr);
	pthread_condattr_destroy(&attr);
}

static void fab_init(void)
{
	const char *mode = getenv("SOFTRDMA_MODE");

	init_conds();
	fab.mode = SOFTRDMA_MODE_THREAD;
	if (mode && strcmp(mode, "step") == 0)
		fab.mode = SOFTRDMA_MODE_STEP;
	else if (mode && strcmp(mode, "async") == 0)
		fab.mode = SOFTRDMA_MODE_ASYNC;
	fab.next_qpn = first_qpn();
	pcap_init();
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
	__atomic_store_n(&fab.gate_closed, true, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&fab.fast_inflight, __ATOMIC_SEQ_CST))
		sched_yield();
}

static void gate_open(void)
{
	__atomic_store_n(&fab.gate_closed, false, __ATOMIC_RELEASE);
}

bool fab_fast_enter(void)
{
	__atomic_add_fetch(&fab.fast_inflight, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&fab.gate_closed, __ATOMIC_SEQ_CST))
		return true;
	__atomic_sub_fetch(&fab.fast_inflight, 1, __ATOMIC_SEQ_CST);
	return false;
}

void fab_fast_exit(void)
{
	__atomic_sub_fetch(&fab.fast_inflight, 1, __ATOMIC_SEQ_CST);
}

void fab_lock(void)
{
	pthread_once(&fab_once, fab_init);
	pthread_mutex_lock(&fab.lock);
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

	pthread_mutex_lock(&fab.signal_lock);
	while (n < SIGNAL_BATCH && (node = soft_list_pop(&fab.signals))) {
		struct soft_signal *s = soft_list_entry(node, struct soft_signal, link);

		s->queued = false;
		out[n].sig = s;
		out[n].fd = s->fd;
		out[n].count = s->owed;
		s->owed = 0;
		__atomic_add_fetch(&s->writers, 1, __ATOMIC_RELAXED);
		n++;
	}
	pthread_mutex_unlock(&fab.signal_lock);
	return n;
}

static bool signals_owed(void)
{
	bool owed;

	pthread_mutex_lock(&fab.signal_lock);
	owed = !soft_list_empty(&fab.signals);
	pthread_mutex_unlock(&fab.signal_lock);
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
		pthread_mutex_unlock(&fab.lock);
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
	ret = deadline ? pthread_cond_timedwait(cv, &fab.lock, deadline)
		       : pthread_cond_wait(cv, &fab.lock);
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
	pthread_mutex_lock(&fab.signal_lock);
	s->owed += n;
	if (!s->queued) {
		s->queued = true;
		soft_list_add_tail(&s->link, &fab.signals);
	}
	pthread_mutex_unlock(&fab.signal_lock);
}

void signal_cancel_locked(struct soft_signal *s)
{
	pthread_mutex_lock(&fab.signal_lock);
	if (s->queued)
		soft_list_del(&s->link);
	s->queued = false;
	s->owed = 0;
	pthread_mutex_unlock(&fab.signal_lock);
}

void signal_fini(struct soft_signal *s)
{
	/* An unlocker took its count before the cancel: its write() ends without the lock. */
	while (__atomic_load_n(&s->writers, __ATOMIC_ACQUIRE))
		sched_yield();
}

uint64_t soft_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static struct timespec ns_to_timespec(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / 1000000000ULL),
		.tv_nsec = (long)(ns % 1000000000ULL),
	};

	return ts;
}

/* STEP mode runs retries and delays at once: determinism beats timing there. */
bool fab_honours_time(void)
{
	return fab.mode != SOFTRDMA_MODE_STEP;
}

enum unit_kind {
	UNIT_NONE,
	UNIT_QP,
	UNIT_WORK,
};

struct unit {
	enum unit_kind kind;
	struct soft_qp *qp;
	struct soft_work *work;
};

/*
 * Find the oldest runnable unit. *next_wake receives the earliest time a unit
 * that is not runnable yet becomes runnable (UINT64_MAX if none).
 */
static struct unit pick_unit_locked(bool honour_time, uint64_t now, uint64_t *next_wake)
{
	struct unit best = { .kind = UNIT_NONE };
	uint64_t best_seq = UINT64_MAX;
	struct soft_list *pos, *tmp;

	*next_wake = UINT64_MAX;
	soft_list_for_each_safe(pos, tmp, &fab.active_qps) {
		struct soft_qp *qp = soft_list_entry(pos, struct soft_qp, active_link);
		uint64_t seq;

		if (qp->wait_recv || qp->wait_resp || qp->wait_rd)
			continue;
		if (honour_time && qp->wake_at > now) {
			if (qp->wake_at < *next_wake)
				*next_wake = qp->wake_at;
			continue;
		}
		seq = qp->sq[qp->sq_exec % qp->sq_size].seq;
		if (seq < best_seq) {
			best_seq = seq;
			best.kind = UNIT_QP;
			best.qp = qp;
		}
	}
	soft_list_for_each_safe(pos, tmp, &fab.work) {
		struct soft_work *w = soft_list_entry(pos, struct soft_work, link);

		if (honour_time && w->not_before > now) {
			if (w->not_before < *next_wake)
				*next_wake = w->not_before;
			continue;
		}
		if (w->seq < best_seq) {
			best_seq = w->seq;
			best.kind = UNIT_WORK;
			best.qp = NULL;
			best.work = w;
		}
	}
	return best;
}

static void run_unit_locked(struct unit u)
{
	if (u.kind == UNIT_QP)
		engine_run_locked(u.qp);
	else if (u.kind == UNIT_WORK) {
		soft_list_del(&u.work->link);
		u.work->run(u.work);
	}
}

/* A unit of qp: its next WQE, or the response to a Read it issued. */
static bool unit_of(struct unit u, const struct soft_qp *qp)
{
	return (u.kind == UNIT_QP && u.qp == qp) || (u.kind == UNIT_WORK && u.work->qp == qp);
}

void fab_run_posted_locked(struct soft_qp *qp)
{
	/* Each unit runs a WQE or a Read's response, or leaves the QP waiting. */
	unsigned int budget = 2 * (qp->sq_tail - qp->sq_exec) + qp->rd_outstanding + 1;

	if (fab.mode != SOFTRDMA_MODE_THREAD)
		return;
	while (budget--) {
		uint64_t next_wake;
		struct unit u = pick_unit_locked(true, soft_now_ns(), &next_wake);

		if (!unit_of(u, qp))
			return;
		run_unit_locked(u);
	}
}

void work_queue_locked(struct soft_work *w)
{
	w->seq = ++fab.seq;
	soft_list_add_tail(&w->link, &fab.work);
	fab_kick_locked();
}

static void *progress_main(void *arg)
{
	(void)arg;
	fab_lock();
	while (!fab.thread_stop) {
		uint64_t next_wake = UINT64_MAX;

		if (fab.mode != SOFTRDMA_MODE_STEP) {
			struct unit u = pick_unit_locked(true, soft_now_ns(), &next_wake);

			if (u.kind != UNIT_NONE) {
				fab.thread_idle = false;
				run_unit_locked(u);
				/* Let application threads in between units. */
				fab_unlock();
				fab_lock();
				continue;
			}
		}
		fab.thread_idle = next_wake == UINT64_MAX;
		if (fab.thread_idle)
			pthread_cond_broadcast(&fab.idle_cv);
		fab.thread_sleeping = true;
		if (next_wake != UINT64_MAX) {
			struct timespec ts = ns_to_timespec(next_wake);

			fab_wait_locked(&fab.work_cv, &ts);
		} else {
			fab_wait_locked(&fab.work_cv, NULL);
		}
		fab.thread_sleeping = false;
	}
	fab_unlock();
	return NULL;
}

static void start_thread_locked(void)
{
	int ret;

	if (fab.thread_running || fab.mode == SOFTRDMA_MODE_STEP || fab.users == 0)
		return;
	fab.thread_stop = false;
	fab.thread_idle = false;
	ret = pthread_create(&fab.thread, NULL, progress_main, NULL);
	if (ret) {
		fprintf(stderr, "softrdma: cannot start the progress thread: %s\n", strerror(ret));
		abort();
	}
	fab.thread_running = true;
}

static bool joining;

static void stop_thread_locked(void)
{
	pthread_t thread = fab.thread;

	if (!fab.thread_running || joining)
		return;
	joining = true;
	fab.thread_stop = true;
	pthread_cond_broadcast(&fab.work_cv);
	fab_unlock();
	pthread_join(thread, NULL);
	fab_lock();
	joining = false;
	fab.thread_running = false;
	fab.thread_stop = false;
	/* Someone opened something while we were joining. */
	start_thread_locked();
}

void fab_get_user_locked(void)
{
	fab.users++;
	start_thread_locked();
}

void fab_put_user_locked(void)
{
	/* After fab_exit() (a destructor closing what is left) the count is already 0. */
	if (fab.users && --fab.users == 0)
		stop_thread_locked();
}

void fab_kick_locked(void)
{
	fab.thread_idle = false;
	/*
	 * In STEP mode the progress thread runs nothing (softrdma_set_mode()
	 * kicks it when the mode changes back): waking it would only cost a
	 * futex call each way and the lock's contention.
	 */
	if (fab.thread_running && fab.thread_sleeping && fab.mode != SOFTRDMA_MODE_STEP)
		pthread_cond_signal(&fab.work_cv);
	if (fab.step_waiters)
		pthread_cond_broadcast(&fab.step_cv);
}

/* ---- fork() -------------------------------------------------------------------- */

/*
 * fork() copies the fabric but not its threads. As with rdma-core, where
 * what the parent opened stays with the parent's file while a child may
 * open devices and make ids of its own, the child starts afresh: no
 * progress or net thread, none of the parent's units, links or listeners
 * (their sockets are closed in the child, and stay open in the parent), no
 * wake-up owed to the parent's descriptors, and QP numbers from a base of
 * its own. What the parent had open stays in the child's memory and is not
 * to be used there (undefined, as on hardware); closing it frees only the
 * child's copy. The lock is held across fork(), so that no thread of the
 * parent is inside the fabric when the copy is made, and the net thread is
 * held out of its unlocked heap work (net.c's heap_gate).
 */
static void fork_prepare(void)
{
	net_fork_prepare();
	fab_lock();
	/* A fast path that left the gate may still be writing its signals. */
	pthread_mutex_lock(&fab.signal_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&fab.signal_lock);
	fab_unlock();
	net_fork_parent();
}

static void fork_child(void)
{
	struct soft_list *node;

	/*
	 * The lock fork_prepare() took is held by this thread, the child's
	 * only one, and is released below, after the state is reset: POSIX
	 * leaves initialising a locked mutex undefined (and TSan then still
	 * sees it held, a double lock at the progress thread's first use).
	 * The condition variables may hold the parent's waiters, which do
	 * not exist here: those start afresh.
	 */
	init_conds();
	fab.thread_running = false;
	fab.thread_stop = false;
	fab.thread_sleeping = false;
	fab.thread_idle = true;
	joining = false;
	fab.users = 0;
	fab.step_waiters = 0;
	fab.waiting = 0;
	while ((node = soft_list_pop(&fab.active_qps)))
		soft_list_entry(node, struct soft_qp, active_link)->active = false;
	/* The parent's units: never run here, and their memory is the parent's copy. */
	while (soft_list_pop(&fab.work))
		;
	while ((node = soft_list_pop(&fab.signals))) {
		struct soft_signal *sig = soft_list_entry(node, struct soft_signal, link);

		sig->queued = false;
		sig->owed = 0;
		sig->writers = 0;
	}
	fab.next_qpn = first_qpn();
	pthread_mutex_unlock(&fab.signal_lock);
	/* No signal is owed (emptied above): unlocked directly, not by fab_unlock(). */
	fab_held = false;
	__atomic_store_n(&fab.fast_inflight, 0, __ATOMIC_RELAXED);
	gate_open();
	pthread_mutex_unlock(&fab.lock);
	net_fork_child();
}

/* Registered before rdma_cm's (priority 102): its prepare handler runs first. */
__attribute__((constructor(101))) static void fab_fork_init(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* Free the units that will never run. */
static void discard_work_locked(void)
{
	struct soft_list *node;

	while ((node = soft_list_pop(&fab.work))) {
		struct soft_work *w = soft_list_entry(node, struct soft_work, link);

		w->discard(w);
	}
}

/*
 * A process that exits with objects still open must not leave the threads
 * running. Priority 101 runs it after the unprioritised destructors (such as
 * rdma_cm's, which closes its device context), which may still need them.
 */
__attribute__((destructor(101))) static void fab_exit(void)
{
	fab_lock();
	fab.users = 0;
	stop_thread_locked();
	fab_unlock();
	net_stop();
	fab_lock();
	discard_work_locked();
	fab_unlock();
	net_free();
}

int softrdma_set_mode(enum softrdma_mode mode)
{
	if (mode != SOFTRDMA_MODE_THREAD && mode != SOFTRDMA_MODE_STEP &&
	    mode != SOFTRDMA_MODE_ASYNC)
		return -EINVAL;
	fab_lock();
	/* Holding the lock means the thread is between units. */
	fab.mode = mode;
	if (mode != SOFTRDMA_MODE_STEP) {
		start_thread_locked();
		fab_kick_locked();
	}
	fab_unlock();
	return 0;
}

enum softrdma_mode softrdma_get_mode(void)
{
	enum softrdma_mode mode;

	fab_lock();
	mode = fab.mode;
	fab_unlock();
	return mode;
}

/* Idle: nothing to run, nothing scheduled, no answer awaited from another process. */
static bool fabric_idle_locked(void)
{
	uint64_t next_wake;
	struct unit u = pick_unit_locked(true, soft_now_ns(), &next_wake);

	return u.kind == UNIT_NONE && next_wake == UINT64_MAX && fab.waiting == 0;
}

static void wait_idle_locked(void)
{
	while (!fabric_idle_locked()) {
		struct timespec ts;

		if (!fab.thread_running || fab.mode == SOFTRDMA_MODE_STEP) {
			/* Nobody else will do it. */
			uint64_t next_wake;
			struct unit u = pick_unit_locked(true, soft_now_ns(), &next_wake);

			if (u.kind != UNIT_NONE) {
				run_unit_locked(u);
				continue;
			}
		}
		fab_kick_locked();
		ts = ns_to_timespec(soft_now_ns() + 2000000ULL);
		fab_wait_locked(&fab.idle_cv, &ts);
	}
}

int softrdma_progress(unsigned int max_steps)
{
	int done = 0;

	fab_lock();
	if (fab.mode != SOFTRDMA_MODE_STEP) {
		wait_idle_locked();
		fab_unlock();
		return 0;
	}
	while ((unsigned int)done < max_steps && done < INT_MAX) {
		uint64_t next_wake;
		struct unit u = pick_unit_locked(false, 0, &next_wake);

		if (u.kind == UNIT_NONE)
			break;
		run_unit_locked(u);
		done++;
	}
	fab_unlock();
	return done;
}

int softrdma_progress_all(void)
{
	return softrdma_progress(UINT_MAX);
}

int softrdma_progress_wait(unsigned int max_steps, int timeout_ms)
{
	struct timespec ts = ns_to_timespec(soft_now_ns() + (uint64_t)timeout_ms * 1000000ULL);
	int done = 0;

	if (timeout_ms < 0)
		return -EINVAL;
	fab_lock();
	while (fab.mode == SOFTRDMA_MODE_STEP && (unsigned int)done < max_steps) {
		uint64_t next_wake;
		struct unit u = pick_unit_locked(false, 0, &next_wake);

		if (u.kind != UNIT_NONE) {
			run_unit_locked(u);
			done++;
			continue;
		}
		if (done)
			break;
		fab.step_waiters++;
		if (fab_wait_locked(&fab.step_cv, &ts) == ETIMEDOUT) {
			fab.step_waiters--;
			break;
		}
		fab.step_waiters--;
	}
	fab_unlock();
	return done;
}

void fab_set_cm_ops_locked(const struct soft_cm_ops *ops)
{
	fab.cm_ops = ops;
}

void fab_wait_ack_locked(void)
{
	fab_wait_locked(&fab.ack_cv, NULL);
}

void fab_ack_locked(void)
{
	pthread_cond_broadcast(&fab.ack_cv);
}

void fab_cm_count_locked(enum fab_cm_count which, int delta)
{
	switch (which) {
	case FAB_CM_IDS:
		fab.counts.cm_ids += delta;
		break;
	case FAB_CM_CHANNELS:
		fab.counts.event_channels += delta;
		break;
	case FAB_CM_UNACKED:
		fab.counts.unacked_events += delta;
		break;
	}
}

struct soft_list *fab_work_list_locked(void)
{
	return &fab.work;
}
