/*
 * log_checkpoint.h — what one replica's log keeps of itself on disk beside
 * its segments, and where (docs/filesystem.md, "Kafka's checkpoint
 * files"). Internal to the log (log_internal.h); its parser is public
 * (mk_log_checkpoint_parse, log.h: for tests and the fuzzer), and so is
 * mk_log_peek_latest_epoch.
 *
 * Kafka's files, in Kafka's formats (ckptfile.h):
 *   - DIR/leader-epoch-checkpoint: the epoch cache (epoch_cache.h), one
 *     "EPOCH START_OFFSET" line per entry (LeaderEpochCheckpointFile);
 *   - the log start offset and the recovery point, as this log's entries
 *     of its broker's log-start-offset-checkpoint and
 *     recovery-point-offset-checkpoint (logdir.h; the entry is keyed by
 *     the directory's name, TOPIC-PARTITION).
 * The project's own file, DIR/checkpoint, for what Kafka has no file for:
 *
 *     version 2
 *     segments B B ...           the durable segments' bases (optional)
 *
 * "segments" lists the segments below the recovery point and not wholly
 * below the log start: a listed segment missing at open is damage (a gap),
 * never silently skipped (log.h); Kafka has no such list. Version 1 (the
 * file before the Kafka files: "log_start_offset N", "recovery_point N",
 * "epoch E START" lines before "segments") is still read at open, for what
 * the Kafka files do not hold yet, and rewritten as version 2.
 *
 * A write (mk_log_ckpt_write): the two texts and the two offsets are made
 * together under state_lock (one state of the log); then each of the
 * log's files whose text changed is replaced atomically (mk_file_replace_
 * fp: failpoints log.ckpt.* for checkpoint, log.epochs.* for
 * leader-epoch-checkpoint, each .after-write, .after-fsync, .after-rename,
 * .done); only then are the offsets set in the log directory's table
 * (logdir.h), so that its files never name a recovery point beyond the
 * segments list and the epochs the log's own files hold (open trusts
 * both below it). The log directory writes them later (kicked: the
 * flusher's passes, flushes, a new epoch, open), or before the write
 * returns when the write is durable: when the recovery point went down (a
 * truncation, before anything is cut) or the log start moved (before any
 * segment below it goes); there the log directory's HW is written first
 * (logdir.h), so a start never lands before the HW that bounds it.
 *
 * It owns: the formats and parse of the log's files, log->ckpt_last and
 * log->epochs_last (what each file last got: a write of the same text is
 * skipped, so a close or a flush with nothing new costs no fsync), and
 * log->bases (the checkpoint's copy of the segment list).
 *
 * Locks (log_internal.h): ckpt_lock serialises writes of the log's files
 * and of its log directory entries, and guards ckpt_last and epochs_last;
 * it is outer to state_lock. A write takes ckpt_lock, formats under
 * state_lock (so that writes land in the order of the states they show),
 * then writes the files with state_lock released: nobody waiting for
 * state_lock (a roll's mk_log_ckpt_mirror_bases) waits behind a
 * checkpoint's fsyncs. The log directory's own write (a sync or a kick)
 * runs after ckpt_lock is released.
 */
#ifndef MK_LOG_CHECKPOINT_H
#define MK_LOG_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "log.h"
#include "strbuf.h"

#define MK_LOG_CKPT_NAME "checkpoint"                 /* in the log's dir */
#define MK_LOG_EPOCHS_NAME "leader-epoch-checkpoint"  /* in the log's dir */

/* One write's content, made under state_lock (mk_log_ckpt_format). */
typedef struct {
	mk_strbuf segs;             /* DIR/checkpoint */
	mk_strbuf epochs;           /* DIR/leader-epoch-checkpoint */
	int64_t start;              /* for log-start-offset-checkpoint */
	int64_t recovery_point;     /* for recovery-point-offset-checkpoint */
} mk_log_ckpt_text;

void mk_log_ckpt_text_init(mk_log_ckpt_text *t);
void mk_log_ckpt_text_release(mk_log_ckpt_text *t);

/* The write's content for the log's state (t initialised, emptied
 * first); under state_lock. */
void mk_log_ckpt_format(const mk_log *log, mk_log_ckpt_text *t);
/* The owner's thread: log->bases follows log->segs (takes state_lock). */
void mk_log_ckpt_mirror_bases(mk_log *log);
/*
 * Under ckpt_lock, state_lock not held (or before the flusher exists):
 * replace each of the log's files whose text t changed, then set the
 * offsets in the log directory's table (not written). A failure:
 * KAFKA_STORAGE_ERROR, "PATH: write failed: ..." in why, the table left
 * as it was.
 */
mk_err mk_log_ckpt_store(mk_log *log, const mk_log_ckpt_text *t,
			 mk_strbuf *why);
/*
 * The owner's thread: mirror the bases, then format and store under the
 * locks; then the log directory writes its files, at once when durable
 * (returning once they hold the offsets), else soon (mk_logdir_kick). A
 * failure is also the log's error (mk_log_error).
 */
mk_err mk_log_ckpt_write(mk_log *log, bool durable);
/*
 * The same but for a swap (mk_log_replace_segments): the text lists no
 * segment of [first, first + n) of the log's (bases dropped from
 * log->bases too). A failure is said in why only.
 */
mk_err mk_log_ckpt_write_without(mk_log *log, size_t first, size_t n,
				 mk_strbuf *why);

#endif
