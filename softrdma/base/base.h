/* SPDX-License-Identifier: MIT */
/*
 * softrdma's base, below the wire and the verbs: the fabric lock with its
 * gate and the wake-ups written at unlock (lock.c), the clock (clock.c),
 * the unit of work the scheduler runs, and the lists (list.h). It names no
 * object of the layers above; the lock's first taker runs the start the
 * verbs register (fab_lock_set_start()).
 *
 * The rules of the lock (what it guards, the gate between it and the send
 * fast path, the lock order) are the verbs' and are written in soft.h.
 */
#ifndef SOFT_BASE_H
#define SOFT_BASE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "list.h"

/*
 * Bytes another process wrote into ours (process_vm_writev(), as DMA
 * would): valgrind, watching this process only, is told they are set.
 */
#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define SOFT_MEM_WRITTEN(p, n) VALGRIND_MAKE_MEM_DEFINED(p, n)
#define SOFT_UNDER_VALGRIND() (RUNNING_ON_VALGRIND != 0)
#endif
#endif
#ifndef SOFT_MEM_WRITTEN
#define SOFT_MEM_WRITTEN(p, n) ((void)(p), (void)(n))
#define SOFT_UNDER_VALGRIND() false
#endif

/* ---- lock.c: the fabric lock ------------------------------------------------ */

void fab_lock(void);
/* Release the lock, then write what signals are owed. */
void fab_unlock(void);
/*
 * Called once, by the first fab_lock() of the process, with the lock not
 * yet held: the fabric's state starts there. Set before any fab_lock() (a
 * constructor).
 */
void fab_lock_set_start(void (*start)(void));
/*
 * The fast path's side of the gate: true if no fab.lock holder is inside
 * (then fab_fast_exit() must follow), false if it must take fab.lock.
 */
bool fab_fast_enter(void);
void fab_fast_exit(void);
/* Write the signals owed, without any lock held (a fast path that raised one). */
void fab_signals_flush(void);
/*
 * pthread_cond_(timed)wait on the fabric lock (deadline NULL: none). Owed
 * signals are written first, with the lock released: it then returns at
 * once, as a spurious wake-up, so callers wait in a loop. ETIMEDOUT or 0.
 */
int fab_wait_locked(pthread_cond_t *cv, const struct timespec *deadline);
/* fork() (fabric.c): both locks held across it; the child's released afresh. */
void fab_lock_fork_prepare(void);
void fab_lock_fork_parent(void);
void fab_lock_fork_child(void);

/* ---- lock.c: eventfd writes, deferred to the unlock ------------------------ */

/*
 * An eventfd the fabric adds to. Under the lock an add only counts; the
 * thread that releases the lock writes what is owed (fab_unlock), so no
 * syscall runs with the fabric lock held.
 */
struct soft_signal {
	int fd;
	uint64_t owed;			/* the signal lock: added, not yet written */
	bool queued;			/* the signal lock: on the list of those owed */
	unsigned int writers;		/* atomic: unlockers writing it now */
	struct soft_list link;
};

void signal_init(struct soft_signal *s, int fd);
/* Under fab.lock, or on the fast path (which writes it: fab_signals_flush()). */
void signal_add_locked(struct soft_signal *s, uint64_t n);
/* Forget what is owed (the owner goes). */
void signal_cancel_locked(struct soft_signal *s);
/*
 * Before the fd closes, once cancelled under the lock: wait out the writers
 * (lock held or not; they never need it).
 */
void signal_fini(struct soft_signal *s);

/* ---- clock.c ------------------------------------------------------------------ */

/* CLOCK_MONOTONIC, in nanoseconds: every deadline of the fabric. */
uint64_t soft_now_ns(void);

/* ---- a unit of work ----------------------------------------------------------- */

struct soft_qp;

/*
 * A unit of work the scheduler (the verbs' sched.c) runs in posting order
 * with the send WQEs: a CM message, a connection lost to a dead peer. run()
 * is called with the lock held, after the work was unlinked, and frees it.
 * The wire queues its units through wire_ops.queue_work.
 */
struct soft_work {
	struct soft_list link;		/* the scheduler's queue */
	uint64_t seq;
	uint64_t not_before;		/* THREAD mode: not before this time */
	void (*run)(struct soft_work *w);
	void (*discard)(struct soft_work *w);	/* free it unrun (process exit) */
	struct soft_qp *qp;		/* the QP whose unit it is (a Read's response), or NULL */
};

#endif /* SOFT_BASE_H */
