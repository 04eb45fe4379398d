/* SPDX-License-Identifier: MIT */
/*
 * The heads of the RPC messages the tests send (RFC 5531 section 9). A call
 * starts  xid | CALL (0) | rpcvers 2,  a reply  xid | REPLY (1) |
 * MSG_ACCEPTED (0);  what follows the 12 bytes is the test's own. The
 * library client takes a reply only when it starts with its call's XID,
 * REPLY and a reply_stat, and a peer with a backchannel (RFC 8167) tells a
 * forward call from a backward reply by msg_type: so test calls say CALL
 * and test replies say REPLY, whatever their bodies are.
 */
#ifndef E2E_RPCMSG_H
#define E2E_RPCMSG_H

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rpcrdma/rpcrdma.h>

#define RPCMSG_HEAD 12		/* bytes of a call's or a reply's head */

enum { RPCMSG_CALL = 0, RPCMSG_REPLY = 1 };		/* msg_type */
enum { RPCMSG_VERS = 2 };				/* rpcvers of a call */
enum { RPCMSG_ACCEPTED = 0, RPCMSG_DENIED = 1 };	/* reply_stat */

/* XDR word @i of @msg (big-endian). */
static inline uint32_t rpcmsg_word(const void *msg, size_t i)
{
	uint32_t v;

	memcpy(&v, (const unsigned char *)msg + 4 * i, sizeof(v));
	return ntohl(v);
}

static inline void rpcmsg_head(void *msg, uint32_t xid, uint32_t w1, uint32_t w2)
{
	uint32_t w[3] = { htonl(xid), htonl(w1), htonl(w2) };

	memcpy(msg, w, sizeof(w));
}

/* A call's head at @msg: @xid, CALL, rpcvers 2. */
static inline void rpcmsg_call_head(void *msg, uint32_t xid)
{
	rpcmsg_head(msg, xid, RPCMSG_CALL, RPCMSG_VERS);
}

/* An accepted reply's head at @msg: @xid, REPLY, MSG_ACCEPTED. */
static inline void rpcmsg_reply_head(void *msg, uint32_t xid)
{
	rpcmsg_head(msg, xid, RPCMSG_REPLY, RPCMSG_ACCEPTED);
}

/* Does @msg (@len bytes) start with a call's head? */
static inline bool rpcmsg_is_call(const void *msg, size_t len)
{
	return len >= RPCMSG_HEAD && rpcmsg_word(msg, 1) == RPCMSG_CALL &&
	       rpcmsg_word(msg, 2) == RPCMSG_VERS;
}

/*
 * Turn a copy of a call (@len bytes at @msg) into its echo, the reply an
 * echo server sends: the same bytes under the reply head of the call's
 * XID. A message too short for a head is left as it is.
 */
static inline void rpcmsg_echo(void *msg, size_t len)
{
	if (len >= RPCMSG_HEAD)
		rpcmsg_reply_head(msg, rpcmsg_word(msg, 0));
}

/*
 * Answer @call with its echo: a copy of its message, made the echo
 * (rpcmsg_echo()), through rpcrdma_svc_reply(). Returns what that did, or
 * -ENOMEM (the call dropped).
 */
static inline int rpcmsg_svc_echo(struct rpcrdma_svc_call *call)
{
	size_t len;
	const void *msg = rpcrdma_svc_call_msg(call, &len);
	unsigned char *copy = malloc(len ? len : 1);
	int rc;

	if (!copy) {
		rpcrdma_svc_call_drop(call);
		return -ENOMEM;
	}
	memcpy(copy, msg, len);
	rpcmsg_echo(copy, len);
	rc = rpcrdma_svc_reply(call, copy, len);
	free(copy);
	return rc;
}

/*
 * Are the first @len bytes of @reply the echo of those of call @msg: the
 * reply head of its XID, then its bytes after the head? (@len >= 12)
 */
static inline bool rpcmsg_echoes(const void *reply, const void *msg, size_t len)
{
	unsigned char head[RPCMSG_HEAD];

	if (len < RPCMSG_HEAD)
		return false;
	rpcmsg_reply_head(head, rpcmsg_word(msg, 0));
	return memcmp(reply, head, RPCMSG_HEAD) == 0 &&
	       memcmp((const unsigned char *)reply + RPCMSG_HEAD,
		      (const unsigned char *)msg + RPCMSG_HEAD, len - RPCMSG_HEAD) == 0;
}

#endif /* E2E_RPCMSG_H */
