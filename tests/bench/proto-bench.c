/* SPDX-License-Identifier: MIT */
/*
 * proto-bench: cost of one rpcrdma_hdr_encode() plus one rpcrdma_hdr_decode()
 * of the same header, for a few header shapes.
 *
 * Wall-clock figures vary with the machine; instruction counts under
 * callgrind do not, and tests/bench/proto-callgrind.sh derives them from two
 * runs of this program (--iterations N --case X) so that setup cancels out.
 *
 * The codec lives in another translation unit, so its calls cannot be
 * elided; an empty asm statement with a memory clobber (no instructions)
 * additionally keeps link-time optimisation from hoisting work out of the
 * loop.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rpcrdma/proto.h>

#include "bench.h"

#define DEFAULT_ITERATIONS 1000000ul
#define DEFAULT_RUNS 11
#define MAX_RUNS 101

struct bench_case {
	const char *name;
	const char *what;
	struct rpcrdma_hdr_enc enc;
};

/* Segments of 8 KiB, as a client's registered reply buffer might give. */
#define WRITE_SEG(i) { .handle = 0x1001 + (i), .length = 8192, \
		       .offset = 0x7f3a00001000ull + (i) * 0x2000ull }
static const struct rpcrdma_segment write_segs[16] = {
	WRITE_SEG(0), WRITE_SEG(1), WRITE_SEG(2), WRITE_SEG(3),
	WRITE_SEG(4), WRITE_SEG(5), WRITE_SEG(6), WRITE_SEG(7),
	WRITE_SEG(8), WRITE_SEG(9), WRITE_SEG(10), WRITE_SEG(11),
	WRITE_SEG(12), WRITE_SEG(13), WRITE_SEG(14), WRITE_SEG(15),
};
static const struct rpcrdma_chunk_desc write_one = { .nsegs = 1, .segs = write_segs };
static const struct rpcrdma_chunk_desc write_eight = { .nsegs = 8, .segs = write_segs };
static const struct rpcrdma_chunk_desc write_sixteen = { .nsegs = 16, .segs = write_segs };

/* One Read chunk at the XDR position of an NFS WRITE payload, in 4 KiB segments. */
#define READ_SEG(i) { 132, { 0x2001 + (i), 4096, 0x7f3b00000000ull + (i) * 0x1000ull } }
static const struct rpcrdma_read_segment read_segs[16] = {
	READ_SEG(0), READ_SEG(1), READ_SEG(2), READ_SEG(3),
	READ_SEG(4), READ_SEG(5), READ_SEG(6), READ_SEG(7),
	READ_SEG(8), READ_SEG(9), READ_SEG(10), READ_SEG(11),
	READ_SEG(12), READ_SEG(13), READ_SEG(14), READ_SEG(15),
};

static const struct bench_case cases[] = {
	{ "chunkless", "RDMA_MSG, no chunks",
	  { .xid = 0x5eed0001, .credit = 128, .proc = RPCRDMA_MSG } },
	{ "write1", "RDMA_MSG, one Write chunk of 1 segment",
	  { .xid = 0x5eed0002, .credit = 128, .proc = RPCRDMA_MSG,
	    .write_chunks = 1, .write = &write_one } },
	{ "read1", "RDMA_MSG, Read list of 1 segment",
	  { .xid = 0x5eed0005, .credit = 128, .proc = RPCRDMA_MSG,
	    .read_segs = 1, .read = read_segs } },
	{ "read8", "RDMA_MSG, Read list of 8 segments (1 chunk)",
	  { .xid = 0x5eed0003, .credit = 128, .proc = RPCRDMA_MSG,
	    .read_segs = 8, .read = read_segs } },
	{ "write8", "RDMA_MSG, one Write chunk of 8 segments",
	  { .xid = 0x5eed0004, .credit = 128, .proc = RPCRDMA_MSG,
	    .write_chunks = 1, .write = &write_eight } },
	{ "read16", "RDMA_MSG, Read list of 16 segments (1 chunk)",
	  { .xid = 0x5eed0006, .credit = 128, .proc = RPCRDMA_MSG,
	    .read_segs = 16, .read = read_segs } },
	{ "write16", "RDMA_MSG, one Write chunk of 16 segments",
	  { .xid = 0x5eed0007, .credit = 128, .proc = RPCRDMA_MSG,
	    .write_chunks = 1, .write = &write_sixteen } },
};

#define NCASES (sizeof(cases) / sizeof(cases[0]))

static volatile unsigned long bench_sink;

/* Tell the compiler that @p's memory is read and written here (no code). */
static inline void opaque(const void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

/* Encode and decode once, checking the result, so that a broken codec shows. */
static int check_case(const struct bench_case *c, long *hdr_len)
{
	unsigned char buf[1024];
	struct rpcrdma_hdr hdr;
	long n;
	int rc;

	n = rpcrdma_hdr_encode(buf, sizeof(buf), &c->enc);
	if (n < 0) {
		fprintf(stderr, "%s: encode failed: %s\n", c->name, strerror((int)-n));
		return -1;
	}
	rc = rpcrdma_hdr_decode(buf, (size_t)n, NULL, &hdr);
	if (rc || hdr.hdr_len != n || hdr.xid != c->enc.xid ||
	    hdr.read_segs != c->enc.read_segs || hdr.write_chunks != c->enc.write_chunks) {
		fprintf(stderr, "%s: decode gave %d\n", c->name, rc);
		return -1;
	}
	*hdr_len = n;
	return 0;
}

/* The measured loop: one encode and one decode per iteration. */
static __attribute__((noinline)) unsigned long run(const struct rpcrdma_hdr_enc *enc,
						   unsigned long iterations)
{
	unsigned char buf[1024];
	struct rpcrdma_hdr hdr;
	unsigned long i, sink = 0;
	long n;

	for (i = 0; i < iterations; i++) {
		opaque(enc);
		n = rpcrdma_hdr_encode(buf, sizeof(buf), enc);
		sink += (unsigned long)rpcrdma_hdr_decode(buf, (size_t)n, NULL, &hdr);
		opaque(&hdr);
	}
	return sink + hdr.hdr_len;
}

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: proto-bench [--iterations N] [--runs R] [--case NAME]\n"
		   "  --iterations N  encode+decode pairs per run (default %lu)\n"
		   "  --runs R        runs per case; the median is reported (default %d, max %d)\n"
		   "  --case NAME     only this case:",
		DEFAULT_ITERATIONS, DEFAULT_RUNS, MAX_RUNS);
	for (i = 0; i < NCASES; i++)
		fprintf(f, " %s", cases[i].name);
	fprintf(f, "\n");
}

int main(int argc, char **argv)
{
	unsigned long iterations = DEFAULT_ITERATIONS, sink = 0;
	double ns[MAX_RUNS], t0;
	const char *only = NULL;
	int runs = DEFAULT_RUNS, r, i, matched = 0;
	long hdr_len;
	size_t c;
	char *end;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--iterations") && i + 1 < argc) {
			iterations = strtoul(argv[++i], &end, 10);
			if (*end || !iterations) {
				usage(stderr);
				return 2;
			}
		} else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
			runs = atoi(argv[++i]);
			if (runs < 1 || runs > MAX_RUNS) {
				usage(stderr);
				return 2;
			}
		} else if (!strcmp(argv[i], "--case") && i + 1 < argc) {
			only = argv[++i];
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}

	printf("librpcrdma proto-bench: RPC-over-RDMA Version 1 transport header codec\n");
	printf("Each figure is one rpcrdma_hdr_encode() plus one rpcrdma_hdr_decode() of the\n"
	       "same header (default limits), in wall-clock nanoseconds: the median, fastest\n"
	       "and slowest of %d runs of %lu iterations each.\n\n", runs, iterations);
	printf("%-10s %-44s %6s %10s %9s %9s\n", "case", "header", "bytes", "median ns",
	       "min ns", "max ns");
	for (c = 0; c < NCASES; c++) {
		if (only && strcmp(only, cases[c].name))
			continue;
		matched++;
		if (check_case(&cases[c], &hdr_len))
			return 1;
		for (r = 0; r < runs; r++) {
			t0 = bench_now_s();
			sink += run(&cases[c].enc, iterations);
			ns[r] = (bench_now_s() - t0) * 1e9 / (double)iterations;
		}
		qsort(ns, (size_t)runs, sizeof(ns[0]), bench_cmp_double);
		printf("%-10s %-44s %6ld %10.1f %9.1f %9.1f\n", cases[c].name, cases[c].what,
		       hdr_len, ns[runs / 2], ns[0], ns[runs - 1]);
	}
	if (!matched) {
		fprintf(stderr, "no case named %s\n", only);
		usage(stderr);
		return 2;
	}
	printf("\nTargets, counted in instructions under callgrind because time varies by machine\n"
	       "(run tests/bench/proto-callgrind.sh BUILDDIR to measure them):\n"
	       "  encode+decode of a chunkless RDMA_MSG header   <= 60 instructions\n"
	       "  each further segment                           <= 12 instructions\n");
	/* Consume the results so that no run can be discarded. */
	bench_sink = sink;
	return 0;
}
