/* SPDX-License-Identifier: MIT */
/*
 * A test and its peer process (peer.h) connected by rdma_cm, for tests of
 * the wire between processes: the peer listens, accepts, registers a region
 * for the test's RDMA Writes and Reads and a word for its Sends, and tells
 * the test where the region is; the test connects with a buffer of its
 * own. Every wait has a deadline.
 */
#ifndef SOFTRDMA_CM_PAIR_H
#define SOFTRDMA_CM_PAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/rdma_cma.h>

#include "peer.h"

/* The peer's side. */
struct cm_side {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;		/* the region (NULL once the test deregistered it) */
	uint8_t *region;
	uint32_t cmd[2];		/* where the test's Sends land */
	struct ibv_mr *cmd_mr;
};

/*
 * In the peer: listen (say "port <n>"), accept the test, register @len
 * bytes of region with @access, post 8 receives for its Sends, and say
 * "mr <addr> <rkey>".
 */
void cm_side_serve(struct cm_side *s, size_t len, int access);
void cm_side_post_recv(struct cm_side *s);
/* Wait for the test's disconnection and free everything (the region too). */
void cm_side_close(struct cm_side *s);

/* The test's side. */
struct cm_client {
	struct peer peer;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	uint8_t *buf;			/* @len bytes, registered with @access */
	uint64_t raddr;			/* the peer's region */
	uint32_t rkey;
};

/* Start the peer as @role and connect to it; the link must be shared memory. */
void cm_client_connect(struct cm_client *c, const char *self, const char *role, size_t len,
		       int access);
/* The same, with the QP's local ACK timeout (RDMA_OPTION_ID_ACK_TIMEOUT; 0: none) if >= 0. */
void cm_client_connect_timeout(struct cm_client *c, const char *self, const char *role,
			       size_t len, int access, int ack_timeout);
/* Tell the peer "quit", disconnect, and wait for it to say "done" and exit 0. */
void cm_client_disconnect(struct cm_client *c);

/* One completion of @cq, polling without a pause; 0 after the deadline. */
int cm_spin(struct ibv_cq *cq, struct ibv_wc *wc);

/* The tests' byte pattern: fill, and check it (from the end). */
void cm_fill(uint8_t *p, size_t len, uint32_t seed);
bool cm_filled(const uint8_t *p, size_t len, uint32_t seed);

#endif /* SOFTRDMA_CM_PAIR_H */
