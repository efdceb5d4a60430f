/*
 * replica_internal.h — the partition's struct and the calls its pieces
 * make of each other (replica.h lists them). Private: included only by
 * partition.c, isr.c, produce.c, follower_fetch.c, election.c,
 * replica_store.c and replica_read.c; every other module sees the opaque
 * mk_partition of replica.h.
 *
 * Locking (replica.h): p->lock guards every field of mk_partition and of
 * its replicas, and every call into the replicas' logs, but a follower
 * fetch in flight (follower_fetch.c): while a replica is `fetching`, its
 * log and pstate are that fetch's alone; the others read its fetch_*
 * values. Every function declared here runs under p->lock unless its
 * comment says otherwise.
 */
#ifndef MK_REPLICA_INTERNAL_H
#define MK_REPLICA_INTERNAL_H

#include <pthread.h>

#include "replica.h"

typedef struct {
	int broker;
	mk_log *log;            /* NULL while offline or failed */
	bool online;            /* the broker is up */
	bool failed;            /* storage error: offline until restart */
	bool in_isr;            /* the ISR as decided */
	bool isr_saved;         /* the ISR as the metadata file has it (what
				 * /isr shows once a saver runs) */
	int64_t last_fetch_ms;  /* cluster clock */
	int64_t hw_view;        /* the HW this replica last learned */
	int64_t hw_ckpt;        /* the HW saved for it, as its open read it
				 * (replication-offset-checkpoint); -1 */
	bool rejoining;         /* restarted, not fetched since: not in sync */
	mk_producer_state pstate;   /* idempotent producers seen in this log */
	/* A follower fetch in flight: log and pstate are the fetch's alone
	 * (see Locking); the rest see these, taken when it started. */
	bool fetching;
	int64_t fetch_leo;      /* the log end then */
	int64_t fetch_start;    /* the log start then */
	int64_t fetch_agreed;   /* agreed end then (with the leader's log) */
	int64_t fetch_target;   /* where the frames being appended end */
} mk_replica;

typedef struct mk_partition {
	pthread_mutex_t lock;
	pthread_cond_t settled; /* a fetch ended, or quiescing dropped */
	int nfetching;          /* follower fetches in flight */
	int quiescing;          /* waiters for nfetching == 0: none starts */
	uint64_t seq;
	mk_watch watchers;      /* armed watchers: a list with this head */

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
	bool creating;          /* in mk_partition_create: dirs may be new */
	/*
	 * The frames a follower fetch last read out of the leader's log, kept
	 * for another follower whose log ends where that read began, so that
	 * its fetch of the same range (acks=all: both followers fetch each
	 * batch) takes them without a second read and validation. Valid only
	 * while the leader's log is as it was (same leader, epoch, log start
	 * and end); dropped by the reuse, the next leader append, part_settle()
	 * and close. The buffer is shared read-only by the fetches holding a
	 * reference (refs under the lock). NULL: none.
	 */
	struct mk_fetch_copy *copy;
	uint64_t leader_reads;  /* leader reads made for follower fetches */
	uint64_t writer_copies; /* follower fetches made by writers (above) */
	uint64_t writer_skips;  /* writers' copies skipped (fetch in flight) */
	/* Replicas that left / joined the ISR since open (Kafka's
	 * IsrShrinksPerSec / IsrExpandsPerSec, as totals), under the lock. */
	uint64_t isr_shrinks, isr_expands;
	int64_t isr_check_ms;   /* auto mode: the last message-lag check
				 * (refresh_isr), cluster clock; under the lock */
} mk_partition;

/* ---- partition.c: lifecycle, state, watchers, the snapshot (only reads) -- */

/* Leader, epoch or ISR moved: the cluster must persist its metadata
 * (bumps env->meta_dirty, wakes the saver: leaf locks). */
void meta_changed(mk_partition *p);
/* Something a waiter may care about moved: seq, the condition, and every
 * armed watcher fires once. */
void part_changed(mk_partition *p);
/* Only a follower's copy moved: as part_changed, but a watcher of a
 * pending acks=all ticket stays armed (replica.h, mk_watch). */
void part_progressed(mk_partition *p);
/* The index of broker's replica, -1 when it hosts none. */
int replica_index(const mk_partition *p, int broker);
/* The invariants of replica.h (debug builds). */
void part_check(const mk_partition *p);
/* Take replica i offline after a storage error; the /errors line names
 * what failed. */
void replica_failed(mk_partition *p, int i, const char *what);
/* The last stable offset: the leader's oldest open transaction, at most
 * the HW. */
int64_t lso_locked(const mk_partition *p);
/* Wait on p->changed, at most ms of wall time (p->lock released meanwhile). */
/* Deleted, or without a leader: why no produce or fetch is served. */
mk_err part_unavailable(mk_partition *p, mk_strbuf *why);
/* The persistent state (leader, epoch, ISR as decided). */
void state_locked(const mk_partition *p, mk_partition_state *st);

/* ---- isr.c: ISR membership and the HW (the one place they are decided) -- */

/* A background saver persists ISR changes (env->meta_notify); without one
 * a decision counts as saved at once. */
bool has_saver(const mk_partition *p);
/* Counted for the HW and acks=all: in the decided or the saved ISR. */
bool isr_counted(const mk_partition *p, const mk_replica *r);
/* In the committed ISR (the snapshot's): saved, or decided without a
 * saver. */
bool isr_committed_member(const mk_partition *p, const mk_replica *r);
/* Counted for min.insync.replicas: in both. */
int isr_committed(const mk_partition *p);
/* Replica r in or out of the ISR, counted (isr_shrinks, isr_expands). */
void isr_set(mk_partition *p, mk_replica *r, bool in);
int isr_size(const mk_partition *p);
/* Replica i lost its log: out of the ISR unless last; no longer leader. */
void isr_lose(mk_partition *p, int i);
/* How far r's log agrees with the leader's l (KIP-101/279). */
int64_t agreed_end(const mk_replica *r, const mk_replica *l);
/* r's log end, log start and agreed end as the others may see them: while
 * its fetch is in flight, what they were when it started. */
int64_t seen_leo(const mk_replica *r);
int64_t seen_start(const mk_replica *r);
int64_t seen_agreed(const mk_replica *r, const mk_replica *l);
/* At open: the saved ISR (never empty, holding the leader), then the HW. */
void isr_load(mk_partition *p, const mk_partition_state *st);
void hw_at_open(mk_partition *p);
/* The rules: membership and the HW, now; fires the watchers on a move. */
void refresh_isr(mk_partition *p);
/* Store the ISR change just decided before the command returns
 * (manual replication, a saver running: mk_env.meta_store)? */
bool isr_store_due(const mk_partition *p);
/* A new leader's log ends at leo: the HW is at most that. */
void isr_hw_cap(mk_partition *p, int64_t leo);
/* isr_lose in a plan st (taken from p: state_locked). */
void isr_plan_lose(const mk_partition *p, mk_partition_state *st, int i);

/* ---- produce.c: the leader's appends and their acks=all tickets ---------- */

/* One look at a ticket, the ISR as it stands (no refresh: nothing
 * changes, so part_progressed may call it). */
mk_err ack_look(mk_partition *p, const mk_ack_ticket *t, bool *pending,
		mk_strbuf *why);

/* ---- follower_fetch.c: reconciliation, the fetch, the writer's copy ----- */

/* The leader's log may change: the kept copy goes. */
void copy_drop(mk_partition *p);
/* Right after a leader append of frames [0, n) from offset `from` for a
 * writer that copies them: they become the kept copy. */
void copy_seed(mk_partition *p, uint8_t *const *frames,
	       const size_t *lens, size_t n, int64_t from);
/* Wait until no follower fetch is in flight (none starts before the
 * caller unlocks); the kept copy goes. Before any change of a log but a
 * leader append. */
void part_settle(mk_partition *p);
/* The follower an acks=all writer may copy ticket t's batch to (its
 * broker), or -1. */
int writer_pick(const mk_partition *p, const mk_ack_ticket *t);
/* Without the lock: the writer's copy to broker, then to the others not
 * yet fetched; wakes a fetcher for what it left. */
void writer_copy(mk_partition *p, int broker, const mk_ack_ticket *t,
		 uint64_t bytes);

/* ---- election.c: the plans for crash, restart and promote ---------------- */

/* At open: a saved leader (index was, -1: none) whose log failed to open
 * or was cut below its checkpointed HW hands the leadership to an in-sync
 * replica that has the records (a new epoch). */
void hand_off_at_open(mk_partition *p, int was);
/* At open: the epoch is at least the newest any replica's log knows. */
void epoch_floor_at_open(mk_partition *p, bool create);

/* ---- replica_store.c: a replica's files ---------------------------------- */

/* DATA_DIR/broker-B/T-P, in out. */
void part_log_dir(const mk_env *env, int broker, const char *topic, int id,
		  mk_strbuf *out);
/* Creation: every replica's directory (and its broker's), the offline
 * ones' too. */
mk_err store_make_dirs(const mk_env *env, const char *topic, int id,
		       const mk_partition_state *st);
/* The log's part of the topic configuration. */
mk_log_config part_log_config(const mk_topic_config *tc);
/* Checkpoint the HW r knows (at least its log start, and floor). */
void save_hw(mk_replica *r, int64_t floor);
/* Move r's log start to offset, its HW saved first. */
mk_err advance_start(mk_replica *r, int64_t offset);
/* Persist r's producer snapshot and HW (flush, close, a cut). */
void save_pstate(mk_replica *r);
/* Rebuild replica i's producer state from its snapshot and its log. */
void rebuild_pstate(mk_partition *p, int i);
/* Rewrite r's .txnindex files from its producer state (txnindex.h). */
void sync_txnindex(mk_partition *p, mk_replica *r);
/* After an append of frame to r's log: its producer state follows. */
void note_append(mk_partition *p, mk_replica *r, const uint8_t *frame,
		 size_t len);
/* Cut replica i's log at offset, its producer state in step. */
mk_err truncate_replica(mk_partition *p, int i, int64_t offset);
/* Open replica i's log (its broker online); on damage it is failed, with
 * an /errors line. */
void open_replica(mk_partition *p, int i);

#endif
