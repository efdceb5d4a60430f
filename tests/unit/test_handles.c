/*
 * fs/handles.c without a mount: descriptor I/O and line carrying. The
 * producer's rules have their own tests (test_producer.c); these check
 * what the handle layer adds: lines carried across writes and kept by a
 * refused write, a carried line refused as too large dropped (and its
 * descriptor refusing every later write), a full piece refusing a line
 * near the limit, a close of one copy (flush) that sends nothing, the
 * last close and fsync that do, receipts as text; and that nothing here
 * waits: acks=all writes, fsync and the last close, and :follow reads,
 * leave their wait pending until the event (tl_fs_settle drives them as
 * the parking lot would), a last close nobody waited for takes one look.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cluster.h"
#include "handles.h"
#include "nodes.h"
#include "producer.h"
#include "testlib_fs.h"

typedef tl_fs fixture;

static int setup(void **state)
{
	mk_config cfg;
	tl_config(&cfg, 1);
	cfg.linger_ms = 100;
	fixture *f = tl_fs_open("handles", &cfg, TL_FS_PRODUCERS);
	tl_create_topic(f->c, "t", 2, 1, "message.max.bytes=200", NULL);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	tl_fs_close(*state);
	return 0;
}

static mk_handle *hopen(fixture *f, const char *path, int flags)
{
	node_ref ref;
	assert_int_equal(mk_resolve(&f->fs, path, &ref, NULL), MK_OK);
	mk_handle *h = NULL;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_handle_open(&f->fs, &ref, path, flags, &h, &why);
	mk_node_ref_release(&ref);
	if (err)
		fail_msg("open %s: %s: %s", path, mk_err_name(err), why.buf);
	mk_strbuf_release(&why);
	return h;
}

static mk_err hwrite(fixture *f, mk_handle *h, const char *s)
{
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = tl_fs_write(f, h, s, strlen(s), &why);
	if (err)
		assert_true(why.len > 0);
	mk_strbuf_release(&why);
	return err;
}

static mk_err hflush(fixture *f, mk_handle *h)
{
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_handle_flush(&f->fs, h, &why);
	mk_strbuf_release(&why);
	return err;
}

static mk_err hfsync(fixture *f, mk_handle *h)
{
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = tl_fs_fsync(f, h, &why);
	mk_strbuf_release(&why);
	return err;
}

/* Everything a handle reads until EOF, as a string (caller frees). */
static char *hread_all(fixture *f, mk_handle *h)
{
	mk_strbuf out = MK_STRBUF_INIT, why = MK_STRBUF_INIT;
	char buf[256];
	size_t n;
	long long off = 0;
	do {
		assert_int_equal(tl_fs_read(f, h, buf, sizeof(buf), off, &n, &why),
				 MK_OK);
		mk_strbuf_add(&out, buf, n);
		off += (long long)n;
	} while (n);
	mk_strbuf_release(&why);
	char *s = strdup(out.buf);
	mk_strbuf_release(&out);
	return s;
}

/* The plain records of partition p. */
static void assert_records(fixture *f, int p, const char *expect)
{
	char path[64];
	snprintf(path, sizeof(path), "/topics/t/%d/records", p);
	mk_handle *h = hopen(f, path, O_RDONLY);
	char *got = hread_all(f, h);
	assert_string_equal(got, expect);
	free(got);
	tl_fs_close_handle(f, h);
}

static int64_t leo(fixture *f, int p)
{
	mk_topic *t = mk_cluster_topic(f->c, "t");
	mk_partition_info in;
	mk_partition_info_get(mk_topic_partition(t, p), &in);
	mk_topic_put(t);
	return in.leo;
}

/* A partial line is carried across writes and across flushes (the close
 * of a copy); the last close sends it. */
static void carries_lines(void **state)
{
	fixture *f = *state;
	mk_handle *h = hopen(f, "/topics/t/0/append", O_WRONLY);
	assert_int_equal(hwrite(f, h, "ab"), MK_OK);
	assert_int_equal(hflush(f, h), MK_OK);
	assert_int_equal(leo(f, 0), 0);
	assert_int_equal(hwrite(f, h, "c\nd"), MK_OK);
	assert_int_equal(leo(f, 0), 1);
	assert_int_equal(hwrite(f, h, "e"), MK_OK);
	assert_int_equal(hflush(f, h), MK_OK);
	assert_int_equal(leo(f, 0), 1);
	assert_int_equal(hwrite(f, h, "f\ng\nh"), MK_OK);
	assert_int_equal(leo(f, 0), 3);          /* one batch: def, g */
	tl_fs_close_handle(f, h);                 /* the last close: h */
	assert_int_equal(leo(f, 0), 4);
	assert_records(f, 0, "abc\ndef\ng\nh\n");
}

/* A refused write changes nothing: the carried line stays as it was. */
static void refused_write_keeps_the_carry(void **state)
{
	fixture *f = *state;
	mk_handle *h = hopen(f, "/topics/t/0/append:tsv", O_WRONLY);
	assert_int_equal(hwrite(f, h, "x"), MK_OK);
	assert_int_equal(hwrite(f, h, "\\q\nzzz\n"), MK_INVALID_RECORD);
	assert_int_equal(leo(f, 0), 0);
	assert_int_equal(hwrite(f, h, "y\\tz\n"), MK_OK);
	/* A line over message.max.bytes (200) with nothing carried is
	 * refused as soon as seen, and the descriptor goes on. */
	char big[300];
	memset(big, 'b', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(hwrite(f, h, big), MK_MESSAGE_TOO_LARGE);
	assert_int_equal(hwrite(f, h, "w\n"), MK_OK);
	tl_fs_close_handle(f, h);
	mk_handle *r = hopen(f, "/topics/t/0/records:tsv", O_RDONLY);
	char *got = hread_all(f, r);
	tl_fs_close_handle(f, r);
	/* OFFSET TIMESTAMP KEY VALUE: the value unescaped, then escaped again */
	assert_non_null(strstr(got, "\t\\N\txy\\tz\n"));
	assert_non_null(strstr(got, "\t\\N\tw\n"));
	assert_int_equal(leo(f, 0), 2);
	free(got);
}

/* A carried line refused as too large, by its length (plain) or by its
 * record's batch (TSV, once complete), is dropped: never sent, and every
 * later write on the descriptor is refused too; what came before it is
 * sent as usual. */
static void refused_carried_line_is_dropped(void **state)
{
	fixture *f = *state;
	char big[300];
	memset(big, 'b', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	mk_handle *h = hopen(f, "/topics/t/0/append", O_WRONLY);
	assert_int_equal(hwrite(f, h, "a\nx"), MK_OK);
	assert_int_equal(leo(f, 0), 1);
	assert_int_equal(hwrite(f, h, big), MK_MESSAGE_TOO_LARGE);
	assert_int_equal(hwrite(f, h, "y\n"), MK_MESSAGE_TOO_LARGE);
	assert_int_equal(hfsync(f, h), MK_OK);
	tl_fs_close_handle(f, h);
	assert_int_equal(leo(f, 0), 1);
	assert_records(f, 0, "a\n");

	/* 150 bytes of TSV: a line under 200, its record's batch over it */
	char half[101];
	memset(half, 'v', 100);
	half[100] = '\0';
	h = hopen(f, "/topics/t/1/append:tsv", O_WRONLY);
	assert_int_equal(hwrite(f, h, half), MK_OK);
	memset(half + 50, '\n', 1);
	half[51] = '\0';
	assert_int_equal(hwrite(f, h, half), MK_MESSAGE_TOO_LARGE);
	assert_int_equal(hwrite(f, h, "ok\n"), MK_MESSAGE_TOO_LARGE);
	tl_fs_close_handle(f, h);
	assert_int_equal(leo(f, 1), 0);
}

/* A write that may be a full piece of a larger write(2) (more than
 * max_write less a page) refuses a carried line whose one-record batch
 * comes within a page of message.max.bytes; a shorter write carries it. */
static void full_piece_refuses_a_line_near_the_limit(void **state)
{
	fixture *f = *state;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char cfg[64];
	snprintf(cfg, sizeof(cfg), "message.max.bytes=%zu", 2 * page + page / 2);
	tl_create_topic(f->c, "w", 1, 1, cfg, NULL);
	char *buf = malloc(2 * page + 1);
	memset(buf, 'x', 2 * page);
	size_t near = page + page / 2, far = page + page / 5;

	buf[near] = '\0';
	mk_handle *h = hopen(f, "/topics/w/0/append", O_WRONLY);
	assert_int_equal(hwrite(f, h, buf), MK_OK);   /* max_write unknown */
	tl_fs_close_handle(f, h);
	f->fs.max_write = 2 * page;
	h = hopen(f, "/topics/w/0/append", O_WRONLY);
	assert_int_equal(hwrite(f, h, buf), MK_MESSAGE_TOO_LARGE);
	assert_int_equal(hwrite(f, h, "ok\n"), MK_OK);   /* nothing was carried */
	buf[near] = 'x';
	buf[far] = '\0';
	assert_int_equal(hwrite(f, h, buf), MK_OK);   /* not within a page */
	buf[far] = 'x';
	buf[2 * page] = '\0';
	/* The next piece: the carried line is over the limit; dropped. */
	assert_int_equal(hwrite(f, h, buf), MK_MESSAGE_TOO_LARGE);
	assert_int_equal(hwrite(f, h, "z\n"), MK_MESSAGE_TOO_LARGE);
	tl_fs_close_handle(f, h);
	free(buf);
	mk_topic *t = mk_cluster_topic(f->c, "w");
	mk_partition_info in;
	mk_partition_info_get(mk_topic_partition(t, 0), &in);
	mk_topic_put(t);
	assert_int_equal(in.leo, 2);    /* the first near line, and ok */
}

/* Receipts as text lines, "-" for the offset under acks=0; an O_WRONLY
 * descriptor keeps none; O_RDONLY is refused. */
static void receipts(void **state)
{
	fixture *f = *state;
	mk_handle *h = hopen(f, "/topics/t/1/append:acks=1", O_RDWR);
	assert_int_equal(hwrite(f, h, "a\nb\n"), MK_OK);
	assert_int_equal(hwrite(f, h, "c\n"), MK_OK);
	char *got = hread_all(f, h);
	assert_string_equal(got, "t 1 0 2\nt 1 2 1\n");
	free(got);
	got = hread_all(f, h);
	assert_string_equal(got, "");
	free(got);
	tl_fs_close_handle(f, h);
	h = hopen(f, "/topics/t/1/append:acks=0", O_RDWR);
	assert_int_equal(hwrite(f, h, "d\n"), MK_OK);
	got = hread_all(f, h);
	assert_string_equal(got, "t 1 - 1\n");
	free(got);
	tl_fs_close_handle(f, h);

	node_ref ref;
	assert_int_equal(mk_resolve(&f->fs, "/topics/t/append", &ref, NULL), MK_OK);
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(mk_handle_open(&f->fs, &ref, "/topics/t/append", O_RDONLY,
					&h, &why), MK_INVALID_REQUEST);
	mk_node_ref_release(&ref);
	mk_strbuf_release(&why);
}

/* A topic append under linger.ms: a flush (close of a copy) sends
 * nothing, fsync sends everything, and so does the last close. */
static void lingering_batches(void **state)
{
	fixture *f = *state;
	mk_handle *h = hopen(f, "/topics/t/append", O_RDWR);
	assert_int_equal(hwrite(f, h, "a\n"), MK_OK);
	assert_int_equal(hwrite(f, h, "b\n"), MK_OK);
	assert_int_equal(hflush(f, h), MK_OK);
	assert_int_equal(leo(f, 0) + leo(f, 1), 0);
	assert_int_equal(hfsync(f, h), MK_OK);
	assert_int_equal(leo(f, 0), 2);          /* the first producer: partition 0 */
	char *got = hread_all(f, h);
	assert_string_equal(got, "t 0 0 2\n");
	free(got);
	assert_int_equal(hwrite(f, h, "c\n"), MK_OK);
	assert_int_equal(hwrite(f, h, "partial"), MK_OK);
	assert_int_equal(hflush(f, h), MK_OK);
	assert_int_equal(leo(f, 0) + leo(f, 1), 2);
	tl_fs_close_handle(f, h);
	/* fsync moved keyless records on to partition 1 */
	assert_int_equal(leo(f, 1), 2);
	assert_records(f, 1, "c\npartial\n");
}

/* The error of a batch sent by the clock is reported by the next flush,
 * once. */
static void flush_reports_background_errors(void **state)
{
	fixture *f = *state;
	mk_handle *h = hopen(f, "/topics/t/append", O_WRONLY);
	assert_int_equal(hwrite(f, h, "lost\n"), MK_OK);
	assert_int_equal(mk_cluster_broker_crash(f->c, 1, false, NULL), MK_OK);
	assert_int_equal(mk_cluster_clock_advance(f->c, 100, NULL), MK_OK);
	assert_int_equal(hflush(f, h), MK_LEADER_NOT_AVAILABLE);
	assert_int_equal(hflush(f, h), MK_OK);
	tl_fs_close_handle(f, h);
	assert_int_equal(mk_cluster_broker_restart(f->c, 1, NULL), MK_OK);
}

/* ---- the event path: replicated acks=all, :follow ------------------------ */

/* Two brokers, replication only by explicit fetch rounds. */
static int setup_replicated(void **state)
{
	mk_config cfg;
	tl_config(&cfg, 2);
	cfg.auto_replication = 0;
	cfg.request_timeout_ms = 500;
	cfg.replica_lag_time_max_ms = 100000;
	fixture *f = tl_fs_open("handles-rf2", &cfg, TL_FS_PRODUCERS);
	tl_create_topic(f->c, "t", 1, 2, NULL, NULL);
	assert_int_equal(mk_cluster_replicate(f->c, NULL), MK_OK);
	*state = f;
	return 0;
}

static int64_t hw(fixture *f)
{
	mk_topic *t = mk_cluster_topic(f->c, "t");
	mk_partition_info in;
	mk_partition_info_get(mk_topic_partition(t, 0), &in);
	mk_topic_put(t);
	return in.hw;
}

/* The wait an acks=all call left: the partition's, from its change
 * count, with the ticket of the first batch owed. */
static void assert_acks_wait(fixture *f, const mk_wait *wait, mk_wait_kind kind)
{
	mk_topic *t = mk_cluster_topic(f->c, "t");
	assert_int_equal(wait->kind, kind);
	assert_ptr_equal(wait->p, mk_topic_partition(t, 0));
	assert_true(wait->has_ticket);
	assert_int_equal(wait->deadline_ms, mk_clock_now(&f->c->clock) + 500);
	mk_topic_put(t);
}

/*
 * Nothing in a handle waits: an acks=all write, fsync and last close
 * each leave their wait pending while the follower has yet to fetch,
 * and complete at the resume after the fetch round (the event).
 */
static void acks_all_parks_until_the_fetch(void **state)
{
	fixture *f = *state;
	mk_handle *h = hopen(f, "/topics/t/0/append:acks=all", O_WRONLY);
	mk_strbuf why = MK_STRBUF_INIT;
	mk_wait wait;
	assert_int_equal(mk_handle_write(&f->fs, h, "a\n", 2, &wait, &why), MK_OK);
	assert_acks_wait(f, &wait, MK_WAIT_ACKS);
	assert_int_equal(leo(f, 0), 1);
	assert_int_equal(hw(f), 0);
	assert_int_equal(mk_handle_resume(&f->fs, h, &wait, &why), MK_OK);
	assert_true(mk_wait_pending(&wait));        /* nothing happened yet */
	assert_int_equal(tl_fs_settle(f, h, &wait, MK_OK, &why), MK_OK);
	assert_false(mk_wait_pending(&wait));
	assert_int_equal(hw(f), 1);

	/* fsync sends the carried line, parks, then makes the logs durable. */
	assert_int_equal(hwrite(f, h, "b"), MK_OK);
	assert_int_equal(leo(f, 0), 1);
	assert_int_equal(mk_handle_fsync(&f->fs, h, &wait, &why), MK_OK);
	assert_acks_wait(f, &wait, MK_WAIT_FSYNC_ACKS);
	assert_int_equal(leo(f, 0), 2);
	assert_int_equal(tl_fs_settle(f, h, &wait, MK_OK, &why), MK_OK);
	assert_int_equal(hw(f), 2);

	/* The close of a copy sends nothing and so has nothing to wait for;
	 * the last close sends the carried line and parks. */
	assert_int_equal(hwrite(f, h, "c"), MK_OK);
	assert_int_equal(hflush(f, h), MK_OK);
	assert_int_equal(leo(f, 0), 2);
	assert_false(mk_handle_close_begin(h, &wait));
	assert_acks_wait(f, &wait, MK_WAIT_CLOSE_ACKS);
	assert_int_equal(leo(f, 0), 3);
	assert_int_equal(tl_fs_settle(f, h, &wait, MK_OK, &why), MK_OK);
	assert_int_equal(hw(f), 3);
	mk_handle_close(h);
	mk_strbuf_release(&why);
}

/*
 * A last close that nobody waited for (mk_handle_close without
 * close_begin: a stop) still sends the carried line, takes one last look
 * at its acknowledgement and, finding it owed, says so in /errors; the
 * record stays appended and is acknowledged by a later fetch.
 */
static void last_close_without_waiting_takes_one_look(void **state)
{
	fixture *f = *state;
	mk_handle *h = hopen(f, "/topics/t/0/append:acks=all", O_WRONLY);
	assert_int_equal(hwrite(f, h, "a\nb"), MK_OK);
	assert_int_equal(hw(f), 1);
	mk_handle_close(h);
	assert_int_equal(leo(f, 0), 2);
	assert_int_equal(hw(f), 1);
	mk_strbuf log = MK_STRBUF_INIT;
	mk_errlog_format(&f->c->errlog, &log);
	assert_non_null(strstr(log.buf, "/topics/t/0/append:acks=all REQUEST_TIMED_OUT at the last close: closed before the ISR acknowledged 1 batch"));
	mk_strbuf_release(&log);
	assert_int_equal(mk_cluster_replicate(f->c, NULL), MK_OK);
	assert_int_equal(hw(f), 2);
}

/*
 * A :follow read at the visible end parks on the partition from its
 * change count before the look; read again after an append (the
 * event), it returns the record.
 */
static void follow_read_parks_at_the_end(void **state)
{
	fixture *f = *state;
	mk_handle *r = hopen(f, "/topics/t/0/records:follow", O_RDONLY);
	mk_strbuf why = MK_STRBUF_INIT;
	mk_wait wait;
	char buf[64];
	size_t n = 99;
	assert_int_equal(mk_handle_read(&f->fs, r, buf, sizeof(buf), 0, &wait,
					&n, &why), MK_OK);
	mk_topic *t = mk_cluster_topic(f->c, "t");
	mk_partition *p = mk_topic_partition(t, 0);
	assert_int_equal(wait.kind, MK_WAIT_DATA);
	assert_ptr_equal(wait.p, p);
	assert_int_equal(wait.seen, mk_partition_seq(p));
	assert_int_equal(wait.deadline_ms, INT64_MAX);
	assert_int_equal(n, 0);
	mk_handle *h = hopen(f, "/topics/t/0/append:acks=1", O_WRONLY);
	assert_int_equal(hwrite(f, h, "x\n"), MK_OK);
	tl_fs_close_handle(f, h);
	assert_true(mk_partition_seq(p) != wait.seen);
	/* acks=1: the HW moves with the follower's fetch (tl_fs_read's
	 * round), and then the record is visible. */
	assert_int_equal(tl_fs_read(f, r, buf, sizeof(buf), 0, &n, &why), MK_OK);
	assert_int_equal(n, 2);
	assert_memory_equal(buf, "x\n", 2);
	mk_topic_put(t);
	tl_fs_close_handle(f, r);
	mk_strbuf_release(&why);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(carries_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(refused_write_keeps_the_carry, setup, teardown),
		cmocka_unit_test_setup_teardown(refused_carried_line_is_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(full_piece_refuses_a_line_near_the_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(receipts, setup, teardown),
		cmocka_unit_test_setup_teardown(lingering_batches, setup, teardown),
		cmocka_unit_test_setup_teardown(flush_reports_background_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(acks_all_parks_until_the_fetch, setup_replicated, teardown),
		cmocka_unit_test_setup_teardown(last_close_without_waiting_takes_one_look, setup_replicated, teardown),
		cmocka_unit_test_setup_teardown(follow_read_parks_at_the_end, setup_replicated, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
