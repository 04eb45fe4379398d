/* SPDX-License-Identifier: MIT */
/*
 * A raw RDMA peer built on verbs and rdma_cm alone, for sending the library
 * whatever bytes a test wants (malformed headers, credit overruns, replies
 * that do not fit the call) and seeing exactly what comes back.
 *
 * It plays either role: a client (rawpeer_connect) facing a library server,
 * or a server (rawpeer_listen, rawpeer_accept) facing a library client. Once
 * connected both roles send, receive, and issue RDMA Reads and Writes of the
 * peer's memory with whatever rkey the test names (rawpeer_rdma).
 *
 * A rawpeer belongs to one thread at a time; rawpeer_accept_start() lends it
 * to a thread of its own until rawpeer_accept_join(), so that the library
 * client's blocking connect can run meanwhile.
 */
#ifndef E2E_RAWPEER_H
#define E2E_RAWPEER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <rpcrdma/clnt.h>
#include <rpcrdma/proto.h>

#define RAWPEER_BUF 8192
#define RAWPEER_RECVS 16
#define RAWPEER_MAX_MRS 8

struct rawpeer {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;		/* the connection */
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	unsigned char *mem;	/* RAWPEER_RECVS receive buffers, then one send buffer */
	/*
	 * Private data received: the server's on ESTABLISHED (client role), or
	 * the client's on CONNECT_REQUEST (server role).
	 */
	unsigned char pdata[256];
	size_t pdata_len;

	/* Server role. */
	struct rdma_cm_id *listen_id;
	struct sockaddr_storage addr;	/* where rawpeer_listen() listens */
	pthread_t accept_thread;
	bool accepting;
	int accept_rc;
	unsigned char accept_pdata[256];
	bool accept_has_pdata;
	size_t accept_pdata_len;

	/* Memory the test registered through rawpeer_reg(); freed at close. */
	struct ibv_mr *mrs[RAWPEER_MAX_MRS];
	unsigned int nmrs;

	/* Receive completions that arrived while another completion was awaited. */
	struct ibv_wc early[RAWPEER_RECVS];
	unsigned int nearly;
	uint64_t next_wrid;
};

/* How to connect (client role). */
struct rawpeer_opts {
	const void *pdata;		/* private data to send, or NULL */
	size_t pdata_len;
	uint8_t rnr_retry;		/* the QP's rnr_retry_count */
	uint8_t responder_resources;	/* RDMA Reads of our memory the peer may run at once */
};

/*
 * Connect to @addr. @pdata/@pdata_len is the private data to send (NULL for
 * none), @rnr_retry the QP's rnr_retry_count. The server may not RDMA Read
 * our memory (no responder resources). Returns 0 or -errno.
 */
int rawpeer_connect(struct rawpeer *rp, const struct sockaddr *addr, const void *pdata,
		    size_t pdata_len, uint8_t rnr_retry);
/* Connect to @addr as @opts says. Returns 0 or -errno. */
int rawpeer_connect_opts(struct rawpeer *rp, const struct sockaddr *addr,
			 const struct rawpeer_opts *opts);

/* Server role: listen on 127.0.0.1, port 0 (rp->addr tells the port). Returns 0 or -errno. */
int rawpeer_listen(struct rawpeer *rp);
/*
 * Accept one connection within @timeout_ms, answering with @pdata/@pdata_len
 * (NULL for no private data); the client's private data lands in rp->pdata.
 * Our QP may have as many RDMA Reads in flight as the client offered.
 * Returns 0 or -errno.
 */
int rawpeer_accept(struct rawpeer *rp, const void *pdata, size_t pdata_len, int timeout_ms);
/* rawpeer_accept() on a thread of its own (5 s bound); rawpeer_accept_join() returns its result. */
int rawpeer_accept_start(struct rawpeer *rp, const void *pdata, size_t pdata_len);
int rawpeer_accept_join(struct rawpeer *rp);
/*
 * Listen, and connect a library client to ourselves with @attr (its addr is
 * set here), answering with @pdata/@pdata_len. Returns 0 with *@clnt
 * connected and accepted, or -errno (*@clnt, if set, is the caller's to
 * destroy).
 */
int rawpeer_serve_client(struct rawpeer *rp, struct rpcrdma_clnt_attr *attr, const void *pdata,
			 size_t pdata_len, struct rpcrdma_clnt **clnt);

/* Either role: release everything (the connection, the listener, the test's MRs). */
void rawpeer_close(struct rawpeer *rp);

/*
 * Register [@addr, @addr + @len) under our PD with @access, for RDMA by the
 * peer or by rawpeer_rdma(); deregistered by rawpeer_close(). Returns the
 * MR or NULL.
 */
struct ibv_mr *rawpeer_reg(struct rawpeer *rp, void *addr, size_t len, int access);
/* Memory a raw server pulls into by RDMA Read: with remote write on iWARP. */
struct ibv_mr *rawpeer_reg_sink(struct rawpeer *rp, void *addr, size_t len);

/* Send @len bytes and wait for the Send to complete. Returns 0 or -EIO. */
int rawpeer_send(struct rawpeer *rp, const void *buf, size_t len);

/*
 * Send @len bytes with IBV_WR_SEND_WITH_INV of @rkey and wait for the
 * completion. Returns its status (IBV_WC_SUCCESS, ...) or -errno.
 */
int rawpeer_send_inv(struct rawpeer *rp, const void *buf, size_t len, uint32_t rkey);

/*
 * One RDMA Read (@op IBV_WR_RDMA_READ: peer's [@raddr, +@len) under @rkey
 * into @local) or RDMA Write (IBV_WR_RDMA_WRITE: @local to the peer), @local
 * lying in memory from rawpeer_reg(); waits for the completion. Returns its
 * status (IBV_WC_SUCCESS, IBV_WC_REM_ACCESS_ERR, ...) or -errno. An error
 * status leaves our QP in the error state, as on hardware.
 */
int rawpeer_rdma(struct rawpeer *rp, enum ibv_wr_opcode op, void *local, uint32_t len,
		 uint64_t raddr, uint32_t rkey);

/*
 * Wait up to @timeout_ms for a received message; copy it to @buf (up to
 * @max bytes) and return its length, or -ETIMEDOUT, or -EIO on an error
 * completion (a flushed receive: the connection is gone). A @timeout_ms of
 * 0 looks once and does not wait.
 */
int rawpeer_recv(struct rawpeer *rp, void *buf, size_t max, int timeout_ms);

/* Server role: a call as received, its transport header decoded. */
struct rawpeer_call {
	unsigned char buf[RAWPEER_BUF];
	int len;			/* bytes received */
	struct rpcrdma_hdr hdr;		/* points into buf */
};

/*
 * Wait up to @timeout_ms for a call and decode its header (default caps).
 * Returns 0, what rawpeer_recv() returned on failure, or what
 * rpcrdma_hdr_decode() returned (-EBADMSG, ...).
 */
int rawpeer_recv_call(struct rawpeer *rp, struct rawpeer_call *call, int timeout_ms);

/*
 * Pull the Read chunk of @hdr at XDR @position by RDMA Read into @dst (in
 * memory from rawpeer_reg()), segment after segment. Returns the bytes
 * pulled, -EMSGSIZE if they exceed @max, -ENOENT if there is no such chunk,
 * or -EIO if a Read did not complete successfully.
 */
long rawpeer_pull(struct rawpeer *rp, const struct rpcrdma_hdr *hdr, uint32_t position,
		  unsigned char *dst, size_t max);

/*
 * Place @len bytes of @src (in memory from rawpeer_reg()) into @chunk by RDMA
 * Write, filling its segments in order; @echo (room for chunk->nsegs) gets
 * the segments with the bytes each received, as a reply echoes them.
 * Returns 0, -EMSGSIZE if @len exceeds the chunk, or -EIO if a Write did not
 * complete successfully.
 */
int rawpeer_push(struct rawpeer *rp, const struct rpcrdma_chunk *chunk, const unsigned char *src,
		 size_t len, struct rpcrdma_segment *echo);

#endif /* E2E_RAWPEER_H */
