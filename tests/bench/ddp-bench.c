/* SPDX-License-Identifier: MIT */
/*
 * Direct data placement benchmark over softrdma: throughput of READ-like
 * RPCs (a 1 MiB result placed by the server's RDMA Writes into the caller's
 * registered buffer) and WRITE-like RPCs (a 1 MiB payload pulled by the
 * server's RDMA Reads), next to a plain memcpy of the same bytes; and the
 * bytes the library itself copies (memcpy/memmove called from lib/) per
 * payload byte on the registered path, counted by building the library for
 * this program with its memcpy and memmove routed through counters.
 * With --procs the server runs in a child process, the RDMA traffic
 * crossing processes as softrdma carries it there (its socket backend, with
 * the bytes in shared memory or moved by process_vm_readv/writev); the
 * library's copies are then the client's only.
 * A program that prints figures, not a test.
 *
 * With --busy both sides poll without sleeping, as RDMA programs often do,
 * the server with RPCRDMA_SVC_BUSY_POLL (--busy-arm: without it); across
 * processes, softrdma's rings are then run by the pollers instead of its
 * net threads. It prints the system calls per RPC of both sides.
 *
 * With --procs it also times process_vm_readv() of the server process's
 * source into this one, on one core: the kernel's own rate for the copies
 * softrdma makes between processes, which pins the other process's pages
 * one at a time. Two processes sharing a copy can at best double it.
 *
 * With --hugepages every buffer (the payloads and the memcpy reference's)
 * is 2 MiB-aligned and advised for transparent huge pages before its first
 * touch, as RDMA programs often place their registered pools: across
 * processes, process_vm_readv/writev then pin one page per 2 MiB instead of
 * one per 4 KiB.
 *
 *   ddp-bench [--size BYTES] [--calls N] [--runs R] [--procs] [--busy|--busy-arm]
 *             [--hugepages]
 */
#define _GNU_SOURCE	/* process_vm_readv */
#include <arpa/inet.h>
#include <dirent.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rpcrdma/rpcrdma.h>
#include <softrdma.h>

#include "bench.h"

/* The library of this program calls these for every memcpy and memmove. */
void *rpcrdma_bench_memcpy(void *dst, const void *src, size_t n);
void *rpcrdma_bench_memmove(void *dst, const void *src, size_t n);

static atomic_ulong lib_copied;

void *rpcrdma_bench_memcpy(void *dst, const void *src, size_t n)
{
	atomic_fetch_add_explicit(&lib_copied, n, memory_order_relaxed);
	return memcpy(dst, src, n);
}

void *rpcrdma_bench_memmove(void *dst, const void *src, size_t n)
{
	atomic_fetch_add_explicit(&lib_copied, n, memory_order_relaxed);
	return memmove(dst, src, n);
}

enum { OP_READ = 2, OP_WRITE = 3 };

struct server {
	struct rpcrdma_svc *svc;
	pthread_t thread;
	atomic_bool stop;
	unsigned char *source;		/* registered: READ results come from here */
	struct rpcrdma_mem *mem;
	size_t size;
};

static uint32_t word(const unsigned char *p, size_t i)
{
	uint32_t w;

	memcpy(&w, p + 4 * i, 4);
	return ntohl(w);
}

static void on_call(struct rpcrdma_svc_call *call, void *arg)
{
	struct server *s = arg;
	size_t len;
	const unsigned char *msg = rpcrdma_svc_call_msg(call, &len);
	/* An accepted reply's head (xid, REPLY, MSG_ACCEPTED); a READ's data after it. */
	uint32_t reply[3] = { htonl(rpcrdma_svc_call_xid(call)), htonl(1), 0 };

	if (len >= 16 && word(msg, 3) == OP_READ)
		rpcrdma_svc_reply_payload(call, sizeof(reply), s->source, s->size, NULL, NULL);
	/* WRITE: the payload was pulled into place; a real server would use it here. */
	rpcrdma_svc_reply(call, reply, sizeof(reply));
}

/*
 * --busy: both sides poll without sleeping (softrdma's rings run in the
 * pollers), the server with RPCRDMA_SVC_BUSY_POLL; --busy-arm: the same
 * without the flag, so that a drained connection is armed at each gap.
 */
static bool busy, busy_flag = true, hugepages;

/* A buffer for the bytes under test: 4 KiB-aligned, or with --hugepages on THP. */
static void *bench_buf(size_t size)
{
	const size_t huge = 2u << 20;
	void *p;

	if (!hugepages)
		return aligned_alloc(4096, size);
	size = (size + huge - 1) & ~(huge - 1);
	p = aligned_alloc(huge, size);
	/* Advice only: without THP the figures are those of 4 KiB pages. */
	if (p && madvise(p, size, MADV_HUGEPAGE))
		perror("madvise(MADV_HUGEPAGE)");
	return p;
}

static void server_turn(struct server *s)
{
	if (busy)
		rpcrdma_svc_poll(s->svc, 64);
	else
		rpcrdma_svc_wait(s->svc, 20);
}

static void *server_thread(void *arg)
{
	struct server *s = arg;

	while (!atomic_load(&s->stop))
		server_turn(s);
	return NULL;
}

/* Listen on loopback with a registered source of @size bytes; its address in @addr. */
static int server_start(struct server *s, size_t size, struct sockaddr_storage *addr)
{
	struct rpcrdma_svc_attr sattr = { RPCRDMA_SIZED(sattr) };
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t alen = sizeof(*addr);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sattr.addr = (struct sockaddr *)&sin;
	sattr.on_call = on_call;
	sattr.arg = s;
	if (busy && busy_flag)
		sattr.flags = RPCRDMA_SVC_BUSY_POLL;
	s->size = size;
	s->source = bench_buf(size);
	if (!s->source || rpcrdma_svc_listen(&sattr, &s->svc))
		return -1;
	memset(s->source, 0x5a, size);
	if (rpcrdma_svc_mem_register(s->svc, s->source, size, &s->mem))
		return -1;
	return rpcrdma_svc_addr(s->svc, (struct sockaddr *)addr, &alen) ? -1 : 0;
}

static void server_stop(struct server *s)
{
	rpcrdma_mem_deregister(s->mem);
	rpcrdma_svc_destroy(s->svc);
	free(s->source);
}

/* The rendezvous directory and the sockets softrdma left in it. */
static void rdv_remove(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096];

	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) < (int)sizeof(path))
			unlink(path);
	if (d)
		closedir(d);
	rmdir(dir);
}

/*
 * --procs: the server in a child process, which sends its address and
 * where its source lies (*@source) up @up and serves until @down reaches
 * EOF. Returns the child's pid, or -1.
 */
static pid_t server_fork(size_t size, struct sockaddr_storage *addr, uint64_t *source)
{
	int up[2], down[2];
	pid_t pid;

	if (pipe(up) || pipe(down))
		return -1;
	pid = fork();
	if (pid == 0) {
		struct pollfd pfd = { .fd = down[0], .events = POLLIN };
		struct server s = { 0 };

		close(up[0]);
		close(down[1]);
		if (server_start(&s, size, addr))
			_exit(1);
		*source = (uint64_t)(uintptr_t)s.source;
		if (write(up[1], addr, sizeof(*addr)) != (ssize_t)sizeof(*addr) ||
		    write(up[1], source, sizeof(*source)) != (ssize_t)sizeof(*source))
			_exit(1);
		for (unsigned int turn = 0;; turn++) {
			/* Polling, look at the pipe one turn in 1024 only. */
			if ((!busy || turn % 1024 == 0) && poll(&pfd, 1, 0) != 0)
				break;
			server_turn(&s);
		}
		server_stop(&s);
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	if (pid < 0 || read(up[0], addr, sizeof(*addr)) != (ssize_t)sizeof(*addr) ||
	    read(up[0], source, sizeof(*source)) != (ssize_t)sizeof(*source))
		return -1;
	close(up[0]);
	/* The child's stop signal: this end closes when the parent exits. */
	(void)down[1];
	return pid;
}

static void done_flag(struct rpcrdma_call *call)
{
	*(int *)call->arg = 1;
}

/* @calls RPCs of @op, one at a time; returns payload bytes per second. */
/* Send WRs softrdma ran in this process, and how many of them its fast path ran. */
struct wr_counts {
	unsigned long all, fast;
};

static struct wr_counts wr_counts(void)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_SEND_WITH_INV, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ, IBV_WR_LOCAL_INV, IBV_WR_BIND_MW,
	};
	struct wr_counts c = { 0, 0 };
	size_t i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		c.all += softrdma_executed(ops[i]);
		c.fast += softrdma_fast_executed(ops[i]);
	}
	return c;
}

static void print_wr_counts(const char *what, struct wr_counts before, unsigned int calls)
{
	struct wr_counts after = wr_counts();

	printf("  %s %.2f send WRs per RPC (this process), %.2f of them under the fabric lock\n",
	       what, (double)(after.all - before.all) / calls,
	       (double)(after.all - before.all - (after.fast - before.fast)) / calls);
}

static double run_op(struct rpcrdma_clnt *clnt, int op, unsigned char *buf, size_t size,
		     unsigned int calls, uint32_t *xid)
{
	unsigned char reply[64];
	double t0 = bench_now_s();
	unsigned int i;

	for (i = 0; i < calls; i++) {
		/* A call's head (xid, CALL, rpcvers 2), then the op. */
		uint32_t msg[4] = { htonl(++*xid), 0, htonl(2), htonl((uint32_t)op) };
		int finished = 0;
		struct rpcrdma_call call = {
			RPCRDMA_SIZED(call),
			.msg = msg,
			.msg_len = sizeof(msg),
			.reply = reply,
			.reply_max = sizeof(reply),
			.done = done_flag,
			.arg = &finished,
		};

		if (op == OP_READ) {
			call.result = buf;
			call.result_max = size;
		} else {
			call.payload = buf;
			call.payload_len = size;
			call.payload_pos = sizeof(msg);
		}
		if (rpcrdma_clnt_submit(clnt, &call))
			return -1;
		while (!finished) {
			if (busy)
				rpcrdma_clnt_poll(clnt, 16);
			else
				rpcrdma_clnt_wait(clnt, 100);
		}
		if (call.status || (op == OP_READ && call.result_len != size))
			return -1;
	}
	return (double)size * calls / (bench_now_s() - t0);
}

/* --procs: @calls process_vm_readv() of the server's @size-byte source at @addr; bytes/s, or -1. */
static double vm_read_rate(pid_t pid, uint64_t addr, unsigned char *dst, size_t size,
			   unsigned int calls)
{
	struct iovec local = { dst, size }, remote = { (void *)(uintptr_t)addr, size };
	double t0 = bench_now_s();
	unsigned int i;

	for (i = 0; i < calls; i++)
		if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)size)
			return -1;
	return (double)size * calls / (bench_now_s() - t0);
}

/*
 * --procs: the client's process is the responder of the server's Writes and
 * Reads; softrdma may share those copies with the server's process.
 */
static void print_shared(const struct softrdma_shm_stats *a, const struct softrdma_shm_stats *b,
			 unsigned int rpcs)
{
	uint64_t offered = b->coop_offered_bytes - a->coop_offered_bytes;

	printf("  shared copies: %lu of %u RPCs' placements offered to the server process,\n"
	       "    which copied %.1f%% of their bytes; %lu taken over\n",
	       b->coop_offers - a->coop_offers, rpcs,
	       offered ? 100.0 * (double)(b->coop_peer_bytes - a->coop_peer_bytes) / (double)offered :
	       0.0, b->coop_takeovers - a->coop_takeovers);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "calls", required_argument, NULL, 'n' },
		{ "runs", required_argument, NULL, 'r' },
		{ "procs", no_argument, NULL, 'p' },
		{ "busy", no_argument, NULL, 'b' },
		{ "busy-arm", no_argument, NULL, 'a' },
		{ "hugepages", no_argument, NULL, 'H' },
		{ NULL, 0, NULL, 0 },
	};
	struct rpcrdma_clnt_attr cattr = { RPCRDMA_SIZED(cattr) };
	struct sockaddr_storage addr;
	struct rpcrdma_clnt *clnt;
	struct rpcrdma_mem *cmem;
	struct rpcrdma_stats cst = { RPCRDMA_SIZED(cst) }, sst = { RPCRDMA_SIZED(sst) };
	struct softrdma_shm_stats shm0, shm1;
	struct server s = { 0 };
	size_t size = 1 << 20;
	unsigned int calls = 200, runs = 5, r;
	double rd[32], wr[32], mc[32], vm[32];
	uint64_t child_source = 0;
	unsigned char *cbuf, *mdst;
	unsigned long before;
	long long sys0;
	struct wr_counts wrs;
	double sys_per_rpc;
	uint32_t xid = 1;
	char rdv[] = "/tmp/ddp-bench-XXXXXX";
	bool procs = false;
	pid_t child = -1;
	int opt;

	bench_syscalls();	/* before the server's thread or process: it counts those too */
	while ((opt = getopt_long(argc, argv, "s:n:r:pbaH", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			size = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			calls = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'r':
			runs = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'a':
			busy_flag = false;
			/* fall through */
		case 'b':
			busy = true;
			break;
		case 'p':
			procs = true;
			break;
		case 'H':
			hugepages = true;
			break;
		default:
			fprintf(stderr, "usage: %s [--size BYTES] [--calls N] [--runs R<=32] [--procs] "
				"[--busy|--busy-arm] [--hugepages]\n", argv[0]);
			return 2;
		}
	}
	if (!size || size > (16u << 20) || !calls || !runs || runs > 32)
		return 2;

	if (procs) {
		/* softrdma crosses processes through a rendezvous directory of their own. */
		if (!mkdtemp(rdv) || setenv("SOFTRDMA_DIR", rdv, 1))
			return 1;
		child = server_fork(size, &addr, &child_source);
		if (child < 0)
			return 1;
		s.source = bench_buf(size);	/* the memcpy reference's source */
		if (!s.source)
			return 1;
		memset(s.source, 0x5a, size);
	} else if (server_start(&s, size, &addr) ||
		   pthread_create(&s.thread, NULL, server_thread, &s)) {
		return 1;
	}
	/*
	 * After the fork: a page the child shares copy-on-write is split into
	 * 4 KiB pages at the parent's next write, huge or not.
	 */
	cbuf = bench_buf(size);
	mdst = bench_buf(size);
	if (!cbuf || !mdst)
		return 1;
	memset(cbuf, 0xa5, size);
	memset(mdst, 0, size);
	cattr.addr = (struct sockaddr *)&addr;
	if (rpcrdma_clnt_connect(&cattr, &clnt) ||
	    rpcrdma_clnt_mem_register(clnt, cbuf, size, &cmem))
		return 1;

	/* Warm up (the grant, the windows), then count the library's copies. */
	if (run_op(clnt, OP_READ, cbuf, size, 5, &xid) < 0 ||
	    run_op(clnt, OP_WRITE, cbuf, size, 5, &xid) < 0)
		return 1;
	bench_print_machine();
	printf("DDP over softrdma, %zu-byte payloads, registered buffers%s, one RPC in flight%s%s\n",
	       size, hugepages ? " (advised for huge pages)" : "",
	       procs ? ",\n  client and server in two processes" : "",
	       !busy ? "" : busy_flag ? ",\n  both sides polling without sleeping (--busy)" :
	       ",\n  both sides polling without sleeping, the server arming at each gap (--busy-arm)");
	before = atomic_load(&lib_copied);
	sys0 = bench_syscalls();
	wrs = wr_counts();
	run_op(clnt, OP_READ, cbuf, size, calls, &xid);
	sys_per_rpc = bench_syscalls_per(sys0, calls);
	printf("  READ-like:  library copied %.6f bytes per payload byte (%lu bytes over %u RPCs)\n",
	       (double)(atomic_load(&lib_copied) - before) / ((double)size * calls),
	       atomic_load(&lib_copied) - before, calls);
	printf("  READ-like:  %.2f system calls per RPC, both sides (nan: not counted)\n", sys_per_rpc);
	print_wr_counts("READ-like: ", wrs, calls);
	before = atomic_load(&lib_copied);
	wrs = wr_counts();
	run_op(clnt, OP_WRITE, cbuf, size, calls, &xid);
	printf("  WRITE-like: library copied %.6f bytes per payload byte (%lu bytes over %u RPCs)\n",
	       (double)(atomic_load(&lib_copied) - before) / ((double)size * calls),
	       atomic_load(&lib_copied) - before, calls);
	print_wr_counts("WRITE-like:", wrs, calls);

	softrdma_shm_stats(&shm0);
	for (r = 0; r < runs; r++) {
		double t0;
		unsigned int i;

		rd[r] = run_op(clnt, OP_READ, cbuf, size, calls, &xid);
		wr[r] = run_op(clnt, OP_WRITE, cbuf, size, calls, &xid);
		t0 = bench_now_s();
		for (i = 0; i < calls; i++) {
			memcpy(mdst, s.source, size);
			__asm__ volatile("" : : "r"(mdst) : "memory");
		}
		mc[r] = (double)size * calls / (bench_now_s() - t0);
		if (procs)
			vm[r] = vm_read_rate(child, child_source, mdst, size, calls);
	}
	printf("  throughput, median of %u runs of %u RPCs:\n", runs, calls);
	printf("    READ-like  %8.0f MB/s\n", bench_median(rd, runs) / 1e6);
	printf("    WRITE-like %8.0f MB/s\n", bench_median(wr, runs) / 1e6);
	printf("    memcpy     %8.0f MB/s  (the same bytes, one copy, for scale)\n",
	       bench_median(mc, runs) / 1e6);
	if (procs)
		printf("    vm_readv   %8.0f MB/s  (process_vm_readv of the same bytes from the server's\n"
		       "                          process on one core: the kernel's rate for the copies\n"
		       "                          softrdma makes between processes)\n",
		       bench_median(vm, runs) / 1e6);
	softrdma_shm_stats(&shm1);
	if (procs)
		print_shared(&shm0, &shm1, runs * calls * 2);
	rpcrdma_clnt_stats(clnt, &cst);
	if (!procs)
		rpcrdma_svc_stats(s.svc, &sst);
	printf("  bounce bytes: client %llu, server %llu (0 on the registered path)\n",
	       (unsigned long long)cst.bounce_bytes, (unsigned long long)sst.bounce_bytes);
	printf("  (softrdma moves the bytes with memcpy on the CPU: an RNIC would do it by DMA)\n");

	rpcrdma_mem_deregister(cmem);
	rpcrdma_clnt_destroy(clnt);
	if (procs) {
		int status;

		/* Exiting closes the child's pipe; waiting here first keeps its figures out. */
		kill(child, SIGTERM);
		waitpid(child, &status, 0);
		rdv_remove(rdv);
		free(s.source);
	} else {
		atomic_store(&s.stop, true);
		pthread_join(s.thread, NULL);
		server_stop(&s);
	}
	free(cbuf);
	free(mdst);
	return 0;
}
