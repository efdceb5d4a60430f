/*
 * log_loader.c — open's recovery of a log (log_loader.h): the steps of
 * mk_log_load, each a function sharing what they gather in an `opening`.
 */
#include "log_loader.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "log_checkpoint.h"
#include "log_internal.h"
#include "parse.h"
#include "segment.h"
#include "segswap.h"
#include "xalloc.h"

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* The base offsets of the NNNNNNNNNNNNNNNNNNNN.log files in dir, sorted. */
static mk_err list_segments(const char *dir, int64_t **out, size_t *n,
			    bool *prepared, mk_strbuf *why)
{
	*out = NULL;
	*n = 0;
	*prepared = false;
	DIR *d = opendir(dir);
	if (!d)
		return mk_io_error(why, dir, "cannot list");
	size_t cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *name = de->d_name;
		if (mk_segment_prepared_name(name))
			*prepared = true;
		size_t len = strlen(name);
		/* A time index of the earlier three-file format: the .index
		 * carries the timestamps now (index.h). Best effort. */
		if (len == 30 && !strcmp(name + 20, ".timeindex"))
			(void)unlinkat(dirfd(d), name, 0);
		if (len != 24 || strcmp(name + 20, ".log") != 0)
			continue;
		char digits[21];
		int64_t v;
		memcpy(digits, name, 20);
		digits[20] = '\0';
		if (name[0] == '-' || !mk_parse_range(digits, 0, INT64_MAX, &v))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			*out = mk_xrealloc(*out, cap * sizeof(**out));
		}
		(*out)[(*n)++] = v;
	}
	closedir(d);
	if (*n)
		qsort(*out, *n, sizeof(**out), cmp_i64);
	return MK_OK;
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
	if (mk_fsync_dir(dir))
		return mk_error(why, MK_KAFKA_STORAGE_ERROR, "%s: fsync failed", dir);
	return MK_OK;
}

/* What mk_log_open gathers on its way, for its steps to share. */
typedef struct {
	const char *dir;            /* log->dir */
	const mk_log_config *cfg;   /* &log->cfg */
	int64_t *bases;             /* the NNN.log files, ascending */
	size_t nbases;
	bool missing;               /* no checkpoint file */
	bool prepared;              /* prepared segment files left over */
	mk_strbuf text;             /* the checkpoint as read */
	mk_log_checkpoint ck;       /* and as parsed */
	size_t first;               /* the first segment to recover */
	mk_epoch_seen seen;         /* epochs in the recovered segments */
	mk_strbuf scratch;
} opening;

/* Read and parse the checkpoint, when there is one. */
static mk_err open_read_checkpoint(mk_log *log, opening *o, mk_strbuf *why)
{
	if (mk_file_read(log->ckpt_path, &o->text, &o->missing))
		return mk_io_error(why, log->ckpt_path, "read failed");
	if (o->missing)
		return MK_OK;
	/* The parse cuts its text into lines: o->text stays as read, for
	 * open_write_checkpoint to compare (an unchanged checkpoint is not
	 * rewritten, and a mount then costs no checkpoint fsync). */
	char *copy = mk_xstrdup(o->text.buf);
	mk_err err = mk_log_checkpoint_parse(log->ckpt_path, copy, &o->ck,
					       why);
	free(copy);
	return err;
}

/* Every durable segment the checkpoint lists is there: a missing one is
 * damage (a gap in the log), never silently skipped. */
static mk_err open_check_listed(const opening *o, mk_strbuf *why)
{
	for (size_t i = 0, j = 0; i < o->ck.nbases; i++) {
		if (o->ck.bases[i] < o->ck.start_offset ||
		    o->ck.bases[i] >= o->ck.recovery_point)
			continue;
		while (j < o->nbases && o->bases[j] < o->ck.bases[i])
			j++;
		if (j == o->nbases || o->bases[j] != o->ck.bases[i])
			return mk_error(why, MK_KAFKA_STORAGE_ERROR, "%s/%020lld.log is missing (the checkpoint lists it): the log would have a gap",
					o->dir, (long long)o->ck.bases[i]);
	}
	return MK_OK;
}

/*
 * Recovery starts at the segment holding the recovery point: normally
 * the active one; earlier when rolled segments were still waiting for
 * the flusher. Without a checkpoint (a new log, or outside damage),
 * at the active one.
 */
static size_t open_first_to_recover(const opening *o)
{
	size_t first = o->nbases ? o->nbases - 1 : 0;
	while (!o->missing && first > 0 &&
	       o->bases[first] > o->ck.recovery_point)
		first--;
	return first;
}

/* Closed segments below the first to recover: opened, never read. */
static mk_err open_closed_segments(mk_log *log, opening *o, mk_strbuf *why)
{
	(void)why;
	/* The listing found them; their sizes are learnt at first use. */
	for (size_t i = 0; i < o->first; i++) {
		mk_segment *s;
		mk_segment_open_unsized(o->dir, o->bases[i], log->cache, &s);
		mk_log_push_segment(log, s);
	}
	return MK_OK;
}

/*
 * From the first to recover on, each segment is recovered (its torn or
 * corrupt tail cut, its indexes rebuilt, fsynced). One that had to be cut,
 * or that ends short of the next one's base, ends the log: the segments
 * after it were written after data now lost, and are deleted. The others
 * are closed again, durable now.
 */
static mk_err open_recover_segments(mk_log *log, opening *o, mk_strbuf *why)
{
	mk_err err;
	for (size_t i = o->first; i < o->nbases; i++) {
		bool last = i + 1 == o->nbases;
		mk_segment *s;
		uint64_t cut;
		err = mk_segment_open_active(o->dir, o->bases[i],
					     last ? INT64_MAX : o->bases[i + 1],
					     o->missing ? -1 : o->ck.recovery_point,
					     log->cache,
					     o->cfg->index_interval_bytes,
					     mk_epoch_seen_on_batch, &o->seen, &s, &cut,
					     &o->scratch);
		if (err) {
			if (why)
				mk_strbuf_add(why, o->scratch.buf,
					      o->scratch.len);
			return err;
		}
		mk_log_push_segment(log, s);
		if (last)
			break;
		if (cut || s->next_offset != o->bases[i + 1])
			return remove_from(o->dir, log->cache, o->bases + i + 1,
					   o->nbases - i - 1, why);
		mk_strbuf_reset(&o->scratch);
		if ((err = mk_segment_seal(s, &o->scratch)) ||
		    (err = mk_segment_flush(s, &o->scratch))) {
			if (why)
				mk_strbuf_add(why, o->scratch.buf,
					      o->scratch.len);
			return err;
		}
	}
	return MK_OK;
}

/* No segment at all: an empty one at the checkpoint's log start. */
static mk_err open_create_first(mk_log *log, opening *o, mk_strbuf *why)
{
	mk_segment *s;
	mk_err err = mk_segment_create(o->dir,
				       o->missing ? 0 : o->ck.start_offset,
				       log->cache, &s, why);
	if (err)
		return err;
	mk_log_push_segment(log, s);
	if (mk_fsync_dir(o->dir))
		return mk_error(why, MK_KAFKA_STORAGE_ERROR, "%s: fsync failed", o->dir);
	return MK_OK;
}

/*
 * The epoch cache: the checkpoint's, or — when it is missing while
 * closed segments exist, which only outside damage causes — rebuilt by
 * scanning them. Then everything from the first recovered segment's
 * base on is taken from what the recovered segments actually hold: the
 * checkpoint may have run ahead of data lost in a crash, or lag behind
 * it.
 */
static mk_err open_epoch_cache(mk_log *log, opening *o, mk_strbuf *why)
{
	mk_err err = MK_OK;
	for (size_t i = 0; i < o->ck.nepochs; i++)
		mk_epoch_cache_push(&log->epochs, o->ck.epochs[i].epoch,
				    o->ck.epochs[i].start_offset);
	if (o->missing && o->first > 0) {
		mk_epoch_seen closed = { NULL, 0, 0 };
		for (size_t i = 0; i < o->first && !err; i++)
			err = mk_segment_scan(log->segs[i], mk_log_end_limit(log, i),
					      mk_epoch_seen_on_batch, &closed, why);
		for (size_t i = 0; i < closed.n; i++)
			mk_epoch_cache_observe(&log->epochs, closed.v[i].epoch,
					       closed.v[i].start_offset);
		free(closed.v);
		if (err)
			return err;
	}
	mk_epoch_cache_trim(&log->epochs, log->segs[o->first]->base);
	for (size_t i = 0; i < o->seen.n; i++)
		mk_epoch_cache_observe(&log->epochs, o->seen.v[i].epoch,
				       o->seen.v[i].start_offset);
	return MK_OK;
}

/*
 * The checkpoint's offsets against what the recovered log holds. Both
 * stay at or below the durable end at every instant (the start moves only
 * over fsynced records, mk_log_advance_start; a reset makes its segment
 * before the checkpoint names it), and recovery never cuts below the
 * recovery point: either one past the log end is damage, or a hand edit,
 * and clamping it would hide every record of the log (or lose fsynced
 * ones silently). The log is refused, naming the file and the value.
 */
static mk_err open_check_offsets(const mk_log *log, const opening *o,
				 mk_strbuf *why)
{
	int64_t leo = mk_log_end_offset(log);
	const char *name = NULL;
	int64_t value = 0;
	if (o->missing)
		return MK_OK;
	if (o->ck.start_offset > leo) {
		name = "log_start_offset";
		value = o->ck.start_offset;
	} else if (o->ck.recovery_point > leo) {
		name = "recovery_point";
		value = o->ck.recovery_point;
	} else {
		return MK_OK;
	}
	return mk_error(why, MK_KAFKA_STORAGE_ERROR, "%s: %s %lld is past the log's end %lld (its segments hold [%lld, %lld)): damaged or edited, not clamped (to keep what the segments hold, correct the value or remove the file)",
			log->ckpt_path, name, (long long)value,
			(long long)leo, (long long)log->segs[0]->base,
			(long long)leo);
}

/* Log start (the checkpoint's, within the segments) and recovery point. */
static void open_settle_offsets(mk_log *log, const opening *o)
{
	int64_t leo = mk_log_end_offset(log);
	log->start_offset = o->missing ? log->segs[0]->base : o->ck.start_offset;
	if (log->start_offset < log->segs[0]->base)
		log->start_offset = log->segs[0]->base;
	/* Recovery fsynced what it scanned: all of the log is durable. */
	log->recovery_point = leo;
}

/* Write the checkpoint when it is missing or says something else. */
static mk_err open_write_checkpoint(mk_log *log, opening *o, mk_strbuf *why)
{
	mk_strbuf_reset(&o->scratch);
	mk_log_ckpt_mirror_bases(log);
	mk_log_ckpt_format(log, &o->scratch);
	if (!o->missing && o->scratch.len == o->text.len &&
	    memcmp(o->scratch.buf, o->text.buf, o->text.len) == 0) {
		/* What the file says: later writes of the same text skip. */
		mk_strbuf_add(&log->ckpt_last, o->scratch.buf, o->scratch.len);
		return MK_OK;
	}
	mk_err err = mk_log_ckpt_write(log);
	if (err && why)
		mk_strbuf_add(why, log->err.buf, log->err.len);
	return err;
}

mk_err mk_log_load(mk_log *log, mk_strbuf *why)
{
	const char *dir = log->dir;
	opening o = {
		.dir = dir, .cfg = &log->cfg,
		.text = MK_STRBUF_INIT, .scratch = MK_STRBUF_INIT,
	};
	mk_err err;
	if ((err = mk_segswap_recover(dir, why)) ||    /* a cleaner swap */
	    (err = list_segments(dir, &o.bases, &o.nbases, &o.prepared,
				 why)) ||
	    (err = open_read_checkpoint(log, &o, why)) ||
	    (err = open_check_listed(&o, why)))
		goto done;
	/* Files made ahead for a roll that never came: garbage. */
	if (o.prepared)
		mk_segment_discard_prepared(dir);
	o.first = open_first_to_recover(&o);
	if ((err = open_closed_segments(log, &o, why)) ||
	    (err = open_recover_segments(log, &o, why)) ||
	    (!o.nbases && (err = open_create_first(log, &o, why))) ||
	    (err = open_epoch_cache(log, &o, why)) ||
	    (err = open_check_offsets(log, &o, why)))
		goto done;
	open_settle_offsets(log, &o);
	err = open_write_checkpoint(log, &o, why);
done:
	free(o.bases);
	free(o.ck.epochs);
	free(o.ck.bases);
	free(o.seen.v);
	mk_strbuf_release(&o.text);
	mk_strbuf_release(&o.scratch);
	return err;
}
