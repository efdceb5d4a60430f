/*
 * codec.c — the batch frame of codec.h.
 *
 * Organisation:
 *   - a bounded reader (struct reader: a pointer and the bytes left after
 *     it). Every read first compares the size it wants with the bytes left,
 *     so no pointer past the end of the input is ever formed;
 *   - parse_record() and parse_header(), shared by the validating decoder
 *     and by the iterators. On a decoded frame they cannot fail, so the
 *     iterators only assert;
 *   - mk_frame_decode_header(): frame header, CRC (optional), fixed
 *     payload fields; mk_frame_decode() is that plus one pass over the
 *     records and their headers, without allocating; mk_frame_next()
 *     walks a buffer of frames validated before, by their headers;
 *   - encoding: begin_frame() reserves the frame header and the payload
 *     header (meta written at once), add_record() appends one record with a
 *     single grow of the buffer (mk_builder_add_many() a run of records
 *     with one grow; put_record() writes each), and seal_frame() fills in
 *     the fields known only at the end (last offset delta, timestamps,
 *     record count, payload length, CRC). The builder, mk_frame_filter()
 *     and mk_frame_marker() are built from these three;
 *   - mk_frame_assign() stores base offset and epoch, which lie outside
 *     the CRC'd payload; mk_frame_set_producer() rewrites producer fields
 *     inside it and updates the CRC for those bytes only (crc_patch()), so
 *     that a batch costs one CRC pass over its payload, its builder's, on
 *     the way to the log.
 */
#include "codec.h"

#include <assert.h>
#include <string.h>
#include <isa-l/crc.h>
#include <zlib.h>

/* Byte offsets of the fixed fields inside the payload. */
enum {
	P_FLAGS = 0,
	P_PRODUCER_ID = 2,
	P_PRODUCER_EPOCH = 10,
	P_BASE_SEQUENCE = 12,
	P_LAST_OFFSET_DELTA = 16,
	P_FIRST_TIMESTAMP = 20,
	P_MAX_TIMESTAMP = 28,
	P_TXN_ID_LEN = 36,
};


_Static_assert(P_TXN_ID_LEN == MK_BATCH_FIXED, "fixed payload layout");
_Static_assert(MK_FRAME_OFF_PRODUCER_ID == MK_FRAME_HEADER + P_PRODUCER_ID &&
	       MK_FRAME_OFF_PRODUCER_EPOCH ==
		       MK_FRAME_HEADER + P_PRODUCER_EPOCH &&
	       MK_FRAME_OFF_BASE_SEQUENCE == MK_FRAME_HEADER + P_BASE_SEQUENCE,
	       "producer field positions");
_Static_assert(MK_FRAME_OFF_CRC + 4 == MK_FRAME_HEADER, "frame header layout");

/*
 * The payload CRC is zlib's CRC-32 (the gzip polynomial). ISA-L computes
 * the same value with carry-less multiplication, an order of magnitude
 * faster than zlib's table code (tests/unit/test_codec.c checks they
 * agree); zlib stays for crc32_combine.
 */
static uint32_t payload_crc(const uint8_t *p, uint32_t n)
{
	return crc32_gzip_refl(0, p, n);
}

static int16_t load_i16(const uint8_t *p) { return (int16_t)mk_load_be16(p); }
static int32_t load_i32(const uint8_t *p) { return (int32_t)mk_load_be32(p); }
static int64_t load_i64(const uint8_t *p) { return (int64_t)mk_load_be64(p); }

/* ---- bounded reader ------------------------------------------------------ */

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

static bool rd_i16(reader *r, int16_t *v)
{
	const uint8_t *p;
	if (!rd_take(r, 2, &p))
		return false;
	*v = load_i16(p);
	return true;
}

static bool rd_i32(reader *r, int32_t *v)
{
	const uint8_t *p;
	if (!rd_take(r, 4, &p))
		return false;
	*v = load_i32(p);
	return true;
}

/* A length-prefixed field whose length was already read: -1 is null. */
static bool rd_blob(reader *r, int32_t len, mk_bytes *out)
{
	if (len < -1)
		return false;
	if (len == -1) {
		*out = MK_BYTES_NULL;
		return true;
	}
	const uint8_t *p;
	if (!rd_take(r, (size_t)len, &p))
		return false;
	*out = (mk_bytes){ p, len };
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
	int16_t nlen;
	int32_t vlen;
	if (!rd_i16(r, &nlen) || nlen < 0 || !rd_blob(r, nlen, &h->name) ||
	    !rd_i32(r, &vlen) || !rd_blob(r, vlen, &h->value))
		return fail(why, "bad header");
	return true;
}

/*
 * Parse one record at r, walking (and so checking) its headers. rec->offset
 * is left to the caller, which knows the base offset.
 */
static bool parse_record(reader *r, mk_record_view *rec, int32_t *delta,
			 const char **why)
{
	/* Straight-line loads (no rd_* call per field): this runs once per
	 * record when a frame is validated and again when it is iterated.
	 * The checks and their reasons are those of the field-by-field walk. */
	const uint8_t *p = r->p;
	size_t left = r->left;
	if (left < MK_RECORD_FIXED)
		return fail(why, "bad record");
	*delta = load_i32(p);
	rec->timestamp = load_i64(p + 4);
	int32_t klen = load_i32(p + 12);
	p += 16;
	left -= 16;
	if (klen < -1 || (klen > 0 && left < (size_t)klen))
		return fail(why, "bad key");
	rec->key = klen < 0 ? MK_BYTES_NULL : (mk_bytes){ p, klen };
	if (klen > 0) {
		p += klen;
		left -= (size_t)klen;
	}
	if (left < 4)
		return fail(why, "bad record");
	int32_t vlen = load_i32(p);
	p += 4;
	left -= 4;
	if (vlen < -1 || (vlen > 0 && left < (size_t)vlen))
		return fail(why, "bad value");
	rec->value = vlen < 0 ? MK_BYTES_NULL : (mk_bytes){ p, vlen };
	if (vlen > 0) {
		p += vlen;
		left -= (size_t)vlen;
	}
	if (left < 4)
		return fail(why, "bad record");
	rec->header_count = load_i32(p);
	p += 4;
	left -= 4;
	if (rec->header_count < 0)
		return fail(why, "bad header count");
	r->p = p;
	r->left = left;

	rec->headers = r->p;
	size_t before = r->left;
	for (int32_t i = 0; i < rec->header_count; i++) {
		mk_header h;
		if (!parse_header(r, &h, why))
			return false;
	}
	rec->headers_len = before - r->left;
	return true;
}

/* ---- decoding ------------------------------------------------------------ */

static mk_err reject(const char **why, const char *reason)
{
	fail(why, reason);
	return MK_CORRUPT_MESSAGE;
}

/* The frame header and the fixed payload fields: everything but records. */
mk_err mk_frame_decode_header(const uint8_t *buf, size_t len,
			      size_t max_payload, bool check_crc,
			      mk_batch_view *out, const char **why)
{
	/* A short buffer whose bytes disagree with the magic is not a torn
	 * frame but garbage: say so. */
	size_t m = len < 4 ? len : 4;
	if (m && memcmp(buf, MK_FRAME_MAGIC, m) != 0)
		return reject(why, m == 4 && !memcmp(buf, MK_FRAME_MAGIC_V1, 4)
				   ? "unsupported frame version 1"
				   : "bad magic");
	if (len < MK_FRAME_HEADER)
		return reject(why, "truncated frame");

	uint32_t plen = mk_load_be32(buf + MK_FRAME_OFF_LENGTH);
	if (max_payload == 0)
		max_payload = MK_FRAME_MAX_PAYLOAD;
	if (plen > max_payload)
		return reject(why, "payload too large");
	if (len - MK_FRAME_HEADER < plen)
		return reject(why, "truncated frame");

	const uint8_t *pl = buf + MK_FRAME_HEADER;
	if (check_crc &&
	    payload_crc(pl, plen) != mk_load_be32(buf + MK_FRAME_OFF_CRC))
		return reject(why, "bad crc");
	if (plen < MK_BATCH_FIXED)
		return reject(why, "short payload");

	mk_batch_view v;
	memset(&v, 0, sizeof(v));
	v.meta.flags = mk_load_be16(pl + P_FLAGS);
	if (v.meta.flags & ~(unsigned)MK_BATCH_FLAGS_KNOWN)
		return reject(why, "unknown flags");
	bool control = mk_batch_is_control(&v);
	if ((v.meta.flags & MK_BATCH_COMMIT_MARKER) &&
	    (v.meta.flags & MK_BATCH_ABORT_MARKER))
		return reject(why, "bad marker");
	if (control && !(v.meta.flags & MK_BATCH_TRANSACTIONAL))
		return reject(why, "bad marker");

	v.meta.base_offset = load_i64(buf + MK_FRAME_OFF_BASE_OFFSET);
	v.meta.leader_epoch = load_i32(buf + MK_FRAME_OFF_LEADER_EPOCH);
	v.meta.producer_id = load_i64(pl + P_PRODUCER_ID);
	v.meta.producer_epoch = load_i16(pl + P_PRODUCER_EPOCH);
	v.meta.base_sequence = load_i32(pl + P_BASE_SEQUENCE);
	v.last_offset_delta = load_i32(pl + P_LAST_OFFSET_DELTA);
	v.first_timestamp = load_i64(pl + P_FIRST_TIMESTAMP);
	v.max_timestamp = load_i64(pl + P_MAX_TIMESTAMP);
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

	reader r = { pl + MK_BATCH_FIXED, plen - MK_BATCH_FIXED };
	int16_t tlen;
	if (!rd_i16(&r, &tlen))
		return reject(why, "short payload");
	if (tlen != -1 && !(v.meta.flags & MK_BATCH_TRANSACTIONAL))
		return reject(why, "bad txn id");
	if (!rd_blob(&r, tlen, &v.meta.txn_id))
		return reject(why, "bad txn id");
	if (!rd_i32(&r, &v.record_count))
		return reject(why, "short payload");
	if (v.record_count <= 0)
		return reject(why, "bad record count");
	if (control && v.record_count != 1)
		return reject(why, "bad marker");

	v.records = r.p;
	v.records_len = r.left;
	v.frame_len = MK_FRAME_HEADER + (size_t)plen;
	*out = v;
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

	bool control = mk_batch_is_control(&v);
	reader r = { v.records, v.records_len };
	int32_t prev = -1;
	for (int32_t i = 0; i < v.record_count; i++) {
		mk_record_view rec;
		int32_t delta;
		if (!parse_record(&r, &rec, &delta, why))
			return MK_CORRUPT_MESSAGE;
		if (delta <= prev || delta > v.last_offset_delta)
			return reject(why, "bad offset delta");
		prev = delta;
		if (control && (rec.key.len != -1 || rec.value.len != -1 ||
				rec.header_count != 0))
			return reject(why, "bad marker");
	}
	if (r.left)
		return reject(why, "trailing bytes");

	*out = v;
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
}

bool mk_record_next(mk_record_iter *it, mk_record_view *rec)
{
	if (it->left <= 0)
		return false;
	reader r = { it->p, (size_t)(it->end - it->p) };
	int32_t delta;
	bool ok = parse_record(&r, rec, &delta, NULL);
	assert(ok && "iterating a batch that did not decode");
	if (!ok) {
		it->left = 0;
		return false;
	}
	rec->offset = it->batch->meta.base_offset + delta;
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

/* Bytes a field takes after its length prefix. */

static uint8_t *put_bytes(uint8_t *p, mk_bytes b)
{
	if (b.len > 0) {
		memcpy(p, b.ptr, (size_t)b.len);
		p += b.len;
	}
	return p;
}

static void check_meta(const mk_batch_meta *meta, uint16_t flags)
{
	(void)meta;
	(void)flags;
	assert(!(flags & ~(unsigned)MK_BATCH_FLAGS_KNOWN));
	assert((flags & (MK_BATCH_COMMIT_MARKER | MK_BATCH_ABORT_MARKER)) !=
	       (MK_BATCH_COMMIT_MARKER | MK_BATCH_ABORT_MARKER));
	assert(meta->txn_id.len >= -1 && meta->txn_id.len <= INT16_MAX);
	assert(meta->txn_id.len == -1 || (flags & MK_BATCH_TRANSACTIONAL));
}

/*
 * Append the frame header and payload header of a new frame to sb, with the
 * meta fields filled in (flags overriding meta->flags); returns where the
 * frame starts. Length, CRC, last offset delta, timestamps and record count
 * are written by seal_frame().
 */
static size_t begin_frame(mk_strbuf *sb, const mk_batch_meta *meta,
			  uint16_t flags)
{
	check_meta(meta, flags);
	size_t start = sb->len;
	size_t n = MK_FRAME_HEADER + MK_BATCH_FIXED + 2 +
		   mk_blob_size(meta->txn_id) + 4;
	mk_strbuf_grow(sb, n);
	uint8_t *f = (uint8_t *)sb->buf + start;
	memset(f, 0, n);
	memcpy(f, MK_FRAME_MAGIC, 4);
	mk_store_be64(f + MK_FRAME_OFF_BASE_OFFSET, (uint64_t)meta->base_offset);
	mk_store_be32(f + MK_FRAME_OFF_LEADER_EPOCH,
		      (uint32_t)meta->leader_epoch);
	uint8_t *pl = f + MK_FRAME_HEADER;
	mk_store_be16(pl + P_FLAGS, flags);
	mk_store_be64(pl + P_PRODUCER_ID, (uint64_t)meta->producer_id);
	mk_store_be16(pl + P_PRODUCER_EPOCH, (uint16_t)meta->producer_epoch);
	mk_store_be32(pl + P_BASE_SEQUENCE, (uint32_t)meta->base_sequence);
	mk_store_be16(pl + P_TXN_ID_LEN, (uint16_t)meta->txn_id.len);
	uint8_t *end = put_bytes(pl + P_TXN_ID_LEN + 2, meta->txn_id);
	assert(end + 4 == f + n);
	(void)end;
	mk_strbuf_setlen(sb, start + n);
	return start;
}

size_t mk_frame_size_of_one(mk_bytes key, mk_bytes value,
			    const mk_header *headers, size_t nheaders)
{
	mk_record_in r = { key, value, headers, nheaders };
	return MK_FRAME_EMPTY_SIZE + mk_record_size(&r);
}

/* Write one record at p (room for it made by the caller); returns the
 * byte after it. */
static inline __attribute__((always_inline)) uint8_t *
put_record(uint8_t *p, int32_t delta, int64_t timestamp,
	   const mk_record_in *r)
{
	assert(r->key.len >= -1 && r->value.len >= -1);
	assert(r->nheaders <= INT32_MAX);
	assert(r->nheaders == 0 || r->headers);
	mk_store_be32(p, (uint32_t)delta);
	mk_store_be64(p + 4, (uint64_t)timestamp);
	mk_store_be32(p + 12, (uint32_t)r->key.len);
	p = put_bytes(p + 16, r->key);
	mk_store_be32(p, (uint32_t)r->value.len);
	p = put_bytes(p + 4, r->value);
	mk_store_be32(p, (uint32_t)r->nheaders);
	p += 4;
	for (size_t i = 0; i < r->nheaders; i++) {
		const mk_header *h = &r->headers[i];
		assert(h->name.len >= 0 && h->name.len <= INT16_MAX);
		mk_store_be16(p, (uint16_t)h->name.len);
		p = put_bytes(p + 2, h->name);
		mk_store_be32(p, (uint32_t)h->value.len);
		p = put_bytes(p + 4, h->value);
	}
	return p;
}

/* Append one record; a single grow of the buffer. */
static void add_record(mk_strbuf *sb, int32_t delta, int64_t timestamp,
		       const mk_record_in *r)
{
	size_t n = mk_record_size(r);
	mk_strbuf_grow(sb, n);
	uint8_t *start = (uint8_t *)sb->buf + sb->len;
	uint8_t *p = put_record(start, delta, timestamp, r);
	assert((size_t)(p - start) == n);
	(void)p;
	mk_strbuf_setlen(sb, sb->len + n);
}

/* Complete the frame begun at start, whose records end at sb->len. */
static void seal_frame(mk_strbuf *sb, size_t start, int32_t last_offset_delta,
		       int64_t first_timestamp, int64_t max_timestamp,
		       int32_t count)
{
	assert(count > 0 && last_offset_delta >= count - 1);
	uint8_t *f = (uint8_t *)sb->buf + start;
	size_t plen = sb->len - start - MK_FRAME_HEADER;
	assert(plen <= UINT32_MAX);
	uint8_t *pl = f + MK_FRAME_HEADER;
	mk_store_be32(pl + P_LAST_OFFSET_DELTA, (uint32_t)last_offset_delta);
	mk_store_be64(pl + P_FIRST_TIMESTAMP, (uint64_t)first_timestamp);
	mk_store_be64(pl + P_MAX_TIMESTAMP, (uint64_t)max_timestamp);
	int16_t tlen = load_i16(pl + P_TXN_ID_LEN);
	size_t count_at = P_TXN_ID_LEN + 2 + (tlen > 0 ? (size_t)tlen : 0);
	assert(count_at + 4 <= plen);
	mk_store_be32(pl + count_at, (uint32_t)count);
	mk_store_be32(f + MK_FRAME_OFF_LENGTH, (uint32_t)plen);
	mk_store_be32(f + MK_FRAME_OFF_CRC, payload_crc(pl, (uint32_t)plen));
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
	mk_strbuf_grow(&b->frame, bytes);
	uint8_t *start = (uint8_t *)b->frame.buf + b->frame.len, *p = start;
	int32_t delta = b->next_delta;
	for (size_t i = 0; i < n; i++)
		p = put_record(p, delta++, timestamp, &recs[i]);
	assert((size_t)(p - start) == bytes);
	(void)p;
	mk_strbuf_setlen(&b->frame, b->frame.len + bytes);
	if (b->count == 0 || timestamp > b->max_timestamp)
		b->max_timestamp = timestamp;
	if (b->count == 0)
		b->first_timestamp = timestamp;
	b->count += (int32_t)n;
	b->next_delta = delta;
}

size_t mk_builder_size(const mk_batch_builder *b)
{
	/* Everything but the values patched in by finish is already there. */
	return b->frame.len;
}

void mk_builder_finish(mk_batch_builder *b)
{
	assert(!b->finished);
	assert(b->count > 0 && "a batch holds at least one record");
	seal_frame(&b->frame, 0, b->next_delta - 1, b->first_timestamp,
		   b->max_timestamp, b->count);
	b->finished = true;
}

/*
 * The CRC of payload after its bytes [at, at + n) changed from old to what
 * they are now, given its CRC before: CRC-32 is affine, so the difference
 * between the two CRCs is the linear part of the CRC of the XOR of the two
 * payloads, which is zero but for those n bytes. That is crc(d) ^ crc(0^n)
 * for the n changed bytes d, carried over the plen - at - n bytes after them
 * (crc32_combine with an empty second part). Bytes before `at` do not
 * matter: leading zeros leave the linear part at zero.
 */
static uint32_t crc_patch(uint32_t crc, const uint8_t *payload, size_t plen,
			  size_t at, const uint8_t *old, size_t n)
{
	uint8_t d[16];
	static const uint8_t zero[16];
	assert(n <= sizeof(d) && at + n <= plen);
	for (size_t i = 0; i < n; i++)
		d[i] = old[i] ^ payload[at + i];
	uLong lin = crc32(crc32(0L, Z_NULL, 0), d, (uInt)n) ^
		    crc32(crc32(0L, Z_NULL, 0), zero, (uInt)n);
	return crc ^ (uint32_t)crc32_combine(lin, 0, (z_off_t)(plen - at - n));
}

void mk_frame_assign(uint8_t *frame, size_t frame_len, int64_t base_offset,
		     int32_t leader_epoch)
{
	assert(frame_len >= MK_FRAME_HEADER + MK_BATCH_FIXED);
	assert(memcmp(frame, MK_FRAME_MAGIC, 4) == 0);
	assert(mk_load_be32(frame + MK_FRAME_OFF_LENGTH) ==
	       frame_len - MK_FRAME_HEADER);
	(void)frame_len;
	int32_t lod = load_i32(frame + MK_FRAME_HEADER + P_LAST_OFFSET_DELTA);
	assert(lod >= 0 && base_offset >= 0 &&
	       base_offset <= INT64_MAX - 1 - lod && leader_epoch >= -1);
	(void)lod;
	/* Outside the CRC'd payload: two stores, nothing to fix up. */
	mk_store_be64(frame + MK_FRAME_OFF_BASE_OFFSET, (uint64_t)base_offset);
	mk_store_be32(frame + MK_FRAME_OFF_LEADER_EPOCH, (uint32_t)leader_epoch);
}

void mk_frame_filter(const mk_batch_view *b,
		     bool (*keep)(const mk_record_view *rec, void *arg),
		     void *arg, mk_strbuf *out)
{
	size_t start = begin_frame(out, &b->meta, b->meta.flags);
	int32_t kept = 0;
	int64_t first = 0, max = 0;
	mk_record_iter it;
	mk_record_view rec;
	mk_record_iter_init(&it, b);
	const uint8_t *raw = it.p;
	while (mk_record_next(&it, &rec)) {
		if (keep(&rec, arg)) {
			/* The record's bytes are copied as they are: its
			 * offset delta is what keeps its offset. */
			mk_strbuf_add(out, raw, (size_t)(it.p - raw));
			if (kept == 0 || rec.timestamp > max)
				max = rec.timestamp;
			if (kept == 0)
				first = rec.timestamp;
			kept++;
		}
		raw = it.p;
	}
	if (kept == 0) {
		mk_strbuf_setlen(out, start);
		return;
	}
	seal_frame(out, start, b->last_offset_delta, first, max, kept);
}

void mk_frame_marker(mk_strbuf *out, const mk_batch_meta *meta,
		     int64_t timestamp)
{
	uint16_t flags = meta->flags | MK_BATCH_TRANSACTIONAL;
	assert((flags & (MK_BATCH_COMMIT_MARKER | MK_BATCH_ABORT_MARKER)) ==
		       MK_BATCH_COMMIT_MARKER ||
	       (flags & (MK_BATCH_COMMIT_MARKER | MK_BATCH_ABORT_MARKER)) ==
		       MK_BATCH_ABORT_MARKER);
	size_t start = begin_frame(out, meta, flags);
	mk_record_in none = { MK_BYTES_NULL, MK_BYTES_NULL, NULL, 0 };
	add_record(out, 0, timestamp, &none);
	seal_frame(out, start, 0, timestamp, timestamp, 1);
}

void mk_frame_set_producer(uint8_t *frame, size_t frame_len, int64_t pid,
			   int16_t epoch, int32_t base_sequence)
{
	assert(frame_len >= MK_FRAME_HEADER + MK_BATCH_FIXED);
	assert(mk_load_be32(frame + MK_FRAME_OFF_LENGTH) ==
	       frame_len - MK_FRAME_HEADER);
	/* Id, epoch and sequence are adjacent: 14 bytes change. */
	_Static_assert(P_PRODUCER_EPOCH == P_PRODUCER_ID + 8 &&
		       P_BASE_SEQUENCE == P_PRODUCER_EPOCH + 2,
		       "adjacent fields");
	uint8_t *pl = frame + MK_FRAME_HEADER;
	uint8_t old[14];
	memcpy(old, pl + P_PRODUCER_ID, sizeof(old));
	mk_store_be64(frame + MK_FRAME_OFF_PRODUCER_ID, (uint64_t)pid);
	mk_store_be16(frame + MK_FRAME_OFF_PRODUCER_EPOCH, (uint16_t)epoch);
	mk_store_be32(frame + MK_FRAME_OFF_BASE_SEQUENCE, (uint32_t)base_sequence);
	mk_store_be32(frame + MK_FRAME_OFF_CRC,
		      crc_patch(mk_load_be32(frame + MK_FRAME_OFF_CRC), pl,
				frame_len - MK_FRAME_HEADER, P_PRODUCER_ID, old,
				sizeof(old)));
}
