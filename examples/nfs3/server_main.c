/* SPDX-License-Identifier: MIT */
/*
 * nfs3-server: export a directory over NFSv3, on RPC-over-RDMA and TCP.
 *
 *	nfs3-server [-a address] [-p rdma-port] [-t tcp-port] [--no-rdma] [--no-tcp]
 *		    [-n threads] [--max-tcp n] [--idle-timeout seconds] [--no-rpcbind]
 *		    [-r ready-file] [-s stats-file] directory
 *
 * RDMA listens at port 20049 (-p 0: any free port), TCP at 2049 (-t 0: any).
 * At most --max-tcp TCP connections at once (default 64): beyond, a new one
 * takes the place of the one idle the longest, or is closed if none is
 * idle. A connection, TCP or RDMA, that makes no call for --idle-timeout
 * seconds is closed (default 360, 0: never).
 * It registers with the local rpcbind when one answers (--no-rpcbind: it
 * does not); a refusal is reported, not fatal. -r writes "rdma PORT" and "tcp PORT"
 * lines to a file once both listen (for scripts that asked for port 0).
 * SIGINT and SIGTERM stop the server; SIGUSR1 writes the RDMA server's
 * counters to the -s file (replaced whole, with a sequence number, so a
 * reader can tell a new dump from the last one).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-a address] [-p rdma-port] [-t tcp-port] [--no-rdma] [--no-tcp]\n"
		"       [-n threads] [--max-tcp n] [--idle-timeout seconds] [--no-rpcbind]\n"
		"       [-r ready-file] [-s stats-file] directory\n",
		prog);
	exit(2);
}

/* A decimal number from @min to @max. */
static bool parse_uint(const char *arg, unsigned long min, unsigned long max, unsigned int *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (!*arg || *end || errno || *arg == '-' || v < min || v > max)
		return false;
	*out = (unsigned int)v;
	return true;
}

static bool parse_port(const char *arg, struct sockaddr_in *sin)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);

	if (!*arg || *end || v > 65535)
		return false;
	sin->sin_port = htons((uint16_t)v);
	return true;
}

/* Write @text to @path whole: a temporary file renamed over it. */
static int write_file(const char *path, const char *text)
{
	char tmp[4096];
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fputs(text, f);
	if (fclose(f) || rename(tmp, path))
		return -errno;
	return 0;
}

static void write_ready(const char *path, struct nfs3_server *s)
{
	struct sockaddr_in sin;
	char text[64];
	int n = 0;

	if (nfs3_server_rdma_addr(s, &sin))
		n += snprintf(text + n, sizeof(text) - (size_t)n, "rdma %u\n", ntohs(sin.sin_port));
	if (nfs3_server_tcp_addr(s, &sin))
		n += snprintf(text + n, sizeof(text) - (size_t)n, "tcp %u\n", ntohs(sin.sin_port));
	if (write_file(path, text))
		fprintf(stderr, "nfs3-server: cannot write %s\n", path);
}

static void write_stats(const char *path, struct nfs3_server *s, unsigned long seq)
{
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };
	char text[512];

	if (nfs3_server_rdma_stats(s, &st))
		return;
	snprintf(text, sizeof(text),
		 "seq %lu\ncalls %" PRIu64 "\nread_chunks %" PRIu64 "\nwrite_chunks %" PRIu64
		 "\nreply_chunks %" PRIu64 "\nbounce_bytes %" PRIu64 "\n",
		 seq, st.calls, st.read_chunks, st.write_chunks, st.reply_chunks, st.bounce_bytes);
	if (write_file(path, text))
		fprintf(stderr, "nfs3-server: cannot write %s\n", path);
}

struct main_opts {
	struct nfs3_server_opts server;
	const char *ready_file;
	const char *stats_file;
};

static void parse(int argc, char **argv, struct main_opts *m)
{
	static const struct option longs[] = {
		{ "no-rdma", no_argument, NULL, 'D' },
		{ "no-tcp", no_argument, NULL, 'T' },
		{ "no-rpcbind", no_argument, NULL, 'B' },
		{ "max-tcp", required_argument, NULL, 'M' },
		{ "idle-timeout", required_argument, NULL, 'I' },
		{ NULL, 0, NULL, 0 },
	};
	struct nfs3_server_opts *o = &m->server;
	int c;

	nfs3_server_opts_init(o);
	/* The program, unlike the library's default, tells rpcbind where it is. */
	o->rpcbind = true;
	while ((c = getopt_long(argc, argv, "a:p:t:n:r:s:", longs, NULL)) != -1) {
		switch (c) {
		case 'a':
			if (inet_pton(AF_INET, optarg, &o->rdma_addr.sin_addr) != 1)
				usage(argv[0]);
			o->tcp_addr.sin_addr = o->rdma_addr.sin_addr;
			break;
		case 'p':
			if (!parse_port(optarg, &o->rdma_addr))
				usage(argv[0]);
			break;
		case 't':
			if (!parse_port(optarg, &o->tcp_addr))
				usage(argv[0]);
			break;
		case 'n':
			o->threads = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 'D':
			o->rdma = false;
			break;
		case 'T':
			o->tcp = false;
			break;
		case 'B':
			o->rpcbind = false;
			break;
		case 'M':
			if (!parse_uint(optarg, 1, 65536, &o->max_tcp))
				usage(argv[0]);
			break;
		case 'I':
			if (!parse_uint(optarg, 0, NFS3_MAX_IDLE_S, &o->idle_s))
				usage(argv[0]);
			break;
		case 'r':
			m->ready_file = optarg;
			break;
		case 's':
			m->stats_file = optarg;
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind != argc - 1)
		usage(argv[0]);
	o->export_path = argv[optind];
}

/* Signals are taken here, by sigwait(), never by a handler on a serving thread. */
static void serve(struct nfs3_server *s, const struct main_opts *m, const sigset_t *set)
{
	unsigned long seq = 0;
	int sig;

	for (;;) {
		if (sigwait(set, &sig))
			continue;
		if (sig != SIGUSR1)
			break;
		if (m->stats_file)
			write_stats(m->stats_file, s, ++seq);
	}
}

int main(int argc, char **argv)
{
	struct main_opts m = { 0 };
	struct nfs3_server *s;
	sigset_t set;
	int rc;

	parse(argc, argv, &m);
	/* Blocked before any thread starts, so that every thread inherits the mask. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	rc = nfs3_server_start(&m.server, &s);
	if (rc) {
		fprintf(stderr, "nfs3-server: %s: %s\n", m.server.export_path, strerror(-rc));
		return 1;
	}
	if (m.ready_file)
		write_ready(m.ready_file, s);
	printf("nfs3-server: exporting %s\n", m.server.export_path);
	fflush(stdout);
	serve(s, &m, &set);
	nfs3_server_stop(s);
	printf("nfs3-server: stopped\n");
	return 0;
}
