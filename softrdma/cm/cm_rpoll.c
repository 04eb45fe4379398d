/* SPDX-License-Identifier: MIT */
/*
 * rpoll() of librdmacm's rsocket API, which rping calls on its event
 * channel. rsockets are not modelled, so every descriptor is an ordinary one
 * and rpoll() is poll(), as librdmacm does when no rsocket is in the set.
 */
#include <poll.h>

#include <rdma/rsocket.h>

int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return poll(fds, nfds, timeout);
}
