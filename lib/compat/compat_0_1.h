/* SPDX-License-Identifier: MIT */
/*
 * The structs of librpcrdma 0.1, before they carried struct_size, as
 * programs built against 0.1's headers pass them. Frozen: they describe a
 * released ABI (abi/librpcrdma-0.1.abi holds it as abidw saw it).
 */
#ifndef RPCRDMA_COMPAT_0_1_H
#define RPCRDMA_COMPAT_0_1_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rpcrdma/clnt.h>
#include <rpcrdma/svc.h>

#include "compiler.h"

struct rpcrdma_clnt_attr_0_1 {
	const struct sockaddr *addr;
	const struct sockaddr *src_addr;
	uint32_t max_requests;
	uint32_t inline_size;
	int connect_timeout_ms;
	int call_timeout_ms;
	unsigned int retries;
	uint8_t rnr_retry;
	uint32_t flags;
	uint32_t max_segment;
};

struct rpcrdma_svc_attr_0_1 {
	const struct sockaddr *addr;
	int backlog;
	uint32_t max_requests;
	uint32_t inline_size;
	void (*on_call)(struct rpcrdma_svc_call *call, void *arg);
	void (*on_conn)(struct rpcrdma_svc_conn *conn, enum rpcrdma_conn_event event, void *arg);
	void *arg;
	uint32_t flags;
	uint64_t max_read;
	uint64_t max_reply;
};

struct rpcrdma_call_0_1 {
	const void *msg;
	size_t msg_len;
	const void *payload;
	size_t payload_len;
	uint32_t payload_pos;
	void *reply;
	size_t reply_max;
	void *result;
	size_t result_max;
	int timeout_ms;
	void (*done)(struct rpcrdma_call_0_1 *call);
	void *arg;
	int status;
	size_t reply_len;
	size_t result_len;
};

/* The 18 counters, as &struct rpcrdma_stats has them after struct_size. */
struct rpcrdma_stats_0_1 {
	uint64_t counters[18];
};

struct rpcrdma_clnt_info_0_1 {
	int connected;
	uint32_t credits;
	uint32_t inline_send;
	uint32_t inline_recv;
	int remote_invalidate;
	unsigned int connects;
};

struct rpcrdma_hdr_enc_0_1 {
	uint32_t xid;
	uint32_t credit;
	uint32_t proc;
	uint32_t read_segs;
	const struct rpcrdma_read_segment *read;
	uint32_t write_chunks;
	const struct rpcrdma_chunk_desc *write;
	const struct rpcrdma_chunk_desc *reply;
	uint32_t err;
	uint32_t vers_low;
	uint32_t vers_high;
};

/* The 0.1 layout of @stats, for RPCRDMA_CLGET_STATS_0_1. */
void rpcrdma_stats_to_0_1(const struct rpcrdma_stats *stats, struct rpcrdma_stats_0_1 *out);

/* The control code that 0.1's RPCRDMA_CLGET_STATS had, with its layout. */
#define RPCRDMA_CLGET_STATS_0_1 0x52440004u

/* The entry points as 0.1 had them (exported under RPCRDMA_0.1 only). */
RPCRDMA_EXPORT int rpcrdma_clnt_connect_0_1(const struct rpcrdma_clnt_attr_0_1 *old,
					    struct rpcrdma_clnt **out);
RPCRDMA_EXPORT int rpcrdma_svc_listen_0_1(const struct rpcrdma_svc_attr_0_1 *old,
					  struct rpcrdma_svc **out);
RPCRDMA_EXPORT int rpcrdma_clnt_submit_0_1(struct rpcrdma_clnt *clnt, struct rpcrdma_call_0_1 *old);
RPCRDMA_EXPORT int rpcrdma_clnt_cancel_0_1(struct rpcrdma_clnt *clnt, struct rpcrdma_call_0_1 *old);
RPCRDMA_EXPORT int rpcrdma_clnt_stats_0_1(const struct rpcrdma_clnt *clnt,
					  struct rpcrdma_stats_0_1 *out);
RPCRDMA_EXPORT int rpcrdma_svc_stats_0_1(const struct rpcrdma_svc *svc,
					 struct rpcrdma_stats_0_1 *out);
RPCRDMA_EXPORT int rpcrdma_clnt_info_0_1(const struct rpcrdma_clnt *clnt,
					 struct rpcrdma_clnt_info_0_1 *out);
RPCRDMA_EXPORT long rpcrdma_hdr_encode_0_1(void *buf, size_t len,
					   const struct rpcrdma_hdr_enc_0_1 *old);
RPCRDMA_EXPORT long rpcrdma_hdr_encoded_len_0_1(const struct rpcrdma_hdr_enc_0_1 *old);
RPCRDMA_EXPORT int rpcrdma_clnt_next_timeout_0_1(const struct rpcrdma_clnt *clnt);

#endif /* RPCRDMA_COMPAT_0_1_H */
