/* SPDX-License-Identifier: MIT */
/*
 * The wire over shared memory (wire_shm.h): rings in memfds between the two
 * processes of a link, one per direction, each written by one process and
 * read by the other, under their own fabric locks.
 *
 * A ring is a byte ring of records (struct shm_rec, 8-byte aligned, never
 * split across the end: a pad record fills the tail). The writer publishes
 * a record by moving tail (release); the reader consumes by moving head.
 * The reader's net thread sets `sleeping` before it sleeps in poll(); a
 * writer that sees it rings the doorbell, an eventfd the reader passed
 * with the ring (written when the writer's fabric lock is released). Both
 * sides' order of store-then-load is sequentially consistent, so a record
 * is never left unnoticed. Records come from the other process: they are
 * checked like any peer-supplied data before use.
 */
#define _GNU_SOURCE	/* memfd_create, process_vm_readv */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "net.h"
#include "softrdma.h"
#include "wire_net.h"
#include "wire_shm.h"
#include "wire_shm_coop.h"
#include "wire_shm_keys.h"

#define SHM_RING_BYTES	(256u * 1024u)	/* data bytes of one direction's ring */
/* Payloads up to this size travel in the ring; larger ones by reference. */
#define SHM_INLINE_MAX	2048u
#define SHM_DRAIN_BATCH	64u
/* A thread of this process polls its CQs, which runs the rings: no doorbell needed. */
#define SHM_POLLER_NS	200000ULL
/* How often a busy poller tells the peer that it polls (shm_poll_locked()). */
#define SHM_POLLED_NS	20000ULL
/* A peer's poller that told us nothing for longer is not running now (preempted, or gone). */
#define SHM_POLLING_NS	(3 * SHM_POLLED_NS)
#define SHM_MAGIC	0x53484d34u	/* 'SHM4' */
/* A record's spans moved aside take a memcpy: longer, the other side is stopped or lies. */
#define SHM_MOVE_WAIT_NS	1000000000ULL

struct shm_ring {
	_Atomic uint64_t tail;		/* the writer's: bytes published */
	/* The writer's: one-sided copies it makes into the reader's memory now (wire_shm_keys.h). */
	_Atomic uint32_t inflight;
	uint8_t pad0[52];
	_Atomic uint64_t head;		/* the reader's: bytes consumed */
	_Atomic uint32_t sleeping;	/* the reader's net thread waits for the doorbell */
	_Atomic uint32_t arm;		/* the reader's channel: enum shm_arm */
	_Atomic uint64_t polled_ns;	/* a busy poller of the reader last ran the rings */
	uint8_t pad1[40];
	/* The reader, serving a large request of this ring, shares the copy (wire_shm_coop.h). */
	struct coop_slot coop;
	uint8_t data[SHM_RING_BYTES];
};

/*
 * A reader whose receive CQ has a completion channel (shm_link_bind_qp_locked)
 * arms it here too when the CQ is armed. The writer of a record that
 * completes there takes ARMED to FIRED and writes the channel's eventfd
 * itself, waking the reader's sleeping thread directly, which drains the
 * ring when it asks for its event; the reader's event then needs no token
 * of its own (shm_cq_raised_locked()).
 */
enum shm_arm { ARM_IDLE, ARM_ARMED, ARM_FIRED };

/*
 * Where a record's completion lands at the reader; WAKES_NET: nowhere, and
 * nothing the requester sends next will make the reader look either (a
 * Write with nothing posted behind it): only its net thread takes it.
 * WAKES_LATER: nowhere, and nobody waits for it (the answer to an
 * unsignaled request that succeeded): whoever looks at the ring next takes
 * it, and it wakes no thread.
 */
enum shm_wakes { WAKES_NONE, WAKES_RECV, WAKES_SEND, WAKES_NET, WAKES_LATER };

enum shm_rec_type {
	SHM_REC_PAD = 1,
	SHM_REC_REQ,
	SHM_REC_RESP,
};

struct shm_rec {
	uint32_t type;
	uint32_t len;			/* bytes of body after this header */
};

struct shm_req {
	struct wire_req_head head;
	uint32_t rd_depth;
	uint32_t inline_payload;	/* the payload follows; else nspans spans do */
	uint32_t nspans;		/* SEND/WRITE: the payload; READ: the sink */
	_Atomic uint32_t ref_state;	/* spans: enum shm_ref_state */
	uint32_t coop;			/* the writer keeps the spans and helps copy them */
	uint32_t lazy_answer;		/* wire_req's: its answer need wake nobody (rec_end()) */
	uint32_t psn_sync;		/* wire_req's: sent with nothing of its QP awaiting answers */
	uint32_t pad;
};

/*
 * Who may touch a record's spans. The reader takes UNREAD to READING while
 * it copies, and leaves DONE before it moves head past the record; a writer
 * whose memory is deregistered meanwhile takes UNREAD to MOVING, copies the
 * bytes aside and points the spans there, then back to UNREAD.
 */
enum shm_ref_state { REF_UNREAD, REF_READING, REF_DONE, REF_MOVING };

/*
 * A record of ours in the peer's ring whose spans name our memory: a
 * Send's or Write's payload (pinned), or a large Read's sink (not pinned:
 * the peer writes there as an HCA would). Our own copy of the spans is
 * what we copy with when the peer offers us part of the work: the
 * record's, in shared memory, are the peer's to read, not ours to trust.
 */
struct shm_ref {
	struct shm_req *rec;		/* in the peer's ring, as we map it */
	struct soft_mr *mr[WIRE_MAX_SEGS];
	void *bounce[WIRE_MAX_SEGS];
	struct shm_span span[WIRE_MAX_SEGS];
	uint32_t nspans;
	uint64_t token;
	uint32_t qpn;			/* our QP that sent it */
	uint32_t length;
	enum coop_op op;		/* 0: we do not help with it */
	bool used;
};

struct shm_resp {
	uint64_t token;
	uint32_t src_qpn;
	uint32_t status;
	uint32_t data_len;
	uint32_t rnr_timer;
	uint32_t placed;		/* READ: written into the sink; else the data follows */
	uint32_t pad;
};

/* The offer, sent over the socket with the ring's memfd and the doorbell. */
struct shm_offer {
	uint32_t magic;
	uint32_t ring_bytes;
	int32_t pid;
	uint32_t pad;
	uint64_t probe_addr;		/* where the sender keeps probe_value */
	uint64_t probe_value;
};

struct shm_link {
	struct shm_ring *rx;		/* ours: the peer writes, we read */
	int rx_bell;			/* ours: in the net thread's poll set */
	struct soft_signal rx_kick;	/* on rx_bell: our net thread drains what is left */
	struct shm_ring *tx;		/* the peer's: we write, it reads */
	int tx_bell_fd;
	struct soft_signal tx_bell;
	int peer_pid;
	const struct shm_keys *peer_keys;	/* what the peer lets us serve one-sidedly, or NULL */
	uint64_t probe_value;		/* what the peer may read of us at probe_addr */
	uint64_t tx_tail;		/* the tail we published: the ring's copy is the peer's to write */
	uint64_t tx_next;		/* the tail after the record being written */
	uint64_t rx_polled_ns;		/* what we last told the peer in rx->polled_ns */
	/*
	 * Writer: records published without the doorbell its sleeping net
	 * thread wanted, because a poller of the peer ran the rings (rec_end()):
	 * the tail after the last one, and when the first was (0: none).
	 */
	uint64_t unrung_tail;
	uint64_t unrung_ns;
	struct shm_ref refs[WIRE_WINDOW];
	struct coop_share coop_share;	/* serving the peer's large requests */
	/* Reader: the CQ whose channel the peer may wake, and whether sends complete there. */
	struct wire_cq *app_cq;
	struct wire_qp *app_qp;
	/* Writer: the peer's channel eventfd (-1: none yet), and what completes there. */
	int app_bell_fd;
	struct soft_signal app_bell;
	bool app_covers_send;
	struct net_link *link;
	struct soft_list node;		/* shm.links */
};

/* Under fab.lock, but for the count busy pollers read. */
static struct {
	struct soft_list links;
	_Atomic unsigned int nlinks;
	bool said_no_vm;
	struct softrdma_shm_stats st;	/* one-sided and doorbell counts (the rest: wire_shm_coop.c) */
	uint64_t polled_ns;		/* a busy poller last ran the rings (soft_poll_cq()) */
	bool armed;			/* a CQ was armed, and only armed CQs were polled since */
	bool net_lazy;			/* the net thread looks within SHM_LAZY_MS (ring_spared()) */
} shm = {
	.links = { &shm.links, &shm.links },
};

static bool shm_wanted(void)
{
	const char *v = getenv("SOFTRDMA_SHM");

	return !v || strcmp(v, "0") != 0;
}

static uint32_t rec_size(uint32_t body)
{
	return ((uint32_t)sizeof(struct shm_rec) + body + 7u) & ~7u;
}

/* ---- the offer ---------------------------------------------------------------- */

static void offer_free(struct shm_link *s)
{
	if (s->rx)
		munmap(s->rx, sizeof(*s->rx));
	if (s->rx_bell >= 0)
		close(s->rx_bell);
	free(s);
}

void shm_link_offer_locked(struct net_link *link)
{
	struct shm_offer *o;
	struct net_buf *buf;
	struct shm_link *s;
	int memfd = -1;

	if (!shm_wanted())
		return;
	s = calloc(1, sizeof(*s));
	if (!s)
		return;
	s->rx_bell = -1;
	s->tx_bell_fd = -1;
	s->app_bell_fd = -1;
	/* Sealed at its size: the peer cannot shrink it under our mapping (SIGBUS). */
	memfd = memfd_create("softrdma-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (memfd < 0 || ftruncate(memfd, sizeof(*s->rx)) < 0 ||
	    fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto fail;
	s->rx = mmap(NULL, sizeof(*s->rx), PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (s->rx == MAP_FAILED) {
		s->rx = NULL;
		goto fail;
	}
	s->rx_bell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	signal_init(&s->rx_kick, s->rx_bell);
	buf = s->rx_bell < 0 ? NULL : net_buf_new_locked(NET_MSG_SHM, sizeof(*o));
	if (!buf)
		goto fail;
	buf->fds[0] = memfd;
	buf->fds[1] = dup(s->rx_bell);
	buf->nfds = buf->fds[1] < 0 ? 1 : 2;
	/* What the peer may serve one-sidedly: with the doorbell only (wire_shm_keys.h). */
	if (buf->nfds == 2) {
		buf->fds[2] = shm_keys_offer_fd();
		if (buf->fds[2] >= 0)
			buf->nfds = 3;
	}
	o = net_body(buf);
	memset(o, 0, sizeof(*o));
	s->probe_value = ((uint64_t)SHM_MAGIC << 32) | (uint32_t)getpid();
	o->magic = SHM_MAGIC;
	o->ring_bytes = SHM_RING_BYTES;
	o->pid = getpid();
	o->probe_addr = (uint64_t)(uintptr_t)&s->probe_value;
	o->probe_value = s->probe_value;
	link->shm = s;
	s->link = link;
	soft_list_add_tail(&s->node, &shm.links);
	atomic_fetch_add(&shm.nlinks, 1);
	/* The offer goes before anything else this side says on the link. */
	net_send_locked(link, buf);
	return;
fail:
	if (memfd >= 0)
		close(memfd);
	offer_free(s);
}

/* Can we reach the peer's memory? (same user, no ptrace restriction) */
static bool probe_peer(const struct shm_offer *o)
{
	uint64_t got = 0;
	struct iovec local = { &got, sizeof(got) };
	struct iovec remote = { (void *)(uintptr_t)o->probe_addr, sizeof(got) };

	if (process_vm_readv(o->pid, &local, 1, &remote, 1, 0) == (ssize_t)sizeof(got) &&
	    got == o->probe_value)
		return true;
	if (!shm.said_no_vm) {
		shm.said_no_vm = true;
		fprintf(stderr, "softrdma: process_vm_readv() of process %d refused (%s): "
			"links between processes use their sockets\n", o->pid, strerror(errno));
	}
	return false;
}

/* Is @fd the peer's ring: a memfd of a ring's size, sealed against shrinking? */
static bool ring_fd_ok(int fd)
{
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);

	return seals >= 0 && (seals & F_SEAL_SHRINK) && !fstat(fd, &st) && S_ISREG(st.st_mode) &&
	       st.st_size == (off_t)sizeof(struct shm_ring);
}

/* Is @pid the process at the other end of @link's socket? */
static bool peer_is(const struct net_link *link, int32_t pid)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred);

	return !getsockopt(link->fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) &&
	       clen == sizeof(cred) && cred.pid == pid;
}

void shm_link_accept_locked(struct net_link *link, const void *body, uint32_t len, int *fds,
			    unsigned int nfds)
{
	const struct shm_offer *o = body;
	struct shm_link *s;
	void *map;

	/*
	 * The accepting side offers its ring only now, with the lock held
	 * until the peer's ring is mapped below: a peer that has our offer
	 * knows we can answer on its ring. Offered sooner, a request of the
	 * connecting side (a QP connected by hand starts at once, net_qpn.c)
	 * could come before we could answer, and its answer be lost.
	 */
	if (!link->shm)
		shm_link_offer_locked(link);
	s = link->shm;

	/* The pid names the process whose memory we reach: the socket's peer's, none other. */
	if (!s || s->tx || nfds < 2 || len != sizeof(*o) || o->magic != SHM_MAGIC ||
	    o->ring_bytes != SHM_RING_BYTES || o->pid <= 0 || !peer_is(link, o->pid) ||
	    !ring_fd_ok(fds[0]) || !probe_peer(o))
		return;
	map = mmap(NULL, sizeof(*s->tx), PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	if (map == MAP_FAILED)
		return;
	s->tx = map;
	s->tx_bell_fd = fds[1];
	fds[1] = -1;
	signal_init(&s->tx_bell, s->tx_bell_fd);
	s->peer_pid = o->pid;
	if (nfds == 3)
		s->peer_keys = shm_keys_map(fds[2]);
}

bool shm_link_ready(const struct net_link *link)
{
	return link->shm && link->shm->tx;
}

int shm_link_bell_fd(const struct net_link *link)
{
	return link->shm ? link->shm->rx_bell : -1;
}

static void ref_release(struct shm_ref *ref)
{
	uint32_t i;

	if (!ref->used)
		return;
	for (i = 0; i < ref->nspans; i++) {
		if (ref->mr[i])
			wire_up->mem_unpin(ref->mr[i], NULL);
		free(ref->bounce[i]);
		ref->mr[i] = NULL;
		ref->bounce[i] = NULL;
	}
	ref->used = false;
}

/* Forget the records the reader is done with, before their room is written again. */
static void refs_reclaim(struct shm_link *s)
{
	unsigned int i;

	for (i = 0; i < WIRE_WINDOW; i++)
		if (s->refs[i].used &&
		    atomic_load_explicit(&s->refs[i].rec->ref_state, memory_order_acquire) == REF_DONE)
			ref_release(&s->refs[i]);
}

/*
 * Our QP @qpn's request @token was answered: the peer has no copy of it left
 * to share, so an offer that names it is stale (or forged). Its ref lives on
 * until the peer is done with the record; if it never says so, the ref must
 * not let it reach memory our application may have let go of since.
 */
static void refs_answered(struct shm_link *s, uint32_t qpn, uint64_t token)
{
	unsigned int i;

	for (i = 0; i < WIRE_WINDOW; i++)
		if (s->refs[i].used && s->refs[i].qpn == qpn && s->refs[i].token == token)
			s->refs[i].op = 0;
}

static struct shm_ref *ref_get(struct shm_link *s)
{
	unsigned int i;

	for (i = 0; i < WIRE_WINDOW; i++)
		if (!s->refs[i].used)
			return &s->refs[i];
	return NULL;
}

void shm_link_free_locked(struct net_link *link)
{
	struct shm_link *s = link->shm;
	unsigned int i;

	if (!s)
		return;
	link->shm = NULL;
	soft_list_del(&s->node);
	atomic_fetch_sub(&shm.nlinks, 1);
	for (i = 0; i < WIRE_WINDOW; i++)
		ref_release(&s->refs[i]);
	signal_cancel_locked(&s->rx_kick);
	signal_fini(&s->rx_kick);
	if (s->tx) {
		signal_cancel_locked(&s->tx_bell);
		signal_fini(&s->tx_bell);
		munmap(s->tx, sizeof(*s->tx));
	}
	shm_keys_unmap(s->peer_keys);
	if (s->tx_bell_fd >= 0)
		close(s->tx_bell_fd);
	if (s->app_bell_fd >= 0) {
		signal_cancel_locked(&s->app_bell);
		signal_fini(&s->app_bell);
		close(s->app_bell_fd);
	}
	if (s->app_cq)
		s->app_cq->shm_links--;
	offer_free(s);
}

/* ---- writing records ------------------------------------------------------------ */

/*
 * Room for a record of @body bytes on the peer's ring: its body, or NULL
 * if the ring is full (the reader is behind: as a packet lost). Nothing is
 * visible to the reader before rec_end().
 */
static void *rec_begin(struct shm_link *s, uint32_t type, uint32_t body)
{
	struct shm_ring *r = s->tx;
	uint64_t tail = s->tx_tail;
	uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	uint32_t pos = (uint32_t)(tail % SHM_RING_BYTES), need = rec_size(body);
	uint32_t to_end = SHM_RING_BYTES - pos, pad = need > to_end ? to_end : 0;
	struct shm_rec *rec;

	if (tail - head > SHM_RING_BYTES || need + pad > SHM_RING_BYTES - (tail - head))
		return NULL;
	refs_reclaim(s);
	if (pad) {
		rec = (struct shm_rec *)(r->data + pos);
		rec->type = SHM_REC_PAD;
		rec->len = pad - (uint32_t)sizeof(*rec);
		pos = 0;
	}
	rec = (struct shm_rec *)(r->data + pos);
	rec->type = type;
	rec->len = body;
	s->tx_next = tail + pad + need;
	return rec + 1;
}

/*
 * Publish the record rec_begin() made. A record that completes on the
 * reader's armed CQ wakes the thread waiting on its channel; otherwise the
 * doorbell rings if the reader's net thread sleeps, or looks only now and
 * then (lazy) and the record is one only it will take (WAKES_NET): a
 * reader that waits on its memory for a Write (ib_write_lat) would wait
 * SHM_LAZY_MS.
 */
static bool self_polls(void);

/*
 * The peer's net thread sleeps, but a thread of the peer polls its CQs and
 * runs the rings now (it told us within SHM_POLLING_NS), and so does one
 * of ours: the peer's poller takes the record
 * without the net thread (which would cost it a wake-up and a context
 * switch each time). A poller of the peer that arms takes what came
 * before (shm_poller_sleeps_locked()). Should it stop without arming, or
 * lose its CPU, our side rings after all (unrung_check(), once
 * SHM_POLLING_NS went by): on our poller's next pass, or at our net
 * thread's next look. That one is lazy while a spared record waits: it
 * looks within SHM_LAZY_MS, and before it sleeps for good it rings for
 * what the peer has yet to take.
 */
static bool ring_spared(struct shm_link *s, enum shm_wakes wakes)
{
	uint64_t polled = atomic_load_explicit(&s->tx->polled_ns, memory_order_relaxed);
	uint64_t now = soft_now_ns();

	/*
	 * A request the peer serves, with no completion of its own (an RDMA
	 * Read, a Write with more to come), is rung for: we wait for its
	 * answer, and a poller of the peer that is about to sleep has no
	 * event that would make it look (its stamp can be fresh, for it polls
	 * once after it arms). A record that completes there is taken when the
	 * peer polls or arms, whichever it does next.
	 */
	if (wakes == WAKES_NONE)
		return false;
	if (!polled || (polled < now && now - polled >= SHM_POLLING_NS) || !self_polls())
		return false;
	/*
	 * Our net thread sleeps for good (our pollers went quiet for a while,
	 * and it looked then): an application may post, then sleep on a
	 * channel armed before or on a descriptor of its own, and nothing of
	 * ours would ring late. Woken once, it finds our poller running and
	 * stays lazy while it runs: a wake-up of our own now and then, instead
	 * of the peer's for every record.
	 */
	if (!shm.net_lazy) {
		shm.net_lazy = true;
		net_kick_locked();
	}
	/* When the oldest record the peer has yet to take was spared. */
	if (!s->unrung_ns ||
	    atomic_load_explicit(&s->tx->head, memory_order_acquire) >= s->unrung_tail)
		s->unrung_ns = now;
	s->unrung_tail = s->tx_tail;
	shm.st.bells_spared++;
	return true;
}

/* Ring for the records ring_spared() left, if the peer has not taken them: @force, or late. */
static void unrung_check(struct shm_link *s, uint64_t now, bool force)
{
	bool taken;

	if (!s->unrung_tail)
		return;
	taken = atomic_load_explicit(&s->tx->head, memory_order_acquire) >= s->unrung_tail;
	if (!taken && !force && now - s->unrung_ns < SHM_POLLING_NS)
		return;		/* the peer's poller has a while yet */
	/* A net thread awake (or looking now and then) takes them on its own. */
	if (!taken && atomic_load_explicit(&s->tx->sleeping, memory_order_seq_cst)) {
		signal_add_locked(&s->tx_bell, 1);
		shm.st.bells_late++;
	}
	s->unrung_tail = 0;
	s->unrung_ns = 0;
}

static void rec_end(struct shm_link *s, enum shm_wakes wakes)
{
	struct shm_ring *r = s->tx;

	s->tx_tail = s->tx_next;
	atomic_store_explicit(&r->tail, s->tx_next, memory_order_seq_cst);
	if (wakes == WAKES_LATER)
		return;
	if (s->app_bell_fd >= 0 &&
	    (wakes == WAKES_RECV || (wakes == WAKES_SEND && s->app_covers_send))) {
		uint32_t want = ARM_ARMED;

		/* Fired already, the reader may be past its drain: wake it again. */
		if (atomic_compare_exchange_strong_explicit(&r->arm, &want, ARM_FIRED,
							    memory_order_seq_cst,
							    memory_order_seq_cst) ||
		    want == ARM_FIRED) {
			signal_add_locked(&s->app_bell, 1);
			return;
		}
	}
	if (wakes == WAKES_NET ||
	    (atomic_load_explicit(&r->sleeping, memory_order_seq_cst) && !ring_spared(s, wakes)))
		signal_add_locked(&s->tx_bell, 1);
}

static enum shm_wakes req_wakes(const struct wire_req *req)
{
	if (req->op == WIRE_WRITE)
		return req->last ? WAKES_NET : WAKES_NONE;
	return req->op == WIRE_READ ? WAKES_NONE : WAKES_RECV;
}

static struct shm_span span_of(const struct wire_seg *seg)
{
	struct shm_span sp = { seg->addr, seg->len, 0 };

	return sp;
}

/* A free slot for a record of ours that names our memory, or NULL. */
static struct shm_ref *ref_slot(struct shm_link *s)
{
	struct shm_ref *ref = ref_get(s);

	if (ref)
		return ref;
	refs_reclaim(s);
	return ref_get(s);
}

/* Will we help the peer copy what @req names of our memory? (wire_shm_coop.h) */
static enum coop_op req_coop(const struct wire_req *req)
{
	if (!coop_worth(req->length))
		return 0;
	if (req->op == WIRE_WRITE || req->op == WIRE_WRITE_IMM)
		return COOP_WRITE;
	return req->op == WIRE_READ ? COOP_READ : 0;
}

/*
 * Keep what @m names of our memory until the reader is done with it: a
 * payload's registrations stay pinned (the reader copies from them later),
 * and our own copy of the spans lets us help with a large copy.
 */
static void ref_fill(struct shm_ref *ref, struct shm_req *m, const struct wire_req *req,
		     enum coop_op coop)
{
	unsigned int i;

	atomic_store_explicit(&m->ref_state, REF_UNREAD, memory_order_relaxed);
	ref->rec = m;
	ref->nspans = req->nsegs;
	ref->token = req->token;
	ref->qpn = req->src_qpn;
	ref->length = req->length;
	ref->op = coop;
	for (i = 0; i < req->nsegs; i++) {
		ref->span[i] = span_of(&req->segs[i]);
		ref->mr[i] = req->op == WIRE_READ ? NULL : req->segs[i].mr;
		if (ref->mr[i])
			wire_up->mem_pin(ref->mr[i], NULL);
	}
	ref->used = true;
	m->coop = coop != 0;
}

/* Did a thread of this process run the rings lately (a busy poller)? */
static bool self_polls(void)
{
	uint64_t now = soft_now_ns();

	return shm.polled_ns && (shm.polled_ns > now || now - shm.polled_ns < SHM_POLLER_NS);
}

/*
 * Does a thread of the peer poll its rings now: it stamped them lately and
 * has not armed its receive CQ to sleep on the channel since? (It polls
 * once more after it arms, as the verbs have it, which stamps again.)
 */
static bool peer_polls(struct shm_link *s);

static bool peer_polling(struct shm_link *s)
{
	return peer_polls(s) && atomic_load_explicit(&s->tx->arm, memory_order_seq_cst) != ARM_ARMED;
}

/* Copy a one-sided request's bytes: between our segments and the peer's @addr. */
static bool one_sided_copy(const struct shm_link *s, const struct wire_req *req, uint64_t addr)
{
	struct iovec local[WIRE_MAX_SEGS];
	struct iovec remote = { (void *)(uintptr_t)addr, req->length };
	unsigned int i, n = 0;
	ssize_t got;

	for (i = 0; i < req->nsegs; i++) {
		if (req->segs[i].owner != WIRE_OWNER_LOCAL)
			return false;
		if (req->segs[i].len)
			local[n++] = (struct iovec){ (void *)(uintptr_t)req->segs[i].addr,
						     req->segs[i].len };
	}
	if (req->op == WIRE_READ)
		got = process_vm_readv(s->peer_pid, local, n, &remote, 1, 0);
	else
		got = process_vm_writev(s->peer_pid, local, n, &remote, 1, 0);
	return got == (ssize_t)req->length;
}

/*
 * Serve a WRITE or READ ourselves, as an HCA would without the peer's CPU,
 * if the peer's table allows it (wire_shm_keys.h): true if it is done, and
 * @resp is its answer. False leaves it to a record, whatever went wrong
 * (a copy that failed half-way is made again by the responder, whole).
 * Only with nothing else of the QP awaiting answers: what went before it
 * was served, so nothing it overtakes, and the responder, which never sees
 * its PSNs, takes the next record's as the one it expects (psn_sync).
 */
static bool one_sided(struct shm_link *s, const struct wire_req *req, struct wire_resp *resp)
{
	struct shm_keys_hold h;
	bool done;

	if (!s->peer_keys || !req->one_sided || !req->quiet || !req->length ||
	    (req->op != WIRE_WRITE && req->op != WIRE_READ))
		return false;
	/*
	 * A large copy between pollers on both sides goes as a record: the
	 * responder shares it with our poller (wire_shm_coop.h), and two
	 * processes copying at once beat one alone. A responder that armed
	 * would have to wake first, and our poller may be gone by then: we
	 * copy it alone.
	 */
	if (coop_worth(req->length) && self_polls() && peer_polling(s))
		return false;
	if (!shm_keys_resolve(s->peer_keys, req, &h))
		return false;
	atomic_fetch_add_explicit(&s->tx->inflight, 1, memory_order_seq_cst);
	done = shm_keys_still(&h) && one_sided_copy(s, req, h.addr);
	atomic_fetch_sub_explicit(&s->tx->inflight, 1, memory_order_release);
	if (!done)
		return false;
	resp->status = WIRE_ACK;
	if (req->op == WIRE_READ) {
		resp->placed = true;
		resp->data.len = req->length;
		shm.st.one_sided_reads++;
		shm.st.one_sided_read_bytes += req->length;
	} else {
		shm.st.one_sided_writes++;
		shm.st.one_sided_write_bytes += req->length;
	}
	return true;
}

void shm_keys_quiesce(void)
{
	struct soft_list *pos, *tmp;

	soft_list_for_each_safe(pos, tmp, &shm.links) {
		struct shm_link *s = soft_list_entry(pos, struct shm_link, node);
		uint64_t start = 0, look = 0;

		/*
		 * A copy takes one system call: longer, and the peer was stopped,
		 * or died in it (its socket tells, looked at each millisecond).
		 */
		while (atomic_load_explicit(&s->rx->inflight, memory_order_seq_cst)) {
			uint64_t now = soft_now_ns();

			if (!start)
				start = look = now;
			if (now >= look) {
				if (now - start > SHM_MOVE_WAIT_NS || net_link_gone_locked(s->link))
					break;
				look = now + 1000000;
			}
			sched_yield();
		}
	}
}

static void shm_transmit(struct wire_qp *qp, const struct wire_req *req, struct wire_resp *resp)
{
	struct shm_link *s = qp->remote->shm;
	bool is_read = req->op == WIRE_READ;
	bool inl = !is_read && req->length <= SHM_INLINE_MAX;
	uint32_t body = (uint32_t)sizeof(struct shm_req) +
		(inl ? req->length : req->nsegs * (uint32_t)sizeof(struct shm_span));
	enum coop_op coop = req_coop(req);
	struct shm_ref *ref = NULL;
	struct shm_req *m;
	unsigned int i;

	resp->status = WIRE_NO_ANSWER;
	if (qp->remote->dead || one_sided(s, req, resp))
		return;
	/*
	 * Every slot taken (by requests the peer has not read yet, copies of
	 * them sent again among them): the requester waits for one.
	 */
	if (!inl && !is_read && !(ref = ref_slot(s))) {
		resp->status = WIRE_BUSY;
		return;
	}
	/* A large Read without a slot goes all the same, without our help. */
	if (is_read && coop)
		ref = ref_slot(s);
	m = rec_begin(s, SHM_REC_REQ, body);
	if (!m) {
		/* The peer is behind with its ring: no slot was filled, wait for room. */
		resp->status = WIRE_BUSY;
		return;
	}
	memset(m, 0, sizeof(*m));
	wire_req_head_write(&m->head, req);
	m->rd_depth = req->rd_depth;
	m->lazy_answer = req->lazy_answer;
	m->psn_sync = req->quiet;
	m->inline_payload = inl;
	if (inl) {
		wire_pull_msg(req->segs, req->nsegs, 0, m + 1, req->length);
	} else {
		struct shm_span *sp = (struct shm_span *)(m + 1);

		m->nspans = req->nsegs;
		for (i = 0; i < req->nsegs; i++)
			sp[i] = span_of(&req->segs[i]);
	}
	if (ref)
		ref_fill(ref, m, req, coop);
	rec_end(s, req_wakes(req));
	resp->status = WIRE_PENDING;
}

static void shm_detach(struct wire_qp *qp)
{
	(void)qp;
}

bool shm_pull(int pid, uint64_t addr, void *dst, uint32_t len)
{
	struct iovec local = { dst, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };

	return !len || process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

/*
 * Does a thread of the peer busy-poll (it ran the rings lately)? Only those
 * look at offers: to a peer that sleeps (or whose ring we cannot read) an
 * offer would cost a system call more and save nothing.
 */
static bool peer_polls(struct shm_link *s)
{
	uint64_t polled, now;

	if (!s->tx)
		return false;
	polled = atomic_load_explicit(&s->tx->polled_ns, memory_order_relaxed);
	now = soft_now_ns();
	return polled && (polled > now || now - polled < SHM_POLLER_NS);
}

/*
 * A request of the peer's that we serve. Its record lies in shared memory,
 * which the peer may rewrite while we serve it: its fields and spans are
 * read once, into our own memory, checked there and used from there only.
 */
struct shm_serving {
	struct net_link *link;
	const struct shm_req *m;	/* in the ring: where the record lies, never read */
	struct shm_req h;		/* its fields */
	struct shm_span spans[WIRE_MAX_SEGS];	/* its h.nspans spans (not inline) */
};

/* The request @sv serves, as a cooperative copy names it. */
static void coop_job_of(const struct shm_serving *sv, struct coop_job *job)
{
	struct shm_link *s = sv->link->shm;

	job->slot = &s->rx->coop;
	job->link = sv->link;
	job->peer_pid = s->peer_pid;
	job->rec = (uint64_t)((const uint8_t *)sv->m - s->rx->data);
	job->token = sv->h.head.token;
	job->peer_polls = peer_polls(s);
	job->share = &s->coop_share;
}

/* [@off, @off + @len) of a large READ's data, into the requester's sink. */
static bool read_chunk(const struct coop_job *job, uint32_t off, uint32_t len)
{
	struct iovec remote[WIRE_MAX_SEGS];
	struct iovec local = { job->mine + off, len };
	unsigned int n = coop_slice(job->sink, job->nspans, off, len, remote);

	return process_vm_writev(job->peer_pid, &local, 1, remote, n, 0) == (ssize_t)len;
}

/* A large READ's data: straight into the requester's sink. False if it could not. */
static bool place_read(const struct shm_serving *sv, const struct wire_seg *data)
{
	struct coop_job job = {
		.op = COOP_READ,
		.mine = (uint8_t *)(uintptr_t)data->addr,
		.length = data->len,
		.copy = read_chunk,
		.sink = sv->spans,
		.nspans = sv->h.nspans,
	};
	uint64_t room = 0;
	uint32_t i;

	for (i = 0; i < sv->h.nspans; i++)
		room += sv->spans[i].len;
	if (room < data->len)
		return false;
	coop_job_of(sv, &job);
	/* Only a requester that kept its sink's spans can help (ref_fill()). */
	if (!sv->h.coop)
		return read_chunk(&job, 0, data->len);
	return coop_copy_locked(&job);
}

/* [@off, @off + @len) of a WRITE's payload, from the requester's memory into its target. */
static bool write_chunk(const struct coop_job *job, uint32_t off, uint32_t len)
{
	return wire_pull_msg(job->req->segs, job->req->nsegs, off, job->mine + off, len);
}

bool shm_place_locked(const struct wire_req *req, void *dst)
{
	struct coop_job job = {
		.op = COOP_WRITE,
		.mine = dst,
		.length = req->length,
		.copy = write_chunk,
		.req = req,
	};

	coop_job_of(req->shm, &job);
	return coop_copy_locked(&job);
}

/* Answer on the peer's ring, or its socket if this side cannot write there. */
static void send_answer_locked(const struct shm_serving *sv, const struct wire_resp *resp)
{
	struct shm_link *s = sv->link->shm;
	bool is_read = sv->h.head.op == WIRE_READ;
	uint32_t data_len = resp->status == WIRE_ACK && is_read ? resp->data.len : 0;
	uint32_t status = resp->status;
	bool placed = data_len > SHM_INLINE_MAX;
	struct shm_resp *a;
	uint32_t body;

	/* As on the socket (wire_net.c): only a silenced responder's no-answer is told. */
	if ((resp->status == WIRE_NO_ANSWER && !resp->silenced) || !s->tx)
		return;
	if (placed && !place_read(sv, &resp->data)) {
		/* The requester's buffers went away under its Read: it fails. */
		status = WIRE_NAK_REM_OP;
		placed = false;
		data_len = 0;
	}
	body = (uint32_t)sizeof(*a) + (placed ? 0 : data_len);
	a = rec_begin(s, SHM_REC_RESP, body);
	if (!a)
		return;		/* the requester hears nothing and retries */
	memset(a, 0, sizeof(*a));
	a->token = sv->h.head.token;
	a->src_qpn = sv->h.head.src_qpn;
	a->status = status;
	a->data_len = data_len;
	a->rnr_timer = resp->rnr_timer;
	a->placed = placed;
	if (data_len && !placed)
		wire_pull(&resp->data, 0, a + 1, data_len);
	/*
	 * A success that nobody waits for (wire_req.lazy_answer) raises no
	 * completion: waking the requester for it would be a wake-up for
	 * nothing, a switch per call to a client whose Sends go unsignaled.
	 * Errors complete every WR, signaled or not. A requester that lies
	 * here only loses its own wake-ups.
	 */
	rec_end(s, sv->h.lazy_answer && status == WIRE_ACK ? WAKES_LATER : WAKES_SEND);
}

/* ---- reading records ------------------------------------------------------------ */

/* Take a record's spans to read them: false if they were handed over already. */
static bool ref_take(struct shm_req *m)
{
	uint32_t want = REF_UNREAD;
	uint64_t deadline = 0;

	/* A writer moving the bytes aside holds them for a memcpy: wait it out. */
	while (!atomic_compare_exchange_weak_explicit(&m->ref_state, &want, REF_READING,
						      memory_order_acq_rel, memory_order_acquire)) {
		if (want != REF_UNREAD && want != REF_MOVING)
			return false;
		if (want == REF_MOVING) {
			uint64_t now = soft_now_ns();

			/* Longer, and the writer was stopped, or lies: the request is lost. */
			if (!deadline)
				deadline = now + SHM_MOVE_WAIT_NS;
			else if (now > deadline)
				return false;
			sched_yield();
		}
		want = REF_UNREAD;
	}
	return true;
}

/* Read @len bytes of record @m once into @sv, and check them: false if they do not hold. */
static bool serving_read(struct shm_serving *sv, const struct shm_req *m, uint32_t len)
{
	const struct shm_req *h = &sv->h;

	if (len < sizeof(*h))
		return false;
	memcpy(&sv->h, m, sizeof(sv->h));
	if (h->head.op > WIRE_READ || h->head.length > WIRE_MAX_MSG)
		return false;
	if (h->inline_payload)
		return len == sizeof(*h) + h->head.length && h->head.op != WIRE_READ;
	if (h->nspans > WIRE_MAX_SEGS || len != sizeof(*h) + h->nspans * sizeof(struct shm_span))
		return false;
	/* A Send's or Write's spans only once the writer let us have them (ref_detach()). */
	if (h->head.op != WIRE_READ && !ref_take((struct shm_req *)m))
		return false;
	memcpy(sv->spans, m + 1, h->nspans * sizeof(struct shm_span));
	return true;
}

/* A request from the peer: serve it as the socket path does (wire_net.c). */
static void serve_req(struct net_link *link, const struct shm_req *m, uint32_t len)
{
	struct wire_resp resp = { .status = WIRE_NO_ANSWER };
	struct shm_serving sv = { .link = link, .m = m };
	const struct shm_req *h = &sv.h;
	struct wire_req req;
	uint64_t total = 0;
	uint32_t i;

	if (!serving_read(&sv, m, len))
		return;
	wire_req_head_read(&req, &h->head);
	req.rd_depth = h->rd_depth;
	req.psn_sync = h->psn_sync != 0;
	if (h->inline_payload && h->head.length) {
		req.segs[0] = wire_seg_local(m + 1, h->head.length);
		req.nsegs = 1;
	} else if (!h->inline_payload && h->head.op != WIRE_READ) {
		for (i = 0; i < h->nspans; i++) {
			req.segs[i] = (struct wire_seg){ .owner = WIRE_OWNER_REMOTE,
				.addr = sv.spans[i].addr, .len = sv.spans[i].len,
				.pid = link->shm->peer_pid };
			total += sv.spans[i].len;
		}
		req.nsegs = h->nspans;
		if (total != h->head.length)
			return;
		/* A WRITE's requester that kept its spans may copy part (shm_place_locked()). */
		if (h->coop)
			req.shm = &sv;
	}
	if (!wire_net_respond_locked(link, &req, &resp))
		return;
	/*
	 * A Send's or Write's spans are done with before the answer is out:
	 * a requester that hears it may send again at once, and must find
	 * the slot free. (A Read's spans are where its answer goes.)
	 */
	if (!h->inline_payload && h->head.op != WIRE_READ)
		atomic_store_explicit(&((struct shm_req *)m)->ref_state, REF_DONE,
				      memory_order_release);
	send_answer_locked(&sv, &resp);
}

static void take_resp(struct net_link *link, const struct shm_resp *a, uint32_t len)
{
	struct wire_resp resp;
	struct shm_resp r;
	struct wire_qp *qp;

	/* Read once: the peer may rewrite it meanwhile. */
	if (len < sizeof(r))
		return;
	memcpy(&r, a, sizeof(r));
	if (r.status > WIRE_NO_ANSWER || r.data_len > WIRE_MAX_MSG ||
	    len != sizeof(r) + (r.placed ? 0 : r.data_len))
		return;
	qp = wire_up->qp_lookup(r.src_qpn);
	if (!qp || qp->remote != link)
		return;
	refs_answered(link->shm, r.src_qpn, r.token);
	resp.status = r.status;
	resp.data = wire_seg_local(r.placed ? NULL : a + 1, r.data_len);
	resp.rnr_timer = (uint8_t)(r.rnr_timer & 31);
	resp.placed = r.placed != 0;
	wire_up->answer(qp, r.token, &resp);
}

bool shm_link_sleep_locked(struct net_link *link, bool *lazy)
{
	struct shm_ring *r = link->shm ? link->shm->rx : NULL;
	uint64_t now;

	if (!r)
		return false;
	/*
	 * While a poller runs the rings the net thread only looks now and
	 * then (*lazy: it must not sleep longer than SHM_LAZY_MS). Once they
	 * went quiet it sleeps for good, and rings for what ring_spared() left.
	 */
	now = soft_now_ns();
	if (now - shm.polled_ns < SHM_POLLER_NS) {
		unrung_check(link->shm, now, false);
		*lazy = true;
		shm.net_lazy = true;
		if (!shm.armed)
			return atomic_load_explicit(&r->tail, memory_order_acquire) !=
			       atomic_load_explicit(&r->head, memory_order_relaxed);
		/* Our pollers armed: the peer rings for what raises no event here. */
	} else {
		shm.net_lazy = false;
		unrung_check(link->shm, now, true);
	}
	atomic_store_explicit(&r->sleeping, 1, memory_order_seq_cst);
	return atomic_load_explicit(&r->tail, memory_order_seq_cst) !=
	       atomic_load_explicit(&r->head, memory_order_relaxed);
}

/*
 * The peer wrote a token to our channel for a record that, as it turned
 * out, raised no event there: the next reader of the channel reads it,
 * finds no event, and reads on (a spurious wake-up, as the verbs allow).
 * Writers may fire again.
 */
static void fired_unused(struct shm_link *s)
{
	uint32_t want = ARM_FIRED;

	if (s->app_cq) {
		uint32_t next = wire_up->cq_armed(s->app_cq) ? ARM_ARMED : ARM_IDLE;

		atomic_compare_exchange_strong_explicit(&s->rx->arm, &want, next,
							memory_order_seq_cst, memory_order_seq_cst);
	}
}

void shm_link_awake_locked(struct net_link *link)
{
	if (link->shm)
		atomic_store_explicit(&link->shm->rx->sleeping, 0, memory_order_relaxed);
}

/* The peer's ref for offer @o: the record of ours it serves, if we still hold it. */
static struct shm_ref *ref_offered(struct shm_link *s, const struct coop_offer *o)
{
	unsigned int i;

	for (i = 0; i < WIRE_WINDOW; i++) {
		struct shm_ref *ref = &s->refs[i];

		if (ref->used && ref->op && ref->op == o->op && ref->token == o->token &&
		    ref->length == o->length &&
		    (uint64_t)((uint8_t *)ref->rec - s->tx->data) == o->rec)
			return ref;
	}
	return NULL;
}

/*
 * The peer, serving a large request of ours, offers part of the copy: a
 * busy poller would only be waiting for its answer, so it takes chunks
 * while they last. One load when there is nothing: it asks on every pass.
 * The net thread does not look: it sleeps while pollers run, and a peer
 * offers nothing to a process that does not poll.
 */
static void coop_look(struct shm_link *s)
{
	struct coop_offer o;
	struct shm_ref *ref;

	if (!s || !s->tx || !coop_offered(&s->tx->coop) || !coop_offer_read(&s->tx->coop, &o))
		return;
	ref = ref_offered(s, &o);
	if (ref)
		coop_help_locked(&s->tx->coop, &o, s->peer_pid, ref->span, ref->nspans);
}

/* Run a batch of what @link's ring holds: true if it held anything, *@left if some is left. */
static bool drain_batch(struct net_link *link, bool *left)
{
	struct shm_ring *r = link->shm ? link->shm->rx : NULL;
	uint64_t head, tail;
	unsigned int n;

	if (!r)
		return false;
	head = atomic_load_explicit(&r->head, memory_order_relaxed);
	tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	if (tail == head)
		return false;
	for (n = 0; n < SHM_DRAIN_BATCH && head != tail && !link->dead; n++) {
		uint32_t pos = (uint32_t)(head % SHM_RING_BYTES);
		const struct shm_rec *rec = (const struct shm_rec *)(r->data + pos);
		uint32_t rlen = rec->len, type = rec->type;

		/* The peer wrote this: a record must lie within what it published. */
		if (tail - head > SHM_RING_BYTES || pos % 8 ||
		    rlen > SHM_RING_BYTES - pos - sizeof(*rec) ||
		    rec_size(rlen) > tail - head) {
			fprintf(stderr, "softrdma: a corrupt shared-memory record: link closed\n");
			net_link_dead_locked(link);
			break;
		}
		if (type == SHM_REC_REQ) {
			struct shm_req *m = (struct shm_req *)(rec + 1);

			serve_req(link, m, rlen);
			/* Its spans are not read again (if not said before): the writer may let them go. */
			if (rlen >= sizeof(*m) && !m->inline_payload)
				atomic_store_explicit(&m->ref_state, REF_DONE, memory_order_release);
		} else if (type == SHM_REC_RESP)
			take_resp(link, (const struct shm_resp *)(rec + 1), rlen);
		head += rec_size(rlen);
		atomic_store_explicit(&r->head, head, memory_order_release);
	}
	/*
	 * A token fired for no event here is stale, but only once the ring is
	 * empty: a writer that found FIRED rang nobody for a record it added
	 * since.
	 */
	if (head == atomic_load_explicit(&r->tail, memory_order_seq_cst))
		fired_unused(link->shm);
	*left = head != atomic_load_explicit(&r->tail, memory_order_seq_cst);
	return true;
}

bool shm_link_drain_locked(struct net_link *link)
{
	bool left = false;
	bool held = drain_batch(link, &left);

	/* One added while we looked is drained by our net thread. */
	if (left)
		signal_add_locked(&link->shm->rx_kick, 1);
	return held;
}

static bool shm_pending(void)
{
	/* seq_cst: ibv_req_notify_cq reads it after its arm (soft_req_notify_cq). */
	return atomic_load_explicit(&shm.nlinks, memory_order_seq_cst) != 0;
}

/*
 * A thread arms a CQ to sleep on it, so it stops running the rings. A net
 * thread that sleeps lazily on the pollers' account must hear the
 * doorbells again, or a record that raises no event here (a Read request
 * this process answers, while its caller waits for the reply) waits out
 * SHM_LAZY_MS: half a millisecond per RDMA Read on average. It sleeps in
 * poll() on them already: telling the writers to ring is enough, and costs
 * nothing to a poller that arms and polls on, as a server's poller does
 * with a connection it finds idle. A record published before the writer
 * could see that is caught here (the same store-then-load as the writer's).
 * The net thread stays lazy while our pollers come back soon (an RPC
 * client arms for every reply): a record of ours the peer has yet to take
 * is rung for at its next look, unless the peer took it by then, as it
 * mostly does.
 */
static void shm_poller_sleeps_locked(void)
{
	struct soft_list *pos, *tmp;
	uint64_t now = soft_now_ns();
	bool pending = false;

	/*
	 * Nothing of ours will look at the peer's ring for a while, nor at
	 * ours: a peer must not count on our poller any more.
	 */
	soft_list_for_each_safe(pos, tmp, &shm.links) {
		struct shm_link *s = soft_list_entry(pos, struct shm_link, node);

		unrung_check(s, now, false);
		s->rx_polled_ns = 0;
		atomic_store_explicit(&s->rx->polled_ns, 0, memory_order_relaxed);
	}
	shm.armed = true;
	if (!shm.net_lazy)
		return;
	soft_list_for_each_safe(pos, tmp, &shm.links) {
		struct shm_ring *r = soft_list_entry(pos, struct shm_link, node)->rx;

		atomic_store_explicit(&r->sleeping, 1, memory_order_seq_cst);
		if (atomic_load_explicit(&r->tail, memory_order_seq_cst) !=
		    atomic_load_explicit(&r->head, memory_order_relaxed))
			pending = true;
	}
	if (pending)
		net_kick_locked();
}

/*
 * A busy poller leaves what came in while it looked to its own next poll:
 * kicking the net thread for it would wake a thread for nothing. Should
 * this poll be its last, the net thread finds it as it finds what comes
 * after: at its next look (lazy, within SHM_LAZY_MS) or by its doorbell.
 */
static void shm_poll_locked(bool armed)
{
	struct soft_list *pos, *tmp;
	bool left;

	shm.polled_ns = soft_now_ns();
	/*
	 * A look at an armed CQ may be the last before a sleep (arm, poll,
	 * wait, as the verbs have it): the peers go on ringing for what raises
	 * no event here, which our net thread serves (shm_link_sleep_locked()).
	 */
	if (!armed)
		shm.armed = false;
	soft_list_for_each_safe(pos, tmp, &shm.links) {
		struct shm_link *s = soft_list_entry(pos, struct shm_link, node);

		/* The peer offers us part of its large copies while we poll (coop_job_of()). */
		if (shm.polled_ns - s->rx_polled_ns >= SHM_POLLED_NS) {
			s->rx_polled_ns = shm.polled_ns;
			atomic_store_explicit(&s->rx->polled_ns, shm.polled_ns,
					      memory_order_relaxed);
		}
		coop_look(s);
		unrung_check(s, shm.polled_ns, false);
		if (atomic_load_explicit(&s->rx->tail, memory_order_acquire) !=
		    atomic_load_explicit(&s->rx->head, memory_order_relaxed))
			drain_batch(s->link, &left);
	}
}

static void shm_drain_all_locked(void)
{
	struct soft_list *pos, *tmp;

	soft_list_for_each_safe(pos, tmp, &shm.links) {
		struct shm_link *s = soft_list_entry(pos, struct shm_link, node);
		struct shm_ring *r = s->rx;

		if (atomic_load_explicit(&r->tail, memory_order_acquire) !=
		    atomic_load_explicit(&r->head, memory_order_relaxed))
			shm_link_drain_locked(s->link);
	}
}

/*
 * @mr is being deregistered: records of ours that the peer has not read yet
 * get a copy of its bytes instead, as the socket path copies them out of
 * its queued messages (net_detach_locked()), so that the peer never reads
 * memory after it was let go, and nothing waits for a stopped peer.
 */
static void ref_detach(struct shm_ref *ref, const struct soft_mr *mr)
{
	struct shm_span *sp = (struct shm_span *)(ref->rec + 1);
	uint64_t deadline = soft_now_ns() + SHM_MOVE_WAIT_NS;
	uint32_t want = REF_UNREAD, i;

	while (!atomic_compare_exchange_strong_explicit(&ref->rec->ref_state, &want, REF_MOVING,
							memory_order_acq_rel,
							memory_order_acquire)) {
		if (want == REF_DONE) {
			ref_release(ref);
			return;
		}
		/* The peer is copying them now: a copy takes no time, unless it was stopped. */
		if (soft_now_ns() > deadline)
			break;
		sched_yield();
		want = REF_UNREAD;
	}
	for (i = 0; i < ref->nspans; i++) {
		void *copy;

		if (ref->mr[i] != mr)
			continue;
		copy = want == REF_UNREAD ? malloc(ref->span[i].len ? ref->span[i].len : 1) : NULL;
		if (copy) {
			/* Our own spans: the record's, in shared memory, are the peer's to read. */
			memcpy(copy, (const void *)(uintptr_t)ref->span[i].addr, ref->span[i].len);
			ref->span[i].addr = (uint64_t)(uintptr_t)copy;
			sp[i].addr = ref->span[i].addr;
			ref->bounce[i] = copy;
		}
		wire_up->mem_unpin(ref->mr[i], NULL);
		ref->mr[i] = NULL;
	}
	if (want == REF_UNREAD)
		atomic_store_explicit(&ref->rec->ref_state, REF_UNREAD, memory_order_release);
	else
		ref->op = 0;	/* given up on: we no longer copy from it ourselves either */
}

/* Records name registrations, never windows: a window's going leaves them alone. */
static void shm_mem_detach(struct soft_mr *mr, struct soft_mw *mw)
{
	struct soft_list *pos, *tmp;
	unsigned int i, j;

	if (!mr)
		return;
	soft_list_for_each_safe(pos, tmp, &shm.links) {
		struct shm_link *s = soft_list_entry(pos, struct shm_link, node);

		for (i = 0; i < WIRE_WINDOW; i++) {
			struct shm_ref *ref = &s->refs[i];

			if (!ref->used)
				continue;
			for (j = 0; j < ref->nspans && ref->mr[j] != mr; j++)
				;
			if (j < ref->nspans)
				ref_detach(ref, mr);
		}
	}
}

/* ---- waking the peer's application --------------------------------------------- */

struct shm_bell_msg {
	uint32_t covers_send;		/* sends complete on that CQ too */
	uint32_t pad;
};

void shm_link_bind_qp_locked(struct net_link *link, struct wire_qp *qp)
{
	struct shm_link *s = link->shm;
	struct shm_bell_msg *m;
	struct net_buf *buf;
	int channel_fd;

	if (!s || s->app_qp == qp || !qp->rcq || (channel_fd = wire_up->cq_channel_fd(qp->rcq)) < 0)
		return;
	if (s->app_cq)
		shm_link_unbind_qp_locked(link, s->app_qp);
	buf = net_buf_new_locked(NET_MSG_SHM_BELL, sizeof(*m));
	if (!buf)
		return;
	buf->fds[0] = dup(channel_fd);
	if (buf->fds[0] < 0) {
		net_buf_free_locked(buf);
		return;
	}
	buf->nfds = 1;
	m = net_body(buf);
	memset(m, 0, sizeof(*m));
	m->covers_send = qp->scq == qp->rcq;
	s->app_qp = qp;
	s->app_cq = qp->rcq;
	qp->rcq->shm_links++;
	if (wire_up->cq_armed(qp->rcq))
		atomic_store_explicit(&s->rx->arm, ARM_ARMED, memory_order_seq_cst);
	net_send_locked(link, buf);
}

void shm_link_unbind_qp_locked(struct net_link *link, struct wire_qp *qp)
{
	struct shm_link *s = link->shm;

	if (!s || !s->app_cq || s->app_qp != qp)
		return;
	/* A token the peer fired already lands as a stray: read and found stale. */
	fired_unused(s);
	atomic_store_explicit(&s->rx->arm, ARM_IDLE, memory_order_seq_cst);
	s->app_cq->shm_links--;
	s->app_cq = NULL;
	s->app_qp = NULL;
}

void shm_link_app_bell_locked(struct net_link *link, const void *body, uint32_t len, int *fds,
			      unsigned int nfds)
{
	const struct shm_bell_msg *m = body;
	struct shm_link *s = link->shm;

	if (!s || !s->tx || nfds != 1 || len != sizeof(*m))
		return;
	if (s->app_bell_fd >= 0) {
		signal_cancel_locked(&s->app_bell);
		signal_fini(&s->app_bell);
		close(s->app_bell_fd);
	}
	s->app_bell_fd = fds[0];
	fds[0] = -1;
	signal_init(&s->app_bell, s->app_bell_fd);
	s->app_covers_send = m->covers_send != 0;
}

static bool shm_cq_armed_locked(struct wire_cq *cq)
{
	struct soft_list *pos, *tmp;

	if (!cq->shm_links)
		return false;
	soft_list_for_each_safe(pos, tmp, &shm.links) {
		struct shm_link *s = soft_list_entry(pos, struct shm_link, node);
		uint32_t want = ARM_IDLE;

		if (s->app_cq == cq)
			atomic_compare_exchange_strong_explicit(&s->rx->arm, &want, ARM_ARMED,
								memory_order_seq_cst,
								memory_order_seq_cst);
	}
	return true;
}

static bool shm_cq_raised_locked(struct wire_cq *cq)
{
	struct soft_list *pos, *tmp;
	bool presignaled = false;

	if (!cq->shm_links)
		return false;
	soft_list_for_each_safe(pos, tmp, &shm.links) {
		struct shm_link *s = soft_list_entry(pos, struct shm_link, node);
		uint32_t want = ARM_ARMED;

		if (s->app_cq != cq)
			continue;
		/* Disarmed: writers stop firing. One that fired already gave this event its token. */
		if (!atomic_compare_exchange_strong_explicit(&s->rx->arm, &want, ARM_IDLE,
							     memory_order_seq_cst,
							     memory_order_seq_cst) &&
		    want == ARM_FIRED && !presignaled) {
			atomic_store_explicit(&s->rx->arm, ARM_IDLE, memory_order_seq_cst);
			presignaled = true;
		}
	}
	return presignaled;
}

/*
 * A thread armed @cq to sleep on its channel: the peer, which rings our
 * channel itself, must learn of the arm unless a completion took it first.
 * Records that came before the arm wake nobody now: they run here, so that
 * what they complete raises the event the caller will wait for.
 */
static void shm_arm(struct wire_cq *cq)
{
	if (wire_up->cq_armed(cq) && shm_cq_armed_locked(cq))
		shm_drain_all_locked();
	shm_poller_sleeps_locked();
}

static void shm_fork(enum wire_fork_stage stage)
{
	if (stage == WIRE_FORK_CHILD)
		shm_keys_fork_child();
}

void softrdma_shm_stats(struct softrdma_shm_stats *stats)
{
	fab_lock();
	coop_stats_locked(stats);
	stats->one_sided_writes = shm.st.one_sided_writes;
	stats->one_sided_write_bytes = shm.st.one_sided_write_bytes;
	stats->one_sided_reads = shm.st.one_sided_reads;
	stats->one_sided_read_bytes = shm.st.one_sided_read_bytes;
	stats->bells_spared = shm.st.bells_spared;
	stats->bells_late = shm.st.bells_late;
	fab_unlock();
}

const struct wire_transport wire_shm = {
	.name = "shm",
	.transmit = shm_transmit,
	.detach = shm_detach,
	.pollable = shm_pending,
	.poll = shm_poll_locked,
	.drain = shm_drain_all_locked,
	.arm = shm_arm,
	.raised = shm_cq_raised_locked,
	.mem_detach = shm_mem_detach,
	.fork = shm_fork,
};
