/* SPDX-License-Identifier: MIT */
/*
 * The echo service shared by echo-server, echo-client and the demo: an ONC
 * RPC program (ECHO_PROG, version 1) whose procedure 1 returns its opaque
 * argument. Messages are encoded by hand to show what travels inline.
 */
#ifndef EXAMPLES_ECHO_H
#define EXAMPLES_ECHO_H

#include <stddef.h>
#include <stdint.h>

#include <rpcrdma/rpcrdma.h>

#define ECHO_PROG 0x20000199u
#define ECHO_VERS 1u
#define ECHO_PROC_ECHO 1u

/* Encode a CALL of ECHO_PROC_ECHO carrying @len bytes. Returns its size or 0. */
size_t echo_encode_call(unsigned char *buf, size_t max, uint32_t xid, const void *data,
			size_t len);

/*
 * Answer one received call: an ECHO call gets its argument back; anything
 * else gets PROG_UNAVAIL / PROC_UNAVAIL / GARBAGE_ARGS as ONC RPC says.
 */
int echo_serve_call(struct rpcrdma_svc_call *call);

/*
 * The size of the reply to an echo of @len bytes: the room to offer for it.
 * A reply buffer larger than the inline size is offered to the server as a
 * Reply chunk, which costs a registration and its invalidation per call.
 */
size_t echo_reply_len(size_t len);

/*
 * Check a reply to echo_encode_call(@xid, @data, @len). Returns 0 when it is
 * an accepted, successful reply carrying exactly @data, else -EBADMSG.
 */
int echo_check_reply(const unsigned char *reply, size_t rlen, uint32_t xid, const void *data,
		     size_t len);

#endif /* EXAMPLES_ECHO_H */
