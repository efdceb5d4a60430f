/*
 * notify.h — a "something moved" signal that threads can wait on with a
 * bound: a mutex, a condition and two counters. The cluster owns one for
 * "a leader's log end moved" (its follower fetchers long-poll on it) and
 * every partition posts to it through mk_env (replica.h).
 *
 * Two kinds of post: data (bytes appended to a leader's log; a waiter may
 * ask for at least N new bytes, Kafka's replica.fetch.min.bytes) and
 * events (anything else a waiter must look at now: a broker restarted, a
 * leader changed, a topic was created, shutdown).
 *
 * Locking: n->lock guards both counters and the stop flag; it is a leaf
 * lock (posters may hold a partition lock; nothing is called under it).
 */
#ifndef MK_NOTIFY_H
#define MK_NOTIFY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t bytes;      /* data posted, cumulative */
	uint64_t events;     /* events posted, cumulative */
	bool stopped;        /* every wait returns at once */
} mk_notifier;

/* Where a waiter stands: what it had seen when it last looked. */
typedef struct {
	uint64_t bytes;
	uint64_t events;
} mk_notify_mark;

void mk_notifier_init(mk_notifier *n);
void mk_notifier_destroy(mk_notifier *n);
/* bytes of data appended somewhere; wakes the waiters it satisfies. */
void mk_notifier_post_data(mk_notifier *n, uint64_t bytes);
void mk_notifier_post_event(mk_notifier *n);
/* From now on every wait returns at once (shutdown). */
void mk_notifier_stop(mk_notifier *n);
/* The current counters (take before looking, wait with it after). */
mk_notify_mark mk_notifier_mark(mk_notifier *n);
/*
 * Wait until, since *mark, at least min_bytes of data (min_bytes <= 1:
 * any data) or an event was posted, the notifier stopped, or wait_ms of
 * wall time passed. *mark moves to the counters seen. Returns true unless
 * it timed out.
 */
bool mk_notifier_wait(mk_notifier *n, mk_notify_mark *mark,
		      uint64_t min_bytes, int64_t wait_ms);

#endif
