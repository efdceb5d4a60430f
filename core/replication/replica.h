/*
 * replica.h — one partition: its replica set (a log per assigned broker),
 * leader, leader epoch, ISR and high watermark. mk_partition is opaque: its
 * struct and the calls its pieces make of each other are private
 * (replica_internal.h), one file per concept, after Kafka's seams:
 *   partition.c       lifecycle, state, watchers, the snapshot;
 *   isr.c             the ISR and the HW (the one place they are decided);
 *   produce.c         the leader's appends, acks=all tickets and waits;
 *   follower_fetch.c  reconciliation, the fetch, the writer's copy;
 *   election.c        the plans for crash, restart and promote;
 *   replica_store.c   producer snapshot, HW checkpoint (the broker's
 *                     replication-offset-checkpoint), open, truncate;
 *   replica_read.c    consumer fetch, time lookup, replay, the /brokers
 *                     views, retention, compaction, DeleteRecords.
 *
 * Locking: the partition's lock (p->lock) guards all of its state and
 * every call into the replicas' logs, with one exception: a follower
 * fetch in flight. A
 * follower fetch (mk_partition_follower_fetch) runs in three steps: under
 * the lock it reconciles the follower's log, reads the frames it lacks out
 * of the leader's log and marks the replica `fetching`; without the lock it
 * appends them to the follower's own log (the disk writes, rolls and file
 * creations); under the lock again it publishes the new log end, moves
 * hw_view, the HW and the ISR, and wakes the waiters. While `fetching` is
 * set, that fetch alone calls into the replica's log and producer state;
 * everyone else reads the fetch_* values taken when it started (log end,
 * log start, agreed end: a lower bound of the truth meanwhile, so the HW
 * and acks=all never count data not yet written). The leader's log is
 * only ever called under the lock, so a leader append waits at most for
 * another thread's memory copy out of it, never for a follower's disk
 * write. Whatever changes a log other than a leader append (crash,
 * restart, promotion, flush, retention, compaction, configuration,
 * deletion, the /brokers views) first waits, under the lock, until no
 * fetch is in flight (`settled`, `nfetching`), and no fetch starts while
 * such a wait is pending (`quiescing`): so the leader and its epoch never
 * change under a fetch in flight. Lock order: the cluster's locks, then
 * p->lock; nothing else is taken under it but leaf locks (notify.h, the
 * saver's flag, the log's own internal locks).
 *
 * The writer's copy (auto mode, env->writer_copy): besides the fetchers,
 * the thread that made an acks=all leader append its caller waits for
 * (mk_produce_args.copy_inline: a request thread, idle until its batch is
 * acknowledged) runs one follower fetch itself, right after the append,
 * with the partition lock released: the two followers' copies then run
 * on two cores at once instead of one fetcher after the other. It is the
 * same fetch as a fetcher's round for that replica (the three steps, the
 * `fetching` mark, the shared copy, the quiesce rules), so it decides
 * nothing a fetcher would not: nothing counts until published, crashes,
 * promotions and the other log changes wait for it as for any fetch.
 * The follower is chosen under the append's lock: one the ticket counts
 * (captured), whose log is open, lacks the batch and is not being
 * fetched; its fetcher is then not woken for this append. The copy never
 * waits: when that replica is being fetched by then, or a change is
 * quiescing, or the leader's epoch moved, it is skipped, and its fetcher
 * is woken instead (as it is when the copy left the follower behind, or
 * failed). After it, the writer copies to each other such follower whose
 * fetch has still not started (its fetcher was woken by the append but
 * had no CPU yet), so a busy machine's scheduler does not hold the batch
 * back; a follower whose fetch did start is left to it.
 * mk_partition_test_stats counts them (writer_copies, writer_skips).
 *
 * `changed` is broadcast whenever something a waiter
 * may care about moves (log end, HW, leader, ISR, broker state, the manual
 * clock, shutdown); `seq` counts those moves so a waiter can tell, and
 * every armed watcher (mk_watch) fires once, so a waiter need not hold a
 * thread: it arms a watcher and is answered from the event.
 *
 * Decide, persist, act. An ISR change is decided (isr.c) and acted
 * on only once the metadata file has it (isr_saved, set by
 * mk_partition_meta_saved): until then the HW and acks=all count every
 * replica in either set (a shrink waits for the save; an expansion only
 * makes them wait for one more) and min.insync.replicas counts only the
 * replicas in both. Leader and epoch changes (promote, a restart's
 * election) are planned (mk_partition_plan_*), saved by the cluster, and
 * only then applied, so no append ever runs under an epoch the metadata
 * file lacks.
 *
 * Invariants (checked by part_check in debug builds):
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

#include "watch.h"
#include "cleaner.h"
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
	atomic_bool *shutting_down;
	_Atomic uint64_t *meta_dirty;   /* bumped when metadata must be saved */
	/*
	 * Wakes the owner's metadata saver (a leaf lock at most: called under
	 * p->lock). NULL when nothing saves in the background (a cluster not
	 * started, a unit test): a change then counts as saved at once.
	 */
	void (*meta_notify)(void *arg);
	/*
	 * Stores every change decided so far: returns once the metadata file
	 * has it (or its save failed, with an /errors line), waiting for a
	 * save in flight on the saver's lock (an event, not a timed poll).
	 * Called with no partition lock held, by an acks=0/1 append of
	 * manual replication that decided an ISR change, so that the append
	 * completes with it (mk_partition_info_get). Set with meta_notify.
	 */
	void (*meta_store)(void *arg);
	void *meta_arg;
	/*
	 * Called after every leader append, once per follower replica's
	 * broker (never the leader's), with the bytes appended, the partition
	 * lock released (so the woken fetcher does not block on it at once;
	 * only an acks=all append that waits in place calls it holding the
	 * lock, right before the wait releases it). The cluster wakes that
	 * broker's fetcher (cluster.h). NULL for none.
	 */
	void (*fetch_wake)(void *arg, int broker, uint64_t bytes);
	void *fetch_wake_arg;
	/* Flushes every log's rolled segments (flushpool.h); NULL: each log
	 * makes its own. */
	struct mk_flush_pool *flush_pool;
	/* Every segment's descriptors (fdcache.h); NULL: unbounded. */
	struct mk_fdcache *fdcache;
	/* Tests: called by a follower fetch between its unlocked append and
	 * its publication (no lock held; broker: the follower's); NULL for
	 * none. */
	void (*fetch_hook)(void *arg, int broker);
	void *fetch_hook_arg;
	/*
	 * Auto mode (set by mk_cluster_start once the fetchers run, before
	 * any request): an acks=all append whose caller waits for it
	 * (mk_produce_args.copy_inline) copies its batch to one follower on
	 * the caller's own thread (see "The writer's copy" above). False:
	 * only fetchers and explicit fetch rounds copy (manual mode).
	 */
	bool writer_copy;
} mk_env;


/* An acks=all append's ticket (see mk_partition_produce). */
typedef struct mk_ack_ticket {
	int64_t target;             /* the batch's next offset */
	int32_t leader_epoch;
	int64_t deadline_ms;        /* cluster clock */
	bool captured[MK_MAX_BROKERS];
} mk_ack_ticket;

/*
 * A partition's watchers (mk_watch, watch.h; see mk_partition_watch): fn
 * runs under p->lock, in whichever thread made the change: it may only
 * record the event (take its own leaf lock, signal a condition) and must
 * never call into a partition or take a lock that is held around a
 * partition call. The owner answers its waiter from its own thread.
 *
 * A watcher for an acks=all ticket sets `ack` (the owner's copy, read
 * under p->lock while armed): a follower fetch that only moves that
 * follower's copy (its log end, its HW view; no HW, ISR or leader move)
 * fires it only when the ticket is then settled (acknowledged, failed or
 * past its deadline), so the first of two followers to copy a batch does
 * not wake its writer for nothing. Every other change fires it as before.
 */

/* One partition (opaque: replica_internal.h, private to replica*.c). */
typedef struct mk_partition mk_partition;

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
	uint64_t isr_shrinks, isr_expands;   /* since open (mk_partition) */
	int nreplicas;
	struct {
		int broker;
		bool online, failed, in_isr;
		int64_t leo, log_start, last_fetch_ms, hw_view;
		int64_t agreed_end;   /* how far its log agrees with the
				       * leader's (below leo: a divergent
				       * tail its next fetch truncates); -1
				       * without a log or a leader */
	} replicas[MK_MAX_BROKERS];
} mk_partition_info;

/*
 * Open every online replica's log under DATA_DIR/broker-B/T-P. A replica
 * whose log cannot be opened is marked failed (an /errors line says why);
 * the partition still opens.
 */
mk_err mk_partition_open(const mk_env *env, const char *topic, int id,
			 const mk_topic_config *cfg,
			 const mk_partition_state *st, mk_partition **out);
/*
 * The same for a partition being created: its directories are made (every
 * replica's, the offline ones' too, fsynced into their parents). After
 * that a missing directory is damage: mk_partition_open and a restart take
 * that replica offline with an /errors line instead of starting it empty.
 * Each replica's HW (the one it knew at its last flush or close, or when
 * its log start last moved) is kept in its broker's
 * replication-offset-checkpoint (logdir.h): a recovery that ends below it
 * says so in /errors, and at open such a leader hands the leadership to an
 * in-sync replica that has the records (a new epoch; it leaves the ISR).
 */
mk_err mk_partition_create(const mk_env *env, const char *topic, int id,
			   const mk_topic_config *cfg,
			   const mk_partition_state *st, mk_partition **out);
/* Close every log (flushing it) and free. */
void mk_partition_close(mk_partition *p);
/* Topic deletion: drop the logs (no flush); every later call fails. */
void mk_partition_retire(mk_partition *p);
/* Delete the partition's directories (after retire). */
void mk_partition_remove_files(const mk_env *env, const char *topic, int id,
			       const mk_partition_state *st);

/* The topic's name and the partition's id (fixed at open: no lock). */
const char *mk_partition_topic(const mk_partition *p);
int mk_partition_id(const mk_partition *p);

void mk_partition_state_get(mk_partition *p, mk_partition_state *st);
/*
 * The snapshot: it only reads (no ISR rule is applied, nothing changes)
 * and never waits. Its ISR (replicas[].in_isr) is the committed one, the
 * ISR the metadata file has (KIP-497: a change decided but not yet saved
 * is not yet the ISR), with the HW that ISR allows; isr_shrinks and
 * isr_expands count decisions. Without a saver (env->meta_notify NULL) a
 * decision counts as saved at once. The rules run elsewhere: at every
 * event that may move them (an append, a fetch, a save), and for time
 * alone at the cluster's ISR check (cluster.h, mk_cluster_isr_check).
 */
void mk_partition_info_get(mk_partition *p, mk_partition_info *info);
/* Apply the ISR rules now (the ISR check: cluster.h). */
void mk_partition_refresh(mk_partition *p);
void mk_partition_set_config(mk_partition *p, const mk_topic_config *cfg);

/*
 * Produce one finished frame to the leader. acks: 0, 1 or -1 (all).
 * res->base gets the assigned base offset (-1: nothing was appended).
 * Before appending: NOT_ENOUGH_REPLICAS for acks=all when the ISR is below
 * min.insync.replicas, MESSAGE_TOO_LARGE over message.max.bytes.
 *
 * An idempotent producer's batch (always acks=all) is stamped with (pid,
 * epoch) and the base sequence — `seq`, or the next one the leader expects
 * when seq < 0 — then checked against the leader's producer state. An exact
 * retry of one of the producer's last five batches appends nothing and
 * gives the original offsets (res->duplicate); a gap or reorder is
 * OUT_OF_ORDER_SEQUENCE_NUMBER; an old epoch PRODUCER_FENCED. res->base
 * and res->count describe the batch (the original one for a retry).
 *
 * acks=all returns right after the append with a ticket (res->pending):
 * the batch is acknowledged once every ISR member captured at append time
 * that is still in the ISR has it; NOT_ENOUGH_REPLICAS_AFTER_APPEND if the
 * ISR falls below the minimum meanwhile, FENCED_LEADER_EPOCH if the leader
 * changes, REQUEST_TIMED_OUT after request.timeout.ms on the cluster clock
 * (counted from the append). Nothing here waits: the caller looks at the
 * ticket (mk_partition_ack_check) at the partition's events
 * (mk_partition_watch). With copy_inline it first makes the writer's copy
 * (see Locking), so the ticket may already be acknowledged when it
 * returns.
 */

typedef struct {
	int acks;                   /* 0, 1 or -1 (all) */
	bool idempotent;
	int64_t pid;
	int16_t epoch;
	int32_t seq;                /* < 0: the next the leader expects */
	int32_t count;              /* records in the batch */
	/* acks=all: the caller waits for (parks on) this batch, so with
	 * env->writer_copy it copies the batch to one follower before
	 * returning (the writer's copy, above). */
	bool copy_inline;
} mk_produce_args;

typedef struct {
	int64_t base;
	int32_t count;
	bool duplicate;
	bool pending;               /* acks=all: the ticket the ISR owes */
	mk_ack_ticket ticket;
} mk_produce_result;

mk_err mk_partition_produce(mk_partition *p, uint8_t *frame, size_t len,
			    const mk_produce_args *args, mk_produce_result *res,
			    mk_strbuf *why);
/*
 * Several batches of one non-idempotent producer (args: acks;
 * idempotent false) produced as
 * mk_partition_produce produces each, in order, under one hold of the
 * partition lock: a batch refused on its own (too large, a keyless record
 * on a compacted topic) is skipped and the others go on, and the batches
 * between two refused ones are appended by one mk_log_append_leader_many
 * (one system call per run of frames between two rolls). res[i] per
 * frame: its base (-1 when not appended) and count; with acks=all only the
 * last appended frame's result is pending, its ticket covering them all
 * (with copy_inline, the writer's copy as for one). Returns the first
 * error (a storage error stops there, the frames before it appended).
 * n <= MK_LOG_APPEND_MAX.
 */
mk_err mk_partition_produce_many(mk_partition *p, uint8_t *const *frames,
				 const size_t *lens, size_t n,
				 const mk_produce_args *args,
				 mk_produce_result *res, mk_strbuf *why);

/* The next sequence the leader expects from (pid, epoch); -1 when there
 * is no leader or the leader has no batch of that producer and epoch. */
int32_t mk_partition_next_sequence(mk_partition *p, int64_t pid, int16_t epoch);

/*
 * Consumer fetch from the leader: whole frames from `from` below the
 * visible end (HW), at most max_bytes (at least one batch). *visible_end
 * gets the HW. OFFSET_OUT_OF_RANGE outside [log start, log end].
 */
/*
 * Replay a partition from offset from up to its visible end: fn gets every
 * data record in offset order (control batches skipped). How the
 * coordinators rebuild their state from their internal topics.
 */
mk_err mk_partition_replay(mk_partition *p, int64_t from,
			   void (*fn)(void *arg, const mk_record_view *rec),
			   void *arg);
mk_err mk_partition_fetch(mk_partition *p, int64_t from, size_t max_bytes,
			  mk_strbuf *out, int64_t *visible_end, mk_strbuf *why);
/*
 * The same with an isolation level: aborted NULL is read_uncommitted (as
 * above); otherwise read_committed: the visible end is the LSO (the first
 * offset of the oldest open transaction, at most the HW) and *aborted gets
 * the aborted transactions overlapping [from, LSO) (txnindex.h), taken
 * under the same lock as the frames, so that every transactional batch
 * returned is either committed or listed.
 */
mk_err mk_partition_fetch_isolated(mk_partition *p, int64_t from,
				   size_t max_bytes, mk_aborted_list *aborted,
				   mk_strbuf *out, int64_t *visible_end,
				   mk_strbuf *why);
/* First offset with timestamp >= ts on the leader (log end if none). */
mk_err mk_partition_offset_for_time(mk_partition *p, int64_t ts, int64_t *off);
/* Where epoch ends on the leader (Kafka's OffsetForLeaderEpoch): the
 * largest epoch <= it in the leader's epoch cache (*epoch_out, -1: none)
 * and the start offset of the next higher epoch, or the log end for the
 * latest. LEADER_NOT_AVAILABLE without a leader. */
mk_err mk_partition_end_offset_for_epoch(mk_partition *p, int32_t epoch,
					 int32_t *epoch_out, int64_t *end);

/* Every watcher looks again (the clock moved, shutdown); it
 * decides nothing (the ISR is the ISR check's: cluster.h). */
void mk_partition_wake(mk_partition *p);

/*
 * The event API (no thread waits): the current change count; arm w to fire
 * at the first change after `seen` (at once, inside this call, when seq has
 * already moved past it); disarm w — once unwatch returns, fn is not
 * running and will not run. A fired watcher is disarmed; re-arm to wait
 * again. Every change fires: appends, HW and ISR moves, leader changes,
 * broker events, manual clock moves, deletion and shutdown.
 */
uint64_t mk_partition_seq(mk_partition *p);
void mk_partition_watch(mk_partition *p, mk_watch *w, uint64_t seen);
void mk_partition_unwatch(mk_partition *p, mk_watch *w);

/*
 * One look at an acks=all ticket, with the rules of mk_partition_produce: MK_OK once acknowledged, its errors (REQUEST_TIMED_OUT once the
 * deadline passed on the cluster clock), or MK_OK with *pending set while
 * the ISR has yet to catch up. Never MK_INTERRUPTED: the batch was
 * appended, so only acknowledgement, a failure or the timeout end it.
 */
mk_err mk_partition_ack_check(mk_partition *p, const mk_ack_ticket *t,
			      bool *pending, mk_strbuf *why);

/*
 * One fetch round for the follower replica on broker b (no-op otherwise):
 * the three steps described under Locking. A second fetch for the same
 * replica waits for the first. The frames come from the leader's log, or
 * from the copy another follower's fetch of the same range just read
 * (mk_partition.copy). Crash point: replica.fetch.after-append
 * (the follower's log has the frames, nothing is published yet).
 */
mk_err mk_partition_follower_fetch(mk_partition *p, int broker);
/* The same; *bytes gets the bytes the follower appended (0: nothing new),
 * *behind (may be NULL) whether the leader's log then went on past the
 * follower's (a read capped at replica.fetch.max.bytes, or appends made
 * meanwhile): a fetcher fetches again at once only then. */
mk_err mk_partition_follower_fetch_ex(mk_partition *p, int broker,
				      size_t *bytes, bool *behind);

/*
 * Broker events, each in two steps: plan (the state the event leads to,
 * changing nothing; false or an error when the event does not touch or is
 * refused by this partition), then — once the cluster saved the planned
 * states — apply. Apply takes the planned leader and epoch as they are:
 * an epoch once saved is never used for another term.
 */
bool mk_partition_plan_crash(mk_partition *p, int broker,
			     mk_partition_state *st);
void mk_partition_broker_crash(mk_partition *p, int broker, bool torn);
bool mk_partition_plan_restart(mk_partition *p, int broker,
			       mk_partition_state *st);
void mk_partition_broker_restart(mk_partition *p, int broker,
				 const mk_partition_state *plan);
mk_err mk_partition_plan_promote(mk_partition *p, int broker, bool unclean,
				 mk_partition_state *st, mk_strbuf *why);
mk_err mk_partition_promote(mk_partition *p, int broker, bool unclean,
			    const mk_partition_state *plan, mk_strbuf *why);
/* The metadata file now holds st for this partition (ISR, leader, epoch):
 * what waited for the save may proceed. */
void mk_partition_meta_saved(mk_partition *p, const mk_partition_state *st);

/*
 * Retention and compaction (cleaner.h) on every open replica, bounded by
 * the HW; each does nothing unless the topic's cleanup.policy has delete,
 * resp. compact. Compaction builds the cleaned segments without the lock,
 * so appends go on. A storage error takes that replica offline.
 */
mk_err mk_partition_retention(mk_partition *p);
mk_err mk_partition_compact(mk_partition *p, mk_strbuf *why);
/*
 * DeleteRecords: move the leader's log start to offset (at most the HW,
 * else OFFSET_OUT_OF_RANGE); followers follow at their next fetch. *low
 * (may be NULL) gets the new log start.
 */
mk_err mk_partition_delete_records(mk_partition *p, int64_t offset,
				   int64_t *low, mk_strbuf *why);
/* The leader's cleaner checkpoint and dirty bytes (cleaned_to -1: none). */
void mk_partition_cleaner_info(mk_partition *p, mk_cleaner_info *info);

/* fsync every open replica log, save its snapshot and HW, and write its
 * broker's checkpoint files (logdir.h). */
mk_err mk_partition_flush(mk_partition *p);
/* The same but the broker files, which the caller writes once for many
 * partitions (mk_logdir_sync_all: a cluster's flush). */
mk_err mk_partition_flush_logs(mk_partition *p);

/* Leader's segments (for /segments): copy of infos; returns count. */
size_t mk_partition_segments(mk_partition *p, mk_segment_info **out,
			     mk_strbuf *dir);

/* ---- one replica seen on its own (/brokers/B/logs/T/P) ------------------ */

/*
 * Every call below takes `broker`: a broker id for that broker's replica,
 * or -1 for the current leader's. They read under the partition lock and
 * change nothing (no ISR refresh, no truncation): looking at a follower
 * does not move it. A broker hosting no replica is UNKNOWN_TOPIC_OR_PARTITION;
 * -1 without a leader LEADER_NOT_AVAILABLE; a replica without an open log
 * (broker offline, replica failed) BROKER_NOT_AVAILABLE. why says which.
 */
typedef struct {
	int broker;
	bool online, failed, leader, in_isr;
	int64_t leo;
	int64_t hw_view;          /* the HW this replica last learned */
	int64_t log_start;
	int32_t latest_epoch;     /* newest entry of its epoch cache; -1: none */
	int64_t agreed_end;       /* see mk_partition_info */
} mk_replica_view;

mk_err mk_partition_replica_view(mk_partition *p, int broker,
				 mk_replica_view *out, mk_strbuf *why);
/* The replica's leader-epoch cache, copied (*out: free it). */
mk_err mk_partition_replica_epochs(mk_partition *p, int broker,
				   mk_epoch_entry **out, size_t *n,
				   mk_strbuf *why);
/*
 * Whole frames of the replica's log from `from` below its end — its own
 * log end, or with committed the HW it knows (hw_view) — at most max_bytes
 * (at least one batch). *visible_end gets that end.
 */
mk_err mk_partition_replica_fetch(mk_partition *p, int broker, int64_t from,
				  bool committed, size_t max_bytes,
				  mk_strbuf *out, int64_t *visible_end,
				  mk_strbuf *why);
mk_err mk_partition_replica_offset_for_time(mk_partition *p, int broker,
					    int64_t ts, int64_t *off,
					    mk_strbuf *why);
/* Batch headers from the batch holding `from` on (mk_log_batches). */
mk_err mk_partition_replica_batches(mk_partition *p, int broker, int64_t from,
				    size_t max, mk_batch_info **out, size_t *n,
				    mk_strbuf *why);
/* Segments of the replica's log and its directory (as mk_partition_segments). */
mk_err mk_partition_replica_segments(mk_partition *p, int broker,
				     mk_segment_info **out, size_t *n,
				     mk_strbuf *dir, mk_strbuf *why);
/* Decoded entries of one segment's index (mk_log_index_rows). */
mk_err mk_partition_replica_index(mk_partition *p, int broker, int64_t segment,
				  mk_index_row **out, size_t *n, mk_strbuf *why);

/* ---- tests only ---------------------------------------------------------- */

/* Counters and flags of the follower-fetch machinery, read under the lock
 * (follower_fetch.c): nothing else reads them. */
typedef struct {
	uint64_t leader_reads;  /* leader reads made for follower fetches */
	uint64_t writer_copies; /* follower fetches made by writers */
	uint64_t writer_skips;  /* writers' copies skipped (fetch in flight) */
	int nfetching;          /* follower fetches in flight */
	int quiescing;          /* changes waiting for them (settle) */
	bool copy_kept;         /* a leader read kept for another follower */
} mk_partition_test_stats;

void mk_partition_test_stats_get(mk_partition *p, mk_partition_test_stats *out);
/* The partition lock itself, for a test that stalls a change behind it or
 * checks that a step runs without it: trylock is true when it took it. */
void mk_partition_test_lock(mk_partition *p);
bool mk_partition_test_trylock(mk_partition *p);
void mk_partition_test_unlock(mk_partition *p);
/* Set message.max.bytes alone (no settle, no ISR refresh). */
void mk_partition_test_set_message_max(mk_partition *p, int64_t bytes);

#endif
