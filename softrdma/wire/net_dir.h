/* SPDX-License-Identifier: MIT */
/*
 * The rendezvous directory (net_dir.c): where processes publish the Unix
 * sockets others reach them through. rdma_cm publishes its listeners there
 * (cm_rdv.c), the wire each process's block of QP numbers (net_qpn.c).
 *
 * A published name is a socket and, next to it, "<name>.lock", held with
 * flock() by the publishing process for as long as the name is its own: the
 * kernel releases it when the process dies, so a stale socket is recognised
 * (the lock can be taken) and replaced. ".lock" in the directory serialises
 * claims and releases.
 *
 * The directory is SOFTRDMA_DIR; the drop-in libraries default to
 * $XDG_RUNTIME_DIR/softrdma or /tmp/softrdma-<uid>. Without one (the test
 * library without SOFTRDMA_DIR, or SOFTRDMA_DIR set empty) nothing is
 * published and the fabric stays within the process.
 */
#ifndef SOFT_NET_DIR_H
#define SOFT_NET_DIR_H

#include <stdbool.h>
#include <stddef.h>

/* The longest name published: rdma_cm's "tcp-", an IPv6 address, "-65535-v6only". */
#define NET_DIR_NAME_MAX	(4 + 46 - 1 + 13)

/* The directory, or NULL when there is none (nothing crosses processes). */
const char *net_dir(void);
/* "<dir>/<name><suffix>" in @out: false if it does not fit. */
bool net_dir_path(char *out, size_t len, const char *name, const char *suffix);
/* Take and release the directory's lock: an fd, or -errno. */
int net_dir_lock(void);
void net_dir_unlock(int fd);
/*
 * Make @name ours (the directory's lock held): take "<name>.lock" (an fd
 * to keep while the name is ours), or -EADDRINUSE while a live process
 * holds it.
 */
int net_dir_claim(const char *name);
/* A listening socket published as @name, under the directory's lock: an fd or -errno. */
int net_dir_bind(const char *name);
/* Remove a published name: its socket and its lock file (the directory's lock held). */
void net_dir_remove(const char *name);
/* Is the process that published @name alive? Removes the name if not. */
bool net_dir_alive(const char *name);
/* A blocking stream socket connected to @name's listener: an fd, or -ECONNREFUSED. */
int net_dir_connect(const char *name);

#endif /* SOFT_NET_DIR_H */
