/* SPDX-License-Identifier: MIT */
/*
 * A program as it was written and built against librpcrdma 0.1, run against
 * the current library: its structs have no struct_size, and every call must
 * reach the 0.1 entry points and mean what it meant then. old-abi.sh builds
 * it and checks that it links to RPCRDMA_0.1 only.
 *
 * What it uses of 0.1's headers is declared below, as 0.1 declared it: a
 * fixture, not a header copy. The sizes are those abi/librpcrdma-0.1.abi
 * records (abidw's size-in-bits, x86-64), so a fixture that drifts from
 * the release fails to compile there.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* librpcrdma 0.1: rpcrdma.h */
struct rpcrdma_stats {
	uint64_t calls;
	uint64_t replies;
	uint64_t rdma_errors;
	uint64_t dropped;
	uint64_t read_chunks;
	uint64_t write_chunks;
	uint64_t reply_chunks;
	uint64_t bounce_bytes;
	uint64_t flushes;
	uint64_t wc_errors;
	uint64_t credit_stalls;
	uint64_t sq_waits;
	uint64_t retransmits;
	uint64_t timeouts;
	uint64_t connects;
	uint64_t disconnects;
	uint64_t registered_bytes;
	uint64_t heap_bytes;
};

const char *rpcrdma_version_string(void);

/* librpcrdma 0.1: proto.h */
enum { RPCRDMA_ERROR = 4 };
enum { RPCRDMA_ERR_VERS = 1 };

struct rpcrdma_read_segment;
struct rpcrdma_chunk_desc;

struct rpcrdma_hdr_enc {
	uint32_t xid;
	uint32_t credit;
	uint32_t proc;
	uint32_t read_segs;
	const struct rpcrdma_read_segment *read;
	uint32_t write_chunks;
	const struct rpcrdma_chunk_desc *write;
	const struct rpcrdma_chunk_desc *reply;
	uint32_t err;
	uint32_t vers_low;
	uint32_t vers_high;
};

long rpcrdma_hdr_encoded_len(const struct rpcrdma_hdr_enc *enc);
long rpcrdma_hdr_encode(void *buf, size_t len, const struct rpcrdma_hdr_enc *enc);

/* librpcrdma 0.1: clnt.h */
struct rpcrdma_clnt;

struct rpcrdma_clnt_attr {
	const struct sockaddr *addr;
	const struct sockaddr *src_addr;
	uint32_t max_requests;
	uint32_t inline_size;
	int connect_timeout_ms;
	int call_timeout_ms;
	unsigned int retries;
	uint8_t rnr_retry;
	uint32_t flags;
	uint32_t max_segment;
};

struct rpcrdma_call {
	const void *msg;
	size_t msg_len;
	const void *payload;
	size_t payload_len;
	uint32_t payload_pos;
	void *reply;
	size_t reply_max;
	void *result;
	size_t result_max;
	int timeout_ms;
	void (*done)(struct rpcrdma_call *call);
	void *arg;
	int status;
	size_t reply_len;
	size_t result_len;
};

struct rpcrdma_clnt_info {
	int connected;
	uint32_t credits;
	uint32_t inline_send;
	uint32_t inline_recv;
	int remote_invalidate;
	unsigned int connects;
};

int rpcrdma_clnt_connect(const struct rpcrdma_clnt_attr *attr, struct rpcrdma_clnt **out);
void rpcrdma_clnt_destroy(struct rpcrdma_clnt *clnt);
int rpcrdma_clnt_submit(struct rpcrdma_clnt *clnt, struct rpcrdma_call *call);
int rpcrdma_clnt_cancel(struct rpcrdma_clnt *clnt, struct rpcrdma_call *call);
int rpcrdma_clnt_wait(struct rpcrdma_clnt *clnt, int timeout_ms);
int rpcrdma_clnt_next_timeout(const struct rpcrdma_clnt *clnt);
int rpcrdma_clnt_call(struct rpcrdma_clnt *clnt, const void *msg, size_t msg_len, void *reply,
		      size_t *reply_len, int timeout_ms);
int rpcrdma_clnt_info(const struct rpcrdma_clnt *clnt, struct rpcrdma_clnt_info *info);
int rpcrdma_clnt_stats(const struct rpcrdma_clnt *clnt, struct rpcrdma_stats *stats);

/* librpcrdma 0.1: svc.h (on_conn's event was an enum rpcrdma_conn_event) */
struct rpcrdma_svc;
struct rpcrdma_svc_call;
struct rpcrdma_svc_conn;

struct rpcrdma_svc_attr {
	const struct sockaddr *addr;
	int backlog;
	uint32_t max_requests;
	uint32_t inline_size;
	void (*on_call)(struct rpcrdma_svc_call *call, void *arg);
	void (*on_conn)(struct rpcrdma_svc_conn *conn, int event, void *arg);
	void *arg;
	uint32_t flags;
	uint64_t max_read;
	uint64_t max_reply;
};

int rpcrdma_svc_listen(const struct rpcrdma_svc_attr *attr, struct rpcrdma_svc **out);
int rpcrdma_svc_addr(const struct rpcrdma_svc *svc, struct sockaddr *addr, socklen_t *len);
int rpcrdma_svc_wait(struct rpcrdma_svc *svc, int timeout_ms);
void rpcrdma_svc_destroy(struct rpcrdma_svc *svc);
int rpcrdma_svc_stats(const struct rpcrdma_svc *svc, struct rpcrdma_stats *stats);
const void *rpcrdma_svc_call_msg(const struct rpcrdma_svc_call *call, size_t *len);
void rpcrdma_svc_call_drop(struct rpcrdma_svc_call *call);
int rpcrdma_svc_reply(struct rpcrdma_svc_call *call, const void *msg, size_t len);

#if defined(__x86_64__) && defined(__LP64__)
_Static_assert(sizeof(struct rpcrdma_stats) == 1152 / 8, "0.1's struct rpcrdma_stats");
_Static_assert(sizeof(struct rpcrdma_hdr_enc) == 512 / 8, "0.1's struct rpcrdma_hdr_enc");
_Static_assert(sizeof(struct rpcrdma_clnt_attr) == 384 / 8, "0.1's struct rpcrdma_clnt_attr");
_Static_assert(sizeof(struct rpcrdma_call) == 960 / 8, "0.1's struct rpcrdma_call");
_Static_assert(sizeof(struct rpcrdma_clnt_info) == 192 / 8, "0.1's struct rpcrdma_clnt_info");
_Static_assert(sizeof(struct rpcrdma_svc_attr) == 576 / 8, "0.1's struct rpcrdma_svc_attr");
#endif

#define CHECK(cond)                                                                        \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "old-abi: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			exit(1);                                                           \
		}                                                                          \
	} while (0)

static struct rpcrdma_svc *svc;
static atomic_bool stop;

/* RPC message heads (RFC 5531): xid, CALL (0), rpcvers 2; xid, REPLY (1), MSG_ACCEPTED (0). */
static void head(unsigned char *msg, uint32_t xid, uint32_t type, uint32_t word2)
{
	uint32_t w[3] = { htonl(xid), htonl(type), htonl(word2) };

	memcpy(msg, w, sizeof(w));
}

/* Echo a call: its bytes under the reply head of its XID. */
static void on_call(struct rpcrdma_svc_call *call, void *arg)
{
	unsigned char echo[256];
	size_t len;
	const unsigned char *msg = rpcrdma_svc_call_msg(call, &len);
	uint32_t xid;

	(void)arg;
	if (len < 12 || len > sizeof(echo)) {
		rpcrdma_svc_call_drop(call);
		return;
	}
	memcpy(echo, msg, len);
	memcpy(&xid, msg, 4);
	head(echo, ntohl(xid), 1, 0);
	rpcrdma_svc_reply(call, echo, len);
}

static void *serve(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		rpcrdma_svc_wait(svc, 20);
	return NULL;
}

static int done_runs;
static struct rpcrdma_call *done_call;

static void on_done(struct rpcrdma_call *call)
{
	done_runs++;
	done_call = call;
}

/* A call: its head, then a pattern. */
static void fill(unsigned char *msg, size_t len, uint32_t xid)
{
	size_t i;

	for (i = 0; i < len; i++)
		msg[i] = (unsigned char)(i * 7 + xid);
	head(msg, xid, 0, 2);
}

/* Is @reply the echo of call @msg (@len bytes)? */
static bool echoes(const unsigned char *reply, const unsigned char *msg, size_t len)
{
	unsigned char want[12];
	uint32_t xid;

	memcpy(&xid, msg, 4);
	head(want, ntohl(xid), 1, 0);
	return memcmp(reply, want, 12) == 0 && memcmp(reply + 12, msg + 12, len - 12) == 0;
}

int main(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t alen = sizeof(sin);
	struct rpcrdma_svc_attr sattr = { 0 };
	struct rpcrdma_clnt_attr cattr = { 0 };
	struct rpcrdma_clnt_info info;
	struct rpcrdma_stats cst, sst;
	struct rpcrdma_hdr_enc enc = { 0 };
	struct rpcrdma_clnt *clnt;
	struct rpcrdma_call call;
	unsigned char msg[256], reply[256], hdr[64];
	size_t rlen;
	pthread_t th;
	uint32_t w;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sattr.addr = (struct sockaddr *)&sin;
	sattr.max_requests = 8;
	sattr.inline_size = 2048;
	sattr.on_call = on_call;
	CHECK(rpcrdma_svc_listen(&sattr, &svc) == 0);
	CHECK(rpcrdma_svc_addr(svc, (struct sockaddr *)&sin, &alen) == 0);
	CHECK(pthread_create(&th, NULL, serve, NULL) == 0);

	/* Field by field as 0.1 laid them out: the negotiated sizes show it. */
	cattr.addr = (struct sockaddr *)&sin;
	cattr.max_requests = 4;
	cattr.inline_size = 2048;
	cattr.connect_timeout_ms = 5000;
	CHECK(rpcrdma_clnt_connect(&cattr, &clnt) == 0);
	memset(&info, 0xff, sizeof(info));
	CHECK(rpcrdma_clnt_info(clnt, &info) == 0);
	CHECK(info.connected == 1 && info.connects == 1);
	CHECK(info.inline_send == 2048 && info.inline_recv == 2048);
	CHECK(info.credits >= 1 && info.credits <= 4);

	fill(msg, sizeof(msg), 0x100);
	rlen = sizeof(reply);
	CHECK(rpcrdma_clnt_call(clnt, msg, sizeof(msg), reply, &rlen, 5000) == 0);
	CHECK(rlen == sizeof(msg) && echoes(reply, msg, rlen));
	/* 0.1's rpcrdma_clnt_next_timeout: -1 for none (and for NULL), else ms. */
	CHECK(rpcrdma_clnt_next_timeout(clnt) == -1);
	CHECK(rpcrdma_clnt_next_timeout(NULL) == -1);

	/* The 0.1 struct rpcrdma_call: done() gets it back, results filled in. */
	memset(&call, 0, sizeof(call));
	fill(msg, 100, 0x101);
	call.msg = msg;
	call.msg_len = 100;
	call.reply = reply;
	call.reply_max = sizeof(reply);
	call.done = on_done;
	call.reply_len = 12345;
	CHECK(rpcrdma_clnt_submit(clnt, &call) == 0);
	CHECK(rpcrdma_clnt_next_timeout(clnt) >= 0);
	while (!done_runs)
		CHECK(rpcrdma_clnt_wait(clnt, 1000) >= 0);
	CHECK(done_runs == 1 && done_call == &call);
	CHECK(call.status == 0 && call.reply_len == 100 && echoes(reply, msg, 100));

	/* Cancelled before it was ever polled: done() with -ECANCELED, the same pointer. */
	fill(msg, 64, 0x102);
	call.msg_len = 64;
	CHECK(rpcrdma_clnt_submit(clnt, &call) == 0);
	CHECK(rpcrdma_clnt_cancel(clnt, &call) == 0);
	CHECK(done_runs == 2 && done_call == &call && call.status == -ECANCELED);
	CHECK(rpcrdma_clnt_cancel(clnt, &call) == -ENOENT);

	memset(&cst, 0xff, sizeof(cst));
	CHECK(rpcrdma_clnt_stats(clnt, &cst) == 0);
	CHECK(cst.calls >= 2 && cst.replies >= 2 && cst.connects == 1 && cst.dropped == 0);
	CHECK(cst.heap_bytes > 0 && cst.heap_bytes < (1u << 30));
	rpcrdma_clnt_destroy(clnt);

	atomic_store(&stop, true);
	pthread_join(th, NULL);
	memset(&sst, 0xff, sizeof(sst));
	CHECK(rpcrdma_svc_stats(svc, &sst) == 0);
	CHECK(sst.calls >= 2 && sst.replies >= 2 && sst.rdma_errors == 0);
	rpcrdma_svc_destroy(svc);

	/* The 0.1 encoder: ERR_VERS carried rdma_vers 1, whatever followed the struct. */
	enc.xid = 9;
	enc.proc = RPCRDMA_ERROR;
	enc.err = RPCRDMA_ERR_VERS;
	enc.vers_low = 1;
	enc.vers_high = 1;
	CHECK(rpcrdma_hdr_encoded_len(&enc) == 28);
	CHECK(rpcrdma_hdr_encode(hdr, sizeof(hdr), &enc) == 28);
	memcpy(&w, hdr + 4, 4);
	CHECK(ntohl(w) == 1);

	printf("old-abi: a 0.1 program ran against librpcrdma %s\n", rpcrdma_version_string());
	return 0;
}
