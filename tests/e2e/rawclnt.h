/* SPDX-License-Identifier: MIT */
/*
 * A library client facing a raw server (rawpeer.h), for tests that answer
 * the client's calls with whatever replies they need: the raw server
 * listens, accepts with RFC 8797 private data of 4 KiB each way, and
 * registers memory of its own; the client's buffers lie in an arena that is
 * registered with the client (memory windows) or not (bounce buffers).
 */
#ifndef E2E_RAWCLNT_H
#define E2E_RAWCLNT_H

#include <stdbool.h>
#include <stdint.h>

#include <rpcrdma/rpcrdma.h>

#include "rawpeer.h"

#define CFIX_MEM (256u * 1024)	/* bytes of the arena and of the raw server's memory */
#define CFIX_SEG 4096u		/* the client's max_segment */

/* RFC 8797 private data the raw server answers with. */
extern const struct rpcrdma_cm_private cfix_peer_pd;

struct cfix {
	struct rawpeer srv;
	struct rpcrdma_clnt *clnt;
	struct rpcrdma_mem *mem;
	unsigned char *arena;	/* the client's buffers; registered with it unless bounce */
	unsigned char *local;	/* the raw server's memory, registered with it */
	bool bounce;
	uint32_t xid;		/* the last XID a test used */
};

/* Connect a client (10 s call timeout) to a new raw server; the arena is filled with 0x3c. */
void cfix_up(struct cfix *f, bool bounce);
/* cfix_up() of a client with @flags (RPCRDMA_CLNT_PERSISTENT_REG, ...). */
void cfix_up_flags(struct cfix *f, bool bounce, uint32_t flags);
/* Destroy both and check that the fabric is idle. */
void cfix_down(struct cfix *f);
/* Poll the client for @ms milliseconds, or until *@finished. */
void cfix_run(struct cfix *f, const int *finished, int ms);
/* A done() that counts into the int at call->arg. */
void cfix_count_done(struct rpcrdma_call *call);

/* One call of the library client, what the raw server received of it, the rkeys it named. */
struct ccall {
	struct rpcrdma_call call;
	unsigned char *msg, *result, *reply;
	int finished;
	struct rawpeer_call rc;
	uint32_t nkeys;
	uint32_t rkeys[48];
	uint64_t offs[48];
};

/*
 * Submit a 16-byte call (a call's head, rpcmsg.h, then a pattern) with a
 * Write chunk of @result_max bytes (0: none) and room for @reply_max bytes
 * of reply (a Reply chunk beyond the inline size), its buffers in arena
 * slot @slot (64 KiB each; or malloc'd ones filled with 0x3c, with
 * bounce), and receive it at the raw server, collecting the rkeys (and
 * offsets) it advertised.
 */
void cfix_call_start(struct cfix *f, struct ccall *c, unsigned int slot, size_t result_max,
		     size_t reply_max, int timeout_ms);
/* Free what cfix_call_start() allocated (bounce mode). */
void cfix_call_free(struct cfix *f, struct ccall *c);

#endif /* E2E_RAWCLNT_H */
