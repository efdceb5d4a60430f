/*
 * inodes.h — the inode numbers the kernel knows, each naming one path.
 *
 * The low-level FUSE API speaks in inode numbers; the tree (nodes.h) is
 * resolved by path. This table is the only bridge: lookup gives a path an
 * inode number (the same one while the kernel remembers it) and counts the
 * kernel's references; forget drops them, and a path nobody references
 * leaves the table. Inode 1 is the root, "/", forever. Nothing here knows
 * what a path means: every operation resolves the path again, so the node
 * table stays the one resolver.
 *
 * Locking: one mutex guards the table; calls are short and take no other
 * lock.
 */
#ifndef MK_INODES_H
#define MK_INODES_H

#include <stdbool.h>
#include <stdint.h>

#include "strbuf.h"

typedef struct mk_inodes mk_inodes;

mk_inodes *mk_inodes_new(void);
void mk_inodes_free(mk_inodes *t);
/* The inode of path, with one more kernel reference (created if new). */
uint64_t mk_inodes_ref(mk_inodes *t, const char *path);
/* Append the path of ino to out; false when the number is unknown. */
bool mk_inodes_path(mk_inodes *t, uint64_t ino, mk_strbuf *out);
/* The kernel forgot n references. */
void mk_inodes_forget(mk_inodes *t, uint64_t ino, uint64_t n);
/* How many inodes the table holds (root included), for tests. */
size_t mk_inodes_count(mk_inodes *t);

#endif
