/* SPDX-License-Identifier: MIT */
/*
 * The export: one directory, and the table of the nodes below it that
 * clients hold handles for.
 *
 * A node is a file or directory the server has named to a client (by
 * LOOKUP, CREATE, READDIRPLUS, ...): its inode number, its type, and where
 * it was last seen, as a parent node and a name. A handle names a node
 * (fh.h); resolving it walks from the export's root down the node's names,
 * one component at a time with openat(O_PATH | O_NOFOLLOW), and then checks
 * that what it found is the node's inode. So nothing is reached but by
 * names inside the export, a symbolic link is never followed on the server
 * (a link met on the way is not a directory: openat fails), ".." is
 * answered from the table (the root's is the root), and a handle whose
 * file is gone, or was replaced, is stale.
 *
 * The table holds at most max_nodes nodes; a node goes when the server
 * removes its name (REMOVE, RMDIR, a RENAME over it). Thread-safe: one lock
 * guards the table, held for copies only, never across a system call.
 */
#ifndef NFS3_EXPORT_H
#define NFS3_EXPORT_H

#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "fh.h"
#include "nfs3_prot.h"

/* Directory levels below the root a node may lie at. */
#define NFS3_MAX_DEPTH 128
/* The default size of the node table. */
#define NFS3_DEFAULT_MAX_NODES (1u << 20)

/* What statx() is asked for everywhere. */
#define NFS3_STATX_MASK (STATX_BASIC_STATS | STATX_BTIME)

struct nfs3_export;

/**
 * nfs3_export_open - open a directory for export
 * @path: the directory (absolute, or relative to the working directory)
 * @max_nodes: the node table's size (0: NFS3_DEFAULT_MAX_NODES)
 * @out: set to the export
 *
 * Returns 0, or -errno (-ENOTDIR when @path is not a directory).
 */
int nfs3_export_open(const char *path, unsigned int max_nodes, struct nfs3_export **out);
void nfs3_export_close(struct nfs3_export *e);

/* The path the export was opened with, made absolute: what MNT asks for. */
const char *nfs3_export_path(const struct nfs3_export *e);
/* fattr3.fsid of every object of the export. */
uint64_t nfs3_export_fsid(const struct nfs3_export *e);
/* The WRITE and COMMIT verifier: changes when the server restarts. */
const char *nfs3_export_writeverf(const struct nfs3_export *e);
/* The directory's descriptor (O_PATH), for statfs-like questions. */
int nfs3_export_root_fd(const struct nfs3_export *e);
/*
 * "/proc" (O_PATH), opened before any caller's identity is taken on: the
 * path "/proc/self/fd/N" would be walked from "/" as the caller, and a
 * root directory the caller may not search (a chroot made by mktemp is
 * 0700) would turn every SETATTR of mode or size into NFS3ERR_ACCES.
 */
int nfs3_export_proc_fd(const struct nfs3_export *e);
/* Nodes in the table now. */
unsigned int nfs3_export_nodes(struct nfs3_export *e);

/* A root handle, as MNT returns it; @out's data is malloc()ed. 0 or -ENOMEM. */
int nfs3_export_root_fh(struct nfs3_export *e, nfs_fh3 *out);

/**
 * struct nfs3_obj - what a handle names, resolved
 * @e: the export
 * @slot: its node
 * @dirfd: the directory that holds it (O_PATH; the root's is the root)
 * @name: its name there ("." for the root)
 * @st: its attributes when it was resolved
 */
struct nfs3_obj {
	struct nfs3_export *e;
	uint32_t slot;
	int dirfd;
	char name[NAME_MAX + 1];
	struct statx st;
};

/**
 * nfs3_obj_get - resolve a handle from a client
 * @e: the export
 * @fh: the handle
 * @obj: filled; release with nfs3_obj_put() when NFS3_OK
 *
 * Runs with the server's own credentials: a handle is a capability, as
 * with knfsd's no_subtree_check. Returns NFS3_OK, NFS3ERR_BADHANDLE (not a
 * handle of this server), NFS3ERR_STALE (its node or file is gone), or the
 * error of a failed walk (NFS3ERR_ACCES, NFS3ERR_IO, ...).
 */
nfsstat3 nfs3_obj_get(struct nfs3_export *e, const nfs_fh3 *fh, struct nfs3_obj *obj);
void nfs3_obj_put(struct nfs3_obj *obj);

/* Whether @obj is the export's root. */
bool nfs3_obj_is_root(const struct nfs3_obj *obj);

/**
 * nfs3_obj_open - open the resolved object
 * @obj: the object
 * @flags: open(2) flags; O_NOFOLLOW, O_NONBLOCK, O_NOCTTY and O_CLOEXEC are
 *	added
 *
 * With the caller's credentials in force (cred.h) the open checks their
 * permission. Returns a descriptor of the very inode resolved, or -errno
 * (-ESTALE when the name now holds another file).
 */
int nfs3_obj_open(const struct nfs3_obj *obj, int flags);

/* Attributes of @obj again (after a change); 0 or -errno. */
int nfs3_obj_restat(struct nfs3_obj *obj);

/* The handle of @obj, in @out (malloc()ed); 0 or -ENOMEM. */
int nfs3_obj_fh(const struct nfs3_obj *obj, nfs_fh3 *out);

/*
 * The handle of the directory that holds @obj (the root's is the root) in
 * @out, malloc()ed: what LOOKUP of ".." answers. NFS3_OK, NFS3ERR_STALE or
 * NFS3ERR_SERVERFAULT.
 */
nfsstat3 nfs3_obj_parent_fh(const struct nfs3_obj *obj, nfs_fh3 *out);

/**
 * nfs3_node_bind - give a node (and a handle) to a name in a directory
 * @dir: the directory, resolved
 * @name: a name in it, already checked (nfs3_name_check())
 * @st: what statx() said of it, AT_SYMLINK_NOFOLLOW
 * @out: set to its handle, malloc()ed
 *
 * The inode's node, if it has one, moves to this name; otherwise one is
 * made. Returns NFS3_OK, NFS3ERR_ACCES for an inode of another file system
 * (the export does not cross mount points), NFS3ERR_SERVERFAULT when the
 * table is full or memory is short.
 */
nfsstat3 nfs3_node_bind(const struct nfs3_obj *dir, const char *name, const struct statx *st,
			nfs_fh3 *out);

/* @name in @dir, whose inode @st was, is gone: its node goes (stale handles). */
void nfs3_node_unbind(const struct nfs3_obj *dir, const char *name, const struct statx *st);

/* The file @st was renamed to @tname in @to: its node follows. */
void nfs3_node_move(const struct nfs3_obj *to, const char *tname, const struct statx *st);

/**
 * nfs3_name_check - the checks a file name from a client must pass
 * @name: the name (NUL-terminated by XDR)
 *
 * Returns NFS3_OK for a component the server may look up or create: not
 * empty, no '/', at most NAME_MAX bytes (NFS3ERR_NAMETOOLONG). "." and ".."
 * pass; each procedure decides what they mean for it.
 */
nfsstat3 nfs3_name_check(const char *name);

/* Whether @name is "." or "..". */
bool nfs3_name_is_dot(const char *name);

/* The NFS status for an errno of a file-system call. */
nfsstat3 nfs3_errno(int err);

#endif /* NFS3_EXPORT_H */
