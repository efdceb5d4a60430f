/*
 * replica_read.c — the read side of one partition and the calls that
 * change a log other than by appends: the consumer fetch (read_uncommitted
 * up to the HW, read_committed up to the LSO with the aborted
 * transactions), the time lookup, the replay the coordinators rebuild
 * their state from, the leader's segments, retention, compaction and
 * DeleteRecords (cleaner.h), and each replica seen on its own
 * (/brokers/B/logs/T/P: mk_replica_view and the others).
 *
 * Invariants: a consumer never sees past the HW (the LSO with
 * read_committed), and every transactional batch a read_committed fetch
 * returns is committed or listed as aborted (both taken under one hold of
 * the lock); retention and compaction never touch what lies past the LSO,
 * and a replica's log start moves only after its HW is saved
 * (replica_store.c); a view changes nothing (no ISR refresh, no
 * truncation): looking at a follower does not move it. A storage error
 * takes that replica offline (replica_failed).
 *
 * Locking: every call takes p->lock. What changes every replica's log
 * (retention, compaction) or reads a follower's (the views) first waits
 * for the fetches in flight (part_settle); the leader's log, which a fetch
 * reads only under the lock, needs no wait (the consumer fetch,
 * DeleteRecords). Compaction builds its cleaned segments without the
 * lock, so appends go on, and settles again before the swap.
 */
#include "replica_internal.h"

#include <string.h>

#include "codec.h"
#include "visible.h"
#include "xalloc.h"

mk_err mk_partition_fetch(mk_partition *p, int64_t from, size_t max_bytes,
			  mk_strbuf *out, int64_t *visible_end, mk_strbuf *why)
{
	return mk_partition_fetch_isolated(p, from, max_bytes, NULL, out,
					   visible_end, why);
}

mk_err mk_partition_fetch_isolated(mk_partition *p, int64_t from,
				   size_t max_bytes, mk_aborted_list *aborted,
				   mk_strbuf *out, int64_t *visible_end,
				   mk_strbuf *why)
{
	pthread_mutex_lock(&p->lock);
	mk_err err = part_unavailable(p, why);
	if (err)
		goto out;
	mk_replica *l = &p->replicas[p->leader];
	int64_t start = mk_log_start_offset(l->log), end = mk_log_end_offset(l->log);
	int64_t vis = aborted ? lso_locked(p) : p->hw;
	*visible_end = vis;
	if (aborted)
		mk_aborted_range(&l->pstate.aborted, from, vis, aborted);
	if (from < start || from > end) {
		mk_why(why, "offset %lld outside [%lld, %lld]",
		       (long long)from, (long long)start, (long long)end);
		err = MK_OFFSET_OUT_OF_RANGE;
		goto out;
	}
	if (from >= vis)
		goto out;
	err = mk_log_read(l->log, from, vis, max_bytes, out);
	if (err == MK_KAFKA_STORAGE_ERROR) {
		mk_why(why, "%s", mk_log_error(l->log));
		replica_failed(p, p->leader, "read");
	}
out:
	pthread_mutex_unlock(&p->lock);
	return err;
}

mk_err mk_partition_offset_for_time(mk_partition *p, int64_t ts, int64_t *off)
{
	pthread_mutex_lock(&p->lock);
	mk_err err = MK_LEADER_NOT_AVAILABLE;
	if (p->leader >= 0) {
		mk_replica *l = &p->replicas[p->leader];
		err = mk_log_offset_for_time(l->log, ts, off);
		if (err == MK_KAFKA_STORAGE_ERROR)
			replica_failed(p, p->leader, "time lookup");
	}
	pthread_mutex_unlock(&p->lock);
	return err;
}

mk_err mk_partition_end_offset_for_epoch(mk_partition *p, int32_t epoch,
					 int32_t *epoch_out, int64_t *end)
{
	pthread_mutex_lock(&p->lock);
	mk_err err = MK_LEADER_NOT_AVAILABLE;
	if (p->leader >= 0 && p->replicas[p->leader].log) {
		mk_log_end_offset_for_epoch(p->replicas[p->leader].log, epoch,
					    epoch_out, end);
		err = MK_OK;
	}
	pthread_mutex_unlock(&p->lock);
	return err;
}

size_t mk_partition_segments(mk_partition *p, mk_segment_info **out,
			     mk_strbuf *dir)
{
	pthread_mutex_lock(&p->lock);
	size_t n = 0;
	*out = NULL;
	if (p->leader >= 0) {
		mk_log *log = p->replicas[p->leader].log;
		mk_log_write_index_pending(log);
		n = mk_log_segment_count(log);
		*out = mk_xcalloc(n ? n : 1, sizeof(**out));
		for (size_t i = 0; i < n; i++)
			mk_log_segment_info(log, i, &(*out)[i]);
		mk_why(dir, "%s", mk_log_dir(log));
	}
	pthread_mutex_unlock(&p->lock);
	return n;
}

/* ---- retention, compaction, DeleteRecords (cleaner.h) -------------------- */

/* The cleaner's bounds for replica r: nothing past the LSO (which is at
 * most the HW) is deleted or cleaned. */
static mk_clean_params clean_params(const mk_partition *p)
{
	mk_clean_params cp = {
		.now_ms = mk_clock_now(p->env->clock),
		.retention_ms = p->cfg.retention_ms,
		.retention_bytes = p->cfg.retention_bytes,
		.delete_retention_ms = p->cfg.delete_retention_ms,
		.segment_bytes = p->cfg.segment_bytes,
		.index_interval_bytes = p->cfg.index_interval_bytes,
		.cleaning_point = lso_locked(p),
	};
	return cp;
}

mk_err mk_partition_retention(mk_partition *p)
{
	pthread_mutex_lock(&p->lock);
	part_settle(p);
	mk_err first = MK_OK;
	if (!p->deleted && (p->cfg.cleanup_policy & MK_CLEANUP_DELETE)) {
		mk_clean_params cp = clean_params(p);
		for (int i = 0; i < p->nreplicas; i++) {
			mk_replica *r = &p->replicas[i];
			if (!r->log)
				continue;
			/* The start may move up to the point: the HW first. */
			int64_t end = mk_log_end_offset(r->log);
			save_hw(r, cp.cleaning_point < end ? cp.cleaning_point
							   : end);
			mk_err err = mk_cleaner_retain(r->log, &cp, NULL);
			if (err) {
				replica_failed(p, i, "retention");
				if (!first)
					first = err;
			} else {
				/* aborted transactions of deleted segments */
				mk_pstate_trim(&r->pstate, mk_log_base_offset(r->log));
			}
		}
		part_changed(p);
	}
	pthread_mutex_unlock(&p->lock);
	return first;
}

mk_err mk_partition_compact(mk_partition *p, mk_strbuf *why)
{
	mk_clean_plan *plans[MK_MAX_BROKERS] = { NULL };
	pthread_mutex_lock(&p->lock);
	part_settle(p);
	mk_err first = MK_OK;
	if (p->deleted || !(p->cfg.cleanup_policy & MK_CLEANUP_COMPACT)) {
		pthread_mutex_unlock(&p->lock);
		return MK_OK;
	}
	mk_clean_params cp = clean_params(p);
	for (int i = 0; i < p->nreplicas; i++) {
		mk_replica *r = &p->replicas[i];
		cp.aborted = &r->pstate.aborted;   /* aborted data goes */
		mk_strbuf msg = MK_STRBUF_INIT;
		mk_err err = r->log ? mk_cleaner_plan(r->log, &cp, &plans[i], &msg)
				    : MK_OK;
		if (err) {     /* the cleaner's state refused, or the flusher */
			mk_strbuf what = MK_STRBUF_INIT;
			mk_strbuf_addstr(why, msg.buf);
			mk_strbuf_addf(&what, "compaction plan%s%s",
				       *mk_log_error(r->log) ? "" : ": ",
				       *mk_log_error(r->log) ? "" : msg.buf);
			replica_failed(p, i, what.buf);
			mk_strbuf_release(&what);
			if (!first)
				first = err;
		}
		mk_strbuf_release(&msg);
	}
	pthread_mutex_unlock(&p->lock);
	/* The expensive part, without the lock: appends and reads go on. */
	for (int i = 0; i < p->nreplicas; i++) {
		if (plans[i] && mk_cleaner_build(plans[i], NULL, why)) {
			mk_cleaner_plan_free(plans[i]);
			plans[i] = NULL;
		}
	}
	pthread_mutex_lock(&p->lock);
	part_settle(p);
	for (int i = 0; i < p->nreplicas; i++) {
		mk_replica *r = &p->replicas[i];
		if (!plans[i] || !r->log)
			continue;
		/* The snapshot covers what the cleaned range held, so that a
		 * producer whose every record went is still known. */
		save_pstate(r);
		bool swapped;
		mk_err err = mk_cleaner_commit(r->log, plans[i], &swapped, why);
		if (err) {
			replica_failed(p, i, "compaction swap");
			if (!first)
				first = err;
		} else if (swapped) {
			sync_txnindex(p, r);   /* the cleaned segments' */
		}
	}
	part_changed(p);
	pthread_mutex_unlock(&p->lock);
	for (int i = 0; i < p->nreplicas; i++)
		mk_cleaner_plan_free(plans[i]);
	return first;
}

mk_err mk_partition_delete_records(mk_partition *p, int64_t offset,
				   int64_t *low, mk_strbuf *why)
{
	pthread_mutex_lock(&p->lock);
	mk_err err = part_unavailable(p, why);
	if (err)
		goto out;
	mk_replica *l = &p->replicas[p->leader];
	if (offset < 0 || offset > p->hw) {
		mk_why(why, "offset %lld outside [0, hw %lld]",
		       (long long)offset, (long long)p->hw);
		err = MK_OFFSET_OUT_OF_RANGE;
		goto out;
	}
	err = advance_start(l, offset);
	if (err) {
		mk_why(why, "%s", mk_log_error(l->log));
		replica_failed(p, p->leader, "delete records");
		goto out;
	}
	if (low)
		*low = mk_log_start_offset(l->log);
	part_changed(p);
out:
	pthread_mutex_unlock(&p->lock);
	return err;
}

/* ---- one replica seen on its own ---------------------------------------- */

/* The replica `broker` names (-1: the leader's), with an open log. Called
 * under p->lock. */
static mk_err view_replica(mk_partition *p, int broker, bool need_log,
			   mk_replica **out, mk_strbuf *why)
{
	part_settle(p);     /* a follower's log is its fetch's meanwhile */
	if (p->deleted)
		return mk_error(why, MK_UNKNOWN_TOPIC_OR_PARTITION, "topic %s was deleted",
				p->topic);
	int i = broker < 0 ? p->leader : replica_index(p, broker);
	if (i < 0) {
		if (why && broker < 0)
			mk_strbuf_addf(why, "%s-%d has no leader", p->topic, p->id);
		else if (why)
			mk_strbuf_addf(why, "broker %d hosts no replica of %s-%d",
				       broker, p->topic, p->id);
		return broker < 0 ? MK_LEADER_NOT_AVAILABLE
				  : MK_UNKNOWN_TOPIC_OR_PARTITION;
	}
	*out = &p->replicas[i];
	if (need_log && !(*out)->log) {
		return mk_error(why, MK_BROKER_NOT_AVAILABLE, "broker %d is %s: its replica of %s-%d cannot be read",
				(*out)->broker, (*out)->failed ? "failed (storage error; restart it)"
				: "offline (write to brokers/B/restart)", p->topic, p->id);
	}
	return MK_OK;
}

mk_err mk_partition_replica_view(mk_partition *p, int broker,
				 mk_replica_view *out, mk_strbuf *why)
{
	pthread_mutex_lock(&p->lock);
	mk_replica *r;
	mk_err err = view_replica(p, broker, false, &r, why);
	if (!err) {
		memset(out, 0, sizeof(*out));
		out->broker = r->broker;
		out->online = r->online;
		out->failed = r->failed;
		out->leader = p->leader >= 0 && r == &p->replicas[p->leader];
		out->in_isr = isr_committed_member(p, r);
		out->leo = r->log ? mk_log_end_offset(r->log) : -1;
		out->hw_view = r->hw_view;
		out->log_start = r->log ? mk_log_start_offset(r->log) : -1;
		out->latest_epoch = r->log ? mk_log_latest_epoch(r->log) : -1;
		out->agreed_end = r->log && p->leader >= 0
			? agreed_end(r, &p->replicas[p->leader]) : -1;
	}
	pthread_mutex_unlock(&p->lock);
	return err;
}

mk_err mk_partition_replica_epochs(mk_partition *p, int broker,
				   mk_epoch_entry **out, size_t *n,
				   mk_strbuf *why)
{
	pthread_mutex_lock(&p->lock);
	mk_replica *r;
	*out = NULL;
	*n = 0;
	mk_err err = view_replica(p, broker, true, &r, why);
	if (!err) {
		const mk_epoch_entry *e;
		*n = mk_log_epochs(r->log, &e);
		*out = mk_xcalloc(*n ? *n : 1, sizeof(**out));
		if (*n)
			memcpy(*out, e, *n * sizeof(**out));
	}
	pthread_mutex_unlock(&p->lock);
	return err;
}

mk_err mk_partition_replica_fetch(mk_partition *p, int broker, int64_t from,
				  bool committed, size_t max_bytes,
				  mk_strbuf *out, int64_t *visible_end,
				  mk_strbuf *why)
{
	pthread_mutex_lock(&p->lock);
	mk_replica *r;
	mk_err err = view_replica(p, broker, true, &r, why);
	if (err)
		goto out;
	int64_t start = mk_log_start_offset(r->log), end = mk_log_end_offset(r->log);
	*visible_end = committed && r->hw_view < end ? r->hw_view : end;
	if (from < start || from > end) {
		mk_why(why, "offset %lld outside [%lld, %lld] of broker %d's replica",
		       (long long)from, (long long)start,
		       (long long)end, r->broker);
		err = MK_OFFSET_OUT_OF_RANGE;
		goto out;
	}
	if (from < *visible_end) {
		err = mk_log_read(r->log, from, *visible_end, max_bytes, out);
		if (err && why)
			mk_strbuf_addstr(why, mk_log_error(r->log));
	}
out:
	pthread_mutex_unlock(&p->lock);
	return err;
}

void mk_partition_cleaner_info(mk_partition *p, mk_cleaner_info *info)
{
	pthread_mutex_lock(&p->lock);
	memset(info, 0, sizeof(*info));
	info->cleaned_to = -1;
	if (p->leader >= 0)
		mk_cleaner_info_get(p->replicas[p->leader].log, p->hw, info);
	pthread_mutex_unlock(&p->lock);
}

mk_err mk_partition_replica_offset_for_time(mk_partition *p, int broker,
					    int64_t ts, int64_t *off,
					    mk_strbuf *why)
{
	pthread_mutex_lock(&p->lock);
	mk_replica *r;
	mk_err err = view_replica(p, broker, true, &r, why);
	if (!err) {
		err = mk_log_offset_for_time(r->log, ts, off);
		if (err && why)
			mk_strbuf_addstr(why, mk_log_error(r->log));
	}
	pthread_mutex_unlock(&p->lock);
	return err;
}

mk_err mk_partition_replica_batches(mk_partition *p, int broker, int64_t from,
				    size_t max, mk_batch_info **out, size_t *n,
				    mk_strbuf *why)
{
	pthread_mutex_lock(&p->lock);
	mk_replica *r;
	*out = NULL;
	*n = 0;
	mk_err err = view_replica(p, broker, true, &r, why);
	if (!err) {
		err = mk_log_batches(r->log, from, max, out, n);
		if (err == MK_OFFSET_OUT_OF_RANGE && why)
			mk_strbuf_addf(why, "offset %lld outside [%lld, %lld]",
				       (long long)from,
				       (long long)mk_log_start_offset(r->log),
				       (long long)mk_log_end_offset(r->log));
		else if (err && why)
			mk_strbuf_addstr(why, mk_log_error(r->log));
	}
	pthread_mutex_unlock(&p->lock);
	return err;
}

mk_err mk_partition_replica_segments(mk_partition *p, int broker,
				     mk_segment_info **out, size_t *n,
				     mk_strbuf *dir, mk_strbuf *why)
{
	pthread_mutex_lock(&p->lock);
	mk_replica *r;
	*out = NULL;
	*n = 0;
	mk_err err = view_replica(p, broker, true, &r, why);
	if (!err) {
		mk_log_write_index_pending(r->log);
		*n = mk_log_segment_count(r->log);
		*out = mk_xcalloc(*n ? *n : 1, sizeof(**out));
		for (size_t i = 0; i < *n; i++)
			mk_log_segment_info(r->log, i, &(*out)[i]);
		mk_why(dir, "%s", mk_log_dir(r->log));
	}
	pthread_mutex_unlock(&p->lock);
	return err;
}

mk_err mk_partition_replica_index(mk_partition *p, int broker, int64_t segment,
				  mk_index_row **out, size_t *n, mk_strbuf *why)
{
	pthread_mutex_lock(&p->lock);
	mk_replica *r;
	*out = NULL;
	*n = 0;
	mk_err err = view_replica(p, broker, true, &r, why);
	if (!err) {
		err = mk_log_index_rows(r->log, segment, out, n);
		if (err == MK_INVALID_REQUEST && why)
			mk_strbuf_addf(why, "no segment with base offset %lld",
				       (long long)segment);
		else if (err && why)
			mk_strbuf_addstr(why, mk_log_error(r->log));
	}
	pthread_mutex_unlock(&p->lock);
	return err;
}

#define REPLAY_FETCH_BYTES (1u << 20)

/* The replay's share of a batch: every visible record, one call each. */
typedef struct {
	void (*fn)(void *arg, const mk_record_view *rec);
	void *arg;
} replay_ctx;

static size_t replay_batch(void *arg, const mk_batch_view *b, int64_t from,
			   int64_t end, size_t max, int64_t *next)
{
	replay_ctx *ctx = arg;
	return mk_visible_records(b, from, end, max, ctx->fn, ctx->arg, next);
}

mk_err mk_partition_replay(mk_partition *p, int64_t from,
			   void (*fn)(void *arg, const mk_record_view *rec),
			   void *arg)
{
	replay_ctx ctx = { fn, arg };
	mk_fetched f = { .visible = 0 };
	mk_strbuf buf = MK_STRBUF_INIT;
	mk_err err = MK_OK;
	while (!err) {
		mk_strbuf_reset(&buf);
		err = mk_partition_fetch(p, from, REPLAY_FETCH_BYTES, &buf,
					 &f.visible, NULL);
		if (err || !buf.len)
			break;
		f.frames = buf.buf;
		f.len = buf.len;
		mk_visible_batches(&f, SIZE_MAX, &from, replay_batch, &ctx);
		if (from >= f.visible)
			break;
	}
	mk_strbuf_release(&buf);
	return err;
}
