/* SPDX-License-Identifier: MIT */
/*
 * The RoCEv2 capture of the library's RPC-over-RDMA traffic, checked with
 * tshark's InfiniBand, RPC-over-RDMA and ONC RPC dissectors. An echo-like
 * ONC RPC program (its server on a thread, the client in the test) makes:
 * inline calls and replies, a long call (RDMA_NOMSG, the server pulls it
 * with RDMA Reads), a reply whose data goes by RDMA Write into the client's
 * Write chunk, and a long reply written into its Reply chunk. Each
 * RPC-over-RDMA header must dissect with the values of the call (XID,
 * version 1, message type, chunk counts, each segment's handle and length
 * matching the RETH of the RDMA operations that used it), and each RPC
 * message, reassembled by tshark from the chunks where needed, with its
 * XID, type, program, version and procedure. Skipped (77) without tshark.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rpcrdma/rpcrdma.h>

#include "harness.h"
#include "tshark.h"

#define PROG		0x20000199u
#define VERS		1u
#define PROC_ECHO	1u	/* opaque<> in, the same opaque<> out */
#define PROC_READ	2u	/* count, seed in; opaque<count> of a pattern out (a DDP result) */
#define PROC_SIZE	3u	/* opaque<> in; its length out */

/*
 * NFSv3 READ, for the Write chunk: tshark places Write chunk data in a reply
 * only for protocols that tell it where the data goes, as NFS does.
 */
#define NFS_PROG	100003u
#define NFS_VERS	3u
#define NFS_READ	6u
#define NFS_FH_LEN	8
#define NFS_REPLY	(REPLY_HDR + 20)	/* NFS3_OK, no attributes, count, eof, length */

#define CALL_HDR	40	/* xid, CALL, rpcvers, prog, vers, proc, AUTH_NONE cred and verf */
#define REPLY_HDR	24	/* xid, REPLY, MSG_ACCEPTED, AUTH_NONE verf, SUCCESS */

static char pcap_path[64];

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

static size_t pad4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

static uint8_t pattern(uint32_t seed, size_t i)
{
	return (uint8_t)(seed * 31 + i * 7 + (i >> 8));
}

static size_t call_header(uint8_t *buf, uint32_t xid, uint32_t prog, uint32_t vers,
			  uint32_t proc)
{
	static const uint32_t words[] = { 0, 0, 2, 0, 0, 0, 0, 0, 0, 0 };
	unsigned int i;

	for (i = 0; i < 10; i++)
		put32(buf + 4 * i, words[i]);
	put32(buf, xid);
	put32(buf + 12, prog);
	put32(buf + 16, vers);
	put32(buf + 20, proc);
	return CALL_HDR;
}

static size_t reply_header(uint8_t *buf, uint32_t xid)
{
	memset(buf, 0, REPLY_HDR);
	put32(buf, xid);
	put32(buf + 4, 1);
	return REPLY_HDR;
}

/* ==== the server (its own thread) ================================================ */

/* NFSv3 READ: fh, offset, count in; the pattern of count bytes out, a DDP result. */
static void nfs_read(struct rpcrdma_svc_call *call, const uint8_t *msg, size_t len)
{
	uint8_t reply[NFS_REPLY] = { 0 };
	uint32_t count;
	uint8_t *data;
	size_t i;

	if (len < CALL_HDR + 4 + NFS_FH_LEN + 12) {
		rpcrdma_svc_call_drop(call);
		return;
	}
	count = get32(msg + CALL_HDR + 4 + NFS_FH_LEN + 8);
	data = malloc(count ? count : 1);
	if (!data) {
		rpcrdma_svc_call_drop(call);
		return;
	}
	for (i = 0; i < count; i++)
		data[i] = pattern(NFS_READ, i);
	reply_header(reply, get32(msg));
	put32(reply + REPLY_HDR + 8, count);	/* after NFS3_OK and attributes_follow FALSE */
	put32(reply + REPLY_HDR + 12, 1);	/* eof */
	put32(reply + REPLY_HDR + 16, count);	/* the data's length; the data follows */
	if (!rpcrdma_svc_reply_payload(call, NFS_REPLY, data, count, free, data))
		rpcrdma_svc_reply(call, reply, NFS_REPLY);
	else
		rpcrdma_svc_call_drop(call);
}

static void on_call(struct rpcrdma_svc_call *call, void *arg)
{
	size_t len, n;
	const uint8_t *msg = rpcrdma_svc_call_msg(call, &len);
	uint8_t *reply;
	uint32_t proc;

	(void)arg;
	if (len < CALL_HDR + 4) {
		rpcrdma_svc_call_drop(call);
		return;
	}
	if (get32(msg + 12) == NFS_PROG) {
		if (get32(msg + 20) == NFS_READ)
			nfs_read(call, msg, len);
		else
			rpcrdma_svc_call_drop(call);
		return;
	}
	proc = get32(msg + 20);
	n = get32(msg + CALL_HDR);
	reply = calloc(1, REPLY_HDR + 4 + pad4(n));
	if (!reply) {
		rpcrdma_svc_call_drop(call);
		return;
	}
	reply_header(reply, get32(msg));
	if (proc == PROC_ECHO && len >= CALL_HDR + 4 + n) {
		memcpy(reply + REPLY_HDR, msg + CALL_HDR, 4 + n);
		rpcrdma_svc_reply(call, reply, REPLY_HDR + 4 + pad4(n));
	} else if (proc == PROC_READ && len >= CALL_HDR + 8) {
		uint8_t *data = malloc(n ? n : 1);
		uint32_t seed = get32(msg + CALL_HDR + 4);
		size_t i;

		for (i = 0; data && i < n; i++)
			data[i] = pattern(seed, i);
		put32(reply + REPLY_HDR, (uint32_t)n);
		/* The data goes to the client's Write chunk, or into the reply at 28. */
		if (data && !rpcrdma_svc_reply_payload(call, REPLY_HDR + 4, data, n, free, data))
			rpcrdma_svc_reply(call, reply, REPLY_HDR + 4);
		else
			rpcrdma_svc_call_drop(call);
	} else if (proc == PROC_SIZE) {
		put32(reply + REPLY_HDR, (uint32_t)n);
		rpcrdma_svc_reply(call, reply, REPLY_HDR + 4);
	} else {
		rpcrdma_svc_call_drop(call);
	}
	free(reply);
}

struct server {
	struct rpcrdma_svc *svc;
	pthread_t thread;
	atomic_bool stop;
	struct sockaddr_in addr;
};

static void *server_main(void *arg)
{
	struct server *s = arg;

	while (!atomic_load(&s->stop))
		rpcrdma_svc_wait(s->svc, 20);
	return NULL;
}

static void server_start(struct server *s)
{
	struct rpcrdma_svc_attr attr = { RPCRDMA_SIZED(attr), .on_call = on_call };
	socklen_t len = sizeof(s->addr);

	memset(s, 0, sizeof(*s));
	s->addr.sin_family = AF_INET;
	s->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	attr.addr = (struct sockaddr *)&s->addr;
	assert_int_equal(rpcrdma_svc_listen(&attr, &s->svc), 0);
	assert_int_equal(rpcrdma_svc_addr(s->svc, (struct sockaddr *)&s->addr, &len), 0);
	assert_int_equal(pthread_create(&s->thread, NULL, server_main, s), 0);
}

static void server_stop(struct server *s)
{
	atomic_store(&s->stop, true);
	pthread_join(s->thread, NULL);
	rpcrdma_svc_destroy(s->svc);
}

/* ==== the client's calls ========================================================== */

struct rpc {
	struct rpcrdma_call call;
	uint8_t *msg;
	uint8_t *reply;
	uint8_t *result;
	int finished;
};

static void rpc_done(struct rpcrdma_call *call)
{
	((struct rpc *)call->arg)->finished = 1;
}

/* Make one call synchronously; the reply is in r->reply (r->call.reply_len bytes). */
static void do_call(struct rpcrdma_clnt *clnt, struct rpc *r, size_t msg_len, size_t reply_max,
		    size_t result_max)
{
	r->reply = calloc(1, reply_max);
	r->result = result_max ? calloc(1, result_max) : NULL;
	assert_non_null(r->reply);
	r->call.struct_size = sizeof(r->call);
	r->call.msg = r->msg;
	r->call.msg_len = msg_len;
	r->call.reply = r->reply;
	r->call.reply_max = reply_max;
	r->call.result = r->result;
	r->call.result_max = result_max;
	r->call.done = rpc_done;
	r->call.arg = r;
	assert_int_equal(rpcrdma_clnt_submit(clnt, &r->call), 0);
	while (!r->finished)
		assert_true(rpcrdma_clnt_wait(clnt, 1000) >= 0);
	assert_int_equal(r->call.status, 0);
	assert_int_equal(get32(r->reply), get32(r->msg));
	assert_int_equal(get32(r->reply + 4), 1);
}

static void rpc_free(struct rpc *r)
{
	free(r->msg);
	free(r->reply);
	free(r->result);
}

/* The XIDs of the calls the test makes, and what each must look like. */
enum { XID_INLINE = 0x1000, XID_LONG = 0x2000, XID_WRITE = 0x3000, XID_REPLY = 0x4000 };

static void make_calls(struct rpcrdma_clnt *clnt)
{
	struct rpc r;
	size_t i;

	/* 1. Inline call and inline reply: ECHO of 16 bytes. */
	memset(&r, 0, sizeof(r));
	r.msg = calloc(1, 64);
	assert_non_null(r.msg);
	call_header(r.msg, XID_INLINE, PROG, VERS, PROC_ECHO);
	put32(r.msg + CALL_HDR, 16);
	memcpy(r.msg + CALL_HDR + 4, "captured by tshk", 16);
	do_call(clnt, &r, CALL_HDR + 20, 1024, 0);
	assert_int_equal(r.call.reply_len, REPLY_HDR + 20);
	assert_memory_equal(r.reply + REPLY_HDR, r.msg + CALL_HDR, 20);
	rpc_free(&r);

	/* 2. A long call: SIZE of 10000 bytes goes by RDMA_NOMSG and a position-zero Read chunk. */
	memset(&r, 0, sizeof(r));
	r.msg = calloc(1, CALL_HDR + 4 + 10000);
	assert_non_null(r.msg);
	call_header(r.msg, XID_LONG, PROG, VERS, PROC_SIZE);
	put32(r.msg + CALL_HDR, 10000);
	for (i = 0; i < 10000; i++)
		r.msg[CALL_HDR + 4 + i] = pattern(2, i);
	do_call(clnt, &r, CALL_HDR + 4 + 10000, 1024, 0);
	assert_int_equal(r.call.reply_len, REPLY_HDR + 4);
	assert_int_equal(get32(r.reply + REPLY_HDR), 10000);
	rpc_free(&r);

	/* 3. A Write chunk: an NFSv3 READ of 20000 bytes lands in r.result by RDMA Write. */
	memset(&r, 0, sizeof(r));
	r.msg = calloc(1, CALL_HDR + 4 + NFS_FH_LEN + 12);
	assert_non_null(r.msg);
	call_header(r.msg, XID_WRITE, NFS_PROG, NFS_VERS, NFS_READ);
	put32(r.msg + CALL_HDR, NFS_FH_LEN);
	memcpy(r.msg + CALL_HDR + 4, "softrdma", NFS_FH_LEN);
	put32(r.msg + CALL_HDR + 4 + NFS_FH_LEN + 12 - 4, 20000);
	do_call(clnt, &r, CALL_HDR + 4 + NFS_FH_LEN + 12, 1024, 20000);
	assert_int_equal(r.call.reply_len, NFS_REPLY);
	assert_int_equal(get32(r.reply + REPLY_HDR + 8), 20000);
	assert_int_equal(r.call.result_len, 20000);
	for (i = 0; i < 20000; i++)
		assert_int_equal(r.result[i], pattern(NFS_READ, i));
	rpc_free(&r);

	/* 4. A Reply chunk: READ of 6000 bytes, no Write chunk, a reply too long for inline. */
	memset(&r, 0, sizeof(r));
	r.msg = calloc(1, CALL_HDR + 8);
	assert_non_null(r.msg);
	call_header(r.msg, XID_REPLY, PROG, VERS, PROC_READ);
	put32(r.msg + CALL_HDR, 6000);
	put32(r.msg + CALL_HDR + 4, 4);
	do_call(clnt, &r, CALL_HDR + 8, 8192, 0);
	assert_int_equal(r.call.reply_len, REPLY_HDR + 4 + 6000);
	for (i = 0; i < 6000; i++)
		assert_int_equal(r.reply[REPLY_HDR + 4 + i], pattern(4, i));
	rpc_free(&r);
}

/* ==== what tshark made of it ====================================================== */

#define TSHARK_OPTS "-2 -o rpc.dissect_unknown_programs:TRUE"

/* Field i of a row, its first value when tshark repeats it ("1,1"). */
static const char *first(const char *row, unsigned int i, char *buf, size_t len)
{
	char *comma;

	tshark_field(row, i, buf, len);
	comma = strchr(buf, ',');
	if (comma)
		*comma = '\0';
	return buf;
}

static unsigned long num(const char *row, unsigned int i)
{
	char buf[64];

	return strtoul(first(row, i, buf, sizeof(buf)), NULL, 0);
}

static void rows(const char *filter, const char *const fields[], struct tshark_rows *out)
{
	char opts[256];

	snprintf(opts, sizeof(opts), "%s -Y '%s'", TSHARK_OPTS, filter);
	assert_int_equal(tshark_fields(pcap_path, opts, fields, out), 0);
}

/* Chunk handles the capture showed, checked against the RDMA operations that used them. */
struct handles {
	unsigned long read, write, reply;
};

/* One RPC-over-RDMA header: XID, type, list counts, and the single segment if any. */
static void header(const char *row, uint32_t xid, unsigned int type, unsigned int reads,
		   unsigned int writes, unsigned int replies, unsigned long len)
{
	assert_int_equal(num(row, 0), xid);
	assert_int_equal(num(row, 1), 1);		/* version */
	assert_int_equal(num(row, 2), 32);		/* credits: the default 32 */
	assert_int_equal(num(row, 3), type);
	assert_int_equal(num(row, 4), reads);
	assert_int_equal(num(row, 5), writes);
	assert_int_equal(num(row, 6), replies);
	assert_int_equal(num(row, 9), len);
}

static void check_headers(struct handles *h)
{
	static const char *const fields[] = {
		"rpcordma.xid", "rpcordma.version", "rpcordma.flow_control", "rpcordma.msg_type",
		"rpcordma.reads_count", "rpcordma.writes_count", "rpcordma.reply_count",
		"rpcordma.position", "rpcordma.rdma_handle", "rpcordma.rdma_length", NULL,
	};
	struct tshark_rows r;

	rows("rpcordma", fields, &r);
	assert_int_equal(r.n, 8);
	header(r.row[0], XID_INLINE, 0, 0, 0, 0, 0);
	header(r.row[1], XID_INLINE, 0, 0, 0, 0, 0);
	/* The long call: RDMA_NOMSG, one Read chunk at position zero, the whole call. */
	header(r.row[2], XID_LONG, 1, 1, 0, 0, CALL_HDR + 4 + 10000);
	assert_int_equal(num(r.row[2], 7), 0);
	h->read = num(r.row[2], 8);
	header(r.row[3], XID_LONG, 0, 0, 0, 0, 0);
	/* The Write chunk offered for the result, then reported with the bytes written. */
	header(r.row[4], XID_WRITE, 0, 0, 1, 0, 20000);
	h->write = num(r.row[4], 8);
	header(r.row[5], XID_WRITE, 0, 0, 1, 0, 20000);
	assert_int_equal(num(r.row[5], 8), h->write);
	/* The Reply chunk offered over reply_max, then the long reply in it: RDMA_NOMSG. */
	header(r.row[6], XID_REPLY, 0, 0, 0, 1, 8192);
	h->reply = num(r.row[6], 8);
	header(r.row[7], XID_REPLY, 1, 0, 0, 1, REPLY_HDR + 4 + 6000);
	assert_int_equal(num(r.row[7], 8), h->reply);
	tshark_rows_free(&r);
}

/* The RDMA Read and Writes used exactly the handles and lengths the headers named. */
static void check_rdma(const struct handles *h)
{
	static const char *const fields[] = {
		"infiniband.bth.opcode", "infiniband.reth.r_key", "infiniband.reth.dmalen", NULL,
	};
	struct tshark_rows r;

	rows("infiniband.reth", fields, &r);
	assert_int_equal(r.n, 3);
	assert_int_equal(num(r.row[0], 0), 12);		/* RDMA Read Request */
	assert_int_equal(num(r.row[0], 1), h->read);
	assert_int_equal(num(r.row[0], 2), CALL_HDR + 4 + 10000);
	assert_int_equal(num(r.row[1], 0), 6);		/* RDMA Write First */
	assert_int_equal(num(r.row[1], 1), h->write);
	assert_int_equal(num(r.row[1], 2), 20000);
	assert_int_equal(num(r.row[2], 0), 6);
	assert_int_equal(num(r.row[2], 1), h->reply);
	assert_int_equal(num(r.row[2], 2), REPLY_HDR + 4 + 6000);
	tshark_rows_free(&r);
}

/* Each RPC message, calls with what was sent and replies matched to them. */
static void check_rpc(void)
{
	static const char *const fields[] = {
		"rpc.xid", "rpc.msgtyp", "rpc.program", "rpc.programversion", "rpc.procedure",
		"rpc.replystat", "rpc.state_accept", NULL,
	};
	static const struct {
		uint32_t xid, prog, vers, proc;
	} calls[] = {
		{ XID_INLINE, PROG, VERS, PROC_ECHO },
		{ XID_LONG, PROG, VERS, PROC_SIZE },
		{ XID_WRITE, NFS_PROG, NFS_VERS, NFS_READ },
		{ XID_REPLY, PROG, VERS, PROC_READ },
	};
	struct tshark_rows r;
	unsigned int i, m;

	rows("rpc", fields, &r);
	assert_int_equal(r.n, 8);
	for (i = 0; i < 8; i++) {
		m = i / 2;
		assert_int_equal(num(r.row[i], 0), calls[m].xid);
		assert_int_equal(num(r.row[i], 1), i % 2);	/* CALL, then REPLY */
		assert_int_equal(num(r.row[i], 2), calls[m].prog);
		assert_int_equal(num(r.row[i], 3), calls[m].vers);
		assert_int_equal(num(r.row[i], 4), calls[m].proc);
		if (i % 2) {
			assert_int_equal(num(r.row[i], 5), 0);	/* MSG_ACCEPTED */
			assert_int_equal(num(r.row[i], 6), 0);	/* SUCCESS */
		}
	}
	tshark_rows_free(&r);
}

static uint8_t hex_byte(const char *p)
{
	char two[3] = { p[0], p[1], 0 };

	return (uint8_t)strtoul(two, NULL, 16);
}

/*
 * The data the chunks carried, as tshark put it back into the messages: the
 * long call from its Read chunk, the Write chunk's 20000 bytes in the NFS
 * READ reply, the long reply from its Reply chunk.
 */
static void check_chunk_data(void)
{
	static const char *const reassembled[] = {
		"rpcordma.reassembled.length", "rpcordma.reassembled.data", NULL,
	};
	static const char *const nfs[] = { "nfs.data", NULL };
	struct tshark_rows r;
	const char *hex;
	size_t i;

	rows("rpcordma.reassembled.length", reassembled, &r);
	assert_int_equal(r.n, 3);
	assert_int_equal(num(r.row[0], 0), CALL_HDR + 4 + 10000);
	hex = strchr(r.row[0], ';') + 1;
	for (i = 0; i < 10000; i++)
		assert_int_equal(hex_byte(hex + 2 * (CALL_HDR + 4 + i)), pattern(2, i));
	assert_int_equal(num(r.row[1], 0), NFS_REPLY + 20000);
	assert_int_equal(num(r.row[2], 0), REPLY_HDR + 4 + 6000);
	hex = strchr(r.row[2], ';') + 1;
	for (i = 0; i < 6000; i++)
		assert_int_equal(hex_byte(hex + 2 * (REPLY_HDR + 4 + i)), pattern(4, i));
	tshark_rows_free(&r);

	rows("nfs.data", nfs, &r);
	assert_int_equal(r.n, 1);
	assert_int_equal(strlen(r.row[0]), 2 * 20000);
	for (i = 0; i < 20000; i++)
		assert_int_equal(hex_byte(r.row[0] + 2 * i), pattern(NFS_READ, i));
	tshark_rows_free(&r);
}

/* The connection's IB CM messages, which let tshark pair the QPs of the connection. */
static void check_cm(void)
{
	static const char *const fields[] = { "infiniband.mad.attributeid", NULL };
	static const unsigned int attrs[] = { 0x10, 0x13, 0x14, 0x15, 0x16 };
	struct tshark_rows r;
	unsigned int i;

	rows("infiniband.mad", fields, &r);
	assert_int_equal(r.n, 5);
	for (i = 0; i < 5; i++)
		assert_int_equal(num(r.row[i], 0), attrs[i]);
	tshark_rows_free(&r);
}

static void test_rpc_capture(void **state)
{
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_clnt *clnt;
	struct handles h;
	struct server s;

	(void)state;
	unlink(pcap_path);
	assert_int_equal(softrdma_pcap_open(pcap_path), 0);
	server_start(&s);
	attr.addr = (struct sockaddr *)&s.addr;
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), 0);
	make_calls(clnt);
	rpcrdma_clnt_destroy(clnt);
	/* The server's side answers the DREQ (DREP) before the server goes. */
	softrdma_progress(0);
	server_stop(&s);
	assert_int_equal(softrdma_pcap_close(), 0);

	check_cm();
	check_headers(&h);
	check_rdma(&h);
	check_rpc();
	check_chunk_data();
	unlink(pcap_path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rpc_capture),
	};

	if (!tshark_present()) {
		printf("tshark is not installed (Debian: tshark): skipped\n");
		return 77;
	}
	snprintf(pcap_path, sizeof(pcap_path), "/tmp/softrdma-rpc-%d.pcap", (int)getpid());
	return cmocka_run_group_tests_name("capture-rpc", tests, NULL, NULL);
}
