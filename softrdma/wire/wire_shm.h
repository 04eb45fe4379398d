/* SPDX-License-Identifier: MIT */
/*
 * The wire over shared memory (wire_shm.c). Each side of a link makes a
 * receive ring in a memfd and a doorbell eventfd, and sends both to the
 * peer over the link's socket (SCM_RIGHTS): the connecting side as its
 * first message, the accepting side once it has mapped the connecting
 * side's ring, so that whoever has the peer's offer can also be answered
 * on its own ring. Once a side has mapped the peer's ring, its wire requests and answers go there
 * instead of the socket, which keeps the CM and tells of the peer's death.
 *
 * A record carries small payloads in the ring; a larger one names the
 * sender's memory, which the receiver reads with process_vm_readv(), and
 * the data of a large RDMA Read is written straight into the requester's
 * buffers with process_vm_writev(): one copy per byte, as an HCA's DMA.
 * The doorbell costs a write() only when the receiver's net thread sleeps;
 * a busy poller of this process drains the rings itself (soft_poll_cq()),
 * and takes its part of the large copies the peer shares with it
 * (wire_shm_coop.h). Everything here runs with the fabric lock held.
 */
#ifndef SOFT_WIRE_SHM_H
#define SOFT_WIRE_SHM_H

#include <stdbool.h>
#include <stdint.h>

#include "wire.h"

struct net_link;
struct net_buf;

/*
 * Make this side's ring and doorbell and queue their offer: the connecting
 * side's first message on a new link, the accepting side's answer to it.
 * Without shared memory (SOFTRDMA_SHM=0, no memfd) the link stays on its
 * socket.
 */
void shm_link_offer_locked(struct net_link *link);
/* The peer's offer arrived, with its descriptors (taken: closed or kept). */
void shm_link_accept_locked(struct net_link *link, const void *body, uint32_t len, int *fds,
			    unsigned int nfds);
/* The peer's completion channel came: records that complete there ring it. */
void shm_link_app_bell_locked(struct net_link *link, const void *body, uint32_t len, int *fds,
			      unsigned int nfds);
/*
 * @qp attaches to the link (or leaves it): its receive CQ's channel, if it
 * has one, is offered to the peer, whose records then wake the thread that
 * sleeps on it directly, while the CQ is armed, instead of the net thread.
 */
void shm_link_bind_qp_locked(struct net_link *link, struct wire_qp *qp);
void shm_link_unbind_qp_locked(struct net_link *link, struct wire_qp *qp);

/* Can this side send on the peer's ring? */
bool shm_link_ready(const struct net_link *link);
/* This side's doorbell, for the net thread's poll set, or -1. */
int shm_link_bell_fd(const struct net_link *link);
/*
 * The net thread is about to sleep: from now on a sender rings the
 * doorbell. True if the ring holds records already (do not sleep). While
 * a busy poller of this process runs the rings nobody rings: *@lazy is
 * set, and the net thread sleeps at most SHM_LAZY_MS.
 */
#define SHM_LAZY_MS 1
bool shm_link_sleep_locked(struct net_link *link, bool *lazy);
/* The net thread is awake again: senders need not ring. */
void shm_link_awake_locked(struct net_link *link);
/* Run what the ring holds (a bounded batch); true if it held anything. */
bool shm_link_drain_locked(struct net_link *link);
/* Free what the link holds of shared memory (the link is freed). */
void shm_link_free_locked(struct net_link *link);


/*
 * Copy @len bytes at @addr in process @pid to @dst (a WIRE_OWNER_REMOTE
 * segment). False if they cannot be read whole: the process is gone (or
 * unmapped them under a request in flight).
 */
bool shm_pull(int pid, uint64_t addr, void *dst, uint32_t len);
/*
 * Place a WRITE that came over shared memory (@req->shm) at @dst: a large
 * one with the requester's help (wire_shm_coop.h). False as shm_pull().
 */
bool shm_place_locked(const struct wire_req *req, void *dst);

#endif /* SOFT_WIRE_SHM_H */
