/*
 * Unit tests of prepared segment files (core/storage/log_flush.c, segment.c;
 * issue 11 point 3): a pool thread makes the next segment's files ahead
 * and the roll renames them into place; leftovers of a crash are deleted
 * at open; a kill at every step (forked child, failpoints) loses nothing
 * that was appended before it.
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
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codec.h"
#include "failpoint.h"
#include "log.h"
#include "segment.h"
#include "testlib.h"

#define SEG_BYTES 1000

typedef tl_logdir fixture;

static int setup(void **state)
{
	return tl_logdir_setup(state, "prepare");
}

static int teardown(void **state)
{
	return tl_logdir_teardown(state);
}

static mk_log *open_log(const fixture *f)
{
	mk_log_config cfg = { SEG_BYTES, 100, 0, NULL, NULL };
	mk_log *log = NULL;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_log_open(f->dir, &cfg, &log, &why);
	if (err)
		print_error("open: %s: %s\n", mk_err_name(err), why.buf);
	assert_int_equal(err, MK_OK);
	mk_strbuf_release(&why);
	return log;
}

/* In a crash child: where each acknowledged log end is reported. */
static int report_fd = -1;

/* One batch of two records at the log end; the values name the offsets. */
static void append_two(mk_log *log)
{
	int64_t base = mk_log_end_offset(log);
	char v0[128], v1[128];
	snprintf(v0, sizeof(v0), "value-%lld-%080d", (long long)base, 0);
	snprintf(v1, sizeof(v1), "value-%lld-%080d", (long long)base + 1, 0);
	const char *vals[2] = { v0, v1 };
	mk_strbuf fr = MK_STRBUF_INIT;
	tl_frame(&fr, 0, 0, vals, 2, NULL);
	int64_t got;
	assert_int_equal(mk_log_append_leader(log, (uint8_t *)fr.buf, fr.len, 0,
					      &got), MK_OK);
	assert_int_equal(got, base);
	mk_strbuf_release(&fr);
	int64_t end = base + 2;
	if (report_fd >= 0 && write(report_fd, &end, sizeof(end)) != sizeof(end))
		_exit(4);
}

/* Every offset below end reads back, in order, with its own value. */
static void check_all(mk_log *log, int64_t end)
{
	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_end_offset(log), end);
	int64_t next = 0;
	while (next < end) {
		mk_strbuf_reset(&out);
		assert_int_equal(mk_log_read(log, next, end, SIZE_MAX, &out), MK_OK);
		size_t pos = 0;
		while (pos < out.len) {
			mk_batch_view b;
			assert_int_equal(mk_frame_decode((const uint8_t *)out.buf + pos,
							 out.len - pos, 0, &b, NULL),
					 MK_OK);
			mk_record_iter it;
			mk_record_iter_init(&it, &b);
			mk_record_view r;
			while (mk_record_next(&it, &r)) {
				char want[128];
				snprintf(want, sizeof(want), "value-%lld-%080d",
					 (long long)r.offset, 0);
				assert_int_equal(r.offset, next);
				assert_int_equal(r.value.len, (int32_t)strlen(want));
				assert_memory_equal(r.value.ptr, want, strlen(want));
				next++;
			}
			pos += b.frame_len;
		}
	}
	assert_int_equal(next, end);
	mk_strbuf_release(&out);
}

static bool exists_in(const fixture *f, const char *name)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	return access(path, F_OK) == 0;
}

/* stat(2) of DIR/name, which must exist. */
static struct stat stat_in(const fixture *f, const char *name)
{
	char path[256];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	assert_int_equal(stat(path, &st), 0);
	return st;
}

static ino_t inode_of(const fixture *f, const char *name)
{
	return stat_in(f, name).st_ino;
}

static off_t size_in(const fixture *f, const char *name)
{
	return stat_in(f, name).st_size;
}

static void seg_name(int64_t base, const char *ext, char *out, size_t n)
{
	snprintf(out, n, "%020lld.%s", (long long)base, ext);
}

/* Append until the next append rolls (the active segment past half). */
static void fill_to_half(mk_log *log)
{
	mk_segment_info info;
	do {
		append_two(log);
		mk_log_segment_info(log, mk_log_segment_count(log) - 1, &info);
	} while (info.size * 2 < SEG_BYTES);
}

/* Append until a new segment starts; its base. */
static int64_t roll(mk_log *log)
{
	size_t n = mk_log_segment_count(log);
	while (mk_log_segment_count(log) == n)
		append_two(log);
	mk_segment_info info;
	mk_log_segment_info(log, n, &info);
	return info.base_offset;
}

/* The mechanism: files made ahead, adopted by the roll (same inodes),
 * made again for the next roll, deleted at close. */
static void test_roll_takes_prepared(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f);
	assert_false(exists_in(f, "prepared.log.tmp"));
	fill_to_half(log);
	assert_true(mk_log_wait_prepared(log));
	assert_true(exists_in(f, "prepared.log.tmp"));
	/* Kafka's three files a segment: the time index too. */
	assert_true(exists_in(f, "prepared.index.tmp"));
	assert_true(exists_in(f, "prepared.timeindex.tmp"));
	ino_t log_ino = inode_of(f, "prepared.log.tmp");
	ino_t idx_ino = inode_of(f, "prepared.index.tmp");
	ino_t tim_ino = inode_of(f, "prepared.timeindex.tmp");

	int64_t base = roll(log);
	char name[64];
	seg_name(base, "log", name, sizeof(name));
	assert_int_equal(inode_of(f, name), log_ino);
	seg_name(base, "index", name, sizeof(name));
	assert_int_equal(inode_of(f, name), idx_ino);
	seg_name(base, "timeindex", name, sizeof(name));
	assert_int_equal(inode_of(f, name), tim_ino);

	/* The roll asked for the next ones at once. */
	assert_true(mk_log_wait_prepared(log));
	assert_true(exists_in(f, "prepared.log.tmp"));
	assert_int_not_equal(inode_of(f, "prepared.log.tmp"), log_ino);
	int64_t base2 = roll(log);
	assert_true(base2 > base);
	int64_t end = mk_log_end_offset(log);
	check_all(log, end);
	/* The indexes of the adopted segments work (a read from the middle
	 * and a time lookup). */
	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(mk_log_read(log, base + 3, end, SIZE_MAX, &out), MK_OK);
	assert_true(out.len > 0);
	mk_strbuf_release(&out);
	assert_int_equal(mk_log_flush(log), MK_OK);
	mk_log_close(log);
	assert_false(exists_in(f, "prepared.log.tmp"));
	assert_false(exists_in(f, "prepared.index.tmp"));
	assert_false(exists_in(f, "prepared.timeindex.tmp"));

	/* Reopened: the same log, index files of the adopted segments
	 * valid, appends go on. */
	log = open_log(f);
	check_all(log, end);
	append_two(log);
	check_all(log, end + 2);
	mk_log_close(log);
}

/* Leftovers (a crash) are deleted at open, whatever they hold; a prepared
 * .log is never taken for a segment. */
static void test_leftovers_deleted(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f);
	for (int i = 0; i < 3; i++)
		append_two(log);
	mk_log_close(log);
	const char *names[3] = { "prepared.log.tmp", "prepared.index.tmp",
				 "prepared.timeindex.tmp" };
	for (int i = 0; i < 3; i++) {
		char path[256];
		snprintf(path, sizeof(path), "%s/%s", f->dir, names[i]);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, "garbage", 7), 7);
		close(fd);
	}
	log = open_log(f);
	for (int i = 0; i < 3; i++)
		assert_false(exists_in(f, names[i]));
	check_all(log, 6);
	assert_int_equal(mk_log_segment_count(log), 1);
	mk_log_close(log);
}

/*
 * A kill at each step: in a forked child, the log is filled past half
 * (the files get made), rolled and written on; the child dies at the
 * point. Every append that returned before the kill is there after the
 * reopen, no prepared file is left, and the log goes on.
 */
static void crash_at(fixture *f, const char *point, int hit)
{
	tl_logdir_wipe(f);
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		mk_failpoint_arm(point, hit);
		report_fd = fds[1];
		mk_log *log = open_log(f);
		for (int k = 0; k < 4; k++) {
			fill_to_half(log);
			/* The preparation runs on the pool thread: a point
			 * there kills the process while this one waits. */
			mk_log_wait_prepared(log);
			roll(log);
		}
		_exit(3);   /* the point was never reached */
	}
	close(fds[1]);
	int64_t acked = 0, v;
	while (read(fds[0], &v, sizeof(v)) == sizeof(v))
		acked = v;
	close(fds[0]);
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		print_error("point %s@%d: child did not die at it\n", point, hit);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

	mk_log *log = open_log(f);
	assert_false(exists_in(f, "prepared.log.tmp"));
	assert_false(exists_in(f, "prepared.index.tmp"));
	assert_false(exists_in(f, "prepared.timeindex.tmp"));
	int64_t end = mk_log_end_offset(log);
	/* Nothing acknowledged is lost; at most the batch being appended at
	 * the kill is there too. */
	if (end < acked || end > acked + 2)
		print_error("point %s@%d: log end %lld, acknowledged %lld\n",
			    point, hit, (long long)end, (long long)acked);
	assert_true(end >= acked && end <= acked + 2);
	check_all(log, end);
	fill_to_half(log);
	mk_log_wait_prepared(log);
	roll(log);
	check_all(log, mk_log_end_offset(log));
	mk_log_close(log);
	log = open_log(f);
	check_all(log, mk_log_end_offset(log));
	mk_log_close(log);
}

static void test_crash_points(void **state)
{
	fixture *f = *state;
	/* Made ahead, the .log only: the first time, and a later time. */
	crash_at(f, "segment.prepare.after-log", 1);
	crash_at(f, "segment.prepare.after-log", 3);
	/* The .log renamed into place, its index files not yet. */
	crash_at(f, "segment.adopt.after-log", 1);
	crash_at(f, "segment.adopt.after-log", 2);
	/* All three in place, the segment not yet in the log. */
	crash_at(f, "log.roll.after-create", 2);
	/* Sealed, before the files are taken. */
	crash_at(f, "log.roll.after-seal", 2);
}

/* The prepared .log cannot be taken at the roll (gone, or a file system
 * with neither RENAME_NOREPLACE nor hard links): the roll creates the
 * segment's files itself, as without prepared files, and the log goes on
 * instead of failing with a storage error. */
static void test_roll_without_prepared_log(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f);
	fill_to_half(log);
	assert_true(mk_log_wait_prepared(log));
	char path[256];
	snprintf(path, sizeof(path), "%s/prepared.log.tmp", f->dir);
	assert_int_equal(unlink(path), 0);
	int64_t base = roll(log);
	char name[64];
	seg_name(base, "log", name, sizeof(name));
	assert_true(exists_in(f, name));
	append_two(log);
	int64_t end = mk_log_end_offset(log);
	check_all(log, end);
	mk_log_close(log);
	log = open_log(f);
	check_all(log, end);
	mk_log_close(log);
}

/* A prepared index file gone at the roll (only the .log taken): the
 * segment gets an empty one instead, over a stale file of an earlier
 * segment at that base, and its indexes work and reopen valid. */
static void test_roll_without_prepared_timeindex(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f);
	fill_to_half(log);
	assert_true(mk_log_wait_prepared(log));
	char path[256];
	snprintf(path, sizeof(path), "%s/prepared.timeindex.tmp", f->dir);
	assert_int_equal(unlink(path), 0);
	ino_t log_ino = inode_of(f, "prepared.log.tmp");
	int64_t end = mk_log_end_offset(log);
	/* A stale time index where the next segment may start (two
	 * records an append: an even base, within half a segment). */
	char name[64];
	for (int64_t b = end; b < end + 40; b += 2) {
		seg_name(b, "timeindex", name, sizeof(name));
		snprintf(path, sizeof(path), "%s/%s", f->dir, name);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, "stale, not entries", 18), 18);
		close(fd);
	}
	int64_t base = roll(log);
	assert_true(base > end && base < end + 40);
	seg_name(base, "log", name, sizeof(name));
	assert_int_equal(inode_of(f, name), log_ino);
	/* The stale bytes went: the file holds the new segment's entry. */
	mk_log_write_index_pending(log);
	for (int64_t b = end; b < end + 40; b += 2) {
		seg_name(b, "timeindex", name, sizeof(name));
		snprintf(path, sizeof(path), "%s/%s", f->dir, name);
		struct stat st;
		assert_int_equal(stat(path, &st), 0);
		if (b == base) {
			assert_int_equal(st.st_size, MK_TIME_INDEX_ENTRY_SIZE);
		} else {
			assert_int_equal(st.st_size, 18);
			assert_int_equal(unlink(path), 0);
		}
	}
	for (int i = 0; i < 3; i++)
		append_two(log);
	end = mk_log_end_offset(log);
	check_all(log, end);
	assert_int_equal(mk_log_flush(log), MK_OK);
	mk_log_close(log);
	log = open_log(f);
	check_all(log, end);
	mk_log_close(log);
}

/* Making the prepared files never truncates an inode it did not make: a
 * prepared name left linked to a segment (the link fallback of the
 * adoption, its unlink failed) loses nothing of that segment. */
static void test_prepare_keeps_linked_segment(void **state)
{
	fixture *f = *state;
	mk_log *log = open_log(f);
	for (int i = 0; i < 3; i++)
		append_two(log);
	mk_log_close(log);
	char seg[256], prep[256], name[64];
	seg_name(0, "log", name, sizeof(name));
	snprintf(seg, sizeof(seg), "%s/%s", f->dir, name);
	snprintf(prep, sizeof(prep), "%s/prepared.log.tmp", f->dir);
	struct stat st;
	assert_int_equal(stat(seg, &st), 0);
	off_t size = st.st_size;
	assert_true(size > 0);
	assert_int_equal(link(seg, prep), 0);
	assert_int_equal(mk_segment_prepare(f->dir, 0, NULL), MK_OK);
	assert_int_equal(stat(seg, &st), 0);
	assert_int_equal(st.st_size, size);
	assert_int_not_equal(inode_of(f, "prepared.log.tmp"), st.st_ino);
	log = open_log(f);
	check_all(log, 6);
	mk_log_close(log);
}

/* flush.messages: an fsync after an append that follows a roll also
 * fsyncs the directory (the new segment's entry, created or renamed
 * there, is durable once the append returns); appends without a roll add
 * no directory fsync. */
static void test_flush_syncs_new_entry(void **state)
{
	fixture *f = *state;
	mk_log_config cfg = { SEG_BYTES, 100, 1, NULL, NULL };
	mk_log *log = NULL;
	assert_int_equal(mk_log_open(f->dir, &cfg, &log, NULL), MK_OK);
	append_two(log);
	assert_int_equal(mk_log_dir_syncs(log), 0);
	fill_to_half(log);
	assert_true(mk_log_wait_prepared(log));
	roll(log);                  /* its last append went to the new one */
	assert_int_equal(mk_log_dir_syncs(log), 1);
	append_two(log);
	append_two(log);
	assert_int_equal(mk_log_dir_syncs(log), 1);
	roll(log);                  /* created without prepared files too */
	assert_int_equal(mk_log_dir_syncs(log), 2);
	mk_log_close(log);
}


/* The prepared .log is the adopted segment's first runway (segment.h):
 * zeros, as many as the segment holds (at most MK_SEGMENT_PREFILL_MAX),
 * which the appends overwrite; the roll after cuts what is left, as does
 * the close; a reopened log is its frames. Segments under twice
 * MK_SEGMENT_RUNWAY_FROM get none. */
#define RUNWAY_SEG (200 * 1024)

static mk_log *open_runway_log(const fixture *f)
{
	mk_log_config cfg = { RUNWAY_SEG, 4096, 0, NULL, NULL };
	mk_log *log = NULL;
	assert_int_equal(mk_log_open(f->dir, &cfg, &log, NULL), MK_OK);
	return log;
}

static mk_segment_info last_info(mk_log *log)
{
	mk_segment_info info;
	mk_log_segment_info(log, mk_log_segment_count(log) - 1, &info);
	return info;
}

/* DIR/name holds len bytes, every one zero and written (no hole: the
 * zeros are in the page cache, not implied by a sparse file). */
static void check_zeros(const fixture *f, const char *name, off_t len)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(lseek(fd, 0, SEEK_END), len);
	if (len > 0)
		assert_int_equal(lseek(fd, 0, SEEK_HOLE), len);
	static char buf[64 * 1024];
	off_t at = 0;
	ssize_t n;
	while ((n = pread(fd, buf, sizeof(buf), at)) > 0) {
		for (ssize_t i = 0; i < n; i++)
			assert_int_equal(buf[i], 0);
		at += n;
	}
	assert_int_equal(at, len);
	close(fd);
}

static void test_prepared_runway(void **state)
{
	fixture *f = *state;
	/* Small segments: an empty prepared .log, as before. */
	mk_log *log = open_log(f);
	fill_to_half(log);
	assert_true(mk_log_wait_prepared(log));
	assert_int_equal(size_in(f, "prepared.log.tmp"), 0);
	mk_log_close(log);
	tl_logdir_wipe(f);

	log = open_runway_log(f);
	while (last_info(log).size * 2 < RUNWAY_SEG)
		append_two(log);
	assert_true(mk_log_wait_prepared(log));
	check_zeros(f, "prepared.log.tmp", RUNWAY_SEG);
	int64_t base = roll(log);
	char name[64];
	seg_name(base, "log", name, sizeof(name));
	mk_segment_info info = last_info(log);
	assert_int_equal(info.base_offset, base);
	assert_true(info.size > 0 && info.size < RUNWAY_SEG);
	/* Appends overwrite the zeros: the file keeps its length. */
	assert_int_equal(size_in(f, name), RUNWAY_SEG);
	append_two(log);
	assert_int_equal(last_info(log).base_offset, base);
	assert_int_equal(size_in(f, name), RUNWAY_SEG);
	int64_t end = mk_log_end_offset(log);
	check_all(log, end);

	/* The next roll seals it: a closed segment is its frames. */
	assert_true(mk_log_wait_prepared(log));
	int64_t base2 = roll(log);
	assert_true(base2 > base);
	mk_log_segment_info(log, mk_log_segment_count(log) - 2, &info);
	assert_int_equal(info.base_offset, base);
	assert_int_equal(size_in(f, name), (off_t)info.size);

	/* The close cuts the active one's runway too. */
	info = last_info(log);
	seg_name(base2, "log", name, sizeof(name));
	assert_int_equal(size_in(f, name), RUNWAY_SEG);
	end = mk_log_end_offset(log);
	mk_log_close(log);
	assert_int_equal(size_in(f, name), (off_t)info.size);
	log = open_runway_log(f);
	check_all(log, end);
	mk_log_close(log);

	/* Capped: a prefill asked past MK_SEGMENT_PREFILL_MAX. */
	assert_int_equal(mk_segment_prepare(f->dir, 3 * MK_SEGMENT_PREFILL_MAX, NULL),
			 MK_OK);
	assert_int_equal(size_in(f, "prepared.log.tmp"), MK_SEGMENT_PREFILL_MAX);
	mk_segment_discard_prepared(f->dir);
}

/*
 * A prefill goes to the file in runway-sized pieces (segment.c's
 * write_zeros: a folio is as large as the write that makes it); the
 * pieces add up to the whole, and a file that can take no more ends the
 * prefill where it stopped: inside a piece (a short write, and no write
 * after it) or at a piece's end (the next piece, and only it, fails).
 * A limit on a multiple of MK_SEGMENT_RUNWAY is where a piece starts:
 * the write there fails; one write of the whole range would be short.
 */
static void test_prefill_pieces(void **state)
{
	fixture *f = *state;
	assert_int_equal(mkdir(f->dir, 0755), 0);
	assert_int_equal(mk_segment_prepare(f->dir, MK_SEGMENT_PREFILL_MAX, NULL),
			 MK_OK);
	check_zeros(f, "prepared.log.tmp", MK_SEGMENT_PREFILL_MAX);
	mk_segment_discard_prepared(f->dir);

	struct rlimit old, low;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	void (*prev)(int) = signal(SIGXFSZ, tl_count_xfsz);
	static const struct {
		off_t limit;
		int failed;     /* writes that started at the limit */
	} cases[] = {
		{ MK_SEGMENT_RUNWAY + 1000, 0 },      /* short inside the second */
		{ 2 * MK_SEGMENT_RUNWAY, 1 },         /* the third fails */
		{ 1000, 0 },                          /* short inside the first */
		{ MK_SEGMENT_RUNWAY, 1 },             /* the second fails */
		{ 3 * MK_SEGMENT_RUNWAY, 1 },         /* the fourth fails */
		{ MK_SEGMENT_PREFILL_MAX, 0 },        /* all fit, none more */
		{ MK_SEGMENT_RUNWAY / 2, 0 },         /* no piece starts there */
		{ MK_SEGMENT_RUNWAY * 3 / 2, 0 },     /* nor there */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		low = old;
		low.rlim_cur = (rlim_t)cases[i].limit;
		tl_xfsz = 0;
		assert_int_equal(setrlimit(RLIMIT_FSIZE, &low), 0);
		/* Best effort: the files are made, the zeros are what fit. */
		mk_err err = mk_segment_prepare(f->dir, MK_SEGMENT_PREFILL_MAX, NULL);
		assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
		assert_int_equal(err, MK_OK);
		assert_int_equal(tl_xfsz, cases[i].failed);
		check_zeros(f, "prepared.log.tmp", cases[i].limit);
		mk_segment_discard_prepared(f->dir);
	}
	signal(SIGXFSZ, prev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_roll_takes_prepared, setup, teardown),
		cmocka_unit_test_setup_teardown(test_leftovers_deleted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crash_points, setup, teardown),
		cmocka_unit_test_setup_teardown(test_roll_without_prepared_log, setup, teardown),
		cmocka_unit_test_setup_teardown(test_roll_without_prepared_timeindex, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prepare_keeps_linked_segment, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flush_syncs_new_entry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prepared_runway, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prefill_pieces, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
