/* SPDX-License-Identifier: MIT */
/*
 * libibverbs' first ABI (IBVERBS_1.0, before 2006's 1.1) and the provider
 * registration of rdma-core before version 34, in the drop-in only: rdma-core
 * still exports them at those versions, for programs and providers built
 * that long ago, and a program that names one must still load. softrdma
 * does not model them: the 1.0 device list is empty (NULL, ENOSYS), so no
 * 1.0 object exists, and every other 1.0 entry answers as for a device
 * without the operation. The current entry points keep their names at
 * their default versions (libibverbs.map); these are bound to the old
 * versions by .symver.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "soft.h"

/* An entry that returns an object: none, with errno ENOSYS. */
#define COMPAT_PTR(name)                                                          \
	void *name##_1_0(void);                                                   \
	void *name##_1_0(void)                                                    \
	{                                                                         \
		errno = ENOSYS;                                                   \
		return NULL;                                                      \
	}                                                                         \
	__asm__(".symver " #name "_1_0, " #name "@IBVERBS_1.0")

/* An entry that returns an errno value, as the 1.0 verbs did. */
#define COMPAT_INT(name)                                                          \
	int name##_1_0(void);                                                     \
	int name##_1_0(void)                                                      \
	{                                                                         \
		return ENOSYS;                                                    \
	}                                                                         \
	__asm__(".symver " #name "_1_0, " #name "@IBVERBS_1.0")

/* An entry that returns nothing. */
#define COMPAT_VOID(name)                                                         \
	void name##_1_0(void);                                                    \
	void name##_1_0(void)                                                     \
	{                                                                         \
	}                                                                         \
	__asm__(".symver " #name "_1_0, " #name "@IBVERBS_1.0")

COMPAT_PTR(ibv_get_device_list);
COMPAT_VOID(ibv_free_device_list);
COMPAT_PTR(ibv_get_device_name);
COMPAT_PTR(ibv_open_device);
COMPAT_INT(ibv_close_device);
COMPAT_INT(ibv_get_async_event);
COMPAT_VOID(ibv_ack_async_event);
COMPAT_INT(ibv_query_device);
COMPAT_INT(ibv_query_port);
COMPAT_INT(ibv_query_gid);
COMPAT_INT(ibv_query_pkey);
COMPAT_PTR(ibv_alloc_pd);
COMPAT_INT(ibv_dealloc_pd);
COMPAT_PTR(ibv_reg_mr);
COMPAT_INT(ibv_dereg_mr);
COMPAT_PTR(ibv_create_cq);
COMPAT_INT(ibv_resize_cq);
COMPAT_INT(ibv_destroy_cq);
COMPAT_INT(ibv_get_cq_event);
COMPAT_VOID(ibv_ack_cq_events);
COMPAT_PTR(ibv_create_srq);
COMPAT_INT(ibv_modify_srq);
COMPAT_INT(ibv_query_srq);
COMPAT_INT(ibv_destroy_srq);
COMPAT_PTR(ibv_create_qp);
COMPAT_INT(ibv_query_qp);
COMPAT_INT(ibv_modify_qp);
COMPAT_INT(ibv_destroy_qp);
COMPAT_PTR(ibv_create_ah);
COMPAT_INT(ibv_destroy_ah);
COMPAT_INT(ibv_attach_mcast);
COMPAT_INT(ibv_detach_mcast);

/* 1.0's GUID came back as a plain integer: 0, as for a device that has none. */
uint64_t ibv_get_device_guid_1_0(void);
uint64_t ibv_get_device_guid_1_0(void)
{
	return 0;
}
__asm__(".symver ibv_get_device_guid_1_0, ibv_get_device_guid@IBVERBS_1.0");

/*
 * Providers before rdma-core 34 registered with a name and an init
 * function: accepted and ignored, as verbs_register_driver_34() is.
 */
void ibv_register_driver_1_1(const char *name, void *init_func);
void ibv_register_driver_1_1(const char *name, void *init_func)
{
}
__asm__(".symver ibv_register_driver_1_1, ibv_register_driver@IBVERBS_1.1");
