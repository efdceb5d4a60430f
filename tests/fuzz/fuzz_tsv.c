/*
 * fuzz_tsv.c — libFuzzer target for the TSV record format (fs/format.c).
 *
 * Arbitrary bytes are parsed as TSV append input (with and without key=),
 * and are also cut directly into a record (direct_record).
 * Every record the parser accepts is formatted back as a TSV records line
 * with mk_format_record, which must be exactly one line; with OFFSET and
 * TIMESTAMP dropped it is parsed again and must give the identical record,
 * byte for byte. JSON and plain formatting of the record are exercised too
 * and checked for being one line of text. Any mismatch aborts.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"

#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "fuzz_tsv: check failed: %s (line %d)\n", \
				#cond, __LINE__);                          \
			abort();                                           \
		}                                                          \
	} while (0)

typedef struct {
	mk_bytes key, value;
	const mk_header *headers;
	size_t nheaders;
	int seen;
} expect;

static bool same(mk_bytes a, mk_bytes b)
{
	if (a.len != b.len)
		return false;
	return a.len <= 0 || memcmp(a.ptr, b.ptr, (size_t)a.len) == 0;
}

static mk_err check_sink(void *arg, mk_bytes key, mk_bytes value,
			 const mk_header *headers, size_t nheaders)
{
	expect *e = arg;
	e->seen++;
	CHECK(e->seen == 1);
	CHECK(same(key, e->key));
	CHECK(same(value, e->value));
	CHECK(nheaders == e->nheaders);
	for (size_t i = 0; i < nheaders; i++) {
		CHECK(same(headers[i].name, e->headers[i].name));
		CHECK(same(headers[i].value, e->headers[i].value));
	}
	return MK_OK;
}

static void check_one_text_line(const mk_strbuf *out)
{
	CHECK(out->len > 0 && out->buf[out->len - 1] == '\n');
	for (size_t i = 0; i + 1 < out->len; i++) {
		unsigned char c = (unsigned char)out->buf[i];
		CHECK(c != '\n' && c != '\r');
	}
}

static mk_err outer_sink(void *arg, mk_bytes key, mk_bytes value,
			 const mk_header *headers, size_t nheaders)
{
	(void)arg;
	CHECK(nheaders <= MK_FORMAT_MAX_HEADERS);

	/* the raw header encoding of the codec, for a record view */
	mk_strbuf raw = MK_STRBUF_INIT;
	for (size_t i = 0; i < nheaders; i++)
		CHECK(headers[i].name.len > 0);
	mk_headers_encode(&raw, headers, nheaders);
	mk_record_view rec = {
		.offset = 0,
		.timestamp = 0,
		.key = key,
		.value = value,
		.header_count = (int32_t)nheaders,
		.headers = (const uint8_t *)raw.buf,
		.headers_len = raw.len,
	};

	mk_strbuf out = MK_STRBUF_INIT;
	mk_format_record(MK_FORMAT_TSV, &rec, &out);
	check_one_text_line(&out);
	CHECK(out.len >= 4 && memcmp(out.buf, "0\t0\t", 4) == 0);

	expect e = { key, value, headers, nheaders, 0 };
	static const mk_parse_opts tsv = { MK_FORMAT_TSV, false, { NULL, -1 }, 0 };
	size_t used = 0;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_parse_lines(&tsv, out.buf + 4, out.len - 4, false,
				    check_sink, &e, &used, &why);
	if (err)
		fprintf(stderr, "fuzz_tsv: re-parse failed: %s\n", why.buf);
	CHECK(err == MK_OK);
	CHECK(e.seen == 1);
	CHECK(used == out.len - 4);

	/* JSON: one line of text; plain: the value and a newline */
	mk_strbuf_reset(&out);
	mk_format_record(MK_FORMAT_JSON, &rec, &out);
	CHECK(out.len > 0 && out.buf[out.len - 1] == '\n');
	for (size_t i = 0; i + 1 < out.len; i++)
		CHECK((unsigned char)out.buf[i] >= 0x20);
	mk_strbuf_reset(&out);
	mk_format_record(MK_FORMAT_PLAIN, &rec, &out);
	CHECK(out.len == (size_t)(value.len > 0 ? value.len : 0) + 1);

	/* escape / unescape of each field alone */
	mk_strbuf_reset(&out);
	mk_tsv_escape(value, &out);
	mk_strbuf back = MK_STRBUF_INIT;
	bool is_null = false;
	CHECK(mk_tsv_unescape(out.buf, out.len, &back, &is_null) == MK_OK);
	CHECK(is_null == (value.len < 0));
	if (!is_null)
		CHECK(same(mk_bytes_of(back.buf, back.len), value));

	mk_strbuf_release(&back);
	mk_strbuf_release(&why);
	mk_strbuf_release(&out);
	mk_strbuf_release(&raw);
	return MK_OK;
}

static mk_err count_sink(void *arg, mk_bytes key, mk_bytes value,
			 const mk_header *headers, size_t nheaders)
{
	(void)key;
	(void)value;
	(void)headers;
	(void)nheaders;
	(*(size_t *)arg)++;
	return MK_OK;
}

/*
 * A record made directly from the bytes: a header count, then for key,
 * value and each header name and value a length byte (0xff: null, where
 * null is allowed) and that many bytes. This reaches every byte in every
 * field (a '=' in a header name, say) without the parser having to accept
 * it first.
 */
typedef struct {
	const uint8_t *p, *end;
} cursor;

static mk_bytes take(cursor *c, bool allow_null)
{
	if (c->p >= c->end)
		return mk_bytes_of("", 0);
	uint8_t n = *c->p++;
	if (n == 0xff && allow_null)
		return MK_BYTES_NULL;
	size_t left = (size_t)(c->end - c->p);
	size_t len = n < left ? n : left;
	mk_bytes b = mk_bytes_of(c->p, len);
	c->p += len;
	return b;
}

static void direct_record(const uint8_t *data, size_t size)
{
	cursor c = { data, data + size };
	if (size == 0)
		return;
	size_t nh = *c.p++ % 9;
	mk_bytes key = take(&c, true);
	mk_bytes value = take(&c, true);
	mk_header h[8];
	for (size_t i = 0; i < nh; i++) {
		h[i].name = take(&c, false);
		if (h[i].name.len == 0)
			h[i].name = mk_bytes_of("h", 1);
		h[i].value = take(&c, true);
	}
	outer_sink(NULL, key, value, h, nh);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	direct_record(data, size);

	mk_parse_opts opts = { MK_FORMAT_TSV, false, { NULL, -1 }, 0 };
	size_t used = 0;

	for (int pass = 0; pass < 2; pass++) {
		opts.has_key = pass == 1;
		opts.key = pass == 1 ? mk_bytes_of("K\t\\\n", 4) : MK_BYTES_NULL;
		mk_strbuf why = MK_STRBUF_INIT;
		mk_err err = mk_parse_lines(&opts, buf, size, true, outer_sink,
					    NULL, &used, &why);
		if (err) {
			CHECK(err == MK_INVALID_RECORD);
			CHECK(why.len > 0);
		} else {
			CHECK(used == size);
		}
		mk_strbuf_release(&why);
	}

	/* not final: stops at a line boundary, one record fewer at most */
	opts.has_key = false;
	opts.key = MK_BYTES_NULL;
	size_t n_final = 0, n_partial = 0, used_final = 0;
	mk_err e1 = mk_parse_lines(&opts, buf, size, true, count_sink, &n_final,
				   &used_final, NULL);
	mk_err e2 = mk_parse_lines(&opts, buf, size, false, count_sink,
				   &n_partial, &used, NULL);
	CHECK(used == 0 || data[used - 1] == '\n');
	if (e1 == MK_OK && e2 == MK_OK) {
		bool tail = size > 0 && data[size - 1] != '\n';
		CHECK(n_partial + (tail ? 1 : 0) == n_final);
		CHECK(used + (tail ? (size - used) : 0) == size);
	}

	/* plain: every line is a record, nothing can be rejected */
	mk_parse_opts plain = { MK_FORMAT_PLAIN, false, { NULL, -1 }, 0 };
	size_t n_plain = 0;
	CHECK(mk_parse_lines(&plain, buf, size, true, count_sink, &n_plain,
			     &used, NULL) == MK_OK);
	CHECK(used == size);
	size_t nl = 0;
	for (size_t i = 0; i < size; i++)
		nl += data[i] == '\n';
	CHECK(n_plain == nl + (size > 0 && data[size - 1] != '\n'));
	return 0;
}
