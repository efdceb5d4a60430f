/*
 * txnindex.h — the aborted transactions of one replica's log (what Kafka
 * keeps per segment in .txnindex files), as one list in offset order.
 *
 * Each entry is one aborted transaction of one producer on this partition:
 * its first offset (the producer's first transactional batch after its
 * previous marker) and its last offset (the offset of the ABORT marker).
 * A read_committed reader asks for the entries that overlap the range it
 * fetched (mk_aborted_range, a binary search on the last offset) and hides
 * a transactional batch of producer P at offset O when an entry of P has
 * first <= O <= last (mk_aborted_hides). Nothing is rescanned from the log
 * start: the list lives in the replica's producer state (producer_state.h),
 * is saved with its snapshot and rebuilt from the snapshot plus the log's
 * tail at open, exactly as the producers' sequences are.
 *
 * Invariant: entries are in increasing `last` order (markers are appended
 * in log order). Not thread-safe: the owner's lock guards it.
 */
#ifndef MK_TXNINDEX_H
#define MK_TXNINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"

typedef struct {
	int64_t pid;
	int64_t first;       /* first offset of the transaction here */
	int64_t last;        /* offset of its abort marker */
} mk_aborted_txn;

typedef struct {
	mk_aborted_txn *v;
	size_t n, alloc;
} mk_aborted_list;

void mk_aborted_init(mk_aborted_list *l);
void mk_aborted_free(mk_aborted_list *l);
void mk_aborted_clear(mk_aborted_list *l);
/* Append an entry; its last offset must not be below the list's last. */
void mk_aborted_add(mk_aborted_list *l, int64_t pid, int64_t first, int64_t last);
/* Copy into out (cleared first) every entry overlapping [from, to). */
void mk_aborted_range(const mk_aborted_list *l, int64_t from, int64_t to,
		      mk_aborted_list *out);
/* Drop the entries that end below offset (the log start moved past). */
void mk_aborted_trim(mk_aborted_list *l, int64_t offset);
/* Does read_committed hide this batch? (Control batches are hidden by
 * every reader anyway.) */
bool mk_aborted_hides(const mk_aborted_list *l, const mk_batch_view *b);

#endif
