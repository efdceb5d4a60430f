/*
 * flushpool.h — one small pool of background threads that serves every
 * log's fsync work (the roll flush of log.c). The cluster owns one pool and
 * hands it to its logs (mk_log_config.pool); a log opened without one
 * makes a private pool of one thread at its first roll (unit tests).
 *
 * A task is a callback embedded in its owner (a log). Submitting a queued
 * task does nothing; submitting a running one makes it run once more after
 * it returns, so a task never runs on two threads at once and no
 * submission is lost. Tasks run in submission order, each to completion.
 *
 * Locking: pool->lock guards the queue and every task's queued/running/
 * again flags; it is never held while a task runs, so a task may take its
 * owner's locks and submit itself again. Owners may submit while holding
 * their own locks (pool->lock is inner to them).
 */
#ifndef MK_FLUSHPOOL_H
#define MK_FLUSHPOOL_H

#include <stdbool.h>

typedef struct mk_flush_task {
	void (*run)(struct mk_flush_task *t);
	/* The pool's, under its lock: */
	struct mk_flush_task *next;
	bool queued, running, again;
} mk_flush_task;

typedef struct mk_flush_pool mk_flush_pool;

/* A pool of nthreads threads. They start at the first submit or
 * mk_flush_pool_ready, not here: a daemon opens its cluster (and this
 * pool) before it forks to daemonize, and a fork keeps no thread. */
mk_flush_pool *mk_flush_pool_new(int nthreads);
/* Start the threads if not yet; false when none could start (the caller
 * then does the work itself). */
bool mk_flush_pool_ready(mk_flush_pool *p);
/* Stop and join the threads. No task may be queued or running. */
void mk_flush_pool_free(mk_flush_pool *p);
void mk_flush_pool_submit(mk_flush_pool *p, mk_flush_task *t);
/* Dequeue t and wait until it no longer runs; it is not run again unless
 * submitted anew. */
void mk_flush_pool_remove(mk_flush_pool *p, mk_flush_task *t);
int mk_flush_pool_threads(const mk_flush_pool *p);

#endif
