/* SPDX-License-Identifier: MIT */
/*
 * Cooperative copies (wire_shm_coop.h). The responder has checked the
 * request (rkey, bounds, rights) and holds its fabric lock, so the bytes
 * it names in its own memory stay where they are until it answers; the
 * requester's bytes stay pinned as long as its record is not DONE
 * (wire_shm.c), which comes after the answer. Between the two, the copy
 * is cut into chunks that either process may take:
 *
 *   responder                          requester (its poller)
 *   fields, then claim = gen|0|n       sees front < back in claim
 *   CAS front+1, copy chunk front      CAS back-1, copy chunk back-1,
 *   ... until front == back            done += 1 (same gen), again
 *   wait until done == n - back
 *   answer as before
 *
 * Neither waits for the other to start: a requester that polls late, or
 * not at all, finds the ends met and nothing to claim. The responder only
 * ever waits for chunks the requester claimed, which it copies without
 * blocking: a copy's time, unless its process died (its link's socket
 * hangs up: no copy can come after that) or was stopped between claim and
 * done. After COOP_WAIT_NS the responder copies those chunks again itself,
 * so a stopped peer holds it no longer than a deregistration waits for one
 * (wire_shm.c, ref_detach()). Copying the same bytes twice is harmless
 * while it answers; a requester stopped in the few instructions between
 * its claim and its system call, for more than that, would write them
 * again later, which this accepts as the price of not waiting for good.
 */
#define _GNU_SOURCE	/* process_vm_readv */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "net.h"
#include "softrdma.h"
#include "wire_shm_coop.h"

/*
 * Measured on a 2-core VM (tests/bench/coop-ab.sh, README.md): sharing a
 * copy of 256 KiB raised the throughput by a tenth to a fifth; at 128 KiB
 * the second system call and the hand-over ate the gain (a few per cent,
 * less than the runs spread).
 */
#define COOP_MIN	(256u * 1024u)
#define COOP_CHUNK_MAX	(16u * 1024u * 1024u)
#define COOP_MAX_CHUNKS	0xffffu		/* front and back are 16 bits */
/* A claimed chunk not done by then: the requester is stopped, or gone. */
#define COOP_WAIT_NS	1000000000ULL
/* Waiting longer than a copy takes: look for a hung-up link this often, and yield. */
#define COOP_LOOK_NS	1000000ULL

#define CLAIM(gen, front, back)	((uint64_t)(gen) << 32 | (uint64_t)(front) << 16 | (back))
#define CLAIM_GEN(w)		((uint32_t)((w) >> 32))
#define CLAIM_FRONT(w)		((uint32_t)((w) >> 16) & 0xffffu)
#define CLAIM_BACK(w)		((uint32_t)(w) & 0xffffu)
#define DONE(gen, failed, n)	((uint64_t)(gen) << 32 | (uint64_t)(failed) << 16 | (n))
#define DONE_FAILED(w)		((uint32_t)((w) >> 16) & 0xffffu)
#define DONE_COUNT(w)		((uint32_t)(w) & 0xffffu)

/* Under fab.lock. */
static struct {
	int enabled;			/* -1: SOFTRDMA_SHM_COOP not read yet */
	struct softrdma_shm_stats st;
} coop = {
	.enabled = -1,
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* SOFTRDMA_SHM_COOP=0: every copy is the responder's alone, as before. */
static bool coop_enabled(void)
{
	if (coop.enabled < 0) {
		const char *v = getenv("SOFTRDMA_SHM_COOP");

		coop.enabled = !v || strcmp(v, "0") != 0;
	}
	return coop.enabled;
}

bool coop_worth(uint32_t length)
{
	return length >= COOP_MIN && coop_enabled();
}

/*
 * The cut: the responder's end [0, split) and the requester's
 * [split, length), each in as few chunks as COOP_CHUNK_MAX allows. Each
 * process_vm_readv()/writev() costs microseconds before it copies a byte,
 * so one chunk each wins (chunks of 64 KiB lose most of the gain); very
 * large copies are cut further, so that a claimed chunk never takes long.
 * Both processes compute it from (length, split) alike.
 */
struct coop_cut {
	uint32_t length;
	uint32_t split;
	uint32_t chunk;
	uint32_t nfront;		/* chunks [0, nfront) are the responder's end */
	uint32_t n;
};

static uint32_t chunks_of(uint32_t bytes, uint32_t chunk)
{
	return (uint32_t)(((uint64_t)bytes + chunk - 1) / chunk);
}

static struct coop_cut cut_make(uint32_t length, uint32_t split)
{
	uint32_t back = length - split, big = split > back ? split : back;
	uint64_t chunk = ((uint64_t)big + 4095) & ~4095ULL;
	struct coop_cut cut = { .length = length, .split = split };

	cut.chunk = chunk < COOP_CHUNK_MAX ? (uint32_t)chunk : COOP_CHUNK_MAX;
	cut.nfront = chunks_of(split, cut.chunk);
	cut.n = cut.nfront + chunks_of(back, cut.chunk);
	return cut;
}

/* Chunk @i < cut->n: its offset in *@off, its length returned. */
static uint32_t cut_at(const struct coop_cut *cut, uint32_t i, uint32_t *off)
{
	uint32_t end = i < cut->nfront ? cut->split : cut->length;

	*off = i < cut->nfront ? i * cut->chunk : cut->split + (i - cut->nfront) * cut->chunk;
	return end - *off < cut->chunk ? end - *off : cut->chunk;
}

/*
 * The responder's part, in 1/1024. It never leaves the requester less
 * than an eighth, nor takes less itself: a side that was slow once (its
 * core taken, a page fault) gets its share back within a few copies.
 */
#define SHARE_ONE	1024u
#define SHARE_MIN	(SHARE_ONE / 8)
#define SHARE_MAX	(SHARE_ONE - SHARE_MIN)

static uint32_t share_of(const struct coop_job *job)
{
	uint16_t part = job->share ? job->share->part[job->op - 1] : 0;

	return part ? part : SHARE_ONE / 2;
}

/* Where the responder's end stops: page-aligned, neither end empty. */
static uint32_t split_for(uint32_t length, uint32_t share)
{
	uint32_t split = (uint32_t)((uint64_t)length * share / SHARE_ONE) & ~4095u;

	if (!split)
		split = 4096;
	return split < length ? split : length / 2;
}

/*
 * Both parts are done: move the share a quarter of the way toward the one
 * that would have had them end together, each side copying at the speed
 * per byte it just did. The requester's time, from the same opening,
 * includes its late start: a responder that starts first takes more.
 */
static void share_learn(const struct coop_job *job, uint64_t mine_ns, uint32_t mine_bytes,
			uint64_t peer_ns, uint32_t peer_bytes)
{
	uint64_t a, b, want, part;

	if (!job->share || !mine_ns || !peer_ns || mine_ns > COOP_WAIT_NS ||
	    peer_ns > COOP_WAIT_NS || mine_bytes < 4096 || peer_bytes < 4096)
		return;
	/* In pages and ns: each product stays below 2^50, times SHARE_ONE below 2^60. */
	a = mine_ns * (peer_bytes >> 12);
	b = peer_ns * (mine_bytes >> 12);
	want = SHARE_ONE * b / (a + b);
	part = (3 * (uint64_t)share_of(job) + want) / 4;
	if (part < SHARE_MIN)
		part = SHARE_MIN;
	if (part > SHARE_MAX)
		part = SHARE_MAX;
	job->share->part[job->op - 1] = (uint16_t)part;
}

/* ---- the responder ------------------------------------------------------------- */

/* Publish the offer: its fields while it is closed, then a new generation opens it. */
static uint32_t coop_open(const struct coop_job *job, const struct coop_cut *cut)
{
	struct coop_slot *slot = job->slot;
	uint32_t gen = CLAIM_GEN(atomic_load_explicit(&slot->claim, memory_order_relaxed)) + 1;

	slot->rec = job->rec;
	slot->token = job->token;
	slot->addr = (uint64_t)(uintptr_t)job->mine;
	slot->op = job->op;
	slot->length = job->length;
	slot->chunk = cut->chunk;
	slot->nchunks = cut->n;
	slot->split = cut->split;
	atomic_store_explicit(&slot->done_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&slot->done, DONE(gen, 0, 0), memory_order_relaxed);
	atomic_store_explicit(&slot->claim, CLAIM(gen, 0, cut->n), memory_order_release);
	coop.st.coop_offers++;
	coop.st.coop_offered_bytes += job->length;
	return gen;
}

/*
 * Take chunk @front, the next from the front: false once the ends have met.
 * The word is shared with the other process: only a claim that finds it
 * as we left it counts, so our chunks are [0, front) whatever it writes.
 */
static bool take_front(struct coop_slot *slot, uint32_t gen, uint32_t front)
{
	uint64_t w = atomic_load_explicit(&slot->claim, memory_order_acquire);

	while (CLAIM_GEN(w) == gen && CLAIM_FRONT(w) == front && front < CLAIM_BACK(w)) {
		/* acq_rel: the fields of the next offer are not written before the ends meet. */
		if (atomic_compare_exchange_weak_explicit(&slot->claim, &w, w + (1u << 16),
							  memory_order_acq_rel,
							  memory_order_acquire))
			return true;
	}
	return false;
}

enum coop_wait { WAIT_DONE, WAIT_FAILED, WAIT_GONE };

/* Wait for the @peer chunks the requester claimed in @gen. */
static enum coop_wait coop_wait(const struct coop_job *job, uint32_t gen, uint32_t peer)
{
	uint64_t start = soft_now_ns(), look = start + COOP_LOOK_NS;
	unsigned int spins;

	for (spins = 1;; spins++) {
		uint64_t d = atomic_load_explicit(&job->slot->done, memory_order_acquire);
		uint64_t now;

		if (CLAIM_GEN(d) == gen && DONE_COUNT(d) == peer)
			return DONE_FAILED(d) ? WAIT_FAILED : WAIT_DONE;
		if (spins % 64 || (now = soft_now_ns()) - start < COOP_LOOK_NS) {
			cpu_relax();
			continue;
		}
		if (now >= look) {
			if (now - start > COOP_WAIT_NS || net_link_gone_locked(job->link))
				return WAIT_GONE;
			look = now + COOP_LOOK_NS;
		}
		/* Slower than any copy: the requester may need this core to finish. */
		sched_yield();
	}
}

/*
 * The requester's chunks [@back, cut->n): wait for them, or copy them
 * here. *@done_ns: when it finished them, as it says; 0 if it did not.
 */
static bool coop_finish(const struct coop_job *job, uint32_t gen, const struct coop_cut *cut,
			uint32_t back, uint64_t *done_ns)
{
	uint32_t off, len, i;
	bool ok = true;

	*done_ns = 0;
	if (back == cut->n)
		return true;
	cut_at(cut, back, &off);
	if (coop_wait(job, gen, cut->n - back) == WAIT_DONE) {
		/* Bytes another process wrote into ours (valgrind cannot see them). */
		if (job->op == COOP_WRITE)
			SOFT_MEM_WRITTEN(job->mine + off, job->length - off);
		coop.st.coop_peer_bytes += job->length - off;
		*done_ns = atomic_load_explicit(&job->slot->done_ns, memory_order_relaxed);
		return true;
	}
	/* It failed, died or stopped: the same bytes again, from here (a late copy is alike). */
	coop.st.coop_takeovers++;
	for (i = back; i < cut->n; i++) {
		len = cut_at(cut, i, &off);
		ok &= job->copy(job, off, len);
	}
	return ok;
}

bool coop_copy_locked(struct coop_job *job)
{
	struct coop_cut cut;
	uint32_t gen, front, off, len, mine = 0;
	uint64_t opened, copied, done_ns;
	bool ok = true;

	if (!job->peer_polls || !coop_worth(job->length))
		return job->copy(job, 0, job->length);
	cut = cut_make(job->length, split_for(job->length, share_of(job)));
	opened = soft_now_ns();
	gen = coop_open(job, &cut);
	for (front = 0; front < cut.n && take_front(job->slot, gen, front); front++) {
		len = cut_at(&cut, front, &off);
		ok &= job->copy(job, off, len);
		mine += len;
	}
	copied = soft_now_ns();
	/* The rest, [front, n), is what the requester claimed. */
	ok = coop_finish(job, gen, &cut, front, &done_ns) && ok;
	/* Its clock reading is a hint from another process: only a plausible one counts. */
	if (done_ns > opened && done_ns <= soft_now_ns())
		share_learn(job, copied - opened, mine, done_ns - opened, job->length - mine);
	return ok;
}

/* ---- the requester ------------------------------------------------------------- */

bool coop_offered(struct coop_slot *slot)
{
	uint64_t w = atomic_load_explicit(&slot->claim, memory_order_relaxed);

	return CLAIM_FRONT(w) < CLAIM_BACK(w);
}

bool coop_offer_read(struct coop_slot *slot, struct coop_offer *offer)
{
	uint64_t w = atomic_load_explicit(&slot->claim, memory_order_acquire);

	if (CLAIM_FRONT(w) >= CLAIM_BACK(w))
		return false;
	/*
	 * The responder may close this generation and write the next one's
	 * fields while we read: then our claims, which name this generation,
	 * fail, and what we read is never used to copy.
	 */
	offer->gen = CLAIM_GEN(w);
	offer->rec = slot->rec;
	offer->token = slot->token;
	offer->addr = slot->addr;
	offer->op = slot->op;
	offer->length = slot->length;
	offer->chunk = slot->chunk;
	offer->nchunks = slot->nchunks;
	offer->split = slot->split;
	return true;
}

unsigned int coop_slice(const struct shm_span *spans, uint32_t nspans, uint32_t off, uint32_t len,
			struct iovec *iov)
{
	unsigned int n = 0;
	uint32_t i;

	for (i = 0; i < nspans && len; i++) {
		uint32_t take;

		if (off >= spans[i].len) {
			off -= spans[i].len;
			continue;
		}
		take = spans[i].len - off < len ? spans[i].len - off : len;
		iov[n].iov_base = (void *)(uintptr_t)(spans[i].addr + off);
		iov[n++].iov_len = take;
		len -= take;
		off = 0;
	}
	return n;
}

/*
 * The offer came from the other process: it must describe the copy @spans
 * make, cut as this process would cut it.
 */
static bool offer_fits(const struct coop_offer *o, const struct shm_span *spans, uint32_t nspans)
{
	struct coop_cut cut;
	uint64_t total = 0;
	uint32_t i;

	for (i = 0; i < nspans; i++)
		total += spans[i].len;
	if ((o->op != COOP_WRITE && o->op != COOP_READ) || o->length != total || !o->split ||
	    o->split >= o->length)
		return false;
	cut = cut_make(o->length, o->split);
	return cut.chunk == o->chunk && cut.n == o->nchunks && cut.n <= COOP_MAX_CHUNKS;
}

/* Take the next chunk from the back, in generation @gen: false once the ends have met. */
static bool take_back(struct coop_slot *slot, uint32_t gen, uint32_t *back)
{
	uint64_t w = atomic_load_explicit(&slot->claim, memory_order_acquire);

	/* acq_rel: the offer's fields were read before the claim that relies on them. */
	while (CLAIM_GEN(w) == gen && CLAIM_FRONT(w) < CLAIM_BACK(w)) {
		if (atomic_compare_exchange_weak_explicit(&slot->claim, &w, w - 1,
							  memory_order_acq_rel,
							  memory_order_acquire)) {
			*back = CLAIM_BACK(w) - 1;
			return true;
		}
	}
	return false;
}

/* Count a chunk finished, unless the responder gave up on this generation meanwhile. */
static void mark_done(struct coop_slot *slot, uint32_t gen, bool ok)
{
	uint64_t d = atomic_load_explicit(&slot->done, memory_order_relaxed);
	uint64_t add = ok ? 1 : 1u << 16 | 1;

	while (CLAIM_GEN(d) == gen &&
	       !atomic_compare_exchange_weak_explicit(&slot->done, &d, d + add,
						      memory_order_release, memory_order_relaxed))
		;
}

/* Copy [@off, @off + @len) of the message between our @spans and the responder. */
static bool help_copy(const struct coop_offer *o, int peer_pid, const struct shm_span *spans,
		      uint32_t nspans, uint32_t off, uint32_t len)
{
	struct iovec local[WIRE_MAX_SEGS];
	struct iovec remote = { (void *)(uintptr_t)(o->addr + off), len };
	unsigned int n = coop_slice(spans, nspans, off, len, local);

	if (o->op == COOP_WRITE)
		return process_vm_writev(peer_pid, local, n, &remote, 1, 0) == (ssize_t)len;
	return process_vm_readv(peer_pid, local, n, &remote, 1, 0) == (ssize_t)len;
}

void coop_help_locked(struct coop_slot *slot, const struct coop_offer *offer, int peer_pid,
		      const struct shm_span *spans, uint32_t nspans)
{
	struct coop_cut cut;
	uint32_t i, taken;

	if (!coop_enabled() || nspans > WIRE_MAX_SEGS || !offer_fits(offer, spans, nspans))
		return;
	cut = cut_make(offer->length, offer->split);
	/*
	 * The word is the responder's to write too: a chunk past the offer ends
	 * it, and one that puts the claim back cannot keep us copying for more
	 * than the offer's chunks.
	 */
	for (taken = 0; taken < cut.n && take_back(slot, offer->gen, &i) && i < cut.n; taken++) {
		uint32_t off, len = cut_at(&cut, i, &off);
		bool ok = help_copy(offer, peer_pid, spans, nspans, off, len);

		/* Before the count that the responder waits for (release). */
		atomic_store_explicit(&slot->done_ns, soft_now_ns(), memory_order_relaxed);
		mark_done(slot, offer->gen, ok);
		if (!ok)
			continue;
		if (offer->op == COOP_WRITE)
			coop.st.coop_helped_write_bytes += len;
		else
			coop.st.coop_helped_read_bytes += len;
	}
}

void coop_stats_locked(struct softrdma_shm_stats *stats)
{
	*stats = coop.st;
}
