/*
 * producer.c — producers of append descriptors, their batches, and the
 * sender that sends lingering batches on the system clock.
 */
#include "producer.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "partitioner.h"

/* ---- the registry and the sender ------------------------------------- */

struct mk_producers {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	mk_cluster *c;
	mk_producer **list;       /* topic producers (they may linger) */
	size_t n, alloc;
	pthread_t sender;
	bool sender_started;
	bool stop;
};

typedef struct {
	mk_batch_builder b;
	bool open;
	int64_t created_ms;
	/* Batches closed during the current append, produced together at its
	 * end (see combine); empty between appends. Their frames' buffers are
	 * swapped with the builder's, never copied. */
	mk_strbuf *held;
	size_t nheld, held_cap;
} slot;

typedef struct {
	int partition;
	int32_t seq_advance;      /* explicit seq=: how far a success moves it */
	mk_ack_ticket ticket;
} owed_ack;

typedef struct {
	owed_ack *v;
	size_t n, alloc;
} ack_list;

struct mk_producer {
	pthread_mutex_t lock;
	mk_producers *ps;
	mk_cluster *c;
	mk_topic *t;
	int partition;            /* fixed, or MK_PARTITION_ANY */
	int acks;
	bool idempotent;
	uint8_t codec;            /* the topic's compression.type for a file
				   * append (producer: none), as of the last
				   * append; under lock */
	char *name;               /* the producer identity, when idempotent */
	mk_txns *txns;            /* transactional: the coordinator, */
	char *txn;                /* and the transactional id */
	int64_t pid;
	int16_t epoch;
	int32_t next_seq;         /* explicit seq=: the next; else -1 */
	int64_t batch_size;
	int64_t linger_ms;
	bool keep_receipts;

	/* A topic producer without identity: the batches one append closes
	 * for a partition are produced together at its end, one append of
	 * several frames (mk_partition_produce_many, one write system call
	 * per partition instead of one per batch). */
	bool combine;
	int n;                    /* partitions of a topic producer */
	slot *slots;              /* one open batch per partition */
	int sticky;               /* keyless records' partition; -1 unset */
	ack_list owed;            /* appended by the current call */
	ack_list pending;         /* appended by the sender: checked with all */
	mk_err deferred;          /* first error of a send nobody waited on */
	mk_strbuf deferred_why;
	mk_err checked;           /* first error settled by mk_producer_check */
	mk_strbuf checked_why;
	mk_receipt *receipts;
	size_t nreceipts, receipts_alloc;
	/* A transactional producer's batches that wait for their partition's
	 * registration with the coordinator (mk_txn_begin_write left its call
	 * pending), oldest first: each is appended once its partition is
	 * registered (registration_drive), in order, so nothing overtakes
	 * them. reg_call is the registration of reg[0]'s partition. */
	struct held_batch {
		int part;
		bool owed;
		mk_strbuf frame;
		int32_t count;
	} *reg;
	size_t nreg, reg_cap;
	mk_coord_call reg_call;
	/* A topic append's scratch: each record's size in a batch and the
	 * partition of a keyed one (-1: keyless, sticky); for an append of
	 * keyed records only, the records and their plan grouped by
	 * partition (group_by_partition), and where each partition's go. */
	/* size: a record's mk_record_body_size (its bytes but the deltas) */
	struct rec_plan { size_t size; int part; } *plan, *gplan;
	mk_record_in *grouped;
	size_t plan_cap;
	size_t *next;
};

static const mk_batch_meta plain_meta = {
	.flags = 0, .base_offset = 0, .leader_epoch = 0, .producer_id = -1,
	.producer_epoch = -1, .base_sequence = -1,
};
static const mk_batch_meta txn_meta = {
	.flags = MK_BATCH_TRANSACTIONAL, .base_offset = 0, .leader_epoch = 0,
	.producer_id = -1, .producer_epoch = -1, .base_sequence = -1,
};

/* The batch fields a producer's builders start from. */
static const mk_batch_meta *meta_of(const mk_producer *p)
{
	return p->txn ? &txn_meta : &plain_meta;
}

static mk_err send_due(mk_producer *p, int64_t now, bool owed, mk_strbuf *why);
static void defer_error(mk_producer *p, mk_err err, mk_strbuf *why);

/* The sender, or an advance of the manual clock: send what is due without
 * waiting. Under ps->lock; each producer is only try-locked. */
static int64_t tick_all(mk_producers *ps)
{
	int64_t now = mk_clock_now(&ps->c->clock), next = INT64_MAX;
	for (size_t i = 0; i < ps->n; i++) {
		mk_producer *p = ps->list[i];
		if (pthread_mutex_trylock(&p->lock))
			continue;   /* a writer is in: it sends its own due batches */
		mk_strbuf why = MK_STRBUF_INIT;
		mk_err err = send_due(p, now, false, &why);
		if (err) {
			mk_errlog_add(&p->c->errlog, now, NULL, err,
				      "lingering batch of topic %s: %s", p->t->name, why.buf);
			defer_error(p, err, &why);
		}
		mk_strbuf_release(&why);
		pthread_mutex_unlock(&p->lock);
		int64_t d = mk_producer_deadline(p);
		if (d < next)
			next = d;
	}
	return next;
}

static void clock_moved(void *arg)
{
	mk_producers *ps = arg;
	pthread_mutex_lock(&ps->lock);
	tick_all(ps);
	pthread_mutex_unlock(&ps->lock);
}

static void *sender_main(void *arg)
{
	mk_producers *ps = arg;
	pthread_mutex_lock(&ps->lock);
	while (!ps->stop) {
		int64_t next = tick_all(ps);
		if (next == INT64_MAX) {
			/* Nothing lingers: a batch that starts to wakes us. */
			pthread_cond_wait(&ps->cond, &ps->lock);
			continue;
		}
		/* Until the first linger deadline; at most a second, so that a
		 * step of the system clock delays a batch by a second at most. */
		int64_t wait = next - mk_clock_now(&ps->c->clock);
		if (wait > 1000)
			wait = 1000;
		if (wait < 1)
			wait = 1;
		struct timespec ts = mk_timespec_after_ms(CLOCK_REALTIME, wait);
		pthread_cond_timedwait(&ps->cond, &ps->lock, &ts);
	}
	pthread_mutex_unlock(&ps->lock);
	return NULL;
}

mk_producers *mk_producers_new(mk_cluster *c)
{
	mk_producers *ps = mk_xcalloc(1, sizeof(*ps));
	pthread_mutex_init(&ps->lock, NULL);
	pthread_cond_init(&ps->cond, NULL);
	ps->c = c;
	mk_cluster_on_clock(c, clock_moved, ps);
	return ps;
}

/* Register a topic producer; the sender starts with the first one that
 * lingers on the system clock (after daemonizing: threads survive). */
static void registry_add(mk_producers *ps, mk_producer *p)
{
	pthread_mutex_lock(&ps->lock);
	if (ps->n == ps->alloc) {
		ps->alloc = ps->alloc ? ps->alloc * 2 : 16;
		ps->list = mk_xrealloc(ps->list, ps->alloc * sizeof(*ps->list));
	}
	ps->list[ps->n++] = p;
	if (p->linger_ms > 0 && !ps->c->clock.manual && !ps->sender_started &&
	    !ps->stop && pthread_create(&ps->sender, NULL, sender_main, ps) == 0)
		ps->sender_started = true;
	pthread_mutex_unlock(&ps->lock);
}

static void registry_remove(mk_producers *ps, mk_producer *p)
{
	pthread_mutex_lock(&ps->lock);
	for (size_t i = 0; i < ps->n; i++)
		if (ps->list[i] == p) {
			ps->list[i] = ps->list[--ps->n];
			break;
		}
	pthread_mutex_unlock(&ps->lock);
}

static void wake_sender(mk_producers *ps)
{
	pthread_mutex_lock(&ps->lock);
	pthread_cond_broadcast(&ps->cond);
	pthread_mutex_unlock(&ps->lock);
}

void mk_producers_free(mk_producers *ps)
{
	if (!ps)
		return;
	mk_cluster_off_clock(ps->c, clock_moved, ps);
	pthread_mutex_lock(&ps->lock);
	ps->stop = true;
	pthread_cond_broadcast(&ps->cond);
	pthread_mutex_unlock(&ps->lock);
	if (ps->sender_started)
		pthread_join(ps->sender, NULL);
	/* Producers still open (a stop with files open): send their batches
	 * and take one last look at what they are owed (mk_producer_close). */
	for (;;) {
		pthread_mutex_lock(&ps->lock);
		mk_producer *p = ps->n ? ps->list[ps->n - 1] : NULL;
		pthread_mutex_unlock(&ps->lock);
		if (!p)
			break;
		mk_strbuf why = MK_STRBUF_INIT;
		mk_err err = mk_producer_close(p, &why);
		if (err)
			mk_errlog_add(&ps->c->errlog, mk_clock_now(&ps->c->clock), NULL,
				      err, "closing a producer at stop: %s", why.buf);
		mk_strbuf_release(&why);
	}
	free(ps->list);
	pthread_cond_destroy(&ps->cond);
	pthread_mutex_destroy(&ps->lock);
	free(ps);
}

/* ---- open ---------------------------------------------------------------- */

/* txn=ID: an idempotent producer with the id's producer id and epoch,
 * acks=all, writing transactional batches (txn.h). */
static mk_err open_txn(mk_producer *p, const mk_producer_opts *o, mk_strbuf *why)
{
	if (o->producer && o->producer[0]) {
		mk_strbuf_addstr(why, "txn= and producer= do not go together (a transactional id has its own producer id)");
		return MK_INVALID_REQUEST;
	}
	if (o->seq >= 0) {
		mk_strbuf_addstr(why, "seq= is not for transactional writes");
		return MK_INVALID_REQUEST;
	}
	if (o->acks != MK_PRODUCER_ACKS_DEFAULT && o->acks != -1) {
		mk_strbuf_addstr(why, "a transactional producer writes with acks=all");
		return MK_INVALID_REQUEST;
	}
	if (!o->txns) {
		mk_strbuf_addf(why, "no transactional id %s", o->txn);
		return MK_TRANSACTIONAL_ID_NOT_FOUND;
	}
	mk_err err = mk_txn_producer(o->txns, o->txn, &p->pid, &p->epoch, why);
	if (err)
		return err;
	p->idempotent = true;
	p->txns = o->txns;
	p->txn = mk_xstrdup(o->txn);
	p->acks = -1;
	return MK_OK;
}

static mk_err open_rules(mk_producer *p, const mk_producer_opts *o, mk_strbuf *why)
{
	mk_cluster *c = p->c;
	p->acks = o->acks == MK_PRODUCER_ACKS_DEFAULT ? (int)c->cfg.acks : o->acks;
	p->next_seq = -1;
	if (o->txn && o->txn[0])
		return open_txn(p, o, why);
	if (!o->producer || !o->producer[0])
		return MK_OK;
	if (mk_cluster_producer_get(c, o->producer, &p->pid, &p->epoch)) {
		mk_strbuf_addf(why, "no producer %s (mkdir /producers/%s first)",
			       o->producer, o->producer);
		return MK_UNKNOWN_PRODUCER_ID;
	}
	if (o->acks != MK_PRODUCER_ACKS_DEFAULT && o->acks != -1) {
		mk_strbuf_addstr(why, "an idempotent producer writes with acks=all");
		return MK_INVALID_REQUEST;
	}
	if (o->seq >= 0 && p->partition == MK_PARTITION_ANY) {
		mk_strbuf_addstr(why, "seq= is for partition append files (a topic append spreads over partitions)");
		return MK_INVALID_REQUEST;
	}
	if (o->seq > INT32_MAX) {
		mk_strbuf_addstr(why, "seq= is at most 2147483647");
		return MK_INVALID_REQUEST;
	}
	p->idempotent = true;
	p->name = mk_xstrdup(o->producer);
	p->acks = -1;
	p->next_seq = (int32_t)o->seq;
	return MK_OK;
}

static void producer_free(mk_producer *p)
{
	for (int i = 0; i < p->n; i++) {
		mk_builder_release(&p->slots[i].b);
		for (size_t k = 0; k < p->slots[i].held_cap; k++)
			mk_strbuf_release(&p->slots[i].held[k]);
		free(p->slots[i].held);
	}
	free(p->slots);
	free(p->owed.v);
	free(p->pending.v);
	free(p->receipts);
	mk_coord_call_forget(&p->reg_call);
	for (size_t i = 0; i < p->nreg; i++)
		mk_strbuf_release(&p->reg[i].frame);
	free(p->reg);
	free(p->plan);
	free(p->gplan);
	free(p->grouped);
	free(p->next);
	free(p->name);
	free(p->txn);
	mk_strbuf_release(&p->deferred_why);
	mk_strbuf_release(&p->checked_why);
	mk_topic_put(p->t);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

mk_err mk_producer_open(mk_producers *ps, mk_topic *t, int partition,
			const mk_producer_opts *o, mk_producer **out,
			mk_strbuf *why)
{
	*out = NULL;
	if (partition != MK_PARTITION_ANY && !mk_topic_partition(t, partition)) {
		mk_strbuf_addf(why, "no partition %s/%d", t->name, partition);
		return MK_UNKNOWN_TOPIC_OR_PARTITION;
	}
	mk_producer *p = mk_xcalloc(1, sizeof(*p));
	pthread_mutex_init(&p->lock, NULL);
	p->ps = ps;
	p->c = ps->c;
	p->t = t;
	atomic_fetch_add(&t->refs, 1);
	p->partition = partition;
	p->sticky = -1;
	p->batch_size = o->limits ? o->limits->batch_size : ps->c->cfg.batch_size;
	p->linger_ms = o->limits ? o->limits->linger_ms : ps->c->cfg.linger_ms;
	p->keep_receipts = o->keep_receipts;
	mk_strbuf_init(&p->deferred_why, 0);
	mk_strbuf_init(&p->checked_why, 0);
	mk_err err = open_rules(p, o, why);
	if (err) {
		producer_free(p);
		return err;
	}
	if (partition == MK_PARTITION_ANY) {
		p->n = t->npartitions;
		p->slots = mk_xcalloc((size_t)p->n, sizeof(*p->slots));
		p->next = mk_xcalloc((size_t)p->n, sizeof(*p->next));
		for (int i = 0; i < p->n; i++)
			mk_builder_init(&p->slots[i].b, meta_of(p));
		p->combine = !p->idempotent && !p->txn;
		registry_add(ps, p);
	} else {
		p->n = 1;
		p->slots = mk_xcalloc(1, sizeof(*p->slots));
		mk_builder_init(&p->slots[0].b, meta_of(p));
	}
	*out = p;
	return MK_OK;
}

/* ---- sending one batch ---------------------------------------------------- */

static void ack_push(ack_list *l, owed_ack a)
{
	if (l->n == l->alloc) {
		l->alloc = l->alloc ? l->alloc * 2 : 8;
		l->v = mk_xrealloc(l->v, l->alloc * sizeof(*l->v));
	}
	l->v[l->n++] = a;
}

static void add_receipt(mk_producer *p, int partition, int64_t base,
			int32_t count)
{
	if (!p->keep_receipts)
		return;
	if (p->nreceipts == p->receipts_alloc) {
		p->receipts_alloc = p->receipts_alloc ? p->receipts_alloc * 2 : 8;
		p->receipts = mk_xrealloc(p->receipts, p->receipts_alloc * sizeof(*p->receipts));
	}
	p->receipts[p->nreceipts++] = (mk_receipt){ partition, base, count, p->acks };
}

/* Append one finished batch of the producer's to partition part: its
 * receipt, its ticket (owed: the caller checks it; else the pending
 * list, which a check with all takes) and, for seq=, the next sequence.
 * A transactional batch's partition is registered already, and the write
 * is in flight for the coordinator until this returns (txn.h). Under
 * p->lock. */
static mk_err produce_frame(mk_producer *p, int part, uint8_t *frame,
			    size_t len, int32_t count, bool owed, bool *appended,
			    mk_strbuf *why)
{
	mk_produce_args a = {
		.acks = p->acks,
		.idempotent = p->idempotent,
		.pid = p->pid,
		.epoch = p->epoch,
		.seq = p->next_seq,
		.count = count,
		/* The writer looks after an owed ticket: in auto mode its thread
		 * copies the batch to one follower (replica.h). Not acks=1
		 * nor 0 (Kafka's leader answers those without followers),
		 * nor a batch the sender sends in the background. */
		.copy_inline = owed && p->acks == -1,
	};
	mk_produce_result res = { .base = -1 };
	mk_err err = mk_partition_produce(mk_topic_partition(p->t, part), frame, len,
					  &a, &res, why);
	if (p->txn)
		mk_txn_end_write(p->txns, p->txn);
	*appended = res.base >= 0;
	if (res.base >= 0)
		add_receipt(p, part, res.base, res.count);
	int32_t advance = p->next_seq >= 0 && res.base >= 0 ? res.count : 0;
	if (!err && res.pending)
		ack_push(owed ? &p->owed : &p->pending,
			 (owed_ack){ part, advance, res.ticket });
	else if (!err)
		p->next_seq += advance;
	return err;
}

/* Keep a transactional batch until its partition's registration (and
 * every batch held before it) is done. Under p->lock. */
static void hold_for_registration(mk_producer *p, int part, bool owed,
				  const mk_strbuf *frame, int32_t count)
{
	if (p->nreg == p->reg_cap) {
		p->reg_cap = p->reg_cap ? 2 * p->reg_cap : 4;
		p->reg = mk_xreallocarray(p->reg, p->reg_cap, sizeof(*p->reg));
	}
	struct held_batch *hb = &p->reg[p->nreg++];
	hb->part = part;
	hb->owed = owed;
	hb->count = count;
	mk_strbuf_init(&hb->frame, frame->len);
	mk_strbuf_add(&hb->frame, frame->buf, frame->len);
}

/* Register part for the transaction (txn.h): MK_OK with *now when the
 * batch may be appended at once, else the call is pending. */
static mk_err register_partition(mk_producer *p, int part, bool *now,
				 mk_strbuf *why)
{
	mk_err err = mk_txn_begin_write(p->txns, p->txn, p->pid, p->epoch,
					p->t->name, part, &p->reg_call, why);
	*now = !err && !mk_coord_call_pending(&p->reg_call);
	return err;
}

/*
 * The held batches, oldest first: the pending registration looked at
 * (mk_coord_call_resume), and each batch whose partition is registered
 * appended; stops at the first registration still pending. A batch whose
 * registration failed is dropped, its error kept for the next check (as
 * an acknowledgement's failure is). Under p->lock.
 */
static void registration_drive(mk_producer *p)
{
	mk_strbuf one = MK_STRBUF_INIT;
	while (p->nreg) {
		struct held_batch *hb = &p->reg[0];
		mk_strbuf_reset(&one);
		bool now = false;
		mk_err err;
		if (mk_coord_call_pending(&p->reg_call)) {
			err = mk_coord_call_resume(&p->reg_call, &one);
			now = !err && !mk_coord_call_pending(&p->reg_call);
		} else {
			err = register_partition(p, hb->part, &now, &one);
		}
		if (!err && !now)
			break;
		bool appended;
		if (!err)
			err = produce_frame(p, hb->part, (uint8_t *)hb->frame.buf,
					    hb->frame.len, hb->count, hb->owed, &appended, &one);
		if (err && !p->checked) {
			p->checked = err;
			mk_strbuf_reset(&p->checked_why);
			mk_strbuf_add(&p->checked_why, one.buf, one.len);
		}
		mk_strbuf_release(&hb->frame);
		memmove(p->reg, p->reg + 1, (p->nreg - 1) * sizeof(*p->reg));
		p->nreg--;
	}
	mk_strbuf_release(&one);
}

/*
 * Produce slot s's batch to partition part (sent now: the writer's, owed,
 * or the sender's). A transactional batch's partition joins the
 * transaction first (which may begin it), persisted before the data is
 * appended: when that registration is still owed (its record awaits the
 * ISR), the batch is held (registration_drive appends it later) and
 * counts as taken. *appended: the leader took it, or it is held. Under
 * p->lock.
 */
static mk_err produce_slot(mk_producer *p, slot *s, int part, bool owed,
			   bool *appended, mk_strbuf *why)
{
	mk_builder_set_codec(&s->b, p->codec);
	mk_builder_finish(&s->b);
	mk_err err = MK_OK;
	bool now = true;
	if (p->txn && p->nreg)
		now = false;      /* behind the held ones */
	else if (p->txn)
		err = register_partition(p, part, &now, why);
	*appended = false;
	if (!err && now)
		err = produce_frame(p, part, (uint8_t *)s->b.frame.buf, s->b.frame.len,
				    s->b.count, owed, appended, why);
	else if (!err) {
		hold_for_registration(p, part, owed, &s->b.frame, s->b.count);
		*appended = true;
	}
	mk_builder_reset(&s->b, meta_of(p));
	s->open = false;
	return err;
}

/* Send partition i's open batch of a topic producer. Under p->lock. */
static mk_err send_slot(mk_producer *p, int i, bool owed, mk_strbuf *why)
{
	slot *s = &p->slots[i];
	if (!s->open)
		return MK_OK;
	bool appended;
	return produce_slot(p, s, i, owed, &appended, why);
}

/* Close partition i's open batch into its held list (combine). */
static void hold_slot(mk_producer *p, int i)
{
	slot *s = &p->slots[i];
	mk_builder_set_codec(&s->b, p->codec);
	mk_builder_finish(&s->b);
	if (s->nheld == s->held_cap) {
		size_t cap = s->held_cap ? s->held_cap * 2 : 4;
		s->held = mk_xreallocarray(s->held, cap, sizeof(*s->held));
		for (size_t k = s->held_cap; k < cap; k++)
			mk_strbuf_init(&s->held[k], 0);
		s->held_cap = cap;
	}
	mk_strbuf spare = s->held[s->nheld];
	s->held[s->nheld++] = s->b.frame;
	s->b.frame = spare;
	mk_builder_reset(&s->b, meta_of(p));
	s->open = false;
}

/* Produce partition i's held batches, in order, as one append. Tickets go
 * to the owed list (the caller checks them); owed: the caller is the
 * writer (not the sender). Under p->lock. */
static mk_err produce_held(mk_producer *p, int i, bool owed, mk_strbuf *why)
{
	slot *s = &p->slots[i];
	size_t n = s->nheld;
	if (n == 0)
		return MK_OK;
	uint8_t *frames[MK_LOG_APPEND_MAX];
	size_t lens[MK_LOG_APPEND_MAX];
	mk_produce_result res[MK_LOG_APPEND_MAX];
	for (size_t k = 0; k < n; k++) {
		frames[k] = (uint8_t *)s->held[k].buf;
		lens[k] = s->held[k].len;
	}
	mk_produce_args a = { .acks = p->acks,
			      .copy_inline = owed && p->acks == -1 };
	mk_err err = mk_partition_produce_many(mk_topic_partition(p->t, i),
					       frames, lens, n, &a, res, why);
	for (size_t k = 0; k < n; k++) {
		if (res[k].base >= 0)
			add_receipt(p, i, res[k].base, res[k].count);
		/* Appended next to a refused batch: still owed. */
		if (res[k].pending)
			ack_push(&p->owed, (owed_ack){ i, 0, res[k].ticket });
		mk_strbuf_reset(&s->held[k]);
	}
	s->nheld = 0;
	return err;
}

/* A batch that is full (or that a record does not fit): sent now, or
 * held for the end of the append when the producer combines. */
static mk_err close_slot(mk_producer *p, int i, mk_strbuf *why)
{
	if (!p->combine)
		return send_slot(p, i, true, why);
	hold_slot(p, i);
	/* Room for the open batch that may join them at the end. */
	if (p->slots[i].nheld + 1 >= MK_LOG_APPEND_MAX)
		return produce_held(p, i, true, why);
	return MK_OK;
}

/* Keyless records move on by one partition when the sticky partition's
 * batch closes, however many other batches close with it. Held batches
 * (combine) are produced here, with the open batch when it is due. */
static mk_err send_due(mk_producer *p, int64_t now, bool owed, mk_strbuf *why)
{
	mk_err first = MK_OK;
	bool moved = false;
	if (p->partition != MK_PARTITION_ANY)
		return MK_OK;     /* a partition producer keeps no open batch */
	for (int i = 0; i < p->n; i++) {
		slot *s = &p->slots[i];
		bool due = s->open &&
			   (now == INT64_MAX ||
			    mk_deadline(s->created_ms, p->linger_ms) <= now);
		if (s->nheld > 0) {
			if (due) {
				if (i == p->sticky)
					moved = true;
				hold_slot(p, i);
			}
			mk_err err = produce_held(p, i, owed, why);
			if (err && !first)
				first = err;
			continue;
		}
		if (!due)
			continue;
		if (i == p->sticky)
			moved = true;
		mk_err err = send_slot(p, i, owed, why);
		if (err && !first)
			first = err;
	}
	if (moved)
		p->sticky = (p->sticky + 1) % p->n;
	return first;
}

static void defer_error(mk_producer *p, mk_err err, mk_strbuf *why)
{
	if (err && !p->deferred) {
		p->deferred = err;
		mk_strbuf_reset(&p->deferred_why);
		mk_strbuf_add(&p->deferred_why, why->buf, why->len);
	}
}

static mk_err take_deferred(mk_producer *p, mk_strbuf *why)
{
	mk_err err = p->deferred;
	if (err) {
		mk_strbuf_add(why, p->deferred_why.buf, p->deferred_why.len);
		p->deferred = MK_OK;
	}
	return err;
}

/* An idempotent producer is fenced once its identity was initialised again. */
static mk_err check_fenced(mk_producer *p, mk_strbuf *why)
{
	if (p->txn)
		return mk_txn_check(p->txns, p->txn, p->pid, p->epoch, why);
	int64_t id;
	int16_t epoch;
	if (mk_cluster_producer_get(p->c, p->name, &id, &epoch)) {
		mk_strbuf_addf(why, "producer %s no longer exists", p->name);
		return MK_UNKNOWN_PRODUCER_ID;
	}
	if (id != p->pid || epoch != p->epoch) {
		mk_strbuf_addf(why, "producer %s was initialised again (id %lld epoch %d, this descriptor has id %lld epoch %d): fenced",
			       p->name, (long long)id, epoch,
			       (long long)p->pid, p->epoch);
		return MK_PRODUCER_FENCED;
	}
	return MK_OK;
}

/* ---- append ---------------------------------------------------------------- */

/* The exact bytes of a record of body size body (plan[].size) added to
 * b as the k-th record from now on, at time now. */
static size_t rec_size(const mk_batch_builder *b, size_t body, size_t k,
		       int64_t now)
{
	return mk_record_size_at(body, b->next_delta + (int32_t)k,
				 mk_builder_ts_delta(b, now));
}

/* A partition producer: the records are one batch, checked against
 * message.max.bytes before a byte of it is encoded. Under p->lock. */
static mk_err append_partition(mk_producer *p, const mk_record_in *recs,
			       size_t n, int64_t max_bytes, size_t *taken,
			       mk_strbuf *why)
{
	slot *s = &p->slots[0];
	int64_t now = mk_clock_now(&p->c->clock);
	size_t bytes = 0;
	for (size_t i = 0; i < n; i++)
		bytes += rec_size(&s->b, mk_record_body_size(&recs[i]), i, now);
	if ((int64_t)(mk_builder_size(&s->b) + bytes) > max_bytes) {
		mk_strbuf_addf(why, "batch larger than message.max.bytes=%lld",
			       (long long)max_bytes);
		return MK_MESSAGE_TOO_LARGE;
	}
	mk_builder_add_many(&s->b, now, recs, n, bytes);
	bool appended;
	mk_err err = produce_slot(p, s, p->partition, true, &appended, why);
	*taken = appended ? n : 0;
	return err;
}

/* The partition a record goes to (part: a keyed one's, planned; -1 for
 * keyless), and where keyless ones start. */
static int route(mk_producer *p, int part)
{
	if (part >= 0)
		return part;
	if (p->sticky < 0)
		p->sticky = (int)(atomic_fetch_add(&p->t->next_sticky, 1) % (unsigned)p->n);
	return p->sticky;
}

/* Close partition i's batch (full, or a record does not fit); keyless
 * records move on when it was the sticky partition's. */
static mk_err close_full(mk_producer *p, int i, mk_strbuf *why)
{
	mk_err err = close_slot(p, i, why);
	if (i == p->sticky)
		p->sticky = (p->sticky + 1) % p->n;
	return err;
}

/*
 * Add records from recs[0] on (plan[k]: recs[k]'s size and partition) to
 * their partition's open batch: the first record, then those after it
 * that go to the same partition and fit, as one run (one grow of the
 * batch). Returns how many were taken. A record that does not fit closes
 * the open batch first (Kafka's rule; a keyless one then follows the
 * sticky partition onwards), and a batch that reaches batch.size is
 * closed after its last record. *err keeps the first error of a send.
 * *wake: a batch started lingering. Under p->lock.
 */
static size_t accumulate(mk_producer *p, const mk_record_in *recs,
			 const struct rec_plan *plan, size_t n, int64_t now,
			 bool *wake, mk_err *err, mk_strbuf *why)
{
	bool keyless = plan[0].part < 0;
	int i = route(p, plan[0].part);
	slot *s = &p->slots[i];
	size_t cur = mk_builder_size(&s->b);
	size_t first = rec_size(&s->b, plan[0].size, 0, now);
	if (s->open && (int64_t)(cur + first) > p->batch_size) {
		mk_err e = close_full(p, i, why);
		if (e && !*err)
			*err = e;
		if (keyless) {
			i = p->sticky;
			s = &p->slots[i];
		}
		cur = mk_builder_size(&s->b);
		first = rec_size(&s->b, plan[0].size, 0, now);
	}
	if (!s->open) {
		s->open = true;
		s->created_ms = now;
		*wake |= p->linger_ms > 0;
	}
	/* The run: records after the first with the same route (keyless
	 * ones while the sticky partition stays; keyed ones whose key
	 * hashes here), as long as the batch stays below batch.size and
	 * each fits. */
	size_t k = 1, bytes = first;
	cur += first;
	while (k < n && (int64_t)cur < p->batch_size &&
	       (keyless ? plan[k].part < 0 : plan[k].part == i)) {
		size_t sz = rec_size(&s->b, plan[k].size, k, now);
		if ((int64_t)(cur + sz) > p->batch_size)
			break;
		cur += sz;
		bytes += sz;
		k++;
	}
	mk_builder_add_many(&s->b, now, recs, k, bytes);
	if ((int64_t)cur >= p->batch_size) {
		mk_err e = close_full(p, i, why);
		if (e && !*err)
			*err = e;
	}
	return k;
}

/*
 * The records of an append whose records are all keyed, grouped by
 * partition in their order (a stable counting sort) into p->grouped and
 * p->gplan, so that each partition's records go into its batch as runs,
 * one partition after the other. What a keyed record's batch is depends
 * only on the records before it in its partition, so the batches are the
 * ones record by record would make; and a combining producer produces
 * them partition by partition at the end of the append anyway (a
 * partition whose held batches fill up is produced during it, in either
 * order). Only while no keyless record chose a sticky partition: the
 * sticky partition moves on each time its batch closes, so where later
 * keyless records go depends on the order of the closes. Under p->lock.
 */
static void group_by_partition(mk_producer *p, const mk_record_in *recs,
			       size_t n)
{
	size_t *next = p->next;
	memset(next, 0, (size_t)p->n * sizeof(*next));
	for (size_t i = 0; i < n; i++)
		next[p->plan[i].part]++;
	size_t at = 0;
	for (int k = 0; k < p->n; k++) {
		size_t c = next[k];
		next[k] = at;
		at += c;
	}
	for (size_t i = 0; i < n; i++) {
		size_t to = next[p->plan[i].part]++;
		p->grouped[to] = recs[i];
		p->gplan[to] = p->plan[i];
	}
}

/* A topic producer: check every record, then route and batch each. */
static mk_err append_topic(mk_producer *p, const mk_record_in *recs, size_t n,
			   int64_t max_bytes, size_t *taken, bool *wake,
			   mk_strbuf *why)
{
	if (n > p->plan_cap) {
		p->plan_cap = n > 2 * p->plan_cap ? n : 2 * p->plan_cap;
		free(p->plan);
		free(p->gplan);
		free(p->grouped);
		p->plan = mk_xreallocarray(NULL, p->plan_cap, sizeof(*p->plan));
		p->gplan = mk_xreallocarray(NULL, p->plan_cap, sizeof(*p->gplan));
		p->grouped = mk_xreallocarray(NULL, p->plan_cap,
					      sizeof(*p->grouped));
	}
	struct rec_plan *plan = p->plan;
	bool keyed = true;
	for (size_t i = 0; i < n; i++) {
		plan[i].size = mk_record_body_size(&recs[i]);
		plan[i].part = recs[i].key.len >= 0
			? mk_partition_for_key(recs[i].key, p->n,
					       (mk_partitioner)p->ps->c->cfg.partitioner)
			: -1;
		keyed &= plan[i].part >= 0;
		size_t need = mk_frame_size_of_one(recs[i].key, recs[i].value,
						   recs[i].headers,
						   recs[i].nheaders);
		if ((int64_t)need > max_bytes) {
			mk_strbuf_addf(why, "record %zu needs a %zu-byte batch, over message.max.bytes=%lld",
				       i + 1, need, (long long)max_bytes);
			return MK_MESSAGE_TOO_LARGE;
		}
	}
	*taken = n;
	/* Not once keyless records have a sticky partition: its batch's
	 * close moves it on, and grouping changes the order of closes. */
	if (keyed && p->combine && p->n > 1 && n > 1 && p->sticky < 0) {
		group_by_partition(p, recs, n);
		recs = p->grouped;
		plan = p->gplan;
	}
	mk_err err = MK_OK;
	int64_t now = mk_clock_now(&p->c->clock);
	for (size_t i = 0; i < n;)
		i += accumulate(p, recs + i, plan + i, n - i, now, wake, &err,
				why);
	mk_err deferred = take_deferred(p, why);
	mk_err sent = send_due(p, mk_clock_now(&p->c->clock), true, why);
	if (!err)
		err = deferred;
	return err ? err : sent;
}

mk_err mk_producer_append(mk_producer *p, const mk_record_in *recs, size_t n,
			  size_t *taken, mk_strbuf *why)
{
	*taken = 0;
	mk_topic_config tc;
	mk_cluster_topic_config(p->c, p->t, &tc);
	pthread_mutex_lock(&p->lock);
	/* compression.type producer: a file's records come uncompressed. */
	p->codec = tc.compression_type == MK_COMPRESSION_PRODUCER
		? MK_COMPRESS_NONE : (uint8_t)tc.compression_type;
	bool wake = false;
	mk_err err = p->idempotent ? check_fenced(p, why) : MK_OK;
	if (!err && p->partition != MK_PARTITION_ANY)
		err = n ? append_partition(p, recs, n, tc.message_max_bytes, taken, why)
			: MK_OK;
	else if (!err)
		err = append_topic(p, recs, n, tc.message_max_bytes, taken, &wake, why);
	pthread_mutex_unlock(&p->lock);
	/* After unlocking: ps->lock is never taken under a producer's lock. */
	if (wake)
		wake_sender(p->ps);
	return err;
}

mk_err mk_producer_flush_begin(mk_producer *p, mk_strbuf *why)
{
	pthread_mutex_lock(&p->lock);
	mk_err err = take_deferred(p, why);
	mk_err sent = send_due(p, INT64_MAX, true, why);
	pthread_mutex_unlock(&p->lock);
	return err ? err : sent;
}

/*
 * One look at every acknowledgement owed (with all, those of the
 * sender's batches too), under p->lock; partition locks are taken under
 * it (as produce does). Each one done, failed or past its deadline is
 * settled: an error is kept (the first, in p->checked), a success moves
 * an explicit seq= on. *owed gets how many are still owed and *watch the
 * first of them. The first error settled since it was last told is told
 * (once) when none are owed, or with final (the close's last look) now.
 */
static mk_err check_locked(mk_producer *p, bool all, bool final, size_t *owed,
			   mk_ack_watch *watch, mk_strbuf *why)
{
	registration_drive(p);
	if (all) {
		for (size_t k = 0; k < p->pending.n; k++)
			ack_push(&p->owed, p->pending.v[k]);
		p->pending.n = 0;
	}
	size_t keep = 0;
	mk_strbuf one = MK_STRBUF_INIT;
	for (size_t k = 0; k < p->owed.n; k++) {
		owed_ack *a = &p->owed.v[k];
		mk_partition *part = mk_topic_partition(p->t, a->partition);
		uint64_t seen = mk_partition_seq(part);
		bool still;
		mk_strbuf_reset(&one);
		mk_err e = mk_partition_ack_check(part, &a->ticket, &still, &one);
		if (!e && still) {
			if (!keep)
				*watch = (mk_ack_watch){ .p = part, .seen = seen,
							 .deadline_ms = a->ticket.deadline_ms,
							 .ticket = a->ticket };
			p->owed.v[keep++] = *a;
			continue;
		}
		if (e && !p->checked) {
			p->checked = e;
			mk_strbuf_reset(&p->checked_why);
			mk_strbuf_add(&p->checked_why, one.buf, one.len);
		} else if (!e) {
			p->next_seq += a->seq_advance;
		}
	}
	mk_strbuf_release(&one);
	p->owed.n = keep;
	if (p->nreg) {
		/* Held batches (a writer's comes after any held before it):
		 * the registration is what they wait for first. */
		if (!keep)
			*watch = (mk_ack_watch){ .coord = p->reg_call.rt,
						 .seen = p->reg_call.seen,
						 .deadline_ms = p->reg_call.deadline_ms };
		keep += p->nreg;
	}
	*owed = keep;
	mk_err err = MK_OK;
	if ((!keep || final) && p->checked) {
		err = p->checked;
		p->checked = MK_OK;
		mk_strbuf_add(why, p->checked_why.buf, p->checked_why.len);
	}
	return err;
}

mk_err mk_producer_check(mk_producer *p, bool all, bool *pending,
			 mk_ack_watch *watch, mk_strbuf *why)
{
	size_t owed;
	pthread_mutex_lock(&p->lock);
	mk_err err = check_locked(p, all, false, &owed, watch, why);
	pthread_mutex_unlock(&p->lock);
	*pending = owed > 0;
	return err;
}

mk_err mk_producer_poll(mk_producer *p, mk_strbuf *why)
{
	pthread_mutex_lock(&p->lock);
	mk_err err = take_deferred(p, why);
	pthread_mutex_unlock(&p->lock);
	return err;
}

/* Send, then one last look (producer.h): nothing is waited for. */
mk_err mk_producer_close(mk_producer *p, mk_strbuf *why)
{
	if (!p)
		return MK_OK;
	if (p->partition == MK_PARTITION_ANY)
		registry_remove(p->ps, p);
	mk_err err = mk_producer_flush_begin(p, why);
	size_t owed;
	mk_ack_watch w;
	pthread_mutex_lock(&p->lock);
	mk_err acked = check_locked(p, true, true, &owed, &w, why);
	pthread_mutex_unlock(&p->lock);
	if (!acked && p->nreg) {
		mk_strbuf_addf(why, "closed before the transaction coordinator registered the partition of %zu batch%s (not appended)",
			       p->nreg, p->nreg == 1 ? "" : "es");
		acked = MK_REQUEST_TIMED_OUT;
	} else if (!acked && owed) {
		mk_strbuf_addf(why, "closed before the ISR acknowledged %zu batch%s (appended: %s in the log)",
			       owed, owed == 1 ? "" : "es", owed == 1 ? "it stays" : "they stay");
		acked = MK_REQUEST_TIMED_OUT;
	}
	producer_free(p);
	return err ? err : acked;
}

size_t mk_producer_take_receipts(mk_producer *p, mk_receipt *out, size_t max)
{
	pthread_mutex_lock(&p->lock);
	size_t n = p->nreceipts < max ? p->nreceipts : max;
	if (n) {
		memcpy(out, p->receipts, n * sizeof(*out));
		memmove(p->receipts, p->receipts + n,
			(p->nreceipts - n) * sizeof(*out));
		p->nreceipts -= n;
	}
	pthread_mutex_unlock(&p->lock);
	return n;
}

int64_t mk_producer_deadline(mk_producer *p)
{
	int64_t d = INT64_MAX;
	if (pthread_mutex_trylock(&p->lock))
		return d;
	for (int i = 0; p->partition == MK_PARTITION_ANY && i < p->n; i++)
		if (p->slots[i].open &&
		    mk_deadline(p->slots[i].created_ms, p->linger_ms) < d)
			d = mk_deadline(p->slots[i].created_ms, p->linger_ms);
	pthread_mutex_unlock(&p->lock);
	return d;
}
