/* SPDX-License-Identifier: MIT */
/*
 * An NFSv3 client on rpcgen's stubs, over RPC-over-RDMA or TCP: what
 * nfs3-cp, the tests and the benchmark share.
 *
 * Over RDMA the library's built-in NFSv3 binding (rpcrdma_ulb_nfs3()) is in
 * force with nothing registered, so the unmodified stubs move READ data by RDMA Write into the caller's buffer,
 * WRITE data by RDMA Read from it, and READDIR replies through Reply
 * chunks. The client's transfer buffer is registered with the CLIENT: data
 * moves to and from it with no copy on this side.
 *
 * Every reply is checked before use: READ's data is decoded into the
 * caller's buffer and never beyond it, counts must agree with the data,
 * loops over replies stop when a reply makes no progress.
 *
 * Return values: 0, a positive nfsstat3 (or mountstat3 from
 * nfs3c_open()), or a negative errno when the RPC itself failed (-EIO;
 * -ETIMEDOUT; nfs3c_rpc_error() says more).
 */
#ifndef NFS3_CLIENT_H
#define NFS3_CLIENT_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/types.h>

#include <rpc/rpc.h>

#include "nfs3_prot.h"

enum nfs3c_transport {
	NFS3C_TCP,
	NFS3C_RDMA,
};

/**
 * struct nfs3c_opts - where and as whom
 * @transport: NFS3C_TCP or NFS3C_RDMA
 * @addr: the server, with the port of the transport
 * @export_path: what to MNT
 * @uid: AUTH_SYS identity
 * @gid: AUTH_SYS group
 * @auth_none: AUTH_NONE instead of AUTH_SYS
 * @timeout_s: per call (0: 30)
 * @dir_bytes: READDIRPLUS's maxcount and dircount (0: 64 KiB)
 */
struct nfs3c_opts {
	enum nfs3c_transport transport;
	struct sockaddr_in addr;
	const char *export_path;
	uid_t uid;
	gid_t gid;
	bool auth_none;
	unsigned int timeout_s;
	unsigned int dir_bytes;
};

/**
 * struct nfs3c - a mounted export
 * @nfs: the NFS program's CLIENT: use it with the stubs directly
 * @mnt: the MOUNT program's CLIENT
 * @rdma: which transport
 * @root: the export's root handle
 * @rsize: the largest READ (FSINFO rtmax, at most 1 MiB)
 * @wsize: the largest WRITE (FSINFO wtmax, at most 1 MiB)
 * @buf: the transfer buffer (max of @rsize and @wsize), registered over RDMA
 */
struct nfs3c {
	CLIENT *nfs;
	CLIENT *mnt;
	bool rdma;
	nfs_fh3 root;
	uint32_t rsize;
	uint32_t wsize;
	char *buf;
	size_t buflen;
	unsigned int dir_bytes;
	AUTH *auth;
	char *export_path;
	enum clnt_stat last_rpc;
};

/* Defaults: RDMA to 127.0.0.1:20049 as the calling user. */
void nfs3c_opts_init(struct nfs3c_opts *o);

/* Connect, MNT the export, FSINFO. Returns 0, a mountstat3 or nfsstat3, or -errno. */
int nfs3c_open(const struct nfs3c_opts *o, struct nfs3c **out);
/* UMNT, disconnect, free. */
void nfs3c_close(struct nfs3c *c);

/* A CLIENT of the NFS program as nfs3c_open() makes them, for tests; NULL on failure. */
CLIENT *nfs3c_client(const struct nfs3c_opts *o, rpcprog_t prog, rpcvers_t vers);

/* The last failed RPC, as clnt_sperrno() says it. */
const char *nfs3c_rpc_error(const struct nfs3c *c);

/* A copy of @from in @to (malloc()ed); 0 or -ENOMEM. Free with nfs3c_fh_free(). */
int nfs3c_fh_copy(nfs_fh3 *to, const nfs_fh3 *from);
void nfs3c_fh_free(nfs_fh3 *fh);

int nfs3c_getattr(struct nfs3c *c, const nfs_fh3 *fh, fattr3 *attr);
/* @name in @dir; @out (malloc()ed) and @attr (may be NULL) on success. */
int nfs3c_lookup(struct nfs3c *c, const nfs_fh3 *dir, const char *name, nfs_fh3 *out,
		 fattr3 *attr);
/* A '/'-separated path from the root ("" or "/" is the root). */
int nfs3c_lookup_path(struct nfs3c *c, const char *path, nfs_fh3 *out, fattr3 *attr);

/*
 * READ at most @count bytes (up to rsize) at @offset into @buf; *@got and
 * *@eof as the server says. @buf within c->buf moves with no copy.
 */
int nfs3c_read(struct nfs3c *c, const nfs_fh3 *fh, uint64_t offset, uint32_t count, char *buf,
	       uint32_t *got, bool *eof);
/* WRITE @count bytes (up to wsize); *@done, and the verifier in @verf (8 bytes). */
int nfs3c_write(struct nfs3c *c, const nfs_fh3 *fh, uint64_t offset, const char *buf,
		uint32_t count, stable_how stable, uint32_t *done, char *verf);
int nfs3c_commit(struct nfs3c *c, const nfs_fh3 *fh, char *verf);

/* CREATE (UNCHECKED: truncated if it exists) a regular file of @mode. */
int nfs3c_create(struct nfs3c *c, const nfs_fh3 *dir, const char *name, uint32_t mode,
		 nfs_fh3 *out);

/* The whole file to descriptor @fd; *@bytes copied. */
int nfs3c_get(struct nfs3c *c, const nfs_fh3 *fh, int fd, uint64_t *bytes);
/*
 * Descriptor @fd (from its current offset to its end) to a new or truncated
 * @name in @dir: UNSTABLE WRITEs and a COMMIT, the data written again from
 * the start if the verifier changed (the server restarted), once.
 */
int nfs3c_put(struct nfs3c *c, const nfs_fh3 *dir, const char *name, int fd, uint64_t *bytes);

/* Every entry of @dir by READDIRPLUS, each given to @fn (which stops the walk by returning non-zero). */
int nfs3c_list(struct nfs3c *c, const nfs_fh3 *dir,
	       int (*fn)(void *arg, const entryplus3 *e), void *arg, unsigned int *calls);

/* READ3res decoded into the buffer preset in resok.data (data_val, data_len), never beyond it. */
bool_t nfs3c_xdr_read3res_into(XDR *xdrs, READ3res *r);

#endif /* NFS3_CLIENT_H */
