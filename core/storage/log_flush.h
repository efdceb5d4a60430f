/*
 * log_flush.h — flush scheduling for one replica's log: its work in the
 * cluster's flusher pool (flushpool.h), which fsyncs rolled segments in
 * roll order and moves the recovery point past them; the prepared files
 * of the next segment (segment.h, "prepared segment files"), made ahead by
 * a pool thread; and the owner's own flushes (mk_log_sync_all, which move
 * the recovery point to the log end). Internal to the log
 * (log_internal.h); mk_log_flush, mk_log_hold_flusher, mk_log_wait_flusher
 * and mk_log_wait_prepared (log.h) are defined here.
 *
 * The roll fsync. A roll used to fsync the old segment and its indexes, the
 * directory and the checkpoint before the append that caused it could go
 * on: four fsyncs per segment.bytes appended, on the append path. As in
 * Kafka (whose roll schedules the old segment's flush), the old segment is
 * now handed to the flusher, which fsyncs it with its indexes and then
 * writes the checkpoint with the recovery point past it (the log's files,
 * then its broker's recovery-point-offset-checkpoint: log_checkpoint.h;
 * the log's checkpoint's own directory fsync also makes the new segments'
 * creation durable; as
 * that write is spaced, a flush (mk_log_sync_all) fsyncs the directory itself
 * when a segment was made since its last one); when
 * it finds several segments queued, it fsyncs them all, in order, and
 * writes one checkpoint. The guarantees stay those of log.h: the recovery
 * point only moves past data that was fsynced, flushes happen in roll
 * order, and open recovers every segment from the one holding the recovery
 * point on — normally only the active one, and never more than
 * MAX_UNFLUSHED_BYTES of rolled segments, because only past that bound
 * does a roll wait for the flusher; below it the kernel's dirty-page
 * throttling is the back-pressure, as in Kafka. (Earlier versions waited
 * once 64 segments were queued: with 1 MiB segments that put the disk's
 * fsync rate on the append path.) The alternative, starting writeback
 * early with sync_file_range(SYNC_FILE_RANGE_WRITE) every 256 KiB so that
 * the roll's fsync finds little to write, keeps every fsync (and the
 * directory and checkpoint ones) on the append path, where small-file
 * fsyncs cost milliseconds each; it was measured and not kept.
 *
 * Prepared segment files. A roll used to create the next segment's three
 * files on the append path; on a file system where an inode allocation
 * costs half a millisecond that was most of a roll's cost. A pool thread
 * now makes them ahead (once the active segment is half full, and right
 * after each roll), and the roll renames them into place; when they are
 * not ready the roll creates the files itself, as before.
 *
 * Invariants:
 *   - the queue q[0..n) is in roll order; a pass takes a prefix of it
 *     (at most one pass at a time: busy), and the recovery point moves
 *     only past segments it has fsynced;
 *   - bytes is the sum of the queued jobs' sizes; a roll waits only while
 *     it is above MAX_UNFLUSHED_BYTES (log_flush.c);
 *   - after the first failure (err) no job runs: every later append,
 *     roll, flush and truncation returns it;
 *   - prep is READY only while the prepared.*.tmp files exist whole.
 *
 * Locks: fl.lock guards every field of mk_log_flusher (cond is signalled
 * when the queue, held, stop, err or prep changed); a pass runs its jobs
 * with no lock held but takes ckpt_lock then state_lock (log_internal.h)
 * to move the recovery point and format the checkpoint. The prepare task
 * touches only the prepared files and fl.prep.
 */
#ifndef MK_LOG_FLUSH_H
#define MK_LOG_FLUSH_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "flushpool.h"
#include "log.h"
#include "segment.h"
#include "strbuf.h"

typedef struct {
	mk_segment *seg;            /* a rolled segment, owned by the log */
	int64_t next;               /* the recovery point once it is durable */
	uint64_t bytes;             /* its size at the roll */
} mk_log_flush_job;

typedef struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;        /* the queue, held, stop or err changed */
	mk_flush_task task;         /* this log's work in the pool */
	mk_flush_pool *pool;        /* the cluster's, or own (NULL: none yet) */
	bool own_pool;              /* made at the first roll, freed at close */
	bool busy;                  /* a pass runs (jobs [0, taken) in flight) */
	bool stop;                  /* no pass is to start */
	bool held;                  /* tests: no pass starts */
	mk_log_flush_job *q;        /* roll order; jobs run until removed */
	size_t n, cap;
	uint64_t bytes;             /* sum of the queued jobs' bytes */
	mk_err err;                 /* its first failure; no job runs after */
	mk_strbuf msg;              /* what failed */
	/* The next segment's files, made ahead (segment.h, "prepared"): */
	mk_flush_task prep_task;    /* makes them, on a pool thread */
	int prep;                   /* PREP_NONE, _QUEUED or _READY (fl.lock) */
	uint64_t prep_prefill;      /* zeros the prepared .log starts with */
} mk_log_flusher;

/* A new log's flusher (no pool yet), and its release once stopped. */
void mk_log_flusher_init(mk_log_flusher *fl);
void mk_log_flusher_release(mk_log_flusher *fl);

/*
 * Queue a rolled segment; next is the recovery point once it is durable.
 * Waits only while more than MAX_UNFLUSHED_BYTES are queued (unless
 * held). Without a pool thread, flushes it here.
 */
mk_err mk_log_flusher_add(mk_log *log, mk_segment *seg, int64_t next);
/* Wait until every queued segment is durable, releasing a hold; the
 * flusher's failure, made the log's error. */
mk_err mk_log_flusher_wait(mk_log *log);
/* The flusher's failure (made the log's error), without waiting. */
mk_err mk_log_flusher_error(mk_log *log);
/* No pass starts from now on; one running is finished; the queue is left
 * as is. The prepare task is removed; a private pool is freed. */
void mk_log_flusher_stop(mk_log *log);

/* Ask for the next segment's files (owner's thread); nothing when they
 * are asked for or ready already, or no pool thread runs. */
void mk_log_prep_request(mk_log *log);
/* Take the prepared files when they are ready (owner's thread). */
bool mk_log_prep_take(mk_log *log);

/*
 * Make everything appended durable: the rolled segments (the flusher's
 * queue), then the active one (and the directory when a segment was made
 * since). The recovery point moves to the log end. The checkpoint is not
 * written (mk_log_ckpt_write).
 */
mk_err mk_log_sync_all(mk_log *log);
/* Under state_lock, for the flusher's checkpoint to read. */
void mk_log_set_recovery_point(mk_log *log, int64_t offset);

#endif
