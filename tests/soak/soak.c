/* SPDX-License-Identifier: MIT */
/*
 * soak: a server process and many client processes (forked; this one never
 * touches the fabric) making random calls of every shape (twoproc.h) for a
 * bounded time, with random faults on both sides (flush, error status, RNR,
 * disconnect) and SIGKILLs of clients and now and then of the server, each
 * replaced by a fresh process. At the end, with every client gone:
 *
 * - calls issued = completed + failed, in every client that was not killed
 *   (a killed one's calls in flight die with it and are counted as such);
 *   lost (no status within the call's timeout plus 10 s) = 0;
 * - every status a documented one; no reply with wrong bytes; done() once;
 * - each client's fabric empty after destroy;
 * - the server: every connection closed, every payload it named released
 *   exactly once, registered and heap bytes and its fabric objects back to
 *   what they were before the first connection, and empty after destroy.
 *
 * Prints its figures and exits 1 if an invariant failed, 77 if it cannot run.
 *
 *   soak [--seconds N] [--clients N] [--seed N] [--kill-ms N]
 *        [--server-kill-every N] [--fault-permille N]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "twoproc.h"

#define MAX_CLIENTS 64
#define INFLIGHT 4
#define CALL_TIMEOUT_MS 3000

/* The statuses counted one by one; the rest go to "other". */
static const int statuses[] = {
	-ETIMEDOUT, -ECONNRESET, -EMSGSIZE, -EREMOTEIO, -EPROTONOSUPPORT, -EPROTO, -ENOTCONN,
	-ECANCELED, -EAGAIN, -ENOMEM,
};
#define NSTATUS (sizeof(statuses) / sizeof(statuses[0]))

struct slot {
	atomic_ulong issued, completed, failed, by_status[NSTATUS + 1];
	atomic_ulong undocumented, corrupt, double_done, lost;
	atomic_ulong connects, connect_failures, faults_added, faults_fired;
	atomic_int finished;	/* 1 exited cleanly, 2 and its fabric was not empty */
};

struct soak_sh {
	atomic_bool stop;
	struct slot slots[MAX_CLIENTS];
};

struct totals {
	unsigned long issued, completed, failed, by_status[NSTATUS + 1];
	unsigned long undocumented, corrupt, double_done, lost, unaccounted;
	unsigned long connects, connect_failures, faults_added, faults_fired;
	unsigned long killed_inflight, client_kills, server_kills, clients_run, not_idle;
};

static struct tp_ctl *ctl;
static struct soak_sh *sh;

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static unsigned int status_index(int status)
{
	unsigned int i;

	for (i = 0; i < NSTATUS; i++)
		if (statuses[i] == status)
			return i;
	return NSTATUS;
}

/* A status for a call that never ran (a submit's): as documented for rpcrdma_clnt_submit(). */
static bool submit_documented(int rc)
{
	return rc == -EAGAIN || rc == -ENOMEM || rc == -ENOTCONN;
}

static void count_failure(struct slot *s, int rc, bool documented)
{
	atomic_fetch_add(&s->failed, 1);
	atomic_fetch_add(&s->by_status[status_index(rc)], 1);
	if (!documented) {
		atomic_fetch_add(&s->undocumented, 1);
		fprintf(stderr, "client %d: undocumented status %d\n", (int)getpid(), rc);
	}
}

/* A random client-side fault, on one of its own WRs. */
static int client_fault(uint32_t *seed)
{
	static const enum ibv_wr_opcode ops[] = { IBV_WR_SEND, IBV_WR_BIND_MW, IBV_WR_LOCAL_INV };
	struct softrdma_fault f = { .match = { .count = 1 } };

	f.match.nth = 1 + (unsigned int)rand_r(seed) % 30;
	if (rand_r(seed) % 4 == 0)
		f.match.recv = 1;
	else
		f.match.opcode_mask = 1u << ops[rand_r(seed) % 3];
	switch (rand_r(seed) % 4) {
	case 0:
		f.kind = SOFTRDMA_FAULT_QP_ERROR;
		break;
	case 1:
		f.kind = SOFTRDMA_FAULT_STATUS;
		f.status = f.match.recv ? IBV_WC_LOC_PROT_ERR :
			   f.match.opcode_mask == 1u << IBV_WR_BIND_MW ? IBV_WC_MW_BIND_ERR :
			   f.match.opcode_mask == 1u << IBV_WR_LOCAL_INV ? IBV_WC_LOC_QP_OP_ERR :
			   IBV_WC_REM_ACCESS_ERR;
		break;
	case 2:
		f.kind = f.match.opcode_mask == 1u << IBV_WR_SEND ? SOFTRDMA_FAULT_RNR
								  : SOFTRDMA_FAULT_QP_ERROR;
		break;
	default:
		f.kind = SOFTRDMA_FAULT_DISCONNECT;
		break;
	}
	return softrdma_fault_add(&f);
}

struct inflight {
	struct tp_call tc;
	bool busy;
	bool lost;
	int64_t deadline;
};

/* Account for the calls that finished; returns how many are still in flight. */
static unsigned int reap_calls(struct slot *s, struct inflight *in)
{
	unsigned int i, busy = 0;

	for (i = 0; i < INFLIGHT; i++) {
		struct inflight *c = &in[i];
		int runs, rc;

		if (!c->busy)
			continue;
		runs = atomic_load(&c->tc.done_runs);
		if (runs == 0) {
			if (!c->lost && now_ms() > c->deadline) {
				c->lost = true;
				atomic_fetch_add(&s->lost, 1);
				fprintf(stderr, "client %d: call %#x (%s) has no status after %d ms\n",
					(int)getpid(), c->tc.xid, tp_shape_names[c->tc.shape],
					CALL_TIMEOUT_MS + 10000);
			}
			busy++;
			continue;
		}
		if (runs > 1)
			atomic_fetch_add(&s->double_done, 1);
		if (c->lost)
			atomic_fetch_sub(&s->lost, 1);	/* late, but not lost */
		rc = tp_call_check(&c->tc);
		if (rc == 0) {
			atomic_fetch_add(&s->completed, 1);
		} else if (rc == -EBADMSG) {
			atomic_fetch_add(&s->corrupt, 1);
			atomic_fetch_add(&s->failed, 1);
			fprintf(stderr, "client %d: call %#x (%s): wrong reply bytes\n",
				(int)getpid(), c->tc.xid, tp_shape_names[c->tc.shape]);
		} else {
			count_failure(s, rc, tp_status_documented(rc));
		}
		c->busy = false;
	}
	return busy;
}

static void client_main(unsigned int idx, uint32_t seed)
{
	struct slot *s = &sh->slots[idx];
	struct inflight in[INFLIGHT];
	struct rpcrdma_clnt_attr attr;
	struct sockaddr_storage addr;
	struct rpcrdma_clnt *clnt = NULL;
	struct rpcrdma_mem *mem = NULL;
	struct rpcrdma_clnt_info info;
	unsigned char *arena = aligned_alloc(4096, TP_ARENA);
	uint32_t xid = (uint32_t)idx << 24 | (seed & 0xfff) << 12;
	unsigned long connects_before = 0;
	unsigned int i;
	int fault = 0, rc;

	if (!arena)
		tp_exit(2);
	memset(in, 0, sizeof(in));
	while (!atomic_load(&sh->stop)) {
		if (!clnt) {
			tp_clnt_attr(ctl, &addr, &attr);
			attr.retries = (unsigned int)rand_r(&seed) % 2;
			attr.call_timeout_ms = CALL_TIMEOUT_MS;
			attr.connect_timeout_ms = 2000;
			if (rpcrdma_clnt_connect(&attr, &clnt)) {
				clnt = NULL;
				atomic_fetch_add(&s->connect_failures, 1);
				poll(NULL, 0, 20);
				continue;
			}
			if (rpcrdma_clnt_mem_register(clnt, arena, TP_ARENA, &mem))
				tp_exit(2);
			connects_before = atomic_load(&s->connects);
		}
		if (!fault && rand_r(&seed) % 100 < 3) {
			fault = client_fault(&seed);
			if (fault > 0)
				atomic_fetch_add(&s->faults_added, 1);
		}
		if (fault > 0 && softrdma_fault_fired(fault) > 0) {
			atomic_fetch_add(&s->faults_fired, 1);
			softrdma_fault_remove(fault);
			fault = 0;
		}
		rc = 0;
		for (i = 0; i < INFLIGHT && rc != -ENOTCONN; i++) {
			enum tp_shape shape;

			if (in[i].busy || rand_r(&seed) % 2)
				continue;
			shape = (enum tp_shape)(rand_r(&seed) % TP_NSHAPES);
			atomic_fetch_add(&s->issued, 1);
			rc = tp_call_submit(clnt, &in[i].tc, shape, arena + i * TP_SLOT, ++xid, 0);
			if (rc) {
				count_failure(s, rc, submit_documented(rc));
				continue;
			}
			in[i].busy = true;
			in[i].lost = false;
			in[i].deadline = now_ms() + CALL_TIMEOUT_MS + 10000;
		}
		rpcrdma_clnt_wait(clnt, 20);
		reap_calls(s, in);
		RPCRDMA_INIT(&info);
		if (rpcrdma_clnt_info(clnt, &info) == 0)
			atomic_store(&s->connects, connects_before + info.connects);
		if (rc == -ENOTCONN) {
			/* The server is gone (killed): finish what is in flight, start afresh. */
			while (reap_calls(s, in))
				rpcrdma_clnt_wait(clnt, 20);
			rpcrdma_mem_deregister(mem);
			rpcrdma_clnt_destroy(clnt);
			clnt = NULL;
			poll(NULL, 0, 20);
		}
	}
	if (clnt) {
		/* Every call gets its status (or is counted lost) before the client goes. */
		while (reap_calls(s, in)) {
			bool all_lost = true;

			for (i = 0; i < INFLIGHT; i++)
				if (in[i].busy && !in[i].lost)
					all_lost = false;
			if (all_lost)
				break;
			rpcrdma_clnt_wait(clnt, 20);
		}
		rpcrdma_mem_deregister(mem);
		rpcrdma_clnt_destroy(clnt);
		reap_calls(s, in);	/* destroy ran the done() of the lost ones */
	}
	if (fault > 0) {
		if (softrdma_fault_fired(fault) > 0)
			atomic_fetch_add(&s->faults_fired, 1);
		softrdma_fault_remove(fault);
	}
	free(arena);
	atomic_store(&s->finished, tp_fabric_idle("soak client after destroy") ? 1 : 2);
	tp_exit(0);
}

static pid_t client_spawn(unsigned int idx, uint32_t seed)
{
	pid_t pid;

	memset(&sh->slots[idx], 0, sizeof(sh->slots[idx]));
	fflush(NULL);
	pid = fork();
	if (pid == 0)
		client_main(idx, seed);
	return pid;
}

/* Fold a finished (or killed) client's slot into the totals. */
static void fold(struct totals *t, const struct slot *s, bool killed)
{
	unsigned long issued = s->issued, done = s->completed + s->failed;
	unsigned int i;

	t->clients_run++;
	t->issued += issued;
	t->completed += s->completed;
	t->failed += s->failed;
	for (i = 0; i <= NSTATUS; i++)
		t->by_status[i] += s->by_status[i];
	t->undocumented += s->undocumented;
	t->corrupt += s->corrupt;
	t->double_done += s->double_done;
	t->lost += s->lost;
	t->connects += s->connects;
	t->connect_failures += s->connect_failures;
	t->faults_added += s->faults_added;
	t->faults_fired += s->faults_fired;
	if (killed) {
		t->killed_inflight += issued - done;
	} else {
		if (issued != done)
			t->unaccounted += issued - done;
		if (s->finished != 1)
			t->not_idle++;
	}
}

/*
 * A process this one SIGKILLed must have died by that signal: one that
 * ended on its own before (a sanitizer's or memcheck's error exit, a
 * crash, a child's early exit) would otherwise go unseen among the kills.
 */
static unsigned int check_killed(const char *who, pid_t pid, int status)
{
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		return 0;
	fprintf(stderr, "soak: %s %d ended before its kill, wait status %#x\n", who, (int)pid,
		status);
	return 1;
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [--seconds N] [--clients N] [--seed N] [--kill-ms N] "
		"[--server-kill-every N] [--fault-permille N]\n", prog);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "clients", required_argument, NULL, 'c' },
		{ "seed", required_argument, NULL, 'r' },
		{ "kill-ms", required_argument, NULL, 'k' },
		{ "server-kill-every", required_argument, NULL, 'S' },
		{ "fault-permille", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned int seconds = 20, clients = 6, kill_ms = 400, server_every = 10, permille = 30;
	uint32_t seed = (uint32_t)time(NULL), rseed;
	pid_t pids[MAX_CLIENTS], server;
	struct totals t = { 0 };
	struct tp_snapshot base, end;
	unsigned int i, kills = 0, violations = 0;
	int64_t deadline;
	int opt, status;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 's': seconds = (unsigned int)atoi(optarg); break;
		case 'c': clients = (unsigned int)atoi(optarg); break;
		case 'r': seed = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'k': kill_ms = (unsigned int)atoi(optarg); break;
		case 'S': server_every = (unsigned int)atoi(optarg); break;
		case 'f': permille = (unsigned int)atoi(optarg); break;
		default: usage(argv[0]);
		}
	}
	if (!clients || clients > MAX_CLIENTS || !kill_ms)
		usage(argv[0]);
	rseed = seed;
	printf("soak: %u s, %u clients, seed %u, a kill every ~%u ms (every %u-th the server's), "
	       "server faults %u per mille per round, SOFTRDMA_SHM=%s\n", seconds, clients, seed,
	       kill_ms, server_every, permille,
	       getenv("SOFTRDMA_SHM") ? getenv("SOFTRDMA_SHM") : "default");
	ctl = tp_ctl_new();
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!ctl || sh == MAP_FAILED || tp_rdv_dir()) {
		fprintf(stderr, "soak: no shared memory or rendezvous directory\n");
		return 77;
	}
	ctl->soak_faults_permille = permille;
	ctl->soak_seed = seed;
	server = tp_server_spawn(ctl);
	if (server < 0) {
		fprintf(stderr, "soak: the server did not start (%d)\n", (int)server);
		return 1;
	}
	/* The baseline: a listening server, before its first connection. */
	if (tp_server_request(ctl, TP_REQ_SNAPSHOT))
		return 1;
	base = ctl->snap;
	for (i = 0; i < clients; i++)
		pids[i] = client_spawn(i, seed + i * 7919);
	deadline = now_ms() + (int64_t)seconds * 1000;
	while (now_ms() < deadline) {
		poll(NULL, 0, (int)(kill_ms / 2 + (unsigned int)rand_r(&rseed) % kill_ms));
		if (now_ms() >= deadline)
			break;
		kills++;
		if (server_every && kills % server_every == 0) {
			/* The server dies; a new one listens (elsewhere); clients find it. */
			kill(server, SIGKILL);
			waitpid(server, &status, 0);
			violations += check_killed("server", server, status);
			t.server_kills++;
			memset(&ctl->tally, 0, sizeof(ctl->tally));
			atomic_store(&ctl->conns_accepted, 0);
			atomic_store(&ctl->conns_established, 0);
			atomic_store(&ctl->conns_closed, 0);
			ctl->soak_seed = rand_r(&rseed);
			server = tp_server_spawn(ctl);
			if (server < 0) {
				fprintf(stderr, "soak: the server did not restart (%d)\n", (int)server);
				atomic_store(&sh->stop, true);
				return 1;
			}
			continue;
		}
		i = (unsigned int)rand_r(&rseed) % clients;
		kill(pids[i], SIGKILL);
		waitpid(pids[i], &status, 0);
		violations += check_killed("client", pids[i], status);
		t.client_kills++;
		fold(&t, &sh->slots[i], true);
		pids[i] = client_spawn(i, rand_r(&rseed));
	}
	/* The end: every client finishes its calls and goes. */
	atomic_store(&sh->stop, true);
	for (i = 0; i < clients; i++) {
		int64_t give_up = now_ms() + CALL_TIMEOUT_MS + 30000;

		while (waitpid(pids[i], &status, WNOHANG) == 0) {
			if (now_ms() > give_up) {
				fprintf(stderr, "soak: client %d does not finish: killed\n",
					(int)pids[i]);
				kill(pids[i], SIGKILL);
				waitpid(pids[i], &status, 0);
				violations++;
				break;
			}
			poll(NULL, 0, 5);
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "soak: client %d ended with wait status %#x\n", (int)pids[i],
				status);
			violations++;
		}
		fold(&t, &sh->slots[i], false);
	}
	/* The server: quiet, back at its baseline, then clean at destroy. */
	ctl->soak_faults_permille = 0;
	if (!tp_server_quiet(ctl, 10000)) {
		fprintf(stderr, "server: %u connections accepted (%u established), %u closed\n",
			atomic_load(&ctl->conns_accepted), atomic_load(&ctl->conns_established),
			atomic_load(&ctl->conns_closed));
		violations++;
	}
	if (atomic_load(&ctl->tally.named) != atomic_load(&ctl->tally.released)) {
		fprintf(stderr, "server: %u payloads named, %u released\n",
			atomic_load(&ctl->tally.named), atomic_load(&ctl->tally.released));
		violations++;
	}
	if (tp_server_request(ctl, TP_REQ_SNAPSHOT)) {
		fprintf(stderr, "server: no answer\n");
		violations++;
	}
	end = ctl->snap;
	printf("server (last of %lu): %u connections, %u calls; %u payloads named, %u released; "
	       "registered bytes %llu (baseline %llu), heap bytes %llu (baseline %llu); "
	       "faults added %u\n", t.server_kills + 1, atomic_load(&ctl->conns_established),
	       atomic_load(&ctl->calls), atomic_load(&ctl->tally.named),
	       atomic_load(&ctl->tally.released), (unsigned long long)end.stats.registered_bytes,
	       (unsigned long long)base.stats.registered_bytes,
	       (unsigned long long)end.stats.heap_bytes, (unsigned long long)base.stats.heap_bytes,
	       atomic_load(&ctl->soak_faults_added));
	if (end.stats.registered_bytes != base.stats.registered_bytes ||
	    end.stats.heap_bytes != base.stats.heap_bytes || end.counts.qps != base.counts.qps ||
	    end.counts.mrs != base.counts.mrs || end.counts.mws != base.counts.mws ||
	    end.counts.cqs != base.counts.cqs || end.counts.cm_ids != base.counts.cm_ids ||
	    end.counts.send_wrs != base.counts.send_wrs ||
	    end.counts.recv_wrs != base.counts.recv_wrs) {
		fprintf(stderr, "server: not back at its baseline: qps %u/%u mrs %u/%u cqs %u/%u "
			"cm_ids %u/%u send_wrs %u/%u recv_wrs %u/%u (now/baseline)\n",
			end.counts.qps, base.counts.qps, end.counts.mrs, base.counts.mrs,
			end.counts.cqs, base.counts.cqs, end.counts.cm_ids, base.counts.cm_ids,
			end.counts.send_wrs, base.counts.send_wrs, end.counts.recv_wrs,
			base.counts.recv_wrs);
		violations++;
	}
	status = tp_server_stop(ctl, server);
	if (status != 0) {
		fprintf(stderr, "server: wait status %#x at stop (its own checks)\n", status);
		violations++;
	}
	printf("calls: issued %lu = completed %lu + failed %lu + in flight in killed clients %lu"
	       " + unaccounted %lu; lost %lu\n", t.issued, t.completed, t.failed,
	       t.killed_inflight, t.unaccounted, t.lost);
	printf("failed by status:");
	for (i = 0; i <= NSTATUS; i++)
		if (t.by_status[i])
			printf(" %s %lu", i < NSTATUS ? strerror(-statuses[i]) : "other",
			       t.by_status[i]);
	printf("\nkills: %lu clients, %lu servers; client processes %lu; connections %lu "
	       "(connect failures %lu); client faults %lu added, %lu fired; server faults %u "
	       "added, %u fired\n", t.client_kills, t.server_kills, t.clients_run,
	       t.connects, t.connect_failures, t.faults_added, t.faults_fired,
	       atomic_load(&ctl->soak_faults_added), atomic_load(&ctl->soak_faults_fired));
	printf("violations: undocumented statuses %lu, wrong replies %lu, done() twice %lu, "
	       "lost %lu, unaccounted %lu, clients not empty at exit %lu, other %u\n",
	       t.undocumented, t.corrupt, t.double_done, t.lost, t.unaccounted, t.not_idle,
	       violations);
	violations += (unsigned int)(t.undocumented + t.corrupt + t.double_done + t.lost +
				     t.unaccounted + t.not_idle);
	if (t.completed == 0) {
		fprintf(stderr, "soak: no call completed\n");
		violations++;
	}
	printf("soak: %s\n", violations ? "FAILED" : "ok");
	return violations ? 1 : 0;
}
