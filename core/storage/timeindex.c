/*
 * timeindex.c — the time index of timeindex.h: a typed face of the entry
 * file (entryfile.h). An entry is i64 timestamp | u32 relative offset on
 * disk.
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

/* Timestamps never decrease, offsets strictly increase. */
static bool ordered(const void *p, const void *n)
{
	const mk_time_entry *a = p, *b = n;
	return b->ts >= a->ts && b->rel > a->rel;
}

static bool plausible(const void *v, size_t i, uint64_t seg_size,
		      uint64_t rel_limit)
{
	(void)i;
	(void)seg_size;
	return ((const mk_time_entry *)v)->rel < rel_limit;
}

static const mk_entry_kind time_entries = {
	sizeof(mk_time_entry), MK_TIMEINDEX_ENTRY_SIZE, encode, decode, ordered,
	plausible,
};

void mk_timeindex_init(mk_timeindex *ti)
{
	mk_entries_init(&ti->f, &time_entries);
}

mk_err mk_timeindex_open(mk_timeindex *ti, const char *path)
{
	return mk_entries_open(&ti->f, path);
}

bool mk_timeindex_attached(const mk_timeindex *ti)
{
	return mk_entries_attached(&ti->f);
}

size_t mk_timeindex_count(const mk_timeindex *ti)
{
	return ti->f.n;
}

mk_err mk_timeindex_load(mk_timeindex *ti, uint64_t seg_size,
			 uint64_t rel_limit, bool *valid)
{
	return mk_entries_load(&ti->f, seg_size, rel_limit, valid);
}

void mk_timeindex_clear(mk_timeindex *ti)
{
	mk_entries_clear(&ti->f);
}

void mk_timeindex_push(mk_timeindex *ti, int64_t ts, uint32_t rel)
{
	mk_time_entry e = { ts, rel };
	mk_entries_push(&ti->f, &e);
}

mk_err mk_timeindex_append(mk_timeindex *ti, int64_t ts, uint32_t rel)
{
	mk_time_entry e = { ts, rel };
	return mk_entries_append(&ti->f, &e);
}

mk_err mk_timeindex_write_all(mk_timeindex *ti)
{
	return mk_entries_write_all(&ti->f);
}

static bool ts_below(const void *v, const void *arg)
{
	return ((const mk_time_entry *)v)->ts < *(const int64_t *)arg;
}

static bool rel_below(const void *v, const void *arg)
{
	return ((const mk_time_entry *)v)->rel < *(const uint32_t *)arg;
}

bool mk_timeindex_before(const mk_timeindex *ti, int64_t target,
			 mk_time_entry *out)
{
	size_t n = mk_entries_partition(&ti->f, ts_below, &target);
	if (n == 0)
		return false;
	*out = *(const mk_time_entry *)mk_entries_at(&ti->f, n - 1);
	return true;
}

bool mk_timeindex_last(const mk_timeindex *ti, mk_time_entry *out)
{
	if (!ti->f.n)
		return false;
	*out = *(const mk_time_entry *)mk_entries_at(&ti->f, ti->f.n - 1);
	return true;
}

mk_err mk_timeindex_truncate_rel(mk_timeindex *ti, uint32_t rel)
{
	return mk_entries_truncate(&ti->f,
				   mk_entries_partition(&ti->f, rel_below, &rel));
}

mk_err mk_timeindex_write_pending(mk_timeindex *ti)
{
	return mk_entries_write_pending(&ti->f);
}

mk_err mk_timeindex_sync(mk_timeindex *ti)
{
	return mk_entries_sync(&ti->f);
}

void mk_timeindex_crash(mk_timeindex *ti)
{
	mk_entries_crash(&ti->f);
}

void mk_timeindex_detach(mk_timeindex *ti)
{
	mk_entries_detach(&ti->f);
}

void mk_timeindex_close(mk_timeindex *ti)
{
	mk_entries_close(&ti->f);
}
