/*
 * accumulator.c — per-partition open batches of a topic-level producer.
 */
#include "accumulator.h"

#include <stdlib.h>
#include <string.h>

#include "partitioner.h"

typedef struct {
	mk_batch_builder b;
	bool open;
	int64_t created_ms;
} slot;

typedef struct {
	int partition;
	mk_ack_ticket ticket;
} pending_ack;

struct mk_accumulator {
	pthread_mutex_t lock;
	mk_cluster *c;
	mk_topic *t;
	mk_accumulator_opts o;
	int n;
	slot *slots;
	int sticky;
	pending_ack *pending;
	size_t npending, pending_alloc;
	mk_err deferred;          /* first error of a send no writer waited on */
	mk_strbuf deferred_why;
};

static const mk_batch_meta plain_meta = {
	.flags = 0, .base_offset = 0, .leader_epoch = 0, .producer_id = -1,
	.producer_epoch = -1, .base_sequence = -1, .txn_id = { NULL, -1 },
};

mk_accumulator *mk_accumulator_new(mk_cluster *c, mk_topic *t,
				   const mk_accumulator_opts *opts)
{
	mk_accumulator *acc = calloc(1, sizeof(*acc));
	if (!acc)
		abort();
	pthread_mutex_init(&acc->lock, NULL);
	acc->c = c;
	acc->t = t;
	atomic_fetch_add(&t->refs, 1);
	acc->o = *opts;
	acc->n = t->npartitions;
	acc->slots = calloc((size_t)acc->n, sizeof(*acc->slots));
	for (int i = 0; i < acc->n; i++)
		mk_builder_init(&acc->slots[i].b, &plain_meta);
	mk_strbuf_init(&acc->deferred_why, 0);
	mk_cluster_add_accumulator(c, acc);
	return acc;
}

/* Send partition i's open batch. Under acc->lock. */
static mk_err send_slot(mk_accumulator *acc, int i, bool wait,
			const mk_waiter *w, mk_strbuf *why)
{
	slot *s = &acc->slots[i];
	if (!s->open)
		return MK_OK;
	s->open = false;
	mk_builder_finish(&s->b);
	mk_produce_args a = {
		.acks = acc->o.idempotent ? -1 : acc->o.acks,
		.idempotent = acc->o.idempotent,
		.pid = acc->o.pid,
		.epoch = acc->o.epoch,
		.seq = -1,
		.count = s->b.count,
		.defer_ack = !wait,
	};
	mk_produce_result res;
	mk_err err = mk_partition_produce_ex(mk_topic_partition(acc->t, i),
					     (uint8_t *)s->b.frame.buf, s->b.frame.len,
					     &a, w, &res, why);
	mk_builder_reset(&s->b, &plain_meta);
	/* Keyless records move on once their partition's batch closed. */
	if (i == acc->sticky)
		acc->sticky = (acc->sticky + 1) % acc->n;
	if (res.base >= 0 && acc->o.receipt &&
	    (!err || err == MK_NOT_ENOUGH_REPLICAS_AFTER_APPEND ||
	     err == MK_REQUEST_TIMED_OUT || err == MK_FENCED_LEADER_EPOCH))
		acc->o.receipt(acc->o.receipt_arg, acc->t->name, i, res.base,
			       res.count, a.acks);
	if (!err && res.pending) {
		if (acc->npending == acc->pending_alloc) {
			acc->pending_alloc = acc->pending_alloc ? acc->pending_alloc * 2 : 8;
			acc->pending = realloc(acc->pending,
					       acc->pending_alloc * sizeof(*acc->pending));
			if (!acc->pending)
				abort();
		}
		acc->pending[acc->npending++] = (pending_ack){ i, res.ticket };
	}
	return err;
}

/* Keep the first error of an unattended send for the next caller. */
static void defer_error(mk_accumulator *acc, mk_err err, mk_strbuf *why)
{
	if (err && !acc->deferred) {
		acc->deferred = err;
		mk_strbuf_reset(&acc->deferred_why);
		mk_strbuf_add(&acc->deferred_why, why->buf, why->len);
	}
}

static mk_err take_deferred(mk_accumulator *acc, mk_strbuf *why)
{
	mk_err err = acc->deferred;
	if (err) {
		if (why)
			mk_strbuf_add(why, acc->deferred_why.buf, acc->deferred_why.len);
		acc->deferred = MK_OK;
	}
	return err;
}

mk_err mk_accumulator_add(mk_accumulator *acc, mk_bytes key, mk_bytes value,
			  const mk_header *headers, size_t nheaders,
			  int64_t timestamp, const mk_waiter *w, mk_strbuf *why)
{
	pthread_mutex_lock(&acc->lock);
	mk_err err = MK_OK;
	int i = key.len >= 0 ? mk_partition_for_key(key, acc->n) : acc->sticky;
	slot *s = &acc->slots[i];
	/* A record that does not fit closes the open batch first (Kafka's
	 * rule); a keyless one then follows the sticky partition onwards. */
	size_t one = mk_frame_size_of_one(key, value, headers, nheaders);
	if (s->open && (int64_t)(mk_builder_size(&s->b) + one - MK_FRAME_EMPTY_SIZE) >
		       acc->o.batch_size) {
		err = send_slot(acc, i, true, w, why);
		if (key.len < 0) {
			i = acc->sticky;
			s = &acc->slots[i];
		}
	}
	bool wake = false;
	if (!s->open) {
		s->open = true;
		s->created_ms = mk_clock_now(&acc->c->clock);
		wake = acc->o.linger_ms > 0;
	}
	mk_builder_add(&s->b, timestamp, key, value, headers, nheaders);
	if ((int64_t)mk_builder_size(&s->b) >= acc->o.batch_size) {
		mk_err sent = send_slot(acc, i, true, w, why);
		if (!err)
			err = sent;
	}
	pthread_mutex_unlock(&acc->lock);
	/* After unlocking: acc_lock is never taken under an acc->lock. */
	if (wake)
		mk_cluster_wake_sender(acc->c);
	return err;
}

/* Send what is due at `now` (everything when now is INT64_MAX). */
static mk_err send_due(mk_accumulator *acc, int64_t now, bool wait,
		       const mk_waiter *w, mk_strbuf *why)
{
	mk_err first = MK_OK;
	/* Keyless records move on by one partition when the sticky
	 * partition's batch closes, however many other batches close with
	 * it (send_slot alone would step again for each following one). */
	int sticky = acc->sticky;
	bool moved = false;
	for (int i = 0; i < acc->n; i++) {
		slot *s = &acc->slots[i];
		if (!s->open ||
		    (now != INT64_MAX && mk_deadline(s->created_ms, acc->o.linger_ms) > now))
			continue;
		if (i == sticky)
			moved = true;
		mk_err err = send_slot(acc, i, wait, w, why);
		if (err && !first)
			first = err;
	}
	acc->sticky = moved ? (sticky + 1) % acc->n : sticky;
	return first;
}

mk_err mk_accumulator_end_write(mk_accumulator *acc, const mk_waiter *w,
				mk_strbuf *why)
{
	pthread_mutex_lock(&acc->lock);
	mk_err err = take_deferred(acc, why);
	mk_err sent = send_due(acc, mk_clock_now(&acc->c->clock), true, w, why);
	if (!err)
		err = sent;
	pthread_mutex_unlock(&acc->lock);
	return err;
}

mk_err mk_accumulator_flush(mk_accumulator *acc, const mk_waiter *w,
			    mk_strbuf *why)
{
	pthread_mutex_lock(&acc->lock);
	mk_err err = take_deferred(acc, why);
	mk_err sent = send_due(acc, INT64_MAX, true, w, why);
	if (!err)
		err = sent;
	for (size_t k = 0; k < acc->npending; k++) {
		pending_ack *pa = &acc->pending[k];
		mk_err e = mk_partition_await(mk_topic_partition(acc->t, pa->partition),
					      &pa->ticket, w, why);
		if (e && !err)
			err = e;
	}
	acc->npending = 0;
	pthread_mutex_unlock(&acc->lock);
	return err;
}

void mk_accumulator_tick(mk_accumulator *acc, int64_t now)
{
	if (pthread_mutex_trylock(&acc->lock))
		return;    /* a writer is in: it sends its own due batches */
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = send_due(acc, now, false, NULL, &why);
	if (err) {
		mk_errlog_add(&acc->c->errlog, mk_clock_now(&acc->c->clock), NULL, err,
			      "lingering batch of topic %s: %s", acc->t->name, why.buf);
		defer_error(acc, err, &why);
	}
	pthread_mutex_unlock(&acc->lock);
	mk_strbuf_release(&why);
}

int64_t mk_accumulator_deadline(mk_accumulator *acc)
{
	int64_t d = INT64_MAX;
	if (pthread_mutex_trylock(&acc->lock))
		return d;
	for (int i = 0; i < acc->n; i++)
		if (acc->slots[i].open &&
		    mk_deadline(acc->slots[i].created_ms, acc->o.linger_ms) < d)
			d = mk_deadline(acc->slots[i].created_ms, acc->o.linger_ms);
	pthread_mutex_unlock(&acc->lock);
	return d;
}

void mk_accumulator_free(mk_accumulator *acc, const mk_waiter *w)
{
	if (!acc)
		return;
	mk_cluster_remove_accumulator(acc->c, acc);
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_accumulator_flush(acc, w, &why);
	if (err)
		mk_errlog_add(&acc->c->errlog, mk_clock_now(&acc->c->clock), NULL, err,
			      "closing a producer of topic %s: %s", acc->t->name, why.buf);
	mk_strbuf_release(&why);
	for (int i = 0; i < acc->n; i++)
		mk_builder_release(&acc->slots[i].b);
	free(acc->slots);
	free(acc->pending);
	mk_strbuf_release(&acc->deferred_why);
	mk_topic_put(acc->t);
	pthread_mutex_destroy(&acc->lock);
	free(acc);
}
