/* SPDX-License-Identifier: MIT */
/*
 * The nfs3 suite: examples/nfs3's server and client in one process, every
 * test run over TCP and over RDMA (softrdma) with the same assertions.
 * NFS3_FILTER selects tests by cmocka's glob, as RFC8166_FILTER does.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rpcrdma/tirpc.h>
#include <softrdma.h>

#include "nfs3_test.h"

char nfs3t_export[NFS3T_PATH_MAX + 16];
struct nfs3_server *nfs3t_server;
static char tmp_root[NFS3T_PATH_MAX];

unsigned char nfs3t_pattern(uint64_t i, unsigned int seed)
{
	return (unsigned char)(i * 131 + seed * 7 + (i >> 11));
}

void nfs3t_fill(unsigned char *buf, size_t len, uint64_t at, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = nfs3t_pattern(at + i, seed);
}

/* Buffers of their own: the concurrent tests make and check files on several threads. */
void nfs3t_make_file(const char *path, uint64_t size, unsigned int seed)
{
	unsigned char *chunk = malloc(MiB);
	uint64_t at;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_non_null(chunk);
	assert_true(fd >= 0);
	for (at = 0; at < size; at += MiB) {
		size_t n = size - at < MiB ? (size_t)(size - at) : MiB;

		nfs3t_fill(chunk, n, at, seed);
		assert_int_equal(write(fd, chunk, n), (ssize_t)n);
	}
	assert_int_equal(close(fd), 0);
	free(chunk);
}

bool nfs3t_file_is(const char *path, uint64_t size, unsigned int seed)
{
	unsigned char *chunk = malloc(MiB), *want = malloc(MiB);
	struct stat st;
	uint64_t at = 0;
	bool same = chunk && want;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) || (uint64_t)st.st_size != size)
		same = false;
	while (same && at < size) {
		size_t n = size - at < MiB ? (size_t)(size - at) : MiB;

		nfs3t_fill(want, n, at, seed);
		same = read(fd, chunk, n) == (ssize_t)n && memcmp(chunk, want, n) == 0;
		at += n;
	}
	if (fd >= 0)
		close(fd);
	free(chunk);
	free(want);
	return same;
}

void nfs3t_tmpname(char *buf, size_t len, const char *tag)
{
	static atomic_uint seq;

	snprintf(buf, len, "%s/local-%s-%u", tmp_root, tag, atomic_fetch_add(&seq, 1));
}

void nfs3t_local(const struct tgroup *g, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", g->local_dir, name);
}

static struct nfs3c_opts group_opts(const struct tgroup *g)
{
	struct nfs3c_opts o;

	nfs3c_opts_init(&o);
	o.transport = g->transport;
	o.export_path = nfs3t_export;
	o.timeout_s = 10;
	if (g->transport == NFS3C_RDMA)
		assert_true(nfs3_server_rdma_addr(nfs3t_server, &o.addr));
	else
		assert_true(nfs3_server_tcp_addr(nfs3t_server, &o.addr));
	return o;
}

struct nfs3c *nfs3t_open_as(const struct tgroup *g, uid_t uid, gid_t gid)
{
	struct nfs3c_opts o = group_opts(g);
	struct nfs3c *c = NULL;
	int rc;

	o.uid = uid;
	o.gid = gid;
	rc = nfs3c_open(&o, &c);
	if (rc)
		fail_msg("nfs3c_open over %s: %d", g->name, rc);
	return c;
}

CLIENT *nfs3t_client(const struct tgroup *g, rpcprog_t prog, rpcvers_t vers)
{
	struct nfs3c_opts o = group_opts(g);
	CLIENT *cl = nfs3c_client(&o, prog, vers);

	if (!cl)
		fail_msg("no CLIENT over %s", g->name);
	return cl;
}

void nfs3t_lookup(struct tgroup *g, const char *name, nfs_fh3 *out)
{
	assert_int_equal(nfs3c_lookup(g->c, &g->dir, name, out, NULL), 0);
}

void nfs3t_put_pattern(struct tgroup *g, const char *name, uint64_t size, unsigned int seed)
{
	char local[4096];
	uint64_t bytes;
	int fd;

	nfs3t_tmpname(local, sizeof(local), "put");
	nfs3t_make_file(local, size, seed);
	fd = open(local, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(nfs3c_put(g->c, &g->dir, name, fd, &bytes), 0);
	assert_int_equal(bytes, size);
	close(fd);
	unlink(local);
}

void nfs3t_clnt_stats(struct nfs3c *c, struct rpcrdma_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->struct_size = sizeof(*st);
	assert_true(clnt_control(c->nfs, RPCRDMA_CLGET_STATS, (char *)st));
}

void nfs3t_svc_stats(struct rpcrdma_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->struct_size = sizeof(*st);
	assert_int_equal(nfs3_server_rdma_stats(nfs3t_server, st), 0);
}

/* Group fixtures: a mount as the user running the tests, and a directory of the group's. */

static int group_setup(void **state, struct tgroup *g)
{
	MKDIR3args a = { .where = { .name = (filename3)g->name } };
	MKDIR3res res;

	g->c = nfs3t_open_as(g, getuid(), getgid());
	memset(&res, 0, sizeof(res));
	a.where.dir = g->c->root;
	a.attributes.mode.set_it = TRUE;
	a.attributes.mode.set_mode3_u.mode = 0755;
	if (nfsproc3_mkdir_3(&a, &res, g->c->nfs) != RPC_SUCCESS || res.status != NFS3_OK ||
	    !res.MKDIR3res_u.resok.obj.handle_follows)
		return -1;
	if (nfs3c_fh_copy(&g->dir, &res.MKDIR3res_u.resok.obj.post_op_fh3_u.handle))
		return -1;
	clnt_freeres(g->c->nfs, (xdrproc_t)xdr_MKDIR3res, (caddr_t)&res);
	snprintf(g->local_dir, sizeof(g->local_dir), "%s/%s", nfs3t_export, g->name);
	*state = g;
	return 0;
}

static int setup_tcp(void **state)
{
	static struct tgroup g = { .transport = NFS3C_TCP, .name = "tcp" };

	return group_setup(state, &g);
}

static int setup_rdma(void **state)
{
	static struct tgroup g = { .transport = NFS3C_RDMA, .name = "rdma" };

	return group_setup(state, &g);
}

static int group_teardown(void **state)
{
	struct tgroup *g = tgroup_of(state);

	nfs3c_fh_free(&g->dir);
	nfs3c_close(g->c);
	g->c = NULL;
	return 0;
}

/* The scratch tree goes whatever its modes (tests make unreadable files and directories). */
static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	if (flag == FTW_DP || flag == FTW_D)
		chmod(path, 0700);
	return remove(path) && errno != ENOENT ? -1 : 0;
}

static int open_up(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	if (flag == FTW_D || flag == FTW_DNR)
		chmod(path, 0755);
	return 0;
}

static void remove_tree(const char *path)
{
	nftw(path, open_up, 16, FTW_PHYS);
	nftw(path, remove_entry, 16, FTW_PHYS | FTW_DEPTH);
}

/* BIG_ENTRIES files, made locally: the listing is what is tested, not 10,000 CREATEs. */
static int make_big_dir(void)
{
	char path[4096 + 16];
	int dfd, i;

	snprintf(path, sizeof(path), "%s/%s", nfs3t_export, BIG_DIR);
	if (mkdir(path, 0755))
		return -1;
	dfd = open(path, O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		return -1;
	for (i = 0; i < BIG_ENTRIES; i++) {
		char name[32];
		int fd;

		snprintf(name, sizeof(name), "f%05d", i);
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0) {
			close(dfd);
			return -1;
		}
		close(fd);
	}
	close(dfd);
	return 0;
}

static int start(void)
{
	const char *tmp = getenv("TMPDIR");
	struct nfs3_server_opts o;
	char *real;
	int rc;

	snprintf(tmp_root, sizeof(tmp_root), "%s/nfs3-test.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(tmp_root))
		return -1;
	/* The server names its export by its real path: so do the tests (MNT, EXPORT). */
	real = realpath(tmp_root, NULL);
	if (!real || strlen(real) >= sizeof(tmp_root)) {
		free(real);
		return -1;
	}
	strcpy(tmp_root, real);
	free(real);
	/* Searchable by OTHER_UID: the permission tests act as them. */
	chmod(tmp_root, 0755);
	snprintf(nfs3t_export, sizeof(nfs3t_export), "%s/export", tmp_root);
	if (mkdir(nfs3t_export, 0755) || chmod(nfs3t_export, 0755) || make_big_dir())
		return -1;
	nfs3_server_opts_init(&o);
	o.export_path = nfs3t_export;
	o.rdma_addr.sin_addr.s_addr = o.tcp_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	o.rdma_addr.sin_port = o.tcp_addr.sin_port = 0;
	o.threads = 3;
	rc = nfs3_server_start(&o, &nfs3t_server);
	if (rc)
		fprintf(stderr, "nfs3_server_start: %s\n", strerror(-rc));
	return rc;
}

/* Everything the fabric lent is back once the server and every client are gone. */
static int stop(void)
{
	struct softrdma_counts c;

	nfs3_server_stop(nfs3t_server);
	remove_tree(tmp_root);
	softrdma_get_counts(&c);
	if (c.qps || c.mrs || c.pds || c.cm_ids || c.send_wrs || c.recv_wrs) {
		fprintf(stderr, "left behind: %u QPs, %u MRs, %u PDs, %u ids, %u+%u WRs\n", c.qps,
			c.mrs, c.pds, c.cm_ids, c.send_wrs, c.recv_wrs);
		return 1;
	}
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_null_mount),
		cmocka_unit_test(t_fs_info),
		cmocka_unit_test(t_setattr),
		cmocka_unit_test(t_lookup_access),
		cmocka_unit_test(t_create_modes),
		cmocka_unit_test(t_write_commit),
		cmocka_unit_test(t_links),
		cmocka_unit_test(t_remove_rename),
		cmocka_unit_test(t_readdir),
		cmocka_unit_test(t_notsupp),
		cmocka_unit_test(t_errors),
		cmocka_unit_test(t_acces),
		cmocka_unit_test(t_dotdot),
		cmocka_unit_test(t_symlink_escapes),
		cmocka_unit_test(t_forged_handles),
		cmocka_unit_test(t_swapped_dir),
		cmocka_unit_test(t_files),
		cmocka_unit_test(t_file_64m),
		cmocka_unit_test(t_readdirplus_big),
		cmocka_unit_test(t_concurrent),
		cmocka_unit_test(t_killed_mid_write),
		cmocka_unit_test(t_tcp_full_makes_room),
		cmocka_unit_test(t_tcp_idle_closed),
		cmocka_unit_test(t_chunk_stats),
	};
	const char *filter = getenv("NFS3_FILTER");
	const char *no_jail = nfs3t_enter_jail();
	int failed;

	if (no_jail)
		fprintf(stderr, "nfs3: run with the real root (%s): root's mode is not tested\n",
			no_jail);
	if (filter)
		cmocka_set_test_filter(filter);
	if (start()) {
		remove_tree(tmp_root);
		return 1;
	}
	failed = cmocka_run_group_tests_name("tcp", tests, setup_tcp, group_teardown);
	failed += cmocka_run_group_tests_name("rdma", tests, setup_rdma, group_teardown);
	failed += stop();
	return failed ? 1 : 0;
}
