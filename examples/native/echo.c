/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "echo.h"

enum { RPC_CALL = 0, RPC_REPLY = 1 };
enum { MSG_ACCEPTED = 0 };
enum { SUCCESS = 0, PROG_UNAVAIL = 1, PROG_MISMATCH = 2, PROC_UNAVAIL = 3, GARBAGE_ARGS = 4 };

static unsigned char *put32(unsigned char *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
	return p + 4;
}

static uint32_t get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

static size_t xdr_pad(size_t len)
{
	return (4 - (len & 3)) & 3;
}

size_t echo_encode_call(unsigned char *buf, size_t max, uint32_t xid, const void *data,
			size_t len)
{
	size_t need = 10 * 4 + 4 + len + xdr_pad(len);
	unsigned char *p = buf;

	if (need > max || len > UINT32_MAX)
		return 0;
	p = put32(p, xid);
	p = put32(p, RPC_CALL);
	p = put32(p, 2);		/* RPC version */
	p = put32(p, ECHO_PROG);
	p = put32(p, ECHO_VERS);
	p = put32(p, ECHO_PROC_ECHO);
	p = put32(p, 0);		/* credential: AUTH_NONE, empty */
	p = put32(p, 0);
	p = put32(p, 0);		/* verifier: AUTH_NONE, empty */
	p = put32(p, 0);
	p = put32(p, (uint32_t)len);
	memcpy(p, data, len);
	memset(p + len, 0, xdr_pad(len));
	return need;
}

/* The accepted-reply preamble: xid, REPLY, MSG_ACCEPTED, empty verifier, stat. */
static unsigned char *reply_head(unsigned char *p, uint32_t xid, uint32_t stat)
{
	p = put32(p, xid);
	p = put32(p, RPC_REPLY);
	p = put32(p, MSG_ACCEPTED);
	p = put32(p, 0);
	p = put32(p, 0);
	return put32(p, stat);
}

int echo_serve_call(struct rpcrdma_svc_call *call)
{
	size_t len, max, arglen;
	const unsigned char *msg = rpcrdma_svc_call_msg(call, &len);
	unsigned char *out, *p;
	uint32_t stat = SUCCESS, xid = rpcrdma_svc_call_xid(call);
	void *buf;
	int rc;

	/* Encode the reply straight into the registered send buffer. */
	rc = rpcrdma_svc_reply_buf(call, &buf, &max);
	if (rc) {
		rpcrdma_svc_call_drop(call);
		return rc;
	}
	out = buf;
	if (len < 44 || get32(msg + 4) != RPC_CALL || get32(msg + 8) != 2) {
		rpcrdma_svc_call_drop(call);	/* not an RPC call: nothing to answer */
		return -EBADMSG;
	}
	if (get32(msg + 12) != ECHO_PROG)
		stat = PROG_UNAVAIL;
	else if (get32(msg + 16) != ECHO_VERS)
		stat = PROG_MISMATCH;
	else if (get32(msg + 20) != ECHO_PROC_ECHO)
		stat = PROC_UNAVAIL;
	if (stat != SUCCESS) {
		p = reply_head(out, xid, stat);
		if (stat == PROG_MISMATCH) {
			p = put32(p, ECHO_VERS);
			p = put32(p, ECHO_VERS);
		}
		return rpcrdma_svc_reply_commit(call, (size_t)(p - out));
	}
	/* Skip the credential and verifier bodies (AUTH_NONE has none, but be general). */
	{
		size_t off = 24, i;

		for (i = 0; i < 2; i++) {
			size_t body;

			if (off + 8 > len)
				goto garbage;
			body = get32(msg + off + 4);
			if (body > 400 || off + 8 + body + xdr_pad(body) > len)
				goto garbage;
			off += 8 + body + xdr_pad(body);
		}
		if (off + 4 > len)
			goto garbage;
		arglen = get32(msg + off);
		if (arglen > len - off - 4 || 24 + 4 + arglen + xdr_pad(arglen) > max)
			goto garbage;
		p = reply_head(out, xid, SUCCESS);
		p = put32(p, (uint32_t)arglen);
		memcpy(p, msg + off + 4, arglen);
		memset(p + arglen, 0, xdr_pad(arglen));
		return rpcrdma_svc_reply_commit(call, 28 + arglen + xdr_pad(arglen));
	}
garbage:
	p = reply_head(out, xid, GARBAGE_ARGS);
	return rpcrdma_svc_reply_commit(call, (size_t)(p - out));
}

size_t echo_reply_len(size_t len)
{
	return 28 + len + xdr_pad(len);
}

int echo_check_reply(const unsigned char *reply, size_t rlen, uint32_t xid, const void *data,
		     size_t len)
{
	if (rlen != echo_reply_len(len) || get32(reply) != xid ||
	    get32(reply + 4) != RPC_REPLY || get32(reply + 8) != MSG_ACCEPTED ||
	    get32(reply + 20) != SUCCESS || get32(reply + 24) != len ||
	    memcmp(reply + 28, data, len) != 0)
		return -EBADMSG;
	return 0;
}
