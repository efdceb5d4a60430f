/*
 * xalloc.h — the project's one allocation policy: running out of memory
 * aborts.
 *
 * The daemon cannot do anything useful without memory, a caller that
 * checks every allocation hides its real logic, and a half-checked mix is
 * worse than either (strbuf.h made this choice first). So core/, fs/ and
 * mount/ allocate through these wrappers, which never return NULL: on
 * failure they print one line to stderr and abort(). A zero-size request
 * returns a unique pointer, as glibc does, never NULL. Array forms check
 * the multiplication for overflow (an overflow aborts too).
 *
 * No state; safe from any thread.
 */
#ifndef MK_XALLOC_H
#define MK_XALLOC_H

#include <stddef.h>

void *mk_xmalloc(size_t n);
void *mk_xcalloc(size_t count, size_t size);
void *mk_xrealloc(void *p, size_t n);
/* realloc(p, count * size), overflow-checked. */
void *mk_xreallocarray(void *p, size_t count, size_t size);
char *mk_xstrdup(const char *s);
char *mk_xstrndup(const char *s, size_t n);

#endif
