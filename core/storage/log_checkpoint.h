/*
 * log_checkpoint.h — the checkpoint file of one replica's log
 * (DIR/checkpoint; Kafka keeps the same state in its log-start-offset,
 * recovery-point and leader-epoch checkpoint files). Internal to the log
 * (log_internal.h); its parser is public (mk_log_checkpoint_parse, log.h:
 * for tests and the fuzzer), and so is mk_log_peek_latest_epoch.
 *
 * Format, one field a line, every line ending in a newline:
 *
 *     version 1
 *     log_start_offset N
 *     recovery_point N
 *     epoch E START              one per epoch cache entry, ascending
 *     segments B B ...           the durable segments' bases (optional)
 *
 * "segments" lists the segments below the recovery point and not wholly
 * below the log start: a listed segment missing at open is damage (a gap),
 * never silently skipped (log.h). The file is replaced atomically
 * (mk_file_replace_fp, failpoints log.ckpt.{after-write,after-fsync,
 * after-rename,done}, fileio.h).
 *
 * It owns: the file's format and parse, log->ckpt_last (what the file
 * last got: a write of the same text is skipped, so that a close or a
 * flush with nothing new costs no fsync) and log->bases (the checkpoint's
 * copy of the segment list).
 *
 * Locks (log_internal.h): ckpt_lock serialises writes of the file and
 * guards ckpt_last; it is outer to state_lock. A write takes ckpt_lock,
 * formats the text under state_lock (so that writes land in the order of
 * the states they show), then writes the file with state_lock released:
 * nobody waiting for state_lock (a roll's mk_log_ckpt_mirror_bases) waits
 * behind a checkpoint's fsyncs.
 */
#ifndef MK_LOG_CHECKPOINT_H
#define MK_LOG_CHECKPOINT_H

#include <stddef.h>

#include "error.h"
#include "log.h"
#include "strbuf.h"

#define MK_LOG_CKPT_NAME "checkpoint"    /* in the log's directory */

/* The checkpoint's text for the log's state; under state_lock. */
void mk_log_ckpt_format(const mk_log *log, mk_strbuf *out);
/* The owner's thread: log->bases follows log->segs (takes state_lock). */
void mk_log_ckpt_mirror_bases(mk_log *log);
/*
 * Under ckpt_lock, state_lock not held (or before the flusher exists):
 * replace the file with text (mk_log_ckpt_format's, made under state_lock
 * after ckpt_lock was taken), unless it already says exactly this. Takes
 * text. A failure: KAFKA_STORAGE_ERROR, "PATH: write failed: ..." in why.
 */
mk_err mk_log_ckpt_store(mk_log *log, mk_strbuf *text, mk_strbuf *why);
/* The owner's thread: mirror the bases, then format and store under the
 * locks. A failure is also the log's error (mk_log_error). */
mk_err mk_log_ckpt_write(mk_log *log);
/*
 * The same but for a swap (mk_log_replace_segments): the text lists no
 * segment of [first, first + n) of the log's (bases dropped from
 * log->bases too). A failure is said in why only.
 */
mk_err mk_log_ckpt_write_without(mk_log *log, size_t first, size_t n,
				 mk_strbuf *why);

#endif
