/*
 * codec.h — Kafka's RecordBatch v2, the bytes of every .log segment:
 * encoding, validation, record iteration.
 *
 * A batch is Kafka's DefaultRecordBatch (clients/.../record/
 * DefaultRecordBatch.java), all integers big-endian:
 *
 *     0  baseOffset i64        12 partitionLeaderEpoch i32
 *     8  batchLength i32       16 magic i8 (= 2)
 *                              17 crc u32: CRC-32C of bytes 21..end
 *     21 attributes i16: bits 0-2 compression codec, bit 3 timestamp
 *        type (1 = LogAppendTime), bit 4 transactional, bit 5 control
 *     23 lastOffsetDelta i32   27 baseTimestamp i64   35 maxTimestamp i64
 *     43 producerId i64        51 producerEpoch i16   53 baseSequence i32
 *     57 recordsCount i32      61 records (compressed as a whole when
 *                                 the codec is not 0)
 *
 * batchLength counts the bytes after it (the batch is batchLength + 12
 * bytes long). Each record is Kafka's DefaultRecord, its integers zigzag
 * varints:
 *
 *     length varint | attributes i8 (0) | timestampDelta varlong |
 *     offsetDelta varint | keyLength varint (-1 = null) | key |
 *     valueLength varint (-1 = null) | value | headerCount varint |
 *     { headerKeyLength varint (>= 0) | key | headerValueLength varint
 *       (-1 = null) | value }*
 *
 * so null and empty stay apart. A record's timestamp is baseTimestamp +
 * timestampDelta, or the batch's maxTimestamp in a LogAppendTime batch
 * (as Kafka's DefaultRecordBatch reads it). Offset deltas strictly
 * increase from 0 within a batch, except after compaction, where records
 * may be missing: deltas then only increase, and lastOffsetDelta keeps
 * the batch's original last offset.
 *
 * Base offset and leader epoch sit before the CRC'd region: the leader
 * stamps them on a batch built before it knew them (mk_frame_assign: two
 * stores, no CRC pass). What the CRC does not cover is checked for sanity
 * instead: the decoder wants a base offset >= 0 with room for the batch
 * after it, an epoch >= -1 and magic 2; the log wants offsets increasing
 * along a segment and epochs that never go down (segment.c, log.c).
 *
 * Control batches (transaction markers) are Kafka's: transactional, the
 * control bit set, one record whose key is version i16 (0) | type i16
 * (0 = ABORT, 1 = COMMIT) and whose value is version i16 (0) |
 * coordinatorEpoch i32 (EndTransactionMarker). They occupy an offset but
 * are never shown to readers. In a decoded view (mk_batch_view) a
 * marker's type is MK_BATCH_COMMIT_MARKER or MK_BATCH_ABORT_MARKER in
 * meta.flags, beside MK_BATCH_TRANSACTIONAL: the flags are the batch's
 * meaning, the attributes its bits. The transactional id is not in the
 * batch (as in Kafka: the transaction coordinator maps it to the
 * producer id and epoch).
 *
 * mk_frame_decode() checks everything — length bound, whole batch, magic,
 * CRC, attributes, every field and record, counts against the bytes
 * present, trailing bytes, and for a compressed batch the records after
 * decompression (bounded: a decompression bomb is refused) — and never
 * reads outside [buf, buf+len). It is the decoder for bytes from outside:
 * replica appends, recovery scans, reads from disk.
 * mk_frame_decode_header() checks all but the records (and, if asked,
 * not the CRC either), for batches already trusted. Once a batch has
 * decoded, iterating its records cannot fail. A batch holds at least one
 * record.
 *
 * The format before this one, MKF2 (a frame starting with the bytes
 * "MKF2"), is recognised only to be refused by name: a data directory
 * holding it is not read (docs/filesystem.md, "Formats before Kafka's").
 */
#ifndef MK_CODEC_H
#define MK_CODEC_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compress.h"
#include "error.h"
#include "strbuf.h"

#define MK_FRAME_MAGIC_MKF2 "MKF2"  /* the format before: refused */
#define MK_BATCH_MAGIC 2           /* Kafka's magic byte of RecordBatch v2 */
/* The batch header: everything before the first record. */
#define MK_FRAME_HEADER 61
/* baseOffset + batchLength: the bytes batchLength does not count. */
#define MK_FRAME_LOG_OVERHEAD 12
/* What a reader needs to learn a batch's length and magic. */
#define MK_FRAME_PEEK 17
/* The largest batchLength accepted. */
#define MK_FRAME_MAX_PAYLOAD (64u * 1024 * 1024)
/* A batch with no record yet: what a builder holds before its first add. */
#define MK_FRAME_EMPTY_SIZE MK_FRAME_HEADER

/* The meaning of a batch (mk_batch_meta.flags): what the attributes and,
 * for a control batch, its record's key say. */
enum {
	MK_BATCH_TRANSACTIONAL = 1u << 0,
	MK_BATCH_COMMIT_MARKER = 1u << 1,
	MK_BATCH_ABORT_MARKER = 1u << 2,
	MK_BATCH_FLAGS_KNOWN = 0x7,
};

/* The attribute bits (Kafka's DefaultRecordBatch). */
enum {
	MK_ATTR_CODEC_MASK = MK_COMPRESS_ID_MASK,
	MK_ATTR_LOG_APPEND_TIME = 0x08,
	MK_ATTR_TRANSACTIONAL = 0x10,
	MK_ATTR_CONTROL = 0x20,
	MK_ATTR_KNOWN = 0x3f,
};

/* Byte offsets inside the batch of the fields readers and stampers
 * touch. */
#define MK_FRAME_OFF_BASE_OFFSET 0
#define MK_FRAME_OFF_LENGTH 8
#define MK_FRAME_OFF_LEADER_EPOCH 12
#define MK_FRAME_OFF_MAGIC 16
#define MK_FRAME_OFF_CRC 17
#define MK_FRAME_OFF_ATTRIBUTES 21
#define MK_FRAME_OFF_LAST_OFFSET_DELTA 23
#define MK_FRAME_OFF_BASE_TIMESTAMP 27
#define MK_FRAME_OFF_MAX_TIMESTAMP 35
#define MK_FRAME_OFF_PRODUCER_ID 43
#define MK_FRAME_OFF_PRODUCER_EPOCH 51
#define MK_FRAME_OFF_BASE_SEQUENCE 53
#define MK_FRAME_OFF_RECORDS_COUNT 57

/* A slice of bytes; len -1 means null (ptr is then NULL). */
typedef struct {
	const uint8_t *ptr;
	int32_t len;
} mk_bytes;

#define MK_BYTES_NULL ((mk_bytes){ NULL, -1 })
static inline mk_bytes mk_bytes_of(const void *p, size_t n)
{
	return (mk_bytes){ (const uint8_t *)p, (int32_t)n };
}

typedef struct {
	mk_bytes name;   /* never null */
	mk_bytes value;
} mk_header;

/* Batch-level fields, as given to the builder and as decoded. */
typedef struct {
	uint16_t flags;
	int64_t base_offset;
	int32_t leader_epoch;
	int64_t producer_id;      /* -1: none */
	int16_t producer_epoch;   /* -1: none */
	int32_t base_sequence;    /* -1: none */
	uint8_t codec;            /* MK_COMPRESS_*: how the records are kept */
	bool log_append_time;     /* timestamp type LogAppendTime */
	int32_t coordinator_epoch; /* a marker's (its value); 0 otherwise */
} mk_batch_meta;

/* A decoded batch. All pointers point into the buffer given to decode. */
typedef struct {
	mk_batch_meta meta;
	uint16_t attributes;      /* as stored */
	uint32_t crc;             /* the batch's CRC-32C field */
	int32_t last_offset_delta;
	int64_t first_timestamp;
	int64_t max_timestamp;
	int32_t record_count;
	const uint8_t *records;   /* first record, or the compressed
				   * records when meta.codec != NONE */
	size_t records_len;
	size_t frame_len;         /* whole frame, header included */
} mk_batch_view;

static inline int64_t mk_batch_last_offset(const mk_batch_view *b)
{
	return b->meta.base_offset + b->last_offset_delta;
}
static inline int64_t mk_batch_next_offset(const mk_batch_view *b)
{
	return b->meta.base_offset + b->last_offset_delta + 1;
}
static inline bool mk_batch_is_control(const mk_batch_view *b)
{
	return (b->meta.flags &
		(MK_BATCH_COMMIT_MARKER | MK_BATCH_ABORT_MARKER)) != 0;
}

typedef struct {
	int64_t offset;           /* absolute: base_offset + delta */
	int64_t timestamp;
	mk_bytes key;
	mk_bytes value;
	int32_t header_count;
	const uint8_t *headers;   /* raw; walk with mk_header_next */
	size_t headers_len;
} mk_record_view;

/*
 * Decode one batch at the start of buf.
 *   MK_OK: *out is filled, out->frame_len bytes were consumed.
 *   MK_CORRUPT_MESSAGE: the bytes are not a valid batch (*why, if given,
 *     gets a short static reason such as "bad crc").
 * An incomplete batch (buf shorter than the header or the declared length)
 * is also CORRUPT_MESSAGE with reason "truncated frame": at the tail of an
 * active segment that is the torn write recovery repairs. Bytes of the
 * MKF2 format get the reason MK_FRAME_MKF2_REASON, which no recovery
 * repairs. max_payload bounds batchLength (0 = MK_FRAME_MAX_PAYLOAD) and,
 * for a compressed batch, the records once decompressed.
 */
mk_err mk_frame_decode(const uint8_t *buf, size_t len, size_t max_payload,
		       mk_batch_view *out, const char **why);
#define MK_FRAME_MKF2_REASON "MKF2 frame (the format before Kafka's RecordBatch v2)"
/* Do these bytes start a frame of the MKF2 format? */
bool mk_frame_is_mkf2(const uint8_t *buf, size_t len);

/*
 * The records of a compressed batch, decompressed: appended to out, at
 * most max_bytes of them (0 = MK_FRAME_MAX_PAYLOAD; more is a bomb:
 * CORRUPT_MESSAGE, "records too large once decompressed").
 */
mk_err mk_batch_inflate(const mk_batch_view *b, size_t max_bytes,
			mk_strbuf *out, const char **why);

/*
 * Decode the frame header and the batch fields of a frame at the start of
 * buf without walking its records: length bound, whole batch, magic, the
 * CRC when check_crc, attributes, last offset delta, base offset range,
 * epoch, record count — each rejected as mk_frame_decode()
 * would, with the same reason. *out is filled as by mk_frame_decode().
 * Records are NOT checked: iterate them only when the frame is known to be
 * valid (built by mk_builder_finish(), or passed mk_frame_decode() before);
 * otherwise the iterator's assertions are all that stands between a bad
 * frame and a wrong read.
 */
mk_err mk_frame_decode_header(const uint8_t *buf, size_t len,
			      size_t max_payload, bool check_crc,
			      mk_batch_view *out, const char **why);

/*
 * Walk the frames of a buffer of whole frames already validated (what
 * mk_log_read and the fetches built on it return: every frame passed
 * mk_frame_decode once): each is decoded by its header only, without the
 * CRC, and handed out as a batch view. The walk stops at the buffer's
 * end, or before a tail that is not a whole frame (a partial frame, or
 * bytes that do not decode): it.left then counts those bytes, 0 after a
 * clean end. This is every reader's loop over fetched frames.
 */
typedef struct {
	const uint8_t *p;         /* the next frame */
	size_t left;              /* bytes from p to the buffer's end */
	const uint8_t *frame;     /* the frame next() last returned */
} mk_frame_iter;

void mk_frame_iter_init(mk_frame_iter *it, const void *buf, size_t len);
/* Fills *b with the next frame's view (it->frame its bytes) and returns
 * true, or returns false at the end or before a tail that does not
 * decode. */
bool mk_frame_next(mk_frame_iter *it, mk_batch_view *b);

/*
 * Iterate the records of a decoded batch. A compressed batch's records
 * are decompressed by init into the iterator's own buffer (scratch),
 * which mk_record_iter_release frees: call it after iterating a batch that
 * may be compressed (for an uncompressed one it has nothing to do). Views
 * the iterator hands out point into the batch or that buffer.
 */
typedef struct {
	const mk_batch_view *batch;
	const uint8_t *p;
	const uint8_t *end;
	int32_t left;
	mk_strbuf scratch;
} mk_record_iter;

void mk_record_iter_init(mk_record_iter *it, const mk_batch_view *b);
void mk_record_iter_release(mk_record_iter *it);
/* The bytes of the (decompressed) records left to iterate. */
static inline size_t mk_record_iter_bytes(const mk_record_iter *it)
{
	return (size_t)(it->end - it->p);
}
/* Fills *rec and returns true, or returns false after the last record. */
bool mk_record_next(mk_record_iter *it, mk_record_view *rec);

/* Append the bytes n headers take inside a record (what
 * mk_record_view.headers points at): each name and value with its varint
 * length. */
void mk_headers_encode(mk_strbuf *out, const mk_header *h, size_t n);
/* Iterate headers of a record: *pos starts at 0. */
bool mk_header_next(const mk_record_view *rec, size_t *pos, mk_header *h);

/*
 * Building a batch. Records are appended one at a time (mk_builder_add) or
 * a run at a time (mk_builder_add_many); finish completes the header.
 * The frame lives in b->frame.
 */
typedef struct {
	mk_strbuf frame;
	mk_batch_meta meta;
	int32_t count;
	int32_t next_delta;
	int64_t first_timestamp;
	int64_t max_timestamp;
	bool finished;
} mk_batch_builder;

void mk_builder_init(mk_batch_builder *b, const mk_batch_meta *meta);
void mk_builder_release(mk_batch_builder *b);
/* Start over with new meta, keeping the allocation. */
void mk_builder_reset(mk_batch_builder *b, const mk_batch_meta *meta);
void mk_builder_add(mk_batch_builder *b, int64_t timestamp, mk_bytes key,
		    mk_bytes value, const mk_header *headers, size_t nheaders);

/* One record to encode, as a producer is given it: slices that stay the
 * caller's and must stay valid while the record is added. */
typedef struct {
	mk_bytes key;
	mk_bytes value;
	const mk_header *headers;
	size_t nheaders;
} mk_record_in;

/* The bytes of a zigzag varint of v (1-5) and varlong (1-10). */
static inline size_t mk_varint_size(int32_t v)
{
	uint32_t z = ((uint32_t)v << 1) ^ (uint32_t)(v >> 31);
	size_t n = 1;
	while (z >= 0x80) {
		z >>= 7;
		n++;
	}
	return n;
}

/* Bytes a length-prefixed field's content takes (null: none). */
static inline size_t mk_blob_size(mk_bytes b)
{
	assert(b.len >= -1);
	return b.len > 0 ? (size_t)b.len : 0;
}

/* A record's bytes after its length prefix but for the timestamp and
 * offset deltas: attributes, key, value, headers with their lengths. */
static inline size_t mk_record_body_size(const mk_record_in *r)
{
	size_t n = 1 + mk_varint_size(r->key.len) + mk_blob_size(r->key) +
		   mk_varint_size(r->value.len) + mk_blob_size(r->value) +
		   mk_varint_size((int32_t)r->nheaders);
	for (size_t i = 0; i < r->nheaders; i++)
		n += mk_varint_size(r->headers[i].name.len) +
		     mk_blob_size(r->headers[i].name) +
		     mk_varint_size(r->headers[i].value.len) +
		     mk_blob_size(r->headers[i].value);
	return n;
}

/* The bytes of a zigzag varlong of v (1-10). */
static inline size_t mk_varlong_size(int64_t v)
{
	uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
	size_t n = 1;
	while (z >= 0x80) {
		z >>= 7;
		n++;
	}
	return n;
}

/* The exact bytes of a record of body size body (mk_record_body_size) at
 * offset delta delta and timestamp delta ts_delta. */
static inline size_t mk_record_size_at(size_t body, int32_t delta,
				       int64_t ts_delta)
{
	size_t n = body + mk_varlong_size(ts_delta) + mk_varint_size(delta);
	return mk_varint_size((int32_t)n) + n;
}

/*
 * The most bytes one record can take inside a batch, whatever its
 * timestamp and offset deltas (a varlong and a varint of up to 10 and 5
 * bytes): what a producer sizes every record it routes by, as Kafka's
 * estimateSizeInBytesUpperBound. Inline: it runs once per record.
 */
static inline size_t mk_record_size(const mk_record_in *r)
{
	size_t body = mk_record_body_size(r) + 10 + 5;
	return mk_varint_size((int32_t)body) + body;
}

/*
 * Add n records (n >= 1), all with the same timestamp, after one grow of
 * the batch: the same bytes as n calls of mk_builder_add. bytes is the sum
 * of mk_record_size() over them, which a caller has from its size checks:
 * a bound, the bytes written being at most that.
 */
void mk_builder_add_many(mk_batch_builder *b, int64_t timestamp,
			 const mk_record_in *recs, size_t n, size_t bytes);
/* What a record added now with this timestamp gets as its timestamp
 * delta, and the offset delta of the next record. */
static inline int64_t mk_builder_ts_delta(const mk_batch_builder *b,
					  int64_t timestamp)
{
	return b->count
		? (int64_t)((uint64_t)timestamp - (uint64_t)b->first_timestamp)
		: 0;
}
/* Size the batch will have once finished: exact for an uncompressed
 * one, an upper bound for a compressed one (compression that would not
 * shrink the records is skipped). */
size_t mk_builder_size(const mk_batch_builder *b);
/* The size of a batch holding just this record (exact): what a record
 * needs below message.max.bytes to be sendable at all. */
size_t mk_frame_size_of_one(mk_bytes key, mk_bytes value,
			    const mk_header *headers, size_t nheaders);
/* Set the codec the batch's records get at finish (MK_COMPRESS_*). */
void mk_builder_set_codec(mk_batch_builder *b, int codec);
/* Write the batch header's last fields and the CRC-32C, compressing the
 * records first when meta.codec asks it; the batch is b->frame.buf/len.
 * At least one record must have been added. */
void mk_builder_finish(mk_batch_builder *b);

/*
 * Rewrite base offset and leader epoch of an encoded, valid frame in place.
 * This is how the leader assigns offsets to a batch built before it knew
 * them. Both fields lie outside the CRC'd payload, so the CRC is untouched:
 * one that was wrong — the frame damaged after it was built — stays wrong,
 * and the damage is still caught when read.
 */
void mk_frame_assign(uint8_t *frame, size_t frame_len, int64_t base_offset,
		     int32_t leader_epoch);

/*
 * Stamp an encoded batch with an idempotent producer's id, epoch and base
 * sequence, in place. These fields are inside the CRC'd region (as in
 * Kafka), so the CRC-32C is patched for the 14 bytes that change, not
 * recomputed (a shift by the bytes after them, O(log n), no pass over the
 * batch): a CRC that was right stays right and one that was wrong stays
 * wrong. Either this or mk_frame_assign may come first.
 */
void mk_frame_set_producer(uint8_t *frame, size_t frame_len, int64_t pid,
			   int16_t epoch, int32_t base_sequence);

/*
 * Stamp a valid batch as Kafka's leader does under message.timestamp.type
 * = LogAppendTime: the timestamp type bit set and maxTimestamp the append
 * time (records keep their deltas; readers take maxTimestamp for every
 * record). Both are inside the CRC'd region: the CRC-32C is computed
 * again, as DefaultRecordBatch.setMaxTimestamp does.
 */
void mk_frame_set_log_append_time(uint8_t *frame, size_t frame_len,
				  int64_t timestamp);

/*
 * The batch b (decoded) with its records compressed by codec instead
 * (MK_COMPRESS_NONE: uncompressed), appended to out: what a leader stores
 * when the topic's compression.type is not the batch's codec. Everything
 * else as it was; the CRC-32C computed for the new bytes.
 */
void mk_frame_recompress(const mk_batch_view *b, int codec, mk_strbuf *out);

/* CRC-32C (Castagnoli, as Kafka's Crc32C) of n bytes. */
uint32_t mk_crc32c(const void *p, size_t n);

/*
 * Encode a batch from a decoded view (compressed or not) while keeping only
 * the records for which keep(rec, arg) is true (compaction), as Kafka's
 * MemoryRecords.filterTo does for v2: base offset and last offset delta
 * as they were (the batch still covers its offset range; kept records
 * keep their offset deltas, with gaps), producer fields, attributes and
 * partition leader epoch as they were, baseTimestamp the first kept
 * record's and each kept record re-encoded against it. Appends the new batch to out, or nothing when no record is kept.
 */
void mk_frame_filter(const mk_batch_view *b,
		     bool (*keep)(const mk_record_view *rec, void *arg),
		     void *arg, mk_strbuf *out);

/* An encoded control batch: a COMMIT or ABORT marker (meta.flags says
 * which) with meta.coordinator_epoch in its value. */
void mk_frame_marker(mk_strbuf *out, const mk_batch_meta *meta,
		     int64_t timestamp);

#endif
