/* SPDX-License-Identifier: MIT */
/*
 * Registration of RPC-over-RDMA listeners with rpcbind, and the lookup a
 * client makes, for the netids "rdma" and "rdma6" (see tirpc_rpcb.h).
 * Registration goes through the local rpcbind's AF_LOCAL socket, which
 * tells rpcbind who the owner is, and falls back to TCP on the loopback.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include <rpc/rpc.h>
#include <rpc/rpcb_prot.h>

#include <rpcrdma/tirpc.h>

#include "compiler.h"
#include "tirpc_rpcb.h"
#include "tirpc_xdr.h"

#define RPCB_PORT 111

static const struct timeval rpcb_timeout = { .tv_sec = 5 };

static CLIENT *rpcb_client(const struct sockaddr *sa, socklen_t len)
{
	struct netbuf nb = { .maxlen = len, .len = len, .buf = (void *)(uintptr_t)sa };
	CLIENT *cl;
	int fd;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rpc_createerr.cf_stat = RPC_SYSTEMERROR;
		rpc_createerr.cf_error.re_errno = errno;
		return NULL;
	}
	cl = clnt_vc_create(fd, &nb, RPCBPROG, RPCBVERS, 0, 0);
	if (!cl) {
		close(fd);
		return NULL;
	}
	clnt_control(cl, CLSET_FD_CLOSE, NULL);
	return cl;
}

static CLIENT *rpcb_local_client(void)
{
	struct sockaddr_un sun = { .sun_family = AF_LOCAL };
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(RPCB_PORT) };
	CLIENT *cl;

	strncpy(sun.sun_path, _PATH_RPCBINDSOCK, sizeof(sun.sun_path) - 1);
	cl = rpcb_client((struct sockaddr *)&sun, sizeof(sun));
	if (cl)
		return cl;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return rpcb_client((struct sockaddr *)&sin, sizeof(sin));
}

/* "h1.h2.h3.h4.p1.p2", or the IPv6 text form followed by ".p1.p2". */
static bool rpcb_uaddr(const struct sockaddr *sa, char *buf, size_t size)
{
	char host[INET6_ADDRSTRLEN];
	unsigned int port;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;

		if (!inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host)))
			return false;
		port = ntohs(sin->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;

		if (!inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host)))
			return false;
		port = ntohs(sin6->sin6_port);
	} else {
		return false;
	}
	return (size_t)snprintf(buf, size, "%s.%u.%u", host, port >> 8, port & 0xff) < size;
}

static bool rpcb_parse_uaddr(const char *uaddr, int family, struct sockaddr_storage *ss)
{
	char host[INET6_ADDRSTRLEN + 16];
	unsigned int p1, p2;
	char *dot;

	if (strlen(uaddr) >= sizeof(host))
		return false;
	strcpy(host, uaddr);
	dot = strrchr(host, '.');
	if (!dot || sscanf(dot + 1, "%u", &p2) != 1)
		return false;
	*dot = '\0';
	dot = strrchr(host, '.');
	if (!dot || sscanf(dot + 1, "%u", &p1) != 1 || p1 > 255 || p2 > 255)
		return false;
	*dot = '\0';
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)(p1 << 8 | p2));
		return inet_pton(AF_INET, host, &sin->sin_addr) == 1;
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)(p1 << 8 | p2));
		return inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1;
	}
}

bool_t tirpc_rpcb_set(bool set, rpcprog_t prog, rpcvers_t vers, const char *netid,
		      const struct sockaddr *addr)
{
	char uaddr[INET6_ADDRSTRLEN + 16], owner[32], netid_buf[16];
	bool_t answer = FALSE;
	enum clnt_stat st;
	struct rpcb parms;
	CLIENT *cl;

	if (!rpcb_uaddr(addr, uaddr, sizeof(uaddr)) || strlen(netid) >= sizeof(netid_buf)) {
		rpc_createerr.cf_stat = RPC_N2AXLATEFAILURE;
		return FALSE;
	}
	cl = rpcb_local_client();
	if (!cl)
		return FALSE;
	strcpy(netid_buf, netid);
	snprintf(owner, sizeof(owner), "%u", (unsigned int)geteuid());
	parms.r_prog = prog;
	parms.r_vers = vers;
	parms.r_netid = netid_buf;
	parms.r_addr = uaddr;
	parms.r_owner = owner;
	st = clnt_call(cl, set ? RPCBPROC_SET : RPCBPROC_UNSET, (xdrproc_t)xdr_rpcb, (char *)&parms,
		       (xdrproc_t)xdr_bool, (char *)&answer, rpcb_timeout);
	if (st != RPC_SUCCESS) {
		rpc_createerr.cf_stat = RPC_PMAPFAILURE;
		clnt_geterr(cl, &rpc_createerr.cf_error);
		answer = FALSE;
	}
	clnt_destroy(cl);
	return answer;
}

static bool rpcb_is_wildcard(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

RPCRDMA_EXPORT bool_t rpcrdma_rpcb_getaddr(const struct sockaddr *host, rpcprog_t prog,
					   rpcvers_t vers, struct sockaddr_storage *addr)
{
	struct sockaddr_storage binder;
	rpcblist_ptr list = NULL, e;
	enum clnt_stat st;
	const char *netid;
	socklen_t len;
	CLIENT *cl;
	bool ok;

	if (!host || !addr || (host->sa_family != AF_INET && host->sa_family != AF_INET6)) {
		rpc_createerr.cf_stat = RPC_UNKNOWNADDR;
		return FALSE;
	}
	len = host->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	memcpy(&binder, host, len);
	if (host->sa_family == AF_INET)
		((struct sockaddr_in *)&binder)->sin_port = htons(RPCB_PORT);
	else
		((struct sockaddr_in6 *)&binder)->sin6_port = htons(RPCB_PORT);
	cl = rpcb_client((struct sockaddr *)&binder, len);
	if (!cl)
		return FALSE;
	netid = host->sa_family == AF_INET ? "rdma" : "rdma6";
	/*
	 * Not RPCBPROC_GETADDR: rpcbind answers it for the netid of the
	 * transport the question came on (tcp here), not the one asked for.
	 */
	st = clnt_call(cl, RPCBPROC_DUMP, TIRPC_XDR_VOID, NULL, (xdrproc_t)xdr_rpcblist_ptr,
		       (char *)&list, rpcb_timeout);
	if (st != RPC_SUCCESS) {
		rpc_createerr.cf_stat = RPC_PMAPFAILURE;
		clnt_geterr(cl, &rpc_createerr.cf_error);
		clnt_destroy(cl);
		return FALSE;
	}
	ok = false;
	for (e = list; e && !ok; e = e->rpcb_next)
		ok = e->rpcb_map.r_prog == prog && e->rpcb_map.r_vers == vers &&
		     e->rpcb_map.r_netid && strcmp(e->rpcb_map.r_netid, netid) == 0 &&
		     e->rpcb_map.r_addr &&
		     rpcb_parse_uaddr(e->rpcb_map.r_addr, host->sa_family, addr);
	clnt_freeres(cl, (xdrproc_t)xdr_rpcblist_ptr, (char *)&list);
	clnt_destroy(cl);
	if (!ok) {
		rpc_createerr.cf_stat = RPC_PROGNOTREGISTERED;
		return FALSE;
	}
	/* A listener bound to the wildcard is reached at the host that was asked. */
	if (rpcb_is_wildcard(addr)) {
		in_port_t port = addr->ss_family == AF_INET ?
				 ((struct sockaddr_in *)addr)->sin_port :
				 ((struct sockaddr_in6 *)addr)->sin6_port;

		memcpy(addr, host, len);
		if (addr->ss_family == AF_INET)
			((struct sockaddr_in *)addr)->sin_port = port;
		else
			((struct sockaddr_in6 *)addr)->sin6_port = port;
	}
	return TRUE;
}
