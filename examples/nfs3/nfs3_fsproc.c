/* SPDX-License-Identifier: MIT */
/*
 * NFSv3 procedures about the file system: FSSTAT, FSINFO, PATHCONF; and
 * those this server does not do, MKNOD and LINK, which answer
 * NFS3ERR_NOTSUPP with the attributes RFC 1813 asks for on failure.
 */
#include <errno.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "attr.h"
#include "service.h"

/* The export is one file system: every handle's answer is the root's. */
bool_t nfsproc3_fsstat_3_svc(FSSTAT3args *a, FSSTAT3res *r, struct svc_req *rq)
{
	FSSTAT3resok *ok = &r->FSSTAT3res_u.resok;
	struct nfs3_obj obj;
	struct statvfs vfs;

	memset(r, 0, sizeof(*r));
	r->status = nfs3_obj_get(nfs3_service_export, &a->fsroot, &obj);
	if (r->status != NFS3_OK)
		return TRUE;
	if (fstatvfs(nfs3_export_root_fd(obj.e), &vfs)) {
		r->status = nfs3_errno(errno);
	} else {
		ok->tbytes = (uint64)vfs.f_blocks * vfs.f_frsize;
		ok->fbytes = (uint64)vfs.f_bfree * vfs.f_frsize;
		ok->abytes = (uint64)vfs.f_bavail * vfs.f_frsize;
		ok->tfiles = vfs.f_files;
		ok->ffiles = vfs.f_ffree;
		ok->afiles = vfs.f_favail;
		ok->invarsec = 0;	/* it changes whenever it likes */
	}
	/* resok and resfail begin with the same post_op_attr. */
	nfs3_post_op(obj.e, &obj.st, &ok->obj_attributes);
	nfs3_obj_put(&obj);
	return TRUE;
}

bool_t nfsproc3_fsinfo_3_svc(FSINFO3args *a, FSINFO3res *r, struct svc_req *rq)
{
	FSINFO3resok *ok = &r->FSINFO3res_u.resok;
	struct nfs3_obj obj;

	memset(r, 0, sizeof(*r));
	r->status = nfs3_obj_get(nfs3_service_export, &a->fsroot, &obj);
	if (r->status != NFS3_OK)
		return TRUE;
	ok->rtmax = ok->rtpref = NFS3_MAXDATA;
	ok->wtmax = ok->wtpref = NFS3_MAXDATA;
	ok->rtmult = ok->wtmult = 4096;
	ok->dtpref = NFS3_DTPREF;
	ok->maxfilesize = INT64_MAX;
	ok->time_delta.seconds = 0;
	ok->time_delta.nseconds = 1;
	/* No FSF3_LINK: LINK is not supported. */
	ok->properties = FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME;
	nfs3_post_op(obj.e, &obj.st, &ok->obj_attributes);
	nfs3_obj_put(&obj);
	return TRUE;
}

static uint32 clamp32(long v)
{
	return v < 0 ? 0 : v > (long)UINT32_MAX ? UINT32_MAX : (uint32)v;
}

bool_t nfsproc3_pathconf_3_svc(PATHCONF3args *a, PATHCONF3res *r, struct svc_req *rq)
{
	PATHCONF3resok *ok = &r->PATHCONF3res_u.resok;
	struct nfs3_obj obj;
	struct statfs fs;
	int root;

	memset(r, 0, sizeof(*r));
	r->status = nfs3_obj_get(nfs3_service_export, &a->object, &obj);
	if (r->status != NFS3_OK)
		return TRUE;
	root = nfs3_export_root_fd(obj.e);
	if (fstatfs(root, &fs)) {
		r->status = nfs3_errno(errno);
	} else {
		ok->linkmax = clamp32(fpathconf(root, _PC_LINK_MAX));
		ok->name_max = clamp32(fs.f_namelen);
		ok->no_trunc = TRUE;
		ok->chown_restricted = TRUE;
		ok->case_insensitive = FALSE;
		ok->case_preserving = TRUE;
	}
	nfs3_post_op(obj.e, &obj.st, &ok->obj_attributes);
	nfs3_obj_put(&obj);
	return TRUE;
}

/* The wcc_data of a directory handle that a refused call named, if it resolves. */
static void refused_dir_wcc(const nfs_fh3 *fh, wcc_data *wcc)
{
	struct nfs3_obj dir;

	if (nfs3_obj_get(nfs3_service_export, fh, &dir) != NFS3_OK)
		return;
	nfs3_wcc(&dir.st, &dir, wcc);
	nfs3_obj_put(&dir);
}

/* Device files and pipes are not made over this export. */
bool_t nfsproc3_mknod_3_svc(MKNOD3args *a, MKNOD3res *r, struct svc_req *rq)
{
	memset(r, 0, sizeof(*r));
	r->status = NFS3ERR_NOTSUPP;
	refused_dir_wcc(&a->where.dir, &r->MKNOD3res_u.resfail.dir_wcc);
	return TRUE;
}

/* Hard links would give one inode several names, which the node table keeps one of. */
bool_t nfsproc3_link_3_svc(LINK3args *a, LINK3res *r, struct svc_req *rq)
{
	LINK3resfail *fail = &r->LINK3res_u.resfail;
	struct nfs3_obj obj;

	memset(r, 0, sizeof(*r));
	r->status = NFS3ERR_NOTSUPP;
	if (nfs3_obj_get(nfs3_service_export, &a->file, &obj) == NFS3_OK) {
		nfs3_post_op(obj.e, &obj.st, &fail->file_attributes);
		nfs3_obj_put(&obj);
	}
	refused_dir_wcc(&a->link.dir, &fail->linkdir_wcc);
	return TRUE;
}
