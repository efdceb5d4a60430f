/*
 * coordinator.h — the runtime the coordinators share (Kafka's
 * CoordinatorRuntime in miniature): an internal topic, one queue of
 * write operations per coordinator, and callers that wait for their
 * operation as a parked request waits, on an event, never on a thread
 * blocked in an append.
 *
 * Owns: the coordinator's internal topic (created on first need with
 * its partition count, replication factor capped at the brokers, and
 * cleanup.policy=compact), the queue of operations, the partition watch
 * on the one operation in flight, the watchers of callers, and the
 * periodic task of [replication] mode = auto.
 *
 * An operation (mk_coord_op) is one change of a coordinator's state
 * that is persisted: its kind's prepare validates it against the state
 * and adds the records that say it (mk_coord_op_record); the runtime
 * appends them with acks=all to the internal topic's partition; once the
 * ISR acknowledged them the kind's apply makes them true in memory. A
 * refused operation (prepare fails) and a failed append change nothing
 * in memory. Kafka applies a write at once and reverts it on failure;
 * applying after the acknowledgement keeps the rule the files show: a
 * change is visible only when it is in the log for good.
 *
 * Invariants: operations run in the order they were submitted, one at a
 * time: the next is prepared only after the one before it was applied or
 * failed, so what prepare validated still holds when apply runs. Nothing
 * here waits: an operation whose records the ISR has yet to acknowledge
 * stays at the head of the queue, and its partition's next change (or a
 * caller's next look) moves it on.
 *
 * Callers. mk_coord_submit queues an operation and runs what can run
 * now. With a call (mk_coord_call) the caller learns the result: at once,
 * or, while mk_coord_call_pending, by waiting for the runtime's next event
 * (mk_coord_watch, as the parking lot does, fs/park.h) and looking again
 * with mk_coord_call_resume. Without a call (the periodic task, mount
 * recovery) the operation runs on its own, and a failure goes to /errors.
 * The runtime's thread moves the queue on at every event too, so an
 * operation nobody waits for never stalls.
 * mk_coord_call_wait is the blocking form, for callers that are threads
 * of their own (unit tests; no caller in the daemon): it sleeps on the
 * same events and, with the system clock, until the head's deadline.
 *
 * Locking (in this order, before the coordinator's own lock):
 *   turn   held while an operation is prepared, appended, looked at or
 *          applied (never while waiting); a reader that would rebuild
 *          state from the log takes it only by trylock (mk_coord_trylock)
 *   lock   the queue, the event count and the watchers. Watchers fire
 *          under it: they record, and never call back in.
 * The partition watch's callback runs under the partition's lock and
 * takes only `lock`.
 */
#ifndef MK_COORDINATOR_H
#define MK_COORDINATOR_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "codec.h"
#include "error.h"
#include "strbuf.h"

typedef struct mk_coord mk_coord;
typedef struct mk_coord_op mk_coord_op;

/*
 * What an operation does: see above. prepare and apply run under the
 * turn. Besides its records, prepare may append to other partitions
 * (mk_coord_op_append: a transaction's markers), start a call of
 * another coordinator (mk_coord_op_sub: a transaction's offsets), or
 * put itself off (mk_coord_op_retry); everything it started must be
 * acknowledged before apply runs. apply gets the round's outcome: err
 * from prepare, or the failure of an append (its why says which), else
 * MK_OK once all is acknowledged. It sets *more when the operation has
 * more to do: it is prepared again, still at the head of the queue (a
 * sweep over groups, the steps of a transaction's end). An error from
 * apply ends the operation with it (what was applied stays). release
 * frees the operation (it embeds mk_coord_op).
 */
typedef struct {
	const char *name;        /* for /errors: "offset commit", ... */
	mk_err (*prepare)(mk_coord_op *op, mk_strbuf *why);
	mk_err (*apply)(mk_coord_op *op, mk_err err, bool *more, mk_strbuf *why);
	void (*release)(mk_coord_op *op);
} mk_coord_op_kind;

typedef enum { MK_COORD_QUEUED, MK_COORD_APPENDED, MK_COORD_DONE } mk_coord_op_state;

/* An append of an operation that the ISR owes. */
typedef struct {
	mk_topic *t;             /* a reference, put when done */
	mk_partition *p;         /* NULL: acknowledged */
	mk_ack_ticket ticket;
} mk_coord_append;

/* One operation; a kind's own struct embeds it first. The fields below
 * kind are the runtime's. */
struct mk_coord_op {
	const mk_coord_op_kind *kind;
	mk_coord *rt;
	mk_coord_op_state state;
	int partition;           /* of the internal topic; -1: no record yet */
	mk_batch_builder b;      /* the records prepare added */
	bool building;
	mk_coord_append *acks;   /* the appends the ISR owes (the records' */
	size_t nacks;            /* first, when there are records) */
	struct mk_coord_call_s *sub;   /* mk_coord_op_sub's, or NULL */
	bool retry;              /* mk_coord_op_retry: prepare again later */
	mk_err sub_result;       /* the sub-call's, for apply */
	mk_strbuf sub_why;
	mk_err result;
	mk_strbuf why;
	bool orphan;             /* no caller collects it (under rt lock) */
	bool periodic;           /* the periodic task's (the runtime's): its
				  * failure is not for /errors (it says its
				  * own), the next is made after it ended */
	int counted;             /* what apply counted (members expired, ...) */
	int *count_to;           /* the caller's: set from counted when it
				  * collects the result (NULL: none) */
	mk_coord_op *next;
};

/* A caller's hold on one submitted operation. */
typedef struct mk_coord_call_s {
	mk_coord *rt;
	mk_coord_op *op;         /* NULL: complete */
	uint64_t seen;           /* the runtime's event count at the last look */
	int64_t deadline_ms;     /* cluster clock: when the append the queue
				  * waits for times out (look again then);
				  * INT64_MAX: none */
} mk_coord_call;

typedef struct {
	const char *topic;       /* the internal topic */
	int partitions;
	int replication;         /* capped at the brokers */
	const char *failpoint;   /* hit after an append, before apply */
	/* The periodic task (auto mode), or NULL: it makes an operation
	 * (or NULL: none now) that the runtime runs with nobody holding it;
	 * a tick makes none while the one made before is still queued (a
	 * sweep at a time). */
	mk_coord_op *(*tick)(void *arg);
	void *arg;
} mk_coord_def;

mk_coord *mk_coord_new(mk_cluster *c, const mk_coord_def *def);
/* Start the runtime's thread: it moves the queue on at every event and,
 * in [replication] mode = auto, runs the periodic task. */
void mk_coord_start(mk_coord *rt);
/* Stop the task, fail what is queued (the cluster is shutting down or
 * gone) and free. Every caller has collected or forgotten its call
 * before (the filesystem's parking lot is stopped first). */
void mk_coord_free(mk_coord *rt);

/* Create the internal topic if it does not exist; *nparts gets its
 * partition count. Under the turn. */
mk_err mk_coord_ensure_topic(mk_coord *rt, int *nparts, mk_strbuf *why);

/* A coordinator's rebuild: every data record of partition part of the
 * internal topic, from its log start to its visible end, to fn
 * (mk_partition_replay); *epoch (if given) gets the leader epoch it was
 * read at. UNKNOWN_TOPIC_OR_PARTITION without the partition,
 * LEADER_NOT_AVAILABLE without a leader (nothing read). */
mk_err mk_coord_replay(mk_coord *rt, int part,
		       void (*fn)(void *arg, const mk_record_view *rec),
		       void *arg, int32_t *epoch);

/* The turn, for a coordinator's own rebuilds (see Locking). */
void mk_coord_lock(mk_coord *rt);
bool mk_coord_trylock(mk_coord *rt);
void mk_coord_unlock(mk_coord *rt);

/* For prepare: add one record (value NULL: a tombstone) for partition
 * part of the internal topic; every record of an operation goes to one
 * partition. */
void mk_coord_op_record(mk_coord_op *op, int part, const char *key,
			const char *value);

/* For prepare: append frame (a whole batch) to topic t's partition part
 * with acks=all now; the operation waits for its acknowledgement. t is a
 * reference the operation takes over (put on failure too). */
mk_err mk_coord_op_append(mk_coord_op *op, mk_topic *t, int part,
			  uint8_t *frame, size_t len, mk_strbuf *why);
/* For prepare: a call to pass to another coordinator's operation; the
 * operation waits for it, and apply finds its result in sub_result and
 * sub_why. */
mk_coord_call *mk_coord_op_sub(mk_coord_op *op);
/* For prepare: not now (nothing added): prepare again at the runtime's
 * next event (mk_coord_poke, or any other). */
void mk_coord_op_retry(mk_coord_op *op);
/* For prepare: run op (its kind and own fields filled; nobody waits for
 * it) before the one preparing, which puts itself off (mk_coord_op_retry).
 * Mount recovery ahead of the first change. */
void mk_coord_push_front(mk_coord *rt, mk_coord_op *op);
/* An event for operations put off until the next one (a coordinator's
 * in-memory change no record says: a write in flight ended). */
void mk_coord_poke(mk_coord *rt);

/* Queue op (its kind and own fields filled, the rest zero) and run what
 * can run now. call NULL: nobody waits (see above); else *call holds op
 * and the result is as mk_coord_call_resume's. */
mk_err mk_coord_submit(mk_coord *rt, mk_coord_op *op, mk_coord_call *call,
		       mk_strbuf *why);
/* Run what can run, then look at the call's operation: its result once
 * it completed (the call is complete then), else MK_OK with the call
 * still pending. */
mk_err mk_coord_call_resume(mk_coord_call *call, mk_strbuf *why);
static inline bool mk_coord_call_pending(const mk_coord_call *call)
{
	return call && call->op;
}
/* Resume until complete, sleeping on the runtime's events in between;
 * MK_INTERRUPTED (the call forgotten) once the cluster shuts down or the
 * runtime closes. */
mk_err mk_coord_call_wait(mk_coord_call *call, mk_strbuf *why);
/* The caller goes away: the operation runs on without it. */
void mk_coord_call_forget(mk_coord_call *call);

/* Fire w at the runtime's first event after `seen` (at once, inside this
 * call, if one came already): the in-flight operation's partition
 * changed, or an operation completed. One-shot, as mk_partition_watch. */
void mk_coord_watch(mk_coord *rt, mk_watch *w, uint64_t seen);
/* The runtime's event count now (for a first mk_coord_watch). */
uint64_t mk_coord_seq(mk_coord *rt);
void mk_coord_unwatch(mk_coord *rt, mk_watch *w);

#endif
