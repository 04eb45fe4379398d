/* SPDX-License-Identifier: MIT */
/*
 * CM event faults at delivery (softrdma_cm_fault_set()). A delayed event
 * waits on its channel's held list until a release unit of its own runs
 * (THREAD and ASYNC mode: not before its time; STEP mode: at its turn). A
 * channel keeps its order: once an event is held, every later event on that
 * channel is held behind it and released no sooner, so the application reads
 * them as the fabric raised them, only later. A duplicated event is a second
 * soft_cm_event, a copy of the first, queued right behind it.
 */
#include <stdlib.h>

#include "cm.h"

static void release_locked(struct soft_cm_event *e)
{
	struct soft_cm_channel *ch = e->held_on;

	e->held_on = NULL;
	evq_push_locked(&ch->q, &e->link);
}

/*
 * Release the held events of the channel up to and including @last. Units
 * run in the order of their times and sequence numbers, which the held list
 * shares, so those before @last are normally out already; any that are not
 * go now, ahead of it, and their own units with them.
 */
static void release_run(struct soft_work *w)
{
	struct soft_cm_event *last = container_of(w, struct soft_cm_event, release);
	struct soft_cm_channel *ch = last->held_on;

	for (;;) {
		struct soft_cm_event *e =
			soft_list_pop_entry(&ch->held, struct soft_cm_event, link);

		if (e != last)
			soft_list_del(&e->release.link);
		release_locked(e);
		if (e == last)
			return;
	}
}

/* The process exits with the event still held: nobody will read it. */
static void release_discard(struct soft_work *w)
{
	struct soft_cm_event *e = container_of(w, struct soft_cm_event, release);

	soft_list_del(&e->link);
	free(e);
}

void cm_event_queue_locked(struct soft_cm_channel *ch, struct soft_cm_event *e,
			   uint64_t delay_ns)
{
	uint64_t at;

	if (!delay_ns && soft_list_empty(&ch->held)) {
		evq_push_locked(&ch->q, &e->link);
		return;
	}
	at = delay_ns ? soft_now_ns() + delay_ns : 0;
	if (!soft_list_empty(&ch->held)) {
		const struct soft_cm_event *prev =
			soft_list_entry(ch->held.prev, struct soft_cm_event, link);

		if (prev->release.not_before > at)
			at = prev->release.not_before;
	}
	e->held_on = ch;
	e->release.not_before = at;
	e->release.run = release_run;
	e->release.discard = release_discard;
	e->release.qp = NULL;
	soft_list_add_tail(&e->link, &ch->held);
	work_queue_locked(&e->release);
}

struct soft_cm_event *cm_event_copy(const struct soft_cm_event *e)
{
	struct soft_cm_event *copy = malloc(sizeof(*copy));

	if (!copy)
		return NULL;
	*copy = *e;
	/* The copy's private data is its own: acking one event frees only its bytes. */
	if (e->ev.param.conn.private_data)
		copy->ev.param.conn.private_data = copy->pdata;
	return copy;
}

void cm_held_forget_locked(struct soft_cm_channel *ch, const struct soft_cm_id *id)
{
	struct soft_list *pos, *tmp;

	soft_list_for_each_safe(pos, tmp, &ch->held) {
		struct soft_cm_event *e = soft_list_entry(pos, struct soft_cm_event, link);

		if (id && e->owner != id)
			continue;
		soft_list_del(pos);
		soft_list_del(&e->release.link);
		free(e);
		fab_cm_count_locked(FAB_CM_UNACKED, -1);
	}
}

void cm_held_release_id_locked(struct soft_cm_channel *ch, const struct soft_cm_id *id)
{
	struct soft_list *pos, *tmp;

	soft_list_for_each_safe(pos, tmp, &ch->held) {
		struct soft_cm_event *e = soft_list_entry(pos, struct soft_cm_event, link);

		if (e->owner != id)
			continue;
		soft_list_del(pos);
		soft_list_del(&e->release.link);
		release_locked(e);
	}
}
