/*
 * txn.h — the transaction coordinator: transactional ids, their producer
 * id and epoch, the transaction each has open, and how one ends (Kafka's
 * TransactionCoordinator with its transaction log).
 *
 * Owns: every transactional id (name, producer id, epoch, state, the
 * partitions its open transaction wrote to, the consumer offsets staged
 * with it, when it began). The daemon owns one mk_txns beside its
 * mk_cluster and mk_groups; nothing here is global.
 *
 * States (Kafka's names): Empty (never began one), Ongoing, PrepareCommit,
 * PrepareAbort, CompleteCommit, CompleteAbort. The first transactional
 * write (mk_txn_begin_write) or staged offset of an id that is not
 * Ongoing begins a transaction; ending one is
 *     1. record Prepare{Commit,Abort} with its partitions and offsets,
 *     2. append a control marker (COMMIT or ABORT) with the id's producer
 *        id and epoch to every registered partition, acks=all,
 *     3. commit: commit the staged offsets to their groups (group.h),
 *     4. record Complete{Commit,Abort}.
 * A crash after 1 is finished at mount (mk_txns_recover, which
 * mk_txns_start queues once replication runs: every prepared
 * transaction gets all its markers and offsets again; a marker written
 * twice only takes one more offset); a crash before 1 leaves the
 * transaction open, and its partitions' LSO held, until it ends, is
 * aborted by init or times out. A failed step 2 or 3 leaves the Prepare
 * state: the next commit, abort or init of the id (or the next open)
 * finishes it.
 *
 * Persistence: every change is one keyed record (key: the id; value: the
 * whole state as text, "pid=N epoch=E state=S start=MS [parts=T/P,...]
 * [offsets=G:T/P:OFFSET,...]") of the internal topic __transaction_state
 * (one partition, offsets.topic.replication.factor replicas capped at the
 * brokers, cleanup.policy=compact), appended with acks=all before the
 * change counts in memory. Open rebuilds the ids from that topic up to its
 * HW. A removed id keeps a "state=Dead" record, so that making it again
 * continues its producer id at the next epoch. Producer ids of
 * transactional ids are allocated here, from MK_TXN_PID_BASE up (apart
 * from the /producers ids the cluster allocates from 0).
 *
 * Fencing: init bumps the epoch, aborts an open transaction (its markers
 * carry the new epoch) and fences every writer holding the old epoch
 * (PRODUCER_FENCED at its next write). A timeout abort
 * (transaction.timeout.ms on the cluster clock, mk_txns_expire and the
 * background tick in [replication] mode = auto) bumps the epoch too.
 *
 * Writers: mk_txn_begin_write registers the partition (persisted before
 * the data is appended) and counts the write in flight until
 * mk_txn_end_write; an end is put off while a write is in flight (the
 * end of the write is its event), so no data batch of a transaction
 * lands after its marker.
 *
 * Every change (create, delete, init, end, staged offsets, a registered
 * partition, the timeout and recovery sweeps) is an operation of the
 * coordinators' runtime (coordinator.h), run one at a time; an end takes
 * several rounds (Prepare; the markers, appended together; the offsets,
 * one group's call at a time; Complete). The calls that change take an
 * mk_coord_call and return at once, the call perhaps pending, as the
 * group coordinator's (group.h).
 *
 * Locking (in this order, before any group, cluster or partition lock):
 *   the runtime's turn   serialises the operations and the log's read;
 *                        never held while waiting
 *   lock                 guards the in-memory state
 *
 * Failpoints: txn.end.after-prepare, txn.end.after-marker (after each
 * marker: @N is the Nth), txn.end.after-offsets, txn.end.after-complete.
 */
#ifndef MK_TXN_H
#define MK_TXN_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "coordinator.h"
#include "error.h"
#include "group.h"
#include "strbuf.h"

#define MK_TXN_TOPIC "__transaction_state"
#define MK_TXN_PID_BASE (INT64_C(1) << 40)

typedef struct mk_txns mk_txns;

typedef enum {
	MK_TXN_EMPTY,
	MK_TXN_ONGOING,
	MK_TXN_PREPARE_COMMIT,
	MK_TXN_PREPARE_ABORT,
	MK_TXN_COMPLETE_COMMIT,
	MK_TXN_COMPLETE_ABORT,
	MK_TXN_DEAD,
} mk_txn_state;

const char *mk_txn_state_name(mk_txn_state s);

/* Open the coordinator: rebuild from __transaction_state if it exists
 * (reads only; a log without a leader is read at a later call). groups:
 * where staged offsets go. */
mk_err mk_txns_open(mk_cluster *c, mk_groups *groups, mk_txns **out,
		    mk_strbuf *why);
/* Queue the finish of every prepared transaction (markers with acks=all:
 * call it once the followers fetch, mk_cluster_start); changes queue
 * behind it. Without a leader for the log, the first change that reads
 * it recovers first. */
void mk_txns_recover(mk_txns *t);
/* After mk_cluster_start: the runtime's thread (the timeout tick in
 * [replication] mode = auto) and mk_txns_recover; the mount does not
 * wait for either. */
void mk_txns_start(mk_txns *t);
void mk_txns_close(mk_txns *t);
/* The runtime (whose events a caller of a pending call waits for). */
mk_coord *mk_txns_runtime(mk_txns *t);

/* Ids. create: TRANSACTION_ALREADY_EXISTS, INVALID_REQUEST for a bad
 * name (topic-name rules); delete: CONCURRENT_TRANSACTIONS while a
 * transaction is open or ending. */
mk_err mk_txn_create(mk_txns *t, const char *id, mk_coord_call *call,
		     mk_strbuf *why);
mk_err mk_txn_delete(mk_txns *t, const char *id, mk_coord_call *call,
		     mk_strbuf *why);
bool mk_txn_exists(mk_txns *t, const char *id);
/* Sorted names; free each and the array. */
size_t mk_txn_names(mk_txns *t, char ***names);

/* Bump the epoch (fencing), aborting the open transaction. */
mk_err mk_txn_init(mk_txns *t, const char *id, mk_coord_call *call,
		   mk_strbuf *why);
/*
 * End the open transaction. Without one (Empty, Complete*) nothing
 * happens (MK_OK). A prepared one is finished with its decision, and
 * asking for the other is INVALID_TXN_STATE.
 */
mk_err mk_txn_end(mk_txns *t, const char *id, bool commit, mk_coord_call *call,
		  mk_strbuf *why);

typedef struct {
	const char *group;
	const char *topic;
	int partition;
	int64_t offset;
} mk_txn_offset;

/* Stage offsets with the transaction (beginning one): the group must
 * exist (GROUP_ID_NOT_FOUND) and the partition (UNKNOWN_TOPIC_OR_PARTITION);
 * a later offset for the same group and partition replaces the earlier. */
mk_err mk_txn_stage_offsets(mk_txns *t, const char *id,
			    const mk_txn_offset *o, size_t n, mk_coord_call *call,
			    mk_strbuf *why);

/* Abort every Ongoing transaction older than transaction.timeout.ms on the
 * cluster clock (bumping its epoch); *aborted (may be NULL; it must outlive
 * the call) counts them as they go. */
mk_err mk_txns_expire(mk_txns *t, int *aborted, mk_coord_call *call,
		      mk_strbuf *why);

/* A snapshot of one id. */
typedef struct {
	int64_t pid;
	int16_t epoch;
	mk_txn_state state;
	int64_t start_ms;
	size_t nparts;
	struct { char *topic; int partition; } *parts;   /* sorted */
	size_t noffsets;
	struct { char *group; char *topic; int partition; int64_t offset; } *offsets;
} mk_txn_info;

mk_err mk_txn_describe(mk_txns *t, const char *id, mk_txn_info *out,
		       mk_strbuf *why);
void mk_txn_info_free(mk_txn_info *info);

/* ---- the producer's side (producer.h) ---------------------------------- */

/* The id's producer id and epoch now (a transactional descriptor's open). */
mk_err mk_txn_producer(mk_txns *t, const char *id, int64_t *pid,
		       int16_t *epoch, mk_strbuf *why);
/* PRODUCER_FENCED when (pid, epoch) is no longer the id's. */
mk_err mk_txn_check(mk_txns *t, const char *id, int64_t pid, int16_t epoch,
		    mk_strbuf *why);
/*
 * Before appending a transactional batch of (pid, epoch) to topic/part:
 * fenced writers are refused, a prepared transaction is
 * CONCURRENT_TRANSACTIONS, otherwise a transaction begins if none is open
 * and the partition is registered (persisted). On MK_OK the write counts
 * as in flight until mk_txn_end_write.
 */
mk_err mk_txn_begin_write(mk_txns *t, const char *id, int64_t pid,
			  int16_t epoch, const char *topic, int part,
			  mk_coord_call *call, mk_strbuf *why);
void mk_txn_end_write(mk_txns *t, const char *id);

#endif
