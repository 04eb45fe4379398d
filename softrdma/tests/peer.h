/* SPDX-License-Identifier: MIT */
/*
 * Two-process tests: the test executable starts a copy of itself as the peer
 * process (argv: --peer <role>) and talks to it through lines on the peer's
 * stdin and stdout. Every wait has a deadline. Under valgrind the peer runs
 * under valgrind too (SOFTRDMA_TEST_VALGRIND holds the command), and the
 * deadlines grow tenfold.
 */
#ifndef SOFTRDMA_PEER_H
#define SOFTRDMA_PEER_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

struct peer {
	pid_t pid;
	int from;		/* the peer's stdout */
	int to;			/* the peer's stdin */
	char buf[4096];
	size_t len;
	char line[4096];
};

/* A fresh rendezvous directory in SOFTRDMA_DIR, for this process and its peers. */
void peer_setup_dir(void);
/* Remove it (call at the end of main). */
void peer_cleanup_dir(void);
/* Are we running under valgrind? Deadlines scale with it. */
bool peer_under_valgrind(void);
int peer_timeout_ms(int ms);

/* Start argv0 --peer role. */
void peer_start(struct peer *p, const char *argv0, const char *role);
/* The next line from the peer, or NULL on EOF or after timeout_ms. */
const char *peer_read(struct peer *p, int timeout_ms);
/* The next line must start with prefix: returns what follows it (fails the test otherwise). */
const char *peer_expect(struct peer *p, const char *prefix);
void peer_send(struct peer *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Wait for the peer to exit: its exit status, 128 + signal, or -1 after timeout_ms. */
int peer_wait(struct peer *p, int timeout_ms);
/* SIGSTOP the peer and wait until all of it has stopped (SIGCONT goes on). */
void peer_stop(struct peer *p);
/* SIGKILL the peer and reap it. */
void peer_kill(struct peer *p);

/* In the peer process: say a line to the test, hear one from it. */
void peer_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *peer_hear(void);
/* In the peer process: fail with a message on stdout (the test reports it). */
#define PEER_CHECK(cond) do { \
	if (!(cond)) { \
		peer_say("FAIL %s:%d: %s", __FILE__, __LINE__, #cond); \
		exit(1); \
	} \
} while (0)

#endif /* SOFTRDMA_PEER_H */
