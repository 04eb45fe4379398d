/* SPDX-License-Identifier: MIT */
/*
 * What the service routines share: the export being served and the limits
 * the server announces. rpcgen's dispatchers (nfs_program_3,
 * mount_program_3) call the routines with no context of their own, so the
 * export is a global, set before the first call is served.
 */
#ifndef NFS3_SERVICE_H
#define NFS3_SERVICE_H

#include <stdbool.h>

#include <rpc/rpc.h>

#include "export.h"
#include "nfs3_prot.h"

/* The largest READ and WRITE: the Write chunk rpcrdma_ulb_nfs3() offers for READ data. */
#define NFS3_MAXDATA (1u << 20)
/* The largest READDIR and READDIRPLUS reply the server builds. */
#define NFS3_MAXDIR (1u << 20)
/* The READDIR size it suggests (FSINFO dtpref). */
#define NFS3_DTPREF (64u << 10)

extern struct nfs3_export *nfs3_service_export;

/* rpcgen's dispatchers (nfs3_prot_svc.c, mount_svc.c), which its headers do not declare. */
void nfs_program_3(struct svc_req *rqstp, SVCXPRT *transp);
void mount_program_3(struct svc_req *rqstp, SVCXPRT *transp);

/*
 * Act as the caller for the file-system calls that follow (cred.h), until
 * nfs3_caller_leave(). False when that cannot be done: the procedure then
 * answers NFS3ERR_ACCES rather than run as the server.
 */
bool nfs3_caller_enter(struct svc_req *rq);
void nfs3_caller_leave(void);

/* nfs3_obj_open() with the caller's permissions; -EACCES if they cannot be taken on. */
int nfs3_open_as_caller(const struct nfs3_obj *obj, int flags, struct svc_req *rq);

/* fsync() or fdatasync() as WRITE's stable_how asks; 0 or -errno. */
int nfs3_sync(int fd, stable_how how);

#endif /* NFS3_SERVICE_H */
