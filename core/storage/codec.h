/*
 * codec.h — the on-disk batch frame: encoding, validation, record iteration.
 *
 * A frame (version 2) is
 *
 *     magic "MKF2" (4) | payload length u32 | base_offset i64 |
 *     leader_epoch i32 | CRC32(payload) u32 | payload
 *
 * all integers big-endian. The payload is
 *
 *     flags u16 | producer_id i64 | producer_epoch i16 | base_sequence i32 |
 *     last_offset_delta i32 | first_timestamp i64 | max_timestamp i64 |
 *     txn_id_len i16 (-1 = null) | txn_id bytes | record_count i32 |
 *     records...
 *
 * As in Kafka's v2 record batch, the base offset and the leader epoch sit
 * before the CRC'd region: they are what the leader stamps on a batch built
 * before it knew them, and stamping is two stores (mk_frame_assign), with no
 * CRC pass and no CRC fix-up. The CRC covers everything after it. What the
 * CRC no longer covers is checked for sanity instead: the decoder wants a
 * base offset >= 0 (and room for the batch after it) and an epoch >= -1;
 * the log wants offsets increasing along a segment and epochs that never go
 * down (segment.c's scan, log.c's reads).
 *
 * Version 1 frames ("MKF1": base offset and epoch inside the CRC'd payload,
 * after a version byte) are not read: no data directory holding them was
 * ever deployed. The decoder names them ("unsupported frame version 1")
 * rather than calling them garbage.
 *
 * and each record is
 *
 *     offset_delta i32 | timestamp i64 | key_len i32 (-1 = null) | key |
 *     value_len i32 (-1 = null) | value | header_count i32 |
 *     { name_len i16 (>= 0) | name | hvalue_len i32 (-1 = null) | hvalue }*
 *
 * Signed lengths keep null and empty apart. Offset deltas are strictly
 * increasing from 0 within a batch except after compaction, where records
 * may be missing (deltas then only increase); last_offset_delta is kept so
 * that a compacted batch still covers its original offset range.
 *
 * mk_frame_decode() checks everything — magic, length bound, whole frame,
 * CRC, version, flags, every field, counts against the bytes present,
 * trailing bytes — and never reads outside [buf, buf+len). Once a frame has
 * decoded, iterating its records cannot fail. It is the decoder for bytes
 * from outside: replica appends, recovery scans, reads from disk.
 * mk_frame_decode_header() checks all but the records (and, if asked, not
 * the CRC either), for frames already trusted: built by the builder, or
 * fully decoded once on their way in.
 *
 * Control batches (commit/abort markers) are transactional and carry one
 * record with a null key and value and no headers; they occupy an offset
 * but are never shown to readers. A batch holds at least one record.
 */
#ifndef MK_CODEC_H
#define MK_CODEC_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "strbuf.h"

#define MK_FRAME_MAGIC "MKF2"
#define MK_FRAME_MAGIC_V1 "MKF1"   /* recognised only to be refused */
/* magic + length + base offset + leader epoch + crc */
#define MK_FRAME_HEADER 24
#define MK_BATCH_VERSION 2         /* the digit of the magic */
#define MK_BATCH_FIXED 36          /* payload bytes before txn_id_len */
#define MK_FRAME_MAX_PAYLOAD (64u * 1024 * 1024)
/* A frame without a transactional id and with no record yet: what a
 * builder holds before its first add. */
#define MK_FRAME_EMPTY_SIZE (MK_FRAME_HEADER + MK_BATCH_FIXED + 2 + 4)

enum {
	MK_BATCH_TRANSACTIONAL = 1u << 0,
	MK_BATCH_COMMIT_MARKER = 1u << 1,
	MK_BATCH_ABORT_MARKER = 1u << 2,
	MK_BATCH_FLAGS_KNOWN = 0x7,
};

/* Byte offsets inside the frame (from the magic) of fields that get
 * stamped: the first two outside the CRC'd payload, the others inside. */
#define MK_FRAME_OFF_LENGTH 4
#define MK_FRAME_OFF_BASE_OFFSET 8
#define MK_FRAME_OFF_LEADER_EPOCH 16
#define MK_FRAME_OFF_CRC 20
#define MK_FRAME_OFF_PRODUCER_ID (MK_FRAME_HEADER + 2)
#define MK_FRAME_OFF_PRODUCER_EPOCH (MK_FRAME_HEADER + 10)
#define MK_FRAME_OFF_BASE_SEQUENCE (MK_FRAME_HEADER + 12)

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
	mk_bytes txn_id;          /* null unless transactional */
} mk_batch_meta;

/* A decoded frame. All pointers point into the buffer given to decode. */
typedef struct {
	mk_batch_meta meta;
	int32_t last_offset_delta;
	int64_t first_timestamp;
	int64_t max_timestamp;
	int32_t record_count;
	const uint8_t *records;   /* first record */
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
 * Decode one frame at the start of buf.
 *   MK_OK: *out is filled, out->frame_len bytes were consumed.
 *   MK_CORRUPT_MESSAGE: the bytes are not a valid frame (*why, if given,
 *     gets a short static reason such as "bad crc").
 * An incomplete frame (buf shorter than the header or the declared length)
 * is also CORRUPT_MESSAGE with reason "truncated frame": at the tail of an
 * active segment that is the torn write recovery repairs.
 * max_payload bounds the declared payload length (0 = MK_FRAME_MAX_PAYLOAD).
 */
mk_err mk_frame_decode(const uint8_t *buf, size_t len, size_t max_payload,
		       mk_batch_view *out, const char **why);

/*
 * Decode the frame header and the batch fields of a frame at the start of
 * buf without walking its records: magic, length bound, whole frame, the
 * CRC when check_crc, version, flags, marker flags, last offset delta, base
 * offset range, txn id, record count — each rejected as mk_frame_decode()
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

/* Iterate the records of a decoded batch. */
typedef struct {
	const mk_batch_view *batch;
	const uint8_t *p;
	const uint8_t *end;
	int32_t left;
} mk_record_iter;

void mk_record_iter_init(mk_record_iter *it, const mk_batch_view *b);
/* Fills *rec and returns true, or returns false after the last record. */
bool mk_record_next(mk_record_iter *it, mk_record_view *rec);

/* Iterate headers of a record: *pos starts at 0. */
bool mk_header_next(const mk_record_view *rec, size_t *pos, mk_header *h);

/*
 * Building a batch. Records are appended one at a time (mk_builder_add) or
 * a run at a time (mk_builder_add_many); finish writes the frame header.
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

/* Bytes of a record before its key, value and headers (offset delta,
 * timestamp, key length, value length, header count), and of a header
 * before its name and value (name length, value length). */
#define MK_RECORD_FIXED (4 + 8 + 4 + 4 + 4)
#define MK_HEADER_FIXED (2 + 4)

/* Bytes a length-prefixed field's content takes (null: none). */
static inline size_t mk_blob_size(mk_bytes b)
{
	assert(b.len >= -1);
	return b.len > 0 ? (size_t)b.len : 0;
}

/* Bytes one record takes inside a batch (inline: a producer sizes every
 * record it routes). */
static inline size_t mk_record_size(const mk_record_in *r)
{
	size_t n = MK_RECORD_FIXED + mk_blob_size(r->key) +
		   mk_blob_size(r->value);
	for (size_t i = 0; i < r->nheaders; i++)
		n += MK_HEADER_FIXED + mk_blob_size(r->headers[i].name) +
		     mk_blob_size(r->headers[i].value);
	return n;
}

/*
 * Add n records (n >= 1), all with the same timestamp, after one grow of
 * the frame: the same bytes as n calls of mk_builder_add. bytes is the sum
 * of mk_record_size() over them, which a caller has from its size checks
 * (asserted against what was written).
 */
void mk_builder_add_many(mk_batch_builder *b, int64_t timestamp,
			 const mk_record_in *recs, size_t n, size_t bytes);
/* Size the frame will have once finished (exact). */
size_t mk_builder_size(const mk_batch_builder *b);
/* The size of a frame holding just this record (no transactional id):
 * what a record needs below message.max.bytes to be sendable at all
 * (MK_FRAME_EMPTY_SIZE + mk_record_size()). */
size_t mk_frame_size_of_one(mk_bytes key, mk_bytes value,
			    const mk_header *headers, size_t nheaders);
/* Write the frame header and CRC; the frame is b->frame.buf/len.
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
 * Stamp an encoded frame with an idempotent producer's id, epoch and base
 * sequence, in place. These fields are inside the CRC'd payload (as in
 * Kafka), so the CRC is patched for the 14 bytes that change, not
 * recomputed (crc32_combine, O(log n), no pass over the payload): a CRC
 * that was right stays right and one that was wrong stays wrong. Either
 * this or mk_frame_assign may come first.
 */
void mk_frame_set_producer(uint8_t *frame, size_t frame_len, int64_t pid,
			   int16_t epoch, int32_t base_sequence);

/*
 * Encode a batch from a decoded view while keeping only the records for
 * which keep(rec, arg) is true (compaction). Offsets, meta and
 * last_offset_delta are preserved. Appends the new frame to out, or
 * nothing when no record is kept.
 */
void mk_frame_filter(const mk_batch_view *b,
		     bool (*keep)(const mk_record_view *rec, void *arg),
		     void *arg, mk_strbuf *out);

/* An encoded control marker batch (commit or abort). */
void mk_frame_marker(mk_strbuf *out, const mk_batch_meta *meta,
		     int64_t timestamp);

#endif
