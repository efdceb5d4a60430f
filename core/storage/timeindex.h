/*
 * timeindex.h — the time index of one segment (NNN.timeindex), Kafka's
 * TimeIndex: from a timestamp to an offset before which no record
 * reaches it. Its sibling is the offset index (NNN.index, index.h); the
 * segment (segment.h) keeps the two in step (docs/filesystem.md, "the
 * indexes: Kafka's two files").
 *
 * An entry (ts, rel) says: ts is the largest record timestamp of the
 * segment so far, first reached by the batch whose base offset is base +
 * rel; every batch before that one has a max timestamp below ts. On disk
 * each entry is 12 bytes, big-endian, Kafka's layout: i64 timestamp | u32
 * relative offset, appended in order; the file holds exactly its entries
 * (not preallocated, as Kafka's are). The segment adds one where it adds
 * an offset-index entry, when the max timestamp grew since the last time
 * entry (Kafka's maybeAppend), and one more when it rolls (Kafka's
 * onBecomeInactiveSegment), so that a closed segment's last entry carries
 * its max timestamp. **Decision:** rel is the base offset of the batch
 * that first reached ts, where Kafka writes that batch's last offset
 * (index.h says why the offset index does the same); and the first batch
 * always gets an entry, whatever its timestamp (Kafka's empty index
 * starts from NO_TIMESTAMP, -1, and never indexes a timestamp at or below
 * it), so that a segment with data always has one.
 *
 * The lookup is Kafka's (TimeIndex.lookup, LogSegment.findOffsetByTimestamp):
 * the last entry with ts <= target, then the offset index's floor of its
 * offset, then a scan for the first record with a timestamp >= target.
 * Exact: every batch before the entry's batch has a max timestamp below
 * its ts <= target, so none holds a record at or past the target; with no
 * such entry the scan starts at byte 0.
 *
 * Owns nothing but its entry file (entryfile.h), whose calls the owner
 * makes on `f` directly; this module is the entries' type.
 *
 * Invariants:
 *   - timestamps strictly increase, and so do offsets (a later maximum is
 *     first reached by a later batch);
 *   - the entry file's invariants (written, synced, pending).
 * Not thread-safe: the owning segment serialises every call (segment.h).
 */
#ifndef MK_TIMEINDEX_H
#define MK_TIMEINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "entryfile.h"
#include "error.h"

#define MK_TIME_INDEX_ENTRY_SIZE 12

typedef struct {
	int64_t ts;     /* the segment's max timestamp so far */
	uint32_t rel;   /* base offset of the batch that reached it - base */
} mk_time_entry;

typedef struct {
	mk_entry_file f;        /* of mk_time_entry */
} mk_time_index;

void mk_time_index_init(mk_time_index *ix);
static inline size_t mk_time_index_count(const mk_time_index *ix)
{
	return ix->f.n;
}
/* Entry i < count. */
static inline const mk_time_entry *mk_time_index_at(const mk_time_index *ix,
						    size_t i)
{
	return mk_entries_at(&ix->f, i);
}
/* Kafka's maybeAppend: add (ts, rel) when the index is empty or ts is
 * above the last entry's (rel is then above its rel; were it not, which
 * only a lying index file can cause, nothing is added), else nothing. In memory only, or with write for the end of
 * the attached file (written lazily: mk_entries_append). */
mk_err mk_time_index_maybe_add(mk_time_index *ix, int64_t ts, uint32_t rel,
			       bool write);
/* The last entry with ts <= target (Kafka's TimeIndex.lookup); false
 * when none. */
bool mk_time_index_lookup(const mk_time_index *ix, int64_t target,
			  mk_time_entry *out);
/* The last entry; false when empty. */
bool mk_time_index_last(const mk_time_index *ix, mk_time_entry *out);
/* Drop entries with rel >= the given offset, in memory and file (Kafka's
 * TimeIndex.truncateTo). */
mk_err mk_time_index_truncate_rel(mk_time_index *ix, uint32_t rel);

#endif
