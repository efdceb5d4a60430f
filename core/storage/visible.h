/*
 * visible.h — a fetch reduced to what its reader may see: the one walk
 * every reader of fetched frames runs (the records files, their paged
 * views and the /brokers views in fs/, a group member's poll in
 * core/client/fetcher.c, the coordinators' replay in
 * core/replication/replica_read.c).
 *
 * A fetch (mk_fetched) is whole, validated frames read from a reader's
 * position on (mk_log_read's, through the partition's fetches), the end
 * that reader may see (the HW; with read_committed the LSO; for a
 * replica's own view its log end or the HW it knows) and, for
 * read_committed, the aborted transactions of the range (txnindex.h).
 * The reader is handed the data batches below the visible end that hold
 * records at or after its position; control batches (commit and abort
 * markers) never, and, when the aborted list is given, no batch of an
 * aborted transaction either. Its position moves past the records it
 * took and past every batch it was not shown (hidden or wholly before
 * it), never beyond the visible end, and not past a batch it had no room
 * left for.
 *
 * It lives in storage, the lowest layer holding both what it needs (the
 * frames of codec.h and the aborted list of txnindex.h); the visible end
 * is the caller's number, so nothing here knows a partition.
 *
 * Pure: no state and no lock; the frames and the list stay the caller's.
 */
#ifndef MK_VISIBLE_H
#define MK_VISIBLE_H

#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "txnindex.h"

/* One fetch's result, as its reader got it. */
typedef struct {
	const void *frames;              /* whole, validated frames */
	size_t len;
	int64_t visible;                 /* the end the reader may see */
	const mk_aborted_list *aborted;  /* read_committed: what is hidden;
					  * NULL: markers only */
} mk_fetched;

/*
 * A reader's share of one visible data batch: it takes the first records
 * of b whose offsets lie in [from, end), at most max (>= 1) of them,
 * returns how many it took and sets *next to the offset after the last
 * one taken (untouched when none). The view lives until it returns.
 */
typedef size_t (*mk_visible_fn)(void *arg, const mk_batch_view *b,
				int64_t from, int64_t end, size_t max,
				int64_t *next);

/*
 * Hand fn the visible batches of f from *pos on, at most max records in
 * all (SIZE_MAX: no limit), moving *pos as the header says. Returns the
 * records taken.
 */
size_t mk_visible_batches(const mk_fetched *f, size_t max, int64_t *pos,
			  mk_visible_fn fn, void *arg);

/*
 * The body of an mk_visible_fn for a reader of one record at a time:
 * fn(arg, rec) for each record of b in [from, end), at most max of them;
 * returns how many, *next after the last.
 */
size_t mk_visible_records(const mk_batch_view *b, int64_t from, int64_t end,
			  size_t max,
			  void (*fn)(void *arg, const mk_record_view *rec),
			  void *arg, int64_t *next);

#endif
