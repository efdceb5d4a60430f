/*
 * Unit tests of the read-only views core gives the filesystem (issue 13):
 * a log's batch headers with their file positions and CRCs, its decoded
 * sparse indexes, and the error log's held line.
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
#include <unistd.h>

#include "cluster.h"
#include "codec.h"
#include "errlog.h"
#include "fileio.h"
#include "log.h"
#include "testlib.h"

typedef struct {
	char root[64];
	char dir[128];
	mk_log *log;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	strcpy(f->root, "/tmp/mk-test-views-XXXXXX");
	if (!mkdtemp(f->root)) {
		free(f);
		return -1;
	}
	snprintf(f->dir, sizeof(f->dir), "%s/t-0", f->root);
	/* Small segments and a dense index: several of each. */
	mk_log_config cfg = { 400, 100, 0, NULL, NULL };
	assert_int_equal(mk_log_open(f->dir, &cfg, &f->log, NULL), MK_OK);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	mk_log_close(f->log);
	mk_remove_tree(f->root);
	free(f);
	return 0;
}

/* Append one batch of n records "vN" with timestamp ts, epoch 3. */
static int64_t append(mk_log *log, int n, int64_t ts)
{
	static const mk_batch_meta meta = {
		.flags = 0, .base_offset = 0, .leader_epoch = 0, .producer_id = -1,
		.producer_epoch = -1, .base_sequence = -1,
	};
	mk_batch_builder b;
	mk_builder_init(&b, &meta);
	for (int i = 0; i < n; i++) {
		char v[16];
		int len = snprintf(v, sizeof(v), "v%d", i);
		mk_builder_add(&b, ts, MK_BYTES_NULL, mk_bytes_of(v, (size_t)len), NULL, 0);
	}
	mk_builder_finish(&b);
	int64_t base;
	assert_int_equal(mk_log_append_leader(log, (uint8_t *)b.frame.buf, b.frame.len,
					      3, &base), MK_OK);
	mk_builder_release(&b);
	return base;
}

/* The CRC field of the frame at pos of a segment file. */
static uint32_t crc_at(const fixture *f, int64_t segment, uint64_t pos)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%020lld.log", f->dir, (long long)segment);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	uint8_t hdr[MK_FRAME_HEADER];
	assert_int_equal(pread(fd, hdr, sizeof(hdr), (off_t)pos), MK_FRAME_HEADER);
	close(fd);
	assert_int_equal(hdr[MK_FRAME_OFF_MAGIC], MK_BATCH_MAGIC);
	return mk_load_be32(hdr + MK_FRAME_OFF_CRC);
}

static void batches_say_where_each_frame_lies(void **state)
{
	fixture *f = *state;
	for (int i = 0; i < 12; i++)
		append(f->log, 1 + i % 3, 1000 + i);
	mk_batch_info *bi;
	size_t n;
	assert_int_equal(mk_log_batches(f->log, 0, 1000, &bi, &n), MK_OK);
	assert_int_equal(n, 12);
	assert_true(mk_log_segment_count(f->log) >= 2);
	int64_t next = 0;
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(bi[i].base_offset, next);
		assert_int_equal(bi[i].count, 1 + (int)i % 3);
		assert_int_equal(bi[i].last_offset, next + bi[i].count - 1);
		assert_int_equal(bi[i].leader_epoch, 3);
		assert_int_equal(bi[i].producer_id, -1);
		assert_int_equal(bi[i].max_timestamp, 1000 + (int64_t)i);
		assert_int_equal(bi[i].flags, 0);
		/* Back to back within a segment, from 0 in a new one. */
		if (i > 0 && bi[i].segment == bi[i - 1].segment)
			assert_int_equal(bi[i].position, bi[i - 1].position + bi[i - 1].bytes);
		else
			assert_int_equal(bi[i].position, 0);
		if (i > 0 && bi[i].segment != bi[i - 1].segment)
			assert_int_equal(bi[i].segment, bi[i].base_offset);
		assert_int_equal(bi[i].crc, crc_at(f, bi[i].segment, bi[i].position));
		next = bi[i].last_offset + 1;
	}
	assert_int_equal(next, mk_log_end_offset(f->log));
	/* From the middle of a batch: that batch first; at most max. */
	mk_batch_info *mid;
	size_t m;
	assert_int_equal(mk_log_batches(f->log, bi[5].base_offset + 1, 2, &mid, &m), MK_OK);
	if (bi[5].count > 1) {
		assert_int_equal(m, 2);
		assert_int_equal(mid[0].base_offset, bi[5].base_offset);
		assert_int_equal(mid[0].position, bi[5].position);
	}
	free(mid);
	/* At the end: nothing; past it: out of range. */
	assert_int_equal(mk_log_batches(f->log, next, 10, &mid, &m), MK_OK);
	assert_int_equal(m, 0);
	free(mid);
	assert_int_equal(mk_log_batches(f->log, next + 1, 10, &mid, &m),
			 MK_OFFSET_OUT_OF_RANGE);
	assert_null(mid);
	free(bi);
}

static void index_rows_are_absolute_and_point_at_batches(void **state)
{
	fixture *f = *state;
	for (int i = 0; i < 12; i++)
		append(f->log, 2, 2000 + i);
	mk_batch_info *bi;
	size_t n;
	assert_int_equal(mk_log_batches(f->log, 0, 1000, &bi, &n), MK_OK);
	size_t segs = mk_log_segment_count(f->log);
	for (size_t s = 0; s < segs; s++) {
		mk_segment_info si;
		mk_log_segment_info(f->log, s, &si);
		/* The offset index's rows, each a batch start; then the
		 * time index's, each the segment's max timestamp so far and
		 * the batch that first reached it. */
		size_t nr;
		mk_index_row *rows = tl_check_index_rows(f->log, si.base_offset,
							 bi, n, &nr);
		assert_true(nr >= 2);
		assert_int_equal(rows[0].offset, si.base_offset);
		assert_int_equal(rows[0].position, 0);
		for (size_t r = 1; r < nr; r++) {
			if (rows[r].position < 0 && rows[r - 1].position >= 0)
				continue;       /* the first time row */
			assert_true(rows[r].offset > rows[r - 1].offset);
			if (rows[r].position >= 0)
				assert_true(rows[r].position > rows[r - 1].position);
			else
				assert_true(rows[r].timestamp > rows[r - 1].timestamp);
		}
		free(rows);
	}
	mk_index_row *rows;
	size_t nr;
	assert_int_equal(mk_log_index_rows(f->log, 12345, &rows, &nr),
			 MK_INVALID_REQUEST);
	free(bi);
}

static void a_held_error_waits_for_the_next_line_or_a_mkdir(void **state)
{
	(void)state;
	mk_errlog log;
	mk_errlog_init(&log);
	mk_strbuf out = MK_STRBUF_INIT;
	/* Dropped by a mkdir of the same path: never logged. */
	mk_errlog_hold(&log, 1, "/topics/a", MK_UNKNOWN_TOPIC_OR_PARTITION, "no topic a");
	mk_errlog_drop_held(&log, "/topics/b");
	mk_errlog_drop_held(&log, "/topics/a");
	mk_errlog_format(&log, &out);
	assert_string_equal(out.buf ? out.buf : "", "");
	/* Logged before the next error, with its own time. */
	mk_errlog_hold(&log, 2, "/topics/c", MK_UNKNOWN_TOPIC_OR_PARTITION, "no topic c");
	mk_errlog_add(&log, 3, "/ctl", MK_INVALID_REQUEST, "bad");
	mk_strbuf_reset(&out);
	mk_errlog_format(&log, &out);
	assert_string_equal(out.buf, "2 /topics/c UNKNOWN_TOPIC_OR_PARTITION no topic c\n"
			    "3 /ctl INVALID_REQUEST bad\n");
	/* Or when /errors is read. */
	mk_errlog_hold(&log, 4, "/topics/d", MK_UNKNOWN_TOPIC_OR_PARTITION, "no topic d");
	mk_strbuf_reset(&out);
	mk_errlog_format(&log, &out);
	assert_non_null(strstr(out.buf, "4 /topics/d UNKNOWN_TOPIC_OR_PARTITION no topic d\n"));
	mk_errlog_drop_held(&log, "/topics/d");   /* too late: already logged */
	mk_strbuf_reset(&out);
	mk_errlog_format(&log, &out);
	assert_non_null(strstr(out.buf, "/topics/d"));
	/* A second hold logs the first. */
	mk_errlog_hold(&log, 5, "/topics/e", MK_UNKNOWN_TOPIC_OR_PARTITION, "e");
	mk_errlog_hold(&log, 6, "/topics/f", MK_UNKNOWN_TOPIC_OR_PARTITION, "f");
	mk_errlog_drop_held(&log, "/topics/f");
	mk_strbuf_reset(&out);
	mk_errlog_format(&log, &out);
	assert_non_null(strstr(out.buf, "/topics/e"));
	assert_null(strstr(out.buf, "/topics/f"));
	mk_strbuf_release(&out);
	mk_errlog_destroy(&log);
}

/* A replica seen on its own: the follower's log and HW view move only with
 * its fetches, and looking changes nothing. */
static void a_replica_view_changes_nothing(void **state)
{
	(void)state;
	char dir[64];
	strcpy(dir, "/tmp/mk-test-views-c-XXXXXX");
	assert_non_null(mkdtemp(dir));
	mk_config cfg;
	mk_config_defaults(&cfg);
	cfg.nbrokers = 2;
	cfg.broker_ids[1] = 2;
	cfg.manual_clock = 1;
	mk_cluster *c;
	assert_int_equal(mk_cluster_open(dir, &cfg, &c, NULL), MK_OK);
	assert_int_equal(mk_cluster_create_topic(c, "t", 1, 2, NULL, 0, NULL), MK_OK);
	mk_topic *t = mk_cluster_topic(c, "t");
	mk_partition *p = mk_topic_partition(t, 0);
	static const mk_batch_meta meta = {
		.flags = 0, .base_offset = 0, .leader_epoch = 0, .producer_id = -1,
		.producer_epoch = -1, .base_sequence = -1,
	};
	for (int i = 0; i < 3; i++) {
		mk_batch_builder b;
		mk_builder_init(&b, &meta);
		mk_builder_add(&b, 0, MK_BYTES_NULL, mk_bytes_of("x", 1), NULL, 0);
		mk_builder_finish(&b);
		mk_produce_args a = { .acks = 1, .seq = -1, .count = 1 };
		mk_produce_result res;
		assert_int_equal(mk_partition_produce(p, (uint8_t *)b.frame.buf, b.frame.len,
						      &a, &res, NULL), MK_OK);
		mk_builder_release(&b);
	}
	mk_replica_view lv, fv;
	assert_int_equal(mk_partition_replica_view(p, -1, &lv, NULL), MK_OK);
	assert_int_equal(lv.broker, 1);
	assert_true(lv.leader);
	assert_int_equal(lv.leo, 3);
	assert_int_equal(mk_partition_replica_view(p, 2, &fv, NULL), MK_OK);
	assert_false(fv.leader);
	assert_int_equal(fv.leo, 0);
	assert_int_equal(fv.hw_view, 0);
	assert_int_equal(fv.latest_epoch, -1);
	/* Looking at every view of broker 2 fetches nothing. */
	mk_strbuf out = MK_STRBUF_INIT;
	int64_t end;
	assert_int_equal(mk_partition_replica_fetch(p, 2, 0, false, 1 << 20, &out, &end, NULL), MK_OK);
	assert_int_equal(out.len, 0);
	assert_int_equal(end, 0);
	mk_batch_info *bi;
	size_t n;
	assert_int_equal(mk_partition_replica_batches(p, 2, 0, 10, &bi, &n, NULL), MK_OK);
	assert_int_equal(n, 0);
	free(bi);
	assert_int_equal(mk_partition_replica_view(p, 2, &fv, NULL), MK_OK);
	assert_int_equal(fv.leo, 0);
	/* One fetch: the records, and the HW as it was before the fetch. */
	assert_int_equal(mk_partition_follower_fetch(p, 2), MK_OK);
	assert_int_equal(mk_partition_replica_view(p, 2, &fv, NULL), MK_OK);
	assert_int_equal(fv.leo, 3);
	assert_int_equal(fv.hw_view, 0);
	assert_int_equal(fv.latest_epoch, 0);
	assert_int_equal(fv.agreed_end, 3);
	assert_int_equal(mk_partition_replica_fetch(p, 2, 0, true, 1 << 20, &out, &end, NULL), MK_OK);
	assert_int_equal(end, 0);     /* committed: up to the HW it knows */
	assert_int_equal(mk_partition_replica_fetch(p, 2, 0, false, 1 << 20, &out, &end, NULL), MK_OK);
	assert_int_equal(end, 3);
	assert_true(out.len > 0);
	assert_int_equal(mk_partition_follower_fetch(p, 2), MK_OK);
	assert_int_equal(mk_partition_replica_view(p, 2, &fv, NULL), MK_OK);
	assert_int_equal(fv.hw_view, 3);
	mk_epoch_entry *e;
	assert_int_equal(mk_partition_replica_epochs(p, 2, &e, &n, NULL), MK_OK);
	assert_int_equal(n, 1);
	assert_int_equal(e[0].epoch, 0);
	assert_int_equal(e[0].start_offset, 0);
	free(e);
	mk_segment_info *segs;
	mk_strbuf sdir = MK_STRBUF_INIT;
	assert_int_equal(mk_partition_replica_segments(p, 2, &segs, &n, &sdir, NULL), MK_OK);
	assert_int_equal(n, 1);
	assert_non_null(strstr(sdir.buf, "broker-2/t-0"));
	free(segs);
	mk_strbuf_release(&sdir);
	/* Errors: a broker without a replica, an offline broker. */
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(mk_partition_replica_view(p, 7, &fv, &why), MK_UNKNOWN_TOPIC_OR_PARTITION);
	assert_non_null(strstr(why.buf, "broker 7 hosts no replica of t-0"));
	mk_partition_broker_crash(p, 2, false);
	mk_strbuf_reset(&why);
	assert_int_equal(mk_partition_replica_epochs(p, 2, &e, &n, &why), MK_BROKER_NOT_AVAILABLE);
	assert_non_null(strstr(why.buf, "offline"));
	free(e);
	assert_int_equal(mk_partition_replica_view(p, 2, &fv, NULL), MK_OK);
	assert_false(fv.online);
	assert_int_equal(fv.leo, -1);
	mk_strbuf_release(&why);
	mk_strbuf_release(&out);
	mk_topic_put(t);
	mk_cluster_close(c);
	mk_remove_tree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(batches_say_where_each_frame_lies, setup, teardown),
		cmocka_unit_test_setup_teardown(index_rows_are_absolute_and_point_at_batches, setup, teardown),
		cmocka_unit_test(a_held_error_waits_for_the_next_line_or_a_mkdir),
		cmocka_unit_test(a_replica_view_changes_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
