/* SPDX-License-Identifier: MIT */
/*
 * NFSv3 procedures on one object: NULL, GETATTR, SETATTR, LOOKUP, ACCESS,
 * READLINK, READ, WRITE, COMMIT; and the results' freeing.
 *
 * Every routine fills its whole result (rpcgen's dispatcher does not zero
 * it, and frees it whatever happens) and returns TRUE: errors are answers.
 * A handle is resolved with the server's credentials; what is done to the
 * file, with the caller's (nfs3_caller_enter()).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rpcrdma/tirpc.h>

#include "attr.h"
#include "cred.h"
#include "service.h"

struct nfs3_export *nfs3_service_export;

bool nfs3_caller_enter(struct svc_req *rq)
{
	struct nfs3_cred c;

	nfs3_cred_of(rq, &c);
	return nfs3_cred_enter(&c) == 0;
}

void nfs3_caller_leave(void)
{
	nfs3_cred_leave();
}

int nfs3_sync(int fd, stable_how how)
{
	int rc = 0;

	if (how == FILE_SYNC)
		rc = fsync(fd);
	else if (how == DATA_SYNC)
		rc = fdatasync(fd);
	return rc ? -errno : 0;
}

int nfs3_open_as_caller(const struct nfs3_obj *obj, int flags, struct svc_req *rq)
{
	int fd;

	if (!nfs3_caller_enter(rq))
		return -EACCES;
	fd = nfs3_obj_open(obj, flags);
	nfs3_caller_leave();
	return fd;
}

/* Not a regular file: what READ, WRITE and COMMIT answer. */
static nfsstat3 not_regular(const struct statx *st)
{
	return S_ISDIR(st->stx_mode) ? NFS3ERR_ISDIR : NFS3ERR_INVAL;
}

bool_t nfsproc3_null_3_svc(void *argp, void *result, struct svc_req *rq)
{
	return TRUE;
}

bool_t nfsproc3_getattr_3_svc(GETATTR3args *a, GETATTR3res *r, struct svc_req *rq)
{
	struct nfs3_obj obj;

	memset(r, 0, sizeof(*r));
	r->status = nfs3_obj_get(nfs3_service_export, &a->object, &obj);
	if (r->status != NFS3_OK)
		return TRUE;
	nfs3_fattr(obj.e, &obj.st, &r->GETATTR3res_u.resok.obj_attributes);
	nfs3_obj_put(&obj);
	return TRUE;
}

bool_t nfsproc3_setattr_3_svc(SETATTR3args *a, SETATTR3res *r, struct svc_req *rq)
{
	const sattrguard3 *guard = &a->guard;
	struct nfs3_obj obj;
	struct statx before;

	memset(r, 0, sizeof(*r));
	r->status = nfs3_obj_get(nfs3_service_export, &a->object, &obj);
	if (r->status != NFS3_OK)
		return TRUE;
	before = obj.st;
	if (guard->check && !nfs3_ctime_is(&before, &guard->sattrguard3_u.obj_ctime)) {
		r->status = NFS3ERR_NOT_SYNC;
	} else if (!nfs3_caller_enter(rq)) {
		r->status = NFS3ERR_ACCES;
	} else {
		r->status = nfs3_sattr_apply(&obj, &a->new_attributes);
		nfs3_caller_leave();
	}
	/* resok and resfail are the same wcc_data. */
	nfs3_wcc(&before, &obj, &r->SETATTR3res_u.resok.obj_wcc);
	nfs3_obj_put(&obj);
	return TRUE;
}

/* LOOKUP of a name other than "." and "..": a node for what the name holds. */
static nfsstat3 lookup_name(struct nfs3_obj *dir, const char *name, struct svc_req *rq,
			    LOOKUP3resok *ok)
{
	struct statx st;
	int dfd, rc;

	dfd = nfs3_obj_open(dir, O_PATH | O_DIRECTORY);
	if (dfd < 0)
		return nfs3_errno(-dfd);
	if (!nfs3_caller_enter(rq)) {
		close(dfd);
		return NFS3ERR_ACCES;
	}
	/* The caller's search permission on the directory is checked here. */
	rc = statx(dfd, name, AT_SYMLINK_NOFOLLOW, NFS3_STATX_MASK, &st) ? -errno : 0;
	nfs3_caller_leave();
	close(dfd);
	if (rc)
		return nfs3_errno(-rc);
	nfs3_post_op(dir->e, &st, &ok->obj_attributes);
	return nfs3_node_bind(dir, name, &st, &ok->object);
}

/* LOOKUP of ".": the directory; of "..": its parent from the table, never above the root. */
static nfsstat3 lookup_dot(struct nfs3_obj *dir, const char *name, LOOKUP3resok *ok)
{
	struct nfs3_obj parent;
	nfsstat3 status;

	if (strcmp(name, ".") == 0) {
		nfs3_post_op(dir->e, &dir->st, &ok->obj_attributes);
		return nfs3_obj_fh(dir, &ok->object) ? NFS3ERR_SERVERFAULT : NFS3_OK;
	}
	status = nfs3_obj_parent_fh(dir, &ok->object);
	if (status != NFS3_OK)
		return status;
	if (nfs3_obj_get(dir->e, &ok->object, &parent) == NFS3_OK) {
		nfs3_post_op(dir->e, &parent.st, &ok->obj_attributes);
		nfs3_obj_put(&parent);
	}
	return NFS3_OK;
}

bool_t nfsproc3_lookup_3_svc(LOOKUP3args *a, LOOKUP3res *r, struct svc_req *rq)
{
	LOOKUP3resok *ok = &r->LOOKUP3res_u.resok;
	const char *name = a->what.name;
	struct nfs3_obj dir;

	memset(r, 0, sizeof(*r));
	r->status = nfs3_obj_get(nfs3_service_export, &a->what.dir, &dir);
	if (r->status != NFS3_OK)
		return TRUE;
	if (!S_ISDIR(dir.st.stx_mode))
		r->status = NFS3ERR_NOTDIR;
	else
		r->status = nfs3_name_check(name);
	if (r->status == NFS3_OK)
		r->status = nfs3_name_is_dot(name) ? lookup_dot(&dir, name, ok) :
						     lookup_name(&dir, name, rq, ok);
	if (r->status == NFS3_OK) {
		nfs3_post_op(dir.e, &dir.st, &ok->dir_attributes);
	} else {
		/* What resok held is not freed for a failure: give it back now. */
		xdr_free((xdrproc_t)xdr_LOOKUP3resok, (char *)ok);
		memset(ok, 0, sizeof(*ok));
		nfs3_post_op(dir.e, &dir.st, &r->LOOKUP3res_u.resfail.dir_attributes);
	}
	nfs3_obj_put(&dir);
	return TRUE;
}

/* Whether the caller may do @mode (R_OK, W_OK, X_OK) to @obj, as the kernel would judge. */
static bool may(const struct nfs3_obj *obj, int mode)
{
	return faccessat(obj->dirfd, obj->name, mode, AT_EACCESS | AT_SYMLINK_NOFOLLOW) == 0;
}

/* Whether the caller may remove entries of @obj's directory (ACCESS3_DELETE of a file). */
static bool may_delete_from(const struct nfs3_obj *obj)
{
	return faccessat(obj->dirfd, "", W_OK | X_OK, AT_EACCESS | AT_EMPTY_PATH) == 0;
}

static uint32 access_bits(const struct nfs3_obj *obj, uint32 want)
{
	uint32 got = 0;

	if (may(obj, R_OK))
		got |= ACCESS3_READ;
	if (S_ISDIR(obj->st.stx_mode)) {
		if (may(obj, X_OK))
			got |= ACCESS3_LOOKUP;
		if (may(obj, W_OK | X_OK))
			got |= ACCESS3_MODIFY | ACCESS3_EXTEND | ACCESS3_DELETE;
	} else {
		if (may(obj, W_OK))
			got |= ACCESS3_MODIFY | ACCESS3_EXTEND;
		if (S_ISREG(obj->st.stx_mode) && may(obj, X_OK))
			got |= ACCESS3_EXECUTE;
		if (may_delete_from(obj))
			got |= ACCESS3_DELETE;
	}
	return got & want;
}

bool_t nfsproc3_access_3_svc(ACCESS3args *a, ACCESS3res *r, struct svc_req *rq)
{
	struct nfs3_obj obj;
	uint32 got;

	memset(r, 0, sizeof(*r));
	r->status = nfs3_obj_get(nfs3_service_export, &a->object, &obj);
	if (r->status != NFS3_OK)
		return TRUE;
	if (!nfs3_caller_enter(rq)) {
		r->status = NFS3ERR_ACCES;
		nfs3_post_op(obj.e, &obj.st, &r->ACCESS3res_u.resfail.obj_attributes);
		nfs3_obj_put(&obj);
		return TRUE;
	}
	got = access_bits(&obj, a->access);
	nfs3_caller_leave();
	r->ACCESS3res_u.resok.access = got;
	nfs3_post_op(obj.e, &obj.st, &r->ACCESS3res_u.resok.obj_attributes);
	nfs3_obj_put(&obj);
	return TRUE;
}

/* The link's text, malloc()ed; read from the inode resolved (an O_PATH descriptor of it). */
static nfsstat3 read_link(const struct nfs3_obj *obj, char **out)
{
	char *buf = malloc(PATH_MAX);
	ssize_t n;
	int fd;

	if (!buf)
		return NFS3ERR_SERVERFAULT;
	fd = nfs3_obj_open(obj, O_PATH);
	if (fd < 0) {
		free(buf);
		return nfs3_errno(-fd);
	}
	n = readlinkat(fd, "", buf, PATH_MAX - 1);
	close(fd);
	if (n < 0) {
		free(buf);
		return nfs3_errno(errno);
	}
	buf[n] = '\0';
	*out = buf;
	return NFS3_OK;
}

bool_t nfsproc3_readlink_3_svc(READLINK3args *a, READLINK3res *r, struct svc_req *rq)
{
	struct nfs3_obj obj;

	memset(r, 0, sizeof(*r));
	r->status = nfs3_obj_get(nfs3_service_export, &a->symlink, &obj);
	if (r->status != NFS3_OK)
		return TRUE;
	if (!S_ISLNK(obj.st.stx_mode))
		r->status = NFS3ERR_INVAL;
	else
		r->status = read_link(&obj, &r->READLINK3res_u.resok.data);
	/* resok and resfail begin with the same post_op_attr. */
	nfs3_post_op(obj.e, &obj.st, &r->READLINK3res_u.resok.symlink_attributes);
	nfs3_obj_put(&obj);
	return TRUE;
}

/* pread() until @count bytes, the end of the file or an error; -errno if nothing was read. */
static ssize_t read_full(int fd, char *buf, size_t count, uint64_t offset)
{
	size_t done = 0;
	int tries;

	for (tries = 0; done < count && tries < 64; tries++) {
		ssize_t n = pread(fd, buf + done, count - done, (off_t)(offset + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return done ? (ssize_t)done : -errno;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/*
 * The data goes into a buffer of the transport's registered pool: over
 * RDMA the reply writes it into the client's Write chunk without a copy,
 * and the pool keeps it until the Send completes; freeresult gives it back.
 */
static nfsstat3 read_data(const struct nfs3_obj *obj, const READ3args *a, struct svc_req *rq,
			  READ3resok *ok, struct statx *after)
{
	u_int count = a->count < NFS3_MAXDATA ? a->count : NFS3_MAXDATA;
	char *buf = NULL;
	ssize_t n = 0;
	int fd;

	if (a->offset > INT64_MAX)
		return NFS3ERR_INVAL;
	if (count) {
		buf = rpcrdma_svc_buf_alloc(rq->rq_xprt, count);
		if (!buf)
			return NFS3ERR_SERVERFAULT;
	}
	fd = nfs3_open_as_caller(obj, O_RDONLY, rq);
	if (fd >= 0) {
		n = read_full(fd, buf, count, a->offset);
		if (statx(fd, "", AT_EMPTY_PATH, NFS3_STATX_MASK, after))
			*after = obj->st;
		close(fd);
	}
	if (fd < 0 || n < 0) {
		rpcrdma_svc_buf_free(buf);
		return nfs3_errno(fd < 0 ? -fd : (int)-n);
	}
	ok->count = (count3)n;
	ok->eof = a->offset + (uint64_t)n >= after->stx_size;
	ok->data.data_len = (u_int)n;
	ok->data.data_val = buf;
	return NFS3_OK;
}

bool_t nfsproc3_read_3_svc(READ3args *a, READ3res *r, struct svc_req *rq)
{
	struct nfs3_obj obj;
	struct statx after;

	memset(r, 0, sizeof(*r));
	r->status = nfs3_obj_get(nfs3_service_export, &a->file, &obj);
	if (r->status != NFS3_OK)
		return TRUE;
	after = obj.st;
	if (!S_ISREG(obj.st.stx_mode))
		r->status = not_regular(&obj.st);
	else
		r->status = read_data(&obj, a, rq, &r->READ3res_u.resok, &after);
	/* resok and resfail begin with the same post_op_attr. */
	nfs3_post_op(obj.e, &after, &r->READ3res_u.resok.file_attributes);
	nfs3_obj_put(&obj);
	return TRUE;
}

/* pwrite() all of @count bytes; the count written, or -errno if none was. */
static ssize_t write_full(int fd, const char *buf, size_t count, uint64_t offset)
{
	size_t done = 0;
	int tries;

	for (tries = 0; done < count && tries < 64; tries++) {
		ssize_t n = pwrite(fd, buf + done, count - done, (off_t)(offset + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return done ? (ssize_t)done : (n < 0 ? -errno : -EIO);
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static nfsstat3 write_data(const struct nfs3_obj *obj, const WRITE3args *a, struct svc_req *rq,
			   WRITE3resok *ok)
{
	ssize_t n;
	int fd, rc;

	/* The count must describe the data the call carries. */
	if (a->count != a->data.data_len || (a->count && !a->data.data_val))
		return NFS3ERR_INVAL;
	if (a->offset > INT64_MAX || a->offset + a->count > (uint64_t)INT64_MAX)
		return NFS3ERR_FBIG;
	fd = nfs3_open_as_caller(obj, O_WRONLY, rq);
	if (fd < 0)
		return nfs3_errno(-fd);
	n = write_full(fd, a->data.data_val, a->count, a->offset);
	rc = n < 0 ? (int)n : nfs3_sync(fd, a->stable);
	close(fd);
	if (rc)
		return nfs3_errno(-rc);
	ok->count = (count3)n;
	/* What was asked is what was done: UNSTABLE data waits for COMMIT. */
	ok->committed = a->stable;
	memcpy(ok->verf, nfs3_export_writeverf(obj->e), NFS3_WRITEVERFSIZE);
	return NFS3_OK;
}

bool_t nfsproc3_write_3_svc(WRITE3args *a, WRITE3res *r, struct svc_req *rq)
{
	struct nfs3_obj obj;
	struct statx before;

	memset(r, 0, sizeof(*r));
	r->status = nfs3_obj_get(nfs3_service_export, &a->file, &obj);
	if (r->status != NFS3_OK)
		return TRUE;
	before = obj.st;
	if (!S_ISREG(obj.st.stx_mode))
		r->status = not_regular(&obj.st);
	else if (a->stable > FILE_SYNC)
		r->status = NFS3ERR_INVAL;
	else
		r->status = write_data(&obj, a, rq, &r->WRITE3res_u.resok);
	/* resok and resfail begin with the same wcc_data. */
	nfs3_wcc(&before, &obj, &r->WRITE3res_u.resok.file_wcc);
	nfs3_obj_put(&obj);
	return TRUE;
}

/*
 * COMMIT flushes the whole file, which covers any range asked. It opens the
 * file as the server: flushing is no access to the data, and a write-only
 * or read-only file must commit all the same.
 */
static nfsstat3 commit_file(const struct nfs3_obj *obj)
{
	int fd = nfs3_obj_open(obj, O_RDONLY), rc;

	if (fd < 0)
		fd = nfs3_obj_open(obj, O_WRONLY);
	if (fd < 0)
		return nfs3_errno(-fd);
	rc = nfs3_sync(fd, FILE_SYNC);
	close(fd);
	return nfs3_errno(-rc);
}

bool_t nfsproc3_commit_3_svc(COMMIT3args *a, COMMIT3res *r, struct svc_req *rq)
{
	struct nfs3_obj obj;
	struct statx before;

	memset(r, 0, sizeof(*r));
	r->status = nfs3_obj_get(nfs3_service_export, &a->file, &obj);
	if (r->status != NFS3_OK)
		return TRUE;
	before = obj.st;
	r->status = S_ISREG(obj.st.stx_mode) ? commit_file(&obj) : not_regular(&obj.st);
	if (r->status == NFS3_OK)
		memcpy(r->COMMIT3res_u.resok.verf, nfs3_export_writeverf(obj.e),
		       NFS3_WRITEVERFSIZE);
	/* resok and resfail begin with the same wcc_data. */
	nfs3_wcc(&before, &obj, &r->COMMIT3res_u.resok.file_wcc);
	nfs3_obj_put(&obj);
	return TRUE;
}

int nfs_program_3_freeresult(SVCXPRT *transp, xdrproc_t xdr_result, caddr_t result)
{
	READ3res *read = (READ3res *)result;

	/* READ's data is a pool buffer: back to the pool (once its Send is done), not free(). */
	if (xdr_result == (xdrproc_t)xdr_READ3res && read->status == NFS3_OK &&
	    rpcrdma_svc_buf_free(read->READ3res_u.resok.data.data_val) == 0)
		read->READ3res_u.resok.data.data_val = NULL;
	xdr_free(xdr_result, result);
	return 1;
}
