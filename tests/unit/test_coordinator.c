/*
 * Unit tests of the coordinators' runtime (core/coordination/coordinator.c),
 * with an operation kind of their own on an internal topic of two replicas
 * and manual replication, so that every acknowledgement is an explicit
 * fetch round: operations run in order, one at a time; a call stays
 * pending until the ISR acknowledged its records and its apply ran; a
 * refusal or a timeout changes nothing; the runtime's events fire its
 * watchers; a forgotten call and one nobody holds still complete; an
 * operation can put itself off (retry, poke), run another first
 * (push_front) and wait for another coordinator's call (sub).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <pthread.h>

#include "cluster.h"
#include "coordinator.h"
#include "testlib.h"

typedef struct {
	char dir[64];
	mk_config cfg;
	mk_cluster *c;
	mk_coord *rt, *rt2;
	pthread_mutex_t mu;      /* applied (the runtime's thread writes it) */
	char applied[256];       /* the values applied, in order */
	bool hold;               /* "held" ops put themselves off while set */
} fixture;

/* One operation: records key=value (value "bad": refused; "none": no
 * record; "held": retried while f->hold; "first": runs "early" ahead of
 * itself; "sub": waits for a "note" op on rt2). */
typedef struct {
	mk_coord_op base;
	fixture *f;
	char value[32];
	bool pushed;
} note_op;

static const mk_coord_op_kind note_kind;

static note_op *note_new(fixture *f, const char *value)
{
	note_op *op = calloc(1, sizeof(*op));
	op->f = f;
	snprintf(op->value, sizeof(op->value), "%s", value);
	op->base.kind = &note_kind;
	return op;
}

static mk_err note_prepare(mk_coord_op *base, mk_strbuf *why)
{
	note_op *op = (note_op *)base;
	fixture *f = op->f;
	if (!strcmp(op->value, "bad"))
		return mk_error(why, MK_INVALID_REQUEST, "bad is refused");
	if (!strcmp(op->value, "none"))
		return MK_OK;
	if (!strcmp(op->value, "held") && f->hold) {
		mk_coord_op_retry(base);
		return MK_OK;
	}
	if (!strcmp(op->value, "first") && !op->pushed) {
		op->pushed = true;
		mk_coord_push_front(base->rt, &note_new(f, "early")->base);
		mk_coord_op_retry(base);
		return MK_OK;
	}
	if (!strcmp(op->value, "sub"))
		return mk_coord_submit(f->rt2, &note_new(f, "inner")->base,
				       mk_coord_op_sub(base), why);
	mk_coord_op_record(base, 0, "k", op->value);
	return MK_OK;
}

static mk_err note_apply(mk_coord_op *base, mk_err err, bool *more,
			 mk_strbuf *why)
{
	(void)why;
	note_op *op = (note_op *)base;
	*more = false;
	if (err)
		return err;
	if (!strcmp(op->value, "sub") && base->sub_result)
		return base->sub_result;
	pthread_mutex_lock(&op->f->mu);
	if (strcmp(op->value, "none"))
		snprintf(op->f->applied + strlen(op->f->applied),
			 sizeof(op->f->applied) - strlen(op->f->applied), "%s;", op->value);
	pthread_mutex_unlock(&op->f->mu);
	return MK_OK;
}

static void note_release(mk_coord_op *base)
{
	free(base);
}

static const mk_coord_op_kind note_kind = { "note", note_prepare, note_apply,
					    note_release };

static mk_err submit(fixture *f, const char *value, mk_coord_call *call)
{
	return mk_coord_submit(f->rt, &note_new(f, value)->base, call, NULL);
}

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	tl_tmpdir(f->dir, sizeof(f->dir), "coord");
	pthread_mutex_init(&f->mu, NULL);
	tl_config(&f->cfg, 2);
	f->c = tl_cluster_open(f->dir, &f->cfg);
	mk_coord_def def = { .topic = "__notes", .partitions = 1, .replication = 2 };
	f->rt = mk_coord_new(f->c, &def);
	def.topic = "__notes2";
	f->rt2 = mk_coord_new(f->c, &def);
	assert_int_equal(mk_coord_ensure_topic(f->rt, NULL, NULL), MK_OK);
	assert_int_equal(mk_coord_ensure_topic(f->rt2, NULL, NULL), MK_OK);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	mk_coord_free(f->rt);
	mk_coord_free(f->rt2);
	mk_cluster_close(f->c);
	tl_rmtree(f->dir);
	pthread_mutex_destroy(&f->mu);
	free(f);
	return 0;
}

static void replicate(fixture *f)
{
	assert_int_equal(mk_cluster_replicate(f->c, NULL), MK_OK);
}

static void in_order_one_at_a_time(void **state)
{
	fixture *f = *state;
	mk_coord_call a = { 0 }, b = { 0 };
	assert_int_equal(submit(f, "A", &a), MK_OK);
	assert_int_equal(submit(f, "B", &b), MK_OK);
	assert_true(mk_coord_call_pending(&a));
	assert_true(mk_coord_call_pending(&b));
	assert_string_equal(f->applied, "");
	/* One round acknowledges A; B is appended only after A applied. */
	replicate(f);
	assert_int_equal(mk_coord_call_resume(&a, NULL), MK_OK);
	assert_false(mk_coord_call_pending(&a));
	assert_int_equal(mk_coord_call_resume(&b, NULL), MK_OK);
	assert_true(mk_coord_call_pending(&b));
	assert_string_equal(f->applied, "A;");
	replicate(f);
	assert_int_equal(mk_coord_call_resume(&b, NULL), MK_OK);
	assert_false(mk_coord_call_pending(&b));
	assert_string_equal(f->applied, "A;B;");
}

static void a_refusal_changes_nothing(void **state)
{
	fixture *f = *state;
	mk_coord_call a = { 0 };
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(mk_coord_submit(f->rt, &note_new(f, "bad")->base, &a, &why),
			 MK_INVALID_REQUEST);
	assert_string_equal(why.buf, "bad is refused");
	assert_false(mk_coord_call_pending(&a));
	/* Nothing to write: applied at once, without a round. */
	assert_int_equal(submit(f, "none", &a), MK_OK);
	assert_false(mk_coord_call_pending(&a));
	assert_string_equal(f->applied, "");
	mk_strbuf_release(&why);
}

typedef struct {
	mk_watch w;
	int fired;
} counter;

static void count(mk_watch *w)
{
	((counter *)w)->fired++;
}

static void watchers_fire_at_the_event(void **state)
{
	fixture *f = *state;
	mk_coord_call a = { 0 };
	assert_int_equal(submit(f, "A", &a), MK_OK);
	counter c = { .w = { .fn = count } };
	mk_coord_watch(f->rt, &c.w, a.seen);
	assert_int_equal(c.fired, 0);
	replicate(f);     /* the partition's change is the runtime's event */
	assert_int_equal(c.fired, 1);
	assert_int_equal(mk_coord_call_resume(&a, NULL), MK_OK);
	assert_false(mk_coord_call_pending(&a));
	/* A watch armed with an old count fires at once. */
	mk_coord_watch(f->rt, &c.w, 0);
	assert_int_equal(c.fired, 2);
	mk_coord_unwatch(f->rt, &c.w);
}

static void forgotten_and_unheld_operations_complete(void **state)
{
	fixture *f = *state;
	mk_coord_call a = { 0 };
	assert_int_equal(submit(f, "A", &a), MK_OK);
	mk_coord_call_forget(&a);
	assert_int_equal(submit(f, "B", NULL), MK_OK);
	replicate(f);
	/* The next call moves the queue on: A applied, B appended. */
	mk_coord_call c = { 0 };
	assert_int_equal(submit(f, "C", &c), MK_OK);
	assert_string_equal(f->applied, "A;");
	replicate(f);
	assert_int_equal(mk_coord_call_resume(&c, NULL), MK_OK);
	assert_true(mk_coord_call_pending(&c));
	replicate(f);
	assert_int_equal(mk_coord_call_resume(&c, NULL), MK_OK);
	assert_false(mk_coord_call_pending(&c));
	assert_string_equal(f->applied, "A;B;C;");
}

static void a_timeout_changes_nothing(void **state)
{
	fixture *f = *state;
	/* The follower stays in the ISR (lagging less than its limit), so
	 * only request.timeout.ms ends the wait. */
	f->cfg.replica_lag_time_max_ms = 10 * f->cfg.request_timeout_ms;
	mk_coord_free(f->rt);
	mk_coord_free(f->rt2);
	mk_cluster_close(f->c);
	f->c = tl_cluster_open(f->dir, &f->cfg);
	mk_coord_def def = { .topic = "__notes", .partitions = 1, .replication = 2 };
	f->rt = mk_coord_new(f->c, &def);
	def.topic = "__notes2";
	f->rt2 = mk_coord_new(f->c, &def);
	mk_coord_call a = { 0 };
	assert_int_equal(submit(f, "A", &a), MK_OK);
	assert_true(a.deadline_ms < INT64_MAX);
	assert_int_equal(mk_cluster_clock_advance(f->c, f->cfg.request_timeout_ms + 1, NULL),
			 MK_OK);
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(mk_coord_call_resume(&a, &why), MK_REQUEST_TIMED_OUT);
	assert_true(why.len > 0);
	assert_false(mk_coord_call_pending(&a));
	assert_string_equal(f->applied, "");
	mk_strbuf_release(&why);
}

static void retry_poke_and_push_front(void **state)
{
	fixture *f = *state;
	f->hold = true;
	mk_coord_call a = { 0 }, b = { 0 };
	assert_int_equal(submit(f, "held", &a), MK_OK);
	assert_int_equal(submit(f, "B", &b), MK_OK);
	replicate(f);
	assert_int_equal(mk_coord_call_resume(&b, NULL), MK_OK);
	assert_true(mk_coord_call_pending(&a));
	assert_true(mk_coord_call_pending(&b));    /* behind the held one */
	counter c = { .w = { .fn = count } };
	mk_coord_watch(f->rt, &c.w, a.seen);
	f->hold = false;
	mk_coord_poke(f->rt);
	assert_int_equal(c.fired, 1);
	assert_int_equal(mk_coord_call_resume(&a, NULL), MK_OK);   /* appended */
	replicate(f);
	assert_int_equal(mk_coord_call_resume(&a, NULL), MK_OK);
	assert_false(mk_coord_call_pending(&a));
	replicate(f);
	assert_int_equal(mk_coord_call_resume(&b, NULL), MK_OK);
	assert_false(mk_coord_call_pending(&b));
	assert_string_equal(f->applied, "held;B;");
	/* An operation that runs another before itself. */
	assert_int_equal(submit(f, "first", &a), MK_OK);
	replicate(f);
	assert_int_equal(mk_coord_call_resume(&a, NULL), MK_OK);
	replicate(f);
	assert_int_equal(mk_coord_call_resume(&a, NULL), MK_OK);
	assert_false(mk_coord_call_pending(&a));
	assert_string_equal(f->applied, "held;B;early;first;");
}

static void waits_for_another_coordinators_call(void **state)
{
	fixture *f = *state;
	mk_coord_call a = { 0 };
	assert_int_equal(submit(f, "sub", &a), MK_OK);
	assert_true(mk_coord_call_pending(&a));
	assert_string_equal(f->applied, "");
	replicate(f);     /* the inner one's records */
	assert_int_equal(mk_coord_call_resume(&a, NULL), MK_OK);
	assert_false(mk_coord_call_pending(&a));
	assert_string_equal(f->applied, "inner;sub;");
}

/* Sleep on the runtime's events until f->applied is want. */
static void wait_applied(fixture *f, const char *want)
{
	for (;;) {
		uint64_t seen = mk_coord_seq(f->rt);
		pthread_mutex_lock(&f->mu);
		bool done = !strcmp(f->applied, want);
		pthread_mutex_unlock(&f->mu);
		if (done)
			return;
		tl_coord_sleep(f->rt, seen);
	}
}

/* With the runtime's thread, an operation nobody holds moves on at its
 * events alone: nobody resumes anything here. */
static void the_thread_moves_the_queue(void **state)
{
	fixture *f = *state;
	mk_coord_start(f->rt);
	assert_int_equal(submit(f, "A", NULL), MK_OK);
	assert_int_equal(submit(f, "B", NULL), MK_OK);
	replicate(f);
	wait_applied(f, "A;");
	/* A call behind B: once its submit returns, B was appended (the
	 * queue moved past A under the turn, here or in the thread). */
	mk_coord_call c = { 0 };
	assert_int_equal(submit(f, "C", &c), MK_OK);
	replicate(f);
	wait_applied(f, "A;B;");
	mk_coord_call_forget(&c);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(in_order_one_at_a_time),
		T(a_refusal_changes_nothing),
		T(watchers_fire_at_the_event),
		T(forgotten_and_unheld_operations_complete),
		T(a_timeout_changes_nothing),
		T(retry_poke_and_push_front),
		T(waits_for_another_coordinators_call),
		T(the_thread_moves_the_queue),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
