/* SPDX-License-Identifier: MIT */
/*
 * SipHash-2-4, written from the paper's description: the key sets four
 * 64-bit words; each 8-byte little-endian block of the message is mixed in
 * by two SipRounds; the last block carries the message length in its top
 * byte; four more rounds finish.
 */
#include <string.h>

#include "siphash.h"

static uint64_t rotl(uint64_t x, unsigned int b)
{
	return (x << b) | (x >> (64 - b));
}

static uint64_t load_le64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

struct sip_state {
	uint64_t v0, v1, v2, v3;
};

static void sip_round(struct sip_state *s)
{
	s->v0 += s->v1;
	s->v1 = rotl(s->v1, 13);
	s->v1 ^= s->v0;
	s->v0 = rotl(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = rotl(s->v3, 16);
	s->v3 ^= s->v2;
	s->v0 += s->v3;
	s->v3 = rotl(s->v3, 21);
	s->v3 ^= s->v0;
	s->v2 += s->v1;
	s->v1 = rotl(s->v1, 17);
	s->v1 ^= s->v2;
	s->v2 = rotl(s->v2, 32);
}

/* Two compression rounds per message word: the "2" of SipHash-2-4. */
static void sip_absorb(struct sip_state *s, uint64_t m)
{
	s->v3 ^= m;
	sip_round(s);
	sip_round(s);
	s->v0 ^= m;
}

uint64_t nfs3_siphash(const uint8_t key[NFS3_SIPHASH_KEY_LEN], const void *msg, size_t len)
{
	const uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
	struct sip_state s = {
		.v0 = k0 ^ 0x736f6d6570736575ull,	/* "somepseudorandomlygeneratedbytes" */
		.v1 = k1 ^ 0x646f72616e646f6dull,
		.v2 = k0 ^ 0x6c7967656e657261ull,
		.v3 = k1 ^ 0x7465646279746573ull,
	};
	const uint8_t *p = msg;
	uint8_t last[8] = { 0 };
	size_t left;

	for (left = len; left >= 8; left -= 8, p += 8)
		sip_absorb(&s, load_le64(p));
	memcpy(last, p, left);
	last[7] = (uint8_t)len;
	sip_absorb(&s, load_le64(last));
	/* Four finalization rounds: the "4". */
	s.v2 ^= 0xff;
	sip_round(&s);
	sip_round(&s);
	sip_round(&s);
	sip_round(&s);
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}
