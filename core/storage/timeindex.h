/*
 * timeindex.h — the sparse time index of one segment (NNN.timeindex).
 *
 * Owns the in-memory array of entries and the open .timeindex file
 * descriptor. An entry (ts, rel) says: every record in the batches up to and
 * including the batch starting at relative offset rel has a timestamp <= ts
 * (ts is the segment's max timestamp so far). On disk each entry is 12
 * bytes, big-endian: i64 timestamp | u32 relative offset, appended in order.
 *
 * Invariants:
 *   - timestamps never decrease, relative offsets strictly increase;
 *   - when a file is attached (fd >= 0) it holds the first entries, all
 *     but those appended and still pending (up to a page, entryfile.h),
 *     except during a rebuild (between clear/push and write_all);
 *   - entries [0, synced) are known to be durable.
 *
 * Lookup: to find the first record with timestamp >= T, start scanning at
 * the batch of the last entry whose ts < T (nothing before it qualifies),
 * or at the start of the segment when there is none.
 *
 * One typed face of the fixed-width entry file (entryfile.h); the offset
 * index (index.h) is the other.
 */
#ifndef MK_TIMEINDEX_H
#define MK_TIMEINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "entryfile.h"
#include "error.h"

#define MK_TIMEINDEX_ENTRY_SIZE 12

typedef struct {
	int64_t ts;     /* max timestamp so far */
	uint32_t rel;   /* offset - segment base of a batch start */
} mk_time_entry;

typedef struct {
	mk_entry_file f;        /* of mk_time_entry */
} mk_timeindex;

void mk_timeindex_init(mk_timeindex *ti);
/* Attach the file at path, creating it when missing. */
mk_err mk_timeindex_open(mk_timeindex *ti, const char *path);
bool mk_timeindex_attached(const mk_timeindex *ti);
size_t mk_timeindex_count(const mk_timeindex *ti);
/*
 * Read and validate the attached file: length a multiple of 12, timestamps
 * nondecreasing, relative offsets strictly increasing and below rel_limit,
 * and at least one entry when the segment holds data. *valid false (entries
 * cleared) means: rebuild. Only I/O failure is an error.
 */
mk_err mk_timeindex_load(mk_timeindex *ti, uint64_t seg_size,
			 uint64_t rel_limit, bool *valid);
void mk_timeindex_clear(mk_timeindex *ti);
void mk_timeindex_push(mk_timeindex *ti, int64_t ts, uint32_t rel);
/* Add an entry for the end of the file (written lazily, entryfile.h). */
mk_err mk_timeindex_append(mk_timeindex *ti, int64_t ts, uint32_t rel);
mk_err mk_timeindex_write_pending(mk_timeindex *ti);
mk_err mk_timeindex_write_all(mk_timeindex *ti);
/* The last entry with ts < target; false when there is none. */
bool mk_timeindex_before(const mk_timeindex *ti, int64_t target,
			 mk_time_entry *out);
bool mk_timeindex_last(const mk_timeindex *ti, mk_time_entry *out);
/* Drop entries with rel >= the given offset, in memory and file. */
mk_err mk_timeindex_truncate_rel(mk_timeindex *ti, uint32_t rel);
mk_err mk_timeindex_sync(mk_timeindex *ti);
void mk_timeindex_crash(mk_timeindex *ti);
/* Close the file, keeping the entries; mk_timeindex_open() re-attaches. */
void mk_timeindex_detach(mk_timeindex *ti);
void mk_timeindex_close(mk_timeindex *ti);

#endif
