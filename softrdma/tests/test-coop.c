/* SPDX-License-Identifier: MIT */
/*
 * Cooperative copies between processes (wire_shm_coop.c): the responder of
 * a large RDMA Write or Read shares the copy with the requester's process
 * when that process busy-polls. The test and a copy of itself (the peer
 * process) connect over shared memory, and count with softrdma_shm_stats():
 *
 * - both polling, the requester (this process) copies part of each large
 *   Write and Read, exactly the bytes the responder (the peer) says it
 *   left to it, and nothing is taken over;
 * - the bytes arrive intact: patterns, through Writes and Read sinks of
 *   several SGEs at odd offsets;
 * - a Send behind a large Write, or a Write with immediate, completes at
 *   the peer only once every byte of the Write is in place;
 * - a requester that sleeps is offered nothing, and a requester that polls
 *   copies a large Write to a responder that sleeps one-sidedly, alone;
 *   one stopped right after
 *   posting (it was polling) stalls nothing: the responder takes it all;
 * - a requester whose Write's source was deregistered and unmapped while
 *   the record waited helps from the bytes set aside, not from its memory;
 * - the rings' memfds are sealed at their size.
 *
 * THREAD mode: a post runs its WQE at once, as the peer's does.
 */
#define _GNU_SOURCE	/* F_GET_SEALS, sched_setaffinity */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <rdma/rdma_cma.h>

#include "harness.h"
#include "cm_pair.h"
#include "peer.h"

#define REGION		(2u << 20)	/* the peer's registered region */
#define REGION_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE)
/* The test's buffer: a BIG source, a BIG sink, a Send's word (WORD_OFF). */
#define BUF_LEN		(REGION + 4096)
#define BUF_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
#define BIG		(1u << 20)	/* a large Write or Read: its copy is shared */
#define ROUNDS		8
/* A loaded machine (sanitizers, parallel tests) may deschedule the helper: go on a while. */
#define HELP_BUDGET_MS	3000
#define SEND_END	0xffffffffu	/* the Send that ends a phase */
#define WORD_OFF	(REGION + 64)	/* a Send's word in the test's buffer */

/* The core the peer process runs on, set by the test for the peers it starts. */
#define PEER_CPU_ENV	"TEST_COOP_PEER_CPU"

static const char *self;
/* The test and its peer run on cores apart (cores_apart()); false with one core. */
static bool apart;

/*
 * A requester helps only while the responder copies: the two processes
 * need a core each at the same moment. The kernel wakes a process on the
 * core of the one that woke it when it can (the peer continued by SIGCONT
 * or told a command through its pipe), and a peer woken there runs its
 * whole copy before the test's poller gets the core back; with the other
 * core busy (a parallel build) that placement held for over a hundred
 * rounds in a row, past HELP_BUDGET_MS. So the peer gets a core of its own,
 * the last one this process may use, and the test the others, before any
 * thread starts (they inherit it).
 */
static void cores_apart(bool peer)
{
	const char *cpu = getenv(PEER_CPU_ENV);
	cpu_set_t set;
	char num[16];
	int last;

	if (peer) {
		if (cpu) {
			CPU_ZERO(&set);
			CPU_SET(atoi(cpu), &set);
			apart = sched_setaffinity(0, sizeof(set), &set) == 0;
		}
		return;
	}
	if (sched_getaffinity(0, sizeof(set), &set) != 0 || CPU_COUNT(&set) < 2)
		return;
	for (last = CPU_SETSIZE - 1; !CPU_ISSET(last, &set); last--)
		;
	CPU_CLR(last, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		return;
	snprintf(num, sizeof(num), "%d", last);
	apart = setenv(PEER_CPU_ENV, num, 1) == 0;
}

/*
 * Whether this process helps depends on its poller seeing the offer
 * within the responder's own half (some 25 us for 1 MiB): under a
 * sanitizer or valgrind it mostly does not, nor on a single core, so there
 * the counts are printed, not asserted; the bytes, the order and the
 * stalls are checked all the same.
 */
static bool slowed(void)
{
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
	return true;
#else
	return !apart || peer_under_valgrind();
#endif
}

/* When a run of rounds that waits for this process to help began. */
struct help_run {
	uint64_t start_ms;
};

static void help_begin(struct help_run *h)
{
	h->start_ms = h_now_ms();
}

/*
 * Rounds go on, past ROUNDS, while help is still to be seen and time is
 * left: on a loaded machine (parallel tests) the poller that would help is
 * descheduled for many offers in a row, so the bound is time, not rounds.
 */
static bool help_budget_left(const struct help_run *h)
{
	return !slowed() && h_now_ms() - h->start_ms < HELP_BUDGET_MS;
}

/* ==== the peer process ======================================================= */

/*
 * The next Send or Write with immediate from the test, polling meanwhile:
 * its seed (the Send's first word, or the immediate).
 */
static uint32_t p_next(struct cm_side *s)
{
	struct ibv_wc wc;
	uint32_t seed;

	PEER_CHECK(cm_spin(s->id->recv_cq, &wc) == 1);
	PEER_CHECK(wc.status == IBV_WC_SUCCESS);
	seed = wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM ? ntohl(wc.imm_data) : s->cmd[0];
	cm_side_post_recv(s);
	return seed;
}

static void p_stats(void)
{
	struct softrdma_shm_stats st;

	softrdma_shm_stats(&st);
	peer_say("stats %lu %llu %llu %lu %llu %llu", st.coop_offers,
		 (unsigned long long)st.coop_offered_bytes, (unsigned long long)st.coop_peer_bytes,
		 st.coop_takeovers, (unsigned long long)st.coop_helped_write_bytes,
		 (unsigned long long)st.coop_helped_read_bytes);
}

/*
 * The responder of the test's Writes and Reads, on commands:
 *   write <len>   poll for the test's Send or Write with immediate (it comes
 *                 behind a Write of <len> bytes at the region's start) and
 *                 check the region then: "ok"
 *   fill <seed>   fill the region: "filled"
 *   spin          poll until the test's Send: "spun"
 *   sleep <len>   as write, but arm the receive CQ and sleep on its
 *                 channel: "sleeping", then "ok"
 *   stats         softrdma_shm_stats(): "stats ..."
 *   quit
 */
static int role_responder(void)
{
	struct cm_side s;
	const char *cmd;

	cm_side_serve(&s, REGION, REGION_ACCESS);
	while (strcmp(cmd = peer_hear(), "quit") != 0) {
		unsigned int n;

		if (sscanf(cmd, "write %u", &n) == 1) {
			struct softrdma_shm_stats st;
			uint32_t seed;

			PEER_CHECK(n <= REGION);
			peer_say("polling");
			seed = p_next(&s);
			if (!cm_filled(s.region, n, seed)) {
				peer_say("FAIL the Write's bytes were not all in place (seed %u)",
					 seed);
				return 1;
			}
			/*
			 * The next Write comes after "ok", through the test's
			 * process, which a race detector cannot follow: the
			 * fabric's lock, taken here, orders this check before the
			 * thread that places it (as "fill" below).
			 */
			softrdma_shm_stats(&st);
			peer_say("ok");
		} else if (sscanf(cmd, "sleep %u", &n) == 1) {
			struct ibv_cq *cq;
			void *ctx;

			PEER_CHECK(n <= REGION);
			PEER_CHECK(ibv_req_notify_cq(s.id->recv_cq, 0) == 0);
			peer_say("sleeping");
			PEER_CHECK(ibv_get_cq_event(s.id->recv_cq_channel, &cq, &ctx) == 0);
			ibv_ack_cq_events(cq, 1);
			PEER_CHECK(cm_filled(s.region, n, p_next(&s)));
			peer_say("ok");
		} else if (sscanf(cmd, "fill %u", &n) == 1) {
			struct softrdma_shm_stats st;

			cm_fill(s.region, REGION, n);
			/*
			 * The Reads that follow come through a pipe and the test's
			 * process, which a race detector cannot follow: the fabric's
			 * lock, taken here, orders the fill before the thread that
			 * serves them.
			 */
			softrdma_shm_stats(&st);
			peer_say("filled");
		} else if (strcmp(cmd, "spin") == 0) {
			PEER_CHECK(p_next(&s) == SEND_END);
			peer_say("spun");
		} else if (strcmp(cmd, "stats") == 0) {
			p_stats();
		} else {
			peer_say("FAIL command %s", cmd);
			return 1;
		}
	}
	cm_side_close(&s);
	peer_say("done");
	return 0;
}

/*
 * The requester: on "go <seed>", poll a while (so that the test sees a
 * poller), Write BIG bytes with immediate into the test's region and stop
 * at once; continued, poll for the completion: "sent <status>".
 */
static int role_requester(void)
{
	unsigned long long raddr;
	struct ibv_mr *mr;
	struct cm_side s;
	uint32_t rkey, seed;
	uint8_t *src;

	cm_side_serve(&s, REGION, REGION_ACCESS);
	PEER_CHECK(sscanf(peer_hear(), "mr %llx %x", &raddr, &rkey) == 2);
	src = aligned_alloc(4096, BIG);
	PEER_CHECK(src);
	mr = ibv_reg_mr(s.id->pd, src, BIG, IBV_ACCESS_LOCAL_WRITE);
	PEER_CHECK(mr);
	while (sscanf(peer_hear(), "go %u", &seed) == 1) {
		struct ibv_sge sge = { (uintptr_t)src, BIG, mr->lkey };
		struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;
		struct ibv_wc wc;
		uint64_t until;

		cm_fill(src, BIG, seed);
		wr.imm_data = htonl(seed);
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
		until = h_now_ms() + 2;
		while (h_now_ms() < until)
			PEER_CHECK(ibv_poll_cq(s.id->send_cq, 1, &wc) == 0);
		PEER_CHECK(ibv_post_send(s.id->qp, &wr, &bad) == 0);
		raise(SIGSTOP);
		PEER_CHECK(cm_spin(s.id->send_cq, &wc) == 1);
		peer_say("sent %d", wc.status);
	}
	PEER_CHECK(ibv_dereg_mr(mr) == 0);
	free(src);
	p_stats();
	cm_side_close(&s);
	peer_say("done");
	return 0;
}

/* ==== the test ================================================================ */

static void peer_stats(struct cm_client *c, struct softrdma_shm_stats *st)
{
	unsigned long long offered, peer, hw, hr;

	peer_send(&c->peer, "stats");
	assert_int_equal(sscanf(peer_expect(&c->peer, "stats "), "%lu %llu %llu %lu %llu %llu",
				&st->coop_offers, &offered, &peer, &st->coop_takeovers, &hw, &hr),
			 6);
	st->coop_offered_bytes = offered;
	st->coop_peer_bytes = peer;
	st->coop_helped_write_bytes = hw;
	st->coop_helped_read_bytes = hr;
}

static int post(struct cm_client *c, uint64_t wr_id, enum ibv_wr_opcode op, struct ibv_sge *sge,
		int nsge, uint32_t imm)
{
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = sge, .num_sge = nsge,
				  .opcode = op, .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.imm_data = htonl(imm);
	wr.wr.rdma.remote_addr = c->raddr;
	wr.wr.rdma.rkey = c->rkey;
	return ibv_post_send(c->id->qp, &wr, &bad);
}

static void expect_sent(struct cm_client *c, uint64_t wr_id)
{
	struct ibv_wc wc;

	assert_int_equal(cm_spin(c->id->send_cq, &wc), 1);
	assert_int_equal(wc.wr_id, wr_id);
	assert_string_equal(ibv_wc_status_str(wc.status), ibv_wc_status_str(IBV_WC_SUCCESS));
}

/* Poll a while: the peer offers its copies to a process that polled lately (200 us). */
static void poll_a_while(struct cm_client *c)
{
	uint64_t until = h_now_ms() + 2;
	struct ibv_wc wc;

	while (h_now_ms() < until)
		assert_int_equal(ibv_poll_cq(c->id->send_cq, 1, &wc), 0);
}

/* The Send that tells the peer a seed (or SEND_END), from the word past the big buffers. */
static void send_word(struct cm_client *c, uint64_t wr_id, uint32_t word)
{
	uint32_t *w = (uint32_t *)(c->buf + WORD_OFF);
	struct ibv_sge sge = { (uintptr_t)w, sizeof(*w), c->mr->lkey };

	*w = word;
	assert_int_equal(post(c, wr_id, IBV_WR_SEND, &sge, 1, 0), 0);
}

/*
 * A large Write from three SGEs at odd offsets, with a Send behind it (even
 * rounds) or with immediate (odd rounds). If @poll, wait polling; else
 * sleep, having not polled for a while, and let the peer tell.
 */
static void big_write(struct cm_client *c, uint32_t seed, bool poll)
{
	uint8_t *src = c->buf + 8;
	struct ibv_sge sge[3] = {
		{ (uintptr_t)src, 300001, c->mr->lkey },
		{ (uintptr_t)(src + 300001), 400003, c->mr->lkey },
		{ (uintptr_t)(src + 700004), BIG - 700004, c->mr->lkey },
	};
	bool imm = seed % 2;

	peer_send(&c->peer, "write %u", BIG);
	peer_expect(&c->peer, "polling");
	cm_fill(src, BIG, seed);
	if (poll) {
		poll_a_while(c);
	} else {
		struct timespec ts = { 0, 2000000 };

		nanosleep(&ts, NULL);
	}
	assert_int_equal(post(c, 1, imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE, sge, 3,
			      seed), 0);
	if (!imm)
		send_word(c, 2, seed);
	if (!poll)
		peer_expect(&c->peer, "ok");
	expect_sent(c, 1);
	if (!imm)
		expect_sent(c, 2);
	if (poll)
		peer_expect(&c->peer, "ok");
}

/* A large Read of the peer's region (filled with @seed) into a sink of two SGEs. */
static void big_read(struct cm_client *c, uint32_t seed)
{
	uint8_t *sink = c->buf + BIG + 12;
	struct ibv_sge sge[2] = {
		{ (uintptr_t)sink, 123457, c->mr->lkey },
		{ (uintptr_t)(sink + 123457), BIG - 123457, c->mr->lkey },
	};

	memset(sink, 0, BIG);
	poll_a_while(c);
	assert_int_equal(post(c, 3, IBV_WR_RDMA_READ, sge, 2, 0), 0);
	expect_sent(c, 3);
	assert_true(cm_filled(sink, BIG, seed));
}

/* What this process copied of its own Writes (@reads: Reads) as a helper so far. */
static uint64_t helped(bool reads)
{
	struct softrdma_shm_stats st;

	softrdma_shm_stats(&st);
	return reads ? st.coop_helped_read_bytes : st.coop_helped_write_bytes;
}

/*
 * (a), (b), (d): both polling, this process copies part of the large
 * Writes and Reads the peer serves (of each, as a rule: a descheduled
 * poller may find the copy done), exactly what the peer counts as copied
 * by us; every byte arrives, and what comes behind a Write finds it whole.
 */
static void test_both_polling(void **state)
{
	struct softrdma_shm_stats me0, me1, peer0, peer1;
	struct help_run h;
	struct cm_client c;
	uint32_t r;

	(void)state;
	cm_client_connect(&c, self, "responder", BUF_LEN, BUF_ACCESS);
	softrdma_shm_stats(&me0);
	peer_stats(&c, &peer0);
	help_begin(&h);
	for (r = 0; r < ROUNDS || (helped(false) == me0.coop_helped_write_bytes &&
				   help_budget_left(&h)); r++)
		big_write(&c, r, true);
	peer_send(&c.peer, "fill 77");
	peer_expect(&c.peer, "filled");
	peer_send(&c.peer, "spin");
	for (r = 0; r < ROUNDS || (helped(true) == me0.coop_helped_read_bytes &&
				   help_budget_left(&h)); r++)
		big_read(&c, 77);
	send_word(&c, 4, SEND_END);
	expect_sent(&c, 4);
	peer_expect(&c.peer, "spun");
	softrdma_shm_stats(&me1);
	peer_stats(&c, &peer1);
	print_message("offers %lu, this process copied %llu bytes of Writes, %llu of Reads\n",
		      peer1.coop_offers - peer0.coop_offers,
		      (unsigned long long)(helped(false) - me0.coop_helped_write_bytes),
		      (unsigned long long)(helped(true) - me0.coop_helped_read_bytes));
	if (!slowed()) {
		assert_true(peer1.coop_offers > peer0.coop_offers);
		assert_true(me1.coop_helped_write_bytes > me0.coop_helped_write_bytes);
		assert_true(me1.coop_helped_read_bytes > me0.coop_helped_read_bytes);
	}
	assert_true(peer1.coop_peer_bytes - peer0.coop_peer_bytes ==
		    (me1.coop_helped_write_bytes - me0.coop_helped_write_bytes) +
		    (me1.coop_helped_read_bytes - me0.coop_helped_read_bytes));
	assert_int_equal(peer1.coop_takeovers, peer0.coop_takeovers);
	/* This process served nothing large: it offered nothing. */
	assert_int_equal(me1.coop_offers, me0.coop_offers);
	cm_client_disconnect(&c);
}

/* How many of the rings' memfds this process maps. */
static unsigned int rings_mapped(void)
{
	FILE *maps = fopen("/proc/self/maps", "r");
	unsigned int rings = 0;
	char line[512];

	assert_non_null(maps);
	while (fgets(line, sizeof(line), maps))
		rings += strstr(line, "/memfd:softrdma-ring") != NULL;
	fclose(maps);
	return rings;
}

/*
 * An earlier test's link is unmapped by the net thread when it reaps the
 * link (the peer's socket hung up), not by the calls that closed it: wait
 * for that, so that the rings counted are this test's only.
 */
static void wait_rings_unmapped(void)
{
	uint64_t deadline = h_now_ms() + (uint64_t)peer_timeout_ms(H_TIMEOUT_MS);
	struct timespec ms = { 0, 1000000 };

	while (rings_mapped() && h_now_ms() < deadline)
		nanosleep(&ms, NULL);
	assert_int_equal(rings_mapped(), 0);
}

/*
 * The rings are memfds each process maps from the other: each is sealed at
 * its size, so that neither process can shrink one under the other's
 * mapping (a SIGBUS there). Seen through /proc/self/map_files, which takes
 * CAP_SYS_ADMIN: without it the seals go unchecked, and the test says so.
 */
static void test_rings_sealed(void **state)
{
	const int want = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	unsigned int rings = 0, checked = 0;
	char line[512], path[128];
	struct cm_client c;
	FILE *maps;

	(void)state;
	wait_rings_unmapped();
	cm_client_connect(&c, self, "responder", BUF_LEN, BUF_ACCESS);
	big_write(&c, 1, false);
	maps = fopen("/proc/self/maps", "r");
	assert_non_null(maps);
	while (fgets(line, sizeof(line), maps)) {
		unsigned long lo, hi;
		int fd;

		if (!strstr(line, "/memfd:softrdma-ring") || sscanf(line, "%lx-%lx", &lo, &hi) != 2)
			continue;
		rings++;
		snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx", lo, hi);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		assert_int_equal(fcntl(fd, F_GET_SEALS) & want, want);
		assert_int_equal(ftruncate(fd, 4096), -1);
		assert_int_equal(errno, EPERM);
		close(fd);
		checked++;
	}
	fclose(maps);
	/* Ours, which the peer writes, and the peer's, which we write. */
	assert_int_equal(rings, 2);
	if (!checked)
		print_message("/proc/self/map_files needs CAP_SYS_ADMIN: the seals were not checked\n");
	cm_client_disconnect(&c);
}

/* (c) A requester that sleeps is offered nothing: the responder copies alone, at once. */
static void test_sleeping_requester(void **state)
{
	struct softrdma_shm_stats me0, me1, peer0, peer1;
	struct cm_client c;

	(void)state;
	cm_client_connect(&c, self, "responder", BUF_LEN, BUF_ACCESS);
	softrdma_shm_stats(&me0);
	peer_stats(&c, &peer0);
	big_write(&c, 4, false);
	big_write(&c, 5, false);
	softrdma_shm_stats(&me1);
	peer_stats(&c, &peer1);
	assert_int_equal(peer1.coop_offers, peer0.coop_offers);
	assert_true(me1.coop_helped_write_bytes == me0.coop_helped_write_bytes);
	cm_client_disconnect(&c);
}

/*
 * The requester polls, the responder sleeps on its channel: the large
 * Write goes one-sided, copied by this process alone, with no offer. A
 * record would wake the responder to share a copy with a poller of ours
 * that may stop polling at once (an RPC server replying), which cost the
 * echo example's 1 MiB results half their rate between two processes.
 * Under valgrind the peer publishes no keys: everything goes as records,
 * which it may offer to share, and only the bytes are checked.
 */
static void test_sleeping_responder(void **state)
{
	struct softrdma_shm_stats me0, me1, peer0, peer1;
	uint8_t *src;
	struct cm_client c;
	uint32_t r;

	(void)state;
	cm_client_connect(&c, self, "responder", BUF_LEN, BUF_ACCESS);
	src = c.buf;
	softrdma_shm_stats(&me0);
	peer_stats(&c, &peer0);
	for (r = 0; r < 4; r++) {
		struct ibv_sge sge = { (uintptr_t)src, BIG, c.mr->lkey };

		peer_send(&c.peer, "sleep %u", BIG);
		peer_expect(&c.peer, "sleeping");
		cm_fill(src, BIG, 100 + r);
		poll_a_while(&c);
		assert_int_equal(post(&c, 1, IBV_WR_RDMA_WRITE, &sge, 1, 0), 0);
		send_word(&c, 2, 100 + r);
		expect_sent(&c, 1);
		expect_sent(&c, 2);
		peer_expect(&c.peer, "ok");
	}
	softrdma_shm_stats(&me1);
	peer_stats(&c, &peer1);
	print_message("%lu of 4 Writes one-sided\n", me1.one_sided_writes - me0.one_sided_writes);
	if (!peer_under_valgrind()) {
		assert_int_equal(me1.one_sided_writes - me0.one_sided_writes, 4);
		assert_int_equal(peer1.coop_offers, peer0.coop_offers);
	}
	cm_client_disconnect(&c);
}

/*
 * (c) The requester polls, posts a large Write with immediate and stops
 * at once: the offer this process (the responder) makes is never taken,
 * and the Write completes here while the requester is stopped, all its
 * bytes copied here. Offers are made to a requester that polled within
 * 200 us, which a loaded machine (or valgrind) may miss now and then, so
 * rounds until one offered.
 */
static void test_stopped_requester(void **state)
{
	struct softrdma_shm_stats me0, me1;
	struct help_run h;
	struct cm_client c;
	unsigned int r;
	int status;

	(void)state;
	cm_client_connect(&c, self, "requester", BUF_LEN, BUF_ACCESS);
	peer_send(&c.peer, "mr %llx %x", (unsigned long long)(uintptr_t)c.buf, c.mr->rkey);
	softrdma_shm_stats(&me0);
	me1 = me0;
	help_begin(&h);
	for (r = 0; r < ROUNDS || (me1.coop_offers == me0.coop_offers && help_budget_left(&h));
	     r++) {
		struct ibv_wc wc;

		assert_int_equal(h_post_recv(c.id->qp, 9, c.buf + WORD_OFF, 4, c.mr->lkey), 0);
		peer_send(&c.peer, "go %u", r + 100);
		assert_int_equal(cm_spin(c.id->recv_cq, &wc), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
		assert_int_equal(ntohl(wc.imm_data), r + 100);
		assert_true(cm_filled(c.buf, BIG, r + 100));
		/* It stops right after its post, if it has not already: then it may go on. */
		assert_int_equal(waitpid(c.peer.pid, &status, WUNTRACED), c.peer.pid);
		assert_true(WIFSTOPPED(status));
		assert_int_equal(kill(c.peer.pid, SIGCONT), 0);
		assert_int_equal(atoi(peer_expect(&c.peer, "sent ")), IBV_WC_SUCCESS);
		softrdma_shm_stats(&me1);
	}
	print_message("%lu offers of %u Writes, all copied here\n",
		      me1.coop_offers - me0.coop_offers, r);
	if (!slowed())
		assert_true(me1.coop_offers > me0.coop_offers);
	assert_true(me1.coop_peer_bytes == me0.coop_peer_bytes);
	assert_int_equal(me1.coop_takeovers, me0.coop_takeovers);
	peer_send(&c.peer, "stop");
	peer_expect(&c.peer, "stats ");
	cm_client_disconnect(&c);
}

/*
 * A large Write whose record waits at a stopped peer while its source is
 * deregistered and unmapped: the bytes are set aside (REF_MOVING), and
 * when this process helps with the Write it copies from them, not from
 * the memory it let go. Rounds until it helped (it may start late).
 */
static void test_help_from_moved_bytes(void **state)
{
	struct softrdma_shm_stats me0, me1;
	struct help_run h;
	struct cm_client c;
	unsigned int r;
	int status;

	(void)state;
	cm_client_connect(&c, self, "responder", BUF_LEN, BUF_ACCESS);
	softrdma_shm_stats(&me0);
	help_begin(&h);
	for (r = 0; r < ROUNDS || help_budget_left(&h); r++) {
		uint8_t *big = mmap(NULL, REGION, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct ibv_sge sge;
		struct ibv_mr *mr;

		assert_true(big != MAP_FAILED);
		cm_fill(big, REGION, r + 200);
		mr = h_reg(c.id->pd, big, REGION, IBV_ACCESS_LOCAL_WRITE);
		peer_send(&c.peer, "write %u", REGION);
		peer_expect(&c.peer, "polling");
		assert_int_equal(kill(c.peer.pid, SIGSTOP), 0);
		assert_int_equal(waitpid(c.peer.pid, &status, WUNTRACED), c.peer.pid);
		sge = (struct ibv_sge){ (uintptr_t)big, REGION, mr->lkey };
		assert_int_equal(post(&c, 5, IBV_WR_RDMA_WRITE_WITH_IMM, &sge, 1, r + 200), 0);
		assert_int_equal(ibv_dereg_mr(mr), 0);
		memset(big, 0, REGION);
		assert_int_equal(munmap(big, REGION), 0);
		poll_a_while(&c);
		assert_int_equal(kill(c.peer.pid, SIGCONT), 0);
		expect_sent(&c, 5);
		peer_expect(&c.peer, "ok");
		softrdma_shm_stats(&me1);
		if (me1.coop_helped_write_bytes > me0.coop_helped_write_bytes)
			break;
	}
	print_message("helped after %u rounds\n", r + 1);
	if (!slowed())
		assert_true(me1.coop_helped_write_bytes > me0.coop_helped_write_bytes);
	cm_client_disconnect(&c);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_both_polling),
		cmocka_unit_test(test_sleeping_requester),
		cmocka_unit_test(test_sleeping_responder),
		cmocka_unit_test(test_stopped_requester),
		cmocka_unit_test(test_help_from_moved_bytes),
		cmocka_unit_test(test_rings_sealed),
	};
	int failed;

	cores_apart(argc == 3);
	if (argc == 3 && strcmp(argv[1], "--peer") == 0)
		return strcmp(argv[2], "responder") == 0 ? role_responder() :
		       strcmp(argv[2], "requester") == 0 ? role_requester() : 2;
	self = argv[0];
	peer_setup_dir();
	failed = cmocka_run_group_tests_name("coop", tests, h_group_thread, NULL);
	peer_cleanup_dir();
	return failed;
}
