/* SPDX-License-Identifier: MIT */
/*
 * rdma_cm ids: creation and destruction, addresses and ports (loopback only),
 * bind, listen, address and route resolution, options, and the one device
 * context that every id shares (librdmacm opens each device once).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "cm.h"

/* ---- the shared device -------------------------------------------------- */

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
 * cm_dev_mutex serialises opening, allocating and releasing; fab.cm_ctx and
 * fab.cm_pd are written under it and fab.lock, so either lock reads them.
 */
static pthread_mutex_t cm_dev_mutex = PTHREAD_MUTEX_INITIALIZER;

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

	if (!fab.cm_ctx) {
		list = ibv_get_device_list(NULL);
		ctx = list && list[0] ? ibv_open_device(list[0]) : NULL;
		ibv_free_device_list(list);
		if (!ctx)
			return -1;
		fab_lock();
		fab.cm_ctx = to_sctx(ctx);
		fab_unlock();
	}
	fab_lock();
	fab.cm_ctx_refs++;
	fab_unlock();
	return 0;
}

static void device_unref(void)
{
	struct orphan_pd *o;
	struct ibv_pd *pd;

	pthread_mutex_lock(&cm_dev_mutex);
	fab_lock();
	pd = --fab.cm_ctx_refs == 0 ? fab.cm_pd : NULL;
	/* No reference is left, so no progress unit can take one meanwhile. */
	if (pd)
		fab.cm_pd = NULL;
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
	if (!ret && !fab.cm_pd) {
		pd = ibv_alloc_pd(&fab.cm_ctx->vctx.context);
		fab_lock();
		fab.cm_pd = pd;
		if (!pd)
			fab.cm_ctx_refs--;
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
	ctx = fab.cm_ctx ? &fab.cm_ctx->vctx.context : NULL;
	idle = ctx && fab.cm_ctx_refs == 0 && fab.cm_ctx->objects == 0;
	if (idle)
		fab.cm_ctx = NULL;
	fab_unlock();
	if (idle)
		ibv_close_device(ctx);
	pthread_mutex_unlock(&cm_dev_mutex);
}

void cm_set_device_locked(struct soft_cm_id *sid)
{
	sid->id.verbs = &fab.cm_ctx->vctx.context;
	sid->id.pd = fab.cm_pd;
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
	list[0] = &fab.cm_ctx->vctx.context;
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

/* ---- addresses ---------------------------------------------------------- */

bool cm_addr_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return false;
}

bool cm_addr_is_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return false;
}

socklen_t cm_addr_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

uint16_t cm_addr_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return ntohs(((const struct sockaddr_in *)sa)->sin_port);
}

static void addr_set_port(struct sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)sa)->sin_port = htons(port);
}

static void addr_set_loopback(struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_addr = in6addr_loopback;
	else
		((struct sockaddr_in *)sa)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

static bool same_ip(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr));
}

/* Does a bound address (with its AFONLY option) cover addr? */
static bool addr_covers(const struct sockaddr *bound, bool afonly, const struct sockaddr *addr)
{
	if (bound->sa_family == addr->sa_family)
		return cm_addr_is_any(bound) || same_ip(bound, addr);
	return bound->sa_family == AF_INET6 && !afonly && cm_addr_is_any(bound);
}

/* The GID of an IP address: RoCEv2 uses the address itself (IPv4-mapped). */
static void addr_to_gid(const struct sockaddr *sa, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	if (sa->sa_family == AF_INET6) {
		memcpy(gid->raw, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	} else {
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(gid->raw + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	}
}

/* ---- ports ---------------------------------------------------------------- */

static bool port_taken_locked(struct soft_cm_id *self, const struct sockaddr *addr,
			      uint16_t port)
{
	struct list_node *pos, *tmp;

	list_for_each_safe(pos, tmp, &fab.cm_ids) {
		struct soft_cm_id *other = list_entry(pos, struct soft_cm_id, link);
		const struct sockaddr *oaddr = &other->id.route.addr.src_addr;

		if (other == self || !other->port_held || other->id.ps != self->id.ps ||
		    cm_addr_port(oaddr) != port)
			continue;
		if (!addr_covers(oaddr, other->afonly, addr) &&
		    !addr_covers(addr, self->afonly, oaddr))
			continue;
		if (self->reuseaddr && other->reuseaddr && other->state != CM_LISTEN)
			continue;
		return true;
	}
	return false;
}

static int bind_locked(struct soft_cm_id *sid, const struct sockaddr *addr)
{
	static uint16_t next_port = 40000;
	struct sockaddr *src = &sid->id.route.addr.src_addr;
	uint16_t port = cm_addr_port(addr);
	unsigned int tries;

	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return EAFNOSUPPORT;
	if (sid->state != CM_IDLE)
		return EINVAL;
	/* softrdma0 carries the loopback addresses only. */
	if (!cm_addr_is_loopback(addr) && !cm_addr_is_any(addr))
		return ENODEV;
	if (port == 0) {
		for (tries = 0; tries < 20000; tries++) {
			port = next_port;
			next_port = next_port >= 59999 ? 40000 : next_port + 1;
			if (!port_taken_locked(sid, addr, port))
				break;
		}
		if (tries == 20000)
			return EADDRNOTAVAIL;
	} else if (port_taken_locked(sid, addr, port)) {
		return EADDRINUSE;
	}
	memset(&sid->id.route.addr.src_storage, 0, sizeof(struct sockaddr_storage));
	memcpy(src, addr, cm_addr_len(addr));
	addr_set_port(src, port);
	sid->port_held = true;
	sid->state = CM_BOUND;
	if (!cm_addr_is_any(src)) {
		cm_set_device_locked(sid);
		addr_to_gid(src, &sid->id.route.addr.addr.ibaddr.sgid);
	}
	return 0;
}

static int fail(int err)
{
	errno = err;
	return -1;
}

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	int ret;

	if (!id || !addr)
		return fail(EINVAL);
	fab_lock();
	ret = bind_locked(to_scm(id), addr);
	fab_unlock();
	return ret ? fail(ret) : 0;
}

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct soft_cm_id *sid = to_scm(id);
	struct sockaddr_in any = { .sin_family = AF_INET };
	int ret = 0;

	fab_lock();
	if (sid->state == CM_IDLE)
		ret = bind_locked(sid, (struct sockaddr *)&any);
	if (!ret && sid->state != CM_BOUND)
		ret = EINVAL;
	if (!ret) {
		sid->state = CM_LISTEN;
		sid->backlog = backlog;
	}
	fab_unlock();
	return ret ? fail(ret) : 0;
}

struct soft_cm_id *cm_find_listener_locked(const struct sockaddr *dst, enum rdma_port_space ps)
{
	struct list_node *pos, *tmp;
	struct soft_cm_id *wild = NULL;

	list_for_each_safe(pos, tmp, &fab.cm_ids) {
		struct soft_cm_id *l = list_entry(pos, struct soft_cm_id, link);
		const struct sockaddr *la = &l->id.route.addr.src_addr;

		if (l->state != CM_LISTEN || l->id.ps != ps || l->destroying ||
		    cm_addr_port(la) != cm_addr_port(dst) || !addr_covers(la, l->afonly, dst))
			continue;
		/* An exact address wins over a wildcard, as in the kernel. */
		if (!cm_addr_is_any(la))
			return l;
		wild = l;
	}
	return wild;
}

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr, struct sockaddr *dst_addr,
		      int timeout_ms)
{
	struct soft_cm_id *sid = to_scm(id);
	struct sockaddr *dst = &id->route.addr.dst_addr;
	struct soft_cm_work *w;
	int ret = 0;

	(void)timeout_ms;
	if (!dst_addr || (dst_addr->sa_family != AF_INET && dst_addr->sa_family != AF_INET6))
		return fail(EINVAL);
	fab_lock();
	if (sid->state == CM_IDLE) {
		struct sockaddr_storage any = { .ss_family = dst_addr->sa_family };

		ret = bind_locked(sid, src_addr ? src_addr : (struct sockaddr *)&any);
	}
	if (!ret && sid->state != CM_BOUND)
		ret = EINVAL;
	if (ret) {
		fab_unlock();
		return fail(ret);
	}
	memset(&id->route.addr.dst_storage, 0, sizeof(struct sockaddr_storage));
	memcpy(dst, dst_addr, cm_addr_len(dst_addr));
	/* The kernel resolves the wildcard address to the local host. */
	if (cm_addr_is_any(dst))
		addr_set_loopback(dst);
	sid->state = CM_ADDR_QUERY;
	w = cm_work_new_locked(CMW_ADDR, sid, NULL);
	if (w)
		w->status = cm_addr_is_loopback(dst) ? 0 : -EHOSTUNREACH;
	fab_unlock();
	return 0;
}

/* Progress unit: address resolution finished. */
void cm_addr_done_locked(struct soft_cm_id *sid, int status)
{
	struct sockaddr *src = &sid->id.route.addr.src_addr;

	if (status) {
		sid->state = CM_BOUND;
		cm_deliver_locked(sid, RDMA_CM_EVENT_ADDR_ERROR, status, NULL, NULL, 0, 0, NULL);
		return;
	}
	if (cm_addr_is_any(src)) {
		/* The route to a loopback address leaves from the loopback address. */
		if (src->sa_family != sid->id.route.addr.dst_addr.sa_family) {
			uint16_t port = cm_addr_port(src);

			src->sa_family = sid->id.route.addr.dst_addr.sa_family;
			addr_set_port(src, port);
		}
		addr_set_loopback(src);
	}
	cm_set_device_locked(sid);
	addr_to_gid(src, &sid->id.route.addr.addr.ibaddr.sgid);
	addr_to_gid(&sid->id.route.addr.dst_addr, &sid->id.route.addr.addr.ibaddr.dgid);
	sid->id.route.addr.addr.ibaddr.pkey = htons(0xffff);
	sid->state = CM_ADDR_RESOLVED;
	cm_deliver_locked(sid, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL, NULL, 0, 0, NULL);
}

int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct soft_cm_id *sid = to_scm(id);
	int ret = 0;

	(void)timeout_ms;
	fab_lock();
	if (sid->state != CM_ADDR_RESOLVED) {
		ret = EINVAL;
	} else {
		sid->state = CM_ROUTE_QUERY;
		if (!cm_work_new_locked(CMW_ROUTE, sid, NULL))
			ret = ENOMEM;
	}
	fab_unlock();
	return ret ? fail(ret) : 0;
}

/* Progress unit: route resolution finished. */
void cm_route_done_locked(struct soft_cm_id *sid)
{
	struct ibv_sa_path_rec *path = &sid->path;

	memset(path, 0, sizeof(*path));
	path->sgid = sid->id.route.addr.addr.ibaddr.sgid;
	path->dgid = sid->id.route.addr.addr.ibaddr.dgid;
	path->pkey = htons(0xffff);
	path->mtu = IBV_MTU_1024;
	path->mtu_selector = 2;
	path->rate = 3;
	path->packet_life_time = 14;
	path->hop_limit = 64;
	path->reversible = 1;
	path->numb_path = 1;
	sid->id.route.path_rec = path;
	sid->id.route.num_paths = 1;
	sid->state = CM_ROUTE_RESOLVED;
	cm_deliver_locked(sid, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL, NULL, 0, 0, NULL);
}

__be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return htons(cm_addr_port(&id->route.addr.src_addr));
}

__be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return htons(cm_addr_port(&id->route.addr.dst_addr));
}

int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
		    size_t optlen)
{
	struct soft_cm_id *sid = to_scm(id);

	if (!optval)
		return fail(EINVAL);
	if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_TOS && optlen == sizeof(uint8_t))
		return 0;
	if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_ACK_TIMEOUT &&
	    optlen == sizeof(uint8_t))
		return 0;
	if (level == RDMA_OPTION_ID && (optname == RDMA_OPTION_ID_REUSEADDR ||
					optname == RDMA_OPTION_ID_AFONLY) &&
	    optlen == sizeof(int)) {
		fab_lock();
		if (sid->state != CM_IDLE) {
			fab_unlock();
			return fail(EINVAL);
		}
		if (optname == RDMA_OPTION_ID_REUSEADDR)
			sid->reuseaddr = *(int *)optval != 0;
		else
			sid->afonly = *(int *)optval != 0;
		fab_unlock();
		return 0;
	}
	return fail(ENOSYS);
}

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		   enum rdma_port_space ps)
{
	struct soft_cm_id *sid;

	/* Synchronous ids (no channel) and datagram port spaces are not modelled. */
	if (!channel || !id || (ps != RDMA_PS_TCP && ps != RDMA_PS_IB))
		return fail(EINVAL);
	if (cm_device_get())
		return fail(ENODEV);
	sid = cm_id_alloc(container_of(channel, struct soft_cm_channel, ch), context, ps);
	if (!sid) {
		cm_device_put();
		return fail(ENOMEM);
	}
	fab_lock();
	cm_id_link_locked(sid);
	fab_unlock();
	*id = &sid->id;
	return 0;
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct soft_cm_id *sid = to_scm(id);

	fab_lock();
	sid->destroying = true;
	/* As librdmacm: every event handed out for this id must be acked first. */
	while (sid->events_acked < sid->events_read)
		pthread_cond_wait(&fab.ack_cv, &fab.lock);
	cm_id_teardown_locked(sid);
	cm_forget_events_locked(sid);
	list_del(&sid->link);
	if (sid->ch)
		sid->ch->ids--;
	fab.counts.cm_ids--;
	fab_unlock();
	free(sid);
	cm_device_put();
	return 0;
}
