/* SPDX-License-Identifier: MIT */
/* The wrappers behind lockwatch.h: count, then call the real function. */
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lockwatch.h"
#include "softrdma.h"

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
ssize_t __real_write(int fd, const void *buf, size_t len);
ssize_t __real_send(int fd, const void *buf, size_t len, int flags);
ssize_t __real_sendmsg(int fd, const struct msghdr *msg, int flags);

void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
ssize_t __wrap_write(int fd, const void *buf, size_t len);
ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags);
ssize_t __wrap_sendmsg(int fd, const struct msghdr *msg, int flags);

static unsigned long counts[LW_COUNT];

static void watch(enum lockwatch_call what)
{
	if (softrdma_lock_held())
		__atomic_add_fetch(&counts[what], 1, __ATOMIC_RELAXED);
}

void lockwatch_reset(void)
{
	unsigned int i;

	for (i = 0; i < LW_COUNT; i++)
		__atomic_store_n(&counts[i], 0, __ATOMIC_RELAXED);
}

unsigned long lockwatch_count(enum lockwatch_call what)
{
	return __atomic_load_n(&counts[what], __ATOMIC_RELAXED);
}

void *__wrap_malloc(size_t size)
{
	watch(LW_MALLOC);
	return __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
	watch(LW_MALLOC);
	return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size)
{
	watch(LW_MALLOC);
	return __real_realloc(p, size);
}

ssize_t __wrap_write(int fd, const void *buf, size_t len)
{
	watch(LW_WRITE);
	return __real_write(fd, buf, len);
}

ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags)
{
	watch(LW_WRITE);
	return __real_send(fd, buf, len, flags);
}

ssize_t __wrap_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	watch(LW_WRITE);
	return __real_sendmsg(fd, msg, flags);
}
