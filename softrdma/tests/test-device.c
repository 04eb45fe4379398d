/* SPDX-License-Identifier: MIT */
/* softrdma conformance: the device, its attributes, PDs, strings, mode and counts. */
#include <errno.h>
#include <string.h>

#include "harness.h"

static struct ibv_context *open_dev(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	int n = -1;

	list = ibv_get_device_list(&n);
	assert_non_null(list);
	assert_int_equal(n, 1);
	assert_null(list[1]);
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	assert_non_null(ctx);
	return ctx;
}

static void test_device_list(void **state)
{
	struct ibv_device **list = ibv_get_device_list(NULL);

	(void)state;
	assert_non_null(list);
	assert_string_equal(ibv_get_device_name(list[0]), "softrdma0");
	assert_int_equal(list[0]->node_type, IBV_NODE_CA);
	assert_int_equal(list[0]->transport_type, IBV_TRANSPORT_IB);
	assert_string_equal(ibv_node_type_str(list[0]->node_type), "InfiniBand channel adapter");
	ibv_free_device_list(list);
}

static void test_query_device(void **state)
{
	struct ibv_context *ctx = open_dev();
	struct ibv_device_attr attr;
	struct ibv_device_attr_ex ex;

	(void)state;
	assert_int_equal(ibv_query_device(ctx, &attr), 0);
	/* Windows, and of which type: as rxe and mlx5 report them. */
	assert_true(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
	assert_true(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	assert_true(attr.device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS);
	assert_int_equal(attr.max_qp_rd_atom, 16);
	assert_int_equal(attr.max_qp_init_rd_atom, 16);
	assert_int_equal(attr.max_sge, 32);
	assert_true(attr.max_qp_wr >= 4096);
	assert_true(attr.max_cqe >= 4096);
	assert_true(attr.max_mr_size >= (1ULL << 32));
	assert_int_equal(attr.phys_port_cnt, 1);
	/*
	 * The extended query is the device's own, not the header's fallback
	 * (which zeroes the wider fields): the port count and the capability
	 * flags again, and nothing of what is not modelled.
	 */
	memset(&ex, 0xa5, sizeof(ex));
	assert_int_equal(ibv_query_device_ex(ctx, NULL, &ex), 0);
	assert_memory_equal(&ex.orig_attr, &attr, sizeof(attr));
	assert_int_equal(ex.phys_port_cnt_ex, 1);
	assert_int_equal(ex.device_cap_flags_ex, attr.device_cap_flags);
	assert_int_equal(ex.odp_caps.general_caps, 0);
	assert_int_equal(ex.max_dm_size, 0);
	assert_int_equal(ex.comp_mask, 0);
	{
		struct ibv_query_device_ex_input input = { .comp_mask = 1 };

		assert_int_equal(ibv_query_device_ex(ctx, &input, &ex), EINVAL);
	}
	assert_int_equal(ibv_close_device(ctx), 0);
}

static void test_query_port_and_gid(void **state)
{
	struct ibv_context *ctx = open_dev();
	struct ibv_port_attr pa;
	union ibv_gid gid;
	static const uint8_t mapped[16] = { [10] = 0xff, [11] = 0xff, [12] = 127, [15] = 1 };

	(void)state;
	memset(&pa, 0xff, sizeof(pa));
	assert_int_equal(ibv_query_port(ctx, 1, &pa), 0);
	assert_int_equal(pa.state, IBV_PORT_ACTIVE);
	assert_int_equal(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	assert_int_equal(pa.gid_tbl_len, 2);
	assert_string_equal(ibv_port_state_str(pa.state), "active");
	memset(&pa, 0, sizeof(pa));
	/* The exported compat entry point answers too. */
	assert_int_equal((ibv_query_port)(ctx, 1, (struct _compat_ibv_port_attr *)&pa), 0);
	assert_int_equal(pa.state, IBV_PORT_ACTIVE);
	assert_int_equal(ibv_query_port(ctx, 2, &pa), EINVAL);
	assert_int_equal(ibv_query_gid(ctx, 1, 0, &gid), 0);
	assert_memory_equal(gid.raw, mapped, 16);
	assert_int_equal(ibv_query_gid(ctx, 1, 7, &gid), -1);
	{
		struct ibv_gid_entry entry, table[4];

		assert_int_equal(ibv_query_gid_ex(ctx, 1, 0, &entry, 0), 0);
		assert_memory_equal(entry.gid.raw, mapped, 16);
		assert_int_equal(entry.gid_type, IBV_GID_TYPE_ROCE_V2);
		assert_int_equal(ibv_query_gid_ex(ctx, 1, 2, &entry, 0), EINVAL);
		assert_int_equal(ibv_query_gid_table(ctx, table, 4, 0), 2);
		assert_int_equal(table[1].gid.raw[15], 1);
		/* Too small a table for the valid entries: the kernel's EINVAL. */
		assert_int_equal(ibv_query_gid_table(ctx, table, 1, 0), -EINVAL);
		assert_int_equal(ibv_query_gid_table(ctx, table, 0, 0), -EINVAL);
	}
	assert_int_equal(ibv_close_device(ctx), 0);
}

static void test_pd_busy(void **state)
{
	struct ibv_context *ctx = open_dev();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	static char buf[64];
	struct ibv_mr *mr;

	(void)state;
	assert_non_null(pd);
	mr = h_reg(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

static void test_wc_status_strings(void **state)
{
	static const char *const want[] = {
		"success", "local length error", "local QP operation error",
		"local EE context operation error", "local protection error",
		"Work Request Flushed Error", "memory management operation error",
		"bad response error", "local access error", "remote invalid request error",
		"remote access error", "remote operation error",
		"transport retry counter exceeded", "RNR retry counter exceeded",
		"local RDD violation error", "remote invalid RD request", "aborted error",
		"invalid EE context number", "invalid EE context state", "fatal error",
		"response timeout error", "general error", "TM error", "TM software rendezvous",
	};
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_string_equal(ibv_wc_status_str((enum ibv_wc_status)i), want[i]);
	assert_string_equal(ibv_wc_status_str((enum ibv_wc_status)24), "unknown");
}

static void test_event_strings(void **state)
{
	(void)state;
	assert_string_equal(ibv_event_type_str(IBV_EVENT_CQ_ERR), "CQ error");
	assert_string_equal(ibv_event_type_str(IBV_EVENT_QP_FATAL),
			    "local work queue catastrophic error");
	assert_string_equal(ibv_event_type_str(IBV_EVENT_QP_ACCESS_ERR),
			    "local access violation work queue error");
	assert_string_equal(ibv_event_type_str(IBV_EVENT_QP_LAST_WQE_REACHED),
			    "last WQE reached");
	assert_string_equal(ibv_event_type_str(IBV_EVENT_GID_CHANGE), "GID table change");
	assert_string_equal(ibv_event_type_str(IBV_EVENT_WQ_FATAL), "WQ fatal");
	assert_string_equal(ibv_event_type_str((enum ibv_event_type)20), "unknown");
	assert_string_equal(rdma_event_str(RDMA_CM_EVENT_ADDR_RESOLVED),
			    "RDMA_CM_EVENT_ADDR_RESOLVED");
	assert_string_equal(rdma_event_str(RDMA_CM_EVENT_CONNECT_RESPONSE),
			    "RDMA_CM_EVENT_CONNECT_RESPONSE");
	assert_string_equal(rdma_event_str(RDMA_CM_EVENT_TIMEWAIT_EXIT),
			    "RDMA_CM_EVENT_TIMEWAIT_EXIT");
	assert_string_equal(rdma_event_str((enum rdma_cm_event_type)99), "UNKNOWN EVENT");
	assert_string_equal(ibv_node_type_str(IBV_NODE_UNSPECIFIED), "unspecified");
	assert_string_equal(ibv_node_type_str((enum ibv_node_type)42), "unknown");
}

static void test_mode(void **state)
{
	(void)state;
	assert_int_equal(softrdma_set_mode((enum softrdma_mode)7), -EINVAL);
	assert_int_equal(softrdma_set_mode(SOFTRDMA_MODE_THREAD), 0);
	assert_int_equal(softrdma_get_mode(), SOFTRDMA_MODE_THREAD);
	assert_int_equal(softrdma_progress(10), 0);
	assert_int_equal(softrdma_set_mode(SOFTRDMA_MODE_STEP), 0);
	assert_int_equal(softrdma_get_mode(), SOFTRDMA_MODE_STEP);
	assert_int_equal(softrdma_progress_all(), 0);
}

static void test_counts(void **state)
{
	struct softrdma_counts before, during, after;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_comp_channel *ch;

	(void)state;
	softrdma_get_counts(&before);
	ctx = open_dev();
	pd = ibv_alloc_pd(ctx);
	ch = ibv_create_comp_channel(ctx);
	cq = ibv_create_cq(ctx, 4, NULL, ch, 0);
	assert_non_null(cq);
	softrdma_get_counts(&during);
	assert_int_equal(during.contexts, before.contexts + 1);
	assert_int_equal(during.pds, before.pds + 1);
	assert_int_equal(during.cqs, before.cqs + 1);
	assert_int_equal(during.comp_channels, before.comp_channels + 1);
	assert_int_equal(ibv_destroy_comp_channel(ch), EBUSY);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_destroy_comp_channel(ch), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
	softrdma_get_counts(&after);
	assert_memory_equal(&after, &before, sizeof(after));
}

static int setup(void **state)
{
	(void)state;
	return softrdma_set_mode(SOFTRDMA_MODE_STEP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_device_list),
		cmocka_unit_test(test_query_device),
		cmocka_unit_test(test_query_port_and_gid),
		cmocka_unit_test(test_pd_busy),
		cmocka_unit_test(test_wc_status_strings),
		cmocka_unit_test(test_event_strings),
		cmocka_unit_test(test_mode),
		cmocka_unit_test(test_counts),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
