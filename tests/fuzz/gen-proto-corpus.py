#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seed corpus of fuzz-proto into tests/fuzz/corpus/proto/.

Each seed is an RPC-over-RDMA Version 1 header (RFC 8166 section 4) built
word by word, or RFC 8797 private data: one per procedure and list shape,
plus near-misses (bad discriminators, caps, wraps) that sit next to the
decoder's branches. Run it from anywhere; it replaces the folder's files.
"""
import struct

from corpus_gen import write_corpus

MSG, NOMSG, MSGP, DONE, ERROR = range(5)


def w(*words):
    return b"".join(struct.pack(">I", x & 0xFFFFFFFF) for x in words)


def seg(handle, length, offset):
    return w(handle, length) + struct.pack(">Q", offset)


def fixed(proc, xid=0x1234ABCD, vers=1, credit=32):
    return w(xid, vers, credit, proc)


def read(pos, handle=0x100, length=4096, offset=0x7F0000001000):
    return w(1, pos) + seg(handle, length, offset)


def chunk(nsegs, base=0x200):
    return w(1, nsegs) + b"".join(seg(base + i, 512 * (i + 1), 0x1000 * i) for i in range(nsegs))


def reply(nsegs):
    return chunk(nsegs, 0x300)


def msg(proc=MSG, reads=b"", writes=b"", rep=None, payload=b""):
    body = reads + w(0) + writes + w(0) + (rep if rep is not None else w(0))
    return fixed(proc) + body + payload


def seeds():
    rpc_call = w(0x1234ABCD, 0, 2, 100003, 3, 1)
    yield "msg-chunkless", msg(payload=rpc_call)
    yield "nomsg-chunkless", msg(NOMSG)
    yield "msg-read-pos0", msg(reads=read(0), payload=rpc_call)
    yield "msg-read-two-chunks", msg(reads=read(0) + read(0) + read(128), payload=rpc_call)
    yield "msg-read-positions", msg(reads=read(4) + read(8) + read(12) + read(4096))
    yield "msg-write-1x1", msg(writes=chunk(1), payload=rpc_call)
    yield "msg-write-3-chunks", msg(writes=chunk(1) + chunk(3) + chunk(0))
    yield "msg-write-16-segs", msg(writes=chunk(16))
    yield "nomsg-reply", msg(NOMSG, rep=reply(2))
    yield "nomsg-reply-empty", msg(NOMSG, rep=w(1, 0))
    yield "nomsg-read-reply", msg(NOMSG, reads=read(0) + read(0), rep=reply(1))
    yield "msg-all-lists", msg(reads=read(0) + read(16), writes=chunk(2), rep=reply(3))
    yield "nomsg-all-lists", msg(NOMSG, reads=read(8), writes=chunk(1) + chunk(1), rep=reply(1))
    yield "msg-read-8-segs", msg(reads=b"".join(read(0, 0x100 + i) for i in range(8)))
    yield "msgp", fixed(MSGP) + w(4096, 1024, 0, 0, 0)
    yield "done", fixed(DONE)
    yield "error-vers", fixed(ERROR) + w(1, 1, 1)
    yield "error-chunk", fixed(ERROR) + w(2)
    yield "error-unknown", fixed(ERROR) + w(3)
    yield "bad-version", fixed(MSG, vers=2) + w(0, 0, 0)
    yield "unknown-proc", fixed(5) + w(0, 0, 0)
    yield "short-fixed", fixed(MSG)[:12]
    yield "truncated-read", msg(reads=read(0))[:30]
    yield "truncated-write", msg(writes=chunk(2))[:50]
    yield "bad-disc-read", fixed(MSG) + w(2, 0, 0)
    yield "bad-disc-write", fixed(MSG) + w(0, 0x01000000, 0)
    yield "bad-disc-reply", fixed(MSG) + w(0, 0, 0xFFFFFFFF)
    yield "huge-nsegs", fixed(MSG) + w(0, 1, 0xFFFFFFFF) + seg(1, 1, 1) + w(0, 0)
    yield "write-17-segs", msg(writes=chunk(17))
    yield "write-9-chunks", msg(writes=chunk(1) * 9)
    yield "read-misaligned", msg(reads=read(6))
    yield "read-decreasing", msg(reads=read(8) + read(4))
    yield "read-pos-overflow", msg(reads=read(0xFFFFFFF0, length=0x10))
    yield "offset-wrap", msg(writes=w(1, 1) + seg(1, 2, 0xFFFFFFFFFFFFFFFF))
    yield "offset-top", msg(writes=w(1, 1) + seg(1, 2, 0xFFFFFFFFFFFFFFFD))
    cm = w(0xF6AB0E18) + bytes([1, 1, 3, 7])
    yield "cm-private", cm
    yield "cm-private-req-56", cm + bytes(48)
    yield "cm-private-rep-196", cm + bytes(188)
    yield "cm-private-v2", w(0xF6AB0E18) + bytes([2, 0, 0, 0])
    yield "cm-private-flags", w(0xF6AB0E18) + bytes([1, 0xFF, 0, 255])
    yield "empty", b""


def main():
    write_corpus("proto", seeds())


if __name__ == "__main__":
    main()
