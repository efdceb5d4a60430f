/*
 * test_viewmemo.c — the known lengths of records views (fs/viewmemo.c):
 * a memo stands only for its identity (topic, partition, change count,
 * start), a paged open keeps the cache only from the second open of the
 * same memo on, descriptors of another identity make a new one a stream,
 * topic references are taken over and put back, and a full table forgets
 * its oldest unused memo.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "viewmemo.h"

/* A topic nobody frees: its reference count is looked at, never reaches 0. */
static mk_topic *fake_topic(mk_topic *t)
{
	memset(t, 0, sizeof(*t));
	atomic_store(&t->refs, 100);
	return t;
}

static int refs(mk_topic *t)
{
	return atomic_load(&t->refs);
}

/* learn takes a reference over: hand it one. */
static mk_topic *ref(mk_topic *t)
{
	atomic_fetch_add(&t->refs, 1);
	return t;
}

static void test_identity(void **state)
{
	(void)state;
	mk_topic ta, tb;
	fake_topic(&ta);
	fake_topic(&tb);
	mk_viewmemo *vm = mk_viewmemo_new();
	mk_view_id id = { &ta, 0, 7, 0 };
	long long size;
	int64_t end;
	bool keep;
	assert_false(mk_viewmemo_size(vm, "/topics/a/0/records", &ta, 0, 7, &size));
	assert_false(mk_viewmemo_open(vm, "/topics/a/0/records", &id, &size, &end, &keep));

	mk_viewmemo_learn(vm, "/topics/a/0/records", &id, 30, 3000, ref(&ta));
	assert_int_equal(refs(&ta), 101);      /* the memo holds one */
	assert_true(mk_viewmemo_size(vm, "/topics/a/0/records", &ta, 0, 7, &size));
	assert_int_equal(size, 3000);
	/* another change count, partition, topic or name: unknown */
	assert_false(mk_viewmemo_size(vm, "/topics/a/0/records", &ta, 0, 8, &size));
	assert_false(mk_viewmemo_size(vm, "/topics/a/0/records", &ta, 1, 7, &size));
	assert_false(mk_viewmemo_size(vm, "/topics/a/0/records", &tb, 0, 7, &size));
	assert_false(mk_viewmemo_size(vm, "/topics/a/0/records:tsv", &ta, 0, 7, &size));
	mk_view_id other = id;
	other.start = 5;
	assert_false(mk_viewmemo_open(vm, "/topics/a/0/records", &other, &size, &end, &keep));
	other = id;
	other.seq = 8;
	assert_false(mk_viewmemo_open(vm, "/topics/a/0/records", &other, &size, &end, &keep));

	/* The same text learnt again changes nothing; a new one replaces it
	 * and puts the old reference back. */
	mk_viewmemo_learn(vm, "/topics/a/0/records", &id, 30, 3000, ref(&ta));
	assert_int_equal(refs(&ta), 101);
	mk_view_id id2 = { &tb, 0, 9, 0 };
	mk_viewmemo_learn(vm, "/topics/a/0/records", &id2, 31, 3100, ref(&tb));
	assert_int_equal(refs(&ta), 100);
	assert_int_equal(refs(&tb), 101);
	assert_false(mk_viewmemo_size(vm, "/topics/a/0/records", &ta, 0, 7, &size));
	assert_true(mk_viewmemo_size(vm, "/topics/a/0/records", &tb, 0, 9, &size));
	assert_int_equal(size, 3100);
	mk_viewmemo_free(vm);
	assert_int_equal(refs(&tb), 100);
}

static void test_keep_cache(void **state)
{
	(void)state;
	mk_topic t;
	fake_topic(&t);
	mk_viewmemo *vm = mk_viewmemo_new();
	const char *p = "/topics/t/0/records";
	mk_view_id x = { &t, 0, 1, 0 };
	long long size;
	int64_t end;
	bool keep = true;
	mk_viewmemo_learn(vm, p, &x, 10, 100, ref(&t));
	/* The first paged open drops what the name had cached. */
	assert_true(mk_viewmemo_open(vm, p, &x, &size, &end, &keep));
	assert_false(keep);
	assert_int_equal(size, 100);
	assert_int_equal(end, 10);
	/* Later ones keep it, open at once or one after the other. */
	assert_true(mk_viewmemo_open(vm, p, &x, &size, &end, &keep));
	assert_true(keep);
	mk_viewmemo_close(vm, p);
	mk_viewmemo_close(vm, p);
	assert_true(mk_viewmemo_open(vm, p, &x, &size, &end, &keep));
	assert_true(keep);

	/* The partition changed (a new memo) while a paged descriptor of the
	 * old one is still open: new descriptors are streams until it
	 * closes, and the first paged one then drops the cache again. */
	mk_view_id y = { &t, 0, 2, 0 };
	mk_viewmemo_learn(vm, p, &y, 11, 110, ref(&t));
	assert_false(mk_viewmemo_open(vm, p, &y, &size, &end, &keep));
	assert_false(mk_viewmemo_open(vm, p, &x, &size, &end, &keep));   /* old memo gone */
	mk_viewmemo_close(vm, p);
	keep = true;
	assert_true(mk_viewmemo_open(vm, p, &y, &size, &end, &keep));
	assert_false(keep);
	assert_int_equal(size, 110);
	assert_true(mk_viewmemo_open(vm, p, &y, &size, &end, &keep));
	assert_true(keep);
	mk_viewmemo_close(vm, p);
	mk_viewmemo_close(vm, p);
	mk_viewmemo_free(vm);
	assert_int_equal(refs(&t), 100);
}

static void test_full_table(void **state)
{
	(void)state;
	mk_topic t;
	fake_topic(&t);
	mk_viewmemo *vm = mk_viewmemo_new();
	char path[64];
	long long size;
	int64_t end;
	bool keep;
	mk_view_id id = { &t, 0, 1, 0 };
	/* 64 names; the first stays open (paged), the second is used last. */
	for (int i = 0; i < 64; i++) {
		snprintf(path, sizeof(path), "/topics/t/0/records@%d", i);
		id.start = i;
		mk_viewmemo_learn(vm, path, &id, 100, 1000 + i, ref(&t));
	}
	assert_int_equal(refs(&t), 164);
	id.start = 0;
	assert_true(mk_viewmemo_open(vm, "/topics/t/0/records@0", &id, &size, &end, &keep));
	id.start = 1;
	assert_true(mk_viewmemo_size(vm, "/topics/t/0/records@1", &t, 0, 1, &size));
	assert_true(mk_viewmemo_open(vm, "/topics/t/0/records@1", &id, &size, &end, &keep));
	mk_viewmemo_close(vm, "/topics/t/0/records@1");
	/* A 65th forgets the oldest unused: records@2. */
	id.start = 64;
	mk_viewmemo_learn(vm, "/topics/t/0/records@64", &id, 100, 1064, ref(&t));
	assert_int_equal(refs(&t), 164);
	assert_false(mk_viewmemo_size(vm, "/topics/t/0/records@2", &t, 0, 1, &size));
	assert_true(mk_viewmemo_size(vm, "/topics/t/0/records@0", &t, 0, 1, &size));
	assert_true(mk_viewmemo_size(vm, "/topics/t/0/records@1", &t, 0, 1, &size));
	assert_true(mk_viewmemo_size(vm, "/topics/t/0/records@64", &t, 0, 1, &size));
	assert_int_equal(size, 1064);
	mk_viewmemo_close(vm, "/topics/t/0/records@0");
	mk_viewmemo_free(vm);
	assert_int_equal(refs(&t), 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_identity),
		cmocka_unit_test(test_keep_cache),
		cmocka_unit_test(test_full_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
