/* SPDX-License-Identifier: MIT */
/*
 * XDR streams of the libtirpc adapters: they let rpcgen's routines encode
 * and decode RPC messages whose DDP payloads travel apart from the message
 * (RFC 8166 Read and Write chunks), without the routines knowing.
 */
#ifndef RPCRDMA_TIRPC_XDR_H
#define RPCRDMA_TIRPC_XDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rpc/rpc.h>

/* Payloads one message may carry apart from its XDR stream. */
#define TIRPC_XDR_MAX_DDP 8

/* Bytes of XDR padding after @len bytes of opaque data. */
static inline u_int tirpc_xdr_pad(size_t len)
{
	return (u_int)((4 - (len & 3)) & 3);
}

/*
 * The items of an upper-layer binding (RFC 8166 section 6): the opaques and
 * strings that the XDR routine of a call's arguments or a reply's results
 * moves, numbered from 1 in the order it moves them, the empty ones not
 * counted (xdr_opaque() moves no bytes for them) and their padding not
 * either. Counting starts with @on, where the arguments or results begin.
 */
struct tirpc_xdr_items {
	bool on;
	unsigned int n;
	u_int pad_next;		/* xdr_opaque()'s padding, expected next, or 0 */
};

/* What a move of @len bytes is: item number n, or 0 (padding, empty, not counting). */
static inline unsigned int tirpc_xdr_item(struct tirpc_xdr_items *it, u_int len)
{
	u_int pad = it->pad_next;

	it->pad_next = 0;
	if (pad && len == pad)
		return 0;
	if (!it->on || !len)
		return 0;
	it->pad_next = tirpc_xdr_pad(len);
	return ++it->n;
}

/*
 * A payload watched for while encoding, and where it was found: the bytes
 * at (@buf, @len) exactly, or, with @item set, binding item @item whatever
 * it holds (then @buf and @len are set when it is found).
 */
struct tirpc_ddp {
	const void *buf;
	size_t len;
	void (*release)(void *arg);
	void *arg;
	unsigned int item;
	size_t min_len;		/* with @item: a shorter item stays in the message */
	bool found;
	uint32_t pos;		/* its XDR position in the message that lacks it */
};

/*
 * Encoding into a fixed buffer, as xdrmem does, except that an
 * XDR_PUTBYTES of exactly a watched (buf, len) writes nothing: its position
 * is recorded, and the padding XDR_PUTBYTES that xdr_opaque() issues right
 * after it is skipped too. Each watched payload matches once, in order.
 */
struct tirpc_xdr_enc {
	char *base;
	u_int size;
	u_int pos;
	struct tirpc_ddp *ddp;
	unsigned int nddp;
	unsigned int next;	/* the next payload to watch for */
	u_int skip_pad;		/* bytes of padding to skip at the next put, or 0 */
	struct tirpc_xdr_items items;
	bool overflow;		/* a put did not fit @size */
};

void tirpc_xdr_enc_create(XDR *xdrs, struct tirpc_xdr_enc *enc, void *buf, u_int size,
			  struct tirpc_ddp *ddp, unsigned int nddp);

/* A payload that belongs inside a decoded stream. */
struct tirpc_splice {
	const unsigned char *data;
	size_t len;
	uint32_t pos;		/* offset in the message where it belongs */
	unsigned int item;	/* set by decoding: the binding item it began, or 0 */
};

/*
 * Decoding a message with its payloads put back at their positions, each
 * followed by the zero padding to a multiple of 4, so that any XDR routine
 * decodes it as if it had arrived whole. Payload bytes are copied only where
 * the destination is not the payload itself.
 */
struct tirpc_xdr_splice {
	const unsigned char *msg;
	size_t msg_len;
	struct tirpc_splice *parts;
	unsigned int nparts;
	size_t pos;		/* logical position */
	size_t total;		/* logical length */
	struct tirpc_xdr_items items;
};

void tirpc_xdr_splice_create(XDR *xdrs, struct tirpc_xdr_splice *sp, const void *msg,
			     size_t msg_len, struct tirpc_splice *parts, unsigned int nparts);

/*
 * Decoding a reply whose DDP result the server wrote into the client's
 * buffer: the first XDR_GETBYTES of exactly @result_len bytes (with @item
 * set: binding item @item of the results, which must be that long) is
 * served from @result (no copy when the destination is @result), and the
 * padding read right after it as zeroes; everything else comes from the
 * message.
 */
struct tirpc_xdr_result {
	const unsigned char *msg;
	size_t msg_len;
	size_t pos;
	const unsigned char *result;
	size_t result_len;
	bool served;
	u_int pad_next;		/* padding bytes to serve as zeroes at the next get, or 0 */
	unsigned int item;
	struct tirpc_xdr_items items;
};

void tirpc_xdr_result_create(XDR *xdrs, struct tirpc_xdr_result *rs, const void *msg,
			     size_t msg_len, const void *result, size_t result_len,
			     unsigned int item);

/*
 * Where binding item @item of @obj points, found by encoding @obj with
 * @proc into nothing: false when it is empty or absent. @obj must be in a
 * state its XDR routine can encode (zeroed, or filled in).
 */
bool tirpc_xdr_probe_item(xdrproc_t proc, void *obj, unsigned int item, void **buf, size_t *len);

/* xdr_void as an xdrproc_t (through void (*)(void), the type any function casts to). */
#define TIRPC_XDR_VOID ((xdrproc_t)(void (*)(void))xdr_void)

#endif /* RPCRDMA_TIRPC_XDR_H */
