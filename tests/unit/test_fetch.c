/*
 * Unit tests of a follower fetch in flight (core/replication/follower_fetch.c,
 * replica.h "Locking"): the follower's append runs without the partition
 * lock, so the leader appends, readers read and the ISR is judged
 * meanwhile, from the values the fetch published when it started; the HW
 * and acks=all count only what the follower has written and published;
 * a crash, a promotion or a second fetch of the same replica waits for
 * the fetch to end; a kill between the follower's append and its
 * publication recovers. Every cluster runs on a manual clock in manual
 * mode; the fetch's unlocked step is reached through the env's fetch hook,
 * on the fetching thread itself or, where another thread must wait for
 * it, on a thread of the test that the hook holds until released.
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
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"
#include "codec.h"
#include "config.h"
#include "failpoint.h"
#include "log.h"
#include "producer.h"
#include "replica.h"
#include "testlib.h"

/* ---- fixture ------------------------------------------------------------- */

typedef struct fixture {
	char root[64];
	char dir[128];
	mk_config cfg;
	mk_cluster *c;
	mk_topic *t;
	mk_partition *p;
	/* the hook's scenario */
	void (*in_hook)(struct fixture *f, int broker);
	int hook_broker;          /* only this broker's fetch runs in_hook */
	int hook_calls;
	/* a hook that holds its fetch until released (threads) */
	pthread_mutex_t m;
	pthread_cond_t cv;
	bool held, release;
	const char *fail;         /* the first CHECK that failed in a hook */
} fixture;

/*
 * Inside a hook the fetch is in flight: a cmocka assertion there would
 * jump out of it and leave it in flight for ever. Hooks CHECK instead;
 * the test asserts no CHECK failed once the fetch returned.
 */
#define CHECK(cond)                                                         \
	do {                                                                \
		if (!(cond) && !f->fail)                                    \
			f->fail = #cond;                                    \
	} while (0)

static void no_hook_failure(const struct fixture *f)
{
	if (f->fail)
		fail_msg("in the fetch hook: %s", f->fail);
}

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	tl_tmpdir(f->root, sizeof(f->root), "fetch");
	snprintf(f->dir, sizeof(f->dir), "%s/data", f->root);
	pthread_mutex_init(&f->m, NULL);
	pthread_cond_init(&f->cv, NULL);
	*state = f;
	return 0;
}

static void close_cluster(fixture *f)
{
	mk_topic_put(f->t);
	f->t = NULL;
	f->p = NULL;
	mk_cluster_close(f->c);
	f->c = NULL;
}

static int teardown(void **state)
{
	fixture *f = *state;
	close_cluster(f);
	tl_rmtree(f->root);
	pthread_mutex_destroy(&f->m);
	pthread_cond_destroy(&f->cv);
	free(f);
	return 0;
}

static void hook(void *arg, int broker)
{
	fixture *f = arg;
	if (broker != f->hook_broker)
		return;
	f->hook_calls++;
	if (f->in_hook)
		f->in_hook(f, broker);
}

static void use_topic(fixture *f)
{
	mk_topic_put(f->t);
	f->t = mk_cluster_topic(f->c, "t");
	assert_non_null(f->t);
	f->p = mk_topic_partition(f->t, 0);
	f->c->env.fetch_hook = hook;
	f->c->env.fetch_hook_arg = f;
}

/* Three brokers, topic t (one partition, RF 3, leader broker 1). */
static void start(fixture *f, const char *o1)
{
	tl_config(&f->cfg, 3);
	f->c = tl_cluster_open(f->dir, &f->cfg);
	tl_create_topic(f->c, "t", 1, 3, "min.insync.replicas=2", o1);
	use_topic(f);
}

static void reopen(fixture *f)
{
	f->c = tl_cluster_open(f->dir, &f->cfg);
	use_topic(f);
}

static mk_err produce_ex(mk_partition *p, const char *val, int acks,
			 bool defer, mk_produce_result *res)
{
	mk_strbuf b = MK_STRBUF_INIT;
	tl_frame(&b, 0, -1, &val, 1, NULL);
	mk_produce_args a = { .acks = acks, .seq = -1, .count = 1 };
	mk_err err = mk_partition_produce(p, (uint8_t *)b.buf, b.len, &a,
					  res, NULL);
	mk_strbuf_release(&b);
	/* Not deferred: as a caller that waits (a parked write). */
	if (!err && !defer)
		err = tl_ack_wait(p, res, NULL);
	return err;
}

static void produce(mk_partition *p, const char *val)
{
	mk_produce_result res;
	assert_int_equal(produce_ex(p, val, 1, false, &res), MK_OK);
}

static void fetch(fixture *f, int broker)
{
	assert_int_equal(mk_partition_follower_fetch(f->p, broker), MK_OK);
}

static mk_partition_info info(mk_partition *p)
{
	mk_partition_info in;
	mk_partition_info_get(p, &in);
	return in;
}

static mk_partition_test_stats stats(mk_partition *p)
{
	mk_partition_test_stats st;
	mk_partition_test_stats_get(p, &st);
	return st;
}

/* Replica of broker b (brokers 1..3 are replicas 0..2 here). */
static int64_t leo_of(mk_partition *p, int b)
{
	return info(p).replicas[b - 1].leo;
}

static bool in_isr(mk_partition *p, int b)
{
	return info(p).replicas[b - 1].in_isr;
}

/* Every online follower fetched until nothing moves; then every replica
 * holds the leader's frames byte for byte (from the leader's log start). */
static void converge(fixture *f)
{
	for (int round = 0; round < 4; round++)
		assert_int_equal(mk_cluster_replicate(f->c, NULL), MK_OK);
	mk_partition_info in = info(f->p);
	assert_int_equal(in.hw, in.leo);
	mk_strbuf lead = MK_STRBUF_INIT, copy = MK_STRBUF_INIT;
	int64_t vis;
	assert_int_equal(mk_partition_replica_fetch(f->p, -1, in.log_start, false,
						    SIZE_MAX, &lead, &vis, NULL),
			 MK_OK);
	for (int b = 1; b <= 3; b++) {
		if (!in.replicas[b - 1].online)
			continue;
		assert_int_equal(in.replicas[b - 1].leo, in.leo);
		mk_strbuf_reset(&copy);
		assert_int_equal(mk_partition_replica_fetch(f->p, b,
							    in.log_start, false,
							    SIZE_MAX, &copy,
							    &vis, NULL), MK_OK);
		assert_int_equal(copy.len, lead.len);
		assert_memory_equal(copy.buf, lead.buf, lead.len);
	}
	mk_strbuf_release(&lead);
	mk_strbuf_release(&copy);
}

/* ---- on the fetching thread ----------------------------------------------- */

static mk_produce_result ticket;

/* Broker 2's fetch of "a" is in flight. */
static void leader_goes_on(fixture *f, int broker)
{
	(void)broker;
	/* The partition lock is free during the follower's disk writes. */
	CHECK(mk_partition_test_trylock(f->p));
	if (!f->fail)
		mk_partition_test_unlock(f->p);
	/* The leader appends, and a reader reads, meanwhile. */
	mk_produce_result r;
	CHECK(produce_ex(f->p, "b", 1, false, &r) == MK_OK);
	CHECK(produce_ex(f->p, "c", -1, true, &ticket) == MK_OK);
	CHECK(ticket.pending);
	mk_partition_info in = info(f->p);
	CHECK(in.leo == 3);
	/* Others see what the fetch published when it started: nothing of
	 * its copy counts yet. */
	CHECK(in.replicas[1].leo == 0);
	CHECK(in.replicas[1].agreed_end == 0);
	CHECK(in.hw == 0);
	bool pending;
	CHECK(mk_partition_ack_check(f->p, &ticket.ticket, &pending,
						NULL) == MK_OK);
	CHECK(pending);
}

static void test_leader_appends_during_fetch(void **state)
{
	fixture *f = *state;
	start(f, NULL);
	produce(f->p, "a");
	f->hook_broker = 2;
	f->in_hook = leader_goes_on;
	fetch(f, 2);
	no_hook_failure(f);
	assert_int_equal(f->hook_calls, 1);
	f->in_hook = NULL;
	/* Published: what the fetch read ("a"), not what came meanwhile. */
	assert_int_equal(leo_of(f->p, 2), 1);
	assert_int_equal(info(f->p).hw, 0);      /* broker 3 has nothing */
	fetch(f, 3);
	assert_int_equal(leo_of(f->p, 3), 3);
	assert_int_equal(info(f->p).hw, 1);      /* broker 2 holds it at 1 */
	bool pending;
	assert_int_equal(mk_partition_ack_check(f->p, &ticket.ticket, &pending,
						NULL), MK_OK);
	assert_true(pending);
	fetch(f, 2);
	assert_int_equal(info(f->p).hw, 3);
	assert_int_equal(mk_partition_ack_check(f->p, &ticket.ticket, &pending,
						NULL), MK_OK);
	assert_false(pending);
	converge(f);
}

/* The ISR counts a fetch in flight by where its copy will end. */
static void lag_seen_from_target(fixture *f, int broker)
{
	(void)broker;
	mk_partition_refresh(f->p);
	CHECK(in_isr(f->p, 2));      /* fetching up to the leader's end */
	CHECK(!in_isr(f->p, 3));     /* 5 behind, over the lag of 2 */
	CHECK(info(f->p).hw == 0);
}

static void test_isr_lag_of_fetch_in_flight(void **state)
{
	fixture *f = *state;
	start(f, NULL);
	for (int i = 0; i < 5; i++)
		produce(f->p, "x");
	/* The cluster's lag bound, lowered once the records are there. */
	f->c->cfg.replica_lag_max_messages = 2;
	f->hook_broker = 2;
	f->in_hook = lag_seen_from_target;
	fetch(f, 2);
	no_hook_failure(f);
	assert_int_equal(f->hook_calls, 1);
	assert_true(in_isr(f->p, 2));
	assert_false(in_isr(f->p, 3));
	/* The ISR is {1, 2}: both have everything. */
	assert_int_equal(info(f->p).hw, 5);
	fetch(f, 3);
	assert_true(in_isr(f->p, 3));
}

/*
 * Auto mode: the message-lag check (every replica.lag.time.max.ms) that
 * falls while a fetch is in flight judges that follower by where the
 * fetch will end, not by its log end; a follower behind by more than the
 * bound is kept until the check, and one whose fetch in flight still
 * ends too far behind leaves at it.
 */
static void lag_check_in_flight(fixture *f, int broker)
{
	(void)broker;
	mk_partition_refresh(f->p);
	/* No check yet: 2 (and at first 3) in, however far behind. */
	CHECK(in_isr(f->p, 2) && (f->hook_calls > 1 || in_isr(f->p, 3)));
	CHECK(info(f->p).hw == (f->hook_calls == 1 ? 0 : 5));
	CHECK(mk_clock_advance(&f->c->clock, 1000)); /* the check is due */
	mk_partition_refresh(f->p);
	if (f->hook_calls == 1) {
		CHECK(in_isr(f->p, 2));  /* its log 5 behind; its fetch to 5 */
		CHECK(!in_isr(f->p, 3)); /* 5 behind at the check */
	} else {
		CHECK(!in_isr(f->p, 2)); /* its fetch ends 4 behind */
	}
}

static void test_isr_lag_check_during_fetch_auto(void **state)
{
	fixture *f = *state;
	start(f, NULL);
	f->c->cfg.auto_replication = 1;          /* the rule only: no fetchers */
	f->c->cfg.replica_lag_max_messages = 2;
	f->c->cfg.replica_lag_time_max_ms = 1000;
	for (int i = 0; i < 5; i++)
		produce(f->p, "x");
	f->hook_broker = 2;
	f->in_hook = lag_check_in_flight;
	fetch(f, 2);
	no_hook_failure(f);
	assert_true(in_isr(f->p, 2));
	assert_false(in_isr(f->p, 3));
	assert_int_equal(info(f->p).hw, 5);
	/* One batch per fetch: broker 2's next fetch ends 4 behind. */
	for (int i = 0; i < 5; i++)
		produce(f->p, "y");
	f->c->cfg.replica_fetch_max_bytes = 1;
	fetch(f, 2);
	no_hook_failure(f);
	assert_int_equal(f->hook_calls, 2);
	assert_false(in_isr(f->p, 2));
	assert_int_equal(leo_of(f->p, 2), 6);
	assert_int_equal(info(f->p).isr_shrinks, 2);
	assert_int_equal(info(f->p).hw, 10);     /* the leader alone */
}

/* Caught up, a fetch has nothing to write: no unlocked step. */
static void test_caught_up_fetch_is_one_step(void **state)
{
	fixture *f = *state;
	start(f, NULL);
	produce(f->p, "a");
	f->hook_broker = 2;
	fetch(f, 2);
	assert_int_equal(f->hook_calls, 1);
	fetch(f, 2);
	fetch(f, 2);
	assert_int_equal(f->hook_calls, 1);
	assert_int_equal(leo_of(f->p, 2), 1);
	/* ... and wakes nobody: nothing moved. A fetch that brings
	 * something does. */
	fetch(f, 3);
	fetch(f, 2);     /* both learn the HW the other's copy moved */
	fetch(f, 3);
	uint64_t seq = mk_partition_seq(f->p);
	fetch(f, 2);
	fetch(f, 3);
	assert_int_equal(mk_partition_seq(f->p), seq);
	produce(f->p, "b");
	seq = mk_partition_seq(f->p);
	fetch(f, 2);
	assert_true(mk_partition_seq(f->p) > seq);
}

/* ---- who a leader append wakes -------------------------------------------- */

/* The wake-ups a leader append made (mk_env.fetch_wake), recorded. */
static struct {
	fixture *f;
	int n;
	int broker[8];
	uint64_t bytes[8];
	bool locked[8];        /* the partition lock was held meanwhile */
} woke;

static void record_wake(void *arg, int broker, uint64_t bytes)
{
	(void)arg;
	if (woke.n == 8)
		return;
	bool free_ = mk_partition_test_trylock(woke.f->p);
	if (free_)
		mk_partition_test_unlock(woke.f->p);
	woke.broker[woke.n] = broker;
	woke.bytes[woke.n] = bytes;
	woke.locked[woke.n++] = !free_;
}

/* Exactly brokers 2 and 3 (in either order), bytes each, lock free. */
static void woke_followers(const int *brokers, int n, uint64_t bytes)
{
	assert_int_equal(woke.n, n);
	for (int k = 0; k < n; k++) {
		assert_int_equal(woke.broker[k], brokers[k]);
		assert_int_equal(woke.bytes[k], bytes);
		assert_false(woke.locked[k]);
	}
	woke.n = 0;
}

static size_t frame_len(const char *val)
{
	mk_strbuf b = MK_STRBUF_INIT;
	tl_frame(&b, 0, -1, &val, 1, NULL);
	size_t n = b.len;
	mk_strbuf_release(&b);
	return n;
}

/*
 * A leader append wakes the fetchers of its followers' brokers — not the
 * leader's own, not a broker whose replica is offline — once the
 * partition lock is released, with the bytes appended.
 */
static void test_append_wakes_followers_unlocked(void **state)
{
	fixture *f = *state;
	start(f, NULL);
	const int both[] = { 2, 3 }, two[] = { 2 };
	/* The cluster's own wake-up: per broker, the leader's untouched. */
	uint64_t before[3];
	for (int b = 0; b < 3; b++)
		before[b] = f->c->brokers[b].wake.bytes;
	produce(f->p, "a");
	assert_int_equal(f->c->brokers[0].wake.bytes, before[0]);
	for (int b = 1; b < 3; b++)
		assert_int_equal(f->c->brokers[b].wake.bytes,
				 before[b] + frame_len("a"));

	memset(&woke, 0, sizeof(woke));
	woke.f = f;
	f->c->env.fetch_wake = record_wake;
	produce(f->p, "bb");                          /* acks=1 */
	woke_followers(both, 2, frame_len("bb"));
	mk_produce_result res;
	assert_int_equal(produce_ex(f->p, "ccc", -1, true, &res), MK_OK);
	assert_true(res.pending);                     /* deferred acks=all */
	woke_followers(both, 2, frame_len("ccc"));

	/* Several frames in one append: one wake-up each, their sum. */
	mk_strbuf b1 = MK_STRBUF_INIT, b2 = MK_STRBUF_INIT;
	const char *v1 = "d", *v2 = "ee";
	tl_frame(&b1, 0, -1, &v1, 1, NULL);
	tl_frame(&b2, 0, -1, &v2, 1, NULL);
	uint8_t *frames[] = { (uint8_t *)b1.buf, (uint8_t *)b2.buf };
	size_t lens[] = { b1.len, b2.len };
	mk_produce_result many[2];
	mk_produce_args a = { .acks = -1 };
	assert_int_equal(mk_partition_produce_many(f->p, frames, lens, 2, &a,
						   many, NULL), MK_OK);
	woke_followers(both, 2, b1.len + b2.len);
	mk_strbuf_release(&b1);
	mk_strbuf_release(&b2);

	/* A refused append wakes nobody. */
	mk_partition_test_set_message_max(f->p, 1);
	assert_int_equal(produce_ex(f->p, "f", 1, false, &res),
			 MK_MESSAGE_TOO_LARGE);
	assert_int_equal(woke.n, 0);
	mk_partition_test_set_message_max(f->p, 1000000);

	/* Broker 3 offline: only broker 2 is woken. */
	assert_int_equal(mk_cluster_broker_crash(f->c, 3, false, NULL), MK_OK);
	produce(f->p, "g");
	woke_followers(two, 1, frame_len("g"));
	assert_int_equal(mk_cluster_broker_restart(f->c, 3, NULL), MK_OK);
}

/* ---- one leader read for two followers ---------------------------------------- */

static uint64_t reads(fixture *f)
{
	return stats(f->p).leader_reads;
}

static bool kept(fixture *f)
{
	return stats(f->p).copy_kept;
}

/*
 * Both followers fetch the same batch: the second takes the frames the
 * first one's read of the leader's log gave, unless the leader's log
 * moved meanwhile; a copy nobody else wants is not kept.
 */
static void test_one_read_for_two_followers(void **state)
{
	fixture *f = *state;
	start(f, NULL);
	produce(f->p, "a");
	uint64_t r = reads(f);
	fetch(f, 2);
	assert_int_equal(reads(f), r + 1);
	assert_true(kept(f));              /* broker 3 ends where it began */
	fetch(f, 3);
	assert_int_equal(reads(f), r + 1); /* no second read */
	assert_false(kept(f));             /* used once */
	assert_int_equal(leo_of(f->p, 3), 1);
	assert_int_equal(info(f->p).hw, 1);
	converge(f);

	/* An append in between: broker 3 reads for itself, and gets both. */
	produce(f->p, "b");
	r = reads(f);
	fetch(f, 2);
	assert_true(kept(f));
	produce(f->p, "c");
	assert_false(kept(f));
	fetch(f, 3);
	assert_int_equal(reads(f), r + 2);
	assert_int_equal(leo_of(f->p, 3), 3);
	converge(f);

	/* Anything that changes a log first drops it (a flush here). */
	produce(f->p, "d");
	fetch(f, 2);
	assert_true(kept(f));
	assert_int_equal(mk_partition_flush(f->p), MK_OK);
	assert_false(kept(f));
	r = reads(f);
	fetch(f, 3);
	assert_int_equal(reads(f), r + 1);
	assert_int_equal(leo_of(f->p, 3), 4);

	/* Broker 3 offline: nobody else wants broker 2's copy. */
	assert_int_equal(mk_cluster_broker_crash(f->c, 3, false, NULL), MK_OK);
	produce(f->p, "e");
	fetch(f, 2);
	assert_false(kept(f));
	assert_int_equal(mk_cluster_broker_restart(f->c, 3, NULL), MK_OK);
	converge(f);
}

/* ---- whom a follower's publication wakes ------------------------------------ */

typedef struct {
	mk_watch w;      /* first */
	int fired;
} counted_watch;

static void count_fire(mk_watch *w)
{
	((counted_watch *)w)->fired++;
}

static void arm(mk_partition *p, counted_watch *cw, const mk_ack_ticket *ack)
{
	cw->w.fn = count_fire;
	cw->w.ack = ack;
	mk_partition_watch(p, &cw->w, mk_partition_seq(p));
}

/*
 * A watcher of an acks=all ticket is not fired by the first follower's
 * copy (the ticket still waits for the second), a plain watcher is; the
 * copy that settles the ticket fires it, and so does an ISR change.
 */
static void test_progress_wakes_no_pending_writer(void **state)
{
	fixture *f = *state;
	start(f, NULL);
	mk_produce_result res;
	assert_int_equal(produce_ex(f->p, "a", -1, true, &res), MK_OK);
	assert_true(res.pending);
	counted_watch acks = { 0 }, plain = { 0 };
	arm(f->p, &acks, &res.ticket);
	arm(f->p, &plain, NULL);
	uint64_t seq = mk_partition_seq(f->p);
	fetch(f, 2);
	assert_true(mk_partition_seq(f->p) > seq);   /* a change all the same */
	assert_int_equal(plain.fired, 1);
	assert_int_equal(acks.fired, 0);
	assert_true(acks.w.armed);
	fetch(f, 3);
	assert_int_equal(acks.fired, 1);
	assert_false(acks.w.armed);
	bool pending;
	assert_int_equal(mk_partition_ack_check(f->p, &res.ticket, &pending,
						NULL), MK_OK);
	assert_false(pending);

	/* Waiting for broker 3 when it leaves the ISR: fired by the change
	 * (the ticket is then settled without it). */
	assert_int_equal(produce_ex(f->p, "b", -1, true, &res), MK_OK);
	arm(f->p, &acks, &res.ticket);
	fetch(f, 2);
	assert_int_equal(acks.fired, 1);
	assert_int_equal(mk_cluster_broker_crash(f->c, 3, false, NULL), MK_OK);
	assert_int_equal(acks.fired, 2);
	assert_int_equal(mk_partition_ack_check(f->p, &res.ticket, &pending,
						NULL), MK_OK);
	assert_false(pending);
	mk_partition_unwatch(f->p, &plain.w);
}

/* ---- another thread waits for the fetch ----------------------------------- */

/* Hold the fetch in its unlocked step until the test releases it. */
static void hold(fixture *f, int broker)
{
	(void)broker;
	pthread_mutex_lock(&f->m);
	f->held = true;
	pthread_cond_broadcast(&f->cv);
	while (!f->release)
		pthread_cond_wait(&f->cv, &f->m);
	pthread_mutex_unlock(&f->m);
}

typedef struct {
	fixture *f;
	int broker;
	mk_err err;
	atomic_bool done;
	pthread_t th;
	enum { DO_FETCH, DO_CRASH, DO_PROMOTE, DO_WRITE } what;
	mk_produce_result res;    /* DO_WRITE's */
} job;

static mk_err write_all(mk_partition *p, const char *val,
			mk_produce_result *res);

static void *job_main(void *arg)
{
	job *j = arg;
	switch (j->what) {
	case DO_FETCH:
		j->err = mk_partition_follower_fetch(j->f->p, j->broker);
		break;
	case DO_CRASH:
		j->err = mk_cluster_broker_crash(j->f->c, j->broker, false, NULL);
		break;
	case DO_PROMOTE:
		j->err = mk_cluster_promote(j->f->c, j->broker, "t", 0, false,
					    NULL);
		break;
	case DO_WRITE:
		j->err = write_all(j->f->p, "w", &j->res);
		break;
	}
	atomic_store(&j->done, true);
	return NULL;
}

static void run(job *j, fixture *f, int what, int broker)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
	j->what = what;
	j->broker = broker;
	atomic_init(&j->done, false);
	assert_int_equal(pthread_create(&j->th, NULL, job_main, j), 0);
}

/* Wait (bounded: a deadlock detector, not a timing) until cond. */
static bool wait_for(bool (*cond)(fixture *f), fixture *f)
{
	for (int i = 0; i < 200000; i++) {
		if (cond(f))
			return true;
		struct timespec ts = { 0, 100000 };
		nanosleep(&ts, NULL);
	}
	return cond(f);
}

static bool is_held(fixture *f)
{
	pthread_mutex_lock(&f->m);
	bool h = f->held;
	pthread_mutex_unlock(&f->m);
	return h;
}

/* A change waits for the fetch in flight: it has entered settle(). */
static bool is_quiescing(fixture *f)
{
	return stats(f->p).quiescing > 0;
}

static void let_go(fixture *f)
{
	pthread_mutex_lock(&f->m);
	f->release = true;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->m);
}

/* Start broker 2's fetch of what the leader has and hold it in flight. */
static void fetch_held(fixture *f, job *fj)
{
	f->hook_broker = 2;
	f->in_hook = hold;
	f->held = f->release = false;
	run(fj, f, DO_FETCH, 2);
	assert_true(wait_for(is_held, f));
}

static void test_crash_waits_for_fetch(void **state)
{
	fixture *f = *state;
	start(f, NULL);
	produce(f->p, "a");
	produce(f->p, "b");
	job fj, cj;
	fetch_held(f, &fj);
	run(&cj, f, DO_CRASH, 2);
	assert_true(wait_for(is_quiescing, f));
	assert_false(atomic_load(&cj.done));     /* it waits for the fetch */
	let_go(f);
	pthread_join(fj.th, NULL);
	pthread_join(cj.th, NULL);
	assert_int_equal(fj.err, MK_OK);
	assert_int_equal(cj.err, MK_OK);
	mk_partition_info in = info(f->p);
	assert_false(in.replicas[1].online);
	assert_int_equal(in.replicas[1].leo, -1);
	assert_int_equal(stats(f->p).nfetching, 0);
	f->in_hook = NULL;
	assert_int_equal(mk_cluster_broker_restart(f->c, 2, NULL), MK_OK);
	converge(f);
	assert_int_equal(info(f->p).hw, 2);
}

static void test_promotion_waits_for_fetch(void **state)
{
	fixture *f = *state;
	start(f, NULL);
	produce(f->p, "a");
	fetch(f, 3);
	produce(f->p, "b");
	int32_t epoch = info(f->p).leader_epoch;
	job fj, pj;
	fetch_held(f, &fj);
	/* Broker 2's copy of a and b is in flight; broker 3 becomes the
	 * leader only once it is published. */
	run(&pj, f, DO_PROMOTE, 3);
	assert_true(wait_for(is_quiescing, f));
	assert_false(atomic_load(&pj.done));
	assert_int_equal(info(f->p).leader, 1);
	let_go(f);
	pthread_join(fj.th, NULL);
	pthread_join(pj.th, NULL);
	assert_int_equal(fj.err, MK_OK);
	assert_int_equal(pj.err, MK_OK);
	mk_partition_info in = info(f->p);
	assert_int_equal(in.leader, 3);
	assert_int_equal(in.leader_epoch, epoch + 1);
	assert_int_equal(in.replicas[1].leo, 2);   /* its copy landed */
	f->in_hook = NULL;
	/* Broker 3 lacks b: after reconciling, everyone agrees on a. */
	produce(f->p, "c");
	converge(f);
	assert_int_equal(info(f->p).leo, 2);
	assert_int_equal(leo_of(f->p, 1), 2);
}

/* A second fetch of the same replica waits for the first. */
static void test_one_fetch_per_replica(void **state)
{
	fixture *f = *state;
	start(f, NULL);
	produce(f->p, "a");
	job fj, sj;
	fetch_held(f, &fj);
	run(&sj, f, DO_FETCH, 2);
	/* Broker 3's fetch is not held back by broker 2's. */
	f->hook_broker = 0;
	fetch(f, 3);
	assert_int_equal(leo_of(f->p, 3), 1);
	produce(f->p, "b");
	f->hook_broker = 2;
	let_go(f);
	pthread_join(fj.th, NULL);
	pthread_join(sj.th, NULL);
	assert_int_equal(fj.err, MK_OK);
	assert_int_equal(sj.err, MK_OK);
	/* Both fetches ran, one after the other: "a", then "b". */
	assert_int_equal(leo_of(f->p, 2), 2);
	converge(f);
}

/* The copy broker 2's fetch still appends from (its unlocked step) is
 * broker 3's too: both append the same bytes meanwhile. */
static void test_copy_shared_in_flight(void **state)
{
	fixture *f = *state;
	start(f, NULL);
	produce(f->p, "a");
	produce(f->p, "b");
	job fj;
	fetch_held(f, &fj);
	uint64_t r = reads(f);
	f->hook_broker = 0;
	fetch(f, 3);
	assert_int_equal(reads(f), r);          /* broker 2's read */
	assert_int_equal(leo_of(f->p, 3), 2);
	assert_int_equal(info(f->p).hw, 0);     /* broker 2's copy unpublished */
	f->hook_broker = 2;
	let_go(f);
	pthread_join(fj.th, NULL);
	assert_int_equal(fj.err, MK_OK);
	assert_int_equal(info(f->p).hw, 2);
	converge(f);
}

/* ---- killed between the copy and its publication ---------------------- */

static void test_kill_after_append(void **state)
{
	fixture *f = *state;
	start(f, NULL);
	produce(f->p, "a");
	converge(f);
	close_cluster(f);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		f->c = tl_cluster_open(f->dir, &f->cfg);
		f->t = mk_cluster_topic(f->c, "t");
		f->p = mk_topic_partition(f->t, 0);
		mk_produce_result res;
		if (produce_ex(f->p, "b", 1, false, &res) ||
		    produce_ex(f->p, "c", 1, false, &res))
			_exit(2);
		mk_failpoint_arm("replica.fetch.after-append", 1);
		mk_partition_follower_fetch(f->p, 2);
		_exit(3);          /* the point was not reached */
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGKILL);
	reopen(f);
	/* Broker 2's log kept its unpublished copy (the process died, the
	 * page cache did not); the HW counts only what the ISR has. */
	mk_partition_info in = info(f->p);
	assert_int_equal(in.leo, 3);
	assert_int_equal(in.replicas[1].leo, 3);
	assert_int_equal(in.replicas[2].leo, 1);
	assert_int_equal(in.hw, 1);
	converge(f);
	assert_int_equal(info(f->p).hw, 3);
}


/* ---- the writer's copy (replica.h) ---------------------------------------- */

/* An acks=all append whose caller waits for it (copy_inline). */
static mk_err write_all(mk_partition *p, const char *val,
			mk_produce_result *res)
{
	mk_strbuf b = MK_STRBUF_INIT;
	tl_frame(&b, 0, -1, &val, 1, NULL);
	mk_produce_args a = { .acks = -1, .seq = -1, .count = 1, .copy_inline = true };
	mk_err err = mk_partition_produce(p, (uint8_t *)b.buf, b.len, &a,
					  res, NULL);
	mk_strbuf_release(&b);
	return err;
}

static uint64_t copies(fixture *f, uint64_t *skips)
{
	mk_partition_test_stats st = stats(f->p);
	if (skips)
		*skips = st.writer_skips;
	return st.writer_copies;
}

static bool acked(fixture *f, const mk_produce_result *res, mk_err *err)
{
	bool pending;
	*err = mk_partition_ack_check(f->p, &res->ticket, &pending, NULL);
	return !*err && !pending;
}

/* Woken for broker 3, whose fetch then starts at once (held in flight):
 * the writer's copy goes to broker 2 and leaves broker 3 to it. */
static job race;
static void wake_starts_fetch_of(void *arg, int broker, uint64_t bytes,
				 int of)
{
	record_wake(arg, broker, bytes);
	fixture *f = woke.f;
	if (broker != 3 || race.f)
		return;
	f->hook_broker = of;
	f->in_hook = hold;
	f->held = f->release = false;
	run(&race, f, DO_FETCH, of);
	wait_for(is_held, f);
}

static void wake_starts_fetch_3(void *arg, int broker, uint64_t bytes)
{
	wake_starts_fetch_of(arg, broker, bytes, 3);
}

/*
 * The fetchers stay out of these (manual mode, explicit fetch rounds):
 * env.writer_copy is set by hand as mk_cluster_start sets it in auto mode.
 * The writer copies its batch to one follower before the call returns,
 * waking only the other's fetcher, then to the other follower too when
 * no fetch of it has started; the batch is then acknowledged at once.
 */
static void test_writer_copies_followers(void **state)
{
	fixture *f = *state;
	start(f, NULL);
	converge(f);
	assert_false(f->c->env.writer_copy);      /* manual mode */
	f->c->env.writer_copy = true;
	memset(&woke, 0, sizeof(woke));
	woke.f = f;
	f->c->env.fetch_wake = record_wake;
	mk_produce_result res;
	mk_err err;
	uint64_t r = reads(f);
	assert_int_equal(write_all(f->p, "a", &res), MK_OK);
	assert_true(res.pending);
	assert_int_equal(copies(f, NULL), 2);
	assert_int_equal(leo_of(f->p, 2), 1);     /* copied, published */
	assert_int_equal(leo_of(f->p, 3), 1);
	const int three[] = { 3 };
	woke_followers(three, 1, frame_len("a"));
	assert_true(acked(f, &res, &err));        /* no parking needed */
	assert_int_equal(info(f->p).hw, 1);
	/* No read of the leader's log: both copies took the frames the
	 * writer appended, kept in memory (copy_seed). */
	assert_int_equal(reads(f), r);

	/* Broker 3's fetcher got there first: the writer copies to broker
	 * 2 only and returns without waiting; broker 3's fetch answers. */
	memset(&race, 0, sizeof(race));
	f->c->env.fetch_wake = wake_starts_fetch_3;
	job wj;
	run(&wj, f, DO_WRITE, 0);
	pthread_join(wj.th, NULL);
	assert_int_equal(wj.err, MK_OK);
	assert_true(race.f != NULL && is_held(f));
	assert_int_equal(copies(f, NULL), 3);
	assert_int_equal(leo_of(f->p, 2), 2);
	assert_int_equal(leo_of(f->p, 3), 1);     /* in flight */
	assert_false(acked(f, &wj.res, &err));
	woke_followers(three, 1, frame_len("w"));
	let_go(f);
	pthread_join(race.th, NULL);
	assert_int_equal(race.err, MK_OK);
	assert_true(acked(f, &wj.res, &err));
	f->in_hook = NULL;
	f->c->env.fetch_wake = record_wake;

	/* Broker 3 out: the writer's copy completes the ISR; nobody else is
	 * woken. */
	assert_int_equal(mk_cluster_broker_crash(f->c, 3, false, NULL), MK_OK);
	assert_int_equal(write_all(f->p, "b", &res), MK_OK);
	assert_int_equal(copies(f, NULL), 4);
	assert_int_equal(woke.n, 0);
	assert_int_equal(info(f->p).hw, 3);
	assert_true(acked(f, &res, &err));
	f->c->env.fetch_wake = NULL;
	assert_int_equal(mk_cluster_broker_restart(f->c, 3, NULL), MK_OK);
	converge(f);
}

/* No copy for acks=1, for a caller that does not wait, or in manual
 * mode: the followers move only when fetched. */
static void test_writer_copy_only_acks_all_auto(void **state)
{
	fixture *f = *state;
	start(f, NULL);
	converge(f);
	mk_produce_result res;
	assert_int_equal(write_all(f->p, "a", &res), MK_OK);   /* manual */
	f->c->env.writer_copy = true;
	assert_int_equal(produce_ex(f->p, "b", 1, false, &res), MK_OK);
	assert_int_equal(produce_ex(f->p, "c", -1, true, &res), MK_OK);
	mk_strbuf b = MK_STRBUF_INIT;
	const char *v = "d";
	tl_frame(&b, 0, -1, &v, 1, NULL);
	mk_produce_args one = { .acks = 1, .seq = -1, .count = 1, .copy_inline = true };
	assert_int_equal(mk_partition_produce(f->p, (uint8_t *)b.buf, b.len,
					      &one, &res, NULL), MK_OK);
	mk_strbuf_release(&b);
	assert_int_equal(copies(f, NULL), 0);
	assert_int_equal(leo_of(f->p, 2), 0);
	assert_int_equal(leo_of(f->p, 3), 0);
	assert_int_equal(info(f->p).leo, 4);
	converge(f);
}

/* ---- the writer's frames as the kept copy (copy_seed) --------------------- */

/* An acks=all append of frames [0, n) whose writer waits (copy_inline);
 * values vals[i], one record each. Returns the first error. */
static mk_err write_all_many(mk_partition *p, const char *const *vals,
			     size_t n)
{
	mk_strbuf b[8];
	uint8_t *frames[8];
	size_t lens[8];
	mk_produce_result res[8];
	assert_true(n <= 8);
	for (size_t i = 0; i < n; i++) {
		mk_strbuf_init(&b[i], 0);
		tl_frame(&b[i], 0, -1, &vals[i], 1, NULL);
		frames[i] = (uint8_t *)b[i].buf;
		lens[i] = b[i].len;
	}
	mk_produce_args a = { .acks = -1,
			      .copy_inline = true };
	mk_err err = mk_partition_produce_many(p, frames, lens, n, &a, res,
					       NULL);
	for (size_t i = 0; i < n; i++)
		mk_strbuf_release(&b[i]);
	return err;
}

static size_t leader_segments(fixture *f)
{
	mk_segment_info *infos = NULL;
	size_t n = mk_partition_segments(f->p, &infos, NULL);
	free(infos);
	return n;
}

/*
 * In manual mode no writer copies, so what an acks=all append keeps stays
 * for the explicit fetches. The kept frames are byte for byte what the
 * leader's log holds from the followers' end (converge compares every
 * replica with the leader): frames stamped in place, an idempotent
 * producer's fields, several frames across rolls. Both followers take
 * them without a read of the leader's log. Not kept: a write whose frames
 * were not all appended, or that is above replica.fetch.max.bytes (the
 * followers then read, capped as usual).
 */
static void test_seeded_copy_is_the_log(void **state)
{
	fixture *f = *state;
	start(f, "segment.bytes=200");
	converge(f);
	mk_strbuf b = MK_STRBUF_INIT;
	mk_produce_result res;

	/* Idempotent: producer id, epoch and sequence stamped first. */
	const char *v = "idem";
	tl_frame(&b, 0, -1, &v, 1, NULL);
	mk_produce_args ia = { .acks = -1, .idempotent = true, .pid = 4242,
			       .epoch = 3, .seq = -1, .count = 1, .copy_inline = true };
	assert_int_equal(mk_partition_produce(f->p, (uint8_t *)b.buf, b.len,
					      &ia, &res, NULL), MK_OK);
	assert_true(kept(f));
	uint64_t r = reads(f);
	fetch(f, 2);
	assert_true(kept(f));              /* broker 3 still wants it */
	fetch(f, 3);
	assert_false(kept(f));
	assert_int_equal(reads(f), r);
	assert_int_equal(leo_of(f->p, 3), 1);
	converge(f);

	/* Several frames, rolling twice on the way (200-byte segments). */
	size_t segs = leader_segments(f);
	const char *six[] = { "s0", "s1", "s2", "s3", "s4", "s5" };
	assert_int_equal(write_all_many(f->p, six, 6), MK_OK);
	assert_true(leader_segments(f) >= segs + 2);
	assert_true(kept(f));
	r = reads(f);
	fetch(f, 3);
	fetch(f, 2);
	assert_int_equal(reads(f), r);
	assert_int_equal(leo_of(f->p, 2), 7);
	converge(f);

	/* A refused frame in the middle: not seeded, read back. */
	mk_partition_test_set_message_max(f->p, frame_len("s0") + 1);
	const char *mixed[] = { "m0", "a-value-far-too-large", "m2" };
	assert_int_equal(write_all_many(f->p, mixed, 3), MK_MESSAGE_TOO_LARGE);
	mk_partition_test_set_message_max(f->p, 1000000);
	assert_false(kept(f));
	r = reads(f);
	fetch(f, 2);
	assert_int_equal(reads(f), r + 1);
	assert_int_equal(leo_of(f->p, 2), 9);
	converge(f);

	/* Above replica.fetch.max.bytes: each fetch reads at most that. */
	int64_t max = f->c->cfg.replica_fetch_max_bytes;
	f->c->cfg.replica_fetch_max_bytes = 2 * (int64_t)frame_len("x0");
	const char *four[] = { "x0", "x1", "x2", "x3" };
	assert_int_equal(write_all_many(f->p, four, 4), MK_OK);
	assert_false(kept(f));
	r = reads(f);
	fetch(f, 2);
	assert_int_equal(reads(f), r + 1);
	assert_int_equal(leo_of(f->p, 2), 11);     /* two of the four */
	f->c->cfg.replica_fetch_max_bytes = max;
	converge(f);
	mk_strbuf_release(&b);
}

/*
 * Nothing is kept for followers that will not fetch from where the
 * writer's frames start: both behind, or none at all (RF 1).
 */
static void test_seed_only_for_a_follower_at_its_start(void **state)
{
	fixture *f = *state;
	start(f, NULL);
	produce(f->p, "a");                 /* the followers stay at 0 */
	mk_produce_result res;
	assert_int_equal(write_all(f->p, "b", &res), MK_OK);
	assert_false(kept(f));
	fetch(f, 2);                        /* one read: "a" and "b" */
	assert_int_equal(leo_of(f->p, 2), 2);
	assert_int_equal(write_all(f->p, "c", &res), MK_OK);
	assert_true(kept(f));               /* broker 2 starts at 2 */
	converge(f);

	tl_create_topic(f->c, "one", 1, 1, NULL, NULL);
	mk_topic *t = mk_cluster_topic(f->c, "one");
	assert_non_null(t);
	mk_partition *p = mk_topic_partition(t, 0);
	assert_int_equal(write_all(p, "x", &res), MK_OK);
	assert_false(stats(p).copy_kept);
	mk_topic_put(t);
}

/*
 * A kept copy of the writer's frames is used only while the leader's log
 * is as it was: a log start moved by a deletion (which does not settle),
 * another append, or a leader change in between make the followers read
 * (and get the new leader's frames, never the old ones).
 */
static void test_seeded_copy_not_used_after_change(void **state)
{
	fixture *f = *state;
	start(f, NULL);
	produce(f->p, "a");
	produce(f->p, "b");
	converge(f);
	mk_produce_result res;

	/* The log start moves: the copy says another start. */
	assert_int_equal(write_all(f->p, "c", &res), MK_OK);
	assert_true(kept(f));
	int64_t low;
	assert_int_equal(mk_partition_delete_records(f->p, 1, &low, NULL),
			 MK_OK);
	assert_int_equal(low, 1);
	uint64_t r = reads(f);
	fetch(f, 2);
	assert_int_equal(reads(f), r + 1);
	assert_int_equal(leo_of(f->p, 2), 3);
	converge(f);

	/* Another append: the copy goes; the follower reads both. */
	assert_int_equal(write_all(f->p, "d", &res), MK_OK);
	assert_true(kept(f));
	produce(f->p, "e");
	assert_false(kept(f));
	r = reads(f);
	fetch(f, 3);
	assert_int_equal(reads(f), r + 1);
	assert_int_equal(leo_of(f->p, 3), 5);
	converge(f);

	/* Broker 3 is made leader with broker 1's copy of "f" kept: broker 3
	 * never had "f"; its own "g" is what broker 2 and broker 1 (whose
	 * "f" is a divergent tail now) must get at offset 5. */
	assert_int_equal(write_all(f->p, "f", &res), MK_OK);
	assert_true(kept(f));
	int32_t epoch = info(f->p).leader_epoch;
	assert_int_equal(mk_cluster_promote(f->c, 3, "t", 0, false, NULL),
			 MK_OK);
	assert_false(kept(f));
	assert_int_equal(info(f->p).leader, 3);
	assert_int_equal(info(f->p).leader_epoch, epoch + 1);
	produce(f->p, "g");
	assert_int_equal(info(f->p).leo, 6);
	r = reads(f);
	fetch(f, 2);
	assert_int_equal(reads(f), r + 1);
	converge(f);      /* every replica is the new leader's, byte for byte */
	mk_strbuf out = MK_STRBUF_INIT;
	int64_t vis;
	assert_int_equal(mk_partition_replica_fetch(f->p, 1, 5, false, SIZE_MAX,
						    &out, &vis, NULL), MK_OK);
	mk_batch_view bv;
	assert_int_equal(mk_frame_decode((const uint8_t *)out.buf, out.len, 0, &bv, NULL), MK_OK);
	assert_int_equal(bv.meta.base_offset, 5);
	assert_int_equal(bv.meta.leader_epoch, epoch + 1);
	mk_strbuf_release(&out);
}

/* Auto mode, its fetchers running: mk_cluster_start turns the writer's
 * copy on; a producer's acks=all appends each make one or two (or skip
 * one when the follower's fetcher got there first), acks=1 none. */
static void test_writer_copy_auto_producer(void **state)
{
	fixture *f = *state;
	tl_config(&f->cfg, 3);
	f->cfg.auto_replication = 1;
	f->c = tl_cluster_open(f->dir, &f->cfg);
	tl_create_topic(f->c, "t", 1, 3, "min.insync.replicas=2", NULL);
	use_topic(f);
	assert_false(f->c->env.writer_copy);
	mk_cluster_start(f->c);
	assert_true(f->c->env.writer_copy);
	mk_producers *ps = mk_producers_new(f->c);
	mk_strbuf why = MK_STRBUF_INIT;
	mk_record_in r = { MK_BYTES_NULL, mk_bytes_of("a", 1), NULL, 0 };
	size_t taken;
	for (int acks = -1; acks <= 1; acks += 2) {
		mk_producer_opts o = { .acks = acks, .seq = -1 };
		mk_producer *pr;
		assert_int_equal(mk_producer_open(ps, f->t, 0, &o, &pr, &why),
				 MK_OK);
		uint64_t skips, made = copies(f, &skips);
		for (int i = 0; i < 20; i++) {
			/* Each acks=all append waits for the last to be in the
			 * ISR: no fetch has its batch when it claims one. */
			assert_int_equal(tl_producer_send(f->c, pr, &r, 1, &taken,
							  &why), MK_OK);
			assert_int_equal(taken, 1);
		}
		/* One or two each: the first copy made or skipped, then
		 * the other follower's when its fetch had not started. */
		uint64_t skips2, made2 = copies(f, &skips2);
		uint64_t n = made2 + skips2 - made - skips;
		if (acks == -1)
			assert_in_range(n, 20, 40);
		else
			assert_int_equal(n, 0);
		assert_int_equal(mk_producer_close(pr, &why), MK_OK);
	}
	mk_strbuf_release(&why);
	mk_producers_free(ps);
	assert_int_equal(info(f->p).leo, 40);
}

/* Woken for broker 3 (the writer copies to broker 2 next): broker 2's
 * own fetch starts first, held in flight. */
static void wake_starts_fetch_2(void *arg, int broker, uint64_t bytes)
{
	wake_starts_fetch_of(arg, broker, bytes, 2);
}

/*
 * The writer never waits for a fetch in flight: with broker 2 being
 * fetched when it appends, it copies to broker 3; when broker 2's fetch
 * starts between its choice and its copy, it skips and wakes broker 2's
 * fetcher instead.
 */
static void test_writer_skips_fetch_in_flight(void **state)
{
	fixture *f = *state;
	start(f, NULL);
	converge(f);
	f->c->env.writer_copy = true;
	produce(f->p, "a");
	job fj, wj;
	fetch_held(f, &fj);
	memset(&woke, 0, sizeof(woke));
	woke.f = f;
	f->c->env.fetch_wake = record_wake;
	run(&wj, f, DO_WRITE, 0);
	pthread_join(wj.th, NULL);         /* never waited for broker 2 */
	assert_int_equal(wj.err, MK_OK);
	assert_int_equal(copies(f, NULL), 1);
	assert_int_equal(leo_of(f->p, 3), 2);
	const int two[] = { 2 };
	woke_followers(two, 1, frame_len("w"));
	let_go(f);
	pthread_join(fj.th, NULL);
	assert_int_equal(fj.err, MK_OK);
	assert_int_equal(leo_of(f->p, 2), 1);     /* its fetch read "a" */
	fetch(f, 2);
	mk_err err;
	assert_true(acked(f, &wj.res, &err));

	/* Broker 2's fetch starts after the writer chose it. */
	memset(&race, 0, sizeof(race));
	f->c->env.fetch_wake = wake_starts_fetch_2;
	run(&wj, f, DO_WRITE, 0);
	pthread_join(wj.th, NULL);
	assert_int_equal(wj.err, MK_OK);
	assert_true(race.f != NULL && is_held(f));
	uint64_t skips;
	assert_int_equal(copies(f, &skips), 1);
	assert_int_equal(skips, 1);
	const int three_two[] = { 3, 2 };
	woke_followers(three_two, 2, frame_len("w"));
	let_go(f);
	pthread_join(race.th, NULL);
	assert_int_equal(race.err, MK_OK);
	assert_int_equal(leo_of(f->p, 2), 3);     /* the fetch copied it */
	f->c->env.fetch_wake = NULL;
	f->in_hook = NULL;
	converge(f);
	assert_true(acked(f, &wj.res, &err));
}

/* The writer's copy held in flight (its unlocked step, on its thread). */
static void writer_copy_held(fixture *f, job *wj)
{
	f->c->env.writer_copy = true;
	f->hook_broker = 2;
	f->in_hook = hold;
	f->held = f->release = false;
	run(wj, f, DO_WRITE, 0);
	assert_true(wait_for(is_held, f));
}

/* A crash waits for the writer's copy as for any fetch. */
static void test_crash_waits_for_writer_copy(void **state)
{
	fixture *f = *state;
	start(f, NULL);
	converge(f);
	job wj, cj;
	writer_copy_held(f, &wj);
	run(&cj, f, DO_CRASH, 2);
	assert_true(wait_for(is_quiescing, f));
	assert_false(atomic_load(&cj.done));
	assert_false(atomic_load(&wj.done));
	let_go(f);
	pthread_join(wj.th, NULL);
	pthread_join(cj.th, NULL);
	assert_int_equal(wj.err, MK_OK);
	assert_int_equal(cj.err, MK_OK);
	/* Then broker 3's copy too, unless the crash still quiesced. */
	assert_in_range(copies(f, NULL), 1, 2);
	assert_false(info(f->p).replicas[1].online);
	assert_int_equal(stats(f->p).nfetching, 0);
	/* The ticket waits for broker 3 only, in the ISR. */
	fetch(f, 3);
	mk_err err;
	assert_true(acked(f, &wj.res, &err));
	f->in_hook = NULL;
	assert_int_equal(mk_cluster_broker_restart(f->c, 2, NULL), MK_OK);
	converge(f);
	assert_int_equal(info(f->p).hw, 1);
}

/* A promotion waits for it too; the writer's ticket is then fenced. */
static void test_promotion_waits_for_writer_copy(void **state)
{
	fixture *f = *state;
	start(f, NULL);
	converge(f);
	int32_t epoch = info(f->p).leader_epoch;
	job wj, pj;
	writer_copy_held(f, &wj);
	run(&pj, f, DO_PROMOTE, 3);
	assert_true(wait_for(is_quiescing, f));
	assert_false(atomic_load(&pj.done));
	assert_int_equal(info(f->p).leader, 1);
	let_go(f);
	pthread_join(wj.th, NULL);
	pthread_join(pj.th, NULL);
	assert_int_equal(wj.err, MK_OK);
	assert_int_equal(pj.err, MK_OK);
	mk_partition_info in = info(f->p);
	assert_int_equal(in.leader, 3);
	assert_int_equal(in.leader_epoch, epoch + 1);
	assert_int_equal(in.replicas[1].leo, 1);   /* the copy landed */
	assert_int_equal(copies(f, NULL), 1);      /* none under epoch 2 */
	mk_err err;
	assert_false(acked(f, &wj.res, &err));
	assert_int_equal(err, MK_FENCED_LEADER_EPOCH);
	f->in_hook = NULL;
	converge(f);
	assert_int_equal(info(f->p).leo, 0);       /* broker 3 never had it */
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_leader_appends_during_fetch),
		T(test_isr_lag_of_fetch_in_flight),
		T(test_isr_lag_check_during_fetch_auto),
		T(test_caught_up_fetch_is_one_step),
		T(test_append_wakes_followers_unlocked),
		T(test_progress_wakes_no_pending_writer),
		T(test_one_read_for_two_followers),
		T(test_crash_waits_for_fetch),
		T(test_promotion_waits_for_fetch),
		T(test_one_fetch_per_replica),
		T(test_copy_shared_in_flight),
		T(test_kill_after_append),
		T(test_writer_copies_followers),
		T(test_writer_copy_only_acks_all_auto),
		T(test_seeded_copy_is_the_log),
		T(test_seeded_copy_not_used_after_change),
		T(test_seed_only_for_a_follower_at_its_start),
		T(test_writer_copy_auto_producer),
		T(test_writer_skips_fetch_in_flight),
		T(test_crash_waits_for_writer_copy),
		T(test_promotion_waits_for_writer_copy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
