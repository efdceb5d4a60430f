/*
 * names.h — the one parser for file names that carry parameters
 * (docs/filesystem.md 3).
 *
 *     records[@POS][:FLAG]...     POS = N | earliest | latest | -N | ts=MS
 *     append[:FLAG]...
 *     poll[:FLAG]...              the flags of records, no POS
 *
 * A name parses completely or not at all: an unknown flag, a flag given
 * twice, a flag that belongs to the other kind of file, or a malformed value
 * is MK_INVALID_REQUEST, and `why` (if given) says which part. Parsing does
 * not know topics or offsets: resolving POS against a log is the caller's.
 *
 * Values cannot contain ':' or '/' (the separator and the path separator);
 * key= takes any other bytes, including the empty key ("key=").
 */
#ifndef MK_NAMES_H
#define MK_NAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "strbuf.h"

#define MK_NAME_VALUE_MAX 255

typedef enum {
	MK_FORMAT_PLAIN = 0,
	MK_FORMAT_TSV,
	MK_FORMAT_JSON,
} mk_format;

typedef enum {
	MK_POS_EARLIEST = 0,
	MK_POS_LATEST,
	MK_POS_OFFSET,    /* value = N >= 0 */
	MK_POS_BACK,      /* value = N >= 0: N records before the visible end */
	MK_POS_TIME,      /* value = MS: first record with timestamp >= MS */
} mk_pos_kind;

typedef struct {
	mk_pos_kind kind;
	int64_t value;
} mk_pos;

typedef struct {
	mk_pos pos;
	mk_format format;     /* plain, tsv or json */
	bool committed;       /* read_committed: stop at the LSO */
	bool follow;          /* block at the end instead of EOF */
	int64_t max;          /* at most this many records; -1 = no limit */
} mk_read_params;

enum { MK_ACKS_DEFAULT = -2, MK_ACKS_ALL = -1 };

typedef struct {
	int acks;             /* MK_ACKS_DEFAULT, 0, 1 or MK_ACKS_ALL */
	mk_format format;     /* plain or tsv */
	bool has_key;
	char key[MK_NAME_VALUE_MAX + 1];
	int key_len;
	char producer[MK_NAME_VALUE_MAX + 1];   /* "" = not idempotent */
	int64_t seq;          /* -1 = next sequence */
	char txn[MK_NAME_VALUE_MAX + 1];        /* "" = not transactional */
} mk_append_params;

/*
 * Which base a name has: "records" / "records@..." / "records:..." is
 * MK_NAME_RECORDS, "append" / "append:..." is MK_NAME_APPEND, anything else
 * MK_NAME_OTHER (the caller looks it up as a plain name). "batches[@...]"
 * is MK_NAME_BATCHES.
 */
typedef enum { MK_NAME_OTHER = 0, MK_NAME_RECORDS, MK_NAME_APPEND,
	       MK_NAME_POLL, MK_NAME_BATCHES } mk_name_base;
mk_name_base mk_name_classify(const char *name);

/* True when the name carries parameters (anything after the base name). */
bool mk_name_has_params(const char *name);

mk_err mk_name_parse_records(const char *name, mk_read_params *out,
			     mk_strbuf *why);
/* poll[:FLAG]...: a group member's poll takes the flags of records. */
mk_err mk_name_parse_poll(const char *name, mk_read_params *out,
			  mk_strbuf *why);
mk_err mk_name_parse_append(const char *name, mk_append_params *out,
			    mk_strbuf *why);

/*
 * batches[@POS][:FLAG]...: the grammar of records names; the flags json,
 * tsv, follow and max=N (N batches). committed is refused: the batch list
 * shows the log as stored.
 */
mk_err mk_name_parse_batches(const char *name, mk_read_params *out,
			     mk_strbuf *why);

/*
 * A view of a file: "BASE" then view (":txt", the decoded index; ":dump",
 * kafka-dump-log's text). True, with BASE copied to base (cap bytes),
 * when name is that; false otherwise.
 */
bool mk_name_view(const char *name, const char *view, char *base, size_t cap);
static inline bool mk_name_txt_view(const char *name, char *base, size_t cap)
{
	return mk_name_view(name, ":txt", base, cap);
}

#endif
