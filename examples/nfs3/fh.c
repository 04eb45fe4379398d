/* SPDX-License-Identifier: MIT */
/* File handles: encoding, and the checks a handle from a client must pass. */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "fh.h"

#define FH_VERSION 1
#define FH_MAC_OFF 24

static void put_be32(uint8_t *p, uint32_t v)
{
	int i;

	for (i = 3; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static void put_be64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get_be64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int nfs3_fh_key_init(struct nfs3_fh_key *key)
{
	uint8_t bytes[sizeof(key->key) + sizeof(key->instance)];
	size_t got = 0;
	int tries;

	/* getrandom() may return short counts on a signal: a few tries. */
	for (tries = 0; got < sizeof(bytes) && tries < 8; tries++) {
		ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);

		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0)
			got += (size_t)n;
	}
	if (got < sizeof(bytes))
		return -EIO;
	memcpy(key->key, bytes, sizeof(key->key));
	memcpy(&key->instance, bytes + sizeof(key->key), sizeof(key->instance));
	return 0;
}

static uint64_t fh_mac(const struct nfs3_fh_key *key, const uint8_t *fh)
{
	return nfs3_siphash(key->key, fh, FH_MAC_OFF);
}

void nfs3_fh_encode(const struct nfs3_fh_key *key, const struct nfs3_fh_name *name,
		    uint8_t out[NFS3_FH_LEN])
{
	memset(out, 0, NFS3_FH_LEN);
	out[0] = FH_VERSION;
	put_be32(out + 4, key->instance);
	put_be64(out + 8, name->node);
	put_be64(out + 16, name->ino);
	put_be64(out + FH_MAC_OFF, fh_mac(key, out));
}

/* Compares all eight bytes whatever they hold, so timing says nothing of the MAC. */
static int mac_differs(const uint8_t *a, const uint8_t *b)
{
	uint8_t d = 0;
	int i;

	for (i = 0; i < 8; i++)
		d |= (uint8_t)(a[i] ^ b[i]);
	return d != 0;
}

nfsstat3 nfs3_fh_decode(const struct nfs3_fh_key *key, const nfs_fh3 *fh,
			struct nfs3_fh_name *name)
{
	const uint8_t *p = (const uint8_t *)fh->data.data_val;
	uint8_t mac[8];

	if (fh->data.data_len != NFS3_FH_LEN || !p)
		return NFS3ERR_BADHANDLE;
	if (p[0] != FH_VERSION || p[1] || p[2] || p[3])
		return NFS3ERR_BADHANDLE;
	put_be64(mac, fh_mac(key, p));
	if (mac_differs(mac, p + FH_MAC_OFF)) {
		/*
		 * Made under another key: by an earlier run of the server (its
		 * files may still be there, its nodes are not) or forged.
		 */
		return get_be32(p + 4) == key->instance ? NFS3ERR_BADHANDLE : NFS3ERR_STALE;
	}
	name->node = get_be64(p + 8);
	name->ino = get_be64(p + 16);
	return NFS3_OK;
}
