/* SPDX-License-Identifier: MIT */
/*
 * TCP: accepting, and a thread per connection (server_tcp.h).
 *
 * Connections that go quiet are let go as the library's RDMA server lets
 * them go (rpcrdma/svc.h): after the idle timeout without a call, and, at
 * the connection limit, the one idle the longest (no call in progress,
 * none for a second) makes room for a new one, which is refused only when
 * none is idle. Without that, as many clients that connect and never send
 * as the limit locked every other client out.
 *
 * libtirpc destroys a connection's SVCXPRT inside svc_getreq_common() when
 * the peer goes (or sends what is not a record), and closes its descriptor,
 * telling nobody. The connection's thread must know, or it would poll a
 * descriptor that may already be someone else's: every connection's
 * SVCXPRT gets a copy of svc_vc's operations whose xp_destroy marks the
 * connection dead first (tcp_destroy()). Its xp_getargs frees what a
 * failed decode left (tcp_getargs()): rpcgen's dispatchers do not.
 */
#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server_tcp.h"

/* How often a waiting thread looks at the stop flag and its idle time. */
#define TCP_TICK_MS 100
/* Quiet this long (no call in progress, none received), a connection may make room. */
#define TCP_IDLE_MS 1000
/*
 * A connection's record buffers, each way. svc_fd_create() with 0 takes
 * xdrrec's 4,000 bytes: a 1 MiB READ reply then costs 263 write()s, 6 ms
 * here, where these cost 4 (512 KiB a connection, --max-tcp of them).
 */
#define TCP_BUF_BYTES (256u << 10)

struct tcp_conn {
	struct nfs3_tcp *t;
	struct tcp_conn *next;		/* t->lock */
	SVCXPRT *xprt;
	int fd;
	pthread_t thread;
	pthread_mutex_t lock;
	bool dead;			/* lock: libtirpc destroyed xprt and closed fd */
	bool in_call;			/* lock: the thread is inside svc_getreq_common() */
	bool evicted;			/* lock: closed to make room; the thread ends */
	int64_t last_ms;		/* lock: accepted, or its last call ended */
	atomic_bool done;		/* the thread has ended: join it */
};

struct nfs3_tcp {
	SVCXPRT *listener;
	int fd;
	struct sockaddr_in addr;
	unsigned int max;
	int idle_ms;			/* 0: no idle timeout */
	pthread_t acceptor;
	atomic_bool stop;
	pthread_mutex_t lock;
	struct tcp_conn *conns;		/* lock */
	unsigned int nconns;		/* lock */
};

static pthread_mutex_t tcp_ops_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xp_ops tcp_ops;			/* svc_vc's, with ours below */
static void (*svc_vc_destroy)(SVCXPRT *);	/* svc_vc's own xp_destroy */
static bool_t (*svc_vc_getargs)(SVCXPRT *, xdrproc_t, void *);
static __thread struct tcp_conn *tcp_self;	/* the connection this thread serves */

static void tcp_destroy(SVCXPRT *xprt)
{
	struct tcp_conn *c = tcp_self;

	if (c && c->xprt == xprt) {
		pthread_mutex_lock(&c->lock);
		c->dead = true;
		pthread_mutex_unlock(&c->lock);
	}
	svc_vc_destroy(xprt);
}

/*
 * Arguments cut short (a client that died in the middle of a WRITE): what
 * the decoder made before it failed is freed, as rpcgen's dispatcher
 * returns without svc_freeargs(). XDR_FREE leaves NULL behind: freeing
 * again frees nothing.
 */
static bool_t tcp_getargs(SVCXPRT *xprt, xdrproc_t xdr_args, void *args)
{
	if (svc_vc_getargs(xprt, xdr_args, args))
		return TRUE;
	svc_freeargs(xprt, xdr_args, args);
	return FALSE;
}

/* Route @xprt's destruction through tcp_destroy(), its decoding through tcp_getargs(). */
static void tcp_hook(SVCXPRT *xprt)
{
	pthread_mutex_lock(&tcp_ops_lock);
	if (!svc_vc_destroy) {
		tcp_ops = *xprt->xp_ops;
		svc_vc_destroy = tcp_ops.xp_destroy;
		svc_vc_getargs = tcp_ops.xp_getargs;
		tcp_ops.xp_destroy = tcp_destroy;
		tcp_ops.xp_getargs = tcp_getargs;
	}
	pthread_mutex_unlock(&tcp_ops_lock);
	xprt->xp_ops = &tcp_ops;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The connection's thread is about to read a call: false if it was closed
 * to make room meanwhile (its descriptor is shut down, nothing to read).
 */
static bool conn_call_begin(struct tcp_conn *c)
{
	bool go;

	pthread_mutex_lock(&c->lock);
	go = !c->evicted;
	c->in_call = go;
	pthread_mutex_unlock(&c->lock);
	return go;
}

static void conn_call_end(struct tcp_conn *c)
{
	pthread_mutex_lock(&c->lock);
	c->in_call = false;
	c->last_ms = now_ms();
	pthread_mutex_unlock(&c->lock);
}

/* No call for the idle timeout: the thread lets the connection go. */
static bool conn_timed_out(struct tcp_conn *c)
{
	bool out;

	if (!c->t->idle_ms)
		return false;
	pthread_mutex_lock(&c->lock);
	out = now_ms() - c->last_ms >= c->t->idle_ms;
	pthread_mutex_unlock(&c->lock);
	return out;
}

static void *conn_main(void *arg)
{
	struct tcp_conn *c = arg;
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };

	tcp_self = c;
	while (!atomic_load(&c->t->stop) && !c->dead && !conn_timed_out(c)) {
		int n = poll(&pfd, 1, TCP_TICK_MS);

		if (n < 0 && errno != EINTR)
			break;
		/* A call, or the peer gone: either way libtirpc reads and decides. */
		if (n > 0) {
			if (!conn_call_begin(c))
				break;
			svc_getreq_common(c->fd);
			conn_call_end(c);
		}
	}
	if (!c->dead)
		svc_destroy(c->xprt);
	tcp_self = NULL;
	atomic_store(&c->done, true);
	return NULL;
}

static void conn_free(struct tcp_conn *c)
{
	pthread_join(c->thread, NULL);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* Join the connections whose threads have ended. */
static void conns_reap(struct nfs3_tcp *t)
{
	struct tcp_conn **link, *c, *gone = NULL;

	pthread_mutex_lock(&t->lock);
	for (link = &t->conns; (c = *link);) {
		if (atomic_load(&c->done)) {
			*link = c->next;
			c->next = gone;
			gone = c;
			t->nconns--;
		} else {
			link = &c->next;
		}
	}
	pthread_mutex_unlock(&t->lock);
	while ((c = gone)) {
		gone = c->next;
		conn_free(c);
	}
}

static void conn_start(struct nfs3_tcp *t, int fd)
{
	struct tcp_conn *c = calloc(1, sizeof(*c));
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (c)
		c->xprt = svc_fd_create(fd, TCP_BUF_BYTES, TCP_BUF_BYTES);
	if (!c || !c->xprt) {
		fprintf(stderr, "nfs3: cannot serve a TCP connection\n");
		free(c);
		close(fd);
		return;
	}
	c->t = t;
	c->fd = fd;
	c->last_ms = now_ms();
	pthread_mutex_init(&c->lock, NULL);
	tcp_hook(c->xprt);
	pthread_mutex_lock(&t->lock);
	if (pthread_create(&c->thread, NULL, conn_main, c)) {
		pthread_mutex_unlock(&t->lock);
		fprintf(stderr, "nfs3: no thread for a TCP connection\n");
		svc_destroy(c->xprt);
		pthread_mutex_destroy(&c->lock);
		free(c);
		return;
	}
	c->next = t->conns;
	t->conns = c;
	t->nconns++;
	pthread_mutex_unlock(&t->lock);
}

/* Under t->lock: @c is idle, the longest so far in *@since (or none yet). */
static bool conn_idlest(struct tcp_conn *c, int64_t now, int64_t *since)
{
	bool idlest;

	pthread_mutex_lock(&c->lock);
	idlest = !c->dead && !c->evicted && !c->in_call && now - c->last_ms >= TCP_IDLE_MS &&
		 (*since < 0 || c->last_ms <= *since);
	if (idlest)
		*since = c->last_ms;
	pthread_mutex_unlock(&c->lock);
	return idlest;
}

/*
 * Under t->lock: close the connection idle the longest to make room. The
 * list runs newest first, so of two quiet since the same millisecond the
 * older goes. False if none is idle.
 */
static bool conns_evict(struct nfs3_tcp *t)
{
	struct tcp_conn *c, *victim = NULL;
	int64_t now = now_ms(), since = -1;

	for (c = t->conns; c; c = c->next)
		if (conn_idlest(c, now, &since))
			victim = c;
	if (!victim)
		return false;
	pthread_mutex_lock(&victim->lock);
	/* Still idle: its thread sets in_call under this lock, and sees evicted there. */
	if (victim->in_call || victim->dead) {
		pthread_mutex_unlock(&victim->lock);
		return false;
	}
	victim->evicted = true;
	shutdown(victim->fd, SHUT_RDWR);
	pthread_mutex_unlock(&victim->lock);
	return true;
}

/* Room for one more: below the limit (those closed to make room aside), or made. */
static bool conns_room(struct nfs3_tcp *t)
{
	unsigned int live = 0;
	struct tcp_conn *c;
	bool room;

	pthread_mutex_lock(&t->lock);
	for (c = t->conns; c; c = c->next) {
		pthread_mutex_lock(&c->lock);
		live += !c->evicted;
		pthread_mutex_unlock(&c->lock);
	}
	room = live < t->max || conns_evict(t);
	pthread_mutex_unlock(&t->lock);
	return room;
}

static void *acceptor_main(void *arg)
{
	struct nfs3_tcp *t = arg;
	struct pollfd pfd = { .fd = t->fd, .events = POLLIN };

	while (!atomic_load(&t->stop)) {
		int fd;

		conns_reap(t);
		if (poll(&pfd, 1, TCP_TICK_MS) <= 0)
			continue;
		fd = accept4(t->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		if (!conns_room(t)) {
			fprintf(stderr, "nfs3: a TCP connection refused: %u connections, none idle\n",
				t->max);
			close(fd);
			continue;
		}
		conn_start(t, fd);
	}
	return NULL;
}

static int listen_at(const struct sockaddr_in *addr, struct sockaddr_in *bound)
{
	socklen_t len = sizeof(*bound);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), err;

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (const struct sockaddr *)addr, sizeof(*addr)) || listen(fd, 64) ||
	    getsockname(fd, (struct sockaddr *)bound, &len)) {
		err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

int nfs3_tcp_start(const struct sockaddr_in *addr, unsigned int max, int idle_ms,
		   struct nfs3_tcp **out)
{
	struct nfs3_tcp *t = calloc(1, sizeof(*t));
	int rc;

	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	t->max = max;
	t->idle_ms = idle_ms;
	t->fd = listen_at(addr, &t->addr);
	if (t->fd < 0) {
		rc = t->fd;
		goto fail;
	}
	rc = -ENOMEM;
	t->listener = svc_vc_create(t->fd, 0, 0);
	if (!t->listener) {
		close(t->fd);
		goto fail;
	}
	rc = -pthread_create(&t->acceptor, NULL, acceptor_main, t);
	if (rc) {
		svc_destroy(t->listener);
		goto fail;
	}
	*out = t;
	return 0;
fail:
	pthread_mutex_destroy(&t->lock);
	free(t);
	return rc;
}

SVCXPRT *nfs3_tcp_listener(const struct nfs3_tcp *t)
{
	return t->listener;
}

void nfs3_tcp_addr(const struct nfs3_tcp *t, struct sockaddr_in *addr)
{
	*addr = t->addr;
}

unsigned int nfs3_tcp_conns(struct nfs3_tcp *t)
{
	unsigned int n;

	conns_reap(t);
	pthread_mutex_lock(&t->lock);
	n = t->nconns;
	pthread_mutex_unlock(&t->lock);
	return n;
}

/* Wake a thread that waits inside libtirpc for the rest of a record (up to 35 s). */
static void conn_shutdown(struct tcp_conn *c)
{
	pthread_mutex_lock(&c->lock);
	if (!c->dead)
		shutdown(c->fd, SHUT_RDWR);
	pthread_mutex_unlock(&c->lock);
}

void nfs3_tcp_stop(struct nfs3_tcp *t)
{
	struct tcp_conn *c;

	atomic_store(&t->stop, true);
	pthread_join(t->acceptor, NULL);
	pthread_mutex_lock(&t->lock);
	for (c = t->conns; c; c = c->next)
		conn_shutdown(c);
	pthread_mutex_unlock(&t->lock);
	while ((c = t->conns)) {
		t->conns = c->next;
		conn_free(c);
	}
	/* Closes the listening socket. */
	svc_destroy(t->listener);
	pthread_mutex_destroy(&t->lock);
	free(t);
}
