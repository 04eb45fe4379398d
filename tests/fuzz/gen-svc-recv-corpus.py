#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seed corpus of fuzz-svc-recv into tests/fuzz/corpus/svc-recv/.

Each seed is a selector byte (fuzz_svc_recv.c: bits 0-1 how chunk segments
are patched, bits 2-3 the server's program, bits 4-5 the copies sent back
to back, less one) and one whole message a raw
peer sends the server: RPC-over-RDMA Version 1 header (RFC 8166 section 4)
and RPC call bytes. With patching on, a segment's handle chooses the peer's
region (handle % 3: 0 read/write, 1 read only, 2 write only), its offset
modulo the region size is where it starts, its length is clipped to the
region; in the mixed mode, bits 8-10 of the handle pick a defect (4 an
unknown rkey, 5 before the region, 6 past its end, 7 the raw bytes).
Run it from anywhere; it replaces the folder's files.
"""
import struct

from corpus_gen import write_corpus

MSG, NOMSG, MSGP, DONE, ERROR = range(5)
RAW, VALID, MIXED = range(3)
ECHO, ECHO_BUF, DDP = range(3)
DDP_OP_ECHO, DDP_OP_READ, DDP_OP_ERR_CHUNK = 1, 2, 3
MEM = 32 * 1024  # SVC_PEER_MEM
XID = 0x1234ABCD


def pattern(region, off, n):
    """The bytes svc_peer.c fills region @region with, from @off."""
    out = bytearray()
    for i in range(region * MEM + off, region * MEM + off + n):
        out.append((((i * 2654435761) % 2**64 >> 13) ^ (i >> 15)) & 0xFF)
    return bytes(out)


def w(*words):
    return b"".join(struct.pack(">I", x & 0xFFFFFFFF) for x in words)


def seg(handle, length, offset):
    return w(handle, length) + struct.pack(">Q", offset)


def sel(patch, program, copies=1):
    return bytes([patch | program << 2 | (copies - 1) << 4])


def fixed(proc, xid=XID, vers=1, credit=8):
    return w(xid, vers, credit, proc)


def read(pos, handle=0, length=64, offset=0):
    return w(1, pos) + seg(handle, length, offset)


def chunk(*segs):
    return w(1, len(segs)) + b"".join(segs)


def msg(proc=MSG, reads=b"", writes=b"", rep=None, body=b"", xid=XID):
    lists = reads + w(0) + writes + w(0) + (rep if rep is not None else w(0))
    return fixed(proc, xid) + lists + body


def rpc_null(xid=XID, extra=0):
    """An ONC RPC call of NULLPROC, AUTH_NONE, and @extra bytes of arguments."""
    return w(xid, 0, 2, 100003, 3, 0, 0, 0, 0, 0) + bytes(i & 0xFF for i in range(extra))


def ddp(op, *args):
    """A call of the DDP tests' protocol (tests/e2e/ddp.h): a call's head, the op, its arguments."""
    return w(XID, 0, 2, op, *args)


def seeds():
    yield "null-inline", sel(RAW, ECHO) + msg(body=rpc_null())
    yield "null-inline-buf", sel(RAW, ECHO_BUF) + msg(body=rpc_null())
    yield "null-inline-ddp", sel(RAW, DDP) + msg(body=rpc_null())
    # Position zero: the whole call is in the peer's region 0, whose first
    # word (the pattern) is the XID the header must repeat.
    xid0 = struct.unpack(">I", pattern(0, 0, 4))[0]
    yield "read-pos0", sel(VALID, ECHO) + msg(NOMSG, reads=read(0, 0, 256, 0), xid=xid0)
    yield "read-pos0-two-segs", sel(VALID, ECHO) + msg(
        NOMSG, reads=read(0, 0, 128, 0) + read(0, 3, 128, 128), xid=xid0)
    # A payload at position 16, after an inline head and op: DDP echoes it back.
    yield "read-pos16-ddp", sel(VALID, DDP) + msg(
        reads=read(16, 0, 512, 4096), body=ddp(DDP_OP_ECHO))
    yield "read-pos16-two-chunks", sel(VALID, DDP) + msg(
        reads=read(16, 0, 100, 0) + read(20, 1, 200, 1000), body=ddp(DDP_OP_ECHO, 0))
    # The DDP echo of a payload into a Write chunk the call offers.
    yield "write-chunk-echo", sel(VALID, DDP) + msg(
        reads=read(16, 0, 512, 0), writes=chunk(seg(2, 1024, 8192)), body=ddp(DDP_OP_ECHO))
    yield "write-chunk-read-op", sel(VALID, DDP) + msg(
        writes=chunk(seg(0, 700, 100), seg(2, 700, 900)), body=ddp(DDP_OP_READ, 1200, 7))
    # Region 1 is read only: the server's Write fails and the connection goes.
    yield "write-chunk-readonly", sel(VALID, DDP) + msg(
        writes=chunk(seg(1, 1024, 0)), body=ddp(DDP_OP_READ, 512, 1))
    yield "write-chunk-err-chunk", sel(VALID, DDP) + msg(
        writes=chunk(seg(0, 64, 0)), body=ddp(DDP_OP_ERR_CHUNK))
    # Replies past the peer's 1 KiB receives go through the Reply chunk.
    yield "reply-chunk", sel(VALID, ECHO) + msg(
        rep=chunk(seg(0, 4096, 0)), body=rpc_null(extra=2000))
    yield "reply-chunk-two-segs", sel(VALID, ECHO_BUF) + msg(
        rep=chunk(seg(2, 1000, 0), seg(0, 3000, 5000)), body=rpc_null(extra=2500))
    # Segments that overlap: the second Write overwrites part of the first.
    yield "reply-chunk-overlapping", sel(VALID, ECHO_BUF) + msg(
        rep=chunk(seg(0, 1000, 0), seg(0, 2870, 136)), body=rpc_null(extra=1200))
    yield "reply-chunk-small", sel(VALID, ECHO) + msg(
        rep=chunk(seg(0, 4096, 0)), body=rpc_null(extra=100))
    yield "reply-too-large-no-chunk", sel(RAW, ECHO) + msg(body=rpc_null(extra=2000))
    yield "reply-chunk-too-small", sel(VALID, ECHO) + msg(
        rep=chunk(seg(0, 100, 0)), body=rpc_null(extra=2000))
    yield "all-lists", sel(VALID, DDP) + msg(
        reads=read(16, 0, 300, 0), writes=chunk(seg(2, 512, 0)),
        rep=chunk(seg(0, 2048, 8192)), body=ddp(DDP_OP_ECHO))
    # Bogus memory: an unknown rkey, before a region, past its end.
    yield "read-bogus-rkey", sel(MIXED, ECHO) + msg(
        reads=read(16, 0x400, 64, 0), body=ddp(DDP_OP_ECHO))
    yield "read-before-region", sel(MIXED, DDP) + msg(
        reads=read(16, 0x500, 64, 0), body=ddp(DDP_OP_ECHO))
    yield "read-past-end", sel(MIXED, DDP) + msg(
        reads=read(16, 0x600, 64, MEM - 16), body=ddp(DDP_OP_ECHO))
    yield "write-bogus-rkey", sel(MIXED, DDP) + msg(
        writes=chunk(seg(0x400, 256, 0)), body=ddp(DDP_OP_READ, 200, 3))
    yield "reply-past-end", sel(MIXED, ECHO) + msg(
        rep=chunk(seg(0x600, 4096, MEM - 100)), body=rpc_null(extra=2000))
    yield "read-raw-rkey", sel(RAW, DDP) + msg(
        reads=read(16, 0x77, 64, 0x1000), body=ddp(DDP_OP_ECHO))
    # Several copies back to back: calls in flight together.
    yield "burst-null", sel(RAW, ECHO, 4) + msg(body=rpc_null())
    yield "burst-read-pos0", sel(VALID, ECHO, 3) + msg(NOMSG, reads=read(0, 0, 600, 0),
                                                        xid=xid0)
    yield "burst-write-chunk", sel(VALID, DDP, 2) + msg(
        writes=chunk(seg(0, 700, 100)), body=ddp(DDP_OP_READ, 600, 9))
    yield "burst-reply-chunk", sel(VALID, ECHO_BUF, 4) + msg(
        rep=chunk(seg(2, 4096, 0)), body=rpc_null(extra=1500))
    yield "burst-bad-version", sel(RAW, ECHO, 4) + fixed(MSG, vers=3) + w(0, 0, 0)
    yield "burst-bogus-read", sel(MIXED, DDP, 2) + msg(
        reads=read(16, 0x400, 64, 0), body=ddp(DDP_OP_ECHO))
    # Four calls offering a 128 MiB Reply chunk: reply_buf allocates up to
    # max_reply for each, before a byte is encoded (found by the fuzzer as a
    # 300 ms stall under ASan with the default 64 MiB).
    yield "burst-reply-chunk-huge", sel(RAW, ECHO_BUF, 4) + msg(
        rep=chunk(seg(2, 0x08001000, 0x80000000000059)), body=w(XID, 0x9C0006B3, 0xB4B5B6B7))
    # What RFC 8166 says to refuse or drop.
    yield "msgp", sel(RAW, ECHO) + fixed(MSGP) + w(4096, 1024, 0, 0, 0) + rpc_null()
    yield "bad-version", sel(RAW, ECHO) + fixed(MSG, vers=2) + w(0, 0, 0) + rpc_null()
    yield "bad-version-short", sel(RAW, ECHO) + fixed(MSG, vers=0)
    yield "unknown-proc", sel(RAW, ECHO) + fixed(7) + w(0, 0, 0) + rpc_null()
    yield "done-from-client", sel(RAW, ECHO) + fixed(DONE)
    yield "error-from-client", sel(RAW, ECHO) + fixed(ERROR) + w(2)
    yield "error-vers-from-client", sel(RAW, ECHO) + fixed(ERROR) + w(1, 1, 1)
    yield "short-12", sel(RAW, ECHO) + fixed(MSG)[:12]
    yield "short-16", sel(RAW, ECHO) + fixed(MSG)
    yield "empty", sel(RAW, ECHO)
    yield "truncated-read-list", sel(RAW, ECHO) + fixed(MSG) + w(1, 0, 0x1234)
    yield "truncated-write-list", sel(VALID, ECHO) + msg(
        writes=chunk(seg(0, 64, 0), seg(0, 64, 64)))[:60]
    yield "bad-discriminator", sel(RAW, ECHO) + fixed(MSG) + w(2, 0, 0) + rpc_null()
    yield "write-17-segs", sel(VALID, DDP) + msg(
        writes=chunk(*[seg(0, 64, 64 * i) for i in range(17)]), body=ddp(DDP_OP_READ, 64, 1))
    yield "write-9-chunks", sel(VALID, DDP) + msg(
        writes=chunk(seg(0, 64, 0)) * 9, body=ddp(DDP_OP_READ, 64, 1))
    yield "read-9-segs", sel(VALID, DDP) + msg(
        reads=b"".join(read(16, 0, 16, 16 * i) for i in range(9)), body=ddp(DDP_OP_ECHO))
    yield "segment-count-huge", sel(RAW, ECHO) + fixed(MSG) + w(0, 1, 0xFFFFFFFF) + seg(
        0, 64, 0) + w(0, 0) + rpc_null()
    yield "offset-wraps", sel(RAW, ECHO) + msg(
        writes=chunk(seg(0x77, 64, 0xFFFFFFFFFFFFFFF0)), body=rpc_null())
    yield "misaligned-position", sel(VALID, DDP) + msg(
        reads=read(6, 0, 64, 0), body=ddp(DDP_OP_ECHO))
    yield "position-past-message", sel(VALID, DDP) + msg(
        reads=read(4000, 0, 64, 0), body=ddp(DDP_OP_ECHO))
    yield "xid-mismatch", sel(RAW, ECHO) + msg(body=rpc_null(xid=0xDEAD))
    yield "msg-without-rpc", sel(RAW, ECHO) + msg()
    yield "nomsg-without-read", sel(RAW, ECHO) + msg(NOMSG)
    yield "too-large-for-receive", sel(RAW, ECHO) + msg(body=rpc_null(extra=4200))


def main():
    write_corpus("svc-recv", seeds())


if __name__ == "__main__":
    main()
