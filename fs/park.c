/*
 * park.c — the parking lot and its completion thread.
 */
#include "park.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "errno_map.h"
#include "xalloc.h"

/* An interrupted write is looked at this often: is its caller dying?
 * (Its interrupt came once; a kill brings no event of its own.) */
#define DYING_CHECK_MS 500

typedef struct mk_parked {
	mk_watch watch;             /* first: the watcher's callback finds us */
	mk_parking *lot;
	fuse_req_t req;
	pid_t pid;                  /* the caller (thread) */
	mk_handle *h;
	mk_job *job;                /* MK_PARK_JOB */
	mk_park_op op;
	char *buf;
	size_t size;
	long long off;
	mk_wait wait;
	int64_t due_wall_ms;        /* system clock: look again then; 0 = never */
	bool queued, interrupted;   /* under lot->lock */
	bool busy;                  /* taken by a thread: events wait for arm */
	bool arming, fired;         /* an event while being armed waits */
	struct mk_parked *qnext;    /* the queue */
	struct mk_parked *prev, *next;   /* every parked request */
} mk_parked;

struct mk_parking {
	mkfs *fs;
	void (*drop)(mkfs *fs, mk_handle *h);
	pthread_mutex_t lock;
	pthread_cond_t cond;
	mk_parked *qhead, *qtail;
	mk_parked all;              /* list head */
	size_t count;
	bool stopping;
	pthread_t thread;
	bool started;
	int helpers;                /* threads inside mk_parking_help */
	/* The completion thread sleeps until then (wall ms; INT64_MAX: no
	 * bound; 0: it is awake and looks at every due time before it
	 * sleeps again). */
	int64_t sleeps_until;
	/* jobs: queued for the command thread; interrupted before starting */
	mk_job *jobs, *jobs_tail, *cancels;
	pthread_cond_t jobs_cond;
	pthread_t job_thread;
	bool job_started;
	/* the timer (mk_parking_set_tick): its due time (0: none), and a
	 * poke since it last ran */
	int64_t (*tick)(void *arg, int64_t now_ms);
	void *tick_arg;
	int64_t tick_due;
	bool tick_poked;
};

void mk_reply_fail(mkfs *fs, fuse_req_t req, const char *path, mk_err err,
		   mk_strbuf *why)
{
	mk_errlog_add(&fs->cluster->errlog, mk_clock_now(&fs->cluster->clock),
		      path, err, "%s", why && why->len ? why->buf : mk_err_name(err));
	if (why)
		mk_strbuf_release(why);
	fuse_reply_err(req, mk_errno(err));
}

/*
 * The lot a thread helps (mk_parking_help, which a fetcher calls after
 * every round): its events queue an acks=all write for it to answer after
 * the round instead of waking the completion thread.
 */
static __thread mk_parking *helping;

/* Under lot->lock; quiet: the calling thread answers it (no wake-up). */
static void enqueue(mk_parking *lot, mk_parked *k, bool quiet)
{
	if (k->queued)
		return;
	k->queued = true;
	k->qnext = NULL;
	if (lot->qtail)
		lot->qtail->qnext = k;
	else
		lot->qhead = k;
	lot->qtail = k;
	if (!quiet)
		pthread_cond_signal(&lot->cond);
}

/* Under lot->lock: take k off the queue if it is on it. */
static void dequeue(mk_parking *lot, mk_parked *k)
{
	if (!k->queued)
		return;
	mk_parked **pp = &lot->qhead, *prev = NULL;
	while (*pp && *pp != k) {
		prev = *pp;
		pp = &(*pp)->qnext;
	}
	if (*pp) {
		*pp = k->qnext;
		if (lot->qtail == k)
			lot->qtail = prev;
	}
	k->queued = false;
}

/* Under lot->lock: an event for k. While k is being armed the event is
 * only noted (arm queues it at the end), so k is never processed before
 * arm() is done with it; while a thread has taken k (busy) it is dropped:
 * that thread looks at k after disarming it, and arm() catches what came
 * meanwhile (the watcher's change count, a pending interrupt, due times
 * set anew). */
static void event(mk_parking *lot, mk_parked *k, bool quiet)
{
	if (k->busy)
		return;
	if (k->arming)
		k->fired = true;
	else
		enqueue(lot, k, quiet);
}

/* The watcher's callback: under the partition's lock, record only. */
static void on_change(mk_watch *w)
{
	mk_parked *k = (mk_parked *)w;
	pthread_mutex_lock(&k->lot->lock);
	event(k->lot, k, helping == k->lot && k->op == MK_PARK_WRITE);
	pthread_mutex_unlock(&k->lot->lock);
}

/* libfuse's interrupt callback: under the request's lock, record only. */
static void on_interrupt(fuse_req_t req, void *arg)
{
	(void)req;
	mk_parked *k = arg;
	pthread_mutex_lock(&k->lot->lock);
	k->interrupted = true;
	event(k->lot, k, false);
	pthread_mutex_unlock(&k->lot->lock);
}

static bool system_clock(mk_parking *lot)
{
	return !lot->fs->cluster->clock.manual;
}

/*
 * A caller killed by a fatal signal stays in D state until its request is
 * answered: SIGKILL is then pending on the thread (/proc/TID/status
 * SigPnd, or ShdPnd for the whole process).
 */
static bool caller_dying(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return true;    /* gone */
	bool dying = false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long mask;
		if ((!strncmp(line, "SigPnd:", 7) || !strncmp(line, "ShdPnd:", 7)) &&
		    sscanf(line + 7, "%llx", &mask) == 1 && (mask & (1ull << (SIGKILL - 1))))
			dying = true;
	}
	fclose(f);
	return dying;
}

/* Make k reachable by its events again (it is owned by the caller). */
static void arm(mk_parking *lot, mk_parked *k)
{
	int64_t due = 0, now = mk_wall_ms();
	/* With the system clock an acks=all wait times out by time alone:
	 * look at its deadline (request.timeout.ms). Everything else that
	 * completes it is an event: the ISR check that shrinks the ISR in
	 * auto mode fires the partition's watchers. */
	if (k->wait.kind != MK_WAIT_DATA && system_clock(lot) &&
	    k->wait.deadline_ms != INT64_MAX)
		due = k->wait.deadline_ms;
	if (k->wait.recheck_ms > 0 && (!due || now + k->wait.recheck_ms < due))
		due = now + k->wait.recheck_ms;
	/* libfuse calls an interrupt callback at once for a request already
	 * interrupted: an interrupted write (which keeps waiting) registers
	 * none again, and is looked at now and then for a dying caller. */
	bool watch_interrupt = k->req &&
			       (k->op == MK_PARK_READ || !k->interrupted);
	if (!watch_interrupt && (!due || due > now + DYING_CHECK_MS))
		due = now + DYING_CHECK_MS;
	pthread_mutex_lock(&lot->lock);
	k->due_wall_ms = due;
	k->busy = false;
	k->arming = true;
	k->fired = false;
	/* Only a due time earlier than the completion thread's wake-up needs
	 * it to look again. */
	if (due && due < lot->sleeps_until)
		pthread_cond_signal(&lot->cond);
	pthread_mutex_unlock(&lot->lock);
	if (watch_interrupt)
		fuse_req_interrupt_func(k->req, on_interrupt, k);
	if (k->wait.coord) {
		k->watch.ack = NULL;
		mk_coord_watch(k->wait.coord, &k->watch, k->wait.seen);
	} else if (k->wait.p) {
		k->watch.ack = k->wait.has_ticket ? &k->wait.ticket : NULL;
		mk_partition_watch(k->wait.p, &k->watch, k->wait.seen);
	}
	pthread_mutex_lock(&lot->lock);
	k->arming = false;
	if (k->fired)
		enqueue(lot, k, false);
	pthread_mutex_unlock(&lot->lock);
}

/* Take k back from every event source: afterwards only we touch it. */
static void disarm(mk_parking *lot, mk_parked *k)
{
	if (k->wait.coord)
		mk_coord_unwatch(k->wait.coord, &k->watch);
	else if (k->wait.p)
		mk_partition_unwatch(k->wait.p, &k->watch);
	if (k->req)
		fuse_req_interrupt_func(k->req, NULL, NULL);
	pthread_mutex_lock(&lot->lock);
	dequeue(lot, k);
	pthread_mutex_unlock(&lot->lock);
}

/* Under lot->lock: take k off the queue for this thread to process
 * (busy until it is armed again or finished). */
static mk_parked *take(mk_parking *lot, mk_parked *k)
{
	dequeue(lot, k);
	k->busy = true;
	return k;
}

static void finish(mk_parking *lot, mk_parked *k)
{
	pthread_mutex_lock(&lot->lock);
	k->prev->next = k->next;
	k->next->prev = k->prev;
	lot->count--;
	pthread_mutex_unlock(&lot->lock);
	free(k->buf);
	free(k);
}

/* Try k again; reply and free it, or arm it once more. */
static void process(mk_parking *lot, mk_parked *k, bool stopping)
{
	mkfs *fs = lot->fs;
	disarm(lot, k);
	pthread_mutex_lock(&lot->lock);
	bool interrupted = k->interrupted;
	pthread_mutex_unlock(&lot->lock);
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err;
	if (k->op == MK_PARK_READ) {
		if (interrupted || stopping) {
			mk_strbuf_addstr(&why, stopping ? "the daemon stopped while following"
						       : "interrupted while following");
			mk_reply_fail(fs, k->req, k->h->path, MK_INTERRUPTED, &why);
			finish(lot, k);
			return;
		}
		size_t n = 0;
		err = mk_handle_read(fs, k->h, k->buf, k->size, k->off,
				     &k->wait, &n, &why);
		if (!err && mk_wait_pending(&k->wait)) {
			mk_strbuf_release(&why);
			arm(lot, k);
			return;
		}
		if (err)
			mk_reply_fail(fs, k->req, k->h->path, err, &why);
		else
			fuse_reply_buf(k->req, k->buf, n);
	} else if (k->op == MK_PARK_JOB) {
		bool dying = interrupted && caller_dying(k->pid);
		if (!k->job->resume(k->job, &k->wait, stopping, dying)) {
			arm(lot, k);
			return;
		}
		finish(lot, k);
		return;
	} else if (k->op == MK_PARK_RELEASE) {
		err = mk_handle_resume(fs, k->h, &k->wait, &why);
		if (!err && mk_wait_pending(&k->wait) && !stopping) {
			mk_strbuf_release(&why);
			arm(lot, k);
			return;
		}
		if (err)
			mk_errlog_add(&fs->cluster->errlog, mk_clock_now(&fs->cluster->clock),
				      k->h->path, err, "at the last close: %s",
				      why.len ? why.buf : mk_err_name(err));
		/* Stopping with acknowledgements owed: mk_fs_release_all
		 * closes the handle once the cluster is shutting down. */
		if (!mk_wait_pending(&k->wait))
			lot->drop(fs, k->h);
	} else {
		/* The batch was appended: an interrupt changes nothing, unless
		 * the caller is being killed (it can neither see the answer nor
		 * retry, and would stay in D state until the ISR answers). */
		err = mk_handle_resume(fs, k->h, &k->wait, &why);
		if (!err && mk_wait_pending(&k->wait) && interrupted &&
		    caller_dying(k->pid)) {
			mk_strbuf_addstr(&why, "the caller was killed while waiting for acks=all (the batch stays appended)");
			err = MK_INTERRUPTED;
		}
		if (!err && mk_wait_pending(&k->wait)) {
			if (!stopping) {
				mk_strbuf_release(&why);
				arm(lot, k);
				return;
			}
			mk_strbuf_addstr(&why, "the daemon stopped before the ISR acknowledged the batch");
			err = MK_REQUEST_TIMED_OUT;
		}
		if (err)
			mk_reply_fail(fs, k->req, k->h->path, err, &why);
		else if (k->op == MK_PARK_WRITE)
			fuse_reply_write(k->req, k->size);
		else
			fuse_reply_err(k->req, 0);
	}
	mk_strbuf_release(&why);
	finish(lot, k);
}

/* Under lot->lock: queue what is due; return the next due time or 0. */
static int64_t queue_due(mk_parking *lot)
{
	int64_t now = mk_wall_ms(), next = 0;
	for (mk_parked *k = lot->all.next; k != &lot->all; k = k->next) {
		if (!k->due_wall_ms)
			continue;
		if (k->due_wall_ms <= now) {
			k->due_wall_ms = 0;
			event(lot, k, false);
		} else if (!next || k->due_wall_ms < next) {
			next = k->due_wall_ms;
		}
	}
	return next;
}

/* ---- jobs ----------------------------------------------------------------- */

/* Under lot->lock: take j out of the job queue. */
static void jobs_remove(mk_parking *lot, mk_job *j)
{
	mk_job **pp = &lot->jobs, *prev = NULL;
	while (*pp && *pp != j) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	if (*pp) {
		*pp = j->next;
		if (lot->jobs_tail == j)
			lot->jobs_tail = prev;
	}
	j->enqueued = false;
}

/* libfuse's interrupt callback for a job (under the request's lock):
 * one not yet started goes to the completion thread to be answered. */
static void on_job_interrupt(fuse_req_t req, void *arg)
{
	(void)req;
	mk_job *j = arg;
	mk_parking *lot = j->lot;
	pthread_mutex_lock(&lot->lock);
	if (!j->started && !j->cancelled) {
		if (!j->enqueued) {
			j->early = true;     /* mk_park_job answers it */
		} else {
			jobs_remove(lot, j);
			j->cancelled = true;
			j->next = lot->cancels;
			lot->cancels = j;
			pthread_cond_signal(&lot->cond);
		}
	}
	pthread_mutex_unlock(&lot->lock);
}

static void *job_main(void *arg)
{
	mk_parking *lot = arg;
	pthread_mutex_lock(&lot->lock);
	while (!lot->stopping) {
		mk_job *j = lot->jobs;
		if (!j) {
			pthread_cond_wait(&lot->jobs_cond, &lot->lock);
			continue;
		}
		jobs_remove(lot, j);
		j->started = true;
		pthread_mutex_unlock(&lot->lock);
		fuse_req_interrupt_func(j->req, NULL, NULL);
		j->run(j);
		pthread_mutex_lock(&lot->lock);
	}
	pthread_mutex_unlock(&lot->lock);
	return NULL;
}

void mk_park_job(mk_parking *lot, mk_job *j)
{
	j->lot = lot;
	j->next = NULL;
	j->enqueued = j->started = j->cancelled = j->early = false;
	fuse_req_interrupt_func(j->req, on_job_interrupt, j);
	pthread_mutex_lock(&lot->lock);
	bool now = j->early || lot->stopping, inline_run = !now && !lot->job_started;
	if (!now && !inline_run) {
		j->enqueued = true;
		if (lot->jobs_tail)
			lot->jobs_tail->next = j;
		else
			lot->jobs = j;
		lot->jobs_tail = j;
		pthread_cond_signal(&lot->jobs_cond);
	}
	pthread_mutex_unlock(&lot->lock);
	if (now || inline_run) {
		fuse_req_interrupt_func(j->req, NULL, NULL);
		if (now)
			j->cancel(j);
		else
			j->run(j);    /* no command thread: as before, on the worker */
	}
}

static void *completion_main(void *arg)
{
	mk_parking *lot = arg;
	pthread_mutex_lock(&lot->lock);
	while (!lot->stopping) {
		if (lot->cancels) {
			mk_job *j = lot->cancels;
			lot->cancels = j->next;
			pthread_mutex_unlock(&lot->lock);
			fuse_req_interrupt_func(j->req, NULL, NULL);
			j->cancel(j);
			pthread_mutex_lock(&lot->lock);
			continue;
		}
		if (lot->tick && (lot->tick_poked ||
				  (lot->tick_due && lot->tick_due <= mk_wall_ms()))) {
			lot->tick_poked = false;
			pthread_mutex_unlock(&lot->lock);
			int64_t due = lot->tick(lot->tick_arg, mk_wall_ms());
			pthread_mutex_lock(&lot->lock);
			lot->tick_due = due;
			continue;
		}
		int64_t next = queue_due(lot);
		if (lot->tick_due && (!next || lot->tick_due < next))
			next = lot->tick_due;
		if (!lot->qhead) {
			lot->sleeps_until = next ? next : INT64_MAX;
			if (next) {
				struct timespec ts = { .tv_sec = next / 1000,
						       .tv_nsec = (next % 1000) * 1000000L };
				pthread_cond_timedwait(&lot->cond, &lot->lock, &ts);
			} else {
				pthread_cond_wait(&lot->cond, &lot->lock);
			}
			lot->sleeps_until = 0;
			continue;
		}
		mk_parked *k = take(lot, lot->qhead);
		pthread_mutex_unlock(&lot->lock);
		process(lot, k, false);
		pthread_mutex_lock(&lot->lock);
	}
	pthread_mutex_unlock(&lot->lock);
	return NULL;
}

/* At most this many writes are answered by one call of mk_parking_help
 * (the rest go to the completion thread): the fetcher has its own work. */
#define HELP_MAX 16

void mk_parking_help(void *arg)
{
	mk_parking *lot = arg;
	helping = lot;
	pthread_mutex_lock(&lot->lock);
	if (lot->stopping || !lot->qhead) {
		pthread_mutex_unlock(&lot->lock);
		return;
	}
	lot->helpers++;
	for (int n = 0; n < HELP_MAX && !lot->stopping; n++) {
		mk_parked *k = lot->qhead;
		while (k && k->op != MK_PARK_WRITE)
			k = k->qnext;
		if (!k)
			break;
		take(lot, k);
		pthread_mutex_unlock(&lot->lock);
		process(lot, k, false);
		pthread_mutex_lock(&lot->lock);
	}
	/* What is left (other kinds, more than HELP_MAX, a quiet event of
	 * a write the loop had passed): the completion thread's. */
	if (lot->qhead)
		pthread_cond_signal(&lot->cond);
	if (--lot->helpers == 0 && lot->stopping)
		pthread_cond_broadcast(&lot->cond);
	pthread_mutex_unlock(&lot->lock);
}

mk_parking *mk_parking_new(mkfs *fs, void (*drop)(mkfs *fs, mk_handle *h))
{
	mk_parking *lot = mk_xcalloc(1, sizeof(*lot));
	lot->fs = fs;
	lot->drop = drop;
	pthread_mutex_init(&lot->lock, NULL);
	pthread_cond_init(&lot->cond, NULL);
	pthread_cond_init(&lot->jobs_cond, NULL);
	lot->all.prev = lot->all.next = &lot->all;
	lot->started = pthread_create(&lot->thread, NULL, completion_main, lot) == 0;
	lot->job_started = pthread_create(&lot->job_thread, NULL, job_main, lot) == 0;
	return lot;
}

void mk_parking_stop(mk_parking *lot)
{
	if (!lot)
		return;
	pthread_mutex_lock(&lot->lock);
	lot->stopping = true;
	pthread_cond_signal(&lot->cond);
	pthread_cond_signal(&lot->jobs_cond);
	pthread_mutex_unlock(&lot->lock);
	/* The cluster is shutting down: a job waiting in core ends now. */
	if (lot->job_started)
		pthread_join(lot->job_thread, NULL);
	lot->job_started = false;
	if (lot->started)
		pthread_join(lot->thread, NULL);
	lot->started = false;
	/* A fetcher answering what its round queued finishes that first. */
	pthread_mutex_lock(&lot->lock);
	while (lot->helpers > 0)
		pthread_cond_wait(&lot->cond, &lot->lock);
	pthread_mutex_unlock(&lot->lock);
	for (;;) {
		pthread_mutex_lock(&lot->lock);
		mk_job *j = lot->cancels ? lot->cancels : lot->jobs;
		if (j == lot->cancels && j)
			lot->cancels = j->next;
		else if (j)
			jobs_remove(lot, j);
		pthread_mutex_unlock(&lot->lock);
		if (!j)
			break;
		fuse_req_interrupt_func(j->req, NULL, NULL);
		j->cancel(j);
	}
	for (;;) {
		pthread_mutex_lock(&lot->lock);
		mk_parked *k = lot->all.next != &lot->all ? take(lot, lot->all.next)
							  : NULL;
		pthread_mutex_unlock(&lot->lock);
		if (!k)
			break;
		process(lot, k, true);
	}
	if (lot->tick)
		lot->tick(lot->tick_arg, INT64_MAX);
	lot->tick = NULL;    /* once: a second stop (mk_parking_free) runs none */
}

void mk_parking_set_tick(mk_parking *lot, int64_t (*tick)(void *arg, int64_t now_ms),
			 void *arg)
{
	pthread_mutex_lock(&lot->lock);
	lot->tick = tick;
	lot->tick_arg = arg;
	pthread_mutex_unlock(&lot->lock);
}

void mk_parking_poke(mk_parking *lot)
{
	pthread_mutex_lock(&lot->lock);
	lot->tick_poked = true;
	pthread_cond_signal(&lot->cond);
	pthread_mutex_unlock(&lot->lock);
}

void mk_parking_free(mk_parking *lot)
{
	if (!lot)
		return;
	mk_parking_stop(lot);
	pthread_mutex_destroy(&lot->lock);
	pthread_cond_destroy(&lot->cond);
	pthread_cond_destroy(&lot->jobs_cond);
	free(lot);
}

static void park(mk_parking *lot, fuse_req_t req, mk_handle *h, mk_job *job,
		 mk_park_op op, char *buf, size_t size, long long off,
		 const mk_wait *wait)
{
	mk_parked *k = mk_xcalloc(1, sizeof(*k));
	k->job = job;
	k->watch.fn = on_change;
	k->lot = lot;
	k->req = req;
	k->pid = req ? fuse_req_ctx(req)->pid : 0;
	k->h = h;
	k->op = op;
	k->buf = buf;
	k->size = size;
	k->off = off;
	k->wait = *wait;
	pthread_mutex_lock(&lot->lock);
	k->next = &lot->all;
	k->prev = lot->all.prev;
	lot->all.prev->next = k;
	lot->all.prev = k;
	lot->count++;
	pthread_mutex_unlock(&lot->lock);
	arm(lot, k);
}

void mk_park(mk_parking *lot, fuse_req_t req, mk_handle *h, mk_park_op op,
	     char *buf, size_t size, long long off, const mk_wait *wait)
{
	park(lot, req, h, NULL, op, buf, size, off, wait);
}

void mk_park_job_wait(mk_parking *lot, mk_job *j, const mk_wait *wait)
{
	park(lot, j->req, NULL, j, MK_PARK_JOB, NULL, 0, 0, wait);
}

size_t mk_parking_count(mk_parking *lot)
{
	pthread_mutex_lock(&lot->lock);
	size_t n = lot->count;
	pthread_mutex_unlock(&lot->lock);
	return n;
}
