/* SPDX-License-Identifier: MIT */
/* What every fuzz target shares: libFuzzer's entry point, and its checks. */
#ifndef FUZZ_H
#define FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken promise is a crash for libFuzzer (and a failure for replay.c). */
#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,   \
				__LINE__, #cond);                                \
			abort();                                                 \
		}                                                                \
	} while (0)

#endif /* FUZZ_H */
