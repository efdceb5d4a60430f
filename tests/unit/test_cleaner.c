/*
 * Unit tests of the cleaner (core/storage/cleaner.c) and its swap (core/storage/segswap.c):
 * retention by time and size, the prefix rule, compaction of keys, gaps,
 * tombstone expiry, control markers and producer fields kept, a compacted
 * log reopened, a crash (SIGKILL from a failpoint, in a forked child)
 * at every step of the swap, many passes keeping the segment count and
 * the cost bounded, a pass with nothing dirty merging small segments, and
 * the saved state checked against the log.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleaner.h"
#include "codec.h"
#include "failpoint.h"
#include "fileio.h"
#include "log.h"
#include "testlib.h"

typedef struct {
	char root[64];
	char dir[128];
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	strcpy(f->root, "/tmp/mk-test-cleaner-XXXXXX");
	if (!mkdtemp(f->root)) {
		free(f);
		return -1;
	}
	snprintf(f->dir, sizeof(f->dir), "%s/t-0", f->root);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	mk_remove_tree(f->root);
	free(f);
	return 0;
}

static mk_log *open_log(const char *dir, int64_t seg_bytes)
{
	mk_log_config cfg = { seg_bytes, 64, 0, NULL, NULL };
	mk_log *log = NULL;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_log_open(dir, &cfg, &log, &why);
	if (err)
		print_error("open: %s: %s\n", mk_err_name(err), why.buf);
	assert_int_equal(err, MK_OK);
	mk_strbuf_release(&why);
	return log;
}

static mk_clean_params params(int64_t now, int64_t point)
{
	mk_clean_params cp = {
		.now_ms = now, .retention_ms = -1, .retention_bytes = -1,
		.delete_retention_ms = 1000, .segment_bytes = 100000,
		.index_interval_bytes = 64, .cleaning_point = point,
	};
	return cp;
}

/* Append one record (key NULL: keyless; value NULL: tombstone). */
static int64_t put(mk_log *log, const char *key, const char *value, int64_t ts)
{
	mk_batch_meta meta = { 0, 0, 0, -1, -1, -1, 0, false, 0 };
	mk_batch_builder b;
	mk_builder_init(&b, &meta);
	mk_builder_add(&b, ts, key ? mk_bytes_of(key, strlen(key)) : MK_BYTES_NULL,
		       value ? mk_bytes_of(value, strlen(value)) : MK_BYTES_NULL,
		       NULL, 0);
	mk_builder_finish(&b);
	int64_t base = -1;
	assert_int_equal(mk_log_append_leader(log, (uint8_t *)b.frame.buf,
					      b.frame.len, 0, &base), MK_OK);
	mk_builder_release(&b);
	return base;
}

/* A batch of an idempotent producer holding two keyed records. */
static int64_t put_producer(mk_log *log, const char *k1, const char *k2,
			    int32_t seq)
{
	mk_batch_meta meta = { 0, 0, 0, 77, 3, seq, 0, false, 0 };
	mk_batch_builder b;
	mk_builder_init(&b, &meta);
	mk_builder_add(&b, 5, mk_bytes_of(k1, strlen(k1)), mk_bytes_of("p", 1), NULL, 0);
	mk_builder_add(&b, 5, mk_bytes_of(k2, strlen(k2)), mk_bytes_of("q", 1), NULL, 0);
	mk_builder_finish(&b);
	int64_t base = -1;
	assert_int_equal(mk_log_append_leader(log, (uint8_t *)b.frame.buf,
					      b.frame.len, 0, &base), MK_OK);
	mk_builder_release(&b);
	return base;
}

static void put_marker(mk_log *log)
{
	mk_batch_meta meta = { MK_BATCH_COMMIT_MARKER, 0, 0, 9, 0, -1, 0, false, 0 };
	mk_strbuf out = MK_STRBUF_INIT;
	mk_frame_marker(&out, &meta, 7);
	int64_t base;
	assert_int_equal(mk_log_append_leader(log, (uint8_t *)out.buf, out.len, 0,
					      &base), MK_OK);
	mk_strbuf_release(&out);
}

/* The whole readable log as text: "OFFSET KEY VALUE" per record ("-" for
 * null), "OFFSET marker" per control batch, "pid=.. seq=.." per producer
 * batch. */
static void dump(mk_log *log, mk_strbuf *out)
{
	mk_strbuf buf = MK_STRBUF_INIT;
	int64_t from = mk_log_start_offset(log), end = mk_log_end_offset(log);
	mk_strbuf_addf(out, "start %lld end %lld\n", (long long)from, (long long)end);
	while (from < end) {
		mk_strbuf_reset(&buf);
		assert_int_equal(mk_log_read(log, from, end, 1 << 20, &buf), MK_OK);
		if (!buf.len)
			break;
		size_t pos = 0;
		while (pos < buf.len) {
			mk_batch_view b;
			assert_int_equal(mk_frame_decode((const uint8_t *)buf.buf + pos,
							 buf.len - pos, 0, &b, NULL), MK_OK);
			pos += b.frame_len;
			if (mk_batch_next_offset(&b) <= from)
				continue;
			from = mk_batch_next_offset(&b);
			if (mk_batch_is_control(&b)) {
				mk_strbuf_addf(out, "%lld marker\n", (long long)b.meta.base_offset);
				continue;
			}
			if (b.meta.producer_id >= 0)
				mk_strbuf_addf(out, "batch %lld pid=%lld epoch=%d seq=%d last=%lld\n",
					       (long long)b.meta.base_offset,
					       (long long)b.meta.producer_id,
					       b.meta.producer_epoch, b.meta.base_sequence,
					       (long long)mk_batch_last_offset(&b));
			mk_record_iter it;
			mk_record_view rec;
			mk_record_iter_init(&it, &b);
			while (mk_record_next(&it, &rec)) {
				mk_strbuf_addf(out, "%lld ", (long long)rec.offset);
				if (rec.key.len < 0)
					mk_strbuf_addstr(out, "-");
				else
					mk_strbuf_add(out, rec.key.ptr, (size_t)rec.key.len);
				mk_strbuf_addch(out, ' ');
				if (rec.value.len < 0)
					mk_strbuf_addstr(out, "-");
				else
					mk_strbuf_add(out, rec.value.ptr, (size_t)rec.value.len);
				mk_strbuf_addch(out, '\n');
			}
		}
	}
	mk_strbuf_release(&buf);
}

static bool has_line(const mk_strbuf *text, const char *line)
{
	char want[128];
	snprintf(want, sizeof(want), "\n%s\n", line);
	mk_strbuf t = MK_STRBUF_INIT;
	mk_strbuf_addch(&t, '\n');
	mk_strbuf_add(&t, text->buf, text->len);
	bool found = strstr(t.buf, want) != NULL;
	mk_strbuf_release(&t);
	return found;
}

/* ---- retention ----------------------------------------------------------- */

/* Five segments of one record each (segment.bytes small), timestamps ts[]. */
static mk_log *five_segments(const fixture *f, const int64_t *ts)
{
	mk_log *log = open_log(f->dir, 64);
	for (int i = 0; i < 5; i++)
		put(log, NULL, "value-that-fills-a-segment-alone-xxxxxxxxxxxx", ts[i]);
	/* One more record rolls the fifth segment closed. */
	put(log, NULL, "tail", ts[4]);
	assert_int_equal(mk_log_segment_count(log), 6);
	return log;
}

static void retention_by_time(void **state)
{
	fixture *f = *state;
	const int64_t ts[5] = { 100, 200, 300, 400, 500 };
	mk_log *log = five_segments(f, ts);
	mk_clean_params cp = params(1000, INT64_MAX);
	cp.retention_ms = 750;     /* older than 250 goes: 100 and 200 */
	size_t deleted = 0;
	assert_int_equal(mk_cleaner_retain(log, &cp, &deleted), MK_OK);
	assert_int_equal(deleted, 2);
	assert_int_equal(mk_log_start_offset(log), 2);
	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, 1, 6, 1 << 20, &out), MK_OFFSET_OUT_OF_RANGE);
	assert_int_equal(mk_log_read(log, 2, 6, 1 << 20, &out), MK_OK);
	assert_true(out.len > 0);
	/* Time moves on: everything closed goes, never the active segment. */
	cp.now_ms = 100000;
	assert_int_equal(mk_cleaner_retain(log, &cp, &deleted), MK_OK);
	assert_int_equal(deleted, 3);
	assert_int_equal(mk_log_segment_count(log), 1);
	assert_int_equal(mk_log_start_offset(log), 5);
	mk_log_close(log);
	/* The log start is checkpointed. */
	log = open_log(f->dir, 64);
	assert_int_equal(mk_log_start_offset(log), 5);
	assert_int_equal(mk_log_end_offset(log), 6);
	mk_strbuf_release(&out);
	mk_log_close(log);
}

static void retention_prefix_only(void **state)
{
	fixture *f = *state;
	/* The second segment is old, the first is not: nothing goes, the
	 * first segment that must stay ends the deletion. */
	const int64_t ts[5] = { 900, 100, 100, 900, 900 };
	mk_log *log = five_segments(f, ts);
	mk_clean_params cp = params(1000, INT64_MAX);
	cp.retention_ms = 500;
	size_t deleted = 9;
	assert_int_equal(mk_cleaner_retain(log, &cp, &deleted), MK_OK);
	assert_int_equal(deleted, 0);
	assert_int_equal(mk_log_start_offset(log), 0);
	assert_int_equal(mk_log_segment_count(log), 6);
	mk_log_close(log);
}

static void retention_by_size(void **state)
{
	fixture *f = *state;
	const int64_t ts[5] = { 1, 2, 3, 4, 5 };
	mk_log *log = five_segments(f, ts);
	mk_segment_info s0;
	mk_log_segment_info(log, 0, &s0);
	uint64_t total = mk_log_size_bytes(log);
	mk_clean_params cp = params(10, INT64_MAX);
	/* Keep at least total - 2 segments: two can go, not a third. */
	cp.retention_bytes = (int64_t)(total - 2 * s0.size);
	size_t deleted = 0;
	assert_int_equal(mk_cleaner_retain(log, &cp, &deleted), MK_OK);
	assert_int_equal(deleted, 2);
	assert_int_equal(mk_log_start_offset(log), 2);
	assert_true(mk_log_size_bytes(log) >= (uint64_t)cp.retention_bytes);
	/* retention.bytes 0: all closed segments, never the active one. */
	cp.retention_bytes = 0;
	assert_int_equal(mk_cleaner_retain(log, &cp, &deleted), MK_OK);
	assert_int_equal(mk_log_segment_count(log), 1);
	assert_int_equal(mk_log_start_offset(log), 5);
	mk_log_close(log);
}

static void advance_start_and_reset(void **state)
{
	fixture *f = *state;
	const int64_t ts[5] = { 1, 2, 3, 4, 5 };
	mk_log *log = five_segments(f, ts);
	/* DeleteRecords in the middle of a segment: that segment stays. */
	assert_int_equal(mk_log_advance_start(log, 3), MK_OK);
	assert_int_equal(mk_log_start_offset(log), 3);
	assert_int_equal(mk_log_segment_count(log), 3);
	assert_int_equal(mk_log_advance_start(log, 7), MK_OFFSET_OUT_OF_RANGE);
	/* A follower below its leader's start restarts there, empty. */
	assert_int_equal(mk_log_reset_to(log, 40), MK_OK);
	assert_int_equal(mk_log_start_offset(log), 40);
	assert_int_equal(mk_log_end_offset(log), 40);
	assert_int_equal(mk_log_segment_count(log), 1);
	mk_log_close(log);
	log = open_log(f->dir, 64);
	assert_int_equal(mk_log_start_offset(log), 40);
	assert_int_equal(mk_log_end_offset(log), 40);
	put(log, NULL, "x", 1);
	assert_int_equal(mk_log_end_offset(log), 41);
	mk_log_close(log);
}

/* ---- compaction ---------------------------------------------------------- */

/*
 * The article's example: keys updated and deleted. Offsets:
 *  0 a=1  1 b=1  2 a=2  3 c=1  4 b=-(tombstone)  5 (keyless) k  6 a=3
 *  7 marker  8..9 producer batch (d, e)  10 d=2  11 c=2  then a tail.
 */
static mk_log *article_log(const char *dir)
{
	mk_log *log = open_log(dir, 140);
	put(log, "a", "1", 1);
	put(log, "b", "1", 2);
	put(log, "a", "2", 3);
	put(log, "c", "1", 4);
	put(log, "b", NULL, 5);
	put(log, NULL, "k", 6);
	put(log, "a", "3", 7);
	put_marker(log);
	put_producer(log, "d", "e", 0);
	put(log, "d", "2", 8);
	put(log, "c", "2", 9);
	put(log, "z", "tail", 10);
	put(log, "z", "tail2", 11);
	return log;
}

/*
 * Every segment's index (the cleaned ones written by the cleaner) serves
 * both lookups: each entry is a batch start carrying the largest
 * timestamp of its segment's batches up to it, and the time lookups agree
 * with a scan of every batch.
 */
static void check_index_times(mk_log *log)
{
	mk_batch_info *bi;
	size_t n;
	assert_int_equal(mk_log_batches(log, mk_log_start_offset(log), 100000,
					&bi, &n), MK_OK);
	for (size_t s = 0; s < mk_log_segment_count(log); s++) {
		mk_segment_info si;
		mk_log_segment_info(log, s, &si);
		size_t nr;
		free(tl_check_index_rows(log, si.base_offset, bi, n, &nr));
	}
	/* The first offset whose batch reaches each time, by brute force
	 * over the batches (every record here is alone in its batch or
	 * shares its batch's timestamp). */
	for (int64_t t = 0; t <= 12; t++) {
		int64_t want = mk_log_end_offset(log);
		for (size_t i = 0; i < n; i++)
			if (bi[i].max_timestamp >= t) {
				want = bi[i].base_offset;
				break;
			}
		int64_t at = -1;
		assert_int_equal(mk_log_offset_for_time(log, t, &at), MK_OK);
		if (at != want)
			fail_msg("time %lld: offset %lld, want %lld", (long long)t,
				 (long long)at, (long long)want);
	}
	free(bi);
}

static void compaction_keeps_latest_per_key(void **state)
{
	fixture *f = *state;
	mk_log *log = article_log(f->dir);
	assert_true(mk_log_segment_count(log) > 3);
	mk_strbuf before = MK_STRBUF_INIT, after = MK_STRBUF_INIT, why = MK_STRBUF_INIT;
	dump(log, &before);
	assert_true(has_line(&before, "0 a 1"));
	mk_clean_stats st;
	int64_t point = mk_log_end_offset(log);
	mk_clean_params cp = params(100, point);
	assert_int_equal(mk_cleaner_compact(log, &cp, &st, &why), MK_OK);
	dump(log, &after);
	/* Superseded records are gone, their offsets are gaps. */
	assert_false(has_line(&after, "0 a 1"));
	assert_false(has_line(&after, "1 b 1"));
	assert_false(has_line(&after, "2 a 2"));
	assert_false(has_line(&after, "3 c 1"));
	assert_false(has_line(&after, "8 d p"));
	/* The latest of each key stays, at its own offset. */
	assert_true(has_line(&after, "6 a 3"));
	assert_true(has_line(&after, "9 e q"));
	assert_true(has_line(&after, "10 d 2"));
	/* The tombstone stays (not yet delete.retention.ms since cleaned);
	 * keyless records and markers stay. */
	assert_true(has_line(&after, "4 b -"));
	assert_true(has_line(&after, "5 - k"));
	assert_true(has_line(&after, "7 marker"));
	/* The producer batch keeps its id, epoch, sequence and range. */
	assert_true(has_line(&after, "batch 8 pid=77 epoch=3 seq=0 last=9"));
	assert_true(st.records_removed >= 5);
	assert_true(st.bytes_written < st.bytes_read);
	assert_int_equal(mk_log_start_offset(log), 0);
	assert_int_equal(mk_log_end_offset(log), point);
	/* The cleaned segments' time indexes: the first record at or after
	 * a time skips the removed ones. */
	int64_t at = -1;
	assert_int_equal(mk_log_offset_for_time(log, 3, &at), MK_OK);
	assert_int_equal(at, 4);
	assert_int_equal(mk_log_offset_for_time(log, 6, &at), MK_OK);
	assert_int_equal(at, 5);
	int64_t maxts = 0;
	assert_int_equal(mk_log_segment_max_timestamp(log, 0, &maxts), MK_OK);
	assert_true(maxts >= 7);
	check_index_times(log);
	/* Reads from inside a gap start at the next record. */
	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, 1, point, 1 << 20, &out), MK_OK);
	assert_true(out.len > 0);
	/* The cleaner's checkpoint and dirty ratio. */
	mk_cleaner_info info;
	mk_cleaner_info_get(log, point, &info);
	assert_true(info.cleaned_to > 0);
	assert_int_equal(info.dirty_bytes, 0);
	assert_true(info.cleanable_bytes > 0);
	/* A second run with nothing dirty does nothing; appends go on. */
	assert_int_equal(mk_cleaner_compact(log, &cp, &st, &why), MK_OK);
	assert_int_equal(st.segments_in, 0);
	put(log, "q", "1", 20);
	/* Reopened, the compacted log reads the same. */
	mk_strbuf_reset(&after);
	dump(log, &after);
	mk_log_close(log);
	log = open_log(f->dir, 140);
	mk_strbuf again = MK_STRBUF_INIT;
	dump(log, &again);
	assert_string_equal(after.buf, again.buf);
	/* The cleaned segments' index files, read back from disk. */
	check_index_times(log);
	assert_int_equal(mk_log_offset_for_time(log, 3, &at), MK_OK);
	assert_int_equal(at, 4);
	mk_log_close(log);
	mk_strbuf_release(&before);
	mk_strbuf_release(&after);
	mk_strbuf_release(&again);
	mk_strbuf_release(&out);
	mk_strbuf_release(&why);
}

static void tombstone_expires(void **state)
{
	fixture *f = *state;
	mk_log *log = article_log(f->dir);
	mk_strbuf why = MK_STRBUF_INIT, text = MK_STRBUF_INIT;
	int64_t point = mk_log_end_offset(log);
	mk_clean_params cp = params(100, point);
	cp.delete_retention_ms = 1000;
	assert_int_equal(mk_cleaner_compact(log, &cp, NULL, &why), MK_OK);
	dump(log, &text);
	assert_true(has_line(&text, "4 b -"));
	/* Not yet: 999 ms after the cleaning. */
	cp.now_ms = 1099;
	mk_clean_stats st;
	assert_int_equal(mk_cleaner_compact(log, &cp, &st, &why), MK_OK);
	mk_strbuf_reset(&text);
	dump(log, &text);
	assert_true(has_line(&text, "4 b -"));
	/* delete.retention.ms after the cleaning: the tombstone goes. */
	cp.now_ms = 1100;
	assert_int_equal(mk_cleaner_compact(log, &cp, &st, &why), MK_OK);
	assert_int_equal(st.tombstones_removed, 1);
	mk_strbuf_reset(&text);
	dump(log, &text);
	assert_false(has_line(&text, "4 b -"));
	assert_true(has_line(&text, "6 a 3"));
	mk_log_close(log);
	mk_strbuf_release(&why);
	mk_strbuf_release(&text);
}

static void cleaning_point_bounds(void **state)
{
	fixture *f = *state;
	mk_log *log = article_log(f->dir);
	mk_strbuf why = MK_STRBUF_INIT, text = MK_STRBUF_INIT;
	/* A point at 3: only segments wholly below it are cleaned, so a=1
	 * (superseded at 2, below the point) may go but nothing at or past 3
	 * changes. */
	mk_clean_params cp = params(100, 3);
	assert_int_equal(mk_cleaner_compact(log, &cp, NULL, &why), MK_OK);
	dump(log, &text);
	assert_true(has_line(&text, "3 c 1"));
	assert_true(has_line(&text, "1 b 1"));
	assert_true(has_line(&text, "6 a 3"));
	/* The active segment is never touched, whatever the point. */
	int64_t end = mk_log_end_offset(log);
	cp.cleaning_point = INT64_MAX;
	assert_int_equal(mk_cleaner_compact(log, &cp, NULL, &why), MK_OK);
	mk_strbuf_reset(&text);
	dump(log, &text);
	char line[64];
	snprintf(line, sizeof(line), "%lld z tail2", (long long)(end - 1));
	assert_true(has_line(&text, line));
	mk_log_close(log);
	mk_strbuf_release(&why);
	mk_strbuf_release(&text);
}

/* A new follower copies a compacted leader: the gaps are accepted (a
 * replica append above the log end) and it reads as the leader. */
static void follower_copies_a_compacted_log(void **state)
{
	fixture *f = *state;
	char fdir[160];
	snprintf(fdir, sizeof(fdir), "%s/follower-0", f->root);
	mk_log *log = article_log(f->dir);
	mk_strbuf why = MK_STRBUF_INIT, buf = MK_STRBUF_INIT;
	mk_clean_params cp = params(100, mk_log_end_offset(log));
	assert_int_equal(mk_cleaner_compact(log, &cp, NULL, &why), MK_OK);
	mk_log *fl = open_log(fdir, 140);
	int64_t end = mk_log_end_offset(log);
	while (mk_log_end_offset(fl) < end) {
		mk_strbuf_reset(&buf);
		assert_int_equal(mk_log_read(log, mk_log_end_offset(fl), end, 1 << 20,
					     &buf), MK_OK);
		assert_true(buf.len > 0);
		size_t pos = 0;
		while (pos < buf.len) {
			mk_batch_view b;
			assert_int_equal(mk_frame_decode((const uint8_t *)buf.buf + pos,
							 buf.len - pos, 0, &b, NULL), MK_OK);
			if (mk_batch_next_offset(&b) > mk_log_end_offset(fl))
				assert_int_equal(mk_log_append_replica(fl,
					(const uint8_t *)buf.buf + pos, b.frame_len), MK_OK);
			pos += b.frame_len;
		}
	}
	mk_strbuf a = MK_STRBUF_INIT, b2 = MK_STRBUF_INIT;
	dump(log, &a);
	dump(fl, &b2);
	assert_string_equal(a.buf, b2.buf);
	mk_log_close(fl);
	mk_log_close(log);
	mk_strbuf_release(&a);
	mk_strbuf_release(&b2);
	mk_strbuf_release(&buf);
	mk_strbuf_release(&why);
}

/* ---- a crash at every step of the swap ----------------------------------- */

static const char *const points[] = {
	"cleaner.swap.writing",
	"cleaner.swap.staged",
	"cleaner.swap.journal",
	"cleaner.swap.moved-one",
	"cleaner.swap.moved",
	"cleaner.swap.deleted-one",
	"cleaner.swap.deleted",
	"cleaner.swap.state",
	"cleaner.swap.done",
};

static void read_dir_text(const char *dir, mk_strbuf *out)
{
	mk_log *log = open_log(dir, 140);
	dump(log, out);
	mk_log_close(log);
}

static void crash_at_every_swap_step(void **state)
{
	fixture *f = *state;
	char ref[160], path[200];
	/* The log before and after a clean compaction. */
	snprintf(ref, sizeof(ref), "%s/ref-0", f->root);
	mk_log *log = article_log(ref);
	mk_strbuf before = MK_STRBUF_INIT, after = MK_STRBUF_INIT, why = MK_STRBUF_INIT;
	dump(log, &before);
	mk_clean_params cp = params(100, mk_log_end_offset(log));
	assert_int_equal(mk_cleaner_compact(log, &cp, NULL, &why), MK_OK);
	dump(log, &after);
	mk_log_close(log);
	assert_string_not_equal(before.buf, after.buf);

	for (size_t i = 0; i < sizeof(points) / sizeof(points[0]); i++) {
		char dir[160];
		snprintf(dir, sizeof(dir), "%s/crash-%zu", f->root, i);
		log = article_log(dir);
		mk_log_close(log);
		fflush(NULL);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			mk_failpoint_arm(points[i], 1);
			mk_log *l = open_log(dir, 140);
			mk_strbuf w = MK_STRBUF_INIT;
			mk_cleaner_compact(l, &cp, NULL, &w);
			_exit(3);   /* the point was never reached */
		}
		int status = 0;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
			print_error("point %s: child did not die at it\n", points[i]);
		assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		mk_strbuf got = MK_STRBUF_INIT;
		read_dir_text(dir, &got);
		/* Before the journal: exactly as before; from it on: after. */
		const char *want = i < 2 ? before.buf : after.buf;
		if (strcmp(got.buf, want))
			print_error("point %s:\n%s\nwanted\n%s\n", points[i], got.buf, want);
		assert_string_equal(got.buf, want);
		/* Recovery left no journal and nothing staged. */
		snprintf(path, sizeof(path), "%s/swap-journal", dir);
		assert_int_not_equal(access(path, F_OK), 0);
		/* And the log goes on: append, compact again, reopen. */
		log = open_log(dir, 140);
		put(log, "a", "4", 50);
		assert_int_equal(mk_cleaner_compact(log, &cp, NULL, &why), MK_OK);
		mk_log_close(log);
		mk_strbuf_reset(&got);
		read_dir_text(dir, &got);
		assert_true(has_line(&got, "6 a 3") || strstr(got.buf, " a 4\n"));
		mk_strbuf_release(&got);
	}
	mk_strbuf_release(&before);
	mk_strbuf_release(&after);
	mk_strbuf_release(&why);
}

/* ---- many passes: the segment count and the cost stay bounded ------------ */

/* Closed segments of log: how many, how many empty, their bytes, and
 * whether two neighbours would fit in one segment of seg_bytes. */
typedef struct {
	size_t closed, empty;
	uint64_t bytes;
	bool mergeable;
} seg_census;

static seg_census census(mk_log *log, int64_t seg_bytes)
{
	seg_census c = { 0, 0, 0, false };
	size_t n = mk_log_segment_count(log);
	uint64_t prev = UINT64_MAX;
	for (size_t i = 0; i + 1 < n; i++) {
		mk_segment_info si;
		mk_log_segment_info(log, i, &si);
		c.closed++;
		c.empty += si.size == 0;
		c.bytes += si.size;
		if (prev != UINT64_MAX && prev + si.size <= (uint64_t)seg_bytes)
			c.mergeable = true;
		prev = si.size;
	}
	return c;
}

/* Ten records over four keys, each about half a segment. */
static void put_round(mk_log *log, int round)
{
	char k[8], v[48];
	for (int i = 0; i < 10; i++) {
		snprintf(k, sizeof(k), "k%d", i % 4);
		snprintf(v, sizeof(v), "value-%03d-%d-xxxxxxxxxxxxxxxxxxxx", round, i);
		put(log, k, v, round);
	}
}

/*
 * 50 passes over a log with few keys and small segments, appends between
 * them: after each pass the closed segments hold about the live bytes, in
 * about live / segment.bytes + 1 segments, none empty but maybe the first,
 * no two neighbours fitting in one; each pass reads about the same bytes
 * (the dirty ones and the live ones, not the history). Every key's latest
 * value survives.
 */
static void many_passes_stay_bounded(void **state)
{
	fixture *f = *state;
	const int64_t sb = 200;
	mk_log *log = open_log(f->dir, sb);
	mk_strbuf why = MK_STRBUF_INIT, text = MK_STRBUF_INIT;
	uint64_t first_read = 0;
	for (int round = 0; round < 50; round++) {
		put_round(log, round);
		mk_clean_params cp = params(100 + round, mk_log_end_offset(log));
		cp.segment_bytes = sb;
		mk_clean_stats st;
		assert_int_equal(mk_cleaner_compact(log, &cp, &st, &why), MK_OK);
		seg_census c = census(log, sb);
		if (c.closed > c.bytes / sb + 2 || c.empty > 1 || c.mergeable)
			print_error("round %d: %zu closed segments (%zu empty) for %llu bytes\n",
				    round, c.closed, c.empty, (unsigned long long)c.bytes);
		assert_true(c.closed <= c.bytes / sb + 2);
		assert_true(c.empty <= 1);
		assert_false(c.mergeable);
		if (round == 10)
			first_read = st.bytes_read;
		if (round > 10)
			assert_true(st.bytes_read <= first_read * 3 / 2);
	}
	dump(log, &text);
	for (int i = 6; i < 10; i++) {
		char line[64];
		snprintf(line, sizeof(line), " k%d value-049-%d-xxxxxxxxxxxxxxxxxxxx\n",
			 i % 4, i);
		assert_non_null(strstr(text.buf, line));
	}
	mk_log_close(log);
	mk_strbuf_release(&why);
	mk_strbuf_release(&text);
}

/*
 * A pass with no dirty data still merges: segments cleaned small (a
 * smaller segment.bytes then) are packed into full ones once segment.bytes
 * allows it, with nothing appended; the next run then has nothing to do.
 */
static void clean_pass_merges_small_segments(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f->dir, 100);
	mk_strbuf why = MK_STRBUF_INIT, before = MK_STRBUF_INIT, after = MK_STRBUF_INIT;
	char k[8];
	for (int i = 0; i < 20; i++) {
		snprintf(k, sizeof(k), "k%02d", i);
		put(log, k, "v", i);
	}
	put(log, "tail", "t", 99);
	mk_clean_params cp = params(100, mk_log_end_offset(log));
	cp.segment_bytes = 100;
	assert_int_equal(mk_cleaner_compact(log, &cp, NULL, &why), MK_OK);
	seg_census c = census(log, 1000);
	assert_true(c.closed >= 10);
	assert_true(c.mergeable);
	dump(log, &before);
	/* Nothing dirty, a larger segment.bytes: merged into full ones. */
	cp.segment_bytes = 1000;
	mk_clean_stats st;
	assert_int_equal(mk_cleaner_compact(log, &cp, &st, &why), MK_OK);
	c = census(log, 1000);
	assert_true(c.closed <= c.bytes / 1000 + 2);
	assert_false(c.mergeable);
	dump(log, &after);
	assert_string_equal(before.buf, after.buf);
	assert_int_equal(st.records_removed, 0);
	/* Settled: the next run plans nothing. */
	mk_clean_plan *p = NULL;
	assert_int_equal(mk_cleaner_plan(log, &cp, &p, &why), MK_OK);
	assert_null(p);
	mk_log_close(log);
	mk_strbuf_release(&why);
	mk_strbuf_release(&before);
	mk_strbuf_release(&after);
}

/* ---- the saved state checked against the log ------------------------------ */

static void write_state(const char *dir, const char *text)
{
	char path[200];
	snprintf(path, sizeof(path), "%s/cleaner-checkpoint", dir);
	assert_int_equal(mk_file_replace(path, text, strlen(text)), MK_OK);
}

/* mk_cleaner_plan on log with state text: its error and message. */
static mk_err plan_with(mk_log *log, const fixture *f, const char *text,
			mk_strbuf *why)
{
	write_state(f->dir, text);
	mk_strbuf_reset(why);
	mk_clean_plan *p = NULL;
	mk_clean_params cp = params(100, mk_log_end_offset(log));
	mk_err err = mk_cleaner_plan(log, &cp, &p, why);
	mk_cleaner_plan_free(p);
	return err;
}

/*
 * Damage is refused, naming the file and the value: cleaned_to past the
 * log end, cleaned_to inside the log off a segment's base, a segment line
 * naming no segment. What retention leaves (lines below the first
 * segment) is fine, and a truncation below cleaned_to lowers the state
 * first (mk_cleaner_truncate), so that what is appended after it is
 * cleaned.
 */
static void state_checked_against_log(void **state)
{
	fixture *f = *state;
	mk_log *log = article_log(f->dir);
	mk_strbuf why = MK_STRBUF_INIT, text = MK_STRBUF_INIT;
	mk_clean_params cp = params(100, mk_log_end_offset(log));
	assert_int_equal(mk_cleaner_compact(log, &cp, NULL, &why), MK_OK);
	char path[200];
	snprintf(path, sizeof(path), "%s/cleaner-checkpoint", f->dir);
	bool missing = true;
	mk_strbuf good = MK_STRBUF_INIT;
	assert_int_equal(mk_file_read(path, &good, &missing), MK_OK);
	int64_t end = mk_log_end_offset(log);

	assert_int_equal(plan_with(log, f, "version 1\ncleaned_to 500\n", &why),
			 MK_KAFKA_STORAGE_ERROR);
	assert_non_null(strstr(why.buf, path));
	assert_non_null(strstr(why.buf, "cleaned_to 500 is past the log end"));
	assert_int_equal(plan_with(log, f, "version 1\ncleaned_to 1\n", &why),
			 MK_KAFKA_STORAGE_ERROR);
	assert_non_null(strstr(why.buf, "cleaned_to 1 is not the base of a segment"));
	mk_strbuf bad = MK_STRBUF_INIT;
	mk_strbuf_add(&bad, good.buf, good.len);
	mk_strbuf_addstr(&bad, "segment 9 100 0\n");
	assert_int_equal(plan_with(log, f, bad.buf, &why), MK_KAFKA_STORAGE_ERROR);
	assert_non_null(strstr(why.buf, "segment 9 names no segment of the log"));
	/* The refusals changed nothing: the log reads as before. */
	mk_strbuf_reset(&text);
	dump(log, &text);
	assert_true(has_line(&text, "6 a 3"));
	assert_int_equal(mk_log_end_offset(log), end);

	/* A truncation below cleaned_to, then appends of a key cleaned. */
	write_state(f->dir, good.buf);
	assert_int_equal(mk_cleaner_truncate(log, 10, &why), MK_OK);
	assert_int_equal(mk_log_truncate_to(log, 10), MK_OK);
	put(log, "c", "3", 20);
	put(log, "c", "4", 21);
	put(log, "z", "tail3", 22);
	cp = params(100, mk_log_end_offset(log));
	assert_int_equal(mk_cleaner_compact(log, &cp, NULL, &why), MK_OK);
	mk_strbuf_reset(&text);
	dump(log, &text);
	assert_false(has_line(&text, "10 c 3"));
	assert_true(has_line(&text, "11 c 4"));
	assert_true(has_line(&text, "6 a 3"));
	/* Lines below the first segment (retention deleted it): fine. */
	mk_strbuf keep = MK_STRBUF_INIT;
	assert_int_equal(mk_file_read(path, &keep, &missing), MK_OK);
	mk_segment_info s1;
	mk_log_segment_info(log, 1, &s1);
	assert_int_equal(mk_log_advance_start(log, s1.base_offset), MK_OK);
	assert_int_equal(plan_with(log, f, keep.buf, &why), MK_OK);

	mk_strbuf_release(&keep);
	mk_log_close(log);
	mk_strbuf_release(&why);
	mk_strbuf_release(&text);
	mk_strbuf_release(&good);
	mk_strbuf_release(&bad);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(retention_by_time, setup, teardown),
		cmocka_unit_test_setup_teardown(retention_prefix_only, setup, teardown),
		cmocka_unit_test_setup_teardown(retention_by_size, setup, teardown),
		cmocka_unit_test_setup_teardown(advance_start_and_reset, setup, teardown),
		cmocka_unit_test_setup_teardown(compaction_keeps_latest_per_key, setup, teardown),
		cmocka_unit_test_setup_teardown(tombstone_expires, setup, teardown),
		cmocka_unit_test_setup_teardown(cleaning_point_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(follower_copies_a_compacted_log, setup, teardown),
		cmocka_unit_test_setup_teardown(crash_at_every_swap_step, setup, teardown),
		cmocka_unit_test_setup_teardown(many_passes_stay_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(clean_pass_merges_small_segments, setup, teardown),
		cmocka_unit_test_setup_teardown(state_checked_against_log, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
