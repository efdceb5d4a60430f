/*
 * testlib_fs.h — the fixture shared by the unit tests of fs/ that need no
 * mount (test_nodes.c, test_handles.c, test_nodes_groups.c): a cluster in
 * a temporary directory behind an mkfs root object, as the daemon makes
 * it, with the producer registry and the group coordinator where a test
 * asks for them, and the driver of handle calls that would park. The
 * core fixtures (testlib.h) come with it.
 *
 * Linked into every fs unit test (tests/meson.build). No state of its
 * own: each fixture is the caller's.
 */
#ifndef MK_TESTLIB_FS_H
#define MK_TESTLIB_FS_H

#include "handles.h"
#include "nodes.h"
#include "testlib.h"

typedef struct {
	char dir[64];            /* the data directory (removed at close) */
	mk_cluster *c;
	mkfs fs;                 /* fs.cluster == c; readme "readme\n" */
} tl_fs;

/* What tl_fs_open also makes, beside the cluster. */
enum {
	TL_FS_PRODUCERS = 1 << 0,   /* fs.producers (mk_producers_new) */
	TL_FS_GROUPS = 1 << 1,      /* fs.groups (mk_groups_open) */
};

/* Open a cluster with cfg in /tmp/mk-test-TAG-XXXXXX behind a fresh mkfs
 * root; asserts (cmocka) every step. Free with tl_fs_close. */
tl_fs *tl_fs_open(const char *tag, const mk_config *cfg, unsigned with);
/* Free what tl_fs_open made, the cluster's directory included. */
void tl_fs_close(tl_fs *f);

/*
 * Handle calls driven past their waits, as the parking lot drives a
 * parked request (park.h), without a mount: while a call leaves its wait
 * pending, make the event it watches come (tl_await_change: an explicit
 * fetch round, or the fetchers' own change), then resume it
 * (mk_handle_resume; a read reads again). Each asserts that the call
 * completes within TL_ROUNDS events and returns its result.
 */
/* The rest of a call (write, fsync) that returned err with *wait. */
mk_err tl_fs_settle(tl_fs *f, mk_handle *h, mk_wait *wait, mk_err err,
		    mk_strbuf *why);
mk_err tl_fs_write(tl_fs *f, mk_handle *h, const char *buf, size_t size,
		   mk_strbuf *why);
mk_err tl_fs_fsync(tl_fs *f, mk_handle *h, mk_strbuf *why);
mk_err tl_fs_read(tl_fs *f, mk_handle *h, char *buf, size_t size,
		  long long off, size_t *n, mk_strbuf *why);
/* The last close as the daemon makes it: mk_handle_close_begin, its
 * acknowledgements settled (an error goes to /errors, "at the last
 * close"), then mk_handle_close. */
void tl_fs_close_handle(tl_fs *f, mk_handle *h);

/* A control write, mkdir and rmdir as the serving layer's jobs run them
 * (fs/ops.c): a coordinator call they leave pending is waited for
 * (mk_coord_call_wait), then the write goes on with its next line. */
mk_err tl_fs_control(mkfs *fs, const node_ref *ref, const char *buf,
		     size_t len, mk_strbuf *why);
mk_err tl_fs_mkdir(mkfs *fs, const char *path, mk_strbuf *why);
mk_err tl_fs_rmdir(mkfs *fs, const char *path, mk_strbuf *why);

#endif
