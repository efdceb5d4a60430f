/*
 * dump.c — segment files in kafka-dump-log's words (dump.h).
 */
#include "dump.h"

#include <inttypes.h>
#include <string.h>

#include "codec.h"
#include "parse.h"

mk_dump_kind mk_dump_kind_of(const char *name)
{
	static const struct {
		const char *suffix;
		mk_dump_kind kind;
	} kinds[] = {
		{ ".log", MK_DUMP_LOG },
		{ ".index", MK_DUMP_INDEX },
		{ ".timeindex", MK_DUMP_TIMEINDEX },
		{ ".txnindex", MK_DUMP_TXNINDEX },
	};
	size_t n = strlen(name);
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		size_t k = strlen(kinds[i].suffix);
		if (n == 20 + k && !strcmp(name + 20, kinds[i].suffix))
			return kinds[i].kind;
	}
	return MK_DUMP_UNKNOWN;
}

/* Kafka's DefaultRecordBatch.incrementSequence: sequences wrap at
 * INT32_MAX to 0. */
static int32_t add_sequence(int32_t seq, int32_t inc)
{
	if (seq < 0)
		return -1;
	if (seq > INT32_MAX - inc)
		return inc - (INT32_MAX - seq) - 1;
	return seq + inc;
}

static const char *ts_type(const mk_batch_view *b)
{
	return b->meta.log_append_time ? "LogAppendTime" : "CreateTime";
}

static void add_bytes(mk_strbuf *out, mk_bytes b)
{
	if (b.len > 0)
		mk_strbuf_add(out, b.ptr, (size_t)b.len);
}

static void dump_record(const mk_batch_view *b, const mk_record_view *r,
			mk_strbuf *out)
{
	mk_strbuf_addf(out, "| offset: %" PRId64 " %s: %" PRId64
		       " keySize: %" PRId32 " valueSize: %" PRId32
		       " sequence: %" PRId32 " headerKeys: [",
		       r->offset, ts_type(b), r->timestamp, r->key.len,
		       r->value.len,
		       add_sequence(b->meta.base_sequence,
				    (int32_t)(r->offset - b->meta.base_offset)));
	size_t pos = 0;
	mk_header h;
	for (int i = 0; mk_header_next(r, &pos, &h); i++) {
		if (i)
			mk_strbuf_addch(out, ',');
		add_bytes(out, h.name);
	}
	mk_strbuf_addch(out, ']');
	if (mk_batch_is_control(b)) {
		mk_strbuf_addf(out, " endTxnMarker: %s coordinatorEpoch: %" PRId32,
			       b->meta.flags & MK_BATCH_COMMIT_MARKER ? "COMMIT"
								      : "ABORT",
			       b->meta.coordinator_epoch);
	} else {
		if (r->key.len >= 0) {
			mk_strbuf_addstr(out, " key: ");
			add_bytes(out, r->key);
		}
		if (r->value.len >= 0) {
			mk_strbuf_addstr(out, " payload: ");
			add_bytes(out, r->value);
		}
	}
	mk_strbuf_addch(out, '\n');
}

static void dump_batch_line(const mk_batch_view *b, size_t pos, bool valid,
			    mk_strbuf *out)
{
	mk_strbuf_addf(out, "baseOffset: %" PRId64 " lastOffset: %" PRId64
		       " count: %" PRId32 " baseSequence: %" PRId32
		       " lastSequence: %" PRId32 " producerId: %" PRId64
		       " producerEpoch: %d partitionLeaderEpoch: %" PRId32
		       " isTransactional: %s isControl: %s deleteHorizonMs: OptionalLong.empty"
		       " position: %zu %s: %" PRId64 " size: %zu magic: 2"
		       " compresscodec: %s crc: %" PRIu32 " isvalid: %s\n",
		       b->meta.base_offset, mk_batch_last_offset(b),
		       b->record_count, b->meta.base_sequence,
		       add_sequence(b->meta.base_sequence, b->last_offset_delta),
		       b->meta.producer_id, b->meta.producer_epoch,
		       b->meta.leader_epoch,
		       b->meta.flags & MK_BATCH_TRANSACTIONAL ? "true" : "false",
		       mk_batch_is_control(b) ? "true" : "false", pos,
		       ts_type(b), b->max_timestamp, b->frame_len,
		       mk_compress_name(b->meta.codec), b->crc,
		       valid ? "true" : "false");
}

static void dump_log(const char *name, const uint8_t *buf, size_t len,
		     mk_strbuf *out)
{
	size_t pos = 0;
	while (pos < len) {
		/* A batch whose header holds but whose CRC or records do
		 * not is printed as Kafka's tool prints it: isvalid false. */
		mk_batch_view b;
		bool valid = mk_frame_decode(buf + pos, len - pos, 0, &b,
					     NULL) == MK_OK;
		if (!valid && mk_frame_decode_header(buf + pos, len - pos, 0,
						     false, &b, NULL))
			break;
		dump_batch_line(&b, pos, valid, out);
		if (valid) {
			mk_record_iter it;
			mk_record_view r;
			mk_record_iter_init(&it, &b);
			while (mk_record_next(&it, &r))
				dump_record(&b, &r, out);
			mk_record_iter_release(&it);
		}
		pos += b.frame_len;
	}
	if (pos < len)
		mk_strbuf_addf(out, "Found %zu invalid bytes at the end of %s\n",
			       len - pos, name);
}

/* Fixed-width entries: an index's, a time index's, a txn index's. */
static void dump_entries(mk_dump_kind kind, int64_t base, const uint8_t *buf,
			 size_t len, mk_strbuf *out)
{
	size_t w = kind == MK_DUMP_INDEX ? 8 : kind == MK_DUMP_TIMEINDEX ? 12 : 34;
	for (size_t at = 0; at + w <= len; at += w) {
		const uint8_t *e = buf + at;
		if (kind == MK_DUMP_INDEX) {
			int64_t off = base + mk_load_be32(e);
			/* As Kafka's: a zero entry past the first ends a
			 * (preallocated) index. */
			if (off == base && at > 0)
				break;
			mk_strbuf_addf(out, "offset: %" PRId64 " position: %" PRIu32 "\n",
				       off, mk_load_be32(e + 4));
		} else if (kind == MK_DUMP_TIMEINDEX) {
			int64_t off = base + mk_load_be32(e + 8);
			if (off == base && at > 0)
				break;
			mk_strbuf_addf(out, "timestamp: %" PRId64 " offset: %" PRId64 "\n",
				       (int64_t)mk_load_be64(e), off);
		} else {
			mk_strbuf_addf(out, "version: %d producerId: %" PRId64
				       " firstOffset: %" PRId64 " lastOffset: %" PRId64
				       " lastStableOffset: %" PRId64 "\n",
				       (int16_t)mk_load_be16(e),
				       (int64_t)mk_load_be64(e + 2),
				       (int64_t)mk_load_be64(e + 10),
				       (int64_t)mk_load_be64(e + 18),
				       (int64_t)mk_load_be64(e + 26));
		}
	}
}

mk_err mk_dump(const char *name, const uint8_t *buf, size_t len,
	       mk_strbuf *out, mk_strbuf *why)
{
	mk_dump_kind kind = mk_dump_kind_of(name);
	char digits[21];
	int64_t base;
	if (kind != MK_DUMP_UNKNOWN) {
		memcpy(digits, name, 20);
		digits[20] = '\0';
	}
	if (kind == MK_DUMP_UNKNOWN ||
	    !mk_parse_range(digits, 0, INT64_MAX, &base))
		return mk_error(why, MK_INVALID_REQUEST, "%s is no segment file (N.log, N.index, N.timeindex, N.txnindex)",
				name);
	mk_strbuf_addf(out, "Dumping %s\n", name);
	if (kind == MK_DUMP_LOG) {
		mk_strbuf_addf(out, "Log starting offset: %" PRId64 "\n", base);
		dump_log(name, buf, len, out);
	} else {
		dump_entries(kind, base, buf, len, out);
	}
	return MK_OK;
}
