/* SPDX-License-Identifier: MIT */
/*
 * SipHash-2-4 (J.-P. Aumasson and D. J. Bernstein, "SipHash: a fast
 * short-input PRF", 2012): a keyed function of short messages, here the
 * MAC that makes file handles unforgeable (fh.c).
 */
#ifndef NFS3_SIPHASH_H
#define NFS3_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

#define NFS3_SIPHASH_KEY_LEN 16

/* The 64-bit SipHash-2-4 of @len bytes at @msg under the 128-bit @key. */
uint64_t nfs3_siphash(const uint8_t key[NFS3_SIPHASH_KEY_LEN], const void *msg, size_t len);

#endif /* NFS3_SIPHASH_H */
