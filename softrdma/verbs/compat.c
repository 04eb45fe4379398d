/* SPDX-License-Identifier: MIT */
/*
 * Exported odds and ends that rdma-core's own utilities call (ibv_devinfo):
 * sysfs reads and where sysfs is, the device index and the GID type. softrdma0 has no sysfs
 * directory, so reads under its paths fail as they would for a missing file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "soft.h"

/* rdma-core's private enum ibv_gid_type_sysfs (infiniband/driver.h, not installed). */
#define GID_TYPE_SYSFS_ROCE_V2 1

int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
const char *ibv_get_sysfs_path(void);
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       int *type);

/* As libibverbs: read a sysfs attribute, drop the trailing newline, return its length. */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	char path[4096];
	ssize_t len;
	int fd;

	if (!size || snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, size - 1);
	close(fd);
	if (len < 0)
		return -1;
	buf[len] = '\0';
	if (len > 0 && buf[len - 1] == '\n')
		buf[--len] = '\0';
	return (int)len;
}

/* Where sysfs is mounted, as libibverbs found it: softrdma0 is not under it. */
const char *ibv_get_sysfs_path(void)
{
	return "/sys";
}

int ibv_get_device_index(struct ibv_device *device)
{
	(void)device;
	return 0;
}

/* Both GIDs of softrdma0 are RoCEv2 GIDs. */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       int *type)
{
	(void)context;
	if (port_num != 1 || index > 1) {
		errno = EINVAL;
		return -1;
	}
	*type = GID_TYPE_SYSFS_ROCE_V2;
	return 0;
}
