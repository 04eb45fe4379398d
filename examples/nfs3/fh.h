/* SPDX-License-Identifier: MIT */
/*
 * File handles: 32 opaque bytes that name a node of the export's table
 * (export.h) and prove the server made them.
 *
 *	byte  0		version (1)
 *	bytes 1..3	zero
 *	bytes 4..7	the server instance that made the handle (big-endian)
 *	bytes 8..15	the node's id: slot and generation (big-endian)
 *	bytes 16..23	the node's inode number (big-endian)
 *	bytes 24..31	SipHash-2-4 of bytes 0..23 under the instance's key
 *
 * The key and the instance are drawn at random when the export opens, so
 * handles last as long as the server process: after a restart they are
 * stale, as nodes are not kept on disk.
 */
#ifndef NFS3_FH_H
#define NFS3_FH_H

#include <stdint.h>

#include "nfs3_prot.h"
#include "siphash.h"

#define NFS3_FH_LEN 32

struct nfs3_fh_key {
	uint8_t key[NFS3_SIPHASH_KEY_LEN];
	uint32_t instance;
};

/* What a verified handle names. */
struct nfs3_fh_name {
	uint64_t node;
	uint64_t ino;
};

/* Draw a fresh key and instance (getrandom()); 0 or -errno. */
int nfs3_fh_key_init(struct nfs3_fh_key *key);

/* Encode @name into @out (NFS3_FH_LEN bytes). */
void nfs3_fh_encode(const struct nfs3_fh_key *key, const struct nfs3_fh_name *name,
		    uint8_t out[NFS3_FH_LEN]);

/*
 * Check @fh and decode it into @name. Returns NFS3_OK; NFS3ERR_BADHANDLE
 * for a handle this server cannot have made (length, version, a MAC that
 * fails); NFS3ERR_STALE for one made by an earlier instance.
 */
nfsstat3 nfs3_fh_decode(const struct nfs3_fh_key *key, const nfs_fh3 *fh,
			struct nfs3_fh_name *name);

#endif /* NFS3_FH_H */
