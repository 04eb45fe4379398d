/* SPDX-License-Identifier: MIT */
/*
 * The demo: an echo server and an echo client in one process, the server on
 * its own thread, talking RPC-over-RDMA through the library. Built against
 * softrdma (the software fabric) it runs on any machine; the same code runs
 * on an RNIC when linked with rdma-core instead.
 */
#include <arpa/inet.h>
#include <errno.h>
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

#include "echo.h"

struct server {
	struct rpcrdma_svc *svc;
	pthread_t thread;
	atomic_bool stop;
	atomic_uint conns;
};

static void on_call(struct rpcrdma_svc_call *call, void *arg)
{
	echo_serve_call(call);
}

static void on_conn(struct rpcrdma_svc_conn *conn, enum rpcrdma_conn_event event, void *arg)
{
	struct server *s = arg;
	struct sockaddr_in6 peer;
	char host[INET6_ADDRSTRLEN] = "?";

	if (event != RPCRDMA_CONN_ESTABLISHED)
		return;
	atomic_fetch_add(&s->conns, 1);
	rpcrdma_svc_conn_addrs(conn, NULL, (struct sockaddr *)&peer);
	if (peer.sin6_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&peer)->sin_addr, host, sizeof(host));
	printf("server: connection from %s\n", host);
}

static void *server_thread(void *arg)
{
	struct server *s = arg;

	while (!atomic_load(&s->stop))
		rpcrdma_svc_wait(s->svc, 50);
	return NULL;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Synchronous calls of growing sizes, each reply checked byte for byte. */
static int run_sizes(struct rpcrdma_clnt *clnt, uint32_t *xid, size_t max_arg)
{
	static const size_t sizes[] = { 0, 1, 3, 4, 100, 1000 };
	unsigned char data[8192], msg[8192], reply[8192];
	size_t i;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 7 + 3);
	for (i = 0; i <= sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t len = i < sizeof(sizes) / sizeof(sizes[0]) ? sizes[i] : max_arg;
		size_t mlen = echo_encode_call(msg, sizeof(msg), ++*xid, data, len);
		size_t rlen = sizeof(reply);
		int rc = rpcrdma_clnt_call(clnt, msg, mlen, reply, &rlen, 0);

		if (rc || echo_check_reply(reply, rlen, *xid, data, len)) {
			fprintf(stderr, "client: echo of %zu bytes failed: %s\n", len,
				rc ? strerror(-rc) : "reply differs");
			return 1;
		}
		printf("client: echo of %5zu bytes: ok (call %zu bytes, reply %zu bytes)\n", len,
		       mlen, rlen);
	}
	return 0;
}

struct inflight {
	struct rpcrdma_call call;
	unsigned char msg[128];
	unsigned char reply[128];
	double start;
	double *lat;
	unsigned int *done_count;
	unsigned int *failed;
};

static void inflight_done(struct rpcrdma_call *call)
{
	struct inflight *f = call->arg;

	*f->lat = now_us() - f->start;
	if (call->status || echo_check_reply(f->reply, call->reply_len,
					     ntohl(*(uint32_t *)(void *)f->msg), "ping", 4))
		(*f->failed)++;
	(*f->done_count)++;
}

/* @total NULL calls with @depth in flight: rate and median latency. */
static int run_rate(struct rpcrdma_clnt *clnt, uint32_t *xid, unsigned int depth,
		    unsigned int total)
{
	struct inflight *slots = calloc(depth, sizeof(*slots));
	double *lat = calloc(total, sizeof(*lat));
	unsigned int sent = 0, done = 0, failed = 0, i;
	double t0, t1;

	if (!slots || !lat)
		return 1;
	t0 = now_us();
	while (done < total) {
		for (i = 0; i < depth && sent < total; i++) {
			struct inflight *f = &slots[i];

			if (f->call.done && f->lat && *f->lat == 0)
				continue;	/* still in flight */
			memset(f, 0, sizeof(*f));
			f->call.struct_size = sizeof(f->call);
			f->call.msg = f->msg;
			f->call.msg_len = echo_encode_call(f->msg, sizeof(f->msg), ++*xid, "ping", 4);
			f->call.reply = f->reply;
			f->call.reply_max = sizeof(f->reply);
			f->call.done = inflight_done;
			f->call.arg = f;
			f->lat = &lat[sent];
			f->done_count = &done;
			f->failed = &failed;
			f->start = now_us();
			if (rpcrdma_clnt_submit(clnt, &f->call)) {
				fprintf(stderr, "client: submit failed\n");
				return 1;
			}
			sent++;
		}
		rpcrdma_clnt_wait(clnt, 100);
	}
	t1 = now_us();
	qsort(lat, total, sizeof(*lat), cmp_double);
	printf("client: %u calls, %2u in flight: %8.0f calls/s, median latency %6.1f us%s\n",
	       total, depth, total / ((t1 - t0) / 1e6), lat[total / 2],
	       failed ? " (FAILURES)" : "");
	free(slots);
	free(lat);
	return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct server s = { 0 };
	struct rpcrdma_svc_attr sattr = { RPCRDMA_SIZED(sattr) };
	struct rpcrdma_clnt_attr cattr = { RPCRDMA_SIZED(cattr) };
	struct rpcrdma_clnt_info info = { RPCRDMA_SIZED(info) };
	struct rpcrdma_stats cst = { RPCRDMA_SIZED(cst) }, sst = { RPCRDMA_SIZED(sst) };
	struct rpcrdma_clnt *clnt;
	struct sockaddr_storage addr;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t alen = sizeof(addr);
	unsigned int count = 20000;
	uint32_t xid = 0x1000;
	int opt, rc, failed = 0;

	while ((opt = getopt(argc, argv, "n:")) != -1) {
		if (opt == 'n')
			count = (unsigned int)strtoul(optarg, NULL, 0);
		else {
			fprintf(stderr, "usage: %s [-n calls]\n", argv[0]);
			return 2;
		}
	}

	printf("librpcrdma %s demo: echo server and client over RPC-over-RDMA v1\n",
	       rpcrdma_version_string());
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sattr.addr = (struct sockaddr *)&sin;
	sattr.on_call = on_call;
	sattr.on_conn = on_conn;
	sattr.arg = &s;
	rc = rpcrdma_svc_listen(&sattr, &s.svc);
	if (rc) {
		fprintf(stderr, "server: listen failed: %s\n", strerror(-rc));
		return 1;
	}
	rpcrdma_svc_addr(s.svc, (struct sockaddr *)&addr, &alen);
	printf("server: listening on 127.0.0.1 port %u\n",
	       ntohs(((struct sockaddr_in *)&addr)->sin_port));
	if (pthread_create(&s.thread, NULL, server_thread, &s)) {
		rpcrdma_svc_destroy(s.svc);
		return 1;
	}

	cattr.addr = (struct sockaddr *)&addr;
	rc = rpcrdma_clnt_connect(&cattr, &clnt);
	if (rc) {
		fprintf(stderr, "client: connect failed: %s\n", strerror(-rc));
		failed = 1;
		goto out_server;
	}
	rpcrdma_clnt_info(clnt, &info);
	printf("client: connected; inline %u bytes out, %u bytes in, remote invalidation %s\n",
	       info.inline_send, info.inline_recv, info.remote_invalidate ? "on" : "off");

	failed |= run_sizes(clnt, &xid, info.inline_send - RPCRDMA_HDR_MIN_LEN - 44);
	failed |= run_rate(clnt, &xid, 1, count);
	failed |= run_rate(clnt, &xid, 16, count);

	rpcrdma_clnt_info(clnt, &info);
	rpcrdma_clnt_stats(clnt, &cst);
	printf("client: %llu calls, %llu replies, credits granted %u, %llu waited for a credit\n",
	       (unsigned long long)cst.calls, (unsigned long long)cst.replies, info.credits,
	       (unsigned long long)cst.credit_stalls);
	printf("client: %llu bytes registered, %llu bytes of heap\n",
	       (unsigned long long)cst.registered_bytes, (unsigned long long)cst.heap_bytes);
	rpcrdma_clnt_destroy(clnt);

out_server:
	atomic_store(&s.stop, true);
	pthread_join(s.thread, NULL);
	rpcrdma_svc_stats(s.svc, &sst);
	printf("server: %llu calls, %llu replies, %llu dropped, %llu connections\n",
	       (unsigned long long)sst.calls, (unsigned long long)sst.replies,
	       (unsigned long long)sst.dropped, (unsigned long long)sst.connects);
	rpcrdma_svc_destroy(s.svc);
	printf("%s\n", failed ? "demo FAILED" : "demo finished: every reply matched its call");
	return failed;
}
