/*
 * ops.h — the FUSE low-level operations table over an mkfs root object.
 *
 * Every operation turns its inode number into a path (inodes.h), resolves
 * it with mk_resolve (nodes.h), does its work through a handle (handles.h)
 * or a node function, and on failure maps the core code to an errno
 * (errno_map.h) and adds one /errors line. A request that must wait for
 * the cluster is parked (park.h), never waited for on a FUSE worker.
 */
#ifndef MK_OPS_H
#define MK_OPS_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include "nodes.h"

extern const struct fuse_lowlevel_ops mk_ll_ops;

/* Release every handle the kernel never released (after the loop). */
void mk_fs_release_all(mkfs *fs);
/*
 * A stop asked by signal (mount/main.c's handler; async-signal-safe): the
 * request loop ends (fuse_session_exit) once no step of paged records
 * waits in the kernel for reads (viewmemo.h); until then it goes on
 * serving them, and the last step to end ends it, waking the loop's
 * thread with SIGTERM (its handler is this again).
 */
void mk_fs_stop(mkfs *fs);

/* The /README text. */
extern const char mk_readme_text[];

#endif
