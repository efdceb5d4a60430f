/*
 * Unit tests of the descriptor cache (core/base/fdcache.c) and of logs whose
 * segments go through a tiny one (core/storage/segment.c, core/storage/log.c): the bound
 * holds, the least recently used unpinned node is evicted first, a pinned
 * node never is, and a log with many segments reads, appends, truncates
 * (deleting cached segments) and closes correctly with at most a handful
 * of descriptors, leaking none; an open callback runs without the cache's
 * lock (a slow file creation in one log holds up no other), one at a time
 * per node.
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
#include <stdbool.h>
#include <time.h>

#include "codec.h"
#include "fdcache.h"
#include "fileio.h"
#include "log.h"

/* ---- fake nodes: each "opens" two descriptors ---------------------------- */

typedef struct {
	mk_fdcache_node node;
	int open_now;          /* fake descriptors held */
	int evicted;           /* times evicted */
} fake;

static int fake_open(mk_fdcache_node *n, void *arg)
{
	(void)arg;
	fake *f = (fake *)n;
	int opened = 2 - f->open_now;
	f->open_now = 2;
	return opened;
}

static int fake_evict(mk_fdcache_node *n)
{
	fake *f = (fake *)n;
	int closed = f->open_now;
	f->open_now = 0;
	f->evicted++;
	return closed;
}

static void init_fake(fake *f)
{
	memset(f, 0, sizeof(*f));
	f->node.open = fake_open;
	f->node.evict = fake_evict;
}

static void test_lru_and_pins(void **state)
{
	(void)state;
	mk_fdcache *c = mk_fdcache_new(4);     /* two fakes fit */
	fake a, b, d;
	init_fake(&a);
	init_fake(&b);
	init_fake(&d);
	mk_fdcache_use(c, &a.node, NULL);
	mk_fdcache_done(c, &a.node);
	mk_fdcache_use(c, &b.node, NULL);
	mk_fdcache_done(c, &b.node);
	mk_fdcache_use(c, &a.node, NULL);      /* a is now the most recent */
	mk_fdcache_done(c, &a.node);
	mk_fdcache_use(c, &d.node, NULL);      /* evicts b, the least recent */
	mk_fdcache_done(c, &d.node);
	assert_int_equal(b.evicted, 1);
	assert_int_equal(a.evicted, 0);
	assert_int_equal(b.open_now, 0);
	mk_fdcache_stats st;
	mk_fdcache_get_stats(c, &st);
	assert_int_equal(st.open_fds, 4);
	assert_int_equal(st.max_fds, 4);
	/* Pinned a and d: using b exceeds the bound rather than evict them. */
	mk_fdcache_use(c, &a.node, NULL);
	mk_fdcache_use(c, &d.node, NULL);
	mk_fdcache_use(c, &b.node, NULL);
	assert_int_equal(a.open_now + d.open_now + b.open_now, 6);
	mk_fdcache_done(c, &b.node);           /* b unpinned: back to 4 */
	assert_int_equal(b.open_now, 0);
	assert_int_equal(a.evicted, 0);
	assert_int_equal(d.evicted, 0);
	mk_fdcache_done(c, &a.node);
	mk_fdcache_done(c, &d.node);
	/* A forgotten node is not evicted any more. */
	mk_fdcache_forget(c, &a.node);
	a.open_now = 0;                        /* the owner closed them */
	mk_fdcache_get_stats(c, &st);
	assert_int_equal(st.open_fds, 2);
	mk_fdcache_use(c, &b.node, NULL);
	mk_fdcache_done(c, &b.node);
	mk_fdcache_use(c, &a.node, NULL);      /* re-registered: evicts d */
	mk_fdcache_done(c, &a.node);
	assert_int_equal(d.evicted, 1);
	mk_fdcache_forget(c, &a.node);
	mk_fdcache_forget(c, &b.node);
	mk_fdcache_forget(c, &d.node);
	mk_fdcache_free(c);
}

/* ---- a log through a tiny cache ----------------------------------------- */

static char root[64];

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static int setup(void **state)
{
	(void)state;
	strcpy(root, "/tmp/mk-test-fdcache-XXXXXX");
	return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	mk_remove_tree(root);
	return 0;
}

static void append_val(mk_log *log, int i)
{
	char val[64];
	int n = snprintf(val, sizeof(val), "value-%d", i);
	mk_batch_meta meta = { 0, 0, -1, -1, -1, -1, 0, false, 0 };
	mk_batch_builder b;
	mk_builder_init(&b, &meta);
	mk_builder_add(&b, 1000 + i, MK_BYTES_NULL, mk_bytes_of(val, (size_t)n),
		       NULL, 0);
	mk_builder_finish(&b);
	int64_t base;
	assert_int_equal(mk_log_append_leader(log, (uint8_t *)b.frame.buf,
					      b.frame.len, 0, &base), MK_OK);
	assert_int_equal(base, i);
	mk_builder_release(&b);
}

/* The record at offset off reads back as value-OFF. */
static void check_read(mk_log *log, int64_t off)
{
	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, off, off + 1, 1, &out), MK_OK);
	char want[64];
	snprintf(want, sizeof(want), "value-%lld", (long long)off);
	assert_non_null(memmem(out.buf, out.len, want, strlen(want)));
	mk_strbuf_release(&out);
}

#define N 60

static void test_log_through_tiny_cache(void **state)
{
	(void)state;
	int before = count_fds();
	mk_fdcache *c = mk_fdcache_new(4);
	char dir[128];
	snprintf(dir, sizeof(dir), "%s/log-0", root);
	assert_int_equal(mk_mkdirs(dir), 0);
	mk_log_config cfg = { 200, 4096, 0, NULL, c };
	mk_log *log;
	assert_int_equal(mk_log_open(dir, &cfg, &log, NULL), MK_OK);
	for (int i = 0; i < N; i++)
		append_val(log, i);
	assert_true(mk_log_segment_count(log) >= 20);
	assert_int_equal(mk_log_wait_flusher(log), MK_OK);
	mk_fdcache_stats st;
	mk_fdcache_get_stats(c, &st);
	assert_true(st.open_fds <= 4);
	assert_true(st.evictions > 0);
	/* Reads all over the log, each reopening what was evicted. */
	for (int64_t off = N - 1; off >= 0; off -= 7)
		check_read(log, off);
	mk_fdcache_get_stats(c, &st);
	assert_true(st.open_fds <= 4);
	assert_true(count_fds() - before <= 4 + 1);
	/* Time lookups and each closed segment's max timestamp (the last
	 * entry of its index, loaded through the cache); the cache accounts
	 * for every descriptor open. */
	for (int64_t k = N - 1; k >= 0; k -= 5) {
		int64_t off;
		assert_int_equal(mk_log_offset_for_time(log, 1000 + k, &off), MK_OK);
		assert_int_equal(off, k);
	}
	size_t nseg = mk_log_segment_count(log);
	for (size_t i = 0; i + 1 < nseg; i++) {
		mk_segment_info next;
		mk_log_segment_info(log, i + 1, &next);
		int64_t ts = 0;
		assert_int_equal(mk_log_segment_max_timestamp(log, i, &ts), MK_OK);
		assert_int_equal(ts, 1000 + next.base_offset - 1);
	}
	mk_log_wait_prepared(log);
	assert_int_equal(mk_log_wait_flusher(log), MK_OK);
	mk_fdcache_get_stats(c, &st);
	assert_true(st.open_fds <= 4);
	assert_int_equal(count_fds() - before, st.open_fds);
	/* Truncation deletes cached segments; appends go on after it. */
	assert_int_equal(mk_log_truncate_to(log, N / 2), MK_OK);
	for (int i = N / 2; i < N; i++)
		append_val(log, i);
	check_read(log, N - 1);
	check_read(log, 3);
	mk_log_close(log);
	/* Reopen: closed segments cost no descriptor until read. */
	assert_int_equal(mk_log_open(dir, &cfg, &log, NULL), MK_OK);
	mk_fdcache_get_stats(c, &st);
	assert_true(st.open_fds <= 4);
	check_read(log, 0);
	check_read(log, N - 1);
	mk_log_close(log);
	mk_fdcache_get_stats(c, &st);
	assert_int_equal(st.open_fds, 0);
	mk_fdcache_free(c);
	assert_int_equal(count_fds(), before);
}

/* ---- an open callback that blocks (a slow file creation) ----------------- */

typedef struct {
	fake f;
	pthread_mutex_t m;
	pthread_cond_t cv;
	int inside, max_inside; /* callbacks running at once */
	int calls;
	bool release;
	bool other_done;        /* the other node's use returned */
} slow;

static int slow_open(mk_fdcache_node *n, void *arg)
{
	slow *s = (slow *)n;
	pthread_mutex_lock(&s->m);
	s->calls++;
	if (++s->inside > s->max_inside)
		s->max_inside = s->inside;
	pthread_cond_broadcast(&s->cv);
	while (!s->release)
		pthread_cond_wait(&s->cv, &s->m);
	s->inside--;
	pthread_mutex_unlock(&s->m);
	return fake_open(n, arg);
}

static mk_fdcache *slow_cache;
static slow slow_node;
static fake other_node;

static void *use_slow(void *arg)
{
	(void)arg;
	mk_fdcache_use(slow_cache, &slow_node.f.node, NULL);
	mk_fdcache_done(slow_cache, &slow_node.f.node);
	return NULL;
}

static void *use_other(void *arg)
{
	(void)arg;
	mk_fdcache_use(slow_cache, &other_node.node, NULL);
	mk_fdcache_done(slow_cache, &other_node.node);
	pthread_mutex_lock(&slow_node.m);
	slow_node.other_done = true;
	pthread_cond_broadcast(&slow_node.cv);
	pthread_mutex_unlock(&slow_node.m);
	return NULL;
}

static void test_open_outside_lock(void **state)
{
	(void)state;
	slow_cache = mk_fdcache_new(100);
	init_fake(&slow_node.f);
	slow_node.f.node.open = slow_open;
	pthread_mutex_init(&slow_node.m, NULL);
	pthread_cond_init(&slow_node.cv, NULL);
	init_fake(&other_node);
	pthread_t a, b, c;
	assert_int_equal(pthread_create(&a, NULL, use_slow, NULL), 0);
	pthread_mutex_lock(&slow_node.m);
	while (slow_node.inside == 0)
		pthread_cond_wait(&slow_node.cv, &slow_node.m);
	pthread_mutex_unlock(&slow_node.m);
	/* A second use of the same node waits for the first open; another
	 * node's use goes through while the first open still blocks. */
	assert_int_equal(pthread_create(&c, NULL, use_slow, NULL), 0);
	assert_int_equal(pthread_create(&b, NULL, use_other, NULL), 0);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 30;    /* a deadlock detector, not a timing */
	pthread_mutex_lock(&slow_node.m);
	while (!slow_node.other_done &&
	       pthread_cond_timedwait(&slow_node.cv, &slow_node.m, &until) == 0)
		;
	bool other_done = slow_node.other_done;
	assert_int_equal(slow_node.calls, 1);
	slow_node.release = true;
	pthread_cond_broadcast(&slow_node.cv);
	pthread_mutex_unlock(&slow_node.m);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	pthread_join(c, NULL);
	assert_true(other_done);
	assert_int_equal(slow_node.max_inside, 1);
	assert_int_equal(slow_node.calls, 2);
	mk_fdcache_stats st;
	mk_fdcache_get_stats(slow_cache, &st);
	assert_int_equal(st.open_fds, 4);     /* two each, none twice */
	mk_fdcache_forget(slow_cache, &slow_node.f.node);
	mk_fdcache_forget(slow_cache, &other_node.node);
	mk_fdcache_free(slow_cache);
	pthread_mutex_destroy(&slow_node.m);
	pthread_cond_destroy(&slow_node.cv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lru_and_pins),
		cmocka_unit_test(test_open_outside_lock),
		cmocka_unit_test_setup_teardown(test_log_through_tiny_cache,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
