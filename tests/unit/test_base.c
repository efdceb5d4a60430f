/*
 * Unit tests of core/base's shared idioms: the one search over sorted
 * arrays (search.h), the one error-reporting idiom (mk_error, mk_why in
 * error.h) and the one condition-variable deadline (mk_timespec_after_ms
 * in clock.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <time.h>

#include "clock.h"
#include "error.h"
#include "search.h"
#include "strbuf.h"

typedef struct {
	const int *v;
	int key;
} int_key;

static bool int_before(const void *ctx, size_t i)
{
	const int_key *k = ctx;
	return k->v[i] < k->key;
}

static int int_cmp(const void *ctx, size_t i)
{
	const int_key *k = ctx;
	return (k->v[i] > k->key) - (k->v[i] < k->key);
}

static void test_lower_bound(void **state)
{
	(void)state;
	const int v[] = { 1, 3, 3, 3, 7, 9 };
	const size_t n = sizeof(v) / sizeof(v[0]);
	int_key k = { v, 0 };
	assert_int_equal(mk_lower_bound(n, int_before, &k), 0);
	k.key = 3;
	assert_int_equal(mk_lower_bound(n, int_before, &k), 1);  /* the first 3 */
	k.key = 4;
	assert_int_equal(mk_lower_bound(n, int_before, &k), 4);
	k.key = 9;
	assert_int_equal(mk_lower_bound(n, int_before, &k), 5);
	k.key = 10;
	assert_int_equal(mk_lower_bound(n, int_before, &k), n);
	assert_int_equal(mk_lower_bound(0, int_before, &k), 0);
}

static void test_search_sorted(void **state)
{
	(void)state;
	const int v[] = { 2, 4, 6, 8 };
	int_key k = { v, 6 };
	size_t pos = 99;
	assert_true(mk_search_sorted(4, int_cmp, &k, &pos));
	assert_int_equal(pos, 2);
	k.key = 5;
	assert_false(mk_search_sorted(4, int_cmp, &k, &pos));
	assert_int_equal(pos, 2);      /* where 5 would go */
	k.key = 1;
	assert_false(mk_search_sorted(4, int_cmp, &k, &pos));
	assert_int_equal(pos, 0);
	k.key = 9;
	assert_false(mk_search_sorted(4, int_cmp, &k, NULL));
	assert_false(mk_search_sorted(0, int_cmp, &k, &pos));
	assert_int_equal(pos, 0);
}

static void test_error_idiom(void **state)
{
	(void)state;
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(mk_error(&why, MK_INVALID_CONFIG, "bad %s=%d", "x", 3),
			 MK_INVALID_CONFIG);
	assert_string_equal(why.buf, "bad x=3");
	mk_why(&why, "; %s", "and more");
	assert_string_equal(why.buf, "bad x=3; and more");
	/* No reason wanted: the code alone, nothing written anywhere. */
	assert_int_equal(mk_error(NULL, MK_OFFSET_OUT_OF_RANGE, "%s", "unused"),
			 MK_OFFSET_OUT_OF_RANGE);
	mk_why(NULL, "%d", 1);
	mk_strbuf_release(&why);
}

static int64_t ts_ms(struct timespec ts)
{
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_timespec_after(void **state)
{
	(void)state;
	struct timespec before;
	clock_gettime(CLOCK_MONOTONIC, &before);
	struct timespec ts = mk_timespec_after_ms(CLOCK_MONOTONIC, 1999);
	struct timespec after;
	clock_gettime(CLOCK_MONOTONIC, &after);
	assert_true(ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000L);
	assert_true(ts_ms(ts) >= ts_ms(before) + 1999);
	assert_true(ts_ms(ts) <= ts_ms(after) + 1999);
	/* A negative wait is now, never the past's overflow. */
	ts = mk_timespec_after_ms(CLOCK_REALTIME, -5);
	assert_true(ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000L);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	assert_true(ts_ms(ts) <= ts_ms(now));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lower_bound),
		cmocka_unit_test(test_search_sorted),
		cmocka_unit_test(test_error_idiom),
		cmocka_unit_test(test_timespec_after),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
