/*
 * txnindex.c — the aborted transactions of a replica's log (txnindex.h).
 */
#include "txnindex.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "xalloc.h"

void mk_aborted_init(mk_aborted_list *l)
{
	memset(l, 0, sizeof(*l));
}

void mk_aborted_free(mk_aborted_list *l)
{
	free(l->v);
	mk_aborted_init(l);
}

void mk_aborted_clear(mk_aborted_list *l)
{
	l->n = 0;
}

void mk_aborted_add(mk_aborted_list *l, int64_t pid, int64_t first, int64_t last)
{
	if (l->n == l->alloc) {
		l->alloc = l->alloc ? l->alloc * 2 : 8;
		l->v = mk_xrealloc(l->v, l->alloc * sizeof(*l->v));
	}
	l->v[l->n++] = (mk_aborted_txn){ pid, first, last };
}

typedef struct {
	const mk_aborted_list *l;
	int64_t offset;
} ending_key;

static bool ends_before(const void *ctx, size_t i)
{
	const ending_key *k = ctx;
	return k->l->v[i].last < k->offset;
}

/* The first entry whose last offset is >= offset. */
static size_t first_ending_at(const mk_aborted_list *l, int64_t offset)
{
	ending_key k = { l, offset };
	return mk_lower_bound(l->n, ends_before, &k);
}

void mk_aborted_range(const mk_aborted_list *l, int64_t from, int64_t to,
		      mk_aborted_list *out)
{
	mk_aborted_clear(out);
	for (size_t i = first_ending_at(l, from); i < l->n; i++)
		if (l->v[i].first < to)
			mk_aborted_add(out, l->v[i].pid, l->v[i].first, l->v[i].last);
}

void mk_aborted_trim(mk_aborted_list *l, int64_t offset)
{
	size_t k = first_ending_at(l, offset);
	if (!k)
		return;
	memmove(l->v, l->v + k, (l->n - k) * sizeof(*l->v));
	l->n -= k;
}

bool mk_aborted_hides(const mk_aborted_list *l, const mk_batch_view *b)
{
	if (!(b->meta.flags & MK_BATCH_TRANSACTIONAL) || mk_batch_is_control(b))
		return false;
	int64_t off = b->meta.base_offset;
	for (size_t i = first_ending_at(l, off); i < l->n; i++)
		if (l->v[i].pid == b->meta.producer_id && l->v[i].first <= off)
			return true;
	return false;
}
