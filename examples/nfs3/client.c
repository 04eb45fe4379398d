/* SPDX-License-Identifier: MIT */
/* The NFSv3 client (client.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rpcrdma/tirpc.h>

#include "client.h"
#include "mount.h"

#define DEFAULT_TIMEOUT_S 30
#define DEFAULT_DIR_BYTES (64u << 10)
#define MAX_XFER (1u << 20)
/* Bounds on loops over replies: a server that never says eof does not keep us. */
#define MAX_LIST_CALLS (1u << 20)
#define MAX_LIST_ENTRIES (1u << 16)
#define MAX_PATH_DEPTH 128

void nfs3c_opts_init(struct nfs3c_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->transport = NFS3C_RDMA;
	o->addr.sin_family = AF_INET;
	o->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	o->addr.sin_port = htons(RPCRDMA_NFS_PORT);
	o->uid = getuid();
	o->gid = getgid();
}

static CLIENT *tcp_client(const struct sockaddr_in *addr, rpcprog_t prog, rpcvers_t vers)
{
	struct netbuf nb = { .buf = (void *)addr, .len = sizeof(*addr), .maxlen = sizeof(*addr) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	CLIENT *cl;

	if (fd < 0)
		return NULL;
	cl = clnt_vc_create(fd, &nb, prog, vers, 0, 0);
	if (!cl) {
		close(fd);
		return NULL;
	}
	clnt_control(cl, CLSET_FD_CLOSE, NULL);
	return cl;
}

/* The READDIR replies are the only ones that need a Reply chunk: room for them. */
static u_int rdma_recvsize(const struct nfs3c_opts *o, rpcprog_t prog)
{
	unsigned int dir = o->dir_bytes ? o->dir_bytes : DEFAULT_DIR_BYTES;

	return prog == NFS_PROGRAM ? dir + 8192 : 0;
}

CLIENT *nfs3c_client(const struct nfs3c_opts *o, rpcprog_t prog, rpcvers_t vers)
{
	struct timeval tv = { .tv_sec = o->timeout_s ? o->timeout_s : DEFAULT_TIMEOUT_S };
	CLIENT *cl;

	/* Over RDMA the NFSv3 binding is the library's, built in: nothing to register. */
	if (o->transport == NFS3C_TCP)
		cl = tcp_client(&o->addr, prog, vers);
	else
		cl = rpcrdma_clnt_create((const struct sockaddr *)&o->addr, prog, vers, 0,
					 rdma_recvsize(o, prog));
	if (cl)
		clnt_control(cl, CLSET_TIMEOUT, (char *)&tv);
	return cl;
}

/* An RPC that did not get an answer. */
static int rpc_failed(struct nfs3c *c, enum clnt_stat st)
{
	c->last_rpc = st;
	return st == RPC_TIMEDOUT ? -ETIMEDOUT : -EIO;
}

const char *nfs3c_rpc_error(const struct nfs3c *c)
{
	return clnt_sperrno(c->last_rpc);
}

int nfs3c_fh_copy(nfs_fh3 *to, const nfs_fh3 *from)
{
	u_int len = from->data.data_len;

	to->data.data_len = 0;
	to->data.data_val = NULL;
	if (len > NFS3_FHSIZE)
		return -EINVAL;
	to->data.data_val = malloc(len ? len : 1);
	if (!to->data.data_val)
		return -ENOMEM;
	if (len)
		memcpy(to->data.data_val, from->data.data_val, len);
	to->data.data_len = len;
	return 0;
}

void nfs3c_fh_free(nfs_fh3 *fh)
{
	free(fh->data.data_val);
	fh->data.data_val = NULL;
	fh->data.data_len = 0;
}

static int mount_root(struct nfs3c *c, const char *path)
{
	mountres3 res;
	dirpath dp = (dirpath)path;
	enum clnt_stat st;
	int rc;

	memset(&res, 0, sizeof(res));
	st = mountproc3_mnt_3(&dp, &res, c->mnt);
	if (st != RPC_SUCCESS)
		return rpc_failed(c, st);
	rc = (int)res.fhs_status;
	if (!rc) {
		nfs_fh3 fh = { .data = { res.mountres3_u.mountinfo.fhandle.fhandle3_len,
					 res.mountres3_u.mountinfo.fhandle.fhandle3_val } };

		rc = nfs3c_fh_copy(&c->root, &fh);
	}
	clnt_freeres(c->mnt, (xdrproc_t)xdr_mountres3, (caddr_t)&res);
	return rc;
}

static uint32_t xfer_size(uint32_t server_max)
{
	if (!server_max || server_max > MAX_XFER)
		return MAX_XFER;
	return server_max;
}

static int fsinfo(struct nfs3c *c)
{
	FSINFO3args a = { .fsroot = c->root };
	FSINFO3res res;
	enum clnt_stat st;

	memset(&res, 0, sizeof(res));
	st = nfsproc3_fsinfo_3(&a, &res, c->nfs);
	if (st != RPC_SUCCESS)
		return rpc_failed(c, st);
	if (res.status == NFS3_OK) {
		c->rsize = xfer_size(res.FSINFO3res_u.resok.rtmax);
		c->wsize = xfer_size(res.FSINFO3res_u.resok.wtmax);
	}
	clnt_freeres(c->nfs, (xdrproc_t)xdr_FSINFO3res, (caddr_t)&res);
	return (int)res.status;
}

/* The transfer buffer; over RDMA registered, so that data moves without a bounce copy. */
static int xfer_buffer(struct nfs3c *c)
{
	struct rpcrdma_ddp_buf reg;

	c->buflen = c->rsize > c->wsize ? c->rsize : c->wsize;
	if (posix_memalign((void **)&c->buf, 4096, c->buflen))
		return -ENOMEM;
	memset(c->buf, 0, c->buflen);
	reg.buf = c->buf;
	reg.len = c->buflen;
	if (c->rdma && !clnt_control(c->nfs, RPCRDMA_CLSET_MEM_REGISTER, (char *)&reg))
		return -ENOMEM;
	return 0;
}

static AUTH *make_auth(const struct nfs3c_opts *o)
{
	if (o->auth_none)
		return authnone_create();
	return authunix_create("nfs3c", o->uid, o->gid, 0, NULL);
}

int nfs3c_open(const struct nfs3c_opts *o, struct nfs3c **out)
{
	struct nfs3c *c = calloc(1, sizeof(*c));
	int rc = -ECONNREFUSED;

	if (!c)
		return -ENOMEM;
	c->rdma = o->transport == NFS3C_RDMA;
	c->dir_bytes = o->dir_bytes ? o->dir_bytes : DEFAULT_DIR_BYTES;
	c->auth = make_auth(o);
	c->export_path = strdup(o->export_path);
	if (!c->auth || !c->export_path)
		goto fail;
	c->mnt = nfs3c_client(o, MOUNT_PROGRAM, MOUNT_V3);
	c->nfs = nfs3c_client(o, NFS_PROGRAM, NFS_V3);
	if (!c->mnt || !c->nfs)
		goto fail;
	c->mnt->cl_auth = c->auth;
	c->nfs->cl_auth = c->auth;
	rc = mount_root(c, o->export_path);
	if (!rc)
		rc = fsinfo(c);
	if (!rc)
		rc = xfer_buffer(c);
	if (rc)
		goto fail;
	*out = c;
	return 0;
fail:
	nfs3c_close(c);
	return rc;
}

/* The CLIENTs must not destroy our AUTH: clnt_destroy() leaves cl_auth alone. */
void nfs3c_close(struct nfs3c *c)
{
	if (c->mnt && c->root.data.data_val) {
		dirpath dp = c->export_path;

		/* Advisory (RFC 1813): its answer changes nothing. */
		mountproc3_umnt_3(&dp, NULL, c->mnt);
	}
	if (c->nfs)
		clnt_destroy(c->nfs);
	if (c->mnt)
		clnt_destroy(c->mnt);
	if (c->auth)
		auth_destroy(c->auth);
	nfs3c_fh_free(&c->root);
	free(c->buf);
	free(c->export_path);
	free(c);
}

int nfs3c_getattr(struct nfs3c *c, const nfs_fh3 *fh, fattr3 *attr)
{
	GETATTR3args a = { .object = *fh };
	GETATTR3res res;
	enum clnt_stat st;

	memset(&res, 0, sizeof(res));
	st = nfsproc3_getattr_3(&a, &res, c->nfs);
	if (st != RPC_SUCCESS)
		return rpc_failed(c, st);
	if (res.status == NFS3_OK && attr)
		*attr = res.GETATTR3res_u.resok.obj_attributes;
	clnt_freeres(c->nfs, (xdrproc_t)xdr_GETATTR3res, (caddr_t)&res);
	return (int)res.status;
}

int nfs3c_lookup(struct nfs3c *c, const nfs_fh3 *dir, const char *name, nfs_fh3 *out,
		 fattr3 *attr)
{
	LOOKUP3args a = { .what = { .dir = *dir, .name = (filename3)name } };
	LOOKUP3resok *ok;
	LOOKUP3res res;
	enum clnt_stat st;
	int rc;

	memset(&res, 0, sizeof(res));
	ok = &res.LOOKUP3res_u.resok;
	st = nfsproc3_lookup_3(&a, &res, c->nfs);
	if (st != RPC_SUCCESS)
		return rpc_failed(c, st);
	rc = (int)res.status;
	if (!rc)
		rc = nfs3c_fh_copy(out, &ok->object);
	if (!rc && attr) {
		if (ok->obj_attributes.attributes_follow)
			*attr = ok->obj_attributes.post_op_attr_u.attributes;
		else
			rc = nfs3c_getattr(c, out, attr);
	}
	clnt_freeres(c->nfs, (xdrproc_t)xdr_LOOKUP3res, (caddr_t)&res);
	return rc;
}

int nfs3c_lookup_path(struct nfs3c *c, const char *path, nfs_fh3 *out, fattr3 *attr)
{
	char *copy = strdup(path), *save = NULL, *name;
	nfs_fh3 cur;
	int rc, depth = 0;

	if (!copy)
		return -ENOMEM;
	rc = nfs3c_fh_copy(&cur, &c->root);
	for (name = strtok_r(copy, "/", &save); !rc && name; name = strtok_r(NULL, "/", &save)) {
		nfs_fh3 next;

		if (++depth > MAX_PATH_DEPTH) {
			rc = NFS3ERR_NAMETOOLONG;
			break;
		}
		rc = nfs3c_lookup(c, &cur, name, &next, NULL);
		if (rc)
			break;
		nfs3c_fh_free(&cur);
		cur = next;
	}
	free(copy);
	if (!rc && attr)
		rc = nfs3c_getattr(c, &cur, attr);
	if (rc) {
		nfs3c_fh_free(&cur);
		return rc;
	}
	*out = cur;
	return 0;
}

bool_t nfs3c_xdr_read3res_into(XDR *xdrs, READ3res *r)
{
	READ3resok *ok = &r->READ3res_u.resok;
	u_int room = ok->data.data_len;

	/* Nothing here was allocated by decoding but the caller's buffer: nothing to free. */
	if (xdrs->x_op == XDR_FREE)
		return TRUE;
	if (!xdr_nfsstat3(xdrs, &r->status))
		return FALSE;
	if (r->status != NFS3_OK)
		return xdr_READ3resfail(xdrs, &r->READ3res_u.resfail);
	if (!xdr_post_op_attr(xdrs, &ok->file_attributes) || !xdr_count3(xdrs, &ok->count) ||
	    !xdr_bool(xdrs, &ok->eof))
		return FALSE;
	/* xdr_bytes() refuses a length above room, and decodes into the preset buffer. */
	return xdr_bytes(xdrs, &ok->data.data_val, &ok->data.data_len, room);
}

int nfs3c_read(struct nfs3c *c, const nfs_fh3 *fh, uint64_t offset, uint32_t count, char *buf,
	       uint32_t *got, bool *eof)
{
	READ3args a = { .file = *fh, .offset = offset };
	struct timeval tv = { .tv_sec = DEFAULT_TIMEOUT_S };
	READ3resok *ok;
	READ3res res;
	enum clnt_stat st;

	if (count > c->rsize)
		count = c->rsize;
	a.count = count;
	memset(&res, 0, sizeof(res));
	ok = &res.READ3res_u.resok;
	/* Preset: over RDMA the Write chunk is this buffer, over TCP XDR decodes into it. */
	ok->data.data_val = buf;
	ok->data.data_len = count;
	st = clnt_call(c->nfs, NFSPROC3_READ, (xdrproc_t)xdr_READ3args, (caddr_t)&a,
		       (xdrproc_t)nfs3c_xdr_read3res_into, (caddr_t)&res, tv);
	if (st != RPC_SUCCESS)
		return rpc_failed(c, st);
	if (res.status != NFS3_OK)
		return (int)res.status;
	if (ok->count != ok->data.data_len || ok->count > count || ok->data.data_val != buf)
		return -EPROTO;
	*got = ok->count;
	*eof = ok->eof;
	return 0;
}

int nfs3c_write(struct nfs3c *c, const nfs_fh3 *fh, uint64_t offset, const char *buf,
		uint32_t count, stable_how stable, uint32_t *done, char *verf)
{
	WRITE3args a = { .file = *fh, .offset = offset, .stable = stable };
	WRITE3resok *ok;
	WRITE3res res;
	enum clnt_stat st;
	int rc;

	if (count > c->wsize)
		count = c->wsize;
	a.count = count;
	a.data.data_len = count;
	a.data.data_val = (char *)buf;
	memset(&res, 0, sizeof(res));
	ok = &res.WRITE3res_u.resok;
	st = nfsproc3_write_3(&a, &res, c->nfs);
	if (st != RPC_SUCCESS)
		return rpc_failed(c, st);
	rc = (int)res.status;
	if (!rc && (ok->count > count || (count && !ok->count)))
		rc = -EPROTO;
	if (!rc) {
		*done = ok->count;
		memcpy(verf, ok->verf, NFS3_WRITEVERFSIZE);
	}
	clnt_freeres(c->nfs, (xdrproc_t)xdr_WRITE3res, (caddr_t)&res);
	return rc;
}

int nfs3c_commit(struct nfs3c *c, const nfs_fh3 *fh, char *verf)
{
	COMMIT3args a = { .file = *fh };
	COMMIT3res res;
	enum clnt_stat st;

	memset(&res, 0, sizeof(res));
	st = nfsproc3_commit_3(&a, &res, c->nfs);
	if (st != RPC_SUCCESS)
		return rpc_failed(c, st);
	if (res.status == NFS3_OK)
		memcpy(verf, res.COMMIT3res_u.resok.verf, NFS3_WRITEVERFSIZE);
	clnt_freeres(c->nfs, (xdrproc_t)xdr_COMMIT3res, (caddr_t)&res);
	return (int)res.status;
}

int nfs3c_create(struct nfs3c *c, const nfs_fh3 *dir, const char *name, uint32_t mode,
		 nfs_fh3 *out)
{
	CREATE3args a = { .where = { .dir = *dir, .name = (filename3)name } };
	sattr3 *sa = &a.how.createhow3_u.obj_attributes;
	CREATE3resok *ok;
	CREATE3res res;
	enum clnt_stat st;
	int rc;

	a.how.mode = UNCHECKED;
	sa->mode.set_it = TRUE;
	sa->mode.set_mode3_u.mode = mode;
	sa->size.set_it = TRUE;
	sa->size.set_size3_u.size = 0;
	memset(&res, 0, sizeof(res));
	ok = &res.CREATE3res_u.resok;
	st = nfsproc3_create_3(&a, &res, c->nfs);
	if (st != RPC_SUCCESS)
		return rpc_failed(c, st);
	rc = (int)res.status;
	if (!rc && ok->obj.handle_follows)
		rc = nfs3c_fh_copy(out, &ok->obj.post_op_fh3_u.handle);
	else if (!rc)
		rc = nfs3c_lookup(c, dir, name, out, NULL);
	clnt_freeres(c->nfs, (xdrproc_t)xdr_CREATE3res, (caddr_t)&res);
	return rc;
}

static int write_all(int fd, const char *buf, size_t len)
{
	size_t done = 0;
	int tries;

	for (tries = 0; done < len && tries < 64; tries++) {
		ssize_t n = write(fd, buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return done == len ? 0 : -EIO;
}

int nfs3c_get(struct nfs3c *c, const nfs_fh3 *fh, int fd, uint64_t *bytes)
{
	uint64_t offset = 0;
	bool eof = false;
	int rc = 0;

	while (!eof && !rc) {
		uint32_t got = 0;

		rc = nfs3c_read(c, fh, offset, c->rsize, c->buf, &got, &eof);
		/* No data and no end: the server makes no progress. */
		if (!rc && !got && !eof)
			rc = -EPROTO;
		if (!rc)
			rc = write_all(fd, c->buf, got);
		offset += got;
	}
	*bytes = offset;
	return rc;
}

static ssize_t read_some(int fd, char *buf, size_t len)
{
	size_t done = 0;
	int tries;

	for (tries = 0; done < len && tries < 64; tries++) {
		ssize_t n = read(fd, buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/*
 * One pass of WRITEs from @fd's current offset; the first verifier seen in
 * @verf, *@wrote false if there was nothing to write.
 */
static int put_pass(struct nfs3c *c, const nfs_fh3 *fh, int fd, uint64_t *bytes, char *verf,
		    bool *wrote)
{
	uint64_t offset = 0;
	bool first = true;
	ssize_t n;

	while ((n = read_some(fd, c->buf, c->wsize)) > 0) {
		size_t sent = 0;

		while (sent < (size_t)n) {
			char v[NFS3_WRITEVERFSIZE];
			uint32_t done = 0;
			int rc = nfs3c_write(c, fh, offset, c->buf + sent,
					     (uint32_t)((size_t)n - sent), UNSTABLE, &done, v);

			if (rc)
				return rc;
			if (first)
				memcpy(verf, v, sizeof(v));
			else if (memcmp(verf, v, sizeof(v)))
				return -EAGAIN;	/* the server restarted: what it had is lost */
			first = false;
			sent += done;
			offset += done;
		}
	}
	*bytes = offset;
	*wrote = !first;
	return n < 0 ? (int)n : 0;
}

int nfs3c_put(struct nfs3c *c, const nfs_fh3 *dir, const char *name, int fd, uint64_t *bytes)
{
	char verf[NFS3_WRITEVERFSIZE] = { 0 }, cverf[NFS3_WRITEVERFSIZE];
	off_t start = lseek(fd, 0, SEEK_CUR);
	bool wrote = false;
	nfs_fh3 fh;
	int rc, pass;

	*bytes = 0;
	rc = nfs3c_create(c, dir, name, 0644, &fh);
	if (rc)
		return rc;
	for (pass = 0; pass < 2; pass++) {
		if (pass && (start < 0 || lseek(fd, start, SEEK_SET) < 0)) {
			rc = -ESPIPE;
			break;
		}
		rc = put_pass(c, &fh, fd, bytes, verf, &wrote);
		if (!rc)
			rc = nfs3c_commit(c, &fh, cverf);
		/* A verifier that changed since the WRITEs: the server lost what they wrote. */
		if (!rc && wrote && memcmp(verf, cverf, sizeof(verf)))
			rc = -EAGAIN;
		if (rc != -EAGAIN)
			break;
	}
	nfs3c_fh_free(&fh);
	return rc;
}

/* One READDIRPLUS reply's entries to @fn; the cookie to go on from in *@cookie. */
static int list_reply(READDIRPLUS3resok *ok, int (*fn)(void *, const entryplus3 *), void *arg,
		      cookie3 *cookie, bool *stop)
{
	const entryplus3 *e;
	unsigned int n = 0;

	for (e = ok->reply.entries; e; e = e->nextentry) {
		if (++n > MAX_LIST_ENTRIES)
			return -EPROTO;
		*cookie = e->cookie;
		if (fn(arg, e)) {
			*stop = true;
			break;
		}
	}
	/* Entries, or the end: anything else would go round forever. */
	return n || ok->reply.eof ? 0 : -EPROTO;
}

int nfs3c_list(struct nfs3c *c, const nfs_fh3 *dir,
	       int (*fn)(void *arg, const entryplus3 *e), void *arg, unsigned int *calls)
{
	READDIRPLUS3args a = { .dir = *dir, .dircount = c->dir_bytes, .maxcount = c->dir_bytes };
	unsigned int n;
	bool stop = false, eof = false;
	int rc = 0;

	for (n = 0; !rc && !eof && !stop && n < MAX_LIST_CALLS; n++) {
		READDIRPLUS3res res;
		enum clnt_stat st;

		memset(&res, 0, sizeof(res));
		st = nfsproc3_readdirplus_3(&a, &res, c->nfs);
		if (st != RPC_SUCCESS) {
			rc = rpc_failed(c, st);
			break;
		}
		rc = (int)res.status;
		if (!rc) {
			READDIRPLUS3resok *ok = &res.READDIRPLUS3res_u.resok;

			rc = list_reply(ok, fn, arg, &a.cookie, &stop);
			memcpy(a.cookieverf, ok->cookieverf, NFS3_COOKIEVERFSIZE);
			eof = ok->reply.eof;
		}
		clnt_freeres(c->nfs, (xdrproc_t)xdr_READDIRPLUS3res, (caddr_t)&res);
	}
	if (calls)
		*calls = n;
	if (!rc && !eof && !stop)
		rc = -EPROTO;
	return rc;
}
