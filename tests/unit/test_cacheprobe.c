/*
 * test_cacheprobe.c — asking the kernel whether it caches a byte
 * (fs/cacheprobe.c), with a fake kernel: an answer given at once or
 * later from another thread, a probe that could not be asked, one that
 * gets no answer in time (and whose late answer is dropped), and answers
 * told apart by their cookies.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "cacheprobe.h"

typedef struct {
	mk_cacheprobe *cp;
	int mode;                /* 0 answer now, 1 later, 2 never, 3 fail */
	size_t n;
	void *cookie;
	uint64_t ino;
	long long off;
	size_t size;
} fake;

static void *answer_later(void *arg)
{
	fake *f = arg;
	struct timespec ts = { 0, 20 * 1000000L };
	nanosleep(&ts, NULL);
	mk_cacheprobe_answer(f->cp, f->cookie, f->n);
	return NULL;
}

static pthread_t later;

static int ask(void *arg, uint64_t ino, size_t size, long long off, void *cookie)
{
	fake *f = arg;
	f->ino = ino;
	f->off = off;
	f->size = size;
	f->cookie = cookie;
	switch (f->mode) {
	case 0:
		mk_cacheprobe_answer(f->cp, cookie, f->n);
		return 0;
	case 1:
		pthread_create(&later, NULL, answer_later, f);
		return 0;
	case 2:
		return 0;
	default:
		return -1;
	}
}

static void test_answers(void **state)
{
	(void)state;
	mk_cacheprobe *cp = mk_cacheprobe_new();
	fake f = { cp, 0, 1, NULL, 0, 0, 0 };
	assert_int_equal(mk_cacheprobe_ask(cp, ask, &f, 7, 4096, 1000), 1);
	assert_int_equal(f.ino, 7);
	assert_int_equal(f.off, 4096);
	assert_int_equal(f.size, 1);
	f.n = 0;
	assert_int_equal(mk_cacheprobe_ask(cp, ask, &f, 7, 0, 1000), 0);
	/* From another thread, while the asker waits. */
	f.mode = 1;
	f.n = 1;
	assert_int_equal(mk_cacheprobe_ask(cp, ask, &f, 7, 0, 5000), 1);
	pthread_join(later, NULL);
	f.n = 0;
	assert_int_equal(mk_cacheprobe_ask(cp, ask, &f, 7, 0, 5000), 0);
	pthread_join(later, NULL);
	mk_cacheprobe_free(cp);
}

static void test_unknown(void **state)
{
	(void)state;
	mk_cacheprobe *cp = mk_cacheprobe_new();
	fake f = { cp, 3, 1, NULL, 0, 0, 0 };
	/* Not asked: unknown at once. */
	assert_int_equal(mk_cacheprobe_ask(cp, ask, &f, 7, 0, 60000), -1);
	/* No answer in time: unknown; the late answer finds nobody. */
	f.mode = 2;
	assert_int_equal(mk_cacheprobe_ask(cp, ask, &f, 7, 0, 30), -1);
	void *stale = f.cookie;
	mk_cacheprobe_answer(cp, stale, 1);
	/* It is not taken for the next probe's answer either. */
	f.mode = 0;
	f.n = 0;
	assert_int_equal(mk_cacheprobe_ask(cp, ask, &f, 7, 0, 1000), 0);
	assert_ptr_not_equal(f.cookie, stale);
	mk_cacheprobe_free(cp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answers),
		cmocka_unit_test(test_unknown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
