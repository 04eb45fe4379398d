/* SPDX-License-Identifier: MIT */
/* Every procedure, one test each or a few together: what it does when all is well, and its errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mount.h"
#include "nfs3_test.h"

static void stat_local(const struct tgroup *g, const char *name, struct stat *st)
{
	char path[4200];

	nfs3t_local(g, name, path, sizeof(path));
	assert_int_equal(lstat(path, st), 0);
}

static mountstat3 mnt(CLIENT *cl, const char *path, nfs_fh3 *root)
{
	dirpath dp = (dirpath)path;
	mountres3 r;

	memset(&r, 0, sizeof(r));
	assert_int_equal(mountproc3_mnt_3(&dp, &r, cl), RPC_SUCCESS);
	if (r.fhs_status == MNT3_OK) {
		mountres3_ok *ok = &r.mountres3_u.mountinfo;
		nfs_fh3 fh = { .data = { ok->fhandle.fhandle3_len, ok->fhandle.fhandle3_val } };
		u_int i;
		bool sys = false;

		for (i = 0; i < ok->auth_flavors.auth_flavors_len; i++)
			sys |= ok->auth_flavors.auth_flavors_val[i] == AUTH_SYS;
		assert_true(sys);
		assert_int_equal(nfs3c_fh_copy(root, &fh), 0);
	}
	clnt_freeres(cl, (xdrproc_t)xdr_mountres3, (caddr_t)&r);
	return r.fhs_status;
}

/* NULL of both programs; MNT of the export only; EXPORT, UMNT, UMNTALL, DUMP. */
void t_null_mount(void **state)
{
	struct tgroup *g = tgroup_of(state);
	CLIENT *cl = nfs3t_client(g, MOUNT_PROGRAM, MOUNT_V3);
	char path[NFS3T_PATH_MAX + 64], parent[NFS3T_PATH_MAX + 16];
	mountlist dump = NULL;
	exports ex = NULL;
	dirpath dp;
	nfs_fh3 root;

	assert_int_equal(nfsproc3_null_3(NULL, NULL, g->c->nfs), RPC_SUCCESS);
	assert_int_equal(mountproc3_null_3(NULL, NULL, cl), RPC_SUCCESS);
	snprintf(path, sizeof(path), "%s/", nfs3t_export);
	assert_int_equal(mnt(cl, path, &root), MNT3_OK);
	assert_true(nfs3t_fh_equal(&root, &g->c->root));
	nfs3c_fh_free(&root);
	/* Nothing but the export: not its parent, not "/", not a way round through "..". */
	snprintf(parent, sizeof(parent), "%s", nfs3t_export);
	*strrchr(parent, '/') = '\0';
	assert_int_equal(mnt(cl, parent, &root), MNT3ERR_ACCES);
	assert_int_equal(mnt(cl, "/", &root), MNT3ERR_ACCES);
	snprintf(path, sizeof(path), "%s/" BIG_DIR "/..", nfs3t_export);
	assert_int_equal(mnt(cl, path, &root), MNT3ERR_ACCES);
	assert_int_equal(mnt(cl, "", &root), MNT3ERR_ACCES);

	assert_int_equal(mountproc3_export_3(NULL, &ex, cl), RPC_SUCCESS);
	assert_non_null(ex);
	assert_string_equal(ex->ex_dir, nfs3t_export);
	assert_null(ex->ex_next);
	clnt_freeres(cl, (xdrproc_t)xdr_exports, (caddr_t)&ex);
	assert_int_equal(mountproc3_dump_3(NULL, &dump, cl), RPC_SUCCESS);
	assert_null(dump);
	dp = nfs3t_export;
	assert_int_equal(mountproc3_umnt_3(&dp, NULL, cl), RPC_SUCCESS);
	assert_int_equal(mountproc3_umntall_3(NULL, NULL, cl), RPC_SUCCESS);
	clnt_destroy(cl);
}

/* GETATTR, FSSTAT, FSINFO, PATHCONF of the root. */
void t_fs_info(void **state)
{
	struct tgroup *g = tgroup_of(state);
	CLIENT *cl = g->c->nfs;
	FSSTAT3args sa = { .fsroot = g->c->root };
	FSINFO3args ia = { .fsroot = g->c->root };
	PATHCONF3args pa = { .object = g->c->root };
	FSSTAT3res sr;
	FSINFO3res ir;
	PATHCONF3res pr;
	struct stat st;
	fattr3 attr;

	assert_int_equal(nfs3t_getattr(cl, &g->c->root, &attr), NFS3_OK);
	assert_int_equal(stat(nfs3t_export, &st), 0);
	assert_int_equal(attr.type, NF3DIR);
	assert_int_equal(attr.fileid, st.st_ino);
	assert_int_equal(attr.mode, st.st_mode & 07777);

	memset(&sr, 0, sizeof(sr));
	assert_int_equal(nfsproc3_fsstat_3(&sa, &sr, cl), RPC_SUCCESS);
	assert_int_equal(sr.status, NFS3_OK);
	assert_true(sr.FSSTAT3res_u.resok.tbytes > 0);
	assert_true(sr.FSSTAT3res_u.resok.fbytes <= sr.FSSTAT3res_u.resok.tbytes);
	assert_true(sr.FSSTAT3res_u.resok.obj_attributes.attributes_follow);

	memset(&ir, 0, sizeof(ir));
	assert_int_equal(nfsproc3_fsinfo_3(&ia, &ir, cl), RPC_SUCCESS);
	assert_int_equal(ir.status, NFS3_OK);
	assert_int_equal(ir.FSINFO3res_u.resok.rtmax, MiB);
	assert_int_equal(ir.FSINFO3res_u.resok.wtmax, MiB);
	assert_true(ir.FSINFO3res_u.resok.properties & FSF3_SYMLINK);
	assert_false(ir.FSINFO3res_u.resok.properties & FSF3_LINK);
	assert_int_equal(ir.FSINFO3res_u.resok.time_delta.nseconds, 1);

	memset(&pr, 0, sizeof(pr));
	assert_int_equal(nfsproc3_pathconf_3(&pa, &pr, cl), RPC_SUCCESS);
	assert_int_equal(pr.status, NFS3_OK);
	assert_int_equal(pr.PATHCONF3res_u.resok.name_max, 255);
	assert_true(pr.PATHCONF3res_u.resok.no_trunc);
	assert_true(pr.PATHCONF3res_u.resok.case_preserving);
}

static nfsstat3 setattr(CLIENT *cl, const nfs_fh3 *fh, const sattr3 *sa, const nfstime3 *guard)
{
	SETATTR3args a = { .object = *fh, .new_attributes = *sa };
	SETATTR3res r;

	if (guard) {
		a.guard.check = TRUE;
		a.guard.sattrguard3_u.obj_ctime = *guard;
	}
	memset(&r, 0, sizeof(r));
	assert_int_equal(nfsproc3_setattr_3(&a, &r, cl), RPC_SUCCESS);
	/* wcc_data after, whatever the answer. */
	assert_true(r.SETATTR3res_u.resok.obj_wcc.after.attributes_follow);
	clnt_freeres(cl, (xdrproc_t)xdr_SETATTR3res, (caddr_t)&r);
	return r.status;
}

/* SETATTR: mode, size, times as the client and the server say; the guard; bad requests. */
void t_setattr(void **state)
{
	struct tgroup *g = tgroup_of(state);
	CLIENT *cl = g->c->nfs;
	nfstime3 wrong = { 1, 0 };
	sattr3 sa = { 0 };
	struct stat st;
	nfs_fh3 fh;
	fattr3 attr;

	nfs3t_put_pattern(g, "sa", 100, 1);
	nfs3t_lookup(g, "sa", &fh);
	sa.mode.set_it = TRUE;
	sa.mode.set_mode3_u.mode = 0600;
	sa.size.set_it = TRUE;
	sa.size.set_size3_u.size = 1000;
	sa.atime.set_it = SET_TO_CLIENT_TIME;
	sa.atime.set_atime_u.atime = (nfstime3){ 1000000000, 500 };
	sa.mtime.set_it = SET_TO_CLIENT_TIME;
	sa.mtime.set_mtime_u.mtime = (nfstime3){ 1234567890, 0 };
	assert_int_equal(setattr(cl, &fh, &sa, NULL), NFS3_OK);
	assert_int_equal(nfs3t_getattr(cl, &fh, &attr), NFS3_OK);
	assert_int_equal(attr.mode, 0600);
	assert_int_equal(attr.size, 1000);
	assert_int_equal(attr.atime.seconds, 1000000000);
	assert_int_equal(attr.atime.nseconds, 500);
	assert_int_equal(attr.mtime.seconds, 1234567890);
	stat_local(g, "sa", &st);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_size, 1000);
	assert_int_equal(st.st_mtime, 1234567890);

	/* The guard: a ctime that is not the file's refuses the change. */
	memset(&sa, 0, sizeof(sa));
	sa.mode.set_it = TRUE;
	sa.mode.set_mode3_u.mode = 0644;
	assert_int_equal(setattr(cl, &fh, &sa, &wrong), NFS3ERR_NOT_SYNC);
	assert_int_equal(setattr(cl, &fh, &sa, &attr.ctime), NFS3_OK);
	sa.mtime.set_it = SET_TO_SERVER_TIME;
	assert_int_equal(setattr(cl, &fh, &sa, NULL), NFS3_OK);
	assert_int_equal(nfs3t_getattr(cl, &fh, &attr), NFS3_OK);
	assert_true(attr.mtime.seconds > 1234567890);

	/* A size for a directory; nanoseconds out of range. */
	memset(&sa, 0, sizeof(sa));
	sa.size.set_it = TRUE;
	assert_int_equal(setattr(cl, &g->dir, &sa, NULL), NFS3ERR_ISDIR);
	memset(&sa, 0, sizeof(sa));
	sa.mtime.set_it = SET_TO_CLIENT_TIME;
	sa.mtime.set_mtime_u.mtime = (nfstime3){ 5, 1000000000 };
	assert_int_equal(setattr(cl, &fh, &sa, NULL), NFS3ERR_INVAL);
	nfs3c_fh_free(&fh);
}

/* LOOKUP of names there and not, in a file, of "." and of bad names; ACCESS. */
void t_lookup_access(void **state)
{
	struct tgroup *g = tgroup_of(state);
	CLIENT *cl = g->c->nfs;
	const uint32_t all = ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY | ACCESS3_EXTEND |
			     ACCESS3_DELETE | ACCESS3_EXECUTE;
	char longname[300], path[4200];
	struct stat st;
	nfs_fh3 fh, dot;
	fattr3 attr;
	uint32_t got = 0;

	nfs3t_put_pattern(g, "la", 10, 2);
	assert_int_equal(nfs3t_lookup_st(cl, &g->dir, "la", &fh, &attr), NFS3_OK);
	stat_local(g, "la", &st);
	assert_int_equal(attr.type, NF3REG);
	assert_int_equal(attr.fileid, st.st_ino);
	assert_int_equal(attr.size, 10);
	assert_int_equal(nfs3t_lookup_st(cl, &g->dir, "nope", NULL, NULL), NFS3ERR_NOENT);
	assert_int_equal(nfs3t_lookup_st(cl, &fh, "x", NULL, NULL), NFS3ERR_NOTDIR);
	assert_int_equal(nfs3t_lookup_st(cl, &g->dir, ".", &dot, NULL), NFS3_OK);
	assert_true(nfs3t_fh_equal(&dot, &g->dir));
	nfs3c_fh_free(&dot);
	memset(longname, 'a', 256);
	longname[256] = '\0';
	assert_int_equal(nfs3t_lookup_st(cl, &g->dir, longname, NULL, NULL), NFS3ERR_NAMETOOLONG);
	assert_int_equal(nfs3t_lookup_st(cl, &g->dir, "", NULL, NULL), NFS3ERR_NOENT);

	/* rw- for the owner: no EXECUTE; the directory is writable, so DELETE. */
	assert_int_equal(nfs3t_access(cl, &fh, all, &got), NFS3_OK);
	assert_int_equal(got, ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXTEND | ACCESS3_DELETE);
	nfs3t_local(g, "la", path, sizeof(path));
	assert_int_equal(chmod(path, 0755), 0);
	assert_int_equal(nfs3t_access(cl, &fh, all, &got), NFS3_OK);
	assert_true(got & ACCESS3_EXECUTE);
	assert_int_equal(nfs3t_access(cl, &fh, ACCESS3_READ, &got), NFS3_OK);
	assert_int_equal(got, ACCESS3_READ);
	assert_int_equal(nfs3t_access(cl, &g->dir, all, &got), NFS3_OK);
	assert_int_equal(got, ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY | ACCESS3_EXTEND |
			      ACCESS3_DELETE);
	nfs3c_fh_free(&fh);
}

/* CREATE's three modes, and what each does with a name that exists. */
void t_create_modes(void **state)
{
	struct tgroup *g = tgroup_of(state);
	CLIENT *cl = g->c->nfs;
	nfs_fh3 h1, h2, file;
	struct stat st;
	fattr3 attr;

	assert_int_equal(nfs3t_create(cl, &g->dir, "cg", GUARDED, 0640, NULL, &file, &attr),
			 NFS3_OK);
	/* The mode asked for, not the server's umask's. */
	assert_int_equal(attr.mode, 0640);
	assert_int_equal(attr.type, NF3REG);
	assert_int_equal(nfs3t_create(cl, &g->dir, "cg", GUARDED, 0640, NULL, NULL, NULL),
			 NFS3ERR_EXIST);
	assert_int_equal(nfs3t_write_st(cl, &file, 0, "hello", 5, FILE_SYNC), NFS3_OK);
	nfs3c_fh_free(&file);
	/* UNCHECKED takes the file there, its size set to 0 as asked. */
	assert_int_equal(nfs3c_create(g->c, &g->dir, "cg", 0600, &file), 0);
	stat_local(g, "cg", &st);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	nfs3c_fh_free(&file);

	/* EXCLUSIVE: a retransmission (same verifier) succeeds with the same file; another fails. */
	assert_int_equal(nfs3t_create(cl, &g->dir, "ce", EXCLUSIVE, 0, "verf0001", &h1, NULL),
			 NFS3_OK);
	assert_int_equal(nfs3t_create(cl, &g->dir, "ce", EXCLUSIVE, 0, "verf0001", &h2, NULL),
			 NFS3_OK);
	assert_true(nfs3t_fh_equal(&h1, &h2));
	assert_int_equal(nfs3t_create(cl, &g->dir, "ce", EXCLUSIVE, 0, "verf0002", NULL, NULL),
			 NFS3ERR_EXIST);
	nfs3c_fh_free(&h1);
	nfs3c_fh_free(&h2);

	/* Names that are not to be made; a directory's name; a "directory" that is a file. */
	assert_int_equal(nfs3t_create(cl, &g->dir, ".", UNCHECKED, 0644, NULL, NULL, NULL),
			 NFS3ERR_EXIST);
	assert_int_equal(nfs3t_create(cl, &g->dir, "..", GUARDED, 0644, NULL, NULL, NULL),
			 NFS3ERR_EXIST);
	assert_int_equal(nfs3t_mkdir(cl, &g->dir, "cd", 0755, NULL), NFS3_OK);
	assert_int_equal(nfs3t_create(cl, &g->dir, "cd", UNCHECKED, 0644, NULL, NULL, NULL),
			 NFS3ERR_EXIST);
	nfs3t_lookup(g, "cg", &file);
	assert_int_equal(nfs3t_create(cl, &file, "x", UNCHECKED, 0644, NULL, NULL, NULL),
			 NFS3ERR_NOTDIR);
	nfs3c_fh_free(&file);
}

static nfsstat3 write_full(CLIENT *cl, const nfs_fh3 *fh, uint64_t offset, const void *data,
			   uint32_t len, stable_how stable, char *verf)
{
	WRITE3args a = { .file = *fh, .offset = offset, .count = len, .stable = stable };
	WRITE3res r;

	a.data.data_len = len;
	a.data.data_val = (char *)data;
	memset(&r, 0, sizeof(r));
	assert_int_equal(nfsproc3_write_3(&a, &r, cl), RPC_SUCCESS);
	if (r.status == NFS3_OK) {
		assert_int_equal(r.WRITE3res_u.resok.count, len);
		assert_int_equal(r.WRITE3res_u.resok.committed, stable);
		memcpy(verf, r.WRITE3res_u.resok.verf, NFS3_WRITEVERFSIZE);
		assert_true(r.WRITE3res_u.resok.file_wcc.before.attributes_follow);
		assert_true(r.WRITE3res_u.resok.file_wcc.after.attributes_follow);
	}
	clnt_freeres(cl, (xdrproc_t)xdr_WRITE3res, (caddr_t)&r);
	return r.status;
}

/* WRITE at each stability, COMMIT, READ back and past the end; what may not be read or written. */
void t_write_commit(void **state)
{
	struct tgroup *g = tgroup_of(state);
	struct nfs3c *c = g->c;
	unsigned char *data = malloc(9000);
	char v1[8], v2[8], path[4200];
	nfs_fh3 fh, link;
	uint32_t got;
	bool eof;

	assert_non_null(data);
	nfs3t_fill(data, 9000, 0, 3);
	assert_int_equal(nfs3c_create(c, &g->dir, "wc", 0644, &fh), 0);
	assert_int_equal(write_full(c->nfs, &fh, 0, data, 5000, UNSTABLE, v1), NFS3_OK);
	assert_int_equal(write_full(c->nfs, &fh, 5000, data + 5000, 3000, FILE_SYNC, v2), NFS3_OK);
	assert_memory_equal(v1, v2, 8);
	assert_int_equal(write_full(c->nfs, &fh, 8000, data + 8000, 1000, DATA_SYNC, v2), NFS3_OK);
	assert_int_equal(nfs3c_commit(c, &fh, v2), 0);
	assert_memory_equal(v1, v2, 8);
	nfs3t_local(g, "wc", path, sizeof(path));
	assert_true(nfs3t_file_is(path, 9000, 3));

	assert_int_equal(nfs3c_read(c, &fh, 100, 8900, c->buf, &got, &eof), 0);
	assert_int_equal(got, 8900);
	assert_true(eof);
	assert_memory_equal(c->buf, data + 100, 8900);
	assert_int_equal(nfs3c_read(c, &fh, 5000, 10, c->buf, &got, &eof), 0);
	assert_int_equal(got, 10);
	assert_false(eof);
	assert_int_equal(nfs3c_read(c, &fh, 100000, 4096, c->buf, &got, &eof), 0);
	assert_int_equal(got, 0);
	assert_true(eof);

	/* A count that is not the data's; offsets past what a file can hold. */
	{
		WRITE3args a = { .file = fh, .count = 10, .stable = UNSTABLE,
				 .data = { 5, (char *)data } };
		WRITE3res r;

		memset(&r, 0, sizeof(r));
		assert_int_equal(nfsproc3_write_3(&a, &r, c->nfs), RPC_SUCCESS);
		assert_int_equal(r.status, NFS3ERR_INVAL);
		clnt_freeres(c->nfs, (xdrproc_t)xdr_WRITE3res, (caddr_t)&r);
	}
	assert_int_equal(nfs3t_write_st(c->nfs, &fh, 1ull << 63, data, 10, UNSTABLE), NFS3ERR_FBIG);
	assert_int_equal(nfs3t_read_st(c->nfs, &fh, 1ull << 63, 10), NFS3ERR_INVAL);

	/* Directories and links hold no data. */
	assert_int_equal(nfs3t_read_st(c->nfs, &g->dir, 0, 10), NFS3ERR_ISDIR);
	assert_int_equal(nfs3t_write_st(c->nfs, &g->dir, 0, data, 10, UNSTABLE), NFS3ERR_ISDIR);
	assert_int_equal(nfs3c_commit(c, &g->dir, v2), NFS3ERR_ISDIR);
	assert_int_equal(nfs3t_symlink(c->nfs, &g->dir, "wl", "wc", &link), NFS3_OK);
	assert_int_equal(nfs3t_read_st(c->nfs, &link, 0, 10), NFS3ERR_INVAL);
	assert_int_equal(nfs3t_write_st(c->nfs, &link, 0, data, 10, UNSTABLE), NFS3ERR_INVAL);
	nfs3c_fh_free(&link);
	nfs3c_fh_free(&fh);
	free(data);
}

/* MKDIR, SYMLINK and READLINK, a long link (DDP-eligible over RDMA both ways) included. */
void t_links(void **state)
{
	struct tgroup *g = tgroup_of(state);
	CLIENT *cl = g->c->nfs;
	static char target[3001], text[4096], local[4096];
	char path[4200];
	nfs_fh3 dir, link, file;
	fattr3 attr;
	ssize_t n;

	assert_int_equal(nfs3t_mkdir(cl, &g->dir, "md", 0750, &dir), NFS3_OK);
	assert_int_equal(nfs3t_getattr(cl, &dir, &attr), NFS3_OK);
	assert_int_equal(attr.type, NF3DIR);
	assert_int_equal(attr.mode, 0750);
	assert_int_equal(nfs3t_mkdir(cl, &g->dir, "md", 0750, NULL), NFS3ERR_EXIST);
	assert_int_equal(nfs3t_mkdir(cl, &g->dir, ".", 0750, NULL), NFS3ERR_EXIST);
	assert_int_equal(nfs3t_mkdir(cl, &dir, "..", 0750, NULL), NFS3ERR_EXIST);

	assert_int_equal(nfs3t_symlink(cl, &dir, "sl", "some/where/../x", &link), NFS3_OK);
	assert_int_equal(nfs3t_readlink(cl, &link, text, sizeof(text)), NFS3_OK);
	assert_string_equal(text, "some/where/../x");
	assert_int_equal(nfs3t_getattr(cl, &link, &attr), NFS3_OK);
	assert_int_equal(attr.type, NF3LNK);
	assert_int_equal(attr.size, strlen("some/where/../x"));
	assert_int_equal(nfs3t_symlink(cl, &dir, "sl", "other", NULL), NFS3ERR_EXIST);
	nfs3c_fh_free(&link);

	memset(target, 'p', sizeof(target) - 1);
	target[sizeof(target) - 1] = '\0';
	assert_int_equal(nfs3t_symlink(cl, &dir, "long", target, &link), NFS3_OK);
	assert_int_equal(nfs3t_readlink(cl, &link, text, sizeof(text)), NFS3_OK);
	assert_string_equal(text, target);
	nfs3t_local(g, "md/long", path, sizeof(path));
	n = readlink(path, local, sizeof(local) - 1);
	assert_int_equal(n, (ssize_t)strlen(target));

	/* READLINK of what is not a link. */
	nfs3t_put_pattern(g, "lf", 1, 4);
	nfs3t_lookup(g, "lf", &file);
	assert_int_equal(nfs3t_readlink(cl, &file, text, sizeof(text)), NFS3ERR_INVAL);
	assert_int_equal(nfs3t_readlink(cl, &dir, text, sizeof(text)), NFS3ERR_INVAL);
	nfs3c_fh_free(&file);
	nfs3c_fh_free(&link);
	nfs3c_fh_free(&dir);
}

/* REMOVE, RMDIR, RENAME: what their handles become; what each refuses. */
void t_remove_rename(void **state)
{
	struct tgroup *g = tgroup_of(state);
	CLIENT *cl = g->c->nfs;
	nfs_fh3 f, d, child, b;
	fattr3 before, after;

	nfs3t_put_pattern(g, "r1", 10, 5);
	nfs3t_lookup(g, "r1", &f);
	assert_int_equal(nfs3t_remove(cl, &g->dir, "r1"), NFS3_OK);
	assert_int_equal(nfs3t_getattr(cl, &f, NULL), NFS3ERR_STALE);
	assert_int_equal(nfs3t_remove(cl, &g->dir, "r1"), NFS3ERR_NOENT);
	nfs3c_fh_free(&f);

	assert_int_equal(nfs3t_mkdir(cl, &g->dir, "rd", 0755, &d), NFS3_OK);
	assert_int_equal(nfs3t_remove(cl, &g->dir, "rd"), NFS3ERR_ISDIR);
	nfs3t_put_pattern(g, "rf", 10, 6);
	assert_int_equal(nfs3t_rmdir(cl, &g->dir, "rf"), NFS3ERR_NOTDIR);
	assert_int_equal(nfs3t_create(cl, &d, "child", GUARDED, 0644, NULL, &child, NULL), NFS3_OK);
	assert_int_equal(nfs3t_rmdir(cl, &g->dir, "rd"), NFS3ERR_NOTEMPTY);
	assert_int_equal(nfs3t_rmdir(cl, &d, "."), NFS3ERR_INVAL);
	assert_int_equal(nfs3t_rmdir(cl, &d, ".."), NFS3ERR_EXIST);
	assert_int_equal(nfs3t_remove(cl, &d, "."), NFS3ERR_INVAL);

	/* A renamed file keeps its handle; the old name is gone. */
	nfs3t_lookup(g, "rf", &f);
	assert_int_equal(nfs3t_getattr(cl, &f, &before), NFS3_OK);
	assert_int_equal(nfs3t_rename(cl, &g->dir, "rf", &g->dir, "rf2"), NFS3_OK);
	assert_int_equal(nfs3t_getattr(cl, &f, &after), NFS3_OK);
	assert_int_equal(after.fileid, before.fileid);
	assert_int_equal(nfs3t_lookup_st(cl, &g->dir, "rf", NULL, NULL), NFS3ERR_NOENT);
	assert_int_equal(nfs3t_lookup_st(cl, &g->dir, "rf2", NULL, &after), NFS3_OK);
	assert_int_equal(after.fileid, before.fileid);

	/* A renamed directory: the handles below it still work. */
	assert_int_equal(nfs3t_rename(cl, &g->dir, "rd", &g->dir, "rd2"), NFS3_OK);
	assert_int_equal(nfs3t_getattr(cl, &child, NULL), NFS3_OK);
	assert_int_equal(nfs3t_getattr(cl, &d, NULL), NFS3_OK);
	/* Into itself, or with dot names: refused. */
	assert_int_equal(nfs3t_rename(cl, &g->dir, "rd2", &d, "inside"), NFS3ERR_INVAL);
	assert_int_equal(nfs3t_rename(cl, &g->dir, ".", &d, "dot"), NFS3ERR_INVAL);
	assert_int_equal(nfs3t_rename(cl, &g->dir, "rf2", &d, ".."), NFS3ERR_INVAL);
	/* Across directories, and over a file: the file replaced is stale. */
	nfs3t_put_pattern(g, "rb", 10, 7);
	nfs3t_lookup(g, "rb", &b);
	assert_int_equal(nfs3t_rename(cl, &g->dir, "rf2", &d, "moved"), NFS3_OK);
	assert_int_equal(nfs3t_rename(cl, &d, "moved", &g->dir, "rb"), NFS3_OK);
	assert_int_equal(nfs3t_getattr(cl, &b, NULL), NFS3ERR_STALE);
	assert_int_equal(nfs3t_getattr(cl, &f, &after), NFS3_OK);
	assert_int_equal(after.fileid, before.fileid);
	assert_int_equal(nfs3t_rename(cl, &g->dir, "nothing", &g->dir, "x"), NFS3ERR_NOENT);

	assert_int_equal(nfs3t_remove(cl, &d, "child"), NFS3_OK);
	assert_int_equal(nfs3t_rmdir(cl, &g->dir, "rd2"), NFS3_OK);
	assert_int_equal(nfs3t_getattr(cl, &d, NULL), NFS3ERR_STALE);
	assert_int_equal(nfs3t_getattr(cl, &child, NULL), NFS3ERR_STALE);
	nfs3c_fh_free(&b);
	nfs3c_fh_free(&f);
	nfs3c_fh_free(&child);
	nfs3c_fh_free(&d);
}

/* One READDIR reply's names into @seen (bits by name), its last cookie in *@cookie. */
static bool readdir_once(CLIENT *cl, const nfs_fh3 *dir, uint32_t count, cookie3 *cookie,
			 unsigned int *seen, unsigned int *entries)
{
	READDIR3args a = { .dir = *dir, .cookie = *cookie, .count = count };
	READDIR3res r;
	const entry3 *e;
	bool eof;

	memset(&r, 0, sizeof(r));
	assert_int_equal(nfsproc3_readdir_3(&a, &r, cl), RPC_SUCCESS);
	assert_int_equal(r.status, NFS3_OK);
	for (e = r.READDIR3res_u.resok.reply.entries; e; e = e->nextentry) {
		(*entries)++;
		if (strcmp(e->name, ".") == 0)
			*seen |= 1u << 5;
		else if (strcmp(e->name, "..") == 0)
			*seen |= 1u << 6;
		else if (e->name[0] == 'e' && e->name[1] >= '0' && e->name[1] <= '4')
			*seen |= 1u << (e->name[1] - '0');
		*cookie = e->cookie;
	}
	eof = r.READDIR3res_u.resok.reply.eof;
	clnt_freeres(cl, (xdrproc_t)xdr_READDIR3res, (caddr_t)&r);
	return eof;
}

/* READDIR in small replies: every name once, "." and ".." too; its errors. */
void t_readdir(void **state)
{
	struct tgroup *g = tgroup_of(state);
	CLIENT *cl = g->c->nfs;
	unsigned int seen = 0, entries = 0, calls;
	cookie3 cookie = 0;
	nfs_fh3 dir, file;
	char name[8];
	int i;

	assert_int_equal(nfs3t_mkdir(cl, &g->dir, "ls", 0755, &dir), NFS3_OK);
	for (i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "e%d", i);
		assert_int_equal(nfs3t_create(cl, &dir, name, GUARDED, 0644, NULL, NULL, NULL),
				 NFS3_OK);
	}
	for (calls = 0; calls < 100; calls++)
		if (readdir_once(cl, &dir, 150, &cookie, &seen, &entries))
			break;
	assert_true(calls > 0);
	assert_int_equal(seen, 0x7f);
	assert_int_equal(entries, 7);

	assert_int_equal(nfs3t_create(cl, &dir, "e0", UNCHECKED, 0644, NULL, &file, NULL), NFS3_OK);
	assert_int_equal(nfs3t_readdir_st(cl, &file, 4096), NFS3ERR_NOTDIR);
	assert_int_equal(nfs3t_readdirplus_st(cl, &file, 4096), NFS3ERR_NOTDIR);
	assert_int_equal(nfs3t_readdir_st(cl, &dir, 50), NFS3ERR_TOOSMALL);
	assert_int_equal(nfs3t_readdirplus_st(cl, &dir, 50), NFS3ERR_TOOSMALL);
	nfs3c_fh_free(&file);
	nfs3c_fh_free(&dir);
}

/* MKNOD and LINK are not done; an unknown procedure is PROC_UNAVAIL. */
void t_notsupp(void **state)
{
	struct tgroup *g = tgroup_of(state);
	CLIENT *cl = g->c->nfs;
	struct timeval tv = { 10, 0 };
	MKNOD3args ma = { .where = { .dir = g->dir, .name = "fifo" } };
	LINK3args la = { .file = g->dir, .link = { .dir = g->dir, .name = "ln" } };
	MKNOD3res mr;
	LINK3res lr;

	ma.what.type = NF3FIFO;
	memset(&mr, 0, sizeof(mr));
	assert_int_equal(nfsproc3_mknod_3(&ma, &mr, cl), RPC_SUCCESS);
	assert_int_equal(mr.status, NFS3ERR_NOTSUPP);
	assert_true(mr.MKNOD3res_u.resfail.dir_wcc.after.attributes_follow);
	clnt_freeres(cl, (xdrproc_t)xdr_MKNOD3res, (caddr_t)&mr);
	memset(&lr, 0, sizeof(lr));
	assert_int_equal(nfsproc3_link_3(&la, &lr, cl), RPC_SUCCESS);
	assert_int_equal(lr.status, NFS3ERR_NOTSUPP);
	assert_true(lr.LINK3res_u.resfail.file_attributes.attributes_follow);
	clnt_freeres(cl, (xdrproc_t)xdr_LINK3res, (caddr_t)&lr);
	assert_int_equal(clnt_call(cl, 22, (xdrproc_t)(void (*)(void))xdr_void, NULL,
				   (xdrproc_t)(void (*)(void))xdr_void, NULL, tv),
			 RPC_PROCUNAVAIL);
}
