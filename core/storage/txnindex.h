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
 * The same entries are also written in Kafka's own files, one .txnindex
 * per segment holding the entries whose abort marker lies in that
 * segment (Kafka's TransactionIndex: 34 bytes each, big-endian: version
 * i16 = 0, producerId i64, firstOffset i64, lastOffset i64,
 * lastStableOffset i64). mk_txnindex_encode gives a segment's bytes; the
 * log writes them (log.h, mk_log_sync_txnindex and mk_log_add_aborted).
 * Those files are a projection of this list, which stays the one the
 * reads use: they are rewritten from it at open, after a truncation and
 * after a compaction.
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
#include "error.h"
#include "strbuf.h"

typedef struct {
	int64_t pid;
	int64_t first;       /* first offset of the transaction here */
	int64_t last;        /* offset of its abort marker */
	int64_t lso;         /* the last stable offset once it ended (Kafka's
			      * entry keeps it: the first offset of the
			      * earliest transaction still open, else
			      * last + 1) */
} mk_aborted_txn;

#define MK_TXNINDEX_ENTRY 34    /* bytes of a .txnindex entry */

typedef struct {
	mk_aborted_txn *v;
	size_t n, alloc;
} mk_aborted_list;

void mk_aborted_init(mk_aborted_list *l);
void mk_aborted_free(mk_aborted_list *l);
void mk_aborted_clear(mk_aborted_list *l);
/* Append an entry; its last offset must not be below the list's last. */
void mk_aborted_add(mk_aborted_list *l, const mk_aborted_txn *t);
/* Copy into out (cleared first) every entry overlapping [from, to). */
void mk_aborted_range(const mk_aborted_list *l, int64_t from, int64_t to,
		      mk_aborted_list *out);
/* Drop the entries that end below offset (the log start moved past). */
void mk_aborted_trim(mk_aborted_list *l, int64_t offset);
/* Does read_committed hide this batch? (Control batches are hidden by
 * every reader anyway.) */
bool mk_aborted_hides(const mk_aborted_list *l, const mk_batch_view *b);

/* One entry in Kafka's .txnindex layout. */
void mk_txnindex_put(const mk_aborted_txn *t, uint8_t out[MK_TXNINDEX_ENTRY]);
/* Kafka's .txnindex bytes of the entries whose marker (last) lies in
 * [from, to), appended to out (n * MK_TXNINDEX_ENTRY bytes). */
void mk_txnindex_encode(const mk_aborted_list *l, int64_t from, int64_t to,
			mk_strbuf *out);

/*
 * The file at path (a segment's .txnindex). An append is not fsynced, a
 * write replaces the file atomically (fileio.h): the log rewrites each
 * from the producer state at open. Size 0: no file.
 */
uint64_t mk_txnindex_file_size(const char *path);
/* Make it hold exactly bytes[0, n) (no file when n is 0); a file that
 * already does is left alone. */
mk_err mk_txnindex_file_write(const char *path, const void *bytes, size_t n,
			      mk_strbuf *why);
/* Add entries at its end (made when missing). */
mk_err mk_txnindex_file_append(const char *path, const void *bytes, size_t n,
			       mk_strbuf *why);

#endif
