/* SPDX-License-Identifier: MIT */
/*
 * READDIR and READDIRPLUS.
 *
 * A cookie is the directory offset the kernel gives after an entry (d_off):
 * a call seeks its descriptor there and reads on, so the entry after the
 * last one returned comes first. The cookie verifier is always zero and
 * not checked (RFC 1813 lets a server that needs none do so): on file
 * systems with hashed offsets a cookie stays valid as entries come and go.
 *
 * A reply holds what fits in the client's counts, RFC 1813's way: count or
 * maxcount bound the whole READDIR3resok / READDIRPLUS3resok as XDR, and
 * dircount the names, ids and cookies of READDIRPLUS; at most ENTRIES_MAX
 * entries whatever the counts, since rpcgen's XDR walks the list by
 * recursion on both sides. "." and ".." are listed; the root's ".." is the
 * root, as LOOKUP says.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attr.h"
#include "service.h"

#define ENTRIES_MAX 1024

/* XDR sizes (RFC 4506: 4-byte units) of what a reply holds. */
#define XDR_BOOL 4
#define XDR_HYPER 8
#define XDR_POST_OP_ATTR (XDR_BOOL + 84)	/* with its fattr3 */
#define XDR_POST_OP_FH (XDR_BOOL + 4 + NFS3_FH_LEN)
/* resok without entries: dir_attributes, cookieverf, the list's end and eof. */
#define XDR_RESOK_FIXED (XDR_POST_OP_ATTR + NFS3_COOKIEVERFSIZE + XDR_BOOL + XDR_BOOL)

static size_t xdr_name_len(const char *name)
{
	return 4 + ((strlen(name) + 3) & ~(size_t)3);
}

/* An entry's fileid, name and cookie, and the list's "value follows": READDIR's entry3. */
static size_t xdr_entry_len(const char *name)
{
	return XDR_BOOL + XDR_HYPER + xdr_name_len(name) + XDR_HYPER;
}

/* A directory read from a cookie on. */
struct dir_reader {
	DIR *dir;
	int fd;
	bool eof;
};

/* Opens with the caller's read permission in force (held by the caller of this). */
static nfsstat3 reader_open(const struct nfs3_obj *obj, cookie3 cookie, struct dir_reader *r)
{
	int fd;

	if (cookie > INT64_MAX)
		return NFS3ERR_BAD_COOKIE;
	fd = nfs3_obj_open(obj, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return nfs3_errno(-fd);
	if (cookie && lseek(fd, (off_t)cookie, SEEK_SET) < 0) {
		close(fd);
		return NFS3ERR_BAD_COOKIE;
	}
	r->dir = fdopendir(fd);
	if (!r->dir) {
		close(fd);
		return NFS3ERR_SERVERFAULT;
	}
	r->fd = fd;
	r->eof = false;
	return NFS3_OK;
}

static void reader_close(struct dir_reader *r)
{
	closedir(r->dir);
}

/* The next entry, or NULL at the end (eof set) or on an error (-errno in *@err). */
static const struct dirent *reader_next(struct dir_reader *r, int *err)
{
	const struct dirent *d;

	errno = 0;
	d = readdir(r->dir);
	if (!d) {
		*err = -errno;
		r->eof = *err == 0;
	}
	return d;
}

/* An entry's fileid: the inode's, but the root's ".." is the root, as LOOKUP says. */
static fileid3 entry_fileid(const struct nfs3_obj *dir, const struct dirent *d)
{
	if (nfs3_obj_is_root(dir) && strcmp(d->d_name, "..") == 0)
		return dir->st.stx_ino;
	return d->d_ino;
}

/* READDIR: names, ids and cookies while @budget lasts. */
static nfsstat3 list_names(const struct nfs3_obj *dir, struct dir_reader *r, size_t budget,
			   entry3 **head)
{
	entry3 **tail = head;
	const struct dirent *d;
	unsigned int n = 0;
	int err = 0;

	while (n < ENTRIES_MAX && (d = reader_next(r, &err))) {
		size_t len = xdr_entry_len(d->d_name);
		entry3 *e;

		if (len > budget)
			break;
		e = calloc(1, sizeof(*e));
		if (!e || !(e->name = strdup(d->d_name))) {
			free(e);
			return NFS3ERR_SERVERFAULT;
		}
		e->fileid = entry_fileid(dir, d);
		e->cookie = (cookie3)d->d_off;
		*tail = e;
		tail = &e->nextentry;
		budget -= len;
		n++;
	}
	if (err)
		return nfs3_errno(-err);
	return n || r->eof ? NFS3_OK : NFS3ERR_TOOSMALL;
}

bool_t nfsproc3_readdir_3_svc(READDIR3args *a, READDIR3res *r, struct svc_req *rq)
{
	READDIR3resok *ok = &r->READDIR3res_u.resok;
	u_int count = a->count < NFS3_MAXDIR ? a->count : NFS3_MAXDIR;
	struct dir_reader reader = { .fd = -1 };
	struct nfs3_obj dir;

	memset(r, 0, sizeof(*r));
	r->status = nfs3_obj_get(nfs3_service_export, &a->dir, &dir);
	if (r->status != NFS3_OK)
		return TRUE;
	if (!S_ISDIR(dir.st.stx_mode))
		r->status = NFS3ERR_NOTDIR;
	else if (count <= XDR_RESOK_FIXED)
		r->status = NFS3ERR_TOOSMALL;
	else if (!nfs3_caller_enter(rq))
		r->status = NFS3ERR_ACCES;
	else {
		r->status = reader_open(&dir, a->cookie, &reader);
		if (r->status == NFS3_OK) {
			r->status = list_names(&dir, &reader, count - XDR_RESOK_FIXED,
					       &ok->reply.entries);
			ok->reply.eof = reader.eof;
			reader_close(&reader);
		}
		nfs3_caller_leave();
	}
	if (r->status != NFS3_OK) {
		xdr_free((xdrproc_t)xdr_READDIR3resok, (char *)ok);
		memset(ok, 0, sizeof(*ok));
	}
	/* resok and resfail begin with the same post_op_attr. */
	nfs3_post_op_obj(&dir, &ok->dir_attributes);
	nfs3_obj_put(&dir);
	return TRUE;
}

/* What READDIRPLUS has room for: the two counts, each spent as entries are added. */
struct plus_budget {
	size_t dir;	/* dircount: names, ids, cookies */
	size_t max;	/* maxcount: everything */
};

/* Attributes and handle of "." or "..", from the table: never above the root. */
static void plus_dot(struct nfs3_obj *dir, int fd, const char *name, entryplus3 *e)
{
	struct statx st;
	nfsstat3 status;

	if (strcmp(name, ".") == 0 || nfs3_obj_is_root(dir)) {
		status = nfs3_obj_fh(dir, &e->name_handle.post_op_fh3_u.handle) ?
			 NFS3ERR_SERVERFAULT : NFS3_OK;
		st = dir->st;
	} else {
		status = nfs3_obj_parent_fh(dir, &e->name_handle.post_op_fh3_u.handle);
		if (statx(fd, "..", AT_SYMLINK_NOFOLLOW, NFS3_STATX_MASK, &st))
			status = NFS3ERR_STALE;
	}
	if (status != NFS3_OK)
		return;
	e->name_handle.handle_follows = TRUE;
	e->fileid = st.stx_ino;
	nfs3_post_op(dir->e, &st, &e->name_attributes);
}

/*
 * An entry's attributes and a handle, when it can be looked at (it may be
 * gone already, or be a mount point the export does not cross: then the
 * entry goes with its name alone).
 */
static void plus_fill(struct nfs3_obj *dir, int fd, const char *name, entryplus3 *e)
{
	struct statx st;

	if (nfs3_name_is_dot(name)) {
		plus_dot(dir, fd, name, e);
		return;
	}
	if (statx(fd, name, AT_SYMLINK_NOFOLLOW, NFS3_STATX_MASK, &st))
		return;
	if (nfs3_node_bind(dir, name, &st, &e->name_handle.post_op_fh3_u.handle) != NFS3_OK)
		return;
	e->name_handle.handle_follows = TRUE;
	nfs3_post_op(dir->e, &st, &e->name_attributes);
}

/* An entryplus3 for @d, or NULL when memory is short. */
static entryplus3 *plus_entry(struct nfs3_obj *dir, int fd, const struct dirent *d)
{
	entryplus3 *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->name = strdup(d->d_name);
	if (!e->name) {
		free(e);
		return NULL;
	}
	e->fileid = entry_fileid(dir, d);
	e->cookie = (cookie3)d->d_off;
	plus_fill(dir, fd, d->d_name, e);
	return e;
}

static nfsstat3 list_plus(struct nfs3_obj *dir, struct dir_reader *r, struct plus_budget *b,
			  entryplus3 **head)
{
	entryplus3 **tail = head;
	const struct dirent *d;
	unsigned int n = 0;
	int err = 0;

	while (n < ENTRIES_MAX && (d = reader_next(r, &err))) {
		size_t dirlen = xdr_entry_len(d->d_name);
		size_t len = dirlen + XDR_POST_OP_ATTR + XDR_POST_OP_FH;
		entryplus3 *e;

		/* Counted as if attributes and handle come: they usually do. */
		if (dirlen > b->dir || len > b->max)
			break;
		e = plus_entry(dir, r->fd, d);
		if (!e)
			return NFS3ERR_SERVERFAULT;
		*tail = e;
		tail = &e->nextentry;
		b->dir -= dirlen;
		b->max -= len;
		n++;
	}
	if (err)
		return nfs3_errno(-err);
	return n || r->eof ? NFS3_OK : NFS3ERR_TOOSMALL;
}

static nfsstat3 readdirplus(struct nfs3_obj *dir, const READDIRPLUS3args *a,
			    READDIRPLUS3resok *ok)
{
	u_int maxcount = a->maxcount < NFS3_MAXDIR ? a->maxcount : NFS3_MAXDIR;
	struct plus_budget b = { .dir = a->dircount };
	struct dir_reader reader = { .fd = -1 };
	nfsstat3 status;

	if (maxcount <= XDR_RESOK_FIXED || !a->dircount)
		return NFS3ERR_TOOSMALL;
	b.max = maxcount - XDR_RESOK_FIXED;
	status = reader_open(dir, a->cookie, &reader);
	if (status != NFS3_OK)
		return status;
	status = list_plus(dir, &reader, &b, &ok->reply.entries);
	ok->reply.eof = reader.eof;
	reader_close(&reader);
	return status;
}

bool_t nfsproc3_readdirplus_3_svc(READDIRPLUS3args *a, READDIRPLUS3res *r,
				  struct svc_req *rq)
{
	READDIRPLUS3resok *ok = &r->READDIRPLUS3res_u.resok;
	struct nfs3_obj dir;

	memset(r, 0, sizeof(*r));
	r->status = nfs3_obj_get(nfs3_service_export, &a->dir, &dir);
	if (r->status != NFS3_OK)
		return TRUE;
	if (!S_ISDIR(dir.st.stx_mode)) {
		r->status = NFS3ERR_NOTDIR;
	} else if (!nfs3_caller_enter(rq)) {
		r->status = NFS3ERR_ACCES;
	} else {
		/* As the caller throughout: reading needs read, the entries' attributes search. */
		r->status = readdirplus(&dir, a, ok);
		nfs3_caller_leave();
	}
	if (r->status != NFS3_OK) {
		xdr_free((xdrproc_t)xdr_READDIRPLUS3resok, (char *)ok);
		memset(ok, 0, sizeof(*ok));
	}
	nfs3_post_op_obj(&dir, &ok->dir_attributes);
	nfs3_obj_put(&dir);
	return TRUE;
}
