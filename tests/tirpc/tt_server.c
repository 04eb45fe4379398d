/* SPDX-License-Identifier: MIT */
/*
 * The test program's service procedures (rpcgen -M style) and the server
 * thread: svc_run() over a TCP listener (svc_vc_create) or an RDMA one
 * (rpcrdma_svc_create), nothing else differing.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tt.h"

struct tt_stats tt_stats;

/* Server-thread state. */
static SVCXPRT *tt_listener;
static SVCXPRT *tt_held_xprt;
static unsigned char *tt_read_region;	/* registered once per RDMA server */
static struct rpcrdma_mem *tt_read_mem;

static bool tt_is_rdma(const SVCXPRT *xprt)
{
	return xprt->xp_netid && strncmp(xprt->xp_netid, "rdma", 4) == 0;
}

void tt_fill(unsigned char *buf, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = tt_pattern(i, seed);
}

bool tt_check(const unsigned char *buf, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != tt_pattern(i, seed))
			return false;
	return true;
}

uint32_t tt_sum(const unsigned char *buf, size_t len)
{
	uint32_t sum = (uint32_t)len;
	size_t i;

	for (i = 0; i < len; i++)
		sum = sum * 31 + buf[i];
	return sum;
}

bool_t tt_null_1_svc(void *argp, void *result, struct svc_req *rqstp)
{
	return TRUE;
}

bool_t tt_echo_1_svc(tt_blob *argp, tt_blob *result, struct svc_req *rqstp)
{
	result->tt_blob_len = argp->tt_blob_len;
	result->tt_blob_val = malloc(argp->tt_blob_len ? argp->tt_blob_len : 1);
	if (!result->tt_blob_val)
		return FALSE;
	/* An empty opaque decodes to a NULL pointer. */
	if (argp->tt_blob_len)
		memcpy(result->tt_blob_val, argp->tt_blob_val, argp->tt_blob_len);
	return TRUE;
}

bool_t tt_fill_1_svc(u_int *argp, tt_blob *result, struct svc_req *rqstp)
{
	result->tt_blob_len = *argp;
	result->tt_blob_val = malloc(*argp ? *argp : 1);
	if (!result->tt_blob_val)
		return FALSE;
	tt_fill((unsigned char *)result->tt_blob_val, *argp, *argp);
	return TRUE;
}

bool_t tt_sum_1_svc(tt_blob *argp, u_int *result, struct svc_req *rqstp)
{
	*result = tt_sum((unsigned char *)argp->tt_blob_val, argp->tt_blob_len);
	return TRUE;
}

bool_t tt_creds_1_svc(void *argp, tt_creds *result, struct svc_req *rqstp)
{
	const struct netbuf *caller = svc_getrpccaller(rqstp->rq_xprt);
	const struct sockaddr *legacy = (const struct sockaddr *)svc_getcaller(rqstp->rq_xprt);

	memset(result, 0, sizeof(*result));
	result->flavor = (int)rqstp->rq_cred.oa_flavor;
	/* Both views of the caller must agree. */
	result->caller_family = caller->len >= sizeof(sa_family_t) &&
				((const struct sockaddr *)caller->buf)->sa_family ==
				legacy->sa_family ? legacy->sa_family : -1;
	result->netid = strdup(rqstp->rq_xprt->xp_netid ? rqstp->rq_xprt->xp_netid : "");
	if (rqstp->rq_cred.oa_flavor == AUTH_SYS) {
		const struct authsys_parms *p = (const struct authsys_parms *)rqstp->rq_clntcred;

		result->uid = p->aup_uid;
		result->gid = p->aup_gid;
		result->gids.gids_len = p->aup_len;
		result->gids.gids_val = calloc(p->aup_len + 1, sizeof(u_int));
		if (result->gids.gids_val)
			memcpy(result->gids.gids_val, p->aup_gids, p->aup_len * sizeof(u_int));
		result->machine = strdup(p->aup_machname);
	} else {
		result->machine = strdup("");
	}
	return TRUE;
}

/* A worker that answers a deferred call once the test releases it. */
static void *tt_deferred_worker(void *arg)
{
	struct rpcrdma_svc_deferred *d = arg;

	while (!atomic_load(&tt_stats.release_deferred))
		poll(NULL, 0, 1);
	atomic_fetch_sub(&tt_stats.deferred, 1);
	if (rpcrdma_svc_deferred_reply(d, (xdrproc_t)(void (*)(void))xdr_void, NULL))
		fprintf(stderr, "tt: the deferred reply failed\n");
	return NULL;
}

bool_t tt_sleep_1_svc(u_int *argp, void *result, struct svc_req *rqstp)
{
	struct timespec ts = { .tv_sec = *argp / 1000, .tv_nsec = (*argp % 1000) * 1000000L };

	if (*argp == TT_SLEEP_DEFERRED && tt_is_rdma(rqstp->rq_xprt)) {
		struct rpcrdma_svc_deferred *d = rpcrdma_svc_defer(rqstp->rq_xprt);
		pthread_t worker;

		if (!d)
			return FALSE;
		atomic_fetch_add(&tt_stats.deferred, 1);
		if (pthread_create(&worker, NULL, tt_deferred_worker, d)) {
			atomic_fetch_sub(&tt_stats.deferred, 1);
			rpcrdma_svc_deferred_drop(d);
			return FALSE;
		}
		pthread_detach(worker);
		return FALSE;	/* answered later, by the worker */
	}
	if (*argp == TT_SLEEP_BLOCKING) {
		struct timespec tick = { 0, 1000000 };
		unsigned int i;

		atomic_fetch_add(&tt_stats.blocked, 1);
		/* Bounded: 10 s at most, whatever the test does. */
		for (i = 0; i < 10000 && !atomic_load(&tt_stats.release_blocked); i++)
			nanosleep(&tick, NULL);
		atomic_fetch_sub(&tt_stats.blocked, 1);
		return TRUE;
	}
	nanosleep(&ts, NULL);
	return TRUE;
}

bool_t tt_add_1_svc(tt_pair *argp, int *result, struct svc_req *rqstp)
{
	*result = argp->a + argp->b;
	return TRUE;
}

bool_t tt_upper_1_svc(char **argp, char **result, struct svc_req *rqstp)
{
	size_t i;

	*result = strdup(*argp);
	if (!*result)
		return FALSE;
	for (i = 0; (*result)[i]; i++)
		(*result)[i] = (char)toupper((unsigned char)(*result)[i]);
	return TRUE;
}

/* No reply: the caller waits until its connection is destroyed. */
bool_t tt_hold_1_svc(void *argp, void *result, struct svc_req *rqstp)
{
	tt_held_xprt = rqstp->rq_xprt;
	atomic_fetch_add(&tt_stats.held, 1);
	return FALSE;
}

/* Destroy the connection of the held call while that call is in flight. */
bool_t tt_kill_held_1_svc(void *argp, int *result, struct svc_req *rqstp)
{
	*result = 0;
	if (tt_held_xprt && tt_held_xprt != rqstp->rq_xprt) {
		svc_destroy(tt_held_xprt);
		tt_held_xprt = NULL;
		atomic_fetch_sub(&tt_stats.held, 1);
		*result = 1;
	}
	return TRUE;
}

bool_t tt_shutdown_1_svc(void *argp, void *result, struct svc_req *rqstp)
{
	/* svc_run() returns after this round; the reply still goes out. */
	svc_exit();
	return TRUE;
}

/* Destroy the listener from inside a dispatch, then leave svc_run(). */
bool_t tt_end_listener_1_svc(void *argp, int *result, struct svc_req *rqstp)
{
	*result = tt_listener != NULL;
	if (tt_listener) {
		svc_destroy(tt_listener);
		tt_listener = NULL;
		tt_held_xprt = NULL;
	}
	svc_exit();
	return TRUE;
}

/* Transports registered with libtirpc now: the listener and the live connections. */
bool_t tt_xprts_1_svc(void *argp, int *result, struct svc_req *rqstp)
{
	int i;

	*result = 0;
	for (i = 0; i < svc_max_pollfd; i++)
		if (svc_pollfd[i].fd >= 0)
			(*result)++;
	return TRUE;
}

/*
 * The polling window a listener made with RPCRDMA_SPIN_US=*argp gets, or
 * -1. Made and destroyed here, on the server's thread: svc_run() polls the
 * descriptors of every registered listener, so another thread must not
 * close one under it. Destroying it must not cut off the connection this
 * call came on, which belongs to another listener: the reply shows it.
 */
bool_t tt_spin_default_1_svc(char **argp, int *result, struct svc_req *rqstp)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	SVCXPRT *listener;
	u_int us;

	*result = -1;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (setenv("RPCRDMA_SPIN_US", *argp, 1))
		return TRUE;
	listener = rpcrdma_svc_create((struct sockaddr *)&sin, 0, 0);
	unsetenv("RPCRDMA_SPIN_US");
	if (!listener)
		return TRUE;
	if (SVC_CONTROL(listener, RPCRDMA_SVCGET_SPIN_US, &us))
		*result = (int)us;
	svc_destroy(listener);
	return TRUE;
}

static void tt_read_release(void *arg)
{
	atomic_fetch_add(&tt_stats.read_releases, 1);
}

/*
 * READ-like: over RDMA the data leaves from registered memory by RDMA Write
 * into the client's Write chunk, without a copy; over TCP it is encoded.
 */
bool_t tt_read_1_svc(u_int *argp, tt_blob *result, struct svc_req *rqstp)
{
	SVCXPRT *xprt = rqstp->rq_xprt;

	if (*argp > TT_BIG)
		return FALSE;
	result->tt_blob_len = *argp;
	if (!tt_is_rdma(xprt)) {
		result->tt_blob_val = malloc(*argp ? *argp : 1);
		if (!result->tt_blob_val)
			return FALSE;
		tt_fill((unsigned char *)result->tt_blob_val, *argp, *argp + 1);
		return TRUE;
	}
	if (!tt_read_region) {
		tt_read_region = malloc(TT_BIG);
		if (!tt_read_region ||
		    rpcrdma_svc_mem_register(rpcrdma_svc_native(xprt), tt_read_region, TT_BIG,
					     &tt_read_mem))
			return FALSE;
	}
	tt_fill(tt_read_region, *argp, *argp + 1);
	result->tt_blob_val = (char *)tt_read_region;
	if (rpcrdma_svc_reply_ddp(xprt, tt_read_region, *argp, tt_read_release, NULL) == 0)
		atomic_fetch_add(&tt_stats.read_ddp, 1);
	return TRUE;
}

/* WRITE-like: over RDMA the data may arrive as a Read chunk, taken without a copy. */
bool_t tt_write_1_svc(tt_blob *argp, u_int *result, struct svc_req *rqstp)
{
	void *data;
	size_t len;

	*result = tt_sum((unsigned char *)argp->tt_blob_val, argp->tt_blob_len);
	if (tt_is_rdma(rqstp->rq_xprt) && rpcrdma_svc_getpayload(rqstp->rq_xprt, 0, &data, &len) == 0) {
		if (len == argp->tt_blob_len && (!len || memcmp(data, argp->tt_blob_val, len) == 0))
			atomic_fetch_add(&tt_stats.write_payloads, 1);
		else
			atomic_fetch_add(&tt_stats.write_mismatch, 1);
		rpcrdma_svc_payload_free(data);
	}
	return TRUE;
}

int tt_prog_1_freeresult(SVCXPRT *transp, xdrproc_t xdr_result, caddr_t result)
{
	tt_blob *blob = (tt_blob *)(void *)result;

	/* The DDP region is not the heap's: the library releases it. */
	if (xdr_result == (xdrproc_t)xdr_tt_blob && blob->tt_blob_val == (char *)tt_read_region)
		blob->tt_blob_val = NULL;
	xdr_free(xdr_result, result);
	return 1;
}

/* Server thread */

static SVCXPRT *tt_listen_tcp(struct tt_server *srv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	SVCXPRT *xprt;
	int fd;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return NULL;
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) || listen(fd, 64) ||
	    getsockname(fd, (struct sockaddr *)&sin, &len)) {
		close(fd);
		return NULL;
	}
	xprt = svc_vc_create(fd, 0, 0);
	if (!xprt) {
		close(fd);
		return NULL;
	}
	memcpy(&srv->addr, &sin, sizeof(sin));
	return xprt;
}

unsigned int tt_threads(void)
{
	const char *mt = getenv("TT_THREADS");

	return mt ? (unsigned int)atoi(mt) : 0;
}

static SVCXPRT *tt_create_rdma(const struct tt_server *srv, const struct sockaddr *addr)
{
	struct rpcrdma_svc_attr tune;

	if (!srv->tune)
		return tt_threads() ? rpcrdma_svc_create_mt(addr, 0, 0, tt_threads()) :
				      rpcrdma_svc_create(addr, 0, 0);
	tune = *srv->tune;
	tune.addr = addr;
	return rpcrdma_svc_create_attr(&tune, 0, 0, tt_threads());
}

static SVCXPRT *tt_listen_rdma(struct tt_server *srv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	SVCXPRT *xprt;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	xprt = tt_create_rdma(srv, (struct sockaddr *)&sin);
	if (!xprt)
		return NULL;
	memcpy(&srv->addr, xprt->xp_ltaddr.buf, xprt->xp_ltaddr.len);
	return xprt;
}

static void *tt_server_thread(void *arg)
{
	struct tt_server *srv = arg;

	tt_held_xprt = NULL;
	tt_listener = srv->rdma ? tt_listen_rdma(srv) : tt_listen_tcp(srv);
	if (!tt_listener || !svc_reg(tt_listener, TT_PROG, TT_VERS, tt_prog_1, NULL)) {
		atomic_store(&srv->failed, true);
		return NULL;
	}
	srv->listener = tt_listener;
	atomic_store(&srv->ready, true);
	if (srv->rdma && tt_threads())
		rpcrdma_svc_run(tt_listener);
	else
		svc_run();
	/* Over RDMA this ends the connections that are still open, too. */
	if (tt_listener)
		svc_destroy(tt_listener);
	tt_listener = NULL;
	svc_unreg(TT_PROG, TT_VERS);
	tt_held_xprt = NULL;
	if (tt_read_region) {
		/* Its registration went with the server. */
		free(tt_read_region);
		tt_read_region = NULL;
		tt_read_mem = NULL;
	}
	return NULL;
}

static int tt_server_launch(struct tt_server *srv, bool rdma,
			    const struct rpcrdma_svc_attr *tune)
{
	memset(srv, 0, sizeof(*srv));
	srv->rdma = rdma;
	srv->tune = tune;
	if (pthread_create(&srv->thread, NULL, tt_server_thread, srv))
		return -1;
	while (!atomic_load(&srv->ready)) {
		if (atomic_load(&srv->failed)) {
			pthread_join(srv->thread, NULL);
			return -1;
		}
		poll(NULL, 0, 1);
	}
	return 0;
}

int tt_server_start(struct tt_server *srv, bool rdma)
{
	return tt_server_launch(srv, rdma, NULL);
}

int tt_server_start_tuned(struct tt_server *srv, const struct rpcrdma_svc_attr *tune)
{
	return tt_server_launch(srv, true, tune);
}

void tt_server_stop(struct tt_server *srv)
{
	CLIENT *cl = srv->stopped ? NULL : tt_client(srv, TT_PROG, TT_VERS, 0, 0);

	if (cl) {
		tt_shutdown_1(NULL, NULL, cl);
		clnt_destroy(cl);
	}
	pthread_join(srv->thread, NULL);
}

CLIENT *tt_client(const struct tt_server *srv, rpcprog_t prog, rpcvers_t vers, u_int sendsize,
		  u_int recvsize)
{
	struct netbuf nb;
	CLIENT *cl;
	int fd;

	if (srv->rdma)
		return rpcrdma_clnt_create((const struct sockaddr *)&srv->addr, prog, vers,
					   sendsize, recvsize);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return NULL;
	nb.buf = (void *)&srv->addr;
	nb.len = nb.maxlen = sizeof(struct sockaddr_in);
	cl = clnt_vc_create(fd, &nb, prog, vers, sendsize, recvsize);
	if (!cl) {
		close(fd);
		return NULL;
	}
	clnt_control(cl, CLSET_FD_CLOSE, NULL);
	return cl;
}
