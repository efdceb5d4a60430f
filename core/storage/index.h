/*
 * index.h — the offset index of one segment (NNN.index), Kafka's
 * OffsetIndex: which byte of the .log to start scanning at for an offset.
 * Its sibling, the time index (NNN.timeindex, timeindex.h), is a module
 * of its own; the segment (segment.h) keeps the two in step
 * (docs/filesystem.md, "the indexes: Kafka's two files").
 *
 * An entry is an index point: the batch whose base offset is base + rel
 * starts at byte pos of the .log. On disk each entry is 8 bytes,
 * big-endian, Kafka's layout: u32 relative offset | u32 position,
 * appended in order; the file holds exactly its entries (Kafka
 * preallocates index files to segment.index.bytes and trims them when the
 * segment rolls; nothing is preallocated here). **Decision:** rel is the
 * batch's base offset where Kafka writes its last offset: a lookup then
 * lands on the batch that holds the offset, not on the one before it
 * (whose bytes the reader would read whole), and Kafka's own lookup
 * (the largest entry at or below the target, then a scan) still finds
 * the right batch in our files.
 *
 * Owns nothing but its entry file (entryfile.h: the array, the
 * descriptor, the lazy writes, sync, crash and truncation), whose calls
 * the owner makes on `f` directly; this module is the entries' type: the
 * kind (encoding, order, plausibility) and the typed additions and
 * lookups.
 *
 * Invariants:
 *   - entries strictly increase in offset and in position;
 *   - for a segment holding data the first entry is at position 0 (the
 *     first batch always has one);
 *   - the entry file's invariants (written, synced, pending).
 * An index of the merged 16-byte format of before issue 25 point 2 (i64
 * max ts | u32 rel | u32 pos) never loads as one of these: read as 8-byte
 * entries its second entry is the old first entry's rel and position,
 * position 0, which cannot follow the first (positions strictly increase).
 *
 * The index is only an accelerator: whoever owns it (the segment) rebuilds
 * it from the log when mk_entries_load() reports it invalid. Not
 * thread-safe: the owning segment serialises every call (segment.h).
 */
#ifndef MK_INDEX_H
#define MK_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "entryfile.h"
#include "error.h"

#define MK_OFFSET_INDEX_ENTRY_SIZE 8

typedef struct {
	uint32_t rel;   /* base offset of the batch - segment base */
	uint32_t pos;   /* its byte position in the .log */
} mk_offset_entry;

typedef struct {
	mk_entry_file f;        /* of mk_offset_entry */
} mk_offset_index;

void mk_offset_index_init(mk_offset_index *ix);
static inline size_t mk_offset_index_count(const mk_offset_index *ix)
{
	return ix->f.n;
}
/* Entry i < count. */
static inline const mk_offset_entry *mk_offset_index_at(const mk_offset_index *ix,
							size_t i)
{
	return mk_entries_at(&ix->f, i);
}
/* Add an entry (it must keep the order): in memory only (a rebuild,
 * written whole by mk_entries_write_all), or with write for the end of
 * the attached file (written lazily: mk_entries_append). */
mk_err mk_offset_index_add(mk_offset_index *ix, uint32_t rel, uint32_t pos,
			   bool write);
/* The last entry with rel <= target (Kafka's OffsetIndex.lookup); false
 * when none: start at byte 0. */
bool mk_offset_index_floor(const mk_offset_index *ix, uint32_t rel,
			   mk_offset_entry *out);
/* The last entry; false when empty. */
bool mk_offset_index_last(const mk_offset_index *ix, mk_offset_entry *out);
/* Drop entries with pos >= the given position, in memory and file. */
mk_err mk_offset_index_truncate_pos(mk_offset_index *ix, uint32_t pos);

#endif
