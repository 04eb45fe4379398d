/* SPDX-License-Identifier: MIT */
/* Keepalive probes and the idle timeout (see keepalive.h). */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/timerfd.h>

#include "ep.h"
#include "keepalive.h"
#include "stat.h"

/* Ticks per bound: a close comes at most a quarter late. */
#define RPCRDMA_KA_TICKS 4
#define RPCRDMA_KA_MAX_PERIOD_MS 1000

int rpcrdma_ka_period_ms(const struct rpcrdma_ka_conf *conf)
{
	int shortest = conf->keepalive_ms;
	int period;

	if (conf->idle_ms && (!shortest || conf->idle_ms < shortest))
		shortest = conf->idle_ms;
	period = shortest / RPCRDMA_KA_TICKS;
	if (period < RPCRDMA_KA_MIN_MS)
		return RPCRDMA_KA_MIN_MS;
	return period > RPCRDMA_KA_MAX_PERIOD_MS ? RPCRDMA_KA_MAX_PERIOD_MS : period;
}

int rpcrdma_ka_timer_open(int epfd, struct epoll_event *ev, int period_ms)
{
	struct itimerspec its = {
		.it_interval = { period_ms / 1000, (long)(period_ms % 1000) * 1000000 },
	};
	int fd, err;

	its.it_value = its.it_interval;
	fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (timerfd_settime(fd, 0, &its, NULL) || epoll_ctl(epfd, EPOLL_CTL_ADD, fd, ev)) {
		err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

bool rpcrdma_ka_timer_expired(int fd)
{
	uint64_t expirations;

	return read(fd, &expirations, sizeof(expirations)) == (ssize_t)sizeof(expirations);
}

/* A zero-length RDMA Write: it moves no data, so the responder checks no rkey. */
static bool rpcrdma_ka_probe(struct rpcrdma_ep *ep, void (*done)(struct ibv_cq *, struct ibv_wc *))
{
	struct rpcrdma_keepalive *ka = &ep->ka;
	struct ibv_send_wr wr = {
		.wr_id = rpcrdma_cqe_id(&ka->cqe),
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
	};

	/* A full send queue is a busy connection: no probe is needed. */
	if (!rpcrdma_sq_get(ep, 1))
		return false;
	ka->cqe.done = done;
	if (rpcrdma_ep_post_send(ep, &wr, 1, NULL))
		return false;
	rpcrdma_count_inc(ep->stats->keepalives);
	return true;
}

void rpcrdma_ka_start(struct rpcrdma_keepalive *ka, int64_t now)
{
	ka->recvd = 0;
	ka->call_ms = now;
	ka->heard_ms = now;
}

bool rpcrdma_ka_quiet(struct rpcrdma_keepalive *ka, uint64_t recvd, bool busy, int64_t now)
{
	if (ka->call_ms && recvd == ka->recvd && !busy)
		return true;
	ka->recvd = recvd;
	ka->call_ms = now;
	ka->heard_ms = now;
	return false;
}

enum rpcrdma_ka_verdict rpcrdma_ka_check(struct rpcrdma_ep *ep, const struct rpcrdma_ka_conf *conf,
					 int64_t now, void (*done)(struct ibv_cq *, struct ibv_wc *))
{
	struct rpcrdma_keepalive *ka = &ep->ka;

	if (ka->acked) {
		ka->acked = false;
		ka->probe_ms = 0;
		ka->heard_ms = now;
	}
	if (conf->idle_ms && now - ka->call_ms >= conf->idle_ms)
		return RPCRDMA_KA_IDLE;
	if (!conf->keepalive_ms)
		return RPCRDMA_KA_ALIVE;
	if (ka->probe_ms)
		return now - ka->probe_ms >= conf->keepalive_ms ? RPCRDMA_KA_SILENT : RPCRDMA_KA_ALIVE;
	if (now - ka->heard_ms >= conf->keepalive_ms && rpcrdma_ka_probe(ep, done))
		ka->probe_ms = now;
	return RPCRDMA_KA_ALIVE;
}

enum rpcrdma_ka_verdict rpcrdma_ka_tick(struct rpcrdma_ep *ep, const struct rpcrdma_ka_conf *conf,
					uint64_t recvd, bool busy, int64_t now,
					void (*done)(struct ibv_cq *, struct ibv_wc *))
{
	rpcrdma_ka_quiet(&ep->ka, recvd, busy, now);
	return rpcrdma_ka_check(ep, conf, now, done);
}

void rpcrdma_ka_probe_done(struct rpcrdma_ep *ep, const struct ibv_wc *wc)
{
	rpcrdma_sq_put(ep, 1);
	if (wc->status == IBV_WC_SUCCESS) {
		ep->ka.acked = true;
		return;
	}
	if (wc->status != IBV_WC_WR_FLUSH_ERR)
		rpcrdma_count_inc(ep->stats->keepalive_closes);
	rpcrdma_ep_wc_error(ep, wc, "keepalive probe");
}
