/* The /groups part of the node table, without a mount: resolution of group
 * and member paths, control lines, the whole-write commit, value texts,
 * and a poll:follow read that parks instead of waiting. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cluster.h"
#include "errno_map.h"
#include "group.h"
#include "nodes.h"
#include "poll.h"
#include "producer.h"
#include "testlib_fs.h"

typedef tl_fs fixture;

static int setup(void **state)
{
	mk_config cfg;
	tl_config(&cfg, 1);
	fixture *f = tl_fs_open("nodes-groups", &cfg, TL_FS_GROUPS);
	tl_create_topic(f->c, "t", 2, 1, NULL, NULL);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	tl_fs_close(*state);
	return 0;
}

/* Write text to path as one write(); the errno it gives. */
static int write_to(fixture *f, const char *path, const char *text)
{
	node_ref ref;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_resolve(&f->fs, path, &ref, &why);
	if (!err)
		err = tl_fs_control(&f->fs, &ref, text, strlen(text), &why);
	mk_node_ref_release(&ref);
	mk_strbuf_release(&why);
	return mk_errno(err);
}

/* Read a value file into out (caller frees); the errno. */
static int read_from(fixture *f, const char *path, char **out)
{
	node_ref ref;
	mk_strbuf why = MK_STRBUF_INIT, text = MK_STRBUF_INIT;
	mk_err err = mk_resolve(&f->fs, path, &ref, &why);
	if (!err)
		err = ref.def->read(&f->fs, &ref, &text, &why);
	mk_node_ref_release(&ref);
	mk_strbuf_release(&why);
	mk_strbuf_addstr(&text, "");
	*out = mk_strbuf_detach(&text, NULL);
	return mk_errno(err);
}

static void assert_reads(fixture *f, const char *path, const char *want)
{
	char *got;
	assert_int_equal(read_from(f, path, &got), 0);
	assert_string_equal(got, want);
	free(got);
}

static void resolves_group_paths(void **state)
{
	fixture *f = *state;
	assert_int_equal(mk_errno(tl_fs_mkdir(&f->fs, "/groups/g", NULL)), 0);
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(mk_errno(tl_fs_mkdir(&f->fs, "/groups/g", &why)), EEXIST);
	mk_strbuf_release(&why);
	assert_int_equal(write_to(f, "/groups/g/join", "m1 t"), 0);
	static const char *const ok[] = {
		"/groups", "/groups/g", "/groups/g/join", "/groups/g/state",
		"/groups/g/members", "/groups/g/members/m1", "/groups/g/members/m1/poll",
		"/groups/g/members/m1/poll:tsv:max=3", "/groups/g/members/m1/commit",
		"/groups/g/config",
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		node_ref ref;
		if (mk_resolve(&f->fs, ok[i], &ref, NULL))
			fail_msg("%s did not resolve", ok[i]);
		mk_node_ref_release(&ref);
	}
	static const char *const bad[] = {
		"/groups/h", "/groups/g/members/m2", "/groups/g/members/m1/pollx",
		"/groups/g/nope", "/groups/g/members/m1/poll@1",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		node_ref ref;
		if (!mk_resolve(&f->fs, bad[i], &ref, NULL))
			fail_msg("%s resolved", bad[i]);
	}
	node_ref ref;
	assert_int_equal(mk_resolve(&f->fs, "/groups/g/members/m1/poll:json", &ref, NULL), MK_OK);
	assert_string_equal(ref.group, "g");
	assert_string_equal(ref.member, "m1");
	assert_int_equal(ref.def->type, NODE_POLL);
	mk_node_ref_release(&ref);
}

static void commit_is_one_write(void **state)
{
	fixture *f = *state;
	assert_int_equal(mk_errno(tl_fs_mkdir(&f->fs, "/groups/g", NULL)), 0);
	assert_int_equal(write_to(f, "/groups/g/join", "m1 t"), 0);
	assert_reads(f, "/groups/g/members/m1/assignment", "t/0\nt/1\n");
	assert_reads(f, "/groups/g/generation", "1\n");
	/* A bad second line refuses the whole write, the first line too. */
	assert_int_equal(write_to(f, "/groups/g/members/m1/commit", "t/0 0\nt/5 0\n"), EPERM);
	assert_int_equal(write_to(f, "/groups/g/members/m1/commit", "t/0 0\nbad\n"), EINVAL);
	assert_int_equal(write_to(f, "/groups/g/members/m1/commit", "generation=0\n"), ESTALE);
	assert_reads(f, "/groups/g/offsets", "");
	assert_int_equal(write_to(f, "/groups/g/members/m1/commit", "generation=1\nt/0 0\nt/1 0\n"), 0);
	assert_reads(f, "/groups/g/offsets", "t 0 0\nt 1 0\n");
	assert_int_equal(write_to(f, "/groups/g/members/m1/commit", "\n"), 0);
	assert_int_equal(write_to(f, "/groups/g/heartbeat", "m1 0"), ESTALE);
	assert_int_equal(write_to(f, "/groups/g/heartbeat", "m1 1"), 0);
	assert_int_equal(write_to(f, "/groups/g/members/m1/seek", "t/1 1"), ERANGE);
	assert_int_equal(write_to(f, "/groups/g/config", "max.poll.records=2"), 0);
	assert_reads(f, "/groups/g/config",
		     "auto.offset.reset=earliest\nsession.timeout.ms=10000\nmax.poll.records=2\n");
	assert_int_equal(write_to(f, "/ctl", "expire-members"), 0);
	assert_int_equal(write_to(f, "/clock", "+10001"), 0);
	assert_int_equal(write_to(f, "/ctl", "expire-members"), 0);
	assert_reads(f, "/groups/g/generation", "2\n");
	assert_int_equal(mk_errno(tl_fs_rmdir(&f->fs, "/groups/g", NULL)), 0);
	node_ref ref;
	assert_int_equal(mk_resolve(&f->fs, "/groups/g", &ref, NULL), MK_UNKNOWN_TOPIC_OR_PARTITION);
}

/* Open path as the daemon does (the handle takes the reference). */
static mk_handle *hopen(fixture *f, const char *path, int flags)
{
	node_ref ref;
	assert_int_equal(mk_resolve(&f->fs, path, &ref, NULL), MK_OK);
	mk_handle *h = NULL;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_handle_open(&f->fs, &ref, path, flags, &h, &why);
	mk_node_ref_release(&ref);
	if (err)
		fail_msg("open %s: %s: %s", path, mk_err_name(err), why.buf);
	mk_strbuf_release(&why);
	return h;
}

/*
 * A poll:follow read with nothing new parks: its wait names the
 * partition the next poll starts at, from its change count, and is
 * looked at again every MK_POLL_RECHECK_MS (an assignment changes
 * without it). Read again after an append there, it returns the record.
 */
static void poll_follow_parks(void **state)
{
	fixture *f = *state;
	f->fs.producers = mk_producers_new(f->c);
	assert_int_equal(mk_errno(tl_fs_mkdir(&f->fs, "/groups/g", NULL)), 0);
	assert_int_equal(write_to(f, "/groups/g/join", "m1 t"), 0);
	mk_handle *h = hopen(f, "/groups/g/members/m1/poll:follow", O_RDONLY);
	mk_strbuf why = MK_STRBUF_INIT;
	mk_wait wait;
	char buf[64];
	size_t n = 99;
	assert_int_equal(mk_handle_read(&f->fs, h, buf, sizeof(buf), 0, &wait,
					&n, &why), MK_OK);
	assert_int_equal(n, 0);
	assert_int_equal(wait.kind, MK_WAIT_DATA);
	assert_non_null(wait.p);
	assert_int_equal(wait.seen, mk_partition_seq(wait.p));
	assert_int_equal(wait.recheck_ms, MK_POLL_RECHECK_MS);
	assert_int_equal(wait.deadline_ms, INT64_MAX);
	char path[64];
	snprintf(path, sizeof(path), "/topics/t/%d/append",
		 mk_partition_id(wait.p));
	mk_handle *a = hopen(f, path, O_WRONLY);
	assert_int_equal(tl_fs_write(f, a, "r\n", 2, &why), MK_OK);
	tl_fs_close_handle(f, a);
	assert_true(mk_partition_seq(wait.p) != wait.seen);   /* the event */
	assert_int_equal(tl_fs_read(f, h, buf, sizeof(buf), 0, &n, &why), MK_OK);
	assert_int_equal(n, 2);
	assert_memory_equal(buf, "r\n", 2);
	tl_fs_close_handle(f, h);
	mk_strbuf_release(&why);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(resolves_group_paths),
		T(commit_is_one_write),
		T(poll_follow_parks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
