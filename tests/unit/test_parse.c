/*
 * test_parse.c — the one strict integer parser (core/base/parse.h): the edges
 * of int64_t, overflow by one, and everything that is not "optional '-',
 * then decimal digits".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "parse.h"

static void ok(const char *s, int64_t want)
{
	int64_t v = 12345;
	if (!mk_parse_i64(s, &v))
		print_error("refused: '%s'\n", s);
	assert_true(mk_parse_i64(s, &v));
	assert_true(v == want);
}

static void bad(const char *s)
{
	int64_t v = 12345;
	if (mk_parse_i64(s, &v))
		print_error("accepted: '%s'\n", s);
	assert_false(mk_parse_i64(s, &v));
	assert_true(v == 12345);   /* untouched */
}

static void test_values(void **state)
{
	(void)state;
	ok("0", 0);
	ok("-0", 0);
	ok("7", 7);
	ok("-7", -7);
	ok("007", 7);
	ok("1000000000000", 1000000000000LL);
	ok("9223372036854775807", INT64_MAX);
	ok("-9223372036854775808", INT64_MIN);
	ok("-9223372036854775807", INT64_MIN + 1);
	ok("00000000000000000000000009223372036854775807", INT64_MAX);
}

static void test_overflow(void **state)
{
	(void)state;
	bad("9223372036854775808");          /* INT64_MAX + 1 */
	bad("-9223372036854775809");         /* INT64_MIN - 1 */
	bad("9223372036854775810");
	bad("18446744073709551615");
	bad("18446744073709551616");
	bad("99999999999999999999999999999");
	bad("-99999999999999999999999999999");
}

static void test_syntax(void **state)
{
	(void)state;
	bad("");
	bad("-");
	bad("--1");
	bad("+");
	bad("+1");
	bad("-+1");
	bad(" 1");
	bad("1 ");
	bad("\t1");
	bad("1\n");
	bad("1 2");
	bad("1a");
	bad("a1");
	bad("0x10");
	bad("1e3");
	bad("1.0");
	bad("1,000");
	bad("1_000");
	bad("٣");                             /* not an ASCII digit */
	/* A NUL ends the string: what follows it is not read. */
	ok("12\0garbage", 12);
}

static void test_range(void **state)
{
	(void)state;
	int64_t v = 99;
	assert_true(mk_parse_range("5", 5, 5, &v));
	assert_int_equal(v, 5);
	assert_true(mk_parse_range("-3", -3, 10, &v));
	assert_int_equal(v, -3);
	v = 99;
	assert_false(mk_parse_range("4", 5, 10, &v));
	assert_false(mk_parse_range("11", 5, 10, &v));
	assert_false(mk_parse_range("-4", -3, 10, &v));
	assert_false(mk_parse_range("x", 0, 10, &v));
	assert_false(mk_parse_range("", 0, 10, &v));
	assert_int_equal(v, 99);            /* untouched on failure */
	assert_true(mk_parse_range("9223372036854775807", 0, INT64_MAX, &v));
	assert_true(v == INT64_MAX);
	assert_true(mk_parse_range("-9223372036854775808", INT64_MIN, 0, &v));
	assert_true(v == INT64_MIN);
	assert_false(mk_parse_range("9223372036854775808", 0, INT64_MAX, &v));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_syntax),
		cmocka_unit_test(test_range),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
