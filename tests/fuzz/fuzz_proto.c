/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the codec: rpcrdma_hdr_decode() under the default,
 * tight and widest limits, and rpcrdma_cm_private_decode().
 *
 * Oracle: a header that decodes must satisfy what the decoder promises (caps,
 * positions, totals, no wrap, hdr_len within the input), tighter limits may
 * only refuse more, and re-encoding it from the accessors must reproduce the
 * first hdr_len input bytes exactly (there is a single encoding of every
 * header, so a decoder that misreads a field cannot pass).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include <rpcrdma/proto.h>

#include "fuzz.h"

static const struct rpcrdma_limits tight = {
	.max_chunk_segs = 2, .max_chunks = 2, .max_read_segs = 3,
};
static const struct rpcrdma_limits widest = {
	.max_chunk_segs = RPCRDMA_MAX_SEGS_LIMIT,
	.max_chunks = RPCRDMA_MAX_CHUNKS_LIMIT,
	.max_read_segs = RPCRDMA_MAX_SEGS_LIMIT,
};

/* Room for the largest header the widest limits accept. */
static struct rpcrdma_read_segment read_segs[RPCRDMA_MAX_SEGS_LIMIT];
static struct rpcrdma_segment write_segs[RPCRDMA_MAX_CHUNKS_LIMIT][RPCRDMA_MAX_SEGS_LIMIT];
static struct rpcrdma_segment reply_segs[RPCRDMA_MAX_SEGS_LIMIT];
static struct rpcrdma_chunk_desc write_desc[RPCRDMA_MAX_CHUNKS_LIMIT];

static uint32_t be32_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Collect a chunk's segments through the accessor and check its total. */
static void collect_chunk(const struct rpcrdma_chunk *chunk, uint32_t cap,
			  struct rpcrdma_segment *segs)
{
	uint64_t total = 0;
	uint32_t i;

	CHECK(chunk->nsegs <= cap);
	for (i = 0; i < chunk->nsegs; i++) {
		rpcrdma_chunk_segment(chunk, i, &segs[i]);
		CHECK(segs[i].offset + segs[i].length >= segs[i].offset);
		total += segs[i].length;
	}
	CHECK(chunk->total == total);
}

static void check_reencode(const uint8_t *data, size_t size, const struct rpcrdma_hdr *hdr,
			   const struct rpcrdma_limits *lim)
{
	struct rpcrdma_chunk_desc reply_desc;
	struct rpcrdma_hdr_enc enc;
	uint32_t i, chunks = 0;
	uint64_t chunk_end = 0;
	unsigned char *out;
	long n;

	memset(&enc, 0, sizeof(enc));
	enc.xid = hdr->xid;
	enc.credit = hdr->credit;
	enc.proc = hdr->proc;
	if (hdr->proc == RPCRDMA_ERROR) {
		enc.err = hdr->err;
		enc.vers_low = hdr->vers_low;
		enc.vers_high = hdr->vers_high;
		enc.vers = hdr->vers;
	} else {
		CHECK(hdr->read_segs <= lim->max_read_segs);
		for (i = 0; i < hdr->read_segs; i++) {
			rpcrdma_hdr_read_segment(hdr, i, &read_segs[i]);
			CHECK(read_segs[i].position % 4 == 0);
			if (i == 0 || read_segs[i].position != read_segs[i - 1].position) {
				CHECK(i == 0 || read_segs[i].position > read_segs[i - 1].position);
				chunks++;
				chunk_end = read_segs[i].position;
			}
			chunk_end += read_segs[i].seg.length;
			CHECK(chunk_end <= UINT32_MAX);
			CHECK(read_segs[i].seg.offset + read_segs[i].seg.length >=
			      read_segs[i].seg.offset);
		}
		CHECK(hdr->read_chunks == chunks);
		CHECK(chunks <= lim->max_chunks);
		CHECK(hdr->write_chunks <= lim->max_chunks);
		enc.read_segs = hdr->read_segs;
		enc.read = read_segs;
		for (i = 0; i < hdr->write_chunks; i++) {
			collect_chunk(&hdr->write[i], lim->max_chunk_segs, write_segs[i]);
			write_desc[i].nsegs = hdr->write[i].nsegs;
			write_desc[i].segs = write_segs[i];
		}
		enc.write_chunks = hdr->write_chunks;
		enc.write = write_desc;
		if (hdr->has_reply) {
			collect_chunk(&hdr->reply, lim->max_chunk_segs, reply_segs);
			reply_desc.nsegs = hdr->reply.nsegs;
			reply_desc.segs = reply_segs;
			enc.reply = &reply_desc;
		}
	}
	CHECK(rpcrdma_hdr_encoded_len(&enc) == hdr->hdr_len);
	out = malloc(hdr->hdr_len);
	CHECK(out);
	n = rpcrdma_hdr_encode(out, hdr->hdr_len, &enc);
	CHECK(n == hdr->hdr_len);
	CHECK(memcmp(out, data, hdr->hdr_len) == 0);
	free(out);
	(void)size;
}

static int decode_one(const uint8_t *data, size_t size, const struct rpcrdma_limits *lim,
		      const struct rpcrdma_limits *caps, struct rpcrdma_hdr *hdr)
{
	enum rpcrdma_verdict verdict;
	int rc;

	rc = rpcrdma_hdr_decode(data, size, lim, hdr);
	verdict = rpcrdma_hdr_verdict(rc, hdr);
	switch (rc) {
	case 0:
		CHECK(hdr->vers == RPCRDMA_VERSION);
		CHECK(hdr->hdr_len <= size);
		CHECK(hdr->xid == be32_at(data));
		switch (hdr->proc) {
		case RPCRDMA_MSG:
		case RPCRDMA_NOMSG:
			CHECK(verdict == RPCRDMA_ACCEPT);
			check_reencode(data, size, hdr, caps);
			break;
		case RPCRDMA_ERROR:
			CHECK(verdict == RPCRDMA_DROP);
			check_reencode(data, size, hdr, caps);
			break;
		case RPCRDMA_DONE:
			CHECK(verdict == RPCRDMA_DROP);
			CHECK(hdr->hdr_len == RPCRDMA_HDR_FIXED_LEN);
			break;
		default:
			CHECK(0);
		}
		break;
	case -ENODATA:
		CHECK(size < RPCRDMA_HDR_FIXED_LEN);
		CHECK(verdict == RPCRDMA_DROP);
		break;
	case -EPROTONOSUPPORT:
		CHECK(hdr->xid == be32_at(data));
		CHECK(hdr->vers == be32_at(data + 4) && hdr->vers != RPCRDMA_VERSION);
		CHECK(verdict == RPCRDMA_REPLY_ERR_VERS);
		break;
	case -EOPNOTSUPP:
		CHECK(be32_at(data + 12) == RPCRDMA_MSGP);
		CHECK(verdict == RPCRDMA_REPLY_ERR_CHUNK);
		break;
	case -EBADRQC:
		CHECK(be32_at(data + 12) > RPCRDMA_ERROR);
		CHECK(verdict == RPCRDMA_REPLY_ERR_CHUNK);
		break;
	case -EMSGSIZE:
	case -EBADMSG:
	case -E2BIG:
	case -EILSEQ:
	case -EOVERFLOW:
		CHECK(size >= RPCRDMA_HDR_FIXED_LEN);
		CHECK(verdict == RPCRDMA_REPLY_ERR_CHUNK);
		break;
	default:
		CHECK(0);
	}
	return rc;
}

static void fuzz_cm_private(const uint8_t *data, size_t size)
{
	struct rpcrdma_cm_private pd, again;
	unsigned char out[RPCRDMA_CM_PRIVATE_LEN];
	int rc;

	rc = rpcrdma_cm_private_decode(data, size, &pd);
	CHECK(pd.send_size >= 1024 && pd.send_size <= RPCRDMA_CM_MAX_INLINE);
	CHECK(pd.recv_size >= 1024 && pd.recv_size <= RPCRDMA_CM_MAX_INLINE);
	CHECK((pd.flags & ~RPCRDMA_CM_REMOTE_INVALIDATE) == 0);
	if (rc == -ENODATA) {
		CHECK(pd.send_size == RPCRDMA_CM_DEFAULT_INLINE);
		CHECK(pd.recv_size == RPCRDMA_CM_DEFAULT_INLINE);
		CHECK(pd.flags == 0);
		return;
	}
	CHECK(rc == 0 && size >= RPCRDMA_CM_PRIVATE_LEN);
	CHECK(rpcrdma_cm_private_encode(out, sizeof(out), &pd) == RPCRDMA_CM_PRIVATE_LEN);
	/* Identical but for flag bits the decoder ignores. */
	CHECK(memcmp(out, data, 5) == 0);
	CHECK(out[5] == (data[5] & RPCRDMA_CM_REMOTE_INVALIDATE));
	CHECK(out[6] == data[6] && out[7] == data[7]);
	CHECK(rpcrdma_cm_private_decode(out, sizeof(out), &again) == 0);
	CHECK(again.send_size == pd.send_size && again.recv_size == pd.recv_size &&
	      again.flags == pd.flags);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct rpcrdma_limits defaults = {
		.max_chunk_segs = RPCRDMA_DEFAULT_MAX_CHUNK_SEGS,
		.max_chunks = RPCRDMA_DEFAULT_MAX_CHUNKS,
		.max_read_segs = RPCRDMA_DEFAULT_MAX_READ_SEGS,
	};
	struct rpcrdma_hdr hdr, hdr_tight, hdr_wide;
	int rc, rc_tight, rc_wide;

	rc = decode_one(data, size, NULL, &defaults, &hdr);
	rc_tight = decode_one(data, size, &tight, &tight, &hdr_tight);
	rc_wide = decode_one(data, size, &widest, &widest, &hdr_wide);
	/* Looser limits accept at least what tighter ones accept, identically. */
	if (rc_tight == 0) {
		CHECK(rc == 0);
		CHECK(hdr.hdr_len == hdr_tight.hdr_len);
		CHECK(hdr.read_segs == hdr_tight.read_segs);
		CHECK(hdr.write_chunks == hdr_tight.write_chunks);
	}
	if (rc == 0) {
		CHECK(rc_wide == 0);
		CHECK(hdr.hdr_len == hdr_wide.hdr_len);
	}
	/* Caps aside, the limits do not change the verdict on anything else. */
	if (rc != -E2BIG && rc_wide != -E2BIG)
		CHECK(rc == rc_wide);

	fuzz_cm_private(data, size);
	return 0;
}
