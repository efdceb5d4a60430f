/* testlib_fs.c — see testlib_fs.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "group.h"
#include "producer.h"
#include "testlib_fs.h"

tl_fs *tl_fs_open(const char *tag, const mk_config *cfg, unsigned with)
{
	tl_fs *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	tl_tmpdir(f->dir, sizeof(f->dir), tag);
	f->c = tl_cluster_open(f->dir, cfg);
	f->fs.cluster = f->c;
	f->fs.readme = (char *)"readme\n";
	if (with & TL_FS_PRODUCERS)
		f->fs.producers = mk_producers_new(f->c);
	if (with & TL_FS_GROUPS)
		assert_int_equal(mk_groups_open(f->c, &f->fs.groups, NULL), MK_OK);
	return f;
}

void tl_fs_close(tl_fs *f)
{
	if (!f)
		return;
	if (f->fs.producers)
		mk_producers_free(f->fs.producers);
	if (f->fs.groups)
		mk_groups_close(f->fs.groups);
	mk_cluster_close(f->c);
	tl_rmtree(f->dir);
	free(f);
}
