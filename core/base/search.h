/*
 * search.h — the one search over sorted arrays.
 *
 * Every sorted array of the core (segments by base offset, index and
 * epoch entries, producer states, groups and members, transactions, the
 * aborted list, page marks) is searched by mk_lower_bound: the first index
 * in [0, n) whose element does not sort before the key, told by a
 * callback. Exact-match lookups (mk_search_sorted) and "the last element
 * at or before" lookups are written on top of it, so the halving loop
 * exists once.
 *
 * Both are static inline so that the compiler sees the callback and the
 * hot lookups (a segment for an offset, an index entry) cost what the
 * hand-written loops cost.
 *
 * Invariant: the array is sorted by the order `before` describes: for
 * i < j, before(ctx, j) implies before(ctx, i).
 */
#ifndef MK_SEARCH_H
#define MK_SEARCH_H

#include <stdbool.h>
#include <stddef.h>

/* The first i in [0, n) with !before(ctx, i); n when every element is
 * before the key. */
static inline size_t mk_lower_bound(size_t n,
				    bool (*before)(const void *ctx, size_t i),
				    const void *ctx)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (before(ctx, mid))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* An exact-match search: cmp(ctx, i) < 0, 0, > 0 as element i sorts
 * before, at or after the key. True when one matches; *pos (when given)
 * gets its index, or the index where the key would be inserted. */
typedef struct {
	int (*cmp)(const void *ctx, size_t i);
	const void *ctx;
} mk_search_by_cmp;

static inline bool mk_search_cmp_before(const void *ctx, size_t i)
{
	const mk_search_by_cmp *s = ctx;
	return s->cmp(s->ctx, i) < 0;
}

static inline bool mk_search_sorted(size_t n,
				    int (*cmp)(const void *ctx, size_t i),
				    const void *ctx, size_t *pos)
{
	mk_search_by_cmp s = { cmp, ctx };
	size_t at = mk_lower_bound(n, mk_search_cmp_before, &s);
	if (pos)
		*pos = at;
	return at < n && cmp(ctx, at) == 0;
}

#endif
