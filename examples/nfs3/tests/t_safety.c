/* SPDX-License-Identifier: MIT */
/*
 * Errors and safety: the error codes a client must see; permissions as
 * the AUTH_SYS caller; nothing outside the export through "..", symbolic
 * links, names with slashes or forged handles.
 *
 * Outside the export the tests keep a directory of their own ("outside",
 * beside it, with a file in it) that links point at, so that a server bug
 * would show on it and harm nothing else.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nfs3_test.h"

/* Byte offsets in a handle (fh.h). */
#define FH_INSTANCE 4
#define FH_NODE 8
#define FH_MAC 24

/* The directory outside the export, made once. */
static void outside(char *dir, size_t len, char *file, size_t flen)
{
	char parent[NFS3T_PATH_MAX + 16];
	int fd;

	snprintf(parent, sizeof(parent), "%s", nfs3t_export);
	*strrchr(parent, '/') = '\0';
	snprintf(dir, len, "%s/outside", parent);
	snprintf(file, flen, "%s/secret", dir);
	if (mkdir(dir, 0755) && errno != EEXIST)
		fail_msg("mkdir %s: %s", dir, strerror(errno));
	chmod(dir, 0755);
	fd = open(file, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	close(fd);
}

/* The errors RFC 1813 names for the common mistakes, each once. */
void t_errors(void **state)
{
	struct tgroup *g = tgroup_of(state);
	CLIENT *cl = g->c->nfs;
	nfs_fh3 dir, file;

	assert_int_equal(nfs3t_mkdir(cl, &g->dir, "err", 0755, &dir), NFS3_OK);
	assert_int_equal(nfs3t_create(cl, &dir, "f", GUARDED, 0644, NULL, &file, NULL), NFS3_OK);
	assert_int_equal(nfs3t_lookup_st(cl, &dir, "missing", NULL, NULL), NFS3ERR_NOENT);
	assert_int_equal(nfs3t_mkdir(cl, &g->dir, "err", 0755, NULL), NFS3ERR_EXIST);
	assert_int_equal(nfs3t_lookup_st(cl, &file, "f", NULL, NULL), NFS3ERR_NOTDIR);
	assert_int_equal(nfs3t_read_st(cl, &dir, 0, 100), NFS3ERR_ISDIR);
	assert_int_equal(nfs3t_rmdir(cl, &g->dir, "err"), NFS3ERR_NOTEMPTY);
	assert_int_equal(nfs3t_remove(cl, &dir, "f"), NFS3_OK);
	assert_int_equal(nfs3t_getattr(cl, &file, NULL), NFS3ERR_STALE);
	assert_int_equal(nfs3t_read_st(cl, &file, 0, 100), NFS3ERR_STALE);
	nfs3c_fh_free(&file);
	nfs3c_fh_free(&dir);
}

/*
 * NFS3ERR_ACCES. A server running as root acts as the AUTH_SYS caller, so
 * OTHER_UID meets the modes of root's files; one that does not run as root
 * acts as itself for everyone, and a mode-000 file refuses even its owner:
 * the first half holds either way, the second needs root.
 */
void t_acces(void **state)
{
	struct tgroup *g = tgroup_of(state);
	struct nfs3c *other = nfs3t_open_as(g, OTHER_UID, OTHER_GID);
	unsigned char data[16] = { 0 };
	char path[4200];
	nfs_fh3 secret, priv, pub, shared, mine;
	struct stat st;
	uint32_t got = 1;
	uint32_t gotn;
	bool eof;

	nfs3t_put_pattern(g, "secret", 100, 8);
	nfs3t_lookup(g, "secret", &secret);
	assert_int_equal(nfs3t_setattr_mode(g->c->nfs, &secret, 0), NFS3_OK);
	assert_int_equal(nfs3c_read(other, &secret, 0, 100, other->buf, &gotn, &eof),
			 NFS3ERR_ACCES);
	assert_int_equal(nfs3t_write_st(other->nfs, &secret, 0, data, sizeof(data), FILE_SYNC),
			 NFS3ERR_ACCES);
	assert_int_equal(nfs3t_access(other->nfs, &secret, ACCESS3_READ | ACCESS3_MODIFY, &got),
			 NFS3_OK);
	assert_int_equal(got, 0);
	if (geteuid() != 0) {
		print_message("not root: the server acts as itself, uid-based checks skipped\n");
		goto out;
	}
	/* Root's directory, 0700: OTHER_UID may neither look in nor create. */
	assert_int_equal(nfs3t_mkdir(g->c->nfs, &g->dir, "private", 0700, &priv), NFS3_OK);
	assert_int_equal(nfs3t_create(g->c->nfs, &priv, "x", GUARDED, 0644, NULL, NULL, NULL),
			 NFS3_OK);
	assert_int_equal(nfs3t_lookup_st(other->nfs, &priv, "x", NULL, NULL), NFS3ERR_ACCES);
	assert_int_equal(nfs3t_create(other->nfs, &priv, "y", GUARDED, 0644, NULL, NULL, NULL),
			 NFS3ERR_ACCES);
	assert_int_equal(nfs3t_readdir_st(other->nfs, &priv, 4096), NFS3ERR_ACCES);
	/* Root's file, 0644: readable, not writable, not chmod-able. */
	nfs3t_put_pattern(g, "pub", 100, 9);
	nfs3t_lookup(g, "pub", &pub);
	assert_int_equal(nfs3c_read(other, &pub, 0, 100, other->buf, &gotn, &eof), 0);
	assert_int_equal(gotn, 100);
	assert_int_equal(nfs3t_write_st(other->nfs, &pub, 0, data, sizeof(data), FILE_SYNC),
			 NFS3ERR_ACCES);
	assert_int_equal(nfs3t_setattr_mode(other->nfs, &pub, 0666), NFS3ERR_PERM);
	/* What OTHER_UID makes is theirs. */
	assert_int_equal(nfs3t_mkdir(g->c->nfs, &g->dir, "shared", 0777, &shared), NFS3_OK);
	assert_int_equal(nfs3t_create(other->nfs, &shared, "mine", GUARDED, 0600, NULL, &mine,
				      NULL), NFS3_OK);
	nfs3t_local(g, "shared/mine", path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_uid, OTHER_UID);
	assert_int_equal(st.st_gid, OTHER_GID);
	nfs3c_fh_free(&mine);
	nfs3c_fh_free(&shared);
	nfs3c_fh_free(&pub);
	nfs3c_fh_free(&priv);
out:
	nfs3c_fh_free(&secret);
	nfs3c_close(other);
}

/* The fileid READDIR gives the root's "..". */
static fileid3 root_dotdot_fileid(CLIENT *cl, const nfs_fh3 *root)
{
	READDIR3args a = { .dir = *root, .count = 8192 };
	fileid3 id = 0;
	READDIR3res r;
	const entry3 *e;

	memset(&r, 0, sizeof(r));
	assert_int_equal(nfsproc3_readdir_3(&a, &r, cl), RPC_SUCCESS);
	assert_int_equal(r.status, NFS3_OK);
	for (e = r.READDIR3res_u.resok.reply.entries; e; e = e->nextentry)
		if (strcmp(e->name, "..") == 0)
			id = e->fileid;
	clnt_freeres(cl, (xdrproc_t)xdr_READDIR3res, (caddr_t)&r);
	return id;
}

/* ".." never climbs above the root, nor shows what is there; names are single components. */
void t_dotdot(void **state)
{
	struct tgroup *g = tgroup_of(state);
	CLIENT *cl = g->c->nfs;
	char parent[NFS3T_PATH_MAX + 16], escaped[NFS3T_PATH_MAX + 64];
	nfs_fh3 up, up2;
	fattr3 attr, root;
	int i;

	assert_int_equal(nfs3t_getattr(cl, &g->c->root, &root), NFS3_OK);
	assert_int_equal(nfs3t_lookup_st(cl, &g->dir, "..", &up, &attr), NFS3_OK);
	assert_true(nfs3t_fh_equal(&up, &g->c->root));
	for (i = 0; i < 3; i++) {
		assert_int_equal(nfs3t_lookup_st(cl, &up, "..", &up2, &attr), NFS3_OK);
		assert_true(nfs3t_fh_equal(&up2, &g->c->root));
		assert_int_equal(attr.fileid, root.fileid);
		nfs3c_fh_free(&up2);
	}
	nfs3c_fh_free(&up);
	assert_int_equal(root_dotdot_fileid(cl, &g->c->root), root.fileid);

	assert_int_equal(nfs3t_lookup_st(cl, &g->c->root, "../outside", NULL, NULL),
			 NFS3ERR_ACCES);
	assert_int_equal(nfs3t_lookup_st(cl, &g->dir, "a/b", NULL, NULL), NFS3ERR_ACCES);
	assert_int_equal(nfs3t_create(cl, &g->c->root, "../escaped", GUARDED, 0644, NULL, NULL,
				      NULL), NFS3ERR_ACCES);
	assert_int_equal(nfs3t_mkdir(cl, &g->c->root, "../escaped", 0755, NULL), NFS3ERR_ACCES);
	assert_int_equal(nfs3t_symlink(cl, &g->c->root, "../escaped", "x", NULL), NFS3ERR_ACCES);
	nfs3t_put_pattern(g, "dd", 1, 10);
	assert_int_equal(nfs3t_rename(cl, &g->dir, "dd", &g->c->root, "../escaped"),
			 NFS3ERR_ACCES);
	snprintf(parent, sizeof(parent), "%s", nfs3t_export);
	*strrchr(parent, '/') = '\0';
	snprintf(escaped, sizeof(escaped), "%s/escaped", parent);
	assert_int_equal(access(escaped, F_OK), -1);
}

/* An entry of @dir by LOOKUP: handle and type. */
static void lookup_type(CLIENT *cl, const nfs_fh3 *dir, const char *name, nfs_fh3 *out,
			ftype3 type)
{
	fattr3 attr;

	assert_int_equal(nfs3t_lookup_st(cl, dir, name, out, &attr), NFS3_OK);
	assert_int_equal(attr.type, type);
}

/*
 * Links the server itself made and links made behind its back, to the
 * outside directory by absolute and relative paths: each is a link, never
 * a way through.
 */
void t_symlink_escapes(void **state)
{
	struct tgroup *g = tgroup_of(state);
	CLIENT *cl = g->c->nfs;
	char out_dir[4096], out_file[4200], path[4300];
	unsigned char data[8] = { 0 };
	struct stat before, after;
	nfs_fh3 abs, rel, local, filelink;
	fattr3 attr;

	outside(out_dir, sizeof(out_dir), out_file, sizeof(out_file));
	assert_int_equal(stat(out_dir, &before), 0);
	assert_int_equal(nfs3t_symlink(cl, &g->dir, "abs", out_dir, &abs), NFS3_OK);
	assert_int_equal(nfs3t_symlink(cl, &g->dir, "rel", "../../outside", &rel), NFS3_OK);
	nfs3t_local(g, "local", path, sizeof(path));
	assert_int_equal(symlink(out_dir, path), 0);
	nfs3t_local(g, "filelink", path, sizeof(path));
	assert_int_equal(symlink(out_file, path), 0);
	lookup_type(cl, &g->dir, "local", &local, NF3LNK);
	lookup_type(cl, &g->dir, "filelink", &filelink, NF3LNK);

	/* Looking, listing, making through a link: it is not a directory. */
	assert_int_equal(nfs3t_lookup_st(cl, &abs, "secret", NULL, NULL), NFS3ERR_NOTDIR);
	assert_int_equal(nfs3t_lookup_st(cl, &rel, "secret", NULL, NULL), NFS3ERR_NOTDIR);
	assert_int_equal(nfs3t_lookup_st(cl, &local, "secret", NULL, NULL), NFS3ERR_NOTDIR);
	assert_int_equal(nfs3t_lookup_st(cl, &local, "..", NULL, NULL), NFS3ERR_NOTDIR);
	assert_int_equal(nfs3t_readdir_st(cl, &local, 4096), NFS3ERR_NOTDIR);
	assert_int_equal(nfs3t_readdirplus_st(cl, &abs, 4096), NFS3ERR_NOTDIR);
	assert_int_equal(nfs3t_create(cl, &local, "pwn", GUARDED, 0644, NULL, NULL, NULL),
			 NFS3ERR_NOTDIR);
	assert_int_equal(nfs3t_mkdir(cl, &rel, "pwn", 0755, NULL), NFS3ERR_NOTDIR);
	assert_int_equal(nfs3t_symlink(cl, &abs, "pwn", "x", NULL), NFS3ERR_NOTDIR);
	assert_int_equal(nfs3t_remove(cl, &local, "secret"), NFS3ERR_NOTDIR);
	assert_int_equal(nfs3t_rename(cl, &g->dir, "abs", &local, "pwn"), NFS3ERR_NOTDIR);
	/* Reading or writing a link to a file: refused, the file untouched. */
	assert_int_equal(nfs3t_read_st(cl, &filelink, 0, 100), NFS3ERR_INVAL);
	assert_int_equal(nfs3t_write_st(cl, &filelink, 0, data, sizeof(data), FILE_SYNC),
			 NFS3ERR_INVAL);
	/* A link's mode is not its target's. */
	assert_int_equal(nfs3t_setattr_mode(cl, &local, 0777), NFS3_OK);
	assert_int_equal(nfs3t_getattr(cl, &filelink, &attr), NFS3_OK);
	assert_int_equal(attr.type, NF3LNK);
	assert_int_equal(attr.size, strlen(out_file));
	/* Removing a link removes the link. */
	assert_int_equal(nfs3t_remove(cl, &g->dir, "local"), NFS3_OK);
	assert_int_equal(nfs3t_remove(cl, &g->dir, "filelink"), NFS3_OK);

	assert_int_equal(stat(out_dir, &after), 0);
	assert_int_equal(after.st_mode, before.st_mode);
	assert_int_equal(after.st_mtime, before.st_mtime);
	assert_int_equal(stat(out_file, &after), 0);
	assert_int_equal(after.st_size, 0);
	snprintf(path, sizeof(path), "%s/pwn", out_dir);
	assert_int_equal(access(path, F_OK), -1);
	nfs3c_fh_free(&filelink);
	nfs3c_fh_free(&local);
	nfs3c_fh_free(&rel);
	nfs3c_fh_free(&abs);
}

static nfsstat3 lookup_with(CLIENT *cl, const unsigned char *bytes, u_int len, const char *name)
{
	nfs_fh3 fh = { .data = { len, (char *)bytes } };

	return nfs3t_lookup_st(cl, &fh, name, NULL, NULL);
}

static nfsstat3 getattr_with(CLIENT *cl, const unsigned char *bytes, u_int len)
{
	nfs_fh3 fh = { .data = { len, (char *)bytes } };

	return nfs3t_getattr(cl, &fh, NULL);
}

/* Handles this server did not make: BADHANDLE; one an earlier instance made: STALE. */
void t_forged_handles(void **state)
{
	struct tgroup *g = tgroup_of(state);
	CLIENT *cl = g->c->nfs;
	unsigned char h[64], real[32];
	nfs_fh3 fh;
	u_int len = g->dir.data.data_len;
	unsigned int i;

	assert_int_equal(len, sizeof(real));
	memcpy(real, g->dir.data.data_val, len);
	assert_int_equal(getattr_with(cl, real, len), NFS3_OK);

	memcpy(h, real, len);
	h[FH_MAC] ^= 1;
	assert_int_equal(getattr_with(cl, h, len), NFS3ERR_BADHANDLE);
	/* Another node (the root's slot) with the MAC left as it was. */
	memcpy(h, real, len);
	memset(h + FH_NODE, 0, 8);
	assert_int_equal(getattr_with(cl, h, len), NFS3ERR_BADHANDLE);
	assert_int_equal(lookup_with(cl, h, len, BIG_DIR), NFS3ERR_BADHANDLE);
	memcpy(h, real, len);
	h[0] = 2;
	assert_int_equal(getattr_with(cl, h, len), NFS3ERR_BADHANDLE);
	assert_int_equal(getattr_with(cl, real, len - 1), NFS3ERR_BADHANDLE);
	assert_int_equal(getattr_with(cl, real, 0), NFS3ERR_BADHANDLE);
	memset(h, 0, sizeof(h));
	memcpy(h, real, len);
	assert_int_equal(getattr_with(cl, h, sizeof(h)), NFS3ERR_BADHANDLE);
	/* Random bytes under this instance's id. */
	for (i = 0; i < sizeof(real); i++)
		h[i] = (unsigned char)(i * 37 + 11);
	h[0] = 1;
	h[1] = h[2] = h[3] = 0;
	memcpy(h + FH_INSTANCE, real + FH_INSTANCE, 4);
	assert_int_equal(getattr_with(cl, h, len), NFS3ERR_BADHANDLE);
	/* Another instance's: stale, as after a restart. */
	memcpy(h, real, len);
	h[FH_INSTANCE] ^= 0x80;
	assert_int_equal(getattr_with(cl, h, len), NFS3ERR_STALE);

	/* Every procedure checks: a few that take a handle in different places. */
	memcpy(h, real, len);
	h[FH_MAC + 7] ^= 0x10;
	fh.data.data_len = len;
	fh.data.data_val = (char *)h;
	assert_int_equal(nfs3t_read_st(cl, &fh, 0, 10), NFS3ERR_BADHANDLE);
	assert_int_equal(nfs3t_write_st(cl, &fh, 0, h, 4, UNSTABLE), NFS3ERR_BADHANDLE);
	assert_int_equal(nfs3t_readdir_st(cl, &fh, 4096), NFS3ERR_BADHANDLE);
	assert_int_equal(nfs3t_readdirplus_st(cl, &fh, 4096), NFS3ERR_BADHANDLE);
	assert_int_equal(nfs3t_create(cl, &fh, "x", GUARDED, 0644, NULL, NULL, NULL),
			 NFS3ERR_BADHANDLE);
	assert_int_equal(nfs3t_rename(cl, &g->dir, "x", &fh, "y"), NFS3ERR_BADHANDLE);
	assert_int_equal(nfs3t_setattr_mode(cl, &fh, 0777), NFS3ERR_BADHANDLE);
}

/*
 * A directory the client holds handles in and below is swapped, behind
 * the server's back, for a link to the outside: the handles are stale
 * (the name holds another inode, the walk meets a link), not a way out;
 * swapped back, they work again.
 */
void t_swapped_dir(void **state)
{
	struct tgroup *g = tgroup_of(state);
	CLIENT *cl = g->c->nfs;
	char out_dir[4096], out_file[4200], path[4300], moved[4300];
	nfs_fh3 dir, file;

	outside(out_dir, sizeof(out_dir), out_file, sizeof(out_file));
	assert_int_equal(nfs3t_mkdir(cl, &g->dir, "sw", 0755, &dir), NFS3_OK);
	assert_int_equal(nfs3t_create(cl, &dir, "secret", GUARDED, 0644, NULL, &file, NULL),
			 NFS3_OK);
	nfs3t_local(g, "sw", path, sizeof(path));
	nfs3t_local(g, "sw.moved", moved, sizeof(moved));
	assert_int_equal(rename(path, moved), 0);
	assert_int_equal(symlink(out_dir, path), 0);

	assert_int_equal(nfs3t_getattr(cl, &dir, NULL), NFS3ERR_STALE);
	assert_int_equal(nfs3t_lookup_st(cl, &dir, "secret", NULL, NULL), NFS3ERR_STALE);
	assert_int_equal(nfs3t_readdir_st(cl, &dir, 4096), NFS3ERR_STALE);
	assert_int_equal(nfs3t_getattr(cl, &file, NULL), NFS3ERR_STALE);
	assert_int_equal(nfs3t_write_st(cl, &file, 0, "x", 1, FILE_SYNC), NFS3ERR_STALE);
	assert_int_equal(nfs3t_create(cl, &dir, "pwn", GUARDED, 0644, NULL, NULL, NULL),
			 NFS3ERR_STALE);
	snprintf(path, sizeof(path), "%s/pwn", out_dir);
	assert_int_equal(access(path, F_OK), -1);

	nfs3t_local(g, "sw", path, sizeof(path));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rename(moved, path), 0);
	assert_int_equal(nfs3t_getattr(cl, &dir, NULL), NFS3_OK);
	assert_int_equal(nfs3t_getattr(cl, &file, NULL), NFS3_OK);
	nfs3c_fh_free(&file);
	nfs3c_fh_free(&dir);
}
