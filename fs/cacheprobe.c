/*
 * cacheprobe.c — is a byte of a file in the kernel's page cache
 * (cacheprobe.h).
 */
#include "cacheprobe.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "xalloc.h"

typedef struct probe {
	uint64_t id;
	int64_t due_ms;
	mk_cacheprobe_done done;
	void *done_arg;
	struct probe *next;
} probe;

struct mk_cacheprobe {
	pthread_mutex_t lock;
	probe *pending;
	size_t npending;
	uint64_t last_id;
};

mk_cacheprobe *mk_cacheprobe_new(void)
{
	mk_cacheprobe *cp = mk_xcalloc(1, sizeof(*cp));
	pthread_mutex_init(&cp->lock, NULL);
	return cp;
}

void mk_cacheprobe_free(mk_cacheprobe *cp)
{
	if (!cp)
		return;
	mk_cacheprobe_expire(cp, INT64_MAX);
	pthread_mutex_destroy(&cp->lock);
	free(cp);
}

/* Take probe id out of the pending list: it is the caller's to answer.
 * Under cp->lock; NULL when it is not pending (answered, expired). */
static probe *take(mk_cacheprobe *cp, uint64_t id)
{
	for (probe **pp = &cp->pending; *pp; pp = &(*pp)->next)
		if ((*pp)->id == id) {
			probe *p = *pp;
			*pp = p->next;
			cp->npending--;
			return p;
		}
	return NULL;
}

static void answer(probe *p, int cached)
{
	p->done(p->done_arg, cached);
	free(p);
}

void mk_cacheprobe_start(mk_cacheprobe *cp, mk_cacheprobe_fn fn, void *fn_arg,
			 uint64_t ino, long long off, int64_t due_ms,
			 mk_cacheprobe_done done, void *done_arg)
{
	probe *p = mk_xcalloc(1, sizeof(*p));
	p->due_ms = due_ms;
	p->done = done;
	p->done_arg = done_arg;
	pthread_mutex_lock(&cp->lock);
	uint64_t id = p->id = ++cp->last_id;
	p->next = cp->pending;
	cp->pending = p;
	cp->npending++;
	pthread_mutex_unlock(&cp->lock);
	/* From here p may be answered (and freed) by another thread. */
	if (fn(fn_arg, ino, 1, off, (void *)(uintptr_t)id) == 0)
		return;
	pthread_mutex_lock(&cp->lock);
	p = take(cp, id);
	pthread_mutex_unlock(&cp->lock);
	if (p)
		answer(p, -1);
}

void mk_cacheprobe_answer(mk_cacheprobe *cp, void *cookie, size_t n)
{
	pthread_mutex_lock(&cp->lock);
	probe *p = take(cp, (uint64_t)(uintptr_t)cookie);
	pthread_mutex_unlock(&cp->lock);
	if (p)
		answer(p, n > 0);
}

int64_t mk_cacheprobe_expire(mk_cacheprobe *cp, int64_t now_ms)
{
	probe *due = NULL;
	int64_t next = 0;
	pthread_mutex_lock(&cp->lock);
	for (probe **pp = &cp->pending; *pp;) {
		probe *p = *pp;
		if (p->due_ms <= now_ms) {
			*pp = p->next;
			cp->npending--;
			p->next = due;
			due = p;
		} else {
			if (!next || p->due_ms < next)
				next = p->due_ms;
			pp = &p->next;
		}
	}
	pthread_mutex_unlock(&cp->lock);
	while (due) {
		probe *p = due;
		due = p->next;
		answer(p, -1);
	}
	return next;
}

size_t mk_cacheprobe_pending(mk_cacheprobe *cp)
{
	pthread_mutex_lock(&cp->lock);
	size_t n = cp->npending;
	pthread_mutex_unlock(&cp->lock);
	return n;
}
