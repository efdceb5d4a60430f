/*
 * index.h — the sparse index of one segment (NNN.index): one file, two
 * lookups. Kafka keeps an offset index and a time index per segment; here
 * one entry carries both, so a roll makes two files (.log, .index), not
 * three (docs/filesystem.md, "the index: one file, two lookups").
 *
 * Owns the in-memory array of entries and the open .index file descriptor.
 * An entry is an index point: the batch starting at relative offset rel
 * (absolute offset - segment base) sits at byte position pos of the .log,
 * and ts is the largest record timestamp of every batch up to and
 * including it (the segment's max timestamp so far). On disk each entry is
 * 16 bytes, big-endian: i64 max timestamp | u32 relative offset | u32
 * position, appended in order; the file holds nothing else. (The timestamp
 * comes first on purpose: an index of the earlier 8-byte format — u32
 * rel | u32 pos, no longer written — read as 16-byte entries puts its
 * second entry's position, never 0, in the first entry, so load rejects it
 * and the segment rebuilds it.)
 *
 * Two faces over the same entries:
 *   - offset lookup (mk_index_floor): the last entry with rel <= target:
 *     start scanning for an offset at its position;
 *   - time lookup (mk_index_before_time): the last entry with ts < target:
 *     nothing up to and including its batch reaches the target, so start
 *     scanning for the first timestamp >= target at its position.
 *
 * Invariants:
 *   - entries strictly increase in offset and in position; timestamps
 *     never decrease;
 *   - for a segment holding data the first entry is at position 0;
 *   - when a file is attached (fd >= 0) it holds the first entries (16
 *     bytes each), all of them but those appended and still pending (up
 *     to a page, entryfile.h), except during a rebuild: between
 *     mk_index_clear() / mk_index_push() and mk_index_write_all();
 *   - entries [0, synced) are known to be durable (fsynced).
 *
 * The index is only an accelerator: whoever owns it (the segment) rebuilds
 * it from the log when mk_index_load() reports it invalid.
 *
 * A typed face of the fixed-width entry file (entryfile.h, which owns the
 * array, the file and the invariants below the entry order). Not
 * thread-safe: the owning segment serialises every call (segment.h).
 */
#ifndef MK_INDEX_H
#define MK_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "entryfile.h"
#include "error.h"

#define MK_INDEX_ENTRY_SIZE 16

typedef struct {
	int64_t ts;     /* max record timestamp up to and including the batch */
	uint32_t rel;   /* offset - segment base */
	uint32_t pos;   /* byte position of the batch in the .log */
} mk_index_entry;

typedef struct {
	mk_entry_file f;        /* of mk_index_entry */
} mk_index;

void mk_index_init(mk_index *ix);
/* Attach the file at path, creating it when missing. Entries untouched. */
mk_err mk_index_open(mk_index *ix, const char *path);
bool mk_index_attached(const mk_index *ix);
size_t mk_index_count(const mk_index *ix);
/* Entry i < count. */
const mk_index_entry *mk_index_at(const mk_index *ix, size_t i);
/*
 * Read the attached file into memory and validate it against the segment:
 * length a multiple of 16, offsets strictly increasing and below
 * rel_limit, positions strictly increasing and below seg_size, timestamps
 * nondecreasing and — for a segment holding data — a first entry at
 * position 0. *valid false (entries then cleared) means: rebuild. Only
 * I/O failure is an error.
 */
mk_err mk_index_load(mk_index *ix, uint64_t seg_size, uint64_t rel_limit,
		     bool *valid);
/* Drop every entry, in memory only (the start of a rebuild). */
void mk_index_clear(mk_index *ix);
/* Add an entry in memory only; it must keep the order invariant. */
void mk_index_push(mk_index *ix, uint32_t rel, uint32_t pos, int64_t ts);
/* Add an entry for the end of the file (written lazily, entryfile.h). */
mk_err mk_index_append(mk_index *ix, uint32_t rel, uint32_t pos, int64_t ts);
/* Write the appended entries still pending. */
mk_err mk_index_write_pending(mk_index *ix);
/* Make the file hold exactly the in-memory entries (after a rebuild). */
mk_err mk_index_write_all(mk_index *ix);
/* Offset face: the largest entry with rel <= target; false when none. */
bool mk_index_floor(const mk_index *ix, uint32_t rel, mk_index_entry *out);
/* Time face: the last entry with ts < target; false when none. */
bool mk_index_before_time(const mk_index *ix, int64_t target,
			  mk_index_entry *out);
/* The last entry; false when empty. */
bool mk_index_last(const mk_index *ix, mk_index_entry *out);
/* Drop entries with rel >= the given offset, in memory and file. */
mk_err mk_index_truncate_rel(mk_index *ix, uint32_t rel);
/* Drop entries with pos >= the given position, in memory and file. */
mk_err mk_index_truncate_pos(mk_index *ix, uint32_t pos);
/* Write what is pending; fsync when anything was written since the last
 * sync. */
mk_err mk_index_sync(mk_index *ix);
/* Simulated crash: cut the file back to the synced entries. */
void mk_index_crash(mk_index *ix);
/* Close the file but keep the entries (a closed segment's index is only
 * read); mk_index_open() attaches it again. */
void mk_index_detach(mk_index *ix);
/* Close the descriptor only, pending entries written first (the
 * descriptor cache's eviction, entryfile.h mk_entries_evict). */
void mk_index_evict(mk_index *ix);
/* Close the file and free the entries; the index is re-initialised. */
void mk_index_close(mk_index *ix);

#endif
