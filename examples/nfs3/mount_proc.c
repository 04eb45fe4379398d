/* SPDX-License-Identifier: MIT */
/*
 * The MOUNT procedures (RFC 1813 Appendix I): MNT hands out the root
 * handle of the one export, for its path exactly; EXPORT lists it, open to
 * every host; UMNT and UMNTALL have nothing to undo, and DUMP lists no
 * mounts, since the server keeps no record of them (RFC 1813: the list is
 * advisory).
 */
#include <stdlib.h>
#include <string.h>

#include "mount.h"
#include "service.h"

/* The path asked for, without trailing slashes, is the export's. */
static bool is_export_path(const char *path, const char *export)
{
	size_t len = strnlen(path, MNTPATHLEN + 1), elen = strlen(export);

	while (len > 1 && path[len - 1] == '/')
		len--;
	return len == elen && memcmp(path, export, len) == 0;
}

bool_t mountproc3_null_3_svc(void *argp, void *result, struct svc_req *rq)
{
	return TRUE;
}

bool_t mountproc3_mnt_3_svc(dirpath *path, mountres3 *r, struct svc_req *rq)
{
	mountres3_ok *ok = &r->mountres3_u.mountinfo;
	struct nfs3_export *e = nfs3_service_export;
	nfs_fh3 root;
	int *flavors;

	memset(r, 0, sizeof(*r));
	if (!*path || !is_export_path(*path, nfs3_export_path(e))) {
		r->fhs_status = MNT3ERR_ACCES;
		return TRUE;
	}
	flavors = malloc(2 * sizeof(*flavors));
	if (!flavors || nfs3_export_root_fh(e, &root)) {
		free(flavors);
		r->fhs_status = MNT3ERR_SERVERFAULT;
		return TRUE;
	}
	ok->fhandle.fhandle3_len = root.data.data_len;
	ok->fhandle.fhandle3_val = root.data.data_val;
	/* AUTH_SYS first: the identity the server acts as (cred.h). */
	flavors[0] = AUTH_SYS;
	flavors[1] = AUTH_NONE;
	ok->auth_flavors.auth_flavors_len = 2;
	ok->auth_flavors.auth_flavors_val = flavors;
	r->fhs_status = MNT3_OK;
	return TRUE;
}

bool_t mountproc3_dump_3_svc(void *argp, mountlist *r, struct svc_req *rq)
{
	*r = NULL;
	return TRUE;
}

bool_t mountproc3_umnt_3_svc(dirpath *path, void *result, struct svc_req *rq)
{
	return TRUE;
}

bool_t mountproc3_umntall_3_svc(void *argp, void *result, struct svc_req *rq)
{
	return TRUE;
}

bool_t mountproc3_export_3_svc(void *argp, exports *r, struct svc_req *rq)
{
	exportnode *node = calloc(1, sizeof(*node));

	*r = NULL;
	if (!node)
		return TRUE;	/* an empty list: the memory to say more is missing */
	node->ex_dir = strdup(nfs3_export_path(nfs3_service_export));
	if (!node->ex_dir) {
		free(node);
		return TRUE;
	}
	*r = node;
	return TRUE;
}

int mount_program_3_freeresult(SVCXPRT *transp, xdrproc_t xdr_result, caddr_t result)
{
	xdr_free(xdr_result, result);
	return 1;
}
