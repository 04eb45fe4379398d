/* SPDX-License-Identifier: MIT */
/*
 * Data and load: files of 0 B to 64 MiB byte for byte, a directory of
 * 10,000 entries through READDIRPLUS, concurrent clients, a client lost in
 * the middle of a WRITE, TCP connections that never send (a full server
 * makes room, an idle one is closed), and the counters that show which
 * calls used which chunks over RDMA.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <softrdma.h>

#include "mount.h"
#include "nfs3_prot.h"
#include "nfs3_test.h"
#include "server_tcp.h"

/* put @size bytes of @seed as @name, get them back: both copies and the server's file exact. */
static void round_trip(struct tgroup *g, struct nfs3c *c, const char *name, uint64_t size,
		       unsigned int seed)
{
	char local[4096], back[4096], served[4200];
	uint64_t bytes;
	nfs_fh3 fh;
	int fd;

	nfs3t_tmpname(local, sizeof(local), "src");
	nfs3t_tmpname(back, sizeof(back), "back");
	nfs3t_make_file(local, size, seed);
	fd = open(local, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(nfs3c_put(c, &g->dir, name, fd, &bytes), 0);
	close(fd);
	assert_int_equal(bytes, size);
	nfs3t_local(g, name, served, sizeof(served));
	assert_true(nfs3t_file_is(served, size, seed));

	assert_int_equal(nfs3c_lookup(c, &g->dir, name, &fh, NULL), 0);
	fd = open(back, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(nfs3c_get(c, &fh, fd, &bytes), 0);
	close(fd);
	assert_int_equal(bytes, size);
	assert_true(nfs3t_file_is(back, size, seed));
	nfs3c_fh_free(&fh);
	unlink(local);
	unlink(back);
}

void t_files(void **state)
{
	static const uint64_t sizes[] = { 0, 1, 3, 4095, 4096, 4097, 65535, 65536, 65537,
					  MiB - 1, MiB, MiB + 1, 3 * MiB + 7 };
	struct tgroup *g = tgroup_of(state);
	char name[32];
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(name, sizeof(name), "file-%zu", i);
		round_trip(g, g->c, name, sizes[i], (unsigned int)i + 20);
	}
}

/* One 64 MiB transfer each way. */
void t_file_64m(void **state)
{
	struct tgroup *g = tgroup_of(state);
	char served[4200];

	round_trip(g, g->c, "file-64m", 64ull * MiB, 99);
	/* Not kept: the suite's scratch space stays small. */
	nfs3t_local(g, "file-64m", served, sizeof(served));
	unlink(served);
}

struct big_walk {
	unsigned char seen[BIG_ENTRIES];
	unsigned int entries;
	unsigned int dots;
	unsigned int bad;
	nfs_fh3 sample[3];
};

static int big_entry(void *arg, const entryplus3 *e)
{
	struct big_walk *w = arg;
	unsigned int n;
	char tail;

	w->entries++;
	if (!e->name_attributes.attributes_follow || !e->name_handle.handle_follows)
		w->bad++;
	if (strcmp(e->name, ".") == 0 || strcmp(e->name, "..") == 0) {
		w->dots++;
		return 0;
	}
	if (sscanf(e->name, "f%5u%c", &n, &tail) != 1 || n >= BIG_ENTRIES || w->seen[n]++) {
		w->bad++;
		return 0;
	}
	if (e->name_attributes.post_op_attr_u.attributes.type != NF3REG)
		w->bad++;
	if (n == 0 || n == BIG_ENTRIES / 2 || n == BIG_ENTRIES - 1)
		nfs3c_fh_copy(&w->sample[n == 0 ? 0 : n == BIG_ENTRIES - 1 ? 2 : 1],
			      &e->name_handle.post_op_fh3_u.handle);
	return 0;
}

/*
 * 10,000 entries by READDIRPLUS, each once with attributes and a handle
 * that works. Over RDMA every call offered a Reply chunk (its reply has no
 * bound), and the server used them: the replies are larger than a Send.
 */
void t_readdirplus_big(void **state)
{
	struct tgroup *g = tgroup_of(state);
	struct rpcrdma_stats c0, c1, s0, s1;
	struct big_walk *w = calloc(1, sizeof(*w));
	unsigned int calls = 0, i;
	nfs_fh3 dir;

	assert_non_null(w);
	assert_int_equal(nfs3c_lookup(g->c, &g->c->root, BIG_DIR, &dir, NULL), 0);
	if (g->c->rdma) {
		nfs3t_clnt_stats(g->c, &c0);
		nfs3t_svc_stats(&s0);
	}
	assert_int_equal(nfs3c_list(g->c, &dir, big_entry, w, &calls), 0);
	if (g->c->rdma) {
		nfs3t_clnt_stats(g->c, &c1);
		nfs3t_svc_stats(&s1);
	}
	assert_int_equal(w->bad, 0);
	assert_int_equal(w->dots, 2);
	assert_int_equal(w->entries, BIG_ENTRIES + 2);
	for (i = 0; i < BIG_ENTRIES; i++)
		assert_int_equal(w->seen[i], 1);
	assert_true(calls > 10);
	for (i = 0; i < 3; i++) {
		fattr3 attr;

		assert_int_equal(nfs3t_getattr(g->c->nfs, &w->sample[i], &attr), NFS3_OK);
		assert_int_equal(attr.type, NF3REG);
		nfs3c_fh_free(&w->sample[i]);
	}
	if (g->c->rdma) {
		assert_int_equal(c1.reply_chunks - c0.reply_chunks, calls);
		/* All but perhaps the last, short one. */
		assert_true(s1.reply_chunks - s0.reply_chunks >= calls - 1);
		assert_int_equal(c1.write_chunks - c0.write_chunks, 0);
		assert_int_equal(c1.read_chunks - c0.read_chunks, 0);
	}
	print_message("%u entries in %u READDIRPLUS calls\n", w->entries, calls);
	nfs3c_fh_free(&dir);
	free(w);
}

struct worker {
	struct tgroup *g;
	struct nfs3c *c;		/* own mount; or the group's, shared */
	const nfs_fh3 *file;		/* shared readers: what to read */
	unsigned int seed;
	pthread_t thread;
	int failures;
};

/* A mount of its own: put, get back, compare, three rounds. */
static void *writer_main(void *arg)
{
	struct worker *w = arg;
	char name[32], local[4096], back[4096];
	uint64_t size = MiB + w->seed * 4097, bytes;
	int round, fd;

	for (round = 0; round < 3; round++) {
		nfs_fh3 fh;

		snprintf(name, sizeof(name), "cc-%u-%d", w->seed, round);
		nfs3t_tmpname(local, sizeof(local), name);
		nfs3t_tmpname(back, sizeof(back), name);
		nfs3t_make_file(local, size, w->seed + (unsigned int)round);
		fd = open(local, O_RDONLY);
		if (fd < 0 || nfs3c_put(w->c, &w->g->dir, name, fd, &bytes) || bytes != size)
			w->failures++;
		close(fd);
		if (nfs3c_lookup(w->c, &w->g->dir, name, &fh, NULL)) {
			w->failures++;
			continue;
		}
		fd = open(back, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || nfs3c_get(w->c, &fh, fd, &bytes) || bytes != size)
			w->failures++;
		close(fd);
		if (!nfs3t_file_is(back, size, w->seed + (unsigned int)round))
			w->failures++;
		nfs3c_fh_free(&fh);
		unlink(local);
		unlink(back);
	}
	return NULL;
}

/* Threads sharing one CLIENT: READs into buffers of their own, in flight together. */
static void *reader_main(void *arg)
{
	struct worker *w = arg;
	unsigned char *buf = malloc(256 * 1024), *want = malloc(256 * 1024);
	int i;

	for (i = 0; buf && want && i < 20; i++) {
		uint64_t off = (uint64_t)i * 4096;
		uint32_t got = 0;
		bool eof;

		if (nfs3c_read(w->c, w->file, off, 256 * 1024, (char *)buf, &got, &eof) ||
		    got != 256 * 1024) {
			w->failures++;
			continue;
		}
		nfs3t_fill(want, got, off, w->seed);
		if (memcmp(buf, want, got))
			w->failures++;
	}
	if (!buf || !want)
		w->failures++;
	free(buf);
	free(want);
	return NULL;
}

void t_concurrent(void **state)
{
	struct tgroup *g = tgroup_of(state);
	struct worker w[6];
	nfs_fh3 shared;
	int i;

	nfs3t_put_pattern(g, "cc-shared", 2 * MiB, 77);
	nfs3t_lookup(g, "cc-shared", &shared);
	for (i = 0; i < 6; i++) {
		w[i] = (struct worker){ .g = g, .seed = (unsigned int)i + 40 };
		if (i < 4) {
			w[i].c = nfs3t_open_as(g, getuid(), getgid());
		} else {
			w[i].c = g->c;
			w[i].file = &shared;
			w[i].seed = 77;
		}
		assert_int_equal(pthread_create(&w[i].thread, NULL, i < 4 ? writer_main : reader_main,
						&w[i]), 0);
	}
	for (i = 0; i < 6; i++) {
		pthread_join(w[i].thread, NULL);
		assert_int_equal(w[i].failures, 0);
		if (i < 4)
			nfs3c_close(w[i].c);
	}
	nfs3c_fh_free(&shared);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Over TCP a client that dies leaves the server a socket closed in the
 * middle of a record, as the kernel closes a killed process's: here a
 * WRITE's record mark promising 1 MiB, its call header and 64 KiB of it,
 * then close().
 */
static void tcp_vanish_mid_write(const nfs_fh3 *fh)
{
	static char call[MiB + 4096];
	WRITE3args a = { .file = *fh, .count = MiB, .stable = FILE_SYNC };
	struct rpc_msg msg = { 0 };
	struct sockaddr_in sin;
	uint32_t mark;
	XDR x;
	int fd;

	a.data.data_len = MiB;
	a.data.data_val = call;	/* any bytes: they never arrive */
	msg.rm_xid = 0x4b1ed;
	msg.rm_direction = CALL;
	msg.rm_call.cb_rpcvers = RPC_MSG_VERSION;
	msg.rm_call.cb_prog = NFS_PROGRAM;
	msg.rm_call.cb_vers = NFS_V3;
	msg.rm_call.cb_proc = NFSPROC3_WRITE;
	msg.rm_call.cb_cred = _null_auth;
	msg.rm_call.cb_verf = _null_auth;
	xdrmem_create(&x, call + 4, sizeof(call) - 4, XDR_ENCODE);
	assert_true(xdr_callmsg(&x, &msg));
	assert_true(xdr_WRITE3args(&x, &a));
	mark = htonl(0x80000000u | xdr_getpos(&x));
	memcpy(call, &mark, 4);
	assert_true(nfs3_server_tcp_addr(nfs3t_server, &sin));
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(write(fd, call, 65536), 65536);
	close(fd);
}

/*
 * Over RDMA the connection goes while the server pulls the WRITE's data
 * (softrdma disconnects it at the server's RDMA Read, both sides told): the
 * call fails, the server goes on.
 */
static void rdma_vanish_mid_write(struct tgroup *g, const nfs_fh3 *fh)
{
	struct softrdma_fault f = {
		.match = { .opcode_mask = 1u << IBV_WR_RDMA_READ, .nth = 1, .count = 1 },
		.kind = SOFTRDMA_FAULT_DISCONNECT,
	};
	struct nfs3c *k = nfs3t_open_as(g, getuid(), getgid());
	struct rpcrdma_stats s0, s1;
	int64_t deadline;
	char verf[8];
	uint32_t done;
	int id;

	nfs3t_svc_stats(&s0);
	id = softrdma_fault_add(&f);
	assert_true(id > 0);
	assert_true(nfs3c_write(k, fh, 0, k->buf, MiB, FILE_SYNC, &done, verf) < 0);
	assert_int_equal(softrdma_fault_fired(id), 1);
	softrdma_fault_remove(id);
	nfs3c_close(k);
	/* The server hears of the loss on its poller: soon, not at once. */
	deadline = now_ms() + 5000;
	do {
		nfs3t_svc_stats(&s1);
	} while (s1.disconnects == s0.disconnects && now_ms() < deadline && !poll(NULL, 0, 10));
	assert_true(s1.disconnects > s0.disconnects);
}

/* Wait (5 s at most) until the server serves @want TCP connections or fewer; how many it does. */
static unsigned int tcp_conns_down_to(unsigned int want)
{
	int64_t deadline = now_ms() + 5000;
	unsigned int n;

	while ((n = nfs3_server_tcp_conns(nfs3t_server)) > want && now_ms() < deadline)
		poll(NULL, 0, 10);
	return n;
}

/* A mount's TCP connections: its MOUNT CLIENT's and its NFS CLIENT's. */
#define MOUNT_TCP_CONNS 2

void t_killed_mid_write(void **state)
{
	struct tgroup *g = tgroup_of(state);
	char served[4200];
	nfs_fh3 fh;

	assert_int_equal(nfs3c_create(g->c, &g->dir, "victim", 0644, &fh), 0);
	if (g->c->rdma) {
		rdma_vanish_mid_write(g, &fh);
	} else {
		/* Only the group's mount, once the earlier tests' have been let go. */
		assert_int_equal(tcp_conns_down_to(MOUNT_TCP_CONNS), MOUNT_TCP_CONNS);
		tcp_vanish_mid_write(&fh);
		/* The server notices and lets the connection go. */
		assert_int_equal(tcp_conns_down_to(MOUNT_TCP_CONNS), MOUNT_TCP_CONNS);
	}
	/* The WRITE never ran; everyone else is served as before. */
	nfs3t_local(g, "victim", served, sizeof(served));
	assert_true(nfs3t_file_is(served, 0, 0));
	assert_int_equal(nfs3t_getattr(g->c->nfs, &fh, NULL), NFS3_OK);
	round_trip(g, g->c, "after-kill", 3 * MiB, 5);
	{
		struct nfs3c *fresh = nfs3t_open_as(g, getuid(), getgid());

		round_trip(g, fresh, "after-kill-fresh", 65536, 6);
		nfs3c_close(fresh);
	}
	nfs3c_fh_free(&fh);
}

/* Wait (5 s at most) until the server serves @want TCP connections or more; how many it does. */
static unsigned int tcp_conns_up_to(unsigned int want)
{
	int64_t deadline = now_ms() + 5000;
	unsigned int n;

	while ((n = nfs3_server_tcp_conns(nfs3t_server)) < want && now_ms() < deadline)
		poll(NULL, 0, 10);
	return n;
}

/* A TCP connection to @sin that never sends. */
static int quiet_tcp_conn(const struct sockaddr_in *sin)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (const struct sockaddr *)sin, sizeof(*sin)), 0);
	return fd;
}

/* Did the server close @fd (end of file, or a reset) within @ms? */
static bool tcp_closed_by_server(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char byte;

	return poll(&pfd, 1, ms) == 1 && recv(fd, &byte, 1, MSG_DONTWAIT) <= 0;
}

/*
 * TCP: the server's connections all taken (NFS3_DEFAULT_MAX_TCP) by the
 * group's mount and by sockets that connected and never sent, quiet for
 * a second. A new mount (MOUNT, then NFS: two connections) is served: the
 * two oldest quiet sockets make room, closed by the server; the others
 * and the group's mount, which called since, stay.
 */
void t_tcp_full_makes_room(void **state)
{
	struct tgroup *g = tgroup_of(state);
	const unsigned int n = NFS3_DEFAULT_MAX_TCP - MOUNT_TCP_CONNS;
	int fds[NFS3_DEFAULT_MAX_TCP];
	struct sockaddr_in sin;
	struct nfs3c *fresh;
	int64_t opened;
	unsigned int i;

	if (g->c->rdma)
		skip();
	assert_int_equal(tcp_conns_down_to(MOUNT_TCP_CONNS), MOUNT_TCP_CONNS);
	assert_true(nfs3_server_tcp_addr(nfs3t_server, &sin));
	for (i = 0; i < n; i++)
		fds[i] = quiet_tcp_conn(&sin);
	/* Counted once accepted, and quiet from then on. */
	assert_int_equal(tcp_conns_up_to(NFS3_DEFAULT_MAX_TCP), NFS3_DEFAULT_MAX_TCP);
	opened = now_ms();
	assert_int_equal(mountproc3_null_3(NULL, NULL, g->c->mnt), RPC_SUCCESS);
	assert_int_equal(nfsproc3_null_3(NULL, NULL, g->c->nfs), RPC_SUCCESS);
	/* Idle is a second without a call (server_tcp.h). */
	while (now_ms() - opened <= 1000)
		poll(NULL, 0, 50);

	fresh = nfs3t_open_as(g, getuid(), getgid());
	round_trip(g, fresh, "full-server", 65536, 8);
	assert_true(tcp_closed_by_server(fds[0], 5000));
	assert_true(tcp_closed_by_server(fds[1], 5000));
	for (i = 2; i < n; i++)
		assert_false(tcp_closed_by_server(fds[i], 0));
	assert_int_equal(mountproc3_null_3(NULL, NULL, g->c->mnt), RPC_SUCCESS);
	assert_int_equal(nfsproc3_null_3(NULL, NULL, g->c->nfs), RPC_SUCCESS);
	nfs3c_close(fresh);
	for (i = 0; i < n; i++)
		close(fds[i]);
	assert_int_equal(tcp_conns_down_to(MOUNT_TCP_CONNS), MOUNT_TCP_CONNS);
}

/*
 * TCP's idle timeout, on a listener of its own (1 s): a socket that never
 * sends is closed, not before; a client that calls every 50 ms meanwhile
 * is served on the same connection throughout. The server's default is on.
 */
void t_tcp_idle_closed(void **state)
{
	struct tgroup *g = tgroup_of(state);
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct nfs3_server_opts so;
	struct nfs3c_opts o;
	struct nfs3_tcp *t;
	int64_t before;
	CLIENT *cl;
	int fd;

	if (g->c->rdma)
		skip();
	nfs3_server_opts_init(&so);
	assert_int_equal(so.idle_s, NFS3_DEFAULT_IDLE_S);
	assert_true(NFS3_DEFAULT_IDLE_S > 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(nfs3_tcp_start(&sin, 4, 1000, &t), 0);
	nfs3_tcp_addr(t, &sin);
	nfs3c_opts_init(&o);
	o.transport = NFS3C_TCP;
	o.addr = sin;
	o.timeout_s = 10;
	cl = nfs3c_client(&o, NFS_PROGRAM, NFS_V3);
	assert_non_null(cl);
	before = now_ms();
	fd = quiet_tcp_conn(&sin);
	while (!tcp_closed_by_server(fd, 50) && now_ms() - before < 10000)
		assert_int_equal(nfsproc3_null_3(NULL, NULL, cl), RPC_SUCCESS);
	/* Accepted after @before, closed once quiet for 1 s: never earlier. */
	assert_true(tcp_closed_by_server(fd, 0));
	assert_true(now_ms() - before >= 1000);
	assert_int_equal(nfsproc3_null_3(NULL, NULL, cl), RPC_SUCCESS);
	clnt_destroy(cl);
	close(fd);
	nfs3_tcp_stop(t);
}

struct chunk_delta {
	int64_t read, write, reply, bounce;
};

static void delta(const struct rpcrdma_stats *a, const struct rpcrdma_stats *b,
		  struct chunk_delta *d)
{
	d->read = (int64_t)(b->read_chunks - a->read_chunks);
	d->write = (int64_t)(b->write_chunks - a->write_chunks);
	d->reply = (int64_t)(b->reply_chunks - a->reply_chunks);
	d->bounce = (int64_t)(b->bounce_bytes - a->bounce_bytes);
}

/* The chunks one call used, on the client's side and on the server's. */
struct probe {
	struct rpcrdma_stats c0, s0;
	struct chunk_delta c, s;
};

static void probe_start(struct tgroup *g, struct probe *p)
{
	nfs3t_clnt_stats(g->c, &p->c0);
	nfs3t_svc_stats(&p->s0);
}

static void probe_end(struct tgroup *g, struct probe *p)
{
	struct rpcrdma_stats c1, s1;

	nfs3t_clnt_stats(g->c, &c1);
	nfs3t_svc_stats(&s1);
	delta(&p->c0, &c1, &p->c);
	delta(&p->s0, &s1, &p->s);
}

static void assert_chunks(const struct chunk_delta *d, int64_t read, int64_t write,
			  int64_t reply)
{
	assert_int_equal(d->read, read);
	assert_int_equal(d->write, write);
	assert_int_equal(d->reply, reply);
	/* Registered memory on both sides (pool, transfer buffer): nothing copied. */
	assert_int_equal(d->bounce, 0);
}

/*
 * RDMA only: NULL and GETATTR move no chunk at all (their bound fits a
 * Send, so not even a Reply chunk is offered), READ's data comes in a
 * Write chunk, WRITE's goes in a Read chunk, READDIRPLUS's reply in a
 * Reply chunk; nothing copied on either side.
 */
void t_chunk_stats(void **state)
{
	struct tgroup *g = tgroup_of(state);
	struct nfs3c *c = g->c;
	nfs_fh3 fh, big;
	struct probe p;
	char verf[8];
	uint32_t got, done;
	bool eof;

	if (!c->rdma)
		skip();
	nfs3t_put_pattern(g, "stats", 256 * 1024, 12);
	nfs3t_lookup(g, "stats", &fh);
	assert_int_equal(nfs3c_lookup(c, &c->root, BIG_DIR, &big, NULL), 0);

	probe_start(g, &p);
	assert_int_equal(nfsproc3_null_3(NULL, NULL, c->nfs), RPC_SUCCESS);
	probe_end(g, &p);
	assert_chunks(&p.c, 0, 0, 0);
	assert_chunks(&p.s, 0, 0, 0);

	probe_start(g, &p);
	assert_int_equal(nfs3t_getattr(c->nfs, &fh, NULL), NFS3_OK);
	probe_end(g, &p);
	assert_chunks(&p.c, 0, 0, 0);
	assert_chunks(&p.s, 0, 0, 0);

	probe_start(g, &p);
	assert_int_equal(nfs3c_read(c, &fh, 0, 65536, c->buf, &got, &eof), 0);
	probe_end(g, &p);
	assert_int_equal(got, 65536);
	assert_chunks(&p.c, 0, 1, 0);
	assert_chunks(&p.s, 0, 1, 0);

	probe_start(g, &p);
	assert_int_equal(nfs3c_write(c, &fh, 0, c->buf, 65536, UNSTABLE, &done, verf), 0);
	probe_end(g, &p);
	assert_chunks(&p.c, 1, 0, 0);
	assert_chunks(&p.s, 1, 0, 0);

	probe_start(g, &p);
	assert_int_equal(nfs3t_readdirplus_st(c->nfs, &big, 65536), NFS3_OK);
	probe_end(g, &p);
	assert_chunks(&p.c, 0, 0, 1);
	assert_chunks(&p.s, 0, 0, 1);
	nfs3c_fh_free(&big);
	nfs3c_fh_free(&fh);
}
