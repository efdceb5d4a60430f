/*
 * coordinator.c — the coordinators' shared runtime (coordinator.h).
 *
 * advance() is the one loop: under the turn it takes the head of the
 * queue through its states — QUEUED (prepare, then append with acks=all
 * and a deferred acknowledgement), APPENDED (look at the ticket) — and
 * stops at the first operation still owed something, with a watch on
 * what it waits for. Every caller runs it (a submit, a resume) and so
 * does the runtime's thread at every event and tick.
 */
#include "coordinator.h"

#include <assert.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "failpoint.h"
#include "xalloc.h"

/* The periodic task's interval (wall time; a timer that is the feature:
 * session and transaction timeouts, in auto mode). */
#define TICK_MS 100

struct mk_coord {
	mk_cluster *c;
	mk_coord_def def;
	pthread_mutex_t turn;
	pthread_mutex_t lock;
	mk_coord_op *head, *tail;    /* unfinished operations, oldest first */
	uint64_t seq;                /* events, under lock */
	mk_watch watchers;           /* list head, under lock */
	mk_watch pwatch;             /* ours, on the in-flight partition */
	mk_partition *pwatched;      /* under the turn */
	mk_watch cwatch;             /* ours, on a sub-call's coordinator */
	mk_coord *cwatched;          /* under the turn */
	bool kicked;                 /* an event since the thread last looked */
	bool ticking;                /* the periodic task's operation is queued */
	int64_t deadline_ms;         /* of the ticket the head waits for */
	pthread_cond_t cond;         /* the task's sleep; mk_coord_call_wait */
	pthread_t thread;
	bool thread_started, stop;   /* stop under lock */
};

mk_coord *mk_coord_new(mk_cluster *c, const mk_coord_def *def)
{
	mk_coord *rt = mk_xcalloc(1, sizeof(*rt));
	rt->c = c;
	rt->def = *def;
	pthread_mutex_init(&rt->turn, NULL);
	pthread_mutex_init(&rt->lock, NULL);
	pthread_cond_init(&rt->cond, NULL);
	mk_watch_list_init(&rt->watchers);
	rt->deadline_ms = INT64_MAX;
	return rt;
}

void mk_coord_lock(mk_coord *rt)
{
	pthread_mutex_lock(&rt->turn);
}

bool mk_coord_trylock(mk_coord *rt)
{
	return pthread_mutex_trylock(&rt->turn) == 0;
}

void mk_coord_unlock(mk_coord *rt)
{
	pthread_mutex_unlock(&rt->turn);
}

mk_err mk_coord_ensure_topic(mk_coord *rt, int *nparts, mk_strbuf *why)
{
	mk_topic *t = mk_cluster_topic(rt->c, rt->def.topic);
	if (!t) {
		int rf = rt->def.replication;
		if (rf > rt->c->nbrokers)
			rf = rt->c->nbrokers;
		const char *ov[] = { "cleanup.policy=compact" };
		mk_err err = mk_cluster_create_topic(rt->c, rt->def.topic,
						     rt->def.partitions, rf, ov, 1, why);
		if (err && err != MK_TOPIC_ALREADY_EXISTS)
			return err;
		t = mk_cluster_topic(rt->c, rt->def.topic);
		if (!t)
			return mk_error(why, MK_UNKNOWN_TOPIC_OR_PARTITION,
					"the internal topic %s is missing", rt->def.topic);
	}
	if (nparts)
		*nparts = t->npartitions;
	mk_topic_put(t);
	return MK_OK;
}

mk_err mk_coord_replay(mk_coord *rt, int part,
		       void (*fn)(void *arg, const mk_record_view *rec),
		       void *arg, int32_t *epoch)
{
	mk_topic *t = mk_cluster_topic(rt->c, rt->def.topic);
	mk_partition *p = t ? mk_topic_partition(t, part) : NULL;
	if (!p) {
		mk_topic_put(t);
		return MK_UNKNOWN_TOPIC_OR_PARTITION;
	}
	mk_partition_info pi;
	mk_partition_info_get(p, &pi);
	if (epoch)
		*epoch = pi.leader_epoch;
	mk_err err = pi.leader < 0 ? MK_LEADER_NOT_AVAILABLE : MK_OK;
	if (!err)
		err = mk_partition_replay(p, pi.log_start, fn, arg);
	mk_topic_put(t);
	return err;
}

/* ---- events ---------------------------------------------------------------- */

/* Under lock: one event; fire every watcher once. */
static void event_locked(mk_coord *rt)
{
	rt->seq++;
	rt->kicked = true;
	mk_watch_fire_all(&rt->watchers);
	pthread_cond_broadcast(&rt->cond);
}

/* The in-flight operation's partition changed (under its lock). */
static void on_partition(mk_watch *w)
{
	mk_coord_poke((mk_coord *)((char *)w - offsetof(mk_coord, pwatch)));
}

/* The coordinator of a sub-call had an event (under its lock). */
static void on_coord(mk_watch *w)
{
	mk_coord_poke((mk_coord *)((char *)w - offsetof(mk_coord, cwatch)));
}

void mk_coord_watch(mk_coord *rt, mk_watch *w, uint64_t seen)
{
	pthread_mutex_lock(&rt->lock);
	mk_watch_arm(&rt->watchers, w, rt->seq, seen);
	pthread_mutex_unlock(&rt->lock);
}

uint64_t mk_coord_seq(mk_coord *rt)
{
	pthread_mutex_lock(&rt->lock);
	uint64_t seq = rt->seq;
	pthread_mutex_unlock(&rt->lock);
	return seq;
}

void mk_coord_unwatch(mk_coord *rt, mk_watch *w)
{
	pthread_mutex_lock(&rt->lock);
	mk_watch_disarm(w);
	pthread_mutex_unlock(&rt->lock);
}

/* Under the turn: watch (only) p, for ticket t when given. */
static void watch_partition(mk_coord *rt, mk_partition *p,
			    const mk_ack_ticket *t, uint64_t seen)
{
	if (rt->pwatched)
		mk_partition_unwatch(rt->pwatched, &rt->pwatch);
	rt->pwatch.fn = on_partition;
	rt->pwatch.ack = t;
	rt->pwatched = p;
	mk_partition_watch(p, &rt->pwatch, seen);
}

/* Under the turn: watch (only) another coordinator, for a sub-call. */
static void watch_coord(mk_coord *rt, mk_coord *other, uint64_t seen)
{
	if (rt->cwatched)
		mk_coord_unwatch(rt->cwatched, &rt->cwatch);
	rt->cwatch.fn = on_coord;
	rt->cwatched = other;
	mk_coord_watch(other, &rt->cwatch, seen);
}

static void unwatch_all(mk_coord *rt)
{
	if (rt->pwatched)
		mk_partition_unwatch(rt->pwatched, &rt->pwatch);
	rt->pwatched = NULL;
	if (rt->cwatched)
		mk_coord_unwatch(rt->cwatched, &rt->cwatch);
	rt->cwatched = NULL;
}

/* ---- operations -------------------------------------------------------------- */

static const mk_batch_meta plain_meta = {
	.flags = 0, .base_offset = 0, .leader_epoch = 0, .producer_id = -1,
	.producer_epoch = -1, .base_sequence = -1,
};

void mk_coord_op_record(mk_coord_op *op, int part, const char *key,
			const char *value)
{
	if (!op->building) {
		mk_builder_init(&op->b, &plain_meta);
		op->building = true;
		op->partition = part;
	}
	assert(part == op->partition);
	mk_builder_add(&op->b, mk_clock_now(&op->rt->c->clock),
		       mk_bytes_of(key, strlen(key)),
		       value ? mk_bytes_of(value, strlen(value)) : MK_BYTES_NULL,
		       NULL, 0);
}

mk_err mk_coord_op_append(mk_coord_op *op, mk_topic *t, int part,
			  uint8_t *frame, size_t len, mk_strbuf *why)
{
	mk_partition *p = t ? mk_topic_partition(t, part) : NULL;
	if (!p) {
		mk_topic_put(t);
		return mk_error(why, MK_UNKNOWN_TOPIC_OR_PARTITION, "no partition %d to append to", part);
	}
	mk_produce_args a = { .acks = -1, .seq = -1, .count = 1 };
	mk_produce_result res;
	mk_err err = mk_partition_produce(p, frame, len, &a, &res, why);
	if (err) {
		mk_topic_put(t);
		return err;
	}
	op->acks = mk_xrealloc(op->acks, (op->nacks + 1) * sizeof(*op->acks));
	op->acks[op->nacks++] = (mk_coord_append){ t, p, res.ticket };
	return MK_OK;
}

mk_coord_call *mk_coord_op_sub(mk_coord_op *op)
{
	if (!op->sub)
		op->sub = mk_xcalloc(1, sizeof(*op->sub));
	return op->sub;
}

void mk_coord_op_retry(mk_coord_op *op)
{
	op->retry = true;
}

/* What a round started: drop it (acknowledged, failed or done). */
static void op_drop_round(mk_coord_op *op)
{
	if (op->building)
		mk_builder_release(&op->b);
	op->building = false;
	op->partition = -1;
	for (size_t i = 0; i < op->nacks; i++)
		mk_topic_put(op->acks[i].t);
	free(op->acks);
	op->acks = NULL;
	op->nacks = 0;
	if (op->sub) {
		mk_coord_call_forget(op->sub);
		free(op->sub);
		op->sub = NULL;
	}
	op->retry = false;
}

static void op_release(mk_coord_op *op)
{
	op_drop_round(op);
	mk_strbuf_release(&op->why);
	mk_strbuf_release(&op->sub_why);
	op->kind->release(op);
}

/* Under the turn: one round of op: prepare, then append its records. */
static mk_err start(mk_coord *rt, mk_coord_op *op)
{
	unwatch_all(rt);
	op_drop_round(op);
	mk_strbuf_reset(&op->why);
	op->sub_result = MK_OK;
	mk_strbuf_reset(&op->sub_why);
	mk_err err = op->kind->prepare(op, &op->why);
	if (err || !op->building)
		return err;
	mk_builder_finish(&op->b);
	mk_topic *t = mk_cluster_topic(rt->c, rt->def.topic);
	if (!t)
		return mk_error(&op->why, MK_UNKNOWN_TOPIC_OR_PARTITION,
				"the internal topic %s is missing", rt->def.topic);
	err = mk_coord_op_append(op, t, op->partition, (uint8_t *)op->b.frame.buf,
				 op->b.frame.len, &op->why);
	if (err) {
		mk_strbuf_addf(&op->why, " (writing to %s/%d)", rt->def.topic, op->partition);
		return err;
	}
	if (rt->def.failpoint)
		MK_FAILPOINT(rt->def.failpoint);
	return MK_OK;
}

static void set_deadline(mk_coord *rt, int64_t ms)
{
	pthread_mutex_lock(&rt->lock);
	rt->deadline_ms = ms;
	pthread_mutex_unlock(&rt->lock);
}

/* look's walk: the first thing op's round waits for, watched, and when
 * it times out. */
static mk_err look_once(mk_coord *rt, mk_coord_op *op, bool *pending,
			int64_t *deadline)
{
	*pending = true;
	if (op->retry)
		return MK_OK;
	for (size_t i = 0; i < op->nacks; i++) {
		mk_coord_append *a = &op->acks[i];
		if (!a->p)
			continue;
		uint64_t seen = mk_partition_seq(a->p);
		bool owed;
		mk_err err = mk_partition_ack_check(a->p, &a->ticket, &owed, &op->why);
		if (err)
			return err;
		if (owed) {
			*deadline = a->ticket.deadline_ms;
			watch_partition(rt, a->p, &a->ticket, seen);
			return MK_OK;
		}
		a->p = NULL;
	}
	if (mk_coord_call_pending(op->sub)) {
		mk_strbuf_reset(&op->sub_why);
		op->sub_result = mk_coord_call_resume(op->sub, &op->sub_why);
		if (mk_coord_call_pending(op->sub)) {
			*deadline = op->sub->deadline_ms;
			watch_coord(rt, op->sub->rt, op->sub->seen);
			return MK_OK;
		}
	}
	*pending = false;
	return MK_OK;
}

/* Under the turn: is everything op's round started acknowledged? When
 * not, watch the first thing it waits for, and publish when that times
 * out (rt->deadline_ms, once: the callers' timers read it). */
static mk_err look(mk_coord *rt, mk_coord_op *op, bool *pending)
{
	int64_t deadline = INT64_MAX;
	mk_err err = look_once(rt, op, pending, &deadline);
	set_deadline(rt, err || !*pending ? INT64_MAX : deadline);
	return err;
}

/* Under the turn: op's state (read under lock by its caller). */
static void set_state(mk_coord *rt, mk_coord_op *op, mk_coord_op_state st)
{
	pthread_mutex_lock(&rt->lock);
	op->state = st;
	pthread_mutex_unlock(&rt->lock);
}

/* Under the turn: op (the head) is complete. */
static void finish(mk_coord *rt, mk_coord_op *op, mk_err err)
{
	unwatch_all(rt);
	op_drop_round(op);
	pthread_mutex_lock(&rt->lock);
	rt->head = op->next;
	if (!rt->head)
		rt->tail = NULL;
	op->next = NULL;
	op->state = MK_COORD_DONE;
	op->result = err;
	bool orphan = op->orphan;
	if (op->periodic)
		rt->ticking = false;
	event_locked(rt);
	pthread_mutex_unlock(&rt->lock);
	if (!orphan)
		return;
	if (err && err != MK_INTERRUPTED && !op->periodic)
		mk_errlog_add(&rt->c->errlog, mk_clock_now(&rt->c->clock), NULL, err,
			      "%s: %s", op->kind->name,
			      op->why.len ? op->why.buf : mk_err_name(err));
	op_release(op);
}

/* Take the queue as far as it goes now (see the top of the file). */
static void advance(mk_coord *rt)
{
	pthread_mutex_lock(&rt->turn);
	for (;;) {
		pthread_mutex_lock(&rt->lock);
		mk_coord_op *op = rt->head;
		pthread_mutex_unlock(&rt->lock);
		if (!op)
			break;
		mk_err err = MK_OK;
		if (op->state == MK_COORD_QUEUED || op->retry) {
			err = start(rt, op);
			set_state(rt, op, MK_COORD_APPENDED);
		}
		bool pending = false;
		if (!err)
			err = look(rt, op, &pending);
		if (!err && pending) {
			pthread_mutex_lock(&rt->lock);
			bool ahead = rt->head != op;   /* mk_coord_push_front */
			pthread_mutex_unlock(&rt->lock);
			if (ahead)
				continue;
			break;
		}
		unwatch_all(rt);
		bool more = false;
		err = op->kind->apply(op, err, &more, &op->why);
		if (!err && more) {
			set_state(rt, op, MK_COORD_QUEUED);
			continue;
		}
		finish(rt, op, err);
	}
	pthread_mutex_unlock(&rt->turn);
}

void mk_coord_poke(mk_coord *rt)
{
	pthread_mutex_lock(&rt->lock);
	event_locked(rt);
	pthread_mutex_unlock(&rt->lock);
}

/* Under lock: when the queue's head times out by time alone (the system
 * clock: the cluster clock is the wall's), as a wall time; 0: never
 * (the manual clock's advance is an event). */
static int64_t timeout_due(const mk_coord *rt)
{
	return rt->c->clock.manual || rt->deadline_ms == INT64_MAX ? 0 : rt->deadline_ms;
}

/* Under lock: sleep on the condition until an event, or until due (wall
 * ms; 0: no bound). */
static void sleep_until(mk_coord *rt, int64_t due)
{
	if (!due) {
		pthread_cond_wait(&rt->cond, &rt->lock);
		return;
	}
	int64_t left = due - mk_wall_ms();
	struct timespec ts = mk_timespec_after_ms(CLOCK_REALTIME, left > 0 ? left : 0);
	pthread_cond_timedwait(&rt->cond, &rt->lock, &ts);
}

static void op_init(mk_coord *rt, mk_coord_op *op, bool orphan)
{
	op->rt = rt;
	op->state = MK_COORD_QUEUED;
	op->partition = -1;
	op->orphan = orphan;
	op->next = NULL;
	mk_strbuf_init(&op->why, 0);
	mk_strbuf_init(&op->sub_why, 0);
}

void mk_coord_push_front(mk_coord *rt, mk_coord_op *op)
{
	op_init(rt, op, true);
	pthread_mutex_lock(&rt->lock);
	op->next = rt->head;
	rt->head = op;
	if (!rt->tail)
		rt->tail = op;
	pthread_mutex_unlock(&rt->lock);
}

mk_err mk_coord_submit(mk_coord *rt, mk_coord_op *op, mk_coord_call *call,
		       mk_strbuf *why)
{
	op_init(rt, op, !call);
	pthread_mutex_lock(&rt->lock);
	if (rt->stop) {
		pthread_mutex_unlock(&rt->lock);
		op->kind->release(op);
		return mk_error(why, MK_INTERRUPTED, "the coordinator is closing");
	}
	if (rt->tail)
		rt->tail->next = op;
	else
		rt->head = op;
	rt->tail = op;
	pthread_mutex_unlock(&rt->lock);
	if (!call) {
		advance(rt);
		return MK_OK;
	}
	call->rt = rt;
	call->op = op;
	return mk_coord_call_resume(call, why);
}

mk_err mk_coord_call_resume(mk_coord_call *call, mk_strbuf *why)
{
	if (!call->op)
		return MK_OK;
	mk_coord *rt = call->rt;
	advance(rt);
	pthread_mutex_lock(&rt->lock);
	call->seen = rt->seq;
	call->deadline_ms = rt->deadline_ms;
	bool done = call->op->state == MK_COORD_DONE;
	pthread_mutex_unlock(&rt->lock);
	if (!done)
		return MK_OK;
	mk_coord_op *op = call->op;
	call->op = NULL;
	if (op->count_to)
		*op->count_to = op->counted;
	mk_err err = op->result;
	if (err && why)
		mk_strbuf_add(why, op->why.buf, op->why.len);
	op_release(op);
	return err;
}

mk_err mk_coord_call_wait(mk_coord_call *call, mk_strbuf *why)
{
	for (;;) {
		mk_err err = mk_coord_call_resume(call, why);
		if (err || !call->op)
			return err;
		mk_coord *rt = call->rt;
		pthread_mutex_lock(&rt->lock);
		/* Until an event, or the queue's head times out (a look then). */
		int64_t due = timeout_due(rt);
		while (rt->seq == call->seen && !rt->stop && !rt->c->shutting_down &&
		       (!due || mk_wall_ms() < due))
			sleep_until(rt, due);
		/* The shutdown wakes every partition's watchers, ours too. */
		bool stop = rt->stop || rt->c->shutting_down;
		pthread_mutex_unlock(&rt->lock);
		if (stop) {
			mk_coord_call_forget(call);
			return mk_error(why, MK_INTERRUPTED,
					"the coordinator closed before the records were acknowledged");
		}
	}
}

void mk_coord_call_forget(mk_coord_call *call)
{
	mk_coord_op *op = call ? call->op : NULL;
	if (!op)
		return;
	call->op = NULL;
	pthread_mutex_lock(&call->rt->lock);
	bool done = op->state == MK_COORD_DONE;
	if (!done)
		op->orphan = true;
	pthread_mutex_unlock(&call->rt->lock);
	if (done)
		op_release(op);
}

/* ---- the periodic task, and the end ----------------------------------------------- */

/* The task's operation, unless the one before it is still queued. */
static void periodic_task(mk_coord *rt)
{
	pthread_mutex_lock(&rt->lock);
	bool busy = rt->ticking;
	pthread_mutex_unlock(&rt->lock);
	mk_coord_op *op = busy ? NULL : rt->def.tick(rt->def.arg);
	if (!op)
		return;
	op->periodic = true;
	pthread_mutex_lock(&rt->lock);
	rt->ticking = true;
	pthread_mutex_unlock(&rt->lock);
	mk_coord_submit(rt, op, NULL, NULL);
}

/* The runtime's thread: the queue at every event, the periodic task
 * every TICK_MS in auto mode. */
static void *runtime_main(void *arg)
{
	mk_coord *rt = arg;
	bool ticks = rt->def.tick && rt->c->cfg.auto_replication;
	int64_t next_tick = mk_wall_ms() + TICK_MS;
	pthread_mutex_lock(&rt->lock);
	while (!rt->stop) {
		int64_t due = timeout_due(rt);
		if (ticks && (!due || next_tick < due))
			due = next_tick;
		if (!rt->kicked)
			sleep_until(rt, due);
		if (rt->stop || rt->c->shutting_down)
			break;
		bool kicked = rt->kicked;
		rt->kicked = false;
		due = timeout_due(rt);
		pthread_mutex_unlock(&rt->lock);
		int64_t now = mk_wall_ms();
		bool tick = ticks && now >= next_tick;
		if (tick) {
			periodic_task(rt);
			next_tick = mk_wall_ms() + TICK_MS;
		}
		if (kicked || tick || (due && now >= due))
			advance(rt);
		pthread_mutex_lock(&rt->lock);
	}
	pthread_mutex_unlock(&rt->lock);
	return NULL;
}

void mk_coord_start(mk_coord *rt)
{
	if (rt->thread_started)
		return;
	rt->thread_started = pthread_create(&rt->thread, NULL, runtime_main, rt) == 0;
}

void mk_coord_free(mk_coord *rt)
{
	if (!rt)
		return;
	pthread_mutex_lock(&rt->lock);
	rt->stop = true;
	pthread_cond_broadcast(&rt->cond);
	pthread_mutex_unlock(&rt->lock);
	if (rt->thread_started)
		pthread_join(rt->thread, NULL);
	/* What is still queued fails; a caller still holding one collects
	 * it by mk_coord_call_forget, which then frees it. */
	pthread_mutex_lock(&rt->turn);
	while (rt->head) {
		mk_coord_op *op = rt->head;
		mk_strbuf_reset(&op->why);
		mk_strbuf_addf(&op->why, "the coordinator closed before the %s completed",
			       op->kind->name);
		finish(rt, op, MK_INTERRUPTED);
	}
	pthread_mutex_unlock(&rt->turn);
	pthread_cond_destroy(&rt->cond);
	pthread_mutex_destroy(&rt->lock);
	pthread_mutex_destroy(&rt->turn);
	free(rt);
}
