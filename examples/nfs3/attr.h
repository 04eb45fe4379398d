/* SPDX-License-Identifier: MIT */
/* Attributes: statx() to fattr3 and its kin, and sattr3 applied to a file. */
#ifndef NFS3_ATTR_H
#define NFS3_ATTR_H

#include "export.h"
#include "nfs3_prot.h"

/* fattr3 of @st, an object of @e. */
void nfs3_fattr(const struct nfs3_export *e, const struct statx *st, fattr3 *out);

/* post_op_attr of @st; attributes_follow FALSE when @st is NULL. */
void nfs3_post_op(const struct nfs3_export *e, const struct statx *st, post_op_attr *out);

/* post_op_attr of @obj as it is now (attributes_follow FALSE if that cannot be had). */
void nfs3_post_op_obj(struct nfs3_obj *obj, post_op_attr *out);

/* pre_op_attr of @st. */
void nfs3_pre_op(const struct statx *st, pre_op_attr *out);

/* wcc_data: @before (NULL: none) and @obj as it is now. */
void nfs3_wcc(const struct statx *before, struct nfs3_obj *obj, wcc_data *out);

/* Whether @t is @st's ctime (SETATTR's guard). */
bool nfs3_ctime_is(const struct statx *st, const nfstime3 *t);

/**
 * nfs3_sattr_apply - set what @sa asks on @obj
 * @obj: the object; its attributes are refreshed
 * @sa: the attributes to set
 *
 * In the order owner, mode, size, times, so that a chown does not clear the
 * set-id bits just set. With the caller's identity in force the kernel
 * checks each change. A symbolic link's mode is left alone (Linux has
 * none), a size is only set on a regular file. Returns NFS3_OK or the
 * first failure.
 */
nfsstat3 nfs3_sattr_apply(struct nfs3_obj *obj, const sattr3 *sa);

#endif /* NFS3_ATTR_H */
