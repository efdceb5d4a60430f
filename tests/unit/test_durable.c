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
#include "logdir.h"
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
	mk_batch_meta meta = { 0, 0, -1, -1, -1, -1, 0, false, 0 };
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

/* A crash point in a forked child: the child (the cluster reopened) runs
 * fn and must die there; the parent's cluster is closed. */
static void killed_at(fixture *f, const char *point, void (*fn)(fixture *f))
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
	if (!WIFSIGNALED(st))
		print_error("%s: the child exited %d\n", point, WEXITSTATUS(st));
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGKILL);
}

/* The same, then the cluster reopened (the recovery). */
static void die_at(fixture *f, const char *point, void (*fn)(fixture *f))
{
	killed_at(f, point, fn);
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
	mk_strbuf_addf(&dir, "%s/log-0", f->root);
	mk_log_config lc = { 128, 4096, 0, NULL, NULL };
	mk_log *log;
	assert_int_equal(mk_log_open(dir.buf, &lc, &log, &why), MK_OK);
	for (int i = 0; i < 20; i++) {
		mk_batch_builder b;
		mk_batch_meta meta = { 0, 0, -1, -1, -1, -1, 0, false, 0 };
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

/* ---- Kafka's checkpoint files (logdir.h, log_checkpoint.h) -------------- */

/* DATA_DIR/broker-B/NAME, whole; "" when missing. */
static void broker_file(fixture *f, int broker, const char *name,
			mk_strbuf *out)
{
	mk_strbuf rel = MK_STRBUF_INIT;
	mk_strbuf_addf(&rel, "broker-%d/%s", broker, name);
	file_of(f, rel.buf, out);
	mk_strbuf_release(&rel);
}

static int64_t entry_of(fixture *f, int broker, int file, const char *topic)
{
	mk_strbuf dir = MK_STRBUF_INIT;
	mk_strbuf_addf(&dir, "%s/broker-%d", f->dir, broker);
	int64_t v = tl_ckpt_offset(dir.buf, file, topic, 0);
	mk_strbuf_release(&dir);
	return v;
}

static void append_n(fixture *f, const char *topic, int n)
{
	for (int i = 0; i < n; i++)
		assert_int_equal(append(f, topic, "v", 1), MK_OK);
	/* Two rounds: the followers copy, then learn the HW. */
	assert_int_equal(mk_cluster_replicate(f->c, NULL), MK_OK);
	assert_int_equal(mk_cluster_replicate(f->c, NULL), MK_OK);
}

/*
 * After appends and a flush each broker directory holds Kafka's three
 * offset checkpoints, one "TOPIC PARTITION OFFSET" line per replica it
 * hosts (sorted), and each replica directory its leader-epoch-checkpoint;
 * what they say is what a reopen goes by.
 */
static void test_kafka_checkpoint_files(void **state)
{
	fixture *f = *state;
	open_cluster(f);
	create(f, "t", 2, NULL);
	create(f, "a", 2, NULL);
	append_n(f, "t", 5);
	append_n(f, "a", 2);
	assert_int_equal(mk_cluster_flush(f->c, NULL), MK_OK);
	int32_t e = info_of(f, "t").leader_epoch;
	mk_strbuf text = MK_STRBUF_INIT, want = MK_STRBUF_INIT;
	for (int b = 1; b <= 2; b++) {
		broker_file(f, b, "recovery-point-offset-checkpoint", &text);
		assert_string_equal(text.buf, "0\n2\na 0 2\nt 0 5\n");
		broker_file(f, b, "log-start-offset-checkpoint", &text);
		assert_string_equal(text.buf, "0\n2\na 0 0\nt 0 0\n");
		broker_file(f, b, "replication-offset-checkpoint", &text);
		assert_string_equal(text.buf, "0\n2\na 0 2\nt 0 5\n");
		broker_file(f, b, "t-0/leader-epoch-checkpoint", &text);
		mk_strbuf_reset(&want);
		mk_strbuf_addf(&want, "0\n1\n%d 0\n", (int)e);
		assert_string_equal(text.buf, want.buf);
		broker_file(f, b, "t-0/checkpoint", &text);
		assert_string_equal(text.buf, "version 2\nsegments 0\n");
		broker_file(f, b, "t-0/high-watermark", &text);
		assert_int_equal(text.len, 0);   /* the file of before: none */
	}
	assert_int_equal(mk_cluster_close(f->c), MK_OK);
	f->c = NULL;

	/* Read back at open: a log start set in the files is the logs'. */
	const char *starts = "0\n2\na 0 0\nt 0 2\n";
	write_file(f, "broker-1/log-start-offset-checkpoint", starts,
		   strlen(starts));
	write_file(f, "broker-2/log-start-offset-checkpoint", starts,
		   strlen(starts));
	open_cluster(f);
	assert_int_equal(info_of(f, "t").log_start, 2);
	assert_int_equal(info_of(f, "t").leo, 5);
	assert_int_equal(info_of(f, "t").hw, 5);

	/* A deleted topic's lines go with it. */
	assert_int_equal(mk_cluster_delete_topic(f->c, "a", NULL), MK_OK);
	assert_int_equal(mk_cluster_flush(f->c, NULL), MK_OK);
	broker_file(f, 1, "replication-offset-checkpoint", &text);
	assert_string_equal(text.buf, "0\n1\nt 0 5\n");
	mk_strbuf_release(&text);
	mk_strbuf_release(&want);
}

/* A replica directory's high-watermark file of before is taken into the
 * broker's replication-offset-checkpoint at open, then removed. */
static void test_old_hw_file_taken(void **state)
{
	fixture *f = *state;
	open_cluster(f);
	create(f, "t", 2, NULL);
	append_n(f, "t", 4);
	assert_int_equal(mk_cluster_close(f->c), MK_OK);
	f->c = NULL;
	mk_strbuf text = MK_STRBUF_INIT;
	for (int b = 1; b <= 2; b++) {
		mk_strbuf rel = MK_STRBUF_INIT;
		mk_strbuf_addf(&rel, "broker-%d/replication-offset-checkpoint", b);
		write_file(f, rel.buf, "0\n0\n", 4);
		mk_strbuf_reset(&rel);
		mk_strbuf_addf(&rel, "broker-%d/t-0/high-watermark", b);
		write_file(f, rel.buf, "3\n", 2);
		mk_strbuf_release(&rel);
	}
	open_cluster(f);
	for (int b = 1; b <= 2; b++) {
		broker_file(f, b, "t-0/high-watermark", &text);
		assert_int_equal(text.len, 0);
		assert_int_equal(entry_of(f, b, MK_LOGDIR_HW, "t"), 3);
	}
	mk_strbuf_release(&text);
}

static void do_append_flush(fixture *f)
{
	append_n(f, "t", 3);
	mk_cluster_flush(f->c, NULL);
}

/*
 * A kill between the write of a broker file's replacement and its rename
 * (logdir.high-watermark.after-write): the file says what it said, the
 * temporary file is left beside it, nothing ahead of the data; the reopen
 * deletes the temporary file, every record is there, and the next flush
 * writes the new values.
 */
static void test_kafka_files_killed_before_rename(void **state)
{
	fixture *f = *state;
	open_cluster(f);
	create(f, "t", 2, NULL);
	append_n(f, "t", 5);
	assert_int_equal(mk_cluster_flush(f->c, NULL), MK_OK);
	killed_at(f, "logdir.high-watermark.after-write", do_append_flush);
	mk_strbuf tmp = MK_STRBUF_INIT;
	int with_tmp = 0;
	for (int b = 1; b <= 2; b++) {
		assert_int_equal(entry_of(f, b, MK_LOGDIR_HW, "t"), 5);
		assert_int_equal(entry_of(f, b, MK_LOGDIR_RECOVERY, "t"), 5);
		broker_file(f, b, "replication-offset-checkpoint.tmp", &tmp);
		if (tmp.len) {
			with_tmp++;
			assert_string_equal(tmp.buf, "0\n1\nt 0 8\n");
		}
	}
	assert_int_equal(with_tmp, 1);   /* the write the kill stopped */
	open_cluster(f);
	for (int b = 1; b <= 2; b++) {
		broker_file(f, b, "replication-offset-checkpoint.tmp", &tmp);
		assert_int_equal(tmp.len, 0);
	}
	mk_partition_info in = info_of(f, "t");
	assert_int_equal(in.leo, 8);     /* flushed before the files */
	assert_int_equal(in.hw, 8);
	assert_int_equal(mk_cluster_flush(f->c, NULL), MK_OK);
	for (int b = 1; b <= 2; b++) {
		assert_int_equal(entry_of(f, b, MK_LOGDIR_HW, "t"), 8);
		assert_int_equal(entry_of(f, b, MK_LOGDIR_RECOVERY, "t"), 8);
	}
	mk_strbuf_release(&tmp);
}

static void do_delete_records(fixture *f)
{
	mk_topic *t = mk_cluster_topic(f->c, "t");
	mk_partition_delete_records(mk_topic_partition(t, 0), 4, NULL, NULL);
	mk_topic_put(t);
}

/*
 * A log start that moves is written before the move acts, and after the
 * HW that bounds it: killed between the log start file's write and its
 * rename, the HW file already holds the HW at or past the new start (so
 * the reopen, which finds the old start, is consistent, and would be with
 * the new one).
 */
static void test_hw_written_before_log_start(void **state)
{
	fixture *f = *state;
	open_cluster(f);
	create(f, "t", 1, NULL);
	int b = info_of(f, "t").leader;
	assert_int_equal(mk_cluster_flush(f->c, NULL), MK_OK);
	assert_int_equal(entry_of(f, b, MK_LOGDIR_HW, "t"), 0);
	assert_int_equal(mk_cluster_close(f->c), MK_OK);
	f->c = NULL;
	open_cluster(f);
	append_n(f, "t", 6);      /* HW 6 in memory, the files still 0 */
	killed_at(f, "logdir.log-start.after-write", do_delete_records);
	assert_int_equal(entry_of(f, b, MK_LOGDIR_HW, "t"), 6);
	assert_int_equal(entry_of(f, b, MK_LOGDIR_START, "t"), 0);
	open_cluster(f);
	assert_int_equal(info_of(f, "t").log_start, 0);
	do_delete_records(f);
	assert_int_equal(info_of(f, "t").log_start, 4);
	assert_int_equal(entry_of(f, b, MK_LOGDIR_START, "t"), 4);
	reopen(f);
	assert_int_equal(info_of(f, "t").log_start, 4);
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
		cmocka_unit_test_setup_teardown(test_kafka_checkpoint_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_old_hw_file_taken, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kafka_files_killed_before_rename, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hw_written_before_log_start, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
