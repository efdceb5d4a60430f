/*
 * timeindex.c — the time index of timeindex.h: its entry kind over the
 * entry file (entryfile.h). An entry is i64 timestamp | u32 relative
 * offset on disk.
 */
#include "timeindex.h"

#include "fileio.h"

static void encode(uint8_t *b, const void *v)
{
	const mk_time_entry *e = v;
	mk_store_be64(b, (uint64_t)e->ts);
	mk_store_be32(b + 8, e->rel);
}

static void decode(const uint8_t *b, void *v)
{
	mk_time_entry *e = v;
	e->ts = (int64_t)mk_load_be64(b);
	e->rel = mk_load_be32(b + 8);
}

/* Timestamps and offsets strictly increase. */
static bool ordered(const void *p, const void *n)
{
	const mk_time_entry *a = p, *b = n;
	return b->ts > a->ts && b->rel > a->rel;
}

/* Inside the segment: below the next one's base. (That the first entry
 * is the first batch's is checked against the offset index, segment.c.) */
static bool plausible(const void *v, size_t i, uint64_t seg_size,
		      uint64_t rel_limit)
{
	(void)i;
	(void)seg_size;
	return ((const mk_time_entry *)v)->rel < rel_limit;
}

static const mk_entry_kind time_entries = {
	sizeof(mk_time_entry), MK_TIME_INDEX_ENTRY_SIZE, encode, decode,
	ordered, plausible,
};

void mk_time_index_init(mk_time_index *ix)
{
	mk_entries_init(&ix->f, &time_entries);
}

bool mk_time_index_last(const mk_time_index *ix, mk_time_entry *out)
{
	return mk_entries_last(&ix->f, out);
}

mk_err mk_time_index_maybe_add(mk_time_index *ix, int64_t ts, uint32_t rel,
			       bool write)
{
	mk_time_entry e = { ts, rel }, last;
	/* An offset not above the last one only comes from an index file
	 * that lied and passed for valid: skipped, never out of order. */
	if (mk_time_index_last(ix, &last) && (ts <= last.ts || rel <= last.rel))
		return MK_OK;
	return mk_entries_add(&ix->f, &e, write);
}

static bool ts_at_most(const void *v, const void *arg)
{
	return ((const mk_time_entry *)v)->ts <= *(const int64_t *)arg;
}

static bool rel_below(const void *v, const void *arg)
{
	return ((const mk_time_entry *)v)->rel < *(const uint32_t *)arg;
}

bool mk_time_index_lookup(const mk_time_index *ix, int64_t target,
			  mk_time_entry *out)
{
	return mk_entries_last_where(&ix->f, ts_at_most, &target, out);
}

mk_err mk_time_index_truncate_rel(mk_time_index *ix, uint32_t rel)
{
	return mk_entries_truncate(&ix->f,
				   mk_entries_partition(&ix->f, rel_below, &rel));
}
