/* SPDX-License-Identifier: MIT */
/*
 * softrdma conformance: CM event faults (softrdma_cm_fault_set()). Delayed
 * events arrive no sooner than their delay and keep their channel's order;
 * duplicated events come twice, each a valid event of its own to ack;
 * held events of a destroyed id vanish; bad arguments are refused. In STEP,
 * THREAD and ASYNC mode; nothing is left behind (softrdma_get_counts()).
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "harness.h"

#define DELAY_MS	150
/* However loaded the machine (valgrind included), a delayed event comes within this. */
#define BOUND_MS	3000

static struct h_conn c;
static struct softrdma_counts baseline;

static bool timed(void)
{
	return softrdma_get_mode() != SOFTRDMA_MODE_STEP;
}

static int arm(enum rdma_cm_event_type type, enum softrdma_cm_fault_kind kind,
	       unsigned int count, unsigned int delay_ms)
{
	struct softrdma_cm_fault f = { .event = type, .kind = kind, .count = count,
				       .delay_ms = delay_ms };

	return softrdma_cm_fault_set(&f);
}

static int open_listener(void **state)
{
	(void)state;
	softrdma_get_counts(&baseline);
	h_cm_listen(&c);
	return 0;
}

static int close_listener(void **state)
{
	struct softrdma_counts now;

	(void)state;
	assert_int_equal(softrdma_fault_remove(0), 0);
	h_cm_close(&c);
	softrdma_get_counts(&now);
	/* rdma_cm opens its device context at the first id, for the life of the process. */
	assert_true(now.contexts <= baseline.contexts + 1);
	now.contexts = baseline.contexts;
	assert_memory_equal(&now, &baseline, sizeof(now));
	return 0;
}

static void test_cm_fault_api(void **state)
{
	struct softrdma_cm_fault f = { .event = RDMA_CM_EVENT_ESTABLISHED,
				       .kind = SOFTRDMA_CM_FAULT_DELAY, .count = 1 };

	(void)state;
	assert_int_equal(softrdma_cm_fault_set(NULL), -EINVAL);
	/* A delay needs a time, within the cap. */
	assert_int_equal(softrdma_cm_fault_set(&f), -EINVAL);
	f.delay_ms = SOFTRDMA_CM_DELAY_MAX_MS + 1;
	assert_int_equal(softrdma_cm_fault_set(&f), -EINVAL);
	f.delay_ms = SOFTRDMA_CM_DELAY_MAX_MS;
	assert_int_equal(softrdma_cm_fault_set(&f), 0);
	assert_int_equal(softrdma_cm_fault_left(RDMA_CM_EVENT_ESTABLISHED,
						SOFTRDMA_CM_FAULT_DELAY), 1);
	/* Count 0 disarms, with or without a delay. */
	f.count = 0;
	f.delay_ms = 0;
	assert_int_equal(softrdma_cm_fault_set(&f), 0);
	assert_int_equal(softrdma_cm_fault_left(RDMA_CM_EVENT_ESTABLISHED,
						SOFTRDMA_CM_FAULT_DELAY), 0);
	/* Only a delay has a time. */
	assert_int_equal(arm(RDMA_CM_EVENT_ESTABLISHED, SOFTRDMA_CM_FAULT_DUPLICATE, 1, 5),
			 -EINVAL);
	assert_int_equal(arm(RDMA_CM_EVENT_ESTABLISHED, SOFTRDMA_CM_FAULT_DROP, 1, 5), -EINVAL);
	assert_int_equal(arm((enum rdma_cm_event_type)99, SOFTRDMA_CM_FAULT_DROP, 1, 0),
			 -EINVAL);
	assert_int_equal(arm(RDMA_CM_EVENT_ESTABLISHED, (enum softrdma_cm_fault_kind)7, 1, 0),
			 -EINVAL);
	assert_int_equal(softrdma_cm_fault_left((enum rdma_cm_event_type)99,
						SOFTRDMA_CM_FAULT_DROP), -EINVAL);
	assert_int_equal(softrdma_cm_fault_left(RDMA_CM_EVENT_ESTABLISHED,
						(enum softrdma_cm_fault_kind)7), -EINVAL);
	/* The old call is a DROP; setting again replaces; remove(0) disarms them all. */
	assert_int_equal(softrdma_cm_drop_events(RDMA_CM_EVENT_REJECTED, 2), 0);
	assert_int_equal(softrdma_cm_fault_left(RDMA_CM_EVENT_REJECTED, SOFTRDMA_CM_FAULT_DROP),
			 2);
	assert_int_equal(arm(RDMA_CM_EVENT_REJECTED, SOFTRDMA_CM_FAULT_DROP, 5, 0), 0);
	assert_int_equal(softrdma_cm_fault_left(RDMA_CM_EVENT_REJECTED, SOFTRDMA_CM_FAULT_DROP),
			 5);
	assert_int_equal(arm(RDMA_CM_EVENT_REJECTED, SOFTRDMA_CM_FAULT_DUPLICATE, 3, 0), 0);
	assert_int_equal(softrdma_fault_remove(0), 0);
	assert_int_equal(softrdma_cm_fault_left(RDMA_CM_EVENT_REJECTED, SOFTRDMA_CM_FAULT_DROP),
			 0);
	assert_int_equal(softrdma_cm_fault_left(RDMA_CM_EVENT_REJECTED,
						SOFTRDMA_CM_FAULT_DUPLICATE), 0);
}

static void resolve(struct rdma_cm_id **id, struct rdma_event_channel *ch)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(c.port) };

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(rdma_create_id(ch, id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(*id, NULL, (struct sockaddr *)&sin, 1000), 0);
}

static void assert_quiet(struct rdma_event_channel *ch, int ms)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };

	assert_int_equal(poll(&pfd, 1, ms), 0);
}

/*
 * Two ids on one channel resolve; only the first one's ADDR_RESOLVED is
 * delayed. Neither arrives before the delay, and the second, undelayed,
 * still comes after the first: the channel keeps its order.
 */
static void test_delay_keeps_order(void **state)
{
	struct rdma_cm_id *a, *b;
	struct rdma_cm_event *ev;
	uint64_t start;

	(void)state;
	assert_int_equal(arm(RDMA_CM_EVENT_ADDR_RESOLVED, SOFTRDMA_CM_FAULT_DELAY, 1, DELAY_MS),
			 0);
	start = h_now_ms();
	resolve(&a, c.cch);
	resolve(&b, c.cch);
	if (timed()) {
		assert_quiet(c.cch, DELAY_MS / 2);
	} else {
		/* Both resolutions have run; their events are still held. */
		assert_int_equal(softrdma_progress(2), 2);
		assert_quiet(c.cch, 0);
	}
	ev = h_cm_get(c.cch);
	assert_true(!timed() || h_now_ms() - start >= DELAY_MS);
	assert_true(h_now_ms() - start < BOUND_MS);
	assert_ptr_equal(ev->id, a);
	assert_int_equal(ev->event, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	ev = h_cm_get(c.cch);
	assert_ptr_equal(ev->id, b);
	assert_int_equal(ev->event, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(softrdma_cm_fault_left(RDMA_CM_EVENT_ADDR_RESOLVED,
						SOFTRDMA_CM_FAULT_DELAY), 0);
	/* The id moved on meanwhile, as the kernel's state does: it resolves its route. */
	assert_int_equal(rdma_resolve_route(a, 1000), 0);
	h_cm_expect(c.cch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_int_equal(rdma_destroy_id(a), 0);
	assert_int_equal(rdma_destroy_id(b), 0);
}

/* Both sides' ESTABLISHED late: the connection is whole, only its news is slow. */
static void test_delay_established(void **state)
{
	uint64_t start;

	(void)state;
	assert_int_equal(arm(RDMA_CM_EVENT_ESTABLISHED, SOFTRDMA_CM_FAULT_DELAY, 2, DELAY_MS),
			 0);
	start = h_now_ms();
	h_cm_connect(&c, NULL, 0);
	assert_true(!timed() || h_now_ms() - start >= DELAY_MS);
	assert_true(h_now_ms() - start < BOUND_MS);
	assert_int_equal(h_qp_state(c.client->qp), IBV_QPS_RTS);
	assert_int_equal(h_qp_state(c.server->qp), IBV_QPS_RTS);
	assert_int_equal(softrdma_cm_fault_left(RDMA_CM_EVENT_ESTABLISHED,
						SOFTRDMA_CM_FAULT_DELAY), 0);
}

/*
 * DISCONNECTED held for a minute on both sides; the ids are destroyed
 * first: their held events go with them, unread, and nothing waits. Not
 * in STEP mode, where a held event comes at the next unit: stepping to
 * the DISCONNECTEDs would deliver them.
 */
static void test_delayed_event_of_destroyed_id(void **state)
{
	uint64_t deadline = h_now_ms() + BOUND_MS;
	struct softrdma_counts counts;
	uint64_t start;

	(void)state;
	if (!timed())
		skip();
	h_cm_connect(&c, NULL, 0);
	assert_int_equal(arm(RDMA_CM_EVENT_DISCONNECTED, SOFTRDMA_CM_FAULT_DELAY, 2,
			     SOFTRDMA_CM_DELAY_MAX_MS), 0);
	assert_int_equal(rdma_disconnect(c.client), 0);
	/* Not h_settle(): the fabric is not idle while it holds an event back. */
	while (softrdma_cm_fault_left(RDMA_CM_EVENT_DISCONNECTED, SOFTRDMA_CM_FAULT_DELAY)) {
		assert_true(h_now_ms() < deadline);
		poll(NULL, 0, 1);
	}
	softrdma_get_counts(&counts);
	assert_true(counts.unacked_events >= 2);
	assert_quiet(c.cch, 0);
	assert_quiet(c.sch, 0);
	start = h_now_ms();
	rdma_destroy_qp(c.client);
	assert_int_equal(rdma_destroy_id(c.client), 0);
	rdma_destroy_qp(c.server);
	assert_int_equal(rdma_destroy_id(c.server), 0);
	c.client = c.server = NULL;
	assert_true(h_now_ms() - start < BOUND_MS);
	softrdma_get_counts(&counts);
	assert_int_equal(counts.unacked_events, 0);
}

static struct rdma_cm_event *get_twice(struct rdma_event_channel *ch,
				       struct rdma_cm_event **second)
{
	struct rdma_cm_event *first = h_cm_get(ch);

	*second = h_cm_get(ch);
	assert_ptr_not_equal(first, *second);
	assert_ptr_equal(first->id, (*second)->id);
	assert_ptr_equal(first->listen_id, (*second)->listen_id);
	assert_int_equal(first->event, (*second)->event);
	assert_int_equal(first->status, (*second)->status);
	return first;
}

/*
 * CONNECT_REQUEST and the client's ESTABLISHED come twice, copies of the
 * originals with private data of their own; each is acked on its own, the
 * server's ESTABLISHED (the count was 1) once.
 */
static void test_duplicate(void **state)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(c.port) };
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct rdma_conn_param param = { .private_data = "dup?", .private_data_len = 5,
					 .responder_resources = 1, .initiator_depth = 1,
					 .retry_count = 3, .rnr_retry_count = 7 };
	struct rdma_cm_event *ev, *copy;
	struct softrdma_counts counts;

	(void)state;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(arm(RDMA_CM_EVENT_CONNECT_REQUEST, SOFTRDMA_CM_FAULT_DUPLICATE, 1, 0),
			 0);
	assert_int_equal(arm(RDMA_CM_EVENT_ESTABLISHED, SOFTRDMA_CM_FAULT_DUPLICATE, 1, 0), 0);
	assert_int_equal(rdma_create_id(c.cch, &c.client, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(c.client, NULL, (struct sockaddr *)&sin, 1000), 0);
	h_cm_expect(c.cch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_resolve_route(c.client, 1000), 0);
	h_cm_expect(c.cch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_int_equal(rdma_create_qp(c.client, NULL, &qa), 0);
	assert_int_equal(rdma_connect(c.client, &param), 0);

	ev = get_twice(c.sch, &copy);
	assert_int_equal(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	assert_ptr_equal(ev->listen_id, c.listen);
	assert_int_equal(copy->param.conn.private_data_len, ev->param.conn.private_data_len);
	assert_ptr_not_equal(copy->param.conn.private_data, ev->param.conn.private_data);
	assert_memory_equal(copy->param.conn.private_data, ev->param.conn.private_data,
			    ev->param.conn.private_data_len);
	assert_string_equal(copy->param.conn.private_data, "dup?");
	assert_int_equal(copy->param.conn.responder_resources,
			 ev->param.conn.responder_resources);
	assert_int_equal(copy->param.conn.qp_num, ev->param.conn.qp_num);
	c.server = ev->id;
	softrdma_get_counts(&counts);
	assert_int_equal(counts.unacked_events, 2);
	/* Acking the original leaves the copy whole. */
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_string_equal(copy->param.conn.private_data, "dup?");
	assert_int_equal(rdma_ack_cm_event(copy), 0);
	assert_int_equal(rdma_create_qp(c.server, NULL, &qa), 0);
	assert_int_equal(rdma_accept(c.server, NULL), 0);

	ev = get_twice(c.cch, &copy);
	assert_int_equal(ev->event, RDMA_CM_EVENT_ESTABLISHED);
	assert_int_equal(rdma_ack_cm_event(copy), 0);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	h_cm_expect(c.sch, RDMA_CM_EVENT_ESTABLISHED);
	h_settle();
	assert_quiet(c.sch, timed() ? 50 : 0);
	assert_quiet(c.cch, 0);
	softrdma_get_counts(&counts);
	assert_int_equal(counts.unacked_events, 0);
	assert_int_equal(softrdma_cm_fault_left(RDMA_CM_EVENT_ESTABLISHED,
						SOFTRDMA_CM_FAULT_DUPLICATE), 0);
}

/* Delayed and duplicated at once: both copies are held, and both come late. */
static void test_delay_and_duplicate(void **state)
{
	struct rdma_cm_event *ev, *copy;
	struct rdma_cm_id *a;
	uint64_t start;

	(void)state;
	assert_int_equal(arm(RDMA_CM_EVENT_ADDR_RESOLVED, SOFTRDMA_CM_FAULT_DELAY, 1, DELAY_MS),
			 0);
	assert_int_equal(arm(RDMA_CM_EVENT_ADDR_RESOLVED, SOFTRDMA_CM_FAULT_DUPLICATE, 1, 0), 0);
	start = h_now_ms();
	resolve(&a, c.cch);
	ev = get_twice(c.cch, &copy);
	assert_true(!timed() || h_now_ms() - start >= DELAY_MS);
	assert_ptr_equal(ev->id, a);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(rdma_ack_cm_event(copy), 0);
	assert_int_equal(rdma_destroy_id(a), 0);
}

/* A drop wins: the event is gone, the duplicate's count waits for the next one. */
static void test_drop_before_duplicate(void **state)
{
	struct rdma_cm_event *ev, *copy;
	struct rdma_cm_id *a, *b;

	(void)state;
	assert_int_equal(softrdma_cm_drop_events(RDMA_CM_EVENT_ADDR_RESOLVED, 1), 0);
	assert_int_equal(arm(RDMA_CM_EVENT_ADDR_RESOLVED, SOFTRDMA_CM_FAULT_DUPLICATE, 1, 0), 0);
	resolve(&a, c.cch);
	resolve(&b, c.cch);
	ev = get_twice(c.cch, &copy);
	assert_ptr_equal(ev->id, b);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(rdma_ack_cm_event(copy), 0);
	h_settle();
	assert_quiet(c.cch, timed() ? 50 : 0);
	assert_int_equal(rdma_destroy_id(a), 0);
	assert_int_equal(rdma_destroy_id(b), 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, open_listener, close_listener)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_cm_fault_api),
		T(test_delay_keeps_order),
		T(test_delay_established),
		T(test_delayed_event_of_destroyed_id),
		T(test_duplicate),
		T(test_delay_and_duplicate),
		T(test_drop_before_duplicate),
	};

	return h_run_all_modes(tests);
}
