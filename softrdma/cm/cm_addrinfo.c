/* SPDX-License-Identifier: MIT */
/*
 * rdma_getaddrinfo: name to address through getaddrinfo, for RC over
 * RDMA_PS_TCP unless the hints ask for another port space or QP type
 * (which rdma_create_id or rdma_create_ep then refuse as not modelled).
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"

static struct sockaddr *dup_addr(const struct sockaddr *sa, socklen_t len)
{
	struct sockaddr *copy = malloc(len);

	if (copy)
		memcpy(copy, sa, len);
	return copy;
}

int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res)
{
	struct addrinfo ai_hints = { .ai_socktype = SOCK_STREAM }, *ai;
	struct rdma_addrinfo *rai;
	int ret;

	if (!res || (!node && !service)) {
		errno = EINVAL;
		return -1;
	}
	if (hints) {
		ai_hints.ai_family = hints->ai_family;
		if (hints->ai_flags & RAI_PASSIVE)
			ai_hints.ai_flags |= AI_PASSIVE;
		if (hints->ai_flags & RAI_NUMERICHOST)
			ai_hints.ai_flags |= AI_NUMERICHOST;
	}
	ret = getaddrinfo(node, service, &ai_hints, &ai);
	if (ret) {
		errno = ret == EAI_SYSTEM ? errno : ENOENT;
		return -1;
	}
	rai = calloc(1, sizeof(*rai));
	if (!rai)
		goto nomem;
	rai->ai_flags = hints ? hints->ai_flags : 0;
	rai->ai_family = ai->ai_family;
	/* As librdmacm: the QP type and port space the hints ask for, else RC over TCP's. */
	rai->ai_qp_type = hints && hints->ai_qp_type ? hints->ai_qp_type : IBV_QPT_RC;
	rai->ai_port_space = hints && hints->ai_port_space ? hints->ai_port_space : RDMA_PS_TCP;
	if (rai->ai_flags & RAI_PASSIVE) {
		rai->ai_src_addr = dup_addr(ai->ai_addr, ai->ai_addrlen);
		rai->ai_src_len = ai->ai_addrlen;
		if (!rai->ai_src_addr)
			goto nomem;
	} else {
		rai->ai_dst_addr = dup_addr(ai->ai_addr, ai->ai_addrlen);
		rai->ai_dst_len = ai->ai_addrlen;
		if (!rai->ai_dst_addr)
			goto nomem;
		if (hints && hints->ai_src_addr) {
			rai->ai_src_addr = dup_addr(hints->ai_src_addr, hints->ai_src_len);
			rai->ai_src_len = hints->ai_src_len;
			if (!rai->ai_src_addr)
				goto nomem;
		}
	}
	freeaddrinfo(ai);
	*res = rai;
	return 0;
nomem:
	freeaddrinfo(ai);
	rdma_freeaddrinfo(rai);
	errno = ENOMEM;
	return -1;
}

void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = next;
	}
}
