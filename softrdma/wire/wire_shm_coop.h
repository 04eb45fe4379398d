/* SPDX-License-Identifier: MIT */
/*
 * Cooperative copies between the two processes of a shared-memory link
 * (wire_shm_coop.c). The responder of a large RDMA Write or Read copies
 * the bytes between the processes with process_vm_readv()/writev(), one
 * page at a time in the kernel, which is about half as fast as a memcpy.
 * A requester that busy-polls for the answer has a core spinning idle
 * meanwhile: the responder offers it part of the copy in the ring's
 * header, both take chunks from either end of the message, and the
 * responder answers once every chunk is in place. Where the cut falls is
 * learnt per link and direction from how long each side's part took: the
 * two sides rarely copy at the same speed (the kernel pins the other
 * process's pages one by one, and a huge page costs it what a small one
 * does). Everything here runs with the fabric lock held.
 */
#ifndef SOFT_WIRE_SHM_COOP_H
#define SOFT_WIRE_SHM_COOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "wire.h"

struct net_link;
struct softrdma_shm_stats;

/* A span of one side's memory, as a record names it (wire_shm.c). */
struct shm_span {
	uint64_t addr;
	uint32_t len;
	uint32_t pad;
};

enum coop_op {
	COOP_WRITE = 1,		/* the requester writes its payload into the responder's target */
	COOP_READ,		/* the requester reads the responder's source into its sink */
};

/*
 * The offer, in the header of the ring that carried the request (shared:
 * the responder writes it, the requester claims from it). claim is
 * gen << 32 | front << 16 | back: the responder takes chunks from the front,
 * the requester from the back, each by a compare-and-swap, while
 * front < back. The fields below it are written while the offer is
 * closed, before a new generation opens it, so a claim that names the
 * generation it read them in was made on them. done counts, in the same
 * generation, the requester's chunks finished (bits 0-15) and failed
 * (bits 16-31); done_ns is when the requester finished its last one
 * (CLOCK_MONOTONIC, which both processes read alike), a hint the
 * responder checks before it learns from it.
 */
struct coop_slot {
	_Atomic uint64_t claim;
	_Atomic uint64_t done;
	uint64_t rec;			/* the request's record: offset of its body in the ring */
	uint64_t token;
	uint64_t addr;			/* the responder's: the Write's target, the Read's source */
	uint32_t op;			/* enum coop_op */
	uint32_t length;
	uint32_t chunk;
	uint32_t nchunks;
	uint32_t split;			/* the responder's end is [0, split) (coop_cut_make()) */
	uint32_t pad0;
	_Atomic uint64_t done_ns;
	uint8_t pad1[56];
};

/* What the requester read of an open offer (coop_offer_read()). */
struct coop_offer {
	uint32_t gen;
	uint64_t rec;
	uint64_t token;
	uint64_t addr;
	enum coop_op op;
	uint32_t length;
	uint32_t chunk;
	uint32_t nchunks;
	uint32_t split;
};

/*
 * The responder's part of the copies it shares over one link, in 1/1024,
 * one for each enum coop_op: 0 until it learns (half). Its own, not in
 * shared memory.
 */
struct coop_share {
	uint16_t part[2];
};

/*
 * The responder's side of one copy of @length bytes: its own chunks go
 * through @copy (false: they could not be copied), the requester's through
 * the offer. A Write's target is @mine, a Read's source too.
 */
struct coop_job {
	struct coop_slot *slot;
	struct net_link *link;
	int peer_pid;
	enum coop_op op;
	uint64_t rec;
	uint64_t token;
	bool peer_polls;		/* the requester's process busy-polls: offer */
	struct coop_share *share;	/* where this link's cut is learnt */
	uint8_t *mine;
	uint32_t length;
	bool (*copy)(const struct coop_job *job, uint32_t off, uint32_t len);
	const struct wire_req *req;	/* COOP_WRITE: the payload's segments */
	const struct shm_span *sink;	/* COOP_READ: the requester's sink */
	uint32_t nspans;
};

/* Copies shorter than this are not shared: a second system call costs more than it saves. */
bool coop_worth(uint32_t length);
/*
 * Copy @job's bytes, offering part to the requester. Returns false if a
 * chunk could not be copied (the requester's process is gone, or a Read's
 * sink went away). Waits for the chunks the requester claimed, a copy's
 * time, or until its process is gone; a requester that claimed and does
 * not finish within a second (stopped) has its chunks copied here again.
 */
bool coop_copy_locked(struct coop_job *job);

/* The iovecs of [@off, @off + @len) of the message @spans make; how many. */
unsigned int coop_slice(const struct shm_span *spans, uint32_t nspans, uint32_t off, uint32_t len,
			struct iovec *iov);

/* Is an offer open in @slot? One load: the requester's poller asks on every pass. */
bool coop_offered(struct coop_slot *slot);
/* Read an open offer's fields: false if none is open. */
bool coop_offer_read(struct coop_slot *slot, struct coop_offer *offer);
/*
 * The requester: claim chunks of @offer from the back and copy them
 * between @spans (its memory: its Write's source, its Read's sink) and
 * the responder's process @peer_pid, until none is left.
 */
void coop_help_locked(struct coop_slot *slot, const struct coop_offer *offer, int peer_pid,
		      const struct shm_span *spans, uint32_t nspans);

/* The introspection's counters (softrdma_shm_stats()). */
void coop_stats_locked(struct softrdma_shm_stats *stats);

#endif /* SOFT_WIRE_SHM_COOP_H */
