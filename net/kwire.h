/*
 * kwire.h — the primitive encodings of Kafka's wire protocol, and the
 * request and response headers.
 *
 * Owns: reading a request's bytes (mk_kreader, a bounded cursor over a
 * buffer the caller keeps) and writing a response's (the mk_kw_*
 * functions, appending to an mk_strbuf). It knows Kafka's types
 * (clients' protocol/types and the message generator's rules) and
 * nothing of any API: which API is flexible in which version is
 * kapi.h's table.
 *
 * One pair per type, mk_kr_T reading and mk_kw_T writing, and a
 * `flexible` flag where Kafka encodes the type differently in flexible
 * versions (KIP-482): STRING becomes COMPACT_STRING (unsigned varint
 * length + 1), BYTES COMPACT_BYTES, an array length a compact one, and
 * a struct's tag section exists only when flexible. So an API's decoder
 * and encoder are written once for all its versions, passing
 * mk_kapi_is_flexible(key, version).
 *
 * Invariants of the reader:
 *   - it never reads outside [buf, buf + len) and never asserts on its
 *     input: a read past the end, or of a malformed value (a negative
 *     length that is not the null marker, a varint longer than its type,
 *     a compact string over 32767 bytes, tags out of order), sets `err`
 *     and returns a zero value (0, false, a null view);
 *   - `err` is sticky: once set every read returns zero and consumes
 *     nothing, so a decoder may read a whole struct and test err once at
 *     its end (the values read before the damage are good);
 *   - strings and byte strings are views into the buffer (never copies,
 *     never NUL-terminated): valid while the buffer is. A null value is a
 *     view with ptr NULL; an empty one has ptr non-NULL and len 0;
 *   - an array length is refused when it exceeds the bytes left (no
 *     element of any Kafka array is encoded in zero bytes), so that a
 *     claimed length can size an allocation.
 * The writer's inputs are the daemon's own values: a non-nullable string
 * given as NULL, or a length beyond what the type can say, is a bug and
 * asserts. Allocation failure aborts (xalloc.h).
 *
 * Not thread-safe; a reader or strbuf belongs to one connection.
 */
#ifndef MK_KWIRE_H
#define MK_KWIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

typedef struct {
	const uint8_t *buf;
	size_t len;
	size_t pos;          /* bytes consumed; pos <= len */
	bool err;            /* sticky: a read failed */
} mk_kreader;

/* A string in the buffer: ptr NULL is Kafka's null. Not NUL-terminated. */
typedef struct {
	const char *ptr;
	size_t len;
} mk_kstr;

/* Bytes in the buffer: ptr NULL is Kafka's null. */
typedef struct {
	const uint8_t *ptr;
	size_t len;
} mk_kbytes;

/* Kafka's UUID: 16 bytes, most significant first; all zeros is its
 * ZERO_UUID (no topic id). */
typedef struct {
	uint8_t b[16];
} mk_kuuid;

/* Kafka's limit on a STRING's length, compact or not (Short.MAX_VALUE). */
#define MK_KSTRING_MAX 32767

/* ---- the reader ------------------------------------------------------- */

void mk_kreader_init(mk_kreader *r, const void *buf, size_t len);
/* Bytes not yet read; 0 once err is set. */
size_t mk_kr_left(const mk_kreader *r);
/* Set err (a caller's own check failed). Returns false. */
bool mk_kr_fail(mk_kreader *r);
/* The next n bytes, consumed; NULL (err set) when fewer are left. */
const uint8_t *mk_kr_take(mk_kreader *r, size_t n);
/* A reader over exactly the next n bytes, which r skips; false (err set
 * on r, and sub an empty reader with err) when fewer are left. */
bool mk_kr_sub(mk_kreader *r, size_t n, mk_kreader *sub);

int8_t mk_kr_int8(mk_kreader *r);
int16_t mk_kr_int16(mk_kreader *r);
int32_t mk_kr_int32(mk_kreader *r);
int64_t mk_kr_int64(mk_kreader *r);
uint32_t mk_kr_uint32(mk_kreader *r);
/* Kafka's UNSIGNED_VARINT: 7 bits a byte, least significant first, at
 * most 5 bytes; bits beyond 32 are malformed. */
uint32_t mk_kr_uvarint(mk_kreader *r);
/* VARINT and VARLONG: zigzag over an unsigned varint of 5 / 10 bytes. */
int32_t mk_kr_varint(mk_kreader *r);
int64_t mk_kr_varlong(mk_kreader *r);
/* BOOLEAN: any non-zero byte is true (as Kafka reads it). */
bool mk_kr_bool(mk_kreader *r);
mk_kuuid mk_kr_uuid(mk_kreader *r);
/* STRING (int16 length) or, flexible, COMPACT_STRING; null is malformed. */
mk_kstr mk_kr_string(mk_kreader *r, bool flexible);
/* NULLABLE_STRING (-1 null) or COMPACT_NULLABLE_STRING (0 null). */
mk_kstr mk_kr_nullable_string(mk_kreader *r, bool flexible);
/* BYTES (int32 length) or COMPACT_BYTES; null is malformed. */
mk_kbytes mk_kr_bytes(mk_kreader *r, bool flexible);
/* NULLABLE_BYTES (-1 null) or COMPACT_NULLABLE_BYTES (0 null); also
 * Kafka's RECORDS, which is encoded so. */
mk_kbytes mk_kr_nullable_bytes(mk_kreader *r, bool flexible);
/* An array's element count: int32, or flexible an unsigned varint of
 * N + 1. Null is malformed; so is N over the bytes left. */
int32_t mk_kr_array_len(mk_kreader *r, bool flexible);
/* The same for a nullable array: -1 for null (-1, or compact 0). */
int32_t mk_kr_nullable_array_len(mk_kreader *r, bool flexible);

/*
 * A struct's tag section (KIP-482), read only when flexible: an unsigned
 * varint count, then per field its tag, its size and size bytes, tags
 * strictly increasing. fn (may be NULL) is called with each field's
 * bytes as a reader of their own; it reads the tags it knows and ignores
 * the others, which are skipped, as are any bytes of a field that it
 * leaves unread. A field fn found malformed (err set on `field`) sets
 * err on r.
 */
typedef void mk_ktag_fn(void *arg, uint32_t tag, mk_kreader *field);
void mk_kr_tagged_fields(mk_kreader *r, bool flexible, mk_ktag_fn *fn,
			 void *arg);

/* ---- the writer ------------------------------------------------------- */

void mk_kw_int8(mk_strbuf *w, int8_t v);
void mk_kw_int16(mk_strbuf *w, int16_t v);
void mk_kw_int32(mk_strbuf *w, int32_t v);
void mk_kw_int64(mk_strbuf *w, int64_t v);
void mk_kw_uint32(mk_strbuf *w, uint32_t v);
void mk_kw_uvarint(mk_strbuf *w, uint32_t v);
void mk_kw_varint(mk_strbuf *w, int32_t v);
void mk_kw_varlong(mk_strbuf *w, int64_t v);
void mk_kw_bool(mk_strbuf *w, bool v);
void mk_kw_uuid(mk_strbuf *w, const mk_kuuid *v);
/* A C string as STRING / COMPACT_STRING; s must not be NULL. */
void mk_kw_string(mk_strbuf *w, const char *s, bool flexible);
/* A C string as NULLABLE_STRING / COMPACT_NULLABLE_STRING; NULL: null. */
void mk_kw_nullable_string(mk_strbuf *w, const char *s, bool flexible);
/* A view (a request's string echoed back); ptr NULL writes null, so it
 * serves both the nullable and the non-nullable type. */
void mk_kw_kstr(mk_strbuf *w, mk_kstr s, bool flexible);
/* BYTES / COMPACT_BYTES; p may be NULL only when n is 0. */
void mk_kw_bytes(mk_strbuf *w, const void *p, size_t n, bool flexible);
/* NULLABLE_BYTES / COMPACT_NULLABLE_BYTES; p NULL: null. */
void mk_kw_nullable_bytes(mk_strbuf *w, const void *p, size_t n,
			  bool flexible);
/* An array's count N (the elements follow, written by the caller). */
void mk_kw_array_len(mk_strbuf *w, size_t n, bool flexible);
/* A nullable array's count; n = -1 writes null. */
void mk_kw_nullable_array_len(mk_strbuf *w, int32_t n, bool flexible);
/* An empty tag section, written only when flexible (every flexible
 * struct ends with one). */
void mk_kw_tagged_fields(mk_strbuf *w, bool flexible);
/* One tagged field; a section with fields is mk_kw_uvarint(w, count)
 * followed by count of these in increasing tag order. */
void mk_kw_tag(mk_strbuf *w, uint32_t tag, const void *data, size_t n);

/* A 4-byte big-endian length prefix (a response's size, a RECORDS
 * field's length): _begin appends a placeholder and returns where it
 * is; _end stores the bytes written after it. */
size_t mk_kw_size_begin(mk_strbuf *w);
void mk_kw_size_end(mk_strbuf *w, size_t at);

/* ---- headers ----------------------------------------------------------- */

/*
 * Kafka's RequestHeader: v0 api_key, api_version, correlation_id; v1
 * adds client_id (a NULLABLE_STRING, never compact: a broker of any age
 * must read the ApiVersions header of a newer client); v2 adds a tag
 * section. Which version a request uses is its API's business
 * (mk_kapi_request_header_version).
 */
typedef struct {
	int16_t api_key;
	int16_t api_version;
	int32_t correlation_id;
	mk_kstr client_id;   /* null in a v0 header or when sent null */
	int version;         /* the header version parsed: 0, 1 or 2 */
} mk_kreq_header;

#define MK_KREQ_HEADER_MAX_VERSION 2
#define MK_KRESP_HEADER_MAX_VERSION 1

/*
 * Parse a request header of the given version at r's position, leaving r
 * at the body. False (err set) when it is truncated or malformed, or the
 * version is not 0-2; the fields read before the damage keep their
 * values (the correlation id of a header whose client id is cut short is
 * still there for an error response), the others are zero.
 */
bool mk_kr_request_header(mk_kreader *r, int version, mk_kreq_header *h);
/* The header h in the given version (0-2); a client's side, for tests. */
void mk_kw_request_header(mk_strbuf *w, int version, const mk_kreq_header *h);

/* Kafka's ResponseHeader: v0 correlation_id; v1 adds a tag section. */
void mk_kw_response_header(mk_strbuf *w, int version, int32_t correlation_id);
/* The correlation id of a response header (a client's side, for tests). */
int32_t mk_kr_response_header(mk_kreader *r, int version);

#endif
