/* SPDX-License-Identifier: MIT */
/*
 * RPC-over-RDMA Version 1 header codec (RFC 8166 sections 4-5) and RFC 8797
 * CM private data.
 *
 * Wire words are big-endian XDR and may lie at any address: every access goes
 * through memcpy-based loads and stores, which the compiler turns into plain
 * (unaligned-safe) moves plus a byte swap.
 *
 * The decoder is written for the common case first: a chunkless RDMA_MSG is
 * recognised with a handful of loads and returns without entering the list
 * parsers. Everything else goes through parsers whose loops are bounded both
 * by the bytes received and by the caps, and that compare lengths as
 * "bytes left < bytes needed" so that no pointer is ever formed beyond the
 * buffer.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rpcrdma/proto.h>

#include "compiler.h"
#include "proto_plain.h"

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define be32_const(x) ((uint32_t)__builtin_bswap32((uint32_t)(x)))
static inline uint32_t be32_to_cpu(uint32_t x) { return __builtin_bswap32(x); }
static inline uint64_t be64_to_cpu(uint64_t x) { return __builtin_bswap64(x); }
#else
#define be32_const(x) ((uint32_t)(x))
static inline uint32_t be32_to_cpu(uint32_t x) { return x; }
static inline uint64_t be64_to_cpu(uint64_t x) { return x; }
#endif
#define cpu_to_be32 be32_to_cpu
#define cpu_to_be64 be64_to_cpu

/* Raw (wire order) word: compare it against be32_const() values. */
static inline uint32_t load_raw32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint64_t load_raw64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t get_be32(const unsigned char *p)
{
	return be32_to_cpu(load_raw32(p));
}

static inline uint64_t get_be64(const unsigned char *p)
{
	return be64_to_cpu(load_raw64(p));
}

static inline void put_raw32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

static inline void put_raw64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

static inline void put_be32(unsigned char *p, uint32_t v)
{
	put_raw32(p, cpu_to_be32(v));
}

static inline void put_be64(unsigned char *p, uint64_t v)
{
	put_raw64(p, cpu_to_be64(v));
}

/* The raw 64-bit load of two consecutive raw words, @first at the lower address. */
static inline uint64_t raw_pair(uint32_t first, uint32_t second)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return (uint64_t)second << 32 | first;
#else
	return (uint64_t)first << 32 | second;
#endif
}

/*
 * Two consecutive 32-bit words, converted between wire order and the host
 * order of two consecutive uint32_t members in one 64-bit load, swap and
 * store: on a little-endian host a byte swap of the pair also exchanges the
 * words, which a rotation puts back. The conversion is its own inverse.
 */
static inline uint64_t swap_pair(uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap64(v);
	return v >> 32 | v << 32;
#else
	return v;
#endif
}

/* The codec moves these member pairs with swap_pair(). */
_Static_assert(offsetof(struct rpcrdma_hdr, vers) == offsetof(struct rpcrdma_hdr, xid) + 4,
	       "xid, vers adjacent");
_Static_assert(offsetof(struct rpcrdma_hdr, credit) == 8 &&
	       offsetof(struct rpcrdma_hdr, proc) == 12, "credit, proc adjacent");
_Static_assert(offsetof(struct rpcrdma_hdr_enc, proc) ==
	       offsetof(struct rpcrdma_hdr_enc, credit) + 4, "enc credit, proc adjacent");
_Static_assert(offsetof(struct rpcrdma_segment, length) == 4 &&
	       offsetof(struct rpcrdma_segment, offset) == 8 &&
	       sizeof(struct rpcrdma_segment) == RPCRDMA_SEGMENT_LEN, "segment layout");
_Static_assert(offsetof(struct rpcrdma_read_segment, seg) == 8 &&
	       sizeof(struct rpcrdma_read_segment) == 24, "read segment layout");

/*
 * x86-64 CPUs with SSSE3 (all but the oldest) encode segments with PSHUFB,
 * chosen at load time; RPCRDMA_NO_SIMD in the environment forces the scalar
 * code, so that the tests cover both.
 */
#if defined(__x86_64__) && defined(__GNUC__)
#define PROTO_SSSE3 1
#include <tmmintrin.h>

static int proto_ssse3;

__attribute__((constructor)) static void proto_simd_init(void)
{
	__builtin_cpu_init();
	proto_ssse3 = __builtin_cpu_supports("ssse3") && !getenv("RPCRDMA_NO_SIMD");
}
#endif

/* Halves the loop overhead of the per-segment loops (gcc and clang). */
#define SEGMENT_LOOP_UNROLL _Pragma("GCC unroll 4")

#define XDR_ZERO 0u
#define XDR_ONE be32_const(1)

/* A Read list entry: discriminator, position, handle, length, offset. */

/* Caps in force for one decode, defaults already substituted. */
struct caps {
	uint32_t chunk_segs;
	uint32_t chunks;
	uint32_t read_segs;
};

static inline int limits_invalid(const struct rpcrdma_limits *lim)
{
	return lim->max_chunk_segs > RPCRDMA_MAX_SEGS_LIMIT ||
	       lim->max_chunks > RPCRDMA_MAX_CHUNKS_LIMIT ||
	       lim->max_read_segs > RPCRDMA_MAX_SEGS_LIMIT;
}

static const struct caps default_caps = {
	.chunk_segs = RPCRDMA_DEFAULT_MAX_CHUNK_SEGS,
	.chunks = RPCRDMA_DEFAULT_MAX_CHUNKS,
	.read_segs = RPCRDMA_DEFAULT_MAX_READ_SEGS,
};

/* @lim is NULL or within the ceilings (see limits_invalid()); @local is filled if it is not. */
static const struct caps *caps_resolve(const struct rpcrdma_limits *lim, struct caps *local)
{
	if (!lim)
		return &default_caps;
	*local = default_caps;
	if (lim->max_chunk_segs)
		local->chunk_segs = lim->max_chunk_segs;
	if (lim->max_chunks)
		local->chunks = lim->max_chunks;
	if (lim->max_read_segs)
		local->read_segs = lim->max_read_segs;
	return local;
}

/*
 * A segment's offset + length wraps only if the offset's high word is all
 * ones, since the length is 32 bits: that word is the same in either byte
 * order, so the loops test it raw and come here for the rare full check.
 */
static int segment_wraps(const unsigned char *seg)
{
	uint64_t offset = get_be64(seg + 8);
	uint32_t length = get_be32(seg + 4);

	return offset + length < offset;
}

/*
 * Decode the segment array of a Write or Reply chunk; @p is at its segment
 * count. Returns the position after the chunk, or NULL with *rc set.
 */
static inline const unsigned char *decode_chunk(const unsigned char *p, const unsigned char *end,
						const struct caps *caps,
						struct rpcrdma_chunk *chunk, int *rc)
{
	size_t off, bytes;
	uint32_t nsegs;
	uint64_t total = 0;

	if (unlikely(end - p < 4)) {
		*rc = -EMSGSIZE;
		return NULL;
	}
	nsegs = get_be32(p);
	p += 4;
	if (unlikely(nsegs > caps->chunk_segs)) {
		*rc = -E2BIG;
		return NULL;
	}
	/* nsegs <= RPCRDMA_MAX_SEGS_LIMIT: the product cannot overflow. */
	bytes = (size_t)nsegs * RPCRDMA_SEGMENT_LEN;
	if (unlikely((size_t)(end - p) < bytes)) {
		*rc = -EMSGSIZE;
		return NULL;
	}
	if (likely(nsegs == 1)) {
		/* The common case, without the unrolled loop's entry. */
		total = get_be32(p + 4);
		if (unlikely(load_raw32(p + 8) == UINT32_MAX) && segment_wraps(p)) {
			*rc = -EOVERFLOW;
			return NULL;
		}
	} else {
		SEGMENT_LOOP_UNROLL
		for (off = 0; off != bytes; off += RPCRDMA_SEGMENT_LEN) {
			total += get_be32(p + off + 4);
			if (unlikely(load_raw32(p + off + 8) == UINT32_MAX) &&
			    segment_wraps(p + off)) {
				*rc = -EOVERFLOW;
				return NULL;
			}
		}
	}
	chunk->nsegs = nsegs;
	chunk->total = total;
	chunk->wire = p;
	return p + bytes;
}

#ifdef PROTO_SSSE3
/*
 * Two further segments of the current chunk: both heads (discriminator and
 * position) equal @head, and neither offset's high word is all ones, so that
 * neither can wrap (segment_wraps()). A pair that fails goes one entry at a
 * time through decode_read_list()'s loop, which gives the verdict.
 */
static inline bool read_pair_plain(const unsigned char *p, uint64_t head)
{
	return load_raw64(p) == head && load_raw64(p + RPCRDMA_READ_ENTRY_LEN) == head &&
	       likely(load_raw32(p + 16) != UINT32_MAX && load_raw32(p + 40) != UINT32_MAX);
}

/*
 * The further segments of a chunk two at a time, from @off while a pair's
 * second entry lies below @fast_end (decode_read_list()'s bound, above @off
 * + 24): read_pair_plain() pairs, their lengths swapped and widened by one
 * PSHUFB and summed into *@lengths. Returns the offset of the first entry
 * it leaves to decode_read_list(). Its pointers stay within the buffer: a
 * pair below @fast_end is whole, with the discriminator after it. There is
 * no scalar twin: without PSHUFB two entries at a time did not pay.
 */
__attribute__((target("ssse3"))) static size_t
decode_read_pairs_ssse3(const unsigned char *first, size_t off, size_t fast_end, uint64_t head,
			uint64_t *lengths)
{
	const __m128i widen = _mm_setr_epi8(3, 2, 1, 0, -1, -1, -1, -1,
					    11, 10, 9, 8, -1, -1, -1, -1);
	const unsigned char *p = first + off, *stop = first + fast_end - RPCRDMA_READ_ENTRY_LEN;
	__m128i sum = _mm_setzero_si128(), pair;

	for (; p < stop; p += 2 * RPCRDMA_READ_ENTRY_LEN) {
		if (!read_pair_plain(p, head))
			break;
		/* Each length with the offset word after it: the shuffle drops that. */
		pair = _mm_loadl_epi64((const __m128i *)(const void *)(p + 12));
		pair = _mm_castpd_si128(_mm_loadh_pd(_mm_castsi128_pd(pair),
						     (const double *)(const void *)(p + 36)));
		sum = _mm_add_epi64(sum, _mm_shuffle_epi8(pair, widen));
	}
	*lengths = (uint64_t)_mm_cvtsi128_si64(sum) +
		   (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(sum, sum));
	return (size_t)(p - first);
}
#endif

/*
 * Decode the Read list; @first is at its first discriminator, which the
 * caller has checked is within @end. Read segments sharing a position form
 * one Read chunk; positions must be 4-aligned and non-decreasing, so that a
 * chunk is a run of equal positions. Offsets from @first, not pointers,
 * track the caps, so that no pointer beyond the buffer is ever formed.
 *
 * The loop's fast path handles a further segment of the current chunk that
 * lies below every cap and bound (fast_end); with SSSE3, the slow path hands
 * the run after a chunk's first entry to decode_read_pairs_ssse3() first.
 * Anything else (the first entry, a new position, the end of the list, a
 * cap, the end of the buffer, a bad discriminator) takes the slow path,
 * which sorts out which it is.
 */
static const unsigned char *decode_read_list(const unsigned char *first,
					     const unsigned char *end,
					     const struct caps *caps, struct rpcrdma_hdr *hdr,
					     int *rc)
{
	const size_t avail = (size_t)(end - first);
	/* An entry at off is whole, with the discriminator after it, iff off < in_bounds. */
	const size_t in_bounds = avail >= RPCRDMA_READ_ENTRY_LEN + 4 ? avail - RPCRDMA_READ_ENTRY_LEN - 3 : 0;
	const size_t read_stop = (size_t)caps->read_segs * RPCRDMA_READ_ENTRY_LEN;
	size_t off = 0, fast_end = 0, stop;
	uint32_t pos, pos_raw, chunk_pos = 0, nchunks = 0;
	uint64_t head = 0, chunk_total = 0;
	const unsigned char *p;
	uint32_t disc;
#ifdef PROTO_SSSE3
	/* Its address is taken, not chunk_total's, which keeps its register. */
	uint64_t pairs_total;
	const bool ssse3 = proto_ssse3;
#endif

	for (;; off += RPCRDMA_READ_ENTRY_LEN) {
		p = first + off;
		/* The discriminator and the position, compared as one word. */
		if (unlikely(off >= fast_end || load_raw64(p) != head)) {
			disc = load_raw32(p);
			if (disc == XDR_ZERO)
				break;
			if (disc != XDR_ONE) {
				*rc = -EBADMSG;
				return NULL;
			}
			if (off >= in_bounds) {
				*rc = -EMSGSIZE;
				return NULL;
			}
			pos_raw = load_raw32(p + 4);
			pos = be32_to_cpu(pos_raw);
			head = raw_pair(XDR_ONE, pos_raw);
			if (off == read_stop) {
				*rc = -E2BIG;
				return NULL;
			}
			if (off) {
				/* Here off < fast_end fails only at the chunk's cap. */
				if (pos == chunk_pos) {
					*rc = -E2BIG;
					return NULL;
				}
				if (pos < chunk_pos) {
					*rc = -EILSEQ;
					return NULL;
				}
				if (chunk_pos + chunk_total > UINT32_MAX) {
					*rc = -EOVERFLOW;
					return NULL;
				}
			}
			if (pos & 3) {
				*rc = -EILSEQ;
				return NULL;
			}
			if (nchunks == caps->chunks) {
				*rc = -E2BIG;
				return NULL;
			}
			nchunks++;
			chunk_pos = pos;
			chunk_total = 0;
			stop = off + (size_t)caps->chunk_segs * RPCRDMA_READ_ENTRY_LEN;
			if (stop > read_stop)
				stop = read_stop;
			fast_end = stop < in_bounds ? stop : in_bounds;
#ifdef PROTO_SSSE3
			/*
			 * The chunk's further segments in pairs, then this
			 * entry below (the pairs judge nothing, so verdicts
			 * keep their order); the loop's step then lands on
			 * the first entry the pairs left.
			 */
			if (likely(ssse3) && off + 2 * RPCRDMA_READ_ENTRY_LEN < fast_end) {
				off = decode_read_pairs_ssse3(first, off + RPCRDMA_READ_ENTRY_LEN,
							      fast_end, head, &pairs_total) -
				      RPCRDMA_READ_ENTRY_LEN;
				chunk_total = pairs_total;
			}
#endif
		}
		chunk_total += get_be32(p + 12);
		if (unlikely(load_raw32(p + 16) == UINT32_MAX) && segment_wraps(p + 8)) {
			*rc = -EOVERFLOW;
			return NULL;
		}
	}
	if (nchunks) {
		if (chunk_pos + chunk_total > UINT32_MAX) {
			*rc = -EOVERFLOW;
			return NULL;
		}
		hdr->read_segs = (uint32_t)(off / RPCRDMA_READ_ENTRY_LEN);
		hdr->read_chunks = nchunks;
		hdr->read_list = first + 4;
	}
	return p + 4;
}

/*
 * The shapes of an NFS READ call (one Write chunk of one segment) and of an
 * NFS WRITE call (one Read segment), each 52 bytes with nothing else in its
 * lists: decoded without the general parsers. Anything unusual about them
 * (a wrap, a misaligned position, other list words) returns false, and
 * decode_lists() gives the verdict, so both paths always agree. No cap is
 * below 1, so a single segment is within any.
 */
#define HDR_SINGLE_LEN (RPCRDMA_HDR_MIN_LEN + RPCRDMA_READ_ENTRY_LEN)
_Static_assert(HDR_SINGLE_LEN == RPCRDMA_HDR_MIN_LEN + 8 + RPCRDMA_SEGMENT_LEN,
	       "one Read entry and one one-segment Write chunk take the same room");

static inline bool decode_single(const unsigned char *p, size_t len, struct rpcrdma_hdr *hdr)
{
	uint64_t offset;
	uint32_t length;

	/* Before any load: a peer's short message reaches here too. */
	if (len < HDR_SINGLE_LEN)
		return false;
	if (load_raw64(p + 16) == raw_pair(XDR_ZERO, XDR_ONE)) {
		/* No Read list; a Write chunk: 1 segment at 28, list end and no Reply chunk at 44. */
		if (load_raw32(p + 24) != XDR_ONE || load_raw64(p + 44) != 0)
			return false;
		length = get_be32(p + 32);
		offset = get_be64(p + 36);
		if (unlikely(offset + length < offset))
			return false;
		hdr->write[0].nsegs = 1;
		hdr->write[0].total = length;
		hdr->write[0].wire = p + 28;
		hdr->write_chunks = 1;
	} else if (load_raw32(p + 16) == XDR_ONE) {
		/* A Read entry at 16 (position at 20, segment at 24), then three empty lists. */
		uint64_t pos = get_be32(p + 20);

		if ((load_raw64(p + 40) | load_raw32(p + 48)) != 0)
			return false;
		length = get_be32(p + 28);
		offset = get_be64(p + 32);
		if (unlikely((pos & 3) || pos + length > UINT32_MAX || offset + length < offset))
			return false;
		hdr->read_segs = 1;
		hdr->read_chunks = 1;
		hdr->read_list = p + 20;
	} else {
		return false;
	}
	hdr->hdr_len = HDR_SINGLE_LEN;
	return true;
}

/* RDMA_MSG or RDMA_NOMSG with at least one non-empty list, or truncated. */
static __attribute__((noinline)) int decode_lists(const unsigned char *buf, size_t len,
						  const struct rpcrdma_limits *lim,
						  struct rpcrdma_hdr *hdr)
{
	const unsigned char *end = buf + len;
	const unsigned char *p = buf + RPCRDMA_HDR_FIXED_LEN;
	uint32_t nchunks = 0, disc;
	struct caps local;
	const struct caps *caps = caps_resolve(lim, &local);
	int rc = 0;

	if (unlikely(end - p < 4))
		return -EMSGSIZE;
	if (load_raw32(p) == XDR_ZERO) {
		p += 4;
	} else {
		p = decode_read_list(p, end, caps, hdr, &rc);
		if (!p)
			return rc;
	}

	for (;;) {
		if (unlikely(end - p < 4))
			return -EMSGSIZE;
		disc = load_raw32(p);
		p += 4;
		if (disc == XDR_ZERO)
			break;
		if (unlikely(disc != XDR_ONE))
			return -EBADMSG;
		if (unlikely(nchunks == caps->chunks))
			return -E2BIG;
		p = decode_chunk(p, end, caps, &hdr->write[nchunks], &rc);
		if (!p)
			return rc;
		nchunks++;
	}
	hdr->write_chunks = nchunks;

	if (unlikely(end - p < 4))
		return -EMSGSIZE;
	disc = load_raw32(p);
	p += 4;
	if (disc == XDR_ONE) {
		p = decode_chunk(p, end, caps, &hdr->reply, &rc);
		if (!p)
			return rc;
		hdr->has_reply = 1;
	} else if (unlikely(disc != XDR_ZERO)) {
		return -EBADMSG;
	}
	hdr->hdr_len = (uint32_t)(p - buf);
	return 0;
}

/* Out of line, so that the chunkless path keeps its few registers. */
static __attribute__((noinline)) int decode_listed(const unsigned char *buf, size_t len,
						   const struct rpcrdma_limits *lim,
						   struct rpcrdma_hdr *hdr)
{
	if (decode_single(buf, len, hdr))
		return 0;
	return decode_lists(buf, len, lim, hdr);
}

static __attribute__((noinline)) int decode_other(const unsigned char *buf, size_t len,
						  struct rpcrdma_hdr *hdr)
{
	uint32_t err;

	switch (hdr->proc) {
	case RPCRDMA_DONE:
		hdr->hdr_len = RPCRDMA_HDR_FIXED_LEN;
		return 0;
	case RPCRDMA_ERROR:
		break;
	case RPCRDMA_MSGP:
		return -EOPNOTSUPP;
	default:
		return -EBADRQC;
	}
	if (len < RPCRDMA_HDR_FIXED_LEN + 4)
		return -EMSGSIZE;
	err = get_be32(buf + 16);
	if (err == RPCRDMA_ERR_CHUNK) {
		hdr->hdr_len = RPCRDMA_HDR_FIXED_LEN + 4;
	} else if (err == RPCRDMA_ERR_VERS) {
		if (len < RPCRDMA_HDR_FIXED_LEN + 12)
			return -EMSGSIZE;
		hdr->vers_low = get_be32(buf + 20);
		hdr->vers_high = get_be32(buf + 24);
		hdr->hdr_len = RPCRDMA_HDR_FIXED_LEN + 12;
	} else {
		return -EBADMSG;
	}
	hdr->err = err;
	return 0;
}

RPCRDMA_EXPORT int rpcrdma_hdr_decode(const void *buf, size_t len,
				      const struct rpcrdma_limits *lim,
				      struct rpcrdma_hdr *hdr)
{
	const unsigned char *p = buf;
	uint64_t pair;

	if (unlikely(!buf || !hdr))
		return -EINVAL;
	if (unlikely(lim && limits_invalid(lim)))
		return -EINVAL;
	if (unlikely(len < RPCRDMA_HDR_FIXED_LEN))
		return -ENODATA;

	/* xid and vers, then credit and proc: two words at a time. */
	pair = swap_pair(load_raw64(p));
	memcpy((unsigned char *)hdr + offsetof(struct rpcrdma_hdr, xid), &pair, sizeof(pair));
	pair = swap_pair(load_raw64(p + 8));
	memcpy((unsigned char *)hdr + offsetof(struct rpcrdma_hdr, credit), &pair, sizeof(pair));
	if (unlikely(load_raw32(p + 4) != be32_const(RPCRDMA_VERSION)))
		return -EPROTONOSUPPORT;

	rpcrdma_hdr_clear(hdr);

	/* RDMA_MSG or RDMA_NOMSG, tested in wire order. */
	if (likely((load_raw32(p + 12) & ~be32_const(RPCRDMA_NOMSG)) == 0)) {
		/* Three empty lists: the common inline call or reply. */
		if (likely(len >= RPCRDMA_HDR_MIN_LEN &&
			   (load_raw64(p + 16) | load_raw32(p + 24)) == 0)) {
			hdr->hdr_len = RPCRDMA_HDR_MIN_LEN;
			return 0;
		}
		return decode_listed(p, len, lim, hdr);
	}
	return decode_other(p, len, hdr);
}

static inline void read_segment_out(const unsigned char *p, struct rpcrdma_segment *out)
{
	uint64_t pair = swap_pair(load_raw64(p));

	memcpy(out, &pair, sizeof(pair));
	out->offset = get_be64(p + 8);
}

RPCRDMA_EXPORT void rpcrdma_hdr_read_segment(const struct rpcrdma_hdr *hdr, uint32_t i,
					     struct rpcrdma_read_segment *out)
{
	const unsigned char *p = hdr->read_list + (size_t)i * RPCRDMA_READ_ENTRY_LEN;

	out->position = get_be32(p);
	read_segment_out(p + 4, &out->seg);
}

RPCRDMA_EXPORT void rpcrdma_chunk_segment(const struct rpcrdma_chunk *chunk, uint32_t i,
					  struct rpcrdma_segment *out)
{
	const unsigned char *p = chunk->wire + (size_t)i * RPCRDMA_SEGMENT_LEN;

	read_segment_out(p, out);
}

RPCRDMA_EXPORT enum rpcrdma_verdict rpcrdma_hdr_verdict(int rc, const struct rpcrdma_hdr *hdr)
{
	switch (rc) {
	case 0:
		if (hdr && (hdr->proc == RPCRDMA_MSG || hdr->proc == RPCRDMA_NOMSG))
			return RPCRDMA_ACCEPT;
		return RPCRDMA_DROP;
	case -EPROTONOSUPPORT:
		return RPCRDMA_REPLY_ERR_VERS;
	case -EOPNOTSUPP:
	case -EBADRQC:
	case -EMSGSIZE:
	case -EBADMSG:
	case -E2BIG:
	case -EILSEQ:
	case -EOVERFLOW:
		return RPCRDMA_REPLY_ERR_CHUNK;
	default:
		/* -ENODATA (no XID to answer), -EINVAL (a caller bug), others. */
		return RPCRDMA_DROP;
	}
}

/* Encoding. */

static inline int chunk_desc_invalid(const struct rpcrdma_chunk_desc *chunk)
{
	return chunk->nsegs > RPCRDMA_MAX_SEGS_LIMIT || (chunk->nsegs && !chunk->segs);
}

/* Positions 4-aligned and non-decreasing. */
static int read_list_valid(const struct rpcrdma_read_segment *read, uint32_t nsegs)
{
	uint32_t prev = 0, misaligned = 0;
	uint32_t i;

	for (i = 0; i < nsegs; i++) {
		uint32_t pos = read[i].position;

		if (unlikely(pos < prev))
			return 0;
		misaligned |= pos;
		prev = pos;
	}
	return !(misaligned & 3);
}

/*
 * The lists' part of the length, beyond the 28 bytes of three empty lists,
 * or -EINVAL for a bad description. The Read positions are checked here only
 * when asked: encode_msg() checks them as it copies them.
 */
static __attribute__((always_inline)) inline long lists_len(const struct rpcrdma_hdr_enc *enc,
							    bool check_positions)
{
	long n = 0;
	uint32_t i;

	if (enc->read_segs) {
		if (unlikely(enc->read_segs > RPCRDMA_MAX_SEGS_LIMIT || !enc->read))
			return -EINVAL;
		if (check_positions && unlikely(!read_list_valid(enc->read, enc->read_segs)))
			return -EINVAL;
		n += (long)enc->read_segs * RPCRDMA_READ_ENTRY_LEN;
	}
	if (enc->write_chunks) {
		if (unlikely(enc->write_chunks > RPCRDMA_MAX_CHUNKS_LIMIT || !enc->write))
			return -EINVAL;
		for (i = 0; i < enc->write_chunks; i++) {
			if (unlikely(chunk_desc_invalid(&enc->write[i])))
				return -EINVAL;
			n += 8 + (long)enc->write[i].nsegs * RPCRDMA_SEGMENT_LEN;
		}
	}
	if (enc->reply) {
		if (unlikely(chunk_desc_invalid(enc->reply)))
			return -EINVAL;
		n += 4 + (long)enc->reply->nsegs * RPCRDMA_SEGMENT_LEN;
	}
	return n;
}

static inline int enc_chunkless(const struct rpcrdma_hdr_enc *enc)
{
	return enc->proc <= RPCRDMA_NOMSG && !(enc->read_segs | enc->write_chunks) && !enc->reply;
}

static long encoded_len(const struct rpcrdma_hdr_enc *enc)
{
	long n;

	if (enc->proc <= RPCRDMA_NOMSG) {
		n = lists_len(enc, true);
		return n < 0 ? n : RPCRDMA_HDR_MIN_LEN + n;
	}
	if (enc->proc == RPCRDMA_ERROR) {
		if (enc->err == RPCRDMA_ERR_VERS)
			return RPCRDMA_HDR_FIXED_LEN + 12;
		if (enc->err == RPCRDMA_ERR_CHUNK)
			return RPCRDMA_HDR_FIXED_LEN + 4;
	}
	return -EINVAL;
}

RPCRDMA_EXPORT long rpcrdma_hdr_encoded_len(const struct rpcrdma_hdr_enc *enc)
{
	if (unlikely(!enc))
		return -EINVAL;
	return encoded_len(enc);
}

#ifdef PROTO_SSSE3
/*
 * A segment's wire form is its host form with the bytes of each field
 * (handle, length, offset) reversed: one PSHUFB.
 */
__attribute__((target("ssse3"))) static void encode_segments_ssse3(unsigned char *p,
								   const unsigned char *src,
								   size_t bytes)
{
	const __m128i reverse = _mm_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4,
					      15, 14, 13, 12, 11, 10, 9, 8);
	size_t off;

	_Pragma("GCC unroll 4")
	for (off = 0; off != bytes; off += RPCRDMA_SEGMENT_LEN) {
		__m128i seg = _mm_loadu_si128((const __m128i *)(const void *)(src + off));

		_mm_storeu_si128((__m128i *)(void *)(p + off), _mm_shuffle_epi8(seg, reverse));
	}
}
#endif

/* One segment's wire form at @p, from its host form at @src. */
static inline void encode_segment(unsigned char *p, const unsigned char *src)
{
	put_raw64(p, swap_pair(load_raw64(src)));
	put_be64(p + 8, load_raw64(src + 8));
}

/*
 * struct rpcrdma_segment and its wire form are both 16 bytes (and a Read
 * segment and a Read list entry both 24), so one offset walks both arrays.
 */
static unsigned char *encode_segments(unsigned char *p, const struct rpcrdma_segment *seg,
				      uint32_t nsegs)
{
	const unsigned char *src = (const unsigned char *)seg;
	size_t off, bytes = (size_t)nsegs * RPCRDMA_SEGMENT_LEN;

	if (nsegs == 1) {
		/* The common case, without the unrolled loop's entry. */
		encode_segment(p, src);
		return p + RPCRDMA_SEGMENT_LEN;
	}
#ifdef PROTO_SSSE3
	if (likely(proto_ssse3)) {
		encode_segments_ssse3(p, src, bytes);
		return p + bytes;
	}
#endif
	SEGMENT_LOOP_UNROLL
	for (off = 0; off != bytes; off += RPCRDMA_SEGMENT_LEN)
		encode_segment(p + off, src + off);
	return p + bytes;
}

static unsigned char *encode_chunk(unsigned char *p, const struct rpcrdma_chunk_desc *chunk)
{
	put_raw32(p, XDR_ONE);
	put_be32(p + 4, chunk->nsegs);
	return encode_segments(p + 8, chunk->segs, chunk->nsegs);
}

/*
 * A Read list entry's discriminator and position, from the Read segment at
 * @src; 0 if its position is lower than *@prev, else 1. The positions are ORed
 * into *@misaligned, for one alignment test at the end.
 */
static inline int encode_read_head(unsigned char *p, const unsigned char *src, uint32_t *prev,
				    uint32_t *misaligned)
{
	uint32_t pos = load_raw32(src);

	if (pos < *prev)
		return 0;
	*misaligned |= pos;
	*prev = pos;
	put_raw64(p, raw_pair(XDR_ONE, cpu_to_be32(pos)));
	return 1;
}

#ifdef PROTO_SSSE3
/*
 * Two Read list entries are three 16-byte blocks, in host form (position,
 * padding, handle, length | offset, position, padding | handle, length,
 * offset) as on the wire (discriminator, position, handle, length | offset,
 * discriminator, position | handle, length, offset): one PSHUFB a block, the
 * discriminators ORed in. ORed, not stored on their own, so that a decoder's
 * 8-byte load of a discriminator and position is forwarded from one store.
 */
struct read_shuffle {
	__m128i first, middle, last, first_disc, middle_disc;
};

__attribute__((target("ssse3"))) static inline void
read_shuffle_init(struct read_shuffle *s)
{
	s->first = _mm_setr_epi8(-1, -1, -1, -1, 3, 2, 1, 0, 11, 10, 9, 8, 15, 14, 13, 12);
	s->middle = _mm_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0, -1, -1, -1, -1, 11, 10, 9, 8);
	s->last = _mm_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 15, 14, 13, 12, 11, 10, 9, 8);
	s->first_disc = _mm_setr_epi32((int)XDR_ONE, 0, 0, 0);
	s->middle_disc = _mm_setr_epi32(0, 0, (int)XDR_ONE, 0);
}

/* The 16-byte block at @src, stored at @p through @mask with @disc ORed in. */
__attribute__((target("ssse3"))) static inline void
read_block(unsigned char *p, const unsigned char *src, __m128i mask, __m128i disc)
{
	__m128i block = _mm_loadu_si128((const __m128i *)(const void *)src);

	_mm_storeu_si128((__m128i *)(void *)p, _mm_or_si128(_mm_shuffle_epi8(block, mask), disc));
}

/* encode_read_list()'s loop, two entries at a time. */
__attribute__((target("ssse3"))) static unsigned char *
encode_read_list_ssse3(unsigned char *p, const unsigned char *src, uint32_t nsegs)
{
	const size_t pairs = (size_t)(nsegs / 2) * 2 * RPCRDMA_READ_ENTRY_LEN;
	uint32_t prev = 0, misaligned = 0, pos, next;
	struct read_shuffle s;
	size_t off;

	read_shuffle_init(&s);
	_Pragma("GCC unroll 2")
	for (off = 0; off != pairs; off += 2 * RPCRDMA_READ_ENTRY_LEN) {
		pos = load_raw32(src + off);
		next = load_raw32(src + off + RPCRDMA_READ_ENTRY_LEN);
		if (unlikely(pos < prev || next < pos))
			return NULL;
		misaligned |= pos | next;
		prev = next;
		read_block(p + off, src + off, s.first, s.first_disc);
		read_block(p + off + 16, src + off + 16, s.middle, s.middle_disc);
		read_block(p + off + 32, src + off + 32, s.last, _mm_setzero_si128());
	}
	if (nsegs & 1) {
		/* The odd entry: its first block, then its offset (the array ends there). */
		pos = load_raw32(src + pairs);
		if (unlikely(pos < prev))
			return NULL;
		misaligned |= pos;
		read_block(p + pairs, src + pairs, s.first, s.first_disc);
		put_be64(p + pairs + 16, load_raw64(src + pairs + 16));
	}
	return misaligned & 3 ? NULL : p + (size_t)nsegs * RPCRDMA_READ_ENTRY_LEN;
}
#endif

/*
 * The Read list's entries (not its end), or NULL if a position is
 * misaligned or lower than the one before it (read_list_valid()'s test,
 * folded into the copy).
 */
static unsigned char *encode_read_list(unsigned char *p, const struct rpcrdma_read_segment *read,
				       uint32_t nsegs)
{
	const unsigned char *src = (const unsigned char *)read;
	size_t off, bytes = (size_t)nsegs * RPCRDMA_READ_ENTRY_LEN;
	uint32_t prev = 0, misaligned = 0;

#ifdef PROTO_SSSE3
	if (nsegs > 1 && likely(proto_ssse3))
		return encode_read_list_ssse3(p, src, nsegs);
#endif
	for (off = 0; off != bytes; off += RPCRDMA_READ_ENTRY_LEN) {
		if (unlikely(!encode_read_head(p + off, src + off, &prev, &misaligned)))
			return NULL;
		encode_segment(p + off + 8, src + off + 8);
	}
	if (unlikely(misaligned & 3))
		return NULL;
	return p + bytes;
}

static inline void encode_fixed(unsigned char *p, const struct rpcrdma_hdr_enc *enc)
{
	uint64_t pair;

	/*
	 * One store per pair of words, so that a decoder reading them back two
	 * at a time (as ours does) gets them forwarded from the store buffer.
	 */
	pair = (uint64_t)enc->xid | (uint64_t)RPCRDMA_VERSION << 32;
	put_raw64(p, swap_pair(pair));
	memcpy(&pair, (const unsigned char *)enc + offsetof(struct rpcrdma_hdr_enc, credit),
	       sizeof(pair));
	put_raw64(p + 8, swap_pair(pair));
}

/*
 * RDMA_MSG or RDMA_NOMSG with lists. Nothing is written unless the whole
 * header fits, so its length comes first, from the counts alone; the Read
 * positions are checked as they are copied. A header that does not fit goes
 * through encoded_len(), so that -EINVAL for a bad position takes precedence
 * over -EMSGSIZE.
 */
static long encode_msg(unsigned char *p, size_t len, const struct rpcrdma_hdr_enc *enc)
{
	const unsigned char *start = p;
	long n = lists_len(enc, false);
	uint32_t i;

	if (unlikely(n < 0))
		return n;
	if (unlikely(len < RPCRDMA_HDR_MIN_LEN + (size_t)n)) {
		n = encoded_len(enc);
		return n < 0 ? n : -EMSGSIZE;
	}
	encode_fixed(p, enc);
	p += RPCRDMA_HDR_FIXED_LEN;
	if (enc->read_segs) {
		p = encode_read_list(p, enc->read, enc->read_segs);
		if (unlikely(!p))
			return -EINVAL;
	}
	put_raw32(p, XDR_ZERO);
	p += 4;
	for (i = 0; i < enc->write_chunks; i++)
		p = encode_chunk(p, &enc->write[i]);
	put_raw32(p, XDR_ZERO);
	p += 4;
	if (enc->reply)
		return encode_chunk(p, enc->reply) - start;
	put_raw32(p, XDR_ZERO);
	return p + 4 - start;
}

static __attribute__((noinline)) long encode_slow(unsigned char *p, size_t len,
						  const struct rpcrdma_hdr_enc *enc)
{
	long n;

	if (enc->proc <= RPCRDMA_NOMSG)
		return encode_msg(p, len, enc);
	n = encoded_len(enc);
	if (unlikely(n < 0))
		return n;
	if (unlikely(len < (size_t)n))
		return -EMSGSIZE;
	encode_fixed(p, enc);
	put_be32(p + 16, enc->err);
	if (enc->err == RPCRDMA_ERR_VERS) {
		put_be32(p + 4, enc->vers);
		put_be32(p + 20, enc->vers_low);
		put_be32(p + 24, enc->vers_high);
	}
	return n;
}

/*
 * decode_single()'s two shapes, encoded without lists_len()'s pass: one
 * Write chunk of one segment, or one Read segment, and nothing else. Returns
 * 0 for anything else, a bad position included, for encode_slow() to judge.
 */
static inline long encode_single(unsigned char *p, size_t len, const struct rpcrdma_hdr_enc *enc)
{
	const unsigned char *src;

	if (enc->proc > RPCRDMA_NOMSG || enc->reply || len < HDR_SINGLE_LEN)
		return 0;
	if (enc->write_chunks == 1 && !enc->read_segs) {
		if (!enc->write || enc->write->nsegs != 1 || !enc->write->segs)
			return 0;
		src = (const unsigned char *)enc->write->segs;
		put_raw64(p + 16, raw_pair(XDR_ZERO, XDR_ONE));
		put_raw32(p + 24, XDR_ONE);
		encode_segment(p + 28, src);
		put_raw64(p + 44, 0);
	} else if (enc->read_segs == 1 && !enc->write_chunks) {
		if (!enc->read || (enc->read->position & 3))
			return 0;
		src = (const unsigned char *)enc->read;
		put_raw64(p + 16, raw_pair(XDR_ONE, cpu_to_be32(enc->read->position)));
		encode_segment(p + 24, src + 8);
		put_raw64(p + 40, 0);
		put_raw32(p + 48, XDR_ZERO);
	} else {
		return 0;
	}
	encode_fixed(p, enc);
	return HDR_SINGLE_LEN;
}

/* Out of line, so that the chunkless path keeps its few registers. */
static __attribute__((noinline)) long encode_lists(unsigned char *p, size_t len,
						   const struct rpcrdma_hdr_enc *enc)
{
	long n = encode_single(p, len, enc);

	return n ? n : encode_slow(p, len, enc);
}

RPCRDMA_EXPORT long rpcrdma_hdr_encode(void *buf, size_t len, const struct rpcrdma_hdr_enc *enc)
{
	unsigned char *p = buf;

	if (unlikely(!buf || !enc))
		return -EINVAL;
	if (likely(enc_chunkless(enc))) {
		if (unlikely(len < RPCRDMA_HDR_MIN_LEN))
			return -EMSGSIZE;
		encode_fixed(p, enc);
		/* The three list discriminators, all zero. */
		put_raw64(p + 16, 0);
		put_raw32(p + 24, XDR_ZERO);
		return RPCRDMA_HDR_MIN_LEN;
	}
	return encode_lists(p, len, enc);
}

/* RFC 8797 private data. */

static int cm_size_valid(uint32_t size)
{
	return size >= 1024 && size <= RPCRDMA_CM_MAX_INLINE;
}

RPCRDMA_EXPORT int rpcrdma_cm_private_encode(void *buf, size_t len,
					     const struct rpcrdma_cm_private *pd)
{
	unsigned char *p = buf;

	if (!buf || !pd)
		return -EINVAL;
	if (!cm_size_valid(pd->send_size) || !cm_size_valid(pd->recv_size) ||
	    (pd->flags & ~RPCRDMA_CM_REMOTE_INVALIDATE))
		return -EINVAL;
	if (len < RPCRDMA_CM_PRIVATE_LEN)
		return -EMSGSIZE;
	put_be32(p, RPCRDMA_CM_MAGIC);
	p[4] = RPCRDMA_CM_VERSION;
	p[5] = (unsigned char)pd->flags;
	p[6] = (unsigned char)((pd->send_size >> 10) - 1);
	p[7] = (unsigned char)((pd->recv_size >> 10) - 1);
	return RPCRDMA_CM_PRIVATE_LEN;
}

RPCRDMA_EXPORT int rpcrdma_cm_private_decode(const void *buf, size_t len,
					     struct rpcrdma_cm_private *pd)
{
	const unsigned char *p = buf;

	if (!pd)
		return -EINVAL;
	pd->send_size = RPCRDMA_CM_DEFAULT_INLINE;
	pd->recv_size = RPCRDMA_CM_DEFAULT_INLINE;
	pd->flags = 0;
	if (!buf || len < RPCRDMA_CM_PRIVATE_LEN)
		return -ENODATA;
	if (get_be32(p) != RPCRDMA_CM_MAGIC || p[4] != RPCRDMA_CM_VERSION)
		return -ENODATA;
	pd->flags = p[5] & RPCRDMA_CM_REMOTE_INVALIDATE;
	pd->send_size = ((uint32_t)p[6] + 1) << 10;
	pd->recv_size = ((uint32_t)p[7] + 1) << 10;
	return 0;
}
