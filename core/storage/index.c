/*
 * index.c — the offset index of index.h: its entry kind over the entry
 * file (entryfile.h). An entry is u32 relative offset | u32 position on
 * disk.
 */
#include "index.h"

#include "fileio.h"

static void encode(uint8_t *b, const void *v)
{
	const mk_offset_entry *e = v;
	mk_store_be32(b, e->rel);
	mk_store_be32(b + 4, e->pos);
}

static void decode(const uint8_t *b, void *v)
{
	mk_offset_entry *e = v;
	e->rel = mk_load_be32(b);
	e->pos = mk_load_be32(b + 4);
}

/* Offsets and positions strictly increase. */
static bool ordered(const void *p, const void *n)
{
	const mk_offset_entry *a = p, *b = n;
	return b->rel > a->rel && b->pos > a->pos;
}

/* Inside the segment, the first entry at its first batch. */
static bool plausible(const void *v, size_t i, uint64_t seg_size,
		      uint64_t rel_limit)
{
	const mk_offset_entry *e = v;
	return e->rel < rel_limit && e->pos < seg_size && (i > 0 || e->pos == 0);
}

static const mk_entry_kind offset_entries = {
	sizeof(mk_offset_entry), MK_OFFSET_INDEX_ENTRY_SIZE, encode, decode,
	ordered, plausible,
};

void mk_offset_index_init(mk_offset_index *ix)
{
	mk_entries_init(&ix->f, &offset_entries);
}

mk_err mk_offset_index_add(mk_offset_index *ix, uint32_t rel, uint32_t pos,
			   bool write)
{
	mk_offset_entry e = { rel, pos };
	return mk_entries_add(&ix->f, &e, write);
}

static bool rel_at_most(const void *v, const void *arg)
{
	return ((const mk_offset_entry *)v)->rel <= *(const uint32_t *)arg;
}

static bool pos_below(const void *v, const void *arg)
{
	return ((const mk_offset_entry *)v)->pos < *(const uint32_t *)arg;
}

bool mk_offset_index_floor(const mk_offset_index *ix, uint32_t rel,
			   mk_offset_entry *out)
{
	return mk_entries_last_where(&ix->f, rel_at_most, &rel, out);
}

bool mk_offset_index_last(const mk_offset_index *ix, mk_offset_entry *out)
{
	return mk_entries_last(&ix->f, out);
}

mk_err mk_offset_index_truncate_pos(mk_offset_index *ix, uint32_t pos)
{
	return mk_entries_truncate(&ix->f,
				   mk_entries_partition(&ix->f, pos_below, &pos));
}
