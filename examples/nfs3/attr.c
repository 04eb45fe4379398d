/* SPDX-License-Identifier: MIT */
/* Attributes (attr.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "attr.h"

static ftype3 ftype_of(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return NF3REG;
	case S_IFDIR:
		return NF3DIR;
	case S_IFBLK:
		return NF3BLK;
	case S_IFCHR:
		return NF3CHR;
	case S_IFLNK:
		return NF3LNK;
	case S_IFSOCK:
		return NF3SOCK;
	default:
		return NF3FIFO;
	}
}

/* nfstime3 holds unsigned 32-bit seconds: times outside 1970..2106 are clamped. */
static void nfstime_of(const struct statx_timestamp *ts, nfstime3 *out)
{
	if (ts->tv_sec < 0)
		out->seconds = 0;
	else if (ts->tv_sec > UINT32_MAX)
		out->seconds = UINT32_MAX;
	else
		out->seconds = (uint32)ts->tv_sec;
	out->nseconds = ts->tv_nsec;
}

void nfs3_fattr(const struct nfs3_export *e, const struct statx *st, fattr3 *out)
{
	memset(out, 0, sizeof(*out));
	out->type = ftype_of(st->stx_mode);
	out->mode = st->stx_mode & 07777;
	out->nlink = st->stx_nlink;
	out->uid = st->stx_uid;
	out->gid = st->stx_gid;
	out->size = st->stx_size;
	out->used = st->stx_blocks * 512;
	out->rdev.specdata1 = st->stx_rdev_major;
	out->rdev.specdata2 = st->stx_rdev_minor;
	out->fsid = nfs3_export_fsid(e);
	out->fileid = st->stx_ino;
	nfstime_of(&st->stx_atime, &out->atime);
	nfstime_of(&st->stx_mtime, &out->mtime);
	nfstime_of(&st->stx_ctime, &out->ctime);
}

void nfs3_post_op(const struct nfs3_export *e, const struct statx *st, post_op_attr *out)
{
	memset(out, 0, sizeof(*out));
	if (!st)
		return;
	out->attributes_follow = TRUE;
	nfs3_fattr(e, st, &out->post_op_attr_u.attributes);
}

void nfs3_post_op_obj(struct nfs3_obj *obj, post_op_attr *out)
{
	nfs3_post_op(obj->e, nfs3_obj_restat(obj) ? NULL : &obj->st, out);
}

void nfs3_pre_op(const struct statx *st, pre_op_attr *out)
{
	memset(out, 0, sizeof(*out));
	if (!st)
		return;
	out->attributes_follow = TRUE;
	out->pre_op_attr_u.attributes.size = st->stx_size;
	nfstime_of(&st->stx_mtime, &out->pre_op_attr_u.attributes.mtime);
	nfstime_of(&st->stx_ctime, &out->pre_op_attr_u.attributes.ctime);
}

void nfs3_wcc(const struct statx *before, struct nfs3_obj *obj, wcc_data *out)
{
	nfs3_pre_op(before, &out->before);
	nfs3_post_op_obj(obj, &out->after);
}

bool nfs3_ctime_is(const struct statx *st, const nfstime3 *t)
{
	nfstime3 now;

	nfstime_of(&st->stx_ctime, &now);
	return now.seconds == t->seconds && now.nseconds == t->nseconds;
}

static int time_of(time_how how, const nfstime3 *t, struct timespec *out)
{
	switch (how) {
	case DONT_CHANGE:
		out->tv_nsec = UTIME_OMIT;
		return 0;
	case SET_TO_SERVER_TIME:
		out->tv_nsec = UTIME_NOW;
		return 0;
	case SET_TO_CLIENT_TIME:
		if (t->nseconds >= 1000000000u)
			return -EINVAL;
		out->tv_sec = t->seconds;
		out->tv_nsec = t->nseconds;
		return 0;
	}
	return -EINVAL;
}

/* The name, under nfs3_export_proc_fd(), of @fd's inode itself, never a link it names. */
static void fd_name(int fd, char *buf, size_t len)
{
	snprintf(buf, len, "self/fd/%d", fd);
}

/* truncate(2) by the inode resolved; the open checks write permission as truncate would. */
static int truncate_at(int dirfd, const char *name, uint64_t size)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC);
	int rc = 0;

	if (size > INT64_MAX)
		return -EFBIG;
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size))
		rc = -errno;
	close(fd);
	return rc;
}

/* Mode and size: by the inode resolved, so that a name swapped meanwhile is not followed. */
static int set_mode_size(struct nfs3_obj *obj, const sattr3 *sa)
{
	int proc = nfs3_export_proc_fd(obj->e);
	mode_t type = obj->st.stx_mode & S_IFMT;
	char name[32];
	int fd, rc = 0;

	if (sa->size.set_it && type != S_IFREG)
		return type == S_IFDIR ? -EISDIR : -EINVAL;
	if (!sa->mode.set_it && !sa->size.set_it)
		return 0;
	if (type == S_IFLNK)
		return 0;
	fd = nfs3_obj_open(obj, O_PATH);
	if (fd < 0)
		return fd;
	fd_name(fd, name, sizeof(name));
	if (sa->mode.set_it && fchmodat(proc, name, sa->mode.set_mode3_u.mode & 07777, 0))
		rc = -errno;
	if (!rc && sa->size.set_it)
		rc = truncate_at(proc, name, sa->size.set_size3_u.size);
	close(fd);
	return rc;
}

static int set_times(const struct nfs3_obj *obj, const sattr3 *sa)
{
	struct timespec ts[2];
	int rc;

	if (sa->atime.set_it == DONT_CHANGE && sa->mtime.set_it == DONT_CHANGE)
		return 0;
	rc = time_of(sa->atime.set_it, &sa->atime.set_atime_u.atime, &ts[0]);
	if (!rc)
		rc = time_of(sa->mtime.set_it, &sa->mtime.set_mtime_u.mtime, &ts[1]);
	if (rc)
		return rc;
	if (utimensat(obj->dirfd, obj->name, ts, AT_SYMLINK_NOFOLLOW))
		return -errno;
	return 0;
}

static int set_owner(const struct nfs3_obj *obj, const sattr3 *sa)
{
	uid_t uid = sa->uid.set_it ? sa->uid.set_uid3_u.uid : (uid_t)-1;
	gid_t gid = sa->gid.set_it ? sa->gid.set_gid3_u.gid : (gid_t)-1;

	if (!sa->uid.set_it && !sa->gid.set_it)
		return 0;
	if (fchownat(obj->dirfd, obj->name, uid, gid, AT_SYMLINK_NOFOLLOW))
		return -errno;
	return 0;
}

nfsstat3 nfs3_sattr_apply(struct nfs3_obj *obj, const sattr3 *sa)
{
	int rc;

	if (sa->size.set_it && sa->size.set_size3_u.size > INT64_MAX)
		return NFS3ERR_FBIG;
	rc = set_owner(obj, sa);
	if (!rc)
		rc = set_mode_size(obj, sa);
	if (!rc)
		rc = set_times(obj, sa);
	nfs3_obj_restat(obj);
	return nfs3_errno(-rc);
}
