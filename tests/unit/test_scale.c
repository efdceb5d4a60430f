/*
 * Unit tests of the cluster at scale (core/replication/cluster*.c with the descriptor
 * cache and the flusher pool): a topic of 1,000 partitions with
 * replication factor 3 is created, written, closed and reopened under a
 * 1024-descriptor limit; and a create-topic whose replica cannot open its
 * log fails instead of reporting success; and a broker restart, held in
 * the middle of its log recovery, leaves other topics readable. And what
 * a mount of a log skips: no checkpoint rewritten when unchanged, closed
 * segments not looked at until read (a file gone meanwhile is then a
 * storage error of that read).
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
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster.h"
#include "codec.h"
#include "fileio.h"
#include "log.h"

static char root[64], dir[128];

static int setup(void **state)
{
	(void)state;
	strcpy(root, "/tmp/mk-test-scale-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	snprintf(dir, sizeof(dir), "%s/data", root);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	mk_remove_tree(root);
	return 0;
}

static void config(mk_config *cfg)
{
	mk_config_defaults(cfg);
	cfg->nbrokers = 3;
	for (int i = 0; i < 3; i++)
		cfg->broker_ids[i] = i + 1;
	cfg->manual_clock = 1;
}

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

static mk_err produce(mk_partition *p, const char *val)
{
	mk_batch_meta meta = { 0, 0, -1, -1, -1, -1, 0, false, 0 };
	mk_batch_builder b;
	mk_builder_init(&b, &meta);
	mk_builder_add(&b, 1000, MK_BYTES_NULL, mk_bytes_of(val, strlen(val)),
		       NULL, 0);
	mk_builder_finish(&b);
	mk_produce_args a = { .acks = 1, .seq = -1, .count = 1 };
	mk_produce_result res;
	mk_err err = mk_partition_produce(p, (uint8_t *)b.frame.buf, b.frame.len,
					  &a, &res, NULL);
	mk_builder_release(&b);
	return err;
}

#define NPART 1000

static void test_thousand_partitions_rf3(void **state)
{
	(void)state;
	struct rlimit old, rl;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	rl = old;
	if (rl.rlim_cur > 1024)
		rl.rlim_cur = 1024;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	mk_config cfg;
	config(&cfg);
	mk_cluster *c;
	assert_int_equal(mk_cluster_open(dir, &cfg, &c, NULL), MK_OK);
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_cluster_create_topic(c, "big", NPART, 3, NULL, 0, &why);
	if (err)
		print_error("create: %s: %s\n", mk_err_name(err), why.buf);
	assert_int_equal(err, MK_OK);
	mk_strbuf_release(&why);
	assert_true(count_fds() < 1024);
	mk_topic *t = mk_cluster_topic(c, "big");
	for (int p = 0; p < NPART; p += 37)
		assert_int_equal(produce(mk_topic_partition(t, p), "x"), MK_OK);
	assert_int_equal(mk_cluster_replicate(c, NULL), MK_OK);
	mk_partition_info in;
	mk_partition_info_get(mk_topic_partition(t, 999 / 37 * 37), &in);
	assert_int_equal(in.hw, 1);
	for (int r = 0; r < 3; r++)
		assert_false(in.replicas[r].failed);
	mk_topic_put(t);
	mk_cluster_close(c);
	/* Reopen: every replica opens. */
	assert_int_equal(mk_cluster_open(dir, &cfg, &c, NULL), MK_OK);
	t = mk_cluster_topic(c, "big");
	assert_non_null(t);
	for (int p = 0; p < NPART; p += 111) {
		mk_partition_info_get(mk_topic_partition(t, p), &in);
		for (int r = 0; r < 3; r++)
			assert_false(in.replicas[r].failed);
	}
	mk_topic_put(t);
	mk_cluster_close(c);
	setrlimit(RLIMIT_NOFILE, &old);
}

/* A replica directory that cannot be made: create-topic fails, no topic. */
static void test_create_fails_when_a_replica_cannot_open(void **state)
{
	(void)state;
	mk_config cfg;
	config(&cfg);
	mk_cluster *c;
	assert_int_equal(mk_cluster_open(dir, &cfg, &c, NULL), MK_OK);
	char path[256];
	/* Broker 2's directory is a file: nothing can be made under it. */
	snprintf(path, sizeof(path), "%s/broker-2", dir);
	int fd = open(path, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	close(fd);
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(mk_cluster_create_topic(c, "t", 1, 3, NULL, 0, &why),
			 MK_KAFKA_STORAGE_ERROR);
	mk_strbuf_release(&why);
	mk_topic *t = mk_cluster_topic(c, "t");
	assert_null(t);
	/* The replicas that did open left no directory behind. */
	snprintf(path, sizeof(path), "%s/broker-1/t-0", dir);
	struct stat st;
	assert_int_not_equal(stat(path, &st), 0);
	mk_cluster_close(c);
}

/* ---- no stall: a broker restart holds no cluster-wide lock ------------- */

typedef struct {
	mk_cluster *c;
	mk_err err;
} restart_arg;

static void *restart_main(void *arg)
{
	restart_arg *ra = arg;
	ra->err = mk_cluster_broker_restart(ra->c, 2, NULL);
	return NULL;
}

/* A reader on a thread of its own (not under a's lock, which no reader
 * of b would hold): look b up and read its hw. */
typedef struct {
	mk_cluster *c;
	int64_t hw;
} reader_arg;

static void *reader_main(void *arg)
{
	reader_arg *ra = arg;
	mk_topic *b = mk_cluster_topic(ra->c, "b");
	ra->hw = -2;
	if (b) {
		mk_partition_info in;
		mk_partition_info_get(mk_topic_partition(b, 0), &in);
		ra->hw = in.hw;
	}
	mk_topic_put(b);
	return NULL;
}

/*
 * The restart is held at topic a's partition (the test holds that
 * partition's lock: the restart plans and recovers each partition under
 * its lock only); meanwhile topic b is looked up and its hw read. Were the
 * restart holding the cluster's write lock, this test would hang.
 */
static void test_restart_does_not_stall_readers(void **state)
{
	(void)state;
	mk_config cfg;
	config(&cfg);
	mk_cluster *c;
	assert_int_equal(mk_cluster_open(dir, &cfg, &c, NULL), MK_OK);
	assert_int_equal(mk_cluster_create_topic(c, "a", 1, 3, NULL, 0, NULL), MK_OK);
	assert_int_equal(mk_cluster_create_topic(c, "b", 1, 3, NULL, 0, NULL), MK_OK);
	mk_topic *b = mk_cluster_topic(c, "b");
	assert_int_equal(produce(mk_topic_partition(b, 0), "x"), MK_OK);
	assert_int_equal(mk_cluster_replicate(c, NULL), MK_OK);
	mk_topic_put(b);
	assert_int_equal(mk_cluster_broker_crash(c, 2, false, NULL), MK_OK);
	mk_topic *a = mk_cluster_topic(c, "a");
	mk_partition *pa = mk_topic_partition(a, 0);
	mk_partition_test_lock(pa);
	restart_arg ra = { c, MK_OK };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, restart_main, &ra), 0);
	/* The restart is under way (it holds meta_lock) and cannot pass a. */
	while (pthread_mutex_trylock(&c->meta_lock) == 0) {
		pthread_mutex_unlock(&c->meta_lock);
		sched_yield();
	}
	reader_arg rd = { c, -1 };
	pthread_t rt;
	assert_int_equal(pthread_create(&rt, NULL, reader_main, &rd), 0);
	pthread_join(rt, NULL);
	assert_int_equal(rd.hw, 1);
	mk_partition_test_unlock(pa);
	mk_partition_info in;
	pthread_join(th, NULL);
	assert_int_equal(ra.err, MK_OK);
	mk_partition_info_get(pa, &in);
	for (int r = 0; r < 3; r++)
		assert_true(in.replicas[r].online);
	mk_topic_put(a);
	mk_cluster_close(c);
}

/* ---- what a log's open skips ------------------------------------------ */

static void append_one(mk_log *log, const char *val)
{
	mk_batch_meta meta = { 0, 0, -1, -1, -1, -1, 0, false, 0 };
	mk_batch_builder b;
	mk_builder_init(&b, &meta);
	mk_builder_add(&b, 1000, MK_BYTES_NULL, mk_bytes_of(val, strlen(val)),
		       NULL, 0);
	mk_builder_finish(&b);
	int64_t base;
	assert_int_equal(mk_log_append_leader(log, (uint8_t *)b.frame.buf,
					      b.frame.len, 0, &base), MK_OK);
	mk_builder_release(&b);
}

static void test_open_skips(void **state)
{
	(void)state;
	char ldir[192], ck[256], seg[256];
	snprintf(ldir, sizeof(ldir), "%s/log-0", root);
	snprintf(ck, sizeof(ck), "%s/checkpoint", ldir);
	/* And Kafka's: the log's epochs, its broker directory's offsets. */
	char kf[3][256];
	snprintf(kf[0], sizeof(kf[0]), "%s/leader-epoch-checkpoint", ldir);
	snprintf(kf[1], sizeof(kf[1]), "%s/recovery-point-offset-checkpoint",
		 root);
	snprintf(kf[2], sizeof(kf[2]), "%s/log-start-offset-checkpoint", root);
	mk_log_config cfg = { 200, 4096, 0, NULL, NULL };
	mk_log *log;
	assert_int_equal(mk_log_open(ldir, &cfg, &log, NULL), MK_OK);
	for (int i = 0; i < 20; i++)
		append_one(log, "a value of some forty bytes, give or take");
	assert_true(mk_log_segment_count(log) >= 4);
	mk_log_close(log);

	/* A clean reopen leaves the checkpoint files as they were: the same
	 * inodes (a rewrite replaces a file with a new one). */
	struct stat before, after, kbefore[3], kafter;
	assert_int_equal(stat(ck, &before), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(stat(kf[i], &kbefore[i]), 0);
	assert_int_equal(mk_log_open(ldir, &cfg, &log, NULL), MK_OK);
	assert_int_equal(stat(ck, &after), 0);
	assert_int_equal(before.st_ino, after.st_ino);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(stat(kf[i], &kafter), 0);
		assert_int_equal(kbefore[i].st_ino, kafter.st_ino);
	}
	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, 0, 20, SIZE_MAX, &out), MK_OK);
	assert_true(out.len > 0);
	mk_segment_info si;
	mk_log_segment_info(log, 1, &si);
	assert_true(si.size > 0);
	mk_log_close(log);

	/* The first segment's file goes while the log is open (outside
	 * damage): opening does not notice, the read of it fails cleanly. */
	assert_int_equal(mk_log_open(ldir, &cfg, &log, NULL), MK_OK);
	snprintf(seg, sizeof(seg), "%s/%020d.log", ldir, 0);
	assert_int_equal(unlink(seg), 0);
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 0, 20, SIZE_MAX, &out),
			 MK_KAFKA_STORAGE_ERROR);
	mk_strbuf_release(&out);
	mk_log_close(log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_thousand_partitions_rf3, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_fails_when_a_replica_cannot_open,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_restart_does_not_stall_readers,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_skips, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
