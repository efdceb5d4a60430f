/*
 * replica_internal.h — the partition's struct and the calls the pieces of
 * replica*.c make of each other. Private: included only by
 * core/replication/replica*.c and the files of the split (partition.c,
 * isr.c, produce.c, follower_fetch.c, election.c, replica_store.c,
 * replica_read.c); every other module sees the opaque mk_partition of
 * replica.h.
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
	bool in_isr;            /* the ISR as decided (what /isr shows) */
	bool isr_saved;         /* the ISR as the metadata file has it */
	int64_t last_fetch_ms;  /* cluster clock */
	int64_t hw_view;        /* the HW this replica last learned */
	int64_t hw_ckpt;        /* hw_view as last saved (flush, close); -1 */
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
	pthread_cond_t changed;
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
	 * and end); dropped by the reuse, the next leader append, settle()
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

#endif
