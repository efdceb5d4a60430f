/*
 * test_inodes.c — the inode table of the low-level FUSE API (fs/inodes.c):
 * one number per path while the kernel remembers it, references counted,
 * the root fixed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "inodes.h"

static const char *path_of(mk_inodes *t, uint64_t ino, mk_strbuf *sb)
{
	mk_strbuf_reset(sb);
	return mk_inodes_path(t, ino, sb) ? sb->buf : NULL;
}

static void test_root_and_numbers(void **state)
{
	(void)state;
	mk_inodes *t = mk_inodes_new();
	mk_strbuf sb = MK_STRBUF_INIT;
	assert_string_equal(path_of(t, 1, &sb), "/");
	uint64_t a = mk_inodes_ref(t, "/topics");
	uint64_t b = mk_inodes_ref(t, "/topics/t/0/records@latest:follow");
	assert_true(a > 1 && b > 1 && a != b);
	assert_int_equal(mk_inodes_ref(t, "/topics"), a);   /* same path, same number */
	assert_string_equal(path_of(t, a, &sb), "/topics");
	assert_string_equal(path_of(t, b, &sb), "/topics/t/0/records@latest:follow");
	assert_null(path_of(t, 999, &sb));
	/* Two references to /topics: the first forget keeps it. */
	mk_inodes_forget(t, a, 1);
	assert_string_equal(path_of(t, a, &sb), "/topics");
	mk_inodes_forget(t, a, 1);
	assert_null(path_of(t, a, &sb));
	/* A forgotten path gets a new number next time. */
	uint64_t a2 = mk_inodes_ref(t, "/topics");
	assert_true(a2 != a);
	/* The root is never forgotten. */
	mk_inodes_forget(t, 1, 100);
	assert_string_equal(path_of(t, 1, &sb), "/");
	mk_strbuf_release(&sb);
	mk_inodes_free(t);
}

static void test_many(void **state)
{
	(void)state;
	mk_inodes *t = mk_inodes_new();
	mk_strbuf sb = MK_STRBUF_INIT, p = MK_STRBUF_INIT;
	uint64_t ino[5000];
	for (int i = 0; i < 5000; i++) {
		mk_strbuf_reset(&p);
		mk_strbuf_addf(&p, "/topics/t%d", i);
		ino[i] = mk_inodes_ref(t, p.buf);
	}
	assert_int_equal(mk_inodes_count(t), 5001);
	for (int i = 0; i < 5000; i += 7) {
		mk_strbuf_reset(&p);
		mk_strbuf_addf(&p, "/topics/t%d", i);
		assert_string_equal(path_of(t, ino[i], &sb), p.buf);
	}
	for (int i = 0; i < 5000; i++)
		mk_inodes_forget(t, ino[i], 1);
	assert_int_equal(mk_inodes_count(t), 1);
	mk_strbuf_release(&sb);
	mk_strbuf_release(&p);
	mk_inodes_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_root_and_numbers),
		cmocka_unit_test(test_many),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
