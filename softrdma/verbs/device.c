/* SPDX-License-Identifier: MIT */
/* The one device, softrdma0: listing, opening, attributes, GIDs, async events. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <endian.h>
#include <stdio.h>
#include <fcntl.h>
#include <unistd.h>

#include "soft.h"

#define SOFT_NODE_GUID 0x02000000deadbeefULL

/*
 * softrdma0, in the shape of rdma-core's struct verbs_device (driver.h): the
 * ibv_device, then the provider's ops, a reference count, a list entry, its
 * sysfs record and the core's support flags. Provider libraries loaded next
 * to the drop-ins (libmlx5 through pyverbs' mlx5 module, libefa) take any
 * ibv_device for the start of a verbs_device and compare its ops with their
 * own (mlx5dv_is_supported(), efadv's is_efa_dev()): here they read NULL,
 * no provider's, rather than whatever memory follows an ibv_device.
 */
static struct soft_verbs_device {
	struct ibv_device device;
	const void *ops;
	int refcount;
	struct {
		void *next, *prev;
	} entry;
	void *sysfs;
	uint64_t core_support;
} soft_vdev = {
	.device = {
		.node_type = IBV_NODE_CA,
		.transport_type = IBV_TRANSPORT_IB,
		.name = SOFT_DEV_NAME,
		.dev_name = "uverbs0",
		.dev_path = "/sys/class/infiniband_verbs/uverbs0",
		.ibdev_path = "/sys/class/infiniband/" SOFT_DEV_NAME,
	},
};

_Static_assert(offsetof(struct soft_verbs_device, ops) == sizeof(struct ibv_device),
	       "the ops pointer follows the ibv_device, as in verbs_device");

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list = calloc(2, sizeof(*list));

	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	/* The profile decides the transport (iWARP for siw) before anyone looks. */
	soft_vdev.device.node_type = soft_profile()->node_type;
	soft_vdev.device.transport_type = soft_profile()->transport;
	list[0] = &soft_vdev.device;
	if (num_devices)
		*num_devices = 1;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
	(void)device;
	return htobe64(SOFT_NODE_GUID);
}

static int soft_query_port(struct ibv_context *ctx, uint8_t port_num,
			   struct ibv_port_attr *port_attr, size_t len)
{
	const struct soft_profile *p = soft_profile();
	struct ibv_port_attr attr = {
		.state = IBV_PORT_ACTIVE,
		.max_mtu = IBV_MTU_4096,
		.active_mtu = p->active_mtu,
		.gid_tbl_len = p->gid_tbl_len,
		.port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS,
		.max_msg_sz = p->max_msg_sz,
		.pkey_tbl_len = 1,
		.max_vl_num = 1,
		.active_width = 2,
		.active_speed = 16,
		.phys_state = 5,	/* LinkUp */
		.link_layer = IBV_LINK_LAYER_ETHERNET,
	};

	(void)ctx;
	if (port_num != 1)
		return EINVAL;
	memset(port_attr, 0, len);
	memcpy(port_attr, &attr, len < sizeof(attr) ? len : sizeof(attr));
	return 0;
}

/* The compat entry point the ibv_query_port() macro falls back to; it must exist to link. */
int (ibv_query_port)(struct ibv_context *context, uint8_t port_num,
		     struct _compat_ibv_port_attr *port_attr)
{
	/* The compat layout ends where ibv_port_attr grew `flags`. */
	return soft_query_port(context, port_num, (struct ibv_port_attr *)port_attr,
			       offsetof(struct ibv_port_attr, flags));
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	const struct soft_profile *p = soft_profile();

	(void)context;
	memset(attr, 0, sizeof(*attr));
	snprintf(attr->fw_ver, sizeof(attr->fw_ver), "%s (profile %s)", SOFT_FW_VER, p->name);
	attr->node_guid = htobe64(SOFT_NODE_GUID);
	attr->sys_image_guid = htobe64(SOFT_NODE_GUID);
	attr->max_mr_size = p->max_mr_size;
	attr->page_size_cap = p->page_size_cap;
	attr->vendor_id = p->vendor_id;
	attr->vendor_part_id = p->vendor_part_id;
	attr->hw_ver = 1;
	attr->max_qp = SOFT_MAX_QP;
	attr->max_qp_wr = p->max_qp_wr;
	attr->device_cap_flags = p->cap_flags;
	attr->max_sge = p->max_sge;
	attr->max_sge_rd = p->max_sge_rd;
	attr->max_cq = SOFT_MAX_QP;
	attr->max_cqe = p->max_cqe;
	attr->max_mr = SOFT_MAX_KEYS / 2;
	attr->max_pd = SOFT_MAX_QP;
	attr->max_qp_rd_atom = p->max_rd_atom;
	attr->max_res_rd_atom = p->max_rd_atom * SOFT_MAX_QP;
	attr->max_qp_init_rd_atom = p->max_rd_atom;
	attr->atomic_cap = IBV_ATOMIC_NONE;
	attr->max_mw = p->mw ? SOFT_MAX_KEYS / 2 : 0;
	attr->max_srq = SOFT_MAX_QP;
	attr->max_srq_wr = p->max_srq_wr;
	attr->max_srq_sge = p->max_srq_sge;
	attr->max_pkeys = 1;
	attr->local_ca_ack_delay = 15;
	attr->phys_port_cnt = 1;
	return 0;
}

/*
 * The extended query: the base attributes, with the port count and the
 * capability flags again in their wider fields, as the kernel fills them.
 * The rest (ODP, timestamps, TSO, RSS, tag matching, device memory, PCI
 * atomics, packet pacing) is not modelled and reads as zero, which is how a
 * device without those capabilities reports them.
 */
static int soft_query_device_ex(struct ibv_context *context,
				const struct ibv_query_device_ex_input *input,
				struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex ex;

	if ((input && input->comp_mask) || attr_size < sizeof(ex.orig_attr))
		return EINVAL;
	memset(&ex, 0, sizeof(ex));
	ibv_query_device(context, &ex.orig_attr);
	ex.device_cap_flags_ex = (unsigned int)ex.orig_attr.device_cap_flags;
	ex.phys_port_cnt_ex = ex.orig_attr.phys_port_cnt;
	memset(attr, 0, attr_size);
	memcpy(attr, &ex, attr_size < sizeof(ex) ? attr_size : sizeof(ex));
	return 0;
}

/* GID 0 is 127.0.0.1 as an IPv4-mapped address (RoCEv2), GID 1 is ::1. */
void soft_fill_gid(union ibv_gid *gid, int index)
{
	memset(gid, 0, sizeof(*gid));
	if (index == 0) {
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		gid->raw[12] = 127;
		gid->raw[15] = 1;
	} else {
		gid->raw[15] = 1;
	}
}

/* Two GIDs are populated; the rest of the profile's table reads as zeros, as an empty entry does. */
#define SOFT_GIDS 2

int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	(void)context;
	if (port_num != 1 || index < 0 || index >= soft_profile()->gid_tbl_len) {
		errno = EINVAL;
		return -1;
	}
	if (index < SOFT_GIDS)
		soft_fill_gid(gid, index);
	else
		memset(gid, 0, sizeof(*gid));
	return 0;
}

/* Both GIDs are RoCEv2 GIDs of the loopback interface (ifindex 1). */
static void fill_gid_entry(struct ibv_gid_entry *entry, uint32_t index)
{
	memset(entry, 0, sizeof(*entry));
	soft_fill_gid(&entry->gid, (int)index);
	entry->gid_index = index;
	entry->port_num = 1;
	entry->gid_type = IBV_GID_TYPE_ROCE_V2;
	entry->ndev_ifindex = 1;
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
		      struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	(void)context;
	if (port_num != 1 || gid_index >= (uint32_t)soft_profile()->gid_tbl_len || flags ||
	    entry_size < sizeof(*entry))
		return EINVAL;
	if (gid_index >= SOFT_GIDS)
		return ENODATA;		/* an empty entry, as rdma-core reports it */
	fill_gid_entry(entry, gid_index);
	return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
			     size_t max_entries, uint32_t flags, size_t entry_size)
{
	uint32_t i;

	(void)context;
	if (flags || entry_size < sizeof(*entries))
		return -EINVAL;
	/* A table that cannot hold every valid entry: the kernel's -EINVAL. */
	if (max_entries < SOFT_GIDS)
		return -EINVAL;
	for (i = 0; i < SOFT_GIDS; i++)
		fill_gid_entry(&entries[i], i);
	return SOFT_GIDS;
}

int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	(void)context;
	if (port_num != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(0xffff);
	return 0;
}

/* The index of @pkey in the port's table, which holds the default P_Key only; or -1. */
int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	__be16 have;

	if (ibv_query_pkey(context, port_num, 0, &have))
		return -1;
	return have == pkey ? 0 : -1;
}

/*
 * A context's cmd_fd, where the kernel's would be a uverbs character
 * device: programs dup() it to import the context elsewhere
 * (ibv_import_device()), which softrdma0 refuses. A character device
 * nobody mistakes for another's (SOFT_CMD_FD_DEV); -1 if it cannot open.
 */
static int soft_cmd_fd_open(void)
{
	return open(SOFT_CMD_FD_DEV, O_RDWR | O_CLOEXEC);
}

static void soft_cmd_fd_close(int fd)
{
	if (fd >= 0)
		close(fd);
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct soft_context *sctx;
	struct ibv_context *ctx;

	if (device != &soft_vdev.device) {
		errno = ENODEV;
		return NULL;
	}
	sctx = calloc(1, sizeof(*sctx));
	if (!sctx) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&sctx->async_lock, NULL);
	if (evq_init(&sctx->async_q, &sctx->async_lock)) {
		pthread_mutex_destroy(&sctx->async_lock);
		free(sctx);
		errno = EMFILE;
		return NULL;
	}
	sctx->vctx.sz = sizeof(struct verbs_context);
	sctx->vctx.query_port = soft_query_port;
	sctx->vctx.query_device_ex = soft_query_device_ex;
	ext_set_ops(&sctx->vctx);
	ctx = &sctx->vctx.context;
	ctx->device = device;
	ctx->cmd_fd = soft_cmd_fd_open();
	ctx->async_fd = sctx->async_q.fd;
	ctx->num_comp_vectors = 1;
	ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
	pthread_mutex_init(&ctx->mutex, NULL);
	ctx->ops.alloc_mw = soft_alloc_mw;
	ctx->ops.bind_mw = soft_bind_mw;
	ctx->ops.dealloc_mw = soft_dealloc_mw;
	ctx->ops.poll_cq = soft_poll_cq;
	ctx->ops.req_notify_cq = soft_req_notify_cq;
	ctx->ops.post_srq_recv = soft_post_srq_recv;
	ctx->ops.post_send = soft_post_send;
	ctx->ops.post_recv = soft_post_recv;

	fab_lock();
	fab.counts.contexts++;
	fab_get_user_locked();
	fab_unlock();
	return ctx;
}

int ibv_close_device(struct ibv_context *context)
{
	struct soft_context *sctx = to_sctx(context);
	int cmd_fd = context->cmd_fd;

	fab_lock();
	if (sctx->objects) {
		fab_unlock();
#ifdef SOFTRDMA_DROPIN
		/*
		 * rdma-core closes a context whatever is left on it (the kernel
		 * cleans up behind the program), and programs we did not write
		 * count on it (perftest leaks a CQ, then fails if the close
		 * does): what is left, and the context, stay until the process
		 * exits.
		 */
		return 0;
#else
		/* The kernel would clean up behind a leak; a test double reports it instead. */
		return EBUSY;
#endif
	}
	/* Every object it held is gone, and with it its events. */
	fab.counts.contexts--;
	fab_put_user_locked();
	pthread_mutex_lock(&sctx->async_lock);
	if (!evq_retire_locked(&sctx->async_q)) {
		pthread_mutex_unlock(&sctx->async_lock);
		fab_unlock();
		soft_cmd_fd_close(cmd_fd);
		return 0;
	}
	pthread_mutex_unlock(&sctx->async_lock);
	fab_unlock();
	soft_cmd_fd_close(cmd_fd);
	evq_fini(&sctx->async_q);
	pthread_mutex_destroy(&sctx->async_lock);
	pthread_mutex_destroy(&context->mutex);
	free(sctx);
	return 0;
}

static void *event_object(const struct ibv_async_event *ev)
{
	switch (ev->event_type) {
	case IBV_EVENT_CQ_ERR:
		return ev->element.cq;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return ev->element.srq;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return ev->element.qp;
	default:
		return NULL;
	}
}

/* The slot of obj that holds events of this type, or NULL if it raises none. */
static struct soft_async_event *async_slot(enum ibv_event_type type, void *obj)
{
	switch (type) {
	case IBV_EVENT_CQ_ERR:
		return &to_scq(obj)->err_event;
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return &to_ssrq(obj)->limit_event;
	case IBV_EVENT_QP_FATAL:
		return &to_sqp(obj)->events[SOFT_QPEV_FATAL];
	case IBV_EVENT_QP_REQ_ERR:
		return &to_sqp(obj)->events[SOFT_QPEV_REQ_ERR];
	case IBV_EVENT_QP_ACCESS_ERR:
		return &to_sqp(obj)->events[SOFT_QPEV_ACCESS_ERR];
	case IBV_EVENT_COMM_EST:
		return &to_sqp(obj)->events[SOFT_QPEV_COMM_EST];
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return &to_sqp(obj)->events[SOFT_QPEV_LAST_WQE];
	default:
		return NULL;
	}
}

void async_event_locked(struct ibv_context *ctx, enum ibv_event_type type, void *obj)
{
	struct soft_async_event *e = async_slot(type, obj);
	struct soft_context *sctx = to_sctx(ctx);

	if (!e)
		return;
	/* The reader copies e->ev under the queue's lock. */
	pthread_mutex_lock(&sctx->async_lock);
	e->ev.event_type = type;
	switch (type) {
	case IBV_EVENT_CQ_ERR:
		e->ev.element.cq = obj;
		break;
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		e->ev.element.srq = obj;
		break;
	default:
		e->ev.element.qp = obj;
		break;
	}
	evq_raise_locked(&sctx->async_q, &e->node, true);
	pthread_mutex_unlock(&sctx->async_lock);
}

void async_forget_locked(struct ibv_context *ctx, void *obj)
{
	struct soft_context *sctx = to_sctx(ctx);
	struct soft_evq *q = &sctx->async_q;
	struct soft_list *pos, *tmp;

	pthread_mutex_lock(&sctx->async_lock);
	soft_list_for_each_safe(pos, tmp, &q->items) {
		struct soft_async_event *e = container_of(pos, struct soft_async_event, node.link);

		if (event_object(&e->ev) == obj)
			evq_cancel_locked(q, &e->node);
	}
	pthread_mutex_unlock(&sctx->async_lock);
}

void async_settle_locked(struct ibv_context *ctx, void *obj, const unsigned int *read,
			 const unsigned int *acked)
{
	for (;;) {
		async_forget_locked(ctx, obj);
		if (*acked >= __atomic_load_n(read, __ATOMIC_RELAXED))
			return;
		fab_wait_locked(&fab.ack_cv, NULL);
	}
}

/* The read and acked counts of the object an event is about (NULL: none). */
static unsigned int *async_counts(const struct ibv_async_event *ev, unsigned int **acked,
				  uint32_t **completed)
{
	void *obj = event_object(ev);

	if (!obj)
		return NULL;
	if (ev->event_type == IBV_EVENT_CQ_ERR) {
		struct soft_cq *cq = to_scq(obj);

		*acked = &cq->async_acked;
		*completed = &cq->cq.async_events_completed;
		return &cq->async_read;
	}
	if (ev->event_type == IBV_EVENT_SRQ_ERR ||
	    ev->event_type == IBV_EVENT_SRQ_LIMIT_REACHED) {
		struct soft_srq *srq = to_ssrq(obj);

		*acked = &srq->async_acked;
		*completed = &srq->srq.events_completed;
		return &srq->async_read;
	}
	*acked = &to_sqp(obj)->async_acked;
	*completed = &to_sqp(obj)->qp.events_completed;
	return &to_sqp(obj)->async_read;
}

int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct soft_context *sctx = to_sctx(context);
	struct soft_list *node;
	struct soft_async_event *e;
	unsigned int *read, *acked;
	uint32_t *completed;

	/* The queue's lock alone (soft_context): the engine may run meanwhile. */
	pthread_mutex_lock(&sctx->async_lock);
	node = evq_pop_locked(&sctx->async_q);
	if (!node) {
		pthread_mutex_unlock(&sctx->async_lock);
		return -1;
	}
	e = container_of(node, struct soft_async_event, node.link);
	evq_taken_locked(&sctx->async_q, &e->node);
	*event = e->ev;
	/* Counted before the lock goes: a destroyer that forgets after it waits for the ack. */
	read = async_counts(event, &acked, &completed);
	if (read)
		__atomic_add_fetch(read, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&sctx->async_lock);
	return 0;
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
	unsigned int *read, *acked;
	uint32_t *completed;

	fab_lock();
	read = async_counts(event, &acked, &completed);
	if (read) {
		*acked += 1;
		*completed += 1;
	}
	pthread_cond_broadcast(&fab.ack_cv);
	fab_unlock();
}
