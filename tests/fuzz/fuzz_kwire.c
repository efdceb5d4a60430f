/*
 * fuzz_kwire.c — libFuzzer target for the Kafka protocol's bottom layer:
 * the request header parser (net/kapi.c, mk_kapi_read_request_header,
 * and net/kwire.c's mk_kr_request_header in each version) and every
 * reader type of net/kwire.h.
 *
 * The headers: the input is parsed as a request header in the version
 * its api key and version call for, and in each version 0-3 (3 must be
 * refused); an accepted header must lie within the input and, written
 * back in its version, must read back the same (byte for byte up to its
 * tag section, which is written empty).
 *
 * The readers: every type, plain and flexible, reads the start of the
 * input; then the input is read as a program, a byte naming the next
 * type (its low bits) and whether it is flexible (its high bit), until a
 * read fails. After every read: the position is within the input, views
 * point inside it, an array length is no more than the bytes left, a
 * failed read returned zero and left the reader failed for good, and a
 * value read, written again with mk_kw_*, reads back the same.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kapi.h"
#include "kwire.h"

#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "fuzz_kwire: check failed: %s (line %d)\n", \
				#cond, __LINE__);                          \
			abort();                                           \
		}                                                          \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- headers ---------------------------------------------------------- */

static bool inside(const mk_kreader *r, const void *p, size_t n)
{
	const uint8_t *b = p;
	return b >= r->buf && n <= r->len && b - r->buf <= (ptrdiff_t)(r->len - n);
}

static bool same_kstr(mk_kstr a, mk_kstr b)
{
	if (!a.ptr || !b.ptr)
		return !a.ptr && !b.ptr;
	return a.len == b.len && !memcmp(a.ptr, b.ptr, a.len);
}

static void check_header(const mk_kreader *r, bool ok, int version,
			 const mk_kreq_header *h)
{
	CHECK(r->pos <= r->len);
	CHECK(ok == !r->err);
	CHECK(h->version == version);
	if (h->client_id.ptr)
		CHECK(inside(r, h->client_id.ptr, h->client_id.len));
	if (!ok)
		return;
	CHECK(version >= 0 && version <= MK_KREQ_HEADER_MAX_VERSION);
	if (version == 0)
		CHECK(h->client_id.ptr == NULL);
	mk_strbuf w = MK_STRBUF_INIT;
	mk_kw_request_header(&w, version, h);
	/* Up to the tag section the encoding is the only one. */
	size_t fixed = w.len - (version >= 2);
	CHECK(fixed <= r->pos && !memcmp(w.buf, r->buf, fixed));
	if (version < 2)
		CHECK(w.len == r->pos);
	mk_kreader back;
	mk_kreq_header g;
	mk_kreader_init(&back, w.buf, w.len);
	CHECK(mk_kr_request_header(&back, version, &g));
	CHECK(back.pos == w.len);
	CHECK(g.api_key == h->api_key && g.api_version == h->api_version &&
	      g.correlation_id == h->correlation_id &&
	      same_kstr(g.client_id, h->client_id));
	mk_strbuf_release(&w);
}

static void fuzz_headers(const uint8_t *data, size_t size)
{
	mk_kreader r;
	mk_kreq_header h;
	mk_kreader_init(&r, data, size);
	bool ok = mk_kapi_read_request_header(&r, &h);
	/* A header cut before its version reads the version as 0, as the
	 * peek did. */
	CHECK(h.version == mk_kapi_request_header_version(h.api_key, h.api_version));
	CHECK(size >= 8 || !ok);
	check_header(&r, ok, h.version, &h);
	for (int v = 0; v <= MK_KREQ_HEADER_MAX_VERSION + 1; v++) {
		mk_kreader_init(&r, data, size);
		ok = mk_kr_request_header(&r, v, &h);
		CHECK(v <= MK_KREQ_HEADER_MAX_VERSION || !ok);
		check_header(&r, ok, v, &h);
	}
	for (int v = 0; v <= MK_KRESP_HEADER_MAX_VERSION; v++) {
		mk_kreader_init(&r, data, size);
		int32_t id = mk_kr_response_header(&r, v);
		CHECK(r.pos <= size && (!r.err || id == 0));
	}
}

/* ---- readers ---------------------------------------------------------- */

enum {
	K_INT8, K_INT16, K_INT32, K_INT64, K_UINT32, K_UVARINT, K_VARINT,
	K_VARLONG, K_BOOL, K_UUID, K_STRING, K_NSTRING, K_BYTES, K_NBYTES,
	K_ARRAY, K_NARRAY, K_TAGS, K_COUNT
};

#define MAX_TAGS 64

/* One value of any type, as read. */
typedef struct {
	int64_t i;
	mk_kuuid uuid;
	mk_kstr s;
	mk_kbytes b;
	size_t ntags;            /* tags seen (those past MAX_TAGS not kept) */
	uint32_t tags[MAX_TAGS];
	mk_kbytes fields[MAX_TAGS];
} value;

static void keep_tag(void *arg, uint32_t tag, mk_kreader *field)
{
	value *v = arg;
	if (v->ntags < MAX_TAGS) {
		v->tags[v->ntags] = tag;
		v->fields[v->ntags].len = mk_kr_left(field);
		v->fields[v->ntags].ptr = mk_kr_take(field, mk_kr_left(field));
	}
	v->ntags++;
}

static void read_one(mk_kreader *r, int kind, bool flex, value *v)
{
	memset(v, 0, sizeof *v);
	switch (kind) {
	case K_INT8: v->i = mk_kr_int8(r); break;
	case K_INT16: v->i = mk_kr_int16(r); break;
	case K_INT32: v->i = mk_kr_int32(r); break;
	case K_INT64: v->i = mk_kr_int64(r); break;
	case K_UINT32: v->i = mk_kr_uint32(r); break;
	case K_UVARINT: v->i = mk_kr_uvarint(r); break;
	case K_VARINT: v->i = mk_kr_varint(r); break;
	case K_VARLONG: v->i = mk_kr_varlong(r); break;
	case K_BOOL: v->i = mk_kr_bool(r); break;
	case K_UUID: v->uuid = mk_kr_uuid(r); break;
	case K_STRING: v->s = mk_kr_string(r, flex); break;
	case K_NSTRING: v->s = mk_kr_nullable_string(r, flex); break;
	case K_BYTES: v->b = mk_kr_bytes(r, flex); break;
	case K_NBYTES: v->b = mk_kr_nullable_bytes(r, flex); break;
	case K_ARRAY: v->i = mk_kr_array_len(r, flex); break;
	case K_NARRAY: v->i = mk_kr_nullable_array_len(r, flex); break;
	case K_TAGS: mk_kr_tagged_fields(r, flex, keep_tag, v); break;
	}
}

static void write_one(mk_strbuf *w, int kind, bool flex, const value *v)
{
	switch (kind) {
	case K_INT8: mk_kw_int8(w, (int8_t)v->i); break;
	case K_INT16: mk_kw_int16(w, (int16_t)v->i); break;
	case K_INT32: mk_kw_int32(w, (int32_t)v->i); break;
	case K_INT64: mk_kw_int64(w, v->i); break;
	case K_UINT32: mk_kw_uint32(w, (uint32_t)v->i); break;
	case K_UVARINT: mk_kw_uvarint(w, (uint32_t)v->i); break;
	case K_VARINT: mk_kw_varint(w, (int32_t)v->i); break;
	case K_VARLONG: mk_kw_varlong(w, v->i); break;
	case K_BOOL: mk_kw_bool(w, v->i != 0); break;
	case K_UUID: mk_kw_uuid(w, &v->uuid); break;
	case K_STRING:
	case K_NSTRING: mk_kw_kstr(w, v->s, flex); break;
	case K_BYTES: mk_kw_bytes(w, v->b.ptr, v->b.len, flex); break;
	case K_NBYTES: mk_kw_nullable_bytes(w, v->b.ptr, v->b.len, flex); break;
	case K_ARRAY:
	case K_NARRAY:
		if (kind == K_ARRAY)
			mk_kw_array_len(w, (size_t)v->i, flex);
		else
			mk_kw_nullable_array_len(w, (int32_t)v->i, flex);
		/* A length is only accepted when its elements could follow:
		 * a byte each. */
		for (int64_t i = 0; i < v->i; i++)
			mk_strbuf_addch(w, 0);
		break;
	case K_TAGS:
		if (!flex)
			break;
		mk_kw_uvarint(w, (uint32_t)v->ntags);
		for (size_t i = 0; i < v->ntags; i++)
			mk_kw_tag(w, v->tags[i], v->fields[i].ptr, v->fields[i].len);
		break;
	}
}

static bool same(int kind, const value *a, const value *b)
{
	if (a->i != b->i || memcmp(a->uuid.b, b->uuid.b, 16) ||
	    !same_kstr(a->s, b->s) || a->ntags != b->ntags)
		return false;
	if ((a->b.ptr == NULL) != (b->b.ptr == NULL) || a->b.len != b->b.len ||
	    (a->b.len && memcmp(a->b.ptr, b->b.ptr, a->b.len)))
		return false;
	for (size_t i = 0; kind == K_TAGS && i < a->ntags; i++)
		if (a->tags[i] != b->tags[i] || a->fields[i].len != b->fields[i].len ||
		    (a->fields[i].len &&
		     memcmp(a->fields[i].ptr, b->fields[i].ptr, a->fields[i].len)))
			return false;
	return true;
}

/* The checks after one read of kind from r (pos before it: at). */
static void check_read(mk_kreader *r, size_t at, int kind, bool flex,
		       const value *v)
{
	CHECK(r->pos <= r->len && r->pos >= at);
	if (v->s.ptr)
		CHECK(inside(r, v->s.ptr, v->s.len) && v->s.len <= MK_KSTRING_MAX);
	if (v->b.ptr)
		CHECK(inside(r, v->b.ptr, v->b.len));
	if (r->err) {
		CHECK(v->i == 0 && !v->s.ptr && !v->b.ptr && mk_kr_left(r) == 0);
		size_t pos = r->pos;
		CHECK(mk_kr_int8(r) == 0 && mk_kr_take(r, 0) == NULL && r->pos == pos);
		return;
	}
	if (kind == K_ARRAY || kind == K_NARRAY)
		CHECK(v->i >= (kind == K_NARRAY ? -1 : 0) &&
		      (v->i < 0 || (size_t)v->i <= mk_kr_left(r)));
	if (kind == K_STRING)
		CHECK(v->s.ptr);
	if (kind == K_BYTES)
		CHECK(v->b.ptr);
	if (kind == K_TAGS && v->ntags > MAX_TAGS)
		return;
	mk_strbuf w = MK_STRBUF_INIT;
	write_one(&w, kind, flex, v);
	mk_kreader back;
	value u;
	mk_kreader_init(&back, w.buf, w.len);
	read_one(&back, kind, flex, &u);
	if ((kind == K_ARRAY || kind == K_NARRAY) && !back.err && u.i > 0)
		mk_kr_take(&back, (size_t)u.i);
	CHECK(!back.err && back.pos == w.len && same(kind, v, &u));
	mk_strbuf_release(&w);
}

static void fuzz_reads(const uint8_t *data, size_t size)
{
	mk_kreader r;
	value v;
	for (int flex = 0; flex < 2; flex++) {
		for (int kind = 0; kind < K_COUNT; kind++) {
			mk_kreader_init(&r, data, size);
			read_one(&r, kind, flex, &v);
			check_read(&r, 0, kind, flex, &v);
		}
	}
	mk_kreader_init(&r, data, size);
	while (!r.err && mk_kr_left(&r)) {
		uint8_t op = (uint8_t)mk_kr_int8(&r);
		int kind = (op & 0x7f) % K_COUNT;
		bool flex = op & 0x80;
		size_t at = r.pos;
		read_one(&r, kind, flex, &v);
		check_read(&r, at, kind, flex, &v);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_headers(data, size);
	fuzz_reads(data, size);
	return 0;
}
