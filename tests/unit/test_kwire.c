/*
 * test_kwire.c — Kafka's primitive encodings and headers (net/kwire.h)
 * and the API table and error codes (net/kapi.h).
 *
 * Every type round trips, plain and flexible; a few values are checked
 * against the bytes Kafka writes for them; every type cut short at every
 * length fails with the error set and nothing read past the end (each cut
 * is a heap copy of exactly that length, so valgrind and ASan see any
 * read beyond); malformed lengths, varints and tag sections are refused;
 * a request header as librdkafka 2.0 sends it parses; and the header
 * versions follow Kafka's schemas.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kapi.h"
#include "kwire.h"

/* ---- helpers ---------------------------------------------------------- */

static int hexval(char c)
{
	return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

/* "ac 02" into bytes; returns how many. */
static size_t unhex(const char *hex, uint8_t *out, size_t cap)
{
	size_t n = 0;
	for (const char *p = hex; *p;) {
		if (*p == ' ') {
			p++;
			continue;
		}
		assert_true(p[1] && n < cap);
		out[n++] = (uint8_t)(hexval(p[0]) << 4 | hexval(p[1]));
		p += 2;
	}
	return n;
}

static void expect_hex(const mk_strbuf *w, const char *hex)
{
	uint8_t want[256];
	size_t n = unhex(hex, want, sizeof want);
	if (w->len != n || memcmp(w->buf, want, n)) {
		print_error("want %s, got", hex);
		for (size_t i = 0; i < w->len; i++)
			print_error(" %02x", (uint8_t)w->buf[i]);
		print_error("\n");
	}
	assert_int_equal(w->len, n);
	assert_memory_equal(w->buf, want, n);
}

/* A reader over a heap copy of exactly n bytes of p (*copy to free). */
static void reader_copy(mk_kreader *r, const void *p, size_t n, uint8_t **copy)
{
	*copy = n ? malloc(n) : NULL;
	if (n) {
		assert_non_null(*copy);
		memcpy(*copy, p, n);
	}
	mk_kreader_init(r, *copy, n);
}

static bool kstr_is(mk_kstr s, const char *want)
{
	if (!want)
		return s.ptr == NULL;
	return s.ptr && s.len == strlen(want) && !memcmp(s.ptr, want, s.len);
}

/* ---- one sample of every type, for round trips and cuts --------------- */

enum {
	K_INT8, K_INT16, K_INT32, K_INT64, K_UINT32, K_UVARINT, K_VARINT,
	K_VARLONG, K_BOOL, K_UUID, K_STRING, K_EMPTY_STRING, K_NSTRING,
	K_NSTRING_NULL, K_BYTES, K_NBYTES, K_NBYTES_NULL, K_ARRAY,
	K_NARRAY_NULL, K_TAGS, K_REQ_HEADER0, K_REQ_HEADER1, K_REQ_HEADER2,
	K_RESP_HEADER0, K_RESP_HEADER1, K_COUNT
};

static const mk_kuuid sample_uuid = { { 0x00, 0x11, 0x22, 0x33, 0x44, 0x55,
	0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff } };

static const mk_kreq_header sample_header = {
	MK_KAPI_METADATA, 8, 0x01020304, { "rdkafka", 7 }, 0
};

static void encode(mk_strbuf *w, int kind, bool flex)
{
	switch (kind) {
	case K_INT8: mk_kw_int8(w, -5); break;
	case K_INT16: mk_kw_int16(w, -300); break;
	case K_INT32: mk_kw_int32(w, INT32_MIN + 7); break;
	case K_INT64: mk_kw_int64(w, INT64_MIN + 9); break;
	case K_UINT32: mk_kw_uint32(w, 0xdeadbeef); break;
	case K_UVARINT: mk_kw_uvarint(w, UINT32_MAX); break;
	case K_VARINT: mk_kw_varint(w, INT32_MIN); break;
	case K_VARLONG: mk_kw_varlong(w, INT64_MIN); break;
	case K_BOOL: mk_kw_bool(w, true); break;
	case K_UUID: mk_kw_uuid(w, &sample_uuid); break;
	case K_STRING: mk_kw_string(w, "orders", flex); break;
	case K_EMPTY_STRING: mk_kw_string(w, "", flex); break;
	case K_NSTRING: mk_kw_nullable_string(w, "g1", flex); break;
	case K_NSTRING_NULL: mk_kw_nullable_string(w, NULL, flex); break;
	case K_BYTES: mk_kw_bytes(w, "\x00\x01\x02", 3, flex); break;
	case K_NBYTES: mk_kw_nullable_bytes(w, "", 0, flex); break;
	case K_NBYTES_NULL: mk_kw_nullable_bytes(w, NULL, 0, flex); break;
	case K_ARRAY:
		mk_kw_array_len(w, 3, flex);
		mk_strbuf_add(w, "xyz", 3);
		break;
	case K_NARRAY_NULL: mk_kw_nullable_array_len(w, -1, flex); break;
	case K_TAGS:
		if (!flex)
			break;
		mk_kw_uvarint(w, 2);
		mk_kw_tag(w, 0, "\x07", 1);
		mk_kw_tag(w, 200, "abc", 3);
		break;
	case K_REQ_HEADER0: mk_kw_request_header(w, 0, &sample_header); break;
	case K_REQ_HEADER1: mk_kw_request_header(w, 1, &sample_header); break;
	case K_REQ_HEADER2: mk_kw_request_header(w, 2, &sample_header); break;
	case K_RESP_HEADER0: mk_kw_response_header(w, 0, -42); break;
	case K_RESP_HEADER1: mk_kw_response_header(w, 1, -42); break;
	}
}

struct tags_seen {
	int n;
	uint32_t tags[4];
	int64_t values[4];
};

static void read_tag(void *arg, uint32_t tag, mk_kreader *field)
{
	struct tags_seen *s = arg;
	if (tag == 0)
		s->values[s->n] = mk_kr_int8(field);
	else if (tag == 200)
		s->values[s->n] = (int64_t)mk_kr_left(field);
	s->tags[s->n++] = tag;
}

static bool header_is(mk_kreader *r, int version)
{
	mk_kreq_header h;
	if (!mk_kr_request_header(r, version, &h))
		return false;
	return h.api_key == sample_header.api_key &&
	       h.api_version == sample_header.api_version &&
	       h.correlation_id == sample_header.correlation_id &&
	       h.version == version &&
	       kstr_is(h.client_id, version ? "rdkafka" : NULL);
}

/* Decode the sample of `kind`; true when it is what encode wrote. */
static bool decode(mk_kreader *r, int kind, bool flex)
{
	switch (kind) {
	case K_INT8: return mk_kr_int8(r) == -5;
	case K_INT16: return mk_kr_int16(r) == -300;
	case K_INT32: return mk_kr_int32(r) == INT32_MIN + 7;
	case K_INT64: return mk_kr_int64(r) == INT64_MIN + 9;
	case K_UINT32: return mk_kr_uint32(r) == 0xdeadbeef;
	case K_UVARINT: return mk_kr_uvarint(r) == UINT32_MAX;
	case K_VARINT: return mk_kr_varint(r) == INT32_MIN;
	case K_VARLONG: return mk_kr_varlong(r) == INT64_MIN;
	case K_BOOL: return mk_kr_bool(r) == true;
	case K_UUID: {
		mk_kuuid u = mk_kr_uuid(r);
		return !memcmp(u.b, sample_uuid.b, 16);
	}
	case K_STRING: return kstr_is(mk_kr_string(r, flex), "orders");
	case K_EMPTY_STRING: return kstr_is(mk_kr_string(r, flex), "");
	case K_NSTRING: return kstr_is(mk_kr_nullable_string(r, flex), "g1");
	case K_NSTRING_NULL:
		return kstr_is(mk_kr_nullable_string(r, flex), NULL) && !r->err;
	case K_BYTES: {
		mk_kbytes b = mk_kr_bytes(r, flex);
		return b.ptr && b.len == 3 && !memcmp(b.ptr, "\x00\x01\x02", 3);
	}
	case K_NBYTES: {
		mk_kbytes b = mk_kr_nullable_bytes(r, flex);
		return b.ptr && b.len == 0;
	}
	case K_NBYTES_NULL:
		return !mk_kr_nullable_bytes(r, flex).ptr && !r->err;
	case K_ARRAY: {
		int32_t n = mk_kr_array_len(r, flex);
		const uint8_t *p = mk_kr_take(r, 3);
		return n == 3 && p && !memcmp(p, "xyz", 3);
	}
	case K_NARRAY_NULL:
		return mk_kr_nullable_array_len(r, flex) == -1 && !r->err;
	case K_TAGS: {
		struct tags_seen s = { 0 };
		mk_kr_tagged_fields(r, flex, read_tag, &s);
		if (!flex)
			return s.n == 0 && !r->err;
		return s.n == 2 && s.tags[0] == 0 && s.values[0] == 7 &&
		       s.tags[1] == 200 && s.values[1] == 3;
	}
	case K_REQ_HEADER0: return header_is(r, 0);
	case K_REQ_HEADER1: return header_is(r, 1);
	case K_REQ_HEADER2: return header_is(r, 2);
	case K_RESP_HEADER0: return mk_kr_response_header(r, 0) == -42;
	case K_RESP_HEADER1: return mk_kr_response_header(r, 1) == -42;
	}
	return false;
}

/* ---- round trips ------------------------------------------------------ */

static void test_samples_round_trip(void **state)
{
	(void)state;
	for (int flex = 0; flex < 2; flex++) {
		for (int k = 0; k < K_COUNT; k++) {
			mk_strbuf w = MK_STRBUF_INIT;
			encode(&w, k, flex);
			uint8_t *copy;
			mk_kreader r;
			reader_copy(&r, w.buf, w.len, &copy);
			bool ok = decode(&r, k, flex);
			if (!ok || r.err || r.pos != w.len)
				print_error("kind %d flexible %d\n", k, flex);
			assert_true(ok);
			assert_false(r.err);
			assert_int_equal(r.pos, w.len);
			free(copy);
			mk_strbuf_release(&w);
		}
	}
}

static void test_integers_round_trip(void **state)
{
	(void)state;
	static const int64_t v[] = { 0, 1, -1, 63, 64, -64, -65, 127, 128, 255,
		256, 300, 8191, 8192, 16383, 16384, INT16_MAX, INT16_MIN,
		INT32_MAX, INT32_MIN, (int64_t)INT32_MAX + 1, INT64_MAX,
		INT64_MIN, 1LL << 35, -(1LL << 49), 123456789012345LL };
	mk_strbuf w = MK_STRBUF_INIT;
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		mk_strbuf_reset(&w);
		mk_kw_int8(&w, (int8_t)v[i]);
		mk_kw_int16(&w, (int16_t)v[i]);
		mk_kw_int32(&w, (int32_t)v[i]);
		mk_kw_int64(&w, v[i]);
		mk_kw_uint32(&w, (uint32_t)v[i]);
		mk_kw_uvarint(&w, (uint32_t)v[i]);
		mk_kw_varint(&w, (int32_t)v[i]);
		mk_kw_varlong(&w, v[i]);
		mk_kw_bool(&w, v[i] != 0);
		mk_kreader r;
		mk_kreader_init(&r, w.buf, w.len);
		assert_true(mk_kr_int8(&r) == (int8_t)v[i]);
		assert_true(mk_kr_int16(&r) == (int16_t)v[i]);
		assert_true(mk_kr_int32(&r) == (int32_t)v[i]);
		assert_true(mk_kr_int64(&r) == v[i]);
		assert_true(mk_kr_uint32(&r) == (uint32_t)v[i]);
		assert_true(mk_kr_uvarint(&r) == (uint32_t)v[i]);
		assert_true(mk_kr_varint(&r) == (int32_t)v[i]);
		assert_true(mk_kr_varlong(&r) == v[i]);
		assert_true(mk_kr_bool(&r) == (v[i] != 0));
		assert_false(r.err);
		assert_int_equal(mk_kr_left(&r), 0);
	}
	/* Every unsigned varint length boundary. */
	for (int bits = 0; bits <= 32; bits++) {
		uint32_t u = bits == 32 ? UINT32_MAX : (uint32_t)((1ULL << bits) - 1);
		mk_strbuf_reset(&w);
		mk_kw_uvarint(&w, u);
		mk_kw_uvarint(&w, u + 1);
		mk_kreader r;
		mk_kreader_init(&r, w.buf, w.len);
		assert_true(mk_kr_uvarint(&r) == u);
		assert_true(mk_kr_uvarint(&r) == (uint32_t)(u + 1));
		assert_false(r.err);
	}
	mk_strbuf_release(&w);
}

static void test_strings_round_trip(void **state)
{
	(void)state;
	char big[MK_KSTRING_MAX + 1];
	memset(big, 'k', MK_KSTRING_MAX);
	big[MK_KSTRING_MAX] = '\0';
	for (int flex = 0; flex < 2; flex++) {
		mk_strbuf w = MK_STRBUF_INIT;
		mk_kw_string(&w, big, flex);
		mk_kw_kstr(&w, (mk_kstr){ "echo", 4 }, flex);
		mk_kw_kstr(&w, (mk_kstr){ NULL, 0 }, flex);
		mk_kw_nullable_string(&w, "", flex);
		mk_kreader r;
		mk_kreader_init(&r, w.buf, w.len);
		mk_kstr s = mk_kr_string(&r, flex);
		assert_int_equal(s.len, MK_KSTRING_MAX);
		assert_ptr_equal(s.ptr, w.buf + (flex ? 3 : 2));   /* a view */
		assert_true(kstr_is(mk_kr_string(&r, flex), "echo"));
		assert_true(kstr_is(mk_kr_nullable_string(&r, flex), NULL));
		assert_true(kstr_is(mk_kr_nullable_string(&r, flex), ""));
		assert_false(r.err);
		assert_int_equal(mk_kr_left(&r), 0);
		mk_strbuf_release(&w);
	}
}

/* ---- golden bytes ----------------------------------------------------- */

static void test_golden(void **state)
{
	(void)state;
	mk_strbuf w = MK_STRBUF_INIT;
#define GOLD(stmt, hex) do { mk_strbuf_reset(&w); stmt; expect_hex(&w, hex); } while (0)
	GOLD(mk_kw_uvarint(&w, 300), "ac 02");
	GOLD(mk_kw_uvarint(&w, 0), "00");
	GOLD(mk_kw_uvarint(&w, 127), "7f");
	GOLD(mk_kw_uvarint(&w, 128), "80 01");
	GOLD(mk_kw_uvarint(&w, UINT32_MAX), "ff ff ff ff 0f");
	GOLD(mk_kw_varint(&w, -1), "01");
	GOLD(mk_kw_varint(&w, 1), "02");
	GOLD(mk_kw_varint(&w, -64), "7f");
	GOLD(mk_kw_varint(&w, 64), "80 01");
	GOLD(mk_kw_varint(&w, INT32_MIN), "ff ff ff ff 0f");
	GOLD(mk_kw_varlong(&w, INT64_MIN), "ff ff ff ff ff ff ff ff ff 01");
	GOLD(mk_kw_varlong(&w, -2), "03");
	GOLD(mk_kw_int16(&w, -2), "ff fe");
	GOLD(mk_kw_int32(&w, 0x01020304), "01 02 03 04");
	GOLD(mk_kw_int64(&w, -1), "ff ff ff ff ff ff ff ff");
	GOLD(mk_kw_bool(&w, true), "01");
	GOLD(mk_kw_string(&w, "ab", true), "03 61 62");
	GOLD(mk_kw_nullable_string(&w, NULL, true), "00");
	GOLD(mk_kw_string(&w, "ab", false), "00 02 61 62");
	GOLD(mk_kw_nullable_string(&w, NULL, false), "ff ff");
	GOLD(mk_kw_string(&w, "", true), "01");
	GOLD(mk_kw_bytes(&w, "ab", 2, false), "00 00 00 02 61 62");
	GOLD(mk_kw_nullable_bytes(&w, NULL, 0, false), "ff ff ff ff");
	GOLD(mk_kw_bytes(&w, "ab", 2, true), "03 61 62");
	GOLD(mk_kw_array_len(&w, 2, false), "00 00 00 02");
	GOLD(mk_kw_array_len(&w, 2, true), "03");
	GOLD(mk_kw_nullable_array_len(&w, -1, false), "ff ff ff ff");
	GOLD(mk_kw_nullable_array_len(&w, -1, true), "00");
	GOLD(mk_kw_tagged_fields(&w, true), "00");
	GOLD(mk_kw_tagged_fields(&w, false), "");
	GOLD(mk_kw_response_header(&w, 0, 7), "00 00 00 07");
	GOLD(mk_kw_response_header(&w, 1, 7), "00 00 00 07 00");
	GOLD({ mk_kw_uvarint(&w, 1); mk_kw_tag(&w, 3, "\x05", 1); }, "01 03 01 05");
#undef GOLD
	/* And the same bytes read back. */
	uint8_t b[16];
	mk_kreader r;
	mk_kreader_init(&r, b, unhex("ac 02 01 03 61 62 00", b, sizeof b));
	assert_int_equal(mk_kr_uvarint(&r), 300);
	assert_int_equal(mk_kr_varint(&r), -1);
	assert_true(kstr_is(mk_kr_string(&r, true), "ab"));
	assert_true(kstr_is(mk_kr_nullable_string(&r, true), NULL));
	assert_false(r.err);
	/* A non-minimal varint is Kafka's to accept too: 0x80 0x00 is 0. */
	mk_kreader_init(&r, b, unhex("80 00", b, sizeof b));
	assert_int_equal(mk_kr_uvarint(&r), 0);
	assert_false(r.err);
	mk_strbuf_release(&w);
}

static void test_size_prefix(void **state)
{
	(void)state;
	mk_strbuf w = MK_STRBUF_INIT;
	mk_kw_int8(&w, 9);                  /* something before it */
	size_t at = mk_kw_size_begin(&w);
	mk_kw_response_header(&w, 0, 1);
	mk_kw_int16(&w, 35);
	mk_kw_size_end(&w, at);
	expect_hex(&w, "09 00 00 00 06 00 00 00 01 00 23");
	mk_strbuf_reset(&w);
	at = mk_kw_size_begin(&w);
	mk_kw_size_end(&w, at);
	expect_hex(&w, "00 00 00 00");
	mk_strbuf_release(&w);
}

/* ---- truncation and damage -------------------------------------------- */

static void test_truncated(void **state)
{
	(void)state;
	for (int flex = 0; flex < 2; flex++) {
		for (int k = 0; k < K_COUNT; k++) {
			mk_strbuf w = MK_STRBUF_INIT;
			encode(&w, k, flex);
			for (size_t cut = 0; cut < w.len; cut++) {
				uint8_t *copy;
				mk_kreader r;
				reader_copy(&r, w.buf, cut, &copy);
				bool ok = decode(&r, k, flex);
				if (ok || !r.err)
					print_error("kind %d flexible %d cut %zu\n",
						    k, flex, cut);
				assert_true(r.err);
				assert_true(r.pos <= cut);
				assert_int_equal(mk_kr_left(&r), 0);
				free(copy);
			}
			mk_strbuf_release(&w);
		}
	}
}

/* Reads of bytes that must be refused. */
static void refused(const char *hex, int kind, bool flex)
{
	uint8_t b[64], *copy;
	size_t n = unhex(hex, b, sizeof b);
	mk_kreader r;
	reader_copy(&r, b, n, &copy);
	switch (kind) {
	case K_UVARINT: mk_kr_uvarint(&r); break;
	case K_VARINT: mk_kr_varint(&r); break;
	case K_VARLONG: mk_kr_varlong(&r); break;
	case K_STRING: assert_null(mk_kr_string(&r, flex).ptr); break;
	case K_NSTRING: assert_null(mk_kr_nullable_string(&r, flex).ptr); break;
	case K_BYTES: assert_null(mk_kr_bytes(&r, flex).ptr); break;
	case K_NBYTES: assert_null(mk_kr_nullable_bytes(&r, flex).ptr); break;
	case K_ARRAY: assert_int_equal(mk_kr_array_len(&r, flex), 0); break;
	case K_NARRAY_NULL:
		assert_int_equal(mk_kr_nullable_array_len(&r, flex), 0);
		break;
	case K_TAGS: mk_kr_tagged_fields(&r, true, NULL, NULL); break;
	}
	if (!r.err)
		print_error("accepted: %s (kind %d)\n", hex, kind);
	assert_true(r.err);
	free(copy);
}

static void test_malformed(void **state)
{
	(void)state;
	/* Varints longer than their type, or with bits beyond it. */
	refused("ff ff ff ff 10", K_UVARINT, false);
	refused("80 80 80 80 80 00", K_UVARINT, false);
	refused("ff ff ff ff 1f", K_VARINT, false);
	refused("ff ff ff ff ff ff ff ff ff 02", K_VARLONG, false);
	refused("80 80 80 80 80 80 80 80 80 80 00", K_VARLONG, false);
	/* Null where the type is not nullable; lengths below -1. */
	refused("ff ff", K_STRING, false);
	refused("00", K_STRING, true);
	refused("ff fe", K_NSTRING, false);
	refused("ff ff ff ff", K_BYTES, false);
	refused("00", K_BYTES, true);
	refused("ff ff ff fe", K_NBYTES, false);
	refused("ff ff ff ff", K_ARRAY, false);
	refused("00", K_ARRAY, true);
	refused("ff ff ff fe", K_NARRAY_NULL, false);
	/* A compact string over Kafka's 32767 (its bytes need not even be
	 * there: the length alone is refused). */
	refused("81 80 02", K_STRING, true);
	refused("81 80 02", K_NSTRING, true);
	size_t n = 3 + MK_KSTRING_MAX + 1;
	uint8_t *big = calloc(1, n);
	assert_non_null(big);
	memcpy(big, "\x81\x80\x02", 3);
	mk_kreader r;
	mk_kreader_init(&r, big, n);
	assert_null(mk_kr_string(&r, true).ptr);
	assert_true(r.err);
	memcpy(big, "\x80\x80\x02", 3);     /* 32767 bytes: Kafka's limit */
	mk_kreader_init(&r, big, n);
	assert_int_equal(mk_kr_string(&r, true).len, MK_KSTRING_MAX);
	assert_false(r.err);
	free(big);
	/* Lengths beyond the bytes left. */
	refused("00 05 61 62", K_STRING, false);
	refused("06 61 62", K_NSTRING, true);
	refused("7f ff ff ff 00", K_BYTES, false);
	refused("ff ff ff ff 0f", K_NBYTES, true);
	/* Tag sections: out of order, a tag twice, a count or a size beyond
	 * the bytes. */
	refused("02 05 00 03 00", K_TAGS, true);
	refused("02 05 00 05 00", K_TAGS, true);
	refused("05 00 00", K_TAGS, true);
	refused("01 00 05 61", K_TAGS, true);
}

static void test_huge_array(void **state)
{
	(void)state;
	/* INT32_MAX elements claimed in 8 bytes: refused before anything is
	 * allocated for them. */
	refused("7f ff ff ff 00 00 00 00", K_ARRAY, false);
	refused("ff ff ff ff 07", K_ARRAY, true);
	refused("ff ff ff ff 07 00 00 00", K_NARRAY_NULL, true);
	/* As many as there are bytes left is fine; one more is not. */
	uint8_t b[] = { 0, 0, 0, 3, 1, 2, 3 };
	mk_kreader r;
	mk_kreader_init(&r, b, sizeof b);
	assert_int_equal(mk_kr_array_len(&r, false), 3);
	assert_false(r.err);
	b[3] = 4;
	mk_kreader_init(&r, b, sizeof b);
	assert_int_equal(mk_kr_array_len(&r, false), 0);
	assert_true(r.err);
	uint8_t c[] = { 4, 1, 2, 3 };
	mk_kreader_init(&r, c, sizeof c);
	assert_int_equal(mk_kr_array_len(&r, true), 3);
	assert_false(r.err);
}

static void test_sticky(void **state)
{
	(void)state;
	uint8_t b[] = { 0x00, 0x01, 0x02, 0x03, 0x04 };
	mk_kreader r;
	mk_kreader_init(&r, b, sizeof b);
	assert_int_equal(mk_kr_int16(&r), 1);
	assert_int_equal(mk_kr_int32(&r), 0);          /* 3 bytes left */
	assert_true(r.err);
	size_t pos = r.pos;
	assert_int_equal(pos, 2);
	assert_int_equal(mk_kr_int8(&r), 0);           /* a byte is there */
	assert_int_equal(mk_kr_uvarint(&r), 0);
	assert_false(mk_kr_bool(&r));
	assert_null(mk_kr_nullable_string(&r, false).ptr);
	assert_null(mk_kr_take(&r, 0));
	mk_kreader sub;
	assert_false(mk_kr_sub(&r, 0, &sub));
	assert_true(sub.err);
	assert_int_equal(r.pos, pos);
	assert_int_equal(mk_kr_left(&r), 0);
	/* A reader over nothing (NULL) reads nothing, and says so. */
	mk_kreader_init(&r, NULL, 0);
	assert_non_null(mk_kr_take(&r, 0));
	assert_int_equal(mk_kr_int8(&r), 0);
	assert_true(r.err);
	/* mk_kr_fail is a caller's own refusal. */
	mk_kreader_init(&r, b, sizeof b);
	assert_false(mk_kr_fail(&r));
	assert_true(r.err);
}

/* ---- tagged fields ---------------------------------------------------- */

static void bad_tag(void *arg, uint32_t tag, mk_kreader *field)
{
	(void)arg;
	(void)tag;
	mk_kr_int32(field);    /* the field is one byte: malformed */
}

static void test_tags(void **state)
{
	(void)state;
	/* Three fields: 1 (known), 7 and 300 (unknown, skipped), then a
	 * byte of the struct after the section. */
	uint8_t b[32];
	size_t n = unhex("03 01 02 00 09 07 03 aa bb cc ac 02 00 42", b, sizeof b);
	struct tags_seen s = { 0 };
	mk_kreader r;
	mk_kreader_init(&r, b, n);
	mk_kr_tagged_fields(&r, true, read_tag, &s);
	assert_false(r.err);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.tags[0], 1);
	assert_int_equal(s.tags[1], 7);
	assert_int_equal(s.tags[2], 300);
	assert_int_equal(mk_kr_int8(&r), 0x42);
	/* With no callback all are skipped. */
	mk_kreader_init(&r, b, n);
	mk_kr_tagged_fields(&r, true, NULL, NULL);
	assert_int_equal(mk_kr_int8(&r), 0x42);
	assert_false(r.err);
	/* Not flexible: no section, nothing read. */
	mk_kreader_init(&r, b, n);
	mk_kr_tagged_fields(&r, false, NULL, NULL);
	assert_int_equal(r.pos, 0);
	/* A field the callback finds malformed fails the section. */
	mk_kreader_init(&r, b, unhex("01 00 01 05", b, sizeof b));
	mk_kr_tagged_fields(&r, true, bad_tag, NULL);
	assert_true(r.err);
	/* Out of order: refused after the first field. */
	s.n = 0;
	mk_kreader_init(&r, b, unhex("02 05 01 00 04 01 00", b, sizeof b));
	mk_kr_tagged_fields(&r, true, read_tag, &s);
	assert_true(r.err);
	assert_int_equal(s.n, 1);
}

/* ---- headers ---------------------------------------------------------- */

/* ApiVersions v3 as librdkafka 2.0 sends it first: size, header v2
 * (client id "rdkafka" as an int16 string, an empty tag section), then
 * the body (ClientSoftwareName, ClientSoftwareVersion compact, tags). */
static const char *librdkafka_api_versions =
	"00 00 00 24 "
	"00 12 00 03 00 00 00 01 00 07 72 64 6b 61 66 6b 61 00 "
	"0b 6c 69 62 72 64 6b 61 66 6b 61 06 32 2e 30 2e 32 00";

static void test_librdkafka_header(void **state)
{
	(void)state;
	uint8_t b[64], *copy;
	size_t n = unhex(librdkafka_api_versions, b, sizeof b);
	mk_kreader r;
	reader_copy(&r, b, n, &copy);
	assert_int_equal(mk_kr_int32(&r), (int32_t)n - 4);
	mk_kreq_header h;
	assert_true(mk_kapi_read_request_header(&r, &h));
	assert_int_equal(h.api_key, MK_KAPI_API_VERSIONS);
	assert_int_equal(h.api_version, 3);
	assert_int_equal(h.correlation_id, 1);
	assert_int_equal(h.version, 2);
	assert_true(kstr_is(h.client_id, "rdkafka"));
	/* The body is flexible: compact strings, a tag section. */
	bool flex = mk_kapi_is_flexible(h.api_key, h.api_version);
	assert_true(flex);
	assert_true(kstr_is(mk_kr_string(&r, flex), "librdkafka"));
	assert_true(kstr_is(mk_kr_string(&r, flex), "2.0.2"));
	mk_kr_tagged_fields(&r, flex, NULL, NULL);
	assert_false(r.err);
	assert_int_equal(mk_kr_left(&r), 0);
	/* Not served (0-2), and answered with a v0 response header. */
	assert_false(mk_kapi_supported(h.api_key, h.api_version));
	assert_int_equal(mk_kapi_response_header_version(h.api_key, h.api_version), 0);
	free(copy);
}

static void test_header_damage(void **state)
{
	(void)state;
	/* A v1 header whose client id is cut short keeps its correlation id. */
	uint8_t b[32];
	size_t n = unhex("00 03 00 08 00 00 01 00 00 07 72 64", b, sizeof b);
	mk_kreader r;
	mk_kreq_header h;
	mk_kreader_init(&r, b, n);
	assert_false(mk_kapi_read_request_header(&r, &h));
	assert_true(r.err);
	assert_int_equal(h.api_key, MK_KAPI_METADATA);
	assert_int_equal(h.api_version, 8);
	assert_int_equal(h.correlation_id, 256);
	assert_null(h.client_id.ptr);
	/* A header version that does not exist. */
	mk_kreader_init(&r, b, n);
	assert_false(mk_kr_request_header(&r, 3, &h));
	mk_kreader_init(&r, b, n);
	assert_false(mk_kr_request_header(&r, -1, &h));
	mk_kreader_init(&r, b, n);
	assert_int_equal(mk_kr_response_header(&r, 2), 0);
	assert_true(r.err);
	/* A v2 header's tag section is read, unknown tags skipped. */
	n = unhex("00 03 00 09 00 00 00 05 ff ff 01 00 02 61 62 7e", b, sizeof b);
	mk_kreader_init(&r, b, n);
	assert_true(mk_kapi_read_request_header(&r, &h));
	assert_int_equal(h.version, 2);
	assert_int_equal(h.correlation_id, 5);
	assert_null(h.client_id.ptr);
	assert_int_equal(mk_kr_int8(&r), 0x7e);
	/* An unknown API: header v1, its correlation id readable. */
	n = unhex("03 e7 00 00 00 00 00 09 00 01 63", b, sizeof b);
	mk_kreader_init(&r, b, n);
	assert_true(mk_kapi_read_request_header(&r, &h));
	assert_int_equal(h.api_key, 999);
	assert_int_equal(h.version, 1);
	assert_int_equal(h.correlation_id, 9);
	assert_true(kstr_is(h.client_id, "c"));
}

/* ---- the API table ---------------------------------------------------- */

static void test_header_versions(void **state)
{
	(void)state;
	static const struct {
		int16_t key, version;
		bool flexible;
		int req, resp;
	} cases[] = {
		/* key, version, flexible, request and response headers:
		 * Kafka's schemas' flexibleVersions */
		{ MK_KAPI_METADATA, 8, false, 1, 0 },
		{ MK_KAPI_METADATA, 9, true, 2, 1 },
		{ MK_KAPI_PRODUCE, 8, false, 1, 0 },
		{ MK_KAPI_PRODUCE, 9, true, 2, 1 },
		{ MK_KAPI_FETCH, 11, false, 1, 0 },
		{ MK_KAPI_FETCH, 12, true, 2, 1 },
		{ MK_KAPI_API_VERSIONS, 2, false, 1, 0 },
		{ MK_KAPI_API_VERSIONS, 3, true, 2, 0 },
		{ MK_KAPI_API_VERSIONS, 4, true, 2, 0 },
		{ MK_KAPI_INIT_PRODUCER_ID, 1, false, 1, 0 },
		{ MK_KAPI_INIT_PRODUCER_ID, 2, true, 2, 1 },
		{ MK_KAPI_FIND_COORDINATOR, 3, true, 2, 1 },
		{ MK_KAPI_JOIN_GROUP, 5, false, 1, 0 },
		{ MK_KAPI_JOIN_GROUP, 6, true, 2, 1 },
		{ MK_KAPI_OFFSET_COMMIT, 8, true, 2, 1 },
		{ MK_KAPI_DESCRIBE_CONFIGS, 3, false, 1, 0 },
		{ MK_KAPI_DESCRIBE_CONFIGS, 4, true, 2, 1 },
		{ MK_KAPI_CONTROLLED_SHUTDOWN, 0, false, 0, 0 },
		{ MK_KAPI_CONTROLLED_SHUTDOWN, 1, false, 1, 0 },
		{ 999, 0, false, 1, 0 },
		{ -1, 0, false, 1, 0 },
		{ MK_KAPI_METADATA, -1, false, 1, 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int16_t k = cases[i].key, v = cases[i].version;
		if (mk_kapi_is_flexible(k, v) != cases[i].flexible ||
		    mk_kapi_request_header_version(k, v) != cases[i].req ||
		    mk_kapi_response_header_version(k, v) != cases[i].resp)
			print_error("api %d version %d\n", k, v);
		assert_true(mk_kapi_is_flexible(k, v) == cases[i].flexible);
		assert_int_equal(mk_kapi_request_header_version(k, v), cases[i].req);
		assert_int_equal(mk_kapi_response_header_version(k, v), cases[i].resp);
	}
}

static void test_table(void **state)
{
	(void)state;
	size_t n;
	const mk_kapi *t = mk_kapi_list(&n);
	assert_int_equal(n, 26);
	for (size_t i = 0; i < n; i++) {
		if (i)
			assert_true(t[i - 1].key < t[i].key);
		assert_ptr_equal(mk_kapi_find(t[i].key), &t[i]);
		assert_non_null(t[i].name);
		/* What we serve is non-flexible (issue 26's ranges). */
		assert_true(t[i].min_version >= 0);
		assert_true(t[i].min_version <= t[i].max_version);
		assert_true(t[i].max_version < t[i].first_flexible);
		assert_true(mk_kapi_supported(t[i].key, t[i].min_version));
		assert_true(mk_kapi_supported(t[i].key, t[i].max_version));
		assert_false(mk_kapi_supported(t[i].key, t[i].max_version + 1));
		assert_false(mk_kapi_supported(t[i].key, t[i].min_version - 1));
	}
	assert_null(mk_kapi_find(MK_KAPI_CONTROLLED_SHUTDOWN));
	assert_null(mk_kapi_find(17));
	assert_null(mk_kapi_find(-1));
	assert_null(mk_kapi_find(1000));
	assert_string_equal(mk_kapi_find(MK_KAPI_API_VERSIONS)->name, "ApiVersions");
	/* librdkafka 2.0's feature detection needs these inside the ranges. */
	assert_true(mk_kapi_supported(MK_KAPI_PRODUCE, 3));
	assert_true(mk_kapi_supported(MK_KAPI_FETCH, 4));
	assert_true(mk_kapi_supported(MK_KAPI_FIND_COORDINATOR, 0));
	assert_true(mk_kapi_supported(MK_KAPI_INIT_PRODUCER_ID, 0));
	assert_false(mk_kapi_supported(MK_KAPI_PRODUCE, 2));
	assert_false(mk_kapi_supported(MK_KAPI_FETCH, 3));
	assert_int_equal(mk_kapi_find(MK_KAPI_METADATA)->max_version, 8);
	assert_int_equal(mk_kapi_find(MK_KAPI_LIST_GROUPS)->max_version, 2);
	assert_int_equal(mk_kapi_find(MK_KAPI_DESCRIBE_GROUPS)->max_version, 4);
}

/* ---- error codes ------------------------------------------------------ */

static void test_error_codes(void **state)
{
	(void)state;
	assert_int_equal(MK_KERR_NONE, 0);
	assert_int_equal(MK_KERR_UNKNOWN_SERVER_ERROR, -1);
	assert_int_equal(MK_KERR_OFFSET_OUT_OF_RANGE, 1);
	assert_int_equal(MK_KERR_CORRUPT_MESSAGE, 2);
	assert_int_equal(MK_KERR_UNKNOWN_TOPIC_OR_PARTITION, 3);
	assert_int_equal(MK_KERR_NOT_LEADER_OR_FOLLOWER, 6);
	assert_int_equal(MK_KERR_NOT_COORDINATOR, 16);
	assert_int_equal(MK_KERR_UNSUPPORTED_VERSION, 35);
	assert_int_equal(MK_KERR_DUPLICATE_SEQUENCE_NUMBER, 46);
	assert_int_equal(MK_KERR_FENCED_LEADER_EPOCH, 74);
	assert_int_equal(MK_KERR_PRODUCER_FENCED, 90);
	assert_string_equal(mk_kerr_name(35), "UNSUPPORTED_VERSION");
	assert_string_equal(mk_kerr_name(-1), "UNKNOWN_SERVER_ERROR");
	assert_null(mk_kerr_name(11));          /* not one we answer with */
	assert_null(mk_kerr_name(-2));
	/* Every core error: MK_OK alone is NONE; a name Kafka has maps to
	 * Kafka's code of that name. */
	int same = 0;
	for (int e = 0; e < MK_ERR__COUNT; e++) {
		int16_t code = mk_kerr_from((mk_err)e);
		const char *name = mk_err_name((mk_err)e);
		assert_true((e == MK_OK) == (code == MK_KERR_NONE));
		assert_non_null(mk_kerr_name(code));
		for (int16_t c = -1; c < 200; c++) {
			const char *kn = mk_kerr_name(c);
			if (kn && !strcmp(kn, name)) {
				if (c != code)
					print_error("%s maps to %d\n", name, code);
				assert_int_equal(code, c);
				same++;
			}
		}
	}
	assert_true(same >= 30);
	assert_int_equal(mk_kerr_from(MK_UNKNOWN_BROKER), MK_KERR_BROKER_NOT_AVAILABLE);
	assert_int_equal(mk_kerr_from(MK_INTERRUPTED), MK_KERR_REQUEST_TIMED_OUT);
	assert_int_equal(mk_kerr_from(MK_OUT_OF_MEMORY), MK_KERR_UNKNOWN_SERVER_ERROR);
	assert_int_equal(mk_kerr_from((mk_err)MK_ERR__COUNT), MK_KERR_UNKNOWN_SERVER_ERROR);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_samples_round_trip),
		cmocka_unit_test(test_integers_round_trip),
		cmocka_unit_test(test_strings_round_trip),
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_size_prefix),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_huge_array),
		cmocka_unit_test(test_sticky),
		cmocka_unit_test(test_tags),
		cmocka_unit_test(test_librdkafka_header),
		cmocka_unit_test(test_header_damage),
		cmocka_unit_test(test_header_versions),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_error_codes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
