/* SPDX-License-Identifier: MIT */
/* Intrusive doubly linked lists, as in the kernel: a node lives inside its owner. */
#ifndef SOFT_LIST_H
#define SOFT_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct list_node {
	struct list_node *next, *prev;
};

#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#define list_entry(node, type, member) container_of(node, type, member)

#define list_for_each_safe(pos, tmp, head) \
	for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); \
	     (pos) = (tmp), (tmp) = (pos)->next)

static inline void list_init(struct list_node *head)
{
	head->next = head;
	head->prev = head;
}

static inline bool list_empty(const struct list_node *head)
{
	return head->next == head;
}

static inline void list_add_tail(struct list_node *node, struct list_node *head)
{
	node->prev = head->prev;
	node->next = head;
	head->prev->next = node;
	head->prev = node;
}

/* Leaves the node self-linked so that a second removal is harmless. */
static inline void list_del(struct list_node *node)
{
	node->prev->next = node->next;
	node->next->prev = node->prev;
	list_init(node);
}

static inline struct list_node *list_pop(struct list_node *head)
{
	struct list_node *node = head->next;

	if (node == head)
		return NULL;
	list_del(node);
	return node;
}

#endif /* SOFT_LIST_H */
