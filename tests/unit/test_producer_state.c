/*
 * test_producer_state.c — the producer snapshot's parser
 * (core/storage/producer_state.c): integers through core/base/parse.h with their
 * fields' ranges, single spaces, each producer once, at most a window of
 * batches, every offset below covered_to; whatever format() writes parses
 * back to the same text.
 * (The snapshot's use by replicas is tested in test_producer.c.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "producer_state.h"

#define HEAD "producer-snapshot 1\ncovered_to 5\n"
/* A covered_to past every offset the range tests below name. */
#define HEAD_MAX "producer-snapshot 1\ncovered_to 9223372036854775807\n"
#define HEAD2 "producer-snapshot 2\ncovered_to 5\n"

static void test_strict(void **state)
{
	(void)state;
	mk_producer_state ps;
	mk_pstate_init(&ps);
	static const char *const good[] = {
		HEAD,
		HEAD "producer 4 0\n",
		HEAD_MAX "producer 4 -1 0:-2147483648:0:2147483647\n",
		HEAD_MAX "producer 9223372036854775807 32767 2147483647:2147483647:9223372036854775806:0\n",
		HEAD "producer 4 0 0:0:0:0 1:1:1:0 2:2:2:0 3:3:3:0 4:4:4:0\n"
		     "producer 3 0\n",
	};
	static const char *const bad[] = {
		"producer-snapshot 1\ncovered_to +5\n",
		"producer-snapshot 1\ncovered_to  5\n",
		"producer-snapshot 1\ncovered_to 5 \n",
		"producer-snapshot 1\ncovered_to 9223372036854775808\n",
		"producer-snapshot 1 \ncovered_to 5\n",
		HEAD "producer +4 0\n",
		HEAD "producer 4  0\n",
		HEAD "producer 4 0 \n",
		HEAD " producer 4 0\n",
		HEAD "producer 4\n",
		HEAD "producer 4 32768\n",
		HEAD "producer 4 -32769\n",
		HEAD "producer 4 0 -1:0:0:0\n",
		HEAD "producer 4 0 0:0:-1:0\n",
		HEAD "producer 4 0 0:0:0:-1\n",
		HEAD "producer 4 0 0:2147483648:0:0\n",
		HEAD "producer 4 0 0:0:0:0:\n",
		HEAD "producer 4 0 0:0:0:0:0\n",
		HEAD "producer 4 0 0::0:0\n",
		HEAD "producer 4 0 :0:0:0\n",
		HEAD "producer 4 0 0:0:1:0 1:1:2:0 2:2:3:0 3:3:4:0 4:4:5:0 5:5:6:0\n",
		HEAD "producer 4 0\nproducer 4 1\n",
		HEAD "producer 4 0\n\n",
		HEAD "producer 4 0\nproducer 5 0",
		/* offsets at or past covered_to: never applied, so damage */
		HEAD "producer 4 0 0:0:5:0\n",
		HEAD "producer 4 0 0:1:4:1\n",
		HEAD "producer 4 0 0:1:4:2147483647\n",
		HEAD_MAX "producer 4 0 0:1:9223372036854775806:2147483647\n",
		HEAD2 "producer 4 0\nopen 4 5\n",
		HEAD2 "aborted 4 1 5\n",
	};
	mk_strbuf a = MK_STRBUF_INIT;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		mk_err err = mk_pstate_parse(&ps, good[i]);
		if (err)
			print_error("refused: %s\n", good[i]);
		assert_int_equal(err, MK_OK);
		mk_strbuf_reset(&a);
		mk_pstate_format(&ps, &a);
		/* Producers are written in id order. */
		if (i != 4)
			assert_string_equal(a.buf, good[i]);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(mk_pstate_parse(&ps, good[1]), MK_OK);
		mk_err err = mk_pstate_parse(&ps, bad[i]);
		if (err != MK_CORRUPT_MESSAGE)
			print_error("accepted: %s\n", bad[i]);
		assert_int_equal(err, MK_CORRUPT_MESSAGE);
		assert_int_equal(ps.n, 0);
		assert_int_equal(ps.covered_to, 0);
	}
	mk_strbuf_release(&a);
	mk_pstate_free(&ps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strict),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
