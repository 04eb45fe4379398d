/* SPDX-License-Identifier: MIT */
/*
 * Hand-built RPC-over-RDMA Version 1 headers for the codec tests: words are
 * appended in the order of RFC 8166 section 4, independently of the encoder
 * under test, so that a shared misreading of the layout cannot hide.
 */
#ifndef PROTO_WIRE_H
#define PROTO_WIRE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

struct wire {
	unsigned char *b;
	size_t n;
	size_t cap;
};

static inline void wire_reserve(struct wire *w, size_t more)
{
	if (w->n + more <= w->cap)
		return;
	w->cap = (w->n + more) * 2;
	w->b = realloc(w->b, w->cap);
	if (!w->b)
		abort();
}

static inline void wire_free(struct wire *w)
{
	free(w->b);
	w->b = NULL;
	w->n = 0;
	w->cap = 0;
}

static inline void w32(struct wire *w, uint32_t v)
{
	wire_reserve(w, 4);
	w->b[w->n++] = (unsigned char)(v >> 24);
	w->b[w->n++] = (unsigned char)(v >> 16);
	w->b[w->n++] = (unsigned char)(v >> 8);
	w->b[w->n++] = (unsigned char)v;
}

static inline void w64(struct wire *w, uint64_t v)
{
	w32(w, (uint32_t)(v >> 32));
	w32(w, (uint32_t)v);
}

/* rdma_xid, rdma_vers, rdma_credit, rdma_proc. */
static inline void w_fixed(struct wire *w, uint32_t xid, uint32_t vers, uint32_t credit,
			   uint32_t proc)
{
	w32(w, xid);
	w32(w, vers);
	w32(w, credit);
	w32(w, proc);
}

/* xdr_rdma_segment: handle, length, offset. */
static inline void w_seg(struct wire *w, uint32_t handle, uint32_t length, uint64_t offset)
{
	w32(w, handle);
	w32(w, length);
	w64(w, offset);
}

/* One Read list entry: discriminator 1, position, segment. */
static inline void w_read(struct wire *w, uint32_t pos, uint32_t handle, uint32_t length,
			  uint64_t offset)
{
	w32(w, 1);
	w32(w, pos);
	w_seg(w, handle, length, offset);
}

/*
 * Three zero discriminators: after the fixed part, three empty lists; after
 * Read list entries, the end of the Read list, an empty Write list and no
 * Reply chunk.
 */
static inline void w_lists_end(struct wire *w)
{
	w32(w, 0);
	w32(w, 0);
	w32(w, 0);
}

#endif /* PROTO_WIRE_H */
