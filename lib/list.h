/* SPDX-License-Identifier: MIT */
/* A circular doubly linked list with the head embedded in its owner. */
#ifndef RPCRDMA_LIST_H
#define RPCRDMA_LIST_H

#include <stdbool.h>
#include <stddef.h>

#include "compiler.h"

struct list_node {
	struct list_node *next, *prev;
};

static inline void list_init(struct list_node *head)
{
	head->next = head;
	head->prev = head;
}

static inline bool list_empty(const struct list_node *head)
{
	return head->next == head;
}

static inline void list_insert(struct list_node *node, struct list_node *prev,
			       struct list_node *next)
{
	node->prev = prev;
	node->next = next;
	prev->next = node;
	next->prev = node;
}

static inline void list_add_tail(struct list_node *head, struct list_node *node)
{
	list_insert(node, head->prev, head);
}

static inline void list_add_head(struct list_node *head, struct list_node *node)
{
	list_insert(node, head, head->next);
}

static inline void list_del(struct list_node *node)
{
	node->prev->next = node->next;
	node->next->prev = node->prev;
	node->next = node;
	node->prev = node;
}

/* Move every node of @from to the tail of @to, keeping their order. */
static inline void list_splice_tail(struct list_node *to, struct list_node *from)
{
	if (list_empty(from))
		return;
	from->next->prev = to->prev;
	to->prev->next = from->next;
	from->prev->next = to;
	to->prev = from->prev;
	list_init(from);
}

#define list_entry(node, type, member) container_of(node, type, member)

#define list_first_entry(head, type, member) list_entry((head)->next, type, member)

/* The first entry removed from the list, or NULL when it is empty. */
#define list_pop(head, type, member) \
	(list_empty(head) ? NULL : list_pop_node_(list_first_entry(head, type, member), \
						  &list_first_entry(head, type, member)->member))

static inline void *list_pop_node_(void *entry, struct list_node *node)
{
	list_del(node);
	return entry;
}

#define list_for_each(head, pos) for (pos = (head)->next; pos != (head); pos = pos->next)

#define list_for_each_safe(head, pos, tmp) \
	for (pos = (head)->next, tmp = pos->next; pos != (head); pos = tmp, tmp = pos->next)

#endif /* RPCRDMA_LIST_H */
