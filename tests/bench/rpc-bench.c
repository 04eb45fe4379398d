/* SPDX-License-Identifier: MIT */
/*
 * Inline NULL-RPC benchmark over softrdma: call rate and median latency with
 * 1 and 16 calls in flight, and the memory an idle connection holds on each
 * side. A program that prints figures, not a test. rpc-callgrind.sh runs it
 * under callgrind for instruction counts.
 *
 *   rpc-bench [--calls N] [--depth D] [--idle K]
 *                                        rate and latency (default: both depths),
 *                                        K more clients connected and idle
 *   rpc-bench --memory                   memory per connection
 *   rpc-bench --step --calls N [--idle K] [--rr R]
 *                                        N calls, one at a time, with softrdma in
 *                                        STEP mode and both sides polled by this
 *                                        thread: deterministic work for callgrind;
 *                                        K more clients stay connected and idle;
 *                                        the calls go round robin over R clients
 *                                        (default 1), so that with R > 1 each
 *                                        finds its server connection asleep
 *   --srq                                the server uses shared receive queues
 *   --pollers P                          the server runs P pollers (threads)
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rpcrdma/rpcrdma.h>
#include <softrdma.h>

#include "bench.h"

#define MAX_POLLERS 8

struct server {
	struct rpcrdma_svc *svc;
	pthread_t thread[MAX_POLLERS];
	atomic_bool stop;
};

struct poller_arg {
	struct server *s;
	unsigned int i;
};

/* How the benchmarked servers run: --srq, --pollers. */
static uint32_t svc_flags;
static unsigned int svc_pollers = 1;
static struct poller_arg poller_args[MAX_POLLERS];

static void on_call(struct rpcrdma_svc_call *call, void *arg)
{
	/*
	 * The NULL procedure's accepted reply, as small as the call: xid, REPLY,
	 * MSG_ACCEPTED, AUTH_NONE verifier, SUCCESS (24 bytes).
	 */
	uint32_t w[6] = { htonl(rpcrdma_svc_call_xid(call)), htonl(1), 0, 0, 0, 0 };

	rpcrdma_svc_reply(call, w, sizeof(w));
}

static void *server_thread(void *arg)
{
	struct poller_arg *p = arg;

	while (!atomic_load(&p->s->stop))
		rpcrdma_svc_poller_wait(p->s->svc, p->i, 20);
	return NULL;
}

static int server_start(struct server *s, uint32_t credits, uint32_t inline_size,
			struct sockaddr_storage *addr)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rpcrdma_svc_attr attr = { RPCRDMA_SIZED(attr) };
	socklen_t len = sizeof(*addr);
	unsigned int i;

	memset(s, 0, sizeof(*s));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	attr.addr = (struct sockaddr *)&sin;
	attr.max_requests = credits;
	attr.inline_size = inline_size;
	attr.on_call = on_call;
	attr.flags = svc_flags;
	attr.pollers = svc_pollers;
	if (rpcrdma_svc_listen(&attr, &s->svc))
		return -1;
	rpcrdma_svc_addr(s->svc, (struct sockaddr *)addr, &len);
	for (i = 0; i < svc_pollers; i++) {
		poller_args[i].s = s;
		poller_args[i].i = i;
		if (pthread_create(&s->thread[i], NULL, server_thread, &poller_args[i]))
			return -1;
	}
	return 0;
}

static void server_join(struct server *s)
{
	unsigned int i;

	atomic_store(&s->stop, true);
	for (i = 0; i < svc_pollers; i++)
		pthread_join(s->thread[i], NULL);
}

static void server_stop(struct server *s)
{
	server_join(s);
	rpcrdma_svc_destroy(s->svc);
}

struct slot {
	struct rpcrdma_call call;
	unsigned char msg[24];
	unsigned char reply[64];
	double start;
	int busy;
};

struct run {
	double *lat;
	unsigned int done;
	unsigned int failed;
};

static struct run *cur;

static void slot_done(struct rpcrdma_call *call)
{
	struct slot *s = call->arg;

	cur->lat[cur->done++] = (bench_now_s() - s->start) * 1e6;
	if (call->status || call->reply_len != sizeof(s->msg))
		cur->failed++;
	s->busy = 0;
}

/* An RPC NULL call header: xid, CALL, rpcvers 2, prog, vers, proc 0 (24 bytes, no auth). */
static void null_call(unsigned char *msg, uint32_t xid)
{
	uint32_t w[6] = { htonl(xid), 0, htonl(2), htonl(100003), htonl(3), 0 };

	memcpy(msg, w, sizeof(w));
}

static int run_calls(struct rpcrdma_clnt *clnt, unsigned int depth, unsigned int total,
		     uint32_t *xid, double *rate, double *median)
{
	struct slot *slots = calloc(depth, sizeof(*slots));
	struct run r = { .lat = calloc(total, sizeof(double)) };
	unsigned int sent = 0, i;
	double t0;

	if (!slots || !r.lat)
		return -1;
	cur = &r;
	t0 = bench_now_s();
	while (r.done < total) {
		for (i = 0; i < depth && sent < total; i++) {
			struct slot *s = &slots[i];

			if (s->busy)
				continue;
			null_call(s->msg, ++*xid);
			s->call.struct_size = sizeof(s->call);
			s->call.msg = s->msg;
			s->call.msg_len = sizeof(s->msg);
			s->call.reply = s->reply;
			s->call.reply_max = sizeof(s->reply);
			s->call.done = slot_done;
			s->call.arg = s;
			s->start = bench_now_s();
			s->busy = 1;
			if (rpcrdma_clnt_submit(clnt, &s->call))
				return -1;
			sent++;
		}
		rpcrdma_clnt_wait(clnt, 100);
	}
	*rate = total / (bench_now_s() - t0);
	*median = bench_median(r.lat, total);
	free(r.lat);
	free(slots);
	return r.failed ? -1 : 0;
}

/* Connect @n clients to @attr's server that stay idle; NULL on failure. */
static struct rpcrdma_clnt **idle_clients(const struct rpcrdma_clnt_attr *attr, unsigned int n)
{
	struct rpcrdma_clnt **idle = calloc(n ? n : 1, sizeof(*idle));
	unsigned int i;

	for (i = 0; idle && i < n; i++) {
		if (rpcrdma_clnt_connect(attr, &idle[i])) {
			fprintf(stderr, "idle connection %u failed\n", i);
			while (i--)
				rpcrdma_clnt_destroy(idle[i]);
			free(idle);
			return NULL;
		}
	}
	return idle;
}

/* One call on each idle connection, as a mostly idle client makes now and then. */
static void idle_touch(struct rpcrdma_clnt **idle, unsigned int n, uint32_t *xid)
{
	unsigned char msg[24], reply[64];
	unsigned int i;

	for (i = 0; i < n; i++) {
		size_t rlen = sizeof(reply);

		null_call(msg, ++*xid);
		if (rpcrdma_clnt_call(idle[i], msg, sizeof(msg), reply, &rlen, 0))
			fprintf(stderr, "idle connection %u: its call failed\n", i);
	}
}

static void idle_clients_free(struct rpcrdma_clnt **idle, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		rpcrdma_clnt_destroy(idle[i]);
	free(idle);
}

/* Per RPC, what each side asked of its QPs: doorbells and signaled send completions. */
static void print_qp_stats(const char *side, const struct softrdma_qp_stats *b,
			   const struct softrdma_qp_stats *a, unsigned int calls)
{
	printf("  %-7s %.2f posts per RPC (%.2f post_send, %.2f post_recv; %.2f send WRs, "
	       "%.2f recv WRs), %.2f signaled send completions per RPC\n", side,
	       (double)(a->send_posts + a->recv_posts - b->send_posts - b->recv_posts) / calls,
	       (double)(a->send_posts - b->send_posts) / calls,
	       (double)(a->recv_posts - b->recv_posts) / calls,
	       (double)(a->send_wrs - b->send_wrs) / calls,
	       (double)(a->recv_wrs - b->recv_wrs) / calls,
	       (double)(a->send_cqes - b->send_cqes) / calls);
}

static int bench_rate(unsigned int calls, int depth_only, unsigned int nidle)
{
	static const unsigned int depths[] = { 1, 16 };
	struct sockaddr_storage addr;
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_stats before = { RPCRDMA_SIZED(before) }, after = { RPCRDMA_SIZED(after) };
	struct rpcrdma_clnt *clnt, **idle;
	struct server s;
	double rate, median;
	uint32_t xid = 1;
	unsigned int i;
	int rc = 0;

	if (server_start(&s, 32, 0, &addr))
		return 1;
	attr.addr = (struct sockaddr *)&addr;
	if (rpcrdma_clnt_connect(&attr, &clnt)) {
		server_stop(&s);
		return 1;
	}
	/* The busy client's first calls set up what connections share. */
	if (run_calls(clnt, 1, 100, &xid, &rate, &median))
		return 1;
	rpcrdma_svc_stats(s.svc, &before);
	idle = idle_clients(&attr, nidle);
	if (!idle) {
		rpcrdma_clnt_destroy(clnt);
		server_stop(&s);
		return 1;
	}
	idle_touch(idle, nidle, &xid);
	rpcrdma_svc_stats(s.svc, &after);
	if (nidle)
		printf("server memory per idle connection: %llu bytes (%llu registered)%s\n",
		       (unsigned long long)((after.heap_bytes - before.heap_bytes) / nidle),
		       (unsigned long long)((after.registered_bytes - before.registered_bytes) /
					    nidle), svc_flags & RPCRDMA_SVC_SRQ ? ", SRQ" : "");
	for (i = 0; i < 2; i++) {
		if (depth_only && (unsigned int)depth_only != depths[i])
			continue;
		struct softrdma_qp_stats cb, sb, ca, sa;

		/* A short warm-up lets the grant reach its full value. */
		if (run_calls(clnt, depths[i], 100, &xid, &rate, &median)) {
			fprintf(stderr, "calls failed\n");
			rc = 1;
			break;
		}
		softrdma_qp_stats_sum(&cb, &sb);
		if (run_calls(clnt, depths[i], calls, &xid, &rate, &median)) {
			fprintf(stderr, "calls failed\n");
			rc = 1;
			break;
		}
		softrdma_qp_stats_sum(&ca, &sa);
		printf("inline NULL RPC, %2u in flight, %4u idle beside, %u poller(s)%s: "
		       "%9.0f calls/s   median latency %7.1f us   (%u calls)\n", depths[i], nidle,
		       svc_pollers, svc_flags & RPCRDMA_SVC_SRQ ? ", SRQ" : "", rate, median, calls);
		print_qp_stats("client", &cb, &ca, calls);
		print_qp_stats("server", &sb, &sa, calls);
	}
	idle_clients_free(idle, nidle);
	rpcrdma_clnt_destroy(clnt);
	server_stop(&s);
	return rc;
}

/* Poller 0 through rpcrdma_svc_poll() (the callgrind script counts it), the others too. */
static void svc_poll_all(struct rpcrdma_svc *svc)
{
	unsigned int i;

	rpcrdma_svc_poll(svc, 16);
	for (i = 1; i < svc_pollers; i++)
		rpcrdma_svc_poller_poll(svc, i, 16);
}

static void step_done(struct rpcrdma_call *call)
{
	*(int *)call->arg = 1;
}

/*
 * One call at a time, the fabric stepped by hand and both sides polled from
 * this thread: every instruction is work for an RPC, none is spent spinning.
 */
static int bench_step(unsigned int calls, unsigned int nidle, unsigned int nrr)
{
	struct sockaddr_storage addr;
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_stats before = { RPCRDMA_SIZED(before) }, after = { RPCRDMA_SIZED(after) };
	struct softrdma_qp_stats cb, sb, ca, sa;
	struct rpcrdma_clnt *clnt, **idle, **rr;
	unsigned char msg[24], reply[64];
	struct server s;
	uint32_t xid = 0x40000000;
	unsigned long passes = 0;
	unsigned int i;
	int rc = 0;

	if (server_start(&s, 32, 0, &addr))
		return 1;
	attr.addr = (struct sockaddr *)&addr;
	if (rpcrdma_clnt_connect(&attr, &clnt)) {
		server_stop(&s);
		return 1;
	}
	idle = idle_clients(&attr, nidle);
	if (!idle)
		return 1;
	idle_touch(idle, nidle, &xid);
	/* The round robin: @clnt, then the nrr - 1 others, each called once already. */
	rr = idle_clients(&attr, nrr - 1);
	if (!rr)
		return 1;
	idle_touch(rr, nrr - 1, &xid);
	/* Take the server over from its threads: this thread now owns both sides. */
	server_join(&s);
	softrdma_set_mode(SOFTRDMA_MODE_STEP);
	/* Let every connection settle: established, armed. */
	for (i = 0; i < 4; i++) {
		softrdma_progress_all();
		svc_poll_all(s.svc);
	}
	rpcrdma_svc_stats(s.svc, &before);
	softrdma_qp_stats_sum(&cb, &sb);
	for (i = 0; i < calls && !rc; i++) {
		struct rpcrdma_call call = { RPCRDMA_SIZED(call) };
		struct rpcrdma_clnt *c = i % nrr ? rr[i % nrr - 1] : clnt;
		int finished = 0, spins = 0;

		null_call(msg, i + 1);
		call.msg = msg;
		call.msg_len = sizeof(msg);
		call.reply = reply;
		call.reply_max = sizeof(reply);
		call.done = step_done;
		call.arg = &finished;
		if (rpcrdma_clnt_submit(c, &call))
			rc = 1;
		while (!rc && !finished) {
			softrdma_progress_all();
			svc_poll_all(s.svc);
			softrdma_progress_all();
			rpcrdma_clnt_poll(c, 16);
			if (++spins > 100)
				rc = 1;
		}
		passes += (unsigned long)spins;
		if (call.status)
			rc = 1;
	}
	rpcrdma_svc_stats(s.svc, &after);
	softrdma_qp_stats_sum(&ca, &sa);
	softrdma_set_mode(SOFTRDMA_MODE_THREAD);
	if (rc) {
		fprintf(stderr, "step mode: call %u failed\n", i);
	} else {
		printf("%u calls completed in STEP mode, round robin over %u connection(s), "
		       "beside %u idle ones; %.2f connection visits and %.2f passes per call\n",
		       calls, nrr, nidle, (double)(after.conn_visits - before.conn_visits) / calls,
		       (double)passes / calls);
		print_qp_stats("client", &cb, &ca, calls);
		print_qp_stats("server", &sb, &sa, calls);
	}
	/* The server thread is gone: let the client's drain run against the fabric. */
	idle_clients_free(idle, nidle);
	idle_clients_free(rr, nrr - 1);
	rpcrdma_clnt_destroy(clnt);
	rpcrdma_svc_destroy(s.svc);
	return rc;
}

static int bench_memory(void)
{
	static const uint32_t credits[] = { 8, 32, 128 };
	static const uint32_t inlines[] = { 1024, 4096, 16384 };
	unsigned int i, j;

	printf("Memory one idle connection holds (bytes), by credits and inline size:\n");
	printf("%8s %8s | %12s %12s | %12s %12s\n", "credits", "inline", "clnt reg", "clnt heap",
	       "svc reg", "svc heap");
	for (i = 0; i < 3; i++) {
		for (j = 0; j < 3; j++) {
			struct rpcrdma_stats before = { RPCRDMA_SIZED(before) }, after = { RPCRDMA_SIZED(after) }, cst = { RPCRDMA_SIZED(cst) };
			struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
			struct sockaddr_storage addr;
			struct rpcrdma_clnt *clnt;
			struct server s;

			if (server_start(&s, credits[i], inlines[j], &addr))
				return 1;
			rpcrdma_svc_stats(s.svc, &before);
			attr.addr = (struct sockaddr *)&addr;
			attr.max_requests = credits[i];
			attr.inline_size = inlines[j];
			if (rpcrdma_clnt_connect(&attr, &clnt)) {
				server_stop(&s);
				return 1;
			}
			/* Let the server thread see the connection complete. */
			for (int k = 0; k < 50; k++) {
				struct timespec ts = { 0, 2000000 };

				nanosleep(&ts, NULL);
			}
			rpcrdma_clnt_stats(clnt, &cst);
			rpcrdma_svc_stats(s.svc, &after);
			printf("%8u %8u | %12llu %12llu | %12llu %12llu\n", credits[i], inlines[j],
			       (unsigned long long)cst.registered_bytes,
			       (unsigned long long)cst.heap_bytes,
			       (unsigned long long)(after.registered_bytes - before.registered_bytes),
			       (unsigned long long)(after.heap_bytes - before.heap_bytes));
			rpcrdma_clnt_destroy(clnt);
			server_stop(&s);
		}
	}
	printf("(registered bytes are part of the heap bytes; defaults: 32 credits, 4096 inline)\n");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "calls", required_argument, NULL, 'n' },
		{ "depth", required_argument, NULL, 'd' },
		{ "memory", no_argument, NULL, 'm' },
		{ "step", no_argument, NULL, 's' },
		{ "idle", required_argument, NULL, 'i' },
		{ "srq", no_argument, NULL, 'q' },
		{ "pollers", required_argument, NULL, 'p' },
		{ "rr", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned int calls = 20000, nidle = 0, nrr = 1;
	int depth = 0, memory = 0, step = 0, opt;

	while ((opt = getopt_long(argc, argv, "n:d:msi:qp:r:", opts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			calls = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'd':
			depth = atoi(optarg);
			break;
		case 'm':
			memory = 1;
			break;
		case 's':
			step = 1;
			break;
		case 'i':
			nidle = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'q':
			svc_flags |= RPCRDMA_SVC_SRQ;
			break;
		case 'p':
			svc_pollers = (unsigned int)strtoul(optarg, NULL, 0);
			if (svc_pollers < 1 || svc_pollers > MAX_POLLERS)
				return 2;
			break;
		case 'r':
			nrr = (unsigned int)strtoul(optarg, NULL, 0);
			if (nrr < 1 || nrr > 4096)
				return 2;
			break;
		default:
			fprintf(stderr, "usage: %s [--calls N] [--depth 1|16] [--idle K] [--memory] "
				"[--step [--idle K] [--rr R]] [--srq] [--pollers P]\n", argv[0]);
			return 2;
		}
	}
	if (memory)
		return bench_memory();
	if (calls == 0)
		return 2;
	if (step)
		return bench_step(calls, nidle, nrr);
	return bench_rate(calls, depth, nidle);
}
