/*
 * replica_store.c — what each replica keeps on disk beside its log (log.h):
 * its directory (DATA_DIR/broker-B/T-P), the producer snapshot
 * (producer-snapshot) and the HW checkpoint (its entry of the broker's
 * replication-offset-checkpoint, Kafka's file and format, kept by the
 * broker's log directory object, logdir.h, beside the log's own entries);
 * opening a replica's log with the checks they allow, and truncating it or
 * moving its start with the snapshot and the checkpoint kept in step.
 *
 * When the HW reaches the file: save_hw sets it in the log directory's
 * table and kicks its writer, which writes it soon with whatever else of
 * the broker's files changed (a flush waits for it: mk_partition_flush
 * syncs them; so does a close); and
 * always before a log start that it bounds (the log directory writes the
 * HW file first, and a moved start is written before the move acts:
 * log_checkpoint.h), so a start on disk is never past the HW on disk.
 *
 * Invariants:
 *   - a replica's log start moves only after its HW is saved at or past
 *     the new start (save_hw, advance_start: decide, persist, act), so an
 *     open that finds the start past the saved HW has found damage, and
 *     refuses the replica (an /errors line; it stays offline);
 *   - a partition that exists has every replica's directory (made by
 *     store_make_dirs at creation): a missing one is damage, never an empty
 *     log to start again from;
 *   - a replica's producer state covers its log (covered_to is its end)
 *     whenever the log is not being appended to: rebuilt at open and
 *     after a truncation, kept by note_append after each append.
 *
 * Locking: everything here runs under p->lock, or on a replica whose fetch
 * is in flight by that fetch alone (note_append: replica.h, Locking);
 * mk_partition_remove_files touches no partition.
 */
#include "replica_internal.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec.h"
#include "fileio.h"
#include "logdir.h"
#include "parse.h"

/* Where each replica's HW was kept before replication-offset-checkpoint
 * (one file in its log directory): read when the entry is missing, and
 * removed once the entry is on disk. */
#define OLD_HW_FILE "high-watermark"

/* r's entry of its broker's replication-offset-checkpoint. */
static void hw_set(mk_replica *r, int64_t hw)
{
	const char *topic;
	int32_t partition;
	mk_log_key(r->log, &topic, &partition);
	mk_logdir_set(mk_log_logdir(r->log), topic, partition, MK_LOGDIR_HW, hw);
	/* Soon on disk (one write of the pool's for every replica of the
	 * broker that changed meanwhile); a flush waits for it. */
	mk_logdir_kick(mk_log_logdir(r->log));
}

void part_log_dir(const mk_env *env, int broker, const char *topic, int id,
		  mk_strbuf *out)
{
	mk_strbuf_reset(out);
	mk_strbuf_addf(out, "%s/broker-%d/%s-%d", env->data_dir, broker, topic, id);
}

/*
 * Make a broker's directory when missing, marked so that the file system
 * spreads its partition directories (mk_dir_spread_subdirs). Why: on ext4,
 * files go to their directory's block group, and an inode allocation scans
 * past every inode of that group deleted in the last minutes (journal-less
 * ext4 does not reuse them at once). With every partition in its parent's
 * group, deletions anywhere near (retention, a deleted topic, another
 * program's) made each segment file creation cost up to a millisecond
 * (issue 11: 1 MiB segments on a disk with recent deletions appended at
 * 440 MB/s, 740 with the partitions spread).
 */
static mk_err broker_dir(const mk_env *env, int broker, mk_strbuf *out)
{
	mk_strbuf_reset(out);
	mk_strbuf_addf(out, "%s/broker-%d", env->data_dir, broker);
	struct stat sb;
	if (stat(out->buf, &sb) == 0)
		return MK_OK;
	mk_err err = mk_mkdirs(out->buf);
	if (!err)
		mk_dir_spread_subdirs(out->buf);
	return err;
}

/* Every replica's directory exists from the start, the offline ones' too:
 * later, a missing directory is damage (open_replica). */
mk_err store_make_dirs(const mk_env *env, const char *topic, int id,
		       const mk_partition_state *st)
{
	mk_strbuf dir = MK_STRBUF_INIT;
	mk_err err = MK_OK;
	for (int i = 0; i < st->nreplicas && !err; i++) {
		err = broker_dir(env, st->brokers[i], &dir);
		if (!err) {
			part_log_dir(env, st->brokers[i], topic, id, &dir);
			err = mk_mkdirs(dir.buf);
		}
	}
	mk_strbuf_release(&dir);
	return err;
}

mk_log_config part_log_config(const mk_topic_config *tc)
{
	mk_log_config lc = {
		.segment_bytes = tc->segment_bytes,
		.index_interval_bytes = tc->index_interval_bytes,
		.flush_messages = tc->flush_messages,
	};
	return lc;
}

/* ---- idempotent producer state ------------------------------------- */

static void pstate_path(const mk_replica *r, mk_strbuf *out)
{
	mk_strbuf_reset(out);
	mk_strbuf_addf(out, "%s/producer-snapshot", mk_log_dir(r->log));
}

/* Replace the file at path with text, unless it already holds exactly
 * that (a close with nothing new then costs no write and no fsync), or
 * it is missing and missing means the same (empty: text says nothing a
 * missing file does not). */
static void replace_if_changed(const mk_strbuf *path, const mk_strbuf *text,
			       bool empty)
{
	mk_strbuf cur = MK_STRBUF_INIT;
	bool missing = false;
	bool failed = mk_file_read(path->buf, &cur, &missing) != MK_OK;
	if (failed || (missing && !empty) || (!missing &&
	    (cur.len != text->len ||
	     (text->len && memcmp(cur.buf, text->buf, text->len) != 0))))
		mk_file_replace(path->buf, text->buf, text->len);
	mk_strbuf_release(&cur);
}

/*
 * Persist the HW replica r knows, for the checks after a recovery: never
 * below its log start (Kafka's rule: the HW is at least the log start) or
 * below floor, where the start is about to move. A start that moves is
 * preceded by this save (decide, persist, act: the log directory writes
 * the HW before the start, logdir.h), so an open that finds the start past
 * the saved HW has found damage (open_replica). The file gets it with the
 * broker's next write of its checkpoint files.
 */
void save_hw(mk_replica *r, int64_t floor)
{
	int64_t hw = r->hw_view, start = mk_log_start_offset(r->log);
	if (hw < start)
		hw = start;
	if (hw < floor)
		hw = floor;
	hw_set(r, hw);
}

/* Move replica r's log start to offset (at most the HW it knows), its HW
 * saved first. */
mk_err advance_start(mk_replica *r, int64_t offset)
{
	save_hw(r, offset);
	return mk_log_advance_start(r->log, offset);
}

/* Persist replica i's producer state (flush and close). */
void save_pstate(mk_replica *r)
{
	mk_strbuf path = MK_STRBUF_INIT, text = MK_STRBUF_INIT;
	pstate_path(r, &path);
	mk_pstate_format(&r->pstate, &text);
	/* An empty log's state is rebuilt from nothing: no file needed. */
	replace_if_changed(&path, &text, mk_log_end_offset(r->log) ==
					 mk_log_start_offset(r->log));
	mk_strbuf_release(&path);
	mk_strbuf_release(&text);
	save_hw(r, 0);
}

/* The HW in a replica directory's file of before (-1: none). */
static int64_t read_old_hw(const char *path)
{
	mk_strbuf text = MK_STRBUF_INIT;
	bool missing;
	int64_t hw = -1;
	if (!mk_file_read(path, &text, &missing) && !missing &&
	    text.len > 1 && text.buf[text.len - 1] == '\n') {
		text.buf[text.len - 1] = '\0';
		if (!mk_parse_range(text.buf, 0, INT64_MAX, &hw))
			hw = -1;
	}
	mk_strbuf_release(&text);
	return hw;
}

/*
 * The checkpointed HW of replica r (its entry of the broker's
 * replication-offset-checkpoint); -1 when none. Without an entry, the
 * replica directory's high-watermark file of before is taken into the
 * broker's file, and removed once that is on disk.
 */
static int64_t read_hw(mk_replica *r)
{
	const char *topic;
	int32_t partition;
	mk_log_key(r->log, &topic, &partition);
	mk_logdir *ld = mk_log_logdir(r->log);
	int64_t hw = -1;
	if (mk_logdir_get(ld, topic, partition, MK_LOGDIR_HW, &hw))
		return hw;
	mk_strbuf path = MK_STRBUF_INIT;
	mk_strbuf_addf(&path, "%s/" OLD_HW_FILE, mk_log_dir(r->log));
	hw = read_old_hw(path.buf);
	if (hw >= 0) {
		hw_set(r, hw);
		if (!mk_logdir_sync(ld, NULL))
			(void)unlink(path.buf);
	}
	mk_strbuf_release(&path);
	return hw;
}

/* Apply every batch of replica r's log past what its state covers. */
static void pstate_catch_up(mk_replica *r)
{
	mk_strbuf buf = MK_STRBUF_INIT;
	int64_t end = mk_log_end_offset(r->log);
	int64_t from = r->pstate.covered_to;
	while (from < end) {
		mk_strbuf_reset(&buf);
		if (mk_log_read(r->log, from, end, 1u << 20, &buf) || !buf.len)
			break;
		/* mk_log_read validated every frame it returned */
		mk_frame_iter it;
		mk_batch_view b;
		mk_frame_iter_init(&it, buf.buf, buf.len);
		while (mk_frame_next(&it, &b)) {
			if (mk_batch_next_offset(&b) > from) {
				mk_pstate_apply(&r->pstate, &b);
				from = mk_batch_next_offset(&b);
			}
		}
		if (it.left)
			break;
	}
	mk_strbuf_release(&buf);
}

/*
 * Rebuild replica i's producer state: the snapshot when it is still a
 * prefix of the log, then every batch past it. After a truncation below
 * the snapshot, the scan starts at the log start.
 */
void rebuild_pstate(mk_partition *p, int i)
{
	mk_replica *r = &p->replicas[i];
	mk_strbuf path = MK_STRBUF_INIT, buf = MK_STRBUF_INIT;
	int64_t start = mk_log_start_offset(r->log), end = mk_log_end_offset(r->log);
	bool missing = true;
	pstate_path(r, &path);
	mk_pstate_reset(&r->pstate);
	if (!mk_file_read(path.buf, &buf, &missing) && !missing) {
		/* Past the log's end after a truncation or a crash that lost
		 * a tail, below its start after retention: rebuilt quietly,
		 * as Kafka drops such snapshots. Damage is told. */
		if (mk_pstate_parse(&r->pstate, buf.buf))
			mk_errlog_add(p->env->errlog, mk_wall_ms(), NULL,
				      MK_CORRUPT_MESSAGE,
				      "broker %d %s-%d: %s is damaged (malformed, or an offset past its covered_to): not trusted, rebuilt from the log",
				      r->broker, p->topic, p->id, path.buf);
		if (r->pstate.covered_to > end || r->pstate.covered_to < start)
			mk_pstate_reset(&r->pstate);
	}
	if (r->pstate.covered_to < start)
		r->pstate.covered_to = start;
	/* Aborted transactions stay while their segment does (the
	 * .txnindex files keep them as Kafka's do), below the log start
	 * too: reads never ask for them. */
	mk_pstate_trim(&r->pstate, mk_log_base_offset(r->log));
	pstate_catch_up(r);
	sync_txnindex(p, r);
	mk_strbuf_release(&path);
	mk_strbuf_release(&buf);
}

/* A .txnindex write failed: the files are a projection (txnindex.h), the
 * reads go on; told, and set right at the next open. */
static void txnindex_failed(mk_partition *p, const mk_replica *r,
			    const mk_strbuf *why)
{
	mk_errlog_add(p->env->errlog, mk_wall_ms(), NULL, MK_KAFKA_STORAGE_ERROR,
		      "broker %d %s-%d: %s (the .txnindex files are rewritten at the next open)",
		      r->broker, p->topic, p->id, why->buf);
}

/* Make replica r's .txnindex files say what its producer state says. */
void sync_txnindex(mk_partition *p, mk_replica *r)
{
	mk_strbuf why = MK_STRBUF_INIT;
	if (r->log && mk_log_sync_txnindex(r->log, &r->pstate.aborted, &why))
		txnindex_failed(p, r, &why);
	mk_strbuf_release(&why);
}

/* After an append of frame to replica r's log: keep the state current,
 * and an abort marker's entry in the .txnindex. */
void note_append(mk_partition *p, mk_replica *r, const uint8_t *frame,
		 size_t len)
{
	if ((int64_t)mk_load_be64(frame + MK_FRAME_OFF_PRODUCER_ID) >= 0) {
		mk_batch_view b;
		size_t aborted = r->pstate.aborted.n;
		if (!mk_frame_decode_header(frame, len, 0, false, &b, NULL))
			mk_pstate_apply(&r->pstate, &b);
		mk_strbuf why = MK_STRBUF_INIT;
		/* An entry that failed to append: the files are rewritten
		 * whole from the state (the next open tries again). */
		if (r->pstate.aborted.n > aborted &&
		    mk_log_add_aborted(r->log, &r->pstate.aborted.v[aborted], &why) &&
		    mk_log_sync_txnindex(r->log, &r->pstate.aborted, &why))
			txnindex_failed(p, r, &why);
		mk_strbuf_release(&why);
	}
	r->pstate.covered_to = mk_log_end_offset(r->log);
}

/* Truncate replica i, keeping its producer state in step. */
mk_err truncate_replica(mk_partition *p, int i, int64_t offset)
{
	if (offset >= mk_log_end_offset(p->replicas[i].log))
		return MK_OK;     /* nothing to cut: the snapshot stands */
	mk_err err = mk_cleaner_truncate(p->replicas[i].log, offset, NULL);
	if (!err)
		err = mk_log_truncate_to(p->replicas[i].log, offset);
	if (!err) {
		/* The snapshot may describe the tail just cut: replace it. */
		rebuild_pstate(p, i);
		save_pstate(&p->replicas[i]);
	}
	return err;
}

/* The log directory object of broker's directory (logdir.h); NULL when
 * the directory is missing or a file of it is damaged (why says). */
static mk_logdir *broker_logdir(const mk_env *env, int broker, mk_strbuf *why)
{
	mk_strbuf dir = MK_STRBUF_INIT;
	mk_strbuf_addf(&dir, "%s/broker-%d", env->data_dir, broker);
	mk_logdir *ld;
	(void)mk_logdir_acquire(dir.buf, env->flush_pool, &ld, why);
	mk_strbuf_release(&dir);
	return ld;
}

/*
 * A partition being made: entries its broker's checkpoint files still hold
 * for it are an earlier log's of the same name (a deletion killed before
 * the files dropped them), which the new log would take for its own: they
 * go, on disk, before it opens.
 */
static mk_err forget_earlier(const mk_partition *p, const mk_replica *r,
			     mk_strbuf *why)
{
	mk_logdir *ld = broker_logdir(p->env, r->broker, why);
	mk_err err = ld ? MK_OK : MK_KAFKA_STORAGE_ERROR;
	if (ld && mk_logdir_forget(ld, p->topic, p->id))
		err = mk_logdir_sync(ld, why);
	mk_logdir_release(ld, true);
	return err;
}

void open_replica(mk_partition *p, int i)
{
	mk_replica *r = &p->replicas[i];
	mk_strbuf dir = MK_STRBUF_INIT, why = MK_STRBUF_INIT;
	part_log_dir(p->env, r->broker, p->topic, p->id, &dir);
	mk_log_config lc = part_log_config(&p->cfg);
	struct stat st;
	mk_err err = MK_OK;
	/* A partition that exists has its directories: a missing one is
	 * damage, never an empty log to start again from. */
	if (!p->creating && stat(dir.buf, &st) != 0 && errno == ENOENT) {
		err = MK_KAFKA_STORAGE_ERROR;
		mk_strbuf_addf(&why, "%s is missing (not recreated empty: restore it, or delete the topic)",
			       dir.buf);
	}
	lc.pool = p->env->flush_pool;
	lc.fdcache = p->env->fdcache;
	if (!err && p->creating)
		err = forget_earlier(p, r, &why);
	if (!err)
		err = mk_log_open(dir.buf, &lc, &r->log, &why);
	r->hw_ckpt = -1;
	if (err) {
		r->log = NULL;
		r->failed = true;
		mk_errlog_add(p->env->errlog, mk_wall_ms(), NULL, err,
			      "broker %d %s-%d: cannot open log: %s; replica offline",
			      r->broker, p->topic, p->id, why.buf);
	} else if ((r->hw_ckpt = read_hw(r)) >= 0 &&
		   mk_log_start_offset(r->log) > r->hw_ckpt) {
		/* The start moves only after the HW is saved at or past it
		 * (save_hw): a start past the saved HW is damage or an edit. */
		mk_logdir *ld = mk_log_logdir(r->log);
		mk_errlog_add(p->env->errlog, mk_wall_ms(), NULL,
			      MK_KAFKA_STORAGE_ERROR,
			      "broker %d %s-%d: cannot open log: %s: %s %d: log_start_offset %lld is past the high watermark %lld in %s (the log start never passes the HW): damaged or edited; replica offline",
			      r->broker, p->topic, p->id,
			      mk_logdir_path(ld, MK_LOGDIR_START), p->topic, p->id,
			      (long long)mk_log_start_offset(r->log),
			      (long long)r->hw_ckpt, mk_logdir_path(ld, MK_LOGDIR_HW));
		mk_log_abandon(r->log);
		r->log = NULL;
		r->failed = true;
		r->hw_ckpt = -1;
	} else {
		r->failed = false;
		rebuild_pstate(p, i);
		int64_t end = mk_log_end_offset(r->log);
		if (end < r->hw_ckpt)
			mk_errlog_add(p->env->errlog, mk_wall_ms(), NULL,
				      MK_KAFKA_STORAGE_ERROR,
				      "broker %d %s-%d: recovery cut the log to %lld, below its checkpointed high watermark %lld: committed records are missing here",
				      r->broker, p->topic, p->id, (long long)end,
				      (long long)r->hw_ckpt);
	}
	mk_strbuf_release(&dir);
	mk_strbuf_release(&why);
}

void mk_partition_remove_files(const mk_env *env, const char *topic, int id,
			       const mk_partition_state *st)
{
	mk_strbuf dir = MK_STRBUF_INIT;
	for (int i = 0; i < st->nreplicas; i++) {
		part_log_dir(env, st->brokers[i], topic, id, &dir);
		mk_remove_tree(dir.buf);
		/* Its entries in the broker's checkpoint files go after it
		 * (a kill between leaves entries of no log: a creation of the
		 * same name drops them first, forget_earlier). */
		mk_logdir *ld = broker_logdir(env, st->brokers[i], NULL);
		if (ld && mk_logdir_forget(ld, topic, id))
			mk_logdir_kick(ld);
		mk_logdir_release(ld, true);
	}
	mk_strbuf_release(&dir);
}

/* Flush every open replica's log and save its snapshot and HW; with sync,
 * each replica's broker checkpoint files are written too. */
static mk_err partition_flush(mk_partition *p, bool sync)
{
	pthread_mutex_lock(&p->lock);
	part_settle(p);
	mk_err err = MK_OK;
	for (int i = 0; i < p->nreplicas; i++) {
		mk_replica *r = &p->replicas[i];
		if (r->log && mk_log_flush(r->log)) {
			err = MK_KAFKA_STORAGE_ERROR;
			replica_failed(p, i, "flush");
		}
		if (r->log)
			save_pstate(r);
	}
	for (int i = 0; i < p->nreplicas && sync; i++) {
		mk_replica *r = &p->replicas[i];
		mk_strbuf why = MK_STRBUF_INIT;
		if (r->log && mk_logdir_sync(mk_log_logdir(r->log), &why)) {
			err = MK_KAFKA_STORAGE_ERROR;
			mk_errlog_add(p->env->errlog, mk_wall_ms(), NULL, err,
				      "broker %d %s-%d flush: %s", r->broker,
				      p->topic, p->id, why.buf);
		}
		mk_strbuf_release(&why);
	}
	pthread_mutex_unlock(&p->lock);
	return err;
}

mk_err mk_partition_flush(mk_partition *p)
{
	return partition_flush(p, true);
}

mk_err mk_partition_flush_logs(mk_partition *p)
{
	return partition_flush(p, false);
}
