/* SPDX-License-Identifier: MIT */
/* The fabric's clock: every deadline and timer is CLOCK_MONOTONIC. */
#include <time.h>

#include "base.h"

uint64_t soft_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}
