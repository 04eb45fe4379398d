/* SPDX-License-Identifier: MIT */
/*
 * The nfs3 suite's fixture: one server in this process (nfs3_server_start():
 * RDMA on softrdma, served by rpcrdma_svc_run()'s threads, and TCP on the
 * loopback, its own threads) exporting a scratch directory, and the same
 * tests run as two groups, one per transport, each in a directory of its
 * own under the export.
 */
#ifndef NFS3_TEST_H
#define NFS3_TEST_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <sys/types.h>

#include "client.h"
#include "server.h"

#define MiB (1u << 20)
/* The shared directory READDIRPLUS lists: BIG_ENTRIES files besides "." and "..". */
#define BIG_DIR "big"
#define BIG_ENTRIES 10000
/* The scratch directory's path is at most this long (the rest is room for names). */
#define NFS3T_PATH_MAX 1024
/* The uid and gid that AUTH_SYS claims where the tests need someone who is not root. */
#define OTHER_UID 1000
#define OTHER_GID 1000

struct tgroup {
	enum nfs3c_transport transport;
	const char *name;		/* "tcp" or "rdma": also the group's directory */
	struct nfs3c *c;		/* as the user running the tests */
	nfs_fh3 dir;			/* the group's directory */
	char local_dir[NFS3T_PATH_MAX + 64];	/* the same, by its local path */
};

/* The export and the server, set up by main(). */
extern char nfs3t_export[NFS3T_PATH_MAX + 16];
extern struct nfs3_server *nfs3t_server;

static inline struct tgroup *tgroup_of(void **state)
{
	return *state;
}

/* A new mount over @g's transport as @uid/@gid; fails the test if it cannot be had. */
struct nfs3c *nfs3t_open_as(const struct tgroup *g, uid_t uid, gid_t gid);
/* A CLIENT of @prog over @g's transport, AUTH_NONE. */
CLIENT *nfs3t_client(const struct tgroup *g, rpcprog_t prog, rpcvers_t vers);

/* Byte @i of pattern @seed; a file of it; whether a file or buffer holds it. */
unsigned char nfs3t_pattern(uint64_t i, unsigned int seed);
void nfs3t_fill(unsigned char *buf, size_t len, uint64_t at, unsigned int seed);
void nfs3t_make_file(const char *path, uint64_t size, unsigned int seed);
bool nfs3t_file_is(const char *path, uint64_t size, unsigned int seed);

/* A scratch local file name (under the build's temporary directory), unique per call. */
/*
 * Enters a mount namespace whose root only root may search, every directory
 * of the old root bound in it. Returns NULL, or why it could not.
 */
const char *nfs3t_enter_jail(void);
void nfs3t_tmpname(char *buf, size_t len, const char *tag);

/* The handle of @name in the group's directory (fails the test if LOOKUP does). */
void nfs3t_lookup(struct tgroup *g, const char *name, nfs_fh3 *out);
/* A regular file @name in the group's directory holding @size bytes of pattern @seed. */
void nfs3t_put_pattern(struct tgroup *g, const char *name, uint64_t size, unsigned int seed);

/* The group's local path of @name. */
void nfs3t_local(const struct tgroup *g, const char *name, char *buf, size_t len);

/* Counters of the client and of the server's RDMA side. */
void nfs3t_clnt_stats(struct nfs3c *c, struct rpcrdma_stats *st);
void nfs3t_svc_stats(struct rpcrdma_stats *st);

/*
 * One call each, by rpcgen's stub on @cl, the RPC asserted to succeed; the
 * NFS status returned, results freed but for what the out-parameters
 * (each may be NULL) take: handles malloc()ed (nfs3c_fh_free()).
 */
nfsstat3 nfs3t_getattr(CLIENT *cl, const nfs_fh3 *fh, fattr3 *attr);
nfsstat3 nfs3t_lookup_st(CLIENT *cl, const nfs_fh3 *dir, const char *name, nfs_fh3 *out,
			 fattr3 *attr);
nfsstat3 nfs3t_mkdir(CLIENT *cl, const nfs_fh3 *dir, const char *name, uint32_t mode,
		     nfs_fh3 *out);
nfsstat3 nfs3t_symlink(CLIENT *cl, const nfs_fh3 *dir, const char *name, const char *target,
		       nfs_fh3 *out);
nfsstat3 nfs3t_create(CLIENT *cl, const nfs_fh3 *dir, const char *name, createmode3 how,
		      uint32_t mode, const char *verf, nfs_fh3 *out, fattr3 *attr);
nfsstat3 nfs3t_remove(CLIENT *cl, const nfs_fh3 *dir, const char *name);
nfsstat3 nfs3t_rmdir(CLIENT *cl, const nfs_fh3 *dir, const char *name);
nfsstat3 nfs3t_rename(CLIENT *cl, const nfs_fh3 *from, const char *fname, const nfs_fh3 *to,
		      const char *tname);
nfsstat3 nfs3t_read_st(CLIENT *cl, const nfs_fh3 *fh, uint64_t offset, uint32_t count);
nfsstat3 nfs3t_write_st(CLIENT *cl, const nfs_fh3 *fh, uint64_t offset, const void *data,
			uint32_t len, stable_how stable);
nfsstat3 nfs3t_readdir_st(CLIENT *cl, const nfs_fh3 *dir, uint32_t count);
nfsstat3 nfs3t_readdirplus_st(CLIENT *cl, const nfs_fh3 *dir, uint32_t count);
nfsstat3 nfs3t_setattr_mode(CLIENT *cl, const nfs_fh3 *fh, uint32_t mode);
nfsstat3 nfs3t_access(CLIENT *cl, const nfs_fh3 *fh, uint32_t want, uint32_t *got);
nfsstat3 nfs3t_readlink(CLIENT *cl, const nfs_fh3 *fh, char *buf, size_t len);
/* Whether two handles are the same bytes. */
bool nfs3t_fh_equal(const nfs_fh3 *a, const nfs_fh3 *b);

/* The tests, by file. */
void t_null_mount(void **state);
void t_fs_info(void **state);
void t_setattr(void **state);
void t_lookup_access(void **state);
void t_create_modes(void **state);
void t_write_commit(void **state);
void t_links(void **state);
void t_remove_rename(void **state);
void t_readdir(void **state);
void t_notsupp(void **state);

void t_errors(void **state);
void t_acces(void **state);
void t_dotdot(void **state);
void t_symlink_escapes(void **state);
void t_forged_handles(void **state);
void t_swapped_dir(void **state);

void t_files(void **state);
void t_file_64m(void **state);
void t_readdirplus_big(void **state);
void t_concurrent(void **state);
void t_killed_mid_write(void **state);
void t_tcp_full_makes_room(void **state);
void t_tcp_idle_closed(void **state);
void t_chunk_stats(void **state);

#endif /* NFS3_TEST_H */
