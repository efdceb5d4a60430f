/*
 * testlib_fs.h — the fixture shared by the unit tests of fs/ that need no
 * mount (test_nodes.c, test_handles.c, test_nodes_groups.c): a cluster in
 * a temporary directory behind an mkfs root object, as the daemon makes
 * it, with the producer registry and the group coordinator where a test
 * asks for them. The core fixtures (testlib.h) come with it.
 *
 * Linked into every fs unit test (tests/meson.build). No state of its
 * own: each fixture is the caller's.
 */
#ifndef MK_TESTLIB_FS_H
#define MK_TESTLIB_FS_H

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

#endif
