#include "strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

char mk_strbuf_empty[1];

void mk_strbuf_init(mk_strbuf *sb, size_t hint)
{
	sb->buf = mk_strbuf_empty;
	sb->len = 0;
	sb->alloc = 0;
	if (hint)
		mk_strbuf_grow(sb, hint);
}

void mk_strbuf_release(mk_strbuf *sb)
{
	if (sb->alloc)
		free(sb->buf);
	mk_strbuf_init(sb, 0);
}

void mk_strbuf_grow(mk_strbuf *sb, size_t extra)
{
	size_t need = sb->len + extra + 1;
	if (need < sb->len)
		mk_xreallocarray(NULL, SIZE_MAX, 2);   /* overflow: aborts */
	if (need <= sb->alloc)
		return;
	size_t alloc = sb->alloc ? sb->alloc : 64;
	while (alloc < need)
		alloc = alloc < SIZE_MAX / 2 ? alloc * 2 : need;
	char *p = mk_xrealloc(sb->alloc ? sb->buf : NULL, alloc);
	if (!sb->alloc)
		p[0] = '\0';
	sb->buf = p;
	sb->alloc = alloc;
}

void mk_strbuf_setlen(mk_strbuf *sb, size_t len)
{
	if (!sb->alloc) {
		if (len == 0)
			return;
		mk_strbuf_grow(sb, len);
	}
	sb->len = len;
	sb->buf[len] = '\0';
}

void mk_strbuf_add(mk_strbuf *sb, const void *data, size_t len)
{
	if (!len)
		return;
	mk_strbuf_grow(sb, len);
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
}

void mk_strbuf_addstr(mk_strbuf *sb, const char *s)
{
	mk_strbuf_add(sb, s, strlen(s));
}

void mk_strbuf_addch(mk_strbuf *sb, int c)
{
	mk_strbuf_grow(sb, 1);
	sb->buf[sb->len++] = (char)c;
	sb->buf[sb->len] = '\0';
}

void mk_strbuf_vaddf(mk_strbuf *sb, const char *fmt, va_list ap)
{
	va_list cp;
	va_copy(cp, ap);
	int n = vsnprintf(sb->buf + sb->len, sb->alloc ? sb->alloc - sb->len : 0,
			  fmt, cp);
	va_end(cp);
	if (n < 0)
		return;
	if (!sb->alloc || (size_t)n >= sb->alloc - sb->len) {
		mk_strbuf_grow(sb, (size_t)n);
		vsnprintf(sb->buf + sb->len, sb->alloc - sb->len, fmt, ap);
	}
	sb->len += (size_t)n;
}

void mk_strbuf_addf(mk_strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	mk_strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
}

void mk_strbuf_consume(mk_strbuf *sb, size_t n)
{
	if (n >= sb->len) {
		mk_strbuf_setlen(sb, 0);
		return;
	}
	memmove(sb->buf, sb->buf + n, sb->len - n);
	mk_strbuf_setlen(sb, sb->len - n);
}

char *mk_strbuf_detach(mk_strbuf *sb, size_t *len)
{
	if (!sb->alloc)
		mk_strbuf_grow(sb, 0);
	char *p = sb->buf;
	if (len)
		*len = sb->len;
	mk_strbuf_init(sb, 0);
	return p;
}

void mk_strbuf_add_be16(mk_strbuf *sb, uint16_t v)
{
	uint8_t b[2];
	mk_store_be16(b, v);
	mk_strbuf_add(sb, b, 2);
}

void mk_strbuf_add_be32(mk_strbuf *sb, uint32_t v)
{
	uint8_t b[4];
	mk_store_be32(b, v);
	mk_strbuf_add(sb, b, 4);
}

void mk_strbuf_add_be64(mk_strbuf *sb, uint64_t v)
{
	uint8_t b[8];
	mk_store_be64(b, v);
	mk_strbuf_add(sb, b, 8);
}
