/* SPDX-License-Identifier: MIT */
/*
 * RPC-over-RDMA Version 1 wire codec (RFC 8166 sections 4-5) and the RDMA-CM
 * private data of RFC 8797.
 *
 * The codec touches no verbs and allocates nothing. Decoding is bounded by the
 * number of bytes received and validates every field before the caller sees
 * it; a decoded header refers to the chunk lists where they lie in the
 * caller's buffer, so that buffer must outlive the decoded header.
 */
#ifndef RPCRDMA_PROTO_H
#define RPCRDMA_PROTO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The only transport version this codec speaks. */
#define RPCRDMA_VERSION 1

/** rdma_proc values (RFC 8166 section 5). MSGP and DONE are deprecated. */
enum rpcrdma_proc {
	RPCRDMA_MSG = 0,
	RPCRDMA_NOMSG = 1,
	RPCRDMA_MSGP = 2,
	RPCRDMA_DONE = 3,
	RPCRDMA_ERROR = 4,
};

/** rdma_err values carried by RDMA_ERROR. */
enum rpcrdma_errcode {
	RPCRDMA_ERR_VERS = 1,
	RPCRDMA_ERR_CHUNK = 2,
};

/** Bytes of the fixed part: xid, vers, credit, proc. */
#define RPCRDMA_HDR_FIXED_LEN 16
/** Bytes of the smallest RDMA_MSG/RDMA_NOMSG header (three empty lists). */
#define RPCRDMA_HDR_MIN_LEN 28
/** Bytes of one encoded segment: handle, length, offset. */
#define RPCRDMA_SEGMENT_LEN 16
/** Bytes of one Read list entry: its discriminator, position and segment. */
#define RPCRDMA_READ_ENTRY_LEN (8 + RPCRDMA_SEGMENT_LEN)

/**
 * rpcrdma_hdr_len - bytes of an RDMA_MSG or RDMA_NOMSG header
 * @read_segs: Read segments in the Read list
 * @write_chunks: Write chunks in the Write list
 * @write_segs: segments of all those Write chunks together
 * @has_reply: non-zero when a Reply chunk is present
 * @reply_segs: segments of the Reply chunk
 *
 * What rpcrdma_hdr_encode() writes for such lists, without encoding them.
 */
static inline size_t rpcrdma_hdr_len(uint32_t read_segs, uint32_t write_chunks,
				     uint32_t write_segs, int has_reply, uint32_t reply_segs)
{
	/* Each Write chunk and a present Reply chunk: discriminator and count. */
	return RPCRDMA_HDR_MIN_LEN + (size_t)read_segs * RPCRDMA_READ_ENTRY_LEN +
	       (size_t)write_chunks * 8 + (size_t)write_segs * RPCRDMA_SEGMENT_LEN +
	       (has_reply ? 4 + (size_t)reply_segs * RPCRDMA_SEGMENT_LEN : 0);
}

/** An RDMA segment (RFC 8166 section 4.1.1), in host byte order. */
struct rpcrdma_segment {
	uint32_t handle;
	uint32_t length;
	uint64_t offset;
};

/** A Read segment: an RDMA segment at an XDR position of the RPC message. */
struct rpcrdma_read_segment {
	uint32_t position;
	struct rpcrdma_segment seg;
};

/*
 * Caps on what a peer may send. The defaults bound a header to what fits a
 * 1 KiB inline buffer with room to spare; raising them is allowed up to the
 * hard ceilings below.
 */
#define RPCRDMA_DEFAULT_MAX_CHUNK_SEGS 16
#define RPCRDMA_DEFAULT_MAX_CHUNKS 8
#define RPCRDMA_DEFAULT_MAX_READ_SEGS 64
/** Ceiling on max_chunks: a decoded header stores one view per Write chunk. */
#define RPCRDMA_MAX_CHUNKS_LIMIT 32
/** Ceiling on segment counts, so that no length computation can overflow. */
#define RPCRDMA_MAX_SEGS_LIMIT 4096

/**
 * struct rpcrdma_limits - caps applied while decoding peer data
 * @max_chunk_segs: segments in one Read, Write or Reply chunk
 * @max_chunks: Read chunks (distinct positions) in the Read list, and Write
 *	chunks in the Write list; at most %RPCRDMA_MAX_CHUNKS_LIMIT
 * @max_read_segs: Read segments in the whole Read list
 *
 * A zero field means its default. Values above the ceilings make decoding
 * fail with -EINVAL.
 */
struct rpcrdma_limits {
	uint32_t max_chunk_segs;
	uint32_t max_chunks;
	uint32_t max_read_segs;
};

/**
 * struct rpcrdma_chunk - a decoded Write or Reply chunk
 * @nsegs: number of segments, validated against the caps
 * @total: sum of the segment lengths
 * @wire: the first segment as it lies in the received buffer
 *
 * Read the segments with rpcrdma_chunk_segment().
 */
struct rpcrdma_chunk {
	uint32_t nsegs;
	uint64_t total;
	const unsigned char *wire;
};

/**
 * struct rpcrdma_hdr - a decoded transport header
 * @xid: rdma_xid, equal to the RPC message's XID
 * @vers: rdma_vers (always %RPCRDMA_VERSION after a successful decode)
 * @credit: rdma_credit, the credits requested or granted
 * @proc: rdma_proc, an &enum rpcrdma_proc
 * @hdr_len: bytes of the transport header; for RDMA_MSG the RPC message
 *	follows at this offset
 * @err: for RDMA_ERROR, the &enum rpcrdma_errcode
 * @vers_low: for ERR_VERS, the lowest version the peer supports
 * @vers_high: for ERR_VERS, the highest version the peer supports
 * @read_segs: number of Read segments; read them with
 *	rpcrdma_hdr_read_segment()
 * @read_chunks: number of Read chunks (runs of segments sharing a position)
 * @read_list: the first Read segment's position word in the buffer
 * @write_chunks: number of Write chunks in @write
 * @write: the Write chunks
 * @has_reply: non-zero when a Reply chunk is present
 * @reply: the Reply chunk, when @has_reply
 *
 * Fields that do not apply to @proc are zero, and @read_list is NULL when
 * there are no Read segments. So that decoding stays cheap, @write entries
 * from @write_chunks on, and @reply when @has_reply is zero, are left as
 * they were.
 */
struct rpcrdma_hdr {
	uint32_t xid;
	uint32_t vers;
	uint32_t credit;
	uint32_t proc;
	uint32_t hdr_len;

	uint32_t err;
	uint32_t vers_low;
	uint32_t vers_high;

	uint32_t read_segs;
	uint32_t read_chunks;
	const unsigned char *read_list;

	uint32_t write_chunks;
	uint32_t has_reply;
	struct rpcrdma_chunk reply;
	struct rpcrdma_chunk write[RPCRDMA_MAX_CHUNKS_LIMIT];
};

/**
 * rpcrdma_hdr_decode - decode and validate a received transport header
 * @buf: the received bytes
 * @len: number of bytes received
 * @lim: caps on peer data, or NULL for the defaults
 * @hdr: filled in; on failure only @xid and @vers may be meaningful
 *
 * Reads nothing beyond @len, allocates nothing, and finishes in time bounded
 * by @len. Each kind of defect has its own result, so that a responder can
 * act as RFC 8166 requires (see rpcrdma_hdr_verdict()):
 *
 * Returns 0 on success, or
 * -ENODATA if fewer than %RPCRDMA_HDR_FIXED_LEN bytes arrived (nothing to
 *	answer: drop);
 * -EPROTONOSUPPORT if rdma_vers is not 1 (@xid and @vers are set: answer
 *	ERR_VERS);
 * -EOPNOTSUPP for the deprecated RDMA_MSGP (answer ERR_CHUNK);
 * -EBADRQC for an unknown rdma_proc (answer ERR_CHUNK);
 * -EMSGSIZE if the header runs past @len (answer ERR_CHUNK);
 * -EBADMSG for a list discriminator other than 0 or 1, or an RDMA_ERROR with
 *	an unknown rdma_err (answer ERR_CHUNK);
 * -E2BIG if a cap of @lim is exceeded (answer ERR_CHUNK);
 * -EILSEQ for a Read position that is not a multiple of 4, or Read
 *	positions that decrease (answer ERR_CHUNK);
 * -EOVERFLOW if a segment's offset + length wraps, or a Read chunk ends
 *	beyond 2^32 - 1 bytes of XDR stream (answer ERR_CHUNK);
 * -EINVAL if an argument is NULL or @lim is above the ceilings.
 */
int rpcrdma_hdr_decode(const void *buf, size_t len, const struct rpcrdma_limits *lim,
		       struct rpcrdma_hdr *hdr);

/**
 * rpcrdma_hdr_read_segment - the @i'th Read segment of a decoded header
 * @hdr: a header that rpcrdma_hdr_decode() accepted
 * @i: index below @hdr->read_segs
 * @out: filled in with host byte order values
 */
void rpcrdma_hdr_read_segment(const struct rpcrdma_hdr *hdr, uint32_t i,
			      struct rpcrdma_read_segment *out);

/**
 * rpcrdma_chunk_segment - the @i'th segment of a decoded Write or Reply chunk
 * @chunk: a chunk of a header that rpcrdma_hdr_decode() accepted
 * @i: index below @chunk->nsegs
 * @out: filled in with host byte order values
 */
void rpcrdma_chunk_segment(const struct rpcrdma_chunk *chunk, uint32_t i,
			   struct rpcrdma_segment *out);

/** What a responder does with a received call header. */
enum rpcrdma_verdict {
	RPCRDMA_ACCEPT = 0,	/* process the call */
	RPCRDMA_DROP,		/* discard silently */
	RPCRDMA_REPLY_ERR_VERS,	/* answer RDMA_ERROR / ERR_VERS */
	RPCRDMA_REPLY_ERR_CHUNK,	/* answer RDMA_ERROR / ERR_CHUNK */
};

/**
 * rpcrdma_hdr_verdict - map a decode result of a call to the responder's action
 * @rc: what rpcrdma_hdr_decode() returned
 * @hdr: the header it filled in
 *
 * RDMA_MSG and RDMA_NOMSG are accepted; RDMA_DONE and RDMA_ERROR received by
 * a responder are dropped; RDMA_MSGP is answered with ERR_CHUNK, as are
 * unknown procedures and malformed chunk lists; a wrong version is answered
 * with ERR_VERS; a header too short to carry an XID is dropped. A responder
 * also drops a version 1 message shorter than %RPCRDMA_HDR_MIN_LEN bytes
 * (RFC 8166 section 4.5), which @rc alone does not tell apart from other
 * truncations: check the received length before asking.
 */
enum rpcrdma_verdict rpcrdma_hdr_verdict(int rc, const struct rpcrdma_hdr *hdr);

/**
 * struct rpcrdma_chunk_desc - a Write or Reply chunk to encode
 * @nsegs: number of segments
 * @segs: the segments
 */
struct rpcrdma_chunk_desc {
	uint32_t nsegs;
	const struct rpcrdma_segment *segs;
};

/**
 * struct rpcrdma_hdr_enc - a transport header to encode
 * @xid: rdma_xid
 * @credit: rdma_credit
 * @proc: %RPCRDMA_MSG, %RPCRDMA_NOMSG or %RPCRDMA_ERROR
 * @read_segs: number of entries in @read
 * @read: the Read list, positions multiples of 4 and non-decreasing
 * @write_chunks: number of entries in @write
 * @write: the Write list
 * @reply: the Reply chunk, or NULL for none
 * @err: for RDMA_ERROR, the &enum rpcrdma_errcode
 * @vers_low: for ERR_VERS
 * @vers_high: for ERR_VERS
 * @vers: for ERR_VERS, the rdma_vers of the message being refused, written
 *	as given: RFC 8166 section 4.5 has an RDMA_ERROR carry the failing
 *	message's rdma_xid and rdma_vers
 *
 * Every other header carries rdma_vers %RPCRDMA_VERSION (an ERR_CHUNK
 * answers a version 1 message). The lists are ignored for RDMA_ERROR.
 */
struct rpcrdma_hdr_enc {
	uint32_t xid;
	uint32_t credit;
	uint32_t proc;
	uint32_t read_segs;
	const struct rpcrdma_read_segment *read;
	uint32_t write_chunks;
	const struct rpcrdma_chunk_desc *write;
	const struct rpcrdma_chunk_desc *reply;
	uint32_t err;
	uint32_t vers_low;
	uint32_t vers_high;
	uint32_t vers;
};

/**
 * rpcrdma_hdr_encoded_len - bytes that rpcrdma_hdr_encode() would write
 * @enc: the header
 *
 * Returns the length, or -EINVAL if @enc is not encodable (see
 * rpcrdma_hdr_encode()).
 */
long rpcrdma_hdr_encoded_len(const struct rpcrdma_hdr_enc *enc);

/**
 * rpcrdma_hdr_encode - encode a transport header into a caller buffer
 * @buf: destination
 * @len: bytes available at @buf
 * @enc: the header
 *
 * Returns the number of bytes written (the RPC message of an RDMA_MSG goes
 * right after them), or -EMSGSIZE if they do not fit in @len (nothing is
 * written then), or -EINVAL for a NULL argument (or a NULL array behind a
 * non-zero count), an unknown @proc or @err, a misaligned or decreasing Read
 * position, a segment count above %RPCRDMA_MAX_SEGS_LIMIT, or more than
 * %RPCRDMA_MAX_CHUNKS_LIMIT Write chunks (no decoder could accept them).
 * -EINVAL takes precedence over -EMSGSIZE; after -EINVAL for a Read
 * position, @buf holds bytes of the header, not to be sent.
 */
long rpcrdma_hdr_encode(void *buf, size_t len, const struct rpcrdma_hdr_enc *enc);

/* RFC 8797: RDMA-CM private data for RPC-over-RDMA Version 1. */

#define RPCRDMA_CM_MAGIC 0xf6ab0e18u
#define RPCRDMA_CM_VERSION 1
/** Encoded length; IB and RoCE deliver it zero-padded to 56 or 196 bytes. */
#define RPCRDMA_CM_PRIVATE_LEN 8
/** Flag: the sender accepts Send With Invalidate. */
#define RPCRDMA_CM_REMOTE_INVALIDATE 0x01u
/** Inline size assumed when a peer sends no (or foreign) private data. */
#define RPCRDMA_CM_DEFAULT_INLINE 1024u
/** Largest inline size the one-byte encoding can express. */
#define RPCRDMA_CM_MAX_INLINE (256u * 1024u)

/**
 * struct rpcrdma_cm_private - RFC 8797 private data, in host terms
 * @send_size: largest inline message the sender will send, in bytes
 * @recv_size: largest inline message the sender can receive, in bytes
 * @flags: %RPCRDMA_CM_REMOTE_INVALIDATE or 0
 */
struct rpcrdma_cm_private {
	uint32_t send_size;
	uint32_t recv_size;
	uint32_t flags;
};

/**
 * rpcrdma_cm_private_encode - encode RFC 8797 private data
 * @buf: destination
 * @len: bytes available, at least %RPCRDMA_CM_PRIVATE_LEN
 * @pd: the values; sizes are rounded down to a multiple of 1024
 *
 * Returns %RPCRDMA_CM_PRIVATE_LEN, -EMSGSIZE if @len is too small, or
 * -EINVAL if a size is below 1024 or above %RPCRDMA_CM_MAX_INLINE or @flags
 * has unknown bits.
 */
int rpcrdma_cm_private_encode(void *buf, size_t len, const struct rpcrdma_cm_private *pd);

/**
 * rpcrdma_cm_private_decode - decode RFC 8797 private data received from a peer
 * @buf: the private data, or NULL when there is none
 * @len: its length; anything of at least 8 bytes is parsed by content
 *	(IB/RoCE pad it), so trailing bytes are ignored
 * @pd: filled in; with the defaults (1024-byte inline both ways, no remote
 *	invalidation) when the data is absent, short, foreign or of another
 *	version. Unknown flag bits are ignored.
 *
 * Returns 0 if RFC 8797 data was found, -ENODATA if the defaults were used,
 * or -EINVAL if @pd is NULL.
 */
int rpcrdma_cm_private_decode(const void *buf, size_t len, struct rpcrdma_cm_private *pd);

#ifdef __cplusplus
}
#endif

#endif /* RPCRDMA_PROTO_H */
