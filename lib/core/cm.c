/* SPDX-License-Identifier: MIT */
/* rdma_cm event channels and RFC 8797 private data negotiation. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>

#include <rpcrdma/proto.h>

#include "cm.h"
#include "ep.h"

int rpcrdma_cm_channel_create(struct rdma_event_channel **out)
{
	struct rdma_event_channel *ch;
	int flags;

	ch = rdma_create_event_channel();
	if (!ch)
		return rpcrdma_errno(-ENODEV);
	flags = fcntl(ch->fd, F_GETFL);
	if (flags < 0 || fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
		int rc = -errno;

		rdma_destroy_event_channel(ch);
		return rc;
	}
	*out = ch;
	return 0;
}

int rpcrdma_cm_next_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev)
{
	if (rdma_get_cm_event(ch, ev) == 0)
		return 0;
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return -EAGAIN;
	return rpcrdma_errno(-EIO);
}

int rpcrdma_cm_wait_event(struct rdma_event_channel *ch, int64_t deadline_ms,
			  struct rdma_cm_event **ev)
{
	for (;;) {
		struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
		int64_t left;
		int rc;

		rc = rpcrdma_cm_next_event(ch, ev);
		if (rc != -EAGAIN)
			return rc;
		left = deadline_ms - rpcrdma_now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		poll(&pfd, 1, left > 1000 ? 1000 : (int)left);
	}
}

void rpcrdma_cm_private_build(unsigned char buf[RPCRDMA_CM_PRIVATE_LEN], uint32_t inline_size,
			      uint32_t flags)
{
	struct rpcrdma_cm_private pd = {
		.send_size = inline_size,
		.recv_size = inline_size,
		.flags = flags,
	};

	/* inline_size is validated at creation to lie in the encodable range. */
	rpcrdma_cm_private_encode(buf, RPCRDMA_CM_PRIVATE_LEN, &pd);
}

static uint32_t rpcrdma_min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

void rpcrdma_cm_negotiate(const void *pd, size_t len, uint32_t inline_size,
			  struct rpcrdma_inline *out)
{
	struct rpcrdma_cm_private peer;

	/* Absent or foreign data leaves the RFC 8797 defaults in peer. */
	rpcrdma_cm_private_decode(pd, len, &peer);
	out->send_max = rpcrdma_min_u32(inline_size, peer.recv_size);
	out->recv_max = rpcrdma_min_u32(inline_size, peer.send_size);
	out->remote_inv = (peer.flags & RPCRDMA_CM_REMOTE_INVALIDATE) != 0;
}

int rpcrdma_cm_event_errno(const struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_REJECTED:
		return -ECONNREFUSED;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		return -EHOSTUNREACH;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return -ENODEV;
	case RDMA_CM_EVENT_DISCONNECTED:
		return -ECONNRESET;
	default:
		return ev->status < 0 ? ev->status : -EPROTO;
	}
}
