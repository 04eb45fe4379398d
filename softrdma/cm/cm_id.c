/* SPDX-License-Identifier: MIT */
/*
 * rdma_cm ids: creation and destruction, ports, bind, listen (published to
 * other processes with the socket backend), address and route resolution,
 * options.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "cm.h"

/* ---- ports ---------------------------------------------------------------- */

static bool port_taken_locked(struct soft_cm_id *self, const struct sockaddr *addr,
			      uint16_t port)
{
	struct soft_list *pos, *tmp;

	soft_list_for_each_safe(pos, tmp, &cm_state.ids) {
		struct soft_cm_id *other = soft_list_entry(pos, struct soft_cm_id, link);
		const struct sockaddr *oaddr = &other->id.route.addr.src_addr;

		if (other == self || !other->port_held || other->id.ps != self->id.ps ||
		    cm_addr_port(oaddr) != port)
			continue;
		if (!cm_addr_covers(oaddr, other->afonly, addr) &&
		    !cm_addr_covers(addr, self->afonly, oaddr))
			continue;
		if (self->reuseaddr && other->reuseaddr && other->state != CM_LISTEN)
			continue;
		return true;
	}
	return false;
}

/* Per process, from its pid when first needed (and again in a forked child). */
static uint16_t next_port;
static uint32_t next_comm_id;

/*
 * A free port for addr. With the socket backend each process starts at its
 * own place in the range, so that processes rarely pick the same one.
 */
static int pick_port_locked(struct soft_cm_id *sid, const struct sockaddr *addr, uint16_t *out)
{
	unsigned int tries;

	if (!next_port)
		next_port = (uint16_t)(40000 + (rdv_dir() ? getpid() % 20000 : 0));
	for (tries = 0; tries < 20000; tries++) {
		uint16_t port = next_port;

		next_port = next_port >= 59999 ? 40000 : next_port + 1;
		if (!port_taken_locked(sid, addr, port)) {
			*out = port;
			return 0;
		}
	}
	return EADDRNOTAVAIL;
}

static int bind_locked(struct soft_cm_id *sid, const struct sockaddr *addr)
{
	struct sockaddr *src = &sid->id.route.addr.src_addr;
	uint16_t port = cm_addr_port(addr);
	int ret;

	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return EAFNOSUPPORT;
	if (sid->state != CM_IDLE)
		return EINVAL;
	/* softrdma0 carries the loopback addresses only. */
	if (!cm_addr_is_loopback(addr) && !cm_addr_is_any(addr))
		return ENODEV;
	if (port == 0) {
		ret = pick_port_locked(sid, addr, &port);
		if (ret)
			return ret;
		sid->port_auto = true;
	} else if (port_taken_locked(sid, addr, port)) {
		return EADDRINUSE;
	}
	memset(&sid->id.route.addr.src_storage, 0, sizeof(struct sockaddr_storage));
	memcpy(src, addr, cm_addr_len(addr));
	cm_addr_set_port(src, port);
	sid->port_held = true;
	sid->state = CM_BOUND;
	if (!cm_addr_is_any(src)) {
		cm_set_device_locked(sid);
		cm_addr_to_gid(src, &sid->id.route.addr.addr.ibaddr.sgid);
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

/*
 * Socket backend: publish the listener in the rendezvous directory so that
 * other processes can connect. Across processes a port conflict shows here,
 * at listen; a port picked by bind (port 0) is then picked again.
 */
static int publish(struct soft_cm_id *sid)
{
	struct sockaddr_storage addr;
	struct rdv_claim *claim = NULL;
	unsigned int tries;
	int ret, fd;

	for (tries = 0;; tries++) {
		uint16_t port;

		fab_lock();
		memcpy(&addr, &sid->id.route.addr.src_storage, sizeof(addr));
		fab_unlock();
		ret = rdv_listen((struct sockaddr *)&addr, sid->id.ps, sid->afonly, &claim);
		if (ret != -EADDRINUSE || !sid->port_auto || tries == 100)
			break;
		fab_lock();
		ret = -pick_port_locked(sid, (struct sockaddr *)&addr, &port);
		if (!ret)
			cm_addr_set_port(&sid->id.route.addr.src_addr, port);
		fab_unlock();
		if (ret)
			break;
	}
	if (ret)
		return -ret;
	fab_lock();
	fd = rdv_claim_take_fd(claim);
	sid->listen_sock = net_listener_add_locked(fd, false);
	if (sid->listen_sock)
		sid->claim = claim;
	fab_unlock();
	if (!sid->listen_sock) {
		close(fd);
		rdv_unlisten(claim);
		return ENOMEM;
	}
	return 0;
}

static void unpublish(struct soft_cm_id *sid)
{
	struct rdv_claim *claim;

	fab_lock();
	claim = sid->claim;
	sid->claim = NULL;
	if (sid->listen_sock)
		net_listener_close_locked(sid->listen_sock);
	sid->listen_sock = NULL;
	fab_unlock();
	if (claim)
		rdv_unlisten(claim);
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
	/* Listen backlogs are not modelled (README.md): the value goes unused. */
	if (!ret)
		sid->state = CM_LISTEN;
	fab_unlock();
	if (!ret && rdv_dir()) {
		ret = publish(sid);
		if (ret) {
			fab_lock();
			sid->state = CM_BOUND;
			fab_unlock();
		}
	}
	return ret ? fail(ret) : 0;
}

struct soft_cm_id *cm_find_listener_locked(const struct sockaddr *dst, enum rdma_port_space ps)
{
	struct soft_list *pos, *tmp;
	struct soft_cm_id *wild = NULL;

	soft_list_for_each_safe(pos, tmp, &cm_state.ids) {
		struct soft_cm_id *l = soft_list_entry(pos, struct soft_cm_id, link);
		const struct sockaddr *la = &l->id.route.addr.src_addr;

		if (l->state != CM_LISTEN || l->id.ps != ps || l->destroying ||
		    cm_addr_port(la) != cm_addr_port(dst) || !cm_addr_covers(la, l->afonly, dst))
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
		cm_addr_set_loopback(dst);
	sid->state = CM_ADDR_QUERY;
	w = cm_work_new_locked(CMW_ADDR, sid, NULL);
	if (w)
		w->status = cm_addr_is_loopback(dst) ? 0 : -EHOSTUNREACH;
	fab_unlock();
	return cm_complete(sid);
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
			cm_addr_set_port(src, port);
		}
		cm_addr_set_loopback(src);
	}
	cm_set_device_locked(sid);
	cm_addr_to_gid(src, &sid->id.route.addr.addr.ibaddr.sgid);
	cm_addr_to_gid(&sid->id.route.addr.dst_addr, &sid->id.route.addr.addr.ibaddr.dgid);
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
	return ret ? fail(ret) : cm_complete(sid);
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
	/* The kernel's default type of service for RoCE is 0. */
	path->traffic_class = sid->tos_set ? sid->tos : 0;
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

/*
 * The options of level RDMA_OPTION_ID, as the kernel's ucma_set_option_id()
 * takes them; an errno value. The type of service and the ACK timeout are
 * kept for what rdma_cm does later: the route's traffic class (and so each
 * QP's GRH, on both sides, since the REQ carries the path) at route
 * resolution, and the QP's local ACK timeout when it moves it to RTS.
 */
static int set_id_option_locked(struct soft_cm_id *sid, int optname, const void *optval,
				size_t optlen)
{
	switch (optname) {
	case RDMA_OPTION_ID_TOS:
		if (optlen != sizeof(uint8_t))
			return EINVAL;
		sid->tos = *(const uint8_t *)optval;
		sid->tos_set = true;
		return 0;
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		if (optlen != sizeof(uint8_t))
			return EINVAL;
		sid->ack_timeout = *(const uint8_t *)optval;
		sid->ack_timeout_set = true;
		return 0;
	case RDMA_OPTION_ID_REUSEADDR:
	case RDMA_OPTION_ID_AFONLY:
		if (optlen != sizeof(int) || sid->state != CM_IDLE)
			return EINVAL;
		if (optname == RDMA_OPTION_ID_REUSEADDR)
			sid->reuseaddr = *(const int *)optval != 0;
		else
			sid->afonly = *(const int *)optval != 0;
		return 0;
	default:
		return ENOSYS;
	}
}

/* Path records of level RDMA_OPTION_IB are not modelled (one path, resolved here). */
int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
		    size_t optlen)
{
	int ret;

	if (!optval)
		return fail(EINVAL);
	if (level != RDMA_OPTION_ID)
		return fail(ENOSYS);
	fab_lock();
	ret = set_id_option_locked(to_scm(id), optname, optval, optlen);
	fab_unlock();
	return ret ? fail(ret) : 0;
}

struct soft_cm_id *cm_id_alloc(struct soft_cm_channel *ch, void *context,
			       enum rdma_port_space ps)
{
	struct soft_cm_id *sid = calloc(1, sizeof(*sid));

	if (!sid)
		return NULL;
	sid->ch = ch;
	sid->id.channel = ch ? &ch->ch : NULL;
	sid->id.context = context;
	sid->id.ps = ps;
	sid->id.qp_type = ps == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC;
	sid->state = CM_IDLE;
	soft_list_init(&sid->link);
	return sid;
}

void cm_id_link_locked(struct soft_cm_id *sid)
{
	/* Communication IDs differ between processes too: they appear in captures. */
	if (!next_comm_id)
		next_comm_id = (uint32_t)getpid() << 12;
	sid->comm_id = ++next_comm_id;
	soft_list_add_tail(&sid->link, &cm_state.ids);
	if (sid->ch)
		sid->ch->ids++;
	fab_cm_count_locked(FAB_CM_IDS, 1);
}

/* Without a channel the id is synchronous: librdmacm gives it a channel of its own. */
int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		   enum rdma_port_space ps)
{
	struct rdma_event_channel *own = NULL;
	struct soft_cm_id *sid;

	if (!id)
		return fail(EINVAL);
	/*
	 * RDMA_PS_UDP has UD QPs (cm_ud.c), except on siw, which has none
	 * (ibv_create_qp refuses them with EOPNOTSUPP): refused as not
	 * supported from the start there. RDMA_PS_IPOIB takes its Q_Key from
	 * the IPoIB broadcast group, which RoCE has not: refused likewise. Any
	 * other space is unknown to the kernel's CM, which refuses it with
	 * EINVAL.
	 */
	if (ps == RDMA_PS_IPOIB)
		return fail(EOPNOTSUPP);
	if (ps != RDMA_PS_TCP && ps != RDMA_PS_IB && ps != RDMA_PS_UDP)
		return fail(EINVAL);
	if (!channel) {
		own = rdma_create_event_channel();
		if (!own)
			return -1;
		channel = own;
	}
	if (cm_device_get()) {
		if (own)
			rdma_destroy_event_channel(own);
		return fail(ENODEV);
	}
	if (ps == RDMA_PS_UDP &&
	    cm_state.ctx->vctx.context.device->transport_type == IBV_TRANSPORT_IWARP) {
		cm_device_put();
		if (own)
			rdma_destroy_event_channel(own);
		return fail(EOPNOTSUPP);
	}
	sid = cm_id_alloc(container_of(channel, struct soft_cm_channel, ch), context, ps);
	if (!sid) {
		cm_device_put();
		if (own)
			rdma_destroy_event_channel(own);
		return fail(ENOMEM);
	}
	sid->sync = own != NULL;
	fab_lock();
	cm_id_link_locked(sid);
	fab_unlock();
	*id = &sid->id;
	return 0;
}

/*
 * fork(), in the child (fabric.c says why it starts afresh): the ids are the
 * parent's. Each is forgotten and cut off from what the parent still uses,
 * its rendezvous claim, listening socket and link, so that even its
 * destruction here cannot unpublish the parent's listener or speak on the
 * parent's connection; and ports and Communication IDs start from the
 * child's own pid.
 */
void cm_ids_fork_child(void)
{
	struct soft_list *node;

	while ((node = soft_list_pop(&cm_state.ids))) {
		struct soft_cm_id *sid = soft_list_entry(node, struct soft_cm_id, link);

		sid->inherited = true;
		sid->claim = NULL;
		sid->listen_sock = NULL;
		sid->conn = NULL;
	}
	next_port = 0;
	next_comm_id = 0;
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct soft_cm_id *sid = to_scm(id);
	struct soft_cm_channel *own;
	struct net_link *link;

	/* The parent's id, in a forked child: only the child's copy goes. */
	if (sid->inherited) {
		free(sid->ep_qp_attr);
		free(sid);
		return 0;
	}

	/* A sync id holds the event of its last call. */
	if (id->event) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	unpublish(sid);
	fab_lock();
	sid->destroying = true;
	/* As librdmacm: every event handed out for this id must be acked first. */
	while (sid->events_acked < sid->events_read)
		fab_wait_ack_locked();
	/* The DREQ or REJ that teardown sends goes out before we return. */
	link = cm_net_hold_locked(sid);
	cm_id_teardown_locked(sid);
	cm_forget_events_locked(sid);
	soft_list_del(&sid->link);
	if (sid->ch)
		sid->ch->ids--;
	fab_cm_count_locked(FAB_CM_IDS, -1);
	own = sid->sync ? sid->ch : NULL;
	fab_unlock();
	cm_net_flush(link);
	free(sid->ep_qp_attr);
	free(sid);
	if (own)
		rdma_destroy_event_channel(&own->ch);
	cm_device_put();
	return 0;
}
