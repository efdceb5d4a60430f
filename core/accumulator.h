/*
 * accumulator.h — the producer side of a topic-level append: records are
 * routed by the partitioner (partitioner.h) into one open batch per
 * partition, each bounded by batch.size and linger.ms.
 *
 *   - a batch that reaches batch.size is sent at once (inside the write
 *     that filled it, which waits for its acks);
 *   - at the end of every write, batches older than linger.ms (on the
 *     cluster clock; all of them when linger.ms is 0) are sent and waited;
 *   - when time passes without writes, the cluster's sender (or an advance
 *     of the manual clock) sends due batches without waiting: their acks
 *     are awaited, and any error reported, by the next write or flush;
 *   - flush (close, fsync, unmount) sends everything and waits for all.
 * Order within a partition is the order written.
 *
 * Locking: acc->lock guards the batches; it is taken before any partition
 * lock, and the cluster's sender only try-locks it (a writer holding it
 * sends its due batches itself).
 */
#ifndef MK_ACCUMULATOR_H
#define MK_ACCUMULATOR_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "codec.h"
#include "replica.h"

/* Called once per batch the leader took (or deduplicated). */
typedef void (*mk_receipt_fn)(void *arg, const char *topic, int partition,
			      int64_t base, int32_t count, int acks);

typedef struct {
	int acks;                 /* 0, 1 or -1 */
	int64_t batch_size;
	int64_t linger_ms;
	bool idempotent;
	int64_t pid;
	int16_t epoch;
	mk_receipt_fn receipt;
	void *receipt_arg;
} mk_accumulator_opts;

typedef struct mk_accumulator mk_accumulator;

/* A producer for topic t (a reference is taken). */
mk_accumulator *mk_accumulator_new(mk_cluster *c, mk_topic *t,
				   const mk_accumulator_opts *opts);
/* Free; flushes first (errors go to /errors). */
void mk_accumulator_free(mk_accumulator *acc, const mk_waiter *w);

/* Add a record; sends a batch that reaches batch.size. */
mk_err mk_accumulator_add(mk_accumulator *acc, mk_bytes key, mk_bytes value,
			  const mk_header *headers, size_t nheaders,
			  int64_t timestamp, const mk_waiter *w, mk_strbuf *why);
/* The end of a write: send and await what linger.ms says is due. */
mk_err mk_accumulator_end_write(mk_accumulator *acc, const mk_waiter *w,
				mk_strbuf *why);
/* Send everything and await every pending acknowledgement. */
mk_err mk_accumulator_flush(mk_accumulator *acc, const mk_waiter *w,
			    mk_strbuf *why);
/* The cluster's sender: send due batches without waiting (try-lock). */
void mk_accumulator_tick(mk_accumulator *acc, int64_t now);
/* Earliest linger deadline among open batches; INT64_MAX when none. */
int64_t mk_accumulator_deadline(mk_accumulator *acc);

#endif
