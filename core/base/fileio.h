/*
 * fileio.h — small durable-file helpers shared by every module that keeps
 * state on disk.
 *
 * mk_file_replace() is the one way state files change: write a temporary
 * sibling, fsync it, rename it over the target, fsync the directory. A crash
 * at any instant leaves either the old or the new contents, never a mix.
 */
#ifndef MK_FILEIO_H
#define MK_FILEIO_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "strbuf.h"

/* Atomically replace path with data. */
mk_err mk_file_replace(const char *path, const void *data, size_t len);
/*
 * The same, with crash points named PREFIX.after-write (the temporary file
 * written, not fsynced), PREFIX.after-fsync, PREFIX.after-rename (the
 * directory not yet fsynced) and PREFIX.done.
 */
mk_err mk_file_replace_fp(const char *path, const void *data, size_t len,
			  const char *prefix);
/* Read a whole file. ENOENT is reported as *missing = true, MK_OK. */
mk_err mk_file_read(const char *path, mk_strbuf *out, bool *missing);
/* fsync a directory so that renames and creations in it are durable. */
mk_err mk_fsync_dir(const char *dir);
/* mkdir -p; existing directories are fine. Each directory it creates is
 * fsynced into its parent. */
mk_err mk_mkdirs(const char *path);
/*
 * Ask the file system to place dir's subdirectories apart from each other
 * (ext2/3/4: the FS_TOPDIR_FL attribute, `chattr +T`, read by the Orlov
 * allocator: each new subdirectory goes to a block group of its own
 * choosing instead of its parent's). A hint, for a directory whose
 * subdirectories are unrelated trees (a broker's partition directories):
 * false when the file system has no such attribute or refused it, which
 * changes nothing else. Already set: no write.
 */
bool mk_dir_spread_subdirs(const char *dir);
/* rm -rf of a directory we own. */
mk_err mk_remove_tree(const char *path);
/* Write all of buf at off, retrying short writes and EINTR. */
mk_err mk_pwrite_all(int fd, const void *buf, size_t len, long long off);
/* Read exactly len bytes at off; a short file is CORRUPT_MESSAGE. */
mk_err mk_pread_all(int fd, void *buf, size_t len, long long off);

#endif
