/* Unit tests of fs/names.c: the parameter parser of docs/filesystem.md section 3. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "names.h"

/* ---- helpers ------------------------------------------------------------ */

static mk_read_params rec_ok(const char *name)
{
	mk_read_params p;
	mk_strbuf why = MK_STRBUF_INIT;
	memset(&p, 0x5a, sizeof(p));
	mk_err err = mk_name_parse_records(name, &p, &why);
	if (err)
		print_error("%s: %s (%s)\n", name, mk_err_name(err), why.buf);
	assert_int_equal(err, MK_OK);
	mk_strbuf_release(&why);
	return p;
}

/* Rejected; the reason must mention `part` (if given). */
static void rec_bad(const char *name, const char *part)
{
	mk_read_params p, before;
	mk_strbuf why = MK_STRBUF_INIT;
	memset(&p, 0x5a, sizeof(p));
	before = p;
	mk_err err = mk_name_parse_records(name, &p, &why);
	if (err != MK_INVALID_REQUEST)
		print_error("%s: accepted or wrong error\n", name);
	assert_int_equal(err, MK_INVALID_REQUEST);
	/* all or nothing: the output is untouched */
	assert_memory_equal(&p, &before, sizeof(p));
	assert_true(why.len > 0);
	if (part && !strstr(why.buf, part))
		print_error("%s: why '%s' lacks '%s'\n", name, why.buf, part);
	if (part)
		assert_non_null(strstr(why.buf, part));
	mk_strbuf_release(&why);
}

static mk_append_params app_ok(const char *name)
{
	mk_append_params p;
	mk_strbuf why = MK_STRBUF_INIT;
	memset(&p, 0x5a, sizeof(p));
	mk_err err = mk_name_parse_append(name, &p, &why);
	if (err)
		print_error("%s: %s (%s)\n", name, mk_err_name(err), why.buf);
	assert_int_equal(err, MK_OK);
	mk_strbuf_release(&why);
	return p;
}

static void app_bad(const char *name, const char *part)
{
	mk_append_params p, before;
	mk_strbuf why = MK_STRBUF_INIT;
	memset(&p, 0x5a, sizeof(p));
	before = p;
	mk_err err = mk_name_parse_append(name, &p, &why);
	if (err != MK_INVALID_REQUEST)
		print_error("%s: accepted or wrong error\n", name);
	assert_int_equal(err, MK_INVALID_REQUEST);
	assert_memory_equal(&p, &before, sizeof(p));
	assert_true(why.len > 0);
	if (part && !strstr(why.buf, part))
		print_error("%s: why '%s' lacks '%s'\n", name, why.buf, part);
	if (part)
		assert_non_null(strstr(why.buf, part));
	mk_strbuf_release(&why);
}

/* ---- classify ----------------------------------------------------------- */

static void test_classify(void **state)
{
	(void)state;
	assert_int_equal(mk_name_classify("records"), MK_NAME_RECORDS);
	assert_int_equal(mk_name_classify("records@5"), MK_NAME_RECORDS);
	assert_int_equal(mk_name_classify("records@"), MK_NAME_RECORDS);
	assert_int_equal(mk_name_classify("records:tsv"), MK_NAME_RECORDS);
	assert_int_equal(mk_name_classify("records:"), MK_NAME_RECORDS);
	assert_int_equal(mk_name_classify("append"), MK_NAME_APPEND);
	assert_int_equal(mk_name_classify("append:tsv"), MK_NAME_APPEND);
	assert_int_equal(mk_name_classify("append:"), MK_NAME_APPEND);

	assert_int_equal(mk_name_classify("recordsX"), MK_NAME_OTHER);
	assert_int_equal(mk_name_classify("records_x"), MK_NAME_OTHER);
	assert_int_equal(mk_name_classify("record"), MK_NAME_OTHER);
	assert_int_equal(mk_name_classify("Records"), MK_NAME_OTHER);
	assert_int_equal(mk_name_classify("appendX"), MK_NAME_OTHER);
	assert_int_equal(mk_name_classify("append@5"), MK_NAME_OTHER);
	assert_int_equal(mk_name_classify("appen"), MK_NAME_OTHER);
	assert_int_equal(mk_name_classify(""), MK_NAME_OTHER);
	assert_int_equal(mk_name_classify("hw"), MK_NAME_OTHER);
	assert_int_equal(mk_name_classify("xrecords"), MK_NAME_OTHER);
}

static void test_has_params(void **state)
{
	(void)state;
	assert_false(mk_name_has_params("records"));
	assert_false(mk_name_has_params("append"));
	assert_true(mk_name_has_params("records@0"));
	assert_true(mk_name_has_params("records@"));
	assert_true(mk_name_has_params("records:tsv"));
	assert_true(mk_name_has_params("append:tsv"));
	assert_true(mk_name_has_params("append:"));
	assert_false(mk_name_has_params("recordsX"));
	assert_false(mk_name_has_params("hw"));
	assert_false(mk_name_has_params(""));
}

/* ---- records: positions ------------------------------------------------- */

static void test_records_defaults(void **state)
{
	(void)state;
	mk_read_params p = rec_ok("records");
	assert_int_equal(p.pos.kind, MK_POS_EARLIEST);
	assert_int_equal(p.pos.value, 0);
	assert_int_equal(p.format, MK_FORMAT_PLAIN);
	assert_false(p.committed);
	assert_false(p.follow);
	assert_int_equal(p.max, -1);
}

static void test_pos_forms(void **state)
{
	(void)state;
	mk_read_params p;

	p = rec_ok("records@earliest");
	assert_int_equal(p.pos.kind, MK_POS_EARLIEST);
	p = rec_ok("records@latest");
	assert_int_equal(p.pos.kind, MK_POS_LATEST);

	p = rec_ok("records@0");
	assert_int_equal(p.pos.kind, MK_POS_OFFSET);
	assert_int_equal(p.pos.value, 0);
	p = rec_ok("records@42");
	assert_int_equal(p.pos.kind, MK_POS_OFFSET);
	assert_int_equal(p.pos.value, 42);
	p = rec_ok("records@007");
	assert_int_equal(p.pos.kind, MK_POS_OFFSET);
	assert_int_equal(p.pos.value, 7);
	p = rec_ok("records@9223372036854775807");
	assert_int_equal(p.pos.kind, MK_POS_OFFSET);
	assert_true(p.pos.value == INT64_MAX);

	p = rec_ok("records@-3");
	assert_int_equal(p.pos.kind, MK_POS_BACK);
	assert_int_equal(p.pos.value, 3);
	p = rec_ok("records@-0");
	assert_int_equal(p.pos.kind, MK_POS_BACK);
	assert_int_equal(p.pos.value, 0);
	p = rec_ok("records@-9223372036854775807");
	assert_int_equal(p.pos.kind, MK_POS_BACK);
	assert_true(p.pos.value == INT64_MAX);

	p = rec_ok("records@ts=0");
	assert_int_equal(p.pos.kind, MK_POS_TIME);
	assert_int_equal(p.pos.value, 0);
	p = rec_ok("records@ts=1700000000000");
	assert_int_equal(p.pos.kind, MK_POS_TIME);
	assert_true(p.pos.value == 1700000000000LL);

	/* a position with flags after it */
	p = rec_ok("records@17:tsv");
	assert_int_equal(p.pos.kind, MK_POS_OFFSET);
	assert_int_equal(p.pos.value, 17);
	assert_int_equal(p.format, MK_FORMAT_TSV);
	p = rec_ok("records@ts=5:json:max=2");
	assert_int_equal(p.pos.kind, MK_POS_TIME);
	assert_int_equal(p.pos.value, 5);
	assert_int_equal(p.format, MK_FORMAT_JSON);
	assert_int_equal(p.max, 2);
}

static void test_pos_rejections(void **state)
{
	(void)state;
	rec_bad("records@", "empty position");
	rec_bad("records@:tsv", "empty position");
	rec_bad("records@+5", "bad position");
	rec_bad("records@ 5", "bad position");
	rec_bad("records@5 ", "bad position");
	rec_bad("records@5x", "bad position");
	rec_bad("records@0x10", "bad position");
	rec_bad("records@1e3", "bad position");
	rec_bad("records@9223372036854775808", "bad position");
	rec_bad("records@99999999999999999999", "bad position");
	rec_bad("records@-", "bad position");
	rec_bad("records@--1", "bad position");
	rec_bad("records@-+1", "bad position");
	rec_bad("records@-x", "bad position");
	rec_bad("records@-9223372036854775808", "bad position");
	rec_bad("records@ts=", "bad timestamp");
	rec_bad("records@ts=-1", "bad timestamp");
	rec_bad("records@ts=+1", "bad timestamp");
	rec_bad("records@ts=1x", "bad timestamp");
	rec_bad("records@ts", "bad position");
	rec_bad("records@TS=1", "bad position");
	rec_bad("records@Earliest", "bad position");
	rec_bad("records@LATEST", "bad position");
	rec_bad("records@earliestx", "bad position");
	rec_bad("records@first", "bad position");
	rec_bad("records@1@2", "bad position");
	rec_bad("records@1/2", "'/'");

	/* a position longer than MK_NAME_VALUE_MAX */
	char name[8 + MK_NAME_VALUE_MAX + 8];
	strcpy(name, "records@");
	memset(name + 8, '0', MK_NAME_VALUE_MAX + 1);
	name[8 + MK_NAME_VALUE_MAX + 1] = '\0';
	rec_bad(name, "too long");
	/* exactly MK_NAME_VALUE_MAX is fine (leading zeros) */
	name[8 + MK_NAME_VALUE_MAX] = '\0';
	name[8 + MK_NAME_VALUE_MAX - 1] = '9';
	mk_read_params p = rec_ok(name);
	assert_int_equal(p.pos.kind, MK_POS_OFFSET);
	assert_int_equal(p.pos.value, 9);

	/* not a records name at all */
	rec_bad("recordsX", NULL);
	rec_bad("append", NULL);
	rec_bad("", NULL);
}

/* ---- records: flags ----------------------------------------------------- */

static void test_records_flags(void **state)
{
	(void)state;
	mk_read_params p;

	p = rec_ok("records:tsv");
	assert_int_equal(p.pos.kind, MK_POS_EARLIEST);
	assert_int_equal(p.format, MK_FORMAT_TSV);
	assert_int_equal(p.max, -1);

	p = rec_ok("records:json");
	assert_int_equal(p.format, MK_FORMAT_JSON);

	p = rec_ok("records:committed");
	assert_true(p.committed);
	assert_false(p.follow);
	assert_int_equal(p.format, MK_FORMAT_PLAIN);

	p = rec_ok("records:follow");
	assert_true(p.follow);
	assert_false(p.committed);

	p = rec_ok("records:max=1");
	assert_int_equal(p.max, 1);
	p = rec_ok("records:max=9223372036854775807");
	assert_true(p.max == INT64_MAX);

	p = rec_ok("records@latest:follow:committed:tsv:max=10");
	assert_int_equal(p.pos.kind, MK_POS_LATEST);
	assert_true(p.follow);
	assert_true(p.committed);
	assert_int_equal(p.format, MK_FORMAT_TSV);
	assert_int_equal(p.max, 10);

	/* order does not matter */
	p = rec_ok("records@-5:max=3:json:committed");
	assert_int_equal(p.pos.kind, MK_POS_BACK);
	assert_int_equal(p.pos.value, 5);
	assert_int_equal(p.format, MK_FORMAT_JSON);
	assert_true(p.committed);
	assert_false(p.follow);
	assert_int_equal(p.max, 3);
}

static void test_records_flag_rejections(void **state)
{
	(void)state;
	rec_bad("records:bogus", "unknown flag 'bogus'");
	rec_bad("records:TSV", "unknown flag");
	rec_bad("records:tsv=1", "unknown flag");
	rec_bad("records:follow=yes", "unknown flag");
	rec_bad("records:max", "unknown flag");
	rec_bad("records:", "empty flag");
	rec_bad("records:tsv:", "empty flag");
	rec_bad("records::tsv", "empty flag");
	rec_bad("records@0:", "empty flag");

	rec_bad("records:tsv:json", "exclude");
	rec_bad("records:json:tsv", "exclude");

	rec_bad("records:tsv:tsv", "'tsv' given twice");
	rec_bad("records:json:json", "'json' given twice");
	rec_bad("records:committed:committed", "'committed' given twice");
	rec_bad("records:follow:follow", "'follow' given twice");
	rec_bad("records:max=1:max=1", "'max' given twice");
	rec_bad("records:max=1:max=2", "'max' given twice");

	rec_bad("records:max=0", "bad max");
	rec_bad("records:max=", "bad max");
	rec_bad("records:max=-1", "bad max");
	rec_bad("records:max=+1", "bad max");
	rec_bad("records:max=1k", "bad max");
	rec_bad("records:max=9223372036854775808", "bad max");

	/* append-only flags */
	rec_bad("records:acks=1", "for append");
	rec_bad("records:key=a", "for append");
	rec_bad("records:key=", "for append");
	rec_bad("records:producer=p", "for append");
	rec_bad("records:seq=0", "for append");
	rec_bad("records:txn=t", "for append");

	rec_bad("records:tsv/x", "'/'");

	char name[16 + MK_NAME_VALUE_MAX + 8];
	strcpy(name, "records:max=");
	size_t n = strlen(name);
	memset(name + n, '0', MK_NAME_VALUE_MAX);
	name[n + MK_NAME_VALUE_MAX] = '1';
	name[n + MK_NAME_VALUE_MAX + 1] = '\0';
	rec_bad(name, "too long");
}

/* ---- append ------------------------------------------------------------- */

static void test_append_defaults(void **state)
{
	(void)state;
	mk_append_params p = app_ok("append");
	assert_int_equal(p.acks, MK_ACKS_DEFAULT);
	assert_int_equal(p.format, MK_FORMAT_PLAIN);
	assert_false(p.has_key);
	assert_int_equal(p.key_len, 0);
	assert_string_equal(p.producer, "");
	assert_int_equal(p.seq, -1);
	assert_string_equal(p.txn, "");
}

static void test_append_flags(void **state)
{
	(void)state;
	mk_append_params p;

	p = app_ok("append:tsv");
	assert_int_equal(p.format, MK_FORMAT_TSV);
	assert_int_equal(p.acks, MK_ACKS_DEFAULT);

	p = app_ok("append:acks=0");
	assert_int_equal(p.acks, 0);
	p = app_ok("append:acks=1");
	assert_int_equal(p.acks, 1);
	p = app_ok("append:acks=all");
	assert_int_equal(p.acks, MK_ACKS_ALL);
	p = app_ok("append:acks=-1");
	assert_int_equal(p.acks, MK_ACKS_ALL);

	p = app_ok("append:key=user42");
	assert_true(p.has_key);
	assert_int_equal(p.key_len, 6);
	assert_memory_equal(p.key, "user42", 6);
	assert_int_equal(p.key[6], '\0');

	p = app_ok("append:key=");
	assert_true(p.has_key);
	assert_int_equal(p.key_len, 0);

	/* any byte but ':' and '/' */
	p = app_ok("append:key=a b=c@\t\xc3\xa9\x01");
	assert_true(p.has_key);
	assert_int_equal(p.key_len, 10);
	assert_memory_equal(p.key, "a b=c@\t\xc3\xa9\x01", 10);

	p = app_ok("append:producer=p-1.x_Y");
	assert_string_equal(p.producer, "p-1.x_Y");
	assert_int_equal(p.seq, -1);

	p = app_ok("append:producer=p:seq=0");
	assert_string_equal(p.producer, "p");
	assert_int_equal(p.seq, 0);
	p = app_ok("append:seq=2147483647:producer=p");
	assert_int_equal(p.seq, INT32_MAX);

	p = app_ok("append:txn=t.1");
	assert_string_equal(p.txn, "t.1");

	p = app_ok("append:tsv:acks=all:key=k:producer=pr:seq=5:txn=tx");
	assert_int_equal(p.format, MK_FORMAT_TSV);
	assert_int_equal(p.acks, MK_ACKS_ALL);
	assert_true(p.has_key);
	assert_int_equal(p.key_len, 1);
	assert_memory_equal(p.key, "k", 1);
	assert_string_equal(p.producer, "pr");
	assert_int_equal(p.seq, 5);
	assert_string_equal(p.txn, "tx");

	/* values of exactly MK_NAME_VALUE_MAX bytes */
	char name[16 + MK_NAME_VALUE_MAX + 8];
	strcpy(name, "append:key=");
	size_t n = strlen(name);
	memset(name + n, 'k', MK_NAME_VALUE_MAX);
	name[n + MK_NAME_VALUE_MAX] = '\0';
	p = app_ok(name);
	assert_int_equal(p.key_len, MK_NAME_VALUE_MAX);
	assert_int_equal(p.key[MK_NAME_VALUE_MAX - 1], 'k');
	assert_int_equal(p.key[MK_NAME_VALUE_MAX], '\0');

	strcpy(name, "append:producer=");
	n = strlen(name);
	memset(name + n, 'p', MK_NAME_VALUE_MAX);
	name[n + MK_NAME_VALUE_MAX] = '\0';
	p = app_ok(name);
	assert_int_equal(strlen(p.producer), MK_NAME_VALUE_MAX);

	strcpy(name, "append:txn=");
	n = strlen(name);
	memset(name + n, 't', MK_NAME_VALUE_MAX);
	name[n + MK_NAME_VALUE_MAX] = '\0';
	p = app_ok(name);
	assert_int_equal(strlen(p.txn), MK_NAME_VALUE_MAX);
}

static void test_append_rejections(void **state)
{
	(void)state;
	app_bad("append:bogus", "unknown flag 'bogus'");
	app_bad("append:", "empty flag");
	app_bad("append::tsv", "empty flag");
	app_bad("append:tsv:", "empty flag");
	app_bad("append:tsv=1", "unknown flag");
	app_bad("append:key", "unknown flag");
	app_bad("append:acks", "unknown flag");

	/* records-only flags */
	app_bad("append:json", "for records");
	app_bad("append:committed", "for records");
	app_bad("append:follow", "for records");
	app_bad("append:max=3", "for records");

	app_bad("append:acks=2", "bad acks");
	app_bad("append:acks=", "bad acks");
	app_bad("append:acks=ALL", "bad acks");
	app_bad("append:acks=-2", "bad acks");
	app_bad("append:acks=01", "bad acks");

	app_bad("append:producer=", "bad producer");
	app_bad("append:producer=a b", "bad producer");
	app_bad("append:producer=a@b", "bad producer");
	app_bad("append:producer=\xc3\xa9", "bad producer");
	app_bad("append:txn=", "bad transaction");
	app_bad("append:txn=a=b", "bad transaction");
	app_bad("append:txn=a\tb", "bad transaction");

	app_bad("append:seq=1", "needs producer");
	app_bad("append:txn=t:seq=1", "needs producer");
	app_bad("append:producer=p:seq=", "bad seq");
	app_bad("append:producer=p:seq=-1", "bad seq");
	app_bad("append:producer=p:seq=x", "bad seq");
	app_bad("append:producer=p:seq=2147483648", "bad seq");

	app_bad("append:tsv:tsv", "'tsv' given twice");
	app_bad("append:acks=1:acks=1", "'acks' given twice");
	app_bad("append:acks=0:acks=all", "'acks' given twice");
	app_bad("append:key=a:key=b", "'key' given twice");
	app_bad("append:key=:key=", "'key' given twice");
	app_bad("append:producer=a:producer=a", "'producer' given twice");
	app_bad("append:producer=a:seq=1:seq=2", "'seq' given twice");
	app_bad("append:txn=a:txn=b", "'txn' given twice");

	app_bad("append:key=a/b", "'/'");

	/* values longer than MK_NAME_VALUE_MAX */
	const char *prefixes[] = { "append:key=", "append:producer=",
				   "append:txn=", "append:acks=" };
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		char name[32 + MK_NAME_VALUE_MAX + 8];
		strcpy(name, prefixes[i]);
		size_t n = strlen(name);
		memset(name + n, 'v', MK_NAME_VALUE_MAX + 1);
		name[n + MK_NAME_VALUE_MAX + 1] = '\0';
		app_bad(name, "too long");
	}

	/* not an append name */
	app_bad("append@0", NULL);
	app_bad("appendx", NULL);
	app_bad("records", NULL);
}

static void test_why_optional(void **state)
{
	(void)state;
	mk_read_params rp;
	mk_append_params ap;
	assert_int_equal(mk_name_parse_records("records:nope", &rp, NULL),
			 MK_INVALID_REQUEST);
	assert_int_equal(mk_name_parse_records("records@1", &rp, NULL), MK_OK);
	assert_int_equal(rp.pos.value, 1);
	assert_int_equal(mk_name_parse_append("append:nope", &ap, NULL),
			 MK_INVALID_REQUEST);
	assert_int_equal(mk_name_parse_append("append:acks=0", &ap, NULL),
			 MK_OK);
	assert_int_equal(ap.acks, 0);
}

/* A member's poll file takes the flags of records, and no position. */
static void test_poll_names(void **state)
{
	(void)state;
	mk_read_params rp;
	assert_int_equal(mk_name_classify("poll"), MK_NAME_POLL);
	assert_int_equal(mk_name_classify("poll:tsv"), MK_NAME_POLL);
	assert_int_equal(mk_name_classify("polls"), MK_NAME_OTHER);
	assert_int_equal(mk_name_classify("poll@1"), MK_NAME_OTHER);
	assert_false(mk_name_has_params("poll"));
	assert_true(mk_name_has_params("poll:json"));
	assert_int_equal(mk_name_parse_poll("poll", &rp, NULL), MK_OK);
	assert_int_equal(rp.format, MK_FORMAT_PLAIN);
	assert_int_equal(rp.max, -1);
	assert_false(rp.follow);
	assert_int_equal(mk_name_parse_poll("poll:json:max=7:committed:follow", &rp, NULL), MK_OK);
	assert_int_equal(rp.format, MK_FORMAT_JSON);
	assert_int_equal(rp.max, 7);
	assert_true(rp.committed);
	assert_true(rp.follow);
	static const char *const bad[] = { "poll:", "poll:tsv:json", "poll:max=0",
					   "poll:acks=1", "poll:tsv:tsv", "poll@1",
					   "records", "poll:x/y" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mk_strbuf why = MK_STRBUF_INIT;
		if (mk_name_parse_poll(bad[i], &rp, &why) != MK_INVALID_REQUEST)
			fail_msg("%s parsed", bad[i]);
		assert_true(why.len > 0);
		mk_strbuf_release(&why);
	}
}

static void test_batches_and_txt(void **state)
{
	(void)state;
	mk_read_params p;
	assert_int_equal(mk_name_classify("batches"), MK_NAME_BATCHES);
	assert_int_equal(mk_name_classify("batches@3:json"), MK_NAME_BATCHES);
	assert_int_equal(mk_name_classify("batchesX"), MK_NAME_OTHER);
	assert_int_equal(mk_name_parse_batches("batches", &p, NULL), MK_OK);
	assert_int_equal(p.pos.kind, MK_POS_EARLIEST);
	assert_int_equal(mk_name_parse_batches("batches@-2:json:max=3", &p, NULL), MK_OK);
	assert_int_equal(p.pos.kind, MK_POS_BACK);
	assert_int_equal(p.pos.value, 2);
	assert_int_equal(p.format, MK_FORMAT_JSON);
	assert_int_equal(p.max, 3);
	assert_int_equal(mk_name_parse_batches("batches:tsv:follow", &p, NULL), MK_OK);
	assert_true(p.follow);
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(mk_name_parse_batches("batches:committed", &p, &why),
			 MK_INVALID_REQUEST);
	assert_non_null(strstr(why.buf, "committed"));
	mk_strbuf_release(&why);
	assert_int_equal(mk_name_parse_batches("records", &p, NULL), MK_INVALID_REQUEST);
	assert_int_equal(mk_name_parse_records("batches", &p, NULL), MK_INVALID_REQUEST);
	assert_int_equal(mk_name_parse_batches("batches:key=a", &p, NULL), MK_INVALID_REQUEST);
	char base[64];
	assert_true(mk_name_txt_view("00000000000000000000.index:txt", base, sizeof(base)));
	assert_string_equal(base, "00000000000000000000.index");
	assert_false(mk_name_txt_view("00000000000000000000.index", base, sizeof(base)));
	assert_false(mk_name_txt_view(":txt", base, sizeof(base)));
	assert_false(mk_name_txt_view("x:txt", base, 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_poll_names),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_has_params),
		cmocka_unit_test(test_records_defaults),
		cmocka_unit_test(test_pos_forms),
		cmocka_unit_test(test_pos_rejections),
		cmocka_unit_test(test_records_flags),
		cmocka_unit_test(test_records_flag_rejections),
		cmocka_unit_test(test_append_defaults),
		cmocka_unit_test(test_append_flags),
		cmocka_unit_test(test_append_rejections),
		cmocka_unit_test(test_why_optional),
		cmocka_unit_test(test_batches_and_txt),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
