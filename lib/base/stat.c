/* SPDX-License-Identifier: MIT */
/*
 * rpcrdma_stat_serve(): the counters of this process's clients and servers
 * on a Unix socket, for rpcrdma-stat. A thread of ours accepts on the
 * socket and answers each connection with one snapshot, as text, then
 * closes it:
 *
 *   rpcrdma-stat 1
 *   <source> calls=<n> replies=<n> ... idle_closes=<n>
 *   ...
 *   end
 *
 * one line per source, the counters of struct rpcrdma_stats by name. The
 * copies it reads are published by their owners (stat.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "compiler.h"
#include "stat.h"
#include "util.h"

atomic_bool rpcrdma_stat_on;

static pthread_mutex_t stat_lock = PTHREAD_MUTEX_INITIALIZER;
static struct list_node stat_sources = { &stat_sources, &stat_sources };
static struct {
	pthread_t thread;
	int listen_fd;
	int stop_fd;
	bool running;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
} stat_srv;
static pthread_once_t stat_env_once = PTHREAD_ONCE_INIT;

/* The counters by name, in the order of struct rpcrdma_stats. */
#define STAT_FIELDS(X)                                                                  \
	X(calls) X(replies) X(rdma_errors) X(dropped) X(read_chunks) X(write_chunks)    \
	X(reply_chunks) X(bounce_bytes) X(flushes) X(wc_errors) X(credit_stalls)         \
	X(sq_waits) X(retransmits) X(timeouts) X(connects) X(disconnects)               \
	X(registered_bytes) X(heap_bytes) X(conn_visits) X(conn_rejects)              \
	X(keepalives) X(keepalive_closes) X(idle_closes) X(credit_overruns)            \
	X(reply_overflows) X(idle_evictions)

void rpcrdma_stats_sum(struct rpcrdma_stats *dst, const struct rpcrdma_stats *src)
{
#define STAT_ADD(f) dst->f += rpcrdma_count_read(src->f);
	STAT_FIELDS(STAT_ADD)
#undef STAT_ADD
}

void rpcrdma_stats_load(struct rpcrdma_stats *dst, const struct rpcrdma_stats *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->struct_size = sizeof(*dst);
	rpcrdma_stats_sum(dst, src);
}

void rpcrdma_stat_publish(struct rpcrdma_stat_src *s, bool force)
{
	int64_t now = rpcrdma_now_ms();

	if (!force && now - s->last_ms < RPCRDMA_STAT_PERIOD_MS)
		return;
	s->last_ms = now;
	pthread_mutex_lock(&s->lock);
	rpcrdma_stats_load(&s->snap, s->live);
	if (s->extra)
		rpcrdma_stats_sum(&s->snap, s->extra);
	pthread_mutex_unlock(&s->lock);
}

static void stat_env(void)
{
	const char *path = getenv("RPCRDMA_STAT_SOCKET");
	int rc;

	if (path && *path) {
		rc = rpcrdma_stat_serve(path);
		if (rc)
			rpcrdma_warn("RPCRDMA_STAT_SOCKET=%s: %s", path, strerror(-rc));
	}
}

void rpcrdma_stat_add(struct rpcrdma_stat_src *s, const char *name,
		      const struct rpcrdma_stats *live, const struct rpcrdma_stats *extra)
{
	pthread_once(&stat_env_once, stat_env);
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->live = live;
	s->extra = extra;
	s->snap.struct_size = sizeof(s->snap);
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_lock(&stat_lock);
	list_add_tail(&s->node, &stat_sources);
	s->listed = true;
	pthread_mutex_unlock(&stat_lock);
}

void rpcrdma_stat_add_addr(struct rpcrdma_stat_src *s, const char *kind, const struct sockaddr *sa,
			   int index, const struct rpcrdma_stats *live,
			   const struct rpcrdma_stats *extra)
{
	char host[INET6_ADDRSTRLEN] = "?", name[96];
	unsigned int port = 0;

	if (sa->sa_family == AF_INET6) {
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, host, sizeof(host));
		port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	} else if (sa->sa_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, host, sizeof(host));
		port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
	}
	if (index >= 0)
		snprintf(name, sizeof(name), "%s/%s:%u/poller%d", kind, host, port, index);
	else
		snprintf(name, sizeof(name), "%s/%s:%u", kind, host, port);
	rpcrdma_stat_add(s, name, live, extra);
}

void rpcrdma_stat_del(struct rpcrdma_stat_src *s)
{
	if (!s->listed)
		return;
	pthread_mutex_lock(&stat_lock);
	list_del(&s->node);
	s->listed = false;
	pthread_mutex_unlock(&stat_lock);
	pthread_mutex_destroy(&s->lock);
}

/* Room for @need more bytes after @n in *@buf (*@cap bytes): false if memory ran out. */
static bool stat_reserve(char **buf, size_t *cap, size_t n, size_t need)
{
	char *grown;

	if (*cap - n >= need)
		return true;
	grown = realloc(*buf, *cap * 2);
	if (!grown)
		return false;
	*buf = grown;
	*cap *= 2;
	return true;
}

/* One source's line: its name, then its counters by name. */
static size_t stat_line(char *out, size_t room, const struct rpcrdma_stat_src *s,
			const struct rpcrdma_stats *st)
{
	int w = snprintf(out, room, "%s", s->name);

#define STAT_PUT(f) w += snprintf(out + w, room - (size_t)w, " " #f "=%llu", \
				  (unsigned long long)st->f);
	STAT_FIELDS(STAT_PUT)
#undef STAT_PUT
	w += snprintf(out + w, room - (size_t)w, "\n");
	return (size_t)w;
}

/* One snapshot of every source, as text, into a buffer of ours; NULL if memory ran out. */
static char *stat_render(size_t *len)
{
	/* A line is under 1 KiB: 96 bytes of name, 20 counters of at most 40. */
	const size_t line_max = 1024;
	size_t cap = 4096, n;
	struct list_node *pos;
	char *buf = malloc(cap);
	bool ok = true;

	if (!buf)
		return NULL;
	n = (size_t)snprintf(buf, cap, "rpcrdma-stat 1\n");
	pthread_mutex_lock(&stat_lock);
	list_for_each(pos, &stat_sources) {
		struct rpcrdma_stat_src *s = list_entry(pos, struct rpcrdma_stat_src, node);
		struct rpcrdma_stats st;

		pthread_mutex_lock(&s->lock);
		st = s->snap;
		pthread_mutex_unlock(&s->lock);
		ok = stat_reserve(&buf, &cap, n, line_max);
		if (!ok)
			break;
		n += stat_line(buf + n, cap - n, s, &st);
	}
	pthread_mutex_unlock(&stat_lock);
	if (!ok || !stat_reserve(&buf, &cap, n, 8)) {
		free(buf);
		return NULL;
	}
	n += (size_t)snprintf(buf + n, cap - n, "end\n");
	*len = n;
	return buf;
}

static void stat_answer(int fd)
{
	size_t len = 0, off = 0;
	char *text = stat_render(&len);
	ssize_t w;

	while (text && off < len) {
		w = send(fd, text + off, len - off, MSG_NOSIGNAL);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	free(text);
	close(fd);
}

static void *stat_main(void *arg)
{
	struct pollfd fds[2] = { { .fd = stat_srv.listen_fd, .events = POLLIN },
				 { .fd = stat_srv.stop_fd, .events = POLLIN } };
	struct timeval tv = { .tv_sec = 1 };

	(void)arg;
	for (;;) {
		int fd;

		if (poll(fds, 2, -1) < 0 && errno != EINTR)
			break;
		if (fds[1].revents)
			break;
		if (!(fds[0].revents & POLLIN))
			continue;
		fd = accept(stat_srv.listen_fd, NULL, NULL);
		if (fd < 0)
			continue;
		fcntl(fd, F_SETFD, FD_CLOEXEC);
		/* A reader that never reads costs us a second at most. */
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		stat_answer(fd);
	}
	return NULL;
}

static int stat_listen(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* A socket file left by an earlier run of ours goes; anything else stays. */
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) || listen(fd, 8)) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

RPCRDMA_EXPORT int rpcrdma_stat_serve(const char *path)
{
	int rc;

	if (!path || !*path)
		return -EINVAL;
	pthread_mutex_lock(&stat_lock);
	rc = -EALREADY;
	if (stat_srv.running)
		goto out;
	rc = stat_listen(path);
	if (rc < 0)
		goto out;
	stat_srv.listen_fd = rc;
	stat_srv.stop_fd = eventfd(0, EFD_CLOEXEC);
	rc = stat_srv.stop_fd < 0 ? -errno : -pthread_create(&stat_srv.thread, NULL, stat_main, NULL);
	if (rc) {
		if (stat_srv.stop_fd >= 0)
			close(stat_srv.stop_fd);
		close(stat_srv.listen_fd);
		unlink(path);
		goto out;
	}
	snprintf(stat_srv.path, sizeof(stat_srv.path), "%s", path);
	stat_srv.running = true;
	atomic_store(&rpcrdma_stat_on, true);
out:
	pthread_mutex_unlock(&stat_lock);
	return rc;
}

RPCRDMA_EXPORT int rpcrdma_stat_stop(void)
{
	uint64_t one = 1;
	pthread_t t;

	pthread_mutex_lock(&stat_lock);
	if (!stat_srv.running) {
		pthread_mutex_unlock(&stat_lock);
		return -ENOENT;
	}
	stat_srv.running = false;
	atomic_store(&rpcrdma_stat_on, false);
	t = stat_srv.thread;
	pthread_mutex_unlock(&stat_lock);
	/* The thread takes stat_lock to answer: join without it. */
	if (write(stat_srv.stop_fd, &one, sizeof(one)) < 0)
		rpcrdma_warn("stat: cannot stop the serving thread: %s", strerror(errno));
	pthread_join(t, NULL);
	close(stat_srv.stop_fd);
	close(stat_srv.listen_fd);
	unlink(stat_srv.path);
	return 0;
}
