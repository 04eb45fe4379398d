/* SPDX-License-Identifier: MIT */
/*
 * Whose permissions a procedure runs with.
 *
 * A server running as root takes on each caller's AUTH_SYS uid, gid and
 * groups for the file-system calls of a procedure, on the serving thread
 * alone: setfsuid(), setfsgid() and the setgroups system call, all of which
 * Linux keeps per thread (glibc's setgroups() would change every thread, so
 * the raw system call is made). The kernel then checks each access as it
 * would for that user (ACLs included) and new files belong to them.
 * AUTH_NONE is nobody (65534). AUTH_SYS root stays root, as with exports(5)'s
 * no_root_squash: the export is for trusted hosts. A server that does not
 * run as root acts as itself for every caller.
 */
#ifndef NFS3_CRED_H
#define NFS3_CRED_H

#include <stdbool.h>
#include <sys/types.h>

#include <rpc/rpc.h>

#define NFS3_NOBODY 65534

struct nfs3_cred {
	uid_t uid;
	gid_t gid;
	unsigned int ngroups;
	gid_t groups[NGRPS];
};

/* Once, before serving: whether identities are switched (running as root). */
void nfs3_cred_init(void);
/* Whether they are. */
bool nfs3_cred_switching(void);

/* The identity a call carries. */
void nfs3_cred_of(const struct svc_req *rq, struct nfs3_cred *c);

/*
 * Act as @c on this thread until nfs3_cred_leave(). Returns 0, or -EPERM
 * when the switch did not take (the procedure must not go on as root).
 */
int nfs3_cred_enter(const struct nfs3_cred *c);
void nfs3_cred_leave(void);

#endif /* NFS3_CRED_H */
