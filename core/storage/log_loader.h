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
 *   3. read and parse the checkpoint (log_checkpoint.h), when there is one;
 *   4. check that every segment it lists is there (no silent gap);
 *   5. discard leftover prepared segment files;
 *   6. open the segments below the one holding the recovery point as
 *      closed (no I/O beyond open), recover the rest in order (torn or
 *      corrupt tails cut, indexes rebuilt, fsynced; the segments after one
 *      that lost data deleted, so the log stays a prefix of what was
 *      written); with no segment at all, create one at the log start;
 *   7. the epoch cache: the checkpoint's (rebuilt by a scan of the closed
 *      segments when the checkpoint is missing), then reconciled with what
 *      the recovered segments hold;
 *   8. refuse a checkpoint whose log start or recovery point is past the
 *      recovered end (KAFKA_STORAGE_ERROR naming the file and the value;
 *      never clamped);
 *   9. settle the log start and recovery point (the log end: recovery
 *      fsynced what it scanned), and write the checkpoint when it says
 *      something else.
 *
 * It runs on the opening thread before the log is anyone's: no flusher
 * runs yet, so no lock is needed but those the pieces it calls take
 * (state_lock for the epoch cache's writes, ckpt_lock for the write).
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
