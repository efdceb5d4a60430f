/*
 * log.c — one partition replica's log (log.h), the log's own part (Kafka's
 * LocalLog and UnifiedLog): its lifetime (open, close, crash, abandon),
 * append and roll, read, offset_for_time, truncate_to, the cleaner's hooks
 * (advance_start, reset_to, replace_segments) and the inspection views.
 *
 * The other pieces of the log, each with its header (struct mk_log, the
 * threads and which lock guards what: log_internal.h):
 *   - epoch_cache.h: the leader-epoch cache;
 *   - log_checkpoint.h: the log's files beside its segments (checkpoint,
 *     leader-epoch-checkpoint) and its entries in its broker directory's
 *     Kafka checkpoint files (logdir.h): formats, parse, replacement;
 *   - log_flush.h: flush scheduling (the flusher's passes in the pool,
 *     prepared segment files, the owner's flushes);
 *   - log_loader.h: open's recovery (list, checkpoint, recover, reconcile
 *     the epoch cache, check the offsets).
 *
 * Here: append rolls when needed, writes one pwrite (one pwritev for a run
 * of frames between two rolls), index entries, the epoch cache; read and
 * offset_for_time do a binary search of the segment, an index lookup and
 * a forward scan with the segment reader (one loop, seg_walk).
 *
 * Storage errors leave "FILE at byte POS: REASON" (or "FILE: what: errno")
 * in log->err, which mk_log_error() returns. A flusher failure is kept and
 * returned by every later append, roll, flush and truncation: the recovery
 * point can no longer move, and the owner takes the replica offline.
 */
#include "log.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "failpoint.h"
#include "fdcache.h"
#include "fileio.h"
#include "log_checkpoint.h"
#include "log_flush.h"
#include "log_internal.h"
#include "log_loader.h"
#include "logdir.h"
#include "search.h"
#include "segment.h"
#include "segswap.h"
#include "topic_name.h"
#include "xalloc.h"

int64_t mk_log_end_offset(const mk_log *log)
{
	return mk_log_active(log)->next_offset;
}

typedef struct {
	const mk_log *log;
	int64_t offset;
} seg_key;

static bool seg_starts_at_or_below(const void *ctx, size_t i)
{
	const seg_key *k = ctx;
	return k->log->segs[i]->base <= k->offset;
}

/* The segment holding offset: the last one whose base is <= offset. */
static size_t find_segment(const mk_log *log, int64_t offset)
{
	seg_key k = { log, offset };
	size_t after = mk_lower_bound(log->nsegs, seg_starts_at_or_below, &k);
	return after ? after - 1 : 0;
}

void mk_log_push_segment(mk_log *log, mk_segment *s)
{
	if (log->nsegs == log->segs_cap) {
		size_t cap = log->segs_cap ? log->segs_cap * 2 : 8;
		mk_segment **v = mk_xrealloc(log->segs, cap * sizeof(*v));
		log->segs = v;
		log->segs_cap = cap;
	}
	assert(log->nsegs == 0 || s->base > mk_log_active(log)->base);
	log->segs[log->nsegs++] = s;
}

mk_err mk_log_storage_error(mk_log *log, const mk_strbuf *msg)
{
	mk_strbuf_reset(&log->err);
	mk_strbuf_add(&log->err, msg->buf, msg->len);
	return MK_KAFKA_STORAGE_ERROR;
}

/* ---- the epoch cache (epoch_cache.h) ------------------------------------ */

int32_t mk_log_latest_epoch(const mk_log *log)
{
	return mk_epoch_cache_latest(&log->epochs);
}

size_t mk_log_epochs(const mk_log *log, const mk_epoch_entry **entries)
{
	*entries = log->epochs.v;
	return log->epochs.n;
}

void mk_log_end_offset_for_epoch(const mk_log *log, int32_t epoch,
				 int32_t *epoch_out, int64_t *end_out)
{
	mk_epoch_cache_end_for(&log->epochs, epoch, mk_log_end_offset(log),
			       epoch_out, end_out);
}

/* ---- open and close ------------------------------------------------------ */

/* Free the log (its segments are closed, its flusher stopped). */
static void log_free(mk_log *log)
{
	assert(!log->fl.pool);
	mk_fdcache_free(log->own_cache);
	free(log->dir);
	free(log->ckpt_path);
	free(log->epochs_path);
	free(log->topic);
	free(log->segs);
	mk_epoch_cache_free(&log->epochs);
	free(log->bases);
	mk_strbuf_release(&log->err);
	mk_strbuf_release(&log->ckpt_last);
	mk_strbuf_release(&log->epochs_last);
	mk_log_flusher_release(&log->fl);
	pthread_mutex_destroy(&log->state_lock);
	pthread_mutex_destroy(&log->ckpt_lock);
	free(log);
}

static bool config_ok(const mk_log_config *cfg)
{
	return cfg->segment_bytes > 0 && cfg->index_interval_bytes >= 0 &&
	       cfg->flush_messages >= 0;
}

/* A new log object for dir, with no segment yet; its key in the log
 * directory (logdir.h) is topic and partition. */
static mk_log *log_new(const char *dir, const mk_log_config *cfg,
		       const char *topic, int32_t partition)
{
	mk_log *log = mk_xcalloc(1, sizeof(*log));
	log->dir = mk_xstrdup(dir);
	mk_strbuf p = MK_STRBUF_INIT;
	mk_strbuf_addf(&p, "%s/" MK_LOG_CKPT_NAME, dir);
	log->ckpt_path = mk_strbuf_detach(&p, NULL);
	mk_strbuf_addf(&p, "%s/" MK_LOG_EPOCHS_NAME, dir);
	log->epochs_path = mk_strbuf_detach(&p, NULL);
	log->topic = mk_xstrdup(topic);
	log->partition = partition;
	log->cfg = *cfg;
	log->cache = cfg->fdcache;
	if (!log->cache) {
		log->own_cache = mk_fdcache_new(0);
		log->cache = log->own_cache;
	}
	mk_strbuf_init(&log->err, 0);
	mk_strbuf_init(&log->ckpt_last, 0);
	mk_strbuf_init(&log->epochs_last, 0);
	pthread_mutex_init(&log->state_lock, NULL);
	pthread_mutex_init(&log->ckpt_lock, NULL);
	mk_epoch_cache_init(&log->epochs, &log->state_lock);
	mk_log_flusher_init(&log->fl);
	log->prep_base = -1;
	return log;
}

mk_err mk_log_open(const char *dir, const mk_log_config *cfg, mk_log **out,
		   mk_strbuf *why)
{
	*out = NULL;
	mk_log_config defaults = { 1048576, 4096, 0, NULL, NULL };
	if (!cfg)
		cfg = &defaults;
	if (!config_ok(cfg))
		return mk_error(why, MK_INVALID_CONFIG, "invalid log configuration");
	/* DIR's name is the key of its entries in the parent's checkpoint
	 * files (logdir.h), as Kafka names a log directory. */
	const char *slash = strrchr(dir, '/');
	char topic[MK_TOPIC_NAME_MAX + 1];
	int32_t partition;
	if (!mk_logdir_parse_name(slash ? slash + 1 : dir, topic, sizeof(topic),
				  &partition))
		return mk_error(why, MK_INVALID_CONFIG, "%s: not a TOPIC-PARTITION directory name (its offsets are kept under that key in its parent's checkpoint files)",
				dir);
	if (mk_mkdirs(dir))
		return mk_io_error(why, dir, "cannot create");
	mk_strbuf parent = MK_STRBUF_INIT;
	if (slash)
		mk_strbuf_add(&parent, dir, slash == dir ? 1 : (size_t)(slash - dir));
	else
		mk_strbuf_addch(&parent, '.');
	mk_log *log = log_new(dir, cfg, topic, partition);
	mk_err err = mk_logdir_acquire(parent.buf, cfg->pool, &log->logdir, why);
	mk_strbuf_release(&parent);
	if (!err)
		err = mk_log_load(log, why);     /* log_loader.h */
	if (err) {
		for (size_t i = 0; i < log->nsegs; i++)
			mk_segment_close(log->segs[i]);
		mk_logdir_release(log->logdir, false);
		log_free(log);
	} else {
		*out = log;
	}
	return err;
}

void mk_log_close(mk_log *log)
{
	if (!log)
		return;
	mk_log_flush(log);
	mk_log_flusher_stop(log);
	if (log->prep_asked)
		mk_segment_discard_prepared(log->dir);
	for (size_t i = 0; i < log->nsegs; i++)
		mk_segment_close(log->segs[i]);
	mk_logdir_release(log->logdir, true);
	log_free(log);
}

void mk_log_crash(mk_log *log, bool torn)
{
	if (!log)
		return;
	/* The flushes still queued never happen. */
	mk_log_flusher_stop(log);
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
	/* The log directory's files stay as they are, as a kill leaves them
	 * (what its table holds of this log is true: below what was fsynced). */
	mk_logdir_release(log->logdir, false);
	log_free(log);
}

void mk_log_abandon(mk_log *log)
{
	if (!log)
		return;
	mk_log_flusher_stop(log);
	for (size_t i = 0; i < log->nsegs; i++)
		mk_segment_close(log->segs[i]);
	mk_logdir_release(log->logdir, false);
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

struct mk_fdcache *mk_log_fdcache(const mk_log *log)
{
	return log->cache;
}

const char *mk_log_dir(const mk_log *log)
{
	return log->dir;
}

struct mk_logdir *mk_log_logdir(const mk_log *log)
{
	return log->logdir;
}

void mk_log_key(const mk_log *log, const char **topic, int32_t *partition)
{
	*topic = log->topic;
	*partition = log->partition;
}

int64_t mk_log_start_offset(const mk_log *log)
{
	return log->start_offset;
}

uint64_t mk_log_size_bytes(const mk_log *log)
{
	uint64_t n = 0;
	for (size_t i = 0; i < log->nsegs; i++) {
		/* A segment opened unsized at mount learns its size now (a
		 * failure leaves 0: the next read of it reports the error). */
		mk_segment_know_size(log->segs[i], NULL);
		n += log->segs[i]->size;
	}
	return n;
}

uint64_t mk_log_write_calls(const mk_log *log)
{
	return log->write_calls;
}

uint64_t mk_log_dir_syncs(const mk_log *log)
{
	return log->dir_syncs;
}

size_t mk_log_segment_count(const mk_log *log)
{
	return log->nsegs;
}

void mk_log_write_index_pending(mk_log *log)
{
	if (log->nsegs)
		mk_segment_write_index_pending(mk_log_active(log), NULL);
}

void mk_log_segment_info(const mk_log *log, size_t i, mk_segment_info *info)
{
	assert(i < log->nsegs);
	mk_segment_know_size(log->segs[i], NULL);   /* as mk_log_size_bytes */
	info->base_offset = log->segs[i]->base;
	info->size = log->segs[i]->size;
	mk_segment *s = log->segs[i];
	if (s->txnindex_size < 0)          /* a stat once, not per listing */
		s->txnindex_size = (int64_t)mk_txnindex_file_size(s->txnindex_path);
	info->txnindex_size = (uint64_t)s->txnindex_size;
	info->active = i + 1 == log->nsegs;
}

/* ---- the transaction index ------------------------------------------------ */

mk_err mk_log_sync_txnindex(mk_log *log, const mk_aborted_list *l,
			    mk_strbuf *why)
{
	mk_strbuf bytes = MK_STRBUF_INIT;
	mk_err first = MK_OK;
	/* Every segment, past a failing one too: the first error is told. */
	for (size_t i = 0; i < log->nsegs; i++) {
		mk_segment *s = log->segs[i];
		int64_t to = i + 1 < log->nsegs ? log->segs[i + 1]->base : INT64_MAX;
		mk_strbuf_reset(&bytes);
		mk_txnindex_encode(l, s->base, to, &bytes);
		mk_err err = mk_txnindex_file_write(s->txnindex_path, bytes.buf,
						    bytes.len, first ? NULL : why);
		s->txnindex_size = err ? -1 : (int64_t)bytes.len;
		if (err && !first)
			first = err;
	}
	mk_strbuf_release(&bytes);
	return first;
}

mk_err mk_log_add_aborted(mk_log *log, const mk_aborted_txn *t, mk_strbuf *why)
{
	assert(log->nsegs > 0);
	size_t i = log->nsegs - 1;
	while (i > 0 && log->segs[i]->base > t->last)
		i--;
	mk_segment *s = log->segs[i];
	uint8_t e[MK_TXNINDEX_ENTRY];
	mk_txnindex_put(t, e);
	mk_err err = mk_txnindex_file_append(s->txnindex_path, e, sizeof(e), why);
	if (err)
		s->txnindex_size = -1;
	else if (s->txnindex_size >= 0)
		s->txnindex_size += (int64_t)sizeof(e);
	return err;
}

int64_t mk_log_base_offset(const mk_log *log)
{
	return log->segs[0]->base;
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
	mk_segment *old = mk_log_active(log);
	mk_strbuf msg = MK_STRBUF_INIT;
	MK_FAILPOINT("log.roll.before-seal");
	mk_err err = mk_segment_seal(old, &msg);
	mk_segment *s = NULL;
	if (!err) {
		MK_FAILPOINT("log.roll.after-seal");
		err = mk_log_prep_take(log)
			? mk_segment_create_prepared(log->dir, old->next_offset,
						     log->cache, &s, &msg)
			: mk_segment_create(log->dir, old->next_offset,
					    log->cache, &s, &msg);
	}
	if (err) {
		old->active = true;
		mk_log_storage_error(log, &msg);
		mk_strbuf_release(&msg);
		return err;
	}
	MK_FAILPOINT("log.roll.after-create");
	mk_log_push_segment(log, s);
	log->dir_dirty = true;
	mk_strbuf_release(&msg);
	/* A log that rolled is written to: its next files get made now. */
	mk_log_prep_request(log);
	return mk_log_flusher_add(log, old, s->base);
}

/*
 * Append frames [0, n) (views b, offsets following the log end), in runs:
 * a frame that would pass segment.bytes rolls first, exactly as when they
 * come one at a time, and the frames of one run (up to the next roll) are
 * written with one system call. *done: how many were appended (a failure
 * part-way leaves the earlier runs appended).
 */
static mk_err append_frames(mk_log *log, const uint8_t *const *frames,
			    const mk_batch_view *b, size_t n, size_t *done)
{
	*done = 0;
	size_t i = 0;
	while (i < n) {
		mk_err err = mk_log_flusher_error(log);
		if (err)
			return err;
		mk_segment *a = mk_log_active(log);
		int64_t last = mk_batch_last_offset(&b[i]);
		/* An empty segment takes any batch: the threshold is for
		 * rolling. */
		if (a->size > 0 &&
		    ((int64_t)(a->size + b[i].frame_len) > log->cfg.segment_bytes ||
		     !mk_segment_can_hold(a, b[i].frame_len, last))) {
			if ((err = roll(log)))
				return err;
			a = mk_log_active(log);
		}
		if (!mk_segment_can_hold(a, b[i].frame_len, last))
			return MK_MESSAGE_TOO_LARGE;
		/* The run: the frames after i that fit without a roll. */
		size_t j = i + 1;
		uint64_t run = b[i].frame_len;
		while (j < n && j - i < MK_SEGMENT_APPEND_MAX &&
		       (int64_t)(a->size + run + b[j].frame_len) <=
			       log->cfg.segment_bytes &&
		       mk_segment_can_hold(a, run + b[j].frame_len,
					   mk_batch_last_offset(&b[j])))
			run += b[j++].frame_len;
		/* Half full: the next segment's files get made ahead. */
		if (log->prep_base != a->base &&
		    (int64_t)(a->size + run) * 2 >= log->cfg.segment_bytes)
			mk_log_prep_request(log);
		/* The runway (segment.h) never runs past where the segment
		 * rolls. */
		a->fill_limit = (uint64_t)log->cfg.segment_bytes;
		mk_strbuf msg = MK_STRBUF_INIT;
		err = mk_segment_append_many(a, frames + i, b + i, j - i,
					     log->cfg.index_interval_bytes, &msg);
		log->write_calls++;
		if (err)
			mk_log_storage_error(log, &msg);
		mk_strbuf_release(&msg);
		if (err)
			return err;
		*done = j;
		for (size_t k = i; k < j; k++) {
			if (mk_epoch_cache_observe(&log->epochs,
						   b[k].meta.leader_epoch,
						   b[k].meta.base_offset) &&
			    (err = mk_log_ckpt_write(log, false)))
				return err;
			log->unflushed += b[k].record_count;
		}
		if (log->cfg.flush_messages > 0 &&
		    log->unflushed >= log->cfg.flush_messages &&
		    (err = mk_log_sync_all(log)))
			return err;
		i = j;
	}
	return MK_OK;
}

static mk_err append(mk_log *log, const uint8_t *frame, const mk_batch_view *b)
{
	size_t done;
	return append_frames(log, &frame, b, 1, &done);
}

mk_err mk_log_append_leader_many(mk_log *log, uint8_t *const *frames,
				 const size_t *lens, size_t n, int32_t epoch,
				 int64_t *bases, size_t *appended)
{
	*appended = 0;
	if (n == 0)
		return MK_OK;
	if (n > MK_LOG_APPEND_MAX)
		return MK_INVALID_REQUEST;
	/* Frames built here: each header is checked, the records are not
	 * walked and no CRC is computed (base offset and epoch lie outside
	 * it: mk_frame_assign only stores them). */
	mk_batch_view b[MK_LOG_APPEND_MAX];
	for (size_t i = 0; i < n; i++)
		if (mk_frame_decode_header(frames[i], lens[i], 0, false, &b[i],
					   NULL) || b[i].frame_len != lens[i])
			return MK_CORRUPT_MESSAGE;
	if (epoch < 0)
		return MK_INVALID_REQUEST;
	if (epoch < mk_log_latest_epoch(log))
		return MK_FENCED_LEADER_EPOCH;
	int64_t base = mk_log_end_offset(log);
	for (size_t i = 0; i < n; i++) {
		if (base > INT64_MAX - 1 - b[i].last_offset_delta)
			return MK_INVALID_REQUEST;
		b[i].meta.base_offset = base;
		b[i].meta.leader_epoch = epoch;
		base = mk_batch_next_offset(&b[i]);
	}
	for (size_t i = 0; i < n; i++) {
		mk_frame_assign(frames[i], lens[i], b[i].meta.base_offset, epoch);
		bases[i] = b[i].meta.base_offset;
	}
	return append_frames(log, (const uint8_t *const *)frames, b, n,
			     appended);
}

mk_err mk_log_append_leader(mk_log *log, uint8_t *frame, size_t len,
			    int32_t epoch, int64_t *base_out)
{
	int64_t base;
	size_t done;
	mk_err err = mk_log_append_leader_many(log, &frame, &len, 1, epoch,
					       &base, &done);
	if (!err && base_out)
		*base_out = base;
	return err;
}

/* A follower's copy of a decoded frame: at or past the log end (above it:
 * the leader's log was compacted there), and epochs never go down along a
 * log. */
static mk_err append_copy(mk_log *log, const uint8_t *frame,
			  const mk_batch_view *b)
{
	if (b->meta.base_offset < mk_log_end_offset(log))
		return MK_INVALID_REQUEST;
	if (b->meta.leader_epoch >= 0 &&
	    b->meta.leader_epoch < mk_log_latest_epoch(log))
		return MK_INVALID_REQUEST;
	return append(log, frame, b);
}

mk_err mk_log_append_replica(mk_log *log, const uint8_t *frame, size_t len)
{
	mk_batch_view b;
	if (mk_frame_decode(frame, len, 0, &b, NULL) || b.frame_len != len)
		return MK_CORRUPT_MESSAGE;
	return append_copy(log, frame, &b);
}

mk_err mk_log_append_replica_trusted(mk_log *log, const uint8_t *frame,
				     size_t len)
{
	mk_batch_view b;
	if (mk_frame_decode_header(frame, len, 0, false, &b, NULL) ||
	    b.frame_len != len)
		return MK_CORRUPT_MESSAGE;
	return append_copy(log, frame, &b);
}

/* ---- reading ------------------------------------------------------------- */

static mk_err load_indexes(mk_log *log, size_t i)
{
	mk_strbuf msg = MK_STRBUF_INIT;
	mk_err err = mk_segment_load_indexes(log->segs[i], mk_log_end_limit(log, i),
					     log->cfg.index_interval_bytes,
					     &msg);
	if (err)
		mk_log_storage_error(log, &msg);
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
	mk_err err = mk_log_flusher_wait(log);
	if (err)
		return err;
	mk_strbuf msg = MK_STRBUF_INIT;
	err = mk_segment_rebuild_indexes(log->segs[i], mk_log_end_limit(log, i),
					 log->cfg.index_interval_bytes, &msg);
	if (err)
		mk_log_storage_error(log, &msg);
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

/*
 * A forward walk over segment i's batches from a position, each one
 * decoded (CRC checked) and placed by mk_batch_misplaced (segment.h), its
 * epoch checked against the epoch cache's latest too: the one loop the
 * reads, the time lookup and the batch list share. The reader stays the
 * caller's to keep, skip or finish each batch.
 */
typedef struct {
	mk_log *log;
	mk_segment *s;
	mk_segment_reader r;
	mk_batch_place place;   /* place.next: after the last batch */
	uint64_t at;            /* position of the batch last returned (or of
				 * the bad one) */
} seg_walk;

static void walk_init(seg_walk *w, mk_log *log, size_t i, uint64_t pos,
		      mk_strbuf *buf, size_t max_chunk)
{
	w->log = log;
	w->s = log->segs[i];
	mk_batch_place_init(&w->place, w->s->base, mk_log_end_limit(log, i),
			    mk_log_latest_epoch(log));
	w->at = pos;
	mk_segment_reader_init(&w->r, w->s, pos, w->s->size, buf, max_chunk);
}

/* The next batch into *b, or *done at the segment's end. A bad frame or a
 * misplaced batch is KAFKA_STORAGE_ERROR, said in the log's error. */
static mk_err walk_next(seg_walk *w, mk_batch_view *b, bool *done)
{
	w->at = mk_segment_reader_pos(&w->r);
	mk_err err = mk_segment_reader_next(&w->r, b, done);
	const char *bad = err ? (w->r.reason ? w->r.reason : "bad frame") : NULL;
	if (!err && !*done)
		bad = mk_batch_misplaced(&w->place, b);
	if (bad)
		return bad_frame(w->log, w->s, w->at, bad);
	return MK_OK;
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
	/* Read ahead no more than the caller may take (but a frame at least,
	 * which the reader handles), and at most 4 MiB at a time. */
	size_t chunk = rs->max_bytes > rs->added ? rs->max_bytes - rs->added : 0;
	if (chunk < 4096)
		chunk = 4096;
	if (chunk > (4u << 20))
		chunk = 4u << 20;
	seg_walk w;
	walk_init(&w, log, i, pos, out, chunk);
	mk_err err = MK_OK;
	for (;;) {
		mk_batch_view b;
		bool done;
		if ((err = walk_next(&w, &b, &done))) {
			rs->bad_pos = w.at;
			break;
		}
		if (done)
			break;
		if (w.place.next <= rs->from) {
			mk_segment_reader_skip(&w.r);
			continue;
		}
		if (b.meta.base_offset >= rs->end ||
		    (rs->added > 0 && rs->added + b.frame_len > rs->max_bytes)) {
			rs->stop = true;
			break;
		}
		mk_segment_reader_keep(&w.r);
		rs->added += b.frame_len;
		/* The next batch starts at or after this one's end: when that
		 * is past `end`, do not even read it. */
		if (w.place.next >= rs->end) {
			rs->stop = true;
			break;
		}
	}
	mk_segment_reader_finish(&w.r);
	return err;
}

/*
 * Read-ahead for sequential fetches. Each segment is a file of its own,
 * whose kernel readahead starts small again at every segment (1 MiB by
 * default), so a fetch of max_bytes from position pos of segment i asks
 * the kernel (POSIX_FADV_WILLNEED: the reads start, nobody waits) for
 * the max_bytes that lie READ_AHEAD_FETCHES fetches further on. A reader
 * fetching one range after the other so has the next few in the page
 * cache or on their way, as a reader of one plain file has; each byte is
 * advised about once, so a warm cache costs one call per fetch.
 */
#define READ_AHEAD_MIN (64u << 10)     /* smaller fetches do not */
#define READ_AHEAD_FETCHES 3

static void read_ahead(mk_log *log, size_t i, uint64_t pos,
		       size_t max_bytes)
{
	uint64_t skip = (uint64_t)max_bytes * READ_AHEAD_FETCHES;
	size_t bytes = max_bytes;
	for (; i < log->nsegs && bytes; i++, pos = 0) {
		mk_segment *s = log->segs[i];
		if (pos >= s->size)
			continue;
		if (s->size - pos <= skip) {
			skip -= s->size - pos;
			continue;
		}
		pos += skip;
		skip = 0;
		uint64_t n = s->size - pos < bytes ? s->size - pos : bytes;
		mk_segment_read_ahead(s, pos, n);
		bytes -= (size_t)n;
	}
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
		if (rs.added == 0 && max_bytes >= READ_AHEAD_MIN)
			read_ahead(log, i, pos, max_bytes);
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
	mk_strbuf buf = MK_STRBUF_INIT;
	seg_walk w;
	walk_init(&w, log, i, pos, &buf, 0);
	mk_err err = MK_OK;
	*found = -1;
	while (*found < 0) {
		mk_batch_view b;
		bool done;
		if ((err = walk_next(&w, &b, &done))) {
			*bad_pos = w.at;
			break;
		}
		if (done)
			break;
		if (w.place.next > from && b.max_timestamp >= ts) {
			mk_record_iter it;
			mk_record_view rec;
			mk_record_iter_init(&it, &b);
			while (mk_record_next(&it, &rec)) {
				if (rec.offset >= from && rec.timestamp >= ts) {
					*found = rec.offset;
					break;
				}
			}
			mk_record_iter_release(&it);
		}
		mk_segment_reader_skip(&w.r);
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
	mk_err err = mk_log_flusher_wait(log);
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
	/*
	 * Decide, persist, act: the checkpoint first stops listing the
	 * segments that go (its recovery point drops to the cut), so that a
	 * crash part-way never finds a listed segment missing.
	 */
	pthread_mutex_lock(&log->state_lock);
	bool lower = log->recovery_point > offset;
	if (lower)
		log->recovery_point = offset;
	pthread_mutex_unlock(&log->state_lock);
	if (lower && (err = mk_log_ckpt_write(log, true)))
		goto out;
	/* Later segments go first, newest first: a crash part-way leaves a
	 * prefix of the log, whose last segment is then recovered. */
	while (log->nsegs > i + 1) {
		mk_segment *t = log->segs[--log->nsegs];
		if ((err = mk_segment_remove(t, &msg)))
			goto storage;
	}
	MK_FAILPOINT("log.truncate.before-cut");
	if ((err = mk_segment_cut_at(s, &cut, log->cfg.index_interval_bytes,
				     &msg)))
		goto storage;
	MK_FAILPOINT("log.truncate.after-cut");
	if (mk_fsync_dir(log->dir)) {
		mk_strbuf_addf(&msg, "%s: fsync failed", log->dir);
		err = MK_KAFKA_STORAGE_ERROR;
		goto storage;
	}
	mk_epoch_cache_trim(&log->epochs, offset);
	mk_log_set_recovery_point(log, offset);
	log->unflushed = 0;
	err = mk_log_ckpt_write(log, false);
	MK_FAILPOINT("log.truncate.done");
	goto out;
storage:
	mk_log_storage_error(log, &msg);
out:
	mk_strbuf_release(&msg);
	return err;
}

/* ---- the cleaner's hooks ------------------------------------------------- */

mk_err mk_log_segment_max_timestamp(mk_log *log, size_t i, int64_t *ts)
{
	assert(i < log->nsegs);
	mk_err err = load_indexes(log, i);
	if (!err)
		*ts = mk_segment_max_timestamp(log->segs[i]);
	return err;
}

static void set_start(mk_log *log, int64_t offset)
{
	pthread_mutex_lock(&log->state_lock);
	log->start_offset = offset;
	pthread_mutex_unlock(&log->state_lock);
}

mk_err mk_log_advance_start(mk_log *log, int64_t offset)
{
	if (offset > mk_log_end_offset(log))
		return MK_OFFSET_OUT_OF_RANGE;
	mk_err err = mk_log_flusher_wait(log);
	if (err)
		return err;
	/* The start passes only fsynced records: a crash that loses an
	 * unflushed tail then never leaves the start past the log's end,
	 * which the next open refuses as damage (open_check_offsets). */
	if (offset > log->recovery_point && (err = mk_log_sync_all(log)))
		return err;
	if (offset > log->start_offset) {
		set_start(log, offset);
		if ((err = mk_log_ckpt_write(log, true)))
			return err;
	}
	/* Closed segments wholly below the start: the next one's base is at
	 * or below it. Oldest first, so what stays is always a suffix. */
	size_t n = 0;
	while (n + 1 < log->nsegs && log->segs[n + 1]->base <= log->start_offset)
		n++;
	if (n == 0)
		return MK_OK;
	mk_strbuf msg = MK_STRBUF_INIT;
	size_t done = 0;
	while (done < n && !err) {
		err = mk_segment_remove(log->segs[done], &msg);
		done++;   /* removed or not, the segment object is freed */
	}
	memmove(log->segs, log->segs + done,
		(log->nsegs - done) * sizeof(*log->segs));
	log->nsegs -= done;
	if (!err && mk_fsync_dir(log->dir)) {
		mk_strbuf_addf(&msg, "%s: fsync failed", log->dir);
		err = MK_KAFKA_STORAGE_ERROR;
	}
	if (err)
		mk_log_storage_error(log, &msg);
	mk_strbuf_release(&msg);
	return err;
}

mk_err mk_log_reset_to(mk_log *log, int64_t offset)
{
	if (offset < 0)
		return MK_INVALID_REQUEST;
	if (offset <= mk_log_end_offset(log))
		return MK_INVALID_REQUEST;   /* a reset goes past the log */
	mk_err err = mk_log_flusher_wait(log);
	if (err)
		return err;
	/*
	 * Act in the order that keeps the checkpoint true at every instant:
	 * the new empty segment at offset first (a crash now leaves it past
	 * a gap, and recovery deletes it), then the checkpoint naming it
	 * (start and recovery point at offset, which is then the log's end:
	 * an open recovers from it and leaves the old segments below the
	 * start), then the old segments go.
	 */
	mk_strbuf msg = MK_STRBUF_INIT;
	mk_segment *s = NULL;
	err = mk_segment_create(log->dir, offset, log->cache, &s, &msg);
	if (!err && mk_fsync_dir(log->dir)) {
		mk_strbuf_addf(&msg, "%s: fsync failed", log->dir);
		err = MK_KAFKA_STORAGE_ERROR;
	}
	if (err) {
		if (s)
			mk_segment_remove(s, NULL);
		mk_log_storage_error(log, &msg);
		mk_strbuf_release(&msg);
		return err;
	}
	MK_FAILPOINT("log.reset.after-create");
	size_t nold = log->nsegs;
	mk_log_push_segment(log, s);
	pthread_mutex_lock(&log->state_lock);
	log->start_offset = offset;
	log->recovery_point = offset;
	mk_epoch_cache_clear_locked(&log->epochs);
	pthread_mutex_unlock(&log->state_lock);
	if ((err = mk_log_ckpt_write(log, true))) {
		mk_strbuf_release(&msg);
		return err;
	}
	MK_FAILPOINT("log.reset.after-checkpoint");
	/* Oldest first, so that what stays is always a suffix. */
	size_t done = 0;
	while (done < nold && !err)
		err = mk_segment_remove(log->segs[done++], &msg);
	while (done < nold)        /* after a failure: just free */
		mk_segment_close(log->segs[done++]);
	memmove(log->segs, log->segs + nold, sizeof(*log->segs));
	log->nsegs = 1;
	if (!err && mk_fsync_dir(log->dir)) {
		mk_strbuf_addf(&msg, "%s: fsync failed", log->dir);
		err = MK_KAFKA_STORAGE_ERROR;
	}
	if (err)
		mk_log_storage_error(log, &msg);
	log->unflushed = 0;
	mk_strbuf_release(&msg);
	return err;
}

mk_err mk_log_replace_segments(mk_log *log, size_t first, size_t n,
			       const int64_t *news, size_t nnew,
			       const char *state, size_t state_len)
{
	if (n == 0 || first + n >= log->nsegs)
		return MK_INVALID_REQUEST;
	mk_err err = mk_log_flusher_wait(log);
	if (err)
		return err;
	int64_t *olds = mk_xmalloc(n * sizeof(*olds));
	mk_segment **fresh = mk_xcalloc(nnew ? nnew : 1, sizeof(*fresh));
	for (size_t i = 0; i < n; i++)
		olds[i] = log->segs[first + i]->base;
	mk_strbuf msg = MK_STRBUF_INIT;
	/* The checkpoint first stops listing the segments the swap replaces,
	 * so that a crash at any step of the swap never finds a listed
	 * segment missing at open; it lists the new ones once they are in. */
	err = mk_log_ckpt_write_without(log, first, n, &msg);
	if (err) {
		mk_log_storage_error(log, &msg);
		goto out;
	}
	err = mk_segswap_commit(log->dir, olds, n, news, nnew, state,
				state_len, &msg);
	for (size_t i = 0; i < nnew && !err; i++)
		err = mk_segment_open_closed(log->dir, news[i], log->cache,
					     &fresh[i], &msg);
	if (err) {
		for (size_t i = 0; i < nnew; i++)
			mk_segment_close(fresh[i]);
		mk_log_storage_error(log, &msg);
		goto out;
	}
	/* The old segments' files are gone or replaced: close, splice. */
	for (size_t i = 0; i < n; i++)
		mk_segment_close(log->segs[first + i]);
	if (nnew != n) {
		size_t need = log->nsegs - n + nnew;
		if (need > log->segs_cap) {
			mk_segment **v = mk_xrealloc(log->segs, need * sizeof(*v));
			log->segs = v;
			log->segs_cap = need;
		}
		memmove(log->segs + first + nnew, log->segs + first + n,
			(log->nsegs - first - n) * sizeof(*log->segs));
		log->nsegs = need;
	}
	for (size_t i = 0; i < nnew; i++)
		log->segs[first + i] = fresh[i];
	err = mk_log_ckpt_write(log, false);
out:
	free(olds);
	free(fresh);
	mk_strbuf_release(&msg);
	return err;
}
/* ---- inspection ------------------------------------------------------------ */

static void batch_info_of(const mk_segment *s, uint64_t pos,
			  const mk_batch_view *b, uint32_t crc,
			  mk_batch_info *bi)
{
	bi->base_offset = b->meta.base_offset;
	bi->last_offset = mk_batch_last_offset(b);
	bi->count = b->record_count;
	bi->bytes = (uint32_t)b->frame_len;
	bi->segment = s->base;
	bi->position = pos;
	bi->leader_epoch = b->meta.leader_epoch;
	bi->producer_id = b->meta.producer_id;
	bi->producer_epoch = b->meta.producer_epoch;
	bi->base_sequence = b->meta.base_sequence;
	bi->flags = b->meta.flags;
	bi->max_timestamp = b->max_timestamp;
	bi->crc = crc;
	bi->codec = b->meta.codec;
}

mk_err mk_log_batches(mk_log *log, int64_t from, size_t max,
		      mk_batch_info **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (from < log->start_offset || from > mk_log_end_offset(log))
		return MK_OFFSET_OUT_OF_RANGE;
	size_t cap = 0;
	mk_err err = MK_OK;
	mk_strbuf buf = MK_STRBUF_INIT;
	for (size_t i = find_segment(log, from); i < log->nsegs && *n < max; i++) {
		mk_segment *s = log->segs[i];
		if ((err = load_indexes(log, i)))
			break;
		uint64_t pos = *n == 0 ? mk_segment_lookup(s, from) : 0;
		seg_walk w;
		mk_strbuf_reset(&buf);
		walk_init(&w, log, i, pos, &buf, 0);
		while (*n < max) {
			mk_batch_view b;
			bool done;
			if ((err = walk_next(&w, &b, &done)) || done)
				break;
			if (w.place.next > from) {
				if (*n == cap) {
					cap = cap ? cap * 2 : 64;
					*out = mk_xrealloc(*out, cap * sizeof(**out));
				}
				batch_info_of(s, w.at, &b, mk_segment_reader_crc(&w.r),
					      &(*out)[(*n)++]);
			}
			mk_segment_reader_skip(&w.r);
		}
		mk_segment_reader_finish(&w.r);
		if (err)
			break;
	}
	mk_strbuf_release(&buf);
	if (err) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return err;
}

mk_err mk_log_index_rows(mk_log *log, int64_t segment, mk_index_row **out,
			 size_t *n)
{
	*out = NULL;
	*n = 0;
	for (size_t i = 0; i < log->nsegs; i++) {
		mk_segment *s = log->segs[i];
		if (s->base != segment)
			continue;
		mk_err err = load_indexes(log, i);
		if (err)
			return err;
		mk_log_write_index_pending(log);
		size_t count = mk_segment_index_count(s);
		*out = mk_xcalloc(count ? count : 1, sizeof(**out));
		for (size_t k = 0; k < count; k++)
			mk_segment_index_entry(s, k, &(*out)[k].offset,
					       &(*out)[k].position,
					       &(*out)[k].timestamp);
		*n = count;
		return MK_OK;
	}
	return MK_INVALID_REQUEST;
}
