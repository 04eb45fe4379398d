/* SPDX-License-Identifier: MIT */
/*
 * A root directory only root may search, as a chroot made under mktemp -d
 * (mode 0700) has: a server that walks any path from "/" while acting as a
 * caller fails there with EACCES where it should not. The suite runs inside
 * one when it can, so that every test meets that condition.
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nfs3_test.h"

/* One fixed, empty directory for every run: each mounts over it in its own namespace. */
#define JAIL "/tmp/nfs3-jail"

/*
 * Every directory of "/" bound under @top, so that paths mean what they did.
 * mount(2) ignores the type of a bind or of a propagation change, but
 * valgrind wants a string there.
 */
static int bind_top_dirs(const char *top)
{
	char at[4096], from[4096];
	struct dirent *d;
	DIR *root = opendir("/");
	int rc = 0;

	if (!root)
		return -errno;
	while (!rc && (d = readdir(root))) {
		if (d->d_type != DT_DIR || !strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		snprintf(at, sizeof(at), "%s/%s", top, d->d_name);
		snprintf(from, sizeof(from), "/%s", d->d_name);
		if (mkdir(at, 0755) || mount(from, at, "none", MS_BIND | MS_REC, NULL))
			rc = -errno;
	}
	closedir(root);
	return rc;
}

const char *nfs3t_enter_jail(void)
{
	if (geteuid() != 0)
		return "not root";
	if (unshare(CLONE_NEWNS))
		return "no mount namespace";
	/* Nothing mounted here reaches the host's namespace. */
	if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL))
		return "cannot make mounts private";
	if (mkdir(JAIL, 0700) && errno != EEXIST)
		return "cannot make " JAIL;
	/* Unbindable: binding /tmp below it must not copy the jail into itself. */
	if (mount("jail", JAIL, "tmpfs", 0, "mode=0700") ||
	    mount("none", JAIL, "none", MS_UNBINDABLE, NULL) || bind_top_dirs(JAIL))
		return "cannot mount the jail";
	if (chroot(JAIL) || chdir("/"))
		return "cannot chroot";
	return NULL;
}
