/*
 * cluster.h — the root of the domain: brokers, topics and their partitions,
 * the clock, the error ring, metadata persistence and the background
 * fetchers. The daemon owns exactly one mk_cluster; nothing else is global.
 *
 * Locking (always in this order; errlog last):
 *   c->acc_lock        the accumulator registry (taken before any
 *                      accumulator's own lock, which is only try-locked)
 *   c->event_lock      serialises structural changes (create, delete,
 *                      broker crash and restart): it keeps the topic
 *                      names and broker states still while the slow part
 *                      (opening or recovering logs, deleting files) runs
 *                      without the write lock; taken before c->lock
 *   c->lock (rwlock)   the topic table, broker states, topic configs,
 *                      producer identities;
 *                      readers: lookups and listings; writers: create,
 *                      delete, config changes, broker state changes
 *   p->lock            one partition (replica.h)
 *   c->meta_lock       serialises metadata writes (taken with no other
 *                      lock held; it takes c->lock for reading and each
 *                      p->lock briefly to snapshot)
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
#include "replica.h"
#include "strbuf.h"

typedef struct mk_topic {
	char *name;
	int npartitions;
	int replication_factor;
	mk_topic_config cfg;     /* guarded by the cluster lock */
	mk_partition **partitions;
	_Atomic int refs;
} mk_topic;

/* An idempotent producer identity (/producers/NAME). */
typedef struct {
	char *name;
	int64_t id;
	int16_t epoch;
} mk_producer_id;

typedef struct {
	int id;
	bool online;
	pthread_t fetcher;       /* auto replication only */
	bool fetcher_started;
} mk_broker;

typedef struct mk_cluster {
	char *data_dir;
	mk_config cfg;
	mk_clock clock;
	mk_errlog errlog;
	mk_env env;
	volatile bool shutting_down;
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

	/* Topic producers with open batches (accumulator.h), and the
	 * sender thread that sends lingering batches on the system clock. */
	pthread_mutex_t acc_lock;
	pthread_cond_t acc_cond;
	struct mk_accumulator **accs;
	size_t naccs, accs_alloc;
	pthread_t sender;
	bool sender_started;

	pthread_mutex_t meta_lock;
	pthread_mutex_t event_lock;  /* see the lock order above */
	pthread_mutex_t stop_lock;   /* with stop_cond: wakes the fetchers */
	pthread_cond_t stop_cond;
	/* "A leader's log end moved" (notify.h): every leader append posts
	 * its bytes; broker events and shutdown post an event. A fetcher
	 * whose round found nothing long-polls on it. */
	mk_notifier log_end;
	/* The one pool of flusher threads serving every log (flushpool.h);
	 * freed after the last log closed. */
	struct mk_flush_pool *flush_pool;
	/* The bounded cache of segment descriptors (fdcache.h): half the
	 * process's descriptor limit; freed after the last log closed. */
	struct mk_fdcache *fdcache;
} mk_cluster;

/* Open (or create) the cluster in data_dir with the given configuration. */
mk_err mk_cluster_open(const char *data_dir, const mk_config *cfg,
		       mk_cluster **out, mk_strbuf *why);
/*
 * Start the background fetchers (replication mode auto). Separate from
 * open so that a daemon can open, report start-up errors, daemonize, and
 * only then start threads.
 */
void mk_cluster_start(mk_cluster *c);
/*
 * The first step of a stop: from here on every blocked wait (acks=all,
 * follow) returns at once, so flushing what is left cannot hang.
 */
void mk_cluster_begin_shutdown(mk_cluster *c);
/* Graceful close: stop fetchers, flush every log, save metadata, free. */
void mk_cluster_close(mk_cluster *c);

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
/* One fetch round of every follower replica on broker id. */
mk_err mk_cluster_broker_fetch(mk_cluster *c, int id, mk_strbuf *why);
/* One fetch round on every broker. */
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

/* The accumulator registry (accumulator.h uses these). */
struct mk_accumulator;
void mk_cluster_add_accumulator(mk_cluster *c, struct mk_accumulator *acc);
void mk_cluster_remove_accumulator(mk_cluster *c, struct mk_accumulator *acc);
/* A batch started lingering: the sender may need to wake earlier. */
void mk_cluster_wake_sender(mk_cluster *c);

/* Manual clock: advancing it also sends batches whose linger passed. */
mk_err mk_cluster_clock_advance(mk_cluster *c, int64_t ms, mk_strbuf *why);
mk_err mk_cluster_clock_set(mk_cluster *c, int64_t ms, mk_strbuf *why);

/* fsync every log and save metadata. */
mk_err mk_cluster_flush(mk_cluster *c, mk_strbuf *why);
/* Save metadata if anything changed since the last save. */
mk_err mk_cluster_sync_metadata(mk_cluster *c);

/* Call fn for every partition of every topic (under the read lock). */
void mk_cluster_each_partition(mk_cluster *c,
			       void (*fn)(mk_topic *t, mk_partition *p, void *arg),
			       void *arg);

#endif
