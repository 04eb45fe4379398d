/* SPDX-License-Identifier: MIT */
/*
 * rdma_cm's names in the rendezvous directory (net_dir.h): each listening
 * id publishes a Unix socket named after its port space, address and port
 * ("tcp-127.0.0.1-7174", "tcp-::-7174-v6only"); a process that resolves an
 * address with no listener of its own connects to the socket that covers it.
 * Without a directory rdma_cm stays within the process.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "cm.h"
#include "net_dir.h"

/* Room for a name and ".lock" or ".new". */
#define NAME_MAX_LEN	(NET_DIR_NAME_MAX + 6)

struct rdv_claim {
	int sock_fd;		/* until handed over to the net thread */
	int lock_fd;
	char name[NAME_MAX_LEN];
};

const char *rdv_dir(void)
{
	return net_dir();
}

static void make_name(char *out, const struct sockaddr *sa, uint32_t ps, bool afonly)
{
	char ip[INET6_ADDRSTRLEN] = "";
	bool v6only = afonly && sa->sa_family == AF_INET6 && cm_addr_is_any(sa);

	if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, ip, sizeof(ip));
	else
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, ip, sizeof(ip));
	snprintf(out, NAME_MAX_LEN, "%s-%s-%u%s",
		 ps == RDMA_PS_IB ? "ib" : ps == RDMA_PS_UDP ? "udp" : "tcp", ip,
		 cm_addr_port(sa), v6only ? "-v6only" : "");
}

/* Parse a name back (without ".lock"): false if it is not one of ours. */
static bool parse_name(const char *name, struct sockaddr_storage *ss, uint32_t *ps, bool *afonly)
{
	char buf[NAME_MAX_LEN], *ip, *port, *end;
	unsigned long p;

	if (strlen(name) >= sizeof(buf))
		return false;
	strcpy(buf, name);
	*afonly = false;
	end = buf + strlen(buf);
	if (end - buf > 7 && strcmp(end - 7, "-v6only") == 0) {
		*afonly = true;
		end[-7] = '\0';
	}
	ip = strchr(buf, '-');
	port = strrchr(buf, '-');
	if (!ip || port == ip)
		return false;
	*ip++ = '\0';
	*port++ = '\0';
	if (strcmp(buf, "tcp") == 0)
		*ps = RDMA_PS_TCP;
	else if (strcmp(buf, "ib") == 0)
		*ps = RDMA_PS_IB;
	else if (strcmp(buf, "udp") == 0)
		*ps = RDMA_PS_UDP;
	else
		return false;
	p = strtoul(port, &end, 10);
	if (*end || p > 65535)
		return false;
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, ip, &((struct sockaddr_in *)ss)->sin_addr) == 1)
		ss->ss_family = AF_INET;
	else if (inet_pton(AF_INET6, ip, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1)
		ss->ss_family = AF_INET6;
	else
		return false;
	cm_addr_set_port((struct sockaddr *)ss, (uint16_t)p);
	return true;
}

/*
 * The names of the wildcards that cover @addr on its port, in the order the
 * kernel matches them after the exact address: 0.0.0.0 then :: for IPv4,
 * :: then :: v6only for IPv6 (cm_addr_covers()).
 */
static void covering_wildcards(const struct sockaddr *addr, uint32_t ps,
			       char names[2][NAME_MAX_LEN])
{
	struct sockaddr_in any4 = { .sin_family = AF_INET };
	struct sockaddr_in6 any6 = { .sin6_family = AF_INET6 };
	bool v4 = addr->sa_family == AF_INET;

	any4.sin_port = htons(cm_addr_port(addr));
	any6.sin6_port = any4.sin_port;
	make_name(names[0], v4 ? (struct sockaddr *)&any4 : (struct sockaddr *)&any6, ps, false);
	make_name(names[1], (struct sockaddr *)&any6, ps, !v4);
}

/*
 * Is a wildcard of @addr's port (a specific address) taken by a live
 * listener? Only the wildcards can overlap a specific address whose own
 * name is already ours, so there is no need to read the directory.
 */
static bool wildcard_taken(const struct sockaddr *addr, uint32_t ps)
{
	char names[2][NAME_MAX_LEN];

	covering_wildcards(addr, ps, names);
	return net_dir_alive(names[0]) || net_dir_alive(names[1]);
}

/*
 * Does a live listener of another process, not named @self, overlap @addr
 * on the same port? A wildcard overlaps every address, so that case reads
 * the whole directory.
 */
static bool conflict(const struct sockaddr *addr, uint32_t ps, bool afonly, const char *self)
{
	struct dirent *ent;
	bool found = false;
	DIR *d;

	if (!cm_addr_is_any(addr))
		return wildcard_taken(addr, ps);
	d = opendir(net_dir());
	if (!d)
		return false;
	while (!found && (ent = readdir(d))) {
		char name[NAME_MAX_LEN];
		size_t len = strlen(ent->d_name);
		struct sockaddr_storage other;
		bool other_afonly;
		uint32_t other_ps;

		if (len <= 5 || len - 5 >= sizeof(name) || strcmp(ent->d_name + len - 5, ".lock"))
			continue;
		memcpy(name, ent->d_name, len - 5);
		name[len - 5] = '\0';
		if (strcmp(name, self) == 0)
			continue;
		if (!parse_name(name, &other, &other_ps, &other_afonly) || other_ps != ps ||
		    cm_addr_port((struct sockaddr *)&other) != cm_addr_port(addr))
			continue;
		if (!cm_addr_covers((struct sockaddr *)&other, other_afonly, addr) &&
		    !cm_addr_covers(addr, afonly, (struct sockaddr *)&other))
			continue;
		found = net_dir_alive(name);
	}
	closedir(d);
	return found;
}

/*
 * The name is made ours (its lock) and connectable (bound, listening,
 * renamed into place) before the directory is scanned for listeners of
 * other processes that overlap it, so that rdma_listen() publishes in a
 * handful of system calls: programs that tell their peer to connect before
 * they listen (qperf 0.4.11) or right as they listen (perftest -R) race
 * that. If one overlaps, the name is withdrawn again, and a client that
 * connected in between loses its connection before any REP.
 */
int rdv_listen(const struct sockaddr *addr, enum rdma_port_space ps, bool afonly,
	       struct rdv_claim **out)
{
	struct rdv_claim *c;
	int lock, ret = 0;

	if (!rdv_dir())
		return -ENODEV;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->sock_fd = -1;
	make_name(c->name, addr, ps, afonly);
	lock = net_dir_lock();
	if (lock < 0) {
		free(c);
		return lock;
	}
	c->lock_fd = net_dir_claim(c->name);
	if (c->lock_fd < 0) {
		ret = c->lock_fd;
		goto out;
	}
	c->sock_fd = net_dir_bind(c->name);
	if (c->sock_fd < 0)
		ret = c->sock_fd;
	else if (conflict(addr, ps, afonly, c->name))
		ret = -EADDRINUSE;
	if (ret) {
		net_dir_remove(c->name);
		if (c->sock_fd >= 0)
			close(c->sock_fd);
		close(c->lock_fd);
	}
out:
	net_dir_unlock(lock);
	if (ret) {
		free(c);
		return ret;
	}
	*out = c;
	return 0;
}

int rdv_claim_take_fd(struct rdv_claim *claim)
{
	int fd = claim->sock_fd;

	claim->sock_fd = -1;
	return fd;
}

void rdv_unlisten(struct rdv_claim *claim)
{
	int lock = net_dir_lock();

	net_dir_remove(claim->name);
	if (lock >= 0)
		net_dir_unlock(lock);
	if (claim->sock_fd >= 0)
		close(claim->sock_fd);
	close(claim->lock_fd);
	free(claim);
}

/* The exact address first, then the wildcards that cover it, as the kernel matches. */
int rdv_connect(const struct sockaddr *dst, enum rdma_port_space ps)
{
	char name[NAME_MAX_LEN], names[2][NAME_MAX_LEN];
	unsigned int i;
	int fd;

	if (!rdv_dir())
		return -ECONNREFUSED;
	make_name(name, dst, ps, false);
	fd = net_dir_connect(name);
	covering_wildcards(dst, ps, names);
	for (i = 0; fd < 0 && i < 2; i++)
		fd = net_dir_connect(names[i]);
	return fd;
}
