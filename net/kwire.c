#include "kwire.h"

#include <assert.h>
#include <string.h>

/* What an empty view and an empty reader point at: never NULL, so that
 * ptr NULL means Kafka's null alone (and no pointer arithmetic is done
 * on NULL). */
static const uint8_t empty[1];

/* ---- the reader ------------------------------------------------------- */

void mk_kreader_init(mk_kreader *r, const void *buf, size_t len)
{
	r->buf = buf ? buf : empty;
	r->len = buf ? len : 0;
	r->pos = 0;
	r->err = false;
}

size_t mk_kr_left(const mk_kreader *r)
{
	return r->err ? 0 : r->len - r->pos;
}

bool mk_kr_fail(mk_kreader *r)
{
	r->err = true;
	return false;
}

const uint8_t *mk_kr_take(mk_kreader *r, size_t n)
{
	if (r->err || n > r->len - r->pos) {
		r->err = true;
		return NULL;
	}
	const uint8_t *p = r->buf + r->pos;
	r->pos += n;
	return p;
}

bool mk_kr_sub(mk_kreader *r, size_t n, mk_kreader *sub)
{
	const uint8_t *p = mk_kr_take(r, n);
	mk_kreader_init(sub, p, p ? n : 0);
	sub->err = !p;
	return p != NULL;
}

int8_t mk_kr_int8(mk_kreader *r)
{
	const uint8_t *p = mk_kr_take(r, 1);
	return p ? (int8_t)p[0] : 0;
}

int16_t mk_kr_int16(mk_kreader *r)
{
	const uint8_t *p = mk_kr_take(r, 2);
	return p ? (int16_t)mk_load_be16(p) : 0;
}

int32_t mk_kr_int32(mk_kreader *r)
{
	const uint8_t *p = mk_kr_take(r, 4);
	return p ? (int32_t)mk_load_be32(p) : 0;
}

int64_t mk_kr_int64(mk_kreader *r)
{
	const uint8_t *p = mk_kr_take(r, 8);
	return p ? (int64_t)mk_load_be64(p) : 0;
}

uint32_t mk_kr_uint32(mk_kreader *r)
{
	const uint8_t *p = mk_kr_take(r, 4);
	return p ? mk_load_be32(p) : 0;
}

/* An unsigned varint of at most `bits` bits (32 or 64). The last byte
 * that can hold any of them (the 5th, the 10th) must have no bits beyond
 * and no continuation: Kafka's clients never write more, and a longer
 * run is refused rather than read on. */
static uint64_t uvar(mk_kreader *r, unsigned bits)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < bits; shift += 7) {
		const uint8_t *p = mk_kr_take(r, 1);
		if (!p)
			return 0;
		uint64_t b = p[0];
		if (bits - shift < 7 && b >> (bits - shift)) {
			r->err = true;
			return 0;
		}
		v |= (b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	return 0;   /* not reached: the last byte's continuation bit is
		     * beyond its type and refused above */
}

uint32_t mk_kr_uvarint(mk_kreader *r)
{
	return (uint32_t)uvar(r, 32);
}

int32_t mk_kr_varint(mk_kreader *r)
{
	uint32_t u = (uint32_t)uvar(r, 32);
	return (int32_t)((u >> 1) ^ (0u - (u & 1)));
}

int64_t mk_kr_varlong(mk_kreader *r)
{
	uint64_t u = uvar(r, 64);
	return (int64_t)((u >> 1) ^ (0 - (u & 1)));
}

bool mk_kr_bool(mk_kreader *r)
{
	const uint8_t *p = mk_kr_take(r, 1);
	return p && p[0];
}

mk_kuuid mk_kr_uuid(mk_kreader *r)
{
	mk_kuuid u;
	const uint8_t *p = mk_kr_take(r, sizeof u.b);
	if (p)
		memcpy(u.b, p, sizeof u.b);
	else
		memset(u.b, 0, sizeof u.b);
	return u;
}

/*
 * The length of a string, bytes or array, or -1 for null: int16 or int32
 * (`wide`) with -1 as null, or flexible an unsigned varint of length + 1
 * with 0 as null. Anything below -1 is malformed; so is a compact length
 * over INT32_MAX. Sets err and returns -2 on damage.
 */
static int64_t length(mk_kreader *r, bool flexible, bool wide)
{
	int64_t n;
	if (flexible)
		n = (int64_t)mk_kr_uvarint(r) - 1;
	else
		n = wide ? mk_kr_int32(r) : mk_kr_int16(r);
	if (r->err || n < -1 || n > INT32_MAX) {
		r->err = true;
		return -2;
	}
	return n;
}

/*
 * The bytes of a string (`wide` false: STRING's int16 length, and at
 * most MK_KSTRING_MAX bytes even when compact) or of a byte string
 * (wide: int32): a view of them, and their number in *n. NULL for null
 * (when nullable; else it is damage) and on damage, with *n 0.
 */
static const uint8_t *counted(mk_kreader *r, bool flexible, bool wide,
			      bool nullable, size_t *n)
{
	*n = 0;
	int64_t len = length(r, flexible, wide);
	if ((len == -1 && !nullable) || (!wide && len > MK_KSTRING_MAX))
		r->err = true;
	if (len < 0 || r->err)
		return NULL;
	const uint8_t *p = mk_kr_take(r, (size_t)len);
	if (p)
		*n = (size_t)len;
	return p;
}

mk_kstr mk_kr_string(mk_kreader *r, bool flexible)
{
	mk_kstr s;
	s.ptr = (const char *)counted(r, flexible, false, false, &s.len);
	return s;
}

mk_kstr mk_kr_nullable_string(mk_kreader *r, bool flexible)
{
	mk_kstr s;
	s.ptr = (const char *)counted(r, flexible, false, true, &s.len);
	return s;
}

mk_kbytes mk_kr_bytes(mk_kreader *r, bool flexible)
{
	mk_kbytes b;
	b.ptr = counted(r, flexible, true, false, &b.len);
	return b;
}

mk_kbytes mk_kr_nullable_bytes(mk_kreader *r, bool flexible)
{
	mk_kbytes b;
	b.ptr = counted(r, flexible, true, true, &b.len);
	return b;
}

static int32_t array_len(mk_kreader *r, bool flexible, bool nullable)
{
	int64_t n = length(r, flexible, true);
	if (n == -1 && !nullable)
		r->err = true;
	if (n >= 0 && (uint64_t)n > mk_kr_left(r))
		r->err = true;
	if (r->err)
		return 0;
	return (int32_t)n;
}

int32_t mk_kr_array_len(mk_kreader *r, bool flexible)
{
	return array_len(r, flexible, false);
}

int32_t mk_kr_nullable_array_len(mk_kreader *r, bool flexible)
{
	return array_len(r, flexible, true);
}

void mk_kr_tagged_fields(mk_kreader *r, bool flexible, mk_ktag_fn *fn,
			 void *arg)
{
	if (!flexible || r->err)
		return;
	uint32_t count = mk_kr_uvarint(r);
	/* Each field is at least two bytes: its tag and its size. */
	if (count > mk_kr_left(r) / 2) {
		r->err = true;
		return;
	}
	int64_t prev = -1;
	for (uint32_t i = 0; i < count && !r->err; i++) {
		uint32_t tag = mk_kr_uvarint(r);
		uint32_t size = mk_kr_uvarint(r);
		if (r->err)
			return;
		if ((int64_t)tag <= prev) {
			r->err = true;
			return;
		}
		prev = tag;
		mk_kreader field;
		if (!mk_kr_sub(r, size, &field))
			return;
		if (fn) {
			fn(arg, tag, &field);
			if (field.err)
				r->err = true;
		}
	}
}

/* ---- the writer ------------------------------------------------------- */

void mk_kw_int8(mk_strbuf *w, int8_t v)
{
	mk_strbuf_addch(w, (uint8_t)v);
}

void mk_kw_int16(mk_strbuf *w, int16_t v)
{
	mk_strbuf_add_be16(w, (uint16_t)v);
}

void mk_kw_int32(mk_strbuf *w, int32_t v)
{
	mk_strbuf_add_be32(w, (uint32_t)v);
}

void mk_kw_int64(mk_strbuf *w, int64_t v)
{
	mk_strbuf_add_be64(w, (uint64_t)v);
}

void mk_kw_uint32(mk_strbuf *w, uint32_t v)
{
	mk_strbuf_add_be32(w, v);
}

static void put_uvar(mk_strbuf *w, uint64_t v)
{
	uint8_t b[10];
	size_t n = 0;
	while (v >= 0x80) {
		b[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b[n++] = (uint8_t)v;
	mk_strbuf_add(w, b, n);
}

void mk_kw_uvarint(mk_strbuf *w, uint32_t v)
{
	put_uvar(w, v);
}

void mk_kw_varint(mk_strbuf *w, int32_t v)
{
	uint32_t u = (uint32_t)v;
	put_uvar(w, (u << 1) ^ (0u - (u >> 31)));
}

void mk_kw_varlong(mk_strbuf *w, int64_t v)
{
	uint64_t u = (uint64_t)v;
	put_uvar(w, (u << 1) ^ (0 - (u >> 63)));
}

void mk_kw_bool(mk_strbuf *w, bool v)
{
	mk_strbuf_addch(w, v ? 1 : 0);
}

void mk_kw_uuid(mk_strbuf *w, const mk_kuuid *v)
{
	mk_strbuf_add(w, v->b, sizeof v->b);
}

/* A length (or -1, null) as int16/int32 or as a compact length + 1. */
static void put_length(mk_strbuf *w, int64_t n, bool flexible, bool wide)
{
	assert(n >= -1 && n <= (wide ? INT32_MAX : MK_KSTRING_MAX));
	if (flexible)
		put_uvar(w, (uint64_t)(n + 1));
	else if (wide)
		mk_kw_int32(w, (int32_t)n);
	else
		mk_kw_int16(w, (int16_t)n);
}

static void put_string(mk_strbuf *w, const char *s, size_t n, bool flexible)
{
	if (!s) {
		put_length(w, -1, flexible, false);
		return;
	}
	assert(n <= MK_KSTRING_MAX);
	put_length(w, (int64_t)n, flexible, false);
	mk_strbuf_add(w, s, n);
}

void mk_kw_string(mk_strbuf *w, const char *s, bool flexible)
{
	assert(s);
	put_string(w, s, strlen(s), flexible);
}

void mk_kw_nullable_string(mk_strbuf *w, const char *s, bool flexible)
{
	put_string(w, s, s ? strlen(s) : 0, flexible);
}

void mk_kw_kstr(mk_strbuf *w, mk_kstr s, bool flexible)
{
	put_string(w, s.ptr, s.len, flexible);
}

void mk_kw_bytes(mk_strbuf *w, const void *p, size_t n, bool flexible)
{
	assert(p || !n);
	assert(n <= INT32_MAX);
	put_length(w, (int64_t)n, flexible, true);
	mk_strbuf_add(w, p, n);
}

void mk_kw_nullable_bytes(mk_strbuf *w, const void *p, size_t n,
			  bool flexible)
{
	if (!p)
		put_length(w, -1, flexible, true);
	else
		mk_kw_bytes(w, p, n, flexible);
}

void mk_kw_array_len(mk_strbuf *w, size_t n, bool flexible)
{
	assert(n <= INT32_MAX);
	put_length(w, (int64_t)n, flexible, true);
}

void mk_kw_nullable_array_len(mk_strbuf *w, int32_t n, bool flexible)
{
	put_length(w, n, flexible, true);
}

void mk_kw_tagged_fields(mk_strbuf *w, bool flexible)
{
	if (flexible)
		mk_strbuf_addch(w, 0);
}

void mk_kw_tag(mk_strbuf *w, uint32_t tag, const void *data, size_t n)
{
	assert(n <= UINT32_MAX);
	put_uvar(w, tag);
	put_uvar(w, n);
	mk_strbuf_add(w, data, n);
}

size_t mk_kw_size_begin(mk_strbuf *w)
{
	size_t at = w->len;
	mk_strbuf_add_be32(w, 0);
	return at;
}

void mk_kw_size_end(mk_strbuf *w, size_t at)
{
	assert(at + 4 <= w->len);
	size_t n = w->len - at - 4;
	assert(n <= INT32_MAX);
	mk_store_be32((uint8_t *)w->buf + at, (uint32_t)n);
}

/* ---- headers ----------------------------------------------------------- */

bool mk_kr_request_header(mk_kreader *r, int version, mk_kreq_header *h)
{
	memset(h, 0, sizeof *h);
	h->version = version;
	if (version < 0 || version > MK_KREQ_HEADER_MAX_VERSION)
		return mk_kr_fail(r);
	h->api_key = mk_kr_int16(r);
	h->api_version = mk_kr_int16(r);
	h->correlation_id = mk_kr_int32(r);
	if (version >= 1)
		h->client_id = mk_kr_nullable_string(r, false);
	mk_kr_tagged_fields(r, version >= 2, NULL, NULL);
	return !r->err;
}

void mk_kw_request_header(mk_strbuf *w, int version, const mk_kreq_header *h)
{
	assert(version >= 0 && version <= MK_KREQ_HEADER_MAX_VERSION);
	mk_kw_int16(w, h->api_key);
	mk_kw_int16(w, h->api_version);
	mk_kw_int32(w, h->correlation_id);
	if (version >= 1)
		mk_kw_kstr(w, h->client_id, false);
	mk_kw_tagged_fields(w, version >= 2);
}

void mk_kw_response_header(mk_strbuf *w, int version, int32_t correlation_id)
{
	assert(version >= 0 && version <= MK_KRESP_HEADER_MAX_VERSION);
	mk_kw_int32(w, correlation_id);
	mk_kw_tagged_fields(w, version >= 1);
}

int32_t mk_kr_response_header(mk_kreader *r, int version)
{
	if (version < 0 || version > MK_KRESP_HEADER_MAX_VERSION) {
		mk_kr_fail(r);
		return 0;
	}
	int32_t id = mk_kr_int32(r);
	mk_kr_tagged_fields(r, version >= 1, NULL, NULL);
	return r->err ? 0 : id;
}
