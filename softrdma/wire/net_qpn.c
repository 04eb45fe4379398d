/* SPDX-License-Identifier: MIT */
/*
 * QP numbers unique on the machine, and the way to the process that owns
 * one.
 *
 * rxe numbers QPs per device, and every process on the machine shares the
 * device, so a QP number names one QP on the machine. Programs that connect
 * QPs themselves rely on it: they exchange QPN, PSN and GID over a socket of
 * their own and move their QP to RTR with the peer's number (IBA 11.2.5,
 * ModifyQP: dest_qp_num and the address vector), whichever process it lives
 * in. softrdma's device lives in each process, so each process that may
 * talk to others (one with a rendezvous directory, net_dir.h) claims a block
 * of QP numbers there, "qpn-<block>", published as a listening socket; its
 * QPs take their numbers from that block. A QP whose destination lies in
 * another process's block reaches it over a link to that socket: one link
 * per owner, opened by the first QP that needs it, carrying the wire's
 * requests and answers (wire_net.c) and nothing of rdma_cm.
 *
 * Every GID stays the loopback interface's, as rxe's GIDs are those of the
 * netdev it is bound to: on one machine the number alone tells QPs apart.
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "net.h"
#include "net_dir.h"

/* 256 blocks of 2^16 numbers: block 0 (numbers below 0x10000) is for processes without one. */
#define QPN_BLOCK_SHIFT	16
#define QPN_BLOCKS	256
/* "qpn-" and two hex digits. */
#define QPN_NAME_LEN	8

/* Under fab.lock. */
static struct {
	bool tried;			/* a claim was made (it may have failed) */
	uint32_t block;			/* ours, or 0 */
	int lock_fd;			/* held while the block is ours */
	struct net_listener *listener;
	/* The links this process opened to each block's owner (a reference each). */
	struct net_link *links[QPN_BLOCKS];
} qpn = { .lock_fd = -1 };

static void block_name(char *out, uint32_t block)
{
	snprintf(out, QPN_NAME_LEN, "qpn-%02x", block & 0xff);
}

/* Publish @block as ours, the directory's lock held: false if another process has it. */
static bool claim_block(uint32_t block)
{
	char name[QPN_NAME_LEN];
	int lock_fd, sock_fd;

	block_name(name, block);
	lock_fd = net_dir_claim(name);
	if (lock_fd < 0)
		return false;
	sock_fd = net_dir_bind(name);
	if (sock_fd < 0) {
		close(lock_fd);
		return false;
	}
	qpn.listener = net_listener_add_locked(sock_fd, true);
	if (!qpn.listener) {
		net_dir_remove(name);
		close(sock_fd);
		close(lock_fd);
		return false;
	}
	qpn.lock_fd = lock_fd;
	qpn.block = block;
	return true;
}

/* Blocks are tried from one of the process's own, so that processes rarely contend. */
static void claim_locked(void)
{
	uint32_t start = (uint32_t)getpid() % (QPN_BLOCKS - 1), i;
	int lock;

	qpn.tried = true;
	if (!net_dir())
		return;
	lock = net_dir_lock();
	if (lock < 0)
		return;
	for (i = 0; i < QPN_BLOCKS - 1; i++)
		if (claim_block(1 + (start + i) % (QPN_BLOCKS - 1)))
			break;
	net_dir_unlock(lock);
	if (!qpn.block)
		fprintf(stderr, "softrdma: no block of QP numbers left in %s: "
			"QPs connected without rdma_cm stay within this process\n", net_dir());
}

uint32_t wire_qpn_range_locked(uint32_t *count)
{
	if (!qpn.tried)
		claim_locked();
	*count = 1u << QPN_BLOCK_SHIFT;
	/* IBA reserves QPN 0xffffff (multicast): the last block is one short. */
	if (qpn.block == QPN_BLOCKS - 1)
		(*count)--;
	return qpn.block << QPN_BLOCK_SHIFT;
}

bool wire_qpn_foreign_locked(uint32_t qp_num)
{
	uint32_t block = (qp_num & WIRE_PSN_MASK) >> QPN_BLOCK_SHIFT;

	return block && block != qpn.block && net_dir();
}

struct net_link *net_qpn_route_locked(uint32_t dest_qpn)
{
	uint32_t block = (dest_qpn & WIRE_PSN_MASK) >> QPN_BLOCK_SHIFT;
	struct net_link *link = qpn.links[block];
	char name[QPN_NAME_LEN];
	int fd;

	if (!wire_qpn_foreign_locked(dest_qpn))
		return NULL;
	if (link && !link->dead)
		return link;
	if (link)
		net_link_close_locked(link);
	qpn.links[block] = NULL;
	/* A Unix socket connects at once (its listener's backlog takes it). */
	block_name(name, block);
	fd = net_dir_connect(name);
	if (fd < 0)
		return NULL;
	link = net_link_new_locked(fd, true);
	if (!link) {
		close(fd);
		return NULL;
	}
	link->qpn = true;
	/* The caller's reference from net_link_new_locked() is the table's. */
	qpn.links[block] = link;
	return link;
}

void net_qpn_fork_child_locked(void)
{
	/* The block, its lock and links are the parent's: the child claims its own. */
	if (qpn.lock_fd >= 0)
		close(qpn.lock_fd);
	qpn.lock_fd = -1;
	qpn.block = 0;
	qpn.tried = false;
	qpn.listener = NULL;
	for (uint32_t i = 0; i < QPN_BLOCKS; i++)
		qpn.links[i] = NULL;
}

void net_qpn_release_locked(void)
{
	char name[QPN_NAME_LEN];
	int lock;

	/* At exit (net_free()): a link the net thread let go of is the table's alone. */
	for (uint32_t i = 0; i < QPN_BLOCKS; i++) {
		if (qpn.links[i])
			net_link_put_locked(qpn.links[i]);
		qpn.links[i] = NULL;
	}
	if (!qpn.block)
		return;
	block_name(name, qpn.block);
	lock = net_dir_lock();
	net_dir_remove(name);
	if (lock >= 0)
		net_dir_unlock(lock);
	close(qpn.lock_fd);
	qpn.lock_fd = -1;
	qpn.block = 0;
	qpn.listener = NULL;
}
