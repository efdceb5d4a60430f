/*
 * cacheprobe.c — is a byte of a file in the kernel's page cache
 * (cacheprobe.h).
 */
#include "cacheprobe.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "xalloc.h"

typedef struct probe {
	uint64_t id;
	bool done;
	size_t n;
	struct probe *next;
} probe;

struct mk_cacheprobe {
	pthread_mutex_t lock;
	pthread_cond_t answered;   /* CLOCK_MONOTONIC */
	probe *pending;
	uint64_t last_id;
};

mk_cacheprobe *mk_cacheprobe_new(void)
{
	mk_cacheprobe *cp = mk_xcalloc(1, sizeof(*cp));
	pthread_mutex_init(&cp->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cp->answered, &ca);
	pthread_condattr_destroy(&ca);
	return cp;
}

void mk_cacheprobe_free(mk_cacheprobe *cp)
{
	if (!cp)
		return;
	pthread_cond_destroy(&cp->answered);
	pthread_mutex_destroy(&cp->lock);
	free(cp);
}

/* Take p out of the pending list. Under cp->lock. */
static void unlink_probe(mk_cacheprobe *cp, probe *p)
{
	for (probe **pp = &cp->pending; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			return;
		}
}

int mk_cacheprobe_ask(mk_cacheprobe *cp, mk_cacheprobe_fn fn, void *arg,
		      uint64_t ino, long long off, int timeout_ms)
{
	probe p = { 0 };
	pthread_mutex_lock(&cp->lock);
	p.id = ++cp->last_id;
	p.next = cp->pending;
	cp->pending = &p;
	pthread_mutex_unlock(&cp->lock);

	int asked = fn(arg, ino, 1, off, (void *)(uintptr_t)p.id);

	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&cp->lock);
	while (asked == 0 && !p.done &&
	       pthread_cond_timedwait(&cp->answered, &cp->lock, &until) == 0)
		;
	unlink_probe(cp, &p);
	int r = p.done ? p.n > 0 : -1;
	pthread_mutex_unlock(&cp->lock);
	return r;
}

void mk_cacheprobe_answer(mk_cacheprobe *cp, void *cookie, size_t n)
{
	uint64_t id = (uint64_t)(uintptr_t)cookie;
	pthread_mutex_lock(&cp->lock);
	for (probe *p = cp->pending; p; p = p->next)
		if (p->id == id) {
			p->done = true;
			p->n = n;
			pthread_cond_broadcast(&cp->answered);
			break;
		}
	pthread_mutex_unlock(&cp->lock);
}
