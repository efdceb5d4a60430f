/*
 * producer.h — the producer side of an append: one mk_producer per append
 * descriptor, for one partition or for a whole topic, and the registry of
 * producers with its sender thread (Kafka's client: RecordAccumulator and
 * Sender in one place).
 *
 * Open holds every open-time rule: the acks default (the cluster's
 * [producer] acks), producer=NAME (an idempotent producer: its id and
 * epoch are taken at open, it writes with acks=all only, seq= only on a
 * partition), txn=ID (a transactional producer: the id's producer id and
 * epoch at open, acks=all, no producer= or seq=; every batch is
 * transactional and registers its partition with the coordinator before
 * it is appended, txn.h; a later init of the id fences it). Nothing waits
 * for that registration: while it is owed (its record awaits the ISR)
 * the batch is held, counts as taken, and is appended by the first check
 * after the registration completed; held batches keep their order, and
 * every later batch of the producer queues behind them. A check reports
 * them owed, watching the coordinator (mk_ack_watch.coord).
 *
 * Send takes records (slices the caller keeps valid for the call) and
 * says how many it took (*taken): either all of them or none.
 *   - An idempotent producer whose identity was initialised again since
 *     open is fenced (PRODUCER_FENCED), gone (UNKNOWN_PRODUCER_ID): none.
 *   - A partition producer encodes the records into one batch and
 *     produces it: taken when the leader appended it (or recognised an
 *     exact retry, or it is held for its registration), whatever the
 *     acknowledgement then says.
 *   - A topic producer refuses the whole call when one record's own batch
 *     would exceed message.max.bytes (MESSAGE_TOO_LARGE, none taken), and
 *     otherwise takes them all: each record is routed (crc32(key) mod
 *     partitions, keyless ones sticky) and encoded once, into its
 *     partition's open batch. A batch that would pass batch.size is sent
 *     first; at the end of the call batches past linger.ms (all of them
 *     when linger.ms is 0) are sent. Errors after that are about sending.
 *     (How: each record is sized and routed once per call; records in a
 *     row for one partition are added as one run, mk_builder_add_many;
 *     a call of keyed records only, on a producer that combines, takes
 *     them partition by partition, which makes the same batches; not
 *     once keyless records chose a sticky partition, whose moves depend
 *     on the order batches close in.)
 * Keyless records of a new topic producer start at a partition that
 * rotates per topic (mk_topic.next_sticky), then move on by one partition
 * each time their batch closes.
 *
 * Nothing here waits for an acknowledgement: mk_producer_append appends
 * and keeps the tickets of what it appended, mk_producer_check looks at
 * them (and says which partition change to watch while some are owed),
 * and the caller waits for that event its own way (the filesystem parks
 * the request, park.h). In auto mode an acks=all batch the caller looks
 * after (append, flush_begin) is copied to the followers on the caller's
 * thread where their fetchers have not started
 * (mk_produce_args.copy_inline, replica.h); the sender's batches are not.
 * Batches the sender (or an advance of the manual clock) sends are owed
 * to the next check with all, and their first error is logged to /errors
 * and returned (once) by the next append, poll or flush_begin.
 *
 * Receipts: with keep_receipts, one receipt per batch the leader took
 * (or deduplicated), in the order sent; take_receipts hands them out.
 *
 * Locking: mk_producers.lock guards the registry and the sender's state;
 * it is taken before a producer's lock, which the sender only try-locks (a
 * writer holding it sends its due batches itself). mk_producer.lock guards
 * the producer's batches, tickets, receipts and deferred error. Partition
 * locks are taken under it (produce), never the other way round.
 */
#ifndef MK_PRODUCER_H
#define MK_PRODUCER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster.h"
#include "codec.h"
#include "error.h"
#include "replica.h"
#include "strbuf.h"
#include "txn.h"

#define MK_PARTITION_ANY (-1)
#define MK_PRODUCER_ACKS_DEFAULT (-2)

typedef struct mk_producers mk_producers;
typedef struct mk_producer mk_producer;

/* The registry of one cluster; hooks itself to the cluster's clock. */
mk_producers *mk_producers_new(mk_cluster *c);
/* Stop the sender, then flush and close producers still open (a stop with
 * files open); their errors go to /errors. */
void mk_producers_free(mk_producers *ps);

/* Batching limits; a producer without takes the cluster's [producer]. */
typedef struct {
	int64_t batch_size;
	int64_t linger_ms;
} mk_producer_limits;

typedef struct {
	int acks;                 /* MK_PRODUCER_ACKS_DEFAULT, 0, 1 or -1 */
	const char *producer;     /* NULL or "": not idempotent */
	int64_t seq;              /* < 0: the next the leader expects */
	const char *txn;          /* NULL or "": not transactional */
	mk_txns *txns;            /* the coordinator txn= names an id of */
	bool keep_receipts;
	const mk_producer_limits *limits;   /* NULL: the cluster's */
} mk_producer_opts;

/* A producer for partition `partition` of t, or MK_PARTITION_ANY for the
 * topic (a topic reference is taken). */
mk_err mk_producer_open(mk_producers *ps, mk_topic *t, int partition,
			const mk_producer_opts *o, mk_producer **out,
			mk_strbuf *why);

/* A record to send is an mk_record_in (codec.h): the bytes stay the
 * caller's. */

/* Append (see above); tickets of acks=all batches are kept for check. */
mk_err mk_producer_append(mk_producer *p, const mk_record_in *recs, size_t n,
			  size_t *taken, mk_strbuf *why);

/*
 * The acknowledgements, without a thread that waits (the filesystem parks
 * the request instead): flush_begin sends every open batch (and returns
 * the error of a background send, once), leaving its acknowledgements
 * owed; check takes one look at every acknowledgement owed (with all,
 * those of the sender's batches too) and settles each that is done,
 * failed or past its deadline (mk_partition_ack_check). While some are
 * owed it sets *pending and says where to watch: a partition that owes
 * one, its change count taken before the look, and that ticket (for
 * mk_watch.ack; its deadline on the cluster clock). Once none are owed
 * it returns the first error settled since the last time it did (MK_OK
 * when all were acknowledged); never MK_INTERRUPTED.
 */
typedef struct {
	mk_partition *p;
	mk_coord *coord;         /* or, for a batch held until its partition's
				  * registration with the transaction
				  * coordinator, its runtime (p NULL; seen is
				  * the runtime's count) */
	uint64_t seen;
	int64_t deadline_ms;
	mk_ack_ticket ticket;
} mk_ack_watch;
mk_err mk_producer_flush_begin(mk_producer *p, mk_strbuf *why);
mk_err mk_producer_check(mk_producer *p, bool all, bool *pending,
			 mk_ack_watch *watch, mk_strbuf *why);

/* Without sending or waiting: the error of a batch sent in the
 * background since the last call, if any (once). */
mk_err mk_producer_poll(mk_producer *p, mk_strbuf *why);
/*
 * Close: flush_begin, then one last look at every acknowledgement still
 * owed (check with all), then free. Nothing is waited for: a caller that
 * must know waits until check says none are owed first (the filesystem's
 * last close and fsync park for it). What that look still finds owed is
 * REQUEST_TIMED_OUT (the batches stay appended; the ISR may yet take
 * them), as a stop answers a parked write (park.h); otherwise the first
 * error of the send and of the acknowledgements settled, or MK_OK.
 */
mk_err mk_producer_close(mk_producer *p, mk_strbuf *why);

typedef struct {
	int partition;
	int64_t base;             /* the batch's first offset */
	int32_t count;
	int acks;                 /* 0: the offset is not known to the writer */
} mk_receipt;

/* Move up to max receipts into out; returns how many. */
size_t mk_producer_take_receipts(mk_producer *p, mk_receipt *out, size_t max);

/* Earliest linger deadline among open batches; INT64_MAX when none. */
int64_t mk_producer_deadline(mk_producer *p);

#endif
