/* SPDX-License-Identifier: MIT */
/*
 * The world fuzz-svc-recv runs in: a library server (native API) on
 * softrdma in this process, and a raw peer (tests/e2e/rawpeer.h) connected
 * to it, both driven by the calling thread alone so that "the server has
 * nothing left to do" is a fact, not a timeout.
 *
 * The peer owns SVC_PEER_MRS regions the server may reach by RDMA: one it
 * may read and write, one it may only read, one it may only write. They
 * hold a known pattern, so that any byte the server changed can be found.
 */
#ifndef FUZZ_SVC_PEER_H
#define FUZZ_SVC_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rpcrdma/rpcrdma.h>

#include "rawpeer.h"

#define SVC_PEER_MRS 3
#define SVC_PEER_MEM (32u * 1024u)
#define SVC_PEER_CREDITS 8u
#define SVC_PEER_MAX_REPLIES 4

/* What the server's program does with a call. */
enum svc_peer_program {
	SVC_PEER_ECHO,		/* rpcrdma_svc_reply() of the call's echo (rpcmsg_echo()) */
	SVC_PEER_ECHO_BUF,	/* the same through rpcrdma_svc_reply_buf/commit */
	SVC_PEER_DDP,		/* ddp_serve_call() (tests/e2e/ddp.h): payloads come back */
};

struct svc_peer_mr {
	unsigned char *mem;	/* SVC_PEER_MEM bytes */
	struct ibv_mr *mr;	/* NULL while not connected */
	int access;
};

struct svc_peer {
	struct rpcrdma_svc *svc;
	struct sockaddr_storage addr;
	struct rawpeer rp;
	bool connected;
	enum svc_peer_program program;

	/*
	 * The server's connection events (on_conn), and its calls. The peer's
	 * connection is the last one established (one peer connects at a
	 * time); earlier ones may still be closing.
	 */
	unsigned int established;
	unsigned int closed;
	struct rpcrdma_svc_conn *conn;
	bool conn_closed;
	unsigned long calls;

	struct svc_peer_mr mrs[SVC_PEER_MRS];
	unsigned char *pattern;	/* SVC_PEER_MRS * SVC_PEER_MEM: what the regions hold */

	/* What svc_peer_exchange() saw come back. */
	unsigned char replies[SVC_PEER_MAX_REPLIES][RAWPEER_BUF];
	int reply_len[SVC_PEER_MAX_REPLIES];
	unsigned int nreplies;		/* may exceed SVC_PEER_MAX_REPLIES (not kept) */
	bool peer_lost;			/* a receive was flushed: the connection is gone */
	unsigned long timeouts;		/* exchanges that never went quiet */
	unsigned int busy;		/* SVC_PEER_BUSY_*: what the last pass found */
};

/* Why an exchange was not yet quiet. */
#define SVC_PEER_BUSY_POLL 0x1u		/* rpcrdma_svc_poll() did work */
#define SVC_PEER_BUSY_PEER 0x2u		/* something arrived at the peer */
#define SVC_PEER_BUSY_ARM 0x4u		/* rpcrdma_svc_arm(): work is left */
#define SVC_PEER_BUSY_FABRIC 0x8u	/* WRs posted and not completed */

/* Start the server (no connection yet). Returns 0 or -errno. */
int svc_peer_start(struct svc_peer *sp);
/* Close the peer, destroy the server, free everything. */
void svc_peer_stop(struct svc_peer *sp);

/*
 * Connect the peer (closing an earlier connection first), register its
 * regions anew and refill them with the pattern. Returns 0 or -errno.
 */
int svc_peer_connect(struct svc_peer *sp);

/*
 * Send @copies (at most the credits) of the @len bytes of @msg back to
 * back, then drive server and peer until both are quiet (nothing to poll,
 * nothing in flight on the fabric) or @timeout_ms passed. The replies land
 * in sp->replies. Returns 0, -EIO if a Send failed, or -ETIMEDOUT.
 */
int svc_peer_exchange(struct svc_peer *sp, const void *msg, size_t len, unsigned int copies,
		      int timeout_ms);

/* Is the connection gone (either side closed it, or the Send failed)? */
bool svc_peer_lost(const struct svc_peer *sp);

/* The region whose rkey is @rkey, or NULL. */
struct svc_peer_mr *svc_peer_mr_by_rkey(struct svc_peer *sp, uint32_t rkey);

/* Put the pattern back into region @i. */
void svc_peer_mr_reset(struct svc_peer *sp, unsigned int i);

#endif /* FUZZ_SVC_PEER_H */
