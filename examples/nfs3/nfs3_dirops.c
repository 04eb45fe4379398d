/* SPDX-License-Identifier: MIT */
/*
 * NFSv3 procedures that change a directory: CREATE, MKDIR, SYMLINK, REMOVE,
 * RMDIR, RENAME.
 *
 * Each works on a name in a directory it has resolved and opened (O_PATH):
 * the *at() calls take that descriptor and one checked component, never a
 * path, and none follows a symbolic link (mknodat, mkdirat and symlinkat
 * refuse an existing name, links included; the others act on the link
 * itself). "." and ".." are refused where RFC 1813 says: creating them is
 * NFS3ERR_EXIST, removing or renaming them NFS3ERR_INVAL (RMDIR of ".." is
 * NFS3ERR_EXIST). The table follows every change: a removed name's node
 * goes, a renamed one moves.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "attr.h"
#include "service.h"

/* A directory being changed: resolved, opened, and its attributes before. */
struct dirop {
	struct nfs3_obj dir;
	bool resolved;
	int dfd;
	struct statx before;
};

static nfsstat3 dirop_begin(const diropargs3 *where, struct dirop *d)
{
	nfsstat3 status;

	d->dfd = -1;
	d->resolved = false;
	status = nfs3_obj_get(nfs3_service_export, &where->dir, &d->dir);
	if (status != NFS3_OK)
		return status;
	d->resolved = true;
	d->before = d->dir.st;
	if (!S_ISDIR(d->dir.st.stx_mode))
		return NFS3ERR_NOTDIR;
	status = nfs3_name_check(where->name);
	if (status != NFS3_OK)
		return status;
	d->dfd = nfs3_obj_open(&d->dir, O_PATH | O_DIRECTORY);
	return d->dfd < 0 ? nfs3_errno(-d->dfd) : NFS3_OK;
}

/* The directory's wcc_data (when it resolved), and everything released. */
static void dirop_end(struct dirop *d, wcc_data *wcc)
{
	if (d->dfd >= 0)
		close(d->dfd);
	d->dfd = -1;
	if (!d->resolved)
		return;
	nfs3_wcc(&d->before, &d->dir, wcc);
	nfs3_obj_put(&d->dir);
}

/* @name in the directory, as an object the attribute code can work on. */
static void child_init(struct dirop *d, const char *name, struct nfs3_obj *child)
{
	memset(child, 0, sizeof(*child));
	child->e = d->dir.e;
	child->slot = UINT32_MAX;	/* none until nfs3_node_bind() */
	child->dirfd = d->dfd;
	strcpy(child->name, name);
}

/* Its attributes, with the caller's identity still in force. */
static nfsstat3 child_stat(struct nfs3_obj *child)
{
	return nfs3_errno(-nfs3_obj_restat(child));
}

/*
 * The handle and attributes of what CREATE, MKDIR or SYMLINK made. Without
 * a node (the table full) the answer still succeeds, with no handle: the
 * client may LOOKUP the name.
 */
static void child_made(struct dirop *d, struct nfs3_obj *child, post_op_fh3 *fh,
		       post_op_attr *attr)
{
	if (nfs3_node_bind(&d->dir, child->name, &child->st, &fh->post_op_fh3_u.handle) == NFS3_OK)
		fh->handle_follows = TRUE;
	nfs3_post_op(d->dir.e, &child->st, attr);
}

/* EXCLUSIVE's verifier lives in the new file's times, so that a retransmission finds it. */
static void verf_times(const char *verf, struct timespec ts[2])
{
	uint32_t a, m;

	memcpy(&a, verf, 4);
	memcpy(&m, verf + 4, 4);
	ts[0] = (struct timespec){ .tv_sec = a };
	ts[1] = (struct timespec){ .tv_sec = m };
}

static bool verf_matches(const struct statx *st, const char *verf)
{
	struct timespec ts[2];

	verf_times(verf, ts);
	return st->stx_atime.tv_sec == ts[0].tv_sec && st->stx_mtime.tv_sec == ts[1].tv_sec;
}

static nfsstat3 verf_set(const struct nfs3_obj *child, const char *verf)
{
	struct timespec ts[2];

	verf_times(verf, ts);
	if (utimensat(child->dirfd, child->name, ts, AT_SYMLINK_NOFOLLOW))
		return nfs3_errno(errno);
	return NFS3_OK;
}

/* CREATE's work, as the caller: make the file, or decide about the one there. */
static nfsstat3 create_file(struct dirop *d, const void *args, struct nfs3_obj *child)
{
	const CREATE3args *a = args;
	const createhow3 *how = &a->how;
	const sattr3 *sa = &how->createhow3_u.obj_attributes;
	const char *verf = how->createhow3_u.verf;
	mode_t mode = 0644;
	nfsstat3 status;
	bool made;

	if (how->mode != EXCLUSIVE && sa->mode.set_it)
		mode = sa->mode.set_mode3_u.mode & 07777;
	child_init(d, a->where.name, child);
	/* mknodat() makes a regular file without opening it, and never through a link. */
	made = mknodat(d->dfd, child->name, S_IFREG | mode, 0) == 0;
	if (!made && (errno != EEXIST || how->mode == GUARDED))
		return nfs3_errno(errno);
	status = child_stat(child);
	if (status != NFS3_OK)
		return status;
	if (!made && !S_ISREG(child->st.stx_mode))
		return NFS3ERR_EXIST;
	if (how->mode == EXCLUSIVE) {
		if (!made)
			return verf_matches(&child->st, verf) ? NFS3_OK : NFS3ERR_EXIST;
		status = verf_set(child, verf);
		child_stat(child);
		return status;
	}
	/* The mode again: mknodat()'s went through the server's umask. */
	return nfs3_sattr_apply(child, sa);
}

/* How CREATE, MKDIR and SYMLINK make their child, from their arguments. */
typedef nfsstat3 (*make_fn)(struct dirop *d, const void *args, struct nfs3_obj *child);

/* What the three have in common: the checks, the caller's identity, the results. */
struct make_res {
	post_op_fh3 *obj;
	post_op_attr *obj_attributes;
	wcc_data *wcc_ok;
	wcc_data *wcc_fail;
};

static nfsstat3 dirop_make(const diropargs3 *where, struct svc_req *rq, make_fn make,
			   const void *args, nfsstat3 precheck, const struct make_res *res)
{
	struct nfs3_obj child;
	struct dirop d;
	nfsstat3 status = dirop_begin(where, &d);

	if (status == NFS3_OK && nfs3_name_is_dot(where->name))
		status = NFS3ERR_EXIST;
	if (status == NFS3_OK)
		status = precheck;
	if (status == NFS3_OK) {
		if (nfs3_caller_enter(rq)) {
			status = make(&d, args, &child);
			nfs3_caller_leave();
		} else {
			status = NFS3ERR_ACCES;
		}
	}
	if (status == NFS3_OK)
		child_made(&d, &child, res->obj, res->obj_attributes);
	dirop_end(&d, status == NFS3_OK ? res->wcc_ok : res->wcc_fail);
	return status;
}

bool_t nfsproc3_create_3_svc(CREATE3args *a, CREATE3res *r, struct svc_req *rq)
{
	const struct make_res res = {
		&r->CREATE3res_u.resok.obj, &r->CREATE3res_u.resok.obj_attributes,
		&r->CREATE3res_u.resok.dir_wcc, &r->CREATE3res_u.resfail.dir_wcc,
	};

	memset(r, 0, sizeof(*r));
	r->status = dirop_make(&a->where, rq, create_file, a,
			       a->how.mode > EXCLUSIVE ? NFS3ERR_INVAL : NFS3_OK, &res);
	return TRUE;
}

/* The attributes a new directory or link takes after it is made: no size. */
static nfsstat3 apply_after_make(struct nfs3_obj *child, const sattr3 *sa)
{
	sattr3 rest = *sa;

	rest.size.set_it = FALSE;
	return nfs3_sattr_apply(child, &rest);
}

static nfsstat3 make_dir(struct dirop *d, const void *args, struct nfs3_obj *child)
{
	const MKDIR3args *a = args;
	const sattr3 *sa = &a->attributes;
	mode_t mode = sa->mode.set_it ? sa->mode.set_mode3_u.mode & 07777 : 0755;
	nfsstat3 status;

	child_init(d, a->where.name, child);
	if (mkdirat(d->dfd, child->name, mode))
		return nfs3_errno(errno);
	status = child_stat(child);
	return status == NFS3_OK ? apply_after_make(child, sa) : status;
}

bool_t nfsproc3_mkdir_3_svc(MKDIR3args *a, MKDIR3res *r, struct svc_req *rq)
{
	const struct make_res res = {
		&r->MKDIR3res_u.resok.obj, &r->MKDIR3res_u.resok.obj_attributes,
		&r->MKDIR3res_u.resok.dir_wcc, &r->MKDIR3res_u.resfail.dir_wcc,
	};

	memset(r, 0, sizeof(*r));
	r->status = dirop_make(&a->where, rq, make_dir, a, NFS3_OK, &res);
	return TRUE;
}

/* The link's text is stored as given: the server never follows it, a client may. */
static nfsstat3 make_symlink(struct dirop *d, const void *args, struct nfs3_obj *child)
{
	const SYMLINK3args *a = args;
	const char *target = a->symlink.symlink_data;
	nfsstat3 status;

	if (!target)
		return NFS3ERR_INVAL;
	if (strnlen(target, PATH_MAX) >= PATH_MAX)
		return NFS3ERR_NAMETOOLONG;
	child_init(d, a->where.name, child);
	if (symlinkat(target, d->dfd, child->name))
		return nfs3_errno(errno);
	status = child_stat(child);
	return status == NFS3_OK ? apply_after_make(child, &a->symlink.symlink_attributes) : status;
}

bool_t nfsproc3_symlink_3_svc(SYMLINK3args *a, SYMLINK3res *r, struct svc_req *rq)
{
	const struct make_res res = {
		&r->SYMLINK3res_u.resok.obj, &r->SYMLINK3res_u.resok.obj_attributes,
		&r->SYMLINK3res_u.resok.dir_wcc, &r->SYMLINK3res_u.resfail.dir_wcc,
	};

	memset(r, 0, sizeof(*r));
	r->status = dirop_make(&a->where, rq, make_symlink, a, NFS3_OK, &res);
	return TRUE;
}

/* Unlink @name (a directory with @dir_flag AT_REMOVEDIR); its node goes. */
static nfsstat3 remove_name(struct dirop *d, const char *name, int dir_flag,
			    struct svc_req *rq)
{
	struct statx victim;
	int rc = 0;

	if (!nfs3_caller_enter(rq))
		return NFS3ERR_ACCES;
	if (statx(d->dfd, name, AT_SYMLINK_NOFOLLOW, STATX_INO | STATX_TYPE, &victim))
		rc = -errno;
	else if (!dir_flag && S_ISDIR(victim.stx_mode))
		rc = -EISDIR;
	else if (unlinkat(d->dfd, name, dir_flag))
		rc = -errno;
	nfs3_caller_leave();
	/* Some file systems say EEXIST for a directory that is not empty. */
	if (rc == -EEXIST)
		rc = -ENOTEMPTY;
	if (rc)
		return nfs3_errno(-rc);
	nfs3_node_unbind(&d->dir, name, &victim);
	return NFS3_OK;
}

bool_t nfsproc3_remove_3_svc(REMOVE3args *a, REMOVE3res *r, struct svc_req *rq)
{
	struct dirop d;

	memset(r, 0, sizeof(*r));
	r->status = dirop_begin(&a->object, &d);
	if (r->status == NFS3_OK && nfs3_name_is_dot(a->object.name))
		r->status = NFS3ERR_INVAL;
	if (r->status == NFS3_OK)
		r->status = remove_name(&d, a->object.name, 0, rq);
	/* resok and resfail are the same wcc_data. */
	dirop_end(&d, &r->REMOVE3res_u.resok.dir_wcc);
	return TRUE;
}

bool_t nfsproc3_rmdir_3_svc(RMDIR3args *a, RMDIR3res *r, struct svc_req *rq)
{
	const char *name = a->object.name;
	struct dirop d;

	memset(r, 0, sizeof(*r));
	r->status = dirop_begin(&a->object, &d);
	if (r->status == NFS3_OK && nfs3_name_is_dot(name))
		r->status = strcmp(name, ".") == 0 ? NFS3ERR_INVAL : NFS3ERR_EXIST;
	if (r->status == NFS3_OK)
		r->status = remove_name(&d, name, AT_REMOVEDIR, rq);
	dirop_end(&d, &r->RMDIR3res_u.resok.dir_wcc);
	return TRUE;
}

/* renameat() as the caller; the table follows: the source's node moves, a replaced one goes. */
static nfsstat3 rename_names(struct dirop *from, const char *fname, struct dirop *to,
			     const char *tname, struct svc_req *rq)
{
	struct statx src, dst;
	bool replaced;
	int rc = 0;

	if (!nfs3_caller_enter(rq))
		return NFS3ERR_ACCES;
	if (statx(from->dfd, fname, AT_SYMLINK_NOFOLLOW, STATX_INO | STATX_TYPE, &src))
		rc = -errno;
	replaced = !rc && statx(to->dfd, tname, AT_SYMLINK_NOFOLLOW, STATX_INO | STATX_TYPE,
				&dst) == 0;
	if (!rc && renameat(from->dfd, fname, to->dfd, tname))
		rc = -errno;
	nfs3_caller_leave();
	if (rc)
		return nfs3_errno(-rc);
	if (replaced && dst.stx_ino != src.stx_ino)
		nfs3_node_unbind(&to->dir, tname, &dst);
	nfs3_node_move(&to->dir, tname, &src);
	return NFS3_OK;
}

bool_t nfsproc3_rename_3_svc(RENAME3args *a, RENAME3res *r, struct svc_req *rq)
{
	struct dirop from, to;

	memset(r, 0, sizeof(*r));
	to.resolved = false;
	to.dfd = -1;
	r->status = dirop_begin(&a->from, &from);
	if (r->status == NFS3_OK)
		r->status = dirop_begin(&a->to, &to);
	if (r->status == NFS3_OK &&
	    (nfs3_name_is_dot(a->from.name) || nfs3_name_is_dot(a->to.name)))
		r->status = NFS3ERR_INVAL;
	if (r->status == NFS3_OK)
		r->status = rename_names(&from, a->from.name, &to, a->to.name, rq);
	/* resok and resfail are the same pair of wcc_data. */
	dirop_end(&from, &r->RENAME3res_u.resok.fromdir_wcc);
	dirop_end(&to, &r->RENAME3res_u.resok.todir_wcc);
	return TRUE;
}
