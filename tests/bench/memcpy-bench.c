/* SPDX-License-Identifier: MIT */
/*
 * A reference for the 1 MiB figures: what one thread's memcpy() of 1 MiB
 * blocks moves per second on this machine, the same warm source copied to the
 * same destination (as a 1 MiB result's bytes are copied once on a path that
 * keeps them in cache). The median of -r trials of -n copies each.
 *
 * memcpy-bench [-n copies] [-r trials]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define BLOCK (1024 * 1024)

/* Each copy is read from, so that none can be elided. */
static volatile unsigned char copy_sink;

int main(int argc, char **argv)
{
	unsigned int copies = 1000, trials = 5, t, i;
	unsigned char *src, *dst;
	double *mib_s;
	int opt;

	while ((opt = getopt(argc, argv, "n:r:")) != -1) {
		switch (opt) {
		case 'n':
			copies = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'r':
			trials = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: %s [-n copies] [-r trials]\n", argv[0]);
			return 2;
		}
	}
	if (!copies || !trials)
		return 2;
	src = malloc(BLOCK);
	dst = malloc(BLOCK);
	mib_s = calloc(trials, sizeof(*mib_s));
	if (!src || !dst || !mib_s)
		return 1;
	memset(src, 0x5a, BLOCK);
	memset(dst, 0, BLOCK);
	for (t = 0; t < trials; t++) {
		double t0 = bench_now_s();

		for (i = 0; i < copies; i++) {
			src[i % BLOCK] = (unsigned char)i;
			memcpy(dst, src, BLOCK);
			copy_sink = dst[(i * 4099) % BLOCK];
		}
		mib_s[t] = copies / (bench_now_s() - t0);
	}
	printf("memcpy-bench: 1 MiB blocks, 1 thread: %.0f MiB/s (median of %u)\n",
	       bench_median(mib_s, trials), trials);
	free(mib_s);
	free(dst);
	free(src);
	return 0;
}
