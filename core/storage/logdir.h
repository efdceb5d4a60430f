/*
 * logdir.h — a broker's log directory (DATA_DIR/broker-B, one entry of
 * Kafka's log.dirs: where that broker's partition directories live) and
 * Kafka's three offset checkpoint files in it, one line per partition
 * replica of the broker in Kafka's OffsetCheckpointFile format
 * (ckptfile.h: "0", the count, then "TOPIC PARTITION OFFSET" lines):
 *
 *     recovery-point-offset-checkpoint   each log's recovery point
 *     log-start-offset-checkpoint        each log's log start offset
 *     replication-offset-checkpoint      each replica's high watermark
 *
 * Kafka's LogManager keeps the first two, its ReplicaManager the third;
 * here one object per directory keeps all three, shared by whoever has a
 * value in them: every log opened under the directory holds a reference
 * for its life (mk_log_open of DIR/T-P acquires DIR; log_checkpoint.h says
 * when it sets its recovery point and log start), and the replica store
 * sets each replica's HW through its log's (replica_store.c). Entries are
 * keyed by (topic, partition): a log directory is named TOPIC-PARTITION,
 * as in Kafka (mk_logdir_parse_name).
 *
 * The object holds a table of the entries, read from the files at the
 * first acquire and changed by mk_logdir_set. A file is rewritten whole
 * from the table (written aside, fsynced, renamed, the directory fsynced:
 * mk_file_replace_fp), and only when its text changed; a missing file is
 * one without entries (none is made for a table without any).
 *
 * When the files are written:
 *   - mk_logdir_sync: now, on the caller's thread; it returns once every
 *     value set before the call is on disk. Group commit: a write in
 *     flight is waited for, and the one writer loops until the table's
 *     latest values are written, so waiters share writes. The files go in
 *     the order high watermark, log start, recovery point, so that a log
 *     start is never on disk before the HW that bounds it (the HW is set
 *     at or past a new start before the start moves: replica_store.c);
 *   - mk_logdir_kick: soon, by a task of the flush pool given at acquire
 *     (flushpool.h: kicks coalesce while it is queued, and a pool not yet
 *     started runs it once it starts), or now when there is no pool;
 *   - at the last release, unless the caller says not to (a simulated
 *     crash leaves the files as they are).
 * A failed write leaves the values due: the next write retries them, and
 * a sync reports its own failure.
 *
 * Invariants: the table holds at most one entry per (topic, partition);
 * written <= version (the table's change count, bumped by each set that
 * changes a value); each file holds exactly what `last` says it does.
 * What a value means, and so when it may be set, is its owner's: the log's
 * (log_checkpoint.h: only values the log's own files and data back, so
 * the recovery point file never claims more than what was fsynced) and
 * the replica store's (the HW, never above what the replica knew).
 *
 * Damage: a file that is not of the format (ckptfile.h) makes the acquire
 * fail (KAFKA_STORAGE_ERROR, the file and line in why), and nothing is
 * written to the directory: every log of that broker stays offline, as
 * Kafka takes a log directory offline when a checkpoint of it cannot be
 * read, until the file is corrected or removed. A missing file, or a
 * missing entry, is a value not known (a new log; mk_logdir_get false).
 *
 * Failpoints, each file's replacement (fileio.h): PREFIX.after-write (the
 * temporary file written, not fsynced), .after-fsync, .after-rename and
 * .done, PREFIX being logdir.high-watermark, logdir.log-start or
 * logdir.recovery-point.
 *
 * Locks: the registry lock (process-wide, as the directories are) guards
 * the list of objects, their reference counts and the last release's
 * write; an object's lock guards its table, its counters and `last`, and
 * is held to change or format them, never during a write (`writing`
 * marks the one writer; cond: a write ended). The registry lock is outer
 * to an object's. Any call may be made under a caller's own lock (a
 * log's, a partition's): none takes a lock of the caller's, so no lock
 * order is inverted, but sync, a kick without a pool and the last release
 * wait for the disk.
 */
#ifndef MK_LOGDIR_H
#define MK_LOGDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "strbuf.h"

struct mk_flush_pool;

typedef struct mk_logdir mk_logdir;

/* The three files, in the order a write takes them. */
enum {
	MK_LOGDIR_HW,           /* replication-offset-checkpoint */
	MK_LOGDIR_START,        /* log-start-offset-checkpoint */
	MK_LOGDIR_RECOVERY,     /* recovery-point-offset-checkpoint */
	MK_LOGDIR_NFILES
};

/* The file names, in a broker's directory. */
extern const char *const mk_logdir_names[MK_LOGDIR_NFILES];

/*
 * The object of directory dir (which exists), made and its files read at
 * the first acquire; pool (may be NULL) runs its kicks when it has none
 * yet. A file that is damaged: KAFKA_STORAGE_ERROR, *out NULL, why says
 * which and where.
 */
mk_err mk_logdir_acquire(const char *dir, struct mk_flush_pool *pool,
			 mk_logdir **out, mk_strbuf *why);
/* Drop a reference; the last writes what is due (unless !write) and
 * frees. NULL is fine. */
void mk_logdir_release(mk_logdir *ld, bool write);
/* The path of one of its files (for messages). */
const char *mk_logdir_path(const mk_logdir *ld, int file);

/* The value of (topic, partition) in file; false when it has none. */
bool mk_logdir_get(mk_logdir *ld, const char *topic, int32_t partition,
		   int file, int64_t *value);
/* Set it (value >= 0); the files get it at the next write. */
void mk_logdir_set(mk_logdir *ld, const char *topic, int32_t partition,
		   int file, int64_t value);
/* Drop the entry of (topic, partition) from every file (its log is gone,
 * or is made anew); true when it had a value. */
bool mk_logdir_forget(mk_logdir *ld, const char *topic, int32_t partition);

/* Write now: returns once every value set before the call is on disk. A
 * failure: KAFKA_STORAGE_ERROR, "PATH: write failed: ..." in why. */
mk_err mk_logdir_sync(mk_logdir *ld, mk_strbuf *why);
/* Write soon (the pool's task), or now without a pool. */
void mk_logdir_kick(mk_logdir *ld);
/* mk_logdir_sync of every object of the process (a cluster's flush); the
 * first failure. */
mk_err mk_logdir_sync_all(mk_strbuf *why);

/* Is name (an entry of a broker's directory) one of the files, or one's
 * temporary file? Such entries belong to no partition. */
bool mk_logdir_owns_name(const char *name);
/*
 * The key of a log directory's name, TOPIC-PARTITION as Kafka names it
 * (the partition after the last '-', decimal as written, in
 * [0, 2^31-1]; the topic a valid topic name, topic_name.h): the topic
 * into topic (cap bytes), false when name is not of that form.
 */
bool mk_logdir_parse_name(const char *name, char *topic, size_t cap,
			  int32_t *partition);

#endif
