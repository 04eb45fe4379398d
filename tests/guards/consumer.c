/* SPDX-License-Identifier: MIT */
/*
 * Built out of tree against the installed library through pkg-config: it
 * must find the headers, link, load and run.
 */
#include <stdio.h>
#include <string.h>

#include <rpcrdma/rpcrdma.h>

/* A header with every list through the installed codec and back. */
static int codec_round_trip(void)
{
	static const struct rpcrdma_read_segment read[] = {
		{ .position = 0, .seg = { .handle = 1, .length = 100, .offset = 0x1000 } },
	};
	static const struct rpcrdma_segment wsegs[] = {
		{ .handle = 2, .length = 200, .offset = 0x2000 },
	};
	static const struct rpcrdma_chunk_desc write = { .nsegs = 1, .segs = wsegs };
	static const struct rpcrdma_chunk_desc reply = { .nsegs = 1, .segs = wsegs };
	struct rpcrdma_hdr_enc enc = {
		.xid = 0xabcd, .credit = 32, .proc = RPCRDMA_NOMSG,
		.read_segs = 1, .read = read,
		.write_chunks = 1, .write = &write,
		.reply = &reply,
	};
	unsigned char buf[256];
	struct rpcrdma_read_segment rs;
	struct rpcrdma_segment seg;
	struct rpcrdma_hdr hdr;
	long n;
	int rc;

	n = rpcrdma_hdr_encode(buf, sizeof(buf), &enc);
	if (n != rpcrdma_hdr_encoded_len(&enc) || n != 28 + 24 + 24 + 20) {
		fprintf(stderr, "encode returned %ld\n", n);
		return 1;
	}
	rc = rpcrdma_hdr_decode(buf, (size_t)n, NULL, &hdr);
	if (rc != 0 || hdr.xid != 0xabcd || hdr.hdr_len != n || hdr.read_segs != 1 ||
	    hdr.write_chunks != 1 || !hdr.has_reply ||
	    rpcrdma_hdr_verdict(rc, &hdr) != RPCRDMA_ACCEPT) {
		fprintf(stderr, "decode returned %d\n", rc);
		return 1;
	}
	rpcrdma_hdr_read_segment(&hdr, 0, &rs);
	rpcrdma_chunk_segment(&hdr.write[0], 0, &seg);
	if (rs.seg.offset != 0x1000 || seg.offset != 0x2000 || hdr.reply.total != 200) {
		fprintf(stderr, "decoded segments differ\n");
		return 1;
	}
	return 0;
}

int main(void)
{
	char want[32];

	/* The installed header and the library it found agree on the version. */
	snprintf(want, sizeof(want), "%d.%d.%d", RPCRDMA_VERSION_MAJOR, RPCRDMA_VERSION_MINOR,
		 RPCRDMA_VERSION_MICRO);
	if (strcmp(rpcrdma_version_string(), want) != 0) {
		fprintf(stderr, "version %s, header %s\n", rpcrdma_version_string(), want);
		return 1;
	}
	if (codec_round_trip())
		return 1;
	printf("librpcrdma %s loaded, codec round trip passed\n", rpcrdma_version_string());
	return 0;
}
