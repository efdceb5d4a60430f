/*
 * epoch_cache.h — the leader-epoch cache of one replica's log (KIP-101;
 * Kafka's LeaderEpochFileCache): for each leader epoch the log has seen,
 * the offset of its first batch. Internal to the log (log.h; its
 * leader-epoch-checkpoint, Kafka's file and format, stores the entries:
 * log_checkpoint.h).
 *
 * An mk_epoch_cache owns its array and nothing else: which lock guards it
 * is the log's (log_internal.h). Invariants:
 *   - epochs and start offsets both strictly increase along v[0..n);
 *   - no entry has a negative epoch;
 *   - (the log's) every entry starts below the log end: the log trims the
 *     cache whenever it drops offsets (truncation, the tail cut at open).
 *
 * Threads. The owner's thread is the only writer, and reads without a
 * lock; another thread (the flusher's checkpoint) reads it under *lock.
 * So each write (push, trim) takes *lock for the change itself, and
 * mk_epoch_cache_clear_locked is for a caller already holding it.
 *
 * mk_epoch_seen collects the epoch changes a segment scan meets, in log
 * order (a segment scan callback, segment.h), for open to reconcile the
 * cache with what the recovered segments actually hold (log_loader.h).
 */
#ifndef MK_EPOCH_CACHE_H
#define MK_EPOCH_CACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"

/* One entry: the first offset written under an epoch. */
typedef struct {
	int32_t epoch;
	int64_t start_offset;
} mk_epoch_entry;

typedef struct {
	mk_epoch_entry *v;          /* epochs and starts strictly increasing */
	size_t n, cap;
	pthread_mutex_t *lock;      /* held by each write; the log's */
} mk_epoch_cache;

/* An empty cache whose writes take lock (not owned). */
void mk_epoch_cache_init(mk_epoch_cache *c, pthread_mutex_t *lock);
void mk_epoch_cache_free(mk_epoch_cache *c);

/* Append (epoch, start): both above the latest entry's (asserted). */
void mk_epoch_cache_push(mk_epoch_cache *c, int32_t epoch, int64_t start);
/*
 * A batch of epoch e starting at base, seen in log order: a new entry when
 * e is above the latest (true then). Negative epochs (none) are not
 * recorded; a lower epoch cannot follow a higher one in a log, so it adds
 * nothing.
 */
bool mk_epoch_cache_observe(mk_epoch_cache *c, int32_t e, int64_t base);
/* Drop the entries starting at or after offset; true when any went. */
bool mk_epoch_cache_trim(mk_epoch_cache *c, int64_t offset);
/* Drop every entry; the caller holds c->lock. */
void mk_epoch_cache_clear_locked(mk_epoch_cache *c);

/* The latest epoch, -1 when empty. */
int32_t mk_epoch_cache_latest(const mk_epoch_cache *c);
/*
 * The largest epoch <= epoch (*epoch_out, -1 when none) and the start of
 * the next higher one, or log_end for the latest (*end_out, -1 when none).
 */
void mk_epoch_cache_end_for(const mk_epoch_cache *c, int32_t epoch,
			    int64_t log_end, int32_t *epoch_out,
			    int64_t *end_out);

/* Epoch changes seen by a scan, in order; free(v) when done. */
typedef struct {
	mk_epoch_entry *v;
	size_t n, cap;
} mk_epoch_seen;

/* A segment scan callback (segment.h): arg is an mk_epoch_seen. */
void mk_epoch_seen_on_batch(void *arg, const mk_batch_view *b, uint64_t pos);

#endif
