/* SPDX-License-Identifier: MIT */
/*
 * A small RPC-like protocol for the DDP tests, served by ddp_serve_call():
 *
 *   call:  xid | op | arg0 | arg1 | ...
 *   DDP_OP_ECHO:  the reply is the call message itself, and every payload of
 *                 the call comes back as a result payload at its position
 *                 (into the client's Write chunk if it offered one, else
 *                 spliced into the reply)
 *   DDP_OP_READ:  arg0 = bytes, arg1 = seed: the reply is xid | 0, with a
 *                 result payload of the pattern (seed) at position 8
 *   DDP_OP_ERR_CHUNK:  answered RDMA_ERROR / ERR_CHUNK through
 *                 rpcrdma_svc_reply_err_chunk(), after naming a result
 *                 payload (which must be released all the same)
 *
 * The server counts the release callbacks of the payloads it names, so that
 * tests can check each runs exactly once.
 */
#ifndef E2E_DDP_H
#define E2E_DDP_H

#include <arpa/inet.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <rpcrdma/rpcrdma.h>

enum { DDP_OP_ECHO = 1, DDP_OP_READ = 2, DDP_OP_ERR_CHUNK = 3 };

struct ddp_tally {
	atomic_uint named;		/* payloads named for replies */
	atomic_uint released;		/* their release callbacks */
	atomic_uint reply_errors;
	atomic_uint calls;
	atomic_uint payload_bytes;	/* bytes of call payloads received */
};

/*
 * Updated by the server, read by the test: in this process, or in the
 * mapping a server process shares (E2E_FABRIC=proc, harness_fabric.c).
 */
extern struct ddp_tally *ddp_counters_p;
#define ddp_counters (*ddp_counters_p)

/* Answer one call per the protocol above. */
void ddp_serve_call(struct rpcrdma_svc_call *call);

/* XDR word @i at @p (big-endian), written and read. */
static inline void put32(unsigned char *p, size_t i, uint32_t v)
{
	v = htonl(v);
	memcpy(p + 4 * i, &v, 4);
}

static inline uint32_t get32(const unsigned char *p, size_t i)
{
	uint32_t v;

	memcpy(&v, p + 4 * i, 4);
	return ntohl(v);
}

/* The pattern byte at offset @i for @seed. */
static inline unsigned char ddp_pattern(uint32_t seed, size_t i)
{
	uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ull + i * 0xbf58476d1ce4e5b9ull;

	return (unsigned char)(x >> 37);
}

void ddp_fill(unsigned char *buf, size_t len, uint32_t seed);
/* The offset of the first byte that differs from the pattern, or @len. */
size_t ddp_check(const unsigned char *buf, size_t len, uint32_t seed);

#endif /* E2E_DDP_H */
