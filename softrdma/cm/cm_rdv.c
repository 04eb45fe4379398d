/* SPDX-License-Identifier: MIT */
/*
 * The rendezvous directory of the socket backend: each listening rdma_cm id
 * publishes a Unix socket named after its port space, address and port
 * ("tcp-127.0.0.1-7174", "tcp-::-7174-v6only"); a process that resolves an
 * address with no listener of its own connects to the socket that covers it.
 *
 * Next to each socket, "<name>.lock" is held with flock() by the listening
 * process for as long as it listens: the kernel releases it when the process
 * dies, so a stale socket is recognised (the lock can be taken) and replaced.
 * ".lock" in the directory serialises claims and releases.
 *
 * The directory is SOFTRDMA_DIR; the drop-in libraries default to
 * $XDG_RUNTIME_DIR/softrdma or /tmp/softrdma-<uid>. Without one (the test
 * library without SOFTRDMA_DIR, or SOFTRDMA_DIR set empty) the socket backend
 * is off and rdma_cm stays within the process.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "cm.h"

/* The longest socket name: "tcp-", an IPv6 address, "-65535-v6only". */
#define SOCK_NAME_MAX	(4 + INET6_ADDRSTRLEN - 1 + 13)
/* Room for a name and ".lock" or ".new". */
#define NAME_MAX_LEN	(SOCK_NAME_MAX + 6)
/* The directory, a slash and the longest name with ".new" fit in sun_path. */
#define DIR_MAX_LEN	(sizeof(((struct sockaddr_un *)0)->sun_path) - 2 - SOCK_NAME_MAX - 4)

struct rdv_claim {
	int sock_fd;		/* until handed over to the net thread */
	int lock_fd;
	char name[NAME_MAX_LEN];
};

static char dir_path[PATH_MAX];
static bool dir_ok;
static pthread_once_t dir_once = PTHREAD_ONCE_INIT;

/* A directory of ours: created if missing, not a symlink, owned by us, private. */
static bool usable_dir(const char *path)
{
	struct stat st;

	if (mkdir(path, 0700) && errno != EEXIST)
		return false;
	if (lstat(path, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
		return false;
	return access(path, W_OK | X_OK) == 0;
}

static void dir_init(void)
{
	const char *env = getenv("SOFTRDMA_DIR");

#ifdef SOFTRDMA_DROPIN
	if (!env) {
		const char *run = getenv("XDG_RUNTIME_DIR");

		if (run && *run)
			snprintf(dir_path, sizeof(dir_path), "%s/softrdma", run);
		else
			snprintf(dir_path, sizeof(dir_path), "/tmp/softrdma-%u",
				 (unsigned int)geteuid());
		env = dir_path;
	}
#endif
	if (!env || !*env)
		return;
	if (env != dir_path)
		snprintf(dir_path, sizeof(dir_path), "%s", env);
	if (strlen(dir_path) > DIR_MAX_LEN) {
		fprintf(stderr, "softrdma: SOFTRDMA_DIR %s is longer than %zu bytes: "
			"no connections to other processes\n", dir_path, DIR_MAX_LEN);
		return;
	}
	if (!usable_dir(dir_path)) {
		fprintf(stderr, "softrdma: cannot use %s as the rendezvous directory (%s): "
			"no connections to other processes\n", dir_path, strerror(errno));
		return;
	}
	dir_ok = true;
}

const char *rdv_dir(void)
{
	pthread_once(&dir_once, dir_init);
	return dir_ok ? dir_path : NULL;
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

static bool path_of(char *out, size_t len, const char *name, const char *suffix)
{
	return snprintf(out, len, "%s/%s%s", dir_path, name, suffix) < (int)len;
}

static int dir_lock(void)
{
	char path[PATH_MAX];
	int fd;

	if (!path_of(path, sizeof(path), ".lock", ""))
		return -ENAMETOOLONG;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX)) {
		int err = errno;

		close(fd);
		return -err;
	}
	return fd;
}

static void dir_unlock(int fd)
{
	flock(fd, LOCK_UN);
	close(fd);
}

/* Remove a published name: its socket and its lock file. */
static void remove_name(const char *name)
{
	char path[PATH_MAX];

	if (path_of(path, sizeof(path), name, ""))
		unlink(path);
	if (path_of(path, sizeof(path), name, ".lock"))
		unlink(path);
}

/* Is the listener that published name alive? Removes it if it is not. */
static bool alive(const char *name)
{
	char path[PATH_MAX];
	int fd;

	if (!path_of(path, sizeof(path), name, ".lock"))
		return false;
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		remove_name(name);
		close(fd);
		return false;
	}
	close(fd);
	return true;
}

/* Does a live listener of another process overlap addr on the same port? */
static bool conflict(const struct sockaddr *addr, uint32_t ps, bool afonly)
{
	struct dirent *ent;
	bool found = false;
	DIR *d = opendir(dir_path);

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
		if (!parse_name(name, &other, &other_ps, &other_afonly) || other_ps != ps ||
		    cm_addr_port((struct sockaddr *)&other) != cm_addr_port(addr))
			continue;
		if (!cm_addr_covers((struct sockaddr *)&other, other_afonly, addr) &&
		    !cm_addr_covers(addr, afonly, (struct sockaddr *)&other))
			continue;
		found = alive(name);
	}
	closedir(d);
	return found;
}

/*
 * Bind under a temporary name, listen, then rename into place: a process
 * that sees the name can connect to it at once.
 */
static int bind_socket(const char *name)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char path[PATH_MAX];
	int fd;

	if (!path_of(sun.sun_path, sizeof(sun.sun_path), name, ".new") ||
	    !path_of(path, sizeof(path), name, ""))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	unlink(sun.sun_path);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) || listen(fd, SOMAXCONN) ||
	    rename(sun.sun_path, path)) {
		int err = errno;

		unlink(sun.sun_path);
		close(fd);
		return -err;
	}
	return fd;
}

int rdv_listen(const struct sockaddr *addr, enum rdma_port_space ps, bool afonly,
	       struct rdv_claim **out)
{
	struct rdv_claim *c;
	char path[PATH_MAX];
	int lock, ret = 0;

	if (!rdv_dir())
		return -ENODEV;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->sock_fd = -1;
	c->lock_fd = -1;
	make_name(c->name, addr, ps, afonly);
	lock = dir_lock();
	if (lock < 0) {
		free(c);
		return lock;
	}
	if (conflict(addr, ps, afonly) || !path_of(path, sizeof(path), c->name, ".lock")) {
		ret = -EADDRINUSE;
		goto out;
	}
	c->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (c->lock_fd < 0 || flock(c->lock_fd, LOCK_EX | LOCK_NB)) {
		ret = -EADDRINUSE;
		goto out;
	}
	c->sock_fd = bind_socket(c->name);
	if (c->sock_fd < 0) {
		ret = c->sock_fd;
		unlink(path);
	}
out:
	dir_unlock(lock);
	if (ret) {
		if (c->lock_fd >= 0)
			close(c->lock_fd);
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
	int lock = dir_lock();

	remove_name(claim->name);
	if (lock >= 0)
		dir_unlock(lock);
	if (claim->sock_fd >= 0)
		close(claim->sock_fd);
	close(claim->lock_fd);
	free(claim);
}

static int try_connect(const struct sockaddr *addr, uint32_t ps, bool afonly)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char name[NAME_MAX_LEN];
	int fd;

	make_name(name, addr, ps, afonly);
	if (!path_of(sun.sun_path, sizeof(sun.sun_path), name, ""))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0)
		return fd;
	close(fd);
	return -ECONNREFUSED;
}

/* The exact address first, then the wildcards that cover it, as the kernel matches. */
int rdv_connect(const struct sockaddr *dst, enum rdma_port_space ps)
{
	struct sockaddr_in any4 = { .sin_family = AF_INET };
	struct sockaddr_in6 any6 = { .sin6_family = AF_INET6 };
	int fd;

	if (!rdv_dir())
		return -ECONNREFUSED;
	any4.sin_port = htons(cm_addr_port(dst));
	any6.sin6_port = htons(cm_addr_port(dst));
	fd = try_connect(dst, ps, false);
	if (fd < 0 && dst->sa_family == AF_INET)
		fd = try_connect((struct sockaddr *)&any4, ps, false);
	if (fd < 0)
		fd = try_connect((struct sockaddr *)&any6, ps, false);
	if (fd < 0 && dst->sa_family == AF_INET6)
		fd = try_connect((struct sockaddr *)&any6, ps, true);
	return fd;
}
