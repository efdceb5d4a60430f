/*
 * index.c — the segment index of index.h: a typed face of the entry file
 * (entryfile.h). An entry is i64 max timestamp | u32 relative offset | u32
 * position on disk; lookups by offset and by time share the entries.
 */
#include "index.h"

#include "fileio.h"

static void encode(uint8_t *b, const void *v)
{
	const mk_index_entry *e = v;
	mk_store_be64(b, (uint64_t)e->ts);
	mk_store_be32(b + 8, e->rel);
	mk_store_be32(b + 12, e->pos);
}

static void decode(const uint8_t *b, void *v)
{
	mk_index_entry *e = v;
	e->ts = (int64_t)mk_load_be64(b);
	e->rel = mk_load_be32(b + 8);
	e->pos = mk_load_be32(b + 12);
}

/* Offsets and positions strictly increase, timestamps never decrease. */
static bool ordered(const void *p, const void *n)
{
	const mk_index_entry *a = p, *b = n;
	return b->rel > a->rel && b->pos > a->pos && b->ts >= a->ts;
}

/* Inside the segment, the first entry at its first batch. */
static bool plausible(const void *v, size_t i, uint64_t seg_size,
		      uint64_t rel_limit)
{
	const mk_index_entry *e = v;
	return e->rel < rel_limit && e->pos < seg_size && (i > 0 || e->pos == 0);
}

static const mk_entry_kind index_entries = {
	sizeof(mk_index_entry), MK_INDEX_ENTRY_SIZE, encode, decode, ordered,
	plausible,
};

void mk_index_init(mk_index *ix)
{
	mk_entries_init(&ix->f, &index_entries);
}

mk_err mk_index_open(mk_index *ix, const char *path)
{
	return mk_entries_open(&ix->f, path);
}

bool mk_index_attached(const mk_index *ix)
{
	return mk_entries_attached(&ix->f);
}

size_t mk_index_count(const mk_index *ix)
{
	return ix->f.n;
}

const mk_index_entry *mk_index_at(const mk_index *ix, size_t i)
{
	return mk_entries_at(&ix->f, i);
}

mk_err mk_index_load(mk_index *ix, uint64_t seg_size, uint64_t rel_limit,
		     bool *valid)
{
	return mk_entries_load(&ix->f, seg_size, rel_limit, valid);
}

void mk_index_clear(mk_index *ix)
{
	mk_entries_clear(&ix->f);
}

void mk_index_push(mk_index *ix, uint32_t rel, uint32_t pos, int64_t ts)
{
	mk_index_entry e = { ts, rel, pos };
	mk_entries_push(&ix->f, &e);
}

mk_err mk_index_append(mk_index *ix, uint32_t rel, uint32_t pos, int64_t ts)
{
	mk_index_entry e = { ts, rel, pos };
	return mk_entries_append(&ix->f, &e);
}

mk_err mk_index_write_all(mk_index *ix)
{
	return mk_entries_write_all(&ix->f);
}

static bool rel_at_most(const void *v, const void *arg)
{
	return ((const mk_index_entry *)v)->rel <= *(const uint32_t *)arg;
}

static bool rel_below(const void *v, const void *arg)
{
	return ((const mk_index_entry *)v)->rel < *(const uint32_t *)arg;
}

static bool pos_below(const void *v, const void *arg)
{
	return ((const mk_index_entry *)v)->pos < *(const uint32_t *)arg;
}

static bool ts_below(const void *v, const void *arg)
{
	return ((const mk_index_entry *)v)->ts < *(const int64_t *)arg;
}

/* The entry before the first one for which below() fails. */
static bool last_below(const mk_index *ix,
		       bool (*below)(const void *, const void *),
		       const void *arg, mk_index_entry *out)
{
	size_t n = mk_entries_partition(&ix->f, below, arg);
	if (n == 0)
		return false;
	*out = *mk_index_at(ix, n - 1);
	return true;
}

bool mk_index_floor(const mk_index *ix, uint32_t rel, mk_index_entry *out)
{
	return last_below(ix, rel_at_most, &rel, out);
}

bool mk_index_before_time(const mk_index *ix, int64_t target,
			  mk_index_entry *out)
{
	return last_below(ix, ts_below, &target, out);
}

bool mk_index_last(const mk_index *ix, mk_index_entry *out)
{
	if (!ix->f.n)
		return false;
	*out = *mk_index_at(ix, ix->f.n - 1);
	return true;
}

mk_err mk_index_truncate_rel(mk_index *ix, uint32_t rel)
{
	return mk_entries_truncate(&ix->f,
				   mk_entries_partition(&ix->f, rel_below, &rel));
}

mk_err mk_index_truncate_pos(mk_index *ix, uint32_t pos)
{
	return mk_entries_truncate(&ix->f,
				   mk_entries_partition(&ix->f, pos_below, &pos));
}

mk_err mk_index_write_pending(mk_index *ix)
{
	return mk_entries_write_pending(&ix->f);
}

mk_err mk_index_sync(mk_index *ix)
{
	return mk_entries_sync(&ix->f);
}

void mk_index_crash(mk_index *ix)
{
	mk_entries_crash(&ix->f);
}

void mk_index_detach(mk_index *ix)
{
	mk_entries_detach(&ix->f);
}

void mk_index_evict(mk_index *ix)
{
	mk_entries_evict(&ix->f);
}

void mk_index_close(mk_index *ix)
{
	mk_entries_close(&ix->f);
}
