/* SPDX-License-Identifier: MIT */
/*
 * Address handles: where a UD send goes. softrdma0 is RoCE, so, as rxe (and
 * the kernel's rdma_check_ah_attr()) require, an AH is global: it names one
 * of the port's GIDs as its source and any GID as its destination; the LID
 * fields mean nothing on Ethernet and are kept as given. ibv_init_ah_from_wc
 * answers a UD receive as libibverbs does, from the GRH the receive buffer
 * got: the IPv4 header in its last 20 bytes for an IPv4 GID, an IPv6 header
 * otherwise (ud.c writes both as rxe does).
 */
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <stdlib.h>
#include <string.h>

#include "ud.h"

int ud_gid_index(const union ibv_gid *gid)
{
	union ibv_gid ours;
	int i;

	for (i = 0; i < UD_GIDS; i++) {
		soft_fill_gid(&ours, i);
		if (!memcmp(&ours, gid, sizeof(ours)))
			return i;
	}
	return -1;
}

/* What rxe's create_ah, libibverbs and the kernel refuse: EINVAL for all. */
static bool ah_attr_valid(const struct ibv_ah_attr *attr)
{
	/* RoCE needs the GRH: its GIDs are the only addresses (rdma_check_ah_attr()). */
	if (attr->port_num != 1 || !attr->is_global)
		return false;
	/* The source must be a populated entry of the port's GID table. */
	return attr->grh.sgid_index < UD_GIDS;
}

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct soft_ah *sah;

	/* siw has no address handles: libibverbs' answer for a provider without them. */
	if (soft_profile()->iwarp) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!pd || !attr || !ah_attr_valid(attr)) {
		errno = EINVAL;
		return NULL;
	}
	sah = calloc(1, sizeof(*sah));
	if (!sah) {
		errno = ENOMEM;
		return NULL;
	}
	sah->attr = *attr;
	sah->ah.context = pd->context;
	sah->ah.pd = pd;
	fab_lock();
	/* ibv_dealloc_pd is EBUSY while an AH lives on the PD, as the kernel's usecnt. */
	to_spd(pd)->users++;
	fab_unlock();
	return &sah->ah;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	if (!ah)
		return EINVAL;
	fab_lock();
	to_spd(ah->pd)->users--;
	fab_unlock();
	free(to_sah(ah));
	return 0;
}

/*
 * libibverbs' get_grh_header_version(): an IPv6 header says 6 in its first
 * nibble; otherwise the last 20 bytes may be an IPv4 header. A GRH whose
 * first nibble says 6 is still taken for IPv4 if those bytes are an IPv4
 * header with a valid checksum.
 */
static int grh_version(const struct ibv_grh *grh)
{
	const struct iphdr *ip4 = (const struct iphdr *)((const uint8_t *)grh + 20);
	struct iphdr copy;
	uint16_t check;

	memcpy(&copy, ip4, sizeof(copy));
	if (((be32toh(grh->version_tclass_flow) >> 28) & 0xf) != 6) {
		if (copy.version == 4)
			return 4;
		errno = EPROTONOSUPPORT;
		return -1;
	}
	if (copy.ihl != 5)
		return 6;
	check = copy.check;
	copy.check = 0;
	return ud_ipv4_csum(&copy) == check ? 4 : 6;
}

static int find_gid(const union ibv_gid *gid)
{
	int index = ud_gid_index(gid);

	/* libibverbs runs off the end of the table: ibv_query_gid's EINVAL. */
	if (index < 0)
		errno = EINVAL;
	return index;
}

static int ah_by_ipv4(struct ibv_ah_attr *ah, const struct ibv_grh *grh)
{
	struct iphdr ip4;
	union ibv_gid gid;
	int index;

	memcpy(&ip4, (const uint8_t *)grh + 20, sizeof(ip4));
	/* No multicast GID is in a GID table. */
	if (IN_CLASSD(be32toh(ip4.daddr))) {
		errno = EINVAL;
		return -1;
	}
	memset(&gid, 0, sizeof(gid));
	gid.raw[10] = gid.raw[11] = 0xff;
	memcpy(gid.raw + 12, &ip4.daddr, 4);
	index = find_gid(&gid);
	if (index < 0)
		return -1;
	memset(&ah->grh.dgid, 0, sizeof(ah->grh.dgid));
	ah->grh.dgid.raw[10] = ah->grh.dgid.raw[11] = 0xff;
	memcpy(ah->grh.dgid.raw + 12, &ip4.saddr, 4);
	ah->grh.sgid_index = (uint8_t)index;
	ah->grh.hop_limit = ip4.ttl;
	ah->grh.traffic_class = ip4.tos;
	return 0;
}

static int ah_by_ipv6(struct ibv_ah_attr *ah, const struct ibv_grh *grh)
{
	uint32_t flow = be32toh(grh->version_tclass_flow);
	int index;

	if (grh->dgid.raw[0] == 0xff) {
		errno = EINVAL;
		return -1;
	}
	ah->grh.dgid = grh->sgid;
	/* softrdma0's GIDs are RoCEv2 (UDP); an IB GRH (next header 0x1b) matches none. */
	if (grh->next_hdr != IPPROTO_UDP) {
		errno = grh->next_hdr == 0x1b ? EINVAL : EPROTONOSUPPORT;
		return -1;
	}
	index = find_gid(&grh->dgid);
	if (index < 0)
		return -1;
	ah->grh.sgid_index = (uint8_t)index;
	ah->grh.hop_limit = grh->hop_limit;
	ah->grh.traffic_class = (uint8_t)(flow >> 20);
	return 0;
}

int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
			struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	int version;

	if (!context || !wc || !ah_attr || ((wc->wc_flags & IBV_WC_GRH) && !grh)) {
		errno = EINVAL;
		return -1;
	}
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	if (!(wc->wc_flags & IBV_WC_GRH))
		return 0;
	ah_attr->is_global = 1;
	ah_attr->grh.flow_label = be32toh(grh->version_tclass_flow) & 0xfffff;
	version = grh_version(grh);
	if (version == 4)
		return ah_by_ipv4(ah_attr, grh);
	if (version == 6)
		return ah_by_ipv6(ah_attr, grh);
	return -1;
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
				     uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return ibv_create_ah(pd, &attr);
}
