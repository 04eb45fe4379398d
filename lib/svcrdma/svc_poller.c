/* SPDX-License-Identifier: MIT */
/*
 * Pollers: the threads that serve a server's connections. A poller visits
 * only its connections that have work (the ready list, fed by one
 * epoll_wait per pass), so idle connections cost it nothing. Each
 * connection belongs to one poller; others reach it only through the
 * poller's queue (a lock and an eventfd): poller 0 hands it the connections
 * it accepts, workers their replies (svc_handoff.c), and an async event a
 * look at its connections.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "svc_rdma.h"

#define SVC_RDMA_EVENTS 64
/*
 * A busy poller whose connections are all ready has only the listener,
 * timers and devices to hear of in its epoll set: it reads it at most
 * this often (rpcrdma_pace_due()).
 */
#define SVC_RDMA_QUIET_GAP_US 1000
/*
 * A connection that neither received a message nor held a call for this
 * long is idle, and may be closed to make room at max_connections (svc.h,
 * "Idle connections"): one that calls more often is never.
 */
#define SVC_RDMA_IDLE_MS 1000

void svc_rdma_unready(struct svcxprt_rdma *rdma)
{
	if (!rdma->sc_ready)
		return;
	list_del(&rdma->sc_ready_node);
	rdma->sc_poller->nready--;
	rdma->sc_ready = false;
}

/* The bounds, negative being off (svc.h), which keepalive.c knows as 0. */
static struct rpcrdma_ka_conf svc_rdma_ka_conf(const struct rpcrdma_svc *svc)
{
	const struct rpcrdma_svc_attr *a = &svc->sv_attr;

	return (struct rpcrdma_ka_conf){
		.keepalive_ms = a->keepalive_ms > 0 ? a->keepalive_ms : 0,
		.idle_ms = a->idle_timeout_ms > 0 ? a->idle_timeout_ms : 0,
	};
}

/* The keepalive and idle timer in the poller's set (data: &p->ka_fd), if either is on. */
static int svc_rdma_poller_timer(struct svc_rdma_poller *p)
{
	struct rpcrdma_ka_conf conf = svc_rdma_ka_conf(p->svc);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &p->ka_fd };
	int fd;

	if (!conf.keepalive_ms && !conf.idle_ms)
		return 0;
	fd = rpcrdma_ka_timer_open(p->epfd, &ev, rpcrdma_ka_period_ms(&conf));
	if (fd < 0)
		return fd;
	p->ka_fd = fd;
	return 0;
}

static void svc_rdma_wc_keepalive(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct svcxprt_rdma *rdma =
		container_of(rpcrdma_wc_cqe(wc), struct svcxprt_rdma, sc_ep.ka.cqe);

	if (!rdma->sc_ep.own_cq)
		svc_rdma_mark_ready(rdma);	/* no visit polls a shared CQ */
	rpcrdma_ka_probe_done(&rdma->sc_ep, wc);
}

/*
 * Close @rdma as rpcrdma_svc_conn_close() would, but begin now: a
 * connection polled alone (libtirpc's svc_run()) gets no visit from the
 * poller, only its own completions wake its thread.
 */
static void svc_rdma_close_begin(struct svcxprt_rdma *rdma)
{
	svc_rdma_close_now(rdma);
	svc_rdma_mark_ready(rdma);
}

/* Close @rdma for keepalive or idleness. */
static void svc_rdma_ka_close(struct svcxprt_rdma *rdma, enum rpcrdma_ka_verdict verdict,
			      const struct rpcrdma_ka_conf *conf)
{
	if (verdict == RPCRDMA_KA_IDLE) {
		rpcrdma_count_inc(rdma->sc_ep.stats->idle_closes);
		rpcrdma_info("server: closing a connection that made no call for %d ms",
			     conf->idle_ms);
	} else {
		rpcrdma_count_inc(rdma->sc_ep.stats->keepalive_closes);
		rpcrdma_warn("server: a client left a keepalive probe unanswered for %d ms; closing",
			     conf->keepalive_ms);
	}
	svc_rdma_close_begin(rdma);
}

/* Connected and not closing: what ticks and the search for an idle connection look at. */
static bool svc_rdma_conn_live(const struct svcxprt_rdma *rdma)
{
	return rdma->sc_state == SVCXPRT_CONNECTED && !rdma->sc_ep.close_pending;
}

/* A look at @rdma (keepalive.h): true if it received nothing and held no call since the last. */
static bool svc_rdma_conn_quiet(struct svcxprt_rdma *rdma, int64_t now)
{
	uint64_t recvd = rdma->sc_srq ? rdma->sc_srq_recvd : rdma->sc_recvd;

	return rpcrdma_ka_quiet(&rdma->sc_ep.ka, recvd, rdma->sc_calls_held > 0, now);
}

/* What a look over a poller's connections found idle. */
struct svc_rdma_idle {
	unsigned int count;
	int64_t since;			/* the oldest one's last activity */
	struct svcxprt_rdma *oldest;
};

/* @rdma was found quiet at @now: idle if it has been for long enough. */
static void svc_rdma_idle_note(struct svc_rdma_idle *idle, struct svcxprt_rdma *rdma, int64_t now)
{
	int64_t since = rdma->sc_ep.ka.call_ms;

	if (now - since < SVC_RDMA_IDLE_MS)
		return;
	idle->count++;
	if (!idle->oldest || since < idle->since) {
		idle->oldest = rdma;
		idle->since = since;
	}
}

/* For poller 0, choosing whom to ask for room (svc_rdma_evict_target()). */
static void svc_rdma_idle_publish(struct svc_rdma_poller *p, const struct svc_rdma_idle *idle)
{
	atomic_store(&p->idle_since, idle->since);
	atomic_store(&p->idle_count, idle->count);
}

/* The timer expired: a tick for each of the poller's connections. Returns the closes. */
int svc_rdma_poller_keepalive(struct svc_rdma_poller *p)
{
	struct rpcrdma_ka_conf conf = svc_rdma_ka_conf(p->svc);
	struct svc_rdma_idle idle = { 0 };
	int64_t now = rpcrdma_now_ms();
	struct list_node *pos;
	int closed = 0;

	if (p->ka_fd < 0 || !rpcrdma_ka_timer_expired(p->ka_fd))
		return 0;
	list_for_each(pos, &p->conns) {
		struct svcxprt_rdma *rdma = list_entry(pos, struct svcxprt_rdma, sc_node);
		enum rpcrdma_ka_verdict verdict;
		bool quiet;

		if (!svc_rdma_conn_live(rdma))
			continue;
		quiet = svc_rdma_conn_quiet(rdma, now);
		verdict = rpcrdma_ka_check(&rdma->sc_ep, &conf, now, svc_rdma_wc_keepalive);
		if (verdict != RPCRDMA_KA_ALIVE) {
			svc_rdma_ka_close(rdma, verdict, &conf);
			closed++;
		} else if (quiet) {
			svc_rdma_idle_note(&idle, rdma, now);
		}
	}
	svc_rdma_idle_publish(p, &idle);
	return closed;
}

/*
 * A request past max_connections, on @p: close its idle connection with
 * the oldest activity to make room (the look is fresh: the published one
 * may be up to a tick old). False if none is idle.
 */
static bool svc_rdma_poller_evict(struct svc_rdma_poller *p)
{
	struct svc_rdma_idle idle = { 0 };
	int64_t now = rpcrdma_now_ms();
	struct list_node *pos;

	list_for_each(pos, &p->conns) {
		struct svcxprt_rdma *rdma = list_entry(pos, struct svcxprt_rdma, sc_node);

		if (svc_rdma_conn_live(rdma) && svc_rdma_conn_quiet(rdma, now))
			svc_rdma_idle_note(&idle, rdma, now);
	}
	if (idle.oldest) {
		idle.count--;
		rpcrdma_count_inc(p->stats.idle_evictions);
		rpcrdma_info("server: closing a connection idle for %lld ms to make room "
			     "(max_connections)", (long long)(now - idle.since));
		svc_rdma_close_begin(idle.oldest);
	}
	/* Its since stays the closed one's: a bound, for choosing among pollers. */
	svc_rdma_idle_publish(p, &idle);
	return idle.oldest != NULL;
}

/*
 * Poller 0, for a request past max_connections: the poller with the oldest
 * idle connection, as the pollers last published, one request per idle
 * connection published (the count drops; the poller publishes again when
 * it looks). NULL when none published any. A lone poller looks itself.
 */
static struct svc_rdma_poller *svc_rdma_evict_target(struct rpcrdma_svc *svc)
{
	struct svc_rdma_poller *best = NULL;
	int64_t best_since = 0;
	unsigned int i, n;

	if (svc->sv_npollers == 1)
		return &svc->sv_pollers[0];
	for (i = 0; i < svc->sv_npollers; i++) {
		struct svc_rdma_poller *p = &svc->sv_pollers[i];
		int64_t since = atomic_load(&p->idle_since);

		if (atomic_load(&p->idle_count) && (!best || since < best_since)) {
			best = p;
			best_since = since;
		}
	}
	if (!best)
		return NULL;
	n = atomic_load(&best->idle_count);
	while (n && !atomic_compare_exchange_weak(&best->idle_count, &n, n - 1))
		;
	return best;
}

/* Refuse @req, counted against max_connections when it came: say why, once. */
static void svc_rdma_refuse(struct rpcrdma_svc *svc, const struct svc_rdma_conn_req *req,
			    struct rpcrdma_stats *stats, const char *why)
{
	rdma_reject(req->id, NULL, 0);
	rdma_destroy_id(req->id);
	atomic_fetch_sub(&svc->sv_nconns, 1);
	rpcrdma_count_inc(stats->conn_rejects);
	rpcrdma_warn("server: a connection request was refused: %s", why);
}

/* On @p, the poller it was given to: accept @req, making room first if it is past the limit. */
static void svc_rdma_poller_accept(struct svc_rdma_poller *p, const struct svc_rdma_conn_req *req)
{
	if (req->evict && !svc_rdma_poller_evict(p)) {
		svc_rdma_refuse(p->svc, req, &p->stats,
				"max_connections reached, and no connection is idle");
		return;
	}
	svc_rdma_accept(p, req);
}

static int svc_rdma_poller_init(struct rpcrdma_svc *svc, struct svc_rdma_poller *p)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = p };

	p->svc = svc;
	p->busy_poll = (svc->sv_attr.flags & RPCRDMA_SVC_BUSY_POLL) != 0;
	p->epfd = -1;
	p->wake_fd = -1;
	p->ka_fd = -1;
	list_init(&p->conns);
	list_init(&p->ready);
	list_init(&p->zombies);
	list_init(&p->handoffs);
	list_init(&p->adopt);
	list_init(&p->srq_busy);
	pthread_mutex_init(&p->lock, NULL);
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->epfd < 0 || p->wake_fd < 0 || epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->wake_fd, &ev))
		return -errno;
	return svc_rdma_poller_timer(p);
}

/*
 * Each device's async fd, once, in poller 0's epoll set (data: its sv_pds
 * entry). Not in the connections' descriptors: one fd under that many
 * nested epoll sets passes the kernel's limit on wake-up paths (500 at
 * depth 2: the 500th connection's epoll_ctl() failed with EINVAL).
 */
static int svc_rdma_watch_async(struct rpcrdma_svc *svc, int epfd)
{
	unsigned int i;

	for (i = 0; i < svc->sv_npds; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &svc->sv_pds[i] };
		int fd = svc->sv_pds[i].verbs->async_fd;
		int flags = fcntl(fd, F_GETFL);

		if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
		    epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev))
			return -errno;
	}
	return 0;
}

int svc_rdma_pollers_init(struct rpcrdma_svc *svc, unsigned int n)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	struct svc_rdma_poller *p0;
	unsigned int i;
	int rc;

	svc->sv_pollers = calloc(n, sizeof(*svc->sv_pollers));
	if (!svc->sv_pollers)
		return -ENOMEM;
	svc->sv_npollers = n;
	for (i = 0; i < n; i++) {
		rc = svc_rdma_poller_init(svc, &svc->sv_pollers[i]);
		if (rc)
			return rc;
	}
	for (i = 0; i < n; i++)
		rpcrdma_stat_add_addr(&svc->sv_pollers[i].stat, "server",
				      (const struct sockaddr *)&svc->sv_addr, (int)i,
				      &svc->sv_pollers[i].stats, i ? NULL : &svc->sv_stats);
	p0 = &svc->sv_pollers[0];
	if (epoll_ctl(p0->epfd, EPOLL_CTL_ADD, svc->sv_cm_channel->fd, &ev))
		return -errno;
	rc = svc_rdma_watch_async(svc, p0->epfd);
	if (rc || (!(svc->sv_attr.flags & RPCRDMA_SVC_WORKERS) && p0->ka_fd < 0))
		return rc;
	/*
	 * For adapters that poll the listener by itself (rpcrdma_svc_listen_fd()),
	 * and its connections each by itself: poller 0's queue and timer too.
	 */
	ev.data.ptr = p0;
	svc->sv_listen_epfd = epoll_create1(EPOLL_CLOEXEC);
	if (svc->sv_listen_epfd < 0 ||
	    epoll_ctl(svc->sv_listen_epfd, EPOLL_CTL_ADD, svc->sv_cm_channel->fd, &ev) ||
	    epoll_ctl(svc->sv_listen_epfd, EPOLL_CTL_ADD, p0->wake_fd, &ev) ||
	    (p0->ka_fd >= 0 && epoll_ctl(svc->sv_listen_epfd, EPOLL_CTL_ADD, p0->ka_fd, &ev)))
		return -errno;
	return 0;
}

void svc_rdma_pollers_fini(struct rpcrdma_svc *svc)
{
	unsigned int i;

	if (svc->sv_listen_epfd >= 0)
		close(svc->sv_listen_epfd);
	for (i = 0; svc->sv_pollers && i < svc->sv_npollers; i++) {
		struct svc_rdma_poller *p = &svc->sv_pollers[i];

		rpcrdma_stat_del(&p->stat);
		if (p->epfd >= 0)
			close(p->epfd);
		if (p->wake_fd >= 0)
			close(p->wake_fd);
		if (p->ka_fd >= 0)
			close(p->ka_fd);
		pthread_mutex_destroy(&p->lock);
	}
	free(svc->sv_pollers);
}

int svc_rdma_listen_fd(const struct rpcrdma_svc *svc)
{
	return svc->sv_listen_epfd >= 0 ? svc->sv_listen_epfd : svc->sv_cm_channel->fd;
}

/* Under p->lock: one more item queued; wake the poller. */
static bool svc_rdma_poller_wake_locked(struct svc_rdma_poller *p)
{
	uint64_t one = 1;

	atomic_fetch_add(&p->nwork, 1);
	/*
	 * EAGAIN: the counter is saturated, so the descriptor is readable and
	 * the poller wakes for this work too; refusing it would leave the
	 * worker's call unanswered.
	 */
	if (write(p->wake_fd, &one, sizeof(one)) == sizeof(one) || errno == EAGAIN)
		return true;
	atomic_fetch_sub(&p->nwork, 1);
	return false;
}

bool svc_rdma_poller_queue(struct svc_rdma_poller *p, struct svc_rdma_handoff *h)
{
	bool queued;

	pthread_mutex_lock(&p->lock);
	list_add_tail(&h->node, &p->handoffs);
	/* Written under the lock: the poller cannot answer, nor the server go, before. */
	queued = svc_rdma_poller_wake_locked(p);
	if (!queued)
		list_del(&h->node);
	pthread_mutex_unlock(&p->lock);
	return queued;
}

void svc_rdma_poller_assign(struct rpcrdma_svc *svc, const struct svc_rdma_conn_req *req)
{
	struct svc_rdma_poller *p = req->evict ? svc_rdma_evict_target(svc) : NULL;
	struct svc_rdma_conn_req *copy;

	/* No poller said it has an idle connection: the next one looks. */
	if (!p) {
		p = &svc->sv_pollers[svc->sv_next_poller];
		svc->sv_next_poller = (svc->sv_next_poller + 1) % svc->sv_npollers;
	}
	if (p == &svc->sv_pollers[0]) {
		svc_rdma_poller_accept(p, req);
		return;
	}
	/* Accepted on its poller, which alone touches the connection (and its SRQ). */
	copy = malloc(sizeof(*copy));
	if (copy) {
		*copy = *req;
		pthread_mutex_lock(&p->lock);
		list_add_tail(&copy->node, &p->adopt);
		if (svc_rdma_poller_wake_locked(p)) {
			pthread_mutex_unlock(&p->lock);
			return;
		}
		list_del(&copy->node);
		pthread_mutex_unlock(&p->lock);
		free(copy);
	}
	svc_rdma_refuse(svc, req, &svc->sv_stats, "cannot queue it");
}

void svc_rdma_pollers_refuse(struct rpcrdma_svc *svc)
{
	struct svc_rdma_conn_req *req;
	unsigned int i;

	for (i = 0; i < svc->sv_npollers; i++) {
		struct svc_rdma_poller *p = &svc->sv_pollers[i];

		pthread_mutex_lock(&p->lock);
		while ((req = list_pop_entry(&p->adopt, struct svc_rdma_conn_req, node))) {
			atomic_fetch_sub(&p->nwork, 1);
			rdma_reject(req->id, NULL, 0);
			rdma_destroy_id(req->id);
			atomic_fetch_sub(&svc->sv_nconns, 1);
			free(req);
		}
		pthread_mutex_unlock(&p->lock);
	}
}

/* Its connections an async event concerns have work (a close). */
static void svc_rdma_poller_async_check(struct svc_rdma_poller *p)
{
	struct list_node *pos;

	list_for_each(pos, &p->conns) {
		struct svcxprt_rdma *rdma = list_entry(pos, struct svcxprt_rdma, sc_node);

		if (atomic_load_explicit(&rdma->sc_ep.async_error, memory_order_relaxed) ||
		    atomic_load_explicit(&rdma->sc_ep.last_wqe, memory_order_relaxed))
			svc_rdma_mark_ready(rdma);
	}
}

int svc_rdma_poller_take_work_slow(struct svc_rdma_poller *p, bool woken)
{
	struct list_node adopt, handoffs;
	struct svc_rdma_conn_req *req;
	struct svc_rdma_handoff *h;
	uint64_t count;
	int n = 0;

	if (atomic_exchange(&p->async_check, false))
		svc_rdma_poller_async_check(p);
	if (!woken && !atomic_load(&p->nwork))
		return 0;
	if (read(p->wake_fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		return 0;
	list_init(&adopt);
	list_init(&handoffs);
	pthread_mutex_lock(&p->lock);
	list_splice_tail(&p->adopt, &adopt);
	list_splice_tail(&p->handoffs, &handoffs);
	pthread_mutex_unlock(&p->lock);
	while ((req = list_pop_entry(&adopt, struct svc_rdma_conn_req, node))) {
		atomic_fetch_sub(&p->nwork, 1);
		svc_rdma_poller_accept(p, req);
		free(req);
		n++;
	}
	while ((h = list_pop_entry(&handoffs, struct svc_rdma_handoff, node))) {
		atomic_fetch_sub(&p->nwork, 1);
		svc_rdma_handoff_done(h);
		n++;
	}
	return n;
}

void svc_rdma_pollers_async(struct rpcrdma_svc *svc)
{
	unsigned int i;

	svc_rdma_poller_async_check(&svc->sv_pollers[0]);
	for (i = 1; i < svc->sv_npollers; i++) {
		struct svc_rdma_poller *p = &svc->sv_pollers[i];
		uint64_t one = 1;

		atomic_store(&p->async_check, true);
		/* A spurious wake-up: take_work finds the flag. */
		if (write(p->wake_fd, &one, sizeof(one)) < 0)
			continue;
	}
}

static struct svc_rdma_pd *svc_rdma_wakeup_pd(struct rpcrdma_svc *svc, void *ptr)
{
	struct svc_rdma_pd *pd = ptr;

	return pd >= svc->sv_pds && pd < svc->sv_pds + svc->sv_npds ? pd : NULL;
}

/*
 * @rdma's wait set woke: its completion channel holds the event of its
 * last arm (or its CM channel woke, tagged too). Its next arm takes that
 * one event, not every event until the channel is empty, and need not look
 * at the device's async events: poller 0 listens to them (a system call
 * each spared).
 */
static void svc_rdma_woken(struct svcxprt_rdma *rdma)
{
	rdma->sc_ep.ready |= RPCRDMA_READY_KNOWN | RPCRDMA_READY_COMP | RPCRDMA_READY_CM;
	if (rdma->sc_arm_early)
		svc_rdma_woken_early(rdma);
	svc_rdma_mark_ready(rdma);
}

/* Descriptors that woke: the listener's, devices', the queue's, or a connection's. */
static int svc_rdma_take_wakeups(struct svc_rdma_poller *p)
{
	struct rpcrdma_svc *svc = p->svc;
	struct epoll_event evs[SVC_RDMA_EVENTS];
	int n, i, done = 0;

	n = epoll_wait(p->epfd, evs, SVC_RDMA_EVENTS, 0);
	for (i = 0; i < n; i++) {
		void *ptr = evs[i].data.ptr;
		struct svc_rdma_pd *pd;

		if (!ptr) {
			done += rpcrdma_svc_listen_poll(svc);
		} else if (ptr == p) {
			done += svc_rdma_poller_take_work(p, true);
		} else if (ptr == &p->ka_fd) {
			done += svc_rdma_poller_keepalive(p);
		} else if ((pd = svc_rdma_wakeup_pd(svc, ptr))) {
			rpcrdma_async_poll(pd->verbs);
			svc_rdma_pollers_async(svc);
		} else if (p->nsrqs && svc_rdma_srq_woken(p, ptr)) {
			continue;	/* its CQs are polled next */
		} else if (svc_rdma_cm_tagged(ptr)) {
			struct svcxprt_rdma *rdma = svc_rdma_cm_untag(ptr);

			rdma->sc_cm_due = true;
			svc_rdma_mark_ready(rdma);
		} else {
			svc_rdma_woken(ptr);
		}
	}
	return done;
}

/*
 * Should this idle pass read the wake-ups? A pass of the caller's always
 * does: it may come right after what it is to find, woken from a sleep on
 * the descriptor. The library's own spinning (svc_rdma_poller_spin())
 * would otherwise spin on epoll_wait(): there one idle pass in
 * RPCRDMA_PACE_POLLS reads them, and new work is heard of a few passes
 * late at most. A caller spinning with RPCRDMA_SVC_BUSY_POLL, whose idle
 * passes take some tens of nanoseconds, reads them at most every
 * SVC_RDMA_IDLE_GAP_US.
 */
#define SVC_RDMA_IDLE_GAP_US 20
static bool svc_rdma_idle_pace(struct svc_rdma_poller *p)
{
	/* What it would hear of there has slept a millisecond: it can wait a little longer. */
	if (svc_rdma_caller_spins(p))
		return rpcrdma_pace_due(&p->idle_pace, RPCRDMA_PACE_POLLS, SVC_RDMA_IDLE_GAP_US);
	return !p->spinning || p->idle_passes % RPCRDMA_PACE_POLLS == 0;
}

/*
 * Should this busy pass read them? One in RPCRDMA_PACE_POLLS does, so that
 * a sleeping connection's call waits a few passes at most. When the last
 * pass visited every connection, none was asleep: then only once a
 * millisecond, and a poller busy with one client makes almost no system
 * calls.
 */
static bool svc_rdma_busy_pace(struct svc_rdma_poller *p)
{
	return rpcrdma_pace_tick(&p->wake_pace, RPCRDMA_PACE_POLLS) &&
	       (p->visits < p->nconns || rpcrdma_pace_clock(&p->wake_pace, SVC_RDMA_QUIET_GAP_US));
}

/*
 * Visit the connections that were ready when it began, from the front (a
 * visit's marks go to the back, for the next round). Returns their work.
 */
static rpcrdma_always_inline int svc_rdma_visit_ready(struct svc_rdma_poller *p, int budget)
{
	unsigned int left;
	int n = 0;

	for (left = p->nready; left; left--) {
		struct svcxprt_rdma *rdma;
		int rc;

		rdma = list_pop_entry(&p->ready, struct svcxprt_rdma, sc_ready_node);
		if (!rdma)
			break;
		p->nready--;
		rdma->sc_ready = false;
		rc = svc_rdma_conn_visit(rdma, budget);
		if (rc > 0)
			n += rc;
		p->visits++;
	}
	return n;
}

/* A pass; inlined into the application's polls, which make most of them. */
static rpcrdma_always_inline int svc_rdma_poller_pass(struct svc_rdma_poller *p, int budget)
{
	bool heard;
	int n;

	svc_rdma_note_poller(p);
	p->passes++;
	/*
	 * epoll_wait() is a system call: while connections have work, the
	 * wake-ups of the rest (armed connections, the listener, timers) are
	 * read by one pass in a few (svc_rdma_busy_pace()), and the queue's
	 * work, which an atomic counts, on every pass. With nothing ready they
	 * are read too, but by one pass in RPCRDMA_PACE_POLLS of a run of idle
	 * passes in quick succession (svc_rdma_idle_pace()). Shared CQs (SRQ)
	 * are heard of only there: with them, every pass reads it.
	 */
	heard = p->nsrqs || (list_empty(&p->ready) ? svc_rdma_idle_pace(p) : svc_rdma_busy_pace(p));
	if (heard) {
		p->wake_pace.polls = 0;
		n = svc_rdma_take_wakeups(p);
	} else {
		n = svc_rdma_poller_take_work(p, false);
	}
	/* Without SRQs (the default) no shared CQ is ever busy: spare the call. */
	if (!list_empty(&p->srq_busy))
		n += svc_rdma_srq_poll(p, budget);
	p->visits = 0;
	p->armed = 0;
	n += svc_rdma_visit_ready(p, budget);
	/*
	 * A connection it visited found nothing and went to sleep (armed):
	 * the next call may well be on a sleeping one. Listen now, not a pass
	 * later: with calls spread over many connections, each call would
	 * otherwise cost a pass that finds nothing. Once per pass that arms,
	 * and a connection arms once per sleep.
	 */
	if (!heard && p->armed) {
		/* svc_rdma_busy_pace() asks how many were visited: the first round's, once each. */
		unsigned int visits = p->visits;

		n += svc_rdma_take_wakeups(p);
		n += svc_rdma_visit_ready(p, budget);
		p->visits = visits;
	}
	p->idle_passes = n || !list_empty(&p->ready) ? 0 : p->idle_passes + 1;
	rpcrdma_stat_tick(&p->stat, false);
	return n;
}

int svc_rdma_poller_poll(struct svc_rdma_poller *p, int budget)
{
	return svc_rdma_poller_pass(p, budget);
}

RPCRDMA_EXPORT int rpcrdma_svc_poll(struct rpcrdma_svc *svc, int budget)
{
	if (!svc || budget <= 0)
		return -EINVAL;
	SVC_RDMA_GUARD(&svc->sv_pollers[0], return -EBUSY);
	return svc_rdma_poller_pass(&svc->sv_pollers[0], budget);
}

RPCRDMA_EXPORT int rpcrdma_svc_poller_poll(struct rpcrdma_svc *svc, unsigned int i, int budget)
{
	if (!svc || i >= svc->sv_npollers || budget <= 0)
		return -EINVAL;
	SVC_RDMA_GUARD(&svc->sv_pollers[i], return -EBUSY);
	return svc_rdma_poller_pass(&svc->sv_pollers[i], budget);
}

/* A pass of a wait: work, or connections it found drained (armed by it) still ready. */
static int svc_rdma_poller_wait_pass(struct svc_rdma_poller *p)
{
	int n = svc_rdma_poller_poll(p, 64);

	if (n == 0 && (!list_empty(&p->ready) || svc_rdma_srq_busy(p)))
		n = 1;
	return n;
}

/*
 * Poll for up to p->spin_us before sleeping: work that comes meanwhile costs
 * no sleep and no wake-up. One pass in RPCRDMA_PACE_POLLS reads the epoll
 * set (svc_rdma_idle_pace()); the others look at the handoff queue only.
 */
static int svc_rdma_poller_spin(struct svc_rdma_poller *p)
{
	unsigned int us = atomic_load_explicit(&p->spin_us, memory_order_relaxed);
	int64_t end;
	int n = 0;

	if (!us)
		return 0;
	end = rpcrdma_now_us() + us;
	p->spinning = true;
	while (n == 0 && rpcrdma_now_us() < end) {
		rpcrdma_cpu_relax();
		n = svc_rdma_poller_wait_pass(p);
	}
	p->spinning = false;
	return n;
}

int svc_rdma_poller_wait(struct svc_rdma_poller *p, int timeout_ms)
{
	struct epoll_event ev;
	int n;

	/* Its passes arm what they find drained: it may sleep after them. */
	p->waiting = true;
	n = svc_rdma_poller_wait_pass(p);
	if (n == 0)
		n = svc_rdma_poller_spin(p);
	if (n == 0) {
		rpcrdma_stat_tick(&p->stat, true);
		if (epoll_wait(p->epfd, &ev, 1, timeout_ms) < 0 && errno != EINTR)
			n = -errno;
		else
			n = svc_rdma_poller_poll(p, 64);
	}
	p->waiting = false;
	return n;
}
