/* Unit tests of fs/format.c: the record formats of docs/filesystem.md section 4. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dump.h"
#include "format.h"

/* ---- a sink that keeps copies of what it is given ------------------------ */

#define MAXREC 64

typedef struct {
	bool null;
	mk_strbuf b;
} owned;

typedef struct {
	owned key, value;
	size_t nheaders;
	owned hname[MK_FORMAT_MAX_HEADERS];
	owned hvalue[MK_FORMAT_MAX_HEADERS];
} rec;

typedef struct {
	size_t n;
	rec r[MAXREC];
	/* pointers given for values, to check the plain path does not copy */
	const uint8_t *vptr[MAXREC];
	int fail_at;       /* return an error on this record (1-based), 0: never */
} collector;

static void own(owned *o, mk_bytes b)
{
	mk_strbuf_init(&o->b, 0);
	o->null = b.len < 0;
	if (b.len > 0)
		mk_strbuf_add(&o->b, b.ptr, (size_t)b.len);
}

static mk_err collect(void *arg, mk_bytes key, mk_bytes value,
		      const mk_header *headers, size_t nheaders)
{
	collector *c = arg;
	assert_true(c->n < MAXREC);
	if (c->fail_at && (int)c->n + 1 == c->fail_at)
		return MK_OUT_OF_MEMORY;
	rec *r = &c->r[c->n];
	own(&r->key, key);
	own(&r->value, value);
	assert_true(nheaders <= MK_FORMAT_MAX_HEADERS);
	r->nheaders = nheaders;
	for (size_t i = 0; i < nheaders; i++) {
		assert_true(headers[i].name.len >= 0);
		own(&r->hname[i], headers[i].name);
		own(&r->hvalue[i], headers[i].value);
	}
	c->vptr[c->n] = value.ptr;
	c->n++;
	return MK_OK;
}

static void collector_free(collector *c)
{
	for (size_t i = 0; i < c->n; i++) {
		mk_strbuf_release(&c->r[i].key.b);
		mk_strbuf_release(&c->r[i].value.b);
		for (size_t h = 0; h < c->r[i].nheaders; h++) {
			mk_strbuf_release(&c->r[i].hname[h].b);
			mk_strbuf_release(&c->r[i].hvalue[h].b);
		}
	}
	memset(c, 0, sizeof(*c));
}

static void assert_owned(const owned *o, const char *s, size_t n)
{
	if (!s) {
		assert_true(o->null);
		return;
	}
	assert_false(o->null);
	assert_int_equal(o->b.len, n);
	assert_memory_equal(o->b.buf, s, n);
}
#define ASSERT_STR(o, lit) assert_owned((o), (lit), sizeof(lit) - 1)
#define ASSERT_NULL(o) assert_owned((o), NULL, 0)

static const mk_parse_opts plain_opts = { MK_FORMAT_PLAIN, false, { NULL, -1 }, 0 };
static const mk_parse_opts tsv_opts = { MK_FORMAT_TSV, false, { NULL, -1 }, 0 };

static mk_err parse(const mk_parse_opts *o, const char *buf, size_t len,
		    bool final, collector *c, size_t *consumed, mk_strbuf *why)
{
	return mk_parse_lines(o, buf, len, final, collect, c, consumed, why);
}
#define PARSE(o, lit, final, c, consumed, why) \
	parse((o), (lit), sizeof(lit) - 1, (final), (c), (consumed), (why))

/* ---- plain parsing ------------------------------------------------------ */

static void test_plain_lines(void **state)
{
	(void)state;
	collector c = { 0 };
	size_t used = 99;
	static const char in[] = "one\ntwo\n\nfour\r\n";
	assert_int_equal(PARSE(&plain_opts, in, false, &c, &used, NULL), MK_OK);
	assert_int_equal(used, sizeof(in) - 1);
	assert_int_equal(c.n, 4);
	ASSERT_NULL(&c.r[0].key);
	ASSERT_STR(&c.r[0].value, "one");
	ASSERT_STR(&c.r[1].value, "two");
	ASSERT_STR(&c.r[2].value, "");          /* empty, not null */
	ASSERT_STR(&c.r[3].value, "four\r");    /* CR is data */
	assert_int_equal(c.r[0].nheaders, 0);
	/* no copying: values point into the input */
	assert_ptr_equal(c.vptr[0], (const uint8_t *)in);
	assert_ptr_equal(c.vptr[1], (const uint8_t *)in + 4);
	assert_ptr_equal(c.vptr[3], (const uint8_t *)in + 9);
	collector_free(&c);
}

static void test_plain_partial(void **state)
{
	(void)state;
	collector c = { 0 };
	size_t used = 99;

	/* not final: the unterminated tail stays */
	assert_int_equal(PARSE(&plain_opts, "a\nbc\npart", false, &c, &used,
			       NULL), MK_OK);
	assert_int_equal(used, 5);
	assert_int_equal(c.n, 2);
	ASSERT_STR(&c.r[1].value, "bc");
	collector_free(&c);

	/* final: the unterminated tail is a record */
	assert_int_equal(PARSE(&plain_opts, "a\nbc\npart", true, &c, &used,
			       NULL), MK_OK);
	assert_int_equal(used, 9);
	assert_int_equal(c.n, 3);
	ASSERT_STR(&c.r[2].value, "part");
	collector_free(&c);

	/* only a partial line */
	assert_int_equal(PARSE(&plain_opts, "xyz", false, &c, &used, NULL),
			 MK_OK);
	assert_int_equal(used, 0);
	assert_int_equal(c.n, 0);

	/* nothing at all, final or not: no record */
	assert_int_equal(parse(&plain_opts, "", 0, true, &c, &used, NULL), MK_OK);
	assert_int_equal(used, 0);
	assert_int_equal(c.n, 0);

	/* a single newline is one empty record */
	assert_int_equal(PARSE(&plain_opts, "\n", false, &c, &used, NULL), MK_OK);
	assert_int_equal(used, 1);
	assert_int_equal(c.n, 1);
	ASSERT_STR(&c.r[0].value, "");
	collector_free(&c);

	/* terminated input with final: no extra empty record at the end */
	assert_int_equal(PARSE(&plain_opts, "a\n\n", true, &c, &used, NULL),
			 MK_OK);
	assert_int_equal(used, 3);
	assert_int_equal(c.n, 2);
	collector_free(&c);
}

static void test_plain_key_and_binary(void **state)
{
	(void)state;
	collector c = { 0 };
	size_t used;
	mk_parse_opts o = plain_opts;
	o.has_key = true;
	o.key = mk_bytes_of("k1", 2);
	static const char in[] = "x\0y\t\\N\n\\q\n";
	assert_int_equal(PARSE(&o, in, true, &c, &used, NULL), MK_OK);
	assert_int_equal(c.n, 2);
	ASSERT_STR(&c.r[0].key, "k1");
	/* plain is not unescaped: NUL, TAB and backslashes are data */
	ASSERT_STR(&c.r[0].value, "x\0y\t\\N");
	ASSERT_STR(&c.r[1].value, "\\q");
	ASSERT_STR(&c.r[1].key, "k1");
	collector_free(&c);

	/* the empty key */
	o.key = mk_bytes_of("", 0);
	assert_int_equal(PARSE(&o, "v\n", true, &c, &used, NULL), MK_OK);
	ASSERT_STR(&c.r[0].key, "");
	collector_free(&c);
}

static void test_max_line(void **state)
{
	(void)state;
	collector c = { 0 };
	size_t used;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_parse_opts o = plain_opts;
	o.max_line = 3;

	assert_int_equal(PARSE(&o, "abc\nde\n", false, &c, &used, &why), MK_OK);
	assert_int_equal(c.n, 2);
	collector_free(&c);

	assert_int_equal(PARSE(&o, "abc\nabcd\n", false, &c, &used, &why),
			 MK_MESSAGE_TOO_LARGE);
	assert_non_null(strstr(why.buf, "line 2"));
	collector_free(&c);
	mk_strbuf_reset(&why);

	/* a partial line already over the bound fails early */
	assert_int_equal(PARSE(&o, "ab\nabcd", false, &c, &used, &why),
			 MK_MESSAGE_TOO_LARGE);
	collector_free(&c);
	/* a partial line within the bound waits */
	assert_int_equal(PARSE(&o, "ab\nabc", false, &c, &used, &why), MK_OK);
	assert_int_equal(used, 3);
	collector_free(&c);

	o.format = MK_FORMAT_TSV;
	assert_int_equal(PARSE(&o, "a\tb\n", false, &c, &used, &why), MK_OK);
	collector_free(&c);
	mk_strbuf_reset(&why);
	assert_int_equal(PARSE(&o, "a\tbc\n", false, &c, &used, &why),
			 MK_MESSAGE_TOO_LARGE);
	assert_non_null(strstr(why.buf, "line 1"));
	collector_free(&c);
	mk_strbuf_release(&why);
}

static void test_sink_error_stops(void **state)
{
	(void)state;
	collector c = { 0 };
	size_t used;
	c.fail_at = 2;
	assert_int_equal(PARSE(&plain_opts, "a\nb\nc\n", true, &c, &used, NULL),
			 MK_OUT_OF_MEMORY);
	assert_int_equal(c.n, 1);
	assert_int_equal(used, 2);
	collector_free(&c);

	c.fail_at = 1;
	assert_int_equal(PARSE(&tsv_opts, "a\nb\n", true, &c, &used, NULL),
			 MK_OUT_OF_MEMORY);
	assert_int_equal(c.n, 0);
	collector_free(&c);
}

/* ---- TSV escaping ------------------------------------------------------- */

static void unesc_ok(const char *in, const char *want, size_t wantlen)
{
	mk_strbuf out = MK_STRBUF_INIT;
	bool is_null = true;
	mk_strbuf_addstr(&out, "pre");   /* unescape appends */
	assert_int_equal(mk_tsv_unescape(in, strlen(in), &out, &is_null), MK_OK);
	assert_false(is_null);
	assert_int_equal(out.len, 3 + wantlen);
	assert_memory_equal(out.buf, "pre", 3);
	assert_memory_equal(out.buf + 3, want, wantlen);
	mk_strbuf_release(&out);
}

static void unesc_bad(const char *in)
{
	mk_strbuf out = MK_STRBUF_INIT;
	bool is_null = false;
	assert_int_equal(mk_tsv_unescape(in, strlen(in), &out, &is_null),
			 MK_INVALID_RECORD);
	mk_strbuf_release(&out);
}

static void test_tsv_unescape(void **state)
{
	(void)state;
	unesc_ok("", "", 0);
	unesc_ok("plain", "plain", 5);
	unesc_ok("a\\\\b", "a\\b", 3);
	unesc_ok("\\t\\n\\r", "\t\n\r", 3);
	unesc_ok("\\x00\\x7f\\xFF\\xaB", "\0\x7f\xff\xab", 4);
	unesc_ok("\\x41BC", "ABC", 3);
	unesc_ok("\\\\N", "\\N", 2);       /* escaped backslash: not null */
	unesc_ok("\xc3\xa9", "\xc3\xa9", 2);
	unesc_ok("a=b", "a=b", 3);

	mk_strbuf out = MK_STRBUF_INIT;
	bool is_null = false;
	assert_int_equal(mk_tsv_unescape("\\N", 2, &out, &is_null), MK_OK);
	assert_true(is_null);
	assert_int_equal(out.len, 0);
	mk_strbuf_release(&out);

	unesc_bad("\\");
	unesc_bad("a\\");
	unesc_bad("\\q");
	unesc_bad("\\N\\N");
	unesc_bad("a\\N");
	unesc_bad("\\Na");
	unesc_bad("\\T");
	unesc_bad("\\0");
	unesc_bad("\\x");
	unesc_bad("\\x4");
	unesc_bad("\\x4g");
	unesc_bad("\\xg4");
	unesc_bad("\\X41");
	unesc_bad("\\ ");
}

static void esc_is(mk_bytes in, const char *want)
{
	mk_strbuf out = MK_STRBUF_INIT;
	mk_tsv_escape(in, &out);
	assert_string_equal(out.buf, want);
	mk_strbuf_release(&out);
}

static void test_tsv_escape(void **state)
{
	(void)state;
	esc_is(MK_BYTES_NULL, "\\N");
	esc_is(mk_bytes_of("", 0), "");
	esc_is(mk_bytes_of("abc", 3), "abc");
	esc_is(mk_bytes_of("\\N", 2), "\\\\N");
	esc_is(mk_bytes_of("a\tb\nc\rd\\e", 9), "a\\tb\\nc\\rd\\\\e");
	esc_is(mk_bytes_of("\0\x01\x1f\x7f", 4), "\\x00\\x01\\x1f\\x7f");
	esc_is(mk_bytes_of(" ~=", 3), " ~=");
	/* bytes >= 0x80 pass through: UTF-8 stays readable */
	esc_is(mk_bytes_of("\xc3\xa9\xff\x80", 4), "\xc3\xa9\xff\x80");
}

/* ---- TSV parsing -------------------------------------------------------- */

static void test_tsv_shapes(void **state)
{
	(void)state;
	collector c = { 0 };
	size_t used;
	static const char in[] =
		"v1\n"
		"k2\tv2\n"
		"k3\tv3\th1=a\th2=\tn\\x3dq=b=c\th4=\\N\n"
		"\n"
		"\\N\n"
		"\\N\t\\N\n"
		"\t\n"
		"k\\tx\tv\\\\y\\n\n";
	assert_int_equal(PARSE(&tsv_opts, in, false, &c, &used, NULL), MK_OK);
	assert_int_equal(used, sizeof(in) - 1);
	assert_int_equal(c.n, 8);

	ASSERT_NULL(&c.r[0].key);
	ASSERT_STR(&c.r[0].value, "v1");

	ASSERT_STR(&c.r[1].key, "k2");
	ASSERT_STR(&c.r[1].value, "v2");
	assert_int_equal(c.r[1].nheaders, 0);

	ASSERT_STR(&c.r[2].key, "k3");
	ASSERT_STR(&c.r[2].value, "v3");
	assert_int_equal(c.r[2].nheaders, 4);
	ASSERT_STR(&c.r[2].hname[0], "h1");
	ASSERT_STR(&c.r[2].hvalue[0], "a");
	ASSERT_STR(&c.r[2].hname[1], "h2");
	ASSERT_STR(&c.r[2].hvalue[1], "");        /* empty header value */
	ASSERT_STR(&c.r[2].hname[2], "n=q");      /* split at the raw '=' */
	ASSERT_STR(&c.r[2].hvalue[2], "b=c");
	ASSERT_STR(&c.r[2].hname[3], "h4");
	ASSERT_NULL(&c.r[2].hvalue[3]);           /* NAME=\N: null value */

	ASSERT_NULL(&c.r[3].key);                 /* empty line */
	ASSERT_STR(&c.r[3].value, "");

	ASSERT_NULL(&c.r[4].key);                 /* tombstone */
	ASSERT_NULL(&c.r[4].value);

	ASSERT_NULL(&c.r[5].key);
	ASSERT_NULL(&c.r[5].value);

	ASSERT_STR(&c.r[6].key, "");              /* empty key, empty value */
	ASSERT_STR(&c.r[6].value, "");

	ASSERT_STR(&c.r[7].key, "k\tx");
	ASSERT_STR(&c.r[7].value, "v\\y\n");
	collector_free(&c);

	/* a partial TSV line waits for more unless final */
	assert_int_equal(PARSE(&tsv_opts, "a\tb\nc\td", false, &c, &used, NULL),
			 MK_OK);
	assert_int_equal(used, 4);
	assert_int_equal(c.n, 1);
	collector_free(&c);
	assert_int_equal(PARSE(&tsv_opts, "a\tb\nc\td", true, &c, &used, NULL),
			 MK_OK);
	assert_int_equal(used, 7);
	assert_int_equal(c.n, 2);
	ASSERT_STR(&c.r[1].key, "c");
	ASSERT_STR(&c.r[1].value, "d");
	collector_free(&c);

	/* CR at the end of a TSV line is data too */
	assert_int_equal(PARSE(&tsv_opts, "k\tv\r\n", true, &c, &used, NULL),
			 MK_OK);
	ASSERT_STR(&c.r[0].value, "v\r");
	collector_free(&c);
}

static void test_tsv_with_key_param(void **state)
{
	(void)state;
	collector c = { 0 };
	size_t used;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_parse_opts o = tsv_opts;
	o.has_key = true;
	o.key = mk_bytes_of("K", 1);

	assert_int_equal(PARSE(&o, "v\\t1\n\\N\n", true, &c, &used, &why), MK_OK);
	assert_int_equal(c.n, 2);
	ASSERT_STR(&c.r[0].key, "K");
	ASSERT_STR(&c.r[0].value, "v\t1");
	ASSERT_STR(&c.r[1].key, "K");
	ASSERT_NULL(&c.r[1].value);
	collector_free(&c);

	assert_int_equal(PARSE(&o, "v\nk\tv\n", true, &c, &used, &why),
			 MK_INVALID_RECORD);
	assert_non_null(strstr(why.buf, "line 2"));
	assert_non_null(strstr(why.buf, "key given twice"));
	collector_free(&c);
	mk_strbuf_reset(&why);

	assert_int_equal(PARSE(&o, "k\tv\th=1\n", true, &c, &used, &why),
			 MK_INVALID_RECORD);
	assert_non_null(strstr(why.buf, "key given twice"));
	collector_free(&c);
	mk_strbuf_release(&why);
}

static void tsv_bad(const char *in, size_t len, const char *why_part)
{
	collector c = { 0 };
	size_t used;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = parse(&tsv_opts, in, len, true, &c, &used, &why);
	if (err != MK_INVALID_RECORD || !strstr(why.buf, why_part))
		print_error("input '%.*s': %s, why '%s', want '%s'\n", (int)len,
			    in, mk_err_name(err), why.buf, why_part);
	assert_int_equal(err, MK_INVALID_RECORD);
	assert_non_null(strstr(why.buf, why_part));
	collector_free(&c);
	mk_strbuf_release(&why);
}
#define TSV_BAD(lit, part) tsv_bad((lit), sizeof(lit) - 1, (part))

static void test_tsv_rejections(void **state)
{
	(void)state;
	TSV_BAD("ok\nok\nbad\\q\n", "line 3: bad escape \\q");
	TSV_BAD("a\\", "line 1: backslash at end of field");
	TSV_BAD("a\\\tb", "line 1: backslash at end of field");
	TSV_BAD("k\tv\\x4", "line 1: bad escape \\x4");
	TSV_BAD("k\tv\\x4g\n", "line 1: bad escape \\x4g");
	TSV_BAD("k\tv\\x\tz\n", "bad escape");
	TSV_BAD("\\x", "bad escape \\x");
	TSV_BAD("a\\Nb", "bad escape \\N");
	TSV_BAD("\\N\\N", "bad escape \\N");
	TSV_BAD("k\tv\\\x01", "bad escape \\\\x01");   /* shown escaped */
	TSV_BAD("k\tv\th\n", "line 1: header without '='");
	TSV_BAD("k\tv\ta=1\t\n", "header without '='");
	TSV_BAD("k\tv\t=1\n", "empty header name");
	TSV_BAD("k\tv\t\\N=1\n", "null header name");
	TSV_BAD("k\tv\th=\\q\n", "bad escape \\q");
	TSV_BAD("k\tv\th\\q=1\n", "bad escape \\q");
	TSV_BAD("k\tv\th=\\N\\N\n", "bad escape");

	/* exactly MK_FORMAT_MAX_HEADERS headers are fine, one more is not */
	mk_strbuf in = MK_STRBUF_INIT;
	mk_strbuf_addstr(&in, "k\tv");
	for (int i = 0; i < MK_FORMAT_MAX_HEADERS; i++)
		mk_strbuf_addf(&in, "\th%d=%d", i, i);
	mk_strbuf_addch(&in, '\n');
	collector c = { 0 };
	size_t used;
	assert_int_equal(parse(&tsv_opts, in.buf, in.len, true, &c, &used, NULL),
			 MK_OK);
	assert_int_equal(c.r[0].nheaders, MK_FORMAT_MAX_HEADERS);
	ASSERT_STR(&c.r[0].hname[MK_FORMAT_MAX_HEADERS - 1], "h63");
	ASSERT_STR(&c.r[0].hvalue[MK_FORMAT_MAX_HEADERS - 1], "63");
	collector_free(&c);
	mk_strbuf_setlen(&in, in.len - 1);
	mk_strbuf_addstr(&in, "\tone=more\n");
	tsv_bad(in.buf, in.len, "too many headers");

	/* a header name over the frame's i16 */
	mk_strbuf_reset(&in);
	mk_strbuf_addstr(&in, "k\tv\t");
	for (int i = 0; i < 32768; i++)
		mk_strbuf_addch(&in, 'n');
	mk_strbuf_addstr(&in, "=v\n");
	tsv_bad(in.buf, in.len, "header name too long");
	/* 32767 is fine */
	mk_strbuf_reset(&in);
	mk_strbuf_addstr(&in, "k\tv\t");
	for (int i = 0; i < 32767; i++)
		mk_strbuf_addch(&in, 'n');
	mk_strbuf_addstr(&in, "=v\n");
	assert_int_equal(parse(&tsv_opts, in.buf, in.len, true, &c, &used, NULL),
			 MK_OK);
	assert_int_equal(c.r[0].hname[0].b.len, 32767);
	collector_free(&c);
	mk_strbuf_release(&in);

	/* errors without why */
	assert_int_equal(PARSE(&tsv_opts, "\\q\n", true, &c, &used, NULL),
			 MK_INVALID_RECORD);
	collector_free(&c);
}

/*
 * The one scan of a TSV line finds TABs, backslashes and the newline
 * wherever they fall against its 64-byte blocks and the copied last block
 * at the end of the buffer: keys and values of every length up to 40,
 * with and without an escape at every position, as lines back to back,
 * through mk_parse_lines and mk_parse_records alike.
 */
static void test_tsv_scan_positions(void **state)
{
	(void)state;
	char key[64], val[64], want_val[64];
	mk_strbuf in = MK_STRBUF_INIT;
	for (size_t kl = 0; kl <= 40; kl++)
		for (size_t vl = 0; vl <= 40; vl++)
			for (size_t esc = 0; esc <= vl + 1; esc += 3) {
				/* value: vl letters, "\t" at esc when esc < vl */
				size_t n = 0, w = 0;
				for (size_t i = 0; i < vl; i++) {
					if (i == esc) {
						val[n++] = '\\';
						val[n++] = 't';
						want_val[w++] = '\t';
					}
					val[n++] = (char)('a' + i % 26);
					want_val[w++] = (char)('a' + i % 26);
				}
				for (size_t i = 0; i < kl; i++)
					key[i] = (char)('A' + i % 26);
				mk_strbuf_reset(&in);
				for (int line = 0; line < 2; line++) {
					mk_strbuf_add(&in, key, kl);
					mk_strbuf_addch(&in, '\t');
					mk_strbuf_add(&in, val, n);
					if (line == 0)
						mk_strbuf_addch(&in, '\n');
				}
				collector c = { 0 };
				size_t used;
				assert_int_equal(parse(&tsv_opts, in.buf, in.len, true,
						       &c, &used, NULL), MK_OK);
				assert_int_equal(used, in.len);
				assert_int_equal(c.n, 2);
				for (int r = 0; r < 2; r++) {
					assert_owned(&c.r[r].key, key, kl);
					assert_owned(&c.r[r].value, want_val, w);
				}
				collector_free(&c);
				/* not final: the second line stays */
				assert_int_equal(parse(&tsv_opts, in.buf, in.len, false,
						       &c, &used, NULL), MK_OK);
				assert_int_equal(c.n, 1);
				assert_int_equal(used, kl + 1 + n + 1);
				collector_free(&c);
				mk_parsed pr = MK_PARSED_INIT;
				assert_int_equal(mk_parse_records(&tsv_opts, in.buf,
								  in.len, true, &pr,
								  &used, NULL), MK_OK);
				assert_int_equal(pr.n, 2);
				assert_int_equal(pr.recs[1].key.len, (int32_t)kl);
				assert_int_equal(pr.recs[1].value.len, (int32_t)w);
				assert_memory_equal(pr.recs[1].value.ptr, want_val, w);
				mk_parsed_release(&pr);
			}
	/* headers at every offset; the 65th is refused wherever its TAB is */
	for (size_t pad = 0; pad < 20; pad++) {
		mk_strbuf_reset(&in);
		mk_strbuf_addstr(&in, "k\tv");
		for (size_t i = 0; i < pad; i++)
			mk_strbuf_addch(&in, 'v');
		for (int i = 0; i < MK_FORMAT_MAX_HEADERS + 1; i++)
			mk_strbuf_addf(&in, "\th%d=x\\\\%d", i, i);
		mk_strbuf_addch(&in, '\n');
		tsv_bad(in.buf, in.len, "too many headers");
		mk_parsed pr = MK_PARSED_INIT;
		size_t used;
		/* without the last: 64 headers, each value unescaped ("x\\\\63" gives "x\\63") */
		char *last = strrchr(in.buf, '\t');
		*last = '\n';
		assert_int_equal(mk_parse_records(&tsv_opts, in.buf,
						  (size_t)(last - in.buf) + 1, true,
						  &pr, &used, NULL), MK_OK);
		assert_int_equal(pr.n, 1);
		assert_int_equal(pr.recs[0].nheaders, MK_FORMAT_MAX_HEADERS);
		assert_int_equal(pr.recs[0].value.len, (int32_t)(1 + pad));
		const mk_header *h = &pr.recs[0].headers[MK_FORMAT_MAX_HEADERS - 1];
		assert_int_equal(h->name.len, 3);
		assert_memory_equal(h->name.ptr, "h63", 3);
		assert_int_equal(h->value.len, 4);
		assert_memory_equal(h->value.ptr, "x\\63", 4);
		mk_parsed_release(&pr);
	}
	mk_strbuf_release(&in);
}

/*
 * The scan never reads past the buffer it is given: a buffer of exactly
 * the bytes written (no slack for a 64-byte block load to hide in, which
 * ASan then watches), its last line of every length up to 48 with no
 * newline, a TAB or a backslash at its very last byte, final and not
 * (carried: only the complete lines are taken).
 */
static void test_tsv_scan_buffer_end(void **state)
{
	(void)state;
	for (size_t len = 0; len <= 48; len++)
		for (int last = 0; last < 3; last++)
			for (int final = 0; final < 2; final++) {
				/* "a\n" then len bytes of 'x' ending in 'x', TAB or
				 * "\\" (an escape cut off: refused when final) */
				size_t n = 2 + len;
				char *buf = malloc(n ? n : 1);
				assert_non_null(buf);
				buf[0] = 'a';
				buf[1] = '\n';
				memset(buf + 2, 'x', len);
				if (len && last == 1)
					buf[n - 1] = '\t';
				if (len && last == 2)
					buf[n - 1] = '\\';
				mk_parsed pr = MK_PARSED_INIT;
				size_t used = 0;
				mk_err err = mk_parse_records(&tsv_opts, buf, n,
							      final, &pr, &used,
							      NULL);
				if (!final || len == 0) {
					assert_int_equal(err, MK_OK);
					assert_int_equal(pr.n, 1);
					assert_int_equal(used, 2);
				} else if (last == 2) {
					assert_int_not_equal(err, MK_OK);
				} else {
					assert_int_equal(err, MK_OK);
					assert_int_equal(pr.n, 2);
					assert_int_equal(used, n);
					/* "x..x<TAB>": key x..x, empty value */
					assert_int_equal(pr.recs[1].value.len,
							 last == 1 ? 0 : (int32_t)len);
				}
				mk_parsed_release(&pr);
				free(buf);
			}
}

/*
 * ---- the TSV scan against a byte-by-byte reference ----------------------
 *
 * ref_parse() reads TSV the slow, obvious way, one byte at a time, as
 * docs/filesystem.md section 4 and the decisions at the top of
 * fs/format.c say: a line ends at its '\n', is over max_line or not,
 * splits at every TAB, and its fields
 * are unescaped and checked left to right, the first wrong one giving the
 * line's error. The parser under test must give the same records (key,
 * value, headers: serialized by ser_rec into one byte string), the same
 * consumed count, error and message, on pseudo-random inputs at every
 * alignment, cut at lengths around the 64-byte block edges.
 */

/* One record as a byte string: each part's length (-1: null) and bytes. */
static void ser_bytes(mk_strbuf *s, mk_bytes b)
{
	mk_strbuf_add_be32(s, (uint32_t)b.len);
	if (b.len > 0)
		mk_strbuf_add(s, b.ptr, (size_t)b.len);
}

static void ser_rec(mk_strbuf *s, mk_bytes key, mk_bytes value,
		    const mk_header *h, size_t nh)
{
	mk_strbuf_add_be32(s, (uint32_t)nh);
	ser_bytes(s, key);
	ser_bytes(s, value);
	for (size_t i = 0; i < nh; i++) {
		ser_bytes(s, h[i].name);
		ser_bytes(s, h[i].value);
	}
}

static mk_err ser_sink(void *arg, mk_bytes key, mk_bytes value,
		       const mk_header *headers, size_t nheaders)
{
	ser_rec(arg, key, value, headers, nheaders);
	return MK_OK;
}

static int ref_hex(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Unescape field [p, p+n) onto out (at *at); false with a message on a
 * bad escape. */
static bool ref_unescape(const char *p, size_t n, char *out, size_t *at,
			 bool *is_null, size_t lineno, mk_strbuf *why)
{
	*is_null = n == 2 && p[0] == '\\' && p[1] == 'N';
	if (*is_null)
		return true;
	for (size_t i = 0; i < n; i++) {
		if (p[i] != '\\') {
			out[(*at)++] = p[i];
			continue;
		}
		int c = -1;
		size_t skip = 1;
		if (i + 1 < n) {
			switch (p[i + 1]) {
			case '\\': c = '\\'; break;
			case 't': c = '\t'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 'x':
				if (i + 3 < n && ref_hex((unsigned char)p[i + 2]) >= 0 &&
				    ref_hex((unsigned char)p[i + 3]) >= 0) {
					c = ref_hex((unsigned char)p[i + 2]) * 16 +
					    ref_hex((unsigned char)p[i + 3]);
					skip = 3;
				}
				break;
			}
		}
		if (c < 0) {
			if (i + 1 >= n) {
				mk_strbuf_addf(why, "line %zu: backslash at end of field",
					       lineno);
			} else {
				size_t show = p[i + 1] == 'x' ? 3 : 1;
				if (show > n - i - 1)
					show = n - i - 1;
				mk_strbuf_addf(why, "line %zu: bad escape \\", lineno);
				mk_tsv_escape(mk_bytes_of(p + i + 1, show), why);
			}
			return false;
		}
		out[(*at)++] = (char)c;
		i += skip;
	}
	return true;
}

static mk_err ref_fail(mk_strbuf *why, mk_err err, size_t lineno,
		       const char *msg)
{
	mk_strbuf_addf(why, "line %zu: %s", lineno, msg);
	return err;
}

/* One line [p, p+n): its record onto recs, or its error. */
static mk_err ref_line(const mk_parse_opts *o, const char *p, size_t n,
		       size_t lineno, mk_strbuf *recs, mk_strbuf *why)
{
	char *text = malloc(n + 1);       /* unescaped fields, never longer */
	mk_header h[MK_FORMAT_MAX_HEADERS];
	mk_bytes kv[2];
	size_t at = 0, nf = 0, nh = 0;
	bool null;
	mk_err err = MK_OK;
	assert_non_null(text);
	for (size_t f = 0; f <= n;) {
		size_t e = f;
		while (e < n && p[e] != '\t')
			e++;
		size_t start = at;
		if (nf < 2) {
			if (!ref_unescape(p + f, e - f, text, &at, &null, lineno, why)) {
				err = MK_INVALID_RECORD;
				break;
			}
			kv[nf++] = null ? MK_BYTES_NULL
					: mk_bytes_of(text + start, at - start);
		} else {
			if (nh == MK_FORMAT_MAX_HEADERS) {
				err = ref_fail(why, MK_INVALID_RECORD, lineno,
					       "too many headers");
				break;
			}
			size_t eq = f;
			while (eq < e && p[eq] != '=')
				eq++;
			if (eq == e) {
				err = ref_fail(why, MK_INVALID_RECORD, lineno,
					       "header without '='");
				break;
			}
			if (!ref_unescape(p + f, eq - f, text, &at, &null, lineno, why)) {
				err = MK_INVALID_RECORD;
				break;
			}
			if (null || at == start || at - start > 32767) {
				err = ref_fail(why, MK_INVALID_RECORD, lineno,
					       null ? "null header name" :
					       at == start ? "empty header name" :
					       "header name too long");
				break;
			}
			h[nh].name = mk_bytes_of(text + start, at - start);
			start = at;
			if (!ref_unescape(p + eq + 1, e - eq - 1, text, &at, &null,
					  lineno, why)) {
				err = MK_INVALID_RECORD;
				break;
			}
			h[nh++].value = null ? MK_BYTES_NULL
					     : mk_bytes_of(text + start, at - start);
		}
		f = e + 1;
	}
	if (!err && nf == 2 && o->has_key)
		err = ref_fail(why, MK_INVALID_RECORD, lineno,
			       "key given twice (key= and a TSV key)");
	if (!err) {
		mk_bytes key = nf == 2 ? kv[0] : o->has_key ? o->key : MK_BYTES_NULL;
		ser_rec(recs, key, kv[nf - 1], h, nh);
	}
	free(text);
	return err;
}

static mk_err ref_parse(const mk_parse_opts *o, const char *buf, size_t len,
			bool final, mk_strbuf *recs, size_t *consumed,
			mk_strbuf *why)
{
	size_t max = o->max_line && o->max_line < INT32_MAX ? o->max_line
							     : INT32_MAX;
	size_t lineno = 0;
	*consumed = 0;
	for (size_t i = 0; i < len;) {
		size_t j = i;
		while (j < len && buf[j] != '\n')
			j++;
		lineno++;
		if (j - i > max)
			return ref_fail(why, MK_MESSAGE_TOO_LARGE, lineno,
					"line too long");
		if (j == len && !final)
			break;
		mk_err err = ref_line(o, buf + i, j - i, lineno, recs, why);
		if (err)
			return err;
		i = j < len ? j + 1 : len;
		*consumed = i;
	}
	return MK_OK;
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A field's bytes: mostly letters, with TABs, backslashes (mostly good
 * escapes), '=', NUL, high bytes and newlines as the mix says (per mille;
 * bad: of the escapes). */
typedef struct {
	unsigned tab, bs, bad, eq, nul, high, nl;
} byte_mix;

static void gen_field(uint64_t *r, mk_strbuf *in, size_t n, const byte_mix *m)
{
	static const char escs[] = "\\tnrx";   /* \N only as a whole field */
	for (size_t i = 0; i < n; i++) {
		unsigned x = (unsigned)(rng_next(r) % 1000);
		if (x < m->tab) {
			mk_strbuf_addch(in, '\t');
		} else if ((x -= m->tab) < m->bs) {
			mk_strbuf_addch(in, '\\');
			char e = escs[rng_next(r) % 5];
			if (rng_next(r) % 1000 < m->bad)
				e = (char)(rng_next(r) % 256);
			mk_strbuf_addch(in, e);
			if (e == 'x') {
				mk_strbuf_addch(in, "0123456789abcdefABCDEF"[rng_next(r) % 22]);
				mk_strbuf_addch(in, rng_next(r) % 1000 < m->bad ? 'g' : '7');
			}
		} else if ((x -= m->bs) < m->eq) {
			mk_strbuf_addch(in, '=');
		} else if ((x -= m->eq) < m->nul) {
			mk_strbuf_addch(in, '\0');
		} else if ((x -= m->nul) < m->high) {
			mk_strbuf_addch(in, (int)(0x80 + rng_next(r) % 128));
		} else if ((x -= m->high) < m->nl) {
			mk_strbuf_addch(in, '\n');
		} else {
			mk_strbuf_addch(in, 'a' + (int)(rng_next(r) % 26));
		}
	}
}

/* Lines of 0..300 bytes: VALUE, KEY TAB VALUE or with NAME=VALUE headers
 * (up to 70 fields, past the limit; dense lines of up to 69 short fields
 * may be longer), the last one terminated or not. */
static void gen_input(uint64_t *r, mk_strbuf *in, bool keyed)
{
	byte_mix m = { 0 };
	unsigned mode = (unsigned)(rng_next(r) % 10);
	if (mode >= 9)          /* anything goes */
		m = (byte_mix){ 30, 60, 100, 50, 30, 60, 20 };
	else if (mode >= 7)     /* some bad escapes, stray TABs and newlines */
		m = (byte_mix){ 2, 30, 10, 20, 10, 30, 5 };
	else if (mode >= 4)     /* good escapes */
		m = (byte_mix){ 0, 20, 0, 10, 5, 20, 0 };
	size_t nlines = rng_next(r) % 12;
	for (size_t l = 0; l < nlines; l++) {
		size_t target = rng_next(r) % 301;
		size_t nf = rng_next(r) % 4 == 0 ? 1 + rng_next(r) % 70
						 : 1 + rng_next(r) % 3;
		/* dense: short fields, 62 to 67 headers, whatever the length */
		bool dense = rng_next(r) % 8 == 0;
		if (dense) {
			nf = 64 + rng_next(r) % 6;
			target = SIZE_MAX;
		}
		if (keyed && rng_next(r) % 8)
			nf = 1;
		size_t start = in->len;
		for (size_t f = 0; f < nf && in->len - start < target; f++) {
			size_t fl = dense ? rng_next(r) % 3
					  : rng_next(r) % (2 * target / nf + 1);
			if (f)
				mk_strbuf_addch(in, '\t');
			if (f >= 2) {
				gen_field(r, in, 1 + rng_next(r) % 3, &m);
				mk_strbuf_addch(in, '=');
			}
			if (m.bs && rng_next(r) % 16 == 0)
				mk_strbuf_addstr(in, "\\N");    /* null */
			else
				gen_field(r, in, fl, &m);
		}
		if (l + 1 < nlines || rng_next(r) % 2)
			mk_strbuf_addch(in, '\n');
	}
}

/* buf[0, len) through ref_parse, mk_parse_records and mk_parse_lines. */
static void diff_one(const mk_parse_opts *o, const char *buf, size_t len,
		     bool final)
{
	mk_strbuf want = MK_STRBUF_INIT, want_why = MK_STRBUF_INIT;
	mk_strbuf got = MK_STRBUF_INIT, got_why = MK_STRBUF_INIT;
	size_t want_used, got_used;
	mk_err want_err = ref_parse(o, buf, len, final, &want, &want_used,
				    &want_why);

	mk_parsed pr = MK_PARSED_INIT;
	mk_err err = mk_parse_records(o, buf, len, final, &pr, &got_used,
				      &got_why);
	for (size_t i = 0; i < pr.n; i++)
		ser_rec(&got, pr.recs[i].key, pr.recs[i].value,
			pr.recs[i].headers, pr.recs[i].nheaders);
	mk_parsed_release(&pr);
	if (err != want_err || got_used != want_used || got.len != want.len ||
	    memcmp(got.buf, want.buf, got.len) ||
	    strcmp(got_why.buf, want_why.buf))
		print_error("len %zu final %d key %d max %zu: err %s/%s used "
			    "%zu/%zu why '%s'/'%s'\n", len, final, o->has_key,
			    o->max_line, mk_err_name(err), mk_err_name(want_err),
			    got_used, want_used, got_why.buf, want_why.buf);
	assert_int_equal(err, want_err);
	assert_int_equal(got_used, want_used);
	assert_string_equal(got_why.buf, want_why.buf);
	assert_int_equal(got.len, want.len);
	assert_memory_equal(got.buf, want.buf, got.len);

	mk_strbuf_reset(&got);
	mk_strbuf_reset(&got_why);
	err = mk_parse_lines(o, buf, len, final, ser_sink, &got, &got_used,
			     &got_why);
	assert_int_equal(err, want_err);
	assert_int_equal(got_used, want_used);
	assert_string_equal(got_why.buf, want_why.buf);
	assert_int_equal(got.len, want.len);
	assert_memory_equal(got.buf, want.buf, got.len);

	mk_strbuf_release(&want);
	mk_strbuf_release(&want_why);
	mk_strbuf_release(&got);
	mk_strbuf_release(&got_why);
}

/* buf[0, len) copied to offset off of a 64-aligned allocation ending
 * exactly at its end (ASan sees any read past it). */
static void diff_at(const mk_parse_opts *o, const char *in, size_t len,
		    size_t off, bool final)
{
	void *mem = NULL;
	assert_int_equal(posix_memalign(&mem, 64, off + len + (off + len == 0)), 0);
	memcpy((char *)mem + off, in, len);
	diff_one(o, (char *)mem + off, len, final);
	free(mem);
}

static void test_tsv_scan_differential(void **state)
{
	(void)state;
	uint64_t r = 0x9e3779b97f4a7c15u;
	mk_strbuf in = MK_STRBUF_INIT;
	for (int round = 0; round < 300; round++) {
		mk_strbuf_reset(&in);
		gen_input(&r, &in, round % 4 == 1);
		mk_parse_opts o = tsv_opts;
		switch (round % 4) {
		case 1: o.has_key = true; o.key = mk_bytes_of("K", 1); break;
		case 2: o.max_line = 150 + rng_next(&r) % 200; break;
		case 3: o.max_line = 1 + rng_next(&r) % 70; break;
		}
		/* the whole input at every alignment */
		for (size_t off = 0; off < 64; off++)
			diff_at(&o, in.buf, in.len, off, off % 2);
		/* cut around block edges and at random */
		size_t cuts[] = { 1, 63, 64, 65, 127, 128, 129, 191, 192, 193,
				  rng_next(&r) % (in.len + 1),
				  rng_next(&r) % (in.len + 1) };
		for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++)
			if (cuts[i] <= in.len)
				for (int final = 0; final < 2; final++)
					diff_at(&o, in.buf, cuts[i],
						rng_next(&r) % 64, final);
	}
	mk_strbuf_release(&in);
}

/*
 * Every buffer length 0..200 at every alignment against the 64-byte
 * blocks, final and not, through the reference: lines ending exactly at
 * a block edge (63-byte lines), a TAB every other byte (more than
 * TSV_MAX_FIELDS in a line), a backslash as the very last byte, NULs and
 * bytes >= 0x80 mixed in, with max_line and without.
 */
static void test_tsv_scan_every_length(void **state)
{
	(void)state;
	enum { N = 200 };
	char pat[5][N];
	uint64_t r = 0x2545f4914f6cdd1du;
	static const char mix[] = "ab\t\\\\n\\t\\x4\n=\0\x80\xff\xc3\t\\N";
	for (size_t i = 0; i < N; i++) {
		/* 63 bytes and a newline: '\n' at 63, 127, 191 */
		pat[0][i] = i % 64 == 63 ? '\n' : i % 7 == 3 ? '\t'
			  : (char)('a' + i % 26);
		/* a TAB every other byte, a newline now and then */
		pat[1][i] = i % 2 ? '\t' : i % 150 == 148 ? '\n' : 'h';
		/* anything, densely */
		pat[2][i] = mix[rng_next(&r) % (sizeof(mix) - 1)];
		/* newlines on both sides of each block edge */
		pat[3][i] = i % 64 == 0 || i % 64 == 63 ? '\n'
			  : i % 64 == 1 ? '\\' : i % 64 == 2 ? 't'
			  : (char)(0x80 + i);
		/* headers, their TABs straddling the edges */
		pat[4][i] = i % 16 == 15 ? '\t' : i % 16 == 3 ? '='
			  : i % 97 == 96 ? '\n' : (char)('0' + i % 10);
	}
	mk_strbuf in = MK_STRBUF_INIT;
	for (size_t k = 0; k < 5; k++)
		for (size_t len = 0; len <= N; len++)
			for (int last_bs = 0; last_bs < 2; last_bs++) {
				mk_strbuf_reset(&in);
				mk_strbuf_add(&in, pat[k], len);
				if (last_bs && len)
					in.buf[len - 1] = '\\';
				else if (last_bs)
					continue;
				mk_parse_opts o = tsv_opts;
				if ((len + k) % 3 == 1)
					o.max_line = 1 + (len * 7 + k) % 90;
				for (size_t off = 0; off < 64; off++)
					for (int final = 0; final < 2; final++)
						diff_at(&o, in.buf, len, off, final);
			}
	mk_strbuf_release(&in);
}

/*
 * One write as fs/handles.c parses it: the carried line completed by the
 * write's first line, then the rest, both into one mk_parsed after
 * mk_parsed_reserve(carried + written); the first call's records (which
 * may point into the scratch buffer) must still read right after the
 * second call, and no scanner state may leak from one call to the next.
 * The mk_parsed is reused from write to write, as a handle does.
 */
static void test_tsv_parse_chained(void **state)
{
	(void)state;
	uint64_t r = 0x853c49e6748fea9bu;
	mk_strbuf in = MK_STRBUF_INIT, want = MK_STRBUF_INIT,
		  got = MK_STRBUF_INIT, why = MK_STRBUF_INIT,
		  got_why = MK_STRBUF_INIT;
	mk_parsed pr = MK_PARSED_INIT;
	for (int round = 0; round < 400; round++) {
		mk_strbuf_reset(&in);
		gen_input(&r, &in, false);
		if (!in.len)
			continue;
		size_t carried = rng_next(&r) % (in.len + 1);
		const char *w = in.buf + carried;
		size_t len = in.len - carried;
		bool final = rng_next(&r) % 2;
		const char *nl = memchr(w, '\n', len);
		size_t head = carried ? (nl ? (size_t)(nl - w) + 1 : len) : 0;
		if (carried && !nl && !final)
			continue;   /* handles.c carries on without parsing */
		/* what the two calls must give, each on its own */
		mk_strbuf_reset(&want);
		mk_strbuf_reset(&why);
		size_t u1 = 0, u2 = 0;
		mk_err e1 = MK_OK, e2 = MK_OK;
		if (carried)
			e1 = ref_parse(&tsv_opts, in.buf, carried + head, true,
				       &want, &u1, &why);
		if (!e1 && head < len)
			e2 = ref_parse(&tsv_opts, w + head, len - head, final,
				       &want, &u2, &why);
		/* the two calls, the first's bytes in a buffer of their own */
		char *first = malloc(carried + head + 1);
		assert_non_null(first);
		memcpy(first, in.buf, carried + head);
		mk_parsed_reset(&pr);
		mk_parsed_reserve(&pr, carried + len);
		mk_strbuf_reset(&got_why);
		size_t g1 = 0, g2 = 0;
		mk_err f1 = MK_OK, f2 = MK_OK;
		if (carried)
			f1 = mk_parse_records(&tsv_opts, first, carried + head,
					      true, &pr, &g1, &got_why);
		if (!f1 && head < len)
			f2 = mk_parse_records(&tsv_opts, w + head, len - head,
					      final, &pr, &g2, &got_why);
		assert_int_equal(f1, e1);
		assert_int_equal(f2, e2);
		assert_int_equal(g1, u1);
		assert_int_equal(g2, u2);
		assert_string_equal(got_why.buf, why.buf);
		mk_strbuf_reset(&got);
		for (size_t i = 0; i < pr.n; i++)
			ser_rec(&got, pr.recs[i].key, pr.recs[i].value,
				pr.recs[i].headers, pr.recs[i].nheaders);
		assert_int_equal(got.len, want.len);
		assert_memory_equal(got.buf, want.buf, got.len);
		free(first);
	}
	mk_parsed_release(&pr);
	mk_strbuf_release(&in);
	mk_strbuf_release(&want);
	mk_strbuf_release(&got);
	mk_strbuf_release(&why);
	mk_strbuf_release(&got_why);
}

/* ---- output ------------------------------------------------------------- */

typedef struct {
	mk_bytes name, value;
} hdr;

/* A record view with raw headers encoded as the codec stores them. */
static mk_record_view make_view(int64_t off, int64_t ts, mk_bytes key,
				mk_bytes value, const hdr *h, size_t nh,
				mk_strbuf *raw)
{
	mk_strbuf_reset(raw);
	for (size_t i = 0; i < nh; i++)
		mk_headers_encode(raw, &(mk_header){ h[i].name, h[i].value }, 1);
	mk_record_view v = {
		.offset = off,
		.timestamp = ts,
		.key = key,
		.value = value,
		.header_count = (int32_t)nh,
		.headers = (const uint8_t *)raw->buf,
		.headers_len = raw->len,
	};
	return v;
}

static void test_plain_output(void **state)
{
	(void)state;
	mk_strbuf raw = MK_STRBUF_INIT, out = MK_STRBUF_INIT;
	hdr h[] = { { mk_bytes_of("h", 1), mk_bytes_of("x", 1) } };
	mk_record_view v = make_view(5, 7, mk_bytes_of("k", 1),
				     mk_bytes_of("a\0b", 3), h, 1, &raw);
	mk_format_record(MK_FORMAT_PLAIN, &v, &out);
	assert_int_equal(out.len, 4);
	assert_memory_equal(out.buf, "a\0b\n", 4);

	v.value = MK_BYTES_NULL;
	mk_format_record(MK_FORMAT_PLAIN, &v, &out);   /* appends */
	assert_int_equal(out.len, 5);
	assert_int_equal(out.buf[4], '\n');

	mk_strbuf_reset(&out);
	v.value = mk_bytes_of("", 0);
	mk_format_record(MK_FORMAT_PLAIN, &v, &out);
	assert_string_equal(out.buf, "\n");
	mk_strbuf_release(&out);
	mk_strbuf_release(&raw);
}

static void test_tsv_output(void **state)
{
	(void)state;
	mk_strbuf raw = MK_STRBUF_INIT, out = MK_STRBUF_INIT;
	hdr h[] = {
		{ mk_bytes_of("trace", 5), mk_bytes_of("a\tb", 3) },
		{ mk_bytes_of("a=b", 3), mk_bytes_of("c=d", 3) },
		{ mk_bytes_of("gone", 4), MK_BYTES_NULL },
	};
	mk_record_view v = make_view(12, -3, mk_bytes_of("k\\", 2),
				     mk_bytes_of("v\n\xc3\xa9", 4), h, 3, &raw);
	mk_format_record(MK_FORMAT_TSV, &v, &out);
	assert_string_equal(out.buf,
		"12\t-3\tk\\\\\tv\\n\xc3\xa9\ttrace=a\\tb\ta\\x3db=c=d\tgone=\\N\n");

	mk_strbuf_reset(&out);
	v = make_view(0, 1700000000000LL, MK_BYTES_NULL, MK_BYTES_NULL, NULL, 0,
		      &raw);
	mk_format_record(MK_FORMAT_TSV, &v, &out);
	assert_string_equal(out.buf, "0\t1700000000000\t\\N\t\\N\n");
	mk_strbuf_release(&out);
	mk_strbuf_release(&raw);
}

/*
 * Round trip: format as TSV, drop OFFSET and TIMESTAMP, parse as TSV,
 * compare every byte.
 */
static void round_trip(mk_bytes key, mk_bytes value, const hdr *h, size_t nh)
{
	mk_strbuf raw = MK_STRBUF_INIT, out = MK_STRBUF_INIT;
	mk_record_view v = make_view(987654321, 123, key, value, h, nh, &raw);
	mk_format_record(MK_FORMAT_TSV, &v, &out);
	/* exactly one line, with only escaped tabs/newlines inside fields */
	assert_int_equal(out.buf[out.len - 1], '\n');
	assert_ptr_equal(memchr(out.buf, '\n', out.len), out.buf + out.len - 1);
	assert_int_equal(memcmp(out.buf, "987654321\t123\t", 14), 0);

	collector c = { 0 };
	size_t used;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = parse(&tsv_opts, out.buf + 14, out.len - 14, false, &c,
			   &used, &why);
	if (err)
		print_error("round trip: %s\n", why.buf);
	assert_int_equal(err, MK_OK);
	assert_int_equal(used, out.len - 14);
	assert_int_equal(c.n, 1);
	assert_owned(&c.r[0].key, (const char *)key.ptr,
		     key.len < 0 ? 0 : (size_t)key.len);
	assert_owned(&c.r[0].value, (const char *)value.ptr,
		     value.len < 0 ? 0 : (size_t)value.len);
	assert_int_equal(c.r[0].nheaders, nh);
	for (size_t i = 0; i < nh; i++) {
		assert_owned(&c.r[0].hname[i], (const char *)h[i].name.ptr,
			     (size_t)h[i].name.len);
		assert_owned(&c.r[0].hvalue[i], (const char *)h[i].value.ptr,
			     h[i].value.len < 0 ? 0 : (size_t)h[i].value.len);
	}
	collector_free(&c);
	mk_strbuf_release(&why);
	mk_strbuf_release(&out);
	mk_strbuf_release(&raw);
}

static void test_tsv_round_trip(void **state)
{
	(void)state;
	uint8_t all[256];
	for (int i = 0; i < 256; i++)
		all[i] = (uint8_t)i;
	uint8_t rev[256];
	for (int i = 0; i < 256; i++)
		rev[i] = (uint8_t)(255 - i);

	mk_bytes A = mk_bytes_of(all, 256), R = mk_bytes_of(rev, 256);
	mk_bytes E = mk_bytes_of("", 0), N = MK_BYTES_NULL;
	mk_bytes lit_null = mk_bytes_of("\\N", 2);   /* the text \N, not null */
	mk_bytes tabs = mk_bytes_of("\t\t\n\r\n\\", 6);
	mk_bytes nul = mk_bytes_of("\0", 1);
	mk_bytes eqs = mk_bytes_of("==a=", 4);

	round_trip(A, R, NULL, 0);
	round_trip(N, A, NULL, 0);
	round_trip(A, N, NULL, 0);
	round_trip(N, N, NULL, 0);
	round_trip(E, E, NULL, 0);
	round_trip(E, N, NULL, 0);
	round_trip(lit_null, lit_null, NULL, 0);
	round_trip(tabs, nul, NULL, 0);
	round_trip(nul, tabs, NULL, 0);

	hdr h[] = {
		{ A, R },
		{ eqs, eqs },
		{ lit_null, N },
		{ tabs, E },
		{ nul, lit_null },
		{ mk_bytes_of("x", 1), A },
	};
	round_trip(A, A, h, sizeof(h) / sizeof(h[0]));
	round_trip(N, N, h, sizeof(h) / sizeof(h[0]));
	round_trip(E, tabs, h + 2, 1);

	/* every single byte, alone and between others, as key and value */
	for (int i = 0; i < 256; i++) {
		uint8_t one[1] = { (uint8_t)i };
		uint8_t three[3] = { 'a', (uint8_t)i, '\\' };
		hdr hh[] = { { mk_bytes_of(one, 1), mk_bytes_of(three, 3) } };
		round_trip(mk_bytes_of(one, 1), mk_bytes_of(three, 3), hh, 1);
	}

	/* pseudo-random binary */
	uint32_t x = 12345;
	for (int iter = 0; iter < 200; iter++) {
		uint8_t k[40], val[300], hn[20], hv[50];
		size_t kl = (size_t)(iter % 40), vl = (size_t)(iter * 7 % 300);
		for (size_t i = 0; i < sizeof(val); i++) {
			x = x * 1103515245u + 12345u;
			val[i] = (uint8_t)(x >> 16);
		}
		memcpy(k, val + 100, sizeof(k));
		memcpy(hn, val + 150, sizeof(hn));
		memcpy(hv, val + 200, sizeof(hv));
		hdr hh[] = { { mk_bytes_of(hn, 1 + iter % 19),
			       mk_bytes_of(hv, (size_t)(iter % 50)) } };
		round_trip(mk_bytes_of(k, kl), mk_bytes_of(val, vl), hh,
			   (size_t)(iter % 2));
	}
}

/* Several formatted records parse back as several records. */
static void test_tsv_multi_line(void **state)
{
	(void)state;
	mk_strbuf raw = MK_STRBUF_INIT, out = MK_STRBUF_INIT, in = MK_STRBUF_INIT;
	for (int i = 0; i < 10; i++) {
		char val[16];
		snprintf(val, sizeof(val), "v\n%d", i);
		mk_record_view v = make_view(i, i, MK_BYTES_NULL,
					     mk_bytes_of(val, strlen(val)),
					     NULL, 0, &raw);
		mk_strbuf_reset(&out);
		mk_format_record(MK_FORMAT_TSV, &v, &out);
		/* drop OFFSET TAB TIMESTAMP TAB */
		char *p = memchr(out.buf, '\t', out.len);
		p = memchr(p + 1, '\t', out.len - (size_t)(p + 1 - out.buf));
		mk_strbuf_add(&in, p + 1, out.len - (size_t)(p + 1 - out.buf));
	}
	collector c = { 0 };
	size_t used;
	assert_int_equal(parse(&tsv_opts, in.buf, in.len, false, &c, &used, NULL),
			 MK_OK);
	assert_int_equal(c.n, 10);
	ASSERT_NULL(&c.r[9].key);
	ASSERT_STR(&c.r[9].value, "v\n9");
	ASSERT_STR(&c.r[0].value, "v\n0");
	collector_free(&c);
	mk_strbuf_release(&in);
	mk_strbuf_release(&out);
	mk_strbuf_release(&raw);
}

/* ---- JSON --------------------------------------------------------------- */

static void json_is(mk_bytes key, mk_bytes value, const hdr *h, size_t nh,
		    const char *want)
{
	mk_strbuf raw = MK_STRBUF_INIT, out = MK_STRBUF_INIT;
	mk_record_view v = make_view(3, 1000, key, value, h, nh, &raw);
	mk_format_record(MK_FORMAT_JSON, &v, &out);
	assert_int_equal(strlen(out.buf), out.len);
	assert_string_equal(out.buf, want);
	mk_strbuf_release(&out);
	mk_strbuf_release(&raw);
}

static void test_json_utf8(void **state)
{
	(void)state;
	json_is(mk_bytes_of("k", 1), mk_bytes_of("hello", 5), NULL, 0,
		"{\"offset\":3,\"timestamp\":1000,\"key\":\"k\","
		"\"value\":\"hello\",\"headers\":{}}\n");
	json_is(MK_BYTES_NULL, MK_BYTES_NULL, NULL, 0,
		"{\"offset\":3,\"timestamp\":1000,\"key\":null,"
		"\"value\":null,\"headers\":{}}\n");
	json_is(mk_bytes_of("", 0), mk_bytes_of("", 0), NULL, 0,
		"{\"offset\":3,\"timestamp\":1000,\"key\":\"\","
		"\"value\":\"\",\"headers\":{}}\n");
	/* escaping; UTF-8 of 2, 3 and 4 bytes and DEL pass through */
	json_is(mk_bytes_of("\"q\\", 3),
		mk_bytes_of("\b\f\n\r\t\x01\x1f\0\x7f \xc3\xa9\xe2\x82\xac"
			    "\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf", 23),
		NULL, 0,
		"{\"offset\":3,\"timestamp\":1000,\"key\":\"\\\"q\\\\\","
		"\"value\":\"\\b\\f\\n\\r\\t\\u0001\\u001f\\u0000\x7f "
		"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\","
		"\"headers\":{}}\n");
	hdr h[] = {
		{ mk_bytes_of("h1", 2), mk_bytes_of("v\"1", 3) },
		{ mk_bytes_of("h2", 2), MK_BYTES_NULL },
	};
	json_is(mk_bytes_of("k", 1), mk_bytes_of("v", 1), h, 2,
		"{\"offset\":3,\"timestamp\":1000,\"key\":\"k\",\"value\":\"v\","
		"\"headers\":{\"h1\":\"v\\\"1\",\"h2\":null}}\n");
}

static void test_json_non_utf8(void **state)
{
	(void)state;
	const char *pre = "{\"offset\":3,\"timestamp\":1000,";
	char want[512];

	/* invalid byte sequences of every kind go to value_b64 */
	static const struct {
		const char *bytes;
		int len;
		const char *b64;
	} bad[] = {
		{ "\xff", 1, "/w==" },
		{ "\x80", 1, "gA==" },                  /* lone continuation */
		{ "\xc3", 1, "ww==" },                  /* truncated */
		{ "\xc3\x28", 2, "wyg=" },              /* bad continuation */
		{ "\xc0\x80", 2, "wIA=" },              /* overlong NUL */
		{ "\xc1\xbf", 2, "wb8=" },              /* overlong */
		{ "\xe0\x80\x80", 3, "4ICA" },          /* overlong 3-byte */
		{ "\xe0\x9f\xbf", 3, "4J+/" },          /* overlong 3-byte */
		{ "\xed\xa0\x80", 3, "7aCA" },          /* surrogate D800 */
		{ "\xed\xbf\xbf", 3, "7b+/" },          /* surrogate DFFF */
		{ "\xf0\x80\x80\x80", 4, "8ICAgA==" },  /* overlong 4-byte */
		{ "\xf0\x8f\xbf\xbf", 4, "8I+/vw==" },  /* overlong 4-byte */
		{ "\xf4\x90\x80\x80", 4, "9JCAgA==" },  /* > U+10FFFF */
		{ "\xf5\x80\x80\x80", 4, "9YCAgA==" },
		{ "\xe2\x82", 2, "4oI=" },              /* truncated 3-byte */
		{ "ok\xf0\x9f\x98", 5, "b2vwn5g=" },    /* truncated 4-byte */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(want, sizeof(want),
			 "%s\"key\":\"k\",\"value_b64\":\"%s\",\"headers\":{}}\n",
			 pre, bad[i].b64);
		json_is(mk_bytes_of("k", 1),
			mk_bytes_of(bad[i].bytes, (size_t)bad[i].len), NULL, 0,
			want);
	}

	/* the boundaries that are valid stay strings */
	snprintf(want, sizeof(want),
		 "%s\"key\":\"\xed\x9f\xbf\",\"value\":\"\xee\x80\x80\","
		 "\"headers\":{}}\n", pre);
	json_is(mk_bytes_of("\xed\x9f\xbf", 3), mk_bytes_of("\xee\x80\x80", 3),
		NULL, 0, want);

	/* key_b64, base64 padding of 0, 1 and 2 */
	snprintf(want, sizeof(want),
		 "%s\"key_b64\":\"/wAB\",\"value\":\"v\",\"headers\":{}}\n", pre);
	json_is(mk_bytes_of("\xff\x00\x01", 3), mk_bytes_of("v", 1), NULL, 0,
		want);
	snprintf(want, sizeof(want),
		 "%s\"key_b64\":\"/wABAg==\",\"value_b64\":\"/wABAgM=\","
		 "\"headers\":{}}\n", pre);
	json_is(mk_bytes_of("\xff\x00\x01\x02", 4),
		mk_bytes_of("\xff\x00\x01\x02\x03", 5), NULL, 0, want);

	/* headers that are not UTF-8 go to headers_b64 */
	hdr h[] = {
		{ mk_bytes_of("ok", 2), mk_bytes_of("fine", 4) },
		{ mk_bytes_of("bin", 3), mk_bytes_of("\xff", 1) },
		{ mk_bytes_of("\xfe", 1), MK_BYTES_NULL },
	};
	snprintf(want, sizeof(want),
		 "%s\"key\":null,\"value\":\"v\",\"headers\":{\"ok\":\"fine\"},"
		 "\"headers_b64\":{\"Ymlu\":\"/w==\",\"/g==\":null}}\n", pre);
	json_is(MK_BYTES_NULL, mk_bytes_of("v", 1), h, 3, want);
}

/* Integers are written by hand now: every edge as printf wrote them. */
static void test_integer_edges(void **state)
{
	(void)state;
	static const int64_t v[] = { 0, 9, 10, -1, -10, 99, 100,
				     INT64_MAX, INT64_MIN, INT64_MIN + 1 };
	mk_strbuf raw = MK_STRBUF_INIT, out = MK_STRBUF_INIT;
	char want[256];
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		int64_t off = v[(i + 3) % (sizeof(v) / sizeof(v[0]))];
		mk_record_view r = make_view(off, v[i], MK_BYTES_NULL,
					     mk_bytes_of("x", 1), NULL, 0, &raw);
		mk_strbuf_reset(&out);
		mk_format_record(MK_FORMAT_TSV, &r, &out);
		snprintf(want, sizeof(want), "%" PRId64 "\t%" PRId64 "\t\\N\tx\n",
			 off, v[i]);
		assert_string_equal(out.buf, want);
		mk_strbuf_reset(&out);
		mk_format_record(MK_FORMAT_JSON, &r, &out);
		snprintf(want, sizeof(want),
			 "{\"offset\":%" PRId64 ",\"timestamp\":%" PRId64
			 ",\"key\":null,\"value\":\"x\",\"headers\":{}}\n",
			 off, v[i]);
		assert_string_equal(out.buf, want);
	}
	mk_strbuf_release(&out);
	mk_strbuf_release(&raw);
}

/* UTF-8 is checked eight ASCII bytes at a time: a bad byte anywhere in
 * or after such a run, and a good sequence straddling one, are seen. */
static void test_json_utf8_runs(void **state)
{
	(void)state;
	mk_strbuf raw = MK_STRBUF_INIT, out = MK_STRBUF_INIT;
	char buf[40];
	for (size_t len = 1; len <= 33; len++) {
		for (size_t at = 0; at < len; at++) {
			memset(buf, 'a', len);
			buf[at] = (char)0xff;               /* never UTF-8 */
			mk_record_view r = make_view(1, 2, MK_BYTES_NULL,
						     mk_bytes_of(buf, len),
						     NULL, 0, &raw);
			mk_strbuf_reset(&out);
			mk_format_record(MK_FORMAT_JSON, &r, &out);
			assert_non_null(strstr(out.buf, "\"value_b64\":"));
			if (at + 2 > len)
				continue;
			buf[at] = (char)0xc3;               /* é: valid */
			buf[at + 1] = (char)0xa9;
			mk_strbuf_reset(&out);
			mk_format_record(MK_FORMAT_JSON, &r, &out);
			assert_null(strstr(out.buf, "value_b64"));
			assert_non_null(strstr(out.buf, "\xc3\xa9"));
		}
	}
	mk_strbuf_release(&out);
	mk_strbuf_release(&raw);
}

/* ---- whole batches --------------------------------------------------------- */

/* A decoded frame of the records below, at base offset 500. */
static void build_batch(mk_strbuf *frame, mk_batch_view *b)
{
	static const hdr h[] = {
		{ { (const uint8_t *)"trace", 5 }, { (const uint8_t *)"a\tb", 3 } },
		{ { (const uint8_t *)"a=b", 3 }, { NULL, -1 } },
		{ { (const uint8_t *)"\xfe", 1 }, { (const uint8_t *)"\xff", 1 } },
	};
	mk_header hh[3];
	for (int i = 0; i < 3; i++) {
		hh[i].name = h[i].name;
		hh[i].value = h[i].value;
	}
	mk_batch_meta meta;
	memset(&meta, 0, sizeof(meta));
	meta.producer_id = -1;
	meta.producer_epoch = -1;
	meta.base_sequence = -1;
	mk_batch_builder bb;
	mk_builder_init(&bb, &meta);
	mk_builder_add(&bb, 1000, MK_BYTES_NULL, mk_bytes_of("plain", 5), NULL, 0);
	mk_builder_add(&bb, -1, mk_bytes_of("k\\", 2), mk_bytes_of("v\n\0w", 4),
		       hh, 3);
	mk_builder_add(&bb, INT64_MIN, MK_BYTES_NULL, MK_BYTES_NULL, NULL, 0);
	mk_builder_add(&bb, 7, mk_bytes_of("\xc3\xa9", 2), mk_bytes_of("", 0),
		       hh, 1);
	mk_builder_add(&bb, INT64_MAX, mk_bytes_of("\xff", 1),
		       mk_bytes_of("\"quoted\"", 8), hh + 1, 2);
	mk_builder_add(&bb, 8, MK_BYTES_NULL, mk_bytes_of("last", 4), NULL, 0);
	mk_builder_finish(&bb);
	mk_frame_assign((uint8_t *)bb.frame.buf, bb.frame.len, 500, 1);
	mk_strbuf_reset(frame);
	mk_strbuf_add(frame, bb.frame.buf, bb.frame.len);
	mk_builder_release(&bb);
	assert_int_equal(mk_frame_decode((const uint8_t *)frame->buf, frame->len,
					 0, b, NULL), MK_OK);
}

/*
 * mk_format_records over a batch is mk_format_record over the same
 * records, one by one, bounded by from, end and max, in every format.
 */
static void test_batch_records(void **state)
{
	(void)state;
	mk_strbuf frame = MK_STRBUF_INIT, got = MK_STRBUF_INIT,
		  want = MK_STRBUF_INIT;
	mk_batch_view b;
	build_batch(&frame, &b);
	static const mk_format fmts[] = { MK_FORMAT_PLAIN, MK_FORMAT_TSV,
					  MK_FORMAT_JSON };
	for (size_t f = 0; f < 3; f++) {
		for (int64_t from = 498; from <= 507; from++) {
			for (int64_t end = 499; end <= 508; end++) {
				for (size_t max = 0; max <= 7; max++) {
					size_t m = max == 7 ? SIZE_MAX : max;
					mk_strbuf_reset(&got);
					mk_strbuf_reset(&want);
					mk_strbuf_addstr(&got, "before|");
					mk_strbuf_addstr(&want, "before|");
					int64_t next = -5, wnext = -5;
					size_t n = mk_format_records(fmts[f], &b, from,
								     end, m, &got,
								     &next);
					size_t wn = 0;
					mk_record_iter it;
					mk_record_view rec;
					mk_record_iter_init(&it, &b);
					while (wn < m && mk_record_next(&it, &rec)) {
						if (rec.offset < from)
							continue;
						if (rec.offset >= end)
							break;
						mk_format_record(fmts[f], &rec, &want);
						wnext = rec.offset + 1;
						wn++;
					}
					assert_int_equal(n, wn);
					assert_int_equal(next, wnext);
					assert_int_equal(got.len, want.len);
					assert_memory_equal(got.buf, want.buf, got.len);
					assert_int_equal(got.buf[got.len], '\0');
				}
			}
		}
	}
	/* the whole batch in plain text, spelled out */
	mk_strbuf_reset(&got);
	int64_t next = 0;
	assert_int_equal(mk_format_records(MK_FORMAT_PLAIN, &b, 0, INT64_MAX,
					   SIZE_MAX, &got, &next), 6);
	assert_int_equal(next, 506);
	assert_int_equal(got.len, 27);
	assert_memory_equal(got.buf, "plain\nv\n\0w\n\n\n\"quoted\"\nlast\n", 27);
	mk_strbuf_release(&frame);
	mk_strbuf_release(&got);
	mk_strbuf_release(&want);
}

/*
 * mk_format_records_lines with a lead and marks (a member's poll): every
 * TSV line starts with the lead, every JSON object has it right after its
 * '{', plain text has none; each mark holds a record's offset and the
 * length of the text just after its line.
 */
static void test_batch_records_lead_marks(void **state)
{
	(void)state;
	mk_strbuf frame = MK_STRBUF_INIT, got = MK_STRBUF_INIT,
		  want = MK_STRBUF_INIT, one = MK_STRBUF_INIT;
	mk_batch_view b;
	build_batch(&frame, &b);
	static const mk_format fmts[] = { MK_FORMAT_PLAIN, MK_FORMAT_TSV,
					  MK_FORMAT_JSON };
	static const char *const leads[] = { "", "topic.x\t3\t",
					     "\"topic\":\"topic.x\",\"partition\":3," };
	for (size_t f = 0; f < 3; f++) {
		for (int64_t from = 499; from <= 506; from++) {
			for (size_t max = 1; max <= 7; max++) {
				mk_format_mark marks[6];
				memset(marks, 0xab, sizeof(marks));
				mk_format_lines o = {
					.format = fmts[f], .lead = leads[f],
					.lead_len = strlen(leads[f]), .marks = marks,
				};
				mk_strbuf_reset(&got);
				mk_strbuf_reset(&want);
				mk_strbuf_addstr(&got, "xy");
				mk_strbuf_addstr(&want, "xy");
				int64_t next = -5, wnext = -5;
				size_t n = mk_format_records_lines(&o, &b, from, 505,
								   max, &got, &next);
				size_t wn = 0;
				mk_record_iter it;
				mk_record_view rec;
				mk_record_iter_init(&it, &b);
				while (wn < max && mk_record_next(&it, &rec)) {
					if (rec.offset < from)
						continue;
					if (rec.offset >= 505)
						break;
					mk_strbuf_reset(&one);
					mk_format_record(fmts[f], &rec, &one);
					if (fmts[f] == MK_FORMAT_TSV)
						mk_strbuf_addstr(&want, leads[f]);
					if (fmts[f] == MK_FORMAT_JSON) {
						mk_strbuf_addch(&want, '{');
						mk_strbuf_addstr(&want, leads[f]);
						mk_strbuf_add(&want, one.buf + 1, one.len - 1);
					} else {
						mk_strbuf_add(&want, one.buf, one.len);
					}
					assert_int_equal(marks[wn].offset, rec.offset);
					assert_int_equal(marks[wn].end, want.len);
					wnext = rec.offset + 1;
					wn++;
				}
				assert_int_equal(n, wn);
				assert_int_equal(next, wnext);
				assert_int_equal(got.len, want.len);
				assert_memory_equal(got.buf, want.buf, got.len);
			}
		}
	}
	/* spelled out: two TSV lines with a lead */
	mk_format_mark marks[6];
	mk_format_lines o = { .format = MK_FORMAT_TSV, .lead = "t\t0\t",
			      .lead_len = 4, .marks = marks };
	mk_strbuf_reset(&got);
	int64_t next = 0;
	assert_int_equal(mk_format_records_lines(&o, &b, 500, 502, SIZE_MAX, &got,
						 &next), 2);
	assert_int_equal(next, 502);
	assert_string_equal(got.buf, "t\t0\t500\t1000\t\\N\tplain\n"
			    "t\t0\t501\t-1\tk\\\\\tv\\n\\x00w\ttrace=a\\tb\t"
			    "a\\x3db=\\N\t\xfe=\xff\n");
	assert_int_equal(marks[0].end, 22);
	assert_int_equal(marks[1].end, got.len);
	mk_strbuf_release(&frame);
	mk_strbuf_release(&got);
	mk_strbuf_release(&want);
	mk_strbuf_release(&one);
}

/* A control batch (transaction marker) formats as nothing. */
static void test_batch_records_control(void **state)
{
	(void)state;
	mk_strbuf frame = MK_STRBUF_INIT, out = MK_STRBUF_INIT;
	mk_batch_meta meta;
	memset(&meta, 0, sizeof(meta));
	meta.flags = MK_BATCH_TRANSACTIONAL | MK_BATCH_COMMIT_MARKER;
	meta.producer_id = 4;
	meta.producer_epoch = 0;
	meta.base_sequence = -1;
	mk_frame_marker(&frame, &meta, 1234);
	mk_batch_view b;
	assert_int_equal(mk_frame_decode((const uint8_t *)frame.buf, frame.len, 0,
					 &b, NULL), MK_OK);
	assert_true(mk_batch_is_control(&b));
	for (size_t f = 0; f < 3; f++) {
		int64_t next = -5;
		assert_int_equal(mk_format_records((mk_format)f, &b, 0, INT64_MAX,
						   SIZE_MAX, &out, &next), 0);
		assert_int_equal(next, -5);
		assert_int_equal(out.len, 0);
	}
	mk_strbuf_release(&frame);
	mk_strbuf_release(&out);
}

/* segments/F:dump: a damaged batch is printed with isvalid false and no
 * record lines, bytes that are no batch as Kafka's tool reports them. */
static void test_dump_damage(void **state)
{
	(void)state;
	mk_batch_meta meta = { 0, 0, 0, -1, -1, -1, 0, false, 0 };
	mk_batch_builder b;
	mk_builder_init(&b, &meta);
	mk_builder_add(&b, 7, mk_bytes_of("k", 1), mk_bytes_of("v", 1), NULL, 0);
	mk_builder_finish(&b);
	mk_strbuf seg = MK_STRBUF_INIT, out = MK_STRBUF_INIT, why = MK_STRBUF_INIT;
	mk_strbuf_add(&seg, b.frame.buf, b.frame.len);
	mk_strbuf_add(&seg, b.frame.buf, b.frame.len);
	seg.buf[b.frame.len + b.frame.len - 1] ^= 1;   /* the second: bad crc */
	mk_strbuf_add(&seg, "xyz", 3);
	assert_int_equal(mk_dump("00000000000000000000.log", (uint8_t *)seg.buf,
				 seg.len, &out, &why), MK_OK);
	assert_non_null(strstr(out.buf, "position: 0 CreateTime: 7"));
	assert_non_null(strstr(out.buf, " isvalid: true\n| offset: 0 CreateTime: 7 keySize: 1 valueSize: 1 sequence: -1 headerKeys: [] key: k payload: v\n"));
	assert_non_null(strstr(out.buf, " isvalid: false\nFound 3 invalid bytes at the end of 00000000000000000000.log\n"));
	mk_strbuf_reset(&out);
	assert_int_equal(mk_dump("x.log", (uint8_t *)seg.buf, seg.len, &out,
				 &why), MK_INVALID_REQUEST);
	mk_strbuf_release(&seg);
	mk_strbuf_release(&out);
	mk_strbuf_release(&why);
	mk_builder_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_lines),
		cmocka_unit_test(test_plain_partial),
		cmocka_unit_test(test_plain_key_and_binary),
		cmocka_unit_test(test_max_line),
		cmocka_unit_test(test_sink_error_stops),
		cmocka_unit_test(test_tsv_unescape),
		cmocka_unit_test(test_tsv_escape),
		cmocka_unit_test(test_tsv_shapes),
		cmocka_unit_test(test_tsv_with_key_param),
		cmocka_unit_test(test_tsv_rejections),
		cmocka_unit_test(test_tsv_scan_positions),
		cmocka_unit_test(test_tsv_scan_buffer_end),
		cmocka_unit_test(test_tsv_scan_differential),
		cmocka_unit_test(test_tsv_scan_every_length),
		cmocka_unit_test(test_tsv_parse_chained),
		cmocka_unit_test(test_plain_output),
		cmocka_unit_test(test_dump_damage),
		cmocka_unit_test(test_tsv_output),
		cmocka_unit_test(test_tsv_round_trip),
		cmocka_unit_test(test_tsv_multi_line),
		cmocka_unit_test(test_json_utf8),
		cmocka_unit_test(test_json_non_utf8),
		cmocka_unit_test(test_integer_edges),
		cmocka_unit_test(test_json_utf8_runs),
		cmocka_unit_test(test_batch_records),
		cmocka_unit_test(test_batch_records_control),
		cmocka_unit_test(test_batch_records_lead_marks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
