/*
 * test_cacheprobe.c — asking the kernel whether it caches a byte
 * (fs/cacheprobe.c), with a fake kernel and no waiting: the asker always
 * returns at once; the answer comes at once (on the asking thread), later
 * (from another thread, or after the start returned), never (the expiry
 * answers unknown, and the late answer is dropped), or the kernel could
 * not be asked. Many probes pending at once are each answered once, by
 * their own cookie; freeing the table answers what is left.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cacheprobe.h"

#define MANY 64

typedef struct {
	mk_cacheprobe *cp;
	int mode;                /* 0 answer now, 1 later, 2 fail */
	size_t n;
	void *cookie;
	void *cookies[MANY];
	int asked;
	uint64_t ino;
	long long off;
	size_t size;
} fake;

static int ask(void *arg, uint64_t ino, size_t size, long long off, void *cookie)
{
	fake *f = arg;
	f->ino = ino;
	f->off = off;
	f->size = size;
	f->cookie = cookie;
	if (f->asked < MANY)
		f->cookies[f->asked] = cookie;
	f->asked++;
	switch (f->mode) {
	case 0:
		mk_cacheprobe_answer(f->cp, cookie, f->n);
		return 0;
	case 1:
		return 0;
	default:
		return -1;
	}
}

/* What done was told, and how often. */
typedef struct {
	int calls;
	int cached;
} result;

static void done(void *arg, int cached)
{
	result *r = arg;
	r->calls++;
	r->cached = cached;
}

static void test_answers(void **state)
{
	(void)state;
	mk_cacheprobe *cp = mk_cacheprobe_new();
	fake f = { .cp = cp, .mode = 0, .n = 1 };
	result r = { 0, 9 };
	mk_cacheprobe_start(cp, ask, &f, 7, 4096, 1000, done, &r);
	assert_int_equal(r.calls, 1);
	assert_int_equal(r.cached, 1);
	assert_int_equal(f.ino, 7);
	assert_int_equal(f.off, 4096);
	assert_int_equal(f.size, 1);
	f.n = 0;
	r.calls = 0;
	mk_cacheprobe_start(cp, ask, &f, 7, 0, 1000, done, &r);
	assert_int_equal(r.calls, 1);
	assert_int_equal(r.cached, 0);
	/* Later: the start returns with the probe pending. */
	f.mode = 1;
	r.calls = 0;
	mk_cacheprobe_start(cp, ask, &f, 7, 0, 1000, done, &r);
	assert_int_equal(r.calls, 0);
	assert_int_equal(mk_cacheprobe_pending(cp), 1);
	assert_int_equal(mk_cacheprobe_expire(cp, 999), 1000);
	assert_int_equal(r.calls, 0);
	mk_cacheprobe_answer(cp, f.cookie, 1);
	assert_int_equal(r.calls, 1);
	assert_int_equal(r.cached, 1);
	assert_int_equal(mk_cacheprobe_pending(cp), 0);
	/* A second answer to the same cookie changes nothing. */
	mk_cacheprobe_answer(cp, f.cookie, 0);
	assert_int_equal(r.calls, 1);
	assert_int_equal(mk_cacheprobe_expire(cp, 5000), 0);
	mk_cacheprobe_free(cp);
}

static void test_unknown(void **state)
{
	(void)state;
	mk_cacheprobe *cp = mk_cacheprobe_new();
	fake f = { .cp = cp, .mode = 2, .n = 1 };
	result r = { 0, 9 };
	/* Not asked: unknown at once. */
	mk_cacheprobe_start(cp, ask, &f, 7, 0, 60000, done, &r);
	assert_int_equal(r.calls, 1);
	assert_int_equal(r.cached, -1);
	assert_int_equal(mk_cacheprobe_pending(cp), 0);
	/* No answer in time: the expiry says unknown; the late answer
	 * finds nobody. */
	f.mode = 1;
	r.calls = 0;
	mk_cacheprobe_start(cp, ask, &f, 7, 0, 30, done, &r);
	assert_int_equal(mk_cacheprobe_expire(cp, 29), 30);
	assert_int_equal(r.calls, 0);
	assert_int_equal(mk_cacheprobe_expire(cp, 30), 0);
	assert_int_equal(r.calls, 1);
	assert_int_equal(r.cached, -1);
	void *stale = f.cookie;
	mk_cacheprobe_answer(cp, stale, 1);
	assert_int_equal(r.calls, 1);
	/* It is not taken for the next probe's answer either. */
	f.mode = 0;
	f.n = 0;
	r.calls = 0;
	mk_cacheprobe_start(cp, ask, &f, 7, 0, 1000, done, &r);
	assert_ptr_not_equal(f.cookie, stale);
	assert_int_equal(r.calls, 1);
	assert_int_equal(r.cached, 0);
	/* Freeing the table answers what is pending. */
	f.mode = 1;
	r.calls = 0;
	mk_cacheprobe_start(cp, ask, &f, 7, 0, 1000, done, &r);
	mk_cacheprobe_free(cp);
	assert_int_equal(r.calls, 1);
	assert_int_equal(r.cached, -1);
}

/* Many probes pending at once, answered out of order from other threads
 * (as retrieve_reply requests arrive on any worker), the rest expired:
 * each done is called exactly once, with its own answer. */
typedef struct {
	mk_cacheprobe *cp;
	void **cookies;
	int from, to;
} answerer;

static void *answer_range(void *arg)
{
	answerer *a = arg;
	for (int i = a->to - 1; i >= a->from; i--)
		mk_cacheprobe_answer(a->cp, a->cookies[i], (size_t)(i % 2));
	return NULL;
}

static void test_many(void **state)
{
	(void)state;
	mk_cacheprobe *cp = mk_cacheprobe_new();
	fake f = { .cp = cp, .mode = 1 };
	result r[MANY] = { { 0, 9 } };
	for (int i = 0; i < MANY; i++)
		mk_cacheprobe_start(cp, ask, &f, (uint64_t)i, 0, 100 + i, done, &r[i]);
	assert_int_equal(mk_cacheprobe_pending(cp), MANY);
	pthread_t t[2];
	answerer a[2] = { { cp, f.cookies, 0, MANY / 4 },
			  { cp, f.cookies, MANY / 4, MANY / 2 } };
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, answer_range, &a[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(mk_cacheprobe_pending(cp), MANY / 2);
	assert_int_equal(mk_cacheprobe_expire(cp, 100 + MANY), 0);
	for (int i = 0; i < MANY; i++) {
		assert_int_equal(r[i].calls, 1);
		assert_int_equal(r[i].cached, i < MANY / 2 ? i % 2 : -1);
	}
	mk_cacheprobe_free(cp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answers),
		cmocka_unit_test(test_unknown),
		cmocka_unit_test(test_many),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
