/*
 * log.h — one partition replica's log on disk: an ordered list of segments.
 *
 * Layout of a log directory (DATA_DIR/broker-B/T-P/):
 *
 *     NNNNNNNNNNNNNNNNNNNN.log        Kafka RecordBatch v2 batches
 *                                     (codec.h), back to back
 *     NNNNNNNNNNNNNNNNNNNN.index      Kafka's offset index: (u32 relative
 *                                     offset, u32 byte position) entries
 *                                     (index.h)
 *     NNNNNNNNNNNNNNNNNNNN.timeindex  Kafka's time index: (i64 max
 *                                     timestamp so far, u32 relative
 *                                     offset) entries (timeindex.h)
 *     NNNNNNNNNNNNNNNNNNNN.txnindex   Kafka's aborted-transaction index,
 *                                     only where the segment holds an
 *                                     abort marker (txnindex.h)
 *     leader-epoch-checkpoint         the leader-epoch cache (epoch, start
 *                                     offset), Kafka's format
 *     checkpoint                      the durable segments' bases
 *
 * and, in the parent directory (the broker's, DATA_DIR/broker-B: logdir.h),
 * this log's entries of recovery-point-offset-checkpoint and
 * log-start-offset-checkpoint, keyed by the directory's name, which is
 * TOPIC-PARTITION as in Kafka (mk_log_open refuses any other). All of them
 * are replaced atomically (log_checkpoint.h says when, and in which order).
 *
 * N is the segment's base offset in 20 digits. The last segment is active,
 * the others closed. Invariants:
 *   - every segment holds whole, valid frames, offsets strictly increasing;
 *     segment i's offsets are below segment i+1's base offset, and from the
 *     recovery point on, segment i+1's base is segment i's next offset;
 *   - everything below the recovery point (in recovery-point-offset-
 *     checkpoint) was fsynced;
 *   - a closed segment is fsynced (with its indexes) by the background
 *     flusher, in roll order, after which the recovery point moves past
 *     it; segments from the one holding the recovery point on are
 *     recovered at open;
 *   - indexes are accelerators only: a missing or invalid index is rebuilt
 *     from its segment;
 *   - the epoch cache's start offsets increase with the epochs, and every
 *     entry starts below the log end;
 *   - every segment the checkpoint lists (those below the recovery point
 *     and not below the log start when it was written; its epochs file
 *     covers them too) exists: open refuses a log missing one
 *     (no silent gap). So a segment is removed only once a checkpoint no
 *     longer lists it (truncation lowers the recovery point first; a
 *     deletion moves the log start first);
 *   - the saved log start and recovery point are at most the durable log
 *     end: open refuses a log whose recovered end is below either
 *     (KAFKA_STORAGE_ERROR naming the file and the value), never clamping
 *     it (which would hide every record, or lose fsynced ones).
 *
 * Open scans the segments from the one holding the recovery point to the
 * end: normally only the active one, a few more after a crash that left
 * rolled segments unflushed; every segment when the recovery point is not
 * known (no entry: a new log, or the file removed), as Kafka recovers
 * from offset 0. Each torn or corrupt tail is truncated to the
 * last whole, valid batch (indexes rebuilt); the segments after one that
 * lost data are deleted, so that the log stays a prefix of what was
 * written. Closed segments below the recovery point are trusted until
 * read: a frame failing its CRC there is reported as KAFKA_STORAGE_ERROR
 * with the file and position in mk_log_error(), and the log is repaired by
 * nobody — the owner takes the replica offline.
 *
 * Crash points: log.roll.{before-seal,after-seal,after-create},
 * log.flush.before-checkpoint (rolled segments fsynced, the recovery point
 * not yet moved), log.truncate.{before-cut,after-cut,done}, the
 * replacements of checkpoint and leader-epoch-checkpoint
 * log.ckpt.{after-write,after-fsync,after-rename,done} and log.epochs.*
 * (fileio.h), those of the log directory's files (logdir.h), and
 * segment.create.after-open, segment.prepare.after-log and
 * segment.adopt.after-log (segment.h).
 *
 * An mk_log is not thread-safe: its owner (the partition, see replica.h)
 * serialises every call under its lock. Rolled segments are fsynced, and
 * the checkpoint written, by the flusher pool given in mk_log_config (one
 * pool for every log of the cluster, flushpool.h); close and crash take
 * the log's work out of the pool. A roll never waits for an fsync unless
 * the log's rolled-but-unflushed segments exceed 1 GiB.
 *
 * The implementation is log.c and its pieces, which share the private
 * log_internal.h (struct mk_log, its locks): epoch_cache.h,
 * log_checkpoint.h, log_flush.h, log_loader.h.
 */
#ifndef MK_LOG_H
#define MK_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "epoch_cache.h"
#include "error.h"
#include "strbuf.h"
#include "txnindex.h"

struct mk_flush_pool;

typedef struct {
	int64_t segment_bytes;        /* roll threshold */
	int64_t index_interval_bytes; /* bytes between index entries */
	int64_t flush_messages;       /* fsync after this many; 0 = never */
	struct mk_flush_pool *pool;   /* flushes rolled segments (flushpool.h);
				       * NULL: a private one-thread pool made at
				       * the first roll. Fixed at open. */
	struct mk_fdcache *fdcache;   /* the segments' descriptors (fdcache.h);
				       * NULL: a private, unbounded one. */
} mk_log_config;

/* mk_epoch_entry (an epoch and its start offset): epoch_cache.h. */

typedef struct {
	int64_t base_offset;
	uint64_t size;                /* bytes in the .log */
	uint64_t txnindex_size;       /* bytes in the .txnindex; 0: none */
	bool active;
} mk_segment_info;

typedef struct mk_log mk_log;

/*
 * Open (creating when missing) the log in dir, whose name is TOPIC-PARTITION
 * (INVALID_CONFIG otherwise: the log directory's files are keyed by it).
 * Recovers the active segment. On failure *out is NULL and why (if given)
 * says what happened, naming the file and position.
 */
mk_err mk_log_open(const char *dir, const mk_log_config *cfg, mk_log **out,
		   mk_strbuf *why);
/* Flush everything, write the checkpoint, stop the flusher and free.
 * NULL is fine. */
void mk_log_close(mk_log *log);
/*
 * Simulated crash: the log loses what was written since it was last
 * flushed. The flusher stops (what it still had queued is not flushed);
 * the first segment with unflushed data is cut back to its flushed size
 * and every later segment is deleted, leaving a clean prefix; with torn, a
 * partial frame is left at the end of what remains. The log is then freed
 * without flushing. Reopening it with mk_log_open is the recovery.
 */
void mk_log_crash(mk_log *log, bool torn);
/*
 * After a storage error: stop using the log without touching its files —
 * no flush, no truncation (what the page cache holds stays; the next open
 * recovers from what is on disk). Frees the log.
 */
void mk_log_abandon(mk_log *log);

void mk_log_set_config(mk_log *log, const mk_log_config *cfg);
const char *mk_log_dir(const mk_log *log);
/* The log directory its offsets are kept in (logdir.h: its parent's,
 * acquired for the log's life), where the owner keeps what it adds for
 * the same key (the replica store: the HW). */
struct mk_logdir *mk_log_logdir(const mk_log *log);
/* The log's key there: its directory's name, TOPIC-PARTITION. */
void mk_log_key(const mk_log *log, const char **topic, int32_t *partition);
/* The descriptor cache its segments use (the configured one, or its
 * own); for private handles of its files (the cleaner's build). */
struct mk_fdcache *mk_log_fdcache(const mk_log *log);

int64_t mk_log_start_offset(const mk_log *log);
int64_t mk_log_end_offset(const mk_log *log);     /* LEO */
uint64_t mk_log_size_bytes(const mk_log *log);

/*
 * Leader append: frame is a finished, valid frame (mk_builder_finish)
 * whose base offset is rewritten to the log end and whose leader epoch is
 * set to epoch (mk_frame_assign). Only its header is checked
 * (CORRUPT_MESSAGE): its records and CRC are trusted, not validated again.
 * *base_out gets the assigned base offset.
 */
mk_err mk_log_append_leader(mk_log *log, uint8_t *frame, size_t len,
			    int32_t epoch, int64_t *base_out);
/*
 * Leader append of n frames (at most MK_LOG_APPEND_MAX) as mk_log_append_
 * leader appends each, in order: every header is checked and every frame
 * stamped (bases[i] its base offset) before anything is written; rolls
 * fall where they would one frame at a time, and the frames between two
 * rolls are written with one system call (pwritev). *appended: how many
 * were appended, all of them unless an error came part-way (a storage
 * error, or a frame too large for a segment), when the earlier ones stay.
 */
#define MK_LOG_APPEND_MAX 64
mk_err mk_log_append_leader_many(mk_log *log, uint8_t *const *frames,
				 const size_t *lens, size_t n, int32_t epoch,
				 int64_t *bases, size_t *appended);
/* Write system calls the appends made to .log files (tests, bench). */
uint64_t mk_log_write_calls(const mk_log *log);
/* Directory fsyncs the flushes made for segments created since the last
 * one (tests): with flush.messages, one per roll, none per append. */
uint64_t mk_log_dir_syncs(const mk_log *log);
/*
 * Replica append: frame already carries its offsets and epoch; its base
 * offset must be at least the log end (else INVALID_REQUEST; above it when
 * the leader's log was compacted there), it is validated
 * (CORRUPT_MESSAGE) and appended as is.
 */
mk_err mk_log_append_replica(mk_log *log, const uint8_t *frame, size_t len);
/*
 * The same for a frame this process has just validated: one that
 * mk_log_read returned (a follower's copy out of its leader's log). Its
 * header is decoded and the offset and epoch rules checked; its CRC and
 * records are not walked again.
 */
mk_err mk_log_append_replica_trusted(mk_log *log, const uint8_t *frame,
				     size_t len);

/*
 * Append to out the whole frames holding offsets in [from, end): starting
 * with the batch containing `from` (floor index lookup, then a forward scan)
 * and stopping before a batch that starts at or past `end` or that would
 * take out past max_bytes — but always at least one batch when there is
 * one. from below the log start or above the log end is OFFSET_OUT_OF_RANGE.
 * A frame failing validation is KAFKA_STORAGE_ERROR (see mk_log_error).
 * With max_bytes of 64 KiB or more the kernel is also asked to bring the
 * max_bytes three fetches further on into the page cache (read-ahead for
 * sequential readers across segment files; nothing waits for it).
 */
mk_err mk_log_read(mk_log *log, int64_t from, int64_t end, size_t max_bytes,
		   mk_strbuf *out);

/* First offset whose record timestamp is >= ts, or the log end if none. */
mk_err mk_log_offset_for_time(mk_log *log, int64_t ts, int64_t *offset);

/*
 * Drop every batch at or after offset, in place: whole segments after it
 * are deleted, the segment holding it is truncated (file and indexes), the
 * epoch cache trimmed, and the checkpoint rewritten. offset must be a batch
 * boundary or >= the log end (then nothing happens); INVALID_REQUEST
 * otherwise.
 */
mk_err mk_log_truncate_to(mk_log *log, int64_t offset);

/*
 * Wait for the flusher to have fsynced every rolled segment, fsync the
 * active segment and its indexes, write the checkpoint (recovery point: the
 * log end). A failure of the flusher is returned here (and by appends).
 */
mk_err mk_log_flush(mk_log *log);

/*
 * For tests. While held, the flusher starts no job: rolled segments wait,
 * unflushed, however many (a roll does not wait for them), so that a crash
 * right after a roll is deterministic. Whatever waits for the flusher
 * releases it: mk_log_wait_flusher, mk_log_flush, mk_log_close,
 * mk_log_truncate_to, an append reaching flush.messages, a read that has
 * to rebuild a closed segment's indexes.
 */
void mk_log_hold_flusher(mk_log *log, bool held);
/*
 * Wait until the flusher has fsynced every rolled segment and moved the
 * recovery point past it (the active segment is not flushed); its error,
 * if it failed.
 */
mk_err mk_log_wait_flusher(mk_log *log);

/*
 * The next segment's files are made ahead by a pool thread (segment.h,
 * "prepared segment files"): asked for once the active segment is half
 * full and right after each roll, taken by the roll when ready (else the
 * roll creates them itself). For tests: wait while they are being made;
 * true when they are ready.
 */
bool mk_log_wait_prepared(mk_log *log);

/* Leader-epoch cache (KIP-101). */
int32_t mk_log_latest_epoch(const mk_log *log);      /* -1 when empty */
/* The newest epoch the epoch cache file in dir holds (a version-1
 * checkpoint's without one), without opening the log (an offline
 * replica's); -1 when none or unreadable. */
int32_t mk_log_peek_latest_epoch(const char *dir);
size_t mk_log_epochs(const mk_log *log, const mk_epoch_entry **entries);
/*
 * For a follower asking "where does epoch E end on the leader": the largest
 * epoch <= E in this cache and the start offset of the next higher epoch
 * (or the log end for the latest). epoch_out -1 when none is <= E.
 */
void mk_log_end_offset_for_epoch(const mk_log *log, int32_t epoch,
				 int32_t *epoch_out, int64_t *end_out);

/* Segments, for listing; index i in 0..count-1, base offsets ascending. */
size_t mk_log_segment_count(const mk_log *log);
/* Write the active segment's pending index entries (segment.h), so that
 * the index files show every entry; before a listing or a view. A failure
 * leaves them pending (the next append or flush meets it too). */
void mk_log_write_index_pending(mk_log *log);
void mk_log_segment_info(const mk_log *log, size_t i, mk_segment_info *info);

/*
 * The .txnindex files, a projection of the aborted transactions the owner
 * keeps (txnindex.h). Sync makes every segment's file hold the entries of
 * l whose marker lies in it (after open, a truncation, a compaction);
 * add appends one entry, just ended by a marker at t->last, to the
 * segment holding it (the active one).
 */
mk_err mk_log_sync_txnindex(mk_log *log, const mk_aborted_list *l,
			    mk_strbuf *why);
mk_err mk_log_add_aborted(mk_log *log, const mk_aborted_txn *t,
			  mk_strbuf *why);
/* The first segment's base offset (at most the log start): what the
 * .txnindex files keep entries from, as Kafka drops them only with their
 * segment. */
int64_t mk_log_base_offset(const mk_log *log);

/*
 * Hooks for the cleaner (cleaner.h): retention and compaction of closed
 * segments. Each waits for the flusher first, so that every closed segment
 * is durable (below the recovery point) when it is changed.
 */
/* Largest record timestamp of segment i (INT64_MIN: none); may load its
 * indexes. */
mk_err mk_log_segment_max_timestamp(mk_log *log, size_t i, int64_t *ts);
/*
 * Move the log start to offset (at most the log end; OFFSET_OUT_OF_RANGE
 * above; the log is fsynced first when offset is past the recovery point,
 * so the start never passes durable records), write the checkpoint, then
 * delete every closed segment wholly
 * below the log start, oldest first. An offset at or below the current
 * start only deletes such segments. A crash between the checkpoint and the
 * deletions leaves segments below the start, deleted by the next call.
 */
mk_err mk_log_advance_start(mk_log *log, int64_t offset);
/*
 * Drop the whole log and restart it empty at offset (past the log end:
 * INVALID_REQUEST otherwise), which becomes log start, log end and
 * recovery point; the epoch cache is cleared (Kafka's
 * truncateFullyAndStartAt, for a follower below its leader's log start).
 * The empty segment at offset is made first, then the checkpoint names
 * it, then the old segments go (failpoints log.reset.after-create,
 * log.reset.after-checkpoint): the checkpoint never names a start past
 * the log's end.
 */
mk_err mk_log_reset_to(mk_log *log, int64_t offset);
/*
 * Replace the closed segments [first, first + n) by the segments staged in
 * DIR/cleaned/ at bases news[0..nnew) (ascending, written and fsynced by
 * the caller, every offset of each inside the range it replaces), and make
 * state the new DIR/cleaner-checkpoint: one journaled swap (segswap.h).
 * The active segment is never replaced.
 */
mk_err mk_log_replace_segments(mk_log *log, size_t first, size_t n,
			       const int64_t *news, size_t nnew,
			       const char *state, size_t state_len);

/* The last storage error: "FILE at byte POS: REASON". "" when none. */
const char *mk_log_error(const mk_log *log);

/* ---- inspection (read-only views for the filesystem) --------------------- */

/* One batch as stored: its header fields and where its frame lies. */
typedef struct {
	int64_t base_offset;
	int64_t last_offset;
	int32_t count;                /* records in the batch */
	uint32_t bytes;               /* the whole frame, header included */
	int64_t segment;              /* base offset of the segment holding it */
	uint64_t position;            /* byte position of the frame in its .log */
	int32_t leader_epoch;
	int64_t producer_id;
	int16_t producer_epoch;
	int32_t base_sequence;
	uint16_t flags;               /* MK_BATCH_* (codec.h) */
	int64_t max_timestamp;
	uint32_t crc;                 /* the batch's CRC-32C field */
	uint8_t codec;                /* MK_COMPRESS_* of its records */
} mk_batch_info;

/*
 * The headers of the batches from the one holding `from` on, at most max
 * of them, into a new array (*out, free it). Nothing in the log changes
 * but the lazily loaded indexes of a closed segment. from outside [log
 * start, log end] is OFFSET_OUT_OF_RANGE; a frame that fails validation is
 * KAFKA_STORAGE_ERROR (mk_log_error says where).
 */
mk_err mk_log_batches(mk_log *log, int64_t from, size_t max,
		      mk_batch_info **out, size_t *n);

/* One entry of a segment's sparse index (index.h), offset absolute. */
typedef struct {
	int64_t offset;     /* a batch's base offset */
	int64_t position;   /* its byte position in the .log; -1 marks a
			     * time index row (mk_segment_index_entry lists
			     * the offset rows, then the time rows) */
	int64_t timestamp;  /* the max record timestamp up to it */
} mk_index_row;

/*
 * The index entries of the segment whose base offset is `segment`, into a
 * new array. INVALID_REQUEST when there is no such segment.
 */
mk_err mk_log_index_rows(mk_log *log, int64_t segment, mk_index_row **out,
			 size_t *n);
/*
 * The checkpoint file's parser, exposed for tests and the fuzzer. text is
 * the whole file (cut in place): "version 2", then an optional "segments
 * B..." line (bases ascending); or, as written before the Kafka files
 * (log_checkpoint.h), "version 1", "log_start_offset N", "recovery_point
 * N", then "epoch E START" lines, epochs and starts strictly increasing,
 * then the optional "segments" line. Every integer goes through
 * core/base/parse.h, every line ends in a newline. On failure
 * (MK_KAFKA_STORAGE_ERROR, "PATH: line N: REASON" in why) nothing is left
 * to free; on success free(c->epochs) and c->bases. A version-2 file has
 * start_offset and recovery_point -1 and no epochs.
 */
typedef struct {
	int version;                /* 1 or 2 */
	int64_t start_offset;
	int64_t recovery_point;
	mk_epoch_entry *epochs;
	size_t nepochs;
	int64_t *bases;             /* "segments": durable segments' bases */
	size_t nbases;
} mk_log_checkpoint;

mk_err mk_log_checkpoint_parse(const char *path, char *text,
			       mk_log_checkpoint *c, mk_strbuf *why);

#endif
