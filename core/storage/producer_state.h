/*
 * producer_state.h — a replica's memory of idempotent producers: for each
 * producer id, its epoch and the last MK_PRODUCER_WINDOW batches it wrote
 * (first and last sequence, base offset, last offset delta). This is what
 * lets the leader answer a retried batch with its original offsets and
 * refuse gaps, reorders and fenced epochs.
 *
 * Every replica keeps one (leader and followers apply the batches they
 * append), so a promoted follower deduplicates as the old leader did. The
 * state is rebuilt at open from a snapshot (`producer-snapshot` in the log
 * directory, replaced atomically at flush and close) plus the batches the
 * log holds past the snapshot's offset.
 *
 * Transactions (txn.h): the state also knows, per producer, the first
 * offset of its open transaction on this partition (`txn_first`, -1 when
 * none: set by its first transactional batch, cleared by a marker), which
 * gives the last stable offset (mk_pstate_first_open), and the aborted
 * transactions (txnindex.h) that read_committed hides. A marker of a newer
 * epoch also moves the producer to that epoch (its old writers are then
 * fenced here too). Snapshots of version 2 add "open PID FIRST" and
 * "aborted PID FIRST LAST LSO" lines (LSO optional when read; written
 * only when there are such lines: a state without transactions is
 * written as version 1).
 *
 * Invariants: entries sorted by producer id; within an entry `recent` is
 * oldest first, sequences increasing, at most MK_PRODUCER_WINDOW long.
 * Not thread-safe: the owning partition's lock guards it.
 */
#ifndef MK_PRODUCER_STATE_H
#define MK_PRODUCER_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "error.h"
#include "strbuf.h"
#include "txnindex.h"

#define MK_PRODUCER_WINDOW 5

typedef struct {
	int32_t first_seq;
	int32_t last_seq;
	int64_t base_offset;
	int32_t last_offset_delta;
} mk_seq_entry;

typedef struct {
	int64_t pid;
	int16_t epoch;
	int n;
	mk_seq_entry recent[MK_PRODUCER_WINDOW];
	int64_t txn_first;       /* first offset of its open transaction; -1 */
} mk_producer_entry;

typedef struct {
	mk_producer_entry *v;
	size_t n, alloc;
	int64_t covered_to;      /* every batch below this offset is applied */
	mk_aborted_list aborted; /* aborted transactions, by marker offset */
} mk_producer_state;

void mk_pstate_init(mk_producer_state *ps);
void mk_pstate_free(mk_producer_state *ps);
void mk_pstate_reset(mk_producer_state *ps);

/* The producer's entry, or NULL. */
const mk_producer_entry *mk_pstate_find(const mk_producer_state *ps, int64_t pid);

/*
 * Check a batch of `count` records from (pid, epoch) starting at base_seq:
 *   MK_OK, *dup NULL          new and in order: append it
 *   MK_OK, *dup set           an exact retry of a batch in the window
 *   PRODUCER_FENCED           epoch older than the producer's current one
 *   OUT_OF_ORDER_SEQUENCE_NUMBER  a gap, a reorder, or a retry older than
 *                             the window
 */
mk_err mk_pstate_check(const mk_producer_state *ps, int64_t pid, int16_t epoch,
		       int32_t base_seq, int32_t count,
		       const mk_seq_entry **dup, mk_strbuf *why);

/* The sequence the next batch of (pid, epoch) should start at. */
int32_t mk_pstate_next_seq(const mk_producer_state *ps, int64_t pid,
			   int16_t epoch);

/* Record an appended batch (no-op for batches without a producer id). */
void mk_pstate_apply(mk_producer_state *ps, const mk_batch_view *b);

/* The first offset of the oldest open transaction; INT64_MAX when none. */
int64_t mk_pstate_first_open(const mk_producer_state *ps);
/* Forget aborted transactions that end below the log start. */
void mk_pstate_trim(mk_producer_state *ps, int64_t log_start);

/* Snapshot as text, and back. The parse refuses (CORRUPT_MESSAGE, the
 * state reset) a malformed snapshot and one naming an offset at or past
 * its own covered_to (a batch, an open or an aborted transaction). */
void mk_pstate_format(const mk_producer_state *ps, mk_strbuf *out);
mk_err mk_pstate_parse(mk_producer_state *ps, const char *text);

#endif
