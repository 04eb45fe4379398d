/* SPDX-License-Identifier: MIT */
/*
 * rdma_cm internals. A connection is a conversation of CM messages (REQ, REP,
 * RTU, REJ, DREQ) that travel through the fabric as progress units, so that
 * STEP mode can hold them back and THREAD mode delivers them asynchronously,
 * as the kernel's CM does. Each message ends in an event on a channel.
 */
#ifndef SOFT_CM_H
#define SOFT_CM_H

#include <sys/socket.h>

#include "soft.h"

/* IB CM private data sizes less the rdma_cm header: what IB and RoCE deliver. */
#define CM_REQ_PDATA	56
#define CM_REP_PDATA	196
#define CM_REJ_PDATA	148

enum cm_state {
	CM_IDLE,
	CM_BOUND,
	CM_ADDR_QUERY,
	CM_ADDR_RESOLVED,
	CM_ROUTE_QUERY,
	CM_ROUTE_RESOLVED,
	CM_LISTEN,
	CM_CONNECT,		/* active: REQ sent */
	CM_REQ_RCVD,		/* passive: CONNECT_REQUEST delivered */
	CM_ACCEPTED,		/* passive: REP sent, waiting for RTU */
	CM_REP_RCVD,		/* active without QP: CONNECT_RESPONSE, waiting for rdma_establish */
	CM_ESTABLISHED,
	CM_DISCONNECTED,
};

struct soft_cm_channel {
	struct rdma_event_channel ch;
	struct soft_evq q;
	unsigned int ids;
};

struct soft_cm_event {
	struct rdma_cm_event ev;
	struct list_node link;
	struct soft_cm_id *owner;
	uint8_t pdata[CM_REP_PDATA];
};

/* What each side asked for in REQ / REP, from the sender's point of view. */
struct cm_params {
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t flow_control;
	uint8_t srq;
	uint32_t qp_num;
};

struct soft_cm_id {
	struct rdma_cm_id id;
	struct soft_cm_channel *ch;
	enum cm_state state;
	struct list_node link;		/* fab.cm_ids */
	struct soft_cm_id *peer;
	struct soft_cm_id *listener;	/* passive ids: the listener that spawned them */
	bool port_held;
	bool reuseaddr;
	bool afonly;
	bool own_cqs;			/* rdma_create_qp made the CQs and channels */
	bool disconnect_seen;		/* DISCONNECTED already queued for this id */
	bool destroying;
	int backlog;
	unsigned int events_read;
	unsigned int events_acked;
	/* Negotiated, from this side's point of view, applied to its QP. */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint32_t peer_qpn;
	struct cm_params mine;		/* what this side sent in its REQ or REP */
	struct ibv_sa_path_rec path;
};

enum cm_work_kind {
	CMW_ADDR,		/* address resolution done */
	CMW_ROUTE,		/* route resolution done */
	CMW_REQ,		/* client -> listener */
	CMW_REP,		/* server -> client */
	CMW_RTU,		/* client -> server */
	CMW_REJ,		/* -> the other side: REJECTED */
	CMW_DREQ,		/* -> target: DISCONNECTED */
	CMW_TIMEWAIT,		/* -> target: TIMEWAIT_EXIT */
};

struct soft_cm_work {
	struct soft_work work;
	enum cm_work_kind kind;
	struct soft_cm_id *target;
	struct soft_cm_id *from;
	int status;
	struct cm_params params;
	uint8_t pdata[CM_REP_PDATA];
	uint8_t pdata_len;
};

static inline struct soft_cm_id *to_scm(struct rdma_cm_id *id)
{
	return container_of(id, struct soft_cm_id, id);
}

/* cm_channel.c */
void cm_deliver_locked(struct soft_cm_id *id, enum rdma_cm_event_type type, int status,
		       const struct cm_params *params, const void *pdata, uint8_t pdata_len,
		       uint8_t padded_len, struct soft_cm_id *listen);
void cm_forget_events_locked(struct soft_cm_id *id);
struct soft_cm_work *cm_work_new_locked(enum cm_work_kind kind, struct soft_cm_id *target,
					struct soft_cm_id *from);
/* Is this unit a CM message (cm_work_run)? */
struct soft_cm_work *cm_work_of(struct soft_work *w);

/* cm_id.c */
bool cm_addr_is_loopback(const struct sockaddr *sa);
bool cm_addr_is_any(const struct sockaddr *sa);
socklen_t cm_addr_len(const struct sockaddr *sa);
uint16_t cm_addr_port(const struct sockaddr *sa);
struct soft_cm_id *cm_find_listener_locked(const struct sockaddr *dst, enum rdma_port_space ps);
void cm_set_device_locked(struct soft_cm_id *id);
/*
 * The device context rdma_cm ids share, open for the life of the process;
 * each id holds a reference on its default PD (see cm_id.c).
 */
int cm_device_get(void);
void cm_device_put(void);
void cm_addr_done_locked(struct soft_cm_id *sid, int status);
void cm_route_done_locked(struct soft_cm_id *sid);

/* cm_conn.c */
struct soft_cm_id *cm_id_alloc(struct soft_cm_channel *ch, void *context,
			       enum rdma_port_space ps);
void cm_id_link_locked(struct soft_cm_id *sid);
int cm_qp_init_attr_locked(struct soft_cm_id *sid, struct ibv_qp_attr *attr, int *mask);
void cm_id_teardown_locked(struct soft_cm_id *sid);
void cm_work_run(struct soft_work *work);
extern const struct soft_cm_ops cm_ops;

#endif /* SOFT_CM_H */
