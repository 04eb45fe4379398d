/* SPDX-License-Identifier: MIT */
/*
 * The drop-in's conversions (verbs/convert.c) against the installed
 * libibverbs', call for call: link rates for every enum value and number
 * around them, and the kernel structures' copies on random bytes. Each
 * library is loaded in a namespace of its own (they share a soname).
 * Usage: check-convert <drop-in libibverbs.so.1> <installed libibverbs.so.1>
 * Exit 77 if the installed one is absent, or in a sanitized build: a
 * sanitized drop-in's runtime cannot be loaded into a second namespace.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

struct conv {
	int (*rate_to_mult)(int);
	int (*mult_to_rate)(int);
	int (*rate_to_mbps)(int);
	int (*mbps_to_rate)(int);
	void (*ah_from_kern)(struct ibv_ah_attr *, struct ib_uverbs_ah_attr *);
	void (*qp_from_kern)(struct ibv_qp_attr *, struct ib_uverbs_qp_attr *);
	void (*path_from_kern)(struct ibv_sa_path_rec *, struct ib_user_path_rec *);
	void (*path_to_kern)(struct ib_user_path_rec *, struct ibv_sa_path_rec *);
};

static void *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);

	if (!p) {
		fprintf(stderr, "%s: %s\n", name, dlerror());
		exit(1);
	}
	return p;
}

static void load(const char *path, struct conv *c)
{
	void *h = dlmopen(LM_ID_NEWLM, path, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fprintf(stderr, "%s: %s\n", path, dlerror());
		exit(1);
	}
	c->rate_to_mult = sym(h, "ibv_rate_to_mult");
	c->mult_to_rate = sym(h, "mult_to_ibv_rate");
	c->rate_to_mbps = sym(h, "ibv_rate_to_mbps");
	c->mbps_to_rate = sym(h, "mbps_to_ibv_rate");
	c->ah_from_kern = sym(h, "ibv_copy_ah_attr_from_kern");
	c->qp_from_kern = sym(h, "ibv_copy_qp_attr_from_kern");
	c->path_from_kern = sym(h, "ibv_copy_path_rec_from_kern");
	c->path_to_kern = sym(h, "ibv_copy_path_rec_to_kern");
}

static unsigned int wrong;

static void same(const char *what, int arg, int ours, int real)
{
	if (ours != real) {
		printf("%s(%d): %d, rdma-core %d\n", what, arg, ours, real);
		wrong++;
	}
}

static void fill(void *p, size_t len, unsigned int seed)
{
	unsigned char *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		b[i] = (unsigned char)((seed + i) * 2654435761u >> 13);
}

/* Both copies of @n random @src bytes into @dst, compared byte for byte. */
#define SAME_COPY(what, fn, dst_t, src_t)                                          \
	do {                                                                       \
		dst_t d1, d2;                                                      \
		src_t s1, s2;                                                      \
		unsigned int k;                                                    \
		for (k = 0; k < 64; k++) {                                         \
			fill(&s1, sizeof(s1), k);                                  \
			s2 = s1;                                                   \
			fill(&d1, sizeof(d1), k + 1000);                           \
			d2 = d1;                                                   \
			ours.fn(&d1, &s1);                                         \
			real.fn(&d2, &s2);                                         \
			if (memcmp(&d1, &d2, sizeof(d1))) {                        \
				printf("%s differs on input %u\n", what, k);       \
				wrong++;                                           \
				break;                                             \
			}                                                          \
		}                                                                  \
	} while (0)

/* Whether this build is sanitized (the drop-in then needs its runtime first in the process). */
static int sanitized(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	return 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                  \
	__has_feature(undefined_behavior_sanitizer)
	return 1;
#endif
#endif
	return 0;
}

int main(int argc, char **argv)
{
	struct conv ours, real;
	int i;

	if (argc != 3)
		return 2;
	if (sanitized()) {
		printf("a sanitized drop-in cannot be loaded beside its runtime in a second namespace:"
		       " skipped (the plain build runs this)\n");
		return 77;
	}
	if (access(argv[2], R_OK)) {
		printf("%s is not installed: skipped\n", argv[2]);
		return 77;
	}
	load(argv[1], &ours);
	load(argv[2], &real);
	for (i = -2; i <= 64; i++) {
		same("ibv_rate_to_mult", i, ours.rate_to_mult(i), real.rate_to_mult(i));
		same("ibv_rate_to_mbps", i, ours.rate_to_mbps(i), real.rate_to_mbps(i));
		/* Every Mb/s value rdma-core knows, and its neighbours. */
		same("mbps_to_ibv_rate", real.rate_to_mbps(i),
		     ours.mbps_to_rate(real.rate_to_mbps(i)), real.mbps_to_rate(real.rate_to_mbps(i)));
		same("mbps_to_ibv_rate", real.rate_to_mbps(i) + 1,
		     ours.mbps_to_rate(real.rate_to_mbps(i) + 1),
		     real.mbps_to_rate(real.rate_to_mbps(i) + 1));
	}
	for (i = -2; i <= 1024; i++)
		same("mult_to_ibv_rate", i, ours.mult_to_rate(i), real.mult_to_rate(i));
	SAME_COPY("ibv_copy_ah_attr_from_kern", ah_from_kern, struct ibv_ah_attr,
		  struct ib_uverbs_ah_attr);
	SAME_COPY("ibv_copy_qp_attr_from_kern", qp_from_kern, struct ibv_qp_attr,
		  struct ib_uverbs_qp_attr);
	SAME_COPY("ibv_copy_path_rec_from_kern", path_from_kern, struct ibv_sa_path_rec,
		  struct ib_user_path_rec);
	SAME_COPY("ibv_copy_path_rec_to_kern", path_to_kern, struct ib_user_path_rec,
		  struct ibv_sa_path_rec);
	if (wrong)
		return 1;
	printf("rates and kernel-structure copies: as the installed libibverbs\n");
	return 0;
}
