/* SPDX-License-Identifier: MIT */
/*
 * Intrusive circular doubly linked lists, with the kernel's names and
 * argument order: the node being added comes first, the list's head
 * second (list_add_tail(new, head)). The library's alone: softrdma keeps
 * lists of its own.
 */
#ifndef RPCRDMA_LIST_H
#define RPCRDMA_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct list_node {
	struct list_node *next, *prev;
};

#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#endif

static inline void list_init(struct list_node *head)
{
	head->next = head;
	head->prev = head;
}

static inline bool list_empty(const struct list_node *head)
{
	return head->next == head;
}

static inline void list_insert_(struct list_node *node, struct list_node *prev,
				struct list_node *next)
{
	node->prev = prev;
	node->next = next;
	prev->next = node;
	next->prev = node;
}

/* @node at the end of @head's list. */
static inline void list_add_tail(struct list_node *node, struct list_node *head)
{
	list_insert_(node, head->prev, head);
}

/* @node at the front of @head's list. */
static inline void list_add(struct list_node *node, struct list_node *head)
{
	list_insert_(node, head, head->next);
}

/* Leaves the node self-linked, so that a second removal is harmless. */
static inline void list_del(struct list_node *node)
{
	node->prev->next = node->next;
	node->next->prev = node->prev;
	list_init(node);
}

/* Every node of @list to the tail of @head, in order; @list is left empty. */
static inline void list_splice_tail(struct list_node *list, struct list_node *head)
{
	if (list_empty(list))
		return;
	list->next->prev = head->prev;
	head->prev->next = list->next;
	list->prev->next = head;
	head->prev = list->prev;
	list_init(list);
}

/* The first node, removed, or NULL when the list is empty. */
static inline struct list_node *list_pop(struct list_node *head)
{
	struct list_node *node = head->next;

	if (node == head)
		return NULL;
	list_del(node);
	return node;
}

#define list_entry(node, type, member) container_of(node, type, member)

#define list_first_entry(head, type, member) list_entry((head)->next, type, member)

/* The first entry, removed from the list, or NULL when it is empty. */
#define list_pop_entry(head, type, member)                                    \
	__extension__({                                                       \
		struct list_node *node_ = list_pop(head);                     \
		node_ ? list_entry(node_, type, member) : (type *)NULL;       \
	})

#define list_for_each(pos, head) for (pos = (head)->next; pos != (head); pos = pos->next)

#define list_for_each_safe(pos, tmp, head) \
	for (pos = (head)->next, tmp = pos->next; pos != (head); pos = tmp, tmp = pos->next)

#endif /* RPCRDMA_LIST_H */
