/*
 * cluster_internal.h — the calls the pieces of the cluster make of each
 * other (cluster.h holds the struct and the public calls, its lock order
 * included). Private: included only by the cluster's own files, one per
 * concept, after Kafka's seams:
 *   cluster.c            open (the mount's checks of the directories),
 *                        start, shutdown, close: the cluster's lifecycle;
 *   cluster_meta.c       the metadata save (a plan on top of the state),
 *                        the saver thread, flush;
 *   cluster_topics.c     the topic table and its references, creation,
 *                        deletion, configuration (Kafka's topic commands);
 *   cluster_brokers.c    broker crash and restart, promotion (the
 *                        controller's broker events and elections);
 *   cluster_fetchers.c   fetch rounds and the background fetchers (Kafka's
 *                        ReplicaFetcherManager);
 *   cluster_producers.c  the producer-id registry (ProducerIdManager);
 *   cluster_clock.c      the clock hooks and the manual clock's moves;
 *   cluster_tasks.c      the periodic tasks of auto mode (the ISR check,
 *                        retention and compaction: Kafka's scheduler) and
 *                        what they run.
 *
 * Every function declared here states the locks it takes or needs; none
 * is called with a partition lock held.
 */
#ifndef MK_CLUSTER_INTERNAL_H
#define MK_CLUSTER_INTERNAL_H

#include "cluster.h"

/* ---- cluster_clock.c, cluster_tasks.c, cluster.c ------------------------------ */

/*
 * With no lock held: wake_partitions makes every partition's waiters look
 * again (mk_partition_wake); isr_check_partitions is the ISR check's
 * decision on every partition (mk_partition_refresh), without the store
 * mk_cluster_isr_check adds. In auto mode, tasks_start starts the periodic
 * tasks' threads (mk_cluster_start: the ISR check with the system clock
 * only, retention and compaction always), and tasks_join joins them
 * (close, after mk_cluster_begin_shutdown).
 */
void wake_partitions(mk_cluster *c);
void isr_check_partitions(mk_cluster *c);
void tasks_start(mk_cluster *c);
void tasks_join(mk_cluster *c);
/* Wait up to ms of wall time, or until the shutdown begins (stop_lock,
 * stop_cond); true once it has. The one timed wait of the cluster's
 * threads: a task's period, a failed fetch round's back-off. */
bool cluster_stop_wait(mk_cluster *c, int64_t ms);

/* ---- cluster_brokers.c ------------------------------------------------------ */

/* Is broker id online? Under c->lock (either side), or during open. */
bool broker_online_locked(mk_cluster *c, int id);
/* MK_UNKNOWN_BROKER, with why, when there is no broker id (no lock). */
mk_err broker_lookup(mk_cluster *c, int id, mk_strbuf *why);

/* ---- cluster_fetchers.c ----------------------------------------------------- */

/* Every fetcher looks now (an event on every broker's notifier; no lock). */
void fetchers_wake(mk_cluster *c);
/* mk_env.fetch_wake: a leader appended `bytes` that broker follows. */
void fetchers_wake_data(void *arg, int broker, uint64_t bytes);
/* Auto mode: one fetcher thread per broker (mk_cluster_start). */
void fetchers_start(mk_cluster *c);
/* Join them (close, after mk_cluster_begin_shutdown). */
void fetchers_join(mk_cluster *c);

/* ---- cluster_producers.c ---------------------------------------------------- */

/*
 * producers_put: insert or replace an identity, under the write lock (or
 * during open); producers_free: the registry goes (close).
 */
void producers_put(mk_cluster *c, const char *name, int64_t id, int16_t epoch);
void producers_free(mk_cluster *c);

/* ---- cluster_topics.c: the topic table -------------------------------------- */

/* Binary search of the table; *pos (when not NULL) gets the insertion
 * point. Under c->lock. */
mk_topic *topics_find(mk_cluster *c, const char *name, size_t *pos);
/* Insert a fully built topic at pos. Under the write lock. */
void topics_insert(mk_cluster *c, mk_topic *t, size_t pos);
/* KEY=VALUE overrides onto tc: each validated, in order (no lock). */
mk_err topic_overrides_apply(mk_topic_config *tc, const char *const *kv,
			     size_t n, mk_strbuf *why);
/*
 * A topic and its partitions, built from their states (create: a new
 * topic's directories made first). With meta_lock held, or during open
 * (it reads the broker states). On failure nothing of it is left open.
 */
mk_err topics_build(mk_cluster *c, const char *name, int n, int rf,
		    const mk_topic_config *tc, mk_partition_state *sts,
		    bool create, mk_topic **out, mk_strbuf *why);

/* ---- cluster_meta.c: the metadata save ------------------------------------ */

/*
 * A change decided but not yet applied in memory, saved as if it were
 * (decide, persist, act): brokers' and partitions' planned states, a topic
 * built but not yet in the table, a topic whose deletion is decided, a
 * topic's new configuration, a producer identity.
 */
typedef struct {
	mk_partition *p;
	mk_partition_state st;
} mk_meta_part;

typedef struct {
	int broker;                  /* -1: no broker change */
	bool broker_online;
	const mk_meta_part *parts;
	size_t nparts;
	mk_topic *add;
	const char *deleting;
	const mk_topic *cfg_topic;
	const mk_topic_config *cfg;
	const char *producer;        /* a producer identity set or removed */
	bool producer_gone;
	int64_t producer_id, next_producer_id;
	int16_t producer_epoch;
} mk_meta_plan;

#define MK_META_PLAN_NONE { .broker = -1 }

/*
 * Write the current state with the plan on top (NULL: none) to
 * DATA_DIR/metadata; on success every partition hears what the file now
 * holds (mk_partition_meta_saved). With meta_lock held; takes c->lock
 * (read) to snapshot, and each p->lock after the write.
 */
mk_err meta_save(mk_cluster *c, const mk_meta_plan *plan);
/* The saver thread (mk_cluster_start), and its stop (close, before the
 * final save). */
void saver_start(mk_cluster *c);
void saver_stop(mk_cluster *c);

#endif
