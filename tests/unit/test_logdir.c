/*
 * Unit tests of Kafka's checkpoint files: their text formats
 * (core/storage/ckptfile.c: OffsetCheckpointFile's and
 * LeaderEpochCheckpointFile's, exact text both ways, strict refusals) and
 * a broker directory's three offset checkpoints (core/storage/logdir.c:
 * what is written when, read back, shared, group commit, damage, and a
 * kill at each step of a file's replacement, in a forked child).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckptfile.h"
#include "failpoint.h"
#include "fileio.h"
#include "logdir.h"
#include "testlib.h"

typedef struct {
	char root[64];
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	tl_tmpdir(f->root, sizeof(f->root), "logdir");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	tl_rmtree(f->root);
	free(f);
	return 0;
}

/* ROOT/NAME's text ("" when missing). */
static void text_of(const fixture *f, const char *name, mk_strbuf *out)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", f->root, name);
	bool missing;
	mk_strbuf_reset(out);
	assert_int_equal(mk_file_read(path, out, &missing), MK_OK);
}

static bool exists_in(const fixture *f, const char *name)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", f->root, name);
	return access(path, F_OK) == 0;
}

static void put_file(const fixture *f, const char *name, const char *text)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", f->root, name);
	assert_int_equal(mk_file_replace(path, text, strlen(text)), MK_OK);
}

static mk_logdir *acquire(const fixture *f)
{
	mk_logdir *ld;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_logdir_acquire(f->root, NULL, &ld, &why);
	if (err)
		print_error("acquire: %s\n", why.buf);
	assert_int_equal(err, MK_OK);
	mk_strbuf_release(&why);
	return ld;
}

#define RP "recovery-point-offset-checkpoint"
#define START "log-start-offset-checkpoint"
#define HW "replication-offset-checkpoint"

/* ---- the formats ------------------------------------------------------------ */

static mk_err offsets_try(const char *text, mk_ckpt_offset **v, size_t *n,
			  mk_strbuf *why)
{
	char *copy = strdup(text);
	assert_non_null(copy);
	mk_strbuf_reset(why);
	mk_err err = mk_ckpt_parse_offsets("ck", copy, strlen(text), v, n, why);
	free(copy);
	return err;
}

static void test_offsets_format(void **state)
{
	(void)state;
	mk_ckpt_offset in[] = {
		{ "__consumer_offsets", 7, 1200 }, { "orders", 0, 42 },
		{ "orders", 12, INT64_MAX },
	};
	mk_strbuf out = MK_STRBUF_INIT, why = MK_STRBUF_INIT;
	mk_ckpt_format_offsets(&out, in, 3);
	assert_string_equal(out.buf, "0\n3\n__consumer_offsets 7 1200\n"
			    "orders 0 42\norders 12 9223372036854775807\n");
	mk_strbuf_reset(&out);
	mk_ckpt_format_offsets(&out, NULL, 0);
	assert_string_equal(out.buf, "0\n0\n");

	/* Read back, in any order, sorted. */
	mk_ckpt_offset *v;
	size_t n;
	assert_int_equal(offsets_try("0\n3\norders 12 5\na.b-c_d 0 0\n"
				     "orders 2 9\n", &v, &n, &why), MK_OK);
	assert_int_equal(n, 3);
	assert_string_equal(v[0].topic, "a.b-c_d");
	assert_string_equal(v[1].topic, "orders");
	assert_int_equal(v[1].partition, 2);
	assert_int_equal(v[1].offset, 9);
	assert_int_equal(v[2].partition, 12);
	mk_ckpt_offsets_free(v, n);
	assert_int_equal(offsets_try("0\n0\n", &v, &n, &why), MK_OK);
	assert_int_equal(n, 0);
	assert_null(v);

	static const struct { const char *text, *reason; } bad[] = {
		{ "", "ck: line 1: empty file" },
		{ "0\n", "ck: line 1: missing entry count" },
		{ "0", "ck: line 1: missing newline" },
		{ "1\n0\n", "ck: line 1: unknown version (Kafka's 0 expected)" },
		{ "00\n0\n", "ck: line 1: unknown version (Kafka's 0 expected)" },
		{ "0\n-1\n", "ck: line 2: bad entry count" },
		{ "0\nx\n", "ck: line 2: bad entry count" },
		{ "0\n2\nt 0 1\n", "ck: line 3: only 1 of the 2 entries the count says" },
		{ "0\n1\nt 0 1\nt 1 1\n", "ck: line 4: more entries than the count 1" },
		{ "0\n1\nt 0 1", "ck: line 3: missing newline" },
		{ "0\n1\nt 0\n", "ck: line 3: not TOPIC PARTITION OFFSET" },
		{ "0\n1\nt 0 1 2\n", "ck: line 3: not TOPIC PARTITION OFFSET" },
		{ "0\n1\nt  0 1\n", "ck: line 3: an empty field" },
		{ "0\n1\nt 0 1 \n", "ck: line 3: an empty field" },
		{ "0\n1\n\n", "ck: line 3: an empty field" },
		{ "0\n1\nt\t0 1\n", "ck: line 3: not TOPIC PARTITION OFFSET" },
		{ "0\n1\nt/x 0 1\n", "ck: line 3: bad topic name" },
		{ "0\n1\nt -1 1\n", "ck: line 3: bad partition" },
		{ "0\n1\nt 2147483648 1\n", "ck: line 3: bad partition" },
		{ "0\n1\nt 0 -1\n", "ck: line 3: bad offset" },
		{ "0\n1\nt 0 +1\n", "ck: line 3: bad offset" },
		{ "0\n1\nt 0 9223372036854775808\n", "ck: line 3: bad offset" },
		{ "0\n2\nt 0 1\nt 0 2\n", "ck: t 0: given twice" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = (mk_ckpt_offset *)1;
		mk_err err = offsets_try(bad[i].text, &v, &n, &why);
		if (err != MK_KAFKA_STORAGE_ERROR || strcmp(why.buf, bad[i].reason))
			print_error("%zu: %s -> %s\n", i, bad[i].text, why.buf);
		assert_int_equal(err, MK_KAFKA_STORAGE_ERROR);
		assert_string_equal(why.buf, bad[i].reason);
		assert_null(v);
		assert_int_equal(n, 0);
	}
	/* A NUL byte: never a file of this writer's. */
	char nul[] = "0\n1\nt 0 1\n\0junk";
	mk_strbuf_reset(&why);
	assert_int_equal(mk_ckpt_parse_offsets("ck", nul, sizeof(nul) - 1, &v,
					       &n, &why), MK_KAFKA_STORAGE_ERROR);
	assert_string_equal(why.buf, "ck: line 4: NUL byte");
	mk_strbuf_release(&out);
	mk_strbuf_release(&why);
}

static void test_epochs_format(void **state)
{
	(void)state;
	mk_epoch_entry in[] = { { 0, 0 }, { 2, 17 }, { 5, 4000 } };
	mk_strbuf out = MK_STRBUF_INIT, why = MK_STRBUF_INIT;
	mk_ckpt_format_epochs(&out, in, 3);
	assert_string_equal(out.buf, "0\n3\n0 0\n2 17\n5 4000\n");
	mk_epoch_entry *v;
	size_t n;
	assert_int_equal(mk_ckpt_parse_epochs("ck", out.buf, out.len, &v, &n,
					      &why), MK_OK);
	assert_int_equal(n, 3);
	assert_int_equal(v[2].epoch, 5);
	assert_int_equal(v[2].start_offset, 4000);
	free(v);
	static const struct { const char *text, *reason; } bad[] = {
		{ "0\n1\n1\n", "ck: line 3: not EPOCH START_OFFSET" },
		{ "0\n1\n1 2 3\n", "ck: line 3: not EPOCH START_OFFSET" },
		{ "0\n1\n-1 0\n", "ck: line 3: bad epoch line" },
		{ "0\n1\n2147483648 0\n", "ck: line 3: bad epoch line" },
		{ "0\n2\n1 5\n1 6\n", "ck: line 4: epochs out of order" },
		{ "0\n2\n1 5\n2 5\n", "ck: line 4: epochs out of order" },
		{ "0\n3\n0 0\n", "ck: line 3: only 1 of the 3 entries the count says" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *copy = strdup(bad[i].text);
		mk_strbuf_reset(&why);
		assert_int_equal(mk_ckpt_parse_epochs("ck", copy, strlen(copy), &v,
						      &n, &why),
				 MK_KAFKA_STORAGE_ERROR);
		free(copy);
		assert_string_equal(why.buf, bad[i].reason);
		assert_null(v);
	}
	mk_strbuf_release(&out);
	mk_strbuf_release(&why);
}

static void test_names(void **state)
{
	(void)state;
	char topic[256];
	int32_t p;
	assert_true(mk_logdir_parse_name("orders-0", topic, sizeof(topic), &p));
	assert_string_equal(topic, "orders");
	assert_int_equal(p, 0);
	assert_true(mk_logdir_parse_name("my-topic-12", topic, sizeof(topic), &p));
	assert_string_equal(topic, "my-topic");
	assert_int_equal(p, 12);
	assert_true(mk_logdir_parse_name("__consumer_offsets-49", topic,
					 sizeof(topic), &p));
	/* As Kafka: the partition after the last '-' ("t--1" is t- 1). */
	assert_true(mk_logdir_parse_name("t--1", topic, sizeof(topic), &p));
	assert_string_equal(topic, "t-");
	const char *no[] = { "log", "t-", "-0", "t-01", "t-+1", "t-x",
			     "t-2147483648", "t/x-0", "..-0" };
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		assert_false(mk_logdir_parse_name(no[i], topic, sizeof(topic), &p));
	assert_false(mk_logdir_parse_name("orders-0", topic, 6, &p));
	assert_true(mk_logdir_owns_name(RP));
	assert_true(mk_logdir_owns_name(HW ".tmp"));
	assert_true(mk_logdir_owns_name(START));
	assert_false(mk_logdir_owns_name(RP "x"));
	assert_false(mk_logdir_owns_name("t-0"));
	assert_false(mk_logdir_owns_name("metadata"));
}

/* ---- a broker directory's files --------------------------------------------- */

static ino_t inode_in(const fixture *f, const char *name)
{
	char path[256];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", f->root, name);
	assert_int_equal(stat(path, &st), 0);
	return st.st_ino;
}

static void test_files(void **state)
{
	fixture *f = *state;
	mk_strbuf text = MK_STRBUF_INIT;
	mk_logdir *ld = acquire(f);
	/* One object per directory, however it is spelt. */
	char other[128];
	snprintf(other, sizeof(other), "%s/./", f->root);
	mk_logdir *same;
	assert_int_equal(mk_logdir_acquire(other, NULL, &same, NULL), MK_OK);
	assert_ptr_equal(same, ld);
	mk_logdir_release(same, true);

	/* Nothing set: no file is made. */
	assert_int_equal(mk_logdir_sync(ld, NULL), MK_OK);
	assert_false(exists_in(f, RP));
	mk_logdir_set(ld, "t", 1, MK_LOGDIR_RECOVERY, 30);
	mk_logdir_set(ld, "t", 0, MK_LOGDIR_RECOVERY, 12);
	mk_logdir_set(ld, "t", 0, MK_LOGDIR_START, 0);
	mk_logdir_set(ld, "a", 3, MK_LOGDIR_HW, 7);
	int64_t v;
	assert_true(mk_logdir_get(ld, "t", 0, MK_LOGDIR_RECOVERY, &v));
	assert_int_equal(v, 12);
	assert_false(mk_logdir_get(ld, "t", 1, MK_LOGDIR_START, &v));
	assert_false(mk_logdir_get(ld, "u", 0, MK_LOGDIR_RECOVERY, &v));
	assert_false(exists_in(f, RP));          /* set is not written */
	assert_int_equal(mk_logdir_sync(ld, NULL), MK_OK);
	text_of(f, RP, &text);
	assert_string_equal(text.buf, "0\n2\nt 0 12\nt 1 30\n");
	text_of(f, START, &text);
	assert_string_equal(text.buf, "0\n1\nt 0 0\n");
	text_of(f, HW, &text);
	assert_string_equal(text.buf, "0\n1\na 3 7\n");

	/* A change rewrites its file only. */
	ino_t rp = inode_in(f, RP), start = inode_in(f, START);
	mk_logdir_set(ld, "t", 0, MK_LOGDIR_RECOVERY, 12);   /* the same */
	mk_logdir_set(ld, "a", 3, MK_LOGDIR_HW, 9);
	assert_int_equal(mk_logdir_sync(ld, NULL), MK_OK);
	assert_int_equal(inode_in(f, RP), rp);
	assert_int_equal(inode_in(f, START), start);
	text_of(f, HW, &text);
	assert_string_equal(text.buf, "0\n1\na 3 9\n");
	mk_logdir_release(ld, true);

	/* Read back by a new object: the values, and nothing rewritten. */
	ld = acquire(f);
	assert_true(mk_logdir_get(ld, "t", 1, MK_LOGDIR_RECOVERY, &v));
	assert_int_equal(v, 30);
	assert_true(mk_logdir_get(ld, "a", 3, MK_LOGDIR_HW, &v));
	assert_int_equal(v, 9);
	assert_int_equal(mk_logdir_sync(ld, NULL), MK_OK);
	assert_int_equal(inode_in(f, RP), rp);
	/* Forget drops the entry from every file; the last release writes. */
	assert_true(mk_logdir_forget(ld, "t", 0));
	assert_false(mk_logdir_forget(ld, "t", 0));
	mk_logdir_release(ld, true);
	text_of(f, RP, &text);
	assert_string_equal(text.buf, "0\n1\nt 1 30\n");
	text_of(f, START, &text);
	assert_string_equal(text.buf, "0\n0\n");
	/* A release told not to write (a crash) leaves the files. */
	ld = acquire(f);
	mk_logdir_set(ld, "t", 1, MK_LOGDIR_RECOVERY, 31);
	mk_logdir_release(ld, false);
	text_of(f, RP, &text);
	assert_string_equal(text.buf, "0\n1\nt 1 30\n");
	mk_strbuf_release(&text);
}

/* A damaged file: every acquire fails naming it, and nothing is written. */
static void test_damage(void **state)
{
	fixture *f = *state;
	put_file(f, RP, "0\n1\nt 0 5\n");
	put_file(f, HW, "0\n2\nt 0 5\n");
	put_file(f, START ".tmp", "0\n1\nt 0 4\n");
	mk_logdir *ld = (mk_logdir *)1;
	mk_strbuf why = MK_STRBUF_INIT, text = MK_STRBUF_INIT;
	assert_int_equal(mk_logdir_acquire(f->root, NULL, &ld, &why),
			 MK_KAFKA_STORAGE_ERROR);
	assert_null(ld);
	assert_non_null(strstr(why.buf, "/" HW ": line 3: only 1 of the 2 entries the count says"));
	text_of(f, HW, &text);
	assert_string_equal(text.buf, "0\n2\nt 0 5\n");
	/* Removed, the file is a missing one: nothing known. */
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", f->root, HW);
	assert_int_equal(unlink(path), 0);
	ld = acquire(f);
	int64_t v;
	assert_false(mk_logdir_get(ld, "t", 0, MK_LOGDIR_HW, &v));
	assert_true(mk_logdir_get(ld, "t", 0, MK_LOGDIR_RECOVERY, &v));
	assert_false(exists_in(f, START ".tmp"));  /* a kill's leftover */
	mk_logdir_release(ld, true);
	assert_false(exists_in(f, HW));
	mk_strbuf_release(&why);
	mk_strbuf_release(&text);
}

/* ---- group commit ----------------------------------------------------------- */

typedef struct {
	mk_logdir *ld;
	const char *root;
	int id;
	bool bad;             /* a sync failed, or returned before its value
			       * was on disk */
} writer;

/* Partition id's recovery point in root's file, without cmocka (which a
 * thread may not call); -1 when unreadable. */
static int64_t on_disk(const char *root, int id)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/" RP, root);
	mk_strbuf text = MK_STRBUF_INIT;
	bool missing;
	int64_t off = -1;
	mk_ckpt_offset *v;
	size_t n;
	if (!mk_file_read(path, &text, &missing) && !missing &&
	    !mk_ckpt_parse_offsets(path, text.buf, text.len, &v, &n, NULL)) {
		for (size_t i = 0; i < n; i++)
			if (v[i].partition == id)
				off = v[i].offset;
		mk_ckpt_offsets_free(v, n);
	}
	mk_strbuf_release(&text);
	return off;
}

static void *write_many(void *arg)
{
	writer *w = arg;
	for (int i = 1; i <= 20 && !w->bad; i++) {
		mk_logdir_set(w->ld, "t", w->id, MK_LOGDIR_RECOVERY, i);
		/* Once its sync returns, what this writer set is on disk
		 * (whichever thread wrote it). */
		w->bad = mk_logdir_sync(w->ld, NULL) != MK_OK ||
			 on_disk(w->root, w->id) != i;
	}
	return NULL;
}

static void test_group_commit(void **state)
{
	fixture *f = *state;
	mk_logdir *ld = acquire(f);
	writer w[8];
	pthread_t th[8];
	for (int i = 0; i < 8; i++) {
		w[i] = (writer){ ld, f->root, i, false };
		assert_int_equal(pthread_create(&th[i], NULL, write_many, &w[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		assert_false(w[i].bad);
	}
	for (int i = 0; i < 8; i++)
		assert_int_equal(tl_ckpt_offset(f->root, MK_LOGDIR_RECOVERY, "t", i),
				 20);
	mk_logdir_release(ld, true);
}

/* ---- a kill at each step of a write ------------------------------------------ */

/*
 * In a forked child: the files hold "t 0 5" everywhere; the child sets 9
 * everywhere and syncs, and dies at point. What each file then says (5 or
 * 9, in the order HW, log start, recovery point) and whether a temporary
 * file is left.
 */
static void test_killed_while_writing(void **state)
{
	fixture *f = *state;
	static const struct {
		const char *point;
		int64_t hw, start, rp;
		const char *tmp;       /* left beside its file, or NULL */
	} steps[] = {
		{ "logdir.high-watermark.after-write", 5, 5, 5, HW ".tmp" },
		{ "logdir.high-watermark.after-fsync", 5, 5, 5, HW ".tmp" },
		{ "logdir.high-watermark.after-rename", 9, 5, 5, NULL },
		{ "logdir.log-start.after-write", 9, 5, 5, START ".tmp" },
		{ "logdir.log-start.done", 9, 9, 5, NULL },
		{ "logdir.recovery-point.after-write", 9, 9, 5, RP ".tmp" },
		{ "logdir.recovery-point.after-fsync", 9, 9, 5, RP ".tmp" },
		{ "logdir.recovery-point.after-rename", 9, 9, 9, NULL },
	};
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		put_file(f, RP, "0\n1\nt 0 5\n");
		put_file(f, START, "0\n1\nt 0 5\n");
		put_file(f, HW, "0\n1\nt 0 5\n");
		fflush(NULL);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			mk_logdir *ld;
			if (mk_logdir_acquire(f->root, NULL, &ld, NULL))
				_exit(2);
			for (int file = 0; file < MK_LOGDIR_NFILES; file++)
				mk_logdir_set(ld, "t", 0, file, 9);
			mk_failpoint_arm(steps[k].point, 1);
			mk_logdir_sync(ld, NULL);
			_exit(3);       /* the point was not reached */
		}
		int st;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		if (!WIFSIGNALED(st))
			print_error("%s: exit %d\n", steps[k].point, WEXITSTATUS(st));
		assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
		assert_int_equal(tl_ckpt_offset(f->root, MK_LOGDIR_HW, "t", 0),
				 steps[k].hw);
		assert_int_equal(tl_ckpt_offset(f->root, MK_LOGDIR_START, "t", 0),
				 steps[k].start);
		assert_int_equal(tl_ckpt_offset(f->root, MK_LOGDIR_RECOVERY, "t", 0),
				 steps[k].rp);
		if (steps[k].tmp) {
			mk_strbuf text = MK_STRBUF_INIT;
			text_of(f, steps[k].tmp, &text);
			assert_string_equal(text.buf, "0\n1\nt 0 9\n");
			mk_strbuf_release(&text);
		}
		/* The next acquire reads what the files say, and the leftover
		 * goes. */
		mk_logdir *ld = acquire(f);
		int64_t v;
		assert_true(mk_logdir_get(ld, "t", 0, MK_LOGDIR_RECOVERY, &v));
		assert_int_equal(v, steps[k].rp);
		if (steps[k].tmp)
			assert_false(exists_in(f, steps[k].tmp));
		mk_logdir_release(ld, true);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offsets_format),
		cmocka_unit_test(test_epochs_format),
		cmocka_unit_test(test_names),
		cmocka_unit_test_setup_teardown(test_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_damage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_group_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_killed_while_writing, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
