/* SPDX-License-Identifier: MIT */
/* rdma_cm event channels: pollable fds, event delivery, get and ack. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"

/*
 * Destroyed channels are kept, closed, and never freed. A program may call
 * rdma_get_cm_event() on a channel another of its threads is destroying:
 * rping's cm thread does as the program ends, and exits the process with
 * an error when the call fails. With rdma-core that thread is nearly always
 * blocked in read() by then, and stays blocked until the process exits;
 * here the call must not read freed memory, and blocks the same way (in a
 * cancellation point) rather than fail. That thread may still be entering
 * the call while the process exits, so not even a destructor frees them
 * (it did, and rping under ASan read one freed at exit): the list below
 * keeps them reachable for leak checkers. Guarded by the fabric lock.
 */
static struct soft_cm_channel *closed_channels;

struct soft_cm_channel *cm_channel_new_locked(void)
{
	struct soft_cm_channel *sch = calloc(1, sizeof(*sch));

	if (!sch) {
		errno = ENOMEM;
		return NULL;
	}
	if (evq_init(&sch->q, NULL)) {
		free(sch);
		errno = EMFILE;
		return NULL;
	}
	sch->ch.fd = sch->q.fd;
	soft_list_init(&sch->held);
	fab_set_cm_ops_locked(&cm_ops);
	fab_cm_count_locked(FAB_CM_CHANNELS, 1);
	fab_get_user_locked();
	return sch;
}

struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct soft_cm_channel *sch;

	fab_lock();
	sch = cm_channel_new_locked();
	fab_unlock();
	return sch ? &sch->ch : NULL;
}

void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct soft_cm_channel *sch = container_of(channel, struct soft_cm_channel, ch);
	struct soft_list *node, *pos, *tmp;

	fab_lock();
	/* Ids still on the channel stop receiving events rather than write to freed memory. */
	soft_list_for_each_safe(pos, tmp, &cm_state.ids) {
		struct soft_cm_id *sid = soft_list_entry(pos, struct soft_cm_id, link);

		if (sid->ch == sch)
			sid->ch = NULL;
		if (sid->req_ch == sch)
			sid->req_ch = NULL;
	}
	while ((node = soft_list_pop(&sch->q.items))) {
		free(soft_list_entry(node, struct soft_cm_event, link));
		fab_cm_count_locked(FAB_CM_UNACKED, -1);
	}
	cm_held_forget_locked(sch, NULL);
	fab_cm_count_locked(FAB_CM_CHANNELS, -1);
	fab_put_user_locked();
	if (!evq_retire_locked(&sch->q)) {
		fab_unlock();
		return;
	}
	evq_fini(&sch->q);
	sch->closed = true;
	sch->next_closed = closed_channels;
	closed_channels = sch;
	fab_unlock();
}

void cm_deliver_locked(struct soft_cm_id *id, enum rdma_cm_event_type type, int status,
		       const struct cm_params *params, const void *pdata, uint8_t pdata_len,
		       uint8_t padded_len, struct soft_cm_id *listen)
{
	struct fault_cm_verdict v;
	struct soft_cm_event *e, *copy = NULL;

	if (!id->ch || id->destroying)
		return;
	fault_cm_event_locked(type, &v);
	if (v.drop)
		return;
	e = calloc(1, sizeof(*e));
	if (!e)
		return;
	e->owner = id;
	e->ev.id = &id->id;
	e->ev.listen_id = listen ? &listen->id : NULL;
	e->ev.event = type;
	e->ev.status = status;
	if (params) {
		e->ev.param.conn.responder_resources = params->responder_resources;
		e->ev.param.conn.initiator_depth = params->initiator_depth;
		e->ev.param.conn.flow_control = params->flow_control;
		e->ev.param.conn.retry_count = params->retry_count;
		e->ev.param.conn.rnr_retry_count = params->rnr_retry_count;
		e->ev.param.conn.srq = params->srq;
		e->ev.param.conn.qp_num = params->qp_num;
	}
	if (padded_len) {
		/* IB CM messages have fixed-size private data: the rest reads as zeros. */
		memcpy(e->pdata, pdata, pdata_len);
		e->ev.param.conn.private_data = e->pdata;
		e->ev.param.conn.private_data_len = padded_len;
	}
	/* A UD id's events carry param.ud instead (cm_ud.c). */
	if (cm_id_is_ud(id))
		cm_ud_event_params_locked(id, &e->ev);
	if (v.duplicate)
		copy = cm_event_copy(e);
	cm_event_queue_locked(id->ch, e, v.delay_ns);
	fab_cm_count_locked(FAB_CM_UNACKED, 1);
	if (copy) {
		cm_event_queue_locked(id->ch, copy, v.delay_ns);
		fab_cm_count_locked(FAB_CM_UNACKED, 1);
	}
}

static void forget_on_locked(struct soft_cm_channel *ch, struct soft_cm_id *id)
{
	struct soft_list *pos, *tmp;

	soft_list_for_each_safe(pos, tmp, &ch->q.items) {
		struct soft_cm_event *e = soft_list_entry(pos, struct soft_cm_event, link);

		if (e->owner == id) {
			evq_forget_locked(&ch->q, pos);
			free(e);
			fab_cm_count_locked(FAB_CM_UNACKED, -1);
		}
	}
}

void cm_forget_events_locked(struct soft_cm_id *id)
{
	if (id->ch) {
		forget_on_locked(id->ch, id);
		cm_held_forget_locked(id->ch, id);
	}
	if (id->req_ch && id->req_ch != id->ch) {
		forget_on_locked(id->req_ch, id);
		cm_held_forget_locked(id->req_ch, id);
	}
}

int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct soft_cm_channel *sch = container_of(channel, struct soft_cm_channel, ch);
	struct net_link *link;
	struct soft_list *node;
	struct soft_cm_event *e;

	if (!event) {
		errno = EINVAL;
		return -1;
	}
	fab_lock();
	if (sch->closed) {
		fab_unlock();
		for (;;)
			poll(NULL, 0, -1);
	}
	node = evq_pop_locked(&sch->q);
	if (!node) {
		fab_unlock();
		return -1;
	}
	e = soft_list_entry(node, struct soft_cm_event, link);
	e->owner->events_read++;
	*event = &e->ev;
	/*
	 * What the fabric sent for the id on the way to this event (the RTU
	 * of an ESTABLISHED) is out before the application sees it, as
	 * librdmacm sends the RTU from rdma_get_cm_event() itself.
	 */
	link = cm_net_hold_locked(e->owner);
	fab_unlock();
	cm_net_flush(link);
	return 0;
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct soft_cm_event *e;

	if (!event) {
		errno = EINVAL;
		return -1;
	}
	e = container_of(event, struct soft_cm_event, ev);
	fab_lock();
	/* The owner cannot be gone: rdma_destroy_id waits for this ack. */
	e->owner->events_acked++;
	fab_cm_count_locked(FAB_CM_UNACKED, -1);
	fab_ack_locked();
	fab_unlock();
	free(e);
	return 0;
}

/* As librdmacm: a NULL channel makes the id synchronous, with a channel of its own. */
int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct soft_cm_id *sid = to_scm(id);
	struct soft_cm_channel *to, *own = NULL;
	struct soft_list *pos, *tmp;

	if (!channel && sid->sync) {
		errno = EINVAL;
		return -1;
	}
	if (sid->sync && id->event) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	fab_lock();
	to = channel ? container_of(channel, struct soft_cm_channel, ch) : cm_channel_new_locked();
	if (!to) {
		fab_unlock();
		return -1;
	}
	while (sid->events_acked < sid->events_read)
		fab_wait_ack_locked();
	if (sid->ch) {
		/*
		 * Events not yet read follow the id, as the kernel moves them;
		 * those held back (a DELAY fault) go out first, to move too.
		 */
		cm_held_release_id_locked(sid->ch, sid);
		soft_list_for_each_safe(pos, tmp, &sid->ch->q.items) {
			struct soft_cm_event *e = soft_list_entry(pos, struct soft_cm_event, link);

			if (e->owner == sid) {
				evq_forget_locked(&sid->ch->q, pos);
				evq_push_locked(&to->q, &e->link);
			}
		}
		sid->ch->ids--;
	}
	if (sid->sync)
		own = sid->ch;
	sid->ch = to;
	sid->sync = channel == NULL;
	to->ids++;
	id->channel = &to->ch;
	fab_unlock();
	if (own)
		rdma_destroy_event_channel(&own->ch);
	return 0;
}

static void cm_work_discard(struct soft_work *work)
{
	cm_work_free_locked(container_of(work, struct soft_cm_work, work));
}

struct soft_cm_work *cm_work_new_locked(enum cm_work_kind kind, struct soft_cm_id *target,
					struct soft_cm_id *from)
{
	struct soft_cm_work *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->kind = kind;
	w->target = target;
	w->from = from;
	w->work.run = cm_work_run;
	w->work.discard = cm_work_discard;
	work_queue_locked(&w->work);
	return w;
}

void cm_work_free_locked(struct soft_cm_work *w)
{
	if (w->conn)
		net_link_put_locked(w->conn);
	free(w->addr);
	free(w);
}

struct soft_cm_work *cm_work_of(struct soft_work *w)
{
	return w->run == cm_work_run ? container_of(w, struct soft_cm_work, work) : NULL;
}
