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
#include "ckptfile.h"
#include "log_checkpoint.h"
#include "log_internal.h"
#include "logdir.h"
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
	bool epochs_missing;        /* no epochs file (nor a version-1 ck) */
	mk_strbuf epochs_text;      /* leader-epoch-checkpoint as read */
	mk_epoch_entry *epochs;     /* and as parsed (or the ck's) */
	size_t nepochs;
	/* The saved offsets (-1: not known) and the files they came from. */
	int64_t start, rp;
	const char *start_from, *rp_from;
	int64_t durable_to;         /* below it all was fsynced (-1: none) */
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

/* Read and parse leader-epoch-checkpoint; without one, a version-1
 * checkpoint's epochs (as written before it) stand in. */
static mk_err open_read_epochs(mk_log *log, opening *o, mk_strbuf *why)
{
	bool missing;
	if (mk_file_read(log->epochs_path, &o->epochs_text, &missing))
		return mk_io_error(why, log->epochs_path, "read failed");
	if (missing) {
		mk_strbuf_reset(&o->epochs_text);
		o->epochs_missing = o->missing || o->ck.version != 1;
		if (!o->epochs_missing) {
			o->epochs = o->ck.epochs;
			o->nepochs = o->ck.nepochs;
			o->ck.epochs = NULL;
			o->ck.nepochs = 0;
		}
		return MK_OK;
	}
	char *copy = mk_xmalloc(o->epochs_text.len + 1);
	memcpy(copy, o->epochs_text.buf, o->epochs_text.len + 1);
	mk_err err = mk_ckpt_parse_epochs(log->epochs_path, copy,
					  o->epochs_text.len, &o->epochs,
					  &o->nepochs, why);
	free(copy);
	return err;
}

/*
 * The log start and recovery point saved for this log: its entries in the
 * log directory's files (logdir.h), else a version-1 checkpoint's. Then
 * how far the log is known durable: the recovery point, or the last
 * segment the checkpoint lists when that is later (the checkpoint is
 * written before the log directory's file: log_checkpoint.h).
 */
static void open_saved_offsets(mk_log *log, opening *o)
{
	o->start = o->rp = -1;
	if (mk_logdir_get(log->logdir, log->topic, log->partition,
			  MK_LOGDIR_START, &o->start))
		o->start_from = mk_logdir_path(log->logdir, MK_LOGDIR_START);
	if (mk_logdir_get(log->logdir, log->topic, log->partition,
			  MK_LOGDIR_RECOVERY, &o->rp))
		o->rp_from = mk_logdir_path(log->logdir, MK_LOGDIR_RECOVERY);
	if (!o->missing && o->ck.version == 1) {
		if (o->start < 0) {
			o->start = o->ck.start_offset;
			o->start_from = log->ckpt_path;
		}
		if (o->rp < 0) {
			o->rp = o->ck.recovery_point;
			o->rp_from = log->ckpt_path;
		}
	}
	o->durable_to = o->rp;
	if (o->ck.version == 2 && o->ck.nbases &&
	    o->ck.bases[o->ck.nbases - 1] > o->durable_to)
		o->durable_to = o->ck.bases[o->ck.nbases - 1];
}

/* Every durable segment the checkpoint lists is there: a missing one is
 * damage (a gap in the log), never silently skipped. (A version-1
 * checkpoint's list is bounded by its own offsets.) */
static mk_err open_check_listed(const opening *o, mk_strbuf *why)
{
	bool v1 = o->ck.version == 1;
	for (size_t i = 0, j = 0; i < o->ck.nbases; i++) {
		if (v1 && (o->ck.bases[i] < o->ck.start_offset ||
			   o->ck.bases[i] >= o->ck.recovery_point))
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
 * Recovery starts at the segment holding the durable point: normally the
 * active one; earlier when rolled segments were still waiting for the
 * flusher. When nothing says how far the log is durable (a new log, or
 * its files removed), at the first, as Kafka recovers from offset 0.
 */
static size_t open_first_to_recover(const opening *o)
{
	size_t first = o->nbases ? o->nbases - 1 : 0;
	if (o->durable_to < 0)
		return 0;
	while (first > 0 && o->bases[first] > o->durable_to)
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
					     o->durable_to,
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

/* No segment at all: an empty one at the saved log start. */
static mk_err open_create_first(mk_log *log, opening *o, mk_strbuf *why)
{
	mk_segment *s;
	mk_err err = mk_segment_create(o->dir, o->start < 0 ? 0 : o->start,
				       log->cache, &s, why);
	if (err)
		return err;
	mk_log_push_segment(log, s);
	if (mk_fsync_dir(o->dir))
		return mk_error(why, MK_KAFKA_STORAGE_ERROR, "%s: fsync failed", o->dir);
	return MK_OK;
}

/*
 * The epoch cache: leader-epoch-checkpoint's, or — when it is missing
 * while closed segments exist, which only outside damage causes — rebuilt
 * by scanning them. Then everything from the first recovered segment's
 * base on is taken from what the recovered segments actually hold: the
 * file may have run ahead of data lost in a crash, or lag behind it (it
 * covers every epoch below the durable point: log_checkpoint.h).
 */
static mk_err open_epoch_cache(mk_log *log, opening *o, mk_strbuf *why)
{
	mk_err err = MK_OK;
	for (size_t i = 0; i < o->nepochs; i++)
		mk_epoch_cache_push(&log->epochs, o->epochs[i].epoch,
				    o->epochs[i].start_offset);
	if (o->epochs_missing && o->first > 0) {
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
 * The saved offsets against what the recovered log holds. Both stay at or
 * below the durable end at every instant (the start moves only over
 * fsynced records, mk_log_advance_start; a reset makes its segment before
 * the start names it; the recovery point is set only past fsynced data,
 * and lowered on disk before a truncation cuts), and recovery never cuts
 * below the recovery point: either one past the log end is damage, or a
 * hand edit, and clamping it would hide every record of the log (or lose
 * fsynced ones silently). The log is refused, naming the file and value.
 */
static mk_err open_check_offsets(const mk_log *log, const opening *o,
				 mk_strbuf *why)
{
	int64_t leo = mk_log_end_offset(log);
	const char *name, *from;
	int64_t value;
	if (o->start > leo) {
		name = "log_start_offset";
		value = o->start;
		from = o->start_from;
	} else if (o->rp > leo) {
		name = "recovery_point";
		value = o->rp;
		from = o->rp_from;
	} else {
		return MK_OK;
	}
	mk_why(why, "%s: ", from);
	if (from != log->ckpt_path)     /* an entry of a log directory file */
		mk_why(why, "%s %d: ", log->topic, (int)log->partition);
	return mk_error(why, MK_KAFKA_STORAGE_ERROR, "%s %lld is past the log's end %lld (its segments hold [%lld, %lld)): damaged or edited, not clamped (to keep what the segments hold, correct the value or remove it)",
			name, (long long)value, (long long)leo,
			(long long)log->segs[0]->base, (long long)leo);
}

/* Log start (the saved one, within the segments) and recovery point. */
static void open_settle_offsets(mk_log *log, const opening *o)
{
	int64_t leo = mk_log_end_offset(log);
	log->start_offset = o->start < 0 ? log->segs[0]->base : o->start;
	if (log->start_offset < log->segs[0]->base)
		log->start_offset = log->segs[0]->base;
	/* Recovery fsynced what it scanned: all of the log is durable. */
	log->recovery_point = leo;
}

/*
 * Write the log's files when they are missing or say something else (the
 * texts as read are what they last got: an unchanged file is not written,
 * and a mount then costs no fsync), and set its log directory entries. A
 * version-1 checkpoint is replaced only once the log directory's files
 * hold the offsets it carried (durable): nothing is ever only in memory.
 */
static mk_err open_write_checkpoint(mk_log *log, opening *o, mk_strbuf *why)
{
	if (!o->missing)
		mk_strbuf_add(&log->ckpt_last, o->text.buf, o->text.len);
	if (!o->epochs_missing && o->epochs_text.len)
		mk_strbuf_add(&log->epochs_last, o->epochs_text.buf,
			      o->epochs_text.len);
	bool v1 = !o->missing && o->ck.version == 1;
	if (v1 && (o->start_from == log->ckpt_path ||
		   o->rp_from == log->ckpt_path)) {
		/* The offsets it says first (the epochs it holds cover those),
		 * then the new files, which drop them. */
		mk_logdir_set(log->logdir, log->topic, log->partition,
			      MK_LOGDIR_START, o->ck.start_offset);
		mk_logdir_set(log->logdir, log->topic, log->partition,
			      MK_LOGDIR_RECOVERY, o->ck.recovery_point);
		mk_err err = mk_logdir_sync(log->logdir, why);
		if (err)
			return err;
	}
	mk_err err = mk_log_ckpt_write(log, false);
	if (err && why)
		mk_strbuf_add(why, log->err.buf, log->err.len);
	return err;
}

mk_err mk_log_load(mk_log *log, mk_strbuf *why)
{
	const char *dir = log->dir;
	opening o = {
		.dir = dir, .cfg = &log->cfg,
		.text = MK_STRBUF_INIT, .epochs_text = MK_STRBUF_INIT,
		.scratch = MK_STRBUF_INIT, .start = -1, .rp = -1,
		.durable_to = -1,
	};
	mk_err err;
	if ((err = mk_segswap_recover(dir, why)) ||    /* a cleaner swap */
	    (err = list_segments(dir, &o.bases, &o.nbases, &o.prepared,
				 why)) ||
	    (err = open_read_checkpoint(log, &o, why)) ||
	    (err = open_read_epochs(log, &o, why)) ||
	    (err = open_check_listed(&o, why)))
		goto done;
	open_saved_offsets(log, &o);
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
	free(o.epochs);
	free(o.seen.v);
	mk_strbuf_release(&o.text);
	mk_strbuf_release(&o.epochs_text);
	mk_strbuf_release(&o.scratch);
	return err;
}
