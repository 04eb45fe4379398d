/* SPDX-License-Identifier: MIT */
/* The log callback: the library prints nothing unless the application asks. */
#include <stdarg.h>
#include <stdio.h>

#include "util.h"

static void (*log_fn)(int level, const char *msg, void *arg);
static void *log_arg;
static int log_max_level;

RPCRDMA_EXPORT void rpcrdma_set_log(void (*fn)(int level, const char *msg, void *arg), void *arg,
				    int max_level)
{
	log_fn = fn;
	log_arg = arg;
	log_max_level = max_level;
}

void rpcrdma_log(int level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!log_fn || level > log_max_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_fn(level, msg, log_arg);
}
