/* SPDX-License-Identifier: MIT */
/* The server's public face: listening, accepting, polling, destruction. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <rpcrdma/svc.h>

#include "abi.h"
#include "svc_rdma.h"

#define RPCRDMA_SVC_DEF_REQUESTS 32
#define RPCRDMA_SVC_MAX_REQUESTS 1024
#define RPCRDMA_SVC_DEF_BACKLOG 16
#define RPCRDMA_SVC_DEF_CONNECTIONS 1024
#define RPCRDMA_SVC_MAX_CONNECTIONS 65536

static int svc_rdma_watch_async(struct rpcrdma_svc *svc);

static int svc_rdma_attr_fill(struct rpcrdma_svc *svc, const struct rpcrdma_svc_attr *in)
{
	struct rpcrdma_svc_attr *a = &svc->sv_attr;
	socklen_t len;
	int rc;

	rc = rpcrdma_sized_in(a, sizeof(*a), in, RPCRDMA_SVC_ATTR_SIZE_0_2);
	if (rc)
		return rc;
	if (!a->addr || !a->on_call || (a->flags & ~(uint32_t)RPCRDMA_SVC_WORKERS))
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
	if (a->max_connections > RPCRDMA_SVC_MAX_CONNECTIONS)
		return -EINVAL;
	if (a->max_requests > RPCRDMA_SVC_MAX_REQUESTS || a->inline_size < RPCRDMA_MIN_INLINE ||
	    a->inline_size > RPCRDMA_MAX_INLINE)
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

static void svc_rdma_svc_free(struct rpcrdma_svc *svc)
{
	unsigned int i;

	if (svc->sv_listen_id)
		rdma_destroy_id(svc->sv_listen_id);
	rpcrdma_mem_destroy_all(&svc->sv_mems);
	for (i = 0; i < svc->sv_npds; i++)
		ibv_dealloc_pd(svc->sv_pds[i].pd);
	if (svc->sv_devs)
		rdma_free_devices(svc->sv_devs);
	if (svc->sv_cm_channel)
		rdma_destroy_event_channel(svc->sv_cm_channel);
	svc_rdma_handoff_fini(svc);
	if (svc->sv_epfd >= 0)
		close(svc->sv_epfd);
	free(svc);
}

RPCRDMA_SYMVER_DEFAULT(rpcrdma_svc_listen, 0_2);
int rpcrdma_svc_listen_0_2(const struct rpcrdma_svc_attr *attr,
				      struct rpcrdma_svc **out)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	struct rpcrdma_svc *svc;
	socklen_t len;
	int rc;

	if (!attr || !out)
		return -EINVAL;
	svc = calloc(1, sizeof(*svc));
	if (!svc)
		return -ENOMEM;
	svc->sv_stats.heap_bytes = sizeof(*svc);
	svc->sv_epfd = -1;
	svc->sv_handoff_fd = -1;
	svc->sv_listen_epfd = -1;
	list_init(&svc->sv_handoffs);
	list_init(&svc->sv_conns);
	list_init(&svc->sv_ready);
	list_init(&svc->sv_zombies);
	list_init(&svc->sv_mems);
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
	svc->sv_epfd = epoll_create1(EPOLL_CLOEXEC);
	if (svc->sv_epfd < 0 ||
	    epoll_ctl(svc->sv_epfd, EPOLL_CTL_ADD, svc->sv_cm_channel->fd, &ev)) {
		rc = -errno;
		goto out;
	}
	rc = svc_rdma_watch_async(svc);
	if (rc)
		goto out;
	rc = svc_rdma_handoff_init(svc);
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

	if (!svc)
		return;
	/* Workers waiting on a handoff get their answer before the connections go. */
	svc_rdma_run_handoffs(svc);
	/* No new connections: the listener goes first. */
	rdma_destroy_id(svc->sv_listen_id);
	svc->sv_listen_id = NULL;
	list_for_each_safe(pos, tmp, &svc->sv_conns)
		svc_rdma_conn_destroy_sync(list_entry(pos, struct svcxprt_rdma, sc_node));
	/* Connections whose calls the application still holds outlive us. */
	list_for_each_safe(pos, tmp, &svc->sv_zombies) {
		struct svcxprt_rdma *rdma = list_entry(pos, struct svcxprt_rdma, sc_node);

		list_del(&rdma->sc_node);
		rdma->sc_svc = NULL;
		rdma->sc_own_stats.heap_bytes = rdma->sc_heap;
		rdma->sc_stats = &rdma->sc_own_stats;
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
	return svc ? svc->sv_epfd : -EINVAL;
}

RPCRDMA_EXPORT int rpcrdma_svc_listen_fd(const struct rpcrdma_svc *svc)
{
	return svc ? svc_rdma_listen_fd(svc) : -EINVAL;
}

RPCRDMA_EXPORT int rpcrdma_svc_listen_poll(struct rpcrdma_svc *svc)
{
	struct rdma_cm_event *ev;
	int n = 0, rc;

	if (!svc)
		return -EINVAL;
	svc_rdma_note_poller(svc);
	n += svc_rdma_run_handoffs(svc);
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
		if (svc->sv_nconns >= svc->sv_attr.max_connections) {
			rdma_reject(req.id, NULL, 0);
			rdma_destroy_id(req.id);
			svc->sv_stats.conn_rejects++;
			rpcrdma_warn("server: a connection request was refused: %u connections "
				     "(max_connections)", svc->sv_nconns);
			continue;
		}
		rc = svc_rdma_accept(svc, &req);
		if (rc) {
			svc->sv_stats.conn_rejects++;
			rpcrdma_warn("server: a connection request was refused: %s", strerror(-rc));
		}
	}
	return n;
}

void svc_rdma_mark_ready(struct svcxprt_rdma *rdma)
{
	if (rdma->sc_ready || !rdma->sc_svc || rdma->sc_state == SVCXPRT_CLOSED)
		return;
	rdma->sc_ready = true;
	list_add_tail(&rdma->sc_ready_node, &rdma->sc_svc->sv_ready);
}

void svc_rdma_unready(struct svcxprt_rdma *rdma)
{
	if (!rdma->sc_ready)
		return;
	list_del(&rdma->sc_ready_node);
	rdma->sc_ready = false;
}

/*
 * Each device's async fd, once, in the server's epoll set (data: its
 * sv_pds entry). Not in the connections' descriptors: one fd under that
 * many nested epoll sets passes the kernel's limit on wake-up paths (500
 * at depth 2, the 500th connection's epoll_ctl() fails with EINVAL).
 */
static int svc_rdma_watch_async(struct rpcrdma_svc *svc)
{
	unsigned int i;

	for (i = 0; i < svc->sv_npds; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &svc->sv_pds[i] };
		int fd = svc->sv_pds[i].verbs->async_fd;
		int flags = fcntl(fd, F_GETFL);

		if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
		    epoll_ctl(svc->sv_epfd, EPOLL_CTL_ADD, fd, &ev))
			return -errno;
	}
	return 0;
}

/* An async event came: the connections it concerns have work (a close). */
static void svc_rdma_async_wakeup(struct rpcrdma_svc *svc, struct svc_rdma_pd *pd)
{
	struct list_node *pos;

	rpcrdma_async_poll(pd->verbs);
	list_for_each(pos, &svc->sv_conns) {
		struct svcxprt_rdma *rdma = list_entry(pos, struct svcxprt_rdma, sc_node);

		if (atomic_load_explicit(&rdma->sc_ep.async_error, memory_order_relaxed))
			svc_rdma_mark_ready(rdma);
	}
}

static struct svc_rdma_pd *svc_rdma_wakeup_pd(struct rpcrdma_svc *svc, void *ptr)
{
	struct svc_rdma_pd *pd = ptr;

	return pd >= svc->sv_pds && pd < svc->sv_pds + svc->sv_npds ? pd : NULL;
}

/* Descriptors that woke: the listener's, or a connection's (then ready). */
#define SVC_RDMA_EVENTS 64

static int svc_rdma_take_wakeups(struct rpcrdma_svc *svc)
{
	struct epoll_event evs[SVC_RDMA_EVENTS];
	int n, i, done = 0;

	n = epoll_wait(svc->sv_epfd, evs, SVC_RDMA_EVENTS, 0);
	for (i = 0; i < n; i++) {
		void *ptr = evs[i].data.ptr;
		struct svc_rdma_pd *pd;

		if (!ptr)
			done += rpcrdma_svc_listen_poll(svc);
		else if (ptr == svc)
			done += svc_rdma_run_handoffs(svc);
		else if ((pd = svc_rdma_wakeup_pd(svc, ptr)))
			svc_rdma_async_wakeup(svc, pd);
		else
			svc_rdma_mark_ready(ptr);
	}
	return done;
}

RPCRDMA_EXPORT int rpcrdma_svc_poll(struct rpcrdma_svc *svc, int budget)
{
	struct list_node batch;
	struct svcxprt_rdma *rdma;
	int n;

	if (!svc || budget <= 0)
		return -EINVAL;
	svc_rdma_note_poller(svc);
	n = svc_rdma_take_wakeups(svc);
	/* Who is marked during this pass waits for the next one. */
	list_init(&batch);
	list_splice_tail(&svc->sv_ready, &batch);
	while ((rdma = list_pop_entry(&batch, struct svcxprt_rdma, sc_ready_node))) {
		int rc;

		rdma->sc_ready = false;
		rc = svc_rdma_conn_visit(rdma, budget);
		if (rc > 0)
			n += rc;
	}
	return n;
}

RPCRDMA_EXPORT int rpcrdma_svc_arm(struct rpcrdma_svc *svc)
{
	if (!svc)
		return -EINVAL;
	/* The others were armed by their last visit. */
	return list_empty(&svc->sv_ready) ? 0 : 1;
}

RPCRDMA_EXPORT int rpcrdma_svc_wait(struct rpcrdma_svc *svc, int timeout_ms)
{
	struct epoll_event ev;
	int n;

	if (!svc)
		return -EINVAL;
	n = rpcrdma_svc_poll(svc, 64);
	if (n == 0)
		n = rpcrdma_svc_arm(svc);
	if (n != 0)
		return n;
	if (epoll_wait(svc->sv_epfd, &ev, 1, timeout_ms) < 0 && errno != EINTR)
		return -errno;
	return rpcrdma_svc_poll(svc, 64);
}

RPCRDMA_EXPORT int rpcrdma_svc_mem_register(struct rpcrdma_svc *svc, void *addr, size_t len,
					    struct rpcrdma_mem **out)
{
	struct ibv_pd *pds[SVC_RDMA_MAX_DEVICES];
	unsigned int i;

	if (!svc || !out)
		return -EINVAL;
	for (i = 0; i < svc->sv_npds; i++)
		pds[i] = svc->sv_pds[i].pd;
	/* Local access only: the server reads from it to send, never exposes it. */
	return rpcrdma_mem_create(&svc->sv_mems, &svc->sv_stats, addr, len, pds, svc->sv_npds, 0,
				  out);
}

RPCRDMA_SYMVER_DEFAULT(rpcrdma_svc_stats, 0_2);
int rpcrdma_svc_stats_0_2(const struct rpcrdma_svc *svc, struct rpcrdma_stats *stats)
{
	if (!svc || !stats)
		return -EINVAL;
	return rpcrdma_sized_out(stats, &svc->sv_stats, sizeof(svc->sv_stats),
				 RPCRDMA_STATS_SIZE_0_2);
}
