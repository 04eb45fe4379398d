/* SPDX-License-Identifier: MIT */
/*
 * rpcrdma_svc_register() against the local rpcbind: the program shows up
 * under netid "rdma" with the listener's address (rpcrdma_rpcb_getaddr(),
 * rpcbind's list, and `rpcinfo` when installed), and goes away with
 * rpcrdma_svc_unregister(). Skips (77) when no rpcbind answers.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/*
 * rpcbind's list (RPCBPROC_DUMP, as rpcinfo reads it), asked over TCP here:
 * libtirpc's rpcb_getmaps() leaks a little on every call. Returns FALSE if
 * rpcbind does not answer; sets *@found if the list has our registration.
 */
static bool_t maps_have(const char *uaddr, bool_t *found)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(111) };
	struct timeval timeout = { .tv_sec = 5 };
	struct netbuf nb = { .maxlen = sizeof(sin), .len = sizeof(sin), .buf = &sin };
	rpcblist_ptr list = NULL, e;
	enum clnt_stat st;
	CLIENT *cl;
	int fd;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	cl = fd < 0 ? NULL : clnt_vc_create(fd, &nb, RPCBPROG, RPCBVERS, 0, 0);
	if (!cl) {
		if (fd >= 0)
			close(fd);
		return FALSE;
	}
	clnt_control(cl, CLSET_FD_CLOSE, NULL);
	st = clnt_call(cl, RPCBPROC_DUMP, (xdrproc_t)(void (*)(void))xdr_void, NULL,
		       (xdrproc_t)xdr_rpcblist_ptr, (char *)&list, timeout);
	*found = FALSE;
	for (e = list; e; e = e->rpcb_next)
		if (e->rpcb_map.r_prog == PROG && e->rpcb_map.r_vers == VERS &&
		    strcmp(e->rpcb_map.r_netid, "rdma") == 0 && strcmp(e->rpcb_map.r_addr, uaddr) == 0)
			*found = TRUE;
	clnt_freeres(cl, (xdrproc_t)xdr_rpcblist_ptr, (char *)&list);
	clnt_destroy(cl);
	return st == RPC_SUCCESS;
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
	struct sockaddr_storage found;
	bool_t listed;
	SVCXPRT *xprt;
	char uaddr[64];
	int shown;

	if (!maps_have("", &listed)) {
		printf("no rpcbind answers on 127.0.0.1: skipped (start rpcbind to run this test)\n");
		return 77;
	}

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
	check(maps_have(uaddr, &listed) && listed);
	shown = rpcinfo_has(uaddr);
	if (shown < 0)
		printf("rpcinfo not installed: not checked\n");
	else
		check(shown == 1);

	check(rpcrdma_svc_unregister(xprt, PROG, VERS));
	check(!rpcrdma_rpcb_getaddr((struct sockaddr *)&sin, PROG, VERS, &found));
	check(rpc_createerr.cf_stat == RPC_PROGNOTREGISTERED);
	check(maps_have(uaddr, &listed) && !listed);
	/* Not a listener of ours: refused without asking rpcbind. */
	check(!rpcrdma_svc_register(NULL, PROG, VERS));
	check(rpc_createerr.cf_stat == RPC_UNKNOWNPROTO);

	svc_destroy(xprt);
	printf("registered, found (rpcrdma_rpcb_getaddr, RPCBPROC_DUMP%s) and withdrawn under netid rdma at %s\n",
	       shown == 1 ? ", rpcinfo" : "", uaddr);
	return 0;
}
