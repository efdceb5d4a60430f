/* xalloc.c — see xalloc.h. */
#include "xalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *check(void *p, size_t n)
{
	if (!p) {
		fprintf(stderr, "minikafkafs: out of memory (%zu bytes)\n", n);
		abort();
	}
	return p;
}

void *mk_xmalloc(size_t n)
{
	return check(malloc(n ? n : 1), n);
}

void *mk_xcalloc(size_t count, size_t size)
{
	if (count == 0 || size == 0)
		count = size = 1;
	return check(calloc(count, size), count * size);
}

void *mk_xrealloc(void *p, size_t n)
{
	return check(realloc(p, n ? n : 1), n);
}

void *mk_xreallocarray(void *p, size_t count, size_t size)
{
	if (size && count > SIZE_MAX / size)
		check(NULL, SIZE_MAX);
	return mk_xrealloc(p, count * size);
}

char *mk_xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = mk_xmalloc(n);
	memcpy(d, s, n);
	return d;
}

char *mk_xstrndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *d = mk_xmalloc(len + 1);
	memcpy(d, s, len);
	d[len] = '\0';
	return d;
}
