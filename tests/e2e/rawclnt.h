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
/* Destroy both and check that the fabric is idle. */
void cfix_down(struct cfix *f);
/* Poll the client for @ms milliseconds, or until *@finished. */
void cfix_run(struct cfix *f, const int *finished, int ms);
/* A done() that counts into the int at call->arg. */
void cfix_count_done(struct rpcrdma_call *call);

#endif /* E2E_RAWCLNT_H */
