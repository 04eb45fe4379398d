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
 * Check a reply to echo_encode_call(@xid, @data, @len). Returns 0 when it is
 * an accepted, successful reply carrying exactly @data, else -EBADMSG.
 */
int echo_check_reply(const unsigned char *reply, size_t rlen, uint32_t xid, const void *data,
		     size_t len);

#endif /* EXAMPLES_ECHO_H */
