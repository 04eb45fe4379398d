/* SPDX-License-Identifier: MIT */
/*
 * The scheduler: which unit of work runs next (the oldest, by posting
 * sequence, send WQE or work unit whose time has come), the progress thread
 * that runs them in THREAD and ASYNC modes, and softrdma_progress*() for
 * STEP mode.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "soft.h"

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

/*
 * fork(), in the child (fabric.c): no progress thread runs here, and the
 * parent's units never run (their memory is the parent's copy).
 */
void sched_fork_child_locked(void)
{
	struct soft_list *node;

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
	while (soft_list_pop(&fab.work))
		;
}

/* Process exit (fabric.c): the progress thread stops, whoever still holds a user. */
void sched_stop_locked(void)
{
	fab.users = 0;
	stop_thread_locked();
}

/* Free the units that will never run. */
void sched_discard_locked(void)
{
	struct soft_list *node;

	while ((node = soft_list_pop(&fab.work))) {
		struct soft_work *w = soft_list_entry(node, struct soft_work, link);

		w->discard(w);
	}
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

struct soft_list *fab_work_list_locked(void)
{
	return &fab.work;
}
