/* SPDX-License-Identifier: MIT */
/*
 * The net thread: all socket I/O of the links to other processes (net.h).
 * It polls the listening sockets, the links and a wake-up eventfd; it reads
 * whole messages and dispatches them under the fabric lock, writes queued
 * buffers without it, and turns EOF or an error into a dead link and a
 * link-down unit, which runs in order after the messages that came before.
 */
#define _GNU_SOURCE	/* accept4, POLLRDHUP */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "net.h"
#include "wire_net.h"
#include "wire_shm.h"

/* Messages read from one link before the others get a turn. */
#define NET_READ_BURST 64

struct net_listener {
	int fd;
	bool closing;
	bool qpn;			/* its links carry wire messages only (net_qpn.c) */
	struct soft_list node;
};

/* How long process exit waits for queued output (an ACK, a DREQ) to go out. */
#define NET_EXIT_FLUSH_NS 1000000000ULL

/* Under fab.lock. */
static struct {
	bool started;
	bool stop;
	uint64_t stop_deadline;
	pthread_t thread;
	int wake_fd;
	struct soft_signal wake;
	struct soft_list links;
	struct soft_list listeners;
	/* Waiters for a send() in progress, which holds a buffer unlocked (link->sending). */
	pthread_cond_t sent_cv;
} net = {
	.wake_fd = -1,
	.sent_cv = PTHREAD_COND_INITIALIZER,
	.links = { &net.links, &net.links },
	.listeners = { &net.listeners, &net.listeners },
};

void net_kick_locked(void)
{
	if (net.wake_fd >= 0)
		signal_add_locked(&net.wake, 1);
}

static void close_in_fds(struct net_link *link)
{
	unsigned int i;

	for (i = 0; i < link->in_nfds; i++)
		if (link->in_fds[i] >= 0)
			close(link->in_fds[i]);
	link->in_nfds = 0;
}

void net_link_get_locked(struct net_link *link)
{
	link->refs++;
}

void net_link_put_locked(struct net_link *link)
{
	if (--link->refs)
		return;
	net_bufs_free_locked(&link->out);
	shm_link_free_locked(link);
	close_in_fds(link);
	free(link->in_body);
	free(link);
}

void net_link_close_locked(struct net_link *link)
{
	link->closing = true;
	net_kick_locked();
	net_link_put_locked(link);
}

bool net_any_link_locked(void)
{
	return !soft_list_empty(&net.links);
}

void net_send_locked(struct net_link *link, struct net_buf *buf)
{
	if (link->dead) {
		net_buf_free_locked(buf);
		return;
	}
	soft_list_add_tail(&buf->link, &link->out);
	net_kick_locked();
}

/* ---- the link-down unit ----------------------------------------------------- */

struct link_down {
	struct soft_work work;
	struct net_link *link;
};

static void link_down_run(struct soft_work *work)
{
	struct link_down *d = container_of(work, struct link_down, work);

	if (d->link->id && wire_cm)
		wire_up->link_down(d->link);
	/* Requests still waiting for an answer get none: the requesters time out. */
	wire_up->link_lost(d->link);
	net_link_put_locked(d->link);
	free(d);
}

static void link_down_discard(struct soft_work *work)
{
	struct link_down *d = container_of(work, struct link_down, work);

	net_link_put_locked(d->link);
	free(d);
}

bool net_link_gone_locked(const struct net_link *link)
{
	struct pollfd pfd = { .fd = link->fd, .events = POLLRDHUP };

	if (link->dead || link->fd < 0)
		return true;
	return poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

void net_link_dead_locked(struct net_link *link)
{
	struct link_down *d;

	if (link->dead)
		return;
	link->dead = true;
	net_kick_locked();	/* the net thread closes it (reap_locked()) */
	/* A writer is in send() on its head, unlocked: that buffer is the writer's to free. */
	if (link->sending)
		soft_list_del(&link->sending->link);
	net_bufs_free_locked(&link->out);
	if (!link->id && !wire_up->link_awaited(link))
		return;
	d = calloc(1, sizeof(*d));
	if (!d) {
		fprintf(stderr, "softrdma: out of memory: a lost peer goes unnoticed\n");
		return;
	}
	d->link = link;
	net_link_get_locked(link);
	d->work.run = link_down_run;
	d->work.discard = link_down_discard;
	wire_up->queue_work(&d->work);
}

/* ---- the net thread ------------------------------------------------------------ */

static void dispatch_locked(struct net_link *link, const struct net_hdr *hdr, const void *body)
{
	switch (hdr->type) {
	case NET_MSG_CM:
		if (wire_cm && !link->qpn)
			wire_up->link_message(link, body, hdr->len);
		break;
	case NET_MSG_WIRE_REQ:
		wire_net_serve_locked(link, body, hdr->len);
		break;
	case NET_MSG_WIRE_RESP:
		wire_net_answer_locked(link, body, hdr->len);
		break;
	case NET_MSG_SHM:
		shm_link_accept_locked(link, body, hdr->len, link->in_fds, link->in_nfds);
		break;
	case NET_MSG_SHM_BELL:
		shm_link_app_bell_locked(link, body, hdr->len, link->in_fds, link->in_nfds);
		break;
	case NET_MSG_UD:
		wire_up->datagram(link, body, hdr->len);
		break;
	}
}

static bool header_ok(const struct net_hdr *hdr)
{
	return hdr->magic == NET_MAGIC && hdr->len <= NET_MAX_BODY &&
	       hdr->type >= NET_MSG_CM && hdr->type <= NET_MSG_UD;
}

/* read(), keeping the descriptors a message brings (SCM_RIGHTS) for its dispatch. */
static ssize_t read_some(struct net_link *link, void *dst, size_t want)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(NET_MAX_FDS * sizeof(int))];
	} ctl;
	struct iovec iov = { dst, want };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			      .msg_controllen = sizeof(ctl.buf) };
	struct cmsghdr *c;
	ssize_t n = recvmsg(link->fd, &msg, MSG_CMSG_CLOEXEC);

	for (c = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL; c; c = CMSG_NXTHDR(&msg, c)) {
		const int *fds = (const int *)CMSG_DATA(c);
		size_t i, nfds;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < nfds; i++) {
			int fd;

			memcpy(&fd, fds + i, sizeof(fd));
			if (link->in_nfds < NET_MAX_FDS)
				link->in_fds[link->in_nfds++] = fd;
			else
				close(fd);
		}
	}
	return n;
}

/* Read until a message is complete (1), the socket runs dry (0) or the link is lost (-1). */
static int read_message(struct net_link *link)
{
	for (;;) {
		uint32_t hdr_len = sizeof(link->in_hdr);
		uint8_t *dst;
		size_t want;
		ssize_t n;

		if (link->in_body && link->in_got == hdr_len + link->in_hdr.len)
			return 1;
		if (link->in_got < hdr_len) {
			dst = (uint8_t *)&link->in_hdr + link->in_got;
			want = hdr_len - link->in_got;
		} else {
			dst = link->in_body + (link->in_got - hdr_len);
			want = hdr_len + link->in_hdr.len - link->in_got;
		}
		n = read_some(link, dst, want);
		if (n == 0)
			return -1;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -1;
		}
		link->in_got += (uint32_t)n;
		if (link->in_got == hdr_len && !link->in_body) {
			if (!header_ok(&link->in_hdr))
				return -1;
			/* One spare byte: a zero-length body still gets a buffer. */
			link->in_body = malloc((size_t)link->in_hdr.len + 1);
			if (!link->in_body)
				return -1;
		}
	}
}

static void link_read(struct net_link *link)
{
	int burst;

	for (burst = 0; burst < NET_READ_BURST; burst++) {
		int ret = read_message(link);

		if (ret == 0)
			return;
		fab_lock();
		if (ret < 0) {
			/* What the peer put in its ring before it went is said, as on the socket. */
			shm_link_drain_locked(link);
			net_link_dead_locked(link);
		} else if (!link->dead) {
			dispatch_locked(link, &link->in_hdr, link->in_body);
		}
		fab_unlock();
		if (ret < 0)
			return;
		close_in_fds(link);
		free(link->in_body);
		link->in_body = NULL;
		link->in_got = 0;
	}
}

/* The iovecs of what is left of @buf after its first @off bytes; how many. */
static int unsent_iov(struct net_buf *buf, uint32_t off, struct iovec *iov)
{
	unsigned int i;
	int n = 0;

	if (off < sizeof(buf->hdr)) {
		iov[n].iov_base = (uint8_t *)&buf->hdr + off;
		iov[n++].iov_len = sizeof(buf->hdr) - off;
		off = 0;
	} else {
		off -= (uint32_t)sizeof(buf->hdr);
	}
	if (off < buf->head_len) {
		iov[n].iov_base = buf->data + off;
		iov[n++].iov_len = buf->head_len - off;
		off = 0;
	} else {
		off -= buf->head_len;
	}
	for (i = 0; i < buf->niov; i++) {
		if (off >= buf->iov[i].iov_len) {
			off -= (uint32_t)buf->iov[i].iov_len;
			continue;
		}
		iov[n].iov_base = (uint8_t *)buf->iov[i].iov_base + off;
		iov[n++].iov_len = buf->iov[i].iov_len - off;
		off = 0;
	}
	return n;
}

/*
 * Write the head buffer, unlocked: link->sending tells a deregistration
 * (net_detach_locked) to wait for this send() rather than copy under it,
 * another writer (the net thread, or a thread in net_link_flush) to wait
 * its turn, and the reaper to leave the socket open.
 */
static void link_write(struct net_link *link)
{
	for (;;) {
		struct iovec iov[NET_MAX_IOV + 2];
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(NET_MAX_FDS * sizeof(int))];
		} ctl;
		struct msghdr msg = { .msg_iov = iov };
		struct net_buf *buf = NULL;
		ssize_t n;

		fab_lock();
		/* A non-blocking send() by another writer: short. */
		while (link->sending)
			fab_wait_locked(&net.sent_cv, NULL);
		if (!link->dead && !soft_list_empty(&link->out)) {
			buf = soft_list_entry(link->out.next, struct net_buf, link);
			msg.msg_iovlen = (size_t)unsent_iov(buf, link->out_off, iov);
			link->sending = buf;
			/* Descriptors go with the message's first byte. */
			if (buf->nfds && link->out_off == 0) {
				struct cmsghdr *c;

				memset(&ctl, 0, sizeof(ctl));
				msg.msg_control = ctl.buf;
				msg.msg_controllen = CMSG_SPACE(buf->nfds * sizeof(int));
				c = CMSG_FIRSTHDR(&msg);
				c->cmsg_level = SOL_SOCKET;
				c->cmsg_type = SCM_RIGHTS;
				c->cmsg_len = CMSG_LEN(buf->nfds * sizeof(int));
				memcpy(CMSG_DATA(c), buf->fds, buf->nfds * sizeof(int));
			}
		}
		fab_unlock();
		if (!buf)
			return;
		n = sendmsg(link->fd, &msg, MSG_NOSIGNAL);
		fab_lock();
		link->sending = NULL;
		pthread_cond_broadcast(&net.sent_cv);
		if (link->dead) {
			/* The link died meanwhile and left this buffer to us (link_dead_locked). */
			net_buf_free_locked(buf);
			fab_unlock();
			return;
		}
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				net_link_dead_locked(link);
			fab_unlock();
			return;
		}
		link->out_off += (uint32_t)n;
		if (link->out_off == buf->len) {
			link->out_off = 0;
			soft_list_del(&buf->link);
			net_buf_free_locked(buf);
		}
		fab_unlock();
	}
}

void net_link_flush(struct net_link *link)
{
	link_write(link);
}

void net_detach_locked(struct soft_mr *mr, struct soft_mw *mw)
{
	struct soft_list *pos, *tmp, *bpos;

again:
	soft_list_for_each_safe(pos, tmp, &net.links) {
		struct net_link *link = soft_list_entry(pos, struct net_link, node);

		soft_list_for_each(bpos, &link->out) {
			struct net_buf *buf = soft_list_entry(bpos, struct net_buf, link);

			if (link->sending == buf) {
				/* A non-blocking send(): short. The lists may change meanwhile. */
				fab_wait_locked(&net.sent_cv, NULL);
				goto again;
			}
			if (!net_buf_detach_locked(buf, mr, mw)) {
				/* Out of memory for the copy: wait for the network instead. */
				fab_wait_locked(&net.sent_cv, NULL);
				goto again;
			}
		}
	}
}

static void listener_accept(struct net_listener *l)
{
	for (;;) {
		int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct net_link *link;

		if (fd < 0)
			return;
		fab_lock();
		link = net_link_new_locked(fd, false);
		/* Nobody owns it until its REQ arrives: the thread's reference is enough. */
		if (link) {
			link->qpn = l->qpn;
			net_link_put_locked(link);
		}
		else
			close(fd);
		fab_unlock();
	}
}

/* Close what its owners let go of, and dead links. */
static void reap_locked(void)
{
	struct soft_list *pos, *tmp;

	soft_list_for_each_safe(pos, tmp, &net.links) {
		struct net_link *link = soft_list_entry(pos, struct net_link, node);

		if (!link->dead && !(link->closing && soft_list_empty(&link->out)))
			continue;
		/* A writer outside the net thread is in send() on it (net_link_flush). */
		if (link->sending)
			continue;
		net_link_dead_locked(link);
		close(link->fd);
		link->fd = -1;
		soft_list_del(&link->node);
		net_link_put_locked(link);
	}
	soft_list_for_each_safe(pos, tmp, &net.listeners) {
		struct net_listener *l = soft_list_entry(pos, struct net_listener, node);

		if (!l->closing)
			continue;
		close(l->fd);
		soft_list_del(&l->node);
		free(l);
	}
}

enum poll_kind { POLL_WAKE, POLL_LISTENER, POLL_LINK, POLL_BELL };

struct poll_set {
	struct pollfd *fds;
	void **what;		/* NULL: the wake fd; else a link or a listener */
	enum poll_kind *kind;
	size_t n, cap;
};

static bool poll_add(struct poll_set *p, int fd, short events, void *what, enum poll_kind kind)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		struct pollfd *fds = realloc(p->fds, cap * sizeof(*fds));
		void **w;
		enum poll_kind *k;

		if (!fds)
			return false;
		p->fds = fds;
		w = realloc(p->what, cap * sizeof(*w));
		if (!w)
			return false;
		p->what = w;
		k = realloc(p->kind, cap * sizeof(*k));
		if (!k)
			return false;
		p->kind = k;
		p->cap = cap;
	}
	p->fds[p->n] = (struct pollfd){ .fd = fd, .events = events };
	p->what[p->n] = what;
	p->kind[p->n] = kind;
	p->n++;
	return true;
}

/*
 * The links in the set hold the thread's reference: they outlive the poll.
 * *@busy: a link's ring holds records already (poll without sleeping);
 * *@lazy: a link's writers do not ring (sleep SHM_LAZY_MS at most).
 */
static bool poll_build_locked(struct poll_set *p, bool *busy, bool *lazy)
{
	struct soft_list *pos, *tmp;

	p->n = 0;
	*busy = false;
	*lazy = false;
	if (!poll_add(p, net.wake_fd, POLLIN, NULL, POLL_WAKE))
		return false;
	soft_list_for_each_safe(pos, tmp, &net.listeners) {
		struct net_listener *l = soft_list_entry(pos, struct net_listener, node);

		if (!poll_add(p, l->fd, POLLIN, l, POLL_LISTENER))
			return false;
	}
	soft_list_for_each_safe(pos, tmp, &net.links) {
		struct net_link *link = soft_list_entry(pos, struct net_link, node);
		short events = POLLIN | (soft_list_empty(&link->out) ? 0 : POLLOUT);

		if (!poll_add(p, link->fd, events, link, POLL_LINK))
			return false;
		if (shm_link_bell_fd(link) < 0)
			continue;
		if (!poll_add(p, shm_link_bell_fd(link), POLLIN, link, POLL_BELL))
			return false;
		if (shm_link_sleep_locked(link, lazy))
			*busy = true;
	}
	return true;
}

/* The doorbell rang, or a ring holds records: run them. */
static void link_bell(struct net_link *link, bool rang)
{
	uint64_t token;

	if (rang && read(shm_link_bell_fd(link), &token, sizeof(token)) < 0 && errno != EAGAIN)
		perror("softrdma: doorbell");
	fab_lock();
	shm_link_awake_locked(link);
	shm_link_drain_locked(link);	/* a batch: the next pass goes on without sleeping */
	fab_unlock();
}

/* Does a link still have output to write? */
static bool output_pending_locked(void)
{
	struct soft_list *pos, *tmp;

	soft_list_for_each_safe(pos, tmp, &net.links) {
		struct net_link *link = soft_list_entry(pos, struct net_link, node);

		if (!link->dead && !soft_list_empty(&link->out))
			return true;
	}
	return false;
}

/*
 * Stopping (process exit): what is queued was said before the process
 * ended, as an HCA acknowledges a request before the application sees its
 * completion, so it goes out first, for a bounded time.
 */
static bool keep_running_locked(void)
{
	if (!net.stop)
		return true;
	return output_pending_locked() && soft_now_ns() < net.stop_deadline;
}

/*
 * The net thread's heap work outside the fabric lock (its pool, message
 * bodies read from a socket) is done holding heap_gate, which it lets go
 * only to sleep in poll(), and which fork() takes (net_fork()):
 * an allocator that holds no lock of its own across fork(), as the
 * sanitizers' do not, is then never copied in the middle of an allocation
 * of ours, which would leave the child's first malloc() waiting for ever.
 * Taken before the fabric lock.
 */
static pthread_mutex_t heap_gate = PTHREAD_MUTEX_INITIALIZER;


static void *net_main(void *arg)
{
	struct poll_set p = { 0 };
	uint64_t token;
	size_t i;

	(void)arg;
	pthread_mutex_lock(&heap_gate);
	fab_lock();
	while (keep_running_locked()) {
		int timeout = net.stop ? 10 : -1;
		bool busy, lazy;

		reap_locked();
		if (!poll_build_locked(&p, &busy, &lazy)) {
			fprintf(stderr, "softrdma: out of memory in the net thread\n");
			abort();
		}
		fab_unlock();
		net_pool_fill();
		if (busy)
			timeout = 0;
		else if (lazy && (timeout < 0 || timeout > SHM_LAZY_MS))
			timeout = SHM_LAZY_MS;
		pthread_mutex_unlock(&heap_gate);
		if (poll(p.fds, p.n, timeout) < 0 && errno != EINTR) {
			perror("softrdma: poll");
			abort();
		}
		pthread_mutex_lock(&heap_gate);
		if (p.fds[0].revents & POLLIN && read(net.wake_fd, &token, sizeof(token)) < 0 &&
		    errno != EAGAIN)
			perror("softrdma: net wake-up");
		for (i = 1; i < p.n; i++) {
			short rev = p.fds[i].revents;

			if (p.kind[i] == POLL_BELL) {
				/* Every ring is looked at, which also tells senders we are awake. */
				link_bell(p.what[i], rev != 0);
				continue;
			}
			if (!rev)
				continue;
			if (p.kind[i] == POLL_LISTENER) {
				listener_accept(p.what[i]);
				continue;
			}
			if (rev & POLLOUT)
				link_write(p.what[i]);
			if (rev & (POLLIN | POLLHUP | POLLERR))
				link_read(p.what[i]);
		}
		fab_lock();
	}
	fab_unlock();
	free(p.fds);
	free(p.what);
	free(p.kind);
	pthread_mutex_unlock(&heap_gate);
	return NULL;
}

static bool net_start_locked(void)
{
	int ret;

	if (net.started)
		return true;
	net.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (net.wake_fd < 0)
		return false;
	signal_init(&net.wake, net.wake_fd);
	ret = pthread_create(&net.thread, NULL, net_main, NULL);
	if (ret) {
		close(net.wake_fd);
		net.wake_fd = -1;
		errno = ret;
		return false;
	}
	net.started = true;
	return true;
}

struct net_link *net_link_new_locked(int fd, bool connecting)
{
	struct net_link *link;
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 || !net_start_locked())
		return NULL;
	link = calloc(1, sizeof(*link));
	if (!link)
		return NULL;
	link->fd = fd;
	link->refs = 2;		/* the caller's and the net thread's */
	soft_list_init(&link->out);
	soft_list_add_tail(&link->node, &net.links);
	if (connecting)
		shm_link_offer_locked(link);
	net_kick_locked();
	return link;
}

struct net_listener *net_listener_add_locked(int fd, bool qpn)
{
	struct net_listener *l;

	if (!net_start_locked())
		return NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->fd = fd;
	l->qpn = qpn;
	soft_list_add_tail(&l->node, &net.listeners);
	net_kick_locked();
	return l;
}

void net_listener_close_locked(struct net_listener *l)
{
	l->closing = true;
	net_kick_locked();
}

/*
 * fork(), in the child (fabric.c): the links and listeners carry the
 * parent's connections. Their sockets are closed here, the parent's copies
 * stay open, and the links are forgotten and dead, so that nothing the
 * child does reads or writes them (its ids drop their pointers to them,
 * cm_id.c). No net thread runs in the child until it makes links of its own.
 */
static void net_fork_child(void)
{
	struct soft_list *node;

	/* Taken at PREPARE on this thread: released, not initialised again. */
	pthread_mutex_unlock(&heap_gate);
	/* It may hold the parent's waiters, which do not exist here. */
	pthread_cond_init(&net.sent_cv, NULL);
	while ((node = soft_list_pop(&net.links))) {
		struct net_link *link = soft_list_entry(node, struct net_link, node);

		if (link->fd >= 0)
			close(link->fd);
		link->fd = -1;
		link->dead = true;
		link->sending = NULL;
	}
	while ((node = soft_list_pop(&net.listeners))) {
		struct net_listener *l = soft_list_entry(node, struct net_listener, node);

		close(l->fd);
		free(l);
	}
	if (net.wake_fd >= 0)
		close(net.wake_fd);
	net.wake_fd = -1;
	net.started = false;
	net.stop = false;
	net_qpn_fork_child_locked();
}

void net_fork(enum wire_fork_stage stage)
{
	if (stage == WIRE_FORK_PREPARE)
		pthread_mutex_lock(&heap_gate);
	else if (stage == WIRE_FORK_PARENT)
		pthread_mutex_unlock(&heap_gate);
	else
		net_fork_child();
}

void net_stop(void)
{
	fab_lock();
	if (!net.started) {
		fab_unlock();
		return;
	}
	net.stop = true;
	net.stop_deadline = soft_now_ns() + NET_EXIT_FLUSH_NS;
	net_kick_locked();
	fab_unlock();
	pthread_join(net.thread, NULL);
}

void net_free(void)
{
	struct soft_list *node;

	fab_lock();
	net_qpn_release_locked();
	while ((node = soft_list_pop(&net.listeners))) {
		struct net_listener *l = soft_list_entry(node, struct net_listener, node);

		close(l->fd);
		free(l);
	}
	/* Whatever still refers to a link is going away with the process. */
	while ((node = soft_list_pop(&net.links))) {
		struct net_link *link = soft_list_entry(node, struct net_link, node);

		close(link->fd);
		net_bufs_free_locked(&link->out);
		shm_link_free_locked(link);
		close_in_fds(link);
		free(link->in_body);
		free(link);
	}
	net_pool_free_locked();
	if (net.wake_fd >= 0) {
		signal_cancel_locked(&net.wake);
		signal_fini(&net.wake);
		close(net.wake_fd);
	}
	net.wake_fd = -1;
	net.started = false;
	fab_unlock();
}
