/* SPDX-License-Identifier: MIT */
/*
 * The capture file: RoCEv2 frames (Ethernet, IPv4 or IPv6 from the GIDs,
 * UDP to port 4791, the InfiniBand transport headers and payload from
 * tap.c, pad, ICRC) in a classic pcap file, so that Wireshark and tshark
 * dissect the InfiniBand transport and what it carries.
 *
 * The file is opened for appending and each record goes out in one write(),
 * so several processes can share one file; the first writes the file header.
 * Remove the file before a run that should start afresh.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "tap.h"

#define ROCE_PORT	4791
#define ETH_LEN		14
#define IP4_LEN		20
#define IP6_LEN		40
#define UDP_LEN		8
#define ICRC_LEN	4
#define REC_LEN		16
#define FRAME_MAX	(ETH_LEN + IP6_LEN + UDP_LEN + 64 + 4096 + 3 + ICRC_LEN)

/* Under the fabric lock. */
static int cap_fd = -1;
static uint16_t ip_id;
static uint8_t record[REC_LEN + FRAME_MAX];

static uint32_t crc_table[256];

static void crc_init(void)
{
	uint32_t i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

/* CRC-32 as Ethernet and zlib compute it, continued from crc (start with ~0). */
static uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32le(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t sum16(uint32_t sum, const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		sum += (uint32_t)(p[len - 1] << 8);
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static bool gid_is_v4(const union ibv_gid *gid)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(gid->raw, prefix, sizeof(prefix)) == 0;
}

static void write_header_once(int fd)
{
	uint8_t hdr[24];
	struct stat st;
	ssize_t n;

	/* The first of the processes sharing the file writes the header. */
	flock(fd, LOCK_EX);
	if (fstat(fd, &st) == 0 && st.st_size == 0) {
		put32le(hdr, 0xa1b23c4d);	/* nanosecond timestamps */
		hdr[4] = 2;
		hdr[5] = 0;
		hdr[6] = 4;
		hdr[7] = 0;
		memset(hdr + 8, 0, 8);
		put32le(hdr + 16, 65535);
		put32le(hdr + 20, 1);		/* LINKTYPE_ETHERNET */
		n = write(fd, hdr, sizeof(hdr));
		(void)n;
	}
	flock(fd, LOCK_UN);
}

static int open_locked(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	if (fd < 0)
		return -errno;
	write_header_once(fd);
	if (cap_fd >= 0)
		close(cap_fd);
	cap_fd = fd;
	wire_keys_capture(true);
	return 0;
}

void pcap_init(void)
{
	const char *path = getenv("SOFTRDMA_PCAP");

	crc_init();
	if (path && *path)
		open_locked(path);
}

int pcap_open_locked(const char *path)
{
	return open_locked(path);
}

void pcap_close_locked(void)
{
	if (cap_fd >= 0)
		close(cap_fd);
	cap_fd = -1;
	wire_keys_capture(false);
}

bool pcap_on_locked(void)
{
	return cap_fd >= 0;
}

static uint32_t eth_ip(uint8_t *f, const union ibv_gid *sgid, const union ibv_gid *dgid,
		       uint32_t udp_len, bool v4)
{
	uint8_t *ip = f + ETH_LEN;

	/* Locally administered MACs that carry the node's address. */
	f[0] = 0x02;
	f[1] = 0x00;
	memcpy(f + 2, dgid->raw + 12, 4);
	f[6] = 0x02;
	f[7] = 0x00;
	memcpy(f + 8, sgid->raw + 12, 4);
	put16(f + 12, v4 ? 0x0800 : 0x86dd);
	if (v4) {
		memset(ip, 0, IP4_LEN);
		ip[0] = 0x45;
		put16(ip + 2, (uint16_t)(IP4_LEN + udp_len));
		put16(ip + 4, ip_id++);
		put16(ip + 6, 0x4000);		/* don't fragment */
		ip[8] = 64;
		ip[9] = 17;			/* UDP */
		memcpy(ip + 12, sgid->raw + 12, 4);
		memcpy(ip + 16, dgid->raw + 12, 4);
		put16(ip + 10, fold(sum16(0, ip, IP4_LEN)));
		return ETH_LEN + IP4_LEN;
	}
	memset(ip, 0, IP6_LEN);
	ip[0] = 0x60;
	put16(ip + 4, (uint16_t)udp_len);
	ip[6] = 17;
	ip[7] = 64;
	memcpy(ip + 8, sgid->raw, 16);
	memcpy(ip + 24, dgid->raw, 16);
	return ETH_LEN + IP6_LEN;
}

/*
 * The invariant CRC (IBA annex A17, RoCEv2): CRC-32 over eight 0xff bytes
 * standing for the LRH, the IP header with its variant fields (IPv4 TOS, TTL
 * and checksum; IPv6 traffic class, flow label and hop limit) set to ones,
 * the UDP header with its checksum set to ones, the BTH with its reserved
 * byte set to ones, and the rest of the packet up to the ICRC; stored
 * little-endian, as rxe and scapy do.
 */
static uint32_t icrc(const uint8_t *ip, uint32_t ip_len, bool v4, const uint8_t *udp,
		     uint32_t rest_len)
{
	static const uint8_t ones[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t hdr[IP6_LEN + UDP_LEN + 12];
	uint32_t crc;

	memcpy(hdr, ip, ip_len);
	memcpy(hdr + ip_len, udp, UDP_LEN + 12);
	if (v4) {
		hdr[1] = 0xff;
		hdr[8] = 0xff;
		hdr[10] = 0xff;
		hdr[11] = 0xff;
	} else {
		hdr[0] |= 0x0f;
		hdr[1] = 0xff;
		hdr[2] = 0xff;
		hdr[3] = 0xff;
		hdr[7] = 0xff;
	}
	hdr[ip_len + 6] = 0xff;
	hdr[ip_len + 7] = 0xff;
	hdr[ip_len + UDP_LEN + 4] = 0xff;
	crc = crc32_update(~0u, ones, sizeof(ones));
	crc = crc32_update(crc, hdr, ip_len + UDP_LEN + 12);
	crc = crc32_update(crc, udp + UDP_LEN + 12, rest_len - 12);
	return ~crc;
}

void pcap_packet_locked(const union ibv_gid *sgid, const union ibv_gid *dgid, uint16_t sport,
			const uint8_t *ib, uint32_t ib_len, const uint8_t *payload,
			uint32_t payload_len)
{
	uint8_t *f = record + REC_LEN, *udp;
	uint32_t pad = (4 - (payload_len & 3)) & 3;
	uint32_t ib_total = ib_len + payload_len + pad;
	uint32_t udp_len = UDP_LEN + ib_total + ICRC_LEN;
	bool v4 = gid_is_v4(sgid) && gid_is_v4(dgid);
	uint32_t off, frame_len;
	struct timespec ts;
	ssize_t written;

	if (ib_len < 12 || ib_len + payload_len > FRAME_MAX - ETH_LEN - IP6_LEN - 64)
		return;
	off = eth_ip(f, sgid, dgid, udp_len, v4);
	udp = f + off;
	put16(udp, sport);
	put16(udp + 2, ROCE_PORT);
	put16(udp + 4, (uint16_t)udp_len);
	put16(udp + 6, 0);
	memcpy(udp + UDP_LEN, ib, ib_len);
	if (payload_len)
		memcpy(udp + UDP_LEN + ib_len, payload, payload_len);
	memset(udp + UDP_LEN + ib_len + payload_len, 0, pad);
	put32le(udp + UDP_LEN + ib_total,
		icrc(f + ETH_LEN, off - ETH_LEN, v4, udp, ib_total));
	if (!v4) {
		/* IPv6 requires the UDP checksum: pseudo-header, then the datagram. */
		uint32_t sum = sum16(0, sgid->raw, 16);

		sum = sum16(sum, dgid->raw, 16);
		sum += udp_len + 17;
		sum = sum16(sum, udp, udp_len);
		put16(udp + 6, fold(sum) ? fold(sum) : 0xffff);
	}
	frame_len = off + udp_len;
	clock_gettime(CLOCK_REALTIME, &ts);
	put32le(record, (uint32_t)ts.tv_sec);
	put32le(record + 4, (uint32_t)ts.tv_nsec);
	put32le(record + 8, frame_len);
	put32le(record + 12, frame_len);
	/* One write per record: O_APPEND keeps records of several processes whole. */
	written = write(cap_fd, record, REC_LEN + frame_len);
	(void)written;
}
