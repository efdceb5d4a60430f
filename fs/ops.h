/*
 * ops.h — the FUSE operations table over an mkfs root object.
 *
 * Every operation resolves its path with mk_resolve (nodes.h), does its
 * work through a handle (handles.h) or a node function, and on failure
 * maps the core code to an errno (errno_map.h) and adds one /errors line.
 */
#ifndef MK_OPS_H
#define MK_OPS_H

#define FUSE_USE_VERSION 312
#include <fuse.h>
#include <fuse_lowlevel.h>

#include "nodes.h"

extern const struct fuse_operations mk_fuse_ops;

/* Release every handle the kernel never released (after the loop). */
void mk_fs_release_all(mkfs *fs);

/* The /README text. */
extern const char mk_readme_text[];

#endif
