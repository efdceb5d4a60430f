/*
 * Unit tests of the flusher pool (core/base/flushpool.c) and of logs sharing
 * it (core/storage/log_flush.c): order and re-submission of tasks, removal, one pool for
 * many logs (the thread count does not grow with them), and a roll whose
 * fsync cannot start (the pool's only thread is held by a gated task)
 * never blocking appends; pool threads run under SCHED_BATCH. Every wait is
 * on an explicit event.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"
#include "fileio.h"
#include "flushpool.h"
#include "log.h"

/* ---- a gate and recorded runs ------------------------------------------- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static bool gate_open;
static char order[32];
static size_t nrun;

typedef struct {
	mk_flush_task task;
	char name;
	bool gated;
	bool running;
} rec_task;

static void rec_run(mk_flush_task *t)
{
	rec_task *r = (rec_task *)t;
	pthread_mutex_lock(&mu);
	r->running = true;
	pthread_cond_broadcast(&cv);
	while (r->gated && !gate_open)
		pthread_cond_wait(&cv, &mu);
	r->running = false;
	if (nrun < sizeof(order) - 1)
		order[nrun++] = r->name;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static void reset(void)
{
	gate_open = false;
	nrun = 0;
	memset(order, 0, sizeof(order));
}

static void wait_running(rec_task *r)
{
	pthread_mutex_lock(&mu);
	while (!r->running)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static void open_gate_and_wait_runs(size_t n)
{
	pthread_mutex_lock(&mu);
	gate_open = true;
	pthread_cond_broadcast(&cv);
	while (nrun < n)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

/* A task submitted while it runs runs once more, after what was queued. */
static void test_resubmit_while_running(void **state)
{
	(void)state;
	reset();
	mk_flush_pool *p = mk_flush_pool_new(1);
	assert_non_null(p);
	assert_int_equal(mk_flush_pool_threads(p), 1);
	rec_task a = { { .run = rec_run }, 'A', true, false };
	rec_task b = { { .run = rec_run }, 'B', false, false };
	mk_flush_pool_submit(p, &a.task);
	wait_running(&a);
	mk_flush_pool_submit(p, &b.task);
	mk_flush_pool_submit(p, &b.task);     /* queued: no second run */
	mk_flush_pool_submit(p, &a.task);     /* running: once more */
	open_gate_and_wait_runs(3);
	mk_flush_pool_remove(p, &a.task);
	mk_flush_pool_remove(p, &b.task);
	assert_string_equal(order, "ABA");
	mk_flush_pool_free(p);
}

/* Every pool thread, the quick one included, runs its tasks under
 * SCHED_BATCH: waking one never preempts the thread that woke it. */
typedef struct {
	mk_flush_task task;
	int policy;
	bool ran;
} policy_task;

static void policy_run(mk_flush_task *t)
{
	policy_task *r = (policy_task *)t;
	pthread_mutex_lock(&mu);
	r->policy = sched_getscheduler(0);
	r->ran = true;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

/* Whether this system lets a thread take SCHED_BATCH (a sandbox may
 * refuse the call: the pool then runs as before, and this test skips). */
static void *batch_probe(void *arg)
{
	struct sched_param sp = { 0 };
	*(bool *)arg = sched_setscheduler(0, SCHED_BATCH, &sp) == 0;
	return NULL;
}

static void test_threads_are_batch(void **state)
{
	(void)state;
	bool allowed = false;
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, batch_probe, &allowed), 0);
	pthread_join(th, NULL);
	if (!allowed)
		skip();
	int mine = sched_getscheduler(0);
	mk_flush_pool *p = mk_flush_pool_new(2);
	assert_int_equal(mk_flush_pool_threads(p), 2);
	policy_task slow = { { .run = policy_run }, -1, false };
	policy_task quick = { { .run = policy_run, .quick = true }, -1, false };
	mk_flush_pool_submit(p, &slow.task);
	mk_flush_pool_submit(p, &quick.task);
	pthread_mutex_lock(&mu);
	while (!slow.ran || !quick.ran)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	mk_flush_pool_remove(p, &slow.task);
	mk_flush_pool_remove(p, &quick.task);
	mk_flush_pool_free(p);
	assert_int_equal(slow.policy, SCHED_BATCH);
	assert_int_equal(quick.policy, SCHED_BATCH);
	/* The caller's own policy is untouched. */
	assert_int_equal(sched_getscheduler(0), mine);
}

/* A removed task that was queued never runs. */
static void test_remove_queued(void **state)
{
	(void)state;
	reset();
	mk_flush_pool *p = mk_flush_pool_new(1);
	rec_task a = { { .run = rec_run }, 'A', true, false };
	rec_task b = { { .run = rec_run }, 'B', false, false };
	rec_task c = { { .run = rec_run }, 'C', false, false };
	mk_flush_pool_submit(p, &a.task);
	wait_running(&a);
	mk_flush_pool_submit(p, &b.task);
	mk_flush_pool_submit(p, &c.task);
	mk_flush_pool_remove(p, &b.task);
	open_gate_and_wait_runs(2);
	mk_flush_pool_remove(p, &a.task);
	mk_flush_pool_remove(p, &c.task);
	assert_string_equal(order, "AC");
	mk_flush_pool_free(p);
}

/*
 * Quick tasks run first, and in a pool of two threads one of them runs
 * only quick tasks: with the other held by a long task and another queued
 * behind it, a quick one still runs at once, and only it.
 */
static void test_quick_task_never_waits(void **state)
{
	(void)state;
	reset();
	mk_flush_pool *p = mk_flush_pool_new(2);
	assert_non_null(p);
	assert_int_equal(mk_flush_pool_threads(p), 2);
	rec_task a = { { .run = rec_run }, 'A', true, false };
	rec_task b = { { .run = rec_run }, 'B', false, false };
	rec_task q = { { .run = rec_run, .quick = true }, 'Q', false, false };
	mk_flush_pool_submit(p, &a.task);
	wait_running(&a);
	mk_flush_pool_submit(p, &b.task);     /* behind A: the quick thread
					       * does not take it */
	mk_flush_pool_submit(p, &q.task);
	pthread_mutex_lock(&mu);
	while (nrun < 1)
		pthread_cond_wait(&cv, &mu);
	assert_string_equal(order, "Q");      /* B still queued, A held */
	pthread_mutex_unlock(&mu);
	open_gate_and_wait_runs(3);
	assert_string_equal(order, "QAB");
	mk_flush_pool_remove(p, &a.task);
	mk_flush_pool_remove(p, &b.task);
	mk_flush_pool_remove(p, &q.task);
	mk_flush_pool_free(p);

	/* One thread: no reserved one, but quick tasks go first. */
	reset();
	p = mk_flush_pool_new(1);
	mk_flush_pool_submit(p, &a.task);
	wait_running(&a);
	mk_flush_pool_submit(p, &b.task);
	mk_flush_pool_submit(p, &q.task);
	open_gate_and_wait_runs(3);
	assert_string_equal(order, "AQB");
	mk_flush_pool_remove(p, &a.task);
	mk_flush_pool_remove(p, &b.task);
	mk_flush_pool_remove(p, &q.task);
	mk_flush_pool_free(p);
}

/*
 * A pool whose threads could not all start still runs every task: with
 * thread creation refused after the first (a forked child as user nobody,
 * RLIMIT_NPROC 2), a pool of two runs an ordinary task (regression: the
 * one thread that started was the one reserved for quick tasks, and
 * every fsync, hence every flush and close, waited forever).
 */
static void test_partial_start_runs_every_task(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();     /* needs to become another user */
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = { 2, 2 };
		if (setgid(65534) || setuid(65534) || setrlimit(RLIMIT_NPROC, &rl))
			_exit(77);
		reset();
		mk_flush_pool *p = mk_flush_pool_create(2);
		if (mk_flush_pool_start(p) != 1)
			_exit(77);  /* nobody has other tasks: no partial start */
		rec_task b = { { .run = rec_run }, 'B', false, false };
		mk_flush_pool_submit(p, &b.task);
		/* Bounded: a hang detector, not a timing. */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 10;
		pthread_mutex_lock(&mu);
		while (nrun < 1 && pthread_cond_timedwait(&cv, &mu, &ts) == 0)
			;
		bool ran = nrun == 1;
		pthread_mutex_unlock(&mu);
		if (!ran)
			_exit(1);   /* the pool's threads are left as they are */
		mk_flush_pool_remove(p, &b.task);
		mk_flush_pool_free(p);
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* A pool created without threads (the cluster's, before the daemon forks:
 * threads do not survive fork(2)) keeps what is submitted until started,
 * and a pool never started frees without waiting (regression: the forked
 * daemon hung in pthread_cond_destroy at unmount). */
static void test_created_pool_runs_after_start(void **state)
{
	(void)state;
	reset();
	mk_flush_pool *p = mk_flush_pool_create(2);
	assert_non_null(p);
	assert_int_equal(mk_flush_pool_threads(p), 0);
	rec_task a = { { .run = rec_run }, 'A', false, false };
	mk_flush_pool_submit(p, &a.task);
	pthread_mutex_lock(&mu);
	assert_int_equal(nrun, 0);
	pthread_mutex_unlock(&mu);
	assert_int_equal(mk_flush_pool_start(p), 2);
	assert_int_equal(mk_flush_pool_start(p), 2);   /* no second set */
	open_gate_and_wait_runs(1);
	mk_flush_pool_remove(p, &a.task);
	assert_string_equal(order, "A");
	mk_flush_pool_free(p);

	mk_flush_pool *idle = mk_flush_pool_create(1);
	mk_flush_pool_free(idle);
}

/* ---- logs sharing the pool ---------------------------------------------- */

static char root[64];

static int setup(void **state)
{
	(void)state;
	strcpy(root, "/tmp/mk-test-flushpool-XXXXXX");
	return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	mk_remove_tree(root);
	return 0;
}

static int count_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static mk_log *open_log(int i, mk_flush_pool *pool)
{
	char dir[128];
	snprintf(dir, sizeof(dir), "%s/log-%d", root, i);
	assert_int_equal(mk_mkdirs(dir), 0);
	mk_log_config cfg = { 256, 4096, 0, pool, NULL };
	mk_log *log = NULL;
	assert_int_equal(mk_log_open(dir, &cfg, &log, NULL), MK_OK);
	return log;
}

static void append_one(mk_log *log)
{
	char val[100];
	memset(val, 'v', sizeof(val));
	mk_batch_meta meta = { 0, 0, -1, -1, -1, -1, 0, false, 0 };
	mk_batch_builder b;
	mk_builder_init(&b, &meta);
	mk_builder_add(&b, 1000, MK_BYTES_NULL, mk_bytes_of(val, sizeof(val)),
		       NULL, 0);
	mk_builder_finish(&b);
	int64_t base;
	assert_int_equal(mk_log_append_leader(log, (uint8_t *)b.frame.buf,
					      b.frame.len, 0, &base), MK_OK);
	mk_builder_release(&b);
}

#define NLOGS 8

/*
 * Eight logs rolling many segments each, while the pool's only thread is
 * held by a gated task: every append and roll returns (none waits for an
 * fsync), no thread is started for them, and once the gate opens every
 * flush completes.
 */
static void test_logs_share_pool_and_never_wait(void **state)
{
	(void)state;
	reset();
	mk_flush_pool *p = mk_flush_pool_new(1);
	rec_task gate = { { .run = rec_run }, 'G', true, false };
	mk_flush_pool_submit(p, &gate.task);
	wait_running(&gate);
	int threads = count_threads();
	mk_log *logs[NLOGS];
	for (int i = 0; i < NLOGS; i++)
		logs[i] = open_log(i, p);
	for (int r = 0; r < 12; r++)
		for (int i = 0; i < NLOGS; i++)
			append_one(logs[i]);
	for (int i = 0; i < NLOGS; i++)
		assert_true(mk_log_segment_count(logs[i]) >= 10);
	assert_int_equal(count_threads(), threads);
	open_gate_and_wait_runs(1);
	for (int i = 0; i < NLOGS; i++) {
		assert_int_equal(mk_log_wait_flusher(logs[i]), MK_OK);
		mk_log_close(logs[i]);
	}
	mk_flush_pool_remove(p, &gate.task);
	mk_flush_pool_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resubmit_while_running),
		cmocka_unit_test(test_remove_queued),
		cmocka_unit_test(test_threads_are_batch),
		cmocka_unit_test(test_quick_task_never_waits),
		cmocka_unit_test(test_created_pool_runs_after_start),
		cmocka_unit_test(test_partial_start_runs_every_task),
		cmocka_unit_test_setup_teardown(test_logs_share_pool_and_never_wait,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
