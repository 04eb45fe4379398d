/* SPDX-License-Identifier: MIT */
/*
 * The rendezvous directory (net_dir.h): finding it, and publishing,
 * checking and connecting to the names in it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "net_dir.h"

/* The directory, a slash and the longest name with ".new" fit in sun_path. */
#define DIR_MAX_LEN	(sizeof(((struct sockaddr_un *)0)->sun_path) - 2 - NET_DIR_NAME_MAX - 4)

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

const char *net_dir(void)
{
	pthread_once(&dir_once, dir_init);
	return dir_ok ? dir_path : NULL;
}

bool net_dir_path(char *out, size_t len, const char *name, const char *suffix)
{
	return snprintf(out, len, "%s/%s%s", dir_path, name, suffix) < (int)len;
}

int net_dir_lock(void)
{
	char path[PATH_MAX];
	int fd;

	if (!net_dir_path(path, sizeof(path), ".lock", ""))
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

void net_dir_unlock(int fd)
{
	flock(fd, LOCK_UN);
	close(fd);
}

int net_dir_claim(const char *name)
{
	char path[PATH_MAX];
	int fd;

	if (!net_dir_path(path, sizeof(path), name, ".lock"))
		return -ENAMETOOLONG;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -EADDRINUSE;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		close(fd);
		return -EADDRINUSE;
	}
	return fd;
}

void net_dir_remove(const char *name)
{
	char path[PATH_MAX];

	if (net_dir_path(path, sizeof(path), name, ""))
		unlink(path);
	if (net_dir_path(path, sizeof(path), name, ".lock"))
		unlink(path);
}

bool net_dir_alive(const char *name)
{
	char path[PATH_MAX];
	int fd;

	if (!net_dir_path(path, sizeof(path), name, ".lock"))
		return false;
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		net_dir_remove(name);
		close(fd);
		return false;
	}
	close(fd);
	return true;
}

/*
 * Bind under a temporary name, listen, then rename into place: a process
 * that sees the name can connect to it at once.
 */
int net_dir_bind(const char *name)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char path[PATH_MAX];
	int fd;

	if (!net_dir_path(sun.sun_path, sizeof(sun.sun_path), name, ".new") ||
	    !net_dir_path(path, sizeof(path), name, ""))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* A temporary name a process left as it died is in the way (the directory's lock is ours). */
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) &&
	    (errno != EADDRINUSE || unlink(sun.sun_path) ||
	     bind(fd, (struct sockaddr *)&sun, sizeof(sun)))) {
		int err = errno;

		close(fd);
		return -err;
	}
	if (listen(fd, SOMAXCONN) || rename(sun.sun_path, path)) {
		int err = errno;

		unlink(sun.sun_path);
		close(fd);
		return -err;
	}
	return fd;
}

int net_dir_connect(const char *name)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	if (!net_dir_path(sun.sun_path, sizeof(sun.sun_path), name, ""))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0)
		return fd;
	close(fd);
	return -ECONNREFUSED;
}
