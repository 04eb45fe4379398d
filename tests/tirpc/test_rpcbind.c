/* SPDX-License-Identifier: MIT */
/*
 * rpcrdma_svc_register() against the local rpcbind: the program shows up
 * under netid "rdma" with the listener's address (rpcrdma_rpcb_getaddr(),
 * rpcb_getmaps(), and `rpcinfo` when installed), and goes away with
 * rpcrdma_svc_unregister(). Skips (77) when no rpcbind answers.
 */
#include <arpa/inet.h>
#include <netconfig.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rpc/rpc.h>

#include <rpcrdma/tirpc.h>

#define PROG 0x2000F00Eu
#define VERS 3u

#define check(cond)                                                                       \
	do {                                                                              \
		if (!(cond)) {                                                            \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			return 1;                                                         \
		}                                                                         \
	} while (0)

static bool_t maps_have(struct netconfig *tcp, const char *uaddr)
{
	rpcblist *list = rpcb_getmaps(tcp, "127.0.0.1"), *e;
	bool_t found = FALSE;

	for (e = list; e; e = e->rpcb_next)
		if (e->rpcb_map.r_prog == PROG && e->rpcb_map.r_vers == VERS &&
		    strcmp(e->rpcb_map.r_netid, "rdma") == 0 && strcmp(e->rpcb_map.r_addr, uaddr) == 0)
			found = TRUE;
	xdr_free((xdrproc_t)xdr_rpcblist_ptr, (char *)&list);
	return found;
}

/* `rpcinfo 127.0.0.1` lists the program with netid rdma, when rpcinfo is installed. */
static int rpcinfo_has(const char *uaddr)
{
	char line[512], want[64];
	int found = 0;
	FILE *p;

	if (system("command -v rpcinfo >/dev/null 2>&1") != 0)
		return -1;
	p = popen("rpcinfo 127.0.0.1 2>/dev/null", "r");
	if (!p)
		return -1;
	snprintf(want, sizeof(want), "%u", PROG);
	while (fgets(line, sizeof(line), p)) {
		char prog[32], vers[32], netid[32], addr[128];

		if (sscanf(line, "%31s %31s %31s %127s", prog, vers, netid, addr) == 4 &&
		    strcmp(prog, want) == 0 && strtoul(vers, NULL, 10) == VERS &&
		    strcmp(netid, "rdma") == 0 && strcmp(addr, uaddr) == 0)
			found = 1;
	}
	pclose(p);
	return found;
}

int main(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET }, *got;
	struct netconfig *tcp = getnetconfigent("tcp");
	struct sockaddr_storage found;
	rpcblist *probe;
	SVCXPRT *xprt;
	char uaddr[64];
	int shown;

	check(tcp);
	probe = rpcb_getmaps(tcp, "127.0.0.1");
	if (!probe) {
		printf("no rpcbind answers on 127.0.0.1: skipped (start rpcbind to run this test)\n");
		freenetconfigent(tcp);
		return 77;
	}
	xdr_free((xdrproc_t)xdr_rpcblist_ptr, (char *)&probe);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	xprt = rpcrdma_svc_create((struct sockaddr *)&sin, 0, 0);
	check(xprt);
	snprintf(uaddr, sizeof(uaddr), "127.0.0.1.%u.%u", xprt->xp_port >> 8, xprt->xp_port & 0xff);
	rpcrdma_svc_unregister(xprt, PROG, VERS);	/* a leftover of an earlier run */
	check(rpcrdma_svc_register(xprt, PROG, VERS));

	memset(&found, 0, sizeof(found));
	check(rpcrdma_rpcb_getaddr((struct sockaddr *)&sin, PROG, VERS, &found));
	got = (struct sockaddr_in *)&found;
	check(got->sin_family == AF_INET);
	check(ntohs(got->sin_port) == xprt->xp_port);
	check(got->sin_addr.s_addr == htonl(INADDR_LOOPBACK));
	check(maps_have(tcp, uaddr));
	shown = rpcinfo_has(uaddr);
	if (shown < 0)
		printf("rpcinfo not installed: not checked\n");
	else
		check(shown == 1);

	check(rpcrdma_svc_unregister(xprt, PROG, VERS));
	check(!rpcrdma_rpcb_getaddr((struct sockaddr *)&sin, PROG, VERS, &found));
	check(rpc_createerr.cf_stat == RPC_PROGNOTREGISTERED);
	check(!maps_have(tcp, uaddr));
	/* Not a listener of ours: refused without asking rpcbind. */
	check(!rpcrdma_svc_register(NULL, PROG, VERS));
	check(rpc_createerr.cf_stat == RPC_UNKNOWNPROTO);

	svc_destroy(xprt);
	freenetconfigent(tcp);
	printf("registered, found (rpcrdma_rpcb_getaddr, rpcb_getmaps%s) and withdrawn under netid rdma at %s\n",
	       shown == 1 ? ", rpcinfo" : "", uaddr);
	return 0;
}
