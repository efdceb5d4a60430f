/*
 * log.c — one partition replica's log (log.h): the ordered segments, the
 * checkpoint, the leader-epoch cache and the background flusher.
 *
 * Organisation:
 *   - the epoch cache (a small array) and the checkpoint (a text file:
 *     "version 1", "log_start_offset N", "recovery_point N", then one
 *     "epoch E START" line per cache entry), replaced atomically;
 *   - the flusher: this log's work in the cluster's flusher pool
 *     (flushpool.h): fsync rolled segments in roll order, move the
 *     recovery point;
 *   - open: list the NNN.log files, open those below the recovery point as
 *     closed (no I/O beyond open+fstat), recover the rest in order,
 *     reconcile the epoch cache with what the recovered segments hold;
 *   - append: roll when needed, one pwrite, index entries, the epoch cache;
 *   - read and offset_for_time: binary search of the segment, index lookup,
 *     forward scan with the segment reader;
 *   - truncate_to, flush, close, crash.
 *
 * The roll fsync. A roll used to fsync the old segment and its indexes, the
 * directory and the checkpoint before the append that caused it could go
 * on: four fsyncs per segment.bytes appended, on the append path. As in
 * Kafka (whose roll schedules the old segment's flush), the old segment is
 * now handed to the flusher, which fsyncs it with its indexes and then
 * writes the checkpoint with the recovery point past it (the checkpoint's
 * own directory fsync also makes the new segments' creation durable); when
 * it finds several segments queued, it fsyncs them all, in order, and
 * writes one checkpoint. The guarantees stay those of log.h: the recovery
 * point only moves past data that was fsynced, flushes happen in roll
 * order, and open recovers every segment from the one holding the recovery
 * point on — normally only the active one, and never more than
 * MAX_UNFLUSHED_BYTES of rolled segments, because only past that bound
 * does a roll wait for the flusher; below it the kernel's dirty-page
 * throttling is the back-pressure, as in Kafka. (Earlier versions waited
 * once 64 segments were queued: with 1 MiB segments that put the disk's
 * fsync rate on the append path.) The alternative, starting writeback
 * early with sync_file_range(SYNC_FILE_RANGE_WRITE) every 256 KiB so that
 * the roll's fsync finds little to write, keeps every fsync (and the
 * directory and checkpoint ones) on the append path, where small-file
 * fsyncs cost milliseconds each; it was measured and not kept.
 *
 * Threads. Everything but the flusher runs on the owner's thread, under the
 * owner's lock (log.h). The flusher touches: its queue (fl.lock); the
 * segments queued, through mk_segment_flush() only (see segment.h for why
 * reads of them may go on meanwhile); and, under state_lock, the recovery
 * point, the epoch cache (read) and the checkpoint file. So the owner's
 * thread takes state_lock to change the epoch cache or the recovery point
 * and to write the checkpoint, and waits for the flusher to be idle
 * (flusher_wait) before it changes or removes anything but the active
 * segment: truncation, index rebuilds, flush, close.
 *
 * Storage errors leave "FILE at byte POS: REASON" (or "FILE: what: errno")
 * in log->err, which mk_log_error() returns. A flusher failure is kept and
 * returned by every later append, roll, flush and truncation: the recovery
 * point can no longer move, and the owner takes the replica offline.
 */
#include "log.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "fileio.h"
#include "fdcache.h"
#include "flushpool.h"
#include "segment.h"

#define CHECKPOINT "checkpoint"

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

typedef struct {
	mk_segment *seg;            /* a rolled segment, owned by the log */
	int64_t next;               /* the recovery point once it is durable */
	uint64_t bytes;             /* its size at the roll */
} flush_job;

typedef struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;        /* the queue, held, stop or err changed */
	mk_flush_task task;         /* this log's work in the pool */
	mk_flush_pool *pool;        /* the cluster's, or own (NULL: none yet) */
	bool own_pool;              /* made at the first roll, freed at close */
	bool busy;                  /* a pass runs (jobs [0, taken) in flight) */
	bool stop;                  /* no pass is to start */
	bool held;                  /* tests: no pass starts */
	flush_job *q;               /* roll order; jobs run until removed */
	size_t n, cap;
	uint64_t bytes;             /* sum of the queued jobs' bytes */
	mk_err err;                 /* its first failure; no job runs after */
	mk_strbuf msg;              /* what failed */
} flusher;

struct mk_log {
	char *dir;
	mk_fdcache *cache;          /* cfg.fdcache, or own_cache */
	mk_fdcache *own_cache;
	char *ckpt_path;
	mk_log_config cfg;
	mk_segment **segs;          /* ascending base offsets; last is active */
	size_t nsegs, segs_cap;
	int64_t start_offset;       /* set at open only */
	/* Under state_lock (written by the owner's thread, or the flusher): */
	pthread_mutex_t state_lock; /* also serialises checkpoint writes */
	int64_t recovery_point;     /* below it, everything was fsynced */
	mk_strbuf ckpt_last;        /* what the checkpoint file last got */
	mk_epoch_entry *epochs;     /* epochs and starts strictly increasing */
	size_t nepochs, epochs_cap;
	/* The owner's thread only: */
	int64_t unflushed;          /* records appended since the last fsync */
	mk_strbuf err;              /* the last storage error */
	flusher fl;
};

static mk_segment *active(const mk_log *log)
{
	assert(log->nsegs > 0);
	return log->segs[log->nsegs - 1];
}

int64_t mk_log_end_offset(const mk_log *log)
{
	return active(log)->next_offset;
}

/* Every offset of segment i is below this. */
static int64_t end_limit(const mk_log *log, size_t i)
{
	return i + 1 < log->nsegs ? log->segs[i + 1]->base : INT64_MAX;
}

/* The segment holding offset: the last one whose base is <= offset. */
static size_t find_segment(const mk_log *log, int64_t offset)
{
	size_t lo = 0, hi = log->nsegs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (log->segs[mid]->base <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : 0;
}

static void push_segment(mk_log *log, mk_segment *s)
{
	if (log->nsegs == log->segs_cap) {
		size_t cap = log->segs_cap ? log->segs_cap * 2 : 8;
		mk_segment **v = realloc(log->segs, cap * sizeof(*v));
		if (!v)
			abort();
		log->segs = v;
		log->segs_cap = cap;
	}
	assert(log->nsegs == 0 || s->base > active(log)->base);
	log->segs[log->nsegs++] = s;
}

/* Record a storage error; msg is what the segment layer said. */
static mk_err storage_error(mk_log *log, const mk_strbuf *msg)
{
	mk_strbuf_reset(&log->err);
	mk_strbuf_add(&log->err, msg->buf, msg->len);
	return MK_KAFKA_STORAGE_ERROR;
}

/* ---- the epoch cache ----------------------------------------------------- */

static void epoch_push(mk_log *log, int32_t epoch, int64_t start)
{
	assert(log->nepochs == 0 ||
	       (epoch > log->epochs[log->nepochs - 1].epoch &&
		start > log->epochs[log->nepochs - 1].start_offset));
	pthread_mutex_lock(&log->state_lock);
	if (log->nepochs == log->epochs_cap) {
		size_t cap = log->epochs_cap ? log->epochs_cap * 2 : 8;
		mk_epoch_entry *v = realloc(log->epochs, cap * sizeof(*v));
		if (!v)
			abort();
		log->epochs = v;
		log->epochs_cap = cap;
	}
	log->epochs[log->nepochs++] = (mk_epoch_entry){ epoch, start };
	pthread_mutex_unlock(&log->state_lock);
}

/*
 * A batch of epoch e starting at base, seen in log order: a new epoch when
 * it is above the latest. Negative epochs (none) are not recorded; a lower
 * epoch cannot follow a higher one in a log, so it adds nothing.
 */
static bool epoch_observe(mk_log *log, int32_t e, int64_t base)
{
	if (e < 0)
		return false;
	if (log->nepochs && e <= log->epochs[log->nepochs - 1].epoch)
		return false;
	if (log->nepochs && base <= log->epochs[log->nepochs - 1].start_offset)
		return false;
	epoch_push(log, e, base);
	return true;
}

/* Drop the entries starting at or after offset. */
static bool epoch_trim(mk_log *log, int64_t offset)
{
	size_t n = log->nepochs;
	while (n > 0 && log->epochs[n - 1].start_offset >= offset)
		n--;
	bool changed = n != log->nepochs;
	pthread_mutex_lock(&log->state_lock);
	log->nepochs = n;
	pthread_mutex_unlock(&log->state_lock);
	return changed;
}

int32_t mk_log_latest_epoch(const mk_log *log)
{
	return log->nepochs ? log->epochs[log->nepochs - 1].epoch : -1;
}

size_t mk_log_epochs(const mk_log *log, const mk_epoch_entry **entries)
{
	*entries = log->epochs;
	return log->nepochs;
}

void mk_log_end_offset_for_epoch(const mk_log *log, int32_t epoch,
				 int32_t *epoch_out, int64_t *end_out)
{
	/* The last entry whose epoch is <= the one asked for. */
	size_t lo = 0, hi = log->nepochs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (log->epochs[mid].epoch <= epoch)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0) {
		*epoch_out = -1;
		*end_out = -1;
		return;
	}
	*epoch_out = log->epochs[lo - 1].epoch;
	*end_out = lo < log->nepochs ? log->epochs[lo].start_offset
				     : mk_log_end_offset(log);
}

/* Collects the epoch changes a scan sees, in order. */
typedef struct {
	mk_epoch_entry *v;
	size_t n, cap;
} epoch_seen;

static void on_batch_epoch(void *arg, const mk_batch_view *b, uint64_t pos)
{
	(void)pos;
	epoch_seen *s = arg;
	int32_t e = b->meta.leader_epoch;
	if (e < 0 || (s->n && s->v[s->n - 1].epoch == e))
		return;
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 8;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		if (!s->v)
			abort();
	}
	s->v[s->n++] = (mk_epoch_entry){ e, b->meta.base_offset };
}

/* ---- the checkpoint ------------------------------------------------------ */

typedef struct {
	int64_t start_offset;
	int64_t recovery_point;
	mk_epoch_entry *epochs;
	size_t nepochs;
} checkpoint;

static void ckpt_format(const mk_log *log, mk_strbuf *out)
{
	mk_strbuf_addf(out, "version 1\nlog_start_offset %lld\n"
		       "recovery_point %lld\n", (long long)log->start_offset,
		       (long long)log->recovery_point);
	for (size_t i = 0; i < log->nepochs; i++)
		mk_strbuf_addf(out, "epoch %d %lld\n", (int)log->epochs[i].epoch,
			       (long long)log->epochs[i].start_offset);
}

/* Under state_lock (or before the flusher exists). */
/* Replace the checkpoint, unless it already says exactly this (a close
 * or flush with nothing new then costs no fsync). */
static mk_err ckpt_write_locked(mk_log *log, mk_strbuf *why)
{
	mk_strbuf text = MK_STRBUF_INIT;
	ckpt_format(log, &text);
	if (log->ckpt_last.len == text.len &&
	    memcmp(log->ckpt_last.buf, text.buf, text.len) == 0) {
		mk_strbuf_release(&text);
		return MK_OK;
	}
	mk_err err = mk_file_replace(log->ckpt_path, text.buf, text.len);
	mk_strbuf_reset(&log->ckpt_last);
	if (!err)
		mk_strbuf_add(&log->ckpt_last, text.buf, text.len);
	mk_strbuf_release(&text);
	if (err)
		mk_strbuf_addf(why, "%s: write failed: %s", log->ckpt_path,
			       strerror(errno));
	return err ? MK_KAFKA_STORAGE_ERROR : MK_OK;
}

static mk_err ckpt_write(mk_log *log)
{
	mk_strbuf why = MK_STRBUF_INIT;
	pthread_mutex_lock(&log->state_lock);
	mk_err err = ckpt_write_locked(log, &why);
	pthread_mutex_unlock(&log->state_lock);
	if (err) {
		mk_strbuf_reset(&log->err);
		mk_strbuf_add(&log->err, why.buf, why.len);
	}
	mk_strbuf_release(&why);
	return err;
}

static void set_recovery_point(mk_log *log, int64_t offset)
{
	pthread_mutex_lock(&log->state_lock);
	log->recovery_point = offset;
	pthread_mutex_unlock(&log->state_lock);
}

/* A decimal integer in [0, INT64_MAX] filling the token at *p. */
static bool parse_num(char **p, int64_t *out)
{
	char *s = *p, *end;
	while (*s == ' ')
		s++;
	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || (*end != ' ' && *end != '\0'))
		return false;
	*out = v;
	*p = end;
	return true;
}

static mk_err ckpt_parse(const char *path, char *text, checkpoint *c,
			 mk_strbuf *why)
{
	memset(c, 0, sizeof(*c));
	bool version = false, start = false, rp = false;
	size_t cap = 0;
	int lineno = 0;
	const char *bad = NULL;
	for (char *line = text, *next; line && *line; line = next) {
		lineno++;
		next = strchr(line, '\n');
		if (!next) {
			bad = "missing newline";
			break;
		}
		*next++ = '\0';
		char *p = line;
		int64_t a, b;
		if (!version) {
			if (strcmp(line, "version 1") != 0) {
				bad = "unknown version";
				break;
			}
			version = true;
		} else if (!strncmp(line, "log_start_offset ", 17) && !start) {
			p += 16;
			if (!parse_num(&p, &c->start_offset) || *p) {
				bad = "bad log_start_offset";
				break;
			}
			start = true;
		} else if (!strncmp(line, "recovery_point ", 15) && !rp) {
			p += 14;
			if (!parse_num(&p, &c->recovery_point) || *p) {
				bad = "bad recovery_point";
				break;
			}
			rp = true;
		} else if (!strncmp(line, "epoch ", 6)) {
			p += 5;
			if (!parse_num(&p, &a) || a > INT32_MAX ||
			    !parse_num(&p, &b) || *p) {
				bad = "bad epoch line";
				break;
			}
			if (c->nepochs &&
			    (a <= c->epochs[c->nepochs - 1].epoch ||
			     b <= c->epochs[c->nepochs - 1].start_offset)) {
				bad = "epochs out of order";
				break;
			}
			if (c->nepochs == cap) {
				cap = cap ? cap * 2 : 8;
				c->epochs = realloc(c->epochs,
						    cap * sizeof(*c->epochs));
				if (!c->epochs)
					abort();
			}
			c->epochs[c->nepochs++] =
				(mk_epoch_entry){ (int32_t)a, b };
		} else {
			bad = "unknown line";
			break;
		}
	}
	if (!bad && !(version && start && rp))
		bad = "missing fields";
	if (bad) {
		if (why)
			mk_strbuf_addf(why, "%s: line %d: %s", path, lineno, bad);
		free(c->epochs);
		c->epochs = NULL;
		c->nepochs = 0;
		return MK_KAFKA_STORAGE_ERROR;
	}
	return MK_OK;
}

/* ---- the flusher --------------------------------------------------------- */

/*
 * Make rolled segments durable, in order, then move the recovery point past
 * the last and write the checkpoint (once for them all). Runs on the flusher
 * thread (or, when it could not be started, on the owner's).
 */
static mk_err run_jobs(mk_log *log, const flush_job *jobs, size_t n,
		       mk_strbuf *why)
{
	assert(n > 0);
	for (size_t i = 0; i < n; i++) {
		mk_err err = mk_segment_flush(jobs[i].seg, why);
		if (err)
			return err;
	}
	pthread_mutex_lock(&log->state_lock);
	if (jobs[n - 1].next > log->recovery_point)
		log->recovery_point = jobs[n - 1].next;
	mk_err err = ckpt_write_locked(log, why);
	pthread_mutex_unlock(&log->state_lock);
	return err;
}

/*
 * One pass of this log's flush work, on a pool thread: everything queued
 * (up to BATCH) with one checkpoint; then, if more was queued meanwhile,
 * the task is submitted again (after other logs' work already waiting).
 */
static void flusher_run(mk_flush_task *t)
{
	mk_log *log = (mk_log *)((char *)t - offsetof(mk_log, fl.task));
	flusher *fl = &log->fl;
	pthread_mutex_lock(&fl->lock);
	if (fl->stop || fl->held || fl->n == 0 || fl->busy) {
		pthread_mutex_unlock(&fl->lock);
		return;
	}
	flush_job jobs[BATCH];
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

static mk_err flusher_error(mk_log *log)
{
	pthread_mutex_lock(&log->fl.lock);
	mk_err err = flusher_failed(log);
	pthread_mutex_unlock(&log->fl.lock);
	return err;
}

/* Under fl.lock: the pool to use, made (one thread) for a log without
 * the cluster's. NULL when no thread can be started. */
static mk_flush_pool *flusher_pool(mk_log *log)
{
	flusher *fl = &log->fl;
	if (!fl->pool && log->cfg.pool)
		fl->pool = log->cfg.pool;
	if (!fl->pool) {
		fl->pool = mk_flush_pool_new(1);
		fl->own_pool = fl->pool != NULL;
	}
	return fl->pool;
}

/*
 * Queue a rolled segment; next is the recovery point once it is durable.
 * Waits only while more than MAX_UNFLUSHED_BYTES are queued (unless held).
 */
static mk_err flusher_add(mk_log *log, mk_segment *seg, int64_t next)
{
	flusher *fl = &log->fl;
	flush_job job = { seg, next, seg->size };
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
			storage_error(log, &why);
		mk_strbuf_release(&why);
		return err;
	}
	if (fl->n == fl->cap) {
		fl->cap = fl->cap ? fl->cap * 2 : BATCH;
		fl->q = realloc(fl->q, fl->cap * sizeof(*fl->q));
		if (!fl->q)
			abort();
	}
	fl->q[fl->n++] = job;
	fl->bytes += job.bytes;
	if (!fl->held)
		mk_flush_pool_submit(fl->pool, &fl->task);
	while (fl->bytes > MAX_UNFLUSHED_BYTES && !fl->held && !fl->err)
		pthread_cond_wait(&fl->cond, &fl->lock);
	err = flusher_failed(log);
	pthread_mutex_unlock(&fl->lock);
	return err;
}

/* Wait until every queued segment is durable, releasing a hold. */
static mk_err flusher_wait(mk_log *log)
{
	flusher *fl = &log->fl;
	pthread_mutex_lock(&fl->lock);
	fl->held = false;
	if (fl->n > 0 && fl->pool)
		mk_flush_pool_submit(fl->pool, &fl->task);
	while (fl->n > 0)
		pthread_cond_wait(&fl->cond, &fl->lock);
	mk_err err = flusher_failed(log);
	pthread_mutex_unlock(&fl->lock);
	return err;
}

/* No pass starts from now on; one running is finished; the queue is left
 * as is. A private pool is freed. */
static void flusher_stop(mk_log *log)
{
	flusher *fl = &log->fl;
	pthread_mutex_lock(&fl->lock);
	fl->stop = true;
	mk_flush_pool *pool = fl->pool;
	bool own = fl->own_pool;
	fl->pool = NULL;
	fl->own_pool = false;
	pthread_mutex_unlock(&fl->lock);
	if (pool) {
		mk_flush_pool_remove(pool, &fl->task);
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
	return flusher_wait(log);
}

/* ---- open and close ------------------------------------------------------ */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* The base offsets of the NNNNNNNNNNNNNNNNNNNN.log files in dir, sorted. */
static mk_err list_segments(const char *dir, int64_t **out, size_t *n,
			    mk_strbuf *why)
{
	*out = NULL;
	*n = 0;
	DIR *d = opendir(dir);
	if (!d) {
		if (why)
			mk_strbuf_addf(why, "%s: cannot list: %s", dir,
				       strerror(errno));
		return MK_KAFKA_STORAGE_ERROR;
	}
	size_t cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *name = de->d_name;
		if (strlen(name) != 24 || strcmp(name + 20, ".log") != 0)
			continue;
		uint64_t v = 0;
		bool ok = true;
		for (int i = 0; i < 20 && ok; i++) {
			if (name[i] < '0' || name[i] > '9' ||
			    v > ((uint64_t)INT64_MAX - (uint64_t)(name[i] - '0')) / 10)
				ok = false;
			else
				v = v * 10 + (uint64_t)(name[i] - '0');
		}
		if (!ok)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			*out = realloc(*out, cap * sizeof(**out));
			if (!*out)
				abort();
		}
		(*out)[(*n)++] = (int64_t)v;
	}
	closedir(d);
	if (*n)
		qsort(*out, *n, sizeof(**out), cmp_i64);
	return MK_OK;
}

/* Free the log (its segments are closed, its flusher stopped). */
static void log_free(mk_log *log)
{
	assert(!log->fl.pool);
	mk_fdcache_free(log->own_cache);
	free(log->dir);
	free(log->ckpt_path);
	free(log->segs);
	free(log->epochs);
	mk_strbuf_release(&log->err);
	mk_strbuf_release(&log->ckpt_last);
	free(log->fl.q);
	mk_strbuf_release(&log->fl.msg);
	pthread_mutex_destroy(&log->fl.lock);
	pthread_cond_destroy(&log->fl.cond);
	pthread_mutex_destroy(&log->state_lock);
	free(log);
}

/*
 * Delete the segments at bases[0..n) (ascending), newest first, so that a
 * crash part-way leaves a prefix of the log; then fsync the directory.
 */
static mk_err remove_from(const char *dir, mk_fdcache *cache,
			  const int64_t *bases, size_t n, mk_strbuf *why)
{
	while (n > 0) {
		mk_segment *s;
		mk_err err = mk_segment_open_closed(dir, bases[--n], cache, &s, why);
		if (!err)
			err = mk_segment_remove(s, why);
		if (err)
			return err;
	}
	if (mk_fsync_dir(dir)) {
		if (why)
			mk_strbuf_addf(why, "%s: fsync failed", dir);
		return MK_KAFKA_STORAGE_ERROR;
	}
	return MK_OK;
}

static bool config_ok(const mk_log_config *cfg)
{
	return cfg->segment_bytes > 0 && cfg->index_interval_bytes >= 0 &&
	       cfg->flush_messages >= 0;
}

mk_err mk_log_open(const char *dir, const mk_log_config *cfg, mk_log **out,
		   mk_strbuf *why)
{
	*out = NULL;
	mk_log_config defaults = { 1048576, 4096, 0, NULL, NULL };
	if (!cfg)
		cfg = &defaults;
	if (!config_ok(cfg)) {
		if (why)
			mk_strbuf_addstr(why, "invalid log configuration");
		return MK_INVALID_CONFIG;
	}
	if (mk_mkdirs(dir)) {
		if (why)
			mk_strbuf_addf(why, "%s: cannot create: %s", dir,
				       strerror(errno));
		return MK_KAFKA_STORAGE_ERROR;
	}
	mk_log *log = calloc(1, sizeof(*log));
	if (!log)
		abort();
	log->dir = strdup(dir);
	mk_strbuf p = MK_STRBUF_INIT;
	mk_strbuf_addf(&p, "%s/" CHECKPOINT, dir);
	log->ckpt_path = mk_strbuf_detach(&p, NULL);
	log->cfg = *cfg;
	log->cache = cfg->fdcache;
	if (!log->cache) {
		log->own_cache = mk_fdcache_new(0);
		if (!log->own_cache)
			abort();
		log->cache = log->own_cache;
	}
	mk_strbuf_init(&log->err, 0);
	mk_strbuf_init(&log->ckpt_last, 0);
	pthread_mutex_init(&log->state_lock, NULL);
	pthread_mutex_init(&log->fl.lock, NULL);
	pthread_cond_init(&log->fl.cond, NULL);
	log->fl.task.run = flusher_run;
	mk_strbuf_init(&log->fl.msg, 0);

	mk_strbuf text = MK_STRBUF_INIT, scratch = MK_STRBUF_INIT;
	int64_t *bases = NULL;
	size_t nbases = 0;
	checkpoint ck = { 0, 0, NULL, 0 };
	epoch_seen seen = { NULL, 0, 0 };
	bool missing;
	mk_err err = list_segments(dir, &bases, &nbases, why);
	if (err)
		goto fail;
	if (mk_file_read(log->ckpt_path, &text, &missing)) {
		if (why)
			mk_strbuf_addf(why, "%s: read failed: %s",
				       log->ckpt_path, strerror(errno));
		err = MK_KAFKA_STORAGE_ERROR;
		goto fail;
	}
	if (!missing && (err = ckpt_parse(log->ckpt_path, text.buf, &ck, why)))
		goto fail;

	/*
	 * Recovery starts at the segment holding the recovery point: normally
	 * the active one; earlier when rolled segments were still waiting for
	 * the flusher. Without a checkpoint (a new log, or outside damage),
	 * at the active one.
	 */
	size_t first = nbases ? nbases - 1 : 0;
	while (!missing && first > 0 && bases[first] > ck.recovery_point)
		first--;
	/* Closed segments below it: opened, never read. */
	for (size_t i = 0; i < first; i++) {
		mk_segment *s;
		if ((err = mk_segment_open_closed(dir, bases[i], log->cache, &s, why)))
			goto fail;
		push_segment(log, s);
	}
	/*
	 * From it on, each segment is recovered (its torn or corrupt tail cut,
	 * its indexes rebuilt, fsynced). One that had to be cut, or that ends
	 * short of the next one's base, ends the log: the segments after it
	 * were written after data now lost, and are deleted. The others are
	 * closed again, durable now.
	 */
	for (size_t i = first; i < nbases; i++) {
		bool last = i + 1 == nbases;
		mk_segment *s;
		uint64_t cut;
		err = mk_segment_open_active(dir, bases[i],
					     last ? INT64_MAX : bases[i + 1],
					     log->cache,
					     cfg->index_interval_bytes,
					     on_batch_epoch, &seen, &s, &cut,
					     &scratch);
		if (err) {
			if (why)
				mk_strbuf_add(why, scratch.buf, scratch.len);
			goto fail;
		}
		push_segment(log, s);
		if (last)
			break;
		if (cut || s->next_offset != bases[i + 1]) {
			if ((err = remove_from(dir, log->cache, bases + i + 1,
					       nbases - i - 1, why)))
				goto fail;
			break;
		}
		mk_strbuf_reset(&scratch);
		if ((err = mk_segment_seal(s, &scratch)) ||
		    (err = mk_segment_flush(s, &scratch))) {
			if (why)
				mk_strbuf_add(why, scratch.buf, scratch.len);
			goto fail;
		}
	}
	if (!nbases) {
		mk_segment *s;
		if ((err = mk_segment_create(dir, missing ? 0 : ck.start_offset,
					     log->cache, &s, why)))
			goto fail;
		push_segment(log, s);
		if (mk_fsync_dir(dir)) {
			if (why)
				mk_strbuf_addf(why, "%s: fsync failed", dir);
			err = MK_KAFKA_STORAGE_ERROR;
			goto fail;
		}
	}

	/*
	 * The epoch cache: the checkpoint's, or — when it is missing while
	 * closed segments exist, which only outside damage causes — rebuilt by
	 * scanning them. Then everything from the first recovered segment's
	 * base on is taken from what the recovered segments actually hold: the
	 * checkpoint may have run ahead of data lost in a crash, or lag behind
	 * it.
	 */
	for (size_t i = 0; i < ck.nepochs; i++)
		epoch_push(log, ck.epochs[i].epoch, ck.epochs[i].start_offset);
	if (missing && first > 0) {
		epoch_seen closed = { NULL, 0, 0 };
		for (size_t i = 0; i < first && !err; i++)
			err = mk_segment_scan(log->segs[i], end_limit(log, i),
					      on_batch_epoch, &closed, why);
		for (size_t i = 0; i < closed.n; i++)
			epoch_observe(log, closed.v[i].epoch,
				      closed.v[i].start_offset);
		free(closed.v);
		if (err)
			goto fail;
	}
	epoch_trim(log, log->segs[first]->base);
	for (size_t i = 0; i < seen.n; i++)
		epoch_observe(log, seen.v[i].epoch, seen.v[i].start_offset);

	int64_t leo = mk_log_end_offset(log);
	log->start_offset = missing ? log->segs[0]->base : ck.start_offset;
	if (log->start_offset < log->segs[0]->base)
		log->start_offset = log->segs[0]->base;
	if (log->start_offset > leo)
		log->start_offset = leo;
	/* Recovery fsynced what it scanned: all of the log is durable. */
	log->recovery_point = leo;

	mk_strbuf_reset(&scratch);
	ckpt_format(log, &scratch);
	if (missing || scratch.len != text.len ||
	    memcmp(scratch.buf, text.buf, text.len) != 0) {
		if ((err = ckpt_write(log))) {
			if (why)
				mk_strbuf_add(why, log->err.buf, log->err.len);
			goto fail;
		}
	} else {
		mk_strbuf_add(&log->ckpt_last, scratch.buf, scratch.len);
	}
	free(bases);
	free(ck.epochs);
	free(seen.v);
	mk_strbuf_release(&text);
	mk_strbuf_release(&scratch);
	*out = log;
	return MK_OK;
fail:
	for (size_t i = 0; i < log->nsegs; i++)
		mk_segment_close(log->segs[i]);
	free(bases);
	free(ck.epochs);
	free(seen.v);
	mk_strbuf_release(&text);
	mk_strbuf_release(&scratch);
	log_free(log);
	return err ? err : MK_KAFKA_STORAGE_ERROR;
}

/*
 * Make everything appended durable: the rolled segments (the flusher's
 * queue), then the active one. The recovery point moves to the log end.
 */
static mk_err sync_all(mk_log *log)
{
	mk_err err = flusher_wait(log);
	if (err)
		return err;
	mk_strbuf msg = MK_STRBUF_INIT;
	err = mk_segment_flush(active(log), &msg);
	if (err) {
		storage_error(log, &msg);
	} else {
		log->unflushed = 0;
		set_recovery_point(log, mk_log_end_offset(log));
	}
	mk_strbuf_release(&msg);
	return err;
}

mk_err mk_log_flush(mk_log *log)
{
	mk_err err = sync_all(log);
	return err ? err : ckpt_write(log);
}

void mk_log_close(mk_log *log)
{
	if (!log)
		return;
	mk_log_flush(log);
	flusher_stop(log);
	for (size_t i = 0; i < log->nsegs; i++)
		mk_segment_close(log->segs[i]);
	log_free(log);
}

void mk_log_crash(mk_log *log, bool torn)
{
	if (!log)
		return;
	/* The flushes still queued never happen. */
	flusher_stop(log);
	/*
	 * What survives is the durable prefix: the first segment holding
	 * unflushed bytes goes back to its flushed size, and every later one
	 * (written after them, newest first) disappears.
	 */
	size_t keep = log->nsegs;
	for (size_t i = 0; i < log->nsegs; i++) {
		if (log->segs[i]->flushed < log->segs[i]->size) {
			keep = i + 1;
			break;
		}
	}
	while (log->nsegs > keep)
		mk_segment_remove(log->segs[--log->nsegs], NULL);
	for (size_t i = 0; i < log->nsegs; i++)
		mk_segment_crash(log->segs[i], torn && i + 1 == log->nsegs);
	log_free(log);
}

/* ---- small accessors ----------------------------------------------------- */

void mk_log_set_config(mk_log *log, const mk_log_config *cfg)
{
	mk_flush_pool *pool = log->cfg.pool;   /* fixed at open */
	struct mk_fdcache *fdc = log->cfg.fdcache;
	log->cfg = *cfg;
	log->cfg.pool = pool;
	log->cfg.fdcache = fdc;
}

const char *mk_log_dir(const mk_log *log)
{
	return log->dir;
}

int64_t mk_log_start_offset(const mk_log *log)
{
	return log->start_offset;
}

uint64_t mk_log_size_bytes(const mk_log *log)
{
	uint64_t n = 0;
	for (size_t i = 0; i < log->nsegs; i++)
		n += log->segs[i]->size;
	return n;
}

size_t mk_log_segment_count(const mk_log *log)
{
	return log->nsegs;
}

void mk_log_segment_info(const mk_log *log, size_t i, mk_segment_info *info)
{
	assert(i < log->nsegs);
	info->base_offset = log->segs[i]->base;
	info->size = log->segs[i]->size;
	info->active = i + 1 == log->nsegs;
}

const char *mk_log_error(const mk_log *log)
{
	return log->err.buf;
}

/* ---- appending ----------------------------------------------------------- */

/*
 * Seal the active segment and start a new one; the old one's fsync (with
 * its indexes), the directory's and the recovery point moving past it are
 * the flusher's. log->unflushed goes on counting: with flush.messages, the
 * next flush waits for the flusher anyway.
 */
static mk_err roll(mk_log *log)
{
	mk_segment *old = active(log);
	mk_strbuf msg = MK_STRBUF_INIT;
	mk_err err = mk_segment_seal(old, &msg);
	mk_segment *s = NULL;
	if (!err)
		err = mk_segment_create(log->dir, old->next_offset, log->cache, &s, &msg);
	if (err) {
		old->active = true;
		storage_error(log, &msg);
		mk_strbuf_release(&msg);
		return err;
	}
	push_segment(log, s);
	mk_strbuf_release(&msg);
	return flusher_add(log, old, s->base);
}

static mk_err append(mk_log *log, const uint8_t *frame, const mk_batch_view *b)
{
	mk_err err = flusher_error(log);
	if (err)
		return err;
	mk_segment *a = active(log);
	int64_t last = mk_batch_last_offset(b);
	/* An empty segment takes any batch: the threshold is for rolling. */
	if (a->size > 0 &&
	    ((int64_t)(a->size + b->frame_len) > log->cfg.segment_bytes ||
	     !mk_segment_can_hold(a, b->frame_len, last))) {
		if ((err = roll(log)))
			return err;
		a = active(log);
	}
	if (!mk_segment_can_hold(a, b->frame_len, last))
		return MK_MESSAGE_TOO_LARGE;
	mk_strbuf msg = MK_STRBUF_INIT;
	err = mk_segment_append(a, frame, b, log->cfg.index_interval_bytes,
				&msg);
	if (err)
		storage_error(log, &msg);
	mk_strbuf_release(&msg);
	if (err)
		return err;
	if (epoch_observe(log, b->meta.leader_epoch, b->meta.base_offset) &&
	    (err = ckpt_write(log)))
		return err;
	log->unflushed += b->record_count;
	if (log->cfg.flush_messages > 0 &&
	    log->unflushed >= log->cfg.flush_messages)
		err = sync_all(log);
	return err;
}

mk_err mk_log_append_leader(mk_log *log, uint8_t *frame, size_t len,
			    int32_t epoch, int64_t *base_out)
{
	/* A frame built here: its header is checked, its records are not
	 * walked and its CRC not computed (mk_frame_assign patches it). */
	mk_batch_view b;
	if (mk_frame_decode_header(frame, len, 0, false, &b, NULL) ||
	    b.frame_len != len)
		return MK_CORRUPT_MESSAGE;
	if (epoch < 0)
		return MK_INVALID_REQUEST;
	if (epoch < mk_log_latest_epoch(log))
		return MK_FENCED_LEADER_EPOCH;
	int64_t base = mk_log_end_offset(log);
	if (base > INT64_MAX - 1 - b.last_offset_delta)
		return MK_INVALID_REQUEST;
	mk_frame_assign(frame, len, base, epoch);
	b.meta.base_offset = base;
	b.meta.leader_epoch = epoch;
	mk_err err = append(log, frame, &b);
	if (!err && base_out)
		*base_out = base;
	return err;
}

mk_err mk_log_append_replica(mk_log *log, const uint8_t *frame, size_t len)
{
	mk_batch_view b;
	if (mk_frame_decode(frame, len, 0, &b, NULL) || b.frame_len != len)
		return MK_CORRUPT_MESSAGE;
	if (b.meta.base_offset != mk_log_end_offset(log))
		return MK_INVALID_REQUEST;
	/* Epochs never go down along a log. */
	if (b.meta.leader_epoch >= 0 &&
	    b.meta.leader_epoch < mk_log_latest_epoch(log))
		return MK_INVALID_REQUEST;
	return append(log, frame, &b);
}

/* ---- reading ------------------------------------------------------------- */

static mk_err load_indexes(mk_log *log, size_t i)
{
	mk_strbuf msg = MK_STRBUF_INIT;
	mk_err err = mk_segment_load_indexes(log->segs[i], end_limit(log, i),
					     log->cfg.index_interval_bytes,
					     &msg);
	if (err)
		storage_error(log, &msg);
	mk_strbuf_release(&msg);
	return err;
}

/*
 * After a bad frame at the very position an index entry pointed to, the
 * index may be what is wrong: rebuild it from a strict scan, which reports
 * the real damage if there is any.
 */
static mk_err rebuild_indexes(mk_log *log, size_t i)
{
	/* The segment may be queued: its index files are the flusher's. */
	mk_err err = flusher_wait(log);
	if (err)
		return err;
	mk_strbuf msg = MK_STRBUF_INIT;
	err = mk_segment_rebuild_indexes(log->segs[i], end_limit(log, i),
					 log->cfg.index_interval_bytes, &msg);
	if (err)
		storage_error(log, &msg);
	mk_strbuf_release(&msg);
	return err;
}

static mk_err bad_frame(mk_log *log, const mk_segment *s, uint64_t pos,
			const char *reason)
{
	mk_strbuf_reset(&log->err);
	mk_strbuf_addf(&log->err, "%s at byte %llu: %s", s->log_path,
		       (unsigned long long)pos, reason);
	return MK_KAFKA_STORAGE_ERROR;
}

/* Checks a forward scan makes of each batch besides its decoding. */
static const char *batch_misplaced(const mk_batch_view *b, int64_t prev_next,
				   int64_t base, int64_t limit)
{
	if (b->meta.base_offset < base)
		return "offset below the segment base";
	if (b->meta.base_offset < prev_next)
		return "offsets out of order";
	if (mk_batch_last_offset(b) >= limit)
		return "offset at or past the next segment's base";
	return NULL;
}

typedef struct {
	int64_t from, end;
	size_t max_bytes;
	size_t added;           /* bytes appended to out so far */
	bool stop;
	uint64_t bad_pos;
} read_state;

/* Segment i from pos: skip batches before rs->from, keep the rest. */
static mk_err read_segment(mk_log *log, size_t i, uint64_t pos,
			   mk_strbuf *out, read_state *rs)
{
	mk_segment *s = log->segs[i];
	int64_t limit = end_limit(log, i), prev_next = s->base;
	/* Read ahead no more than the caller may take (but a frame at least,
	 * which the reader handles), and at most 4 MiB at a time. */
	size_t chunk = rs->max_bytes > rs->added ? rs->max_bytes - rs->added : 0;
	if (chunk < 4096)
		chunk = 4096;
	if (chunk > (4u << 20))
		chunk = 4u << 20;
	mk_segment_reader r;
	mk_segment_reader_init(&r, s, pos, s->size, out, chunk);
	mk_err err = MK_OK;
	for (;;) {
		mk_batch_view b;
		bool done;
		uint64_t at = mk_segment_reader_pos(&r);
		err = mk_segment_reader_next(&r, &b, &done);
		const char *bad = err ? (r.reason ? r.reason : "bad frame") : NULL;
		if (!err && !done)
			bad = batch_misplaced(&b, prev_next, s->base, limit);
		if (bad) {
			rs->bad_pos = at;
			err = bad_frame(log, s, at, bad);
			break;
		}
		if (done)
			break;
		prev_next = mk_batch_next_offset(&b);
		if (prev_next <= rs->from) {
			mk_segment_reader_skip(&r);
			continue;
		}
		if (b.meta.base_offset >= rs->end ||
		    (rs->added > 0 && rs->added + b.frame_len > rs->max_bytes)) {
			rs->stop = true;
			break;
		}
		mk_segment_reader_keep(&r);
		rs->added += b.frame_len;
		/* The next batch starts at or after this one's end: when that
		 * is past `end`, do not even read it. */
		if (prev_next >= rs->end) {
			rs->stop = true;
			break;
		}
	}
	mk_segment_reader_finish(&r);
	return err;
}

mk_err mk_log_read(mk_log *log, int64_t from, int64_t end, size_t max_bytes,
		   mk_strbuf *out)
{
	if (from < log->start_offset || from > mk_log_end_offset(log))
		return MK_OFFSET_OUT_OF_RANGE;
	if (from >= end || from == mk_log_end_offset(log))
		return MK_OK;
	size_t orig = out->len;
	read_state rs = { from, end, max_bytes, 0, false, 0 };
	bool retried = false;
	mk_err err = MK_OK;
	for (size_t i = find_segment(log, from); i < log->nsegs && !rs.stop;) {
		mk_segment *s = log->segs[i];
		if ((err = load_indexes(log, i)))
			break;
		/* Only the first segment is entered in the middle. */
		uint64_t pos = rs.added == 0 ? mk_segment_lookup(s, from) : 0;
		size_t len_before = out->len, added_before = rs.added;
		err = read_segment(log, i, pos, out, &rs);
		if (err && !s->active && pos > 0 && rs.bad_pos == pos &&
		    !retried) {
			retried = true;
			mk_strbuf_setlen(out, len_before);
			rs.added = added_before;
			if ((err = rebuild_indexes(log, i)))
				break;
			continue;
		}
		if (err)
			break;
		i++;
	}
	if (err)
		mk_strbuf_setlen(out, orig);
	return err;
}

/* First record at or after `from` in segment i, from pos, with ts >= ts. */
static mk_err time_scan(mk_log *log, size_t i, uint64_t pos, int64_t ts,
			int64_t from, int64_t *found, uint64_t *bad_pos)
{
	mk_segment *s = log->segs[i];
	int64_t limit = end_limit(log, i), prev_next = s->base;
	mk_strbuf buf = MK_STRBUF_INIT;
	mk_segment_reader r;
	mk_segment_reader_init(&r, s, pos, s->size, &buf, 0);
	mk_err err = MK_OK;
	*found = -1;
	while (*found < 0) {
		mk_batch_view b;
		bool done;
		uint64_t at = mk_segment_reader_pos(&r);
		err = mk_segment_reader_next(&r, &b, &done);
		const char *bad = err ? (r.reason ? r.reason : "bad frame") : NULL;
		if (!err && !done)
			bad = batch_misplaced(&b, prev_next, s->base, limit);
		if (bad) {
			*bad_pos = at;
			err = bad_frame(log, s, at, bad);
			break;
		}
		if (done)
			break;
		prev_next = mk_batch_next_offset(&b);
		if (prev_next > from && b.max_timestamp >= ts) {
			mk_record_iter it;
			mk_record_view rec;
			mk_record_iter_init(&it, &b);
			while (mk_record_next(&it, &rec)) {
				if (rec.offset >= from && rec.timestamp >= ts) {
					*found = rec.offset;
					break;
				}
			}
		}
		mk_segment_reader_skip(&r);
	}
	mk_strbuf_release(&buf);
	return err;
}

mk_err mk_log_offset_for_time(mk_log *log, int64_t ts, int64_t *offset)
{
	int64_t from = log->start_offset;
	bool retried = false;
	for (size_t i = find_segment(log, from); i < log->nsegs;) {
		mk_err err = load_indexes(log, i);
		if (err)
			return err;
		uint64_t pos = mk_segment_lookup_time(log->segs[i], ts);
		uint64_t from_pos = mk_segment_lookup(log->segs[i], from);
		if (pos < from_pos)
			pos = from_pos;
		int64_t found;
		uint64_t bad_pos = 0;
		err = time_scan(log, i, pos, ts, from, &found, &bad_pos);
		if (err && !log->segs[i]->active && pos > 0 && bad_pos == pos &&
		    !retried) {
			retried = true;
			if ((err = rebuild_indexes(log, i)))
				return err;
			continue;
		}
		if (err)
			return err;
		if (found >= 0) {
			*offset = found;
			return MK_OK;
		}
		i++;
	}
	*offset = mk_log_end_offset(log);
	return MK_OK;
}

/* ---- truncation ---------------------------------------------------------- */

mk_err mk_log_truncate_to(mk_log *log, int64_t offset)
{
	if (offset >= mk_log_end_offset(log))
		return MK_OK;
	if (offset < log->start_offset || offset < log->segs[0]->base)
		return MK_INVALID_REQUEST;
	/* Nothing may be queued: segments are cut and removed. */
	mk_err err = flusher_wait(log);
	if (err)
		return err;
	size_t i = find_segment(log, offset);
	mk_segment *s = log->segs[i];
	mk_segment_cut cut;
	mk_strbuf msg = MK_STRBUF_INIT;
	err = mk_segment_check_cut(s, offset, &cut, &msg);
	if (err == MK_INVALID_REQUEST)
		goto out;
	if (err)
		goto storage;
	/* Later segments go first, newest first: a crash part-way leaves a
	 * prefix of the log, whose last segment is then recovered. */
	while (log->nsegs > i + 1) {
		mk_segment *t = log->segs[--log->nsegs];
		if ((err = mk_segment_remove(t, &msg)))
			goto storage;
	}
	if ((err = mk_segment_cut_at(s, &cut, log->cfg.index_interval_bytes,
				     &msg)))
		goto storage;
	if (mk_fsync_dir(log->dir)) {
		mk_strbuf_addf(&msg, "%s: fsync failed", log->dir);
		err = MK_KAFKA_STORAGE_ERROR;
		goto storage;
	}
	epoch_trim(log, offset);
	set_recovery_point(log, offset);
	log->unflushed = 0;
	err = ckpt_write(log);
	goto out;
storage:
	storage_error(log, &msg);
out:
	mk_strbuf_release(&msg);
	return err;
}
