/*
 * replica.h — one partition: its replica set (a log per assigned broker),
 * leader, leader epoch, ISR and high watermark.
 *
 * Locking: mk_partition.lock guards every field below and every call into
 * the replicas' logs. `changed` is broadcast whenever something a waiter
 * may care about moves (log end, HW, leader, ISR, broker state, the manual
 * clock, shutdown); `seq` counts those moves so a waiter can tell.
 *
 * Invariants (checked by mk_partition_check in debug builds):
 *   - the leader, when there is one, is online and in the ISR;
 *   - every ISR member is an assigned replica; the ISR is never empty
 *     (the last member stays even when its broker goes down, as in Kafka);
 *   - hw <= the leader's log end; within one leader epoch hw never falls;
 *   - every replica's log is open exactly when its broker is online and the
 *     replica has not failed.
 */
#ifndef MK_REPLICA_H
#define MK_REPLICA_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "clock.h"
#include "config.h"
#include "errlog.h"
#include "error.h"
#include "log.h"
#include "notify.h"
#include "producer_state.h"
#include "strbuf.h"

/* What a partition needs from its cluster; owned by the cluster. */
typedef struct {
	const char *data_dir;
	const mk_config *cfg;
	mk_clock *clock;
	mk_errlog *errlog;
	volatile bool *shutting_down;
	_Atomic uint64_t *meta_dirty;   /* bumped when metadata must be saved */
	/* Posted (data: the frame's bytes) after every leader append, the
	 * partition lock held; NULL for none. The follower fetchers long-poll
	 * on it (cluster.h). */
	mk_notifier *log_end;
	/* Flushes every log's rolled segments (flushpool.h); NULL: each log
	 * makes its own. */
	struct mk_flush_pool *flush_pool;
	/* Every segment's descriptors (fdcache.h); NULL: unbounded. */
	struct mk_fdcache *fdcache;
} mk_env;

typedef struct {
	int broker;
	mk_log *log;            /* NULL while offline or failed */
	bool online;            /* the broker is up */
	bool failed;            /* storage error: offline until restart */
	bool in_isr;
	int64_t last_fetch_ms;  /* cluster clock */
	int64_t hw_view;        /* the HW this replica last learned */
	bool rejoining;         /* restarted, not fetched since: not in sync */
	mk_producer_state pstate;   /* idempotent producers seen in this log */
} mk_replica;

typedef struct mk_partition {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	uint64_t seq;
	uint64_t meta_version;  /* bumped when leader, epoch or ISR change */

	const mk_env *env;
	char *topic;
	int id;
	mk_topic_config cfg;    /* effective topic configuration */

	int nreplicas;
	mk_replica replicas[MK_MAX_BROKERS];
	int leader;             /* index into replicas, -1 = none */
	int32_t leader_epoch;
	int64_t hw;
	bool deleted;           /* topic deleted: every call fails */
} mk_partition;

/* Persistent assignment and leadership, as metadata stores it. */
typedef struct {
	int nreplicas;
	int brokers[MK_MAX_BROKERS];
	bool online[MK_MAX_BROKERS];
	int leader;             /* broker id, -1 = none */
	int32_t leader_epoch;
	int nisr;
	int isr[MK_MAX_BROKERS];
} mk_partition_state;

/* A consistent snapshot for the value files. */
typedef struct {
	int64_t leo;            /* leader's log end (or -1 without leader) */
	int64_t hw;
	int64_t lso;
	int64_t log_start;
	int leader;             /* broker id or -1 */
	int32_t leader_epoch;
	int nreplicas;
	struct {
		int broker;
		bool online, failed, in_isr;
		int64_t leo, log_start, last_fetch_ms, hw_view;
	} replicas[MK_MAX_BROKERS];
} mk_partition_info;

/* How a blocked call notices that its caller went away. */
typedef struct {
	bool (*interrupted)(void *arg);
	void *arg;
} mk_waiter;

/*
 * Open every online replica's log under DATA_DIR/broker-B/T-P. A replica
 * whose log cannot be opened is marked failed (an /errors line says why);
 * the partition still opens.
 */
mk_err mk_partition_open(const mk_env *env, const char *topic, int id,
			 const mk_topic_config *cfg,
			 const mk_partition_state *st, mk_partition **out);
/* Close every log (flushing it) and free. */
void mk_partition_close(mk_partition *p);
/* Topic deletion: drop the logs (no flush); every later call fails. */
void mk_partition_retire(mk_partition *p);
/* Delete the partition's directories (after retire). */
void mk_partition_remove_files(const mk_env *env, const char *topic, int id,
			       const mk_partition_state *st);

void mk_partition_state_get(mk_partition *p, mk_partition_state *st);
void mk_partition_info_get(mk_partition *p, mk_partition_info *info);
void mk_partition_set_config(mk_partition *p, const mk_topic_config *cfg);

/*
 * Produce one finished frame to the leader. acks: 0, 1 or -1 (all).
 * *base gets the assigned base offset. For acks=all: NOT_ENOUGH_REPLICAS
 * before appending when the ISR is below min.insync.replicas; then waits
 * until every ISR member captured at append time that is still in the ISR
 * has the batch: NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR falls below
 * the minimum meanwhile, FENCED_LEADER_EPOCH if the leader changes,
 * REQUEST_TIMED_OUT after request.timeout.ms on the cluster clock.
 */
mk_err mk_partition_produce(mk_partition *p, uint8_t *frame, size_t len,
			    int acks, const mk_waiter *w, int64_t *base,
			    mk_strbuf *why);

/*
 * Produce a batch of an idempotent producer (always acks=all): stamps
 * (pid, epoch) and the base sequence — `seq`, or the next one the leader
 * expects when seq < 0 — then checks it against the leader's producer
 * state. An exact retry of one of the producer's last five batches appends
 * nothing and returns the original offsets (*duplicate set); a gap or
 * reorder is OUT_OF_ORDER_SEQUENCE_NUMBER; an old epoch PRODUCER_FENCED.
 * *base and *count describe the batch (the original one for a retry).
 */
mk_err mk_partition_produce_idempotent(mk_partition *p, uint8_t *frame,
				       size_t len, int64_t pid, int16_t epoch,
				       int32_t seq, const mk_waiter *w,
				       int64_t *base, int32_t *count,
				       bool *duplicate, mk_strbuf *why);
/*
 * The general produce, for callers that batch on their own (the topic
 * accumulator): with defer_ack, an acks=all produce returns right after
 * the append with a ticket, and mk_partition_await later waits for it with
 * the same rules (the captured ISR, the minimum, the leader epoch, the
 * timeout counted from the append).
 */
typedef struct {
	int64_t target;             /* the batch's next offset */
	int32_t leader_epoch;
	int64_t deadline_ms;        /* cluster clock */
	bool captured[MK_MAX_BROKERS];
} mk_ack_ticket;

typedef struct {
	int acks;                   /* 0, 1 or -1 (all) */
	bool idempotent;
	int64_t pid;
	int16_t epoch;
	int32_t seq;                /* < 0: the next the leader expects */
	int32_t count;              /* records in the batch */
	bool defer_ack;
} mk_produce_args;

typedef struct {
	int64_t base;
	int32_t count;
	bool duplicate;
	bool pending;               /* a deferred acks=all: await the ticket */
	mk_ack_ticket ticket;
} mk_produce_result;

mk_err mk_partition_produce_ex(mk_partition *p, uint8_t *frame, size_t len,
			       const mk_produce_args *args, const mk_waiter *w,
			       mk_produce_result *res, mk_strbuf *why);
mk_err mk_partition_await(mk_partition *p, const mk_ack_ticket *t,
			  const mk_waiter *w, mk_strbuf *why);

/* The next sequence the leader expects from (pid, epoch); -1 when there
 * is no leader or the leader has no batch of that producer and epoch. */
int32_t mk_partition_next_sequence(mk_partition *p, int64_t pid, int16_t epoch);

/*
 * Consumer fetch from the leader: whole frames from `from` below the
 * visible end (HW), at most max_bytes (at least one batch). *visible_end
 * gets the HW. OFFSET_OUT_OF_RANGE outside [log start, log end].
 */
mk_err mk_partition_fetch(mk_partition *p, int64_t from, size_t max_bytes,
			  mk_strbuf *out, int64_t *visible_end, mk_strbuf *why);
/* First offset with timestamp >= ts on the leader (log end if none). */
mk_err mk_partition_offset_for_time(mk_partition *p, int64_t ts, int64_t *off);

/*
 * Wait until seq moves past *seen (then *seen is updated) or wait_ms of
 * wall time passes. Returns true when something changed.
 */
bool mk_partition_wait_change(mk_partition *p, uint64_t *seen, int wait_ms);
void mk_partition_wake(mk_partition *p);

/* One fetch round for the follower replica on broker b (no-op otherwise). */
mk_err mk_partition_follower_fetch(mk_partition *p, int broker);
/* The same; *bytes gets the bytes the follower appended (0: nothing new). */
mk_err mk_partition_follower_fetch_ex(mk_partition *p, int broker,
				      size_t *bytes);

/* Broker events. */
void mk_partition_broker_crash(mk_partition *p, int broker, bool torn);
void mk_partition_broker_restart(mk_partition *p, int broker);
mk_err mk_partition_promote(mk_partition *p, int broker, bool unclean,
			    mk_strbuf *why);

/* fsync every open replica log. */
mk_err mk_partition_flush(mk_partition *p);

/* Leader's segments (for /segments): copy of infos; returns count. */
size_t mk_partition_segments(mk_partition *p, mk_segment_info **out,
			     mk_strbuf *dir);

#endif
