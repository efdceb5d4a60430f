/*
 * log_internal.h — the log's own header (log.h), included only by the
 * files of the log: log.c (the log itself: lifetime, append, roll, read,
 * truncate and the cleaner's hooks), epoch_cache.c, log_checkpoint.c,
 * log_flush.c and log_loader.c. Callers outside them see log.h only, and
 * struct mk_log stays opaque to them.
 *
 * It owns struct mk_log: the segment list, the offsets, the epoch cache,
 * the checkpoint's state and the flusher's, and says which lock guards
 * which field (below, and beside each field). Which piece changes what:
 *   - log.c: segs (append, roll, truncate, the cleaner's hooks), the
 *     log start, and the recovery point when truncate_to or reset_to
 *     lowers or resets it (both under state_lock), unflushed,
 *     write_calls, err;
 *   - epoch_cache.c: epochs (its writes under state_lock);
 *   - log_checkpoint.c: bases, ckpt_last, epochs_last, the checkpoint and
 *     leader-epoch-checkpoint files and the log's entries in its log
 *     directory (under ckpt_lock, the texts made under state_lock too);
 *   - log_flush.c: fl (under fl.lock), the recovery point's moves up
 *     (under state_lock), ckpt_at_ms and ckpt_lag (under both), dir_dirty's
 *     clearing and dir_syncs;
 *   - log_loader.c: everything, once, before the log is anyone's.
 * The invariants are those of log.h; each piece's header says its own.
 *
 * The helpers every piece shares (the active segment, a segment's offset
 * limit, pushing a segment, recording a storage error) are below.
 *
 * Threads. Everything but the flusher runs on the owner's thread, under the
 * owner's lock (log.h). The flusher touches: its queue (fl.lock); the
 * segments queued, through mk_segment_flush() only (see segment.h for why
 * reads of them may go on meanwhile); under state_lock, the recovery
 * point and the epoch cache (read); and, under ckpt_lock (outer to
 * state_lock), the log's files and its log directory entries. So the owner's thread takes state_lock
 * to change the epoch cache or the recovery point, ckpt_lock to write the
 * checkpoint (its text is made under both, the file written with
 * state_lock released: a roll's mk_log_ckpt_mirror_bases never waits
 * behind a checkpoint's fsyncs), and waits for the flusher to be idle
 * (mk_log_flusher_wait) before it changes or removes anything but the
 * active segment: truncation, index rebuilds, flush, close. The prepare
 * task (prep_run, log_flush.c) touches only the prepared.*.tmp files and fl.prep (under
 * fl.lock): the owner takes the files only once fl.prep says READY, and
 * close, crash and abandon remove the task (waiting for a run) before
 * anything deletes them.
 *
 * Storage errors leave "FILE at byte POS: REASON" (or "FILE: what: errno")
 * in log->err, which mk_log_error() returns. A flusher failure is kept and
 * returned by every later append, roll, flush and truncation: the recovery
 * point can no longer move, and the owner takes the replica offline.
 */
#ifndef MK_LOG_INTERNAL_H
#define MK_LOG_INTERNAL_H

#include <assert.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "epoch_cache.h"
#include "fdcache.h"
#include "flushpool.h"
#include "log.h"
#include "log_flush.h"
#include "logdir.h"
#include "segment.h"
#include "strbuf.h"

struct mk_log {
	char *dir;
	mk_fdcache *cache;          /* cfg.fdcache, or own_cache */
	mk_fdcache *own_cache;
	char *ckpt_path;            /* DIR/checkpoint */
	char *epochs_path;          /* DIR/leader-epoch-checkpoint */
	/* The parent directory's checkpoints (logdir.h), for the log's life,
	 * and the log's key there: its directory's name, TOPIC-PARTITION. */
	mk_logdir *logdir;
	char *topic;
	int32_t partition;
	mk_log_config cfg;
	mk_segment **segs;          /* ascending base offsets; last is active */
	size_t nsegs, segs_cap;
	/* Under state_lock (written by the owner's thread, or the flusher;
	 * start_offset by the owner's, read by the flusher's checkpoint): */
	int64_t start_offset;       /* set at open and by the cleaner hooks */
	pthread_mutex_t state_lock;
	int64_t recovery_point;     /* below it, everything was fsynced */
	int64_t ckpt_at_ms;         /* the flusher's last write (monotonic) */
	uint64_t ckpt_lag;          /* bytes flushed since, not in the file */
	mk_epoch_cache epochs;      /* its writes take state_lock */
	int64_t *bases;             /* segs' base offsets, as the checkpoint */
	size_t nbases, bases_cap;   /* lists them (mirrored by the owner) */
	/* ckpt_lock serialises checkpoint file writes (outer to state_lock,
	 * which is only held to format the text): a write's fsyncs never
	 * hold up the owner's state_lock (mk_log_ckpt_mirror_bases at every
	 * roll). */
	pthread_mutex_t ckpt_lock;
	mk_strbuf ckpt_last;        /* what the checkpoint file last got */
	mk_strbuf epochs_last;      /* what leader-epoch-checkpoint last got */
	/* The owner's thread only: */
	int64_t unflushed;          /* records appended since the last fsync */
	int64_t prep_base;          /* the active segment whose successor's
				     * files were asked for; -1: none yet */
	bool prep_asked;            /* prepared files may exist (close
				     * deletes them) */
	uint64_t write_calls;       /* appends' writes to .log files */
	bool dir_dirty;             /* a segment was made since
				     * mk_log_sync_all last fsynced the
				     * directory */
	uint64_t dir_syncs;         /* those fsyncs (mk_log_dir_syncs) */
	mk_strbuf err;              /* the last storage error */
	mk_log_flusher fl;
};

/* The active segment: the last one. */
static inline mk_segment *mk_log_active(const mk_log *log)
{
	assert(log->nsegs > 0);
	return log->segs[log->nsegs - 1];
}

/* Every offset of segment i is below this. */
static inline int64_t mk_log_end_limit(const mk_log *log, size_t i)
{
	return i + 1 < log->nsegs ? log->segs[i + 1]->base : INT64_MAX;
}

/* Append s, past the active segment, to log->segs (the owner's thread). */
void mk_log_push_segment(mk_log *log, mk_segment *s);

/* Record a storage error in log->err (mk_log_error); msg is what the
 * segment layer said. KAFKA_STORAGE_ERROR. */
mk_err mk_log_storage_error(mk_log *log, const mk_strbuf *msg);

#endif
