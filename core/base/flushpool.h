/*
 * flushpool.h — one small pool of background threads that serves every
 * log's fsync work (the roll flush of log_flush.c). The cluster owns one pool and
 * hands it to its logs (mk_log_config.pool); a log opened without one
 * makes a private pool of one thread at its first roll (unit tests).
 *
 * A task is a callback embedded in its owner (a log). Submitting a queued
 * task does nothing; submitting a running one makes it run once more after
 * it returns, so a task never runs on two threads at once and no
 * submission is lost. Tasks run in submission order, each to completion,
 * except quick ones (`quick`, set by the owner before the first submit:
 * short work that something waits for, such as making a log's next
 * segment files; never an fsync): they run before every other queued
 * task, and in a pool of two threads or more one thread runs only them
 * (the last started, so a pool whose other threads could not all start
 * still runs every task), so a quick task never waits behind a long
 * fsync (issue 11: the
 * roll flushes of three replicas kept both threads in fsyncs for tens of
 * milliseconds, and the next segments' files, queued behind them, were
 * made by the rolls themselves on the append path).
 *
 * Its threads run under SCHED_BATCH (flushpool.c says why): their work
 * shares the CPU fairly but never preempts the thread that woke them.
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
	bool quick;             /* the owner's, fixed before the first submit */
	/* The pool's, under its lock: */
	struct mk_flush_task *next;
	bool queued, running, again;
} mk_flush_task;

typedef struct mk_flush_pool mk_flush_pool;

/* A pool of nthreads threads (started here); NULL if none could start.
 * With two or more, one of them runs only quick tasks. */
mk_flush_pool *mk_flush_pool_new(int nthreads);
/* A pool whose threads start only at mk_flush_pool_start: tasks submitted
 * before that wait in the queue. The cluster creates its pool at open and
 * starts it in mk_cluster_start, after the daemon has forked into the
 * background (threads do not survive fork(2)). */
mk_flush_pool *mk_flush_pool_create(int nthreads);
/* Start the threads not yet running; returns how many run. */
int mk_flush_pool_start(mk_flush_pool *p);
/* Stop and join the threads. No task may be queued or running. */
void mk_flush_pool_free(mk_flush_pool *p);
void mk_flush_pool_submit(mk_flush_pool *p, mk_flush_task *t);
/* Dequeue t and wait until it no longer runs; it is not run again unless
 * submitted anew. */
void mk_flush_pool_remove(mk_flush_pool *p, mk_flush_task *t);
int mk_flush_pool_threads(mk_flush_pool *p);

#endif
