/* SPDX-License-Identifier: MIT */
/*
 * softrdma's lists: a ring of links through a sentinel, the fabric's own
 * (the library keeps its lists to itself). An empty ring is the sentinel
 * linked to itself; so is a link that was taken off one, which makes
 * taking it off again harmless and lets an owner ask "is it on a list?"
 * with soft_list_empty() on the link itself. Arguments go as in the kernel
 * (the link first, the list second).
 */
#ifndef SOFT_LIST_H
#define SOFT_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct soft_list {
	struct soft_list *next;
	struct soft_list *prev;
};

#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#endif

static inline void soft_list_init(struct soft_list *link)
{
	link->next = link->prev = link;
}

static inline bool soft_list_empty(const struct soft_list *list)
{
	return list->next == list;
}

/* Put @link into a ring just ahead of @at. */
static inline void soft_list_insert_before(struct soft_list *link, struct soft_list *at)
{
	struct soft_list *behind = at->prev;

	link->next = at;
	link->prev = behind;
	behind->next = at->prev = link;
}

/* At the end of @list: ahead of the sentinel. */
static inline void soft_list_add_tail(struct soft_list *link, struct soft_list *list)
{
	soft_list_insert_before(link, list);
}

/* At the front of @list: ahead of its first link. */
static inline void soft_list_add(struct soft_list *link, struct soft_list *list)
{
	soft_list_insert_before(link, list->next);
}

static inline void soft_list_del(struct soft_list *link)
{
	link->prev->next = link->next;
	link->next->prev = link->prev;
	soft_list_init(link);
}

/* The first link, taken off, or NULL for an empty list. */
static inline struct soft_list *soft_list_pop(struct soft_list *list)
{
	struct soft_list *first = list->next;

	if (first != list)
		soft_list_del(first);
	return first != list ? first : NULL;
}

#define soft_list_entry(link, type, member) container_of(link, type, member)

/* The first entry, taken off, or NULL for an empty list. */
#define soft_list_pop_entry(list, type, member)                               \
	__extension__({                                                       \
		struct soft_list *first_ = soft_list_pop(list);               \
		first_ ? soft_list_entry(first_, type, member) : (type *)NULL; \
	})

#define soft_list_for_each(pos, list) \
	for ((pos) = (list)->next; (pos) != (list); (pos) = (pos)->next)

/* @pos may be taken off (or freed) in the body: @tmp holds the next one. */
#define soft_list_for_each_safe(pos, tmp, list) \
	for ((pos) = (list)->next; (tmp) = (pos)->next, (pos) != (list); (pos) = (tmp))

#endif /* SOFT_LIST_H */
