/* SPDX-License-Identifier: MIT */
/*
 * The cooperative copy's protocol (wire_shm_coop.c), white box, in one
 * process: the source is included here, the responder runs in a thread of
 * its own and the test plays the requester's process on the shared slot,
 * claiming chunks and finishing them (or not) when it chooses, so that
 * what the two-process test (test-coop.c) can only meet by chance happens
 * every time:
 *
 * - alone, the responder copies every chunk and leaves the offer closed;
 *   to a requester that does not poll it offers nothing;
 * - the requester's coop_help_locked() claims from the back, copies with
 *   process_vm_writev(), counts; an offer that does not fit its spans is
 *   left alone;
 * - the responder does not return while a chunk the requester claimed is
 *   not done (what makes a Send behind a Write find its bytes);
 * - a claimed chunk whose requester hangs up, cannot copy, or never finishes
 *   (one second) is copied again by the responder; a late "done" of an
 *   earlier offer counts for nothing in the next;
 * - a responder that keeps putting the claim back gets no more than the
 *   offer's chunks copied by the requester;
 * - the cut tiles the copy whatever the split, an offer cut otherwise is
 *   left alone, and the split moves toward the side that finished first,
 *   within its bounds, unless the requester's clock reading is implausible.
 */
#include "wire_shm_coop.c"

#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <unistd.h>
#include <sys/socket.h>
#include <cmocka.h>

#define LEN	(1u << 20)
/* Where the requester's end starts until a share is learnt (t.job.share is NULL). */
#define HALF	(LEN / 2)
/* Rounds a learning test may take before the share must have moved. */
#define LEARN_ROUNDS	5

/* sched.c's clock, which the included source calls. */
uint64_t soft_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Times net_link_gone_locked() found the link gone (the responder's wait saw a hang-up). */
static atomic_uint gone_seen;

/* net.c's, which the included source calls: the link's socket hung up. */
bool net_link_gone_locked(const struct net_link *link)
{
	struct pollfd pfd = { .fd = link->fd, .events = POLLRDHUP };
	bool gone = link->dead || link->fd < 0 ||
		    (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)));

	if (gone)
		atomic_fetch_add(&gone_seen, 1);
	return gone;
}

static struct {
	struct coop_slot slot __attribute__((aligned(64)));
	struct net_link link;
	int far_end;			/* the requester's end of the link */
	uint8_t *src, *dst;
	struct coop_job job;
	pthread_t responder;
	_Atomic bool returned;
	bool result;
	/* The responder's first chunk waits until the requester claimed (claim back < n). */
	_Atomic bool hold_first;
	_Atomic unsigned int copies;
	_Atomic long slow_ms;		/* the responder's copies take this long */
	struct coop_share share;
} t;

static void fill(uint8_t *p, size_t len, uint8_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 13 + (i >> 12));
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* The responder's own chunks: a memcpy from the "requester's" source. */
static bool copy_chunk(const struct coop_job *job, uint32_t off, uint32_t len)
{
	if (atomic_fetch_add(&t.copies, 1) == 0 && atomic_load(&t.hold_first))
		while (CLAIM_BACK(atomic_load(&t.slot.claim)) == 2)
			cpu_relax();
	if (atomic_load(&t.slow_ms))
		sleep_ms(atomic_load(&t.slow_ms));
	memcpy(job->mine + off, t.src + off, len);
	return true;
}

static int setup(void **state)
{
	int sv[2];

	(void)state;
	memset(&t.slot, 0, sizeof(t.slot));
	memset(&t.link, 0, sizeof(t.link));
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	t.link.fd = sv[0];
	t.far_end = sv[1];
	t.src = aligned_alloc(4096, LEN);
	t.dst = aligned_alloc(4096, LEN);
	assert_non_null(t.src);
	assert_non_null(t.dst);
	fill(t.src, LEN, 0x3c);
	memset(t.dst, 0, LEN);
	t.job = (struct coop_job){
		.slot = &t.slot, .link = &t.link, .peer_pid = getpid(), .op = COOP_WRITE,
		.rec = 64, .token = 7, .peer_polls = true, .mine = t.dst, .length = LEN,
		.copy = copy_chunk,
	};
	atomic_store(&t.returned, false);
	atomic_store(&t.hold_first, false);
	atomic_store(&t.copies, 0);
	atomic_store(&t.slow_ms, 0);
	memset(&t.share, 0, sizeof(t.share));
	/* Read once here: the threads only read it. */
	assert_true(coop_enabled());
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	close(t.link.fd);
	if (t.far_end >= 0)
		close(t.far_end);
	free(t.src);
	free(t.dst);
	return 0;
}

static void *responder_run(void *arg)
{
	(void)arg;
	t.result = coop_copy_locked(&t.job);
	atomic_store(&t.returned, true);
	return NULL;
}

static void responder_start(bool hold_first)
{
	atomic_store(&t.hold_first, hold_first);
	atomic_store(&t.returned, false);
	atomic_store(&t.copies, 0);
	assert_int_equal(pthread_create(&t.responder, NULL, responder_run, NULL), 0);
}

static void responder_join(void)
{
	assert_int_equal(pthread_join(t.responder, NULL), 0);
	assert_true(t.result);
}

/* Wait for the responder's offer and claim its back chunk, as the requester's poller does. */
static uint32_t claim_back(uint32_t *gen)
{
	struct coop_offer o = { 0 };
	uint32_t i = 0;

	while (!coop_offered(&t.slot))
		cpu_relax();
	assert_true(coop_offer_read(&t.slot, &o));
	assert_int_equal(o.rec, 64);
	assert_int_equal(o.token, 7);
	assert_int_equal(o.length, LEN);
	assert_int_equal(o.nchunks, 2);
	assert_true(take_back(&t.slot, o.gen, &i));
	*gen = o.gen;
	return i;
}

static void test_alone(void **state)
{
	struct softrdma_shm_stats st0 = coop.st;

	(void)state;
	assert_true(coop_copy_locked(&t.job));
	assert_memory_equal(t.dst, t.src, LEN);
	assert_int_equal(t.copies, 2);
	assert_false(coop_offered(&t.slot));
	assert_int_equal(coop.st.coop_offers, st0.coop_offers + 1);
	assert_int_equal(coop.st.coop_peer_bytes, st0.coop_peer_bytes);
	assert_int_equal(coop.st.coop_takeovers, st0.coop_takeovers);
}

static void test_requester_not_polling(void **state)
{
	struct softrdma_shm_stats st0 = coop.st;

	(void)state;
	t.job.peer_polls = false;
	assert_true(coop_copy_locked(&t.job));
	assert_memory_equal(t.dst, t.src, LEN);
	assert_int_equal(t.copies, 1);
	assert_int_equal(coop.st.coop_offers, st0.coop_offers);
	assert_int_equal(CLAIM_GEN(atomic_load(&t.slot.claim)), 0);
}

static void test_too_small(void **state)
{
	(void)state;
	t.job.length = COOP_MIN - 1;
	assert_true(coop_copy_locked(&t.job));
	assert_int_equal(t.copies, 1);
	assert_int_equal(CLAIM_GEN(atomic_load(&t.slot.claim)), 0);
}

/* The requester's side alone: it claims every chunk from the back and copies it. */
static void test_help(void **state)
{
	struct shm_span spans[2] = {
		{ (uint64_t)(uintptr_t)t.src, 100000, 0 },
		{ (uint64_t)(uintptr_t)(t.src + 100000), LEN - 100000, 0 },
	};
	struct softrdma_shm_stats st0 = coop.st;
	struct coop_cut cut = cut_make(LEN, HALF);
	struct coop_offer o = { 0 };
	uint32_t gen;

	(void)state;
	gen = coop_open(&t.job, &cut);
	assert_true(coop_offered(&t.slot));
	assert_true(coop_offer_read(&t.slot, &o));
	assert_int_equal(o.gen, gen);
	/* An offer that does not describe the requester's copy is left alone. */
	spans[0].len--;
	coop_help_locked(&t.slot, &o, getpid(), spans, 2);
	assert_int_equal(CLAIM_BACK(atomic_load(&t.slot.claim)), 2);
	spans[0].len++;
	coop_help_locked(&t.slot, &o, getpid(), spans, 2);
	assert_false(coop_offered(&t.slot));
	assert_int_equal(CLAIM_FRONT(atomic_load(&t.slot.claim)), 0);
	assert_int_equal(atomic_load(&t.slot.done), DONE(gen, 0, 2));
	assert_memory_equal(t.dst, t.src, LEN);
	assert_int_equal(coop.st.coop_helped_write_bytes, st0.coop_helped_write_bytes + LEN);
}

/* The responder waits for the chunk the requester claimed, however long it takes. */
static void test_waits_for_claimed(void **state)
{
	struct softrdma_shm_stats st0 = coop.st;
	uint32_t gen, i;

	(void)state;
	responder_start(true);
	i = claim_back(&gen);
	assert_int_equal(i, 1);
	sleep_ms(50);
	assert_false(atomic_load(&t.returned));
	memcpy(t.dst + HALF, t.src + HALF, LEN - HALF);
	mark_done(&t.slot, gen, true);
	responder_join();
	assert_memory_equal(t.dst, t.src, LEN);
	assert_int_equal(t.copies, 1);
	assert_int_equal(coop.st.coop_takeovers, st0.coop_takeovers);
	assert_int_equal(coop.st.coop_peer_bytes, st0.coop_peer_bytes + LEN - HALF);
}

/*
 * The requester's process dies holding a chunk: its link hangs up, and the
 * responder copies the chunk without waiting out the second it gives a
 * stopped one: its wait ends on the hang-up (looked for each ms), not on
 * the clock, however long a loaded machine keeps it from running.
 */
static void test_requester_gone(void **state)
{
	unsigned long takeovers = coop.st.coop_takeovers;
	unsigned int gone = atomic_load(&gone_seen);
	uint32_t gen;

	(void)state;
	responder_start(true);
	claim_back(&gen);
	sleep_ms(20);
	assert_false(atomic_load(&t.returned));
	close(t.far_end);
	t.far_end = -1;
	responder_join();
	assert_true(atomic_load(&gone_seen) > gone);
	assert_memory_equal(t.dst, t.src, LEN);
	assert_int_equal(t.copies, 2);
	assert_int_equal(coop.st.coop_takeovers, takeovers + 1);
}

/*
 * The requester's copy fails (process_vm_writev() refused: here the
 * responder's pid names no process, as EPERM would under ptrace rules):
 * it says so, and the responder copies the chunk as it does alone.
 */
static void test_requester_refused(void **state)
{
	unsigned long takeovers = coop.st.coop_takeovers;
	struct shm_span span = { (uint64_t)(uintptr_t)t.src, LEN, 0 };
	struct coop_offer o = { 0 };

	(void)state;
	responder_start(true);
	while (!coop_offered(&t.slot))
		cpu_relax();
	assert_true(coop_offer_read(&t.slot, &o));
	coop_help_locked(&t.slot, &o, INT_MAX, &span, 1);
	assert_int_equal(DONE_FAILED(atomic_load(&t.slot.done)), 1);
	responder_join();
	assert_memory_equal(t.dst, t.src, LEN);
	assert_int_equal(coop.st.coop_takeovers, takeovers + 1);
}

/*
 * A "done" for an earlier offer does not count in the next one, and a
 * claim naming it fails: the generation in both words sees to it.
 */
static void test_stale_generation(void **state)
{
	uint32_t gen, old, i;

	(void)state;
	responder_start(true);
	i = claim_back(&old);
	memcpy(t.dst + HALF, t.src + HALF, LEN - HALF);
	mark_done(&t.slot, old, true);
	responder_join();
	memset(t.dst, 0, LEN);
	responder_start(true);
	/* Open, the responder holding its chunk: a claim naming the earlier offer fails. */
	while (!coop_offered(&t.slot))
		cpu_relax();
	assert_false(take_back(&t.slot, old, &i));
	i = claim_back(&gen);
	assert_int_equal(gen, old + 1);
	mark_done(&t.slot, old, true);
	sleep_ms(20);
	assert_false(atomic_load(&t.returned));
	memcpy(t.dst + HALF, t.src + HALF, LEN - HALF);
	mark_done(&t.slot, gen, true);
	responder_join();
	assert_memory_equal(t.dst, t.src, LEN);
}

/*
 * A requester stopped between its claim and its copy: after a second the
 * responder copies the chunk itself and answers (a stopped peer holds it
 * no longer than a deregistration waits for one).
 */
static void test_requester_stopped(void **state)
{
	unsigned long takeovers = coop.st.coop_takeovers;
	uint32_t gen;

	(void)state;
	responder_start(true);
	claim_back(&gen);
	responder_join();
	assert_memory_equal(t.dst, t.src, LEN);
	assert_int_equal(coop.st.coop_takeovers, takeovers + 1);
	/* Its late "done" changes nothing. */
	mark_done(&t.slot, gen, true);
	assert_false(coop_offered(&t.slot));
}

/* Every (length, split) is cut into chunks that tile [0, length) in order, none too long. */
static void test_cut_tiles(void **state)
{
	static const uint32_t lengths[] = { COOP_MIN, LEN, LEN + 123, 40u << 20, (100u << 20) + 5 };
	unsigned int l, k;

	(void)state;
	for (l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++) {
		uint32_t len = lengths[l];
		uint32_t splits[] = { 4096, len / 3 & ~4095u, len / 2, len - 1 };

		for (k = 0; k < sizeof(splits) / sizeof(splits[0]); k++) {
			struct coop_cut cut = cut_make(len, splits[k]);
			uint32_t i, off, n, next = 0;

			assert_true(cut.n >= 2 && cut.n <= COOP_MAX_CHUNKS);
			assert_true(cut.nfront >= 1 && cut.nfront < cut.n);
			for (i = 0; i < cut.n; i++) {
				n = cut_at(&cut, i, &off);
				assert_int_equal(off, next);
				assert_true(n >= 1 && n <= COOP_CHUNK_MAX);
				/* The responder's end stops at the split, the requester's starts there. */
				assert_true(i < cut.nfront ? off + n <= splits[k] : off >= splits[k]);
				next = off + n;
			}
			assert_int_equal(next, len);
		}
	}
}

/* The split is page-aligned and leaves both ends something; half until a share is learnt. */
static void test_split_for(void **state)
{
	(void)state;
	assert_int_equal(split_for(LEN, share_of(&t.job)), HALF);
	t.job.share = &t.share;
	assert_int_equal(split_for(LEN, share_of(&t.job)), HALF);
	t.share.part[COOP_WRITE - 1] = SHARE_ONE * 3 / 4;
	assert_int_equal(split_for(LEN, share_of(&t.job)), LEN / 4 * 3);
	/* The other direction learns on its own. */
	t.job.op = COOP_READ;
	assert_int_equal(split_for(LEN, share_of(&t.job)), HALF);
	assert_int_equal(split_for(LEN + 4095, SHARE_ONE / 2) % 4096, 0);
	assert_int_equal(split_for(COOP_MIN, SHARE_MIN), COOP_MIN / 8);
	assert_int_equal(split_for(COOP_MIN, SHARE_MAX), COOP_MIN / 8 * 7);
}

/* A quarter of the way to the balance point each time, within [1/8, 7/8]. */
static void test_share_learn(void **state)
{
	unsigned int i;

	(void)state;
	t.job.share = &t.share;
	/* The requester took three times as long for as many bytes: the responder should take 3/4. */
	share_learn(&t.job, 1000, HALF, 3000, HALF);
	assert_int_equal(t.share.part[0], (3 * 512 + 768) / 4);
	for (i = 0; i < 40; i++)
		share_learn(&t.job, 1000, HALF, 3000, HALF);
	assert_in_range(t.share.part[0], 760, 768);
	/* Speeds per byte, not times: as fast per byte, whatever the bytes, is the middle. */
	for (i = 0; i < 40; i++)
		share_learn(&t.job, 3000, 3 * LEN / 4, 1000, LEN / 4);
	assert_in_range(t.share.part[0], 512, 520);
	/* A requester a million times slower gets an eighth, not nothing. */
	for (i = 0; i < 40; i++)
		share_learn(&t.job, 1, HALF, 1000000, HALF);
	assert_int_equal(t.share.part[0], SHARE_MAX);
	for (i = 0; i < 40; i++)
		share_learn(&t.job, 1000000, HALF, 1, HALF);
	assert_int_equal(t.share.part[0], SHARE_MIN);
	/* Readings that cannot be right teach nothing. */
	share_learn(&t.job, 0, HALF, 1000, HALF);
	share_learn(&t.job, 1000, HALF, COOP_WAIT_NS + 1, HALF);
	share_learn(&t.job, 1000, 100, 1000, HALF);
	assert_int_equal(t.share.part[0], SHARE_MIN);
	assert_int_equal(t.share.part[1], 0);
}

/* An offer whose split does not give its chunk and count, or splits nothing, is left alone. */
static void test_offer_cut_checked(void **state)
{
	struct shm_span span = { (uint64_t)(uintptr_t)t.src, LEN, 0 };
	struct coop_cut cut = cut_make(LEN, HALF);
	struct coop_offer o = { 0 };
	uint32_t gen, bad[] = { 0, HALF + 4096, LEN };
	unsigned int k;

	(void)state;
	gen = coop_open(&t.job, &cut);
	assert_true(coop_offer_read(&t.slot, &o));
	assert_int_equal(o.gen, gen);
	assert_int_equal(o.split, HALF);
	for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		struct coop_offer b = o;

		b.split = bad[k];
		if (bad[k] == HALF + 4096)
			b.nchunks = 3;	/* neither the chunk nor the count of that split */
		coop_help_locked(&t.slot, &b, getpid(), &span, 1);
		assert_int_equal(CLAIM_BACK(atomic_load(&t.slot.claim)), 2);
	}
	/* No responder takes the front here: the requester takes both ends. */
	coop_help_locked(&t.slot, &o, getpid(), &span, 1);
	assert_false(coop_offered(&t.slot));
	assert_memory_equal(t.dst, t.src, LEN);
	assert_int_equal(DONE_COUNT(atomic_load(&t.slot.done)), 2);
	assert_true(atomic_load(&t.slot.done_ns) != 0);
}

/* A responder that puts the claim back as soon as the requester takes a chunk. */
static _Atomic bool reclaim_stop;

static void *reclaim_run(void *arg)
{
	uint64_t open = *(const uint64_t *)arg;
	uint64_t deadline = soft_now_ns() + 2000000000ULL;

	while (!atomic_load(&reclaim_stop) && soft_now_ns() < deadline)
		if (atomic_load(&t.slot.claim) != open)
			atomic_store(&t.slot.claim, open);
	return NULL;
}

/*
 * The claim word is the responder's to write too: one that keeps putting
 * it back, in the same generation, gets no more than the offer's chunks
 * copied by the requester, who then returns.
 */
static void test_claim_put_back(void **state)
{
	struct shm_span span = { (uint64_t)(uintptr_t)t.src, LEN, 0 };
	struct coop_cut cut = cut_make(LEN, HALF);
	struct coop_offer o = { 0 };
	uint64_t open, before;
	pthread_t th;

	(void)state;
	coop_open(&t.job, &cut);
	assert_true(coop_offer_read(&t.slot, &o));
	open = atomic_load(&t.slot.claim);
	before = coop.st.coop_helped_write_bytes;
	atomic_store(&reclaim_stop, false);
	assert_int_equal(pthread_create(&th, NULL, reclaim_run, &open), 0);
	coop_help_locked(&t.slot, &o, getpid(), &span, 1);
	atomic_store(&reclaim_stop, true);
	assert_int_equal(pthread_join(th, NULL), 0);
	/* Which chunks it copied is the responder's doing: how much is ours. */
	assert_true(coop.st.coop_helped_write_bytes - before <= LEN);
}

/* The requester claims its end at once, and finishes it @ms later: its split. */
static uint32_t help_slowly(long ms)
{
	uint32_t gen, off, len, split;
	struct coop_cut cut;

	claim_back(&gen);
	split = t.slot.split;
	cut = cut_make(LEN, split);
	len = cut_at(&cut, cut.n - 1, &off);
	sleep_ms(ms);
	memcpy(t.dst + off, t.src + off, len);
	atomic_store(&t.slot.done_ns, soft_now_ns());
	mark_done(&t.slot, gen, true);
	return split;
}

/* The requester's coop_help_locked(), as soon as the offer is open. */
static void help_at_once(void)
{
	struct shm_span span = { (uint64_t)(uintptr_t)t.src, LEN, 0 };
	struct coop_offer o = { 0 };

	while (!coop_offered(&t.slot))
		cpu_relax();
	assert_true(coop_offer_read(&t.slot, &o));
	coop_help_locked(&t.slot, &o, getpid(), &span, 1);
}

/*
 * Through the slot: a requester slower than the responder leaves it more
 * next time; one quicker than the responder gets more.
 */
static void test_split_follows_speed(void **state)
{
	unsigned int round;

	(void)state;
	t.job.share = &t.share;
	/*
	 * A round learns from the wall-clock times of both sides: a responder
	 * descheduled for longer than the requester's 100 ms (a loaded
	 * machine) teaches the opposite. Rounds go on, a few at most, until
	 * the share moved the right way, which each honest round does.
	 */
	for (round = 0; round < LEARN_ROUNDS && t.share.part[0] <= SHARE_ONE / 2; round++) {
		uint32_t split;

		responder_start(true);
		split = help_slowly(100);
		responder_join();
		assert_memory_equal(t.dst, t.src, LEN);
		if (round == 0)
			assert_int_equal(split, HALF);
	}
	assert_true(t.share.part[0] > SHARE_ONE / 2);
	responder_start(true);
	assert_true(help_slowly(100) > HALF);
	responder_join();
	assert_memory_equal(t.dst, t.src, LEN);
	/* Now the responder's copies are the slow ones. */
	memset(&t.share, 0, sizeof(t.share));
	atomic_store(&t.slow_ms, 100);
	for (round = 0; round < LEARN_ROUNDS &&
	     !(t.share.part[0] && t.share.part[0] < SHARE_ONE / 2); round++) {
		memset(t.dst, 0, LEN);
		responder_start(true);
		help_at_once();
		responder_join();
		assert_memory_equal(t.dst, t.src, LEN);
	}
	assert_true(t.share.part[0] && t.share.part[0] < SHARE_ONE / 2);
}

/* A requester's clock reading from the future (or the past) is not learnt from. */
static void test_implausible_done_ns(void **state)
{
	uint32_t gen, i;

	(void)state;
	t.job.share = &t.share;
	responder_start(true);
	i = claim_back(&gen);
	memcpy(t.dst + HALF, t.src + HALF, LEN - HALF);
	/* Later than the responder reads it, yet within what share_learn() takes. */
	atomic_store(&t.slot.done_ns, soft_now_ns() + COOP_WAIT_NS / 2);
	mark_done(&t.slot, gen, true);
	responder_join();
	assert_int_equal(i, 1);
	assert_int_equal(t.share.part[0], 0);
	responder_start(true);
	i = claim_back(&gen);
	memcpy(t.dst + HALF, t.src + HALF, LEN - HALF);
	atomic_store(&t.slot.done_ns, 1);
	mark_done(&t.slot, gen, true);
	responder_join();
	assert_int_equal(t.share.part[0], 0);
	assert_memory_equal(t.dst, t.src, LEN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_alone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_requester_not_polling, setup, teardown),
		cmocka_unit_test_setup_teardown(test_too_small, setup, teardown),
		cmocka_unit_test_setup_teardown(test_help, setup, teardown),
		cmocka_unit_test_setup_teardown(test_waits_for_claimed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_requester_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_requester_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_generation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_requester_stopped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cut_tiles, setup, teardown),
		cmocka_unit_test_setup_teardown(test_split_for, setup, teardown),
		cmocka_unit_test_setup_teardown(test_share_learn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_offer_cut_checked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_claim_put_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_split_follows_speed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_implausible_done_ns, setup, teardown),
	};

	return cmocka_run_group_tests_name("coop-proto", tests, NULL, NULL);
}
