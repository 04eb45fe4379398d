/* SPDX-License-Identifier: MIT */
/*
 * The export's node table and the resolution of handles (export.h).
 *
 * Nodes live in one array of slots, slot 0 the root; a node's id is its
 * slot and the slot's generation, bumped when the node goes, so an old
 * handle of a reused slot is stale. A hash of inode numbers finds the node
 * of a file the server meets again. Parents are slots too: a node's path
 * is its chain of names up to the root, at most NFS3_MAX_DEPTH long, which
 * also bounds a chain that stale information has made circular.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export.h"

#define NODE_NONE UINT32_MAX
#define HASH_BITS 16
#define INITIAL_SLOTS 1024

struct nfs3_node {
	uint64_t ino;
	struct statx_timestamp btime;	/* zero: the file system does not say */
	char *name;			/* NULL for the root and for free slots */
	uint32_t gen;
	uint32_t parent;
	uint32_t hnext;			/* the hash chain; the free list for free slots */
	uint16_t type;			/* S_IFMT bits; 0 for a free slot */
};

struct nfs3_export {
	char *path;
	int root_fd;
	int proc_fd;		/* "/proc", opened as the server: see nfs3_export_proc_fd() */
	uint32_t dev_major;
	uint32_t dev_minor;
	struct nfs3_fh_key key;
	char writeverf[NFS3_WRITEVERFSIZE];
	uint32_t max_nodes;

	pthread_mutex_t lock;
	struct nfs3_node *nodes;	/* lock: nslots of cap */
	uint32_t nslots;
	uint32_t cap;
	uint32_t live;
	uint32_t free_head;
	uint32_t buckets[1u << HASH_BITS];
};

/* A node's names from the root down, copied out of the table. */
struct node_path {
	unsigned int depth;			/* 0: the root */
	uint16_t off[NFS3_MAX_DEPTH];
	char buf[PATH_MAX];
};

static uint32_t ino_bucket(uint64_t ino)
{
	return (uint32_t)((ino * 0x9e3779b97f4a7c15ull) >> (64 - HASH_BITS));
}

static uint64_t node_id(const struct nfs3_export *e, uint32_t slot)
{
	return (uint64_t)e->nodes[slot].gen << 32 | slot;
}

static bool same_dev(const struct nfs3_export *e, const struct statx *st)
{
	return st->stx_dev_major == e->dev_major && st->stx_dev_minor == e->dev_minor;
}

static bool has_btime(const struct statx *st)
{
	return (st->stx_mask & STATX_BTIME) && (st->stx_btime.tv_sec || st->stx_btime.tv_nsec);
}

/* Whether @st is still the file of @n: inode, type and, where known, birth time. */
static bool node_is(const struct nfs3_node *n, const struct statx *st)
{
	if (n->ino != st->stx_ino || n->type != (st->stx_mode & S_IFMT))
		return false;
	if (!(n->btime.tv_sec || n->btime.tv_nsec) || !has_btime(st))
		return true;
	return n->btime.tv_sec == st->stx_btime.tv_sec && n->btime.tv_nsec == st->stx_btime.tv_nsec;
}

static uint32_t node_find_locked(const struct nfs3_export *e, uint64_t ino)
{
	uint32_t slot = e->buckets[ino_bucket(ino)];
	unsigned int steps;

	for (steps = 0; slot != NODE_NONE && steps < e->nslots; steps++) {
		if (e->nodes[slot].ino == ino)
			return slot;
		slot = e->nodes[slot].hnext;
	}
	return NODE_NONE;
}

static void hash_add_locked(struct nfs3_export *e, uint32_t slot)
{
	uint32_t *head = &e->buckets[ino_bucket(e->nodes[slot].ino)];

	e->nodes[slot].hnext = *head;
	*head = slot;
}

static void hash_del_locked(struct nfs3_export *e, uint32_t slot)
{
	uint32_t *link = &e->buckets[ino_bucket(e->nodes[slot].ino)];
	unsigned int steps;

	for (steps = 0; *link != NODE_NONE && steps < e->nslots; steps++) {
		if (*link == slot) {
			*link = e->nodes[slot].hnext;
			return;
		}
		link = &e->nodes[*link].hnext;
	}
}

/* A free slot, growing the array up to max_nodes; NODE_NONE when full. */
static uint32_t node_alloc_locked(struct nfs3_export *e)
{
	uint32_t slot = e->free_head;

	if (slot != NODE_NONE) {
		e->free_head = e->nodes[slot].hnext;
		return slot;
	}
	if (e->nslots == e->max_nodes)
		return NODE_NONE;
	if (e->nslots == e->cap) {
		uint32_t cap = e->cap * 2 > e->max_nodes ? e->max_nodes : e->cap * 2;
		struct nfs3_node *nodes = realloc(e->nodes, (size_t)cap * sizeof(*nodes));

		if (!nodes)
			return NODE_NONE;
		e->nodes = nodes;
		e->cap = cap;
	}
	slot = e->nslots++;
	memset(&e->nodes[slot], 0, sizeof(e->nodes[slot]));
	return slot;
}

/* The node goes: handles of it are stale from now on. Never the root. */
static void node_free_locked(struct nfs3_export *e, uint32_t slot)
{
	struct nfs3_node *n = &e->nodes[slot];

	hash_del_locked(e, slot);
	free(n->name);
	n->name = NULL;
	n->type = 0;
	n->gen++;
	n->hnext = e->free_head;
	e->free_head = slot;
	e->live--;
}

static int node_path_locked(const struct nfs3_export *e, uint32_t slot, struct node_path *p)
{
	uint32_t chain[NFS3_MAX_DEPTH];
	unsigned int n = 0, i;
	size_t len = 0;

	while (slot != 0) {
		const struct nfs3_node *node = &e->nodes[slot];

		if (n == NFS3_MAX_DEPTH || !node->type || !node->name)
			return -ELOOP;
		chain[n++] = slot;
		slot = node->parent;
	}
	p->depth = n;
	for (i = 0; i < n; i++) {
		const char *name = e->nodes[chain[n - 1 - i]].name;
		size_t l = strlen(name);

		if (len + l + 1 > sizeof(p->buf))
			return -ENAMETOOLONG;
		p->off[i] = (uint16_t)len;
		memcpy(p->buf + len, name, l + 1);
		len += l + 1;
	}
	return 0;
}

/* The live node @id with inode @ino, copied into @out; -ESTALE if there is none. */
static int node_get_locked(const struct nfs3_export *e, uint64_t id, uint64_t ino,
			   struct nfs3_node *out)
{
	uint32_t slot = (uint32_t)id;

	if (slot >= e->nslots || node_id(e, slot) != id)
		return -ESTALE;
	if (!e->nodes[slot].type || e->nodes[slot].ino != ino)
		return -ESTALE;
	*out = e->nodes[slot];
	out->name = NULL;	/* not ours outside the lock */
	return 0;
}

static int fh_alloc(const struct nfs3_export *e, uint64_t id, uint64_t ino, nfs_fh3 *out)
{
	struct nfs3_fh_name name = { .node = id, .ino = ino };

	out->data.data_val = malloc(NFS3_FH_LEN);
	if (!out->data.data_val)
		return -ENOMEM;
	out->data.data_len = NFS3_FH_LEN;
	nfs3_fh_encode(&e->key, &name, (uint8_t *)out->data.data_val);
	return 0;
}

int nfs3_export_open(const char *path, unsigned int max_nodes, struct nfs3_export **out)
{
	struct nfs3_export *e = calloc(1, sizeof(*e));
	struct statx st;
	uint64_t verf;
	int rc = -ENOMEM;
	size_t i;

	if (!e)
		return -ENOMEM;
	e->root_fd = -1;
	e->proc_fd = -1;
	pthread_mutex_init(&e->lock, NULL);
	e->max_nodes = max_nodes ? max_nodes : NFS3_DEFAULT_MAX_NODES;
	e->path = realpath(path, NULL);
	if (!e->path) {
		rc = -errno;
		goto fail;
	}
	e->root_fd = open(e->path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (e->root_fd < 0 || statx(e->root_fd, "", AT_EMPTY_PATH, NFS3_STATX_MASK, &st)) {
		rc = -errno;
		goto fail;
	}
	e->proc_fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (e->proc_fd < 0) {
		rc = -errno;
		goto fail;
	}
	rc = nfs3_fh_key_init(&e->key);
	if (rc)
		goto fail;
	/* Any value that changes with the key will do: it changes at every start. */
	verf = nfs3_siphash(e->key.key, "writeverf", 9);
	memcpy(e->writeverf, &verf, sizeof(e->writeverf));
	e->dev_major = st.stx_dev_major;
	e->dev_minor = st.stx_dev_minor;
	for (i = 0; i < sizeof(e->buckets) / sizeof(e->buckets[0]); i++)
		e->buckets[i] = NODE_NONE;
	e->free_head = NODE_NONE;
	rc = -ENOMEM;
	e->cap = e->max_nodes < INITIAL_SLOTS ? e->max_nodes : INITIAL_SLOTS;
	e->nodes = calloc(e->cap, sizeof(*e->nodes));
	if (!e->nodes)
		goto fail;
	e->nslots = e->live = 1;
	e->nodes[0].ino = st.stx_ino;
	e->nodes[0].type = S_IFDIR;
	if (has_btime(&st))
		e->nodes[0].btime = st.stx_btime;
	hash_add_locked(e, 0);
	*out = e;
	return 0;
fail:
	nfs3_export_close(e);
	return rc;
}

void nfs3_export_close(struct nfs3_export *e)
{
	uint32_t i;

	if (!e)
		return;
	for (i = 0; i < e->nslots && e->nodes; i++)
		free(e->nodes[i].name);
	free(e->nodes);
	if (e->root_fd >= 0)
		close(e->root_fd);
	if (e->proc_fd >= 0)
		close(e->proc_fd);
	pthread_mutex_destroy(&e->lock);
	free(e->path);
	free(e);
}

const char *nfs3_export_path(const struct nfs3_export *e)
{
	return e->path;
}

uint64_t nfs3_export_fsid(const struct nfs3_export *e)
{
	return (uint64_t)e->dev_major << 32 | e->dev_minor;
}

const char *nfs3_export_writeverf(const struct nfs3_export *e)
{
	return e->writeverf;
}

int nfs3_export_root_fd(const struct nfs3_export *e)
{
	return e->root_fd;
}

int nfs3_export_proc_fd(const struct nfs3_export *e)
{
	return e->proc_fd;
}

unsigned int nfs3_export_nodes(struct nfs3_export *e)
{
	unsigned int n;

	pthread_mutex_lock(&e->lock);
	n = e->live;
	pthread_mutex_unlock(&e->lock);
	return n;
}

int nfs3_export_root_fh(struct nfs3_export *e, nfs_fh3 *out)
{
	uint64_t id, ino;

	pthread_mutex_lock(&e->lock);
	id = node_id(e, 0);
	ino = e->nodes[0].ino;
	pthread_mutex_unlock(&e->lock);
	return fh_alloc(e, id, ino, out);
}

/* Down the path's directories from the root; the last component is not opened. */
static int path_walk(const struct nfs3_export *e, const struct node_path *p, int *dirfd)
{
	int fd = e->root_fd, next, err;
	unsigned int i;

	for (i = 0; i + 1 < p->depth; i++) {
		next = openat(fd, p->buf + p->off[i], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		err = errno;
		if (fd != e->root_fd)
			close(fd);
		if (next < 0)
			return -err;
		fd = next;
	}
	*dirfd = fd;
	return 0;
}

/* A name that is no longer where the table saw it: the handle is stale. */
static nfsstat3 walk_status(int rc)
{
	if (rc == -ENOENT || rc == -ENOTDIR || rc == -ELOOP || rc == -ESTALE)
		return NFS3ERR_STALE;
	return nfs3_errno(-rc);
}

nfsstat3 nfs3_obj_get(struct nfs3_export *e, const nfs_fh3 *fh, struct nfs3_obj *obj)
{
	struct nfs3_fh_name fn;
	struct node_path path;
	struct nfs3_node node;
	nfsstat3 status;
	int rc;

	status = nfs3_fh_decode(&e->key, fh, &fn);
	if (status != NFS3_OK)
		return status;
	pthread_mutex_lock(&e->lock);
	rc = node_get_locked(e, fn.node, fn.ino, &node);
	if (!rc)
		rc = node_path_locked(e, (uint32_t)fn.node, &path);
	pthread_mutex_unlock(&e->lock);
	if (rc)
		return NFS3ERR_STALE;
	obj->e = e;
	obj->slot = (uint32_t)fn.node;
	rc = path_walk(e, &path, &obj->dirfd);
	if (rc)
		return walk_status(rc);
	if (path.depth)
		strcpy(obj->name, path.buf + path.off[path.depth - 1]);
	else
		strcpy(obj->name, ".");
	rc = nfs3_obj_restat(obj);
	if (!rc && (!node_is(&node, &obj->st) || !same_dev(e, &obj->st)))
		rc = -ESTALE;
	if (rc) {
		nfs3_obj_put(obj);
		return walk_status(rc);
	}
	return NFS3_OK;
}

void nfs3_obj_put(struct nfs3_obj *obj)
{
	if (obj->dirfd >= 0 && obj->dirfd != obj->e->root_fd)
		close(obj->dirfd);
	obj->dirfd = -1;
}

bool nfs3_obj_is_root(const struct nfs3_obj *obj)
{
	return obj->slot == 0;
}

int nfs3_obj_open(const struct nfs3_obj *obj, int flags)
{
	struct statx st;
	int fd, err;

	fd = openat(obj->dirfd, obj->name, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_INO, &st)) {
		err = errno;
		close(fd);
		return -err;
	}
	if (st.stx_ino != obj->st.stx_ino || !same_dev(obj->e, &st)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int nfs3_obj_restat(struct nfs3_obj *obj)
{
	if (statx(obj->dirfd, obj->name, AT_SYMLINK_NOFOLLOW, NFS3_STATX_MASK, &obj->st))
		return -errno;
	return 0;
}

int nfs3_obj_fh(const struct nfs3_obj *obj, nfs_fh3 *out)
{
	struct nfs3_export *e = obj->e;
	uint64_t id, ino;

	pthread_mutex_lock(&e->lock);
	id = node_id(e, obj->slot);
	ino = e->nodes[obj->slot].ino;
	pthread_mutex_unlock(&e->lock);
	return fh_alloc(e, id, ino, out);
}

nfsstat3 nfs3_obj_parent_fh(const struct nfs3_obj *obj, nfs_fh3 *out)
{
	struct nfs3_export *e = obj->e;
	uint32_t parent;
	uint64_t id = 0, ino = 0;
	bool live;

	pthread_mutex_lock(&e->lock);
	parent = e->nodes[obj->slot].parent;
	live = e->nodes[obj->slot].type && e->nodes[parent].type;
	if (live) {
		id = node_id(e, parent);
		ino = e->nodes[parent].ino;
	}
	pthread_mutex_unlock(&e->lock);
	if (!live)
		return NFS3ERR_STALE;
	return fh_alloc(e, id, ino, out) ? NFS3ERR_SERVERFAULT : NFS3_OK;
}

/* Point @slot at @name in @parent; false when memory is short. */
static bool node_rename_locked(struct nfs3_export *e, uint32_t slot, uint32_t parent,
			       const char *name)
{
	struct nfs3_node *n = &e->nodes[slot];
	char *copy;

	if (n->parent == parent && n->name && strcmp(n->name, name) == 0)
		return true;
	copy = strdup(name);
	if (!copy)
		return false;
	free(n->name);
	n->name = copy;
	n->parent = parent;
	return true;
}

/* The node of @st, made or moved to @name in @parent; NODE_NONE when none can be had. */
static uint32_t node_bind_locked(struct nfs3_export *e, uint32_t parent, const char *name,
				 const struct statx *st)
{
	uint32_t slot = node_find_locked(e, st->stx_ino);
	struct nfs3_node *n;
	char *copy;

	/* The inode was reused by another file: the old one's handles go stale. */
	if (slot != NODE_NONE && slot != 0 && !node_is(&e->nodes[slot], st)) {
		node_free_locked(e, slot);
		slot = NODE_NONE;
	}
	if (slot == 0)
		return 0;	/* the root, seen through a name in itself (a bind mount) */
	if (slot != NODE_NONE) {
		if (node_rename_locked(e, slot, parent, name))
			return slot;
		node_free_locked(e, slot);
		return NODE_NONE;
	}
	copy = strdup(name);
	if (!copy)
		return NODE_NONE;
	slot = node_alloc_locked(e);
	if (slot == NODE_NONE) {
		free(copy);
		return NODE_NONE;
	}
	n = &e->nodes[slot];
	n->name = copy;
	n->ino = st->stx_ino;
	n->type = st->stx_mode & S_IFMT;
	n->btime = has_btime(st) ? st->stx_btime : (struct statx_timestamp){ 0 };
	n->parent = parent;
	e->live++;
	hash_add_locked(e, slot);
	return slot;
}

nfsstat3 nfs3_node_bind(const struct nfs3_obj *dir, const char *name, const struct statx *st,
			nfs_fh3 *out)
{
	struct nfs3_export *e = dir->e;
	uint32_t slot;
	uint64_t id = 0;

	if (!same_dev(e, st))
		return NFS3ERR_ACCES;
	pthread_mutex_lock(&e->lock);
	slot = node_bind_locked(e, dir->slot, name, st);
	if (slot != NODE_NONE)
		id = node_id(e, slot);
	pthread_mutex_unlock(&e->lock);
	if (slot == NODE_NONE)
		return NFS3ERR_SERVERFAULT;
	return fh_alloc(e, id, st->stx_ino, out) ? NFS3ERR_SERVERFAULT : NFS3_OK;
}

void nfs3_node_unbind(const struct nfs3_obj *dir, const char *name, const struct statx *st)
{
	struct nfs3_export *e = dir->e;
	uint32_t slot;

	pthread_mutex_lock(&e->lock);
	slot = node_find_locked(e, st->stx_ino);
	/* A node last seen under another name (a hard link) keeps it. */
	if (slot != NODE_NONE && slot != 0 && e->nodes[slot].parent == dir->slot &&
	    strcmp(e->nodes[slot].name, name) == 0)
		node_free_locked(e, slot);
	pthread_mutex_unlock(&e->lock);
}

void nfs3_node_move(const struct nfs3_obj *to, const char *tname, const struct statx *st)
{
	struct nfs3_export *e = to->e;
	uint32_t slot;

	pthread_mutex_lock(&e->lock);
	slot = node_find_locked(e, st->stx_ino);
	if (slot != NODE_NONE && slot != 0 && !node_rename_locked(e, slot, to->slot, tname))
		node_free_locked(e, slot);
	pthread_mutex_unlock(&e->lock);
}

nfsstat3 nfs3_name_check(const char *name)
{
	size_t len;

	if (!name || !*name)
		return NFS3ERR_NOENT;
	len = strnlen(name, NAME_MAX + 1);
	if (len > NAME_MAX)
		return NFS3ERR_NAMETOOLONG;
	/* A name is one component: a path would walk where the table does not look. */
	if (memchr(name, '/', len))
		return NFS3ERR_ACCES;
	return NFS3_OK;
}

bool nfs3_name_is_dot(const char *name)
{
	return strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
}

nfsstat3 nfs3_errno(int err)
{
	switch (err) {
	case 0:
		return NFS3_OK;
	case EPERM:
		return NFS3ERR_PERM;
	case ENOENT:
		return NFS3ERR_NOENT;
	case ENXIO:
		return NFS3ERR_NXIO;
	case EACCES:
		return NFS3ERR_ACCES;
	case EEXIST:
		return NFS3ERR_EXIST;
	case EXDEV:
		return NFS3ERR_XDEV;
	case ENODEV:
		return NFS3ERR_NODEV;
	case ENOTDIR:
		return NFS3ERR_NOTDIR;
	case EISDIR:
		return NFS3ERR_ISDIR;
	case EINVAL:
	case ELOOP:	/* a symbolic link where the server does not follow one */
		return NFS3ERR_INVAL;
	case EFBIG:
		return NFS3ERR_FBIG;
	case ENOSPC:
		return NFS3ERR_NOSPC;
	case EROFS:
		return NFS3ERR_ROFS;
	case EMLINK:
		return NFS3ERR_MLINK;
	case ENAMETOOLONG:
		return NFS3ERR_NAMETOOLONG;
	case ENOTEMPTY:
		return NFS3ERR_NOTEMPTY;
	case EDQUOT:
		return NFS3ERR_DQUOT;
	case ESTALE:
		return NFS3ERR_STALE;
	case ENOTSUP:
		return NFS3ERR_NOTSUPP;
	case ENOMEM:
		return NFS3ERR_SERVERFAULT;
	default:
		return NFS3ERR_IO;
	}
}
