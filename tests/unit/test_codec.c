/*
 * test_codec.c — the batch frame: round trips through the builder, offset
 * assignment, compaction filtering, markers, and every decoder rejection.
 *
 * Rejections are tested on frames written by a hand encoder (raw_encode)
 * that follows the layout in codec.h independently of codec.c and can write
 * any field wrong. Each rejection corrupts one thing of a frame that is
 * first checked to decode, keeps the CRC valid unless the CRC is the
 * target, and checks the reason, so that the check under test is the one
 * that fired. Frames are decoded from exactly sized heap copies so that
 * AddressSanitizer sees any read past the end.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "codec.h"

/* ---- helpers ------------------------------------------------------------- */

static uint32_t crc_of(const uint8_t *p, size_t n)
{
	return (uint32_t)crc32(crc32(0L, Z_NULL, 0), p, (uInt)n);
}

/* Recompute the CRC of a frame from its declared payload length. */
static void fix_crc(uint8_t *f)
{
	uint32_t plen = mk_load_be32(f + MK_FRAME_OFF_LENGTH);
	mk_store_be32(f + MK_FRAME_OFF_CRC, crc_of(f + MK_FRAME_HEADER, plen));
}

/* A heap copy of exactly len bytes, so that overreads are caught. */
typedef struct {
	uint8_t *buf;
	size_t len;
} owned;

static owned own(const void *p, size_t len)
{
	owned o = { malloc(len ? len : 1), len };
	assert_non_null(o.buf);
	if (len)
		memcpy(o.buf, p, len);
	return o;
}

static mk_err decode_owned(owned *o, size_t max_payload, mk_batch_view *v,
			   const char **why)
{
	*why = NULL;
	return mk_frame_decode(o->buf, o->len, max_payload, v, why);
}

static bool eq_bytes(mk_bytes a, mk_bytes b)
{
	if (a.len != b.len)
		return false;
	if (a.len == -1)
		return a.ptr == NULL && b.ptr == NULL;
	return a.len == 0 || memcmp(a.ptr, b.ptr, (size_t)a.len) == 0;
}

static mk_bytes S(const char *s)
{
	return mk_bytes_of(s, strlen(s));
}

static mk_batch_meta plain_meta(void)
{
	return (mk_batch_meta){
		.flags = 0,
		.base_offset = 0,
		.leader_epoch = 0,
		.producer_id = -1,
		.producer_epoch = -1,
		.base_sequence = -1,
		.txn_id = MK_BYTES_NULL,
	};
}

/* ---- the hand encoder ---------------------------------------------------- */

/*
 * Lengths are written as declared; the bytes written are the string's
 * (none for NULL), so a declared length can disagree with what is there.
 */
typedef struct {
	int16_t name_len;
	const char *name;
	int32_t value_len;
	const char *value;
} raw_header;

typedef struct {
	int32_t delta;
	int64_t ts;
	int32_t key_len;
	const char *key;
	int32_t value_len;
	const char *value;
	int32_t header_count;      /* declared */
	size_t nheaders;           /* written */
	raw_header h[3];
} raw_record;

typedef struct {
	uint8_t version;           /* the digit of the magic "MKF<d>" */
	uint16_t flags;
	int64_t base_offset;
	int32_t leader_epoch;
	int64_t producer_id;
	int16_t producer_epoch;
	int32_t base_sequence;
	int32_t last_offset_delta;
	int64_t first_ts;
	int64_t max_ts;
	int16_t txn_len;
	const char *txn;
	int32_t record_count;      /* declared */
	size_t nrecords;           /* written */
	raw_record r[5];
	size_t trailing;           /* zero bytes after the records */
} raw_batch;

static void put_str(mk_strbuf *sb, const char *s)
{
	if (s)
		mk_strbuf_add(sb, s, strlen(s));
}

static void raw_encode(const raw_batch *b, mk_strbuf *out)
{
	mk_strbuf_reset(out);
	mk_strbuf_add(out, "MKF", 3);
	mk_strbuf_addch(out, (char)('0' + b->version));
	mk_strbuf_add_be32(out, 0);                      /* length */
	mk_strbuf_add_be64(out, (uint64_t)b->base_offset);
	mk_strbuf_add_be32(out, (uint32_t)b->leader_epoch);
	mk_strbuf_add_be32(out, 0);                      /* crc */
	assert_int_equal(out->len, MK_FRAME_HEADER);
	mk_strbuf_add_be16(out, b->flags);
	mk_strbuf_add_be64(out, (uint64_t)b->producer_id);
	mk_strbuf_add_be16(out, (uint16_t)b->producer_epoch);
	mk_strbuf_add_be32(out, (uint32_t)b->base_sequence);
	mk_strbuf_add_be32(out, (uint32_t)b->last_offset_delta);
	mk_strbuf_add_be64(out, (uint64_t)b->first_ts);
	mk_strbuf_add_be64(out, (uint64_t)b->max_ts);
	assert_int_equal(out->len, MK_FRAME_HEADER + MK_BATCH_FIXED);
	mk_strbuf_add_be16(out, (uint16_t)b->txn_len);
	put_str(out, b->txn);
	mk_strbuf_add_be32(out, (uint32_t)b->record_count);
	for (size_t i = 0; i < b->nrecords; i++) {
		const raw_record *r = &b->r[i];
		mk_strbuf_add_be32(out, (uint32_t)r->delta);
		mk_strbuf_add_be64(out, (uint64_t)r->ts);
		mk_strbuf_add_be32(out, (uint32_t)r->key_len);
		put_str(out, r->key);
		mk_strbuf_add_be32(out, (uint32_t)r->value_len);
		put_str(out, r->value);
		mk_strbuf_add_be32(out, (uint32_t)r->header_count);
		for (size_t j = 0; j < r->nheaders; j++) {
			const raw_header *h = &r->h[j];
			mk_strbuf_add_be16(out, (uint16_t)h->name_len);
			put_str(out, h->name);
			mk_strbuf_add_be32(out, (uint32_t)h->value_len);
			put_str(out, h->value);
		}
	}
	for (size_t i = 0; i < b->trailing; i++)
		mk_strbuf_addch(out, 0);
	uint8_t *f = (uint8_t *)out->buf;
	mk_store_be32(f + MK_FRAME_OFF_LENGTH,
		      (uint32_t)(out->len - MK_FRAME_HEADER));
	fix_crc(f);
}

/*
 * A valid batch of three records: a key/value record with one header, a
 * null key with an empty value, and an empty key with a null value and two
 * headers (one with a null value).
 */
static raw_batch valid_batch(void)
{
	return (raw_batch){
		.version = 2,
		.flags = 0,
		.base_offset = 100,
		.leader_epoch = 3,
		.producer_id = 7,
		.producer_epoch = 2,
		.base_sequence = 40,
		.last_offset_delta = 2,
		.first_ts = 1000,
		.max_ts = 1002,
		.txn_len = -1,
		.txn = NULL,
		.record_count = 3,
		.nrecords = 3,
		.r = {
			{ .delta = 0, .ts = 1000, .key_len = 2, .key = "k0",
			  .value_len = 2, .value = "v0", .header_count = 1,
			  .nheaders = 1,
			  .h = { { 1, "h", 1, "x" } } },
			{ .delta = 1, .ts = 1001, .key_len = -1, .key = NULL,
			  .value_len = 0, .value = "", .header_count = 0,
			  .nheaders = 0 },
			{ .delta = 2, .ts = 1002, .key_len = 0, .key = "",
			  .value_len = -1, .value = NULL, .header_count = 2,
			  .nheaders = 2,
			  .h = { { 2, "h1", -1, NULL }, { 2, "h2", 3, "abc" } } },
		},
		.trailing = 0,
	};
}

/* A valid commit marker. */
static raw_batch valid_marker(void)
{
	raw_batch b = valid_batch();
	b.flags = MK_BATCH_TRANSACTIONAL | MK_BATCH_COMMIT_MARKER;
	b.txn_len = 3;
	b.txn = "tx1";
	b.last_offset_delta = 0;
	b.record_count = 1;
	b.nrecords = 1;
	b.r[0] = (raw_record){ .delta = 0, .ts = 5000, .key_len = -1,
			       .value_len = -1, .header_count = 0 };
	return b;
}

static mk_err raw_decode(const raw_batch *b, const char **why)
{
	mk_strbuf sb = MK_STRBUF_INIT;
	raw_encode(b, &sb);
	owned o = own(sb.buf, sb.len);
	mk_batch_view v;
	mk_err err = decode_owned(&o, 0, &v, why);
	if (err == MK_OK)
		assert_int_equal(v.frame_len, sb.len);
	free(o.buf);
	mk_strbuf_release(&sb);
	return err;
}

static void expect_ok(const raw_batch *b)
{
	const char *why;
	mk_err err = raw_decode(b, &why);
	if (err != MK_OK)
		fail_msg("expected a valid frame, rejected: %s", why);
}

/* Reasons that only the record walk of mk_frame_decode() gives. */
static bool record_reason(const char *why)
{
	static const char *const reasons[] = {
		"bad record", "bad key", "bad value", "bad header count",
		"bad header", "bad offset delta", "trailing bytes",
		"bad marker",   /* also a header reason: flags, count */
	};
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (strcmp(why, reasons[i]) == 0)
			return true;
	return false;
}

/*
 * The header-only decoder (CRC checked) on bytes mk_frame_decode() rejected
 * with `reason`: it rejects them for the same reason, or accepts them when
 * the reason lies in the records it does not walk.
 */
static void cross_check_header(const void *p, size_t len, size_t max_payload,
			       const char *reason)
{
	owned o = own(p, len);
	mk_batch_view v;
	const char *why = NULL;
	mk_err err = mk_frame_decode_header(o.buf, o.len, max_payload, true, &v,
					    &why);
	if (err == MK_OK) {
		if (!record_reason(reason))
			fail_msg("header decode accepted a frame with %s",
				 reason);
		assert_true(v.frame_len <= len);
	} else {
		assert_int_equal(err, MK_CORRUPT_MESSAGE);
		assert_non_null(why);
		assert_string_equal(why, reason);
	}
	free(o.buf);
}

/*
 * `base` must decode; `bad` must be rejected with exactly `reason` (and by
 * the header-only decoder as cross_check_header() says).
 */
static void expect_reject(const raw_batch *base, const raw_batch *bad,
			  const char *reason)
{
	expect_ok(base);
	const char *why;
	assert_int_equal(raw_decode(bad, &why), MK_CORRUPT_MESSAGE);
	assert_non_null(why);
	assert_string_equal(why, reason);
	mk_strbuf sb = MK_STRBUF_INIT;
	raw_encode(bad, &sb);
	cross_check_header(sb.buf, sb.len, 0, reason);
	mk_strbuf_release(&sb);
}

/* Decode raw bytes (copied exactly) and expect a rejection. */
static void expect_bytes_reject(const void *p, size_t len, size_t max_payload,
				const char *reason)
{
	owned o = own(p, len);
	mk_batch_view v;
	const char *why;
	assert_int_equal(decode_owned(&o, max_payload, &v, &why),
			 MK_CORRUPT_MESSAGE);
	assert_non_null(why);
	assert_string_equal(why, reason);
	free(o.buf);
	cross_check_header(p, len, max_payload, reason);
}

/* ---- decoding valid frames ------------------------------------------------ */

static void test_decode_valid_raw(void **state)
{
	(void)state;
	raw_batch b = valid_batch();
	mk_strbuf sb = MK_STRBUF_INIT;
	raw_encode(&b, &sb);
	owned o = own(sb.buf, sb.len);
	mk_batch_view v;
	const char *why;
	assert_int_equal(decode_owned(&o, 0, &v, &why), MK_OK);
	assert_int_equal(v.frame_len, sb.len);
	assert_int_equal(v.meta.flags, 0);
	assert_int_equal(v.meta.base_offset, 100);
	assert_int_equal(v.meta.leader_epoch, 3);
	assert_int_equal(v.meta.producer_id, 7);
	assert_int_equal(v.meta.producer_epoch, 2);
	assert_int_equal(v.meta.base_sequence, 40);
	assert_int_equal(v.meta.txn_id.len, -1);
	assert_null(v.meta.txn_id.ptr);
	assert_int_equal(v.last_offset_delta, 2);
	assert_int_equal(v.first_timestamp, 1000);
	assert_int_equal(v.max_timestamp, 1002);
	assert_int_equal(v.record_count, 3);
	assert_int_equal(mk_batch_last_offset(&v), 102);
	assert_int_equal(mk_batch_next_offset(&v), 103);
	assert_false(mk_batch_is_control(&v));

	mk_record_iter it;
	mk_record_view rec;
	mk_header h;
	size_t pos = 0;
	mk_record_iter_init(&it, &v);

	assert_true(mk_record_next(&it, &rec));
	assert_int_equal(rec.offset, 100);
	assert_int_equal(rec.timestamp, 1000);
	assert_true(eq_bytes(rec.key, S("k0")));
	assert_true(eq_bytes(rec.value, S("v0")));
	assert_int_equal(rec.header_count, 1);
	assert_true(mk_header_next(&rec, &pos, &h));
	assert_true(eq_bytes(h.name, S("h")));
	assert_true(eq_bytes(h.value, S("x")));
	assert_false(mk_header_next(&rec, &pos, &h));

	assert_true(mk_record_next(&it, &rec));
	assert_int_equal(rec.offset, 101);
	assert_int_equal(rec.key.len, -1);
	assert_null(rec.key.ptr);
	assert_int_equal(rec.value.len, 0);
	assert_non_null(rec.value.ptr);
	assert_int_equal(rec.header_count, 0);
	assert_int_equal(rec.headers_len, 0);
	pos = 0;
	assert_false(mk_header_next(&rec, &pos, &h));

	assert_true(mk_record_next(&it, &rec));
	assert_int_equal(rec.offset, 102);
	assert_int_equal(rec.key.len, 0);
	assert_int_equal(rec.value.len, -1);
	assert_int_equal(rec.header_count, 2);
	pos = 0;
	assert_true(mk_header_next(&rec, &pos, &h));
	assert_true(eq_bytes(h.name, S("h1")));
	assert_int_equal(h.value.len, -1);
	assert_true(mk_header_next(&rec, &pos, &h));
	assert_true(eq_bytes(h.name, S("h2")));
	assert_true(eq_bytes(h.value, S("abc")));
	assert_false(mk_header_next(&rec, &pos, &h));

	assert_false(mk_record_next(&it, &rec));
	assert_false(mk_record_next(&it, &rec));
	free(o.buf);
	mk_strbuf_release(&sb);
}

/* The builder writes exactly the layout of codec.h. */
static void test_builder_matches_layout(void **state)
{
	(void)state;
	raw_batch b = valid_batch();
	mk_strbuf raw = MK_STRBUF_INIT;
	raw_encode(&b, &raw);

	mk_batch_meta m = plain_meta();
	m.base_offset = 100;
	m.leader_epoch = 3;
	m.producer_id = 7;
	m.producer_epoch = 2;
	m.base_sequence = 40;
	mk_batch_builder bb;
	mk_builder_init(&bb, &m);
	mk_header h0[] = { { S("h"), S("x") } };
	mk_header h2[] = { { S("h1"), MK_BYTES_NULL }, { S("h2"), S("abc") } };
	mk_builder_add(&bb, 1000, S("k0"), S("v0"), h0, 1);
	mk_builder_add(&bb, 1001, MK_BYTES_NULL, mk_bytes_of("", 0), NULL, 0);
	mk_builder_add(&bb, 1002, mk_bytes_of("", 0), MK_BYTES_NULL, h2, 2);
	assert_int_equal(mk_builder_size(&bb), raw.len);
	mk_builder_finish(&bb);
	assert_int_equal(bb.frame.len, raw.len);
	assert_memory_equal(bb.frame.buf, raw.buf, raw.len);
	mk_builder_release(&bb);
	mk_strbuf_release(&raw);
}

static void test_compacted_gaps_valid(void **state)
{
	(void)state;
	raw_batch b = valid_batch();
	b.last_offset_delta = 7;
	b.r[0].delta = 2;
	b.r[1].delta = 3;
	b.r[2].delta = 6;
	mk_strbuf sb = MK_STRBUF_INIT;
	raw_encode(&b, &sb);
	owned o = own(sb.buf, sb.len);
	mk_batch_view v;
	const char *why;
	assert_int_equal(decode_owned(&o, 0, &v, &why), MK_OK);
	assert_int_equal(mk_batch_next_offset(&v), 108);
	mk_record_iter it;
	mk_record_view rec;
	int64_t want[] = { 102, 103, 106 };
	int n = 0;
	mk_record_iter_init(&it, &v);
	while (mk_record_next(&it, &rec)) {
		assert_true(n < 3);
		assert_int_equal(rec.offset, want[n]);
		n++;
	}
	assert_int_equal(n, 3);
	free(o.buf);
	mk_strbuf_release(&sb);
}

static void test_two_frames_back_to_back(void **state)
{
	(void)state;
	raw_batch a = valid_batch(), b = valid_batch();
	b.base_offset = 103;
	mk_strbuf sa = MK_STRBUF_INIT, sb2 = MK_STRBUF_INIT, all = MK_STRBUF_INIT;
	raw_encode(&a, &sa);
	raw_encode(&b, &sb2);
	mk_strbuf_add(&all, sa.buf, sa.len);
	mk_strbuf_add(&all, sb2.buf, sb2.len);
	owned o = own(all.buf, all.len);
	mk_batch_view v;
	const char *why;
	assert_int_equal(decode_owned(&o, 0, &v, &why), MK_OK);
	assert_int_equal(v.frame_len, sa.len);
	assert_int_equal(v.meta.base_offset, 100);
	assert_int_equal(mk_frame_decode(o.buf + v.frame_len, o.len - v.frame_len,
					 0, &v, &why), MK_OK);
	assert_int_equal(v.meta.base_offset, 103);
	assert_int_equal(v.frame_len, sb2.len);
	free(o.buf);
	mk_strbuf_release(&sa);
	mk_strbuf_release(&sb2);
	mk_strbuf_release(&all);
}

/*
 * The frame walk (mk_frame_iter): every whole frame in order, each view's
 * frame pointing at its bytes; it stops before a partial tail, leaving
 * those bytes counted in it.left, and gives nothing for an empty buffer.
 */
static void test_frame_iter(void **state)
{
	(void)state;
	raw_batch a = valid_batch(), b = valid_batch();
	b.base_offset = 103;
	mk_strbuf sa = MK_STRBUF_INIT, sb2 = MK_STRBUF_INIT, all = MK_STRBUF_INIT;
	raw_encode(&a, &sa);
	raw_encode(&b, &sb2);
	mk_strbuf_add(&all, sa.buf, sa.len);
	mk_strbuf_add(&all, sb2.buf, sb2.len);
	mk_frame_iter it;
	mk_batch_view v;

	/* Two whole frames: both, then a clean end. */
	owned o = own(all.buf, all.len);
	mk_frame_iter_init(&it, o.buf, o.len);
	assert_true(mk_frame_next(&it, &v));
	assert_int_equal(v.meta.base_offset, 100);
	assert_ptr_equal(it.frame, o.buf);
	assert_true(mk_frame_next(&it, &v));
	assert_int_equal(v.meta.base_offset, 103);
	assert_ptr_equal(it.frame, o.buf + sa.len);
	assert_int_equal(v.frame_len, sb2.len);
	assert_false(mk_frame_next(&it, &v));
	assert_int_equal(it.left, 0);
	assert_false(mk_frame_next(&it, &v));
	free(o.buf);

	/* A partial second frame, cut anywhere (even inside its header): the
	 * first only, the cut bytes left. */
	for (size_t cut = 1; cut < sb2.len; cut++) {
		o = own(all.buf, sa.len + cut);
		mk_frame_iter_init(&it, o.buf, o.len);
		assert_true(mk_frame_next(&it, &v));
		assert_int_equal(v.meta.base_offset, 100);
		assert_false(mk_frame_next(&it, &v));
		assert_int_equal(it.left, cut);
		free(o.buf);
	}

	/* An empty buffer: nothing, nothing left; NULL with no bytes too. */
	o = own(all.buf, 0);
	mk_frame_iter_init(&it, o.buf, 0);
	assert_false(mk_frame_next(&it, &v));
	assert_int_equal(it.left, 0);
	free(o.buf);
	mk_frame_iter_init(&it, NULL, 0);
	assert_false(mk_frame_next(&it, &v));
	assert_null(it.frame);

	mk_strbuf_release(&sa);
	mk_strbuf_release(&sb2);
	mk_strbuf_release(&all);
}

static void test_max_payload_bound(void **state)
{
	(void)state;
	raw_batch b = valid_batch();
	mk_strbuf sb = MK_STRBUF_INIT;
	raw_encode(&b, &sb);
	size_t plen = sb.len - MK_FRAME_HEADER;
	owned o = own(sb.buf, sb.len);
	mk_batch_view v;
	const char *why;
	assert_int_equal(decode_owned(&o, plen, &v, &why), MK_OK);
	assert_int_equal(decode_owned(&o, plen - 1, &v, &why),
			 MK_CORRUPT_MESSAGE);
	assert_string_equal(why, "payload too large");
	free(o.buf);
	mk_strbuf_release(&sb);
}

/* ---- builder round trips -------------------------------------------------- */

typedef struct {
	int64_t ts;
	mk_bytes key;
	mk_bytes value;
	const mk_header *h;
	size_t nh;
} rt_record;

/* Build, decode, and compare every record and header. */
static void round_trip(const mk_batch_meta *m, const rt_record *r, size_t n)
{
	mk_batch_builder b;
	mk_builder_init(&b, m);
	for (size_t i = 0; i < n; i++) {
		mk_builder_add(&b, r[i].ts, r[i].key, r[i].value, r[i].h,
			       r[i].nh);
		assert_int_equal(mk_builder_size(&b), b.frame.len);
	}
	size_t size = mk_builder_size(&b);
	mk_builder_finish(&b);
	assert_int_equal(b.frame.len, size);

	owned o = own(b.frame.buf, b.frame.len);
	mk_batch_view v;
	const char *why;
	mk_err err = decode_owned(&o, 0, &v, &why);
	if (err)
		fail_msg("built frame rejected: %s", why);
	assert_int_equal(v.frame_len, size);
	assert_int_equal(v.meta.flags, m->flags);
	assert_int_equal(v.meta.base_offset, m->base_offset);
	assert_int_equal(v.meta.leader_epoch, m->leader_epoch);
	assert_int_equal(v.meta.producer_id, m->producer_id);
	assert_int_equal(v.meta.producer_epoch, m->producer_epoch);
	assert_int_equal(v.meta.base_sequence, m->base_sequence);
	assert_true(eq_bytes(v.meta.txn_id, m->txn_id));
	assert_int_equal(v.record_count, (int32_t)n);
	assert_int_equal(v.last_offset_delta, (int32_t)n - 1);
	int64_t max = r[0].ts;
	for (size_t i = 1; i < n; i++)
		if (r[i].ts > max)
			max = r[i].ts;
	assert_int_equal(v.first_timestamp, r[0].ts);
	assert_int_equal(v.max_timestamp, max);

	mk_record_iter it;
	mk_record_view rec;
	size_t i = 0;
	mk_record_iter_init(&it, &v);
	while (mk_record_next(&it, &rec)) {
		assert_true(i < n);
		assert_int_equal(rec.offset, m->base_offset + (int64_t)i);
		assert_int_equal(rec.timestamp, r[i].ts);
		assert_true(eq_bytes(rec.key, r[i].key));
		assert_true(eq_bytes(rec.value, r[i].value));
		assert_int_equal(rec.header_count, (int32_t)r[i].nh);
		size_t pos = 0, j = 0;
		mk_header h;
		while (mk_header_next(&rec, &pos, &h)) {
			assert_true(j < r[i].nh);
			assert_true(eq_bytes(h.name, r[i].h[j].name));
			assert_true(eq_bytes(h.value, r[i].h[j].value));
			j++;
		}
		assert_int_equal(j, r[i].nh);
		i++;
	}
	assert_int_equal(i, n);
	free(o.buf);
	mk_builder_release(&b);
}

static void test_round_trip_null_vs_empty(void **state)
{
	(void)state;
	mk_batch_meta m = plain_meta();
	m.base_offset = 42;
	rt_record r[] = {
		{ 1, MK_BYTES_NULL, MK_BYTES_NULL, NULL, 0 },
		{ 2, mk_bytes_of("", 0), MK_BYTES_NULL, NULL, 0 },
		{ 3, MK_BYTES_NULL, mk_bytes_of("", 0), NULL, 0 },
		{ 4, mk_bytes_of("", 0), mk_bytes_of("", 0), NULL, 0 },
	};
	round_trip(&m, r, 4);

	/* And explicitly: decoded null and empty are distinguishable. */
	mk_batch_builder b;
	mk_builder_init(&b, &m);
	mk_builder_add(&b, 1, MK_BYTES_NULL, mk_bytes_of("", 0), NULL, 0);
	mk_builder_add(&b, 2, mk_bytes_of("", 0), MK_BYTES_NULL, NULL, 0);
	mk_builder_finish(&b);
	mk_batch_view v;
	const char *why;
	assert_int_equal(mk_frame_decode((uint8_t *)b.frame.buf, b.frame.len, 0,
					 &v, &why), MK_OK);
	mk_record_iter it;
	mk_record_view rec;
	mk_record_iter_init(&it, &v);
	assert_true(mk_record_next(&it, &rec));
	assert_int_equal(rec.key.len, -1);
	assert_int_equal(rec.value.len, 0);
	assert_true(mk_record_next(&it, &rec));
	assert_int_equal(rec.key.len, 0);
	assert_int_equal(rec.value.len, -1);
	mk_builder_release(&b);
}

static void test_round_trip_binary(void **state)
{
	(void)state;
	static const uint8_t key[] = { 0, 1, 0, 0xff, '\n', 0 };
	static const uint8_t val[] = { 0xff, 0, 0xfe, '\t', 0, 0, 0x80 };
	uint8_t all[256];
	for (int i = 0; i < 256; i++)
		all[i] = (uint8_t)i;
	mk_header h[] = {
		{ mk_bytes_of("n\0m", 3), mk_bytes_of(val, sizeof(val)) },
		{ mk_bytes_of("", 0), MK_BYTES_NULL },
		{ S("empty"), mk_bytes_of("", 0) },
	};
	mk_batch_meta m = plain_meta();
	rt_record r[] = {
		{ -5, mk_bytes_of(key, sizeof(key)),
		  mk_bytes_of(val, sizeof(val)), h, 3 },
		{ INT64_MAX, mk_bytes_of(all, sizeof(all)),
		  mk_bytes_of(all, sizeof(all)), NULL, 0 },
		{ INT64_MIN, mk_bytes_of("\0", 1), mk_bytes_of("\0\0", 2),
		  h + 1, 1 },
	};
	round_trip(&m, r, 3);
}

static void test_round_trip_headers_null_values(void **state)
{
	(void)state;
	mk_header h[] = {
		{ S("a"), MK_BYTES_NULL },
		{ S("b"), S("") },
		{ S("a"), S("dup") },
	};
	mk_batch_meta m = plain_meta();
	rt_record r[] = {
		{ 10, S("k"), S("v"), h, 3 },
		{ 11, S("k"), MK_BYTES_NULL, h, 1 },
	};
	round_trip(&m, r, 2);
}

static void test_round_trip_many_records(void **state)
{
	(void)state;
	enum { N = 1300, VLEN = 100 };
	uint8_t *vals = malloc((size_t)N * VLEN);
	rt_record *r = calloc(N, sizeof(*r));
	assert_non_null(vals);
	assert_non_null(r);
	for (int i = 0; i < N; i++) {
		for (int j = 0; j < VLEN; j++)
			vals[i * VLEN + j] = (uint8_t)(i * 31 + j);
		r[i].ts = 1700000000000 + (i % 7) * 1000 - i;
		r[i].key = MK_BYTES_NULL;
		r[i].value = mk_bytes_of(vals + (size_t)i * VLEN, VLEN);
	}
	mk_batch_meta m = plain_meta();
	m.base_offset = 123456789;
	m.leader_epoch = 9;
	round_trip(&m, r, N);
	free(r);
	free(vals);
}

static void test_round_trip_transactional(void **state)
{
	(void)state;
	mk_batch_meta m = plain_meta();
	m.flags = MK_BATCH_TRANSACTIONAL;
	m.producer_id = 4000;
	m.producer_epoch = 12;
	m.base_sequence = 77;
	m.txn_id = S("txn-payments-1");
	m.base_offset = 5;
	m.leader_epoch = 2;
	rt_record r[] = {
		{ 100, S("a"), S("1"), NULL, 0 },
		{ 99, S("b"), S("2"), NULL, 0 },
	};
	round_trip(&m, r, 2);

	/* A transactional batch may also have no transactional id. */
	m.txn_id = MK_BYTES_NULL;
	round_trip(&m, r, 2);
	m.txn_id = mk_bytes_of("", 0);
	round_trip(&m, r, 2);
}

static void test_builder_timestamps(void **state)
{
	(void)state;
	mk_batch_meta m = plain_meta();
	mk_batch_builder b;
	mk_builder_init(&b, &m);
	int64_t ts[] = { 50, 10, 70, 30 };
	for (int i = 0; i < 4; i++)
		mk_builder_add(&b, ts[i], MK_BYTES_NULL, S("v"), NULL, 0);
	mk_builder_finish(&b);
	mk_batch_view v;
	const char *why;
	assert_int_equal(mk_frame_decode((uint8_t *)b.frame.buf, b.frame.len, 0,
					 &v, &why), MK_OK);
	assert_int_equal(v.first_timestamp, 50);
	assert_int_equal(v.max_timestamp, 70);
	assert_int_equal(v.last_offset_delta, 3);
	mk_builder_release(&b);
}

static void test_builder_reset_reuses(void **state)
{
	(void)state;
	mk_batch_meta m = plain_meta();
	m.flags = MK_BATCH_TRANSACTIONAL;
	m.txn_id = S("a-long-transactional-id");
	mk_batch_builder b;
	mk_builder_init(&b, &m);
	char big[2000];
	memset(big, 'x', sizeof(big));
	for (int i = 0; i < 10; i++)
		mk_builder_add(&b, i, S("key"), mk_bytes_of(big, sizeof(big)),
			       NULL, 0);
	mk_builder_finish(&b);
	char *buf = b.frame.buf;
	size_t alloc = b.frame.alloc;

	mk_batch_meta m2 = plain_meta();
	m2.base_offset = 77;
	mk_builder_reset(&b, &m2);
	assert_ptr_equal(b.frame.buf, buf);
	assert_int_equal(b.frame.alloc, alloc);
	assert_int_equal(b.count, 0);
	assert_false(b.finished);
	mk_builder_add(&b, 5, S("k"), S("v"), NULL, 0);
	size_t size = mk_builder_size(&b);
	mk_builder_finish(&b);
	assert_ptr_equal(b.frame.buf, buf);
	assert_int_equal(b.frame.len, size);

	mk_batch_view v;
	const char *why;
	assert_int_equal(mk_frame_decode((uint8_t *)b.frame.buf, b.frame.len, 0,
					 &v, &why), MK_OK);
	assert_int_equal(v.frame_len, size);
	assert_int_equal(v.meta.flags, 0);
	assert_int_equal(v.meta.txn_id.len, -1);
	assert_int_equal(v.meta.base_offset, 77);
	assert_int_equal(v.record_count, 1);
	assert_int_equal(v.first_timestamp, 5);
	mk_builder_release(&b);
}

/* ---- assign --------------------------------------------------------------- */

static void test_frame_assign(void **state)
{
	(void)state;
	mk_batch_meta m = plain_meta();
	mk_batch_builder b;
	mk_builder_init(&b, &m);
	mk_builder_add(&b, 1, S("a"), S("1"), NULL, 0);
	mk_builder_add(&b, 2, S("b"), S("2"), NULL, 0);
	mk_builder_finish(&b);
	size_t len = b.frame.len;
	uint8_t *orig = malloc(len);
	assert_non_null(orig);
	memcpy(orig, b.frame.buf, len);

	uint8_t *f = (uint8_t *)b.frame.buf;
	mk_frame_assign(f, len, 1000, 5);
	/* Only the base offset and the epoch changed: not the CRC. */
	for (size_t i = 0; i < len; i++) {
		bool patched = (i >= MK_FRAME_OFF_BASE_OFFSET &&
				i < MK_FRAME_OFF_BASE_OFFSET + 8) ||
			       (i >= MK_FRAME_OFF_LEADER_EPOCH &&
				i < MK_FRAME_OFF_LEADER_EPOCH + 4);
		if (!patched)
			assert_int_equal(f[i], orig[i]);
	}
	assert_int_equal((int64_t)mk_load_be64(f + MK_FRAME_OFF_BASE_OFFSET),
			 1000);
	assert_int_equal((int32_t)mk_load_be32(f + MK_FRAME_OFF_LEADER_EPOCH),
			 5);
	/* Both lie outside the CRC'd payload. */
	assert_true(MK_FRAME_OFF_BASE_OFFSET + 8 <= MK_FRAME_HEADER &&
		    MK_FRAME_OFF_LEADER_EPOCH + 4 <= MK_FRAME_HEADER);
	assert_memory_equal(f + MK_FRAME_OFF_CRC, orig + MK_FRAME_OFF_CRC, 4);

	mk_batch_view v;
	const char *why;
	assert_int_equal(mk_frame_decode(f, len, 0, &v, &why), MK_OK);
	assert_int_equal(v.meta.base_offset, 1000);
	assert_int_equal(v.meta.leader_epoch, 5);
	assert_int_equal(mk_batch_last_offset(&v), 1001);
	mk_record_iter it;
	mk_record_view rec;
	mk_record_iter_init(&it, &v);
	assert_true(mk_record_next(&it, &rec));
	assert_int_equal(rec.offset, 1000);
	assert_true(mk_record_next(&it, &rec));
	assert_int_equal(rec.offset, 1001);
	assert_true(eq_bytes(rec.value, S("2")));

	/* Assign again, with a negative epoch and a large offset. */
	mk_frame_assign(f, len, INT64_MAX - 2, -1);
	assert_int_equal(mk_frame_decode(f, len, 0, &v, &why), MK_OK);
	assert_int_equal(v.meta.base_offset, INT64_MAX - 2);
	assert_int_equal(v.meta.leader_epoch, -1);
	assert_int_equal(mk_batch_next_offset(&v), INT64_MAX);
	free(orig);
	mk_builder_release(&b);
}

/*
 * After an assignment the CRC is still the CRC of the whole payload,
 * whatever the frame size, the old and the new values.
 */
static void test_frame_assign_crc_patch(void **state)
{
	(void)state;
	mk_batch_meta m = plain_meta();
	mk_batch_builder b;
	mk_builder_init(&b, &m);
	uint32_t x = 99;
	char value[3000];
	memset(value, 'v', sizeof(value));
	for (int round = 0; round < 60; round++) {
		mk_builder_reset(&b, &m);
		int n = 1 + round % 7;
		for (int i = 0; i < n; i++) {
			x = x * 1103515245u + 12345u;
			size_t vlen = (x >> 8) % (round < 50 ? 40 : sizeof(value));
			mk_builder_add(&b, i, MK_BYTES_NULL,
				       mk_bytes_of(value, vlen), NULL, 0);
		}
		mk_builder_finish(&b);
		uint8_t *f = (uint8_t *)b.frame.buf;
		size_t len = b.frame.len;
		for (int k = 0; k < 4; k++) {
			x = x * 1103515245u + 12345u;
			int64_t base = k == 3 ? INT64_MAX - 1 - (n - 1)
					      : (int64_t)x * (k + 1);
			int32_t epoch = k == 2 ? -1 : (int32_t)(x >> 4);
			mk_frame_assign(f, len, base, epoch);
			assert_int_equal(mk_load_be32(f + MK_FRAME_OFF_CRC),
					 crc_of(f + MK_FRAME_HEADER,
						len - MK_FRAME_HEADER));
			mk_batch_view v;
			const char *why = NULL;
			assert_int_equal(mk_frame_decode(f, len, 0, &v, &why),
					 MK_OK);
			assert_int_equal(v.meta.base_offset, base);
			assert_int_equal(v.meta.leader_epoch, epoch);
		}
	}
	mk_builder_release(&b);
}

/* A frame damaged after it was built keeps a CRC that does not match. */
static void test_frame_assign_keeps_damage(void **state)
{
	(void)state;
	mk_batch_meta m = plain_meta();
	mk_batch_builder b;
	mk_builder_init(&b, &m);
	mk_builder_add(&b, 1, S("key"), S("value"), NULL, 0);
	mk_builder_finish(&b);
	uint8_t *f = (uint8_t *)b.frame.buf;
	size_t len = b.frame.len;
	f[len - 2] ^= 0x10;   /* in the value */
	mk_frame_assign(f, len, 500, 2);
	mk_batch_view v;
	const char *why = NULL;
	assert_int_equal(mk_frame_decode(f, len, 0, &v, &why),
			 MK_CORRUPT_MESSAGE);
	assert_string_equal(why, "bad crc");
	f[len - 2] ^= 0x10;
	assert_int_equal(mk_frame_decode(f, len, 0, &v, &why), MK_OK);
	assert_int_equal(v.meta.base_offset, 500);
	mk_builder_release(&b);
}

/* Producer stamping patches the CRC too, before or after the assignment. */
static void test_frame_set_producer(void **state)
{
	(void)state;
	mk_batch_meta m = plain_meta();
	mk_batch_builder b;
	mk_builder_init(&b, &m);
	mk_builder_add(&b, 1, S("a"), S("1"), NULL, 0);
	mk_builder_add(&b, 2, S("b"), S("2"), NULL, 0);
	mk_builder_finish(&b);
	uint8_t *f = (uint8_t *)b.frame.buf;
	size_t len = b.frame.len;
	mk_batch_view v;
	const char *why = NULL;
	mk_frame_set_producer(f, len, 42, 3, 17);
	assert_int_equal(mk_load_be32(f + MK_FRAME_OFF_CRC),
			 crc_of(f + MK_FRAME_HEADER, len - MK_FRAME_HEADER));
	mk_frame_assign(f, len, 900, 4);
	assert_int_equal(mk_frame_decode(f, len, 0, &v, &why), MK_OK);
	assert_int_equal(v.meta.producer_id, 42);
	assert_int_equal(v.meta.producer_epoch, 3);
	assert_int_equal(v.meta.base_sequence, 17);
	assert_int_equal(v.meta.base_offset, 900);
	mk_frame_set_producer(f, len, INT64_MAX, -1, INT32_MAX);
	assert_int_equal(mk_frame_decode(f, len, 0, &v, &why), MK_OK);
	assert_int_equal(v.meta.producer_id, INT64_MAX);
	assert_int_equal(v.meta.producer_epoch, -1);
	assert_int_equal(v.meta.leader_epoch, 4);
	mk_builder_release(&b);
}

/* ---- header-only decoding -------------------------------------------------- */

static void assert_views_equal(const mk_batch_view *a, const mk_batch_view *b)
{
	assert_int_equal(a->meta.flags, b->meta.flags);
	assert_int_equal(a->meta.base_offset, b->meta.base_offset);
	assert_int_equal(a->meta.leader_epoch, b->meta.leader_epoch);
	assert_int_equal(a->meta.producer_id, b->meta.producer_id);
	assert_int_equal(a->meta.producer_epoch, b->meta.producer_epoch);
	assert_int_equal(a->meta.base_sequence, b->meta.base_sequence);
	assert_true(eq_bytes(a->meta.txn_id, b->meta.txn_id));
	assert_int_equal(a->last_offset_delta, b->last_offset_delta);
	assert_int_equal(a->first_timestamp, b->first_timestamp);
	assert_int_equal(a->max_timestamp, b->max_timestamp);
	assert_int_equal(a->record_count, b->record_count);
	assert_ptr_equal(a->records, b->records);
	assert_int_equal(a->records_len, b->records_len);
	assert_int_equal(a->frame_len, b->frame_len);
}

static void test_decode_header_valid(void **state)
{
	(void)state;
	raw_batch rb[2] = { valid_batch(), valid_marker() };
	mk_strbuf sb = MK_STRBUF_INIT;
	for (int i = 0; i < 2; i++) {
		raw_encode(&rb[i], &sb);
		/* Followed by more bytes: only the first frame is taken. */
		size_t flen = sb.len;
		mk_strbuf_addstr(&sb, "MKF1more");
		owned o = own(sb.buf, sb.len);
		mk_batch_view full, head;
		const char *why = NULL;
		assert_int_equal(mk_frame_decode(o.buf, o.len, 0, &full, &why),
				 MK_OK);
		for (int crc = 0; crc < 2; crc++) {
			assert_int_equal(mk_frame_decode_header(o.buf, o.len, 0,
								crc, &head,
								&why),
					 MK_OK);
			assert_views_equal(&head, &full);
			assert_int_equal(head.frame_len, flen);
		}
		/* Its records iterate as those of the full decode. */
		mk_record_iter a, b;
		mk_record_view ra, rbv;
		mk_record_iter_init(&a, &full);
		mk_record_iter_init(&b, &head);
		while (mk_record_next(&a, &ra)) {
			assert_true(mk_record_next(&b, &rbv));
			assert_int_equal(ra.offset, rbv.offset);
			assert_true(eq_bytes(ra.value, rbv.value));
		}
		assert_false(mk_record_next(&b, &rbv));
		free(o.buf);
	}
	/* A builder's frame, as the leader's append and the readers see it. */
	mk_batch_meta m = plain_meta();
	mk_batch_builder bl;
	mk_builder_init(&bl, &m);
	mk_builder_add(&bl, 7, S("k"), S("v"), NULL, 0);
	mk_builder_add(&bl, 9, MK_BYTES_NULL, S("w"), NULL, 0);
	mk_builder_finish(&bl);
	mk_batch_view v;
	assert_int_equal(mk_frame_decode_header((uint8_t *)bl.frame.buf,
						bl.frame.len, 0, false, &v,
						NULL), MK_OK);
	assert_int_equal(v.frame_len, bl.frame.len);
	assert_int_equal(v.last_offset_delta, 1);
	assert_int_equal(v.first_timestamp, 7);
	assert_int_equal(v.max_timestamp, 9);
	assert_int_equal(v.record_count, 2);
	mk_builder_release(&bl);
	mk_strbuf_release(&sb);
}

static void expect_header_reject(const void *p, size_t len, bool check_crc,
				 const char *reason)
{
	owned o = own(p, len);
	mk_batch_view v;
	const char *why = NULL;
	assert_int_equal(mk_frame_decode_header(o.buf, o.len, 0, check_crc, &v,
						&why), MK_CORRUPT_MESSAGE);
	assert_non_null(why);
	assert_string_equal(why, reason);
	free(o.buf);
}

static void expect_header_ok(const void *p, size_t len, bool check_crc)
{
	owned o = own(p, len);
	mk_batch_view v;
	const char *why = NULL;
	mk_err err = mk_frame_decode_header(o.buf, o.len, 0, check_crc, &v,
					    &why);
	if (err)
		fail_msg("header decode rejected: %s", why);
	free(o.buf);
}

static void test_decode_header_rejects(void **state)
{
	(void)state;
	raw_batch b = valid_batch();
	mk_strbuf sb = MK_STRBUF_INIT;
	raw_encode(&b, &sb);
	/* Magic, with or without the CRC check. */
	for (int crc = 0; crc < 2; crc++) {
		sb.buf[1] ^= 0x20;
		expect_header_reject(sb.buf, sb.len, crc, "bad magic");
		sb.buf[1] ^= 0x20;
		/* Every proper prefix is a truncated frame. */
		for (size_t n = 4; n < sb.len; n++)
			expect_header_reject(sb.buf, n, crc, "truncated frame");
		/* A declared length past the bound, or past the bytes. */
		uint32_t plen = mk_load_be32((uint8_t *)sb.buf + 4);
		mk_store_be32((uint8_t *)sb.buf + 4, MK_FRAME_MAX_PAYLOAD + 1);
		expect_header_reject(sb.buf, sb.len, crc, "payload too large");
		mk_store_be32((uint8_t *)sb.buf + 4, plen + 1);
		expect_header_reject(sb.buf, sb.len, crc, "truncated frame");
		mk_store_be32((uint8_t *)sb.buf + 4, plen);
	}
	/* The CRC only when asked: a flipped payload bit anywhere. */
	for (size_t i = MK_FRAME_HEADER + MK_BATCH_FIXED + 2; i < sb.len; i++) {
		sb.buf[i] ^= 0x01;
		expect_header_reject(sb.buf, sb.len, true, "bad crc");
		sb.buf[i] ^= 0x01;
	}
	sb.buf[sb.len - 1] ^= 0x01;   /* in a header value: records unwalked */
	expect_header_ok(sb.buf, sb.len, false);
	sb.buf[sb.len - 1] ^= 0x01;
	sb.buf[MK_FRAME_OFF_CRC] ^= 0x01;   /* the CRC field itself */
	expect_header_reject(sb.buf, sb.len, true, "bad crc");
	expect_header_ok(sb.buf, sb.len, false);
	sb.buf[MK_FRAME_OFF_CRC] ^= 0x01;

	/* Header fields, with a valid CRC so that they are what fires. */
	raw_batch bad = valid_batch();
	bad.version = 1;
	raw_encode(&bad, &sb);
	expect_header_reject(sb.buf, sb.len, false,
			     "unsupported frame version 1");
	bad = valid_batch();
	bad.leader_epoch = -2;
	raw_encode(&bad, &sb);
	expect_header_reject(sb.buf, sb.len, false, "bad leader epoch");
	bad = valid_batch();
	bad.flags = 0x8;
	raw_encode(&bad, &sb);
	expect_header_reject(sb.buf, sb.len, false, "unknown flags");
	bad = valid_marker();
	bad.record_count = 2;
	raw_encode(&bad, &sb);
	expect_header_reject(sb.buf, sb.len, false, "bad marker");
	bad = valid_batch();
	bad.record_count = 0;
	raw_encode(&bad, &sb);
	expect_header_reject(sb.buf, sb.len, false, "bad record count");
	bad = valid_batch();
	bad.last_offset_delta = -1;
	raw_encode(&bad, &sb);
	expect_header_reject(sb.buf, sb.len, false, "bad last offset delta");
	bad = valid_batch();
	bad.txn_len = 2;
	bad.txn = "tx";
	raw_encode(&bad, &sb);
	expect_header_reject(sb.buf, sb.len, false, "bad txn id");

	/* Damage inside the records (CRC fixed) passes the header decode
	 * and is left to mk_frame_decode. */
	bad = valid_batch();
	bad.r[1].key_len = 1000;
	raw_encode(&bad, &sb);
	expect_header_ok(sb.buf, sb.len, true);
	expect_bytes_reject(sb.buf, sb.len, 0, "bad key");
	mk_strbuf_release(&sb);
}

/* ---- filter --------------------------------------------------------------- */

static bool keep_odd(const mk_record_view *rec, void *arg)
{
	int *calls = arg;
	(*calls)++;
	return rec->offset % 2 == 1;
}

static bool keep_none(const mk_record_view *rec, void *arg)
{
	(void)rec;
	(void)arg;
	return false;
}

static bool keep_all(const mk_record_view *rec, void *arg)
{
	(void)rec;
	(void)arg;
	return true;
}

static bool keep_first(const mk_record_view *rec, void *arg)
{
	const int64_t *want = arg;
	return rec->offset == *want;
}

static void test_frame_filter(void **state)
{
	(void)state;
	mk_batch_meta m = plain_meta();
	m.flags = MK_BATCH_TRANSACTIONAL;
	m.txn_id = S("t");
	m.base_offset = 200;
	m.leader_epoch = 4;
	m.producer_id = 9;
	m.producer_epoch = 1;
	m.base_sequence = 3;
	mk_header h[] = { { S("hn"), S("hv") } };
	int64_t ts[] = { 60, 90, 10, 30, 80, 20 };
	mk_batch_builder b;
	mk_builder_init(&b, &m);
	for (int i = 0; i < 6; i++) {
		char k[8];
		int n = snprintf(k, sizeof(k), "k%d", i);
		mk_builder_add(&b, ts[i], mk_bytes_of(k, (size_t)n), S("val"),
			       h, (size_t)(i % 2));
	}
	mk_builder_finish(&b);
	mk_batch_view v;
	const char *why;
	assert_int_equal(mk_frame_decode((uint8_t *)b.frame.buf, b.frame.len, 0,
					 &v, &why), MK_OK);

	/* Appends after what is in out. */
	mk_strbuf out = MK_STRBUF_INIT;
	mk_strbuf_addstr(&out, "prefix");
	int calls = 0;
	mk_frame_filter(&v, keep_odd, &calls, &out);
	assert_int_equal(calls, 6);
	assert_memory_equal(out.buf, "prefix", 6);

	mk_batch_view f;
	assert_int_equal(mk_frame_decode((uint8_t *)out.buf + 6, out.len - 6, 0,
					 &f, &why), MK_OK);
	assert_int_equal(f.frame_len, out.len - 6);
	assert_int_equal(f.record_count, 3);
	assert_int_equal(f.last_offset_delta, 5);
	assert_int_equal(mk_batch_next_offset(&f), 206);
	assert_int_equal(f.meta.flags, m.flags);
	assert_int_equal(f.meta.base_offset, 200);
	assert_int_equal(f.meta.leader_epoch, 4);
	assert_int_equal(f.meta.producer_id, 9);
	assert_int_equal(f.meta.producer_epoch, 1);
	assert_int_equal(f.meta.base_sequence, 3);
	assert_true(eq_bytes(f.meta.txn_id, S("t")));
	/* Kept: offsets 201, 203, 205 with timestamps 90, 30, 20. */
	assert_int_equal(f.first_timestamp, 90);
	assert_int_equal(f.max_timestamp, 90);
	mk_record_iter it;
	mk_record_view rec;
	int n = 0;
	mk_record_iter_init(&it, &f);
	while (mk_record_next(&it, &rec)) {
		int idx = 2 * n + 1;
		char k[16];    /* room for any int: -Wformat-truncation under TSan */
		snprintf(k, sizeof(k), "k%d", idx);
		assert_int_equal(rec.offset, 200 + idx);
		assert_int_equal(rec.timestamp, ts[idx]);
		assert_true(eq_bytes(rec.key, S(k)));
		assert_true(eq_bytes(rec.value, S("val")));
		assert_int_equal(rec.header_count, 1);
		size_t pos = 0;
		mk_header hh;
		assert_true(mk_header_next(&rec, &pos, &hh));
		assert_true(eq_bytes(hh.name, S("hn")));
		n++;
	}
	assert_int_equal(n, 3);

	/* Filtering a filtered batch keeps the gaps and the range. */
	mk_strbuf out2 = MK_STRBUF_INIT;
	int64_t want = 203;
	mk_frame_filter(&f, keep_first, &want, &out2);
	mk_batch_view g;
	assert_int_equal(mk_frame_decode((uint8_t *)out2.buf, out2.len, 0, &g,
					 &why), MK_OK);
	assert_int_equal(g.record_count, 1);
	assert_int_equal(g.last_offset_delta, 5);
	assert_int_equal(g.first_timestamp, 30);
	assert_int_equal(g.max_timestamp, 30);
	mk_record_iter_init(&it, &g);
	assert_true(mk_record_next(&it, &rec));
	assert_int_equal(rec.offset, 203);
	assert_false(mk_record_next(&it, &rec));

	/* Keeping nothing appends nothing. */
	size_t before = out.len;
	mk_frame_filter(&v, keep_none, NULL, &out);
	assert_int_equal(out.len, before);
	mk_strbuf empty = MK_STRBUF_INIT;
	mk_frame_filter(&v, keep_none, NULL, &empty);
	assert_int_equal(empty.len, 0);

	/* Keeping everything of a built batch gives the same bytes. */
	mk_strbuf same = MK_STRBUF_INIT;
	mk_frame_filter(&v, keep_all, NULL, &same);
	assert_int_equal(same.len, b.frame.len);
	assert_memory_equal(same.buf, b.frame.buf, same.len);

	mk_strbuf_release(&same);
	mk_strbuf_release(&empty);
	mk_strbuf_release(&out2);
	mk_strbuf_release(&out);
	mk_builder_release(&b);
}

/* ---- markers -------------------------------------------------------------- */

static void check_marker(uint16_t marker)
{
	mk_batch_meta m = plain_meta();
	m.flags = marker;          /* the codec adds TRANSACTIONAL */
	m.base_offset = 500;
	m.leader_epoch = 6;
	m.producer_id = 31;
	m.producer_epoch = 4;
	m.txn_id = S("tx-9");
	mk_strbuf out = MK_STRBUF_INIT;
	mk_strbuf_addstr(&out, "xx");
	mk_frame_marker(&out, &m, 123456);

	mk_batch_view v;
	const char *why;
	owned o = own(out.buf + 2, out.len - 2);
	assert_int_equal(decode_owned(&o, 0, &v, &why), MK_OK);
	assert_int_equal(v.frame_len, out.len - 2);
	assert_true(mk_batch_is_control(&v));
	assert_int_equal(v.meta.flags, MK_BATCH_TRANSACTIONAL | marker);
	assert_int_equal(v.meta.base_offset, 500);
	assert_int_equal(v.meta.leader_epoch, 6);
	assert_int_equal(v.meta.producer_id, 31);
	assert_int_equal(v.meta.producer_epoch, 4);
	assert_true(eq_bytes(v.meta.txn_id, S("tx-9")));
	assert_int_equal(v.record_count, 1);
	assert_int_equal(v.last_offset_delta, 0);
	assert_int_equal(v.first_timestamp, 123456);
	assert_int_equal(v.max_timestamp, 123456);
	assert_int_equal(mk_batch_next_offset(&v), 501);
	mk_record_iter it;
	mk_record_view rec;
	mk_record_iter_init(&it, &v);
	assert_true(mk_record_next(&it, &rec));
	assert_int_equal(rec.offset, 500);
	assert_int_equal(rec.timestamp, 123456);
	assert_int_equal(rec.key.len, -1);
	assert_int_equal(rec.value.len, -1);
	assert_int_equal(rec.header_count, 0);
	assert_false(mk_record_next(&it, &rec));
	free(o.buf);
	mk_strbuf_release(&out);
}

static void test_marker_commit(void **state)
{
	(void)state;
	check_marker(MK_BATCH_COMMIT_MARKER);
}

static void test_marker_abort(void **state)
{
	(void)state;
	check_marker(MK_BATCH_ABORT_MARKER | MK_BATCH_TRANSACTIONAL);
	check_marker(MK_BATCH_ABORT_MARKER);
}

/* ---- rejections: the frame ------------------------------------------------ */

static void test_reject_bad_magic(void **state)
{
	(void)state;
	raw_batch b = valid_batch();
	mk_strbuf sb = MK_STRBUF_INIT;
	raw_encode(&b, &sb);
	expect_ok(&b);
	for (int i = 0; i < 4; i++) {
		sb.buf[i] ^= 0x20;
		expect_bytes_reject(sb.buf, sb.len, 0, "bad magic");
		sb.buf[i] ^= 0x20;
	}
	expect_bytes_reject("MKF0", 4, 0, "bad magic");
	expect_bytes_reject("MKF3", 4, 0, "bad magic");
	/* A version 1 frame is named, not called garbage (codec.h). */
	expect_bytes_reject("MKF1", 4, 0, "unsupported frame version 1");
	expect_bytes_reject("MKF", 3, 0, "truncated frame");
	expect_bytes_reject("XY", 2, 0, "bad magic");
	mk_strbuf_release(&sb);
}

static void test_reject_truncated(void **state)
{
	(void)state;
	raw_batch b = valid_batch();
	mk_strbuf sb = MK_STRBUF_INIT;
	raw_encode(&b, &sb);
	expect_ok(&b);
	/* Every proper prefix, including the empty one. */
	for (size_t n = 0; n < sb.len; n++)
		expect_bytes_reject(sb.buf, n, 0, "truncated frame");
	/* A NULL buffer of length 0 is a truncated frame too. */
	mk_batch_view v;
	const char *why = NULL;
	assert_int_equal(mk_frame_decode(NULL, 0, 0, &v, &why),
			 MK_CORRUPT_MESSAGE);
	assert_string_equal(why, "truncated frame");
	/* A why of NULL is allowed. */
	assert_int_equal(mk_frame_decode((uint8_t *)sb.buf, 5, 0, &v, NULL),
			 MK_CORRUPT_MESSAGE);
	mk_strbuf_release(&sb);
}

static void test_reject_payload_too_large(void **state)
{
	(void)state;
	uint8_t hdr[MK_FRAME_HEADER] = { 'M', 'K', 'F', '2' };
	mk_store_be32(hdr + 4, MK_FRAME_MAX_PAYLOAD + 1);
	expect_bytes_reject(hdr, sizeof(hdr), 0, "payload too large");
	mk_store_be32(hdr + 4, UINT32_MAX);
	expect_bytes_reject(hdr, sizeof(hdr), 0, "payload too large");
	/* At the bound it is merely incomplete. */
	mk_store_be32(hdr + 4, MK_FRAME_MAX_PAYLOAD);
	expect_bytes_reject(hdr, sizeof(hdr), 0, "truncated frame");
	/* An explicit bound replaces the default. */
	mk_store_be32(hdr + 4, 1000);
	expect_bytes_reject(hdr, sizeof(hdr), 999, "payload too large");
	expect_bytes_reject(hdr, sizeof(hdr), 1000, "truncated frame");
}

static void test_reject_bad_crc(void **state)
{
	(void)state;
	raw_batch b = valid_batch();
	mk_strbuf sb = MK_STRBUF_INIT;
	raw_encode(&b, &sb);
	expect_ok(&b);
	/* Any flipped bit of the payload or of the CRC itself. */
	for (size_t i = MK_FRAME_OFF_CRC; i < sb.len; i++) {
		for (int bit = 0; bit < 8; bit += 7) {
			sb.buf[i] ^= (char)(1 << bit);
			expect_bytes_reject(sb.buf, sb.len, 0, "bad crc");
			sb.buf[i] ^= (char)(1 << bit);
		}
	}
	mk_strbuf_release(&sb);
}

static void test_reject_short_payload(void **state)
{
	(void)state;
	/* Payloads shorter than the fixed fields, the txn id length, or the
	 * record count, each with a valid CRC. */
	raw_batch b = valid_batch();
	mk_strbuf sb = MK_STRBUF_INIT;
	raw_encode(&b, &sb);
	expect_ok(&b);
	size_t cuts[] = { 0, 1, 10, MK_BATCH_FIXED - 1, MK_BATCH_FIXED,
			  MK_BATCH_FIXED + 1, MK_BATCH_FIXED + 2,
			  MK_BATCH_FIXED + 5 };
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		size_t n = MK_FRAME_HEADER + cuts[i];
		uint8_t *f = malloc(n);
		assert_non_null(f);
		memcpy(f, sb.buf, n);
		mk_store_be32(f + MK_FRAME_OFF_LENGTH, (uint32_t)cuts[i]);
		fix_crc(f);
		expect_bytes_reject(f, n, 0, "short payload");
		free(f);
	}
	mk_strbuf_release(&sb);
}

/* ---- rejections: batch fields --------------------------------------------- */

static void test_reject_bad_version(void **state)
{
	(void)state;
	raw_batch ok = valid_batch(), b = ok;
	/* The version is the digit of the magic: 1 is named, others are
	 * not frames at all. */
	b.version = 1;
	expect_reject(&ok, &b, "unsupported frame version 1");
	b.version = 0;
	expect_reject(&ok, &b, "bad magic");
	b.version = 3;
	expect_reject(&ok, &b, "bad magic");
}

static void test_reject_unknown_flags(void **state)
{
	(void)state;
	raw_batch ok = valid_batch(), b = ok;
	b.flags = 1u << 3;
	expect_reject(&ok, &b, "unknown flags");
	b.flags = 1u << 15;
	expect_reject(&ok, &b, "unknown flags");
	b.flags = MK_BATCH_TRANSACTIONAL | 0x100;
	expect_reject(&ok, &b, "unknown flags");
}

static void test_reject_both_markers(void **state)
{
	(void)state;
	raw_batch ok = valid_marker(), b = ok;
	b.flags = MK_BATCH_TRANSACTIONAL | MK_BATCH_COMMIT_MARKER |
		  MK_BATCH_ABORT_MARKER;
	expect_reject(&ok, &b, "bad marker");
}

static void test_reject_marker_not_transactional(void **state)
{
	(void)state;
	raw_batch ok = valid_marker(), b = ok;
	b.flags = MK_BATCH_COMMIT_MARKER;
	b.txn_len = -1;
	b.txn = NULL;
	expect_reject(&ok, &b, "bad marker");
	b.flags = MK_BATCH_ABORT_MARKER;
	expect_reject(&ok, &b, "bad marker");
}

static void test_reject_marker_records(void **state)
{
	(void)state;
	raw_batch ok = valid_marker(), b;

	/* Two records. */
	b = ok;
	b.last_offset_delta = 1;
	b.record_count = 2;
	b.nrecords = 2;
	b.r[1] = b.r[0];
	b.r[1].delta = 1;
	expect_reject(&ok, &b, "bad marker");

	/* A key, a value (even empty), a header. */
	b = ok;
	b.r[0].key_len = 1;
	b.r[0].key = "k";
	expect_reject(&ok, &b, "bad marker");
	b = ok;
	b.r[0].value_len = 0;
	b.r[0].value = "";
	expect_reject(&ok, &b, "bad marker");
	b = ok;
	b.r[0].header_count = 1;
	b.r[0].nheaders = 1;
	b.r[0].h[0] = (raw_header){ 1, "h", -1, NULL };
	expect_reject(&ok, &b, "bad marker");
}

static void test_reject_txn_id(void **state)
{
	(void)state;
	raw_batch ok = valid_batch(), b;
	ok.flags = MK_BATCH_TRANSACTIONAL;
	ok.txn_len = 2;
	ok.txn = "tx";

	b = ok;
	b.txn_len = -2;
	b.txn = NULL;
	expect_reject(&ok, &b, "bad txn id");
	b = ok;
	b.txn_len = INT16_MIN;
	b.txn = NULL;
	expect_reject(&ok, &b, "bad txn id");
	/* Longer than the payload. */
	b = ok;
	b.txn_len = INT16_MAX;
	expect_reject(&ok, &b, "bad txn id");
	/* A non-transactional batch has no transactional id. */
	b = ok;
	b.flags = 0;
	expect_reject(&ok, &b, "bad txn id");
	b.txn_len = 0;
	b.txn = "";
	expect_reject(&ok, &b, "bad txn id");
}

static void test_reject_record_count(void **state)
{
	(void)state;
	raw_batch ok = valid_batch(), b = ok;
	b.record_count = 0;
	b.nrecords = 0;
	expect_reject(&ok, &b, "bad record count");
	b.record_count = -1;
	expect_reject(&ok, &b, "bad record count");
	b.record_count = INT32_MIN;
	expect_reject(&ok, &b, "bad record count");
	/* More records declared than present. */
	b = ok;
	b.record_count = 4;
	expect_reject(&ok, &b, "bad record");
	b.record_count = INT32_MAX;
	expect_reject(&ok, &b, "bad record");
	/* Fewer declared than present. */
	b = ok;
	b.record_count = 2;
	expect_reject(&ok, &b, "trailing bytes");
}

static void test_reject_last_offset_delta(void **state)
{
	(void)state;
	raw_batch ok = valid_batch(), b = ok;
	b.last_offset_delta = -1;
	expect_reject(&ok, &b, "bad last offset delta");
	b.last_offset_delta = INT32_MIN;
	expect_reject(&ok, &b, "bad last offset delta");
	/* Below the last record's delta. */
	b.last_offset_delta = 1;
	expect_reject(&ok, &b, "bad offset delta");
}

static void test_reject_base_offset_overflow(void **state)
{
	(void)state;
	raw_batch ok = valid_batch(), b = ok;
	ok.base_offset = INT64_MAX - 3;  /* next offset INT64_MAX */
	b.base_offset = INT64_MAX - 2;
	expect_reject(&ok, &b, "bad base offset");
	b.base_offset = INT64_MAX;
	expect_reject(&ok, &b, "bad base offset");
	/* Outside the CRC, a base offset is checked for sanity: >= 0. */
	b.base_offset = -1;
	expect_reject(&ok, &b, "bad base offset");
	b.base_offset = INT64_MIN;
	expect_reject(&ok, &b, "bad base offset");
	b.base_offset = 0;
	expect_ok(&b);
}

/* The epoch, outside the CRC too, is none (-1) or real. */
static void test_reject_leader_epoch(void **state)
{
	(void)state;
	raw_batch ok = valid_batch(), b = ok;
	b.leader_epoch = -2;
	expect_reject(&ok, &b, "bad leader epoch");
	b.leader_epoch = INT32_MIN;
	expect_reject(&ok, &b, "bad leader epoch");
	b.leader_epoch = -1;
	expect_ok(&b);
	b.leader_epoch = INT32_MAX;
	expect_ok(&b);
}

/*
 * Base offset and epoch are not covered by the CRC: a flipped bit there
 * decodes (to other values) or fails the sanity checks, never "bad crc".
 * The log's order checks are what catch the rest (test_log.c).
 */
static void test_stamp_fields_outside_crc(void **state)
{
	(void)state;
	raw_batch b = valid_batch();
	mk_strbuf sb = MK_STRBUF_INIT;
	raw_encode(&b, &sb);
	for (size_t i = MK_FRAME_OFF_BASE_OFFSET; i < MK_FRAME_OFF_CRC; i++) {
		for (int bit = 0; bit < 8; bit++) {
			sb.buf[i] ^= (char)(1 << bit);
			owned o = own(sb.buf, sb.len);
			mk_batch_view v;
			const char *why = NULL;
			mk_err err = decode_owned(&o, 0, &v, &why);
			if (err) {
				assert_non_null(why);
				assert_true(!strcmp(why, "bad base offset") ||
					    !strcmp(why, "bad leader epoch"));
			} else {
				assert_true(v.meta.base_offset != 100 ||
					    v.meta.leader_epoch != 3);
			}
			free(o.buf);
			sb.buf[i] ^= (char)(1 << bit);
		}
	}
	mk_strbuf_release(&sb);
}

static void test_reject_offset_deltas(void **state)
{
	(void)state;
	raw_batch ok = valid_batch(), b;
	/* Equal. */
	b = ok;
	b.r[1].delta = 0;
	expect_reject(&ok, &b, "bad offset delta");
	/* Decreasing. */
	b = ok;
	b.r[0].delta = 1;
	b.r[1].delta = 0;
	expect_reject(&ok, &b, "bad offset delta");
	/* Negative. */
	b = ok;
	b.r[0].delta = -1;
	expect_reject(&ok, &b, "bad offset delta");
	b = ok;
	b.r[0].delta = INT32_MIN;
	expect_reject(&ok, &b, "bad offset delta");
	/* Past last_offset_delta. */
	b = ok;
	b.r[2].delta = 3;
	expect_reject(&ok, &b, "bad offset delta");
	b = ok;
	b.r[2].delta = INT32_MAX;
	expect_reject(&ok, &b, "bad offset delta");
	/* Gaps within the range are fine (compaction). */
	b = ok;
	b.r[0].delta = 1;
	b.r[1].delta = 4;
	b.r[2].delta = 9;
	b.last_offset_delta = 9;
	expect_ok(&b);
}

/* ---- rejections: records and headers -------------------------------------- */

static void test_reject_key_len(void **state)
{
	(void)state;
	raw_batch ok = valid_batch(), b;
	b = ok;
	b.r[0].key_len = -2;
	b.r[0].key = NULL;
	expect_reject(&ok, &b, "bad key");
	b = ok;
	b.r[0].key_len = INT32_MIN;
	b.r[0].key = NULL;
	expect_reject(&ok, &b, "bad key");
	/* Beyond the payload. */
	b = ok;
	b.r[2].key_len = 1000;
	expect_reject(&ok, &b, "bad key");
	b = ok;
	b.r[0].key_len = INT32_MAX;
	expect_reject(&ok, &b, "bad key");
}

static void test_reject_value_len(void **state)
{
	(void)state;
	raw_batch ok = valid_batch(), b;
	b = ok;
	b.r[1].value_len = -2;
	b.r[1].value = NULL;
	expect_reject(&ok, &b, "bad value");
	b = ok;
	b.r[2].value_len = 500;
	expect_reject(&ok, &b, "bad value");
	b = ok;
	b.r[0].value_len = INT32_MAX;
	expect_reject(&ok, &b, "bad value");
}

static void test_reject_header_count(void **state)
{
	(void)state;
	raw_batch ok = valid_batch(), b;
	b = ok;
	b.r[1].header_count = -1;
	expect_reject(&ok, &b, "bad header count");
	b = ok;
	b.r[0].header_count = INT32_MIN;
	expect_reject(&ok, &b, "bad header count");
	/* More declared than present, in the last record. */
	b = ok;
	b.r[2].header_count = 3;
	expect_reject(&ok, &b, "bad header");
	b.r[2].header_count = INT32_MAX;
	expect_reject(&ok, &b, "bad header");
}

static void test_reject_header_fields(void **state)
{
	(void)state;
	raw_batch ok = valid_batch(), b;
	/* Name length negative: a header name is never null. */
	b = ok;
	b.r[0].h[0].name_len = -1;
	b.r[0].h[0].name = NULL;
	expect_reject(&ok, &b, "bad header");
	b = ok;
	b.r[0].h[0].name_len = INT16_MIN;
	b.r[0].h[0].name = NULL;
	expect_reject(&ok, &b, "bad header");
	/* Value length below -1. */
	b = ok;
	b.r[2].h[0].value_len = -2;
	expect_reject(&ok, &b, "bad header");
	/* Lengths beyond the payload. */
	b = ok;
	b.r[2].h[1].name_len = INT16_MAX;
	expect_reject(&ok, &b, "bad header");
	b = ok;
	b.r[2].h[1].value_len = 4;
	expect_reject(&ok, &b, "bad header");
	b = ok;
	b.r[0].h[0].value_len = INT32_MAX;
	expect_reject(&ok, &b, "bad header");
}

static void test_reject_truncated_record(void **state)
{
	(void)state;
	raw_batch ok = valid_batch(), b = ok;
	/* A fourth record of which only 10 bytes are there. */
	b.record_count = 4;
	b.last_offset_delta = 3;
	b.trailing = 10;
	expect_reject(&ok, &b, "bad record");
	/* Exactly the fixed part of a record but nothing more: fine only when
	 * the record is complete (a null key, null value, no headers). */
	b.trailing = 4 + 8 + 4 + 4 + 4;
	{
		mk_strbuf sb = MK_STRBUF_INIT;
		raw_encode(&b, &sb);
		/* Patch the zeros into: delta 3, key -1, value -1, 0 headers. */
		uint8_t *rec = (uint8_t *)sb.buf + sb.len - b.trailing;
		mk_store_be32(rec, 3);
		mk_store_be32(rec + 12, UINT32_MAX);
		mk_store_be32(rec + 16, UINT32_MAX);
		fix_crc((uint8_t *)sb.buf);
		owned o = own(sb.buf, sb.len);
		mk_batch_view v;
		const char *why;
		assert_int_equal(decode_owned(&o, 0, &v, &why), MK_OK);
		assert_int_equal(v.record_count, 4);
		/* Cut one byte off that record (the payload shrinks; CRC
		 * recomputed). */
		o.len--;
		mk_store_be32(o.buf + 4, (uint32_t)(o.len - MK_FRAME_HEADER));
		fix_crc(o.buf);
		assert_int_equal(decode_owned(&o, 0, &v, &why),
				 MK_CORRUPT_MESSAGE);
		assert_string_equal(why, "bad record");
		free(o.buf);
		mk_strbuf_release(&sb);
	}
}

static void test_reject_trailing_bytes(void **state)
{
	(void)state;
	raw_batch ok = valid_batch(), b = ok;
	b.trailing = 1;
	expect_reject(&ok, &b, "trailing bytes");
	b.trailing = 100;
	expect_reject(&ok, &b, "trailing bytes");
	/* A marker with trailing bytes too. */
	raw_batch okm = valid_marker(), m = okm;
	m.trailing = 3;
	expect_reject(&okm, &m, "trailing bytes");
}

/*
 * Every payload truncation of a valid frame, with length and CRC made
 * consistent, is rejected (and, under ASan, read within bounds).
 */
static void test_reject_every_payload_cut(void **state)
{
	(void)state;
	raw_batch b = valid_batch();
	b.flags = MK_BATCH_TRANSACTIONAL;
	b.txn_len = 3;
	b.txn = "txn";
	mk_strbuf sb = MK_STRBUF_INIT;
	raw_encode(&b, &sb);
	expect_ok(&b);
	for (size_t n = MK_FRAME_HEADER; n < sb.len; n++) {
		owned o = own(sb.buf, n);
		mk_store_be32(o.buf + 4, (uint32_t)(n - MK_FRAME_HEADER));
		fix_crc(o.buf);
		mk_batch_view v;
		const char *why;
		assert_int_equal(decode_owned(&o, 0, &v, &why),
				 MK_CORRUPT_MESSAGE);
		assert_non_null(why);
		assert_string_not_equal(why, "bad crc");
		assert_string_not_equal(why, "truncated frame");
		free(o.buf);
	}
	mk_strbuf_release(&sb);
}

/* The frame CRC is zlib's CRC-32, whatever computes it. */
static void test_crc_is_zlib_crc32(void **state)
{
	(void)state;
	mk_batch_meta meta = { .producer_id = -1, .producer_epoch = -1,
			       .base_sequence = -1, .txn_id = MK_BYTES_NULL };
	mk_batch_builder b;
	mk_builder_init(&b, &meta);
	uint8_t value[3000];
	for (size_t i = 0; i < sizeof(value); i++)
		value[i] = (uint8_t)(i * 131 + 7);
	for (size_t n = 0; n < sizeof(value); n += 97) {
		mk_builder_reset(&b, &meta);
		mk_builder_add(&b, 1, MK_BYTES_NULL, mk_bytes_of(value, n), NULL, 0);
		mk_builder_finish(&b);
		const uint8_t *f = (const uint8_t *)b.frame.buf;
		uLong want = crc32(crc32(0L, Z_NULL, 0), f + MK_FRAME_HEADER,
				   (uInt)(b.frame.len - MK_FRAME_HEADER));
		assert_int_equal(mk_load_be32(f + MK_FRAME_OFF_CRC),
				 (uint32_t)want);
	}
	mk_builder_release(&b);
}

/* A record's own batch size is exactly what a builder makes of it alone. */
static void test_frame_size_of_one(void **state)
{
	(void)state;
	const mk_header hdrs[2] = {
		{ mk_bytes_of("h", 1), mk_bytes_of("vv", 2) },
		{ mk_bytes_of("n", 1), MK_BYTES_NULL },
	};
	const mk_bytes keys[3] = { MK_BYTES_NULL, mk_bytes_of("", 0), mk_bytes_of("key", 3) };
	for (int k = 0; k < 3; k++)
		for (size_t nh = 0; nh <= 2; nh++) {
			mk_batch_meta meta = { .producer_id = -1, .producer_epoch = -1,
					       .base_sequence = -1, .txn_id = MK_BYTES_NULL };
			mk_batch_builder b;
			mk_builder_init(&b, &meta);
			mk_bytes value = mk_bytes_of("some value", 10);
			mk_builder_add(&b, 7, keys[k], value, hdrs, nh);
			mk_builder_finish(&b);
			assert_int_equal(mk_frame_size_of_one(keys[k], value, hdrs, nh), b.frame.len);
			mk_builder_release(&b);
		}
}

/* mk_builder_add_many writes the same bytes as one mk_builder_add per
 * record, in runs after records added one at a time; mk_record_size is
 * what each record adds to the frame. */
static void test_builder_add_many(void **state)
{
	(void)state;
	const mk_header hdrs[3] = {
		{ mk_bytes_of("h", 1), mk_bytes_of("vv", 2) },
		{ mk_bytes_of("n", 1), MK_BYTES_NULL },
		{ mk_bytes_of("", 0), mk_bytes_of("", 0) },
	};
	const mk_bytes keys[3] = { MK_BYTES_NULL, mk_bytes_of("", 0), mk_bytes_of("key", 3) };
	const mk_bytes vals[3] = { mk_bytes_of("some value", 10), MK_BYTES_NULL,
				   mk_bytes_of("", 0) };
	mk_record_in recs[27];
	size_t n = 0;
	for (int k = 0; k < 3; k++)
		for (int v = 0; v < 3; v++)
			for (size_t nh = 0; nh <= 2; nh++)
				recs[n++] = (mk_record_in){ keys[k], vals[v],
							    nh ? hdrs + (3 - nh) : NULL, nh };
	mk_batch_meta meta = { .producer_id = -1, .producer_epoch = -1,
			       .base_sequence = -1, .txn_id = MK_BYTES_NULL };
	mk_batch_builder one, many;
	mk_builder_init(&one, &meta);
	mk_builder_init(&many, &meta);
	/* one record alone first, then runs of 1, 2, 3, ... */
	mk_builder_add(&one, 5, recs[0].key, recs[0].value, recs[0].headers,
		       recs[0].nheaders);
	mk_builder_add(&many, 5, recs[0].key, recs[0].value, recs[0].headers,
		       recs[0].nheaders);
	size_t i = 1, run = 1;
	while (i < n) {
		size_t m = run < n - i ? run : n - i, bytes = 0;
		for (size_t j = i; j < i + m; j++) {
			size_t before = mk_builder_size(&one);
			mk_builder_add(&one, 9, recs[j].key, recs[j].value,
				       recs[j].headers, recs[j].nheaders);
			assert_int_equal(mk_builder_size(&one) - before,
					 mk_record_size(&recs[j]));
			bytes += mk_record_size(&recs[j]);
		}
		mk_builder_add_many(&many, 9, recs + i, m, bytes);
		assert_int_equal(mk_builder_size(&one), mk_builder_size(&many));
		i += m;
		run++;
	}
	assert_int_equal(one.count, (int32_t)n);
	assert_int_equal(many.count, (int32_t)n);
	mk_builder_finish(&one);
	mk_builder_finish(&many);
	assert_int_equal(one.frame.len, many.frame.len);
	assert_memory_equal(one.frame.buf, many.frame.buf, one.frame.len);
	mk_batch_view b;
	assert_int_equal(mk_frame_decode((const uint8_t *)many.frame.buf,
					 many.frame.len, 0, &b, NULL), MK_OK);
	assert_int_equal(b.record_count, (int32_t)n);
	assert_int_equal(b.first_timestamp, 5);
	assert_int_equal(b.max_timestamp, 9);
	assert_int_equal(b.last_offset_delta, (int32_t)n - 1);
	/* and a run into an empty builder sets the first timestamp */
	mk_builder_reset(&many, &meta);
	mk_builder_add_many(&many, 3, recs, 2,
			    mk_record_size(&recs[0]) + mk_record_size(&recs[1]));
	mk_builder_finish(&many);
	assert_int_equal(mk_frame_decode((const uint8_t *)many.frame.buf,
					 many.frame.len, 0, &b, NULL), MK_OK);
	assert_int_equal(b.record_count, 2);
	assert_int_equal(b.first_timestamp, 3);
	assert_int_equal(b.max_timestamp, 3);
	mk_builder_release(&one);
	mk_builder_release(&many);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_valid_raw),
		cmocka_unit_test(test_builder_matches_layout),
		cmocka_unit_test(test_compacted_gaps_valid),
		cmocka_unit_test(test_two_frames_back_to_back),
		cmocka_unit_test(test_max_payload_bound),
		cmocka_unit_test(test_round_trip_null_vs_empty),
		cmocka_unit_test(test_round_trip_binary),
		cmocka_unit_test(test_round_trip_headers_null_values),
		cmocka_unit_test(test_round_trip_many_records),
		cmocka_unit_test(test_round_trip_transactional),
		cmocka_unit_test(test_builder_timestamps),
		cmocka_unit_test(test_builder_reset_reuses),
		cmocka_unit_test(test_frame_assign),
		cmocka_unit_test(test_frame_assign_crc_patch),
		cmocka_unit_test(test_frame_assign_keeps_damage),
		cmocka_unit_test(test_frame_set_producer),
		cmocka_unit_test(test_decode_header_valid),
		cmocka_unit_test(test_decode_header_rejects),
		cmocka_unit_test(test_frame_filter),
		cmocka_unit_test(test_marker_commit),
		cmocka_unit_test(test_marker_abort),
		cmocka_unit_test(test_reject_bad_magic),
		cmocka_unit_test(test_reject_truncated),
		cmocka_unit_test(test_reject_payload_too_large),
		cmocka_unit_test(test_reject_bad_crc),
		cmocka_unit_test(test_reject_short_payload),
		cmocka_unit_test(test_reject_bad_version),
		cmocka_unit_test(test_reject_leader_epoch),
		cmocka_unit_test(test_stamp_fields_outside_crc),
		cmocka_unit_test(test_reject_unknown_flags),
		cmocka_unit_test(test_reject_both_markers),
		cmocka_unit_test(test_reject_marker_not_transactional),
		cmocka_unit_test(test_reject_marker_records),
		cmocka_unit_test(test_reject_txn_id),
		cmocka_unit_test(test_reject_record_count),
		cmocka_unit_test(test_reject_last_offset_delta),
		cmocka_unit_test(test_reject_base_offset_overflow),
		cmocka_unit_test(test_reject_offset_deltas),
		cmocka_unit_test(test_reject_key_len),
		cmocka_unit_test(test_reject_value_len),
		cmocka_unit_test(test_reject_header_count),
		cmocka_unit_test(test_reject_header_fields),
		cmocka_unit_test(test_reject_truncated_record),
		cmocka_unit_test(test_reject_trailing_bytes),
		cmocka_unit_test(test_reject_every_payload_cut),
		cmocka_unit_test(test_frame_size_of_one),
		cmocka_unit_test(test_builder_add_many),
		cmocka_unit_test(test_crc_is_zlib_crc32),
		cmocka_unit_test(test_frame_iter),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
