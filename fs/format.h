/*
 * format.h — record text formats of docs/filesystem.md section 4, both
 * directions.
 *
 * Writing (append files): the input bytes are split into lines; every
 * complete line becomes one record handed to a sink callback. Plain: the
 * line is the value, the key is the write's key= or null. TSV: fields split
 * on TAB and unescaped as PostgreSQL COPY text (\\ \t \n \r \xHH, a field
 * exactly \N is null): VALUE, or KEY TAB VALUE, then NAME=VALUE headers.
 * Parsing is all-or-nothing per call: the caller parses the whole write
 * first (mk_parse_records collects it), and appends only if it succeeded.
 * Fields are not copied: a record's slices point into the written bytes,
 * except TSV fields that had escapes, which are unescaped into a scratch
 * buffer.
 *
 * Reading (records files): one record becomes one line of text in the
 * chosen format: plain (value and \n; a null value is an empty line), TSV
 * (OFFSET TAB TIMESTAMP TAB KEY TAB VALUE [TAB NAME=VALUE]...), or JSON (one
 * object per line; key_b64/value_b64 where the bytes are not UTF-8).
 */
#ifndef MK_FORMAT_H
#define MK_FORMAT_H

#include <stdbool.h>
#include <stddef.h>

#include "codec.h"
#include "log.h"
#include "visible.h"
#include "error.h"
#include "names.h"
#include "producer.h"
#include "strbuf.h"

#define MK_FORMAT_MAX_HEADERS 64

/*
 * Called once per parsed record. key/value/header bytes are valid only for
 * the duration of the call (of mk_parse_lines: slices of buf stay valid
 * as long as buf does). A non-OK return stops parsing and is returned.
 */
typedef mk_err (*mk_record_sink)(void *arg, mk_bytes key, mk_bytes value,
				 const mk_header *headers, size_t nheaders);

typedef struct {
	mk_format format;        /* MK_FORMAT_PLAIN or MK_FORMAT_TSV */
	bool has_key;            /* key= given: every record gets it */
	mk_bytes key;
	size_t max_line;         /* a longer line is MESSAGE_TOO_LARGE; 0 = no bound */
} mk_parse_opts;

/*
 * Parse the complete lines of buf[0, len). With final, a last line without
 * a newline is a record too; without, it is left unconsumed. *consumed gets
 * the number of bytes parsed (always a line boundary). On error, why says
 * which line (1-based within this buffer) and what was wrong:
 *   INVALID_RECORD      malformed TSV escape, bad header, a TSV key together
 *                       with key=, too many fields or headers
 *   MESSAGE_TOO_LARGE   a line over max_line
 * and whatever the sink returned.
 */
mk_err mk_parse_lines(const mk_parse_opts *opts, const char *buf, size_t len,
		      bool final, mk_record_sink sink, void *arg,
		      size_t *consumed, mk_strbuf *why);

/*
 * The records of one write, as the producer takes them (mk_record_in):
 * slices into the parsed bytes, or into scratch for unescaped TSV fields.
 * They stay valid while the parsed bytes do, until reset or release. A
 * caller parsing several buffers into one mk_parsed reserves room for all
 * their bytes first (mk_parsed_reserve), so that scratch never moves.
 */
typedef struct {
	mk_record_in *recs;
	size_t n, alloc;
	mk_header *hdrs;
	size_t nhdrs, hdrs_alloc;
	mk_strbuf scratch;
} mk_parsed;

#define MK_PARSED_INIT { NULL, 0, 0, NULL, 0, 0, MK_STRBUF_INIT }

/* mk_parse_lines, collecting the records into out (after those there). */
mk_err mk_parse_records(const mk_parse_opts *opts, const char *buf, size_t len,
			bool final, mk_parsed *out, size_t *consumed,
			mk_strbuf *why);
void mk_parsed_reserve(mk_parsed *out, size_t bytes);
void mk_parsed_reset(mk_parsed *out);
void mk_parsed_release(mk_parsed *out);

/* Append one record in the given format (plain, tsv or json), with \n. */
void mk_format_record(mk_format format, const mk_record_view *rec,
		      mk_strbuf *out);

/*
 * The records of one decoded batch (mk_frame_decode'd: a frame the log
 * returned) whose offsets lie in [from, end), at most max of them, each
 * formatted as mk_format_record does, appended to out; a control batch
 * gives nothing. Returns how many; *next gets the offset after the last
 * one formatted (untouched when none). Plain output is copied straight
 * from the records after one grow of out for the whole batch.
 */
size_t mk_format_records(mk_format format, const mk_batch_view *b,
			 int64_t from, int64_t end, size_t max,
			 mk_strbuf *out, int64_t *next);

/*
 * The records a fetch shows its reader (visible.h) from *next on, at most
 * max of them (SIZE_MAX: all), each batch formatted by one
 * mk_format_records call, appended to out; *next moves past them and past
 * what the reader is not shown, up to the visible end. Returns how many.
 */
size_t mk_format_fetched(mk_format format, const mk_fetched *f, size_t max,
			 int64_t *next, mk_strbuf *out);

/*
 * mk_format_records with more: lead, when lead_len > 0, begins every TSV
 * line (leading columns with their TAB) or every JSON object (leading
 * members with their comma, right after the '{'); plain text has none.
 * marks, when given (room for min(max, record_count) entries), gets for
 * each record formatted its offset and out->len just after its line, so
 * that a caller can tell which records a prefix of the text holds.
 */
typedef struct {
	size_t end;              /* out->len after the record's line */
	int64_t offset;          /* the record's offset */
} mk_format_mark;

typedef struct {
	mk_format format;
	const char *lead;
	size_t lead_len;
	mk_format_mark *marks;
} mk_format_lines;

size_t mk_format_records_lines(const mk_format_lines *o, const mk_batch_view *b,
			       int64_t from, int64_t end, size_t max,
			       mk_strbuf *out, int64_t *next);

/* TSV (COPY text) escaping of one field; null gives \N. */
void mk_tsv_escape(mk_bytes field, mk_strbuf *out);
/* Unescape one field; *is_null set for \N. INVALID_RECORD on a bad escape. */
mk_err mk_tsv_unescape(const char *p, size_t len, mk_strbuf *out, bool *is_null);

/*
 * One batch header as a line (docs/filesystem.md 2, batches): plain and
 * tsv give the columns
 *   BASE_OFFSET LAST_OFFSET COUNT BYTES FILE POSITION LEADER_EPOCH
 *   PRODUCER_ID PRODUCER_EPOCH BASE_SEQUENCE TRANSACTIONAL CONTROL
 *   MAX_TIMESTAMP CRC
 * separated by one space (tsv: one TAB); FILE is the segment's file name,
 * TRANSACTIONAL true/false, CONTROL false, commit or abort, CRC 8 hex
 * digits. json gives one object with the same names in lower case.
 */
void mk_format_batch(mk_format format, const mk_batch_info *b, mk_strbuf *out);

#endif
