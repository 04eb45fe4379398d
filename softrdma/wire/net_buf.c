/* SPDX-License-Identifier: MIT */
/*
 * The messages links carry (net.h): a head in the buffer and a payload read
 * from registered memory when the net thread writes it, pinned until then.
 * Buffers come from a pool that the net thread fills without the lock and
 * that written messages go back to, so a sender allocates only when the
 * pool ran dry (counted, for the tests' rule).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net.h"

/* The net thread keeps this many buffers ready; written ones are kept up to the cap. */
#define NET_POOL_LOW	(2 * WIRE_WINDOW)
#define NET_POOL_CAP	(8 * WIRE_WINDOW)

/* Under fab.lock. */
static struct {
	struct soft_list free;
	unsigned int count;		/* atomic reads by the net thread */
} pool = {
	.free = { &pool.free, &pool.free },
};

struct net_buf *net_buf_new_locked(enum net_msg_type type, uint32_t head_len)
{
	struct net_hdr hdr = { .magic = NET_MAGIC, .type = type, .len = head_len };
	struct soft_list *node;
	struct net_buf *buf;

	if (head_len > NET_HEAD_MAX)
		return NULL;
	node = soft_list_pop(&pool.free);
	if (node) {
		buf = soft_list_entry(node, struct net_buf, link);
		__atomic_store_n(&pool.count, pool.count - 1, __ATOMIC_RELAXED);
	} else {
		buf = malloc(sizeof(*buf));
		if (!buf)
			return NULL;
	}
	buf->hdr = hdr;
	buf->head_len = head_len;
	buf->copied = head_len;
	buf->len = (uint32_t)sizeof(hdr) + head_len;
	buf->niov = 0;
	buf->nfds = 0;
	return buf;
}

static bool add_one(struct net_buf *buf, const struct wire_seg *seg, uint32_t off, uint32_t len)
{
	const uint8_t *src = (const uint8_t *)(uintptr_t)seg->addr + off;
	struct net_pin *pin = &buf->pins[buf->niov];
	struct iovec *iov = &buf->iov[buf->niov];

	if (buf->niov == NET_MAX_IOV)
		return false;
	if (seg->mr) {
		iov->iov_base = (void *)(uintptr_t)src;
		pin->mr = seg->mr;
		pin->mw = seg->mw;
		wire_up->mem_pin(seg->mr, seg->mw);
	} else {
		/* Inline data: the WQE's slot is reused once it completes. */
		if (len > NET_HEAD_MAX - buf->copied)
			return false;
		memcpy(buf->data + buf->copied, src, len);
		iov->iov_base = buf->data + buf->copied;
		buf->copied += len;
		pin->mr = NULL;
		pin->mw = NULL;
	}
	pin->bounce = NULL;
	iov->iov_len = len;
	buf->niov++;
	buf->len += len;
	return true;
}

bool net_buf_add_locked(struct net_buf *buf, const struct wire_seg *segs, unsigned int nsegs,
			uint32_t len)
{
	uint32_t before = buf->len;
	unsigned int i;

	for (i = 0; i < nsegs && len; i++) {
		uint32_t n = segs[i].len < len ? segs[i].len : len;

		if (n && !add_one(buf, &segs[i], 0, n))
			return false;
		len -= n;
	}
	if (len)
		return false;
	buf->hdr.len += buf->len - before;
	return true;
}

static void unpin(struct net_pin *pin)
{
	if (pin->mr)
		wire_up->mem_unpin(pin->mr, pin->mw);
	pin->mr = NULL;
	pin->mw = NULL;
	free(pin->bounce);
	pin->bounce = NULL;
}

void net_buf_free_locked(struct net_buf *buf)
{
	unsigned int i;

	for (i = 0; i < buf->niov; i++)
		unpin(&buf->pins[i]);
	for (i = 0; i < buf->nfds; i++)
		close(buf->fds[i]);
	buf->nfds = 0;
	if (pool.count >= NET_POOL_CAP) {
		free(buf);
		return;
	}
	soft_list_add(&buf->link, &pool.free);
	__atomic_store_n(&pool.count, pool.count + 1, __ATOMIC_RELAXED);
}

void net_bufs_free_locked(struct soft_list *head)
{
	struct soft_list *node;

	while ((node = soft_list_pop(head)))
		net_buf_free_locked(soft_list_entry(node, struct net_buf, link));
}

bool net_buf_detach_locked(struct net_buf *buf, const struct soft_mr *mr,
			   const struct soft_mw *mw)
{
	unsigned int i;

	for (i = 0; i < buf->niov; i++) {
		struct net_pin *pin = &buf->pins[i];
		void *copy;

		if (!pin->mr || (mr && pin->mr != mr) || (mw && pin->mw != mw))
			continue;
		copy = malloc(buf->iov[i].iov_len ? buf->iov[i].iov_len : 1);
		if (!copy)
			return false;
		memcpy(copy, buf->iov[i].iov_base, buf->iov[i].iov_len);
		unpin(pin);
		pin->bounce = copy;
		buf->iov[i].iov_base = copy;
	}
	return true;
}

void net_pool_fill(void)
{
	struct soft_list got;
	unsigned int want;

	want = __atomic_load_n(&pool.count, __ATOMIC_RELAXED);
	if (want >= NET_POOL_LOW)
		return;
	want = NET_POOL_LOW - want;
	soft_list_init(&got);
	while (want--) {
		struct net_buf *buf = malloc(sizeof(*buf));

		if (!buf)
			break;
		soft_list_add(&buf->link, &got);
	}
	fab_lock();
	while (!soft_list_empty(&got)) {
		soft_list_add(soft_list_pop(&got), &pool.free);
		pool.count++;
	}
	fab_unlock();
}

void net_pool_free_locked(void)
{
	struct soft_list *node;

	while ((node = soft_list_pop(&pool.free)))
		free(soft_list_entry(node, struct net_buf, link));
	pool.count = 0;
}
