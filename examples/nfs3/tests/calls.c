/* SPDX-License-Identifier: MIT */
/* One NFS call each, for the tests (nfs3_test.h). */
#include <string.h>

#include "nfs3_test.h"

static void set_mode(sattr3 *sa, uint32_t mode)
{
	sa->mode.set_it = TRUE;
	sa->mode.set_mode3_u.mode = mode;
}

static void take_fh(const nfs_fh3 *from, nfs_fh3 *out)
{
	if (out)
		assert_int_equal(nfs3c_fh_copy(out, from), 0);
}

static void take_post_op_fh(const post_op_fh3 *from, nfs_fh3 *out)
{
	if (!out)
		return;
	assert_true(from->handle_follows);
	take_fh(&from->post_op_fh3_u.handle, out);
}

nfsstat3 nfs3t_getattr(CLIENT *cl, const nfs_fh3 *fh, fattr3 *attr)
{
	GETATTR3args a = { .object = *fh };
	GETATTR3res r;

	memset(&r, 0, sizeof(r));
	assert_int_equal(nfsproc3_getattr_3(&a, &r, cl), RPC_SUCCESS);
	if (r.status == NFS3_OK && attr)
		*attr = r.GETATTR3res_u.resok.obj_attributes;
	clnt_freeres(cl, (xdrproc_t)xdr_GETATTR3res, (caddr_t)&r);
	return r.status;
}

nfsstat3 nfs3t_lookup_st(CLIENT *cl, const nfs_fh3 *dir, const char *name, nfs_fh3 *out,
			 fattr3 *attr)
{
	LOOKUP3args a = { .what = { .dir = *dir, .name = (filename3)name } };
	LOOKUP3res r;

	memset(&r, 0, sizeof(r));
	assert_int_equal(nfsproc3_lookup_3(&a, &r, cl), RPC_SUCCESS);
	if (r.status == NFS3_OK) {
		take_fh(&r.LOOKUP3res_u.resok.object, out);
		/* The directory's attributes come with every answer. */
		assert_true(r.LOOKUP3res_u.resok.dir_attributes.attributes_follow);
		if (attr) {
			assert_true(r.LOOKUP3res_u.resok.obj_attributes.attributes_follow);
			*attr = r.LOOKUP3res_u.resok.obj_attributes.post_op_attr_u.attributes;
		}
	}
	clnt_freeres(cl, (xdrproc_t)xdr_LOOKUP3res, (caddr_t)&r);
	return r.status;
}

nfsstat3 nfs3t_mkdir(CLIENT *cl, const nfs_fh3 *dir, const char *name, uint32_t mode,
		     nfs_fh3 *out)
{
	MKDIR3args a = { .where = { .dir = *dir, .name = (filename3)name } };
	MKDIR3res r;

	set_mode(&a.attributes, mode);
	memset(&r, 0, sizeof(r));
	assert_int_equal(nfsproc3_mkdir_3(&a, &r, cl), RPC_SUCCESS);
	if (r.status == NFS3_OK)
		take_post_op_fh(&r.MKDIR3res_u.resok.obj, out);
	clnt_freeres(cl, (xdrproc_t)xdr_MKDIR3res, (caddr_t)&r);
	return r.status;
}

nfsstat3 nfs3t_symlink(CLIENT *cl, const nfs_fh3 *dir, const char *name, const char *target,
		       nfs_fh3 *out)
{
	SYMLINK3args a = { .where = { .dir = *dir, .name = (filename3)name } };
	SYMLINK3res r;

	a.symlink.symlink_data = (nfspath3)target;
	memset(&r, 0, sizeof(r));
	assert_int_equal(nfsproc3_symlink_3(&a, &r, cl), RPC_SUCCESS);
	if (r.status == NFS3_OK)
		take_post_op_fh(&r.SYMLINK3res_u.resok.obj, out);
	clnt_freeres(cl, (xdrproc_t)xdr_SYMLINK3res, (caddr_t)&r);
	return r.status;
}

nfsstat3 nfs3t_create(CLIENT *cl, const nfs_fh3 *dir, const char *name, createmode3 how,
		      uint32_t mode, const char *verf, nfs_fh3 *out, fattr3 *attr)
{
	CREATE3args a = { .where = { .dir = *dir, .name = (filename3)name } };
	CREATE3res r;

	a.how.mode = how;
	if (how == EXCLUSIVE)
		memcpy(a.how.createhow3_u.verf, verf, NFS3_CREATEVERFSIZE);
	else
		set_mode(&a.how.createhow3_u.obj_attributes, mode);
	memset(&r, 0, sizeof(r));
	assert_int_equal(nfsproc3_create_3(&a, &r, cl), RPC_SUCCESS);
	if (r.status == NFS3_OK) {
		take_post_op_fh(&r.CREATE3res_u.resok.obj, out);
		if (attr) {
			assert_true(r.CREATE3res_u.resok.obj_attributes.attributes_follow);
			*attr = r.CREATE3res_u.resok.obj_attributes.post_op_attr_u.attributes;
		}
	}
	clnt_freeres(cl, (xdrproc_t)xdr_CREATE3res, (caddr_t)&r);
	return r.status;
}

nfsstat3 nfs3t_remove(CLIENT *cl, const nfs_fh3 *dir, const char *name)
{
	REMOVE3args a = { .object = { .dir = *dir, .name = (filename3)name } };
	REMOVE3res r;

	memset(&r, 0, sizeof(r));
	assert_int_equal(nfsproc3_remove_3(&a, &r, cl), RPC_SUCCESS);
	clnt_freeres(cl, (xdrproc_t)xdr_REMOVE3res, (caddr_t)&r);
	return r.status;
}

nfsstat3 nfs3t_rmdir(CLIENT *cl, const nfs_fh3 *dir, const char *name)
{
	RMDIR3args a = { .object = { .dir = *dir, .name = (filename3)name } };
	RMDIR3res r;

	memset(&r, 0, sizeof(r));
	assert_int_equal(nfsproc3_rmdir_3(&a, &r, cl), RPC_SUCCESS);
	clnt_freeres(cl, (xdrproc_t)xdr_RMDIR3res, (caddr_t)&r);
	return r.status;
}

nfsstat3 nfs3t_rename(CLIENT *cl, const nfs_fh3 *from, const char *fname, const nfs_fh3 *to,
		      const char *tname)
{
	RENAME3args a = { .from = { .dir = *from, .name = (filename3)fname },
			  .to = { .dir = *to, .name = (filename3)tname } };
	RENAME3res r;

	memset(&r, 0, sizeof(r));
	assert_int_equal(nfsproc3_rename_3(&a, &r, cl), RPC_SUCCESS);
	clnt_freeres(cl, (xdrproc_t)xdr_RENAME3res, (caddr_t)&r);
	return r.status;
}

nfsstat3 nfs3t_read_st(CLIENT *cl, const nfs_fh3 *fh, uint64_t offset, uint32_t count)
{
	READ3args a = { .file = *fh, .offset = offset, .count = count };
	READ3res r;

	memset(&r, 0, sizeof(r));
	assert_int_equal(nfsproc3_read_3(&a, &r, cl), RPC_SUCCESS);
	clnt_freeres(cl, (xdrproc_t)xdr_READ3res, (caddr_t)&r);
	return r.status;
}

nfsstat3 nfs3t_write_st(CLIENT *cl, const nfs_fh3 *fh, uint64_t offset, const void *data,
			uint32_t len, stable_how stable)
{
	WRITE3args a = { .file = *fh, .offset = offset, .count = len, .stable = stable };
	WRITE3res r;

	a.data.data_len = len;
	a.data.data_val = (char *)data;
	memset(&r, 0, sizeof(r));
	assert_int_equal(nfsproc3_write_3(&a, &r, cl), RPC_SUCCESS);
	clnt_freeres(cl, (xdrproc_t)xdr_WRITE3res, (caddr_t)&r);
	return r.status;
}

nfsstat3 nfs3t_readdir_st(CLIENT *cl, const nfs_fh3 *dir, uint32_t count)
{
	READDIR3args a = { .dir = *dir, .count = count };
	READDIR3res r;

	memset(&r, 0, sizeof(r));
	assert_int_equal(nfsproc3_readdir_3(&a, &r, cl), RPC_SUCCESS);
	clnt_freeres(cl, (xdrproc_t)xdr_READDIR3res, (caddr_t)&r);
	return r.status;
}

nfsstat3 nfs3t_readdirplus_st(CLIENT *cl, const nfs_fh3 *dir, uint32_t count)
{
	READDIRPLUS3args a = { .dir = *dir, .dircount = count, .maxcount = count };
	READDIRPLUS3res r;

	memset(&r, 0, sizeof(r));
	assert_int_equal(nfsproc3_readdirplus_3(&a, &r, cl), RPC_SUCCESS);
	clnt_freeres(cl, (xdrproc_t)xdr_READDIRPLUS3res, (caddr_t)&r);
	return r.status;
}

nfsstat3 nfs3t_setattr_mode(CLIENT *cl, const nfs_fh3 *fh, uint32_t mode)
{
	SETATTR3args a = { .object = *fh };
	SETATTR3res r;

	set_mode(&a.new_attributes, mode);
	memset(&r, 0, sizeof(r));
	assert_int_equal(nfsproc3_setattr_3(&a, &r, cl), RPC_SUCCESS);
	clnt_freeres(cl, (xdrproc_t)xdr_SETATTR3res, (caddr_t)&r);
	return r.status;
}

nfsstat3 nfs3t_access(CLIENT *cl, const nfs_fh3 *fh, uint32_t want, uint32_t *got)
{
	ACCESS3args a = { .object = *fh, .access = want };
	ACCESS3res r;

	memset(&r, 0, sizeof(r));
	assert_int_equal(nfsproc3_access_3(&a, &r, cl), RPC_SUCCESS);
	if (r.status == NFS3_OK)
		*got = r.ACCESS3res_u.resok.access;
	clnt_freeres(cl, (xdrproc_t)xdr_ACCESS3res, (caddr_t)&r);
	return r.status;
}

nfsstat3 nfs3t_readlink(CLIENT *cl, const nfs_fh3 *fh, char *buf, size_t len)
{
	READLINK3args a = { .symlink = *fh };
	READLINK3res r;

	memset(&r, 0, sizeof(r));
	assert_int_equal(nfsproc3_readlink_3(&a, &r, cl), RPC_SUCCESS);
	if (r.status == NFS3_OK) {
		assert_true(strlen(r.READLINK3res_u.resok.data) < len);
		strcpy(buf, r.READLINK3res_u.resok.data);
	}
	clnt_freeres(cl, (xdrproc_t)xdr_READLINK3res, (caddr_t)&r);
	return r.status;
}

bool nfs3t_fh_equal(const nfs_fh3 *a, const nfs_fh3 *b)
{
	return a->data.data_len == b->data.data_len &&
	       memcmp(a->data.data_val, b->data.data_val, a->data.data_len) == 0;
}
