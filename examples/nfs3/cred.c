/* SPDX-License-Identifier: MIT */
/* Acting as the caller: per-thread file-system identities (cred.h). */
#include <errno.h>
#include <stdio.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cred.h"

#define SAVED_GROUPS_MAX 64

static bool cred_switching;
static uid_t saved_uid;
static gid_t saved_gid;
static gid_t saved_groups[SAVED_GROUPS_MAX];
static int saved_ngroups;

void nfs3_cred_init(void)
{
	cred_switching = geteuid() == 0;
	if (!cred_switching)
		return;
	saved_uid = geteuid();
	saved_gid = getegid();
	saved_ngroups = getgroups(SAVED_GROUPS_MAX, saved_groups);
	if (saved_ngroups < 0)
		saved_ngroups = 0;
}

bool nfs3_cred_switching(void)
{
	return cred_switching;
}

void nfs3_cred_of(const struct svc_req *rq, struct nfs3_cred *c)
{
	const struct authunix_parms *p = (const struct authunix_parms *)rq->rq_clntcred;
	unsigned int i;

	c->uid = NFS3_NOBODY;
	c->gid = NFS3_NOBODY;
	c->ngroups = 0;
	if (rq->rq_cred.oa_flavor != AUTH_SYS || !p)
		return;
	c->uid = p->aup_uid;
	c->gid = p->aup_gid;
	/* libtirpc's decoder bounds aup_len by NGRPS; so does this. */
	for (i = 0; i < p->aup_len && i < NGRPS && p->aup_gids; i++)
		c->groups[c->ngroups++] = p->aup_gids[i];
}

/* setgroups(2) for this thread only (see cred.h). */
static int thread_setgroups(size_t n, const gid_t *groups)
{
	return (int)syscall(SYS_setgroups, n, groups);
}

int nfs3_cred_enter(const struct nfs3_cred *c)
{
	if (!cred_switching)
		return 0;
	if (thread_setgroups(c->ngroups, c->groups))
		return -EPERM;
	setfsgid(c->gid);
	setfsuid(c->uid);
	/* Both return the old value whatever happens: ask again to know. */
	if ((uid_t)setfsuid((uid_t)-1) != c->uid || (gid_t)setfsgid((gid_t)-1) != c->gid) {
		nfs3_cred_leave();
		return -EPERM;
	}
	return 0;
}

void nfs3_cred_leave(void)
{
	if (!cred_switching)
		return;
	setfsuid(saved_uid);
	setfsgid(saved_gid);
	if (thread_setgroups((size_t)saved_ngroups, saved_groups))
		fprintf(stderr, "nfs3: cannot restore the server's groups\n");
}
