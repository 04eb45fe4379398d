/* SPDX-License-Identifier: MIT */
/*
 * A small protocol for the DDP tests, served by ddp_serve_call(). Its
 * messages are RPC messages (rpcmsg.h): a call's head, then the op and its
 * arguments, one XDR word each:
 *
 *   call:  xid | CALL | 2 | op | arg0 | arg1 | ...   (words 0 to 2: the head)
 *   DDP_OP_ECHO:  the reply is the call's echo (rpcmsg_echo(): the same bytes
 *                 under the reply head), and every payload of the call comes
 *                 back as a result payload at its position (into the
 *                 client's Write chunk if it offered one, else spliced into
 *                 the reply)
 *   DDP_OP_READ:  arg0 = bytes, arg1 = seed: the reply is a reply head alone
 *                 (xid | REPLY | MSG_ACCEPTED), with a result payload of the
 *                 pattern (seed) at its end, DDP_READ_POS
 *   DDP_OP_ERR_CHUNK:  answered RDMA_ERROR / ERR_CHUNK through
 *                 rpcrdma_svc_reply_err_chunk(), after naming a result
 *                 payload (which must be released all the same)
 *
 * A message that is not a call (no call head, or no op) is dropped. The
 * server counts the release callbacks of the payloads it names, so that
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

#include "rpcmsg.h"

enum { DDP_OP_ECHO = 1, DDP_OP_READ = 2, DDP_OP_ERR_CHUNK = 3 };

/* XDR words of a call: the op and its arguments, after the head. */
enum { DDP_W_OP = RPCMSG_HEAD / 4, DDP_W_ARG0, DDP_W_ARG1 };

#define DDP_CALL_MIN	(4 * DDP_W_OP + 4)	/* a head and an op */
#define DDP_CALL_LEN	(4 * DDP_W_ARG1 + 4)	/* a head, an op, two arguments */
#define DDP_ARG_POS	(4 * DDP_W_ARG0)	/* the first position after the op */
#define DDP_READ_POS	RPCMSG_HEAD		/* where DDP_OP_READ's result goes */

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

/* The DDP_CALL_LEN bytes of a call of @op at @msg. */
static inline void ddp_call_msg(unsigned char *msg, uint32_t xid, uint32_t op, uint32_t arg0,
			    uint32_t arg1)
{
	rpcmsg_call_head(msg, xid);
	put32(msg, DDP_W_OP, op);
	put32(msg, DDP_W_ARG0, arg0);
	put32(msg, DDP_W_ARG1, arg1);
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
