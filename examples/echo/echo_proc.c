/* SPDX-License-Identifier: MIT */
/*
 * The echo program's procedures (rpcgen -M style): nothing here knows
 * which transport the call came on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rpcrdma/tirpc.h>

#include "echo.h"
#include "echo_demo.h"

bool_t echo_null_1_svc(void *argp, void *result, struct svc_req *rqstp)
{
	return TRUE;
}

bool_t echo_echo_1_svc(echo_data *argp, echo_data *result, struct svc_req *rqstp)
{
	result->echo_data_len = argp->echo_data_len;
	result->echo_data_val = malloc(argp->echo_data_len + 1);
	if (!result->echo_data_val)
		return FALSE;
	if (argp->echo_data_len)
		memcpy(result->echo_data_val, argp->echo_data_val, argp->echo_data_len);
	return TRUE;
}

bool_t echo_whoami_1_svc(void *argp, echo_caller *result, struct svc_req *rqstp)
{
	memset(result, 0, sizeof(*result));
	result->flavor = (int)rqstp->rq_cred.oa_flavor;
	result->netid = strdup(rqstp->rq_xprt->xp_netid ? rqstp->rq_xprt->xp_netid : "?");
	if (rqstp->rq_cred.oa_flavor == AUTH_SYS) {
		const struct authsys_parms *sys = (const struct authsys_parms *)rqstp->rq_clntcred;

		result->uid = sys->aup_uid;
		result->gid = sys->aup_gid;
		result->machine = strdup(sys->aup_machname);
	} else {
		result->machine = strdup("");
	}
	return result->netid && result->machine;
}

bool_t echo_big_1_svc(u_int *argp, echo_data *result, struct svc_req *rqstp)
{
	/*
	 * rpcgen's dispatcher sends nothing for FALSE and then frees the
	 * results: they are zeroed first, and each refusal is answered here.
	 * The count is the client's, bounded: no caller makes the server fill
	 * gigabytes.
	 */
	memset(result, 0, sizeof(*result));
	if (*argp > ECHO_BIG_MAX) {
		svcerr_decode(rqstp->rq_xprt);
		return FALSE;
	}
	/* Registered memory over RDMA: its bytes go out with no copy. */
	result->echo_data_val = rpcrdma_svc_buf_alloc(rqstp->rq_xprt, *argp);
	if (!result->echo_data_val) {
		svcerr_systemerr(rqstp->rq_xprt);
		return FALSE;
	}
	result->echo_data_len = *argp;
	echo_pattern((unsigned char *)result->echo_data_val, *argp);
	return TRUE;
}

bool_t echo_stop_1_svc(void *argp, void *result, struct svc_req *rqstp)
{
	/* svc_run() returns once this round is over; the reply still goes out. */
	svc_exit();
	return TRUE;
}

int echo_prog_1_freeresult(SVCXPRT *transp, xdrproc_t xdr_result, caddr_t result)
{
	/* ECHO_BIG's come from the pool, ECHO_ECHO's (the same type) from malloc(). */
	if (xdr_result == (xdrproc_t)xdr_echo_data) {
		echo_data *d = (echo_data *)result;

		if (d->echo_data_val && rpcrdma_svc_buf_free(d->echo_data_val) == 0)
			d->echo_data_val = NULL;
	}
	xdr_free(xdr_result, result);
	return 1;
}

/*
 * buf[i] = i * 7 + i / 1024, mod 256. Within a KiB the second term stays
 * put, so each KiB is the first one plus its number: filled that way, a
 * 1 MiB result costs the server tens of microseconds. A byte at a time it
 * cost about 350, most of the server's time for ECHO_BIG, and the demo's
 * 1 MiB row measured that loop rather than the transports.
 */
void echo_pattern(unsigned char *buf, size_t len)
{
	unsigned char first[1024];
	size_t i, j;

	for (j = 0; j < sizeof(first); j++)
		first[j] = (unsigned char)(j * 7);
	for (i = 0; i + sizeof(first) <= len; i += sizeof(first)) {
		unsigned char k = (unsigned char)(i >> 10);

		for (j = 0; j < sizeof(first); j++)
			buf[i + j] = (unsigned char)(first[j] + k);
	}
	for (j = 0; i + j < len; j++)
		buf[i + j] = (unsigned char)(first[j] + (i >> 10));
}

/*
 * ECHO_BIG's result is DDP-eligible: the client names the buffer it goes
 * to (a Write chunk), the server writes it there from registered memory,
 * and neither side copies it. ECHO_ECHO stays unbound, so that its checked
 * round trips go through Read and Reply chunks. A reply without the item is
 * the header (24 bytes) and the length word.
 */
static const struct rpcrdma_ulb_proc echo_ulb_procs[] = {
	{ .proc = ECHO_BIG, .res_item = 1, .res_max = ECHO_BIG_MAX, .reply_max = 24 + 4 },
};

int echo_bind(void)
{
	static const struct rpcrdma_ulb ulb = {
		RPCRDMA_SIZED(ulb),
		.prog = ECHO_PROG,
		.vers = ECHO_VERS,
		.procs = echo_ulb_procs,
		.nprocs = 1,
	};
	int rc = rpcrdma_ulb_register(&ulb);

	return rc == -EEXIST ? 0 : rc;
}
