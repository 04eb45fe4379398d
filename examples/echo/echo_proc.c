/* SPDX-License-Identifier: MIT */
/*
 * The echo program's procedures (rpcgen -M style): nothing here knows
 * which transport the call came on.
 */
#include <stdlib.h>
#include <string.h>

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
	result->echo_data_len = *argp;
	result->echo_data_val = malloc(*argp + 1);
	if (!result->echo_data_val)
		return FALSE;
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
	xdr_free(xdr_result, result);
	return 1;
}

void echo_pattern(unsigned char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (unsigned char)(i * 7 + (i >> 10));
}
