/* SPDX-License-Identifier: MIT */
/*
 * nfs3-bench: NFSv3 READ and WRITE of 4 KiB, 64 KiB and 1 MiB over
 * RPC-over-RDMA and over TCP in the same run. A benchmark, not a test: it
 * prints figures and asserts nothing.
 *
 *	nfs3-bench [-r rounds] [-s scale]				(server in this process)
 *	nfs3-bench -a address -P rdma-port -T tcp-port -e export
 *		   [-p server-pid -S server-stats-file] [-r rounds] [-s scale]
 *
 * One caller, one call in flight, on a mount per transport (nfs3c_open()):
 * READs of a 64 MiB file at offsets walking through it, into the client's
 * registered buffer; UNSTABLE WRITEs of the same sizes into another file,
 * COMMITted after each measurement, untimed. Each of -r rounds measures
 * every cell on both transports, the first transport alternating from round
 * to round; the table gives each cell's median over the rounds, and the
 * median of the per-round RDMA/TCP ratios.
 *
 * Copies: payload bytes the library copied because they were not in
 * registered memory (rpcrdma_stats.bounce_bytes) per payload byte moved,
 * on the client and on the server. The server's come from
 * nfs3_server_rdma_stats() in this process, or, for a server in another
 * process, from the file nfs3-server -s writes on SIGUSR1 (-p, -S). Not
 * counted: the copy rpcgen's XDR decoder makes of WRITE data on the
 * server (svc_getargs() into the arguments; RFC 8267's payload API would
 * avoid it, rpcgen's dispatcher does not use it), and TCP's, which this
 * library does not see.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rpcrdma/tirpc.h>

#include "bench.h"
#include "client.h"
#include "server.h"

#define MiB (1u << 20)
#define FILE_SIZE (64ull * MiB)
#define MAX_ROUNDS 100
#define NSIZES 3
#define NOPS 2
#define NXPORTS 2

static const uint32_t sizes[NSIZES] = { 4096, 65536, MiB };
/* Calls per measurement at scale 1: about the same time for each size. */
static const unsigned int counts[NSIZES] = { 4000, 1500, 200 };
static const char *const op_names[NOPS] = { "READ", "WRITE" };
static const char *const xport_names[NXPORTS] = { "rdma", "tcp" };

struct cell {
	double ops_s[MAX_ROUNDS];
	double mb_s[MAX_ROUNDS];
	double ratio[MAX_ROUNDS];	/* rdma cells: this round's RDMA/TCP ops/s */
	uint64_t bytes;
	uint64_t bounce_clnt;
	uint64_t bounce_svc;
	bool svc_unknown;		/* the server's counters could not be had */
};

struct bench {
	struct nfs3c *mount[NXPORTS];
	nfs_fh3 rfile[NXPORTS];
	nfs_fh3 wfile[NXPORTS];
	struct nfs3_server *server;	/* in this process, or NULL */
	pid_t server_pid;		/* in another, with its stats file */
	const char *stats_file;
	unsigned long stats_seq;
	unsigned int rounds;
	double scale;
	struct cell cells[NOPS][NSIZES][NXPORTS];
};

/* The server's bounce_bytes: asked of it here, or by SIGUSR1 of the other process. */
static int server_bounce(struct bench *b, uint64_t *out)
{
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };
	unsigned long seq = 0;
	uint64_t bounce = 0;
	char line[128];
	int tries;

	if (b->server) {
		if (nfs3_server_rdma_stats(b->server, &st))
			return -1;
		*out = st.bounce_bytes;
		return 0;
	}
	if (!b->server_pid || !b->stats_file || kill(b->server_pid, SIGUSR1))
		return -1;
	/* Its dump is a new one when its sequence number moved on (bounded: 2 s). */
	for (tries = 0; tries < 200; tries++) {
		FILE *f = fopen(b->stats_file, "r");

		seq = 0;
		while (f && fgets(line, sizeof(line), f)) {
			sscanf(line, "seq %lu", &seq);
			sscanf(line, "bounce_bytes %" SCNu64, &bounce);
		}
		if (f)
			fclose(f);
		if (seq > b->stats_seq) {
			b->stats_seq = seq;
			*out = bounce;
			return 0;
		}
		usleep(10000);
	}
	return -1;
}

static uint64_t client_bounce(struct nfs3c *c)
{
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };

	if (!c->rdma || !clnt_control(c->nfs, RPCRDMA_CLGET_STATS, (char *)&st))
		return 0;
	return st.bounce_bytes;
}

/* @n calls of @op and @size; seconds taken, or a negative value on failure. */
static double run_calls(struct bench *b, int x, int op, uint32_t size, unsigned int n)
{
	struct nfs3c *c = b->mount[x];
	uint64_t offset = 0;
	char verf[8];
	unsigned int i;
	double t0 = bench_now_s();

	for (i = 0; i < n; i++) {
		uint32_t got = 0;
		bool eof;
		int rc;

		if (op == 0)
			rc = nfs3c_read(c, &b->rfile[x], offset, size, c->buf, &got, &eof);
		else
			rc = nfs3c_write(c, &b->wfile[x], offset, c->buf, size, UNSTABLE, &got, verf);
		if (rc || got != size) {
			fprintf(stderr, "nfs3-bench: %s %s: %d\n", xport_names[x], op_names[op], rc);
			return -1;
		}
		offset = (offset + size) % FILE_SIZE;
	}
	return bench_now_s() - t0;
}

static int measure(struct bench *b, int x, int op, int s, unsigned int round)
{
	struct cell *cell = &b->cells[op][s][x];
	unsigned int n = (unsigned int)(counts[s] * b->scale) + 1;
	uint64_t c0, c1, s0 = 0, s1 = 0;
	bool rdma = b->mount[x]->rdma, svc;
	char verf[8];
	double t;

	svc = rdma && server_bounce(b, &s0) == 0;
	c0 = client_bounce(b->mount[x]);
	t = run_calls(b, x, op, sizes[s], n);
	if (t <= 0)
		return -1;
	c1 = client_bounce(b->mount[x]);
	if (svc && server_bounce(b, &s1) == 0)
		cell->bounce_svc += s1 - s0;
	else if (rdma)
		cell->svc_unknown = true;
	cell->bounce_clnt += c1 - c0;
	cell->bytes += (uint64_t)n * sizes[s];
	cell->ops_s[round] = n / t;
	cell->mb_s[round] = (double)n * sizes[s] / t / 1e6;
	if (op == 1 && nfs3c_commit(b->mount[x], &b->wfile[x], verf))
		return -1;
	return 0;
}

static int run_round(struct bench *b, unsigned int round)
{
	int op, s, i;

	for (op = 0; op < NOPS; op++) {
		for (s = 0; s < NSIZES; s++) {
			for (i = 0; i < NXPORTS; i++) {
				/* The first transport alternates from round to round. */
				int x = (i + (int)round) % NXPORTS;

				if (measure(b, x, op, s, round))
					return -1;
			}
			b->cells[op][s][0].ratio[round] =
				b->cells[op][s][0].ops_s[round] / b->cells[op][s][1].ops_s[round];
		}
	}
	return 0;
}

static double median_of(const double *v, unsigned int n)
{
	double copy[MAX_ROUNDS];

	memcpy(copy, v, n * sizeof(*v));
	return bench_median(copy, n);
}

static void size_name(uint32_t size, char *buf, size_t len)
{
	if (size >= MiB)
		snprintf(buf, len, "%u MiB", size / MiB);
	else
		snprintf(buf, len, "%u KiB", size / 1024);
}

static void copies_text(uint64_t bounce, uint64_t bytes, bool unknown, char *buf, size_t len)
{
	if (unknown)
		snprintf(buf, len, "?");
	else
		snprintf(buf, len, "%.3f", bytes ? (double)bounce / (double)bytes : 0.0);
}

static void print_table(const struct bench *b, const char *where)
{
	int op, s, x;

	printf("nfs3-bench: NFSv3 READ and WRITE on softrdma (%s), one call in flight,\n"
	       "medians of %u rounds; copies are payload bytes copied per byte moved\n\n",
	       where, b->rounds);
	printf("%-6s %-7s %-5s %10s %9s %13s %13s %9s\n", "op", "size", "xprt", "ops/s", "MB/s",
	       "copies clnt", "copies svc", "rdma/tcp");
	for (op = 0; op < NOPS; op++) {
		for (s = 0; s < NSIZES; s++) {
			for (x = 0; x < NXPORTS; x++) {
				const struct cell *c = &b->cells[op][s][x];
				char sz[16], cc[16] = "-", cs[16] = "-", ratio[16] = "";

				size_name(sizes[s], sz, sizeof(sz));
				if (b->mount[x]->rdma) {
					copies_text(c->bounce_clnt, c->bytes, false, cc,
						    sizeof(cc));
					copies_text(c->bounce_svc, c->bytes, c->svc_unknown, cs,
						    sizeof(cs));
					snprintf(ratio, sizeof(ratio), "%.2f",
						 median_of(c->ratio, b->rounds));
				}
				printf("%-6s %-7s %-5s %10.0f %9.1f %13s %13s %9s\n", op_names[op],
				       sz, xport_names[x], median_of(c->ops_s, b->rounds),
				       median_of(c->mb_s, b->rounds), cc, cs, ratio);
			}
		}
	}
	printf("\n(tcp copies: not seen by this library; WRITE's server side also copies each\n"
	       " byte once in rpcgen's XDR decoder, not counted above)\n");
}

/* A 64 MiB file to READ and one to WRITE, per transport, made through NFS. */
static int make_files(struct bench *b, int x)
{
	struct nfs3c *c = b->mount[x];
	char name[32], verf[8];
	uint64_t off;
	uint32_t done;
	int rc;

	memset(c->buf, 0x5a, c->buflen);
	snprintf(name, sizeof(name), "bench-r-%s", xport_names[x]);
	rc = nfs3c_create(c, &c->root, name, 0644, &b->rfile[x]);
	for (off = 0; !rc && off < FILE_SIZE; off += c->wsize)
		rc = nfs3c_write(c, &b->rfile[x], off, c->buf, c->wsize, UNSTABLE, &done, verf);
	if (!rc)
		rc = nfs3c_commit(c, &b->rfile[x], verf);
	snprintf(name, sizeof(name), "bench-w-%s", xport_names[x]);
	if (!rc)
		rc = nfs3c_create(c, &c->root, name, 0644, &b->wfile[x]);
	return rc;
}

static int mount_all(struct bench *b, struct nfs3c_opts *o, const struct sockaddr_in *rdma,
		     const struct sockaddr_in *tcp)
{
	int x, rc;

	for (x = 0; x < NXPORTS; x++) {
		o->transport = x == 0 ? NFS3C_RDMA : NFS3C_TCP;
		o->addr = x == 0 ? *rdma : *tcp;
		rc = nfs3c_open(o, &b->mount[x]);
		if (rc) {
			fprintf(stderr, "nfs3-bench: cannot mount over %s: %d\n", xport_names[x], rc);
			return -1;
		}
		if (make_files(b, x)) {
			fprintf(stderr, "nfs3-bench: cannot make the files over %s\n",
				xport_names[x]);
			return -1;
		}
	}
	return 0;
}

static int local_server(struct bench *b, char *dir, size_t len, struct sockaddr_in *rdma,
			struct sockaddr_in *tcp)
{
	struct nfs3_server_opts o;
	int rc;

	snprintf(dir, len, "%s/nfs3-bench.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir))
		return -1;
	nfs3_server_opts_init(&o);
	o.export_path = dir;
	o.rdma_addr.sin_addr.s_addr = o.tcp_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	o.rdma_addr.sin_port = o.tcp_addr.sin_port = 0;
	rc = nfs3_server_start(&o, &b->server);
	if (rc) {
		fprintf(stderr, "nfs3-bench: server: %s\n", strerror(-rc));
		return -1;
	}
	nfs3_server_rdma_addr(b->server, rdma);
	nfs3_server_tcp_addr(b->server, tcp);
	return 0;
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [-r rounds] [-s scale] [-a address -P rdma-port -T tcp-port "
		"-e export [-p server-pid -S stats-file]]\n", prog);
	exit(2);
}

int main(int argc, char **argv)
{
	static struct bench b = { .rounds = 5, .scale = 1.0 };
	struct sockaddr_in rdma = { .sin_family = AF_INET }, tcp;
	struct nfs3c_opts o;
	char dir[4096] = "", *real = NULL;
	const char *where = "one process";
	unsigned int round;
	int opt, x, rc = 1;

	nfs3c_opts_init(&o);
	rdma.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	tcp = rdma;
	while ((opt = getopt(argc, argv, "r:s:a:P:T:e:p:S:")) != -1) {
		switch (opt) {
		case 'r':
			b.rounds = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 's':
			b.scale = strtod(optarg, NULL);
			break;
		case 'a':
			if (inet_pton(AF_INET, optarg, &rdma.sin_addr) != 1)
				usage(argv[0]);
			tcp.sin_addr = rdma.sin_addr;
			break;
		case 'P':
			rdma.sin_port = htons((uint16_t)strtoul(optarg, NULL, 10));
			break;
		case 'T':
			tcp.sin_port = htons((uint16_t)strtoul(optarg, NULL, 10));
			break;
		case 'e':
			o.export_path = optarg;
			break;
		case 'p':
			b.server_pid = (pid_t)strtol(optarg, NULL, 10);
			break;
		case 'S':
			b.stats_file = optarg;
			break;
		default:
			usage(argv[0]);
		}
	}
	if (b.rounds < 1 || b.rounds > MAX_ROUNDS || b.scale <= 0 || b.scale > 100)
		usage(argv[0]);
	if (o.export_path) {
		where = "two processes";
	} else {
		if (local_server(&b, dir, sizeof(dir), &rdma, &tcp))
			return 1;
		real = realpath(dir, NULL);
		o.export_path = real;
	}
	if (!o.export_path || mount_all(&b, &o, &rdma, &tcp))
		goto out;
	for (round = 0; round < b.rounds; round++)
		if (run_round(&b, round))
			goto out;
	print_table(&b, where);
	rc = 0;
out:
	for (x = 0; x < NXPORTS; x++) {
		if (!b.mount[x])
			continue;
		nfs3c_fh_free(&b.rfile[x]);
		nfs3c_fh_free(&b.wfile[x]);
		nfs3c_close(b.mount[x]);
	}
	if (b.server) {
		char path[4200];

		nfs3_server_stop(b.server);
		for (x = 0; x < NXPORTS; x++) {
			snprintf(path, sizeof(path), "%s/bench-r-%s", dir, xport_names[x]);
			unlink(path);
			snprintf(path, sizeof(path), "%s/bench-w-%s", dir, xport_names[x]);
			unlink(path);
		}
		rmdir(dir);
	}
	free(real);
	return rc;
}
