/*
 * cluster.h — the root of the domain: brokers, topics and their partitions,
 * the clock, the error ring, metadata persistence and the background
 * threads. The daemon owns exactly one mk_cluster; nothing else is global.
 * Its code is one file per concept (cluster_internal.h lists them).
 *
 * Locking (always in this order; errlog last):
 *   c->clean_lock      one cleaner run at a time (/ctl retention, /ctl
 *                      compact, the background cleaner); taken before
 *                      all the others
 *   c->lock (rwlock)   the topic table, broker states, topic configs,
 *                      producer identities;
 *                      readers: lookups and listings; writers: create,
 *                      delete, config changes, broker state changes
 *   p->lock            one partition (replica.h)
 *   c->meta_lock       serialises metadata writes and every control
 *                      change (taken with no cluster or partition lock
 *                      held; it takes c->lock and each p->lock briefly to
 *                      plan, snapshot and apply, and holds neither during
 *                      the fsync). It alone keeps topic names and broker
 *                      states still during the slow part of a change (a
 *                      creation opening its logs, a deletion removing
 *                      files, a restart recovering logs), which holds no
 *                      c->lock. Nothing taken under it waits for a lock
 *                      of a higher layer (a watcher takes only leaf
 *                      locks: replica.h, mk_watch), so a caller holding
 *                      its own lock (a producer's, a coordinator's) may
 *                      take it through mk_env.meta_store
 *   c->saver_lock      the saver's wake-up flag (a leaf: taken under
 *                      p->lock by meta_notify)
 *   brokers[i].wake    a fetcher's notifier (notify.h; a leaf: posted
 *                      with no lock held, or under p->lock by an acks=all
 *                      append that waits in place)
 *   c->hooks_lock      the clock hooks (held only to copy them: a hook is
 *                      called with no cluster lock held)
 *
 * Decide, persist, act: a control change (broker crash or restart,
 * promotion, topic creation, deletion or configuration) is planned, the
 * plan saved to the metadata file, and only then applied; a failed save
 * fails the change and changes nothing. ISR changes decided inside a
 * partition are saved before they count (replica.h): by the command that
 * caused them when it is a step of the manual modes (a clock move, an
 * explicit fetch round, an acks=0/1 append in manual replication), which
 * returns only then, else by the saver thread.
 * A deletion is saved as a "deleting" mark first, and finished at the next
 * mount if a crash interrupts it; a creation is saved before lookups find
 * the topic (stray directories of an unsaved creation are removed when the
 * name is created again).
 *
 * Crash points: topic.create.{before-build,before-save,before-insert},
 * topic.delete.{after-mark,after-partition,before-save},
 * broker.crash.{before-save,after-save}, replica.crash.before-truncate,
 * broker.restart.{before-save,after-save}, promote.{before-save,after-save},
 * and those of the metadata file (metadata.h).
 *
 * Topics are reference counted: the table holds one reference, every
 * lookup another (mk_topic_put releases). A deleted topic leaves the table
 * at once; its memory goes with the last reference.
 */
#ifndef MK_CLUSTER_H
#define MK_CLUSTER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "clock.h"
#include "config.h"
#include "errlog.h"
#include "error.h"
#include "metadata.h"
#include "replica.h"
#include "strbuf.h"

typedef struct mk_topic {
	char *name;
	int npartitions;
	int replication_factor;
	mk_topic_config cfg;     /* guarded by the cluster lock */
	mk_partition **partitions;
	_Atomic int refs;
	/* Where the keyless records of the topic's next new producer start
	 * (producer.h): taken and bumped once per producer, mod partitions. */
	_Atomic unsigned next_sticky;
} mk_topic;

typedef struct {
	int id;
	bool online;
	pthread_t fetcher;       /* auto replication only */
	bool fetcher_started;
	/* Wakes this broker's fetcher (notify.h): a leader append posts its
	 * bytes here for each broker holding a follower replica of that
	 * partition (mk_env.fetch_wake) — except the follower an acks=all
	 * writer copies to itself (replica.h, "The writer's copy") — so a
	 * leader's own broker and brokers with nothing to fetch sleep on;
	 * broker events, creations, promotions and shutdown post an event
	 * to every broker's. A fetcher whose round found nothing
	 * long-polls on its own. */
	mk_notifier wake;
} mk_broker;

#define MK_CLUSTER_MAX_HOOKS 8

/* The periodic tasks of auto mode (cluster_tasks.c): retention and
 * compaction; the ISR check (with the system clock). */
enum { MK_TASK_CLEANER, MK_TASK_ISR_CHECK, MK_CLUSTER_TASKS };

typedef struct {
	void (*fn)(void *arg);
	void *arg;
} mk_clock_hook;

typedef struct mk_cluster {
	char *data_dir;
	int lock_fd;             /* flock(LOCK_EX) on data_dir while open */
	mk_config cfg;
	mk_clock clock;
	mk_errlog errlog;
	mk_env env;
	atomic_bool shutting_down;
	bool opened;             /* fully loaded: close may save metadata */
	_Atomic uint64_t meta_dirty;
	uint64_t meta_saved;     /* guarded by meta_lock */

	pthread_rwlock_t lock;
	mk_topic **topics;       /* sorted by name */
	size_t ntopics, topics_alloc;
	mk_broker brokers[MK_MAX_BROKERS];
	int nbrokers;
	mk_producer_id *producers;   /* sorted by name */
	size_t nproducers;
	int64_t next_producer_id;

	/* Called by every fetcher after each round (mk_cluster_on_round;
	 * set before mk_cluster_start, then read without a lock). */
	void (*round_hook)(void *arg);
	void *round_hook_arg;
	void (*broker_hook)(void *arg, int broker, bool online);
	void *broker_hook_arg;

	/* Called after every move of the manual clock (mk_cluster_on_clock). */
	pthread_mutex_t hooks_lock;
	mk_clock_hook clock_hooks[MK_CLUSTER_MAX_HOOKS];
	int nclock_hooks;

	pthread_mutex_t clean_lock;  /* serialises cleaner runs */
	/* Auto mode: the periodic tasks, a thread each (cluster_tasks.c). */
	pthread_t tasks[MK_CLUSTER_TASKS];
	bool task_started[MK_CLUSTER_TASKS];

	pthread_mutex_t meta_lock;
	pthread_t saver;             /* saves ISR changes (cluster_meta.c) */
	bool saver_started;
	pthread_mutex_t saver_lock;
	pthread_cond_t saver_cond;
	bool saver_kick, saver_stop; /* guarded by saver_lock */
	pthread_mutex_t stop_lock;   /* with stop_cond: wakes the fetchers */
	pthread_cond_t stop_cond;
	/* The one pool of flusher threads serving every log (flushpool.h);
	 * freed after the last log closed. */
	struct mk_flush_pool *flush_pool;
	/* The bounded cache of segment descriptors (fdcache.h): half the
	 * process's descriptor limit; freed after the last log closed. */
	struct mk_fdcache *fdcache;
} mk_cluster;

/*
 * Open (or create) the cluster in data_dir with the given configuration.
 * No data is removed because metadata does not know it: a partition
 * directory that holds a batch (metadata.h) and that no topic in the
 * metadata owns refuses the open (MK_INVALID_CONFIG, one line in why,
 * nothing changed) — a missing metadata file beside such directories
 * among them; what holds no batch (an interrupted creation) is removed
 * with an /errors line.
 */
mk_err mk_cluster_open(const char *data_dir, const mk_config *cfg,
		       mk_cluster **out, mk_strbuf *why);

typedef struct {
	/* The topics metadata lacks are rebuilt from their directories
	 * (mk_metadata_rebuild, metadata.h), each with an /errors line, and
	 * saved before the open returns; with a metadata file present only
	 * topics holding data are (-o rebuild_metadata). */
	bool rebuild_metadata;
} mk_open_options;

/* The same with options (NULL: none). */
mk_err mk_cluster_open_with(const char *data_dir, const mk_config *cfg,
			    const mk_open_options *opts, mk_cluster **out,
			    mk_strbuf *why);
/*
 * Start the threads: the flusher pool and the metadata saver, and in
 * replication mode auto the background fetchers and the periodic tasks.
 * Separate from open so that a daemon can open, report start-up errors,
 * daemonize, and only then start threads.
 */
void mk_cluster_start(mk_cluster *c);
/*
 * The first step of a stop: from here on every blocked wait (acks=all,
 * follow) returns at once, so flushing what is left cannot hang.
 */
void mk_cluster_begin_shutdown(mk_cluster *c);
/* Graceful close: stop fetchers, flush every log, save metadata, free.
 * The error of the final flush and save (the daemon exits non-zero). */
mk_err mk_cluster_close(mk_cluster *c);

/* Topics. partitions/rf < 0 take the configured defaults. */
mk_err mk_cluster_create_topic(mk_cluster *c, const char *name, int partitions,
			       int rf, const char *const *overrides,
			       size_t noverrides, mk_strbuf *why);
mk_err mk_cluster_delete_topic(mk_cluster *c, const char *name, mk_strbuf *why);
/* A referenced topic, or NULL. Release with mk_topic_put. */
mk_topic *mk_cluster_topic(mk_cluster *c, const char *name);
void mk_topic_put(mk_topic *t);
/* The partition of a referenced topic, or NULL when out of range. */
mk_partition *mk_topic_partition(mk_topic *t, int id);
/* Names of all topics, sorted; free each and the array. */
size_t mk_cluster_topic_names(mk_cluster *c, char ***names);
/* The topic's effective configuration (a copy, taken under the lock). */
void mk_cluster_topic_config(mk_cluster *c, mk_topic *t, mk_topic_config *out);
/* Apply KEY=VALUE overrides: all validated first, then all applied. */
mk_err mk_cluster_topic_configure(mk_cluster *c, mk_topic *t,
				  const char *const *kv, size_t n,
				  mk_strbuf *why);

/* Brokers. */
int mk_cluster_broker_index(mk_cluster *c, int id);   /* -1 unknown */
bool mk_cluster_broker_online(mk_cluster *c, int id);
mk_err mk_cluster_broker_crash(mk_cluster *c, int id, bool torn, mk_strbuf *why);
mk_err mk_cluster_broker_restart(mk_cluster *c, int id, mk_strbuf *why);
/* One fetch round of every follower replica on broker id, then the ISR
 * check (mk_cluster_isr_check): what the round changed is stored when it
 * returns. */
mk_err mk_cluster_broker_fetch(mk_cluster *c, int id, mk_strbuf *why);
/* One fetch round on every broker, then the ISR check. */
mk_err mk_cluster_replicate(mk_cluster *c, mk_strbuf *why);
mk_err mk_cluster_promote(mk_cluster *c, int broker, const char *topic,
			  int partition, bool unclean, mk_strbuf *why);

/*
 * Idempotent producer identities. create allocates the next producer id
 * with epoch 0; init bumps the epoch, fencing writers of the old one.
 * Both are persisted in the metadata before they return.
 */
mk_err mk_cluster_producer_create(mk_cluster *c, const char *name, mk_strbuf *why);
mk_err mk_cluster_producer_init(mk_cluster *c, const char *name, mk_strbuf *why);
mk_err mk_cluster_producer_delete(mk_cluster *c, const char *name, mk_strbuf *why);
mk_err mk_cluster_producer_get(mk_cluster *c, const char *name, int64_t *id,
			       int16_t *epoch);
size_t mk_cluster_producer_names(mk_cluster *c, char ***names);

/*
 * "The clock moved": fn(arg) is called after every advance or set of the
 * manual clock, once the partitions' waiters were woken, with no cluster
 * lock held (the producers send the batches whose linger passed). At most
 * MK_CLUSTER_MAX_HOOKS; off removes the pair before its arg goes away.
 */
void mk_cluster_on_clock(mk_cluster *c, void (*fn)(void *arg), void *arg);
void mk_cluster_off_clock(mk_cluster *c, void (*fn)(void *arg), void *arg);

/*
 * "A fetch round ended": fn(arg) is called by each background fetcher
 * (mode = auto) on its own thread after every fetch round, with no lock
 * held, until mk_cluster_close joined the fetchers. The round's
 * publications fired the watchers of the requests they complete (an
 * acks=all writer's, mk_watch): the filesystem answers them here, on the
 * thread that moved the HW, instead of waking a thread of its own for
 * it. One hook; set it before mk_cluster_start (the fetchers read it
 * without a lock); arg must outlive mk_cluster_close.
 */
void mk_cluster_on_round(mk_cluster *c, void (*fn)(void *arg), void *arg);

/*
 * "A broker went down or came up": fn(arg, broker, online) is called after
 * each crash or restart took effect (saved and applied), on the thread
 * that made it, with no lock held (the protocol's listeners close and
 * open with their broker). One hook; set it before mk_cluster_start; arg
 * must outlive mk_cluster_close.
 */
void mk_cluster_on_broker(mk_cluster *c,
			  void (*fn)(void *arg, int broker, bool online),
			  void *arg);

/*
 * Manual clock: a move runs the ISR check (below), wakes every waiter,
 * calls the clock hooks, and returns once the metadata file has the new
 * time and the ISR changes it decided (their effect on the HW applied).
 */
mk_err mk_cluster_clock_advance(mk_cluster *c, int64_t ms, mk_strbuf *why);
mk_err mk_cluster_clock_set(mk_cluster *c, int64_t ms, mk_strbuf *why);

/*
 * The ISR check (Kafka's isr-expiration task): every partition's leader
 * applies the ISR rules now (isr.c, refresh_isr), then what they decided
 * is stored (mk_cluster_sync_metadata) before this returns, so the
 * snapshot (mk_partition_info_get, which applies no rule) shows it. Run by
 * every move of the manual clock, every explicit fetch round
 * (mk_cluster_broker_fetch, mk_cluster_replicate) and, in auto mode with
 * the system clock, every replica.lag.time.max.ms / 2. The error of the
 * save.
 */
mk_err mk_cluster_isr_check(mk_cluster *c);

/* fsync every log and save metadata. */
mk_err mk_cluster_flush(mk_cluster *c, mk_strbuf *why);
/* Save metadata if anything changed since the last save. */
mk_err mk_cluster_sync_metadata(mk_cluster *c);

/*
 * Retention (topics whose cleanup.policy has delete) and compaction (those
 * with compact) of every partition, on every replica (replica.h). In auto
 * mode a background thread runs both every log.retention.check.interval.ms.
 */
mk_err mk_cluster_retention(mk_cluster *c, mk_strbuf *why);
mk_err mk_cluster_compact(mk_cluster *c, mk_strbuf *why);

/* Call fn for every partition of every topic (under the read lock). */
void mk_cluster_each_partition(mk_cluster *c,
			       void (*fn)(mk_topic *t, mk_partition *p, void *arg),
			       void *arg);

#endif
