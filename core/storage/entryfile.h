/*
 * entryfile.h — a file of fixed-width entries mirrored by an array in
 * memory: what each of a segment's two indexes is (Kafka's AbstractIndex,
 * under its OffsetIndex and TimeIndex: here index.h, NNN.index, and
 * timeindex.h, NNN.timeindex, each a kind of entry over this).
 *
 * Owns the array and the open file descriptor. A kind (mk_entry_kind) says
 * what one entry is: its size in memory and on disk, how it is encoded,
 * the order consecutive entries must keep, and what a loaded entry must
 * satisfy against its segment. The file holds the entries encoded one
 * after another, appended in order, and nothing else (Kafka preallocates
 * its index files and trims them at the roll; nothing is preallocated
 * here, so a file's length is always its entries').
 *
 * Appends are written to the file lazily: an appended entry waits in
 * memory until a page of entries (MK_ENTRIES_PENDING_BYTES) is pending, or
 * until mk_entries_write_pending(), _sync() or _write_all(). So a batch
 * appended to the log costs no system call for its index entries (Kafka
 * gets the same from its memory-mapped indexes). What waits is lost by a
 * crash of the process, which costs nothing: an active segment's indexes
 * are rebuilt at open, and a closed one's are written when it is sealed.
 *
 * Invariants:
 *   - consecutive entries keep the kind's order (kind->ordered);
 *   - when a file is attached (fd >= 0) it holds exactly the first
 *     `written` entries, written <= n, except during a rebuild: between
 *     mk_entries_clear() / _push() and mk_entries_write_all();
 *   - entries [0, synced) are known to be durable (fsynced); synced <=
 *     written.
 *
 * Not thread-safe: the owning segment's owner serialises every call.
 */
#ifndef MK_ENTRYFILE_H
#define MK_ENTRYFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct {
	size_t mem_size;          /* sizeof the entry struct */
	size_t disk_size;         /* bytes per entry in the file */
	void (*encode)(uint8_t *out, const void *e);
	void (*decode)(const uint8_t *in, void *e);
	/* next may follow prev. */
	bool (*ordered)(const void *prev, const void *next);
	/* A loaded entry i (0-based) is plausible for a segment of seg_size
	 * bytes whose relative offsets stay below rel_limit. */
	bool (*plausible)(const void *e, size_t i, uint64_t seg_size,
			  uint64_t rel_limit);
} mk_entry_kind;

typedef struct {
	const mk_entry_kind *kind;
	int fd;                   /* -1: no file attached */
	uint8_t *e;               /* n entries of kind->mem_size bytes */
	size_t n, cap;
	size_t written;           /* entries in the file (the rest pending) */
	size_t synced;            /* entries known durable */
	bool dirty;               /* written since the last sync */
} mk_entry_file;

void mk_entries_init(mk_entry_file *f, const mk_entry_kind *kind);
/* Attach the file at path, creating it when missing. Entries untouched. */
mk_err mk_entries_open(mk_entry_file *f, const char *path);
static inline bool mk_entries_attached(const mk_entry_file *f)
{
	return f->fd >= 0;
}
/* Appended entries not yet written to the file. */
static inline size_t mk_entries_pending(const mk_entry_file *f)
{
	return f->n - f->written;
}
static inline const void *mk_entries_at(const mk_entry_file *f, size_t i)
{
	return f->e + i * f->kind->mem_size;
}
/*
 * Read the attached file and validate it: length a multiple of the entry
 * size, no more entries than seg_size bytes, entries iff seg_size > 0,
 * each entry plausible and in order. *valid false (entries then cleared)
 * means: rebuild. Only I/O failure is an error.
 */
mk_err mk_entries_load(mk_entry_file *f, uint64_t seg_size,
		       uint64_t rel_limit, bool *valid);
/* Drop every entry, in memory only (the start of a rebuild). */
void mk_entries_clear(mk_entry_file *f);
/* Add an entry in memory only; it must keep the order. */
void mk_entries_push(mk_entry_file *f, const void *e);
/* Bytes of appended entries that may wait in memory (one page). */
#define MK_ENTRIES_PENDING_BYTES 4096
/* Add an entry for the end of the file: written once a page of entries is
 * pending, or by the calls below. */
mk_err mk_entries_append(mk_entry_file *f, const void *e);
/* mk_entries_append with write, else mk_entries_push (a rebuild). */
mk_err mk_entries_add(mk_entry_file *f, const void *e, bool write);
/* Write the pending entries at the end of the file (one pwrite). */
mk_err mk_entries_write_pending(mk_entry_file *f);
/* Make the file hold exactly the in-memory entries (after a rebuild). */
mk_err mk_entries_write_all(mk_entry_file *f);
/* The number of leading entries for which below(e, arg) holds (entries
 * must be partitioned by it: true ones first). */
size_t mk_entries_partition(const mk_entry_file *f,
			    bool (*below)(const void *e, const void *arg),
			    const void *arg);
/* The last of the leading entries for which below() holds, copied to
 * out (kind->mem_size bytes); false when there is none. */
bool mk_entries_last_where(const mk_entry_file *f,
			   bool (*below)(const void *e, const void *arg),
			   const void *arg, void *out);
/* The last entry, copied to out; false when there is none. */
bool mk_entries_last(const mk_entry_file *f, void *out);
/* Keep the first n entries, in memory and file. */
mk_err mk_entries_truncate(mk_entry_file *f, size_t n);
/* Write what is pending, then fsync the file when anything was written
 * since the last sync. */
mk_err mk_entries_sync(mk_entry_file *f);
/* Simulated crash: cut the file back to the synced entries (nothing
 * pending is written). */
void mk_entries_crash(mk_entry_file *f);
/* Close the file, keeping the entries; mk_entries_open() re-attaches. */
void mk_entries_detach(mk_entry_file *f);
/* Close the descriptor only, whatever was written since the last sync
 * (the descriptor cache's eviction, fdcache.h): pending entries are
 * written first; the data stays in the page cache and dirty stays set, so
 * the next sync, through a descriptor opened again by mk_entries_open(),
 * still makes it durable. */
void mk_entries_evict(mk_entry_file *f);
/* Close the file and free the entries, pending ones included (written
 * only by the calls above); the kind is kept. */
void mk_entries_close(mk_entry_file *f);

#endif
