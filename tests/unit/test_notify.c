/*
 * Unit tests of the "log end moved" notifier (core/base/notify.c) and of the
 * long-poll follower fetchers built on it (core/replication/cluster_fetchers.c). Waits are
 * ended by explicit posts, never by sleeping; the long-poll bound is an
 * hour, so a test passing in seconds shows that the post woke the waiter.
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
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "cluster.h"
#include "codec.h"
#include "fileio.h"
#include "notify.h"
#include "testlib.h"

#define HOUR_MS 3600000

/* ---- the notifier -------------------------------------------------------- */

typedef struct {
	mk_notifier n;
	uint64_t min_bytes;
	_Atomic int stage;     /* 1: the waiter has its mark */
	bool woke;
} waiter;

static void *wait_main(void *arg)
{
	waiter *w = arg;
	mk_notify_mark m = mk_notifier_mark(&w->n);
	atomic_store(&w->stage, 1);
	w->woke = mk_notifier_wait(&w->n, &m, w->min_bytes, HOUR_MS);
	return NULL;
}

static void start(waiter *w, pthread_t *t, uint64_t min_bytes)
{
	mk_notifier_init(&w->n);
	w->min_bytes = min_bytes;
	atomic_store(&w->stage, 0);
	w->woke = false;
	assert_int_equal(pthread_create(t, NULL, wait_main, w), 0);
	while (atomic_load(&w->stage) == 0)
		sched_yield();
}

static void test_data_wakes(void **state)
{
	(void)state;
	waiter w;
	pthread_t t;
	start(&w, &t, 1);
	mk_notifier_post_data(&w.n, 10);
	pthread_join(t, NULL);
	assert_true(w.woke);
	mk_notifier_destroy(&w.n);
}

static void test_event_wakes(void **state)
{
	(void)state;
	waiter w;
	pthread_t t;
	start(&w, &t, 1 << 20);
	mk_notifier_post_event(&w.n);
	pthread_join(t, NULL);
	assert_true(w.woke);
	mk_notifier_destroy(&w.n);
}

static void test_stop_wakes(void **state)
{
	(void)state;
	waiter w;
	pthread_t t;
	start(&w, &t, 1);
	mk_notifier_stop(&w.n);
	pthread_join(t, NULL);
	assert_true(w.woke);
	/* Once stopped, a wait returns at once. */
	mk_notify_mark m = mk_notifier_mark(&w.n);
	assert_true(mk_notifier_wait(&w.n, &m, 1, HOUR_MS));
	mk_notifier_destroy(&w.n);
}

/* min.bytes: less data than asked for leaves the waiter waiting. */
static void test_min_bytes(void **state)
{
	(void)state;
	mk_notifier n;
	mk_notifier_init(&n);
	mk_notify_mark m = mk_notifier_mark(&n);
	mk_notifier_post_data(&n, 10);
	assert_false(mk_notifier_wait(&n, &m, 100, 0));   /* 10 < 100 */
	m = mk_notifier_mark(&n);
	mk_notifier_post_data(&n, 60);
	mk_notifier_post_data(&n, 60);
	assert_true(mk_notifier_wait(&n, &m, 100, HOUR_MS));  /* 120 >= 100 */
	/* Data posted before the mark does not count. */
	m = mk_notifier_mark(&n);
	assert_false(mk_notifier_wait(&n, &m, 1, 0));
	mk_notifier_destroy(&n);
}

/* ---- long-poll replication ------------------------------------------------ */

static char root[64];

static int setup(void **state)
{
	(void)state;
	strcpy(root, "/tmp/mk-test-notify-XXXXXX");
	return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	mk_remove_tree(root);
	return 0;
}

static mk_err produce_ex(mk_partition *p, const char *val, int acks,
			 bool defer, mk_produce_result *res)
{
	mk_strbuf frame = MK_STRBUF_INIT;
	tl_frame(&frame, 0, -1, &val, 1, NULL);
	mk_produce_args a = { .acks = acks, .seq = -1, .count = 1 };
	mk_err err = mk_partition_produce(p, (uint8_t *)frame.buf, frame.len,
					  &a, res, NULL);
	mk_strbuf_release(&frame);
	/* Not deferred: as a caller that waits (a parked write). */
	if (!err && !defer)
		err = tl_ack_wait(p, res, NULL);
	return err;
}

static mk_err produce(mk_partition *p, const char *val, int acks)
{
	mk_produce_result res;
	return produce_ex(p, val, acks, false, &res);
}

/* Three brokers, auto replication, every bound (fetch interval, long
 * poll, request timeout) an hour, min.insync.replicas 2. */
static void auto_config(mk_config *cfg)
{
	tl_config(cfg, 3);
	cfg->auto_replication = 1;
	cfg->fetch_interval_ms = HOUR_MS;
	cfg->replica_fetch_wait_max_ms = HOUR_MS;
	cfg->request_timeout_ms = HOUR_MS;
	cfg->log.min_insync_replicas = 2;
}

/* A cluster with cfg in root/data holding topic "t" (one partition, RF 3),
 * not started yet; *t gets the topic (a reference). */
static mk_cluster *open_with_topic(const mk_config *cfg, mk_topic **t)
{
	char dir[128];
	snprintf(dir, sizeof(dir), "%s/data", root);
	mk_cluster *c = tl_cluster_open(dir, cfg);
	tl_create_topic(c, "t", 1, 3, NULL, NULL);
	*t = mk_cluster_topic(c, "t");
	assert_non_null(*t);
	return c;
}

/*
 * Auto mode, every bound an hour: the fetchers' only way to learn of an
 * append is the post, so an acks=all produce that returns shows that the
 * followers woke on the leader's append and the HW moved at once.
 */
static void test_long_poll_acks_all(void **state)
{
	(void)state;
	mk_config cfg;
	auto_config(&cfg);
	mk_topic *t;
	mk_cluster *c = open_with_topic(&cfg, &t);
	mk_cluster_start(c);
	mk_partition *p = mk_topic_partition(t, 0);
	for (int i = 0; i < 20; i++)
		assert_int_equal(produce(p, "x", -1), MK_OK);
	mk_partition_info in;
	mk_partition_info_get(p, &in);
	assert_int_equal(in.hw, 20);
	mk_topic_put(t);
	mk_cluster_close(c);   /* the stop wakes the fetchers: no hour */
}

/* What the fetchers' round hook saw (mk_cluster_on_round). */
static struct {
	pthread_mutex_t m;
	pthread_cond_t cv;
	pthread_t main;
	mk_partition *p;
	mk_ack_ticket t;
	bool armed;            /* t is set: look at it */
	int calls, off_main, bad_arg;
	bool acked;            /* a call found t acknowledged */
} rh;

static void round_hook(void *arg)
{
	pthread_mutex_lock(&rh.m);
	rh.bad_arg += arg != &rh;
	rh.calls++;
	rh.off_main += !pthread_equal(pthread_self(), rh.main);
	bool pending;
	if (rh.armed && mk_partition_ack_check(rh.p, &rh.t, &pending, NULL) == MK_OK &&
	    !pending)
		rh.acked = true;
	pthread_cond_broadcast(&rh.cv);
	pthread_mutex_unlock(&rh.m);
}

/*
 * Auto mode: each fetcher calls the round hook on its own thread after a
 * round, so the round whose publication acknowledges a deferred acks=all
 * batch is followed by a call that finds it acknowledged (the filesystem
 * answers the parked writer there). Bounds of an hour: no round is
 * started by a timeout.
 */
static void test_round_hook_after_publication(void **state)
{
	(void)state;
	mk_config cfg;
	auto_config(&cfg);
	mk_topic *t;
	mk_cluster *c = open_with_topic(&cfg, &t);
	pthread_mutex_init(&rh.m, NULL);
	pthread_cond_init(&rh.cv, NULL);
	rh.main = pthread_self();
	mk_cluster_on_round(c, round_hook, &rh);
	mk_cluster_start(c);
	mk_partition *p = mk_topic_partition(t, 0);
	mk_produce_result res;
	pthread_mutex_lock(&rh.m);
	assert_int_equal(produce_ex(p, "x", -1, true, &res), MK_OK);
	assert_true(res.pending);
	rh.p = p;
	rh.t = res.ticket;
	rh.armed = true;
	/* Bounded (a deadlock detector, not a timing). */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 60;
	while (!rh.acked &&
	       pthread_cond_timedwait(&rh.cv, &rh.m, &ts) == 0)
		;
	assert_true(rh.acked);
	assert_int_equal(rh.off_main, rh.calls);   /* on the fetchers */
	assert_int_equal(rh.bad_arg, 0);
	rh.armed = false;
	pthread_mutex_unlock(&rh.m);
	mk_topic_put(t);
	mk_cluster_close(c);
	pthread_mutex_destroy(&rh.m);
	pthread_cond_destroy(&rh.cv);
}

/*
 * A fetcher whose round was capped by replica.fetch.max.bytes fetches
 * again at once: twenty records appended before the fetchers started
 * (their posts are behind every mark), one batch per round, and no round
 * started by a post or a timeout (an hour) until the last acks=all one.
 */
static void test_capped_round_fetches_again(void **state)
{
	(void)state;
	mk_config cfg;
	auto_config(&cfg);
	cfg.replica_fetch_max_bytes = 1;      /* one batch per read */
	mk_topic *t;
	mk_cluster *c = open_with_topic(&cfg, &t);
	mk_partition *p = mk_topic_partition(t, 0);
	for (int i = 0; i < 20; i++)
		assert_int_equal(produce(p, "x", 1), MK_OK);
	mk_partition_info in;
	mk_partition_info_get(p, &in);
	assert_int_equal(in.hw, 0);          /* nobody fetched yet */
	mk_cluster_start(c);
	/* Caught up through twenty capped rounds, then this one's post. */
	assert_int_equal(produce(p, "y", -1), MK_OK);
	mk_partition_info_get(p, &in);
	assert_int_equal(in.hw, 21);
	mk_topic_put(t);
	mk_cluster_close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_data_wakes),
		cmocka_unit_test(test_event_wakes),
		cmocka_unit_test(test_stop_wakes),
		cmocka_unit_test(test_min_bytes),
		cmocka_unit_test_setup_teardown(test_long_poll_acks_all, setup, teardown),
		cmocka_unit_test_setup_teardown(test_round_hook_after_publication, setup, teardown),
		cmocka_unit_test_setup_teardown(test_capped_round_fetches_again, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
