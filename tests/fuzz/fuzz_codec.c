/*
 * fuzz_codec.c — libFuzzer target for the batch codec (Kafka's RecordBatch
 * v2, codec.h).
 *
 * The first input byte is a mode, the rest the batch bytes (copied to a
 * buffer of exactly their size). A CRC-32C is out of a mutator's reach,
 * so mode bit 0 makes the harness store the right CRC (of bytes 21 to the
 * end the batchLength declares), and bit 1 first sets batchLength to
 * cover the input; that way the checks behind the CRC get fuzzed too.
 * Bit 2 decodes under a small max_payload (64 KiB instead of 1 MiB), so
 * that the bound on decompressed records is reached by small inputs.
 *
 * The bytes go to mk_frame_decode(). A rejection must come with a reason,
 * and mk_frame_decode_header() must reject the bytes for the same reason
 * or accept them when the reason lies in the records it does not walk.
 * An accepted batch must:
 *   - agree with the header-only decode (CRC checked or not) and the
 *     frame walk, carry the CRC-32C of its bytes 21 on, and be a torn
 *     batch one byte short;
 *   - give its records (decompressed by the iterator for a compressed
 *     batch: that cannot fail once decoded; mk_batch_inflate gives the
 *     same bytes) and headers, walked within bounds, offsets increasing
 *     within the batch's range;
 *   - re-encode, each way decoding to the same records:
 *       - through the builder (meta and records kept, offsets made
 *         dense), or mk_frame_marker for a control batch;
 *       - through mk_frame_filter keeping everything (offsets, meta,
 *         range kept), which is canonical: filtering its output again
 *         gives the very same bytes;
 *       - through mk_frame_filter keeping every other record;
 *       - through mk_frame_assign on a copy (new base offset and epoch),
 *         which leaves the CRC and every byte from the magic on as they
 *         were: both fields lie before the CRC'd region;
 *       - through mk_frame_set_producer on a copy, whose patched CRC must
 *         be the CRC-32C computed afresh;
 *       - through mk_frame_recompress to another codec and back;
 *       - through mk_frame_set_log_append_time on a copy: every record
 *         then reads as the stamped time.
 * Any mismatch aborts.
 *
 * Meson compiles every object of a fuzz build with
 * -fsanitize=fuzzer-no-link,address,undefined (meson.build), so libFuzzer
 * is guided by codec.c and compress.c too, and ASan checks them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "compress.h"

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

/* The meta fields but the codec (a rebuild may fall back to none). */
static bool same_meta(const mk_batch_meta *a, const mk_batch_meta *b)
{
	return a->flags == b->flags && a->base_offset == b->base_offset &&
	       a->leader_epoch == b->leader_epoch &&
	       a->producer_id == b->producer_id &&
	       a->producer_epoch == b->producer_epoch &&
	       a->base_sequence == b->base_sequence &&
	       a->log_append_time == b->log_append_time &&
	       a->coordinator_epoch == b->coordinator_epoch;
}

static bool same_view(const mk_batch_view *a, const mk_batch_view *b)
{
	return same_meta(&a->meta, &b->meta) && a->meta.codec == b->meta.codec &&
	       a->attributes == b->attributes && a->crc == b->crc &&
	       a->last_offset_delta == b->last_offset_delta &&
	       a->first_timestamp == b->first_timestamp &&
	       a->max_timestamp == b->max_timestamp &&
	       a->record_count == b->record_count &&
	       a->records == b->records && a->records_len == b->records_len &&
	       a->frame_len == b->frame_len;
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

/* The reasons only the record walk gives (codec.c). */
static bool record_reason(const char *why)
{
	static const char *const reasons[] = {
		"bad record length", "bad record", "bad record attributes",
		"bad key", "bad value", "bad header count", "bad header",
		"bad offset delta", "trailing bytes", "bad compressed records",
		"records too large once decompressed",
	};
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (strcmp(why, reasons[i]) == 0)
			return true;
	return false;
}

/* Decode bytes that must be one whole valid batch, its CRC the CRC-32C
 * of its bytes 21 on. */
static void decode_whole(const void *buf, size_t len, mk_batch_view *v)
{
	const char *why = NULL;
	mk_err err = mk_frame_decode(buf, len, 0, v, &why);
	if (err != MK_OK)
		fprintf(stderr, "fuzz_codec: re-encoding rejected: %s\n", why);
	CHECK(err == MK_OK);
	CHECK(v->frame_len == len);
	CHECK(mk_load_be32((const uint8_t *)buf + MK_FRAME_OFF_CRC) ==
	      mk_crc32c((const uint8_t *)buf + MK_FRAME_OFF_ATTRIBUTES,
			len - MK_FRAME_OFF_ATTRIBUTES));
}

/*
 * The records of sub must be those of full at indexes 0, stride,
 * 2*stride, ...; offsets compared when `offsets` (otherwise sub must be
 * dense).
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
	mk_record_iter_release(&ia);
	mk_record_iter_release(&ib);
}

/* Every record of v reads as timestamp t. */
static void check_all_at(const mk_batch_view *v, int64_t t)
{
	mk_record_iter it;
	mk_record_view rec;
	int32_t n = 0;
	mk_record_iter_init(&it, v);
	while (mk_record_next(&it, &rec)) {
		CHECK(rec.timestamp == t);
		n++;
	}
	mk_record_iter_release(&it);
	CHECK(n == v->record_count);
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

/* A rebuild keeps the batch's codec, or falls back to none. */
static void check_codec(const mk_batch_view *orig, const mk_batch_view *re)
{
	CHECK(re->meta.codec == orig->meta.codec ||
	      re->meta.codec == MK_COMPRESS_NONE);
	CHECK((re->attributes & ~(unsigned)MK_ATTR_CODEC_MASK) ==
	      (orig->attributes & ~(unsigned)MK_ATTR_CODEC_MASK));
}

/* The rejection of bytes: a reason, and the header decode agreeing. */
static void check_rejected(const uint8_t *data, size_t size,
			   size_t max_payload, const char *why)
{
	CHECK(why != NULL && why[0] != '\0');
	mk_batch_view h;
	const char *hwhy = NULL;
	if (mk_frame_decode_header(data, size, max_payload, true, &h,
				   &hwhy) == MK_OK) {
		CHECK(record_reason(why));
		CHECK(h.frame_len <= size);
	} else {
		CHECK(hwhy != NULL && strcmp(hwhy, why) == 0);
	}
}

static void check_frame(const uint8_t *data, size_t size, size_t max_payload)
{
	mk_batch_view v;
	const char *why = NULL;
	if (mk_frame_decode(data, size, max_payload, &v, &why) != MK_OK) {
		check_rejected(data, size, max_payload, why);
		return;
	}
	CHECK(v.frame_len >= MK_FRAME_HEADER);
	CHECK(v.frame_len <= size);
	CHECK(v.frame_len - MK_FRAME_LOG_OVERHEAD <= max_payload);
	CHECK(v.record_count > 0);
	CHECK(v.last_offset_delta >= v.record_count - 1);
	CHECK(v.meta.base_offset >= 0 && v.meta.leader_epoch >= -1);
	CHECK(v.meta.codec < MK_COMPRESS_COUNT);
	CHECK((v.attributes & MK_ATTR_CODEC_MASK) == v.meta.codec);
	CHECK(v.crc == mk_crc32c(data + MK_FRAME_OFF_ATTRIBUTES,
				 v.frame_len - MK_FRAME_OFF_ATTRIBUTES));
	CHECK(!mk_batch_is_control(&v) ||
	      (v.meta.flags & MK_BATCH_TRANSACTIONAL));
	CHECK(!mk_frame_is_mkf2(data, size));

	/* The header decode and the frame walk see the same batch. */
	for (int crc = 0; crc < 2; crc++) {
		mk_batch_view h;
		CHECK(mk_frame_decode_header(data, size, max_payload, crc, &h,
					     NULL) == MK_OK);
		CHECK(same_view(&h, &v));
	}
	mk_frame_iter fit;
	mk_batch_view fv;
	mk_frame_iter_init(&fit, data, v.frame_len);
	CHECK(mk_frame_next(&fit, &fv) && same_view(&fv, &v));
	CHECK(fit.frame == data && !mk_frame_next(&fit, &fv) && fit.left == 0);

	/* One byte short of the batch is a torn batch. */
	mk_batch_view t;
	CHECK(mk_frame_decode(data, v.frame_len - 1, max_payload, &t, &why) ==
	      MK_CORRUPT_MESSAGE);
	CHECK(strcmp(why, "truncated frame") == 0);

	/* The records the iterator walks (decompressed if need be: that
	 * cannot fail now) are what mk_batch_inflate gives. */
	mk_record_iter it;
	mk_record_iter_init(&it, &v);
	if (v.meta.codec != MK_COMPRESS_NONE) {
		mk_strbuf plain = MK_STRBUF_INIT;
		CHECK(mk_batch_inflate(&v, 0, &plain, NULL) == MK_OK);
		CHECK(plain.len == mk_record_iter_bytes(&it) &&
		      memcmp(plain.buf, it.p, plain.len) == 0);
		mk_strbuf_release(&plain);
	} else {
		CHECK(mk_record_iter_bytes(&it) == v.records_len);
	}

	/* Walk everything, rebuilding through the builder on the way. */
	mk_batch_meta bm = v.meta;
	mk_batch_builder b;
	mk_builder_init(&b, &bm);
	mk_header *hs = NULL;
	size_t hs_alloc = 0;
	mk_record_view rec;
	int32_t n = 0;
	int64_t prev = 0;
	int64_t max_ts = 0, first_ts = 0;
	while (mk_record_next(&it, &rec)) {
		CHECK(n < v.record_count);
		CHECK(rec.offset >= v.meta.base_offset);
		CHECK(rec.offset <= mk_batch_last_offset(&v));
		CHECK(n == 0 || rec.offset > prev);
		CHECK(rec.key.len >= -1 && rec.value.len >= -1);
		CHECK(rec.header_count >= 0);
		CHECK(!v.meta.log_append_time || rec.timestamp == v.max_timestamp);
		if (mk_batch_is_control(&v))
			CHECK(rec.key.len == 4 && rec.value.len == 6 &&
			      rec.header_count == 0 &&
			      mk_load_be16(rec.key.ptr + 2) ==
			      ((v.meta.flags & MK_BATCH_COMMIT_MARKER) ? 1 : 0) &&
			      (int32_t)mk_load_be32(rec.value.ptr + 2) ==
			      v.meta.coordinator_epoch);
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
		mk_record_in in = { rec.key, rec.value, nh ? hs : NULL, nh };
		size_t before = mk_builder_size(&b);
		mk_builder_add(&b, rec.timestamp, rec.key, rec.value, in.headers,
			       nh);
		CHECK(mk_builder_size(&b) - before <= mk_record_size(&in));
		n++;
	}
	CHECK(n == v.record_count);
	CHECK(mk_record_iter_bytes(&it) == 0);
	free(hs);

	mk_batch_view w;
	if (mk_batch_is_control(&v)) {
		/* A marker: mk_frame_marker writes the same one. */
		mk_strbuf mo = MK_STRBUF_INIT;
		mk_frame_marker(&mo, &v.meta, first_ts);
		decode_whole(mo.buf, mo.len, &w);
		CHECK(same_meta(&w.meta, &v.meta));
		CHECK(w.record_count == 1 && w.last_offset_delta == 0);
		CHECK(w.first_timestamp == first_ts);
		check_records(&v, &w, 1, false);
		mk_strbuf_release(&mo);
	} else {
		size_t predicted = mk_builder_size(&b);
		mk_builder_finish(&b);
		if (v.meta.codec == MK_COMPRESS_NONE)
			CHECK(b.frame.len == predicted);
		/* Never larger than the builder said (a codec that does
		 * not gain is not used). */
		CHECK(b.frame.len <= predicted);
		decode_whole(b.frame.buf, b.frame.len, &w);
		CHECK(same_meta(&w.meta, &v.meta));
		check_codec(&v, &w);
		CHECK(w.record_count == v.record_count);
		CHECK(w.last_offset_delta == v.record_count - 1);
		CHECK(w.first_timestamp == first_ts && w.max_timestamp == max_ts);
		check_records(&v, &w, 1, false);
	}
	mk_builder_release(&b);
	mk_record_iter_release(&it);

	/* Filter keeping everything: same offsets, meta and range. */
	mk_strbuf out = MK_STRBUF_INIT;
	mk_frame_filter(&v, keep_all, NULL, &out);
	mk_batch_view x;
	decode_whole(out.buf, out.len, &x);
	CHECK(same_meta(&x.meta, &v.meta));
	check_codec(&v, &x);
	CHECK(x.last_offset_delta == v.last_offset_delta);
	CHECK(x.record_count == v.record_count);
	CHECK(x.first_timestamp ==
	      (v.meta.log_append_time ? v.max_timestamp : first_ts));
	CHECK(x.max_timestamp ==
	      (v.meta.log_append_time ? v.max_timestamp : max_ts));
	check_records(&v, &x, 1, true);
	/* ... and canonical: filtering it again changes nothing. */
	mk_strbuf out2 = MK_STRBUF_INIT;
	mk_frame_filter(&x, keep_all, NULL, &out2);
	CHECK(out2.len == out.len && memcmp(out2.buf, out.buf, out.len) == 0);
	mk_strbuf_release(&out2);

	/* Recompressed by another codec, and back to none: the records
	 * kept, the rest as it was. */
	int other = (int)((v.meta.codec + 1 + size % 4) % MK_COMPRESS_COUNT);
	mk_strbuf rc = MK_STRBUF_INIT, rn = MK_STRBUF_INIT;
	mk_frame_recompress(&x, other, &rc);
	mk_batch_view xr;
	decode_whole(rc.buf, rc.len, &xr);
	CHECK(same_meta(&xr.meta, &x.meta));
	CHECK(xr.meta.codec == other || xr.meta.codec == MK_COMPRESS_NONE);
	CHECK(xr.last_offset_delta == x.last_offset_delta &&
	      xr.first_timestamp == x.first_timestamp &&
	      xr.max_timestamp == x.max_timestamp);
	check_records(&x, &xr, 1, true);
	mk_frame_recompress(&xr, MK_COMPRESS_NONE, &rn);
	mk_batch_view xn;
	decode_whole(rn.buf, rn.len, &xn);
	CHECK(xn.meta.codec == MK_COMPRESS_NONE);
	check_records(&x, &xn, 1, true);
	mk_strbuf_release(&rc);
	mk_strbuf_release(&rn);

	/* Filter keeping every other record, appended after the first. */
	size_t at = out.len;
	int counter = 0;
	mk_frame_filter(&v, keep_every_other, &counter, &out);
	CHECK(counter == v.record_count);
	mk_batch_view y;
	decode_whole(out.buf + at, out.len - at, &y);
	CHECK(same_meta(&y.meta, &v.meta));
	check_codec(&v, &y);
	CHECK(y.last_offset_delta == v.last_offset_delta);
	CHECK(y.record_count == (v.record_count + 1) / 2);
	check_records(&v, &y, 2, true);
	mk_strbuf_release(&out);

	/* Assign a new base offset and epoch to a copy. */
	uint8_t *copy = malloc(v.frame_len);
	CHECK(copy);
	memcpy(copy, data, v.frame_len);
	int64_t base = (int64_t)((size * 7919) % ((uint64_t)INT64_MAX - 
					       (uint64_t)v.last_offset_delta));
	int32_t epoch = (int32_t)(size % 1000) - 1;
	mk_frame_assign(copy, v.frame_len, base, epoch);
	mk_batch_view z;
	CHECK(mk_frame_decode(copy, v.frame_len, max_payload, &z, NULL) ==
	      MK_OK);
	CHECK(z.meta.base_offset == base && z.meta.leader_epoch == epoch);
	CHECK(z.last_offset_delta == v.last_offset_delta);
	CHECK(z.record_count == v.record_count);
	CHECK(memcmp(copy + MK_FRAME_OFF_LENGTH, data + MK_FRAME_OFF_LENGTH,
		     MK_FRAME_OFF_LEADER_EPOCH - MK_FRAME_OFF_LENGTH) == 0);
	CHECK(memcmp(copy + MK_FRAME_OFF_MAGIC, data + MK_FRAME_OFF_MAGIC,
		     v.frame_len - MK_FRAME_OFF_MAGIC) == 0);

	/* Stamp a producer on it: the patched CRC is the CRC. */
	int64_t pid = (int64_t)(size * 104729);
	int16_t pepoch = (int16_t)(size % 32768);
	int32_t seq = (int32_t)(size % 100000) - 1;
	mk_frame_set_producer(copy, v.frame_len, pid, pepoch, seq);
	CHECK(mk_load_be32(copy + MK_FRAME_OFF_CRC) ==
	      mk_crc32c(copy + MK_FRAME_OFF_ATTRIBUTES,
			v.frame_len - MK_FRAME_OFF_ATTRIBUTES));
	CHECK(mk_frame_decode(copy, v.frame_len, max_payload, &z, NULL) ==
	      MK_OK);
	CHECK(z.meta.producer_id == pid && z.meta.producer_epoch == pepoch &&
	      z.meta.base_sequence == seq);

	/* Stamp LogAppendTime on it: every record reads as that time. */
	int64_t lat = (int64_t)(size * 31337) - 1000;
	mk_frame_set_log_append_time(copy, v.frame_len, lat);
	CHECK(mk_load_be32(copy + MK_FRAME_OFF_CRC) ==
	      mk_crc32c(copy + MK_FRAME_OFF_ATTRIBUTES,
			v.frame_len - MK_FRAME_OFF_ATTRIBUTES));
	CHECK(mk_frame_decode(copy, v.frame_len, max_payload, &z, NULL) ==
	      MK_OK);
	CHECK(z.meta.log_append_time && z.max_timestamp == lat &&
	      z.first_timestamp == v.first_timestamp);
	CHECK((z.attributes & ~(unsigned)MK_ATTR_LOG_APPEND_TIME) ==
	      (v.attributes & ~(unsigned)MK_ATTR_LOG_APPEND_TIME));
	check_all_at(&z, lat);
	free(copy);
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
	if (len >= MK_FRAME_PEEK) {
		if ((mode & 2) && len - MK_FRAME_LOG_OVERHEAD <= INT32_MAX)
			mk_store_be32(buf + MK_FRAME_OFF_LENGTH,
				      (uint32_t)(len - MK_FRAME_LOG_OVERHEAD));
		int32_t blen = (int32_t)mk_load_be32(buf + MK_FRAME_OFF_LENGTH);
		if ((mode & 1) &&
		    blen >= MK_FRAME_HEADER - MK_FRAME_LOG_OVERHEAD &&
		    (size_t)blen + MK_FRAME_LOG_OVERHEAD <= len)
			mk_store_be32(buf + MK_FRAME_OFF_CRC,
				      mk_crc32c(buf + MK_FRAME_OFF_ATTRIBUTES,
						(size_t)blen +
						MK_FRAME_LOG_OVERHEAD -
						MK_FRAME_OFF_ATTRIBUTES));
	}
	check_frame(buf, len, (mode & 4) ? 1u << 16 : 1u << 20);
	free(buf);
	return 0;
}
