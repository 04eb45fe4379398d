/* SPDX-License-Identifier: MIT */
/*
 * The adapters' XDR streams (struct xdr_ops is public in libtirpc): an
 * encoder that leaves DDP payloads out of the message, and two decoders
 * that put them back where the XDR routines expect them. Longs are 32-bit
 * XDR units, read and written as xdrmem does.
 */
#include <arpa/inet.h>
#include <string.h>

#include "tirpc_xdr.h"

/*
 * Padding that is not in the message reads as zeroes. Decoders read padding
 * into libtirpc's static scratch buffer (xdr_opaque()'s), which every thread
 * shares: writing only the bytes that are not zero already leaves it alone
 * (it only ever holds zeroes), so that concurrent calls do not race on it.
 */
static void put_zeroes(char *dst, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (dst[i])
			dst[i] = 0;
}

/* Encoder */

static struct tirpc_xdr_enc *enc_of(XDR *xdrs)
{
	return (struct tirpc_xdr_enc *)xdrs->x_private;
}

static bool_t enc_getlong(XDR *xdrs, long *lp)
{
	return FALSE;
}

static bool_t enc_getbytes(XDR *xdrs, char *addr, u_int len)
{
	return FALSE;
}

static bool_t enc_put(struct tirpc_xdr_enc *enc, const void *src, u_int len)
{
	if (enc->size - enc->pos < len) {
		enc->overflow = true;
		return FALSE;
	}
	memcpy(enc->base + enc->pos, src, len);
	enc->pos += len;
	return TRUE;
}

static bool_t enc_putlong(XDR *xdrs, const long *lp)
{
	struct tirpc_xdr_enc *enc = enc_of(xdrs);
	uint32_t v = htonl((uint32_t)*lp);

	enc->skip_pad = 0;
	enc->items.pad_next = 0;
	return enc_put(enc, &v, sizeof(v));
}

/* Is this put the payload @ddp watches for? With an item number, it takes its bytes. */
static bool enc_watched(struct tirpc_ddp *ddp, unsigned int item, const char *addr, u_int len)
{
	if (!ddp || !len)
		return false;
	if (ddp->item) {
		if (item != ddp->item || len < ddp->min_len)
			return false;
		ddp->buf = addr;
		ddp->len = len;
		return true;
	}
	return (const void *)addr == ddp->buf && len == ddp->len;
}

static bool_t enc_putbytes(XDR *xdrs, const char *addr, u_int len)
{
	struct tirpc_xdr_enc *enc = enc_of(xdrs);
	struct tirpc_ddp *ddp = enc->next < enc->nddp ? &enc->ddp[enc->next] : NULL;
	unsigned int item = tirpc_xdr_item(&enc->items, len);

	/* xdr_opaque() pads right after the data: that padding is not sent either. */
	if (enc->skip_pad) {
		u_int pad = enc->skip_pad;

		enc->skip_pad = 0;
		if (len == pad)
			return TRUE;
	}
	if (enc_watched(ddp, item, addr, len)) {
		ddp->found = true;
		ddp->pos = enc->pos;
		enc->next++;
		enc->skip_pad = tirpc_xdr_pad(len);
		return TRUE;
	}
	return enc_put(enc, addr, len);
}

static u_int enc_getpostn(XDR *xdrs)
{
	return enc_of(xdrs)->pos;
}

static bool_t enc_setpostn(XDR *xdrs, u_int pos)
{
	struct tirpc_xdr_enc *enc = enc_of(xdrs);

	if (pos > enc->size)
		return FALSE;
	enc->pos = pos;
	enc->skip_pad = 0;
	enc->items.pad_next = 0;
	return TRUE;
}

static int32_t *enc_inline(XDR *xdrs, u_int len)
{
	struct tirpc_xdr_enc *enc = enc_of(xdrs);
	char *p = enc->base + enc->pos;

	if (enc->size - enc->pos < len || ((uintptr_t)p & 3))
		return NULL;
	enc->skip_pad = 0;
	enc->items.pad_next = 0;
	enc->pos += len;
	return (int32_t *)(void *)p;
}

static void xdr_nop_destroy(XDR *xdrs)
{
}

static bool_t xdr_no_control(XDR *xdrs, int request, void *info)
{
	return FALSE;
}

static const struct xdr_ops tirpc_xdr_enc_ops = {
	.x_getlong = enc_getlong,
	.x_putlong = enc_putlong,
	.x_getbytes = enc_getbytes,
	.x_putbytes = enc_putbytes,
	.x_getpostn = enc_getpostn,
	.x_setpostn = enc_setpostn,
	.x_inline = enc_inline,
	.x_destroy = xdr_nop_destroy,
	.x_control = xdr_no_control,
};

void tirpc_xdr_enc_create(XDR *xdrs, struct tirpc_xdr_enc *enc, void *buf, u_int size,
			  struct tirpc_ddp *ddp, unsigned int nddp)
{
	unsigned int i;

	memset(enc, 0, sizeof(*enc));
	enc->base = buf;
	enc->size = size;
	enc->ddp = ddp;
	enc->nddp = nddp;
	for (i = 0; i < nddp; i++)
		ddp[i].found = false;
	memset(xdrs, 0, sizeof(*xdrs));
	xdrs->x_op = XDR_ENCODE;
	xdrs->x_ops = &tirpc_xdr_enc_ops;
	xdrs->x_private = enc;
	xdrs->x_base = buf;
}

/* Splicing decoder */

static struct tirpc_xdr_splice *splice_of(XDR *xdrs)
{
	return (struct tirpc_xdr_splice *)xdrs->x_private;
}

/*
 * Where logical position @pos lies: in the message (returns NULL, *@off is
 * the message offset) or in a payload or its padding (returns the part,
 * *@off is the offset into the payload and its padding). *@run is how many
 * bytes follow contiguously in that piece.
 */
static const struct tirpc_splice *splice_locate(const struct tirpc_xdr_splice *sp, size_t pos,
						size_t *off, size_t *run)
{
	size_t shift = 0;	/* payload bytes (with padding) before the current piece */
	unsigned int i;

	for (i = 0; i < sp->nparts; i++) {
		const struct tirpc_splice *part = &sp->parts[i];
		size_t start = part->pos + shift;
		size_t plen = part->len + tirpc_xdr_pad(part->len);

		if (pos < start) {
			*off = pos - shift;
			*run = start - pos;
			return NULL;
		}
		if (pos < start + plen) {
			*off = pos - start;
			*run = plen - *off;
			return part;
		}
		shift += plen;
	}
	*off = pos - shift;
	*run = sp->msg_len - *off;
	return NULL;
}

static bool_t splice_take(struct tirpc_xdr_splice *sp, char *addr, u_int len)
{
	if (sp->total - sp->pos < len)
		return FALSE;
	while (len) {
		const struct tirpc_splice *part;
		size_t off, run, n;

		part = splice_locate(sp, sp->pos, &off, &run);
		n = run < len ? run : len;
		if (!part) {
			memcpy(addr, sp->msg + off, n);
		} else if (off < part->len) {
			/* Stop at the payload's end: its padding comes from zeroes. */
			if (n > part->len - off)
				n = part->len - off;
			if ((const unsigned char *)addr != part->data + off)
				memcpy(addr, part->data + off, n);
		} else {
			put_zeroes(addr, n);
		}
		addr += n;
		len -= (u_int)n;
		sp->pos += n;
	}
	return TRUE;
}

/* A payload that begins where binding item @item does is that item's. */
static bool_t splice_getbytes(XDR *xdrs, char *addr, u_int len)
{
	struct tirpc_xdr_splice *sp = splice_of(xdrs);
	unsigned int item = tirpc_xdr_item(&sp->items, len);

	if (item) {
		struct tirpc_splice *part;
		size_t off, run;

		part = (struct tirpc_splice *)splice_locate(sp, sp->pos, &off, &run);
		if (part && off == 0 && !part->item)
			part->item = item;
	}
	return splice_take(sp, addr, len);
}

static bool_t splice_getlong(XDR *xdrs, long *lp)
{
	struct tirpc_xdr_splice *sp = splice_of(xdrs);
	uint32_t v;

	sp->items.pad_next = 0;
	if (!splice_take(sp, (char *)&v, sizeof(v)))
		return FALSE;
	*lp = (long)ntohl(v);
	return TRUE;
}

static bool_t dec_putlong(XDR *xdrs, const long *lp)
{
	return FALSE;
}

static bool_t dec_putbytes(XDR *xdrs, const char *addr, u_int len)
{
	return FALSE;
}

static u_int splice_getpostn(XDR *xdrs)
{
	return (u_int)splice_of(xdrs)->pos;
}

static bool_t splice_setpostn(XDR *xdrs, u_int pos)
{
	struct tirpc_xdr_splice *sp = splice_of(xdrs);

	if (pos > sp->total)
		return FALSE;
	sp->pos = pos;
	sp->items.pad_next = 0;
	return TRUE;
}

static int32_t *splice_inline(XDR *xdrs, u_int len)
{
	struct tirpc_xdr_splice *sp = splice_of(xdrs);
	const unsigned char *p;
	size_t off, run;

	/* Only message bytes, and only aligned ones: callers fall back to getlong. */
	if (splice_locate(sp, sp->pos, &off, &run) || run < len)
		return NULL;
	p = sp->msg + off;
	if ((uintptr_t)p & 3)
		return NULL;
	sp->items.pad_next = 0;
	sp->pos += len;
	return (int32_t *)(uintptr_t)p;
}

static const struct xdr_ops tirpc_xdr_splice_ops = {
	.x_getlong = splice_getlong,
	.x_putlong = dec_putlong,
	.x_getbytes = splice_getbytes,
	.x_putbytes = dec_putbytes,
	.x_getpostn = splice_getpostn,
	.x_setpostn = splice_setpostn,
	.x_inline = splice_inline,
	.x_destroy = xdr_nop_destroy,
	.x_control = xdr_no_control,
};

void tirpc_xdr_splice_create(XDR *xdrs, struct tirpc_xdr_splice *sp, const void *msg,
			     size_t msg_len, struct tirpc_splice *parts, unsigned int nparts)
{
	unsigned int i;

	memset(sp, 0, sizeof(*sp));
	sp->msg = msg;
	sp->msg_len = msg_len;
	sp->parts = parts;
	sp->nparts = nparts;
	sp->total = msg_len;
	for (i = 0; i < nparts; i++) {
		sp->total += parts[i].len + tirpc_xdr_pad(parts[i].len);
		parts[i].item = 0;
	}
	memset(xdrs, 0, sizeof(*xdrs));
	xdrs->x_op = XDR_DECODE;
	xdrs->x_ops = &tirpc_xdr_splice_ops;
	xdrs->x_private = sp;
	xdrs->x_base = (char *)(uintptr_t)msg;
}

/* DDP-result decoder */

static struct tirpc_xdr_result *result_of(XDR *xdrs)
{
	return (struct tirpc_xdr_result *)xdrs->x_private;
}

static bool_t result_take(struct tirpc_xdr_result *rs, void *dst, u_int len)
{
	if (rs->msg_len - rs->pos < len)
		return FALSE;
	memcpy(dst, rs->msg + rs->pos, len);
	rs->pos += len;
	return TRUE;
}

static bool_t result_getlong(XDR *xdrs, long *lp)
{
	struct tirpc_xdr_result *rs = result_of(xdrs);
	uint32_t v;

	rs->pad_next = 0;
	rs->items.pad_next = 0;
	if (!result_take(rs, &v, sizeof(v)))
		return FALSE;
	*lp = (long)ntohl(v);
	return TRUE;
}

/* Is this get the result the server placed? */
static bool result_is_placed(const struct tirpc_xdr_result *rs, unsigned int item, u_int len)
{
	if (rs->served || !rs->result_len)
		return false;
	if (rs->item)
		return item == rs->item && len == rs->result_len;
	return len == rs->result_len;
}

static bool_t result_getbytes(XDR *xdrs, char *addr, u_int len)
{
	struct tirpc_xdr_result *rs = result_of(xdrs);
	unsigned int item = tirpc_xdr_item(&rs->items, len);

	/* The padding xdr_opaque() reads after the result is not in the message. */
	if (rs->pad_next) {
		u_int pad = rs->pad_next;

		rs->pad_next = 0;
		if (len == pad) {
			put_zeroes(addr, len);
			return TRUE;
		}
	}
	if (result_is_placed(rs, item, len)) {
		if ((const unsigned char *)addr != rs->result)
			memcpy(addr, rs->result, len);
		rs->served = true;
		rs->pad_next = tirpc_xdr_pad(len);
		return TRUE;
	}
	return result_take(rs, addr, len);
}

static u_int result_getpostn(XDR *xdrs)
{
	return (u_int)result_of(xdrs)->pos;
}

static bool_t result_setpostn(XDR *xdrs, u_int pos)
{
	struct tirpc_xdr_result *rs = result_of(xdrs);

	if (pos > rs->msg_len)
		return FALSE;
	rs->pos = pos;
	rs->pad_next = 0;
	rs->items.pad_next = 0;
	return TRUE;
}

static int32_t *result_inline(XDR *xdrs, u_int len)
{
	struct tirpc_xdr_result *rs = result_of(xdrs);
	const unsigned char *p = rs->msg + rs->pos;

	if (rs->msg_len - rs->pos < len || ((uintptr_t)p & 3))
		return NULL;
	rs->pad_next = 0;
	rs->items.pad_next = 0;
	rs->pos += len;
	return (int32_t *)(uintptr_t)p;
}

static const struct xdr_ops tirpc_xdr_result_ops = {
	.x_getlong = result_getlong,
	.x_putlong = dec_putlong,
	.x_getbytes = result_getbytes,
	.x_putbytes = dec_putbytes,
	.x_getpostn = result_getpostn,
	.x_setpostn = result_setpostn,
	.x_inline = result_inline,
	.x_destroy = xdr_nop_destroy,
	.x_control = xdr_no_control,
};

void tirpc_xdr_result_create(XDR *xdrs, struct tirpc_xdr_result *rs, const void *msg,
			     size_t msg_len, const void *result, size_t result_len,
			     unsigned int item)
{
	memset(rs, 0, sizeof(*rs));
	rs->msg = msg;
	rs->msg_len = msg_len;
	rs->result = result;
	rs->result_len = result_len;
	rs->item = item;
	memset(xdrs, 0, sizeof(*xdrs));
	xdrs->x_op = XDR_DECODE;
	xdrs->x_ops = &tirpc_xdr_result_ops;
	xdrs->x_private = rs;
	xdrs->x_base = (char *)(uintptr_t)msg;
}

/*
 * Probe: encode @obj with @proc into nothing, to find where binding item
 * @item of it points (the buffer a caller preset in the results it passes to
 * clnt_call()). Longs and inline runs are accepted and dropped.
 */
struct tirpc_xdr_probe {
	struct tirpc_xdr_items items;
	unsigned int item;
	const void *buf;
	size_t len;
};

static bool_t probe_putlong(XDR *xdrs, const long *lp)
{
	((struct tirpc_xdr_probe *)xdrs->x_private)->items.pad_next = 0;
	return TRUE;
}

static bool_t probe_putbytes(XDR *xdrs, const char *addr, u_int len)
{
	struct tirpc_xdr_probe *pr = xdrs->x_private;

	if (tirpc_xdr_item(&pr->items, len) == pr->item && !pr->buf) {
		pr->buf = addr;
		pr->len = len;
	}
	return TRUE;
}

static u_int probe_getpostn(XDR *xdrs)
{
	return 0;
}

static bool_t probe_setpostn(XDR *xdrs, u_int pos)
{
	return FALSE;
}

static int32_t *probe_inline(XDR *xdrs, u_int len)
{
	return NULL;
}

static const struct xdr_ops tirpc_xdr_probe_ops = {
	.x_getlong = enc_getlong,
	.x_putlong = probe_putlong,
	.x_getbytes = enc_getbytes,
	.x_putbytes = probe_putbytes,
	.x_getpostn = probe_getpostn,
	.x_setpostn = probe_setpostn,
	.x_inline = probe_inline,
	.x_destroy = xdr_nop_destroy,
	.x_control = xdr_no_control,
};

bool tirpc_xdr_probe_item(xdrproc_t proc, void *obj, unsigned int item, void **buf, size_t *len)
{
	struct tirpc_xdr_probe pr = { .items = { .on = true }, .item = item };
	XDR xdrs;

	memset(&xdrs, 0, sizeof(xdrs));
	xdrs.x_op = XDR_ENCODE;
	xdrs.x_ops = &tirpc_xdr_probe_ops;
	xdrs.x_private = &pr;
	if (!item || !proc(&xdrs, obj) || !pr.buf)
		return false;
	*buf = (void *)(uintptr_t)pr.buf;
	*len = pr.len;
	return true;
}
