/*
 * Unit tests of the partition log (core/storage/log.c) and its internal pieces
 * (index.c, segment.c), run in a temporary directory.
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
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codec.h"
#include "failpoint.h"
#include "fileio.h"
#include "index.h"
#include "log.h"
#include "logdir.h"
#include "segment.h"
#include "testlib.h"
#include "timeindex.h"

/* ---- fixture ------------------------------------------------------------- */

typedef tl_logdir fixture;

static int setup(void **state)
{
	return tl_logdir_setup(state, "log");
}

static int teardown(void **state)
{
	return tl_logdir_teardown(state);
}

static mk_log *open_log(const fixture *f, int64_t seg_bytes, int64_t interval,
			int64_t flush)
{
	mk_log_config cfg = { seg_bytes, interval, flush, NULL, NULL };
	mk_log *log = NULL;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_log_open(f->dir, &cfg, &log, &why);
	if (err)
		print_error("open: %s: %s\n", mk_err_name(err), why.buf);
	assert_int_equal(err, MK_OK);
	assert_non_null(log);
	mk_strbuf_release(&why);
	return log;
}

/* Open is refused as damage, its reason naming what; no log is made. */
static void open_refused(const fixture *f, int64_t seg_bytes,
			 int64_t interval, const char *what)
{
	mk_log_config cfg = { seg_bytes, interval, 0, NULL, NULL };
	mk_log *log = NULL;
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(mk_log_open(f->dir, &cfg, &log, &why),
			 MK_KAFKA_STORAGE_ERROR);
	assert_null(log);
	if (!strstr(why.buf, what))
		print_error("refused for: %s\n", why.buf);
	assert_non_null(strstr(why.buf, what));
	mk_strbuf_release(&why);
}

/* The operator's way to keep what the segments hold after damage below
 * the recovery point: the broker's recovery-point-offset-checkpoint goes
 * (and the log's checkpoint, whose segment list says how far the log was
 * durable too), and recovery starts over from the first segment. */
static void drop_recovery_point(const fixture *f)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", f->root,
		 mk_logdir_names[MK_LOGDIR_RECOVERY]);
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/checkpoint", f->dir);
	assert_int_equal(unlink(path), 0);
}

/* The path of one of the broker directory's files (logdir.h). */
static void logdir_file(const fixture *f, int file, char *out, size_t n)
{
	snprintf(out, n, "%s/%s", f->root, mk_logdir_names[file]);
}

static void seg_path(const fixture *f, int64_t base, const char *ext,
		     char *out, size_t n)
{
	snprintf(out, n, "%s/%020lld.%s", f->dir, (long long)base, ext);
}

static off_t file_size(const char *path)
{
	struct stat st;
	if (stat(path, &st))
		return -1;
	return st.st_size;
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* ---- building batches ---------------------------------------------------- */

/*
 * A batch of n records whose values are "value-OFFSET" (padded with '.' to
 * pad bytes), for records at offsets base..base+n-1, timestamps ts[i] (or
 * 1000 + offset when ts is NULL).
 */
static void build(mk_strbuf *out, int64_t base, int32_t epoch, int n,
		  const int64_t *ts, size_t pad)
{
	char (*v)[512] = calloc((size_t)n, sizeof(*v));
	const char **vals = calloc((size_t)n, sizeof(*vals));
	assert_true(v && vals);
	for (int i = 0; i < n; i++) {
		int len = snprintf(v[i], sizeof(v[i]), "value-%lld",
				   (long long)(base + i));
		while ((size_t)len < pad && (size_t)len < sizeof(v[i]) - 1)
			v[i][len++] = '.';
		v[i][len] = '\0';
		vals[i] = v[i];
	}
	mk_strbuf_reset(out);
	tl_frame(out, base, epoch, vals, n, ts);
	free(vals);
	free(v);
}

/* Leader append of n records; returns the base offset. */
static int64_t append_n(mk_log *log, int32_t epoch, int n, const int64_t *ts,
			size_t pad)
{
	mk_strbuf fr = MK_STRBUF_INIT;
	int64_t leo = mk_log_end_offset(log);
	/* Values name the offsets the records will get; the frame is then
	 * moved to a wrong offset and epoch on purpose: the leader assigns. */
	build(&fr, leo, 77, n, ts, pad);
	mk_frame_assign((uint8_t *)fr.buf, fr.len, 12345, 77);
	int64_t base = -1;
	mk_err err = mk_log_append_leader(log, (uint8_t *)fr.buf, fr.len,
					  epoch, &base);
	assert_int_equal(err, MK_OK);
	assert_int_equal(base, leo);
	assert_int_equal(mk_log_end_offset(log), leo + n);
	mk_strbuf_release(&fr);
	return base;
}

/*
 * Check that buf holds whole frames covering exactly the offsets
 * [first, last], every record's value naming its offset. Returns the frame
 * count.
 */
static int check_frames(const mk_strbuf *buf, int64_t first, int64_t last)
{
	size_t pos = 0;
	int64_t expect = first;
	int frames = 0;
	while (pos < buf->len) {
		mk_batch_view b;
		const char *why = NULL;
		mk_err err = mk_frame_decode((const uint8_t *)buf->buf + pos,
					     buf->len - pos, 0, &b, &why);
		if (err)
			print_error("frame at %zu: %s\n", pos, why);
		assert_int_equal(err, MK_OK);
		mk_record_iter it;
		mk_record_view rec;
		mk_record_iter_init(&it, &b);
		while (mk_record_next(&it, &rec)) {
			assert_int_equal(rec.offset, expect);
			char v[64];
			int len = snprintf(v, sizeof(v), "value-%lld",
					   (long long)rec.offset);
			assert_true(rec.value.len >= len);
			assert_memory_equal(rec.value.ptr, v, (size_t)len);
			expect++;
		}
		pos += b.frame_len;
		frames++;
	}
	assert_int_equal(expect, last + 1);
	return frames;
}

static void flip_byte(const char *path, off_t at)
{
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	uint8_t c;
	assert_int_equal(pread(fd, &c, 1, at), 1);
	c ^= 0x5a;
	assert_int_equal(pwrite(fd, &c, 1, at), 1);
	close(fd);
}

static void append_bytes(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static void read_file_bytes(const char *path, mk_strbuf *out)
{
	bool missing;
	mk_strbuf_reset(out);
	assert_int_equal(mk_file_read(path, out, &missing), MK_OK);
	assert_false(missing);
}

/* ---- the two indexes on their own ---------------------------------------- */

#define OFF_W MK_OFFSET_INDEX_ENTRY_SIZE
#define TIME_W MK_TIME_INDEX_ENTRY_SIZE

/* Open path as an offset index and load it against a segment of seg_size
 * bytes whose offsets stay below rel_limit; whether it is valid. */
static bool offset_index_loads(mk_offset_index *ix, const char *path,
			       uint64_t seg_size, uint64_t rel_limit)
{
	bool valid = true;
	mk_offset_index_init(ix);
	assert_int_equal(mk_entries_open(&ix->f, path), MK_OK);
	assert_int_equal(mk_entries_load(&ix->f, seg_size, rel_limit, &valid),
			 MK_OK);
	if (!valid)
		assert_int_equal(mk_offset_index_count(ix), 0);
	return valid;
}

static bool time_index_loads(mk_time_index *ix, const char *path,
			     uint64_t seg_size, uint64_t rel_limit)
{
	bool valid = true;
	mk_time_index_init(ix);
	assert_int_equal(mk_entries_open(&ix->f, path), MK_OK);
	assert_int_equal(mk_entries_load(&ix->f, seg_size, rel_limit, &valid),
			 MK_OK);
	if (!valid)
		assert_int_equal(mk_time_index_count(ix), 0);
	return valid;
}

/* The offset index (NNN.index): Kafka's 8-byte entries, the floor
 * lookup, validation at load, truncation by position. */
static void test_offset_index_unit(void **state)
{
	fixture *f = *state;
	assert_int_equal(mk_mkdirs(f->dir), MK_OK);
	char path[256];
	snprintf(path, sizeof(path), "%s/x.index", f->dir);
	mk_offset_index ix;
	mk_offset_index_init(&ix);
	assert_int_equal(mk_entries_open(&ix.f, path), MK_OK);
	mk_offset_entry e;
	assert_false(mk_offset_index_floor(&ix, 5, &e));
	assert_false(mk_offset_index_last(&ix, &e));
	assert_int_equal(mk_offset_index_add(&ix, 0, 0, true), MK_OK);
	assert_int_equal(mk_offset_index_add(&ix, 10, 400, true), MK_OK);
	assert_int_equal(mk_offset_index_add(&ix, 17, 650, true), MK_OK);
	assert_int_equal(mk_offset_index_add(&ix, 25, 900, true), MK_OK);
	/* Appended entries wait in memory until written. */
	assert_int_equal(file_size(path), 0);
	assert_int_equal(mk_offset_index_count(&ix), 4);
	assert_int_equal(mk_entries_write_pending(&ix.f), MK_OK);
	assert_int_equal(file_size(path), 4 * OFF_W);
	/* The last entry with rel <= target. */
	assert_true(mk_offset_index_floor(&ix, 0, &e));
	assert_int_equal(e.pos, 0);
	assert_true(mk_offset_index_floor(&ix, 9, &e));
	assert_int_equal(e.pos, 0);
	assert_true(mk_offset_index_floor(&ix, 10, &e));
	assert_int_equal(e.pos, 400);
	assert_true(mk_offset_index_floor(&ix, 24, &e));
	assert_int_equal(e.rel, 17);
	assert_true(mk_offset_index_floor(&ix, 1000, &e));
	assert_int_equal(e.rel, 25);
	assert_true(mk_offset_index_last(&ix, &e));
	assert_int_equal(e.pos, 900);
	mk_entries_close(&ix.f);
	/* Kafka's layout: u32 relative offset | u32 position, big-endian,
	 * and nothing else in the file. */
	{
		uint8_t raw[4 * OFF_W];
		int fd = open(path, O_RDONLY);
		assert_int_equal(read(fd, raw, sizeof(raw)), sizeof(raw));
		close(fd);
		assert_int_equal(mk_load_be32(raw + 8), 10);
		assert_int_equal(mk_load_be32(raw + 8 + 4), 400);
		assert_int_equal(mk_load_be32(raw + 24), 25);
		assert_int_equal(mk_load_be32(raw + 24 + 4), 900);
	}

	/* Reload: valid against a big enough segment, invalid otherwise. */
	assert_true(offset_index_loads(&ix, path, 1000, UINT64_MAX));
	assert_int_equal(mk_offset_index_count(&ix), 4);
	assert_true(mk_offset_index_floor(&ix, 20, &e));
	assert_int_equal(e.pos, 650);
	bool valid;
	assert_int_equal(mk_entries_load(&ix.f, 900, UINT64_MAX, &valid), MK_OK);
	assert_false(valid);   /* position 900 is not inside 900 bytes */
	assert_int_equal(mk_entries_load(&ix.f, 1000, 20, &valid), MK_OK);
	assert_false(valid);   /* offset 25 is past the next segment */
	assert_int_equal(mk_entries_load(&ix.f, 0, UINT64_MAX, &valid), MK_OK);
	assert_false(valid);   /* entries for an empty segment */
	assert_int_equal(mk_entries_load(&ix.f, 1000, UINT64_MAX, &valid), MK_OK);
	assert_true(valid);
	/* Truncation by position, in the file too. */
	assert_int_equal(mk_offset_index_truncate_pos(&ix, 651), MK_OK);
	assert_int_equal(mk_offset_index_count(&ix), 3);
	assert_int_equal(file_size(path), 3 * OFF_W);
	assert_int_equal(mk_offset_index_truncate_pos(&ix, 1), MK_OK);
	assert_int_equal(mk_offset_index_count(&ix), 1);
	assert_int_equal(file_size(path), OFF_W);
	mk_entries_close(&ix.f);

	/* A length that is not a multiple of 8; an empty file for a segment
	 * with data (a missing index, created by the open). */
	append_bytes(path, "abc", 3);
	assert_false(offset_index_loads(&ix, path, 1000, UINT64_MAX));
	mk_entries_close(&ix.f);
	write_file(path, "", 0);
	assert_false(offset_index_loads(&ix, path, 1000, UINT64_MAX));
	mk_entries_close(&ix.f);
	/* Offsets or positions not increasing; a first entry past byte 0. */
	uint8_t bad[2 * OFF_W];
	memset(bad, 0, sizeof(bad));
	mk_store_be32(bad + 8, 0);    /* offset does not increase */
	mk_store_be32(bad + 12, 100);
	write_file(path, bad, sizeof(bad));
	assert_false(offset_index_loads(&ix, path, 1000, UINT64_MAX));
	mk_entries_close(&ix.f);
	mk_store_be32(bad + 8, 3);
	mk_store_be32(bad + 12, 0);   /* position does not increase */
	write_file(path, bad, sizeof(bad));
	assert_false(offset_index_loads(&ix, path, 1000, UINT64_MAX));
	mk_entries_close(&ix.f);
	mk_store_be32(bad + 12, 100);
	mk_store_be32(bad + 4, 7);    /* the first batch is at byte 0 */
	write_file(path, bad, sizeof(bad));
	assert_false(offset_index_loads(&ix, path, 1000, UINT64_MAX));
	mk_entries_close(&ix.f);
	mk_store_be32(bad + 4, 0);
	write_file(path, bad, sizeof(bad));
	assert_true(offset_index_loads(&ix, path, 1000, UINT64_MAX));
	mk_entries_close(&ix.f);
}

/* The time index (NNN.timeindex): Kafka's 12-byte entries, maybeAppend
 * (only a larger timestamp is added), the lookup (the last entry with a
 * timestamp <= target), validation at load, truncation by offset. */
static void test_time_index_unit(void **state)
{
	fixture *f = *state;
	assert_int_equal(mk_mkdirs(f->dir), MK_OK);
	char path[256];
	snprintf(path, sizeof(path), "%s/x.timeindex", f->dir);
	mk_time_index ix;
	mk_time_index_init(&ix);
	assert_int_equal(mk_entries_open(&ix.f, path), MK_OK);
	mk_time_entry t;
	assert_false(mk_time_index_lookup(&ix, INT64_MAX, &t));
	assert_false(mk_time_index_last(&ix, &t));
	assert_int_equal(mk_time_index_maybe_add(&ix, 100, 0, true), MK_OK);
	assert_int_equal(mk_time_index_maybe_add(&ix, 200, 10, true), MK_OK);
	/* Not above the last timestamp: nothing added (Kafka's maybeAppend). */
	assert_int_equal(mk_time_index_maybe_add(&ix, 200, 17, true), MK_OK);
	assert_int_equal(mk_time_index_maybe_add(&ix, 150, 20, true), MK_OK);
	/* Nor an offset not above the last one (a lying file's doing). */
	assert_int_equal(mk_time_index_maybe_add(&ix, 250, 10, true), MK_OK);
	assert_int_equal(mk_time_index_count(&ix), 2);
	assert_int_equal(mk_time_index_maybe_add(&ix, 300, 25, true), MK_OK);
	assert_int_equal(mk_time_index_count(&ix), 3);
	assert_int_equal(file_size(path), 0);
	assert_int_equal(mk_entries_sync(&ix.f), MK_OK);
	assert_int_equal(file_size(path), 3 * TIME_W);
	/* The last entry with ts <= target. */
	assert_false(mk_time_index_lookup(&ix, 99, &t));
	assert_true(mk_time_index_lookup(&ix, 100, &t));
	assert_int_equal(t.rel, 0);
	assert_true(mk_time_index_lookup(&ix, 299, &t));
	assert_int_equal(t.rel, 10);
	assert_int_equal(t.ts, 200);
	assert_true(mk_time_index_lookup(&ix, 300, &t));
	assert_int_equal(t.rel, 25);
	assert_true(mk_time_index_lookup(&ix, INT64_MAX, &t));
	assert_int_equal(t.rel, 25);
	assert_true(mk_time_index_last(&ix, &t));
	assert_int_equal(t.ts, 300);
	mk_entries_close(&ix.f);
	/* Kafka's layout: i64 timestamp | u32 relative offset, big-endian. */
	{
		uint8_t raw[3 * TIME_W];
		int fd = open(path, O_RDONLY);
		assert_int_equal(read(fd, raw, sizeof(raw)), sizeof(raw));
		close(fd);
		assert_int_equal(mk_load_be64(raw + 12), 200);
		assert_int_equal(mk_load_be32(raw + 12 + 8), 10);
		assert_int_equal(mk_load_be64(raw + 24), 300);
		assert_int_equal(mk_load_be32(raw + 24 + 8), 25);
	}

	assert_true(time_index_loads(&ix, path, 1000, UINT64_MAX));
	assert_int_equal(mk_time_index_count(&ix), 3);
	bool valid;
	assert_int_equal(mk_entries_load(&ix.f, 1000, 25, &valid), MK_OK);
	assert_false(valid);   /* offset 25 is past the next segment */
	assert_int_equal(mk_entries_load(&ix.f, 1000, 26, &valid), MK_OK);
	assert_true(valid);
	/* Truncation by offset: entries whose batch is at or past it go. */
	assert_int_equal(mk_time_index_truncate_rel(&ix, 25), MK_OK);
	assert_int_equal(mk_time_index_count(&ix), 2);
	assert_int_equal(file_size(path), 2 * TIME_W);
	assert_int_equal(mk_time_index_truncate_rel(&ix, 1), MK_OK);
	assert_int_equal(mk_time_index_count(&ix), 1);
	assert_int_equal(file_size(path), TIME_W);
	mk_entries_close(&ix.f);

	/* Not a multiple of 12; timestamps equal or going down; offsets not
	 * increasing. */
	append_bytes(path, "abcd", 4);
	assert_false(time_index_loads(&ix, path, 1000, UINT64_MAX));
	mk_entries_close(&ix.f);
	uint8_t bad[2 * TIME_W];
	memset(bad, 0, sizeof(bad));
	mk_store_be64(bad, 5);
	mk_store_be64(bad + 12, 5);
	mk_store_be32(bad + 12 + 8, 3);
	write_file(path, bad, sizeof(bad));
	assert_false(time_index_loads(&ix, path, 1000, UINT64_MAX));
	mk_entries_close(&ix.f);
	mk_store_be64(bad + 12, 9);
	mk_store_be32(bad + 12 + 8, 0);
	write_file(path, bad, sizeof(bad));
	assert_false(time_index_loads(&ix, path, 1000, UINT64_MAX));
	mk_entries_close(&ix.f);
	mk_store_be32(bad + 12 + 8, 3);
	write_file(path, bad, sizeof(bad));
	assert_true(time_index_loads(&ix, path, 1000, UINT64_MAX));
	mk_entries_close(&ix.f);
}

/*
 * A .index of the merged 16-byte format of before issue 25 point 2 (i64
 * max ts | u32 rel | u32 pos: one file for both lookups) never loads as Kafka's
 * offset index, whatever its timestamps: its length is a multiple of 8,
 * but its second 8-byte entry is the old first entry's (rel, position 0),
 * and positions must increase. (Its segment has no .timeindex either: an
 * empty time index for a segment with data is invalid too.)
 */
static void test_index_merged_format(void **state)
{
	fixture *f = *state;
	assert_int_equal(mk_mkdirs(f->dir), MK_OK);
	char path[256];
	snprintf(path, sizeof(path), "%s/old.index", f->dir);
	const int64_t firsts[] = { 0, 1, 100, (int64_t)1 << 32,
				   1700000000000LL };
	for (size_t k = 0; k < sizeof(firsts) / sizeof(firsts[0]); k++) {
		uint8_t old[3 * 16];
		const uint32_t rel[3] = { 0, 30, 61 }, pos[3] = { 0, 4100, 8300 };
		for (int i = 0; i < 3; i++) {
			mk_store_be64(old + i * 16, (uint64_t)(firsts[k] + 10 * i));
			mk_store_be32(old + i * 16 + 8, rel[i]);
			mk_store_be32(old + i * 16 + 12, pos[i]);
		}
		/* One entry, and three. */
		for (size_t len = 16; len <= sizeof(old); len += 32) {
			write_file(path, old, len);
			mk_offset_index ix;
			assert_false(offset_index_loads(&ix, path, 20000,
							UINT64_MAX));
			mk_entries_close(&ix.f);
		}
	}
}

/*
 * Appended index entries are written a page at a time: the file holds
 * whole pages of entries until a write_pending or sync; a truncation of
 * pending entries touches no file; a simulated crash writes none of them.
 */
static void test_index_pending(void **state)
{
	fixture *f = *state;
	assert_int_equal(mk_mkdirs(f->dir), MK_OK);
	char path[256];
	snprintf(path, sizeof(path), "%s/p.index", f->dir);
	mk_offset_index ix;
	mk_offset_index_init(&ix);
	assert_int_equal(mk_entries_open(&ix.f, path), MK_OK);
	const uint32_t page = MK_ENTRIES_PENDING_BYTES / OFF_W;
	for (uint32_t i = 0; i < page - 1; i++)
		assert_int_equal(mk_offset_index_add(&ix, i, i * 10, true), MK_OK);
	assert_int_equal(file_size(path), 0);
	assert_int_equal(mk_offset_index_add(&ix, page - 1, (page - 1) * 10,
					     true), MK_OK);
	assert_int_equal(file_size(path), MK_ENTRIES_PENDING_BYTES);
	for (uint32_t i = page; i < page + 5; i++)
		assert_int_equal(mk_offset_index_add(&ix, i, i * 10, true), MK_OK);
	assert_int_equal(file_size(path), MK_ENTRIES_PENDING_BYTES);
	/* Dropping pending entries only: the file is as it was. */
	assert_int_equal(mk_offset_index_truncate_pos(&ix, (page + 3) * 10),
			 MK_OK);
	assert_int_equal(mk_offset_index_count(&ix), page + 3);
	assert_int_equal(file_size(path), MK_ENTRIES_PENDING_BYTES);
	/* Dropping written ones cuts the file. */
	assert_int_equal(mk_offset_index_truncate_pos(&ix, 100), MK_OK);
	assert_int_equal(file_size(path), 10 * OFF_W);
	assert_int_equal(mk_offset_index_add(&ix, 10, 100, true), MK_OK);
	assert_int_equal(mk_entries_sync(&ix.f), MK_OK);
	assert_int_equal(file_size(path), 11 * OFF_W);
	/* A crash loses what was pending, and cuts to what was synced. */
	assert_int_equal(mk_offset_index_add(&ix, 11, 110, true), MK_OK);
	mk_entries_crash(&ix.f);
	mk_entries_close(&ix.f);
	assert_int_equal(file_size(path), 11 * OFF_W);
	assert_true(offset_index_loads(&ix, path, 1000, UINT64_MAX));
	assert_int_equal(mk_offset_index_count(&ix), 11);
	mk_entries_close(&ix.f);
}

/* ---- append and read ----------------------------------------------------- */

static void test_append_read(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f, 1 << 20, 4096, 0);
	assert_int_equal(mk_log_end_offset(log), 0);
	assert_int_equal(mk_log_start_offset(log), 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(append_n(log, 0, 3, NULL, 0), 3 * i);
	assert_int_equal(mk_log_end_offset(log), 30);

	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, 0, 30, SIZE_MAX, &out), MK_OK);
	assert_int_equal(check_frames(&out, 0, 29), 10);
	assert_int_equal(out.len, mk_log_size_bytes(log));

	/* From the middle of a batch: that whole batch comes first. */
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 4, 30, SIZE_MAX, &out), MK_OK);
	assert_int_equal(check_frames(&out, 3, 29), 9);

	/* end: stop before a batch starting at or past it. */
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 4, 9, SIZE_MAX, &out), MK_OK);
	assert_int_equal(check_frames(&out, 3, 8), 2);

	/* max_bytes: at least one batch, then only what fits. */
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 0, 30, 1, &out), MK_OK);
	assert_int_equal(check_frames(&out, 0, 2), 1);
	size_t one = out.len;
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 0, 30, 3 * one + one / 2, &out), MK_OK);
	assert_int_equal(check_frames(&out, 0, 8), 3);

	/* Reads append to what out holds. */
	mk_strbuf_reset(&out);
	mk_strbuf_addstr(&out, "hdr");
	assert_int_equal(mk_log_read(log, 0, 3, SIZE_MAX, &out), MK_OK);
	assert_int_equal(out.len, 3 + one);
	assert_memory_equal(out.buf, "hdr", 3);

	/* At the end: nothing; past it: out of range. */
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 30, 100, SIZE_MAX, &out), MK_OK);
	assert_int_equal(out.len, 0);
	assert_int_equal(mk_log_read(log, 31, 100, SIZE_MAX, &out),
			 MK_OFFSET_OUT_OF_RANGE);
	assert_int_equal(mk_log_read(log, -1, 100, SIZE_MAX, &out),
			 MK_OFFSET_OUT_OF_RANGE);

	/* Everything survives a close and reopen. */
	mk_log_close(log);
	log = open_log(f, 1 << 20, 4096, 0);
	assert_int_equal(mk_log_end_offset(log), 30);
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 0, 30, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 0, 29);
	assert_string_equal(mk_log_error(log), "");
	mk_log_close(log);
	mk_strbuf_release(&out);
}

static void test_leader_append(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f, 1 << 20, 4096, 0);
	append_n(log, 2, 5, NULL, 0);
	append_n(log, 2, 1, NULL, 0);
	int64_t b = append_n(log, 4, 2, NULL, 0);
	assert_int_equal(b, 6);

	/* The stored frames carry the assigned offsets and epochs. */
	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, 0, 100, SIZE_MAX, &out), MK_OK);
	size_t pos = 0;
	int64_t bases[3];
	int32_t epochs[3];
	for (int i = 0; i < 3; i++) {
		mk_batch_view v;
		assert_int_equal(mk_frame_decode((uint8_t *)out.buf + pos,
						 out.len - pos, 0, &v, NULL),
				 MK_OK);
		bases[i] = v.meta.base_offset;
		epochs[i] = v.meta.leader_epoch;
		pos += v.frame_len;
	}
	assert_int_equal(pos, out.len);
	assert_int_equal(bases[0], 0);
	assert_int_equal(bases[1], 5);
	assert_int_equal(bases[2], 6);
	assert_int_equal(epochs[0], 2);
	assert_int_equal(epochs[2], 4);
	assert_int_equal(mk_log_latest_epoch(log), 4);

	/* A lower epoch is fenced; a damaged frame header is refused. */
	mk_strbuf fr = MK_STRBUF_INIT;
	build(&fr, 0, 0, 1, NULL, 0);
	assert_int_equal(mk_log_append_leader(log, (uint8_t *)fr.buf, fr.len, 3,
					      NULL), MK_FENCED_LEADER_EPOCH);
	fr.buf[MK_FRAME_OFF_MAGIC] ^= 1;  /* magic */
	assert_int_equal(mk_log_append_leader(log, (uint8_t *)fr.buf, fr.len, 4,
					      NULL), MK_CORRUPT_MESSAGE);
	fr.buf[MK_FRAME_OFF_MAGIC] ^= 1;
	fr.buf[MK_FRAME_OFF_ATTRIBUTES] ^= 0x80; /* an unknown attribute */
	assert_int_equal(mk_log_append_leader(log, (uint8_t *)fr.buf, fr.len, 4,
					      NULL), MK_CORRUPT_MESSAGE);
	fr.buf[MK_FRAME_OFF_ATTRIBUTES] ^= 0x80;
	assert_int_equal(mk_log_append_leader(log, (uint8_t *)fr.buf,
					      fr.len - 1, 4, NULL),
			 MK_CORRUPT_MESSAGE);
	mk_strbuf_addch(&fr, 0);          /* a byte past the frame */
	assert_int_equal(mk_log_append_leader(log, (uint8_t *)fr.buf, fr.len, 4,
					      NULL), MK_CORRUPT_MESSAGE);
	assert_int_equal(mk_log_end_offset(log), 8);

	/* Records are trusted, not walked: a frame damaged after it was
	 * built is stored, but with a CRC that no longer matches, so the
	 * read that meets it fails. It was fsynced (the recovery point is
	 * past it), so the open refuses the log rather than cut acknowledged
	 * records; without the checkpoint, recovery cuts it. */
	build(&fr, 0, 0, 1, NULL, 0);
	fr.buf[fr.len - 1] ^= 1;
	assert_int_equal(mk_log_append_leader(log, (uint8_t *)fr.buf, fr.len, 4,
					      NULL), MK_OK);
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 8, 9, SIZE_MAX, &out),
			 MK_KAFKA_STORAGE_ERROR);
	assert_non_null(strstr(mk_log_error(log), "bad crc"));
	mk_log_close(log);
	open_refused(f, 1 << 20, 4096, "recovery-point-offset-checkpoint: t 0: recovery_point 9 is past the log's end 8");
	drop_recovery_point(f);
	log = open_log(f, 1 << 20, 4096, 0);
	assert_int_equal(mk_log_end_offset(log), 8);
	mk_strbuf_release(&fr);
	mk_strbuf_release(&out);
	mk_log_close(log);
}

static void test_replica_append(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f, 1 << 20, 4096, 0);
	mk_strbuf fr = MK_STRBUF_INIT;
	build(&fr, 0, 3, 2, NULL, 0);
	assert_int_equal(mk_log_append_replica(log, (uint8_t *)fr.buf, fr.len),
			 MK_OK);
	assert_int_equal(mk_log_end_offset(log), 2);
	assert_int_equal(mk_log_latest_epoch(log), 3);
	/* The same batch again starts below the end. (Above it is a gap a
	 * compacted leader leaves: accepted, see test_cleaner.) */
	assert_int_equal(mk_log_append_replica(log, (uint8_t *)fr.buf, fr.len),
			 MK_INVALID_REQUEST);
	build(&fr, 2, 3, 1, NULL, 0);
	fr.buf[20] ^= 0x40;
	assert_int_equal(mk_log_append_replica(log, (uint8_t *)fr.buf, fr.len),
			 MK_CORRUPT_MESSAGE);
	build(&fr, 2, 1, 1, NULL, 0);   /* epochs do not go back */
	assert_int_equal(mk_log_append_replica(log, (uint8_t *)fr.buf, fr.len),
			 MK_INVALID_REQUEST);
	build(&fr, 2, 5, 4, NULL, 0);
	assert_int_equal(mk_log_append_replica(log, (uint8_t *)fr.buf, fr.len),
			 MK_OK);
	assert_int_equal(mk_log_end_offset(log), 6);

	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, 0, 6, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 0, 5);
	/* Stored as is: byte for byte the frame given. */
	assert_memory_equal(out.buf + out.len - fr.len, fr.buf, fr.len);
	mk_strbuf_release(&out);
	mk_strbuf_release(&fr);
	mk_log_close(log);
}

/* A frame mk_log_read returned goes into another log without a second
 * walk (a follower's copy): the offset and epoch rules still hold. */
static void test_replica_append_trusted(void **state)
{
	fixture *f = *state;
	mk_log *src = open_log(f, 1 << 20, 4096, 0);
	mk_strbuf fr = MK_STRBUF_INIT, out = MK_STRBUF_INIT;
	build(&fr, 0, 3, 2, NULL, 0);
	assert_int_equal(mk_log_append_replica(src, (uint8_t *)fr.buf, fr.len),
			 MK_OK);
	build(&fr, 2, 4, 3, NULL, 0);
	assert_int_equal(mk_log_append_replica(src, (uint8_t *)fr.buf, fr.len),
			 MK_OK);
	assert_int_equal(mk_log_read(src, 0, 5, SIZE_MAX, &out), MK_OK);
	mk_log_close(src);
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/copy-0", f->root);
	assert_int_equal(mk_mkdirs(dir), 0);
	mk_log_config cfg = { 1 << 20, 4096, 0, NULL, NULL };
	mk_log *dst;
	assert_int_equal(mk_log_open(dir, &cfg, &dst, NULL), MK_OK);
	mk_batch_view b;
	assert_int_equal(mk_frame_decode_header((uint8_t *)out.buf, out.len, 0,
						false, &b, NULL), MK_OK);
	size_t first = b.frame_len;
	/* A length that is not the frame's, or a bad header: refused. */
	assert_int_equal(mk_log_append_replica_trusted(dst, (uint8_t *)out.buf,
						       first - 1),
			 MK_CORRUPT_MESSAGE);
	assert_int_equal(mk_log_append_replica_trusted(dst, (uint8_t *)out.buf,
						       first), MK_OK);
	assert_int_equal(mk_log_append_replica_trusted(dst, (uint8_t *)out.buf,
						       first),
			 MK_INVALID_REQUEST);         /* below the end */
	assert_int_equal(mk_log_append_replica_trusted(dst,
			 (uint8_t *)out.buf + first, out.len - first), MK_OK);
	assert_int_equal(mk_log_end_offset(dst), 5);
	assert_int_equal(mk_log_latest_epoch(dst), 4);
	build(&fr, 5, 3, 1, NULL, 0);   /* epochs do not go back */
	assert_int_equal(mk_log_append_replica_trusted(dst, (uint8_t *)fr.buf,
						       fr.len),
			 MK_INVALID_REQUEST);
	mk_strbuf copy = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(dst, 0, 5, SIZE_MAX, &copy), MK_OK);
	assert_int_equal(copy.len, out.len);
	assert_memory_equal(copy.buf, out.buf, out.len);
	mk_strbuf_release(&copy);
	mk_strbuf_release(&out);
	mk_strbuf_release(&fr);
	mk_log_close(dst);
}

/* ---- the sparse index ---------------------------------------------------- */

static void test_index_lookup(void **state)
{
	fixture *f = *state;
	/* ~100-byte batches, an index entry every ~300 bytes. */
	mk_log *log = open_log(f, 1 << 20, 400, 0);
	for (int i = 0; i < 60; i++)
		append_n(log, 0, 2, NULL, 20);
	assert_int_equal(mk_log_segment_count(log), 1);
	char path[256], tpath[256];
	seg_path(f, 0, "index", path, sizeof(path));
	seg_path(f, 0, "timeindex", tpath, sizeof(tpath));
	off_t lagging = file_size(path), tlagging = file_size(tpath);
	mk_log_write_index_pending(log);
	off_t isz = file_size(path), tsz = file_size(tpath);
	/* The entries of both were pending. */
	assert_true(lagging < isz);
	assert_true(tlagging < tsz);
	/* Sparse: several entries, far fewer than batches. */
	assert_true(isz % OFF_W == 0);
	assert_true(isz / OFF_W > 5);
	assert_true(isz / OFF_W < 30);
	/* Timestamps grow with every batch here: a time entry with each
	 * offset entry. */
	assert_int_equal(tsz % TIME_W, 0);
	assert_int_equal(tsz / TIME_W, isz / OFF_W);

	/* Every starting offset finds the batch that holds it. */
	mk_strbuf out = MK_STRBUF_INIT;
	for (int64_t from = 0; from < 120; from++) {
		mk_strbuf_reset(&out);
		assert_int_equal(mk_log_read(log, from, from + 1, SIZE_MAX, &out),
				 MK_OK);
		assert_int_equal(check_frames(&out, from & ~1LL, (from & ~1LL) + 1),
				 1);
	}
	mk_log_close(log);

	/* The same after a reopen (the indexes rebuilt from the scan). */
	log = open_log(f, 1 << 20, 400, 0);
	assert_int_equal(file_size(path), isz);
	assert_int_equal(file_size(tpath), tsz);
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 77, 80, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 76, 79);
	mk_log_close(log);
	mk_strbuf_release(&out);
}

/* ---- rolling ------------------------------------------------------------- */

static void test_roll(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f, 1000, 4096, 0);
	mk_strbuf fr = MK_STRBUF_INIT;
	build(&fr, 0, 0, 2, NULL, 100);
	size_t flen = fr.len;
	mk_strbuf_release(&fr);
	for (int i = 0; i < 20; i++)
		append_n(log, 0, 2, NULL, 100);
	size_t per = 1000 / flen;   /* batches per segment */
	size_t n = mk_log_segment_count(log);
	assert_int_equal(n, (20 + per - 1) / per);
	int64_t prev = -1;
	for (size_t i = 0; i < n; i++) {
		mk_segment_info info;
		mk_log_segment_info(log, i, &info);
		assert_true(info.base_offset > prev);
		assert_int_equal(info.base_offset, (int64_t)(i * per * 2));
		assert_true(info.size <= 1000);
		assert_int_equal(info.active, i + 1 == n);
		char path[256];
		seg_path(f, info.base_offset, "log", path, sizeof(path));
		assert_true(exists(path));
		assert_int_equal(file_size(path), (off_t)info.size);
		/* Kafka's three files per segment: .log, .index, .timeindex. */
		seg_path(f, info.base_offset, "index", path, sizeof(path));
		assert_true(exists(path));
		seg_path(f, info.base_offset, "timeindex", path, sizeof(path));
		assert_true(exists(path));
		prev = info.base_offset;
	}
	/* The 20-digit names, literally. */
	char path[256];
	snprintf(path, sizeof(path), "%s/00000000000000000000.log", f->dir);
	assert_true(exists(path));
	snprintf(path, sizeof(path), "%s/%020zu.log", f->dir, per * 2);
	assert_true(exists(path));
	assert_int_equal(strlen(strrchr(path, '/') + 1), 24);

	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, 0, 40, SIZE_MAX, &out), MK_OK);
	assert_int_equal(check_frames(&out, 0, 39), 20);
	/* Reads start in the right segment too. */
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 31, 40, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 30, 39);
	mk_log_close(log);

	/* Reopened: closed segments as they were, same end. */
	log = open_log(f, 1000, 4096, 0);
	assert_int_equal(mk_log_segment_count(log), n);
	assert_int_equal(mk_log_end_offset(log), 40);
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 0, 40, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 0, 39);
	mk_log_close(log);
	mk_strbuf_release(&out);
}

static void test_oversized_batch(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f, 100, 4096, 0);
	append_n(log, 0, 1, NULL, 400);   /* far above segment_bytes */
	assert_int_equal(mk_log_segment_count(log), 1);
	mk_segment_info info;
	mk_log_segment_info(log, 0, &info);
	assert_true(info.size > 100);
	append_n(log, 0, 1, NULL, 400);   /* rolls, and the new one takes it */
	assert_int_equal(mk_log_segment_count(log), 2);
	mk_log_segment_info(log, 1, &info);
	assert_int_equal(info.base_offset, 1);
	assert_true(info.size > 100);
	assert_true(info.active);
	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, 0, 2, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 0, 1);
	mk_strbuf_release(&out);
	mk_log_close(log);
}

/* ---- time lookups -------------------------------------------------------- */

static int64_t brute_time(const int64_t *ts, int64_t n, int64_t target)
{
	for (int64_t i = 0; i < n; i++)
		if (ts[i] >= target)
			return i;
	return n;
}

static void check_times(mk_log *log, const int64_t *ts, int64_t n)
{
	for (int64_t target = 900; target <= 1200 + 3 * n; target += 7) {
		int64_t off = -2;
		assert_int_equal(mk_log_offset_for_time(log, target, &off), MK_OK);
		if (off != brute_time(ts, n, target))
			print_error("target %lld\n", (long long)target);
		assert_int_equal(off, brute_time(ts, n, target));
	}
}

static void test_offset_for_time(void **state)
{
	fixture *f = *state;
	/* Mostly increasing timestamps with jitter, some going back. */
	enum { N = 300 };
	int64_t ts[N];
	uint32_t x = 12345;
	for (int i = 0; i < N; i++) {
		x = x * 1103515245u + 12345u;
		ts[i] = 1000 + 2 * i + (int64_t)((x >> 16) % 40) - 20;
	}
	mk_log *log = open_log(f, 2000, 200, 0);
	for (int i = 0; i < N; i += 3)
		append_n(log, 0, 3, ts + i, 0);
	assert_true(mk_log_segment_count(log) > 3);
	check_times(log, ts, N);
	int64_t off;
	assert_int_equal(mk_log_offset_for_time(log, INT64_MIN, &off), MK_OK);
	assert_int_equal(off, 0);
	assert_int_equal(mk_log_offset_for_time(log, INT64_MAX, &off), MK_OK);
	assert_int_equal(off, N);
	mk_log_close(log);

	/* Closed segments' time indexes are read lazily; then rebuilt. */
	log = open_log(f, 2000, 200, 0);
	check_times(log, ts, N);
	mk_log_close(log);
	/* The time lookups are served by the .timeindex and the .index:
	 * without either (both rebuilt on first use) they give the same
	 * answers, and the files come back as they were. */
	const char *const exts[2] = { "timeindex", "index" };
	const off_t width[2] = { TIME_W, OFF_W };
	for (int k = 0; k < 2; k++) {
		char path[256];
		seg_path(f, 0, exts[k], path, sizeof(path));
		mk_strbuf orig = MK_STRBUF_INIT, now = MK_STRBUF_INIT;
		read_file_bytes(path, &orig);
		assert_true(orig.len > 0 && orig.len % (size_t)width[k] == 0);
		assert_int_equal(unlink(path), 0);
		log = open_log(f, 2000, 200, 0);
		check_times(log, ts, N);
		assert_true(exists(path));
		read_file_bytes(path, &now);
		assert_int_equal(now.len, orig.len);
		assert_memory_equal(now.buf, orig.buf, now.len);
		mk_log_close(log);
		mk_strbuf_release(&orig);
		mk_strbuf_release(&now);
	}
}

/* Replace a segment's Kafka indexes by the merged 16-byte .index of
 * before issue 25 point 2 (i64 max ts | u32 rel | u32 pos, one per offset
 * entry) and no .timeindex, as that version left them. */
static void indexes_to_merged(const fixture *f, int64_t base)
{
	char path[256];
	seg_path(f, base, "index", path, sizeof(path));
	mk_strbuf cur = MK_STRBUF_INIT;
	read_file_bytes(path, &cur);
	assert_true(cur.len > 0 && cur.len % OFF_W == 0);
	size_t n = cur.len / OFF_W;
	uint8_t *old = malloc(n * 16);
	for (size_t i = 0; i < n; i++) {
		mk_store_be64(old + i * 16, (uint64_t)(5000 + 10 * i));
		memcpy(old + i * 16 + 8, cur.buf + i * OFF_W, OFF_W);
	}
	write_file(path, old, n * 16);
	free(old);
	mk_strbuf_release(&cur);
	seg_path(f, base, "timeindex", path, sizeof(path));
	assert_int_equal(unlink(path), 0);
}

/*
 * A data directory whose indexes are of the merged format (one 16-byte
 * .index a segment, no .timeindex): it opens; the active segment's
 * indexes are rebuilt at open, each closed one's on first use, both files
 * equal to what this version writes; time lookups give the same answers.
 */
static void test_merged_format_dir(void **state)
{
	fixture *f = *state;
	enum { N = 120 };
	int64_t ts[N];
	for (int i = 0; i < N; i++)
		ts[i] = 5000 + 3 * i - (i % 7 == 3 ? 40 : 0);
	mk_log *log = open_log(f, 1500, 200, 0);
	for (int i = 0; i < N; i += 3)
		append_n(log, 0, 3, ts + i, 0);
	size_t nseg = mk_log_segment_count(log);
	assert_true(nseg >= 3);
	int64_t bases[64];
	assert_true(nseg <= 64);
	for (size_t i = 0; i < nseg; i++) {
		mk_segment_info info;
		mk_log_segment_info(log, i, &info);
		bases[i] = info.base_offset;
	}
	mk_log_close(log);
	mk_strbuf orig[64][2];
	const char *const exts[2] = { "index", "timeindex" };
	char path[256];
	for (size_t i = 0; i < nseg; i++) {
		for (int k = 0; k < 2; k++) {
			seg_path(f, bases[i], exts[k], path, sizeof(path));
			orig[i][k] = (mk_strbuf)MK_STRBUF_INIT;
			read_file_bytes(path, &orig[i][k]);
		}
		indexes_to_merged(f, bases[i]);
	}

	log = open_log(f, 1500, 200, 0);
	check_times(log, ts, N);
	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, 0, N, SIZE_MAX, &out), MK_OK);
	assert_int_equal(check_frames(&out, 0, N - 1), N / 3);
	/* An offset lookup in each segment (a read from its second batch)
	 * loads its indexes: each is rebuilt in Kafka's layouts, equal to
	 * what was written before. */
	mk_strbuf now = MK_STRBUF_INIT;
	for (size_t i = 0; i < nseg; i++) {
		mk_strbuf_reset(&out);
		assert_int_equal(mk_log_read(log, bases[i] + 4, N, SIZE_MAX, &out),
				 MK_OK);
		assert_true(out.len > 0);
		for (int k = 0; k < 2; k++) {
			seg_path(f, bases[i], exts[k], path, sizeof(path));
			read_file_bytes(path, &now);
			assert_int_equal(now.len, orig[i][k].len);
			assert_memory_equal(now.buf, orig[i][k].buf, now.len);
			mk_strbuf_release(&orig[i][k]);
		}
	}
	mk_strbuf_release(&now);
	mk_strbuf_release(&out);
	mk_log_close(log);
}

/*
 * The time index keeps the max timestamp *so far*: a spike in a batch that
 * got no index entry must still stop a lookup from starting after it.
 */
static void test_time_index_max_so_far(void **state)
{
	fixture *f = *state;
	mk_strbuf fr = MK_STRBUF_INIT;
	int64_t one = 100;
	build(&fr, 0, 0, 1, &one, 0);
	/* An index entry every other batch. */
	int64_t interval = (int64_t)fr.len + 1;
	mk_strbuf_release(&fr);
	mk_log *log = open_log(f, 1 << 20, interval, 0);
	int64_t ts[8] = { 100, 5000, 200, 300, 400, 500, 600, 700 };
	for (int i = 0; i < 8; i++)
		append_n(log, 0, 1, ts + i, 0);
	int64_t off;
	assert_int_equal(mk_log_offset_for_time(log, 4000, &off), MK_OK);
	assert_int_equal(off, 1);
	assert_int_equal(mk_log_offset_for_time(log, 5000, &off), MK_OK);
	assert_int_equal(off, 1);
	assert_int_equal(mk_log_offset_for_time(log, 5001, &off), MK_OK);
	assert_int_equal(off, 8);
	assert_int_equal(mk_log_offset_for_time(log, 250, &off), MK_OK);
	assert_int_equal(off, 1);
	assert_int_equal(mk_log_offset_for_time(log, 100, &off), MK_OK);
	assert_int_equal(off, 0);
	mk_log_close(log);
	/* The same from the rebuilt index after a reopen. */
	log = open_log(f, 1 << 20, interval, 0);
	assert_int_equal(mk_log_offset_for_time(log, 4000, &off), MK_OK);
	assert_int_equal(off, 1);
	mk_log_close(log);
}

/*
 * Sealing a segment adds a final time entry (Kafka's
 * onBecomeInactiveSegment): the max timestamp and the batch that first
 * reached it, when it grew after the last entry. A closed segment's last
 * time entry carries its max timestamp, read back from the file after a
 * reopen (retention by time reads it), and a time lookup at or past it
 * starts at that batch's offset entry.
 */
static void test_seal_final_entry(void **state)
{
	fixture *f = *state;
	/* An interval no batch reaches: only the first batch gets an entry
	 * while appending. */
	const int64_t ts[6] = { 10, 50, 20, 30, 40, 45 };
	mk_strbuf fr = MK_STRBUF_INIT;
	build(&fr, 0, 0, 1, ts, 60);
	/* Four batches a segment. */
	int64_t seg_bytes = (int64_t)(4 * fr.len + fr.len / 2);
	mk_strbuf_release(&fr);
	mk_log *log = open_log(f, seg_bytes, 1 << 20, 0);
	int64_t bases[6];
	for (int i = 0; i < 6; i++)
		bases[i] = append_n(log, 0, 1, ts + i, 60);
	assert_true(mk_log_segment_count(log) >= 2);
	mk_segment_info s0, s1;
	mk_log_segment_info(log, 0, &s0);
	mk_log_segment_info(log, 1, &s1);
	assert_false(s0.active);
	/* Segment 0 holds four batches, the max of which is 50. */
	int in0 = 0;
	for (int i = 0; i < 6; i++)
		in0 += bases[i] < s1.base_offset;
	assert_int_equal(in0, 4);
	int64_t max0 = INT64_MIN;
	for (int i = 0; i < in0; i++)
		max0 = ts[i] > max0 ? ts[i] : max0;
	assert_int_equal(max0, 50);
	char path[256], tpath[256];
	seg_path(f, 0, "index", path, sizeof(path));
	seg_path(f, 0, "timeindex", tpath, sizeof(tpath));
	for (int pass = 0; pass < 2; pass++) {
		/* The rows of both indexes (mk_segment_index_entry): the
		 * offset index's, then the time index's (position -1). */
		mk_index_row *rows;
		size_t nr;
		assert_int_equal(mk_log_index_rows(log, 0, &rows, &nr), MK_OK);
		assert_int_equal(nr, 3);
		assert_int_equal(rows[0].offset, 0);
		assert_int_equal(rows[0].position, 0);
		assert_int_equal(rows[1].position, -1);
		assert_int_equal(rows[1].offset, 0);
		assert_int_equal(rows[1].timestamp, 10);
		assert_int_equal(rows[2].position, -1);
		assert_int_equal(rows[2].offset, bases[1]);   /* reached 50 */
		assert_int_equal(rows[2].timestamp, 50);
		free(rows);
		int64_t mts = 0;
		assert_int_equal(mk_log_segment_max_timestamp(log, 0, &mts), MK_OK);
		assert_int_equal(mts, 50);
		int64_t off;
		assert_int_equal(mk_log_offset_for_time(log, 50, &off), MK_OK);
		assert_int_equal(off, 1);
		assert_int_equal(mk_log_offset_for_time(log, 11, &off), MK_OK);
		assert_int_equal(off, 1);
		assert_int_equal(mk_log_offset_for_time(log, 10, &off), MK_OK);
		assert_int_equal(off, 0);
		mk_log_close(log);
		/* One offset entry, two time entries, exactly. */
		assert_int_equal(file_size(path), OFF_W);
		assert_int_equal(file_size(tpath), 2 * TIME_W);
		log = open_log(f, seg_bytes, 1 << 20, 0);
	}
	mk_log_close(log);
	/* The closed segment's .timeindex is read from the file, not
	 * rebuilt (nor deleted) at open: a valid one that says 77 is
	 * believed. */
	uint8_t says[2 * TIME_W];
	mk_store_be64(says, 10);
	mk_store_be32(says + 8, 0);
	mk_store_be64(says + TIME_W, 77);
	mk_store_be32(says + TIME_W + 8, 1);
	write_file(tpath, says, sizeof(says));
	log = open_log(f, seg_bytes, 1 << 20, 0);
	int64_t mts = 0;
	assert_int_equal(mk_log_segment_max_timestamp(log, 0, &mts), MK_OK);
	if (mts != 77)
		print_error("%s was not read at first use (deleted or rebuilt "
			    "at open?)\n", tpath);
	assert_int_equal(mts, 77);
	mk_log_close(log);
}

/*
 * A truncation into a sealed segment drops its final entry with the
 * batches: the segment is active again with the max timestamp of what is
 * left; sealed again by the next roll, its last entry carries the max of
 * what is left and what came since (not the truncated 50), also read back
 * from the file after a reopen; likewise after a crash right after the cut
 * (the segment then recovered by a scan).
 */
static void test_truncate_sealed_max_timestamp(void **state)
{
	fixture *f = *state;
	const int64_t ts[6] = { 10, 50, 20, 30, 40, 45 };
	const int64_t more[4] = { 15, 12, 11, 60 };
	mk_strbuf fr = MK_STRBUF_INIT;
	build(&fr, 0, 0, 1, ts, 60);
	/* Four batches a segment. */
	int64_t seg_bytes = (int64_t)(4 * fr.len + fr.len / 2);
	mk_strbuf_release(&fr);
	for (int crash = 0; crash < 2; crash++) {
		tl_logdir_wipe(f);
		assert_int_equal(mkdir(f->dir, 0755), 0);
		fflush(NULL);
		pid_t pid = crash ? fork() : 0;
		assert_true(pid >= 0);
		mk_log *log = NULL;
		if (pid == 0) {
			log = open_log(f, seg_bytes, 1 << 20, 0);
			for (int i = 0; i < 6; i++)
				append_n(log, 0, 1, ts + i, 60);
			assert_int_equal(mk_log_segment_count(log), 2);
			int64_t mts = 0;
			assert_int_equal(mk_log_segment_max_timestamp(log, 0, &mts),
					 MK_OK);
			assert_int_equal(mts, 50);
			if (crash)
				mk_failpoint_arm("log.truncate.after-cut", 1);
			assert_int_equal(mk_log_truncate_to(log, 1), MK_OK);
			if (crash)
				_exit(3);   /* the point was never reached */
		} else {
			int status = 0;
			assert_int_equal(waitpid(pid, &status, 0), pid);
			assert_true(WIFSIGNALED(status));
			log = open_log(f, seg_bytes, 1 << 20, 0);
		}
		assert_int_equal(mk_log_end_offset(log), 1);
		assert_int_equal(mk_log_segment_count(log), 1);
		/* Three batches join segment 0, the fourth rolls. */
		for (int i = 0; i < 4; i++)
			append_n(log, 0, 1, more + i, 60);
		assert_int_equal(mk_log_segment_count(log), 2);
		for (int pass = 0; pass < 2; pass++) {
			int64_t mts = 0, off;
			assert_int_equal(mk_log_segment_max_timestamp(log, 0, &mts),
					 MK_OK);
			assert_int_equal(mts, 15);
			assert_int_equal(mk_log_offset_for_time(log, 13, &off), MK_OK);
			assert_int_equal(off, 1);
			assert_int_equal(mk_log_offset_for_time(log, 16, &off), MK_OK);
			assert_int_equal(off, 4);
			mk_log_close(log);
			log = open_log(f, seg_bytes, 1 << 20, 0);
		}
		mk_log_close(log);
	}
}

/* Ten records in five batches, then the broker directory's file (of
 * logdir.h's) replaced by text; path gets its path. */
static void ten_records_then_file(const fixture *f, int file,
				  const char *text, char *path, size_t n)
{
	mk_log *log = open_log(f, 1 << 20, 4096, 0);
	for (int i = 0; i < 5; i++)
		append_n(log, 0, 2, NULL, 0);
	mk_log_close(log);
	logdir_file(f, file, path, n);
	assert_int_equal(mk_file_replace(path, text, strlen(text)), MK_OK);
}

static void assert_file_text(const char *path, const char *want)
{
	mk_strbuf text = MK_STRBUF_INIT;
	bool missing;
	assert_int_equal(mk_file_read(path, &text, &missing), MK_OK);
	assert_false(missing);
	assert_string_equal(text.buf, want);
	mk_strbuf_release(&text);
}

/*
 * The log start offset comes from the broker's log-start-offset-checkpoint
 * (Kafka's format: version 0, the count, "TOPIC PARTITION OFFSET") and
 * bounds reads; the recovery point from recovery-point-offset-checkpoint.
 */
static void test_log_start_from_checkpoint(void **state)
{
	fixture *f = *state;
	char ck[256], rp[256];
	ten_records_then_file(f, MK_LOGDIR_START, "0\n1\nt 0 4\n", ck,
			      sizeof(ck));
	logdir_file(f, MK_LOGDIR_RECOVERY, rp, sizeof(rp));
	assert_file_text(rp, "0\n1\nt 0 10\n");
	mk_log *log = open_log(f, 1 << 20, 4096, 0);
	assert_int_equal(mk_log_start_offset(log), 4);
	assert_int_equal(mk_log_end_offset(log), 10);
	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, 3, 10, SIZE_MAX, &out),
			 MK_OFFSET_OUT_OF_RANGE);
	assert_int_equal(mk_log_read(log, 4, 10, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 4, 9);
	int64_t off;
	assert_int_equal(mk_log_offset_for_time(log, 0, &off), MK_OK);
	assert_int_equal(off, 4);
	mk_log_close(log);
	/* Kept across a reopen, the file as it was. */
	log = open_log(f, 1 << 20, 4096, 0);
	assert_int_equal(mk_log_start_offset(log), 4);
	mk_log_close(log);
	assert_file_text(ck, "0\n1\nt 0 4\n");
	mk_strbuf_release(&out);
}

/*
 * A log start (or recovery point) past what the segments hold is refused,
 * naming the file, the entry and the value, and changes nothing: the
 * start was clamped to the end before, which hid every record (issue 23).
 * Putting the file right brings them all back.
 */
static void test_log_start_past_end_refused(void **state)
{
	fixture *f = *state;
	char ck[256], rp[256];
	const char *bad = "0\n1\nt 0 9999\n";
	ten_records_then_file(f, MK_LOGDIR_START, bad, ck, sizeof(ck));
	open_refused(f, 1 << 20, 4096, "log-start-offset-checkpoint: t 0: log_start_offset 9999 is past the log's end 10");
	/* Nothing changed: the file is as edited, the records all there. */
	assert_file_text(ck, bad);
	assert_int_equal(mk_file_replace(ck, "0\n1\nt 0 0\n", 10), MK_OK);
	logdir_file(f, MK_LOGDIR_RECOVERY, rp, sizeof(rp));
	assert_int_equal(mk_file_replace(rp, "0\n1\nt 0 11\n", 11), MK_OK);
	open_refused(f, 1 << 20, 4096, "recovery-point-offset-checkpoint: t 0: recovery_point 11 is past the log's end 10");
	assert_file_text(rp, "0\n1\nt 0 11\n");
	assert_int_equal(mk_file_replace(rp, "0\n1\nt 0 10\n", 11), MK_OK);
	mk_log *log = open_log(f, 1 << 20, 4096, 0);
	assert_int_equal(mk_log_start_offset(log), 0);
	assert_int_equal(mk_log_end_offset(log), 10);
	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, 0, 10, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 0, 9);
	mk_log_close(log);
	mk_strbuf_release(&out);
}

/*
 * A log written before the Kafka files: its checkpoint of version 1 holds
 * the log start, the recovery point and the epochs; they are read, written
 * to the broker's files and leader-epoch-checkpoint, and the checkpoint
 * becomes version 2 (the segment list alone).
 */
static void test_checkpoint_version1_read(void **state)
{
	fixture *f = *state;
	char ck[256], path[256];
	mk_log *log = open_log(f, 1 << 20, 4096, 0);
	for (int i = 0; i < 5; i++)
		append_n(log, i < 2 ? 0 : 3, 2, NULL, 0);
	mk_log_close(log);
	/* Back to what the version before wrote. */
	tl_logdir_wipe_kafka_files(f);
	snprintf(ck, sizeof(ck), "%s/checkpoint", f->dir);
	const char *v1 = "version 1\nlog_start_offset 2\nrecovery_point 10\n"
			 "epoch 0 0\nepoch 3 4\n";
	assert_int_equal(mk_file_replace(ck, v1, strlen(v1)), MK_OK);
	log = open_log(f, 1 << 20, 4096, 0);
	assert_int_equal(mk_log_start_offset(log), 2);
	assert_int_equal(mk_log_end_offset(log), 10);
	const mk_epoch_entry *ep;
	assert_int_equal(mk_log_epochs(log, &ep), 2);
	assert_int_equal(ep[1].epoch, 3);
	assert_int_equal(ep[1].start_offset, 4);
	mk_log_close(log);
	assert_file_text(ck, "version 2\nsegments 0\n");
	snprintf(path, sizeof(path), "%s/leader-epoch-checkpoint", f->dir);
	assert_file_text(path, "0\n2\n0 0\n3 4\n");
	logdir_file(f, MK_LOGDIR_START, path, sizeof(path));
	assert_file_text(path, "0\n1\nt 0 2\n");
	logdir_file(f, MK_LOGDIR_RECOVERY, path, sizeof(path));
	assert_file_text(path, "0\n1\nt 0 10\n");
}

/* DeleteRecords past the recovery point fsyncs first: the start never
 * passes durable records, so a crash losing the unflushed tail leaves a
 * log that opens (mk_log_crash keeps only what was fsynced). */
static void test_advance_start_durable(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f, 1 << 20, 4096, 0);
	append_n(log, 0, 4, NULL, 0);
	assert_int_equal(mk_log_advance_start(log, 3), MK_OK);
	mk_log_crash(log, false);
	log = open_log(f, 1 << 20, 4096, 0);
	assert_int_equal(mk_log_start_offset(log), 3);
	assert_int_equal(mk_log_end_offset(log), 4);
	mk_log_close(log);
}

/*
 * A kill between the write of one of the log's Kafka files and its rename
 * (a new epoch's leader-epoch-checkpoint; the recovery point a flush
 * moves, in the broker directory's recovery-point-offset-checkpoint): the
 * file says what it said, the temporary file beside it holds the new
 * text, and the reopen has every record and the whole epoch cache.
 */
static void test_kafka_files_crash_points(void **state)
{
	fixture *f = *state;
	static const struct { const char *point, *file, *old, *new; } k[] = {
		{ "log.epochs.after-write", "t-0/leader-epoch-checkpoint",
		  "0\n1\n0 0\n", "0\n2\n0 0\n1 10\n" },
		{ "logdir.recovery-point.after-write",
		  "recovery-point-offset-checkpoint", "0\n1\nt 0 8\n",
		  "0\n1\nt 0 12\n" },
	};
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		tl_logdir_wipe(f);
		mk_log *log = open_log(f, 1000, 100, 0);
		for (int j = 0; j < 4; j++)
			append_n(log, 0, 2, NULL, 100);
		mk_log_close(log);
		char path[256], tmp[300];
		snprintf(path, sizeof(path), "%s/%s", f->root, k[i].file);
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		assert_file_text(path, k[i].old);
		fflush(NULL);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			mk_log *child = NULL;
			mk_log_config cfg = { 1000, 100, 0, NULL, NULL };
			if (mk_log_open(f->dir, &cfg, &child, NULL))
				_exit(2);
			append_n(child, 0, 2, NULL, 100);
			mk_failpoint_arm(k[i].point, 1);
			append_n(child, 1, 2, NULL, 100);   /* a new epoch */
			mk_log_flush(child);
			_exit(3);       /* the point was not reached */
		}
		int st;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFSIGNALED(st));
		assert_int_equal(WTERMSIG(st), SIGKILL);
		assert_file_text(path, k[i].old);
		assert_file_text(tmp, k[i].new);
		log = open_log(f, 1000, 100, 0);
		assert_int_equal(mk_log_end_offset(log), 12);
		const mk_epoch_entry *ep;
		assert_int_equal(mk_log_epochs(log, &ep), 2);
		assert_int_equal(ep[1].epoch, 1);
		assert_int_equal(ep[1].start_offset, 10);
		mk_strbuf out = MK_STRBUF_INIT;
		assert_int_equal(mk_log_read(log, 0, 12, SIZE_MAX, &out), MK_OK);
		check_frames(&out, 0, 11);
		mk_strbuf_release(&out);
		mk_log_close(log);
		assert_int_equal(tl_ckpt_offset(f->root, MK_LOGDIR_RECOVERY, "t", 0),
				 12);
	}
}

/* A reset killed at each of its steps leaves a log that opens: the old
 * one whole (the new segment past a gap goes), or the new empty one. */
static void test_reset_crash_points(void **state)
{
	fixture *f = *state;
	const char *points[] = { "log.reset.after-create",
				 "log.reset.after-checkpoint" };
	const int64_t start_after[] = { 0, 40 }, end_after[] = { 6, 40 };
	mk_log *log = open_log(f, 1 << 20, 4096, 0);
	append_n(log, 0, 6, NULL, 0);
	mk_log_close(log);
	for (size_t k = 0; k < 2; k++) {
		fflush(NULL);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			mk_log *child = NULL;
			mk_log_config cfg = { 1 << 20, 4096, 0, NULL, NULL };
			if (mk_log_open(f->dir, &cfg, &child, NULL))
				_exit(2);
			mk_failpoint_arm(points[k], 1);
			mk_log_reset_to(child, 40);
			_exit(3);       /* the point was not reached */
		}
		int st;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFSIGNALED(st));
		assert_int_equal(WTERMSIG(st), SIGKILL);
		log = open_log(f, 1 << 20, 4096, 0);
		assert_int_equal(mk_log_start_offset(log), start_after[k]);
		assert_int_equal(mk_log_end_offset(log), end_after[k]);
		mk_log_close(log);
	}
	/* And a reset to at or below the end is refused. */
	log = open_log(f, 1 << 20, 4096, 0);
	assert_int_equal(mk_log_reset_to(log, 40), MK_INVALID_REQUEST);
	mk_log_close(log);
}

/* ---- truncation ---------------------------------------------------------- */

static void test_truncate(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f, 1000, 100, 0);
	for (int i = 0; i < 12; i++)
		append_n(log, i < 6 ? 1 : 2, 2, NULL, 100);   /* 24 records */
	size_t nseg = mk_log_segment_count(log);
	assert_true(nseg >= 3);
	mk_segment_info mid, last;
	mk_log_segment_info(log, 1, &mid);
	mk_log_segment_info(log, nseg - 1, &last);
	const mk_epoch_entry *ep;
	assert_int_equal(mk_log_epochs(log, &ep), 2);

	/* Not a boundary: refused, nothing changed. */
	int64_t cut = mid.base_offset + 2;
	assert_int_equal(mk_log_truncate_to(log, cut + 1), MK_INVALID_REQUEST);
	assert_int_equal(mk_log_truncate_to(log, -1), MK_INVALID_REQUEST);
	assert_int_equal(mk_log_end_offset(log), 24);
	assert_int_equal(mk_log_segment_count(log), nseg);
	/* At or past the end: nothing happens. */
	assert_int_equal(mk_log_truncate_to(log, 24), MK_OK);
	assert_int_equal(mk_log_truncate_to(log, 1000), MK_OK);
	assert_int_equal(mk_log_end_offset(log), 24);

	/* A boundary inside the second segment, before epoch 2 began (12). */
	assert_true(cut < 12);
	char path[256], lpath[256];
	seg_path(f, mid.base_offset, "log", path, sizeof(path));
	seg_path(f, last.base_offset, "log", lpath, sizeof(lpath));
	struct stat before, after;
	assert_int_equal(stat(path, &before), 0);
	assert_int_equal(mk_log_truncate_to(log, cut), MK_OK);
	assert_int_equal(mk_log_end_offset(log), cut);
	assert_int_equal(mk_log_segment_count(log), 2);
	assert_int_equal(stat(path, &after), 0);
	assert_int_equal(after.st_ino, before.st_ino);   /* in place */
	assert_true(after.st_size < before.st_size);
	assert_false(exists(lpath));
	mk_log_segment_info(log, 1, &mid);
	assert_true(mid.active);
	assert_int_equal(mid.size, (uint64_t)after.st_size);
	/* Epoch 2 started at 12, past the cut: trimmed. */
	assert_int_equal(mk_log_epochs(log, &ep), 1);
	assert_int_equal(ep[0].epoch, 1);
	assert_int_equal(mk_log_latest_epoch(log), 1);

	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, 0, 100, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 0, cut - 1);
	/* Appends continue at the cut, with a new epoch. */
	assert_int_equal(append_n(log, 3, 2, NULL, 100), cut);
	assert_int_equal(mk_log_epochs(log, &ep), 2);
	assert_int_equal(ep[1].epoch, 3);
	assert_int_equal(ep[1].start_offset, cut);

	/* Time lookups see the truncated and the new batches right. */
	for (int64_t k = 0; k <= cut + 2; k++) {
		int64_t off;
		assert_int_equal(mk_log_offset_for_time(log, 1000 + k, &off),
				 MK_OK);
		assert_int_equal(off, k);
	}
	mk_log_close(log);

	/* Persisted: end, epochs, data. */
	log = open_log(f, 1000, 100, 0);
	assert_int_equal(mk_log_end_offset(log), cut + 2);
	assert_int_equal(mk_log_epochs(log, &ep), 2);
	assert_int_equal(ep[1].epoch, 3);
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 0, 100, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 0, cut + 1);

	/* Truncating at a segment base empties that segment in place. */
	mk_log_segment_info(log, 1, &mid);
	assert_int_equal(mk_log_truncate_to(log, mid.base_offset), MK_OK);
	assert_int_equal(mk_log_end_offset(log), mid.base_offset);
	assert_int_equal(mk_log_segment_count(log), 2);
	mk_log_segment_info(log, 1, &mid);
	assert_int_equal(mid.size, 0);
	/* And to 0: everything goes. */
	assert_int_equal(mk_log_truncate_to(log, 0), MK_OK);
	assert_int_equal(mk_log_end_offset(log), 0);
	assert_int_equal(mk_log_segment_count(log), 1);
	assert_int_equal(mk_log_epochs(log, &ep), 0);
	assert_int_equal(mk_log_size_bytes(log), 0);
	mk_log_close(log);
	log = open_log(f, 1000, 100, 0);
	assert_int_equal(mk_log_end_offset(log), 0);
	assert_int_equal(mk_log_latest_epoch(log), -1);
	mk_log_close(log);
	mk_strbuf_release(&out);
}

/* ---- recovery ------------------------------------------------------------ */

static void test_tail_repair(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f, 1 << 20, 4096, 0);
	for (int i = 0; i < 5; i++)
		append_n(log, 0, 2, NULL, 0);
	uint64_t valid = mk_log_size_bytes(log);
	mk_log_close(log);
	char path[256];
	seg_path(f, 0, "log", path, sizeof(path));

	/* A partial frame: magic, a length, a few bytes. */
	append_bytes(path, "MKF1\x00\x00\x00\x20partial", 15);
	log = open_log(f, 1 << 20, 4096, 0);
	assert_int_equal(mk_log_end_offset(log), 10);
	assert_int_equal(file_size(path), (off_t)valid);
	mk_log_close(log);

	/* Garbage that is not a frame at all. */
	append_bytes(path, "garbage garbage garbage garbage", 31);
	log = open_log(f, 1 << 20, 4096, 0);
	assert_int_equal(mk_log_end_offset(log), 10);
	assert_int_equal(file_size(path), (off_t)valid);

	/* A whole frame with a bad CRC, then valid data after it: cut at
	 * the bad one. */
	mk_log_close(log);
	mk_strbuf fr = MK_STRBUF_INIT;
	build(&fr, 10, 0, 1, NULL, 0);
	fr.buf[fr.len - 2] ^= 1;
	append_bytes(path, fr.buf, fr.len);
	fr.buf[fr.len - 2] ^= 1;
	append_bytes(path, fr.buf, fr.len);
	log = open_log(f, 1 << 20, 4096, 0);
	assert_int_equal(mk_log_end_offset(log), 10);
	assert_int_equal(file_size(path), (off_t)valid);

	/* A valid frame whose offsets go back: also cut. */
	mk_log_close(log);
	build(&fr, 4, 0, 1, NULL, 0);
	append_bytes(path, fr.buf, fr.len);
	log = open_log(f, 1 << 20, 4096, 0);
	assert_int_equal(mk_log_end_offset(log), 10);
	assert_int_equal(file_size(path), (off_t)valid);

	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, 0, 10, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 0, 9);
	/* And appends go on from there. */
	append_n(log, 0, 1, NULL, 0);
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 0, 11, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 0, 10);
	mk_strbuf_release(&out);
	mk_strbuf_release(&fr);
	mk_log_close(log);
}

static void test_index_rebuild(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f, 1500, 400, 0);
	for (int i = 0; i < 30; i++)
		append_n(log, 0, 2, NULL, 30);
	size_t n = mk_log_segment_count(log);
	assert_true(n >= 3);
	mk_segment_info closed, act;
	mk_log_segment_info(log, 1, &closed);
	mk_log_segment_info(log, n - 1, &act);
	mk_log_close(log);

	char cidx[256], aidx[256];
	seg_path(f, closed.base_offset, "index", cidx, sizeof(cidx));
	seg_path(f, act.base_offset, "index", aidx, sizeof(aidx));
	mk_strbuf orig_c = MK_STRBUF_INIT, orig_a = MK_STRBUF_INIT,
		  now = MK_STRBUF_INIT;
	read_file_bytes(cidx, &orig_c);
	read_file_bytes(aidx, &orig_a);
	/* sparse but several entries */
	assert_true(orig_c.len >= 2 * OFF_W);
	assert_int_equal(unlink(cidx), 0);
	assert_int_equal(unlink(aidx), 0);

	log = open_log(f, 1500, 400, 0);
	/* The active index is rebuilt at open, the closed one on use. */
	assert_true(exists(aidx));
	read_file_bytes(aidx, &now);
	assert_int_equal(now.len, orig_a.len);
	assert_memory_equal(now.buf, orig_a.buf, now.len);
	assert_false(exists(cidx));
	mk_strbuf out = MK_STRBUF_INIT;
	int64_t from = closed.base_offset + 5;
	assert_int_equal(mk_log_read(log, from, from + 1, SIZE_MAX, &out), MK_OK);
	check_frames(&out, from - 1, from);
	assert_true(exists(cidx));
	read_file_bytes(cidx, &now);
	assert_int_equal(now.len, orig_c.len);
	assert_memory_equal(now.buf, orig_c.buf, now.len);
	mk_log_close(log);

	/* An invalid index (entries out of order) is rebuilt as well. */
	uint8_t junk[2 * OFF_W];
	memset(junk, 0, sizeof(junk));
	mk_store_be32(junk, 9);
	mk_store_be32(junk + 8, 1);
	mk_store_be32(junk + 8 + 4, 50);
	write_file(cidx, junk, sizeof(junk));
	log = open_log(f, 1500, 400, 0);
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 0, 60, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 0, 59);
	read_file_bytes(cidx, &now);
	assert_int_equal(now.len, orig_c.len);
	assert_memory_equal(now.buf, orig_c.buf, now.len);
	mk_log_close(log);

	/* An index that validates but points into the middle of a batch:
	 * the read rebuilds it instead of blaming the log. */
	uint8_t *e1 = (uint8_t *)orig_c.buf + OFF_W;
	mk_store_be32(e1 + 4, mk_load_be32(e1 + 4) + 3);
	write_file(cidx, orig_c.buf, orig_c.len);
	log = open_log(f, 1500, 400, 0);
	from = closed.base_offset + (int64_t)mk_load_be32(e1);
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, from, from + 2, SIZE_MAX, &out), MK_OK);
	check_frames(&out, from, from + 1);
	mk_log_close(log);

	/* A missing .timeindex next to a valid .index: both rebuilt on
	 * first use, the .timeindex as it was; then one valid on its own
	 * whose first entry is not the first batch's (the offset index's
	 * first): rebuilt too. */
	char ctim[256];
	seg_path(f, closed.base_offset, "timeindex", ctim, sizeof(ctim));
	mk_strbuf orig_t = MK_STRBUF_INIT;
	read_file_bytes(ctim, &orig_t);
	assert_true(orig_t.len >= 2 * TIME_W);
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 0) {
			assert_int_equal(unlink(ctim), 0);
		} else {
			mk_strbuf_reset(&now);
			mk_strbuf_add(&now, orig_t.buf, orig_t.len);
			assert_true(mk_load_be32((uint8_t *)now.buf + TIME_W + 8) > 1);
			mk_store_be32((uint8_t *)now.buf + 8, 1);
			write_file(ctim, now.buf, now.len);
		}
		log = open_log(f, 1500, 400, 0);
		from = closed.base_offset + 5;
		mk_strbuf_reset(&out);
		assert_int_equal(mk_log_read(log, from, from + 1, SIZE_MAX, &out),
				 MK_OK);
		check_frames(&out, from - 1, from);
		read_file_bytes(ctim, &now);
		assert_int_equal(now.len, orig_t.len);
		assert_memory_equal(now.buf, orig_t.buf, now.len);
		read_file_bytes(cidx, &now);
		assert_int_equal(now.len, orig_c.len);
		mk_log_close(log);
	}

	mk_strbuf_release(&out);
	mk_strbuf_release(&orig_c);
	mk_strbuf_release(&orig_a);
	mk_strbuf_release(&orig_t);
	mk_strbuf_release(&now);
}

static void test_closed_damage(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f, 1000, 100, 0);
	for (int i = 0; i < 20; i++)
		append_n(log, 0, 2, NULL, 100);
	size_t n = mk_log_segment_count(log);
	assert_true(n >= 3);
	mk_segment_info first, second;
	mk_log_segment_info(log, 0, &first);
	mk_log_segment_info(log, 1, &second);
	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, 0, 2, SIZE_MAX, &out), MK_OK);
	size_t flen = out.len;   /* every batch has this size */
	mk_log_close(log);

	/* A byte in the payload of the second batch of the first segment. */
	char path[256];
	seg_path(f, 0, "log", path, sizeof(path));
	flip_byte(path, (off_t)(flen + 40));

	log = open_log(f, 1000, 100, 0);
	assert_int_equal(mk_log_end_offset(log), 40);
	/* Batch 0 is fine; reading across batch 1 fails, naming the file
	 * and the batch's position. */
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 0, 2, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 0, 1);
	mk_strbuf_reset(&out);
	mk_strbuf_addstr(&out, "keep");
	assert_int_equal(mk_log_read(log, 2, 40, SIZE_MAX, &out),
			 MK_KAFKA_STORAGE_ERROR);
	assert_int_equal(out.len, 4);   /* out left as it was */
	char expect[512];
	snprintf(expect, sizeof(expect), "%s at byte %zu: ", path, flen);
	const char *err = mk_log_error(log);
	if (strncmp(err, expect, strlen(expect)) != 0)
		print_error("error: %s\n", err);
	assert_int_equal(strncmp(err, expect, strlen(expect)), 0);
	assert_non_null(strstr(err, "crc"));
	assert_int_equal(mk_log_read(log, 0, 40, SIZE_MAX, &out),
			 MK_KAFKA_STORAGE_ERROR);
	/* The other segments read fine. */
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, second.base_offset, 40, SIZE_MAX,
				     &out), MK_OK);
	check_frames(&out, second.base_offset, 39);
	/* The time lookup scanning the damaged batch fails the same way. */
	int64_t off;
	assert_int_equal(mk_log_offset_for_time(log, 1003, &off),
			 MK_KAFKA_STORAGE_ERROR);
	assert_int_equal(mk_log_offset_for_time(log, 1000 + second.base_offset,
						&off), MK_OK);
	assert_int_equal(off, second.base_offset);
	/* Truncating into the damage is refused as a storage error too. */
	assert_int_equal(mk_log_truncate_to(log, 4), MK_KAFKA_STORAGE_ERROR);
	assert_int_equal(mk_log_end_offset(log), 40);
	mk_log_close(log);
	mk_strbuf_release(&out);
}

static void put_be_at(const char *path, off_t at, uint64_t v, int width)
{
	uint8_t b[8];
	if (width == 8)
		mk_store_be64(b, v);
	else
		mk_store_be32(b, (uint32_t)v);
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, b, (size_t)width, at), width);
	close(fd);
}

/* A view placed at [base, base + delta] in epoch e. */
static mk_batch_view placed(int64_t base, int32_t delta, int32_t e)
{
	mk_batch_view b;
	memset(&b, 0, sizeof(b));
	b.meta.base_offset = base;
	b.meta.leader_epoch = e;
	b.last_offset_delta = delta;
	return b;
}

/*
 * The placement checks both walks share (mk_batch_misplaced), with each
 * walk's own messages: after the base and the batch before, below the
 * next segment's base, the epoch not going down, nor (with a cache) past
 * its latest; a refused batch leaves the place as it was.
 */
static void test_batch_place(void **state)
{
	(void)state;
	mk_batch_place pl;
	mk_batch_view b;
	mk_batch_place_init(&pl, 10, 20, 3);    /* the log's: cache latest 3 */
	b = placed(9, 0, 1);
	assert_string_equal(mk_batch_misplaced(&pl, &b), "offset below the segment base");
	b = placed(10, 1, 2);
	assert_null(mk_batch_misplaced(&pl, &b));
	assert_int_equal(pl.next, 12);
	assert_int_equal(pl.epoch, 2);
	b = placed(11, 0, 2);
	assert_string_equal(mk_batch_misplaced(&pl, &b), "offsets out of order");
	b = placed(12, 8, 2);
	assert_string_equal(mk_batch_misplaced(&pl, &b),
			    "offset at or past the next segment's base");
	b = placed(12, 0, 1);
	assert_string_equal(mk_batch_misplaced(&pl, &b), "leader epoch out of order");
	b = placed(12, 0, 4);
	assert_string_equal(mk_batch_misplaced(&pl, &b), "leader epoch out of order");
	assert_int_equal(pl.next, 12);          /* refusals moved nothing */
	assert_int_equal(pl.epoch, 2);
	b = placed(12, 0, -1);                  /* no epoch: not compared */
	assert_null(mk_batch_misplaced(&pl, &b));
	assert_int_equal(pl.epoch, 2);
	b = placed(15, 4, 3);                   /* a gap is fine; 19 < 20 */
	assert_null(mk_batch_misplaced(&pl, &b));
	assert_int_equal(pl.next, 20);

	mk_batch_place_init(&pl, 0, INT64_MAX, MK_PLACE_NO_CACHE);  /* a scan */
	b = placed(0, 0, 5);
	assert_null(mk_batch_misplaced(&pl, &b));
	b = placed(1, 0, 4);
	assert_string_equal(mk_batch_misplaced(&pl, &b), "leader epoch went down");
	b = placed(1, 0, 1000);                 /* no cache to exceed */
	assert_null(mk_batch_misplaced(&pl, &b));
}

/*
 * Base offset and epoch lie outside the frame CRC (codec.h): on disk, the
 * log's order checks stand guard. A closed segment whose batch moved to an
 * earlier offset, or to an epoch above the cache's latest, fails the read
 * naming the batch; an active segment whose epoch goes down is cut there
 * at recovery.
 */
static void test_stamp_sanity(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f, 1000, 100, 0);
	for (int i = 0; i < 20; i++)
		append_n(log, i < 10 ? 1 : 2, 2, NULL, 100);
	assert_true(mk_log_segment_count(log) >= 3);
	mk_segment_info last;
	mk_log_segment_info(log, mk_log_segment_count(log) - 1, &last);
	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, 0, 2, SIZE_MAX, &out), MK_OK);
	size_t flen = out.len;   /* every batch has this size */
	assert_true(last.size >= 2 * flen);
	mk_log_close(log);

	char path[256], tail[256];
	seg_path(f, 0, "log", path, sizeof(path));
	seg_path(f, last.base_offset, "log", tail, sizeof(tail));
	off_t b1 = (off_t)flen;   /* the second batch, base offset 2 */

	/* An earlier base offset: offsets out of order. */
	put_be_at(path, b1 + MK_FRAME_OFF_BASE_OFFSET, 0, 8);
	log = open_log(f, 1000, 100, 0);
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 0, 40, SIZE_MAX, &out),
			 MK_KAFKA_STORAGE_ERROR);
	assert_non_null(strstr(mk_log_error(log), "offsets out of order"));
	mk_log_close(log);
	put_be_at(path, b1 + MK_FRAME_OFF_BASE_OFFSET, 2, 8);

	/* An epoch past the latest known: refused. */
	put_be_at(path, b1 + MK_FRAME_OFF_LEADER_EPOCH, 7, 4);
	log = open_log(f, 1000, 100, 0);
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 0, 40, SIZE_MAX, &out),
			 MK_KAFKA_STORAGE_ERROR);
	assert_non_null(strstr(mk_log_error(log), "leader epoch out of order"));
	mk_log_close(log);
	/* An epoch below the batch before it: refused too. */
	put_be_at(path, b1 + MK_FRAME_OFF_LEADER_EPOCH, 1, 4);
	put_be_at(path, MK_FRAME_OFF_LEADER_EPOCH, 2, 4);
	log = open_log(f, 1000, 100, 0);
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 0, 40, SIZE_MAX, &out),
			 MK_KAFKA_STORAGE_ERROR);
	assert_non_null(strstr(mk_log_error(log), "leader epoch out of order"));
	mk_log_close(log);
	put_be_at(path, MK_FRAME_OFF_LEADER_EPOCH, 1, 4);
	log = open_log(f, 1000, 100, 0);
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 0, 40, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 0, 39);
	mk_log_close(log);

	/* The active segment's last batch going down to epoch 1 is where
	 * recovery cuts: below the recovery point, so only once the
	 * checkpoint is gone. */
	put_be_at(tail, (off_t)(last.size - flen) + MK_FRAME_OFF_LEADER_EPOCH,
		  1, 4);
	open_refused(f, 1000, 100, "recovery_point 40 is past the log's end 38");
	drop_recovery_point(f);
	log = open_log(f, 1000, 100, 0);
	assert_int_equal(mk_log_end_offset(log), 38);
	assert_int_equal(mk_log_latest_epoch(log), 2);
	mk_log_close(log);
	mk_strbuf_release(&out);
}

static void test_startup_skips_closed(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f, 1000, 100, 0);
	for (int i = 0; i < 20; i++)
		append_n(log, 0, 2, NULL, 100);
	size_t n = mk_log_segment_count(log);
	mk_segment_info first;
	mk_log_segment_info(log, 0, &first);
	mk_log_close(log);

	/* Overwrite the middle of the first (closed) segment entirely. */
	char path[256];
	seg_path(f, 0, "log", path, sizeof(path));
	int fd = open(path, O_WRONLY);
	char junk[300];
	memset(junk, 'Z', sizeof(junk));
	assert_int_equal(pwrite(fd, junk, sizeof(junk), (off_t)first.size / 3),
			 (ssize_t)sizeof(junk));
	close(fd);

	log = open_log(f, 1000, 100, 0);
	assert_int_equal(mk_log_segment_count(log), n);
	assert_int_equal(mk_log_end_offset(log), 40);
	assert_int_equal(mk_log_latest_epoch(log), 0);
	assert_string_equal(mk_log_error(log), "");
	/* Only a read finds it. */
	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, 0, 40, SIZE_MAX, &out),
			 MK_KAFKA_STORAGE_ERROR);
	assert_non_null(strstr(mk_log_error(log), path));
	mk_strbuf_release(&out);
	mk_log_close(log);
}

static void test_ignores_other_files(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f, 1 << 20, 4096, 0);
	append_n(log, 0, 2, NULL, 0);
	mk_log_close(log);
	const char *names[] = { "foo.log", "123.log", "0000000000000000000x.log",
				"99999999999999999999.log",
				"000000000000000000001.log", "notes.txt" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char path[256];
		snprintf(path, sizeof(path), "%s/%s", f->dir, names[i]);
		int fd = open(path, O_WRONLY | O_CREAT, 0644);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, "junk", 4), 4);
		close(fd);
	}
	log = open_log(f, 1 << 20, 4096, 0);
	assert_int_equal(mk_log_segment_count(log), 1);
	assert_int_equal(mk_log_end_offset(log), 2);
	mk_log_close(log);
}

/* ---- the epoch cache and the checkpoint ---------------------------------- */

static void write_text(const char *path, const char *text)
{
	assert_int_equal(mk_file_replace(path, text, strlen(text)), MK_OK);
}

static void test_epoch_cache(void **state)
{
	fixture *f = *state;
	/* Three batches per segment: 6..9 (epoch 3) in the active one. */
	mk_strbuf fr = MK_STRBUF_INIT;
	build(&fr, 0, 0, 2, NULL, 0);
	int64_t sb = 3 * (int64_t)fr.len + 10;
	mk_strbuf_release(&fr);
	mk_log *log = open_log(f, sb, 4096, 0);
	append_n(log, 0, 2, NULL, 0);    /* 0..1 epoch 0 */
	append_n(log, 0, 2, NULL, 0);    /* 2..3 */
	append_n(log, 1, 2, NULL, 0);    /* 4..5 epoch 1 */
	append_n(log, 3, 2, NULL, 0);    /* 6..7 epoch 3 */
	append_n(log, 3, 2, NULL, 0);    /* 8..9 */
	const mk_epoch_entry *ep;
	assert_int_equal(mk_log_epochs(log, &ep), 3);
	assert_int_equal(ep[0].epoch, 0);
	assert_int_equal(ep[0].start_offset, 0);
	assert_int_equal(ep[1].epoch, 1);
	assert_int_equal(ep[1].start_offset, 4);
	assert_int_equal(ep[2].epoch, 3);
	assert_int_equal(ep[2].start_offset, 6);

	int32_t e;
	int64_t end;
	mk_log_end_offset_for_epoch(log, 0, &e, &end);
	assert_int_equal(e, 0);
	assert_int_equal(end, 4);
	mk_log_end_offset_for_epoch(log, 1, &e, &end);
	assert_int_equal(e, 1);
	assert_int_equal(end, 6);
	mk_log_end_offset_for_epoch(log, 2, &e, &end);   /* largest <= 2 */
	assert_int_equal(e, 1);
	assert_int_equal(end, 6);
	mk_log_end_offset_for_epoch(log, 3, &e, &end);   /* latest: the end */
	assert_int_equal(e, 3);
	assert_int_equal(end, 10);
	mk_log_end_offset_for_epoch(log, 9, &e, &end);
	assert_int_equal(e, 3);
	assert_int_equal(end, 10);
	mk_log_end_offset_for_epoch(log, -1, &e, &end);
	assert_int_equal(e, -1);

	/* Written to leader-epoch-checkpoint as soon as seen, in Kafka's
	 * format (version 0, the count, then "EPOCH START_OFFSET"). */
	char ck[256];
	snprintf(ck, sizeof(ck), "%s/leader-epoch-checkpoint", f->dir);
	mk_strbuf text = MK_STRBUF_INIT;
	read_file_bytes(ck, &text);
	assert_string_equal(text.buf, "0\n3\n0 0\n1 4\n3 6\n");
	size_t nseg = mk_log_segment_count(log);
	assert_true(nseg >= 2);
	mk_log_close(log);

	/* Persisted across a reopen. */
	log = open_log(f, sb, 4096, 0);
	assert_int_equal(mk_log_epochs(log, &ep), 3);
	assert_int_equal(ep[2].epoch, 3);
	assert_int_equal(ep[2].start_offset, 6);
	mk_segment_info act;
	mk_log_segment_info(log, mk_log_segment_count(log) - 1, &act);
	mk_log_close(log);

	/* A file that lagged (lost the last epoch) and one that ran ahead
	 * (an epoch past the end) are both corrected from the active
	 * segment. */
	assert_true(act.base_offset <= 6);
	write_text(ck, "0\n2\n0 0\n1 4\n");
	log = open_log(f, sb, 4096, 0);
	assert_int_equal(mk_log_epochs(log, &ep), 3);
	assert_int_equal(ep[2].epoch, 3);
	assert_int_equal(ep[2].start_offset, 6);
	mk_log_close(log);
	write_text(ck, "0\n4\n0 0\n1 4\n3 6\n7 15\n");
	log = open_log(f, sb, 4096, 0);
	assert_int_equal(mk_log_epochs(log, &ep), 3);
	assert_int_equal(mk_log_latest_epoch(log), 3);
	mk_log_close(log);
	read_file_bytes(ck, &text);
	assert_string_equal(text.buf, "0\n3\n0 0\n1 4\n3 6\n");

	/* Truncation (here inside a closed segment whose indexes were never
	 * loaded) trims it, persistently. */
	log = open_log(f, sb, 4096, 0);
	assert_int_equal(mk_log_truncate_to(log, 4), MK_OK);
	assert_int_equal(mk_log_segment_count(log), 1);
	assert_int_equal(mk_log_epochs(log, &ep), 1);
	mk_log_end_offset_for_epoch(log, 3, &e, &end);
	assert_int_equal(e, 0);
	assert_int_equal(end, 4);
	append_n(log, 4, 2, NULL, 0);
	mk_log_close(log);
	log = open_log(f, sb, 4096, 0);
	assert_int_equal(mk_log_epochs(log, &ep), 2);
	assert_int_equal(ep[1].epoch, 4);
	assert_int_equal(ep[1].start_offset, 4);
	assert_int_equal(mk_log_end_offset(log), 6);
	read_file_bytes(ck, &text);
	assert_string_equal(text.buf, "0\n2\n0 0\n4 4\n");
	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, 0, 6, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 0, 5);
	mk_strbuf_release(&out);
	mk_log_close(log);
	mk_strbuf_release(&text);
}

/* The checkpoint parser on its own: strict integers, strict lines. */
static mk_err ckpt_try(const char *text, mk_log_checkpoint *c, mk_strbuf *why)
{
	char *copy = strdup(text);
	assert_non_null(copy);
	mk_strbuf_reset(why);
	mk_err err = mk_log_checkpoint_parse("ck", copy, c, why);
	free(copy);
	return err;
}

static void test_checkpoint_parse(void **state)
{
	(void)state;
	mk_log_checkpoint c;
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(ckpt_try("version 1\nlog_start_offset 3\n"
				  "recovery_point 9\nepoch 0 3\nepoch 2 7\n",
				  &c, &why), MK_OK);
	assert_int_equal(c.start_offset, 3);
	assert_int_equal(c.recovery_point, 9);
	assert_int_equal(c.nepochs, 2);
	assert_int_equal(c.epochs[1].epoch, 2);
	assert_int_equal(c.epochs[1].start_offset, 7);
	free(c.epochs);
	free(c.bases);
	assert_int_equal(ckpt_try("version 1\nlog_start_offset 9223372036854775807\n"
				  "recovery_point 0\nepoch 2147483647 1\n",
				  &c, &why), MK_OK);
	assert_true(c.start_offset == INT64_MAX);
	free(c.epochs);
	free(c.bases);
	/* Version 2: the segment list alone (the offsets and the epochs are
	 * in Kafka's files). */
	assert_int_equal(ckpt_try("version 2\nsegments 0 17 40\n", &c, &why),
			 MK_OK);
	assert_int_equal(c.version, 2);
	assert_int_equal(c.nbases, 3);
	assert_int_equal(c.bases[2], 40);
	assert_int_equal(c.nepochs, 0);
	assert_true(c.start_offset == -1 && c.recovery_point == -1);
	free(c.bases);
	assert_int_equal(ckpt_try("version 2\n", &c, &why), MK_OK);
	assert_int_equal(c.nbases, 0);

	static const struct { const char *text, *reason; } bad[] = {
		{ "version 1\nlog_start_offset +3\nrecovery_point 9\n",
		  "line 2: bad log_start_offset" },
		{ "version 1\nlog_start_offset  3\nrecovery_point 9\n",
		  "line 2: bad log_start_offset" },
		{ "version 1\nlog_start_offset 3 \nrecovery_point 9\n",
		  "line 2: bad log_start_offset" },
		{ "version 1\nlog_start_offset -1\nrecovery_point 9\n",
		  "line 2: bad log_start_offset" },
		{ "version 1\nlog_start_offset 9223372036854775808\nrecovery_point 9\n",
		  "line 2: bad log_start_offset" },
		{ "version 1\nlog_start_offset 3\nrecovery_point 0x9\n",
		  "line 3: bad recovery_point" },
		{ "version 1\nlog_start_offset 3\nrecovery_point\n",
		  "line 3: unknown line" },
		{ "version 1\nlog_start_offset 3\nrecovery_point 9\nepoch 2147483648 1\n",
		  "line 4: bad epoch line" },
		{ "version 1\nlog_start_offset 3\nrecovery_point 9\nepoch 1\n",
		  "line 4: bad epoch line" },
		{ "version 1\nlog_start_offset 3\nrecovery_point 9\nepoch 1 2 3\n",
		  "line 4: bad epoch line" },
		{ "version 1\nlog_start_offset 3\nrecovery_point 9\nepoch 2 5\nepoch 1 6\n",
		  "line 5: epochs out of order" },
		{ "version 1\nlog_start_offset 3\nrecovery_point 9",
		  "line 3: missing newline" },
		{ "version 3\n", "line 1: unknown version" },
		{ "version 2\nlog_start_offset 3\n", "line 2: unknown line" },
		{ "version 2\nepoch 0 0\n", "line 2: unknown line" },
		{ "version 2\nsegments 5 3\n", "line 2: bad segments line" },
		{ "", "line 0: missing fields" },
		{ "version 1\nlog_start_offset 3\n", "line 2: missing fields" },
		{ "version 1\nlog_start_offset 3\nlog_start_offset 3\n",
		  "line 3: unknown line" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (ckpt_try(bad[i].text, &c, &why) != MK_KAFKA_STORAGE_ERROR)
			print_error("accepted: %s\n", bad[i].text);
		assert_int_equal(ckpt_try(bad[i].text, &c, &why),
				 MK_KAFKA_STORAGE_ERROR);
		char want[128];
		snprintf(want, sizeof(want), "ck: %s", bad[i].reason);
		assert_string_equal(why.buf, want);
		assert_null(c.epochs);
	}
	mk_strbuf_release(&why);
}

static void test_checkpoint_damage(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f, 300, 4096, 0);
	for (int i = 0; i < 6; i++)
		append_n(log, i / 2, 2, NULL, 0);
	assert_true(mk_log_segment_count(log) >= 2);
	mk_log_close(log);
	char ck[256];
	snprintf(ck, sizeof(ck), "%s/checkpoint", f->dir);

	char ep_path[256], start_path[256];
	snprintf(ep_path, sizeof(ep_path), "%s/leader-epoch-checkpoint", f->dir);
	logdir_file(f, MK_LOGDIR_START, start_path, sizeof(start_path));
	mk_strbuf good = MK_STRBUF_INIT, good_start = MK_STRBUF_INIT;
	read_file_bytes(ck, &good);
	read_file_bytes(start_path, &good_start);
	assert_string_equal(good_start.buf, "0\n1\nt 0 0\n");

	/* Damaged, each of the three files: refused, naming the file and
	 * the line, nothing written. */
	static const struct { int which; const char *text, *reason; } bad[] = {
		{ 0, "version 1\nlog_start_offset zero\n",
		  "checkpoint: line 2: bad log_start_offset" },
		{ 1, "0\n2\n0 0\n",
		  "leader-epoch-checkpoint: line 3: only 1 of the 2 entries the count says" },
		{ 1, "1\n1\n0 0\n",
		  "leader-epoch-checkpoint: line 1: unknown version (Kafka's 0 expected)" },
		{ 1, "0\n2\n1 0\n0 4\n",
		  "leader-epoch-checkpoint: line 4: epochs out of order" },
		{ 2, "0\n1\nt 0 x\n",
		  "log-start-offset-checkpoint: line 3: bad offset" },
		{ 2, "0\n2\nt 0 0\nt 0 1\n",
		  "log-start-offset-checkpoint: t 0: given twice" },
		{ 2, "0\n1\nt  0 0\n",
		  "log-start-offset-checkpoint: line 3: an empty field" },
		{ 2, "", "log-start-offset-checkpoint: line 1: empty file" },
	};
	const char *paths[] = { ck, ep_path, start_path };
	mk_log_config cfg = { 600, 4096, 0, NULL, NULL };
	mk_strbuf why = MK_STRBUF_INIT, after = MK_STRBUF_INIT;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mk_strbuf keep = MK_STRBUF_INIT;
		read_file_bytes(paths[bad[i].which], &keep);
		write_text(paths[bad[i].which], bad[i].text);
		log = (mk_log *)1;
		mk_strbuf_reset(&why);
		assert_int_equal(mk_log_open(f->dir, &cfg, &log, &why),
				 MK_KAFKA_STORAGE_ERROR);
		assert_null(log);
		if (!strstr(why.buf, bad[i].reason))
			print_error("refused for: %s\n", why.buf);
		assert_non_null(strstr(why.buf, bad[i].reason));
		read_file_bytes(paths[bad[i].which], &after);
		assert_string_equal(after.buf, bad[i].text);
		write_text(paths[bad[i].which], keep.buf);
		mk_strbuf_release(&keep);
	}

	/* The epochs file missing: the epoch cache is rebuilt from every
	 * segment, and the file written again. */
	assert_int_equal(unlink(ep_path), 0);
	log = open_log(f, 600, 4096, 0);
	const mk_epoch_entry *ep;
	assert_int_equal(mk_log_epochs(log, &ep), 3);
	assert_int_equal(ep[1].epoch, 1);
	assert_int_equal(ep[1].start_offset, 4);
	assert_int_equal(ep[2].start_offset, 8);
	assert_true(exists(ep_path));
	mk_log_close(log);
	read_file_bytes(ep_path, &after);
	assert_string_equal(after.buf, "0\n3\n0 0\n1 4\n2 8\n");
	/* The checkpoint missing: only the segment list goes, and comes
	 * back as it was. */
	assert_int_equal(unlink(ck), 0);
	log = open_log(f, 600, 4096, 0);
	assert_int_equal(mk_log_epochs(log, &ep), 3);
	mk_log_close(log);
	read_file_bytes(ck, &after);
	assert_string_equal(after.buf, good.buf);
	mk_strbuf_release(&why);
	mk_strbuf_release(&after);
	mk_strbuf_release(&good);
	mk_strbuf_release(&good_start);
}

/* ---- crashes ------------------------------------------------------------- */

static void test_crash(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f, 1 << 20, 4096, 0);
	for (int i = 0; i < 4; i++)
		append_n(log, 0, 2, NULL, 0);
	assert_int_equal(mk_log_flush(log), MK_OK);
	uint64_t flushed = mk_log_size_bytes(log);
	for (int i = 0; i < 3; i++)
		append_n(log, 1, 2, NULL, 0);
	assert_int_equal(mk_log_end_offset(log), 14);
	assert_int_equal(mk_log_latest_epoch(log), 1);
	mk_log_crash(log, false);

	/* The unflushed batches are gone, and the epoch seen only in them. */
	log = open_log(f, 1 << 20, 4096, 0);
	assert_int_equal(mk_log_end_offset(log), 8);
	assert_int_equal(mk_log_size_bytes(log), flushed);
	assert_int_equal(mk_log_latest_epoch(log), 0);
	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, 0, 100, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 0, 7);

	/* Torn: a partial frame after the flushed data, repaired at open. */
	append_n(log, 0, 2, NULL, 0);
	mk_log_crash(log, true);
	char path[256];
	seg_path(f, 0, "log", path, sizeof(path));
	assert_true(file_size(path) > (off_t)flushed);
	log = open_log(f, 1 << 20, 4096, 0);
	assert_int_equal(mk_log_end_offset(log), 8);
	assert_int_equal(file_size(path), (off_t)flushed);
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 0, 100, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 0, 7);
	mk_log_close(log);

	/* flush.messages = 2 makes every two records durable, those of
	 * rolled segments included (the flush waits for the flusher). */
	log = open_log(f, 300, 4096, 2);
	for (int i = 0; i < 6; i++)
		append_n(log, 0, 1, NULL, 100);
	assert_true(mk_log_segment_count(log) > 2);
	append_n(log, 0, 1, NULL, 100);  /* 15th record: not yet durable */
	mk_log_crash(log, true);
	log = open_log(f, 300, 4096, 0);
	assert_int_equal(mk_log_end_offset(log), 14);
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 0, 100, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 0, 13);
	mk_log_close(log);
	mk_strbuf_release(&out);
}

/* ---- the background flusher ---------------------------------------------- */

/* The recovery point the broker directory's
 * recovery-point-offset-checkpoint holds for the log. */
static int64_t ckpt_recovery_point(const fixture *f)
{
	int64_t rp = tl_ckpt_offset(f->root, MK_LOGDIR_RECOVERY, "t", 0);
	assert_true(rp >= 0);
	return rp;
}

/* The bytes of one batch of append_n(log, _, 2, NULL, 100). */
static size_t batch2_len(void)
{
	mk_strbuf fr = MK_STRBUF_INIT;
	build(&fr, 0, 0, 2, NULL, 100);
	size_t n = fr.len;
	mk_strbuf_release(&fr);
	return n;
}

static void test_crash_after_roll(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f, 1000, 100, 0);
	append_n(log, 0, 2, NULL, 100);
	append_n(log, 0, 2, NULL, 100);
	assert_int_equal(mk_log_flush(log), MK_OK);
	uint64_t durable = mk_log_size_bytes(log);
	assert_int_equal(ckpt_recovery_point(f), 4);

	/* Rolls whose flushes cannot run before the crash. */
	mk_log_hold_flusher(log, true);
	for (int i = 0; i < 8; i++)
		append_n(log, 1, 2, NULL, 100);
	size_t n = mk_log_segment_count(log);
	assert_true(n >= 3);
	int64_t bases[16];
	for (size_t i = 0; i < n; i++) {
		mk_segment_info info;
		mk_log_segment_info(log, i, &info);
		bases[i] = info.base_offset;
	}
	assert_int_equal(ckpt_recovery_point(f), 4);   /* nothing flushed */
	mk_log_crash(log, false);

	/* A clean prefix: the first segment back to its flushed size, the
	 * later ones gone. */
	char path[256];
	seg_path(f, 0, "log", path, sizeof(path));
	assert_int_equal(file_size(path), (off_t)durable);
	for (size_t i = 1; i < n; i++) {
		seg_path(f, bases[i], "log", path, sizeof(path));
		assert_false(exists(path));
		seg_path(f, bases[i], "index", path, sizeof(path));
		assert_false(exists(path));
	}
	log = open_log(f, 1000, 100, 0);
	assert_int_equal(mk_log_segment_count(log), 1);
	assert_int_equal(mk_log_end_offset(log), 4);
	assert_int_equal(mk_log_latest_epoch(log), 0);
	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, 0, 100, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 0, 3);

	/* Torn: the partial frame lands after what is left, and goes at
	 * open. Appends carry on from there. */
	mk_log_hold_flusher(log, true);
	for (int i = 0; i < 5; i++)
		append_n(log, 2, 2, NULL, 100);
	assert_true(mk_log_segment_count(log) >= 2);
	mk_log_crash(log, true);
	seg_path(f, 0, "log", path, sizeof(path));
	assert_true(file_size(path) > (off_t)durable);
	log = open_log(f, 1000, 100, 0);
	assert_int_equal(mk_log_segment_count(log), 1);
	assert_int_equal(mk_log_end_offset(log), 4);
	assert_int_equal(file_size(path), (off_t)durable);
	for (int i = 0; i < 5; i++)
		append_n(log, 2, 2, NULL, 100);
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 0, 100, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 0, 13);
	mk_strbuf_release(&out);
	mk_log_close(log);
}

static void test_roll_advances_recovery_point(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f, 1000, 100, 0);
	for (int i = 0; i < 10; i++)
		append_n(log, 0, 2, NULL, 100);
	size_t n = mk_log_segment_count(log);
	assert_true(n >= 3);
	mk_segment_info act;
	mk_log_segment_info(log, n - 1, &act);
	assert_true(act.size > 0);

	/* Once the flusher caught up, the recovery point is past every
	 * rolled segment: the active one's base, not the log end. */
	assert_int_equal(mk_log_wait_flusher(log), MK_OK);
	assert_int_equal(ckpt_recovery_point(f), act.base_offset);
	assert_true(act.base_offset < mk_log_end_offset(log));

	/* So a crash loses only the active segment's data. */
	mk_log_crash(log, false);
	log = open_log(f, 1000, 100, 0);
	assert_int_equal(mk_log_segment_count(log), n);
	assert_int_equal(mk_log_end_offset(log), act.base_offset);
	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, 0, 100, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 0, act.base_offset - 1);
	mk_strbuf_release(&out);

	/* Several rolled segments queued are flushed together, with one
	 * checkpoint past the last. */
	mk_log_hold_flusher(log, true);
	for (int i = 0; i < 10; i++)
		append_n(log, 0, 2, NULL, 100);
	size_t m = mk_log_segment_count(log);
	assert_true(m >= n + 3);
	mk_log_segment_info(log, m - 1, &act);
	assert_true(ckpt_recovery_point(f) < act.base_offset);
	assert_int_equal(mk_log_wait_flusher(log), MK_OK);
	assert_int_equal(ckpt_recovery_point(f), act.base_offset);

	/* A flush moves it to the log end. */
	append_n(log, 0, 2, NULL, 100);
	assert_int_equal(mk_log_flush(log), MK_OK);
	assert_int_equal(ckpt_recovery_point(f), mk_log_end_offset(log));
	mk_log_close(log);
}

/*
 * The checkpoint is written by the owner's thread (here: at each new
 * epoch) and by the flusher (after a roll's flush) at the same time. The
 * writes land in the order of the states they show: once an append that
 * saw a new epoch returned, the file names that epoch (no flusher write of
 * older text lands after it), and every segment it lists exists. Under
 * TSan this also checks the locking of the checkpoint's state.
 */
static void test_checkpoint_owner_and_flusher(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f, 1000, 100, 0);
	char ck[256], ep_path[256], path[256], want[64];
	snprintf(ck, sizeof(ck), "%s/checkpoint", f->dir);
	snprintf(ep_path, sizeof(ep_path), "%s/leader-epoch-checkpoint", f->dir);
	mk_strbuf text = MK_STRBUF_INIT;
	const int epochs = 120;
	for (int e = 0; e < epochs; e++) {
		append_n(log, e, 2, NULL, 100);     /* new epoch: written */
		append_n(log, e, 2, NULL, 100);     /* rolls now and then */
		mk_strbuf_reset(&text);
		read_file_bytes(ep_path, &text);
		snprintf(want, sizeof(want), "0\n%d\n", e + 1);
		assert_memory_equal(text.buf, want, strlen(want));
		snprintf(want, sizeof(want), "\n%d %d\n", e, 4 * e);
		assert_non_null(strstr(text.buf, want));
		read_file_bytes(ck, &text);
		const char *segs = strstr(text.buf, "\nsegments ");
		for (const char *p = segs ? segs + 10 : NULL; p && *p != '\n';) {
			char *end;
			long long base = strtoll(p, &end, 10);
			assert_true(end > p);
			seg_path(f, base, "log", path, sizeof(path));
			assert_true(exists(path));
			p = *end == ' ' ? end + 1 : end;
		}
	}
	assert_true(mk_log_segment_count(log) > 10);
	assert_int_equal(mk_log_wait_flusher(log), MK_OK);
	mk_segment_info act;
	mk_log_segment_info(log, mk_log_segment_count(log) - 1, &act);
	assert_int_equal(ckpt_recovery_point(f), act.base_offset);
	int64_t leo = mk_log_end_offset(log);
	mk_log_close(log);
	log = open_log(f, 1000, 100, 0);
	const mk_epoch_entry *ep;
	assert_int_equal(mk_log_epochs(log, &ep), epochs);
	assert_int_equal(mk_log_end_offset(log), leo);
	mk_log_close(log);
	mk_strbuf_release(&text);
}

/*
 * The daemon killed: the files stay as they are (the page cache survives)
 * and nothing more is flushed. Simulated by copying the log's directory
 * while the log is open, dropping the log, and putting the copy in its
 * place.
 */
static void kill_log(const fixture *f, mk_log *log)
{
	char snap[160];
	snprintf(snap, sizeof(snap), "%s/snap", f->root);
	assert_int_equal(mk_mkdirs(snap), MK_OK);
	DIR *d = opendir(f->dir);
	assert_non_null(d);
	struct dirent *de;
	mk_strbuf data = MK_STRBUF_INIT;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char from[512], to[512];
		snprintf(from, sizeof(from), "%s/%s", f->dir, de->d_name);
		snprintf(to, sizeof(to), "%s/%s", snap, de->d_name);
		read_file_bytes(from, &data);
		int fd = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, data.buf, data.len), (ssize_t)data.len);
		close(fd);
	}
	closedir(d);
	mk_strbuf_release(&data);
	mk_log_crash(log, false);
	assert_int_equal(mk_remove_tree(f->dir), MK_OK);
	assert_int_equal(rename(snap, f->dir), 0);
}

/* Open the log, hold its flusher, append n batches, kill the daemon. */
static void killed_after_appends(const fixture *f, int n)
{
	mk_log *log = open_log(f, 1000, 100, 0);
	mk_log_hold_flusher(log, true);
	for (int i = 0; i < n; i++)
		append_n(log, 2, 2, NULL, 100);
	kill_log(f, log);
}

/* The base offsets of the .log files, ascending. */
static size_t list_bases(const fixture *f, int64_t *bases, size_t max)
{
	size_t n = 0;
	for (int64_t b = 0; b < 1000 && n < max; b++) {
		char path[256];
		seg_path(f, b, "log", path, sizeof(path));
		if (exists(path))
			bases[n++] = b;
	}
	return n;
}

static void test_recovery_from_recovery_point(void **state)
{
	fixture *f = *state;
	size_t flen = batch2_len();
	mk_log *log = open_log(f, 1000, 100, 0);
	for (int i = 0; i < 4; i++)
		append_n(log, 0, 2, NULL, 100);
	assert_int_equal(mk_log_segment_count(log), 2);
	mk_log_close(log);
	assert_int_equal(ckpt_recovery_point(f), 8);

	/* Killed with three rolled segments unflushed: the recovery point
	 * is still 8, in the second segment. */
	killed_after_appends(f, 7);
	assert_int_equal(ckpt_recovery_point(f), 8);
	int64_t bases[16];
	size_t n = list_bases(f, bases, 16);
	assert_true(n >= 4);
	assert_true(bases[1] <= 8 && bases[2] > 8);

	/* Damage below the recovery point is not looked at by open... */
	char first[256];
	seg_path(f, 0, "log", first, sizeof(first));
	flip_byte(first, (off_t)flen + 40);
	log = open_log(f, 1000, 100, 0);
	/* ...which recovered every segment from the second on, whole. */
	assert_int_equal(mk_log_segment_count(log), n);
	assert_int_equal(mk_log_end_offset(log), 22);
	assert_string_equal(mk_log_error(log), "");
	assert_int_equal(ckpt_recovery_point(f), 22);
	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, bases[1], 100, SIZE_MAX, &out),
			 MK_OK);
	check_frames(&out, bases[1], 21);
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 0, 100, SIZE_MAX, &out),
			 MK_KAFKA_STORAGE_ERROR);
	mk_log_close(log);
	flip_byte(first, (off_t)flen + 40);

	/* Killed again, then a segment after the recovery point damaged in
	 * its second batch: recovery cuts it there and deletes the later
	 * ones, written after data now lost. */
	killed_after_appends(f, 7);
	size_t m = list_bases(f, bases, 16);
	assert_true(m >= n + 2);
	int64_t rp = ckpt_recovery_point(f);
	assert_int_equal(rp, 22);
	size_t hold = n - 1;          /* the segment holding the point */
	assert_true(bases[hold] <= rp && bases[hold + 1] > rp);
	char path[256];
	seg_path(f, bases[hold + 1], "log", path, sizeof(path));
	flip_byte(path, (off_t)flen + 40);
	log = open_log(f, 1000, 100, 0);
	assert_int_equal(mk_log_segment_count(log), hold + 2);
	assert_int_equal(mk_log_end_offset(log), bases[hold + 1] + 2);
	assert_int_equal(file_size(path), (off_t)flen);
	for (size_t i = hold + 2; i < m; i++) {
		seg_path(f, bases[i], "log", path, sizeof(path));
		assert_false(exists(path));
	}
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 0, 100, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 0, bases[hold + 1] + 1);
	const mk_epoch_entry *ep;
	assert_int_equal(mk_log_epochs(log, &ep), 2);
	assert_int_equal(ep[1].epoch, 2);
	assert_int_equal(ep[1].start_offset, 8);
	mk_strbuf_release(&out);
	mk_log_close(log);
}

/*
 * Several frames in one call: stamped in order, written with one system
 * call per run between rolls, and the segments end up exactly as when the
 * same frames come one at a time (rolls at the same offsets).
 */
static void test_append_many(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f, 1000, 100, 0);
	/* Three frames of two records (about 330 bytes each). */
	mk_strbuf fr[12];
	uint8_t *frames[12];
	size_t lens[12];
	int64_t bases[12];
	for (int i = 0; i < 12; i++) {
		mk_strbuf_init(&fr[i], 0);
		build(&fr[i], 2 * i, 77, 2, NULL, 100);
		mk_frame_assign((uint8_t *)fr[i].buf, fr[i].len, 999, 77);
		frames[i] = (uint8_t *)fr[i].buf;
		lens[i] = fr[i].len;
	}
	size_t done = 99;
	uint64_t calls = mk_log_write_calls(log);
	assert_int_equal(mk_log_append_leader_many(log, frames, lens, 2, 3,
						   bases, &done), MK_OK);
	assert_int_equal(done, 2);
	assert_int_equal(bases[0], 0);
	assert_int_equal(bases[1], 2);
	assert_int_equal(mk_log_write_calls(log), calls + 1);
	assert_int_equal(mk_log_end_offset(log), 4);
	assert_int_equal(mk_log_latest_epoch(log), 3);
	/* Ten more: they cross rolls (1000-byte segments hold two or three
	 * of them); one write per run. */
	calls = mk_log_write_calls(log);
	assert_int_equal(mk_log_append_leader_many(log, frames + 2, lens + 2, 10,
						   3, bases + 2, &done), MK_OK);
	assert_int_equal(done, 10);
	for (int i = 2; i < 12; i++)
		assert_int_equal(bases[i], 2 * i);
	size_t nsegs = mk_log_segment_count(log);
	assert_true(nsegs >= 4);
	assert_true(mk_log_write_calls(log) - calls <= nsegs);
	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, 0, 24, SIZE_MAX, &out), MK_OK);
	assert_int_equal(check_frames(&out, 0, 23), 12);
	/* Index entries of the runs: a read from the middle of one. */
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 15, 24, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 14, 23);
	mk_segment_info many[16];
	for (size_t i = 0; i < nsegs; i++)
		mk_log_segment_info(log, i, &many[i]);
	/* A frame below the log start's epoch is fenced, nothing written. */
	assert_int_equal(mk_log_append_leader_many(log, frames, lens, 1, 2,
						   bases, &done),
			 MK_FENCED_LEADER_EPOCH);
	assert_int_equal(done, 0);
	assert_int_equal(mk_log_end_offset(log), 24);
	mk_log_close(log);

	/* The same frames one at a time: the same segments. */
	tl_logdir_wipe(f);
	log = open_log(f, 1000, 100, 0);
	for (int i = 0; i < 12; i++) {
		int64_t base;
		assert_int_equal(mk_log_append_leader(log, frames[i], lens[i], 3,
						      &base), MK_OK);
		assert_int_equal(base, 2 * i);
	}
	assert_int_equal(mk_log_segment_count(log), nsegs);
	for (size_t i = 0; i < nsegs; i++) {
		mk_segment_info one;
		mk_log_segment_info(log, i, &one);
		assert_int_equal(one.base_offset, many[i].base_offset);
		assert_int_equal(one.size, many[i].size);
	}
	/* Reopened after a close, the index entries of the runs hold. */
	mk_log_close(log);
	log = open_log(f, 1000, 100, 0);
	mk_strbuf_reset(&out);
	assert_int_equal(mk_log_read(log, 13, 24, SIZE_MAX, &out), MK_OK);
	check_frames(&out, 12, 23);
	mk_log_close(log);
	mk_strbuf_release(&out);
	for (int i = 0; i < 12; i++)
		mk_strbuf_release(&fr[i]);
}

/*
 * A run written by one pwritev that stops part-way (here RLIMIT_FSIZE:
 * a short write, then EFBIG; ENOSPC behaves alike): a storage error naming
 * the file, nothing of the run counted (the log end and the segment's size
 * as before), and the owner abandons the log (replica offline, files
 * untouched). What is on disk is a prefix of the run and a torn frame:
 * the reopen cuts the torn one and keeps the whole frames before it, with
 * the offsets they were given. Nothing acknowledged is lost; a frame of
 * the failed call may stay (at least once, as in Kafka).
 */
static void test_append_many_short_write(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f, 1 << 20, 100, 0);
	mk_strbuf fr[4];
	uint8_t *frames[4];
	size_t lens[4];
	int64_t bases[4];
	for (int i = 0; i < 4; i++) {
		mk_strbuf_init(&fr[i], 0);
		build(&fr[i], 2 * i, 1, 2, NULL, 100);
		frames[i] = (uint8_t *)fr[i].buf;
		lens[i] = fr[i].len;
	}
	size_t done;
	assert_int_equal(mk_log_append_leader_many(log, frames, lens, 1, 1,
						   bases, &done), MK_OK);
	mk_segment_info info;
	mk_log_segment_info(log, 0, &info);
	assert_int_equal(info.size, lens[0]);
	/* The file may grow to the middle of the run's second frame. */
	struct rlimit old, low;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	low = old;
	low.rlim_cur = (rlim_t)(lens[0] + lens[1] + lens[2] / 2);
	void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &low), 0);
	mk_err err = mk_log_append_leader_many(log, frames + 1, lens + 1, 3, 1,
					       bases + 1, &done);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, prev);
	assert_int_equal(err, MK_KAFKA_STORAGE_ERROR);
	assert_int_equal(done, 0);
	assert_non_null(strstr(mk_log_error(log), "write failed"));
	assert_int_equal(mk_log_end_offset(log), 2);
	mk_log_segment_info(log, 0, &info);
	assert_int_equal(info.size, lens[0]);
	mk_log_abandon(log);

	log = open_log(f, 1 << 20, 100, 0);
	assert_int_equal(mk_log_end_offset(log), 4);
	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, 0, 4, SIZE_MAX, &out), MK_OK);
	assert_int_equal(check_frames(&out, 0, 3), 2);
	int64_t base;
	assert_int_equal(mk_log_append_leader(log, frames[3], lens[3], 1, &base),
			 MK_OK);
	assert_int_equal(base, 4);
	mk_strbuf_release(&out);
	for (int i = 0; i < 4; i++)
		mk_strbuf_release(&fr[i]);
	mk_log_close(log);
}


/* ---- the runway (segment.h): zeros ahead of small appends --------------- */

typedef struct {
	mk_fdcache *cache;
	mk_segment *s;
	int64_t next;            /* the next batch's base offset */
	char path[256];
} runway_fx;

static void count_batch(void *arg, const mk_batch_view *b, uint64_t pos)
{
	(void)b;
	(void)pos;
	(*(int *)arg)++;
}

/* A batch of n records (each padded by pad bytes) at r->next: its frame
 * into fr, decoded into b (which points into fr). */
static void runway_frame(const runway_fx *r, int n, size_t pad, mk_strbuf *fr,
			 mk_batch_view *b)
{
	build(fr, r->next, 0, n, NULL, pad);
	const char *why = NULL;
	assert_int_equal(mk_frame_decode((const uint8_t *)fr->buf, fr->len, 0, b, &why),
			 MK_OK);
}

/* The append of such a batch, its result (why in msg); r->next moves on
 * when it went in; *len (when not NULL) gets its frame's length. */
static mk_err runway_try_n(runway_fx *r, int n, size_t pad, size_t *len,
			   mk_strbuf *msg)
{
	mk_strbuf fr = MK_STRBUF_INIT;
	mk_batch_view b;
	runway_frame(r, n, pad, &fr, &b);
	mk_err err = mk_segment_append(r->s, (const uint8_t *)fr.buf, &b, 4096, msg);
	if (!err)
		r->next += n;
	if (len)
		*len = fr.len;
	mk_strbuf_release(&fr);
	return err;
}

/* One batch of n records appended to the segment; its frame's length. */
static size_t runway_append_n(runway_fx *r, int n, size_t pad)
{
	mk_strbuf msg = MK_STRBUF_INIT;
	size_t len;
	mk_err err = runway_try_n(r, n, pad, &len, &msg);
	if (err)
		print_error("append: %s\n", msg.buf);
	assert_int_equal(err, MK_OK);
	mk_strbuf_release(&msg);
	return len;
}

static void runway_append(runway_fx *r, size_t pad)
{
	runway_append_n(r, 10, pad);
}

static void runway_open(runway_fx *r, const fixture *f, uint64_t *cut,
			mk_strbuf *why)
{
	mk_err err = mk_segment_open_active(f->dir, 0, INT64_MAX, -1, r->cache,
					    4096, NULL, NULL, &r->s, cut, why);
	assert_int_equal(err, MK_OK);
	r->next = r->s->next_offset;
}

static int runway_batches(runway_fx *r)
{
	int n = 0;
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(mk_segment_scan(r->s, INT64_MAX, count_batch, &n, &why),
			 MK_OK);
	mk_strbuf_release(&why);
	return n;
}

static void append_zeros(const char *path, size_t n)
{
	void *z = calloc(1, n);
	assert_non_null(z);
	append_bytes(path, z, n);
	free(z);
}

/* A new active segment at base 0 in f->dir whose runway may reach 4 MiB. */
static void runway_new(runway_fx *r, const fixture *f)
{
	assert_int_equal(mk_mkdirs(f->dir), MK_OK);
	*r = (runway_fx){ .cache = mk_fdcache_new(64) };
	seg_path(f, 0, "log", r->path, sizeof(r->path));
	assert_int_equal(mk_segment_create(f->dir, 0, r->cache, &r->s, NULL), MK_OK);
	r->s->fill_limit = 4u << 20;
}

static void test_runway(void **state)
{
	fixture *f = *state;
	runway_fx r;
	mk_strbuf why = MK_STRBUF_INIT;
	runway_new(&r, f);

	/* Below MK_SEGMENT_RUNWAY_FROM the file is its frames. */
	while (r.s->size < MK_SEGMENT_RUNWAY_FROM) {
		runway_append(&r, 200);
		assert_int_equal(file_size(r.path), (off_t)r.s->size);
		assert_int_equal(r.s->runway_end, 0);
	}
	/* Then an append past the file's end zero-fills to the next 256 KiB. */
	runway_append(&r, 200);
	assert_int_equal(file_size(r.path), MK_SEGMENT_RUNWAY);
	assert_int_equal(r.s->runway_end, MK_SEGMENT_RUNWAY);
	assert_true(r.s->size < MK_SEGMENT_RUNWAY);
	while (r.s->size + 4096 < MK_SEGMENT_RUNWAY) {
		runway_append(&r, 200);
		assert_int_equal(file_size(r.path), MK_SEGMENT_RUNWAY);
	}
	while (r.s->size < MK_SEGMENT_RUNWAY)
		runway_append(&r, 200);
	assert_int_equal(file_size(r.path), 2 * MK_SEGMENT_RUNWAY);
	/* Readers stop at size: every batch, no zeros. */
	int batches = (int)(r.next / 10);
	assert_int_equal(runway_batches(&r), batches);

	/* A close cuts the runway; the reopened segment is its frames. */
	uint64_t size = r.s->size;
	mk_segment_close(r.s);
	assert_int_equal(file_size(r.path), (off_t)size);
	uint64_t cut = 1;
	runway_open(&r, f, &cut, &why);
	assert_int_equal(cut, 0);
	assert_int_equal(r.s->size, size);
	assert_int_equal(runway_batches(&r), batches);

	/* A stop that left a runway (zeros past the frames): cut at open,
	 * silently — no loss, nothing to report. */
	mk_segment_close(r.s);
	append_zeros(r.path, 100000);
	mk_strbuf_reset(&why);
	runway_open(&r, f, &cut, &why);
	assert_int_equal(cut, 0);
	assert_int_equal(why.len, 0);
	assert_int_equal(r.s->size, size);
	assert_int_equal(file_size(r.path), (off_t)size);
	assert_int_equal(runway_batches(&r), batches);

	/* A torn frame before zeros is a torn write: cut and reported. */
	mk_segment_close(r.s);
	append_bytes(r.path, "\x00\x00\x00\x00\x00\x00\x00\x07", 8);
	append_zeros(r.path, 5000);
	mk_strbuf_reset(&why);
	runway_open(&r, f, &cut, &why);
	assert_int_equal(cut, 8 + 5000);
	assert_true(why.len > 0);
	assert_int_equal(file_size(r.path), (off_t)size);

	/* More zeros than a runway leaves: not taken for one. */
	mk_segment_close(r.s);
	append_zeros(r.path, MK_SEGMENT_ZERO_TAIL_MAX + 1);
	mk_strbuf_reset(&why);
	runway_open(&r, f, &cut, &why);
	assert_int_equal(cut, MK_SEGMENT_ZERO_TAIL_MAX + 1);
	assert_int_equal(file_size(r.path), (off_t)size);

	/* Seal (a roll) cuts the runway: a closed segment is its frames. */
	r.s->fill_limit = 4u << 20;
	runway_append(&r, 200);
	assert_true(file_size(r.path) > (off_t)r.s->size);
	mk_strbuf_reset(&why);
	assert_int_equal(mk_segment_seal(r.s, &why), MK_OK);
	assert_int_equal(file_size(r.path), (off_t)r.s->size);
	assert_int_equal(r.s->runway_end, 0);
	size = r.s->size;
	mk_segment_close(r.s);
	assert_int_equal(file_size(r.path), (off_t)size);

	/* A simulated crash keeps only what was flushed: no runway. */
	runway_open(&r, f, &cut, &why);
	r.s->fill_limit = 4u << 20;
	mk_strbuf_reset(&why);
	assert_int_equal(mk_segment_flush(r.s, &why), MK_OK);
	uint64_t flushed = r.s->flushed;
	runway_append(&r, 200);
	assert_true(r.s->runway_end > r.s->size);
	mk_segment_crash(r.s, false);
	assert_int_equal(file_size(r.path), (off_t)flushed);

	/* fill_limit caps the runway; without one there is none; an
	 * append as large as a runway makes none. */
	runway_open(&r, f, &cut, &why);
	r.s->fill_limit = r.s->size + 8192;
	runway_append(&r, 200);
	assert_true(file_size(r.path) <= (off_t)r.s->fill_limit);
	assert_true(r.s->runway_end == 0 || r.s->runway_end == r.s->fill_limit);
	r.s->fill_limit = 0;
	while (file_size(r.path) > (off_t)r.s->size)
		runway_append(&r, 200);
	runway_append(&r, 200);
	assert_int_equal(file_size(r.path), (off_t)r.s->size);
	r.s->fill_limit = 4u << 20;
	runway_append(&r, 0);          /* small: a runway again */
	assert_true(file_size(r.path) > (off_t)r.s->size);
	while (file_size(r.path) > (off_t)r.s->size)
		runway_append(&r, 200);
	/* 1300 records of 300 bytes: one frame past a runway. */
	assert_true(runway_append_n(&r, 1300, 300) >= MK_SEGMENT_RUNWAY);
	assert_int_equal(file_size(r.path), (off_t)r.s->size);
	mk_segment_close(r.s);
	mk_fdcache_free(r.cache);
	mk_strbuf_release(&why);
}

/* segment.h's invariant: runway_end is 0, or > size with the file
 * runway_end bytes long and zeros in [size, runway_end). */
static void check_runway(const runway_fx *r)
{
	if (!r->s->runway_end)
		return;
	assert_true(r->s->runway_end > r->s->size);
	assert_int_equal(file_size(r->path), (off_t)r->s->runway_end);
	size_t n = (size_t)(r->s->runway_end - r->s->size);
	uint8_t *buf = malloc(n);
	assert_non_null(buf);
	int fd = open(r->path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, n, (off_t)r->s->size), (ssize_t)n);
	close(fd);
	for (size_t i = 0; i < n; i++)
		if (buf[i])
			fail_msg("runway byte %zu is %u", i, buf[i]);
	free(buf);
}

/* The append of one small batch, its result. */
static mk_err runway_try(runway_fx *r)
{
	mk_strbuf msg = MK_STRBUF_INIT;
	mk_err err = runway_try_n(r, 10, 200, NULL, &msg);
	mk_strbuf_release(&msg);
	return err;
}

/* Failures while making a runway (a file size limit: a short pwritev of
 * the zeros, then none at all) and while appending into or past it keep
 * the invariant; truncation (cut_at) and crash simulation end the runway
 * with the file at size. */
static void test_runway_errors(void **state)
{
	fixture *f = *state;
	runway_fx r;
	mk_strbuf why = MK_STRBUF_INIT;
	runway_new(&r, f);
	while (r.s->size < MK_SEGMENT_RUNWAY_FROM)
		runway_append(&r, 200);
	assert_int_equal(r.s->runway_end, 0);

	struct rlimit old, low;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
	/* Room for 10000 bytes: the zeros stop there, the append fits. */
	low = old;
	low.rlim_cur = (rlim_t)(r.s->size + 10000);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &low), 0);
	assert_int_equal(runway_try(&r), MK_OK);
	assert_int_equal(r.s->runway_end, (uint64_t)low.rlim_cur);
	check_runway(&r);
	/* Appends up to the limit; the one past it fails. */
	mk_err err;
	while ((err = runway_try(&r)) == MK_OK)
		check_runway(&r);
	assert_int_equal(err, MK_KAFKA_STORAGE_ERROR);
	check_runway(&r);
	uint64_t size = r.s->size;
	/* No room at all: no runway, the append fails, nothing changes. */
	low.rlim_cur = (rlim_t)size;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &low), 0);
	assert_int_equal(runway_try(&r), MK_KAFKA_STORAGE_ERROR);
	check_runway(&r);
	assert_int_equal(r.s->size, size);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, prev);
	/* Room again: a runway over whatever the failures left. */
	assert_int_equal(runway_try(&r), MK_OK);
	assert_true(r.s->runway_end > r.s->size);
	check_runway(&r);
	assert_int_equal(runway_batches(&r), (int)(r.next / 10));

	/* A cut at the end (a truncation to the log end) and one below it
	 * end the runway: the file is its frames. */
	mk_segment_cut c;
	assert_int_equal(mk_segment_check_cut(r.s, r.next, &c, &why), MK_OK);
	assert_int_equal(mk_segment_cut_at(r.s, &c, 4096, &why), MK_OK);
	assert_int_equal(r.s->runway_end, 0);
	assert_int_equal(file_size(r.path), (off_t)r.s->size);
	runway_append(&r, 200);
	assert_true(r.s->runway_end > r.s->size);
	assert_int_equal(mk_segment_check_cut(r.s, r.next - 20, &c, &why), MK_OK);
	assert_int_equal(mk_segment_cut_at(r.s, &c, 4096, &why), MK_OK);
	r.next -= 20;
	assert_int_equal(r.s->runway_end, 0);
	assert_int_equal(file_size(r.path), (off_t)r.s->size);
	assert_int_equal(runway_batches(&r), (int)(r.next / 10));

	/* An append as large as a runway passing the runway's end makes
	 * none, and ends the one there was; the next small one makes one
	 * from the end of the frames. */
	runway_append(&r, 200);
	assert_true(r.s->runway_end > r.s->size);
	{
		uint64_t end0 = r.s->size, runway0 = r.s->runway_end;
		size_t len = runway_append_n(&r, 1300, 300);
		assert_true(len >= MK_SEGMENT_RUNWAY && end0 + len > runway0);
	}
	assert_int_equal(r.s->runway_end, 0);
	assert_int_equal(file_size(r.path), (off_t)r.s->size);
	runway_append(&r, 200);
	check_runway(&r);
	assert_true(r.s->runway_end > r.s->size);
	assert_int_equal(runway_batches(&r), (int)((r.next - 1300) / 10) + 1);

	/* A crash after a flush that came after the runway was made: the
	 * page cache held nothing unflushed but the zeros, which go too. */
	runway_append(&r, 200);
	assert_true(r.s->runway_end > r.s->size);
	assert_int_equal(mk_segment_flush(r.s, &why), MK_OK);
	size = r.s->size;
	mk_segment_crash(r.s, false);
	assert_int_equal(file_size(r.path), (off_t)size);
	mk_fdcache_free(r.cache);
	mk_strbuf_release(&why);
}

/* A runway that starts off a multiple of MK_SEGMENT_RUNWAY (the first
 * one starts at the segment's size) is written in runway-aligned pieces
 * (segment.c's write_zeros), the second starting at the multiple. Under a
 * file size limit at that multiple two writes start at the limit: the
 * zeros' second piece and the append's own after its short one. One
 * write of all the zeros, or pieces counted from the size, would be
 * short there instead. Room again, the runway is made over what the
 * failure left. */
static void test_runway_pieces(void **state)
{
	fixture *f = *state;
	runway_fx r;
	runway_new(&r, f);
	r.s->fill_limit = 0;   /* no runway while it grows */
	while (r.s->size + 8192 < MK_SEGMENT_RUNWAY)
		runway_append(&r, 200);
	r.s->fill_limit = 4u << 20;
	assert_int_equal(r.s->runway_end, 0);
	assert_true(r.s->size % MK_SEGMENT_RUNWAY != 0);

	mk_strbuf fr = MK_STRBUF_INIT, msg = MK_STRBUF_INIT;
	mk_batch_view b;
	runway_frame(&r, 40, 200, &fr, &b);
	assert_true(r.s->size + fr.len > MK_SEGMENT_RUNWAY &&
		    fr.len < MK_SEGMENT_RUNWAY);
	uint64_t size = r.s->size;
	struct rlimit old, low;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	void (*prev)(int) = signal(SIGXFSZ, tl_count_xfsz);
	low = old;
	low.rlim_cur = MK_SEGMENT_RUNWAY;
	tl_xfsz = 0;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &low), 0);
	mk_err err = mk_segment_append(r.s, (const uint8_t *)fr.buf, &b, 4096, &msg);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, prev);
	assert_int_equal(err, MK_KAFKA_STORAGE_ERROR);
	assert_int_equal(tl_xfsz, 2);
	assert_int_equal(r.s->size, size);
	check_runway(&r);

	err = mk_segment_append(r.s, (const uint8_t *)fr.buf, &b, 4096, &msg);
	assert_int_equal(err, MK_OK);
	r.next += 40;
	assert_int_equal(r.s->runway_end, 2 * MK_SEGMENT_RUNWAY);
	check_runway(&r);
	assert_int_equal(runway_batches(&r), (int)((r.next - 40) / 10) + 1);
	mk_segment_close(r.s);
	mk_fdcache_free(r.cache);
	mk_strbuf_release(&fr);
	mk_strbuf_release(&msg);
}

/* A runway made before the last flush, cut by the seal: the cut is a
 * change of the file the roll's flush must fsync (a closed segment below
 * the recovery point is trusted by its stat size), so seal marks the
 * segment dirty and the flush clears it. */
static void test_runway_seal_durable(void **state)
{
	fixture *f = *state;
	runway_fx r;
	mk_strbuf why = MK_STRBUF_INIT;
	runway_new(&r, f);
	while (r.s->runway_end == 0)
		runway_append(&r, 200);
	assert_int_equal(mk_segment_flush(r.s, &why), MK_OK);
	assert_false(r.s->dirty);
	assert_true(file_size(r.path) > (off_t)r.s->size);
	assert_int_equal(mk_segment_seal(r.s, &why), MK_OK);
	assert_int_equal(file_size(r.path), (off_t)r.s->size);
	assert_true(r.s->dirty);
	assert_int_equal(mk_segment_flush(r.s, &why), MK_OK);
	assert_false(r.s->dirty);
	assert_int_equal(r.s->flushed, r.s->size);
	/* Without a runway, a flushed segment's seal changes no byte. */
	uint64_t size = r.s->size;
	mk_segment_close(r.s);
	uint64_t cut = 1;
	runway_open(&r, f, &cut, &why);
	assert_int_equal(r.s->size, size);
	assert_int_equal(mk_segment_seal(r.s, &why), MK_OK);
	assert_false(r.s->dirty);
	mk_segment_close(r.s);
	mk_fdcache_free(r.cache);
	mk_strbuf_release(&why);
}

/* Through the log: the active segment gets a runway (log.c sets
 * fill_limit to segment.bytes), never past segment.bytes; the roll leaves
 * the closed segment its frames; a crash and a close leave every file
 * its frames, and nothing is lost. */
static void test_runway_log(void **state)
{
	fixture *f = *state;
	const int64_t seg_bytes = 300000;
	mk_log *log = open_log(f, seg_bytes, 4096, 0);
	char p0[256], p1[256];
	seg_path(f, 0, "log", p0, sizeof(p0));
	mk_segment_info info;
	bool runway = false;
	while (mk_log_segment_count(log) == 1) {
		append_n(log, 1, 10, NULL, 200);
		mk_log_segment_info(log, 0, &info);
		if (info.active && file_size(p0) > (off_t)info.size) {
			runway = true;
			assert_true(info.size >= MK_SEGMENT_RUNWAY_FROM);
		}
		assert_true(file_size(p0) <= seg_bytes);
	}
	assert_true(runway);
	mk_log_segment_info(log, 0, &info);
	assert_int_equal(file_size(p0), (off_t)info.size);
	mk_log_segment_info(log, 1, &info);
	seg_path(f, info.base_offset, "log", p1, sizeof(p1));
	while (file_size(p1) == (off_t)info.size) {
		append_n(log, 1, 10, NULL, 200);
		mk_log_segment_info(log, 1, &info);
	}
	int64_t leo = mk_log_end_offset(log);
	assert_int_equal(mk_log_flush(log), MK_OK);
	mk_log_crash(log, false);
	assert_int_equal(file_size(p1), (off_t)info.size);
	log = open_log(f, seg_bytes, 4096, 0);
	assert_int_equal(mk_log_end_offset(log), leo);
	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, 0, leo, SIZE_MAX, &out), MK_OK);
	assert_int_equal(check_frames(&out, 0, leo - 1), (int)(leo / 10));
	/* The reopened segment gets a runway again once past
	 * MK_SEGMENT_RUNWAY_FROM (the one it was adopted with, prepared
	 * files' zeros, went with the crash). */
	do {
		append_n(log, 1, 10, NULL, 200);
		mk_log_segment_info(log, 1, &info);
	} while (file_size(p1) == (off_t)info.size &&
		 info.size < 2 * MK_SEGMENT_RUNWAY_FROM);
	assert_true(file_size(p1) > (off_t)info.size);
	mk_log_close(log);
	assert_int_equal(file_size(p1), (off_t)info.size);
	mk_strbuf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		T(test_offset_index_unit),
		T(test_time_index_unit),
		T(test_index_pending),
		T(test_append_read),
		T(test_leader_append),
		T(test_replica_append),
		T(test_replica_append_trusted),
		T(test_index_lookup),
		T(test_roll),
		T(test_oversized_batch),
		T(test_offset_for_time),
		T(test_truncate_sealed_max_timestamp),
		T(test_time_index_max_so_far),
		T(test_seal_final_entry),
		T(test_log_start_from_checkpoint),
		T(test_log_start_past_end_refused),
		T(test_kafka_files_crash_points),
		T(test_checkpoint_version1_read),
		T(test_advance_start_durable),
		T(test_reset_crash_points),
		T(test_truncate),
		T(test_tail_repair),
		T(test_index_rebuild),
		T(test_closed_damage),
		cmocka_unit_test(test_batch_place),
		T(test_stamp_sanity),
		T(test_startup_skips_closed),
		T(test_ignores_other_files),
		T(test_epoch_cache),
		T(test_checkpoint_damage),
		T(test_checkpoint_parse),
		T(test_crash),
		T(test_crash_after_roll),
		T(test_roll_advances_recovery_point),
		T(test_checkpoint_owner_and_flusher),
		T(test_recovery_from_recovery_point),
		T(test_runway),
		T(test_runway_seal_durable),
		T(test_runway_errors),
		T(test_runway_pieces),
		T(test_runway_log),
#undef T
		cmocka_unit_test_setup_teardown(test_append_many, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_merged_format, setup, teardown),
		cmocka_unit_test_setup_teardown(test_merged_format_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_append_many_short_write, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
