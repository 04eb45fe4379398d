/* SPDX-License-Identifier: MIT */
/* The device context rdma_cm ids share, and its default PD. */
#include <errno.h>
#include <stdlib.h>

#include "cm.h"

/*
 * As librdmacm (rdma-core 44, ucma_get_device/ucma_put_device): the device
 * context is opened once and stays open for the life of the process. Ids and
 * device lists (rdma_get_devices) hold references; ids share a default PD,
 * allocated for the first id and deallocated when the last reference goes.
 * Applications keep PDs and MRs on id->verbs across reconnects with no id
 * alive in between. A default PD that the application still uses when the
 * last reference goes cannot be deallocated: librdmacm forgets it and
 * allocates a new one for the next id; we keep it on a list so that
 * cm_device_exit() can release it. (rdma-core 44 also leaves the PD allocated
 * when the last reference is a device list; we deallocate it then too.)
 *
 * cm_dev_mutex serialises opening, allocating and releasing; cm_state.ctx and
 * cm_state.pd are written under it and the fabric lock, so either lock reads them.
 */
static pthread_mutex_t cm_dev_mutex = PTHREAD_MUTEX_INITIALIZER;

struct soft_cm_state cm_state = { .ids = { &cm_state.ids, &cm_state.ids } };

struct orphan_pd {
	struct orphan_pd *next;
	struct ibv_pd *pd;
};

static struct orphan_pd *orphans;

/* Open the context if needed and take a reference. Called with cm_dev_mutex held. */
static int device_ref(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;

	if (!cm_state.ctx) {
		list = ibv_get_device_list(NULL);
		ctx = list && list[0] ? ibv_open_device(list[0]) : NULL;
		ibv_free_device_list(list);
		if (!ctx)
			return -1;
		fab_lock();
		cm_state.ctx = to_sctx(ctx);
		fab_unlock();
	}
	fab_lock();
	cm_state.ctx_refs++;
	fab_unlock();
	return 0;
}

static void device_unref(void)
{
	struct orphan_pd *o;
	struct ibv_pd *pd;

	pthread_mutex_lock(&cm_dev_mutex);
	fab_lock();
	pd = --cm_state.ctx_refs == 0 ? cm_state.pd : NULL;
	/* No reference is left, so no progress unit can take one meanwhile. */
	if (pd)
		cm_state.pd = NULL;
	fab_unlock();
	if (pd && ibv_dealloc_pd(pd)) {
		/* The application still has objects on it. */
		o = malloc(sizeof(*o));
		if (o) {
			o->pd = pd;
			o->next = orphans;
			orphans = o;
		}
	}
	pthread_mutex_unlock(&cm_dev_mutex);
}

int cm_device_get(void)
{
	struct ibv_pd *pd = NULL;
	int ret;

	pthread_mutex_lock(&cm_dev_mutex);
	ret = device_ref();
	if (!ret && !cm_state.pd) {
		pd = ibv_alloc_pd(&cm_state.ctx->vctx.context);
		fab_lock();
		cm_state.pd = pd;
		if (!pd)
			cm_state.ctx_refs--;
		fab_unlock();
		ret = pd ? 0 : -1;
	}
	pthread_mutex_unlock(&cm_dev_mutex);
	return ret;
}

void cm_device_put(void)
{
	device_unref();
}

/*
 * fork() (fabric.c): cm_dev_mutex is held across it. Registered after the
 * fabric's, this prepare handler runs before the fabric's, so the mutex is
 * taken before the fabric lock, in the order every other path takes them.
 * In the child the device context, its default PD and the ids are the
 * parent's; the child's first id opens a context of its own.
 */
static void cm_fork_prepare(void)
{
	pthread_mutex_lock(&cm_dev_mutex);
}

static void cm_fork_parent(void)
{
	pthread_mutex_unlock(&cm_dev_mutex);
}

static void cm_fork_child(void)
{
	cm_state.ctx = NULL;
	cm_state.pd = NULL;
	cm_state.ctx_refs = 0;
	orphans = NULL;
	cm_ids_fork_child();
	/* Taken by cm_fork_prepare() on this thread: released, not initialised again. */
	pthread_mutex_unlock(&cm_dev_mutex);
}

/* After the fabric's (priority 101), so that this prepare handler runs before its own. */
__attribute__((constructor(102))) static void cm_fork_init(void)
{
	pthread_atfork(cm_fork_prepare, cm_fork_parent, cm_fork_child);
}

/*
 * Process exit: release the context when nothing is left on it, so that a
 * program that cleaned up after itself is leak-free under valgrind and ASan.
 * Runs before the fabric's own destructor (fab_exit).
 */
__attribute__((destructor)) static void cm_device_exit(void)
{
	struct ibv_context *ctx;
	struct orphan_pd **pos = &orphans;
	bool idle;

	pthread_mutex_lock(&cm_dev_mutex);
	while (*pos) {
		struct orphan_pd *o = *pos;

		if (ibv_dealloc_pd(o->pd) == 0) {
			*pos = o->next;
			free(o);
		} else {
			pos = &o->next;
		}
	}
	fab_lock();
	ctx = cm_state.ctx ? &cm_state.ctx->vctx.context : NULL;
	idle = ctx && cm_state.ctx_refs == 0 && cm_state.ctx->objects == 0;
	if (idle)
		cm_state.ctx = NULL;
	fab_unlock();
	if (idle)
		ibv_close_device(ctx);
	pthread_mutex_unlock(&cm_dev_mutex);
}

void cm_set_device_locked(struct soft_cm_id *sid)
{
	sid->id.verbs = &cm_state.ctx->vctx.context;
	sid->id.pd = cm_state.pd;
	sid->id.port_num = 1;
}

struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list;
	int ret;

	if (num_devices)
		*num_devices = 0;
	pthread_mutex_lock(&cm_dev_mutex);
	ret = device_ref();
	pthread_mutex_unlock(&cm_dev_mutex);
	if (ret)
		return NULL;
	list = calloc(2, sizeof(*list));
	if (!list) {
		device_unref();
		errno = ENOMEM;
		return NULL;
	}
	fab_lock();
	list[0] = &cm_state.ctx->vctx.context;
	fab_unlock();
	if (num_devices)
		*num_devices = 1;
	return list;
}

void rdma_free_devices(struct ibv_context **list)
{
	free(list);
	device_unref();
}
