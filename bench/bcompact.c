/*
 * bcompact — compaction throughput against a plain copy of the same bytes.
 *
 *     bcompact DIR [BYTES [KEYS]]
 *
 * Builds a log of BYTES (default 128M) of keyed 100-byte records over KEYS
 * distinct keys (default 1000) in DIR/log-0 with 1 MiB segments, flushed.
 * Then, in the same run and on the same disk:
 *   copy:    every closed segment's .log read and written to DIR/copy/,
 *            each copy fsynced, then the directory (the bytes the cleaner
 *            reads and, at worst, writes, with the same syncs);
 *   compact: mk_cleaner_compact over every closed segment (key map, filter,
 *            staged segments fsynced with their indexes, the journaled swap).
 * Prints one line of KEY=VALUE fields; mbps is MB (10^6 bytes) of closed
 * segments per second, ratio = compact / copy.
 *
 *     bcompact DIR passes [PASSES [KEYS]]
 *
 * Compaction cost across passes (issue 23 point 4): PASSES (default 100)
 * rounds, each appending 256 KiB of the same records (KEYS default 1000)
 * to a log of 64 KiB segments, flushing, then timing one mk_cleaner_compact
 * over everything closed. Prints the median pass time of the first and of
 * the last quartile of passes, last / first, and the closed segments left.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleaner.h"
#include "codec.h"
#include "fileio.h"
#include "log.h"
#include "logdir.h"
#include "benchutil.h"

static void die(const char *what)
{
	fprintf(stderr, "bcompact: %s\n", what);
	exit(1);
}

/* Append batches of 100 keyed records (100-byte values, keys round-robin
 * from *n on) until bytes were written. */
static void append_records(mk_log *log, uint64_t bytes, uint64_t keys,
			   uint64_t *n)
{
	char value[100];
	memset(value, 'v', sizeof(value));
	uint64_t written = 0;
	mk_batch_meta meta = { 0, 0, 0, -1, -1, -1, 0, false, 0 };
	mk_batch_builder b;
	mk_builder_init(&b, &meta);
	while (written < bytes) {
		mk_builder_reset(&b, &meta);
		for (int i = 0; i < 100; i++, (*n)++) {
			char key[32];
			int kl = snprintf(key, sizeof(key), "key-%llu",
					  (unsigned long long)(*n % keys));
			mk_builder_add(&b, (int64_t)*n, mk_bytes_of(key, (size_t)kl),
				       mk_bytes_of(value, sizeof(value)), NULL, 0);
		}
		mk_builder_finish(&b);
		if (mk_log_append_leader(log, (uint8_t *)b.frame.buf, b.frame.len, 0,
					 NULL))
			die("append failed");
		written += b.frame.len;
	}
	mk_builder_release(&b);
	if (mk_log_flush(log))
		die("flush failed");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median of v[0..n), sorted in place. */
static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Remove the log DIR/log-0, and its lines of DIR's checkpoint files
 * (logdir.h): a log made there anew must not find them. */
static void remove_log(const char *dir, const char *logdir)
{
	mk_remove_tree(logdir);
	mk_logdir *ld;
	if (!mk_logdir_acquire(dir, NULL, &ld, NULL)) {
		mk_logdir_forget(ld, "log", 0);
		mk_logdir_release(ld, true);
	}
}

/* bcompact DIR passes [PASSES [KEYS]]: see the header. */
static int passes_mode(const char *dir, const char *logdir, int argc,
		       char **argv)
{
	uint64_t passes = 100, keys = 1000;
	if (argc > 3 && (bench_parse_size(argv[3], &passes) || passes < 4))
		die("bad PASSES (at least 4)");
	if (argc > 4 && (bench_parse_size(argv[4], &keys) || keys == 0))
		die("bad KEYS");
	remove_log(dir, logdir);
	mk_log_config cfg = { 64 << 10, 4096, 0, NULL, NULL };
	mk_log *log;
	mk_strbuf why = MK_STRBUF_INIT;
	if (mk_log_open(logdir, &cfg, &log, &why))
		die(why.buf);
	double *secs = malloc(passes * sizeof(*secs));
	uint64_t n = 0;
	for (uint64_t p = 0; p < passes; p++) {
		append_records(log, 256 << 10, keys, &n);
		mk_clean_params cp = {
			.now_ms = (int64_t)p, .retention_ms = -1, .retention_bytes = -1,
			.delete_retention_ms = 86400000, .segment_bytes = 64 << 10,
			.index_interval_bytes = 4096,
			.cleaning_point = mk_log_end_offset(log),
		};
		double t0 = bench_now_s();
		if (mk_cleaner_compact(log, &cp, NULL, &why))
			die(why.buf);
		secs[p] = bench_now_s() - t0;
	}
	size_t q = passes / 4;
	double first = median(secs, q), last = median(secs + passes - q, q);
	printf("mode=passes passes=%llu keys=%llu first_ms=%.2f last_ms=%.2f "
	       "ratio=%.2f segments=%zu\n", (unsigned long long)passes,
	       (unsigned long long)keys, first * 1e3, last * 1e3, last / first,
	       mk_log_segment_count(log) - 1);
	free(secs);
	mk_log_close(log);
	mk_strbuf_release(&why);
	remove_log(dir, logdir);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[2], "passes")) {
		if (argc > 5)
			die("usage: bcompact DIR passes [PASSES [KEYS]]");
		char dir[4096];
		snprintf(dir, sizeof(dir), "%s/log-0", argv[1]);
		return passes_mode(argv[1], dir, argc, argv);
	}
	if (argc < 2 || argc > 4)
		die("usage: bcompact DIR [BYTES [KEYS]]");
	uint64_t bytes = 128u << 20, keys = 1000;
	if (argc > 2 && bench_parse_size(argv[2], &bytes))
		die("bad BYTES");
	if (argc > 3 && (bench_parse_size(argv[3], &keys) || keys == 0))
		die("bad KEYS");
	char logdir[4096], copydir[4096];
	snprintf(logdir, sizeof(logdir), "%s/log-0", argv[1]);
	snprintf(copydir, sizeof(copydir), "%s/copy", argv[1]);
	remove_log(argv[1], logdir);
	mk_remove_tree(copydir);
	if (mk_mkdirs(copydir))
		die("cannot create the copy directory");

	mk_log_config cfg = { 1 << 20, 4096, 0, NULL, NULL };
	mk_log *log;
	mk_strbuf why = MK_STRBUF_INIT;
	if (mk_log_open(logdir, &cfg, &log, &why))
		die(why.buf);
	uint64_t n = 0;
	append_records(log, bytes, keys, &n);

	/* The plain copy of every closed segment. */
	size_t nseg = mk_log_segment_count(log);
	uint64_t closed = 0;
	char *buf = malloc(1 << 20);
	double t0 = bench_now_s();
	for (size_t i = 0; i + 1 < nseg; i++) {
		mk_segment_info si;
		mk_log_segment_info(log, i, &si);
		char src[4200], dst[4200];
		snprintf(src, sizeof(src), "%s/%020lld.log", logdir, (long long)si.base_offset);
		snprintf(dst, sizeof(dst), "%s/%020lld.log", copydir, (long long)si.base_offset);
		int in = open(src, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (in < 0 || out < 0)
			die("cannot open for the copy");
		ssize_t r;
		while ((r = read(in, buf, 1 << 20)) > 0)
			if (write(out, buf, (size_t)r) != r)
				die("copy write failed");
		if (r < 0 || fsync(out))
			die("copy failed");
		close(in);
		close(out);
		closed += si.size;
	}
	if (mk_fsync_dir(copydir))
		die("fsync failed");
	double copy_s = bench_now_s() - t0;

	mk_clean_params cp = {
		.now_ms = 0, .retention_ms = -1, .retention_bytes = -1,
		.delete_retention_ms = 86400000, .segment_bytes = 1 << 20,
		.index_interval_bytes = 4096,
		.cleaning_point = mk_log_end_offset(log),
	};
	mk_clean_stats st;
	t0 = bench_now_s();
	if (mk_cleaner_compact(log, &cp, &st, &why))
		die(why.buf);
	double compact_s = bench_now_s() - t0;
	if (st.bytes_read != closed)
		die("the cleaner did not read every closed segment");
	double copy_mbps = closed / 1e6 / copy_s, compact_mbps = closed / 1e6 / compact_s;
	printf("mode=compact bytes=%llu segments=%zu keys=%llu copy_secs=%.3f copy_mbps=%.1f "
	       "compact_secs=%.3f compact_mbps=%.1f ratio=%.2f written=%llu removed=%lld\n",
	       (unsigned long long)closed, nseg - 1, (unsigned long long)keys,
	       copy_s, copy_mbps, compact_s, compact_mbps, compact_mbps / copy_mbps,
	       (unsigned long long)st.bytes_written, (long long)st.records_removed);
	free(buf);
	mk_log_close(log);
	mk_strbuf_release(&why);
	remove_log(argv[1], logdir);
	mk_remove_tree(copydir);
	return 0;
}
