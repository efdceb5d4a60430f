/*
 * strbuf.h — one growable byte buffer, in the manner of git's strbuf.
 *
 * A strbuf owns `buf`; `len` bytes are in use and buf[len] is always NUL, so
 * the contents can be used as a C string when they hold text. Binary data is
 * fine: len, not strlen, is the truth. An initialised strbuf with no storage
 * points at a shared empty string and must not be written through directly.
 *
 * Allocation failure aborts, as everywhere (core/base/xalloc.h, the project's one
 * allocation policy).
 */
#ifndef MK_STRBUF_H
#define MK_STRBUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
	char *buf;
	size_t len;
	size_t alloc;
} mk_strbuf;

extern char mk_strbuf_empty[];
#define MK_STRBUF_INIT { mk_strbuf_empty, 0, 0 }

void mk_strbuf_init(mk_strbuf *sb, size_t hint);
void mk_strbuf_release(mk_strbuf *sb);
/* Make room for at least `extra` more bytes beyond len. */
void mk_strbuf_grow(mk_strbuf *sb, size_t extra);
void mk_strbuf_setlen(mk_strbuf *sb, size_t len);
static inline void mk_strbuf_reset(mk_strbuf *sb) { mk_strbuf_setlen(sb, 0); }
void mk_strbuf_add(mk_strbuf *sb, const void *data, size_t len);
void mk_strbuf_addstr(mk_strbuf *sb, const char *s);
void mk_strbuf_addch(mk_strbuf *sb, int c);
void mk_strbuf_addf(mk_strbuf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void mk_strbuf_vaddf(mk_strbuf *sb, const char *fmt, va_list ap);
/* Drop the first n bytes, moving the rest to the front. */
void mk_strbuf_consume(mk_strbuf *sb, size_t n);
/* Take ownership of the buffer out of the strbuf; it is left empty. */
char *mk_strbuf_detach(mk_strbuf *sb, size_t *len);

/* Big-endian fixed-width appends, used by the codec and the indexes. */
void mk_strbuf_add_be16(mk_strbuf *sb, uint16_t v);
void mk_strbuf_add_be32(mk_strbuf *sb, uint32_t v);
void mk_strbuf_add_be64(mk_strbuf *sb, uint64_t v);

/*
 * Big-endian loads and stores on raw memory, unaligned. One memcpy of the
 * whole word and a byte swap: the compiler makes a load or store and a
 * bswap of it (byte-at-a-time shifts were assembled in registers and, in
 * the record encoder, written through the stack: a store-forwarding stall
 * per record).
 */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define MK_BE16(v) __builtin_bswap16(v)
#define MK_BE32(v) __builtin_bswap32(v)
#define MK_BE64(v) __builtin_bswap64(v)
#else
#define MK_BE16(v) (v)
#define MK_BE32(v) (v)
#define MK_BE64(v) (v)
#endif
static inline uint16_t mk_load_be16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof v);
	return MK_BE16(v);
}
static inline uint32_t mk_load_be32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof v);
	return MK_BE32(v);
}
static inline uint64_t mk_load_be64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return MK_BE64(v);
}
static inline void mk_store_be16(uint8_t *p, uint16_t v)
{
	v = MK_BE16(v);
	memcpy(p, &v, sizeof v);
}
static inline void mk_store_be32(uint8_t *p, uint32_t v)
{
	v = MK_BE32(v);
	memcpy(p, &v, sizeof v);
}
static inline void mk_store_be64(uint8_t *p, uint64_t v)
{
	v = MK_BE64(v);
	memcpy(p, &v, sizeof v);
}

#endif
