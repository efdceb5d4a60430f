/*
 * Unit tests of "decide, persist, act" (issue 12 points 2-4) in core:
 * control changes saved before they are applied (a crash point between the
 * two, in a forked child), ISR changes counted only once saved, a failed
 * save changing nothing, the metadata file's framing and value checks, the
 * data directory's lock, a storage error that cuts nothing, and the leader
 * epoch never going back at open.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "cluster.h"
#include "codec.h"
#include "config.h"
#include "failpoint.h"
#include "fileio.h"
#include "log.h"
#include "replica.h"
#include "testlib.h"

typedef struct {
	char root[64];
	char dir[128];
	mk_config cfg;
	mk_cluster *c;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	strcpy(f->root, "/tmp/mk-test-durable-XXXXXX");
	if (!mkdtemp(f->root)) {
		free(f);
		return -1;
	}
	snprintf(f->dir, sizeof(f->dir), "%s/data", f->root);
	mk_config_defaults(&f->cfg);
	f->cfg.nbrokers = 2;
	f->cfg.broker_ids[0] = 1;
	f->cfg.broker_ids[1] = 2;
	f->cfg.manual_clock = 1;
	f->cfg.log.min_insync_replicas = 1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	mk_cluster_close(f->c);
	mk_remove_tree(f->root);
	free(f);
	return 0;
}

static mk_err try_open(fixture *f, mk_strbuf *why)
{
	return mk_cluster_open(f->dir, &f->cfg, &f->c, why);
}

static void open_cluster(fixture *f)
{
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = try_open(f, &why);
	if (err)
		print_error("open: %s: %s\n", mk_err_name(err), why.buf);
	assert_int_equal(err, MK_OK);
	mk_strbuf_release(&why);
}

static void reopen(fixture *f)
{
	assert_int_equal(mk_cluster_close(f->c), MK_OK);
	f->c = NULL;
	open_cluster(f);
}

static void create(fixture *f, const char *name, int rf, const char *ov)
{
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_cluster_create_topic(f->c, name, 1, rf, &ov, ov ? 1 : 0, &why);
	if (err)
		print_error("create: %s: %s\n", mk_err_name(err), why.buf);
	assert_int_equal(err, MK_OK);
	mk_strbuf_release(&why);
}

static mk_partition_info info_of(fixture *f, const char *name)
{
	mk_topic *t = mk_cluster_topic(f->c, name);
	assert_non_null(t);
	mk_partition_info in;
	mk_partition_info_get(mk_topic_partition(t, 0), &in);
	mk_topic_put(t);
	return in;
}

/* Append one record "v" with acks (0, 1); the error. */
static mk_err append(fixture *f, const char *name, const char *v, int acks)
{
	mk_topic *t = mk_cluster_topic(f->c, name);
	assert_non_null(t);
	mk_batch_builder b;
	mk_batch_meta meta = { 0, 0, -1, -1, -1, -1, MK_BYTES_NULL };
	mk_builder_init(&b, &meta);
	mk_builder_add(&b, 1000, MK_BYTES_NULL, mk_bytes_of(v, strlen(v)), NULL, 0);
	mk_builder_finish(&b);
	mk_produce_args a = { .acks = acks, .seq = -1, .count = 1 };
	mk_produce_result res;
	mk_err err = mk_partition_produce(mk_topic_partition(t, 0),
					  (uint8_t *)b.frame.buf, b.frame.len,
					  &a, &res, NULL);
	if (!err)
		err = tl_ack_wait(mk_topic_partition(t, 0), &res, NULL);
	mk_builder_release(&b);
	mk_topic_put(t);
	return err;
}

static void file_of(fixture *f, const char *name, mk_strbuf *out)
{
	mk_strbuf path = MK_STRBUF_INIT;
	mk_strbuf_addf(&path, "%s/%s", f->dir, name);
	bool missing;
	mk_strbuf_reset(out);
	assert_int_equal(mk_file_read(path.buf, out, &missing), MK_OK);
	mk_strbuf_release(&path);
}

static void write_file(fixture *f, const char *name, const char *data, size_t n)
{
	mk_strbuf path = MK_STRBUF_INIT;
	mk_strbuf_addf(&path, "%s/%s", f->dir, name);
	FILE *fp = fopen(path.buf, "wb");
	assert_non_null(fp);
	assert_int_equal(fwrite(data, 1, n, fp), n);
	fclose(fp);
	mk_strbuf_release(&path);
}

/* Every save fails from now on (the temporary file is a directory). */
static void break_saves(fixture *f, bool broken)
{
	mk_strbuf path = MK_STRBUF_INIT;
	mk_strbuf_addf(&path, "%s/metadata.tmp", f->dir);
	if (broken)
		assert_int_equal(mkdir(path.buf, 0755), 0);
	else
		assert_int_equal(rmdir(path.buf), 0);
	mk_strbuf_release(&path);
}

/* ---- decide, persist, act ------------------------------------------------ */

/* A crash point in a forked child: the child runs fn and must die there. */
static void die_at(fixture *f, const char *point, void (*fn)(fixture *f))
{
	/* The child inherits the open cluster; the parent must not touch it
	 * again (its threads are the child's no more): close it first and
	 * let the child reopen. */
	mk_cluster_close(f->c);
	f->c = NULL;
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		mk_strbuf why = MK_STRBUF_INIT;
		if (try_open(f, &why))
			_exit(2);
		mk_failpoint_arm(point, 1);
		fn(f);
		_exit(3);         /* the point was not reached */
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGKILL);
	open_cluster(f);
}

static void do_promote2(fixture *f)
{
	mk_cluster_promote(f->c, 2, "t", 0, false, NULL);
}

static void do_crash1(fixture *f)
{
	mk_cluster_broker_crash(f->c, 1, false, NULL);
}

static void do_delete(fixture *f)
{
	mk_cluster_delete_topic(f->c, "t", NULL);
}

/* A promotion's epoch is saved before it is used: a kill between the save
 * and the switch keeps the new leader and epoch, and the next promotion
 * takes a newer one. */
static void test_promote_saved_before_applied(void **state)
{
	fixture *f = *state;
	open_cluster(f);
	create(f, "t", 2, NULL);
	assert_int_equal(append(f, "t", "a", 1), MK_OK);
	assert_int_equal(mk_cluster_replicate(f->c, NULL), MK_OK);
	die_at(f, "promote.after-save", do_promote2);
	mk_partition_info in = info_of(f, "t");
	assert_int_equal(in.leader, 2);
	assert_int_equal(in.leader_epoch, 1);
	assert_int_equal(mk_cluster_promote(f->c, 1, "t", 0, false, NULL), MK_OK);
	assert_int_equal(info_of(f, "t").leader_epoch, 2);
}

/* A broker crash is saved before any log is cut: the kill between them
 * leaves broker 1 offline with its log whole (and its records come back
 * with the restart). */
static void test_crash_saved_before_truncation(void **state)
{
	fixture *f = *state;
	open_cluster(f);
	create(f, "t", 2, NULL);
	assert_int_equal(append(f, "t", "a", 1), MK_OK);
	assert_int_equal(append(f, "t", "b", 1), MK_OK);
	assert_int_equal(mk_cluster_replicate(f->c, NULL), MK_OK);
	die_at(f, "replica.crash.before-truncate", do_crash1);
	assert_false(mk_cluster_broker_online(f->c, 1));
	mk_partition_info in = info_of(f, "t");
	assert_int_equal(in.leader, -1);
	assert_int_equal(mk_cluster_promote(f->c, 2, "t", 0, false, NULL), MK_OK);
	assert_int_equal(info_of(f, "t").hw, 2);
	assert_int_equal(mk_cluster_broker_restart(f->c, 1, NULL), MK_OK);
	in = info_of(f, "t");
	assert_int_equal(in.replicas[0].leo, 2);     /* nothing was cut */
}

/* A deletion is saved first and finished by the next open. */
static void test_delete_finished_at_open(void **state)
{
	fixture *f = *state;
	open_cluster(f);
	create(f, "t", 2, NULL);
	assert_int_equal(append(f, "t", "a", 1), MK_OK);
	die_at(f, "topic.delete.after-mark", do_delete);
	mk_topic *t = mk_cluster_topic(f->c, "t");
	assert_null(t);
	struct stat st;
	mk_strbuf p = MK_STRBUF_INIT;
	mk_strbuf_addf(&p, "%s/broker-1/t-0", f->dir);
	assert_int_not_equal(stat(p.buf, &st), 0);
	mk_strbuf_release(&p);
	create(f, "t", 2, NULL);
	assert_int_equal(info_of(f, "t").leo, 0);
}

/* A failed save fails the change and changes nothing. */
static void test_failed_save_changes_nothing(void **state)
{
	fixture *f = *state;
	open_cluster(f);
	create(f, "t", 2, NULL);
	assert_int_equal(mk_cluster_producer_create(f->c, "p", NULL), MK_OK);
	break_saves(f, true);
	int64_t id;
	int16_t epoch;
	assert_int_equal(mk_cluster_producer_init(f->c, "p", NULL),
			 MK_KAFKA_STORAGE_ERROR);
	assert_int_equal(mk_cluster_producer_get(f->c, "p", &id, &epoch), MK_OK);
	assert_int_equal(epoch, 0);
	assert_int_equal(mk_cluster_producer_create(f->c, "q", NULL),
			 MK_KAFKA_STORAGE_ERROR);
	assert_int_equal(mk_cluster_producer_get(f->c, "q", &id, &epoch),
			 MK_UNKNOWN_PRODUCER_ID);
	assert_int_equal(mk_cluster_create_topic(f->c, "x", 1, 1, NULL, 0, NULL),
			 MK_KAFKA_STORAGE_ERROR);
	assert_null(mk_cluster_topic(f->c, "x"));
	assert_int_equal(mk_cluster_promote(f->c, 2, "t", 0, false, NULL),
			 MK_KAFKA_STORAGE_ERROR);
	assert_int_equal(info_of(f, "t").leader, 1);
	assert_int_equal(info_of(f, "t").leader_epoch, 0);
	assert_int_equal(mk_cluster_broker_crash(f->c, 2, false, NULL),
			 MK_KAFKA_STORAGE_ERROR);
	assert_true(mk_cluster_broker_online(f->c, 2));
	assert_int_equal(mk_cluster_delete_topic(f->c, "t", NULL),
			 MK_KAFKA_STORAGE_ERROR);
	mk_topic *t = mk_cluster_topic(f->c, "t");
	assert_non_null(t);
	mk_topic_put(t);
	/* The final save fails too: close says so. */
	assert_int_not_equal(mk_cluster_close(f->c), MK_OK);
	f->c = NULL;
	break_saves(f, false);
}

/*
 * An ISR shrink counts only once the metadata file has it: decided (the
 * counter moved), it is not yet the ISR the snapshot shows (KIP-497) and
 * does not move the HW; saved, it is both.
 */
static void test_isr_shrink_waits_for_save(void **state)
{
	fixture *f = *state;
	f->cfg.replica_lag_time_max_ms = 1000;
	open_cluster(f);
	mk_cluster_start(f->c);             /* the saver */
	create(f, "t", 2, NULL);
	assert_int_equal(append(f, "t", "a", 1), MK_OK);
	assert_int_equal(mk_cluster_replicate(f->c, NULL), MK_OK);
	assert_int_equal(info_of(f, "t").hw, 1);
	break_saves(f, true);
	mk_cluster_clock_advance(f->c, 5000, NULL);     /* its save fails */
	assert_int_equal(append(f, "t", "b", 1), MK_OK);
	mk_partition_info in = info_of(f, "t");
	assert_int_equal(in.isr_shrinks, 1);            /* decided ... */
	assert_true(in.replicas[1].in_isr);             /* ... not committed */
	assert_int_equal(in.hw, 1);                     /* ... not acted on */
	break_saves(f, false);
	assert_int_equal(mk_cluster_clock_advance(f->c, 1, NULL), MK_OK);
	in = info_of(f, "t");
	assert_false(in.replicas[1].in_isr);            /* saved: the ISR */
	assert_int_equal(in.hw, 2);                     /* and acted on */
}

/* ---- the metadata file ----------------------------------------------------- */

static void refused(fixture *f, const char *text, size_t n, const char *line)
{
	write_file(f, "metadata", text, n);
	mk_strbuf why = MK_STRBUF_INIT, after = MK_STRBUF_INIT;
	assert_int_not_equal(try_open(f, &why), MK_OK);
	assert_null(f->c);
	if (!strstr(why.buf, line))
		print_error("why: %s (wanted %s)\n", why.buf, line);
	assert_non_null(strstr(why.buf, line));
	file_of(f, "metadata", &after);
	assert_int_equal(after.len, n);
	assert_memory_equal(after.buf, text, n);
	mk_strbuf_release(&why);
	mk_strbuf_release(&after);
}

/* Replace the first match of `from` by `to` and fix the checksum. */
static void edited(const mk_strbuf *good, const char *from, const char *to,
		   mk_strbuf *out)
{
	const char *at = strstr(good->buf, from);
	assert_non_null(at);
	const char *sum = strstr(good->buf, "checksum ");
	mk_strbuf_reset(out);
	mk_strbuf_add(out, good->buf, (size_t)(at - good->buf));
	mk_strbuf_addstr(out, to);
	if (!sum) {              /* a version-1 file: no checksum to fix */
		mk_strbuf_addstr(out, at + strlen(from));
		return;
	}
	mk_strbuf_add(out, at + strlen(from), (size_t)(sum - at - (ptrdiff_t)strlen(from)));
	char line[32];
	snprintf(line, sizeof line, "checksum %08lx\n",
		 crc32(0L, (const Bytef *)out->buf, (uInt)out->len));
	mk_strbuf_addstr(out, line);
}

static void test_damaged_metadata_refused(void **state)
{
	fixture *f = *state;
	open_cluster(f);
	create(f, "t", 2, NULL);
	assert_int_equal(mk_cluster_close(f->c), MK_OK);
	f->c = NULL;
	mk_strbuf good = MK_STRBUF_INIT, bad = MK_STRBUF_INIT;
	file_of(f, "metadata", &good);
	refused(f, "", 0, "metadata:1: empty file");
	refused(f, good.buf, good.len - 5, "metadata:");
	refused(f, "\0\0minikafka", 11, "metadata:1:");
	refused(f, "minikafka-metadata 2\n", 21, "metadata:1: no checksum");
	refused(f, "minikafka-metadata 1\n", 21, "next_producer_id");
	mk_strbuf_reset(&bad);
	mk_strbuf_add(&bad, good.buf, good.len);
	bad.buf[25] ^= 1;
	refused(f, bad.buf, bad.len, "checksum mismatch");
	edited(&good, "replicas=1,2", "replicas=1,1,1", &bad);
	refused(f, bad.buf, bad.len, "metadata:5:");
	edited(&good, "epoch=0", "epoch=-7", &bad);
	refused(f, bad.buf, bad.len, "metadata:5:");
	edited(&good, "epoch=0", "epoch=2147483648", &bad);
	refused(f, bad.buf, bad.len, "metadata:5:");
	edited(&good, "isr=1,2", "isr=", &bad);
	refused(f, bad.buf, bad.len, "isr is empty");
	edited(&good, "leader=1", "leader=7", &bad);
	refused(f, bad.buf, bad.len, "the leader is not a replica");
	write_file(f, "metadata", good.buf, good.len);
	open_cluster(f);
	mk_strbuf_release(&good);
	mk_strbuf_release(&bad);
}

/* ---- the data directory ---------------------------------------------------- */

static void test_second_open_refused(void **state)
{
	fixture *f = *state;
	open_cluster(f);
	mk_cluster *second = NULL;
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_not_equal(mk_cluster_open(f->dir, &f->cfg, &second, &why), MK_OK);
	assert_null(second);
	assert_non_null(strstr(why.buf, "in use by another minikafkafs"));
	mk_strbuf_release(&why);
	/* The first keeps working. */
	create(f, "t", 1, NULL);
	assert_int_equal(append(f, "t", "a", 1), MK_OK);
}

/* A storage error (EMFILE on a roll) takes the replica offline without
 * cutting its unflushed tail; the broker's restart recovers it. */
static void test_storage_error_cuts_nothing(void **state)
{
	fixture *f = *state;
	f->cfg.nbrokers = 1;
	open_cluster(f);
	create(f, "t", 1, "segment.bytes=200");
	int n = 0;
	/* Fill the active segment: the next append rolls. */
	while (info_of(f, "t").leo < 4) {
		assert_int_equal(append(f, "t", "0123456789012345678901234567890123456789", 1), MK_OK);
		n++;
	}
	struct rlimit old, low;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	int free_fd = dup(0);
	assert_true(free_fd >= 0);
	close(free_fd);
	low = old;
	low.rlim_cur = (rlim_t)free_fd;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	mk_err err = MK_OK;
	for (int i = 0; i < 20 && !err; i++) {
		err = append(f, "t", "0123456789012345678901234567890123456789", 1);
		n += !err;
	}
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(err, MK_KAFKA_STORAGE_ERROR);
	assert_int_equal(info_of(f, "t").leader, -1);
	/* Repair at restart: every acknowledged record is there. */
	assert_int_equal(mk_cluster_broker_crash(f->c, 1, false, NULL), MK_OK);
	assert_int_equal(mk_cluster_broker_restart(f->c, 1, NULL), MK_OK);
	mk_partition_info in = info_of(f, "t");
	assert_int_equal(in.leader, 1);
	assert_int_equal(in.leo, n);
}

/* A durable segment missing at open is refused, never a silent gap. */
static void test_missing_segment_refused(void **state)
{
	fixture *f = *state;
	mk_strbuf dir = MK_STRBUF_INIT, why = MK_STRBUF_INIT, path = MK_STRBUF_INIT;
	mk_strbuf_addf(&dir, "%s/log", f->root);
	mk_log_config lc = { 128, 4096, 0, NULL, NULL };
	mk_log *log;
	assert_int_equal(mk_log_open(dir.buf, &lc, &log, &why), MK_OK);
	for (int i = 0; i < 20; i++) {
		mk_batch_builder b;
		mk_batch_meta meta = { 0, 0, -1, -1, -1, -1, MK_BYTES_NULL };
		mk_builder_init(&b, &meta);
		mk_builder_add(&b, 1000, MK_BYTES_NULL,
			       mk_bytes_of("0123456789abcdef", 16), NULL, 0);
		mk_builder_finish(&b);
		int64_t base;
		assert_int_equal(mk_log_append_leader(log, (uint8_t *)b.frame.buf,
						      b.frame.len, 0, &base), MK_OK);
		mk_builder_release(&b);
	}
	assert_true(mk_log_segment_count(log) >= 4);
	mk_segment_info si;
	mk_log_segment_info(log, 1, &si);
	mk_log_close(log);
	/* A clean close leaves the log whole: it opens again. */
	assert_int_equal(mk_log_open(dir.buf, &lc, &log, &why), MK_OK);
	mk_log_close(log);
	mk_strbuf_addf(&path, "%s/%020lld.log", dir.buf, (long long)si.base_offset);
	assert_int_equal(unlink(path.buf), 0);
	assert_int_not_equal(mk_log_open(dir.buf, &lc, &log, &why), MK_OK);
	assert_null(log);
	assert_non_null(strstr(why.buf, "is missing"));
	mk_strbuf_release(&dir);
	mk_strbuf_release(&why);
	mk_strbuf_release(&path);
}

/* At open the epoch is at least the newest in any replica's epoch cache. */
static void test_epoch_never_goes_back(void **state)
{
	fixture *f = *state;
	open_cluster(f);
	create(f, "t", 2, NULL);
	assert_int_equal(mk_cluster_promote(f->c, 2, "t", 0, false, NULL), MK_OK);
	assert_int_equal(mk_cluster_promote(f->c, 1, "t", 0, false, NULL), MK_OK);
	assert_int_equal(append(f, "t", "a", 1), MK_OK);   /* epoch 2 */
	assert_int_equal(mk_cluster_close(f->c), MK_OK);
	f->c = NULL;
	mk_strbuf good = MK_STRBUF_INIT, bad = MK_STRBUF_INIT;
	file_of(f, "metadata", &good);
	edited(&good, "epoch=2", "epoch=0", &bad);
	write_file(f, "metadata", bad.buf, bad.len);
	open_cluster(f);
	assert_true(info_of(f, "t").leader_epoch >= 2);
	assert_int_equal(mk_cluster_promote(f->c, 2, "t", 0, false, NULL), MK_OK);
	assert_true(info_of(f, "t").leader_epoch >= 3);
	reopen(f);
	assert_true(info_of(f, "t").leader_epoch >= 3);
	mk_strbuf_release(&good);
	mk_strbuf_release(&bad);
}

/* The same when only an offline replica's epoch cache knows the epoch. */
static void test_epoch_of_offline_replica(void **state)
{
	fixture *f = *state;
	open_cluster(f);
	create(f, "t", 2, NULL);
	assert_int_equal(mk_cluster_promote(f->c, 2, "t", 0, false, NULL), MK_OK);
	assert_int_equal(mk_cluster_promote(f->c, 1, "t", 0, false, NULL), MK_OK);
	assert_int_equal(mk_cluster_promote(f->c, 2, "t", 0, false, NULL), MK_OK);
	assert_int_equal(append(f, "t", "a", 1), MK_OK);   /* epoch 3, on 2 */
	assert_int_equal(mk_cluster_broker_crash(f->c, 2, false, NULL), MK_OK);
	assert_int_equal(mk_cluster_close(f->c), MK_OK);
	f->c = NULL;
	mk_strbuf good = MK_STRBUF_INIT, bad = MK_STRBUF_INIT;
	file_of(f, "metadata", &good);
	edited(&good, "epoch=3", "epoch=0", &bad);
	write_file(f, "metadata", bad.buf, bad.len);
	open_cluster(f);
	assert_false(mk_cluster_broker_online(f->c, 2));
	assert_true(info_of(f, "t").leader_epoch >= 3);
	mk_strbuf_release(&good);
	mk_strbuf_release(&bad);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_promote_saved_before_applied, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crash_saved_before_truncation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_delete_finished_at_open, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_save_changes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_isr_shrink_waits_for_save, setup, teardown),
		cmocka_unit_test_setup_teardown(test_damaged_metadata_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_second_open_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_storage_error_cuts_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_epoch_never_goes_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_segment_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_epoch_of_offline_replica, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
