/*
 * test_viewmemo.c — the known lengths of records views (fs/viewmemo.c):
 * a memo stands only for its identity (topic, partition, change count,
 * start), a paged open keeps the cache only from the second open of the
 * same memo on (the first drops the inode's pages before any other may
 * read paged), descriptors of another identity make a new one a stream,
 * topic references are taken over and put back, a full table forgets
 * its oldest unused memo; and the size the kernel is told (the race
 * fs-paged once caught: a reader copying the zeros of a cached last page
 * as text) grows only after the pages from the old end on were dropped,
 * never shrinks while paged descriptors are open, and reads may serve
 * the new text before the kernel learns its size; at most max_stepping
 * steps run at once, and a stop waits for them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "viewmemo.h"

/* A kernel that records what it was asked, and checks the order of a
 * step as it is asked (viewmemo.h). */
typedef struct {
	mk_view_pages *pg;
	int ninval, nstore;
	long long inval_off[8];
	long long store_off;
	char store_byte;
	long long told_at_inval, limit_at_inval, told_at_store;
} fake_kernel;

static void k_inval(void *arg, uint64_t ino, long long off)
{
	fake_kernel *k = arg;
	assert_int_equal(ino, 42);
	if (k->ninval < 8)
		k->inval_off[k->ninval] = off;
	k->ninval++;
	if (k->pg) {
		k->told_at_inval = mk_viewmemo_told(k->pg);
		k->limit_at_inval = mk_viewmemo_limit(k->pg);
	}
}

static void k_store(void *arg, uint64_t ino, long long off, const char *data,
		    size_t n)
{
	fake_kernel *k = arg;
	assert_int_equal(ino, 42);
	assert_int_equal(n, 1);
	k->nstore++;
	k->store_off = off;
	k->store_byte = data[0];
	if (k->pg)
		k->told_at_store = mk_viewmemo_told(k->pg);
}

static const mk_view_kernel kernel = { k_inval, k_store };

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
	mk_viewmemo *vm = mk_viewmemo_new(NULL, 1);
	mk_view_id id = { &ta, 0, 7, 0 };
	long long size;
	int64_t end;
	bool fresh;
	assert_false(mk_viewmemo_size(vm, "/topics/a/0/records", &ta, 0, 7, &size));
	assert_null(mk_viewmemo_open(vm, "/topics/a/0/records", &id, 0, &end, &fresh));

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
	assert_null(mk_viewmemo_open(vm, "/topics/a/0/records", &other, 0, &end, &fresh));
	other = id;
	other.seq = 8;
	assert_null(mk_viewmemo_open(vm, "/topics/a/0/records", &other, 0, &end, &fresh));

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
	fake_kernel k = { 0 };
	mk_viewmemo *vm = mk_viewmemo_new(&kernel, 1);
	const char *p = "/topics/t/0/records";
	mk_view_id x = { &t, 0, 1, 0 };
	int64_t end;
	bool fresh = false, fresh2 = true;
	mk_viewmemo_learn(vm, p, &x, 10, 100, ref(&t));
	/* The first paged open drops what the inode had cached... */
	mk_view_pages *a = mk_viewmemo_open(vm, p, &x, 0, &end, &fresh);
	assert_non_null(a);
	assert_true(fresh);
	assert_int_equal(end, 10);
	assert_int_equal(mk_viewmemo_told(a), 100);
	/* ...and until it did, another descriptor is a stream. */
	assert_null(mk_viewmemo_open(vm, p, &x, 0, &end, &fresh2));
	assert_int_equal(k.ninval, 0);
	mk_viewmemo_opened(vm, a, 42, &k, fresh);
	assert_int_equal(k.ninval, 1);
	assert_int_equal(k.inval_off[0], 0);
	/* Later ones keep it, open at once or one after the other. */
	mk_view_pages *b = mk_viewmemo_open(vm, p, &x, 0, &end, &fresh2);
	assert_ptr_equal(a, b);
	assert_false(fresh2);
	mk_viewmemo_opened(vm, b, 42, &k, fresh2);
	mk_viewmemo_close(vm, a, false);
	mk_viewmemo_close(vm, b, false);
	assert_non_null(mk_viewmemo_open(vm, p, &x, 0, &end, &fresh2));
	assert_false(fresh2);
	mk_viewmemo_opened(vm, a, 42, &k, fresh2);
	assert_int_equal(k.ninval, 1);

	/* The partition changed (a new memo) while a paged descriptor of the
	 * old one is still open: new descriptors are streams until it
	 * closes; the size reported is still the open one's (told). */
	mk_view_id y = { &t, 0, 2, 0 };
	mk_viewmemo_learn(vm, p, &y, 11, 110, ref(&t));
	assert_null(mk_viewmemo_open(vm, p, &y, 0, &end, &fresh2));
	assert_null(mk_viewmemo_open(vm, p, &x, 0, &end, &fresh2));   /* old memo gone */
	long long size = 0;
	assert_true(mk_viewmemo_size(vm, p, &t, 0, 2, &size));
	assert_int_equal(size, 100);
	mk_viewmemo_close(vm, a, false);
	assert_true(mk_viewmemo_size(vm, p, &t, 0, 2, &size));
	assert_int_equal(size, 110);
	/* The first paged one then drops the cache again. */
	b = mk_viewmemo_open(vm, p, &y, 0, &end, &fresh);
	assert_non_null(b);
	assert_true(fresh);
	assert_int_equal(mk_viewmemo_told(b), 110);
	mk_viewmemo_opened(vm, b, 42, &k, fresh);
	assert_int_equal(k.ninval, 2);
	/* An open that failed before mk_viewmemo_opened: the next one is
	 * the first again. */
	mk_viewmemo_close(vm, b, false);
	mk_view_id z = { &t, 0, 3, 0 };
	mk_viewmemo_learn(vm, p, &z, 12, 120, ref(&t));
	b = mk_viewmemo_open(vm, p, &z, 0, &end, &fresh);
	assert_true(fresh);
	mk_viewmemo_close(vm, b, true);
	b = mk_viewmemo_open(vm, p, &z, 0, &end, &fresh);
	assert_non_null(b);
	assert_true(fresh);
	mk_viewmemo_opened(vm, b, 42, &k, fresh);
	mk_viewmemo_close(vm, b, false);
	mk_viewmemo_free(vm);
	assert_int_equal(refs(&t), 100);
}

/*
 * The race fs-paged caught: the page holding the view's end is cached
 * with zeros after it; a larger size told before that page is dropped
 * lets a reader copy the zeros. A step raises limit, drops the pages
 * from the old end (told still the old size), stores the new text's last
 * byte (told still old: the kernel learns the size from the store), and
 * only then reports the new size.
 */
static void test_step(void **state)
{
	(void)state;
	mk_topic t;
	fake_topic(&t);
	fake_kernel k = { 0 };
	mk_viewmemo *vm = mk_viewmemo_new(&kernel, 1);
	const char *p = "/topics/t/0/records";
	mk_view_id x = { &t, 0, 5, 0 };
	int64_t end;
	long long size;
	bool fresh;
	mk_viewmemo_learn(vm, p, &x, 10, 1000, ref(&t));
	mk_view_pages *a = mk_viewmemo_open(vm, p, &x, 3, &end, &fresh);
	assert_non_null(a);
	assert_int_equal(mk_viewmemo_epoch(a), 3);
	assert_true(mk_viewmemo_is(a, &t, 0));
	assert_false(mk_viewmemo_is(a, &t, 1));
	mk_viewmemo_opened(vm, a, 42, &k, fresh);
	k.pg = a;
	/* Nothing changed: no step. */
	assert_false(mk_viewmemo_step_begin(vm, a, 5, &end, &size));
	/* The partition changed: a step from (10, 1000). */
	assert_true(mk_viewmemo_step_begin(vm, a, 6, &end, &size));
	assert_int_equal(end, 10);
	assert_int_equal(size, 1000);
	/* Another caller meanwhile reports told, without waiting. */
	int64_t e2;
	long long s2;
	assert_false(mk_viewmemo_step_begin(vm, a, 6, &e2, &s2));
	assert_false(mk_viewmemo_step_begin(vm, a, 7, &e2, &s2));
	mk_viewmemo_step_end(vm, a, 6, true, 12, 1234, '\n');
	assert_int_equal(k.ninval, 2);            /* the open's, the step's */
	assert_int_equal(k.inval_off[1], 1000);   /* from the old end on */
	assert_int_equal(k.limit_at_inval, 1234); /* reads serve the new text */
	assert_int_equal(k.told_at_inval, 1000);  /* stats do not tell it yet */
	assert_int_equal(k.nstore, 1);
	assert_int_equal(k.store_off, 1233);
	assert_int_equal(k.store_byte, '\n');
	assert_int_equal(k.told_at_store, 1000);
	assert_int_equal(mk_viewmemo_told(a), 1234);
	assert_true(mk_viewmemo_size(vm, p, &t, 0, 6, &size));
	assert_int_equal(size, 1234);
	/* Stepped to 6 already; a failed count looks again next time. */
	assert_false(mk_viewmemo_step_begin(vm, a, 6, &end, &size));
	assert_true(mk_viewmemo_step_begin(vm, a, 8, &end, &size));
	assert_int_equal(end, 12);
	mk_viewmemo_step_end(vm, a, 8, false, 0, 0, 0);
	assert_true(mk_viewmemo_step_begin(vm, a, 8, &end, &size));
	/* Nothing new in the text: nothing asked of the kernel. */
	mk_viewmemo_step_end(vm, a, 8, true, 12, 1234, '\n');
	assert_int_equal(k.ninval, 2);
	assert_int_equal(k.nstore, 1);
	/* The first page not cached: every other open in a row streams. */
	assert_true(mk_viewmemo_cold(vm, a));
	assert_false(mk_viewmemo_cold(vm, a));
	assert_true(mk_viewmemo_cold(vm, a));
	mk_viewmemo_warm(vm, a);
	assert_true(mk_viewmemo_cold(vm, a));
	/* A stat by name pins the live state; a pinned or open entry is
	 * never forgotten. */
	mk_view_pages *pin = mk_viewmemo_pin(vm, p);
	assert_ptr_equal(pin, a);
	mk_viewmemo_unpin(vm, pin);
	assert_null(mk_viewmemo_pin(vm, "/topics/t/0/records:tsv"));
	mk_viewmemo_close(vm, a, false);
	assert_null(mk_viewmemo_pin(vm, p));
	mk_viewmemo_free(vm);
	assert_int_equal(refs(&t), 100);
}

/* Learn path as a view of partition part of t (10 records, 1000 bytes)
 * and open it paged; the view is told 1000 bytes. */
static mk_view_pages *open_learned(mk_viewmemo *vm, mk_topic *t,
				   const char *path, int part)
{
	mk_view_id id = { t, part, 5, 0 };
	int64_t end;
	bool fresh;
	mk_viewmemo_learn(vm, path, &id, 10, 1000, ref(t));
	mk_view_pages *pg = mk_viewmemo_open(vm, path, &id, 0, &end, &fresh);
	assert_non_null(pg);
	mk_viewmemo_opened(vm, pg, 42, NULL, fresh);
	return pg;
}

/*
 * Steps wait in the kernel for reads that other workers answer: at most
 * max_stepping run at once, across names; a stat that finds them taken
 * reports told (no step), and the next one steps.
 */
static void test_step_budget(void **state)
{
	(void)state;
	mk_topic t;
	fake_topic(&t);
	mk_viewmemo *vm = mk_viewmemo_new(NULL, 2);
	mk_view_pages *pg[3];
	int64_t end;
	long long size;
	for (int i = 0; i < 3; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/topics/t/%d/records", i);
		pg[i] = open_learned(vm, &t, path, i);
	}
	assert_true(mk_viewmemo_step_begin(vm, pg[0], 6, &end, &size));
	assert_true(mk_viewmemo_step_begin(vm, pg[1], 6, &end, &size));
	/* Two under way: the third name's stat reports told. */
	assert_false(mk_viewmemo_step_begin(vm, pg[2], 6, &end, &size));
	assert_int_equal(mk_viewmemo_told(pg[2]), 1000);
	mk_viewmemo_step_end(vm, pg[0], 6, true, 11, 1100, '\n');
	assert_true(mk_viewmemo_step_begin(vm, pg[2], 6, &end, &size));
	mk_viewmemo_step_end(vm, pg[2], 6, true, 11, 1100, '\n');
	/* A failed count gives its place back too. */
	mk_viewmemo_step_end(vm, pg[1], 6, false, 0, 0, 0);
	assert_true(mk_viewmemo_step_begin(vm, pg[1], 6, &end, &size));
	assert_true(mk_viewmemo_step_begin(vm, pg[0], 7, &end, &size));
	mk_viewmemo_step_end(vm, pg[1], 6, true, 11, 1100, '\n');
	mk_viewmemo_step_end(vm, pg[0], 7, true, 11, 1100, '\n');
	for (int i = 0; i < 3; i++) {
		assert_int_equal(mk_viewmemo_told(pg[i]), 1100);
		mk_viewmemo_close(vm, pg[i], false);
	}
	/* None allowed: never a step. */
	mk_viewmemo_free(vm);
	vm = mk_viewmemo_new(NULL, 0);
	mk_view_pages *a = open_learned(vm, &t, "/r", 0);
	assert_false(mk_viewmemo_step_begin(vm, a, 6, &end, &size));
	mk_viewmemo_close(vm, a, false);
	mk_viewmemo_free(vm);
	assert_int_equal(refs(&t), 100);
}

/*
 * A stop by signal: libfuse's loop, once ended, answers no more reads,
 * so it may end only when no step waits in the kernel. mk_viewmemo_stop
 * says whether none is under way; otherwise the last one to end calls
 * drained; no step begins after it.
 */
static int ndrained;

static void drained(void *arg)
{
	(void)arg;
	ndrained++;
}

static void test_stop(void **state)
{
	(void)state;
	mk_topic t;
	fake_topic(&t);
	mk_viewmemo *vm = mk_viewmemo_new(NULL, 4);
	mk_viewmemo_on_drained(vm, drained, NULL);
	mk_view_pages *pg[2];
	int64_t end;
	long long size;
	for (int i = 0; i < 2; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/topics/t/%d/records", i);
		pg[i] = open_learned(vm, &t, path, i);
	}
	ndrained = 0;
	assert_true(mk_viewmemo_step_begin(vm, pg[0], 6, &end, &size));
	assert_true(mk_viewmemo_step_begin(vm, pg[1], 6, &end, &size));
	/* Two under way: the loop must go on. */
	assert_false(mk_viewmemo_stop(vm));
	assert_false(mk_viewmemo_stop(vm));
	mk_viewmemo_step_end(vm, pg[0], 6, true, 11, 1100, '\n');
	assert_int_equal(ndrained, 0);
	/* No new step once stopping (the stat reports told). */
	assert_false(mk_viewmemo_step_begin(vm, pg[0], 7, &end, &size));
	assert_int_equal(ndrained, 0);
	/* The last one ends: drained, once. */
	mk_viewmemo_step_end(vm, pg[1], 6, true, 11, 1100, '\n');
	assert_int_equal(ndrained, 1);
	assert_true(mk_viewmemo_stop(vm));
	assert_false(mk_viewmemo_step_begin(vm, pg[1], 7, &end, &size));
	assert_int_equal(ndrained, 1);
	for (int i = 0; i < 2; i++)
		mk_viewmemo_close(vm, pg[i], false);
	mk_viewmemo_free(vm);
	/* None under way: the loop may end at once. */
	vm = mk_viewmemo_new(NULL, 4);
	assert_true(mk_viewmemo_stop(vm));
	mk_viewmemo_free(vm);
	assert_int_equal(refs(&t), 100);
}

static void test_full_table(void **state)
{
	(void)state;
	mk_topic t;
	fake_topic(&t);
	mk_viewmemo *vm = mk_viewmemo_new(NULL, 1);
	char path[64];
	long long size;
	int64_t end;
	bool fresh;
	mk_view_id id = { &t, 0, 1, 0 };
	/* 64 names; the first stays open (paged), the second is used last. */
	for (int i = 0; i < 64; i++) {
		snprintf(path, sizeof(path), "/topics/t/0/records@%d", i);
		id.start = i;
		mk_viewmemo_learn(vm, path, &id, 100, 1000 + i, ref(&t));
	}
	assert_int_equal(refs(&t), 164);
	id.start = 0;
	mk_view_pages *a = mk_viewmemo_open(vm, "/topics/t/0/records@0", &id, 0, &end, &fresh);
	assert_non_null(a);
	mk_viewmemo_opened(vm, a, 0, NULL, fresh);
	id.start = 1;
	assert_true(mk_viewmemo_size(vm, "/topics/t/0/records@1", &t, 0, 1, &size));
	mk_view_pages *b = mk_viewmemo_open(vm, "/topics/t/0/records@1", &id, 0, &end, &fresh);
	assert_non_null(b);
	mk_viewmemo_opened(vm, b, 0, NULL, fresh);
	mk_viewmemo_close(vm, b, false);
	/* A 65th forgets the oldest unused: records@2. */
	id.start = 64;
	mk_viewmemo_learn(vm, "/topics/t/0/records@64", &id, 100, 1064, ref(&t));
	assert_int_equal(refs(&t), 164);
	assert_false(mk_viewmemo_size(vm, "/topics/t/0/records@2", &t, 0, 1, &size));
	assert_true(mk_viewmemo_size(vm, "/topics/t/0/records@0", &t, 0, 1, &size));
	assert_true(mk_viewmemo_size(vm, "/topics/t/0/records@1", &t, 0, 1, &size));
	assert_true(mk_viewmemo_size(vm, "/topics/t/0/records@64", &t, 0, 1, &size));
	assert_int_equal(size, 1064);
	mk_viewmemo_close(vm, a, false);
	mk_viewmemo_free(vm);
	assert_int_equal(refs(&t), 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_identity),
		cmocka_unit_test(test_keep_cache),
		cmocka_unit_test(test_step),
		cmocka_unit_test(test_step_budget),
		cmocka_unit_test(test_stop),
		cmocka_unit_test(test_full_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
