/* SPDX-License-Identifier: MIT */
/*
 * nfs3-cp: list, fetch and store files of an NFSv3 export, over RDMA or TCP.
 *
 *	nfs3-cp [-x rdma|tcp] [-a address] [-p port] -e export [-u uid] [-g gid] [-s]
 *		ls [dir] | get remote local | put local remote
 *
 * Remote paths are relative to the export's root. -p defaults to 20049 for
 * RDMA and 2049 for TCP. -s prints the client's RPC-over-RDMA counters at
 * the end (chunks used, bytes copied). Exits 0 on success, 1 on an NFS or
 * RPC error, 2 on a usage error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rpcrdma/tirpc.h>

#include "client.h"

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-x rdma|tcp] [-a address] [-p port] -e export [-u uid] [-g gid] [-s]\n"
		"       ls [dir] | get remote local | put local remote\n", prog);
	exit(2);
}

static const char *status_text(int rc, const struct nfs3c *c)
{
	static char text[64];

	if (rc < 0 && c && (rc == -EIO || rc == -ETIMEDOUT))
		return nfs3c_rpc_error(c);
	if (rc < 0)
		return strerror(-rc);
	snprintf(text, sizeof(text), "NFS status %d", rc);
	return text;
}

static char type_char(ftype3 t)
{
	switch (t) {
	case NF3DIR:
		return 'd';
	case NF3LNK:
		return 'l';
	case NF3REG:
		return '-';
	default:
		return '?';
	}
}

static int print_entry(void *arg, const entryplus3 *e)
{
	unsigned int *count = arg;
	const fattr3 *a = &e->name_attributes.post_op_attr_u.attributes;

	(*count)++;
	if (e->name_attributes.attributes_follow)
		printf("%c%04o %10" PRIu64 " %s\n", type_char(a->type), a->mode, (uint64_t)a->size,
		       e->name);
	else
		printf("?      %10s %s\n", "", e->name);
	return 0;
}

static int do_ls(struct nfs3c *c, const char *path)
{
	unsigned int count = 0, calls = 0;
	nfs_fh3 dir;
	int rc;

	rc = nfs3c_lookup_path(c, path, &dir, NULL);
	if (!rc)
		rc = nfs3c_list(c, &dir, print_entry, &count, &calls);
	if (!rc) {
		nfs3c_fh_free(&dir);
		fprintf(stderr, "nfs3-cp: %u entries in %u READDIRPLUS calls\n", count, calls);
	}
	return rc;
}

static int do_get(struct nfs3c *c, const char *remote, const char *local)
{
	uint64_t bytes = 0;
	nfs_fh3 fh;
	int fd, rc;

	rc = nfs3c_lookup_path(c, remote, &fh, NULL);
	if (rc)
		return rc;
	fd = open(local, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
	} else {
		rc = nfs3c_get(c, &fh, fd, &bytes);
		if (close(fd) && !rc)
			rc = -errno;
	}
	nfs3c_fh_free(&fh);
	if (!rc)
		printf("nfs3-cp: got %" PRIu64 " bytes\n", bytes);
	return rc;
}

/* "a/b/name": the handle of "a/b" and the name. */
static int split_remote(struct nfs3c *c, const char *remote, nfs_fh3 *dir, char **name)
{
	char *copy = strdup(remote), *slash;
	int rc;

	if (!copy)
		return -ENOMEM;
	slash = strrchr(copy, '/');
	if (slash) {
		*slash = '\0';
		*name = strdup(slash + 1);
		rc = nfs3c_lookup_path(c, copy, dir, NULL);
	} else {
		*name = strdup(copy);
		rc = nfs3c_fh_copy(dir, &c->root);
	}
	free(copy);
	if (!*name || !**name) {
		if (!rc)
			nfs3c_fh_free(dir);
		free(*name);
		return rc ? rc : -EINVAL;
	}
	if (rc)
		free(*name);
	return rc;
}

static int do_put(struct nfs3c *c, const char *local, const char *remote)
{
	uint64_t bytes = 0;
	nfs_fh3 dir;
	char *name;
	int fd, rc;

	fd = open(local, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = split_remote(c, remote, &dir, &name);
	if (!rc) {
		rc = nfs3c_put(c, &dir, name, fd, &bytes);
		nfs3c_fh_free(&dir);
		free(name);
	}
	close(fd);
	if (!rc)
		printf("nfs3-cp: put %" PRIu64 " bytes\n", bytes);
	return rc;
}

static void print_stats(struct nfs3c *c)
{
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };

	if (!c->rdma || !clnt_control(c->nfs, RPCRDMA_CLGET_STATS, (char *)&st))
		return;
	printf("nfs3-cp: rdma calls %" PRIu64 " read_chunks %" PRIu64 " write_chunks %" PRIu64
	       " reply_chunks %" PRIu64 " bounce_bytes %" PRIu64 "\n", st.calls, st.read_chunks,
	       st.write_chunks, st.reply_chunks, st.bounce_bytes);
}

static bool command_valid(int argc, char **argv)
{
	if (strcmp(argv[0], "ls") == 0)
		return argc <= 2;
	return (strcmp(argv[0], "get") == 0 || strcmp(argv[0], "put") == 0) && argc == 3;
}

static int run(struct nfs3c *c, int argc, char **argv)
{
	if (strcmp(argv[0], "ls") == 0)
		return do_ls(c, argc == 2 ? argv[1] : "");
	if (strcmp(argv[0], "get") == 0)
		return do_get(c, argv[1], argv[2]);
	return do_put(c, argv[1], argv[2]);
}

int main(int argc, char **argv)
{
	struct nfs3c_opts o;
	struct nfs3c *c;
	bool port_set = false, stats = false;
	int opt, rc;

	nfs3c_opts_init(&o);
	while ((opt = getopt(argc, argv, "+x:a:p:e:u:g:s")) != -1) {
		switch (opt) {
		case 'x':
			if (strcmp(optarg, "tcp") == 0)
				o.transport = NFS3C_TCP;
			else if (strcmp(optarg, "rdma") != 0)
				usage(argv[0]);
			break;
		case 'a':
			if (inet_pton(AF_INET, optarg, &o.addr.sin_addr) != 1)
				usage(argv[0]);
			break;
		case 'p':
			o.addr.sin_port = htons((uint16_t)strtoul(optarg, NULL, 10));
			port_set = true;
			break;
		case 'e':
			o.export_path = optarg;
			break;
		case 'u':
			o.uid = (uid_t)strtoul(optarg, NULL, 10);
			break;
		case 'g':
			o.gid = (gid_t)strtoul(optarg, NULL, 10);
			break;
		case 's':
			stats = true;
			break;
		default:
			usage(argv[0]);
		}
	}
	if (!o.export_path || optind >= argc || !command_valid(argc - optind, argv + optind))
		usage(argv[0]);
	if (!port_set && o.transport == NFS3C_TCP)
		o.addr.sin_port = htons(2049);
	rc = nfs3c_open(&o, &c);
	if (rc) {
		fprintf(stderr, "nfs3-cp: cannot mount %s: %s\n", o.export_path,
			rc < 0 ? strerror(-rc) : "refused by the server");
		return 1;
	}
	rc = run(c, argc - optind, argv + optind);
	if (rc)
		fprintf(stderr, "nfs3-cp: %s: %s\n", argv[optind], status_text(rc, c));
	if (stats)
		print_stats(c);
	nfs3c_close(c);
	return rc ? 1 : 0;
}
