/* SPDX-License-Identifier: MIT */
/*
 * One-sided RDMA Writes and Reads between processes (wire_shm_keys.c).
 *
 * Over a shared-memory link a Write or Read used to go as a record into
 * the responder's ring, which the responder's process had to wake for,
 * check, copy and answer: a sleeping server woke to serve every chunk a
 * client offered. An HCA serves them without the responder's CPU. So
 * each process publishes, in a memfd its peers map read-only, what its
 * keys and responder QPs allow (struct wire_key, struct wire_qp_grant),
 * and a requester whose request its own checks pass and this table allows
 * copies the bytes itself, with process_vm_writev() or process_vm_readv(),
 * and completes it there and then. Anything else (a key not in the table,
 * a window bound elsewhere, a QP not in RTS, a capture, a request with
 * others of its QP awaiting answers) goes as a record, as before, and the
 * responder's checks decide it.
 *
 * Each table entry is a seqlock: the owner makes its sequence odd while it
 * rewrites the entry, and even again after; a reader copies an entry out
 * between two equal even sequences. Revocation must also stop a copy that
 * passed the checks already: the requester announces its copy in the ring
 * it writes to (inflight, a count per link) before it checks the
 * sequences again, and the owner, after it made a sequence odd, waits
 * until no link announces a copy (Dekker's handshake, seq_cst on both
 * sides). A dead peer's link is gone from the list; a stopped one is
 * waited for a second at most (SHM_MOVE_WAIT_NS, as a record's spans).
 */
#ifndef SOFT_WIRE_SHM_KEYS_H
#define SOFT_WIRE_SHM_KEYS_H

#include <stdbool.h>
#include <stdint.h>

#include "wire.h"

struct shm_keys;

/* The memfd of this process's table, to offer a peer (the caller's own copy), or -1. */
int shm_keys_offer_fd(void);
/*
 * Map a peer's table, read-only, from @fd: a sealed memfd of a table's
 * size, whose header says it is one. NULL if it is not.
 */
const struct shm_keys *shm_keys_map(int fd);
void shm_keys_unmap(const struct shm_keys *t);

/* What a one-sided request found in a peer's table: its place there, and the sequences. */
struct shm_keys_hold {
	const struct shm_keys *t;
	uint32_t kidx, kseq;
	uint32_t qidx, qseq;
	uint64_t addr;		/* the Write's target or the Read's source, in the peer */
};
/*
 * May @req (a WRITE or a READ, its length not 0) be served one-sidedly
 * through the peer's table @t? The responder's checks, as responder.c
 * makes them: its QP ready and connected to the requester, with the rights;
 * the key granted to that QP's PD (a window: to that QP), with the rights,
 * the range inside it. On true, @h says where.
 */
bool shm_keys_resolve(const struct shm_keys *t, const struct wire_req *req,
		      struct shm_keys_hold *h);
/* Once the copy is announced: do the entries @h read stand unchanged? */
bool shm_keys_still(const struct shm_keys_hold *h);

/* wire_shm.c's: wait until no peer announces a copy through this process's table. */
void shm_keys_quiesce(void);
/* fork(), in the child: the table is the parent's; the child publishes none. */
void shm_keys_fork_child(void);

#endif /* SOFT_WIRE_SHM_KEYS_H */
