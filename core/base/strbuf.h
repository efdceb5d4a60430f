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

/* Big-endian loads and stores on raw memory. */
static inline uint16_t mk_load_be16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}
static inline uint32_t mk_load_be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
	       ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}
static inline uint64_t mk_load_be64(const uint8_t *p)
{
	return ((uint64_t)mk_load_be32(p) << 32) | mk_load_be32(p + 4);
}
static inline void mk_store_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}
static inline void mk_store_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}
static inline void mk_store_be64(uint8_t *p, uint64_t v)
{
	mk_store_be32(p, (uint32_t)(v >> 32));
	mk_store_be32(p + 4, (uint32_t)v);
}

#endif
