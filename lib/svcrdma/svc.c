/* SPDX-License-Identifier: MIT */
/* The server's public face: listening, accepting, polling, destruction. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <rpcrdma/svc.h>

#include "sized.h"
#include "svc_rdma.h"

#define RPCRDMA_SVC_DEF_REQUESTS 32
#define RPCRDMA_SVC_MAX_REQUESTS 1024
#define RPCRDMA_SVC_DEF_BACKLOG 16
#define RPCRDMA_SVC_DEF_CONNECTIONS 1024
#define RPCRDMA_SVC_MAX_CONNECTIONS 65536
#define RPCRDMA_SVC_MAX_POLLERS 64
#define RPCRDMA_SVC_DEF_SRQ 65536
#define RPCRDMA_SVC_MAX_SRQ 65536

static int svc_rdma_attr_fill(struct rpcrdma_svc *svc, const struct rpcrdma_svc_attr *in)
{
	struct rpcrdma_svc_attr *a = &svc->sv_attr;
	socklen_t len;
	int rc;

	rc = rpcrdma_sized_in(a, sizeof(*a), in, RPCRDMA_SVC_ATTR_SIZE_0_2);
	if (rc)
		return rc;
	if (!a->addr || !a->on_call ||
	    (a->flags & ~(uint32_t)(RPCRDMA_SVC_WORKERS | RPCRDMA_SVC_SRQ | RPCRDMA_SVC_BUSY_POLL)))
		return -EINVAL;
	len = rpcrdma_sockaddr_len(a->addr);
	if (!len)
		return -EINVAL;
	memcpy(&svc->sv_addr, a->addr, len);
	a->addr = NULL;
	if (!a->max_requests)
		a->max_requests = RPCRDMA_SVC_DEF_REQUESTS;
	if (!a->inline_size)
		a->inline_size = RPCRDMA_DEF_INLINE;
	if (a->backlog <= 0)
		a->backlog = RPCRDMA_SVC_DEF_BACKLOG;
	if (!a->max_connections)
		a->max_connections = RPCRDMA_SVC_DEF_CONNECTIONS;
	if (!a->pollers)
		a->pollers = 1;
	if (!a->srq_size)
		a->srq_size = RPCRDMA_SVC_DEF_SRQ;
	if (a->srq_size < a->max_requests || a->srq_size > RPCRDMA_SVC_MAX_SRQ)
		return -EINVAL;
	if (a->max_connections > RPCRDMA_SVC_MAX_CONNECTIONS ||
	    a->pollers > RPCRDMA_SVC_MAX_POLLERS)
		return -EINVAL;
	if (a->max_requests > RPCRDMA_SVC_MAX_REQUESTS || a->inline_size < RPCRDMA_MIN_INLINE ||
	    a->inline_size > RPCRDMA_MAX_INLINE)
		return -EINVAL;
	/* 0 takes the default; negative is off. */
	if (!a->keepalive_ms)
		a->keepalive_ms = RPCRDMA_SVC_DEF_KEEPALIVE_MS;
	if (!a->idle_timeout_ms)
		a->idle_timeout_ms = RPCRDMA_SVC_DEF_IDLE_TIMEOUT_MS;
	if ((a->keepalive_ms > 0 && a->keepalive_ms < RPCRDMA_KA_MIN_MS) ||
	    (a->idle_timeout_ms > 0 && a->idle_timeout_ms < RPCRDMA_KA_MIN_MS))
		return -EINVAL;
	/* RFC 8797 expresses sizes in whole KiB. */
	a->inline_size &= ~(uint32_t)1023;
	return 0;
}

/*
 * A PD for every device, made now so that memory can be registered before
 * any connection arrives; a connection uses the one of its device.
 */
static int svc_rdma_alloc_pds(struct rpcrdma_svc *svc)
{
	struct ibv_context **devs;
	int n, i;

	/* Held until the server goes: the PDs live on these contexts. */
	devs = rdma_get_devices(&n);
	if (!devs)
		return -ENODEV;
	svc->sv_devs = devs;
	for (i = 0; i < n && svc->sv_npds < SVC_RDMA_MAX_DEVICES; i++) {
		struct ibv_pd *pd = ibv_alloc_pd(devs[i]);

		if (!pd)
			continue;
		svc->sv_pds[svc->sv_npds].verbs = devs[i];
		svc->sv_pds[svc->sv_npds].pd = pd;
		svc->sv_npds++;
	}
	return svc->sv_npds ? 0 : -ENODEV;
}

void svc_rdma_set_on_free(struct rpcrdma_svc *svc, void (*fn)(void *arg), void *arg)
{
	svc->sv_on_free = fn;
	svc->sv_on_free_arg = arg;
}

static void svc_rdma_svc_free(struct rpcrdma_svc *svc)
{
	unsigned int i;

	if (svc->sv_on_free)
		svc->sv_on_free(svc->sv_on_free_arg);
	if (svc->sv_listen_id)
		rdma_destroy_id(svc->sv_listen_id);
	rpcrdma_mem_destroy_all(&svc->sv_mems);
	pthread_rwlock_destroy(&svc->sv_mems_lock);
	for (i = 0; i < svc->sv_npds; i++)
		ibv_dealloc_pd(svc->sv_pds[i].pd);
	if (svc->sv_devs)
		rdma_free_devices(svc->sv_devs);
	if (svc->sv_cm_channel)
		rdma_destroy_event_channel(svc->sv_cm_channel);
	svc_rdma_pollers_fini(svc);
	free(svc);
}

RPCRDMA_EXPORT int rpcrdma_svc_listen(const struct rpcrdma_svc_attr *attr,
				      struct rpcrdma_svc **out)
{
	struct rpcrdma_svc *svc;
	socklen_t len;
	int rc;

	if (!attr || !out)
		return -EINVAL;
	svc = calloc(1, sizeof(*svc));
	if (!svc)
		return -ENOMEM;
	svc->sv_stats.heap_bytes = sizeof(*svc);
	svc->sv_listen_epfd = -1;
	list_init(&svc->sv_mems);
	pthread_rwlock_init(&svc->sv_mems_lock, NULL);
	rc = svc_rdma_attr_fill(svc, attr);
	if (rc)
		goto out;
	rc = svc_rdma_alloc_pds(svc);
	if (rc)
		goto out;
	rc = rpcrdma_cm_channel_create(&svc->sv_cm_channel);
	if (rc)
		goto out;
	if (rdma_create_id(svc->sv_cm_channel, &svc->sv_listen_id, svc, RDMA_PS_TCP)) {
		rc = rpcrdma_errno(-ENOMEM);
		goto out;
	}
	if (rdma_bind_addr(svc->sv_listen_id, (struct sockaddr *)&svc->sv_addr) ||
	    rdma_listen(svc->sv_listen_id, svc->sv_attr.backlog)) {
		rc = rpcrdma_errno(-EADDRINUSE);
		goto out;
	}
	len = rpcrdma_sockaddr_len(rdma_get_local_addr(svc->sv_listen_id));
	if (len)
		memcpy(&svc->sv_addr, rdma_get_local_addr(svc->sv_listen_id), len);
	rc = svc_rdma_pollers_init(svc, svc->sv_attr.pollers);
	if (rc)
		goto out;
	*out = svc;
	return 0;
out:
	svc_rdma_svc_free(svc);
	return rc;
}

RPCRDMA_EXPORT void rpcrdma_svc_destroy(struct rpcrdma_svc *svc)
{
	struct list_node *pos, *tmp;
	unsigned int i, j;

	if (!svc)
		return;
	/* Workers waiting on a handoff get their answer; new connections are refused. */
	svc_rdma_pollers_refuse(svc);
	for (i = 0; i < svc->sv_npollers; i++)
		svc_rdma_poller_take_work(&svc->sv_pollers[i], false);
	/* No new connections: the listener goes first. */
	rdma_destroy_id(svc->sv_listen_id);
	svc->sv_listen_id = NULL;
	for (i = 0; i < svc->sv_npollers; i++) {
		struct svc_rdma_poller *p = &svc->sv_pollers[i];

		list_for_each_safe(pos, tmp, &p->conns)
			svc_rdma_conn_destroy_sync(list_entry(pos, struct svcxprt_rdma, sc_node));
		/* Connections whose calls the application still holds outlive us. */
		list_for_each_safe(pos, tmp, &p->zombies) {
			struct svcxprt_rdma *rdma = list_entry(pos, struct svcxprt_rdma, sc_node);

			list_del(&rdma->sc_node);
			rdma->sc_svc = NULL;
			rdma->sc_workers = false;
			rdma->sc_poller = NULL;
			rdma->sc_own_stats.heap_bytes = rdma->sc_heap;
			rdma->sc_stats = &rdma->sc_own_stats;
		}
		for (j = 0; j < SVC_RDMA_MAX_DEVICES; j++)
			if (p->srqs[j])
				svc_rdma_srq_destroy(p->srqs[j]);
	}
	svc_rdma_svc_free(svc);
}

RPCRDMA_EXPORT int rpcrdma_svc_addr(const struct rpcrdma_svc *svc, struct sockaddr *addr,
				    socklen_t *len)
{
	socklen_t need;

	if (!svc || !addr || !len)
		return -EINVAL;
	need = rpcrdma_sockaddr_len((const struct sockaddr *)&svc->sv_addr);
	if (*len < need)
		return -ENOSPC;
	memcpy(addr, &svc->sv_addr, need);
	*len = need;
	return 0;
}

RPCRDMA_EXPORT int rpcrdma_svc_fd(const struct rpcrdma_svc *svc)
{
	return svc ? svc->sv_pollers[0].epfd : -EINVAL;
}

RPCRDMA_EXPORT int rpcrdma_svc_listen_fd(const struct rpcrdma_svc *svc)
{
	return svc ? svc_rdma_listen_fd(svc) : -EINVAL;
}

RPCRDMA_EXPORT int rpcrdma_svc_listen_poll(struct rpcrdma_svc *svc)
{
	struct rdma_cm_event *ev;
	int n = 0;

	if (!svc)
		return -EINVAL;
	SVC_RDMA_GUARD(&svc->sv_pollers[0], return -EBUSY);
	svc_rdma_note_poller(&svc->sv_pollers[0]);
	n += svc_rdma_poller_take_work(&svc->sv_pollers[0], false);
	n += svc_rdma_poller_keepalive(&svc->sv_pollers[0]);
	while (rpcrdma_cm_next_event(svc->sv_cm_channel, &ev) == 0) {
		struct svc_rdma_conn_req req;

		n++;
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			rpcrdma_info("server: listener %s", rdma_event_str(ev->event));
			rdma_ack_cm_event(ev);
			continue;
		}
		/* Copy what the accept needs: the event is acked before migrating the id. */
		memset(&req, 0, sizeof(req));
		req.id = ev->id;
		req.pdata_len = ev->param.conn.private_data_len;
		if (req.pdata_len > sizeof(req.pdata))
			req.pdata_len = sizeof(req.pdata);
		if (ev->param.conn.private_data)
			memcpy(req.pdata, ev->param.conn.private_data, req.pdata_len);
		else
			req.pdata_len = 0;
		req.initiator_depth = ev->param.conn.initiator_depth;
		rdma_ack_cm_event(ev);
		/* Past the limit it is accepted only if an idle connection makes room. */
		req.evict = atomic_fetch_add(&svc->sv_nconns, 1) >= svc->sv_attr.max_connections;
		svc_rdma_poller_assign(svc, &req);
	}
	return n;
}

RPCRDMA_EXPORT int rpcrdma_svc_arm(struct rpcrdma_svc *svc)
{
	if (!svc)
		return -EINVAL;
	/* The others were armed by their last visit. */
	return list_empty(&svc->sv_pollers[0].ready) ? 0 : 1;
}

RPCRDMA_EXPORT int rpcrdma_svc_wait(struct rpcrdma_svc *svc, int timeout_ms)
{
	if (!svc)
		return -EINVAL;
	SVC_RDMA_GUARD(&svc->sv_pollers[0], return -EBUSY);
	return svc_rdma_poller_wait(&svc->sv_pollers[0], timeout_ms);
}

RPCRDMA_EXPORT int rpcrdma_svc_poller_fd(const struct rpcrdma_svc *svc, unsigned int i)
{
	if (!svc || i >= svc->sv_npollers)
		return -EINVAL;
	return svc->sv_pollers[i].epfd;
}

RPCRDMA_EXPORT int rpcrdma_svc_poller_wait(struct rpcrdma_svc *svc, unsigned int i,
					   int timeout_ms)
{
	if (!svc || i >= svc->sv_npollers)
		return -EINVAL;
	SVC_RDMA_GUARD(&svc->sv_pollers[i], return -EBUSY);
	return svc_rdma_poller_wait(&svc->sv_pollers[i], timeout_ms);
}

void svc_rdma_set_spin(struct rpcrdma_svc *svc, unsigned int us)
{
	unsigned int i;

	for (i = 0; i < svc->sv_npollers; i++)
		atomic_store_explicit(&svc->sv_pollers[i].spin_us, us, memory_order_relaxed);
}

/* Every device's PD: a region is registered with all of them. */
static void svc_rdma_all_pds(const struct rpcrdma_svc *svc, struct ibv_pd **pds)
{
	unsigned int i;

	for (i = 0; i < svc->sv_npds; i++)
		pds[i] = svc->sv_pds[i].pd;
}

/* Local access only, here and below: the server reads from it to send, never exposes it. */
int svc_rdma_mem_register_on(struct rpcrdma_svc *svc, struct list_node *list, void *addr,
			     size_t len, struct rpcrdma_mem **out)
{
	struct ibv_pd *pds[SVC_RDMA_MAX_DEVICES];

	svc_rdma_all_pds(svc, pds);
	return rpcrdma_mem_create(list, &svc->sv_stats, addr, len, pds, svc->sv_npds, 0, out);
}

struct rpcrdma_mem *svc_rdma_mem_use(struct rpcrdma_svc *svc, const void *buf, size_t len,
				     struct ibv_pd *pd, struct ibv_mr **mr)
{
	struct rpcrdma_mem *mem;

	pthread_rwlock_rdlock(&svc->sv_mems_lock);
	mem = rpcrdma_mem_find(&svc->sv_mems, buf, len, pd, mr);
	if (mem)
		atomic_fetch_add_explicit(&mem->rm_users, 1, memory_order_relaxed);
	pthread_rwlock_unlock(&svc->sv_mems_lock);
	return mem;
}

RPCRDMA_EXPORT int rpcrdma_svc_mem_register(struct rpcrdma_svc *svc, void *addr, size_t len,
					    struct rpcrdma_mem **out)
{
	struct ibv_pd *pds[SVC_RDMA_MAX_DEVICES];

	if (!svc || !out)
		return -EINVAL;
	svc_rdma_all_pds(svc, pds);
	return rpcrdma_mem_create_shared(&svc->sv_mems, &svc->sv_mems_lock, addr, len, pds,
					 svc->sv_npds, 0, out);
}

RPCRDMA_EXPORT int rpcrdma_svc_stats(const struct rpcrdma_svc *svc, struct rpcrdma_stats *stats)
{
	struct rpcrdma_stats sum;
	unsigned int i;

	if (!svc || !stats)
		return -EINVAL;
	rpcrdma_stats_load(&sum, &svc->sv_stats);
	for (i = 0; i < svc->sv_npollers; i++)
		rpcrdma_stats_sum(&sum, &svc->sv_pollers[i].stats);
	return rpcrdma_sized_out(stats, &sum, sizeof(sum),
				 RPCRDMA_STATS_SIZE_0_2);
}
