/* SPDX-License-Identifier: MIT */
/* A libtirpc listener served on a thread of its own (mtsrv.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <string.h>

#include <rpcrdma/tirpc.h>
#include <softrdma.h>

#include "mtsrv.h"

static void *mtsrv_main(void *arg)
{
	struct mtsrv *s = arg;

	rpcrdma_svc_run(s->listener);
	return NULL;
}

int mtsrv_start(struct mtsrv *s, const struct mtsrv_prog *progs, unsigned int nprogs)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	unsigned int i;

	memset(s, 0, sizeof(*s));
	s->progs = progs;
	s->nprogs = nprogs;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->listener = rpcrdma_svc_create_mt((const struct sockaddr *)&sin, 0, 0, 2);
	if (!s->listener)
		return -1;
	for (i = 0; i < nprogs; i++)
		if (!svc_reg(s->listener, progs[i].prog, progs[i].vers, progs[i].dispatch, NULL))
			return -1;
	memcpy(&s->addr, s->listener->xp_ltaddr.buf, sizeof(s->addr));
	return pthread_create(&s->thread, NULL, mtsrv_main, s) ? -1 : 0;
}

int mtsrv_stop(struct mtsrv *s)
{
	struct softrdma_counts c;
	unsigned int i;

	svc_exit();
	pthread_join(s->thread, NULL);
	for (i = 0; i < s->nprogs; i++)
		svc_unreg(s->progs[i].prog, s->progs[i].vers);
	svc_destroy(s->listener);
	softrdma_get_counts(&c);
	if (c.qps || c.mrs || c.pds || c.cm_ids || c.send_wrs || c.recv_wrs) {
		print_error("left behind: %u QPs, %u MRs, %u PDs, %u ids, %u+%u WRs\n", c.qps,
			    c.mrs, c.pds, c.cm_ids, c.send_wrs, c.recv_wrs);
		return -1;
	}
	return 0;
}

void mtsrv_stats(struct mtsrv *s, struct rpcrdma_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->struct_size = sizeof(*st);
	assert_int_equal(rpcrdma_svc_stats(rpcrdma_svc_native(s->listener), st), 0);
}

void mtsrv_clnt_stats(CLIENT *cl, struct rpcrdma_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->struct_size = sizeof(*st);
	assert_true(clnt_control(cl, RPCRDMA_CLGET_STATS, (char *)st));
}
