/*
 * follower_fetch.c — the replica fetcher's side of one partition: a
 * follower's reconciliation with the leader's log (by leader epochs,
 * KIP-101/279, or with truncation = hw to the high watermark, as the
 * teaching model does), its fetch of the whole batches it lacks from its
 * own log end, the frames one leader read gives two followers
 * (mk_partition.copy), the quiesce rule that lets every other change wait
 * for the fetches in flight (part_settle), and the writer's copy.
 *
 * A fetch runs in three steps (replica.h, Locking): under p->lock it
 * reconciles the follower's log, reads the frames it lacks out of the
 * leader's log (or takes the kept copy) and marks the replica `fetching`
 * (fetch_begin); without the lock it appends them to the follower's own
 * log (fetch_append: the disk writes); under the lock again it publishes
 * the new log end, moves hw_view, and asks the ISR for the rest
 * (fetch_publish, refresh_isr). Crash point: replica.fetch.after-append.
 *
 * Invariants:
 *   - one fetch per replica at a time, and none starts while a change
 *     waits in part_settle (`quiescing`); nfetching counts those in flight;
 *   - while `fetching` is set, that fetch alone calls into the replica's
 *     log and producer state; the leader and its epoch do not change;
 *   - the kept copy is exactly what a read of the leader's log from its
 *     `from` would give now (same leader, epoch, log start and end), or
 *     it is dropped (copy_reuse, copy_drop);
 *   - the writer's copy never waits: it is skipped when the replica is
 *     being fetched or a change is quiescing, and copies nothing once the
 *     leader's epoch moved or the follower has the batch.
 *
 * Locking: p->lock around steps 1 and 3 and every copy_* call (the copy's
 * refs are under it); step 2 holds none. part_settle waits on p->settled
 * with p->lock held.
 */
#include "replica_internal.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "codec.h"
#include "failpoint.h"
#include "xalloc.h"

/* ---- the frames one leader read gives two followers (mk_partition.copy) */

typedef struct mk_fetch_copy {
	int refs;               /* under p->lock */
	int leader;
	int32_t epoch;
	int64_t from, leader_start, leader_end;
	mk_strbuf buf;
} mk_fetch_copy;

static mk_fetch_copy *copy_new(void)
{
	mk_fetch_copy *fc = mk_xcalloc(1, sizeof(*fc));
	fc->refs = 1;
	mk_strbuf_init(&fc->buf, 0);
	return fc;
}

/* Under p->lock: drop one reference. */
static void copy_put(mk_fetch_copy *fc)
{
	if (fc && --fc->refs == 0) {
		mk_strbuf_release(&fc->buf);
		free(fc);
	}
}

/* Under p->lock: the leader's log may change: the kept copy goes. */
void copy_drop(mk_partition *p)
{
	copy_put(p->copy);
	p->copy = NULL;
}

/* Under p->lock: the kept copy, if it is exactly what a read of the
 * leader's log from `from` would give now (a reference for the caller;
 * the partition's goes: one reuse). */
static mk_fetch_copy *copy_reuse(mk_partition *p, int64_t from)
{
	mk_fetch_copy *fc = p->copy;
	if (!fc)
		return NULL;
	const mk_replica *l = &p->replicas[p->leader];
	if (fc->leader != p->leader || fc->epoch != p->leader_epoch ||
	    fc->from != from || fc->leader_start != mk_log_start_offset(l->log) ||
	    fc->leader_end != mk_log_end_offset(l->log)) {
		copy_drop(p);
		return NULL;
	}
	p->copy = NULL;     /* the partition's reference is the caller's */
	return fc;
}

/* Under p->lock: fc holds the leader's log from `from` to its end, as it
 * is now (what copy_reuse compares). */
static void copy_stamp(mk_partition *p, mk_fetch_copy *fc, int64_t from)
{
	const mk_replica *l = &p->replicas[p->leader];
	fc->leader = p->leader;
	fc->epoch = p->leader_epoch;
	fc->from = from;
	fc->leader_start = mk_log_start_offset(l->log);
	fc->leader_end = mk_log_end_offset(l->log);
}

/* Under p->lock: is there a follower (other than replica `skip`) whose
 * next fetch starts at `from`: its log ends there and no fetch of it is in
 * flight, or (in_flight) the fetch in flight will end there? */
static bool follower_next_at(const mk_partition *p, int64_t from, int skip,
			     bool in_flight)
{
	for (int k = 0; k < p->nreplicas; k++) {
		const mk_replica *r = &p->replicas[k];
		if (k == skip || k == p->leader || !r->log)
			continue;
		if (r->fetching ? in_flight && r->fetch_target == from
				: mk_log_end_offset(r->log) == from)
			return true;
	}
	return false;
}

/* Under p->lock, after follower i read fc from `from`: keep it when
 * another follower's log ends at `from` too (its fetch will want it). */
static void copy_keep(mk_partition *p, int i, int64_t from, mk_fetch_copy *fc)
{
	if (fc->buf.len == 0 || !follower_next_at(p, from, i, false))
		return;
	copy_stamp(p, fc, from);
	copy_drop(p);
	fc->refs++;
	p->copy = fc;
}

/*
 * Under p->lock, right after the leader appended frames [0, n) (stamped:
 * the bytes its log now ends with, from offset `from` on) for a writer
 * that will copy them to its followers: they become the kept copy, so the
 * writer's fetches (and a fetcher's at the same position) take them from
 * memory instead of reading back what was just written (a read of the
 * page cache and a walk of every record, per write). Above
 * replica.fetch.max.bytes the followers read as usual.
 */
void copy_seed(mk_partition *p, uint8_t *const *frames,
	       const size_t *lens, size_t n, int64_t from)
{
	copy_drop(p);
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += lens[i];
	if (n == 0 || total > (size_t)p->env->cfg->replica_fetch_max_bytes)
		return;
	/* Only for a follower whose next fetch starts at `from` (its log
	 * ends there, or its fetch in flight will end there): not at RF 1,
	 * nor with every follower offline or behind, where the copy would
	 * cost a memcpy per write and stay until the next append. */
	if (!follower_next_at(p, from, -1, true))
		return;
	mk_fetch_copy *fc = copy_new();
	mk_strbuf_grow(&fc->buf, total);
	for (size_t i = 0; i < n; i++)
		mk_strbuf_add(&fc->buf, frames[i], lens[i]);
	copy_stamp(p, fc, from);
	p->copy = fc;
}

/*
 * Under p->lock: wait until no follower fetch is in flight. None starts
 * before the caller unlocks, so until then every log is the caller's to
 * call (and the leader cannot change under a fetch). The kept copy goes:
 * the caller is about to change a log.
 */
void part_settle(mk_partition *p)
{
	copy_drop(p);
	if (!p->nfetching)
		return;
	p->quiescing++;
	while (p->nfetching)
		pthread_cond_wait(&p->settled, &p->lock);
	if (--p->quiescing == 0)
		pthread_cond_broadcast(&p->settled);   /* fetches may start */
}

/*
 * The writer's copy (replica.h, Locking). Under p->lock: a follower an
 * acks=all writer may copy its batch (ticket t) to: one the ticket
 * counts, with an open log that lacks the batch and no fetch in flight,
 * while the leader's term is the ticket's and no change is quiescing.
 * Its broker, or -1.
 */
int writer_pick(const mk_partition *p, const mk_ack_ticket *t)
{
	if (!p->env->writer_copy || p->quiescing || p->leader < 0 ||
	    p->leader_epoch != t->leader_epoch)
		return -1;
	for (int i = 0; i < p->nreplicas; i++) {
		const mk_replica *r = &p->replicas[i];
		if (i != p->leader && r->log && !r->fetching && t->captured[i] &&
		    mk_log_end_offset(r->log) < t->target)
			return r->broker;
	}
	return -1;
}

static mk_err follower_fetch(mk_partition *p, int broker,
			     const mk_ack_ticket *own, size_t *bytes,
			     bool *behind, bool *skipped);

/*
 * Without the lock, after writer_claim chose `broker`: that replica's
 * fetch on this thread; when it was skipped, failed or left the follower
 * behind, that broker's fetcher is woken for the `bytes` appended
 * instead. Then the same for each other follower the ticket still waits
 * for whose fetch has not started (its fetcher, woken by the append, has
 * not had a CPU yet: on two busy cores it may wait for one as long as
 * this copy took), until one is skipped or fails. Never waits for a
 * fetch.
 */
void writer_copy(mk_partition *p, int broker, const mk_ack_ticket *t,
		 uint64_t bytes)
{
	size_t n;
	bool behind = false, skipped = false;
	mk_err err = follower_fetch(p, broker, t, &n, &behind, &skipped);
	if ((err || skipped || behind) && p->env->fetch_wake)
		p->env->fetch_wake(p->env->fetch_wake_arg, broker, bytes);
	/* Bounded: a capped copy may pick its follower again. */
	for (int k = 0; k < 2 * MK_MAX_BROKERS && !err && !skipped; k++) {
		pthread_mutex_lock(&p->lock);
		broker = writer_pick(p, t);
		pthread_mutex_unlock(&p->lock);
		if (broker < 0)
			return;
		err = follower_fetch(p, broker, t, &n, &behind, &skipped);
	}
}

/*
 * Bring follower f's log in line with the leader before it fetches.
 * Epoch mode (KIP-101/279): find the largest epoch both logs know and cut
 * the follower where that epoch ends on whichever log ends it first.
 * HW mode (the teaching model): a follower longer than the leader is cut to
 * the high watermark.
 */
static mk_err reconcile(mk_partition *p, mk_replica *f, mk_replica *l)
{
	int64_t fleo = mk_log_end_offset(f->log);
	int64_t cut = fleo;
	if (p->env->cfg->truncation == MK_TRUNCATE_EPOCH) {
		int32_t fe = mk_log_latest_epoch(f->log);
		if (fe < 0)
			return MK_OK;
		int32_t le;
		int64_t lend;
		mk_log_end_offset_for_epoch(l->log, fe, &le, &lend);
		if (le < 0) {
			cut = mk_log_start_offset(l->log);
		} else {
			int32_t fe2;
			int64_t fend;
			mk_log_end_offset_for_epoch(f->log, le, &fe2, &fend);
			cut = lend < fend ? lend : fend;
		}
	} else if (fleo > mk_log_end_offset(l->log)) {
		cut = p->hw;
	}
	if (cut >= fleo)
		return MK_OK;
	return truncate_replica(p, (int)(f - p->replicas), cut);
}

/*
 * The follower i and its leader's log start (Kafka's out-of-range handling):
 * before a fetch, a follower whose log ends below the leader's start drops
 * its log and restarts empty there; after one, its own start follows the
 * leader's as far as its log and the HW it knows reach (DeleteRecords and
 * retention reach the followers this way; Kafka's follower never moves
 * its start past its HW). A leader's start past its own log's end is
 * never followed (the log refuses such a checkpoint at open, so it is
 * damage): the follower keeps its records and the fetch fails.
 */
static mk_err follow_log_start(mk_partition *p, int i, bool before)
{
	mk_replica *f = &p->replicas[i], *l = &p->replicas[p->leader];
	int64_t lstart = mk_log_start_offset(l->log);
	int64_t fend = mk_log_end_offset(f->log);
	mk_err err = MK_OK;
	if (lstart > mk_log_end_offset(l->log)) {
		mk_errlog_add(p->env->errlog, mk_wall_ms(), NULL,
			      MK_KAFKA_STORAGE_ERROR,
			      "%s-%d: broker %d's log start %lld is past its log's end %lld: broker %d does not follow it",
			      p->topic, p->id, l->broker, (long long)lstart,
			      (long long)mk_log_end_offset(l->log), f->broker);
		return MK_KAFKA_STORAGE_ERROR;
	}
	if (before && fend < lstart) {
		save_hw(f, lstart);
		if (!(err = mk_log_reset_to(f->log, lstart))) {
			f->hw_view = lstart;
			rebuild_pstate(p, i);
			save_pstate(f);
		}
	} else if (!before && lstart > mk_log_start_offset(f->log)) {
		int64_t to = lstart < fend ? lstart : fend;
		if (to > f->hw_view)
			to = f->hw_view;
		if (to > mk_log_start_offset(f->log))
			err = advance_start(f, to);
	}
	if (err)
		replica_failed(p, i, before ? "reset to the leader's log start"
					    : "log start");
	return err;
}

mk_err mk_partition_follower_fetch(mk_partition *p, int broker)
{
	size_t bytes;
	return mk_partition_follower_fetch_ex(p, broker, &bytes, NULL);
}

/* A follower as its fetch found it (before any truncation). */
typedef struct {
	int64_t leo, start, hw_view;
	bool rejoining;
} fetch_mark;

static fetch_mark fetch_mark_of(const mk_replica *f)
{
	fetch_mark m = { mk_log_end_offset(f->log), mk_log_start_offset(f->log),
			 f->hw_view, f->rejoining };
	return m;
}

/*
 * The third step of a follower fetch, under the lock: whatever the fetch
 * wrote becomes visible. err is the append's. A fetch that moved nothing
 * (a caught-up follower's round) wakes nobody, and one that moved only
 * its copy wakes no acks=all writer it does not settle (part_progressed()):
 * the ISR refresh does when membership or the HW moves.
 */
static mk_err fetch_publish(mk_partition *p, int i, int64_t hw_before,
			    mk_err err, const fetch_mark *m)
{
	mk_replica *f = &p->replicas[i];
	if (err == MK_KAFKA_STORAGE_ERROR)
		replica_failed(p, i, "follower append");
	/* The leader may have failed meanwhile (a storage error of an
	 * append or a read); it cannot have changed (replica.h). */
	if (f->log) {
		int64_t fleo = mk_log_end_offset(f->log);
		f->hw_view = hw_before < fleo ? hw_before : fleo;
	}
	if (f->log && !err && p->leader >= 0 && p->leader != i)
		err = follow_log_start(p, i, false);
	if (f->log) {
		f->rejoining = false;
		f->last_fetch_ms = mk_clock_now(p->env->clock);
	}
	if (err || !f->log || m->rejoining)
		part_changed(p);
	else if (f->hw_view != m->hw_view ||
		 mk_log_end_offset(f->log) != m->leo ||
		 mk_log_start_offset(f->log) != m->start)
		part_progressed(p);
	refresh_isr(p);
	return err;
}

/* The second step, without the lock: append the frames in buf to f's log
 * (its log and producer state are this fetch's alone meanwhile; of p only
 * what never changes is read: its env, topic and id). */
static mk_err fetch_append(mk_partition *p, mk_replica *f, const mk_strbuf *buf,
			   size_t *bytes)
{
	mk_err err = MK_OK;
	/* mk_log_read validated every frame it returned (CRC, records): the
	 * copy is not walked again. */
	mk_frame_iter it;
	mk_batch_view b;
	mk_frame_iter_init(&it, buf->buf, buf->len);
	while (!err && mk_frame_next(&it, &b)) {
		err = mk_log_append_replica_trusted(f->log, it.frame,
						    b.frame_len);
		if (!err) {  /* as the leader does: state follows the log */
			note_append(p, f, it.frame, b.frame_len);
			*bytes += b.frame_len;
		}
	}
	if (!err && it.left)
		err = MK_CORRUPT_MESSAGE;    /* cannot happen */
	return err;
}

/* The offset after the last whole frame in buf (from when none). */
static int64_t frames_end(const mk_strbuf *buf, int64_t from)
{
	mk_frame_iter it;
	mk_batch_view b;
	mk_frame_iter_init(&it, buf->buf, buf->len);
	while (mk_frame_next(&it, &b))
		from = mk_batch_next_offset(&b);
	return from;
}

/*
 * Step 1's read, under the lock: the frames follower i lacks from `from`
 * on: the kept copy when it is that read, else a read of the leader's log
 * (*out: the caller's reference, on an error too).
 */
static mk_err fetch_frames(mk_partition *p, int i, int64_t from,
			   mk_fetch_copy **out)
{
	mk_replica *l = &p->replicas[p->leader];
	mk_err err = MK_OK;
	mk_fetch_copy *fc = copy_reuse(p, from);
	if (fc) {
		copy_keep(p, i, from, fc);    /* the other follower's too */
	} else {
		fc = copy_new();
		p->leader_reads++;
		err = mk_log_read(l->log, from, mk_log_end_offset(l->log),
				  (size_t)p->env->cfg->replica_fetch_max_bytes,
				  &fc->buf);
		if (err == MK_KAFKA_STORAGE_ERROR)
			replica_failed(p, p->leader, "read for follower fetch");
		if (!err)
			copy_keep(p, i, from, fc);
	}
	*out = fc;
	return err;
}

/* Under the lock, before step 2: follower i is being fetched; the others
 * see its log as it is now (replica.h, Locking). */
static void fetch_begin(mk_partition *p, int i, int64_t from,
			const mk_strbuf *buf)
{
	mk_replica *f = &p->replicas[i];
	f->fetching = true;
	f->fetch_leo = from;
	f->fetch_start = mk_log_start_offset(f->log);
	f->fetch_agreed = agreed_end(f, &p->replicas[p->leader]);
	f->fetch_target = frames_end(buf, from);
	f->last_fetch_ms = mk_clock_now(p->env->clock);   /* the request's time */
	p->nfetching++;
}

mk_err mk_partition_follower_fetch_ex(mk_partition *p, int broker,
				      size_t *bytes, bool *behind)
{
	return follower_fetch(p, broker, NULL, bytes, behind, NULL);
}

/*
 * A follower fetch; own: the writer's copy for that acks=all ticket
 * (replica.h), which never waits: *skipped is set when the replica is
 * being fetched or a change is quiescing, and it copies nothing once the
 * leader's epoch moved or the follower has the batch.
 */
static mk_err follower_fetch(mk_partition *p, int broker,
			     const mk_ack_ticket *own, size_t *bytes,
			     bool *behind, bool *skipped)
{
	*bytes = 0;
	if (behind)
		*behind = false;
	mk_fetch_copy *fc = NULL;
	pthread_mutex_lock(&p->lock);
	mk_err err = MK_OK;
	int i;
	/* One fetch per replica at a time, and none while a change waits
	 * for the fetches in flight to end. */
	while ((i = replica_index(p, broker)) >= 0 &&
	       (p->quiescing || p->replicas[i].fetching)) {
		if (own) {
			*skipped = true;
			p->writer_skips++;
			goto out;
		}
		pthread_cond_wait(&p->settled, &p->lock);
	}
	if (i < 0 || p->leader < 0 || i == p->leader || !p->replicas[i].log)
		goto out;
	if (own) {
		if (p->leader_epoch != own->leader_epoch ||
		    mk_log_end_offset(p->replicas[i].log) >= own->target ||
		    atomic_load(p->env->shutting_down))
			goto out;
		p->writer_copies++;
	}
	/* Step 1, under the lock: reconcile, read what the follower lacks. */
	mk_replica *f = &p->replicas[i], *l = &p->replicas[p->leader];
	fetch_mark mark = fetch_mark_of(f);
	err = reconcile(p, f, l);
	if (err) {
		replica_failed(p, i, "truncation");
		goto out;
	}
	if ((err = follow_log_start(p, i, true)))
		goto out;
	int64_t hw_before = p->hw;
	int64_t from = mk_log_end_offset(f->log);
	if ((err = fetch_frames(p, i, from, &fc)))
		goto out;
	const mk_strbuf *buf = &fc->buf;
	if (buf->len == 0) {     /* caught up: nothing to write */
		err = fetch_publish(p, i, hw_before, MK_OK, &mark);
		goto out;
	}
	fetch_begin(p, i, from, buf);
	pthread_mutex_unlock(&p->lock);

	/* Step 2, without the lock: the follower's disk writes. */
	err = fetch_append(p, f, buf, bytes);
	MK_FAILPOINT("replica.fetch.after-append");
	if (p->env->fetch_hook)
		p->env->fetch_hook(p->env->fetch_hook_arg, broker);

	/* Step 3, under the lock: publish. */
	pthread_mutex_lock(&p->lock);
	f->fetching = false;
	p->nfetching--;
	pthread_cond_broadcast(&p->settled);
	err = fetch_publish(p, i, hw_before, err, &mark);
	if (behind && !err && f->log && p->leader >= 0 && p->leader != i)
		*behind = mk_log_end_offset(p->replicas[p->leader].log) >
			  mk_log_end_offset(f->log);
out:
	copy_put(fc);
	pthread_mutex_unlock(&p->lock);
	return err;
}
