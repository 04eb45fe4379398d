/* SPDX-License-Identifier: MIT */
/*
 * A raw RDMA peer built on verbs and rdma_cm alone, for sending the library
 * whatever bytes a test wants (malformed headers, credit overruns) and
 * seeing exactly what comes back.
 */
#ifndef E2E_RAWPEER_H
#define E2E_RAWPEER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define RAWPEER_BUF 8192
#define RAWPEER_RECVS 16

struct rawpeer {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	unsigned char *mem;	/* RAWPEER_RECVS receive buffers, then one send buffer */
	unsigned char pdata[256];
	size_t pdata_len;	/* private data received on ESTABLISHED */
};

/*
 * Connect to @addr. @pdata/@pdata_len is the private data to send (NULL for
 * none), @rnr_retry the QP's rnr_retry_count. Returns 0 or -errno.
 */
int rawpeer_connect(struct rawpeer *rp, const struct sockaddr *addr, const void *pdata,
		    size_t pdata_len, uint8_t rnr_retry);
void rawpeer_close(struct rawpeer *rp);

/* Send @len bytes and wait for the Send to complete. Returns 0 or -EIO. */
int rawpeer_send(struct rawpeer *rp, const void *buf, size_t len);

/*
 * Wait up to @timeout_ms for a received message; copy it to @buf (up to
 * @max bytes) and return its length, or -ETIMEDOUT, or -EIO on an error
 * completion.
 */
int rawpeer_recv(struct rawpeer *rp, void *buf, size_t max, int timeout_ms);

#endif /* E2E_RAWPEER_H */
