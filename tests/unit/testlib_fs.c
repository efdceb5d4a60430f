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

/* What a pending wait watches, made to come (see tl_await_change). */
static void await_wait(tl_fs *f, const mk_wait *wait)
{
	if (wait->coord)
		tl_await_coord(f->c, wait->coord, wait->seen);
	else if (wait->p)
		tl_await_change(f->c, wait->p, wait->seen,
				wait->has_ticket ? &wait->ticket : NULL);
	else
		mk_cluster_replicate(f->c, NULL);
}

mk_err tl_fs_settle(tl_fs *f, mk_handle *h, mk_wait *wait, mk_err err,
		    mk_strbuf *why)
{
	for (int round = 0; !err && mk_wait_pending(wait); round++) {
		if (round == TL_ROUNDS)
			fail_msg("%s: still waiting after %d rounds", h->path, round);
		await_wait(f, wait);
		mk_strbuf_reset(why);    /* as each parked look starts afresh */
		err = mk_handle_resume(&f->fs, h, wait, why);
	}
	return err;
}

mk_err tl_fs_write(tl_fs *f, mk_handle *h, const char *buf, size_t size,
		   mk_strbuf *why)
{
	mk_wait wait;
	mk_err err = mk_handle_write(&f->fs, h, buf, size, &wait, why);
	return tl_fs_settle(f, h, &wait, err, why);
}

mk_err tl_fs_fsync(tl_fs *f, mk_handle *h, mk_strbuf *why)
{
	mk_wait wait;
	mk_err err = mk_handle_fsync(&f->fs, h, &wait, why);
	return tl_fs_settle(f, h, &wait, err, why);
}

mk_err tl_fs_read(tl_fs *f, mk_handle *h, char *buf, size_t size,
		  long long off, size_t *n, mk_strbuf *why)
{
	mk_wait wait;
	for (int round = 0;; round++) {
		mk_err err = mk_handle_read(&f->fs, h, buf, size, off, &wait, n, why);
		if (err || !mk_wait_pending(&wait))
			return err;
		if (round == TL_ROUNDS)
			fail_msg("%s: still following after %d rounds", h->path, round);
		await_wait(f, &wait);
	}
}

void tl_fs_close_handle(tl_fs *f, mk_handle *h)
{
	mk_wait wait;
	if (!mk_handle_close_begin(h, &wait)) {
		mk_strbuf why = MK_STRBUF_INIT;
		mk_err err = tl_fs_settle(f, h, &wait, MK_OK, &why);
		if (err)
			mk_errlog_add(&f->c->errlog, mk_clock_now(&f->c->clock),
				      h->path, err, "at the last close: %s",
				      why.len ? why.buf : mk_err_name(err));
		mk_strbuf_release(&why);
	}
	mk_handle_close(h);
}

mk_err tl_fs_control(mkfs *fs, const node_ref *ref, const char *buf,
		     size_t len, mk_strbuf *why)
{
	mk_coord_call call = { 0 };
	size_t done = 0;
	mk_err err = mk_node_control(fs, ref, buf, len, &done, &call, why);
	while (!err && (err = mk_coord_call_wait(&call, why)) == MK_OK && done < len)
		err = mk_node_control(fs, ref, buf, len, &done, &call, why);
	return err;
}

mk_err tl_fs_mkdir(mkfs *fs, const char *path, mk_strbuf *why)
{
	mk_coord_call call = { 0 };
	mk_err err = mk_node_mkdir(fs, path, &call, why);
	return err ? err : mk_coord_call_wait(&call, why);
}

mk_err tl_fs_rmdir(mkfs *fs, const char *path, mk_strbuf *why)
{
	mk_coord_call call = { 0 };
	mk_err err = mk_node_rmdir(fs, path, &call, why);
	return err ? err : mk_coord_call_wait(&call, why);
}
