/*
 * produce.c — the leader's produce path of one partition: the checks
 * before an append (message.max.bytes, keys on a compacted topic,
 * min.insync.replicas, an idempotent producer's sequence), the append to
 * the leader's log, the wake-up of the follower fetchers, and the acks=all
 * tickets (Kafka's DelayedProduce), looked at one look at a time
 * (mk_partition_ack_check) at the partition's events (the watchers of
 * replica.h): nothing here waits.
 *
 * A ticket (mk_ack_ticket) captures, at append time, the leader's log end
 * (the target), the epoch, the deadline on the cluster clock and the
 * replicas the ISR counted then; it is acknowledged once every captured
 * replica still counted agrees with the leader's log up to the target,
 * and fails when the leader changes (FENCED_LEADER_EPOCH), the committed
 * ISR falls below min.insync.replicas (NOT_ENOUGH_REPLICAS_AFTER_APPEND),
 * or the deadline passes (REQUEST_TIMED_OUT). A ticket decides nothing
 * itself: the ISR (isr.c) decides who counts.
 *
 * Invariants: nothing is appended after a refusal (too large, keyless on
 * a compacted topic, below min.insync.replicas, a bad sequence); an exact
 * retry of an idempotent batch appends nothing; the fetchers are woken
 * with p->lock released (follower_wake).
 *
 * An acks=0 or acks=1 append of manual replication that decided an ISR
 * change (the message-lag rule: every recomputation is a lag check
 * there) stores it before it returns (mk_env.meta_store), so the append
 * completes with its effect on the ISR and the HW, as every step of the
 * manual modes does. An acks=all append need not: the replica it drops
 * stays counted by its ticket until the saver stored the drop, so its
 * acknowledgement comes after the save (and a coordinator appending under
 * its own lock never waits for a save there). In auto mode the saver
 * stores it: no writer waits behind a metadata fsync.
 *
 * Locking: every check, append and ticket look under p->lock; the wake-ups,
 * the writer's copy (follower_fetch.c) and the store after it is released.
 */
#include "replica_internal.h"

#include <assert.h>
#include <stdatomic.h>
#include <string.h>

#include "codec.h"

/* One look at an acks=all ticket, under the lock, the ISR as it stands
 * (no refresh: nothing changes, so it may run inside part_progressed()). */
mk_err ack_look(mk_partition *p, const mk_ack_ticket *t, bool *pending,
		mk_strbuf *why)
{
	const bool *captured = t->captured;
	int64_t target = t->target, deadline = t->deadline_ms;
	int32_t epoch = t->leader_epoch;
	*pending = false;
	if (p->leader < 0 || p->leader_epoch != epoch)
		return mk_error(why, MK_FENCED_LEADER_EPOCH, "leader changed while waiting for acks=all (epoch %d -> %d)",
				epoch, p->leader_epoch);
	if (isr_committed(p) < p->cfg.min_insync_replicas)
		return mk_error(why, MK_NOT_ENOUGH_REPLICAS_AFTER_APPEND, "ISR shrank to %d, below min.insync.replicas=%lld, after the batch was appended",
				isr_committed(p), (long long)p->cfg.min_insync_replicas);
	bool done = true;
	for (int i = 0; i < p->nreplicas; i++) {
		mk_replica *r = &p->replicas[i];
		if (captured[i] && isr_counted(p, r) &&
		    (!r->log || seen_agreed(r, &p->replicas[p->leader]) < target))
			done = false;
	}
	if (done)
		return MK_OK;
	if (mk_clock_now(p->env->clock) >= deadline)
		return mk_error(why, MK_REQUEST_TIMED_OUT, "not acknowledged by the ISR within request.timeout.ms=%lld",
				(long long)p->env->cfg->request_timeout_ms);
	*pending = true;
	return MK_OK;
}

/* One look at an acks=all ticket, under the lock (see ack_check). */
static mk_err ack_state(mk_partition *p, const mk_ack_ticket *t, bool *pending,
			mk_strbuf *why)
{
	refresh_isr(p);
	return ack_look(p, t, pending, why);
}

mk_err mk_partition_ack_check(mk_partition *p, const mk_ack_ticket *t,
			      bool *pending, mk_strbuf *why)
{
	pthread_mutex_lock(&p->lock);
	mk_err err = ack_state(p, t, pending, why);
	pthread_mutex_unlock(&p->lock);
	return err;
}

/* A compacted topic takes keyed records only, as Kafka refuses a keyless
 * one (compaction could not tell what it replaces). The frame is trusted:
 * built by the caller's builder. */
static mk_err check_compacted_keys(const mk_partition *p, const uint8_t *frame,
				   size_t len, mk_strbuf *why)
{
	mk_batch_view b;
	if (!(p->cfg.cleanup_policy & MK_CLEANUP_COMPACT) ||
	    mk_frame_decode_header(frame, len, 0, false, &b, NULL) ||
	    mk_batch_is_control(&b))
		return MK_OK;
	mk_record_iter it;
	mk_record_view rec;
	mk_record_iter_init(&it, &b);
	bool keyless = false;
	while (!keyless && mk_record_next(&it, &rec))
		keyless = rec.key.len < 0;
	mk_record_iter_release(&it);
	if (keyless)
		return mk_error(why, MK_INVALID_RECORD, "keyless record refused: topic %s is compacted (cleanup.policy has compact)",
				p->topic);
	return MK_OK;
}

/* Under p->lock: a batch over message.max.bytes is refused. */
static mk_err check_batch_size(mk_partition *p, size_t len, mk_strbuf *why)
{
	if ((int64_t)len <= p->cfg.message_max_bytes)
		return MK_OK;
	return mk_error(why, MK_MESSAGE_TOO_LARGE, "batch of %zu bytes exceeds message.max.bytes=%lld",
			len, (long long)p->cfg.message_max_bytes);
}

/* Under p->lock: an acks=all append needs min.insync.replicas in the ISR. */
static mk_err check_min_isr(mk_partition *p, mk_strbuf *why)
{
	refresh_isr(p);
	if (isr_committed(p) >= p->cfg.min_insync_replicas)
		return MK_OK;
	return mk_error(why, MK_NOT_ENOUGH_REPLICAS, "ISR has %d replica(s), min.insync.replicas=%lld; nothing appended",
			isr_committed(p), (long long)p->cfg.min_insync_replicas);
}

/* Under p->lock: the leader's log failed an append; it goes offline. */
static void leader_append_failed(mk_partition *p, mk_strbuf *why)
{
	mk_why(why, "append failed: %s",
	       mk_log_error(p->replicas[p->leader].log));
	replica_failed(p, p->leader, "append");
}

/* Under p->lock, right after an append: the acks=all ticket of the
 * leader's log end, with the ISR as it stands. */
static void issue_ticket(mk_partition *p, mk_ack_ticket *t)
{
	t->target = mk_log_end_offset(p->replicas[p->leader].log);
	t->leader_epoch = p->leader_epoch;
	t->deadline_ms = mk_deadline(mk_clock_now(p->env->clock),
				     p->env->cfg->request_timeout_ms);
	for (int i = 0; i < p->nreplicas; i++)
		t->captured[i] = isr_counted(p, &p->replicas[i]);
}

/*
 * The follower fetchers a leader append wakes (mk_env.fetch_wake): the
 * brokers of the partition's other replicas with an open log, taken under
 * the lock after the append and woken once it is released, so that none
 * of them blocks on the lock the appender still holds.
 */
typedef struct {
	int n;
	int brokers[MK_MAX_BROKERS];
	uint64_t bytes;
} follower_wake;

/* Under p->lock, right after a leader append of `bytes`. */
static void wake_take(const mk_partition *p, uint64_t bytes, follower_wake *wk)
{
	wk->n = 0;
	wk->bytes = bytes;
	if (!p->env->fetch_wake || p->leader < 0)
		return;
	for (int i = 0; i < p->nreplicas; i++)
		if (i != p->leader && p->replicas[i].log)
			wk->brokers[wk->n++] = p->replicas[i].broker;
}

/* Once (wk is emptied); env is the cluster's: no lock needed. */
static void wake_run(const mk_partition *p, follower_wake *wk)
{
	for (int k = 0; k < wk->n; k++)
		p->env->fetch_wake(p->env->fetch_wake_arg, wk->brokers[k], wk->bytes);
	wk->n = 0;
}

/* Under p->lock, right after the append: the follower the writer copies
 * to first, taken out of wk (its fetcher need not wake for this append;
 * the others' are woken as usual). */
static int writer_claim(mk_partition *p, const mk_ack_ticket *t,
			follower_wake *wk)
{
	int b = writer_pick(p, t);
	for (int k = 0; k < wk->n && b >= 0; k++)
		if (wk->brokers[k] == b) {
			memmove(&wk->brokers[k], &wk->brokers[k + 1],
				(size_t)(wk->n - k - 1) * sizeof(int));
			wk->n--;
			break;
		}
	return b;
}

/* Under p->lock: check, append, and for acks=all the ticket. wk gets
 * the fetchers to wake once the caller released the lock; *copy the
 * follower the caller then copies to (writer_claim), or -1. */
static mk_err produce_locked(mk_partition *p, uint8_t *frame, size_t len,
			     const mk_produce_args *a, mk_produce_result *res,
			     follower_wake *wk, int *copy, mk_strbuf *why)
{
	wk->n = 0;
	*copy = -1;
	memset(res, 0, sizeof(*res));
	res->base = -1;
	res->count = a->count;
	mk_err err = part_unavailable(p, why);
	if (err)
		return err;
	if ((err = check_batch_size(p, len, why)) ||
	    (a->acks == -1 && (err = check_min_isr(p, why))))
		return err;
	if ((err = check_compacted_keys(p, frame, len, why)))
		return err;
	mk_replica *l = &p->replicas[p->leader];
	if (a->idempotent) {
		int32_t seq = a->seq >= 0 ? a->seq
				: mk_pstate_next_seq(&l->pstate, a->pid, a->epoch);
		const mk_seq_entry *dup;
		err = mk_pstate_check(&l->pstate, a->pid, a->epoch, seq, a->count,
				      &dup, why);
		if (err)
			return err;
		if (dup) {
			res->base = dup->base_offset;
			res->count = dup->last_offset_delta + 1;
			res->duplicate = true;
			return MK_OK;
		}
		mk_frame_set_producer(frame, len, a->pid, a->epoch, seq);
	}
	/* message.timestamp.type = LogAppendTime: the leader's clock. */
	if (p->cfg.log_append_time)
		mk_frame_set_log_append_time(frame, len,
					     mk_clock_now(p->env->clock));
	err = mk_log_append_leader(l->log, frame, len, p->leader_epoch, &res->base);
	if (err) {
		if (err == MK_KAFKA_STORAGE_ERROR)
			leader_append_failed(p, why);
		return err;
	}
	note_append(p, l, frame, len);
	if (a->acks == -1 && a->copy_inline)
		copy_seed(p, &frame, &len, 1, res->base);
	else
		copy_drop(p);
	part_changed(p);
	wake_take(p, len, wk);
	refresh_isr(p);
	if (a->acks != -1)
		return MK_OK;
	mk_ack_ticket *t = &res->ticket;
	issue_ticket(p, t);
	res->pending = true;
	if (a->copy_inline)
		*copy = writer_claim(p, t, wk);
	return MK_OK;
}

mk_err mk_partition_produce(mk_partition *p, uint8_t *frame, size_t len,
			    const mk_produce_args *args, mk_produce_result *res,
			    mk_strbuf *why)
{
	follower_wake wk;
	int copy;
	pthread_mutex_lock(&p->lock);
	mk_err err = produce_locked(p, frame, len, args, res, &wk, &copy, why);
	bool store = args->acks != -1 && isr_store_due(p);
	pthread_mutex_unlock(&p->lock);
	wake_run(p, &wk);
	if (copy >= 0)
		writer_copy(p, copy, &res->ticket, len);
	if (store)
		p->env->meta_store(p->env->meta_arg);
	return err;
}

/* Under p->lock: append frames [0, n) of a produce_many as one run and
 * note them; res gets their bases. */
static mk_err produce_run(mk_partition *p, uint8_t *const *frames,
			  const size_t *lens, size_t n, mk_produce_result *res,
			  size_t *bytes, mk_strbuf *why)
{
	if (n == 0)
		return MK_OK;
	mk_replica *l = &p->replicas[p->leader];
	int64_t bases[MK_LOG_APPEND_MAX];
	size_t done = 0;
	mk_err err = mk_log_append_leader_many(l->log, frames, lens, n,
					       p->leader_epoch, bases, &done);
	for (size_t i = 0; i < done; i++) {
		note_append(p, l, frames[i], lens[i]);
		res[i].base = bases[i];
		mk_batch_view bv;
		if (!mk_frame_decode_header(frames[i], lens[i], 0, false, &bv, NULL))
			res[i].count = bv.record_count;
		*bytes += lens[i];
	}
	if (err == MK_KAFKA_STORAGE_ERROR)
		leader_append_failed(p, why);
	return err;
}

mk_err mk_partition_produce_many(mk_partition *p, uint8_t *const *frames,
				 const size_t *lens, size_t n,
				 const mk_produce_args *a,
				 mk_produce_result *res, mk_strbuf *why)
{
	assert(!a->idempotent && n <= MK_LOG_APPEND_MAX);
	for (size_t i = 0; i < n; i++) {
		memset(&res[i], 0, sizeof(res[i]));
		res[i].base = -1;
	}
	pthread_mutex_lock(&p->lock);
	mk_err err = part_unavailable(p, why);
	if (!err && a->acks == -1)
		err = check_min_isr(p, why);
	if (err) {
		pthread_mutex_unlock(&p->lock);
		return err;
	}
	/* As one at a time: a frame refused on its own (too large, a keyless
	 * record on a compacted topic) is skipped, the others go on; the
	 * frames between two refused ones are one run. */
	size_t run = 0, bytes = 0, last = n;
	mk_err first = MK_OK;
	for (size_t i = 0; i <= n && !err; i++) {
		mk_err refused = MK_OK;
		if (i < n && !(refused = check_batch_size(p, lens[i], NULL)))
			refused = check_compacted_keys(p, frames[i], lens[i], NULL);
		if (i < n && !refused)
			continue;
		err = produce_run(p, frames + run, lens + run, i - run,
				  res + run, &bytes, why);
		for (size_t k = run; k < i; k++)
			if (res[k].base >= 0)
				last = k;
		/* The run's failure comes before the refusal, as it would
		 * one at a time (which then stops). */
		if (err && !first)
			first = err;
		if (refused && !first) {
			/* Again, for its reason in why. */
			first = refused;
			if (!check_batch_size(p, lens[i], why))
				check_compacted_keys(p, frames[i], lens[i], why);
		}
		run = i + 1;
	}
	if (err && !first)
		first = err;
	follower_wake wk = { 0 };
	if (last < n) {
		/* Seeded only when every frame went in (one run). */
		if (a->acks == -1 && a->copy_inline && !first)
			copy_seed(p, frames, lens, n, res[0].base);
		else
			copy_drop(p);
		part_changed(p);
		wake_take(p, bytes, &wk);
	}
	/* A storage error took the leader offline: nothing more to do. */
	int copy = -1;
	if (last < n && !err) {
		refresh_isr(p);
		if (a->acks == -1) {
			/* One ticket, for the last: the others are below it. */
			issue_ticket(p, &res[last].ticket);
			res[last].pending = true;
			if (a->copy_inline)
				copy = writer_claim(p, &res[last].ticket, &wk);
		}
	}
	bool store = a->acks != -1 && isr_store_due(p);
	pthread_mutex_unlock(&p->lock);
	wake_run(p, &wk);
	if (copy >= 0)
		writer_copy(p, copy, &res[last].ticket, bytes);
	if (store)
		p->env->meta_store(p->env->meta_arg);
	return first;
}

int32_t mk_partition_next_sequence(mk_partition *p, int64_t pid, int16_t epoch)
{
	pthread_mutex_lock(&p->lock);
	int32_t seq = -1;
	if (p->leader >= 0) {
		const mk_producer_entry *e =
			mk_pstate_find(&p->replicas[p->leader].pstate, pid);
		if (e && e->epoch == epoch)
			seq = mk_pstate_next_seq(&p->replicas[p->leader].pstate, pid, epoch);
	}
	pthread_mutex_unlock(&p->lock);
	return seq;
}
