/* SPDX-License-Identifier: MIT */
/*
 * Inside the harness: the server's pieces that harness_fabric.c needs to run
 * it in a process of its own (E2E_FABRIC=proc).
 */
#ifndef E2E_HARNESS_FABRIC_H
#define E2E_HARNESS_FABRIC_H

#include "harness.h"

/* Listen on 127.0.0.1, port 0; @hs shares @sh. Returns 0 or -errno. */
int harness_server_listen(struct harness_server *hs, struct harness_shared *sh,
			  uint32_t max_requests, uint32_t inline_size);
/* Serve until sh->stop (the server thread's body). */
void *harness_thread(void *arg);
/* Destroy the server and whatever it still holds. */
void harness_server_destroy(struct harness_server *hs);

/* Spawn the server process, wait until it listens. Returns 0 or -errno. */
int harness_proc_start(struct harness_server *hs, uint32_t max_requests, uint32_t inline_size);
/* Stop it and reap it. */
void harness_proc_stop(struct harness_server *hs);

#endif /* E2E_HARNESS_FABRIC_H */
