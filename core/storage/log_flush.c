/*
 * log_flush.c — flush scheduling for one replica's log (log_flush.h): the
 * flusher's passes on the pool, the prepared files' task, the owner's
 * flushes.
 */
#include "log_flush.h"

#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "failpoint.h"
#include "fileio.h"
#include "log_checkpoint.h"
#include "log_internal.h"
#include "xalloc.h"

/*
 * Back-pressure on rolls. A roll queues the old segment for the flusher
 * pool and goes on; it waits only while the rolled segments not yet
 * fsynced hold more than MAX_UNFLUSHED_BYTES (the bound of what a start
 * after a kill may have to scan, and of the page cache one log may dirty
 * ahead of the disk). Below it the kernel's dirty-page throttling is the
 * only back-pressure, as in Kafka. One flush pass takes at most BATCH
 * segments (one checkpoint for them all).
 */
#define MAX_UNFLUSHED_BYTES (1ULL << 30)
#define BATCH 64

/*
 * The flusher's checkpoint writes are spaced (Kafka writes its recovery
 * point checkpoint every log.flush.offset.checkpoint.interval.ms): a pass
 * moves the recovery point in memory, and writes the log's checkpoint
 * files (log_checkpoint.h) only when the last write is CKPT_INTERVAL_MS
 * old or CKPT_LAG_BYTES of flushed segments are not in them yet; then it
 * sets the new recovery point in the broker's log directory and kicks its
 * task (logdir.h), whose one write of recovery-point-offset-checkpoint
 * serves every log that kicked while it was queued. Under a burst of
 * rolls that saves a file creation, a rename and two fsyncs per roll; a
 * kill meanwhile only makes the next open recover (scan) at most
 * CKPT_LAG_BYTES more. Flush, close and mk_log_wait_flusher write them
 * whenever it moved.
 */
#define CKPT_INTERVAL_MS 1000
#define CKPT_LAG_BYTES (64ULL << 20)

enum { PREP_NONE, PREP_QUEUED, PREP_READY };

/* The log whose task t is (its member fl.task or fl.prep_task). */
#define LOG_OF(t, member) ((mk_log *)((char *)(t) - offsetof(mk_log, member)))

static void flusher_run(mk_flush_task *t);
static void prep_run(mk_flush_task *t);

void mk_log_flusher_init(mk_log_flusher *fl)
{
	pthread_mutex_init(&fl->lock, NULL);
	pthread_cond_init(&fl->cond, NULL);
	fl->task.run = flusher_run;
	fl->prep_task.run = prep_run;
	fl->prep_task.quick = true;     /* never behind an fsync */
	mk_strbuf_init(&fl->msg, 0);
}

void mk_log_flusher_release(mk_log_flusher *fl)
{
	free(fl->q);
	mk_strbuf_release(&fl->msg);
	pthread_mutex_destroy(&fl->lock);
	pthread_cond_destroy(&fl->cond);
}

void mk_log_set_recovery_point(mk_log *log, int64_t offset)
{
	pthread_mutex_lock(&log->state_lock);
	log->recovery_point = offset;
	pthread_mutex_unlock(&log->state_lock);
}

/*
 * Make rolled segments durable, in order, then move the recovery point past
 * the last and write the checkpoint (once for them all). Runs on the flusher
 * thread (or, when it could not be started, on the owner's).
 */
static mk_err run_jobs(mk_log *log, const mk_log_flush_job *jobs, size_t n,
		       mk_strbuf *why)
{
	assert(n > 0);
	for (size_t i = 0; i < n; i++) {
		mk_err err = mk_segment_flush(jobs[i].seg, why);
		if (err)
			return err;
	}
	MK_FAILPOINT("log.flush.before-checkpoint");
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	mk_err err = MK_OK;
	mk_log_ckpt_text text;
	mk_log_ckpt_text_init(&text);
	pthread_mutex_lock(&log->ckpt_lock);
	pthread_mutex_lock(&log->state_lock);
	if (jobs[n - 1].next > log->recovery_point)
		log->recovery_point = jobs[n - 1].next;
	for (size_t i = 0; i < n; i++)
		log->ckpt_lag += jobs[i].bytes;
	bool write = log->ckpt_lag >= CKPT_LAG_BYTES ||
		     now - log->ckpt_at_ms >= CKPT_INTERVAL_MS;
	if (write) {
		mk_log_ckpt_format(log, &text);
		log->ckpt_at_ms = now;
		log->ckpt_lag = 0;
	}
	pthread_mutex_unlock(&log->state_lock);
	if (write)
		err = mk_log_ckpt_store(log, &text, why);
	pthread_mutex_unlock(&log->ckpt_lock);
	mk_log_ckpt_text_release(&text);
	/* The recovery point the log's files now back goes to the log
	 * directory's file soon (logdir.h: kicks coalesce across logs). */
	if (write && !err)
		mk_logdir_kick(log->logdir);
	return err;
}

/*
 * One pass of this log's flush work, on a pool thread: everything queued
 * (up to BATCH) with one checkpoint; then, if more was queued meanwhile,
 * the task is submitted again (after other logs' work already waiting).
 */
static void flusher_run(mk_flush_task *t)
{
	mk_log *log = LOG_OF(t, fl.task);
	mk_log_flusher *fl = &log->fl;
	pthread_mutex_lock(&fl->lock);
	if (fl->stop || fl->held || fl->n == 0 || fl->busy) {
		pthread_mutex_unlock(&fl->lock);
		return;
	}
	mk_log_flush_job jobs[BATCH];
	size_t n = fl->n < BATCH ? fl->n : BATCH;
	memcpy(jobs, fl->q, n * sizeof(*jobs));
	bool skip = fl->err != MK_OK;
	fl->busy = true;
	pthread_mutex_unlock(&fl->lock);
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = skip ? MK_OK : run_jobs(log, jobs, n, &why);
	pthread_mutex_lock(&fl->lock);
	if (err && !fl->err) {
		fl->err = err;
		mk_strbuf_add(&fl->msg, why.buf, why.len);
	}
	mk_strbuf_release(&why);
	for (size_t i = 0; i < n; i++)
		fl->bytes -= jobs[i].bytes;
	fl->n -= n;
	memmove(fl->q, fl->q + n, fl->n * sizeof(*fl->q));
	fl->busy = false;
	if (fl->n > 0 && !fl->held && !fl->stop)
		mk_flush_pool_submit(fl->pool, &fl->task);
	pthread_cond_broadcast(&fl->cond);
	pthread_mutex_unlock(&fl->lock);
}

/* The flusher's failure, made the log's error. Under fl.lock. */
static mk_err flusher_failed(mk_log *log)
{
	if (log->fl.err) {
		mk_strbuf_reset(&log->err);
		mk_strbuf_add(&log->err, log->fl.msg.buf, log->fl.msg.len);
	}
	return log->fl.err;
}

mk_err mk_log_flusher_error(mk_log *log)
{
	pthread_mutex_lock(&log->fl.lock);
	mk_err err = flusher_failed(log);
	pthread_mutex_unlock(&log->fl.lock);
	return err;
}

/* Under fl.lock: the pool to use, made (one thread) for a log without
 * the cluster's. NULL when no thread runs (or can be started). */
static mk_flush_pool *flusher_pool(mk_log *log)
{
	mk_log_flusher *fl = &log->fl;
	if (!fl->pool && log->cfg.pool) {
		/* The cluster's pool before mk_cluster_start has no thread
		 * (the daemon has not forked yet): flush in place. */
		if (mk_flush_pool_threads(log->cfg.pool) == 0)
			return NULL;
		fl->pool = log->cfg.pool;
	}
	if (!fl->pool) {
		fl->pool = mk_flush_pool_new(1);
		fl->own_pool = fl->pool != NULL;
	}
	return fl->pool;
}

/*
 * Under fl.lock, which it releases: submit a pass when one is due, then
 * wait until the queue is empty (all), or else until it holds at most
 * MAX_UNFLUSHED_BYTES (a hold or a failure ends that wait too); the
 * flusher's failure.
 */
static mk_err kick_and_wait(mk_log *log, bool all)
{
	mk_log_flusher *fl = &log->fl;
	if (fl->n > 0 && !fl->held && fl->pool)
		mk_flush_pool_submit(fl->pool, &fl->task);
	while (all ? fl->n > 0
		   : fl->bytes > MAX_UNFLUSHED_BYTES && !fl->held && !fl->err)
		pthread_cond_wait(&fl->cond, &fl->lock);
	mk_err err = flusher_failed(log);
	pthread_mutex_unlock(&fl->lock);
	return err;
}

/*
 * Queue a rolled segment; next is the recovery point once it is durable.
 * Waits only while more than MAX_UNFLUSHED_BYTES are queued (unless held).
 */
mk_err mk_log_flusher_add(mk_log *log, mk_segment *seg, int64_t next)
{
	mk_log_flusher *fl = &log->fl;
	mk_log_flush_job job = { seg, next, seg->size };
	mk_log_ckpt_mirror_bases(log);
	pthread_mutex_lock(&fl->lock);
	mk_err err = flusher_failed(log);
	if (err) {
		pthread_mutex_unlock(&fl->lock);
		return err;
	}
	if (!flusher_pool(log)) {
		/* No thread: flush here, as a synchronous roll would. */
		pthread_mutex_unlock(&fl->lock);
		mk_strbuf why = MK_STRBUF_INIT;
		err = run_jobs(log, &job, 1, &why);
		if (err)
			mk_log_storage_error(log, &why);
		mk_strbuf_release(&why);
		return err;
	}
	if (fl->n == fl->cap) {
		fl->cap = fl->cap ? fl->cap * 2 : BATCH;
		fl->q = mk_xrealloc(fl->q, fl->cap * sizeof(*fl->q));
	}
	fl->q[fl->n++] = job;
	fl->bytes += job.bytes;
	return kick_and_wait(log, false);
}

/* Wait until every queued segment is durable, releasing a hold. */
mk_err mk_log_flusher_wait(mk_log *log)
{
	mk_log_flusher *fl = &log->fl;
	pthread_mutex_lock(&fl->lock);
	fl->held = false;
	return kick_and_wait(log, true);
}

/* No pass starts from now on; one running is finished; the queue is left
 * as is. A private pool is freed. */
void mk_log_flusher_stop(mk_log *log)
{
	mk_log_flusher *fl = &log->fl;
	pthread_mutex_lock(&fl->lock);
	fl->stop = true;
	mk_flush_pool *pool = fl->pool;
	bool own = fl->own_pool;
	fl->pool = NULL;
	fl->own_pool = false;
	pthread_mutex_unlock(&fl->lock);
	if (pool) {
		mk_flush_pool_remove(pool, &fl->task);
		mk_flush_pool_remove(pool, &fl->prep_task);
		if (own)
			mk_flush_pool_free(pool);
	}
}

void mk_log_hold_flusher(mk_log *log, bool held)
{
	pthread_mutex_lock(&log->fl.lock);
	log->fl.held = held;
	if (!held && log->fl.n > 0 && log->fl.pool)
		mk_flush_pool_submit(log->fl.pool, &log->fl.task);
	pthread_cond_broadcast(&log->fl.cond);
	pthread_mutex_unlock(&log->fl.lock);
}

mk_err mk_log_wait_flusher(mk_log *log)
{
	mk_err err = mk_log_flusher_wait(log);
	/* The recovery point the passes moved is in the files too (a no-op
	 * when it already is). */
	return err ? err : mk_log_ckpt_write(log, false);
}

/*
 * Make everything appended durable: the rolled segments (the flusher's
 * queue), then the active one. The recovery point moves to the log end.
 */
mk_err mk_log_sync_all(mk_log *log)
{
	mk_err err = mk_log_flusher_wait(log);
	if (err)
		return err;
	mk_strbuf msg = MK_STRBUF_INIT;
	err = mk_segment_flush(mk_log_active(log), &msg);
	/* The entries of segments rolled in since: their data is durable
	 * now, their names must be too (the flusher's checkpoint, which
	 * fsyncs the directory as well, is written at most once a second). */
	if (!err && log->dir_dirty) {
		if (mk_fsync_dir(log->dir)) {
			mk_strbuf_addf(&msg, "%s: fsync failed: %s", log->dir,
				       strerror(errno));
			err = MK_KAFKA_STORAGE_ERROR;
		} else {
			log->dir_dirty = false;
			log->dir_syncs++;
		}
	}
	if (err) {
		mk_log_storage_error(log, &msg);
	} else {
		log->unflushed = 0;
		mk_log_set_recovery_point(log, mk_log_end_offset(log));
	}
	mk_strbuf_release(&msg);
	return err;
}

mk_err mk_log_flush(mk_log *log)
{
	mk_err err = mk_log_sync_all(log);
	return err ? err : mk_log_ckpt_write(log, false);
}

/* ---- prepared segment files ------------------------------------------- */

/* The next segment's files, on a pool thread (log_flush.h, "Prepared
 * segment files"). */
static void prep_run(mk_flush_task *t)
{
	mk_log *log = LOG_OF(t, fl.prep_task);
	mk_log_flusher *fl = &log->fl;
	pthread_mutex_lock(&fl->lock);
	bool go = !fl->stop && fl->prep == PREP_QUEUED;
	uint64_t prefill = fl->prep_prefill;
	pthread_mutex_unlock(&fl->lock);
	if (!go)
		return;
	/* A failure is not the log's: the roll then creates the files. */
	mk_err err = mk_segment_prepare(log->dir, prefill, NULL);
	pthread_mutex_lock(&fl->lock);
	fl->prep = err ? PREP_NONE : PREP_READY;
	pthread_cond_broadcast(&fl->cond);
	pthread_mutex_unlock(&fl->lock);
}

/* Ask for the next segment's files (owner's thread); nothing when they
 * are asked for or ready already, or no pool thread runs. */
void mk_log_prep_request(mk_log *log)
{
	mk_log_flusher *fl = &log->fl;
	log->prep_base = mk_log_active(log)->base;
	pthread_mutex_lock(&fl->lock);
	if (fl->prep == PREP_NONE && !fl->stop && flusher_pool(log)) {
		/* The new segment's first runway (segment.h), made with its
		 * files: as much as the segment may hold, up to the cap; none
		 * for segments too small to be worth one. */
		uint64_t sb = (uint64_t)log->cfg.segment_bytes;
		fl->prep_prefill = sb < 2 * MK_SEGMENT_RUNWAY_FROM ? 0
				   : sb < MK_SEGMENT_PREFILL_MAX ? sb
				   : MK_SEGMENT_PREFILL_MAX;
		fl->prep = PREP_QUEUED;
		log->prep_asked = true;
		mk_flush_pool_submit(fl->pool, &fl->prep_task);
	}
	pthread_mutex_unlock(&fl->lock);
}

/* Take the prepared files when they are ready (owner's thread). */
bool mk_log_prep_take(mk_log *log)
{
	pthread_mutex_lock(&log->fl.lock);
	bool ready = log->fl.prep == PREP_READY;
	if (ready)
		log->fl.prep = PREP_NONE;
	pthread_mutex_unlock(&log->fl.lock);
	return ready;
}

bool mk_log_wait_prepared(mk_log *log)
{
	mk_log_flusher *fl = &log->fl;
	pthread_mutex_lock(&fl->lock);
	while (fl->prep == PREP_QUEUED && !fl->stop)
		pthread_cond_wait(&fl->cond, &fl->lock);
	bool ready = fl->prep == PREP_READY;
	pthread_mutex_unlock(&fl->lock);
	return ready;
}
