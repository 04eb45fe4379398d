/* SPDX-License-Identifier: MIT */
/*
 * The RPC reply header (RFC 5531's rpc_msg for a REPLY) of an accepted,
 * successful call, encoded and decoded in one XDR_INLINE instead of
 * libtirpc's xdr_replymsg(), which takes one stream call per word (about
 * 400 instructions each way for a NULL call). The bytes are the same; every
 * other reply, and a stream that cannot inline, goes to xdr_replymsg().
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <string.h>

#include <rpc/rpc.h>

#include "tirpc_msg.h"
#include "tirpc_xdr.h"

/* xid, direction, reply_stat, verifier flavor and length; accept_stat after the body. */
#define TIRPC_REPLY_WORDS 6

static bool tirpc_reply_fast(const struct rpc_msg *msg)
{
	return msg->rm_direction == REPLY && msg->rm_reply.rp_stat == MSG_ACCEPTED &&
	       msg->acpted_rply.ar_stat == SUCCESS &&
	       msg->acpted_rply.ar_verf.oa_length <= MAX_AUTH_BYTES;
}

/* The results after the header, as xdr_replymsg() does them (xdr_void: none). */
static bool_t tirpc_reply_results(XDR *xdrs, struct rpc_msg *msg)
{
	return msg->acpted_rply.ar_results.proc == TIRPC_XDR_VOID ||
	       (*msg->acpted_rply.ar_results.proc)(xdrs, msg->acpted_rply.ar_results.where);
}

bool_t tirpc_encode_replymsg(XDR *xdrs, struct rpc_msg *msg)
{
	const struct opaque_auth *verf = &msg->acpted_rply.ar_verf;
	u_int body, len;
	int32_t *p;

	if (!tirpc_reply_fast(msg) || (verf->oa_length && !verf->oa_base))
		return xdr_replymsg(xdrs, msg);
	body = RNDUP(verf->oa_length);
	len = TIRPC_REPLY_WORDS * BYTES_PER_XDR_UNIT + body;
	p = XDR_INLINE(xdrs, (int)len);
	if (!p)
		return xdr_replymsg(xdrs, msg);
	IXDR_PUT_U_INT32(p, msg->rm_xid);
	IXDR_PUT_ENUM(p, REPLY);
	IXDR_PUT_ENUM(p, MSG_ACCEPTED);
	IXDR_PUT_ENUM(p, verf->oa_flavor);
	IXDR_PUT_U_INT32(p, verf->oa_length);
	if (body) {
		memcpy(p, verf->oa_base, verf->oa_length);
		memset((char *)p + verf->oa_length, 0, body - verf->oa_length);
		p += body / BYTES_PER_XDR_UNIT;
	}
	IXDR_PUT_ENUM(p, SUCCESS);
	return tirpc_reply_results(xdrs, msg);
}

/*
 * The decoding side for a reply whose verifier is empty (AUTH_NONE's, and
 * AUTH_SYS's): nothing is allocated, as xdr_replymsg() would not either.
 * @msg is set up as for xdr_replymsg(): ar_verf.oa_base NULL, ar_results
 * naming the results' routine. The stream must be able to go back
 * (XDR_SETPOS) for the replies it leaves to xdr_replymsg().
 */
bool_t tirpc_decode_replymsg(XDR *xdrs, struct rpc_msg *msg)
{
	u_int pos = XDR_GETPOS(xdrs);
	int32_t *p = XDR_INLINE(xdrs, TIRPC_REPLY_WORDS * BYTES_PER_XDR_UNIT);

	if (!p || ntohl((uint32_t)p[1]) != REPLY || ntohl((uint32_t)p[2]) != MSG_ACCEPTED ||
	    p[4] != 0 || ntohl((uint32_t)p[5]) != SUCCESS || msg->acpted_rply.ar_verf.oa_base) {
		/* Read again from the start by the general decoder. */
		return (!p || XDR_SETPOS(xdrs, pos)) && xdr_replymsg(xdrs, msg);
	}
	msg->rm_xid = ntohl((uint32_t)p[0]);
	msg->rm_direction = REPLY;
	msg->rm_reply.rp_stat = MSG_ACCEPTED;
	msg->acpted_rply.ar_verf.oa_flavor = (enum_t)ntohl((uint32_t)p[3]);
	msg->acpted_rply.ar_verf.oa_length = 0;
	msg->acpted_rply.ar_stat = SUCCESS;
	return tirpc_reply_results(xdrs, msg);
}
