/*
 * fuzz_codec.c — libFuzzer target for the batch codec.
 *
 * The first input byte is a mode, the rest the frame bytes (copied to a
 * buffer of exactly their size). A CRC32 is out of a mutator's reach, so
 * mode bit 0 makes the harness store the right CRC for the declared payload
 * length, and bit 1 first sets the payload length to cover the input; that
 * way the checks behind the CRC get fuzzed too.
 *
 * The bytes go to mk_frame_decode(). It must either reject them with a
 * reason or accept a frame whose records and headers can all be walked.
 * An accepted frame is then re-encoded four ways, each of which must decode
 * to the same records:
 *   - through the builder (meta and records kept, offsets made dense);
 *   - through mk_frame_filter keeping everything (offsets, meta and range
 *     kept; the very same bytes when the timestamps were consistent);
 *   - through mk_frame_filter keeping every other record;
 *   - through mk_frame_assign on a copy (new base offset and epoch), which
 *     must leave the CRC and the whole payload as they were: both fields
 *     lie outside the CRC'd region (frame version 2).
 * Any mismatch aborts.
 *
 * libFuzzer is guided only by code compiled with -fsanitize=fuzzer, and
 * ASan checks only code compiled with it: core/storage/codec.c must be compiled into
 * this target (not only linked from libmkcore) for the fuzzing to reach
 * past the frame header.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "codec.h"

#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "fuzz_codec.c:%d: check failed: %s\n", \
				__LINE__, #cond);                          \
			abort();                                           \
		}                                                          \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same_bytes(mk_bytes a, mk_bytes b)
{
	if (a.len != b.len)
		return false;
	if (a.len < 0)
		return a.ptr == NULL && b.ptr == NULL;
	return a.len == 0 || memcmp(a.ptr, b.ptr, (size_t)a.len) == 0;
}

static bool same_meta(const mk_batch_meta *a, const mk_batch_meta *b)
{
	return a->flags == b->flags && a->base_offset == b->base_offset &&
	       a->leader_epoch == b->leader_epoch &&
	       a->producer_id == b->producer_id &&
	       a->producer_epoch == b->producer_epoch &&
	       a->base_sequence == b->base_sequence &&
	       same_bytes(a->txn_id, b->txn_id);
}

static bool same_record(const mk_record_view *a, const mk_record_view *b)
{
	if (a->timestamp != b->timestamp || !same_bytes(a->key, b->key) ||
	    !same_bytes(a->value, b->value) ||
	    a->header_count != b->header_count)
		return false;
	size_t pa = 0, pb = 0;
	mk_header ha, hb;
	for (;;) {
		bool more_a = mk_header_next(a, &pa, &ha);
		bool more_b = mk_header_next(b, &pb, &hb);
		if (more_a != more_b)
			return false;
		if (!more_a)
			return true;
		if (!same_bytes(ha.name, hb.name) ||
		    !same_bytes(ha.value, hb.value))
			return false;
	}
}

/*
 * The records of sub must be those of full at indexes 0, stride, 2*stride,
 * ...; offsets compared when `offsets` (otherwise sub must be dense).
 */
static void check_records(const mk_batch_view *full, const mk_batch_view *sub,
			  int stride, bool offsets)
{
	mk_record_iter ia, ib;
	mk_record_view ra, rb;
	mk_record_iter_init(&ia, full);
	mk_record_iter_init(&ib, sub);
	int32_t i = 0, j = 0;
	while (mk_record_next(&ia, &ra)) {
		if (i++ % stride)
			continue;
		CHECK(mk_record_next(&ib, &rb));
		CHECK(same_record(&ra, &rb));
		if (offsets)
			CHECK(ra.offset == rb.offset);
		else
			CHECK(rb.offset == sub->meta.base_offset + j);
		j++;
	}
	CHECK(!mk_record_next(&ib, &rb));
	CHECK(j == sub->record_count);
}

static void decode_whole(const char *buf, size_t len, mk_batch_view *v)
{
	const char *why = NULL;
	mk_err err = mk_frame_decode((const uint8_t *)buf, len, 0, v, &why);
	if (err != MK_OK)
		fprintf(stderr, "fuzz_codec: re-encoding rejected: %s\n", why);
	CHECK(err == MK_OK);
	CHECK(v->frame_len == len);
}

static bool keep_all(const mk_record_view *rec, void *arg)
{
	(void)rec;
	(void)arg;
	return true;
}

static bool keep_every_other(const mk_record_view *rec, void *arg)
{
	(void)rec;
	int *n = arg;
	return (*n)++ % 2 == 0;
}

static void check_frame(const uint8_t *data, size_t size)
{
	mk_batch_view v;
	const char *why = NULL;
	if (mk_frame_decode(data, size, 0, &v, &why) != MK_OK) {
		CHECK(why != NULL && why[0] != '\0');
		return;
	}
	CHECK(v.frame_len >= MK_FRAME_HEADER + MK_BATCH_FIXED);
	CHECK(v.frame_len <= size);
	CHECK(v.record_count > 0);
	CHECK(v.last_offset_delta >= v.record_count - 1);

	/* One byte short of the frame is a torn frame. */
	CHECK(mk_frame_decode(data, v.frame_len - 1, 0, &v, &why) ==
	      MK_CORRUPT_MESSAGE);
	CHECK(strcmp(why, "truncated frame") == 0);
	CHECK(mk_frame_decode(data, v.frame_len, 0, &v, &why) == MK_OK);

	/* Walk everything, rebuilding through the builder on the way. */
	mk_batch_builder b;
	mk_builder_init(&b, &v.meta);
	mk_header *hs = NULL;
	size_t hs_alloc = 0;
	mk_record_iter it;
	mk_record_view rec;
	int32_t n = 0;
	int64_t prev = 0;
	int64_t max_ts = 0, first_ts = 0;
	mk_record_iter_init(&it, &v);
	while (mk_record_next(&it, &rec)) {
		CHECK(n < v.record_count);
		CHECK(rec.offset >= v.meta.base_offset);
		CHECK(rec.offset <= mk_batch_last_offset(&v));
		CHECK(n == 0 || rec.offset > prev);
		CHECK(rec.key.len >= -1 && rec.value.len >= -1);
		CHECK(rec.header_count >= 0);
		if (mk_batch_is_control(&v))
			CHECK(rec.key.len == -1 && rec.value.len == -1 &&
			      rec.header_count == 0);
		prev = rec.offset;
		if (n == 0)
			first_ts = max_ts = rec.timestamp;
		else if (rec.timestamp > max_ts)
			max_ts = rec.timestamp;

		if ((size_t)rec.header_count > hs_alloc) {
			hs_alloc = (size_t)rec.header_count;
			hs = realloc(hs, hs_alloc * sizeof(*hs));
			CHECK(hs);
		}
		size_t pos = 0, nh = 0;
		mk_header h;
		while (mk_header_next(&rec, &pos, &h)) {
			CHECK(nh < (size_t)rec.header_count);
			CHECK(h.name.len >= 0 && h.value.len >= -1);
			hs[nh++] = h;
		}
		CHECK(nh == (size_t)rec.header_count);
		CHECK(pos == rec.headers_len);
		mk_builder_add(&b, rec.timestamp, rec.key, rec.value, hs, nh);
		n++;
	}
	CHECK(n == v.record_count);
	free(hs);

	size_t predicted = mk_builder_size(&b);
	mk_builder_finish(&b);
	CHECK(b.frame.len == predicted);
	mk_batch_view w;
	decode_whole(b.frame.buf, b.frame.len, &w);
	CHECK(same_meta(&w.meta, &v.meta));
	CHECK(w.record_count == v.record_count);
	CHECK(w.last_offset_delta == v.record_count - 1);
	CHECK(w.first_timestamp == first_ts && w.max_timestamp == max_ts);
	check_records(&v, &w, 1, v.last_offset_delta == v.record_count - 1);
	check_records(&v, &w, 1, false);

	/* Filter keeping everything: same offsets, meta and range. */
	mk_strbuf out = MK_STRBUF_INIT;
	mk_frame_filter(&v, keep_all, NULL, &out);
	mk_batch_view x;
	decode_whole(out.buf, out.len, &x);
	CHECK(same_meta(&x.meta, &v.meta));
	CHECK(x.last_offset_delta == v.last_offset_delta);
	CHECK(x.record_count == v.record_count);
	CHECK(x.first_timestamp == first_ts && x.max_timestamp == max_ts);
	check_records(&v, &x, 1, true);
	if (v.first_timestamp == first_ts && v.max_timestamp == max_ts)
		CHECK(out.len == v.frame_len &&
		      memcmp(out.buf, data, out.len) == 0);

	/* Filter keeping every other record, appended after the first. */
	size_t at = out.len;
	int counter = 0;
	mk_frame_filter(&v, keep_every_other, &counter, &out);
	CHECK(counter == v.record_count);
	mk_batch_view y;
	decode_whole(out.buf + at, out.len - at, &y);
	CHECK(same_meta(&y.meta, &v.meta));
	CHECK(y.last_offset_delta == v.last_offset_delta);
	CHECK(y.record_count == (v.record_count + 1) / 2);
	check_records(&v, &y, 2, true);

	/* Assign a new base offset and epoch to a copy. */
	uint8_t *copy = malloc(v.frame_len);
	CHECK(copy);
	memcpy(copy, data, v.frame_len);
	int64_t base = (int64_t)(size * 7919);
	int32_t epoch = (int32_t)(size % 1000) - 1;
	mk_frame_assign(copy, v.frame_len, base, epoch);
	mk_batch_view z;
	decode_whole((const char *)copy, v.frame_len, &z);
	CHECK(z.meta.base_offset == base && z.meta.leader_epoch == epoch);
	CHECK(z.last_offset_delta == v.last_offset_delta);
	CHECK(z.record_count == v.record_count);
	CHECK(memcmp(copy, data, MK_FRAME_OFF_BASE_OFFSET) == 0);
	CHECK(memcmp(copy + MK_FRAME_OFF_CRC, data + MK_FRAME_OFF_CRC,
		     v.frame_len - MK_FRAME_OFF_CRC) == 0);
	free(copy);

	mk_strbuf_release(&out);
	mk_builder_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	uint8_t mode = data[0];
	size_t len = size - 1;
	uint8_t *buf = malloc(len ? len : 1);
	CHECK(buf);
	if (len)
		memcpy(buf, data + 1, len);
	if (len >= MK_FRAME_HEADER) {
		size_t avail = len - MK_FRAME_HEADER;
		if ((mode & 2) && avail <= UINT32_MAX)
			mk_store_be32(buf + MK_FRAME_OFF_LENGTH, (uint32_t)avail);
		uint32_t plen = mk_load_be32(buf + MK_FRAME_OFF_LENGTH);
		if ((mode & 1) && plen <= avail)
			mk_store_be32(buf + MK_FRAME_OFF_CRC,
				      (uint32_t)crc32(crc32(0L, Z_NULL, 0),
						      buf + MK_FRAME_HEADER, plen));
	}
	check_frame(buf, len);
	free(buf);
	return 0;
}
