/*
 * segment.h — one segment of a partition log: NNN.log with its two sparse
 * indexes, Kafka's: NNN.index (index.h, the offset index: offset to byte
 * position) and NNN.timeindex (timeindex.h, the time index: timestamp to
 * offset). Internal to the log (log.c).
 *
 * A segment owns its three file descriptors (through the descriptor
 * cache, fdcache.h: open only while used or recently used) and the
 * in-memory arrays of both indexes. It is either active (the last one of
 * the log: appended to, its state fully known from the recovery scan and
 * the appends since) or closed (no longer appended to; its indexes are
 * read lazily on the first lookup, and both rebuilt from the .log when
 * either is missing or invalid). A segment closed by a roll keeps its
 * index files open until mk_segment_flush() has made them durable; that
 * flush may run on the log's flusher thread while the log's own thread
 * reads the segment (pread of the .log, in-memory index lookups), so it
 * touches nothing else: the fds it syncs and closes, and dirty/flushed
 * and the indexes' dirty/synced.
 *
 * The two indexes are kept in step by one rule (index_batch, segment.c):
 * the first batch, and then the first batch starting index.interval.bytes
 * or more after the last offset entry, get an offset entry; alongside it
 * the time index gets (max timestamp so far, the batch that first reached
 * it) when that maximum grew since the last time entry (Kafka's
 * LogSegment.append, with Kafka's maybeAppend); the seal at a roll adds
 * the same for the segment's final maximum (onBecomeInactiveSegment).
 * Rebuilds apply the same rule, so they write the same entries.
 *
 * Invariants:
 *   - [0, size) of the .log holds whole, valid frames whose offsets strictly
 *     increase, all >= base and, relative to base, within u32; size fits in
 *     u32 too (positions in the index are u32);
 *   - flushed <= size: [0, flushed) is known durable; a closed segment is
 *     entirely durable (flushed == size) once flushed after its roll;
 *   - when indexes_loaded, every offset entry points at a batch start in
 *     [0, size), every time entry names the batch that first reached its
 *     timestamp, the first batch always has an entry in both, and a sealed
 *     segment's last time entry carries its max timestamp;
 *   - an active segment has indexes_loaded, and next_offset, max_ts,
 *     max_ts_base, last_base and last_pos describe its batches;
 *   - runway_end is 0, or > size: then the .log is runway_end bytes long
 *     and [size, runway_end) holds zeros (the runway, below), or what an
 *     append that failed inside the runway left (the next append, the
 *     seal or the close overwrites or cuts it; a crash leaves it to the
 *     recovery scan, as any failed append's bytes).
 *
 * The runway. The page cache gives a small write into new pages of a file
 * a small folio, often one per 4 KiB page, and each folio costs its
 * allocation, its buffer heads and its delayed-allocation reservation; a
 * write into pages that already exist only copies. A topic append puts a
 * piece of 8-40 KiB into each partition's log per write, at whatever
 * unaligned offset the log ends: measured here, 16 such appends cost the
 * kernel 2.4 times one 160 KiB append of the same bytes (bench/README.md,
 * "The runway"). So an active segment whose owner set fill_limit, once it
 * holds MK_SEGMENT_RUNWAY_FROM bytes, zero-fills the file ahead of an
 * append that would pass runway_end, up to the next multiple of
 * MK_SEGMENT_RUNWAY (at most fill_limit): large aligned writes (pieces,
 * below) that get large folios, which the following appends overwrite.
 * Kafka's log.preallocate makes segment files longer than their data the
 * same way, for the same reader rules: nothing reads past size; seal and close
 * cut the file to size (seal's cut marks the segment dirty, so that the
 * roll's flush makes the new length durable before the recovery point
 * passes the segment: a closed segment is never scanned at open, its
 * size is its stat's); a crash leaves the zeros, which the recovery scan
 * cuts without calling them a torn write (a tail of zeros at most
 * MK_SEGMENT_ZERO_TAIL_MAX long); crash simulation cuts to flushed as
 * before. A prepared segment (below) starts with its first runway,
 * written by the pool thread that prepares it. Zeros are always written
 * in MK_SEGMENT_RUNWAY-aligned pieces: a folio is as large as the write
 * that made it, and a small append into a folio pays for all of it.
 *
 * Errors name the file and position: "PATH at byte POS: REASON".
 *
 * Crash points: segment.create.after-open (the new .log exists, its index
 * files not yet); segment.prepare.after-log (a prepared .log exists, its
 * prepared index files not yet); segment.adopt.after-log (a prepared .log
 * renamed into place, its index files not yet).
 */
#ifndef MK_SEGMENT_H
#define MK_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "error.h"
#include "fdcache.h"
#include "index.h"
#include "strbuf.h"
#include "timeindex.h"

typedef struct {
	int64_t base;
	char *log_path, *index_path, *timeindex_path;
	char *txnindex_path;    /* NNN.txnindex, only where it has entries:
				 * written by the log (txnindex.h) */
	int64_t txnindex_size;  /* its bytes as the log last wrote or saw
				 * them (0: no file); -1: not known yet */
	/* The descriptors (fd, the indexes') are cached: opened on
	 * first use, closed by the cache (least recently used first) when
	 * the process holds too many; valid only inside a use (segment.c
	 * brackets each). mk_segment_close and _remove take the segment out
	 * of the cache. */
	mk_fdcache *cache;
	mk_fdcache_node node;
	int fd;                 /* the .log, read-write; -1: not open now */
	uint64_t size;          /* bytes of whole valid frames */
	uint64_t flushed;       /* bytes known durable */
	uint64_t runway_end;    /* 0, or the end of the zeroed runway */
	uint64_t fill_limit;    /* set by the owner: 0 no runway, else the
				 * file length a runway may reach */
	bool active;
	bool dirty;             /* .log changed since its last fsync */
	bool indexes_loaded;    /* both indexes hold this segment's entries */
	bool sized;             /* size and flushed are known: false only for
				 * a segment opened unsized, until its first
				 * use (mk_segment_know_size) */
	mk_offset_index index;  /* NNN.index */
	mk_time_index timeindex;        /* NNN.timeindex */
	/* Known for the active segment (-1 / INT64_MIN otherwise): */
	int64_t next_offset;    /* after the last batch; base when empty */
	int64_t max_ts;         /* largest batch max timestamp; INT64_MIN: none */
	int64_t max_ts_base;    /* base offset of the first batch reaching it */
	int64_t last_base;      /* base offset of the last batch; -1: none */
	uint64_t last_pos;      /* its byte position */
} mk_segment;

/*
 * Where a batch may sit, checked by every forward walk over a segment's
 * batches: the scan here (open, recovery, index rebuilds, the boundary
 * check of a truncation) and the log's reads, time lookups and batch
 * lists (log.c). Base offset and epoch lie outside the frame's CRC
 * (codec.h): these checks are what guards them. A batch starts at or
 * after the segment base and the end of the batch before it and ends
 * below the next segment's base; its epoch, when not -1, does not go down
 * from the last one before it and, where the walk knows the epoch cache,
 * does not pass the cache's latest.
 */
#define MK_PLACE_NO_CACHE INT32_MAX    /* max_epoch of a walk without one */
typedef struct {
	int64_t base;           /* the segment's base offset */
	int64_t limit;          /* offsets stay below: the next segment's base */
	int64_t next;           /* the offset after the last batch placed
				 * (base before the first) */
	int32_t epoch;          /* the last epoch >= 0 placed, or -1 */
	int32_t max_epoch;      /* the epoch cache's latest, or
				 * MK_PLACE_NO_CACHE */
} mk_batch_place;

void mk_batch_place_init(mk_batch_place *pl, int64_t base, int64_t limit,
			 int32_t max_epoch);
/*
 * NULL when b sits where pl says a batch may (pl then moves past it), or
 * why not, pl unchanged: "offset below the segment base", "offsets out of
 * order", "offset at or past the next segment's base", and for the epoch
 * "leader epoch out of order" against a cache (down, or past its latest),
 * "leader epoch went down" without one.
 */
const char *mk_batch_misplaced(mk_batch_place *pl, const mk_batch_view *b);

/* Called for each batch a scan accepts, in order, with its position. */
typedef void (*mk_segment_batch_fn)(void *arg, const mk_batch_view *b,
				    uint64_t pos);

/* Create an empty active segment at base (fails if the .log exists).
 * Every constructor takes the descriptor cache its files go through. */
mk_err mk_segment_create(const char *dir, int64_t base, mk_fdcache *cache,
			 mk_segment **out, mk_strbuf *why);
/*
 * Prepared segment files. Creating a file is the expensive part of a roll
 * (an inode allocation each; see docs/filesystem.md, "prepared segment
 * files"), so the log has its next segment's three files made ahead, off
 * the append path, under names no listing takes for a segment:
 * DIR/prepared.log.tmp (empty, or the first runway's zeros:
 * mk_segment_prepare), prepared.index.tmp and prepared.timeindex.tmp
 * (empty). The roll renames them into place. They hold no data: a crash
 * leaves them as garbage, which the next open deletes.
 */
/* Make the three prepared files in dir, new (an earlier one is unlinked,
 * never truncated). The .log starts with prefill bytes of zeros (at most
 * MK_SEGMENT_PREFILL_MAX): the adopted segment's first runway, written
 * here, off the append path; 0 leaves it empty. */
mk_err mk_segment_prepare(const char *dir, uint64_t prefill, mk_strbuf *why);
/* Is name (a directory entry) one of the prepared files? */
bool mk_segment_prepared_name(const char *name);
/* Delete the prepared files of dir (those missing are fine). */
void mk_segment_discard_prepared(const char *dir);
/* mk_segment_create from the prepared files: the .log renamed to its
 * name (never over an existing one: that fails as create does), then the
 * index files (over stale ones of an earlier segment at this base). When
 * the prepared .log cannot be renamed (missing, or neither renameat2's
 * RENAME_NOREPLACE nor link works), it is mk_segment_create. */
mk_err mk_segment_create_prepared(const char *dir, int64_t base,
				  mk_fdcache *cache, mk_segment **out,
				  mk_strbuf *why);
/* Open an existing segment as closed: a stat, no descriptor, no scan,
 * indexes not read. */
mk_err mk_segment_open_closed(const char *dir, int64_t base,
			      mk_fdcache *cache, mk_segment **out,
			      mk_strbuf *why);
/* Open an existing closed segment without any I/O: its size is learnt
 * (a stat) at its first load, scan or cut, or by mk_segment_know_size. A
 * mount of many closed segments then costs no system call per segment. */
mk_err mk_segment_open_unsized(const char *dir, int64_t base,
			       mk_fdcache *cache, mk_segment **out);
/* Learn the size of a segment opened unsized (nothing to do otherwise). */
mk_err mk_segment_know_size(mk_segment *s, mk_strbuf *why);
/* The same, the .log looked up relative to dirfd (an open descriptor of
 * dir, or AT_FDCWD): a mount opens many. */
mk_err mk_segment_open_closed_at(int dirfd, const char *dir, int64_t base,
				 mk_fdcache *cache, mk_segment **out,
				 mk_strbuf *why);
/*
 * Open an existing segment as active with recovery: scan every frame from
 * byte 0, truncate the file at the first invalid or truncated frame (or
 * batch whose offsets do not follow, or reach end_limit, the next segment's
 * base or INT64_MAX), rebuild the index, fsync. *cut gets the bytes
 * removed; when non-zero, why (if given) says where and why. fn (may be
 * NULL) sees every batch kept. durable_to: every offset below it is known
 * to be durable (the log's recovery point; -1: nothing known), so a
 * segment wholly below it, with nothing cut, needs no fsync.
 */
mk_err mk_segment_open_active(const char *dir, int64_t base, int64_t end_limit,
			      int64_t durable_to, mk_fdcache *cache,
			      int64_t interval, mk_segment_batch_fn fn,
			      void *arg, mk_segment **out, uint64_t *cut,
			      mk_strbuf *why);

/*
 * Make the indexes of a closed segment usable: read and validate both
 * (each on its own, then the time index's first entry against the offset
 * index's: both name the first batch), rebuilding both from a strict scan
 * of the .log when either is missing or invalid (a short file, or a .index
 * of the merged 16-byte format of before issue 25 point 2, index.h, whose
 * segment has no .timeindex either). end_limit is the next segment's
 * base offset (INT64_MAX if none): every offset in this segment is below
 * it. A frame failing in the scan is KAFKA_STORAGE_ERROR. Nothing to do
 * once loaded.
 */
mk_err mk_segment_load_indexes(mk_segment *s, int64_t end_limit,
			       int64_t interval, mk_strbuf *why);
/* Rebuild both indexes from a strict scan, even if they looked valid. */
mk_err mk_segment_rebuild_indexes(mk_segment *s, int64_t end_limit,
				  int64_t interval, mk_strbuf *why);
/* Strict scan of [0, size) calling fn for every batch; no state changes. */
mk_err mk_segment_scan(mk_segment *s, int64_t end_limit,
		       mk_segment_batch_fn fn, void *arg, mk_strbuf *why);

/*
 * Append a frame (already validated, b its view) at the end of the active
 * segment, adding index entries per interval. One write to the .log; the
 * index entries are written lazily (mk_segment_write_index_pending).
 */
mk_err mk_segment_append(mk_segment *s, const uint8_t *frame,
			 const mk_batch_view *b, int64_t interval,
			 mk_strbuf *why);
/*
 * The same for n frames (b their views, offsets increasing), at most
 * MK_SEGMENT_APPEND_MAX, written with one pwritev (mk_segment_append is
 * this with n = 1; a short write goes on from where it stopped, a failure
 * leaves the segment's size as it was): a partition's batches
 * of one topic append go to the page cache as one piece (small writes into
 * many files cost the page cache more per byte than large ones).
 */
#define MK_SEGMENT_APPEND_MAX 64
#define MK_SEGMENT_RUNWAY (256u * 1024)
#define MK_SEGMENT_RUNWAY_FROM (64u * 1024)
/* The most zeros a prepared .log starts with, and the longest tail of
 * zeros the recovery scan cuts as a runway (at least 2 runways). */
#define MK_SEGMENT_PREFILL_MAX (1024u * 1024)
#define MK_SEGMENT_ZERO_TAIL_MAX MK_SEGMENT_PREFILL_MAX
mk_err mk_segment_append_many(mk_segment *s, const uint8_t *const *frames,
			      const mk_batch_view *b, size_t n,
			      int64_t interval, mk_strbuf *why);
/* Would a batch of len bytes ending at last_offset still fit the formats? */
bool mk_segment_can_hold(const mk_segment *s, size_t len, int64_t last_offset);

/* The largest record timestamp of the segment (indexes loaded): the last
 * time-index entry's of a closed one; INT64_MIN when it holds no batch. */
int64_t mk_segment_max_timestamp(const mk_segment *s);

/* Byte position to start scanning for offset (floor index lookup). */
uint64_t mk_segment_lookup(const mk_segment *s, int64_t offset);
/* Byte position to start scanning for the first timestamp >= ts: the
 * offset index's floor of the last time entry with a timestamp <= ts
 * (Kafka's findOffsetByTimestamp; timeindex.h says why it is exact), 0
 * when there is none. */
uint64_t mk_segment_lookup_time(const mk_segment *s, int64_t ts);

/*
 * Truncation in place, in two steps so that the log can delete the later
 * segments in between. check_cut() scans the segment strictly (a bad frame
 * is KAFKA_STORAGE_ERROR) and accepts offset only when it is the base of a
 * batch in it or the end of one (INVALID_REQUEST otherwise); it changes
 * nothing. cut_at() then drops every batch at or after the offset:
 * ftruncate of the .log, truncation of both indexes, fsync; the segment
 * becomes active.
 */
typedef struct {
	int64_t offset;         /* the new end offset */
	uint64_t pos;           /* the new size */
	int64_t max_ts;         /* of the batches kept */
	int64_t max_ts_base;    /* the first kept batch reaching it */
	int64_t last_base;
	uint64_t last_pos;      /* last_base's byte position */
} mk_segment_cut;

mk_err mk_segment_check_cut(mk_segment *s, int64_t offset, mk_segment_cut *c,
			    mk_strbuf *why);
mk_err mk_segment_cut_at(mk_segment *s, const mk_segment_cut *c,
			 int64_t interval, mk_strbuf *why);
/*
 * Index entries appended by mk_segment_append wait in memory (up to a
 * page, entryfile.h); this writes them to both index files, so that the
 * files show every entry (a listing or view of the segments does it).
 */
mk_err mk_segment_write_index_pending(mk_segment *s, mk_strbuf *why);
/*
 * At roll: add the final time-index entry (the segment's max timestamp
 * and the batch that first reached it, when it grew after the last
 * entry), write the pending entries and mark closed. Nothing is fsynced:
 * mk_segment_flush() does that, and then closes the index files.
 */
mk_err mk_segment_seal(mk_segment *s, mk_strbuf *why);
/*
 * fsync the .log and the indexes when anything is unflushed; a closed
 * segment's index files are then closed (their entries live in memory).
 */
mk_err mk_segment_flush(mk_segment *s, mk_strbuf *why);
/*
 * Simulated crash: cut the .log and indexes back to what was fsynced; with
 * torn (the log asks it of its last segment), leave a partial frame after
 * it. Then free.
 */
void mk_segment_crash(mk_segment *s, bool torn);
/* Close the files and free (no flush). NULL is fine. */
void mk_segment_close(mk_segment *s);
/* Delete the three files (the .log first) and free. */
mk_err mk_segment_remove(mk_segment *s, mk_strbuf *why);

/*
 * Reading frames of a segment into a strbuf, decoding them in place.
 *
 * The reader fills buf from position `tail` onwards with file bytes read by
 * pread in chunks (16 KiB first, doubling up to max_chunk; 0 means 1 MiB),
 * and walks frame by frame. Each frame returned by next()
 * is then either skipped (dropped from buf) or kept (left in buf); once one
 * is kept, every later one must be kept or the walk ended. finish() cuts buf
 * to tail + the kept frames. Views point into buf and are valid until the
 * next call.
 */
typedef struct {
	const mk_segment *seg;
	mk_strbuf *buf;
	size_t tail;            /* the window starts at buf->buf + tail */
	uint64_t wpos;          /* file position of the window start */
	size_t cur;             /* window offset of the next frame */
	size_t frame_len;       /* of the frame next() last returned */
	bool keeping;           /* window [0, cur) holds kept frames */
	uint64_t limit;         /* file bytes that may be read */
	size_t chunk;           /* next read size, at least */
	size_t max_chunk;       /* the read size grows up to this */
	const char *reason;     /* why next() failed */
} mk_segment_reader;

void mk_segment_reader_init(mk_segment_reader *r, const mk_segment *s,
			    uint64_t pos, uint64_t limit, mk_strbuf *buf,
			    size_t max_chunk);
/*
 * MK_OK: *b is the frame at the cursor, or *done at the limit.
 * CORRUPT_MESSAGE: the bytes there are not a valid frame (r->reason).
 * KAFKA_STORAGE_ERROR: I/O failure (r->reason).
 */
mk_err mk_segment_reader_next(mk_segment_reader *r, mk_batch_view *b,
			      bool *done);
void mk_segment_reader_skip(mk_segment_reader *r);
void mk_segment_reader_keep(mk_segment_reader *r);
/* File position of the cursor. */
uint64_t mk_segment_reader_pos(const mk_segment_reader *r);
/* Cut buf to tail + kept frames; returns the kept bytes. */
size_t mk_segment_reader_finish(mk_segment_reader *r);
/*
 * Ask the kernel to bring [pos, pos + len) of the .log into the page cache
 * (POSIX_FADV_WILLNEED: the reads start, nobody waits). Advisory: a
 * failure, to open the file included, is ignored.
 */
void mk_segment_read_ahead(mk_segment *s, uint64_t pos, uint64_t len);

/* ---- inspection (read-only, for the views of a log) ---------------------- */

/* The CRC field of the frame mk_segment_reader_next() last returned. */
uint32_t mk_segment_reader_crc(const mk_segment_reader *r);
/*
 * The in-memory entries of a segment's two indexes, as rows (the indexes
 * must be loaded: mk_segment_load_indexes): the offset index's first,
 * each an absolute offset and its byte position (*ts -1), then the time
 * index's, each a timestamp and its absolute offset (*pos -1: a time
 * entry has no position). count is both indexes' entries.
 */
size_t mk_segment_index_count(const mk_segment *s);
void mk_segment_index_entry(const mk_segment *s, size_t i, int64_t *offset,
			    int64_t *pos, int64_t *ts);


#endif
