/* SPDX-License-Identifier: MIT */
/*
 * Calls softrdma makes while it holds its fabric lock. A test executable
 * linked with -Wl,--wrap= for each function named below counts those calls
 * (softrdma_lock_held() says whether the caller holds the lock): the rule is
 * that nothing allocates or writes to a file descriptor under it.
 */
#ifndef SOFTRDMA_LOCKWATCH_H
#define SOFTRDMA_LOCKWATCH_H

enum lockwatch_call {
	LW_MALLOC,	/* malloc, calloc, realloc */
	LW_WRITE,	/* write, send, sendmsg */
	LW_COUNT,
};

/* Forget the counts. */
void lockwatch_reset(void);
/* Calls of that kind made under the lock since the last reset. */
unsigned long lockwatch_count(enum lockwatch_call what);


#endif /* SOFTRDMA_LOCKWATCH_H */
