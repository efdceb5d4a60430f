/*
 * codec.c — Kafka's RecordBatch v2 (codec.h).
 *
 * Organisation:
 *   - CRC-32C: ISA-L's crc32_iscsi (carry-less multiplication), and the
 *     shift operator over GF(2) (crc32c_shift) that patches a CRC when a
 *     few bytes change (mk_frame_set_producer);
 *   - a bounded reader (struct reader: a pointer and the bytes left after
 *     it) with Kafka's zigzag varints. Every read first compares the size
 *     it wants with the bytes left, so no pointer past the end of the
 *     input is ever formed;
 *   - parse_record() and parse_header(), shared by the validating decoder
 *     and by the iterators. On a decoded batch they cannot fail, so the
 *     iterators only assert;
 *   - mk_frame_decode_header(): the batch header, CRC (optional), the
 *     marker of a control batch; mk_frame_decode() is that plus one pass
 *     over the records and their headers (after decompressing them, for a
 *     compressed batch); mk_frame_next() walks a buffer of batches
 *     validated before, by their headers;
 *   - encoding: begin_frame() writes the batch header's known fields,
 *     put_record() writes one record, and seal_frame() fills in the fields
 *     known only at the end (length, last offset delta, timestamps, record
 *     count, CRC). The builder, mk_frame_filter() and mk_frame_marker() are
 *     built from these three;
 *   - mk_frame_assign() stores base offset and epoch, which lie outside
 *     the CRC; mk_frame_set_producer() rewrites producer fields inside it
 *     and patches the CRC for those bytes only, so that a batch costs one
 *     CRC pass, its builder's, on the way to the log.
 */
#include "codec.h"

#include <assert.h>
#include <string.h>
#include <isa-l/crc.h>

#include "compress.h"

_Static_assert(MK_FRAME_OFF_RECORDS_COUNT + 4 == MK_FRAME_HEADER,
	       "batch header layout");
_Static_assert(MK_FRAME_OFF_CRC + 4 == MK_FRAME_OFF_ATTRIBUTES,
	       "the CRC covers the attributes on");

/* ---- CRC-32C ------------------------------------------------------------- */

uint32_t mk_crc32c(const void *p, size_t n)
{
	uint32_t crc = 0xffffffffu;
	const uint8_t *b = p;
	/* crc32_iscsi takes an int length. */
	while (n) {
		size_t k = n > (1u << 30) ? (1u << 30) : n;
		crc = crc32_iscsi((unsigned char *)(uintptr_t)b, (int)k, crc);
		b += k;
		n -= k;
	}
	return ~crc;
}

static uint32_t batch_crc(const uint8_t *frame, size_t len)
{
	return mk_crc32c(frame + MK_FRAME_OFF_ATTRIBUTES,
			 len - MK_FRAME_OFF_ATTRIBUTES);
}

/* Multiply the 32x32 GF(2) matrix mat by vec. */
static uint32_t gf2_times(const uint32_t *mat, uint32_t vec)
{
	uint32_t sum = 0;
	for (int i = 0; vec; i++, vec >>= 1)
		if (vec & 1)
			sum ^= mat[i];
	return sum;
}

static void gf2_square(uint32_t *sq, const uint32_t *mat)
{
	for (int i = 0; i < 32; i++)
		sq[i] = gf2_times(mat, mat[i]);
}

/*
 * The linear part of the CRC register after n more zero bytes: what
 * feeding n zeros to crc32_iscsi with no conditioning does, by repeated
 * squaring of the one-zero-bit operator (zlib's crc32_combine, with
 * Castagnoli's polynomial).
 */
static uint32_t crc32c_shift(uint32_t crc, size_t n)
{
	uint32_t even[32], odd[32];
	odd[0] = 0x82f63b78u;       /* reflected Castagnoli polynomial */
	for (int i = 1; i < 32; i++)
		odd[i] = 1u << (i - 1);
	gf2_square(even, odd);      /* two zero bits */
	gf2_square(odd, even);      /* four */
	while (n) {
		gf2_square(even, odd);  /* one zero byte, then 4, 16, ... */
		if (n & 1)
			crc = gf2_times(even, crc);
		n >>= 1;
		if (!n)
			break;
		gf2_square(odd, even);
		if (n & 1)
			crc = gf2_times(odd, crc);
		n >>= 1;
	}
	return crc;
}

/* ---- bounded reader ------------------------------------------------------ */

static int16_t load_i16(const uint8_t *p) { return (int16_t)mk_load_be16(p); }
static int32_t load_i32(const uint8_t *p) { return (int32_t)mk_load_be32(p); }
static int64_t load_i64(const uint8_t *p) { return (int64_t)mk_load_be64(p); }

typedef struct {
	const uint8_t *p;
	size_t left;        /* bytes readable at p */
} reader;

static bool rd_take(reader *r, size_t n, const uint8_t **out)
{
	if (r->left < n)
		return false;
	*out = r->p;
	r->p += n;
	r->left -= n;
	return true;
}

/* An unsigned varint of at most max_bytes bytes (5 or 10), as Kafka's
 * ByteUtils reads it: a longer one is malformed. */
static bool rd_uvar(reader *r, int max_bytes, uint64_t *v)
{
	uint64_t x = 0;
	for (int i = 0; i < max_bytes; i++) {
		if (!r->left)
			return false;
		uint8_t b = *r->p++;
		r->left--;
		x |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = x;
			return true;
		}
	}
	return false;
}

static inline __attribute__((always_inline)) bool rd_varint(reader *r,
							    int32_t *v)
{
	/* Most of a record's varints are one byte: no loop for them. */
	if (r->left && !(r->p[0] & 0x80)) {
		uint32_t z = r->p[0];
		r->p++;
		r->left--;
		*v = (int32_t)((z >> 1) ^ (0u - (z & 1)));
		return true;
	}
	uint64_t u;
	if (!rd_uvar(r, 5, &u))
		return false;
	uint32_t z = (uint32_t)u;
	*v = (int32_t)((z >> 1) ^ (0u - (z & 1)));
	return true;
}

static inline __attribute__((always_inline)) bool rd_varlong(reader *r,
							     int64_t *v)
{
	if (r->left && !(r->p[0] & 0x80)) {
		uint64_t z1 = r->p[0];
		r->p++;
		r->left--;
		*v = (int64_t)((z1 >> 1) ^ (0u - (z1 & 1)));
		return true;
	}
	uint64_t z;
	if (!rd_uvar(r, 10, &z))
		return false;
	*v = (int64_t)((z >> 1) ^ (0u - (z & 1)));
	return true;
}

/* A length-prefixed field: a varint length, -1 for null. */
static inline __attribute__((always_inline)) bool rd_blob(reader *r,
							  mk_bytes *out)
{
	int32_t len;
	if (!rd_varint(r, &len) || len < -1)
		return false;
	if (len == -1) {
		*out = MK_BYTES_NULL;
		return true;
	}
	const uint8_t *p;
	if (!rd_take(r, (size_t)len, &p))
		return false;
	*out = (mk_bytes){ len ? p : (const uint8_t *)"", len };
	return true;
}

static bool fail(const char **why, const char *reason)
{
	if (why)
		*why = reason;
	return false;
}

/* ---- records and headers ------------------------------------------------- */

static bool parse_header(reader *r, mk_header *h, const char **why)
{
	if (!rd_blob(r, &h->name) || h->name.len < 0 || !rd_blob(r, &h->value))
		return fail(why, "bad header");
	return true;
}

/*
 * Parse one record at r (its length prefix first), walking (and so
 * checking) its headers. rec->offset and rec->timestamp are left to the
 * caller, which knows the batch: *delta and *ts_delta get the deltas.
 */
static inline __attribute__((always_inline)) bool
parse_record(reader *r, mk_record_view *rec, int32_t *delta,
	     int64_t *ts_delta, const char **why)
{
	int32_t len;
	const uint8_t *body;
	if (!rd_varint(r, &len) || len < 0 || !rd_take(r, (size_t)len, &body))
		return fail(why, "bad record length");
	reader b = { body, (size_t)len };
	const uint8_t *attr;
	if (!rd_take(&b, 1, &attr) || !rd_varlong(&b, ts_delta) ||
	    !rd_varint(&b, delta))
		return fail(why, "bad record");
	if (*attr)
		return fail(why, "bad record attributes");
	if (!rd_blob(&b, &rec->key))
		return fail(why, "bad key");
	if (!rd_blob(&b, &rec->value))
		return fail(why, "bad value");
	if (!rd_varint(&b, &rec->header_count) || rec->header_count < 0)
		return fail(why, "bad header count");
	rec->headers = b.p;
	size_t before = b.left;
	for (int32_t i = 0; i < rec->header_count; i++) {
		mk_header h;
		if (!parse_header(&b, &h, why))
			return false;
	}
	rec->headers_len = before - b.left;
	if (b.left)
		return fail(why, "bad record length");
	return true;
}

/* ---- decoding ------------------------------------------------------------ */

static mk_err reject(const char **why, const char *reason)
{
	fail(why, reason);
	return MK_CORRUPT_MESSAGE;
}

bool mk_frame_is_mkf2(const uint8_t *buf, size_t len)
{
	return len >= 4 && !memcmp(buf, MK_FRAME_MAGIC_MKF2, 4);
}

/* A control batch's one record: Kafka's ControlRecordType key (version 0,
 * type ABORT 0 or COMMIT 1) and EndTransactionMarker value (version 0,
 * coordinator epoch). Sets the marker flag and the epoch. */
static bool parse_marker(mk_batch_view *v, const char **why)
{
	if (v->record_count != 1 || v->meta.codec != MK_COMPRESS_NONE)
		return fail(why, "bad marker");
	reader r = { v->records, v->records_len };
	mk_record_view rec;
	int32_t delta;
	int64_t tsd;
	if (!parse_record(&r, &rec, &delta, &tsd, why))
		return false;
	if (rec.key.len != 4 || load_i16(rec.key.ptr) != 0 ||
	    rec.value.len != 6 || load_i16(rec.value.ptr) != 0 ||
	    rec.header_count != 0)
		return fail(why, "bad marker");
	int16_t type = load_i16(rec.key.ptr + 2);
	if (type != 0 && type != 1)
		return fail(why, "bad marker");
	v->meta.flags |= type ? MK_BATCH_COMMIT_MARKER : MK_BATCH_ABORT_MARKER;
	v->meta.coordinator_epoch = load_i32(rec.value.ptr + 2);
	return true;
}

/* The batch header: everything but the records (a marker's excepted). */
mk_err mk_frame_decode_header(const uint8_t *buf, size_t len,
			      size_t max_payload, bool check_crc,
			      mk_batch_view *out, const char **why)
{
	if (mk_frame_is_mkf2(buf, len))
		return reject(why, MK_FRAME_MKF2_REASON);
	if (len < MK_FRAME_PEEK)
		return reject(why, "truncated frame");
	int32_t blen = load_i32(buf + MK_FRAME_OFF_LENGTH);
	if (buf[MK_FRAME_OFF_MAGIC] != MK_BATCH_MAGIC)
		return reject(why, "bad magic");
	if (max_payload == 0)
		max_payload = MK_FRAME_MAX_PAYLOAD;
	if (blen < MK_FRAME_HEADER - MK_FRAME_LOG_OVERHEAD)
		return reject(why, "bad batch length");
	if ((size_t)blen > max_payload)
		return reject(why, "payload too large");
	size_t flen = MK_FRAME_LOG_OVERHEAD + (size_t)blen;
	if (len < flen)
		return reject(why, "truncated frame");

	mk_batch_view v;
	memset(&v, 0, sizeof(v));
	v.crc = mk_load_be32(buf + MK_FRAME_OFF_CRC);
	if (check_crc && batch_crc(buf, flen) != v.crc)
		return reject(why, "bad crc");
	v.attributes = mk_load_be16(buf + MK_FRAME_OFF_ATTRIBUTES);
	if (v.attributes & ~(unsigned)MK_ATTR_KNOWN)
		return reject(why, "unknown attributes");
	v.meta.codec = v.attributes & MK_ATTR_CODEC_MASK;
	if (v.meta.codec >= MK_COMPRESS_COUNT)
		return reject(why, "unknown compression codec");
	v.meta.log_append_time = (v.attributes & MK_ATTR_LOG_APPEND_TIME) != 0;
	if (v.attributes & MK_ATTR_TRANSACTIONAL)
		v.meta.flags |= MK_BATCH_TRANSACTIONAL;
	bool control = (v.attributes & MK_ATTR_CONTROL) != 0;
	if (control && !(v.attributes & MK_ATTR_TRANSACTIONAL))
		return reject(why, "bad marker");

	v.meta.base_offset = load_i64(buf + MK_FRAME_OFF_BASE_OFFSET);
	v.meta.leader_epoch = load_i32(buf + MK_FRAME_OFF_LEADER_EPOCH);
	v.meta.producer_id = load_i64(buf + MK_FRAME_OFF_PRODUCER_ID);
	v.meta.producer_epoch = load_i16(buf + MK_FRAME_OFF_PRODUCER_EPOCH);
	v.meta.base_sequence = load_i32(buf + MK_FRAME_OFF_BASE_SEQUENCE);
	v.last_offset_delta = load_i32(buf + MK_FRAME_OFF_LAST_OFFSET_DELTA);
	v.first_timestamp = load_i64(buf + MK_FRAME_OFF_BASE_TIMESTAMP);
	v.max_timestamp = load_i64(buf + MK_FRAME_OFF_MAX_TIMESTAMP);
	v.record_count = load_i32(buf + MK_FRAME_OFF_RECORDS_COUNT);
	if (v.last_offset_delta < 0)
		return reject(why, "bad last offset delta");
	/* Outside the CRC: a base offset >= 0 after which
	 * base_offset + last_offset_delta + 1 (the next offset) exists, and
	 * an epoch that is none (-1) or real. */
	if (v.meta.base_offset < 0 ||
	    v.meta.base_offset > INT64_MAX - 1 - v.last_offset_delta)
		return reject(why, "bad base offset");
	if (v.meta.leader_epoch < -1)
		return reject(why, "bad leader epoch");
	if (v.record_count <= 0)
		return reject(why, "bad record count");
	if (v.record_count - 1 > v.last_offset_delta)
		return reject(why, "bad last offset delta");
	v.records = buf + MK_FRAME_HEADER;
	v.records_len = flen - MK_FRAME_HEADER;
	v.frame_len = flen;
	if (control && !parse_marker(&v, why))
		return MK_CORRUPT_MESSAGE;
	*out = v;
	return MK_OK;
}

/* Walk and check every record of an uncompressed records region. */
static mk_err check_records(const mk_batch_view *v, const uint8_t *p,
			    size_t n, const char **why)
{
	reader r = { p, n };
	int32_t prev = -1;
	for (int32_t i = 0; i < v->record_count; i++) {
		mk_record_view rec;
		int32_t delta;
		int64_t tsd;
		if (!parse_record(&r, &rec, &delta, &tsd, why))
			return MK_CORRUPT_MESSAGE;
		if (delta <= prev || delta > v->last_offset_delta)
			return reject(why, "bad offset delta");
		prev = delta;
	}
	if (r.left)
		return reject(why, "trailing bytes");
	return MK_OK;
}

mk_err mk_frame_decode(const uint8_t *buf, size_t len, size_t max_payload,
		       mk_batch_view *out, const char **why)
{
	mk_batch_view v;
	mk_err err = mk_frame_decode_header(buf, len, max_payload, true, &v,
					    why);
	if (err)
		return err;
	if (v.meta.codec == MK_COMPRESS_NONE) {
		if ((err = check_records(&v, v.records, v.records_len, why)))
			return err;
	} else {
		mk_strbuf plain = MK_STRBUF_INIT;
		err = mk_batch_inflate(&v, max_payload, &plain, why);
		if (!err)
			err = check_records(&v, (const uint8_t *)plain.buf,
					    plain.len, why);
		mk_strbuf_release(&plain);
		if (err)
			return err;
	}
	*out = v;
	return MK_OK;
}

mk_err mk_batch_inflate(const mk_batch_view *b, size_t max_bytes,
			mk_strbuf *out, const char **why)
{
	if (!max_bytes)
		max_bytes = MK_FRAME_MAX_PAYLOAD;
	mk_strbuf reason = MK_STRBUF_INIT;
	mk_err err = mk_decompress(b->meta.codec, b->records, b->records_len,
				   max_bytes, out, &reason);
	mk_strbuf_release(&reason);
	if (err == MK_MESSAGE_TOO_LARGE)
		return reject(why, "records too large once decompressed");
	if (err)
		return reject(why, "bad compressed records");
	return MK_OK;
}

/* ---- iteration ----------------------------------------------------------- */

void mk_frame_iter_init(mk_frame_iter *it, const void *buf, size_t len)
{
	it->p = len ? buf : NULL;
	it->left = len;
	it->frame = NULL;
}

bool mk_frame_next(mk_frame_iter *it, mk_batch_view *b)
{
	if (!it->left ||
	    mk_frame_decode_header(it->p, it->left, 0, false, b, NULL))
		return false;
	it->frame = it->p;
	it->p += b->frame_len;
	it->left -= b->frame_len;
	return true;
}

void mk_record_iter_init(mk_record_iter *it, const mk_batch_view *b)
{
	it->batch = b;
	it->p = b->records;
	it->end = b->records ? b->records + b->records_len : NULL;
	it->left = b->record_count;
	mk_strbuf_init(&it->scratch, 0);
	if (b->meta.codec == MK_COMPRESS_NONE)
		return;
	/* A batch that decoded once decompresses: this fails only on bytes
	 * that were never validated (an iterator's assertion, as for bad
	 * records). */
	bool ok = mk_batch_inflate(b, 0, &it->scratch, NULL) == MK_OK;
	assert(ok && "iterating a compressed batch that did not decode");
	if (!ok) {
		it->left = 0;
		return;
	}
	it->p = (const uint8_t *)it->scratch.buf;
	it->end = it->p + it->scratch.len;
}

void mk_record_iter_release(mk_record_iter *it)
{
	mk_strbuf_release(&it->scratch);
}

bool mk_record_next(mk_record_iter *it, mk_record_view *rec)
{
	if (it->left <= 0)
		return false;
	reader r = { it->p, (size_t)(it->end - it->p) };
	int32_t delta;
	int64_t tsd;
	bool ok = parse_record(&r, rec, &delta, &tsd, NULL);
	assert(ok && "iterating a batch that did not decode");
	if (!ok) {
		it->left = 0;
		return false;
	}
	const mk_batch_view *b = it->batch;
	rec->offset = b->meta.base_offset + delta;
	rec->timestamp = b->meta.log_append_time
		? b->max_timestamp
		: (int64_t)((uint64_t)b->first_timestamp + (uint64_t)tsd);
	it->p = r.p;
	it->left--;
	return true;
}

bool mk_header_next(const mk_record_view *rec, size_t *pos, mk_header *h)
{
	if (*pos >= rec->headers_len)
		return false;
	reader r = { rec->headers + *pos, rec->headers_len - *pos };
	bool ok = parse_header(&r, h, NULL);
	assert(ok && "iterating headers of a record that did not decode");
	if (!ok) {
		*pos = rec->headers_len;
		return false;
	}
	*pos = rec->headers_len - r.left;
	return true;
}

/* ---- encoding ------------------------------------------------------------ */

static uint8_t *put_uvar(uint8_t *p, uint64_t z)
{
	while (z >= 0x80) {
		*p++ = (uint8_t)(z | 0x80);
		z >>= 7;
	}
	*p++ = (uint8_t)z;
	return p;
}

static uint8_t *put_varint(uint8_t *p, int32_t v)
{
	return put_uvar(p, ((uint32_t)v << 1) ^ (uint32_t)(v >> 31));
}

static uint64_t zigzag64(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static uint8_t *put_blob(uint8_t *p, mk_bytes b)
{
	p = put_varint(p, b.len);
	if (b.len > 0) {
		memcpy(p, b.ptr, (size_t)b.len);
		p += b.len;
	}
	return p;
}

void mk_headers_encode(mk_strbuf *out, const mk_header *h, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		assert(h[i].name.len >= 0);
		size_t need = mk_varint_size(h[i].name.len) +
			      mk_blob_size(h[i].name) +
			      mk_varint_size(h[i].value.len) +
			      mk_blob_size(h[i].value);
		mk_strbuf_grow(out, need);
		uint8_t *p0 = (uint8_t *)out->buf + out->len;
		uint8_t *p = put_blob(put_blob(p0, h[i].name), h[i].value);
		mk_strbuf_setlen(out, out->len + (size_t)(p - p0));
	}
}

static uint16_t attributes_of(const mk_batch_meta *m, uint16_t flags)
{
	uint16_t a = m->codec & MK_ATTR_CODEC_MASK;
	if (m->log_append_time)
		a |= MK_ATTR_LOG_APPEND_TIME;
	if (flags & MK_BATCH_TRANSACTIONAL)
		a |= MK_ATTR_TRANSACTIONAL;
	if (flags & (MK_BATCH_COMMIT_MARKER | MK_BATCH_ABORT_MARKER))
		a |= MK_ATTR_CONTROL | MK_ATTR_TRANSACTIONAL;
	return a;
}

/*
 * Append the header of a new batch to sb, with the meta fields filled in
 * (flags overriding meta->flags); returns where the batch starts. Length,
 * CRC, last offset delta, timestamps and record count are written by
 * seal_frame().
 */
static size_t begin_frame(mk_strbuf *sb, const mk_batch_meta *meta,
			  uint16_t flags)
{
	assert(!(flags & ~(unsigned)MK_BATCH_FLAGS_KNOWN));
	assert((flags & (MK_BATCH_COMMIT_MARKER | MK_BATCH_ABORT_MARKER)) !=
	       (MK_BATCH_COMMIT_MARKER | MK_BATCH_ABORT_MARKER));
	assert(meta->codec < MK_COMPRESS_COUNT);
	size_t start = sb->len;
	mk_strbuf_grow(sb, MK_FRAME_HEADER);
	uint8_t *f = (uint8_t *)sb->buf + start;
	memset(f, 0, MK_FRAME_HEADER);
	mk_store_be64(f + MK_FRAME_OFF_BASE_OFFSET, (uint64_t)meta->base_offset);
	mk_store_be32(f + MK_FRAME_OFF_LEADER_EPOCH,
		      (uint32_t)meta->leader_epoch);
	f[MK_FRAME_OFF_MAGIC] = MK_BATCH_MAGIC;
	mk_store_be16(f + MK_FRAME_OFF_ATTRIBUTES, attributes_of(meta, flags));
	mk_store_be64(f + MK_FRAME_OFF_PRODUCER_ID, (uint64_t)meta->producer_id);
	mk_store_be16(f + MK_FRAME_OFF_PRODUCER_EPOCH,
		      (uint16_t)meta->producer_epoch);
	mk_store_be32(f + MK_FRAME_OFF_BASE_SEQUENCE,
		      (uint32_t)meta->base_sequence);
	mk_strbuf_setlen(sb, start + MK_FRAME_HEADER);
	return start;
}

size_t mk_frame_size_of_one(mk_bytes key, mk_bytes value,
			    const mk_header *headers, size_t nheaders)
{
	mk_record_in r = { key, value, headers, nheaders };
	size_t body = mk_record_body_size(&r) + 2;   /* both deltas 0 */
	return MK_FRAME_HEADER + mk_varint_size((int32_t)body) + body;
}

/* Write a record's length prefix (body: its bytes after it) and every
 * field before its headers at p; returns where its headers go. */
static inline __attribute__((always_inline)) uint8_t *
put_head(uint8_t *p, size_t body, int32_t delta, int64_t ts_delta,
	 mk_bytes key, mk_bytes value, size_t nheaders)
{
	assert(key.len >= -1 && value.len >= -1);
	assert(body <= INT32_MAX && nheaders <= INT32_MAX);
	p = put_varint(p, (int32_t)body);
	*p++ = 0;                               /* attributes */
	p = put_uvar(p, zigzag64(ts_delta));
	p = put_varint(p, delta);
	p = put_blob(p, key);
	p = put_blob(p, value);
	return put_varint(p, (int32_t)nheaders);
}

/* Write one record at p (room for it made by the caller); returns the
 * byte after it. */
static inline __attribute__((always_inline)) uint8_t *
put_record(uint8_t *p, int32_t delta, int64_t ts_delta, const mk_record_in *r)
{
	assert(r->nheaders == 0 || r->headers);
	size_t body = mk_record_body_size(r) + mk_varlong_size(ts_delta) +
		      mk_varint_size(delta);
	p = put_head(p, body, delta, ts_delta, r->key, r->value, r->nheaders);
	for (size_t i = 0; i < r->nheaders; i++) {
		const mk_header *h = &r->headers[i];
		assert(h->name.len >= 0);
		p = put_blob(p, h->name);
		p = put_blob(p, h->value);
	}
	return p;
}

/* Append a decoded record to out at new deltas, its headers' bytes
 * copied as they are (their encoding does not depend on the deltas). */
static void add_record_view(mk_strbuf *out, const mk_record_view *rec,
			    int32_t delta, int64_t ts_delta)
{
	size_t body = 1 + mk_varlong_size(ts_delta) + mk_varint_size(delta) +
		      mk_varint_size(rec->key.len) + mk_blob_size(rec->key) +
		      mk_varint_size(rec->value.len) + mk_blob_size(rec->value) +
		      mk_varint_size(rec->header_count) + rec->headers_len;
	mk_strbuf_grow(out, mk_varint_size((int32_t)body) + body);
	uint8_t *p0 = (uint8_t *)out->buf + out->len;
	uint8_t *p = put_head(p0, body, delta, ts_delta, rec->key, rec->value,
			      (size_t)rec->header_count);
	if (rec->headers_len)
		memcpy(p, rec->headers, rec->headers_len);
	p += rec->headers_len;
	assert((size_t)(p - p0) == mk_varint_size((int32_t)body) + body);
	mk_strbuf_setlen(out, out->len + (size_t)(p - p0));
}

static int64_t ts_diff(int64_t ts, int64_t base)
{
	return (int64_t)((uint64_t)ts - (uint64_t)base);
}

/* Complete the batch begun at start, whose records end at sb->len. */
static void seal_frame(mk_strbuf *sb, size_t start, int32_t last_offset_delta,
		       int64_t first_timestamp, int64_t max_timestamp,
		       int32_t count)
{
	assert(count > 0 && last_offset_delta >= count - 1);
	uint8_t *f = (uint8_t *)sb->buf + start;
	size_t flen = sb->len - start;
	assert(flen - MK_FRAME_LOG_OVERHEAD <= INT32_MAX);
	mk_store_be32(f + MK_FRAME_OFF_LENGTH,
		      (uint32_t)(flen - MK_FRAME_LOG_OVERHEAD));
	mk_store_be32(f + MK_FRAME_OFF_LAST_OFFSET_DELTA,
		      (uint32_t)last_offset_delta);
	mk_store_be64(f + MK_FRAME_OFF_BASE_TIMESTAMP, (uint64_t)first_timestamp);
	mk_store_be64(f + MK_FRAME_OFF_MAX_TIMESTAMP, (uint64_t)max_timestamp);
	mk_store_be32(f + MK_FRAME_OFF_RECORDS_COUNT, (uint32_t)count);
	mk_store_be32(f + MK_FRAME_OFF_CRC, batch_crc(f, flen));
}

/* Compress the records of the batch begun at start in place, by the codec
 * in its attributes (level -1: the codec's default). Records that would
 * not get smaller (incompressible bytes, which a codec's framing makes
 * larger) stay uncompressed, the codec bits cleared, as they do should
 * the codec fail: so a batch is never larger than the size its builder
 * reported, which its producer checked against batch.size and
 * message.max.bytes. */
static void compress_records(mk_strbuf *sb, size_t start, int level)
{
	uint8_t *f = (uint8_t *)sb->buf + start;
	uint16_t attr = mk_load_be16(f + MK_FRAME_OFF_ATTRIBUTES);
	int codec = attr & MK_ATTR_CODEC_MASK;
	if (codec == MK_COMPRESS_NONE)
		return;
	mk_strbuf z = MK_STRBUF_INIT;
	size_t rec = start + MK_FRAME_HEADER;
	if (mk_compress(codec, level, (const uint8_t *)sb->buf + rec,
			sb->len - rec, &z) == MK_OK && z.len < sb->len - rec) {
		mk_strbuf_setlen(sb, rec);
		mk_strbuf_add(sb, z.buf, z.len);
	} else {
		f = (uint8_t *)sb->buf + start;
		mk_store_be16(f + MK_FRAME_OFF_ATTRIBUTES,
			      attr & ~(unsigned)MK_ATTR_CODEC_MASK);
	}
	mk_strbuf_release(&z);
}

void mk_builder_init(mk_batch_builder *b, const mk_batch_meta *meta)
{
	mk_strbuf_init(&b->frame, 0);
	mk_builder_reset(b, meta);
}

void mk_builder_release(mk_batch_builder *b)
{
	mk_strbuf_release(&b->frame);
}

void mk_builder_reset(mk_batch_builder *b, const mk_batch_meta *meta)
{
	mk_strbuf_reset(&b->frame);
	b->meta = *meta;
	b->count = 0;
	b->next_delta = 0;
	b->first_timestamp = 0;
	b->max_timestamp = 0;
	b->finished = false;
	size_t start = begin_frame(&b->frame, meta, meta->flags);
	assert(start == 0);
	(void)start;
}

void mk_builder_add(mk_batch_builder *b, int64_t timestamp, mk_bytes key,
		    mk_bytes value, const mk_header *headers, size_t nheaders)
{
	mk_record_in r = { key, value, headers, nheaders };
	mk_builder_add_many(b, timestamp, &r, 1, mk_record_size(&r));
}

void mk_builder_add_many(mk_batch_builder *b, int64_t timestamp,
			 const mk_record_in *recs, size_t n, size_t bytes)
{
	assert(!b->finished);
	assert(n > 0 && n <= (size_t)(INT32_MAX - b->next_delta));
	if (b->count == 0)
		b->first_timestamp = b->max_timestamp = timestamp;
	else if (timestamp > b->max_timestamp)
		b->max_timestamp = timestamp;
	int64_t tsd = ts_diff(timestamp, b->first_timestamp);
	mk_strbuf_grow(&b->frame, bytes);
	uint8_t *start = (uint8_t *)b->frame.buf + b->frame.len, *p = start;
	int32_t delta = b->next_delta;
	for (size_t i = 0; i < n; i++)
		p = put_record(p, delta++, tsd, &recs[i]);
	assert((size_t)(p - start) <= bytes);
	mk_strbuf_setlen(&b->frame, b->frame.len + (size_t)(p - start));
	b->count += (int32_t)n;
	b->next_delta = delta;
}

void mk_builder_set_codec(mk_batch_builder *b, int codec)
{
	assert(!b->finished && codec >= 0 && codec < MK_COMPRESS_COUNT);
	b->meta.codec = (uint8_t)codec;
	uint8_t *f = (uint8_t *)b->frame.buf;
	uint16_t a = mk_load_be16(f + MK_FRAME_OFF_ATTRIBUTES);
	mk_store_be16(f + MK_FRAME_OFF_ATTRIBUTES,
		      (uint16_t)((a & ~(unsigned)MK_ATTR_CODEC_MASK) | codec));
}

size_t mk_builder_size(const mk_batch_builder *b)
{
	/* Everything but the values patched in by finish is already there
	 * (before compression: an upper bound of what finish makes). */
	return b->frame.len;
}

void mk_builder_finish(mk_batch_builder *b)
{
	assert(!b->finished);
	assert(b->count > 0 && "a batch holds at least one record");
	compress_records(&b->frame, 0, -1);
	seal_frame(&b->frame, 0, b->next_delta - 1, b->first_timestamp,
		   b->max_timestamp, b->count);
	b->finished = true;
}

void mk_frame_assign(uint8_t *frame, size_t frame_len, int64_t base_offset,
		     int32_t leader_epoch)
{
	assert(frame_len >= MK_FRAME_HEADER);
	assert(frame[MK_FRAME_OFF_MAGIC] == MK_BATCH_MAGIC);
	assert(mk_load_be32(frame + MK_FRAME_OFF_LENGTH) ==
	       frame_len - MK_FRAME_LOG_OVERHEAD);
	(void)frame_len;
	int32_t lod = load_i32(frame + MK_FRAME_OFF_LAST_OFFSET_DELTA);
	assert(lod >= 0 && base_offset >= 0 &&
	       base_offset <= INT64_MAX - 1 - lod && leader_epoch >= -1);
	(void)lod;
	/* Outside the CRC: two stores, nothing to fix up. */
	mk_store_be64(frame + MK_FRAME_OFF_BASE_OFFSET, (uint64_t)base_offset);
	mk_store_be32(frame + MK_FRAME_OFF_LEADER_EPOCH, (uint32_t)leader_epoch);
}

/* mk_frame_filter, the new batch's records compressed by codec. */
static void filter_as(const mk_batch_view *b,
		      bool (*keep)(const mk_record_view *rec, void *arg),
		      void *arg, int codec, mk_strbuf *out)
{
	size_t start = begin_frame(out, &b->meta, b->meta.flags);
	uint8_t *f = (uint8_t *)out->buf + start;
	/* The attributes as they were but for the codec bits (its records
	 * are compressed at the end). */
	mk_store_be16(f + MK_FRAME_OFF_ATTRIBUTES,
		      (uint16_t)((b->attributes & ~(unsigned)MK_ATTR_CODEC_MASK) |
				 (unsigned)codec));
	int32_t kept = 0;
	int64_t base = b->meta.base_offset, first = 0, max = 0;
	mk_record_iter it;
	mk_record_view rec;
	mk_record_iter_init(&it, b);
	while (mk_record_next(&it, &rec)) {
		if (!keep(&rec, arg))
			continue;
		if (kept == 0) {
			first = max = rec.timestamp;
		} else if (rec.timestamp > max) {
			max = rec.timestamp;
		}
		add_record_view(out, &rec, (int32_t)(rec.offset - base),
				ts_diff(b->meta.log_append_time ? first
								: rec.timestamp,
					first));
		kept++;
	}
	mk_record_iter_release(&it);
	if (kept == 0) {
		mk_strbuf_setlen(out, start);
		return;
	}
	compress_records(out, start, -1);
	if (b->meta.log_append_time)
		first = max = b->max_timestamp;
	seal_frame(out, start,
		   (int32_t)(mk_batch_last_offset(b) - base), first, max, kept);
}

void mk_frame_filter(const mk_batch_view *b,
		     bool (*keep)(const mk_record_view *rec, void *arg),
		     void *arg, mk_strbuf *out)
{
	/* A batch keeps its codec. */
	filter_as(b, keep, arg, b->meta.codec, out);
}

static bool keep_every(const mk_record_view *rec, void *arg)
{
	(void)rec;
	(void)arg;
	return true;
}

void mk_frame_recompress(const mk_batch_view *b, int codec, mk_strbuf *out)
{
	assert(codec >= 0 && codec < MK_COMPRESS_COUNT);
	filter_as(b, keep_every, NULL, codec, out);
}

void mk_frame_set_log_append_time(uint8_t *frame, size_t frame_len,
				  int64_t timestamp)
{
	assert(frame_len >= MK_FRAME_HEADER);
	uint16_t a = mk_load_be16(frame + MK_FRAME_OFF_ATTRIBUTES);
	mk_store_be16(frame + MK_FRAME_OFF_ATTRIBUTES,
		      (uint16_t)(a | MK_ATTR_LOG_APPEND_TIME));
	mk_store_be64(frame + MK_FRAME_OFF_MAX_TIMESTAMP, (uint64_t)timestamp);
	mk_store_be32(frame + MK_FRAME_OFF_CRC, batch_crc(frame, frame_len));
}

void mk_frame_marker(mk_strbuf *out, const mk_batch_meta *meta,
		     int64_t timestamp)
{
	uint16_t flags = meta->flags | MK_BATCH_TRANSACTIONAL;
	bool commit = flags & MK_BATCH_COMMIT_MARKER;
	assert(commit != !!(flags & MK_BATCH_ABORT_MARKER));
	mk_batch_meta m = *meta;
	m.codec = MK_COMPRESS_NONE;
	size_t start = begin_frame(out, &m, flags);
	uint8_t key[4], value[6];
	mk_store_be16(key, 0);
	mk_store_be16(key + 2, commit ? 1 : 0);
	mk_store_be16(value, 0);
	mk_store_be32(value + 2, (uint32_t)meta->coordinator_epoch);
	mk_record_in rec = { mk_bytes_of(key, 4), mk_bytes_of(value, 6),
			     NULL, 0 };
	size_t bound = mk_record_size(&rec);
	mk_strbuf_grow(out, bound);
	uint8_t *p0 = (uint8_t *)out->buf + out->len;
	uint8_t *p = put_record(p0, 0, 0, &rec);
	mk_strbuf_setlen(out, out->len + (size_t)(p - p0));
	seal_frame(out, start, 0, timestamp, timestamp, 1);
}

void mk_frame_set_producer(uint8_t *frame, size_t frame_len, int64_t pid,
			   int16_t epoch, int32_t base_sequence)
{
	assert(frame_len >= MK_FRAME_HEADER);
	assert(mk_load_be32(frame + MK_FRAME_OFF_LENGTH) ==
	       frame_len - MK_FRAME_LOG_OVERHEAD);
	/* Id, epoch and sequence are adjacent: 14 bytes change. */
	_Static_assert(MK_FRAME_OFF_PRODUCER_EPOCH ==
			       MK_FRAME_OFF_PRODUCER_ID + 8 &&
		       MK_FRAME_OFF_BASE_SEQUENCE ==
			       MK_FRAME_OFF_PRODUCER_EPOCH + 2,
		       "adjacent fields");
	uint8_t *at = frame + MK_FRAME_OFF_PRODUCER_ID;
	uint8_t old[14], d[14];
	memcpy(old, at, sizeof(old));
	mk_store_be64(frame + MK_FRAME_OFF_PRODUCER_ID, (uint64_t)pid);
	mk_store_be16(frame + MK_FRAME_OFF_PRODUCER_EPOCH, (uint16_t)epoch);
	mk_store_be32(frame + MK_FRAME_OFF_BASE_SEQUENCE,
		      (uint32_t)base_sequence);
	/*
	 * CRC-32C is affine: between two inputs of one length the CRCs
	 * differ by the linear part of the CRC of their XOR, which is zero
	 * but for these 14 bytes d. Leading zeros leave the register at 0,
	 * so that is crc32_iscsi(d) from 0, carried over the bytes after d.
	 */
	for (size_t i = 0; i < sizeof(d); i++)
		d[i] = old[i] ^ at[i];
	uint32_t lin = crc32_iscsi(d, (int)sizeof(d), 0);
	size_t after = frame_len - (MK_FRAME_OFF_BASE_SEQUENCE + 4);
	uint32_t crc = mk_load_be32(frame + MK_FRAME_OFF_CRC);
	mk_store_be32(frame + MK_FRAME_OFF_CRC, crc ^ crc32c_shift(lin, after));
}
