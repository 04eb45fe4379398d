/* SPDX-License-Identifier: MIT */
/*
 * The fabric's global state (struct soft_fabric), its start, fork() and
 * exit. The lock is the base's (base/lock.c), the scheduler and progress
 * thread sched.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "soft.h"
#include "tap.h"

struct soft_fabric fab = {
	.active_qps = { &fab.active_qps, &fab.active_qps },
	.work = { &fab.work, &fab.work },
	.qps = { &fab.qps, &fab.qps },
	.faults = { &fab.faults, &fab.faults },
	.next_fault_id = 1,
};

/* The condition variables wait on CLOCK_MONOTONIC deadlines (soft_now_ns()). */
static void init_conds(void)
{
	pthread_condattr_t attr;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&fab.work_cv, &attr);
	pthread_cond_init(&fab.idle_cv, &attr);
	pthread_cond_init(&fab.ack_cv, &attr);
	pthread_cond_init(&fab.step_cv, &attr);
	pthread_condattr_destroy(&attr);
}

/* The state's start, from the first fab_lock() (fab_lock_set_start()). */
static void fab_init(void)
{
	const char *mode = getenv("SOFTRDMA_MODE");

	init_conds();
	fab.mode = SOFTRDMA_MODE_THREAD;
	if (mode && strcmp(mode, "step") == 0)
		fab.mode = SOFTRDMA_MODE_STEP;
	else if (mode && strcmp(mode, "async") == 0)
		fab.mode = SOFTRDMA_MODE_ASYNC;
	pcap_init();
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
 * child's copy. The lock is held across fork() (base/lock.c), and the wire's
 * threads are held out of their unlocked work (wire_fork()).
 */
static void fork_prepare(void)
{
	wire_fork(WIRE_FORK_PREPARE);
	fab_lock_fork_prepare();
}

static void fork_parent(void)
{
	fab_lock_fork_parent();
	wire_fork(WIRE_FORK_PARENT);
}

static void fork_child(void)
{
	/* The condition variables may hold the parent's waiters, which do not exist here. */
	init_conds();
	sched_fork_child_locked();
	fab.next_qpn = 0;
	fab_lock_fork_child();
	wire_fork(WIRE_FORK_CHILD);
}

/*
 * Registered before rdma_cm's (priority 102): its prepare handler runs
 * first. The lock starts the fabric when first taken; the wire calls up
 * through the verbs' table.
 */
__attribute__((constructor(101))) static void fab_fork_init(void)
{
	fab_lock_set_start(fab_init);
	wire_set_ops(&fab_wire_ops);
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/*
 * A process that exits with objects still open must not leave the threads
 * running. Priority 101 runs it after the unprioritised destructors (such as
 * rdma_cm's, which closes its device context), which may still need them.
 */
__attribute__((destructor(101))) static void fab_exit(void)
{
	fab_lock();
	sched_stop_locked();
	fab_unlock();
	wire_stop();
	fab_lock();
	sched_discard_locked();
	fab_unlock();
	wire_free();
}

int softrdma_pcap_open(const char *path)
{
	int ret;

	if (!path)
		return -EINVAL;
	fab_lock();
	ret = pcap_open_locked(path);
	fab_unlock();
	return ret;
}

int softrdma_pcap_close(void)
{
	fab_lock();
	pcap_close_locked();
	fab_unlock();
	return 0;
}

void fab_set_cm_ops_locked(const struct soft_cm_ops *ops)
{
	fab.cm_ops = ops;
	wire_set_cm_locked(ops != NULL);
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
