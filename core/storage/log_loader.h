/*
 * log_loader.h — open's recovery of one replica's log (Kafka's LogLoader):
 * the chain of steps that turns a log directory into the segment list,
 * the offsets and the epoch cache of a new mk_log. Internal to the log
 * (log_internal.h); mk_log_open (log.c) makes the object and calls it.
 *
 * The steps, in order, each a function of log_loader.c:
 *   1. finish or undo a cleaner swap left half-done (segswap.h);
 *   2. list the NNN.log files (a time index of the earlier format is
 *      deleted, prepared files noted);
 *   3. read and parse the log's files (log_checkpoint.h), those there:
 *      checkpoint (the durable segments; a version-1 one also carries the
 *      offsets and epochs, as before the Kafka files) and
 *      leader-epoch-checkpoint; damage in either refuses the log;
 *   4. check that every segment the checkpoint lists is there (no silent
 *      gap);
 *   5. the saved log start and recovery point: the log's entries in its
 *      log directory's files (logdir.h, read at its acquire; damage there
 *      refused the open already), else a version-1 checkpoint's; and how
 *      far the log is durable: the recovery point, or the last segment the
 *      checkpoint lists when later (that file is written first);
 *   6. discard leftover prepared segment files;
 *   7. open the segments below the one holding the durable point as
 *      closed (no I/O beyond open), recover the rest in order (torn or
 *      corrupt tails cut, indexes rebuilt, fsynced; the segments after one
 *      that lost data deleted, so the log stays a prefix of what was
 *      written); every segment when nothing says how far it is durable (a
 *      new log, or its files removed: Kafka's recovery from offset 0);
 *      with no segment at all, create one at the log start;
 *   8. the epoch cache: the file's (rebuilt by a scan of the closed
 *      segments when it is missing), then reconciled with what the
 *      recovered segments hold;
 *   9. refuse a saved log start or recovery point past the recovered end
 *      (KAFKA_STORAGE_ERROR naming the file, the entry and the value;
 *      never clamped);
 *  10. settle the log start and recovery point (the log end: recovery
 *      fsynced what it scanned), write the log's files when they say
 *      something else and set its log directory entries (a version-1
 *      checkpoint is replaced only once the log directory holds its
 *      offsets).
 *
 * It runs on the opening thread before the log is anyone's: no flusher
 * runs yet, so no lock is needed but those the pieces it calls take
 * (state_lock for the epoch cache's writes, ckpt_lock for the write, the
 * log directory's own).
 */
#ifndef MK_LOG_LOADER_H
#define MK_LOG_LOADER_H

#include "error.h"
#include "log.h"
#include "strbuf.h"

/*
 * Load log->dir into log, a new object with no segment yet (log.c's
 * log_new). On failure why (if given) says what happened, naming the file
 * and position; the segments opened so far stay in log->segs, for the
 * caller to close.
 */
mk_err mk_log_load(mk_log *log, mk_strbuf *why);

#endif
