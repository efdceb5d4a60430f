/*
 * park.h — requests that wait for the cluster without holding a thread.
 *
 * A FUSE request that cannot be answered now (a :follow read or poll at
 * the visible end; an acks=all write, fsync or last close whose batches
 * are appended but not yet acknowledged: see mk_wait in handles.h) is
 * parked: its fuse_req_t goes into the parking lot, a watcher is armed on
 * the partition it waits for (mk_partition_watch), and an interrupt
 * callback is registered (fuse_req_interrupt_func). The FUSE worker
 * returns at once.
 *
 * Events — a partition change, an interrupt, a deadline — only queue the
 * parked request; one completion thread takes it off the queue, disarms
 * its watcher and interrupt callback (so it owns the request alone), and
 * tries again: it replies (any thread may reply to a low-level request),
 * or arms the request once more. A fetcher whose round queued an acks=all
 * write takes that write itself (mk_parking_help). A request taken is
 * "busy" until armed again or answered: one thread at a time has it, and
 * its events meanwhile are dropped (that thread looks after disarming).
 * An interrupted read is answered EINTR at once; an interrupted write or
 * fsync whose batch was appended keeps waiting, so it is never answered
 * EINTR: it completes or fails with the errno of docs/filesystem.md
 * section 7 (ETIMEDOUT at request.timeout.ms on the cluster clock, which a
 * manual clock's advance also reaches) — unless its caller is being killed
 * (SIGKILL pending), which is answered at once so that it does not stay in
 * D state.
 *
 * Commands that wait inside core (the group and transaction coordinators
 * write their records with acks=all and act once they are acknowledged:
 * control writes under /groups and /transactions, mkdir and rmdir there)
 * are jobs: the worker queues them (mk_park_job) and returns; one command
 * thread starts them in order and replies. A job whose coordinator call
 * is pending (the group coordinator's records await the ISR) is parked
 * like a write (mk_park_job_wait) and the command thread goes on to the
 * next job; the coordinator's events resume it. A job interrupted before
 * it started is answered EINTR at once by the completion thread (nothing
 * was appended); once started it runs to its end, unless its caller is
 * being killed.
 *
 * Locking: the lot's mutex is a leaf: watcher and interrupt callbacks take
 * it under a partition's or a request's lock; nothing is called with it
 * held. Order: request lock, then partition lock, then the lot's mutex.
 */
#ifndef MK_PARK_H
#define MK_PARK_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include "handles.h"

typedef struct mk_parking mk_parking;

typedef enum {
	MK_PARK_READ,     /* reply with data (fuse_reply_buf) */
	MK_PARK_WRITE,    /* reply with the byte count written */
	MK_PARK_STATUS,   /* fsync: reply with an errno (0 = done) */
	MK_PARK_RELEASE,  /* the last close, already answered (req NULL):
			   * errors to /errors, then drop the handle */
	MK_PARK_JOB,      /* a job whose coordinator call is pending: its
			   * resume answers it (mk_park_job_wait) */
} mk_park_op;

/* Start the lot and its completion thread; drop closes a handle whose
 * parked release completed (untrack it, mk_handle_close). */
mk_parking *mk_parking_new(mkfs *fs, void (*drop)(mkfs *fs, mk_handle *h));
/*
 * Stop: the thread ends, then every request still parked is answered
 * (a read EINTR; a write or fsync by one last look at its acks, else
 * ETIMEDOUT: the daemon stopped before the ISR acknowledged; a release
 * with 0, its handle left to mk_fs_release_all). Call after
 * the request loop ended and before the session is destroyed.
 */
void mk_parking_stop(mk_parking *lot);
void mk_parking_free(mk_parking *lot);

/*
 * Park req, whose handle call left *wait pending (a release: req NULL,
 * the kernel was answered already). For a read, buf (size
 * bytes, malloc'ed; the lot frees it) and off are those of the request;
 * for a write, size is the count to answer.
 */
void mk_park(mk_parking *lot, fuse_req_t req, mk_handle *h, mk_park_op op,
	     char *buf, size_t size, long long off, const mk_wait *wait);
/* A command run off the FUSE workers (see above). The caller fills req,
 * run and cancel; the rest is the lot's. */
typedef struct mk_job mk_job;
struct mk_job {
	fuse_req_t req;
	void (*run)(mk_job *j);      /* on the command thread: work, reply, free j */
	void (*cancel)(mk_job *j);   /* never started: reply EINTR, free j */
	/* parked (mk_park_job_wait): look again; true when it replied and
	 * freed j, false to wait on (it updates *wait). stopping: the daemon
	 * stops; dying: the caller is being killed. Both must end it. */
	bool (*resume)(mk_job *j, mk_wait *wait, bool stopping, bool dying);
	mk_job *next;                /* the lot's, under its lock */
	mk_parking *lot;
	bool enqueued, started, cancelled, early;
};
void mk_park_job(mk_parking *lot, mk_job *j);
/* Park a started job whose command left a coordinator call pending
 * (wait->coord): the completion thread resumes it at the coordinator's
 * events, and, with the system clock, now and then (a deadline). */
void mk_park_job_wait(mk_parking *lot, mk_job *j, const mk_wait *wait);

/*
 * Answer, on the calling thread, the parked writes that its own events
 * queued (at most a few; the rest and every other kind stay with the
 * completion thread). The cluster's fetchers call it after every round
 * (mk_cluster_on_round): the follower fetch that completes an acks=all
 * batch answers its writer itself, instead of waking the completion
 * thread to do it. Events a helping thread causes queue such a write
 * without waking the completion thread, so a thread that calls it once
 * must call it after everything that may fire a watcher. Does nothing
 * once the lot is stopping (mk_parking_stop waits for a call under way).
 */
void mk_parking_help(void *lot);

/*
 * One timer the completion thread drives besides the parked requests
 * (ops.c: the expiry of cache probes, cacheprobe.h, whose opens wait
 * parked in the probe table): tick(arg, now) is called on the completion
 * thread with no lock held, when its last returned due time (wall ms; 0:
 * none) has come and after every mk_parking_poke; it returns the next
 * due time. mk_parking_stop calls it once more with INT64_MAX (answer
 * everything) after the threads ended. Set it before anything pokes.
 */
void mk_parking_set_tick(mk_parking *lot, int64_t (*tick)(void *arg, int64_t now_ms),
			 void *arg);
void mk_parking_poke(mk_parking *lot);

/* Requests parked now (for tests and /errors-free introspection). */
size_t mk_parking_count(mk_parking *lot);

/* Answer a failed request: one /errors line, then the errno. */
void mk_reply_fail(mkfs *fs, fuse_req_t req, const char *path, mk_err err,
		   mk_strbuf *why);

#endif
