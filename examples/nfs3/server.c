/* SPDX-License-Identifier: MIT */
/* The server: listeners, threads, rpcbind (server.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rpc/rpc.h>

#include "cred.h"
#include "mount.h"
#include "nfs3_prot.h"
#include "server.h"
#include "server_tcp.h"
#include "service.h"

/* svc_exit() tries: each gives rpcrdma_svc_run() its 100 ms and then some. */
#define STOP_TRIES 50
#define STOP_WAIT_MS 200

struct nfs3_server {
	struct nfs3_export *export;
	SVCXPRT *rdma;
	struct sockaddr_in rdma_addr;
	pthread_t rdma_thread;
	bool rdma_running;
	struct nfs3_tcp *tcp;
	/* What rpcbind took, to withdraw it. */
	bool rpcb_rdma;
	bool rpcb_tcp_nfs;
	bool rpcb_tcp_mount;
};

static pthread_mutex_t server_lock = PTHREAD_MUTEX_INITIALIZER;
static bool server_running;

void nfs3_server_opts_init(struct nfs3_server_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->rdma = o->tcp = true;
	o->rdma_addr.sin_family = o->tcp_addr.sin_family = AF_INET;
	o->rdma_addr.sin_addr.s_addr = o->tcp_addr.sin_addr.s_addr = htonl(INADDR_ANY);
	o->rdma_addr.sin_port = htons(RPCRDMA_NFS_PORT);
	o->tcp_addr.sin_port = htons(NFS3_TCP_PORT);
	o->threads = NFS3_DEFAULT_THREADS;
	o->max_tcp = NFS3_DEFAULT_MAX_TCP;
	o->idle_s = NFS3_DEFAULT_IDLE_S;
}

/*
 * NFS and MOUNT on a listener. Never withdrawn with svc_unreg(): it would
 * also unset every rpcbind registration of the program, a kernel server's
 * included. The entries name rpcgen's dispatchers and stay valid.
 */
static bool register_programs(SVCXPRT *xprt)
{
	return svc_reg(xprt, NFS_PROGRAM, NFS_V3, nfs_program_3, NULL) &&
	       svc_reg(xprt, MOUNT_PROGRAM, MOUNT_V3, mount_program_3, NULL);
}

static void *rdma_main(void *arg)
{
	struct nfs3_server *s = arg;
	int rc = rpcrdma_svc_run(s->rdma);

	if (rc)
		fprintf(stderr, "nfs3: rpcrdma_svc_run: %s\n", strerror(-rc));
	return NULL;
}

static int rdma_start(struct nfs3_server *s, const struct nfs3_server_opts *o)
{
	struct rpcrdma_svc_attr tune = { RPCRDMA_SIZED(tune) };
	int rc;

	/*
	 * The NFSv3 binding is the library's, built in: nothing to register.
	 * The library's defaults (keepalive, max_connections), with our idle
	 * timeout.
	 */
	tune.addr = (const struct sockaddr *)&o->rdma_addr;
	tune.idle_timeout_ms = o->idle_s ? (int)o->idle_s * 1000 : -1;
	s->rdma = rpcrdma_svc_create_attr(&tune, 0, 0, o->threads);
	if (!s->rdma)
		return -errno;
	memcpy(&s->rdma_addr, s->rdma->xp_ltaddr.buf, sizeof(s->rdma_addr));
	if (!register_programs(s->rdma))
		return -EEXIST;
	rc = -pthread_create(&s->rdma_thread, NULL, rdma_main, s);
	s->rdma_running = rc == 0;
	return rc;
}

static bool rpcb_tcp(SVCXPRT *xprt, rpcprog_t prog, rpcvers_t vers, bool set)
{
	struct netconfig *nc = getnetconfigent("tcp");
	bool ok;

	if (!nc)
		return false;
	ok = set ? rpcb_set(prog, vers, nc, &xprt->xp_ltaddr) : rpcb_unset(prog, vers, nc);
	freenetconfigent(nc);
	return ok;
}

/*
 * NFS over rdma and tcp, MOUNT over tcp: a Linux client asks mountd over
 * TCP even when it mounts with proto=rdma. A refusal (another server owns
 * the program) or no rpcbind is said, and serving goes on.
 */
static void rpcbind_register(struct nfs3_server *s)
{
	if (s->rdma) {
		s->rpcb_rdma = rpcrdma_svc_register(s->rdma, NFS_PROGRAM, NFS_V3);
		if (!s->rpcb_rdma)
			fprintf(stderr, "nfs3: rpcbind: NFS over rdma not registered: %s\n",
				clnt_spcreateerror("rpcbind"));
	}
	if (s->tcp) {
		SVCXPRT *l = nfs3_tcp_listener(s->tcp);

		s->rpcb_tcp_nfs = rpcb_tcp(l, NFS_PROGRAM, NFS_V3, true);
		s->rpcb_tcp_mount = rpcb_tcp(l, MOUNT_PROGRAM, MOUNT_V3, true);
		if (!s->rpcb_tcp_nfs || !s->rpcb_tcp_mount)
			fprintf(stderr, "nfs3: rpcbind: NFS or MOUNT over tcp not registered\n");
	}
}

static void rpcbind_unregister(struct nfs3_server *s)
{
	if (s->rpcb_rdma)
		rpcrdma_svc_unregister(s->rdma, NFS_PROGRAM, NFS_V3);
	if (s->rpcb_tcp_nfs)
		rpcb_tcp(nfs3_tcp_listener(s->tcp), NFS_PROGRAM, NFS_V3, false);
	if (s->rpcb_tcp_mount)
		rpcb_tcp(nfs3_tcp_listener(s->tcp), MOUNT_PROGRAM, MOUNT_V3, false);
	s->rpcb_rdma = s->rpcb_tcp_nfs = s->rpcb_tcp_mount = false;
}

static bool opts_valid(const struct nfs3_server_opts *o)
{
	if (!o->export_path || (!o->rdma && !o->tcp))
		return false;
	if (o->rdma && (o->threads < 1 || o->threads > RPCRDMA_SVC_MAX_THREADS))
		return false;
	if (o->idle_s > NFS3_MAX_IDLE_S)
		return false;
	return !o->tcp || o->max_tcp >= 1;
}

/*
 * svc_exit() ends rpcrdma_svc_run() by emptying libtirpc's descriptor
 * table; a connection accepted just then refills it, so ask until the
 * threads are gone.
 */
static void rdma_stop(struct nfs3_server *s)
{
	struct timespec until;
	int i;

	for (i = 0; s->rdma_running && i < STOP_TRIES; i++) {
		svc_exit();
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += STOP_WAIT_MS * 1000000L;
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		if (pthread_timedjoin_np(s->rdma_thread, NULL, &until) == 0)
			s->rdma_running = false;
	}
	if (s->rdma_running) {
		/* Its threads still use the listener: leaving it is all that is safe. */
		fprintf(stderr, "nfs3: the RDMA threads did not stop\n");
		return;
	}
	svc_destroy(s->rdma);
	s->rdma = NULL;
}

static void server_free(struct nfs3_server *s)
{
	rpcbind_unregister(s);
	if (s->tcp)
		nfs3_tcp_stop(s->tcp);
	if (s->rdma_running)
		rdma_stop(s);
	else if (s->rdma)
		svc_destroy(s->rdma);
	/* Threads that would not stop may still serve from the export: it stays. */
	if (s->rdma_running)
		return;
	nfs3_service_export = NULL;
	nfs3_export_close(s->export);
	free(s);
}

int nfs3_server_start(const struct nfs3_server_opts *o, struct nfs3_server **out)
{
	struct nfs3_server *s;
	int rc;

	if (!opts_valid(o))
		return -EINVAL;
	pthread_mutex_lock(&server_lock);
	rc = server_running ? -EBUSY : 0;
	server_running = true;
	pthread_mutex_unlock(&server_lock);
	if (rc)
		return rc;
	rc = -ENOMEM;
	s = calloc(1, sizeof(*s));
	if (!s)
		goto fail;
	nfs3_cred_init();
	rc = nfs3_export_open(o->export_path, o->max_nodes, &s->export);
	if (rc)
		goto fail;
	/* Before any listener exists: no call can come before the export is set. */
	nfs3_service_export = s->export;
	rc = o->tcp ? nfs3_tcp_start(&o->tcp_addr, o->max_tcp, (int)o->idle_s * 1000, &s->tcp) : 0;
	if (!rc && s->tcp && !register_programs(nfs3_tcp_listener(s->tcp)))
		rc = -EEXIST;
	if (!rc && o->rdma)
		rc = rdma_start(s, o);
	if (rc)
		goto fail;
	if (o->rpcbind)
		rpcbind_register(s);
	*out = s;
	return 0;
fail:
	if (s)
		server_free(s);
	pthread_mutex_lock(&server_lock);
	server_running = false;
	pthread_mutex_unlock(&server_lock);
	return rc;
}

bool nfs3_server_rdma_addr(const struct nfs3_server *s, struct sockaddr_in *addr)
{
	if (!s->rdma)
		return false;
	*addr = s->rdma_addr;
	return true;
}

bool nfs3_server_tcp_addr(const struct nfs3_server *s, struct sockaddr_in *addr)
{
	if (!s->tcp)
		return false;
	nfs3_tcp_addr(s->tcp, addr);
	return true;
}

int nfs3_server_rdma_stats(struct nfs3_server *s, struct rpcrdma_stats *st)
{
	struct rpcrdma_svc *native = s->rdma ? rpcrdma_svc_native(s->rdma) : NULL;

	return native ? rpcrdma_svc_stats(native, st) : -ENOENT;
}

unsigned int nfs3_server_tcp_conns(struct nfs3_server *s)
{
	return s->tcp ? nfs3_tcp_conns(s->tcp) : 0;
}

void nfs3_server_stop(struct nfs3_server *s)
{
	server_free(s);
	pthread_mutex_lock(&server_lock);
	server_running = false;
	pthread_mutex_unlock(&server_lock);
}
