/* SPDX-License-Identifier: MIT */
/*
 * Faults between processes: a server process and client processes, forked
 * from a parent that never touches the fabric itself (so every child starts
 * with a fabric of its own), talking over softrdma's socket backend
 * (SOFTRDMA_SHM=0) or its shared-memory path. Shared by the fault matrix
 * (test_fault_2proc.c) and the soak (tests/soak/soak.c).
 *
 * The parent and its children share one struct tp_ctl (an anonymous shared
 * mapping made before the first fork). The server process answers requests
 * put in its mailbox (install a fault, snapshot its counters) between polls.
 */
#ifndef E2E_TWOPROC_H
#define E2E_TWOPROC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <rpcrdma/rpcrdma.h>

#include "softrdma.h"
#include "ddp.h"

/*
 * The RPC shapes: which chunks a call uses. Every one is answered by the
 * server's ddp_serve_call() protocol (ddp.h) plus TP_OP_SINK.
 */
enum tp_shape {
	TP_INLINE,		/* inline call, inline reply */
	TP_LONG_CALL,		/* a 9000-byte message: position-zero Read chunk */
	TP_LONG_CALL_REPLY,	/* a long call echoed back through a Reply chunk */
	TP_WRITE,		/* a result in a Write chunk */
	TP_REPLY,		/* a long reply in a Reply chunk */
	TP_READ,		/* a payload in a Read chunk, a short reply */
	TP_READ_WRITE,		/* payload in, result out through a Write chunk */
	TP_READ_REPLY,		/* payload in, spliced into a long reply */
	TP_WRITE_REPLY,		/* a Write chunk and a Reply chunk offered */
	TP_READ_WRITE_REPLY,	/* all three */
	TP_NSHAPES,
};

/* The server answers TP_OP_SINK with the echo of the call's head and op only (16 bytes). */
#define TP_OP_SINK 9

extern const char *const tp_shape_names[TP_NSHAPES];

/* The client's registered arena: one call's buffers per slot. */
#define TP_SLOT (64 * 1024)
#define TP_SLOTS 8
#define TP_ARENA (TP_SLOT * TP_SLOTS)

enum tp_request {
	TP_REQ_NONE,
	TP_REQ_FAULT,		/* install @fault (with @kill_on_fire: SIGKILL self when it fires) */
	TP_REQ_CLEAR,		/* remove every fault; @fired = the last one's firings */
	TP_REQ_SNAPSHOT,	/* fill @snap */
	TP_REQ_MARK,		/* tp_marks_add() */
	TP_REQ_MARKED,		/* tp_marks_read() into @marked */
};

/*
 * Send-queue opcodes a position may name, up to Send With Invalidate; the
 * Receive counts at index TP_NOPCODES.
 */
#define TP_NOPCODES (IBV_WR_SEND_WITH_INV + 1)
#define TP_NMARKS (TP_NOPCODES + 1)

struct tp_snapshot {
	struct rpcrdma_stats stats;
	struct softrdma_counts counts;
};

struct tp_ctl {
	/* The server process. */
	atomic_int ready;			/* 1 listening, < 0 -errno */
	atomic_bool stop;
	struct sockaddr_storage addr;
	atomic_uint conns_accepted;	/* each is reported CLOSED once (svc.h) */
	atomic_uint conns_established;
	atomic_uint conns_closed;
	atomic_uint calls;
	struct ddp_tally tally;			/* payloads named and released */

	/* The server's mailbox: the parent bumps @req_seq, the server @done_seq. */
	atomic_uint req_seq;
	atomic_uint done_seq;
	enum tp_request req;
	struct softrdma_fault fault;
	bool kill_on_fire;
	int req_rc;
	int fired;
	struct tp_snapshot snap;
	int marked[TP_NMARKS];

	/* Soak: the server adds random faults of its own at this rate. */
	unsigned int soak_faults_permille;	/* per 20 ms poll round */
	uint32_t soak_seed;
	atomic_uint soak_faults_added;
	atomic_uint soak_faults_fired;
};

/*
 * End a forked child with @status. exit(), not _exit(): the fabric's
 * destructors run (rdma_cm's device is closed, then softrdma/verbs/fabric.c's
 * fab_exit() stops and joins the progress and net threads), so the process
 * ends with no thread of the fabric running and memcheck's leak check of it
 * means something (threads still running at _exit() leave their stacks
 * "possibly lost"). Safe in a child: stdio is flushed before every fork(),
 * and the parent's one atexit handler (tp_rdv_dir()) checks the pid.
 */
__attribute__((noreturn)) void tp_exit(int status);

/*
 * SIGKILL this process on purpose (a fault case's kill). Under memcheck
 * the leak check is turned off first, for this process only: valgrind
 * checks leaks when a process kills itself, and one that dies mid-call
 * holds everything in use, with the fabric's threads running, which it
 * would report as lost. Its memory errors are still reported (with
 * --exit-on-first-error=yes it exits with --error-exitcode instead of
 * dying by the signal, which the parent counts as a failure).
 */
__attribute__((noreturn)) void tp_kill_self(void);

/* A shared, zeroed struct tp_ctl, or NULL. */
struct tp_ctl *tp_ctl_new(void);

/* Make a rendezvous directory for the run (SOFTRDMA_DIR), removed at exit. */
int tp_rdv_dir(void);

/*
 * Fork the server process (ctl->ready is reset first) and wait until it
 * listens. Returns its pid, or a negative errno.
 */
pid_t tp_server_spawn(struct tp_ctl *ctl);
/* Ask the server to stop, reap it. Returns its wait status, or -1 on timeout (killed). */
int tp_server_stop(struct tp_ctl *ctl, pid_t pid);
/* Post a request and wait (up to 10 s) for the server to answer it. Returns 0 or -ETIMEDOUT. */
int tp_server_request(struct tp_ctl *ctl, enum tp_request req);

/* Has the server closed every connection it accepted? Waits up to @timeout_ms. */
bool tp_server_quiet(struct tp_ctl *ctl, int timeout_ms);

/* Client attributes aimed at the server of @ctl. */
void tp_clnt_attr(struct tp_ctl *ctl, struct sockaddr_storage *addr, struct rpcrdma_clnt_attr *attr);

/*
 * One call of @shape in slot @slot of @arena (registered): filled, sent with
 * @xid, and checked when it completes. Submits; tp_call_finish() checks.
 */
struct tp_call {
	struct rpcrdma_call call;
	enum tp_shape shape;
	uint32_t xid;
	unsigned char *base;
	bool submitted;		/* rpcrdma_clnt_submit() returned 0 */
	atomic_int done_runs;	/* how often done() ran: exactly once */
};

int tp_call_submit(struct rpcrdma_clnt *clnt, struct tp_call *tc, enum tp_shape shape,
		   unsigned char *base, uint32_t xid, int timeout_ms);
/* After done(): 0 and the bytes right, or the status, or -EBADMSG (wrong bytes). */
int tp_call_check(const struct tp_call *tc);
/* Submit and wait. Returns as tp_call_check(), or the submit's error. */
int tp_call_sync(struct rpcrdma_clnt *clnt, struct tp_call *tc, enum tp_shape shape,
		 unsigned char *base, uint32_t xid, int timeout_ms);

/* Is @status one that struct rpcrdma_call documents (0 included)? */
bool tp_status_documented(int status);

/* Does this process's fabric hold nothing any more? If not, print what is left under @who. */
bool tp_fabric_idle(const char *who);

/*
 * Count this process's WRs as the fault engine sees them: a marker fault per
 * opcode and one for Receives (no-op DELAYs of 1 us that fire on every
 * match), then how often each fired. Each WR is checked once, so these
 * are the positions a fault can take.
 */
int tp_marks_add(int ids[TP_NMARKS]);
void tp_marks_read(const int ids[TP_NMARKS], int counts[TP_NMARKS]);

/*
 * SIGKILL this process as soon as fault @id fires (a thread that watches).
 * @flag, if not NULL, is set (in shared memory) just before.
 */
int tp_kill_on_fire(int id, atomic_int *flag);

#endif /* E2E_TWOPROC_H */
