/*
 * epoch_cache.c — the leader-epoch cache (epoch_cache.h): a small array,
 * searched by binary search; its writes under the log's lock.
 */
#include "epoch_cache.h"

#include <assert.h>
#include <stdlib.h>

#include "search.h"
#include "xalloc.h"

void mk_epoch_cache_init(mk_epoch_cache *c, pthread_mutex_t *lock)
{
	*c = (mk_epoch_cache){ NULL, 0, 0, lock };
}

void mk_epoch_cache_free(mk_epoch_cache *c)
{
	free(c->v);
	c->v = NULL;
	c->n = c->cap = 0;
}

void mk_epoch_cache_push(mk_epoch_cache *c, int32_t epoch, int64_t start)
{
	assert(c->n == 0 ||
	       (epoch > c->v[c->n - 1].epoch &&
		start > c->v[c->n - 1].start_offset));
	pthread_mutex_lock(c->lock);
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 8;
		mk_epoch_entry *v = mk_xrealloc(c->v, cap * sizeof(*v));
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = (mk_epoch_entry){ epoch, start };
	pthread_mutex_unlock(c->lock);
}

bool mk_epoch_cache_observe(mk_epoch_cache *c, int32_t e, int64_t base)
{
	if (e < 0)
		return false;
	if (c->n && e <= c->v[c->n - 1].epoch)
		return false;
	if (c->n && base <= c->v[c->n - 1].start_offset)
		return false;
	mk_epoch_cache_push(c, e, base);
	return true;
}

bool mk_epoch_cache_trim(mk_epoch_cache *c, int64_t offset)
{
	size_t n = c->n;
	while (n > 0 && c->v[n - 1].start_offset >= offset)
		n--;
	bool changed = n != c->n;
	pthread_mutex_lock(c->lock);
	c->n = n;
	pthread_mutex_unlock(c->lock);
	return changed;
}

void mk_epoch_cache_clear_locked(mk_epoch_cache *c)
{
	c->n = 0;
}

int32_t mk_epoch_cache_latest(const mk_epoch_cache *c)
{
	return c->n ? c->v[c->n - 1].epoch : -1;
}

typedef struct {
	const mk_epoch_cache *c;
	int32_t epoch;
} epoch_key;

static bool epoch_at_or_below(const void *ctx, size_t i)
{
	const epoch_key *k = ctx;
	return k->c->v[i].epoch <= k->epoch;
}

void mk_epoch_cache_end_for(const mk_epoch_cache *c, int32_t epoch,
			    int64_t log_end, int32_t *epoch_out,
			    int64_t *end_out)
{
	/* lo - 1: the last entry whose epoch is <= the one asked for. */
	epoch_key k = { c, epoch };
	size_t lo = mk_lower_bound(c->n, epoch_at_or_below, &k);
	if (lo == 0) {
		*epoch_out = -1;
		*end_out = -1;
		return;
	}
	*epoch_out = c->v[lo - 1].epoch;
	*end_out = lo < c->n ? c->v[lo].start_offset : log_end;
}

void mk_epoch_seen_on_batch(void *arg, const mk_batch_view *b, uint64_t pos)
{
	(void)pos;
	mk_epoch_seen *s = arg;
	int32_t e = b->meta.leader_epoch;
	if (e < 0 || (s->n && s->v[s->n - 1].epoch == e))
		return;
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 8;
		s->v = mk_xrealloc(s->v, s->cap * sizeof(*s->v));
	}
	s->v[s->n++] = (mk_epoch_entry){ e, b->meta.base_offset };
}
