/*
 * bproduce — the producer path of issue 7's topic rows without FUSE and
 * without parsing: what core/ itself costs per 128 KiB write.
 *
 * One cluster (one broker, real clock) in DIR; every row appends BYTES of
 * 100-byte records, in calls of CHUNK bytes each (as bwrite does through
 * the filesystem), to a fresh topic with 1 GiB segments (no roll):
 *   partition  one partition producer on partition 0 (one batch per call)
 *   t4         a topic producer on 4 partitions, keyless records
 *   k16        a topic producer on 16 partitions, keyed records
 *              ("keyNNNNN", 1000 keys, as bwrite -k 1000 writes them)
 * The rows run in interleaved rounds; per row it prints the median over
 * the rounds of microseconds per call and MB/s, and the median of each
 * round's ratio against that round's partition row.
 *
 * The filesystem adds the FUSE request and the line parse to every call;
 * this bench separates what the producer, the log and the page cache
 * cost (perf record on it gives the core's share with plain call stacks).
 *
 * The page-cache rows are the kernel's share alone: plain pwrite(2) of
 * the bytes a call puts into the logs, as the log lays them out — each
 * call's bytes split evenly over 1, 4 or 16 files, appended where the
 * previous call ended (so at unaligned offsets, as frames fall), with
 * the log's runway (core/storage/segment.h: once a file holds 64 KiB, an
 * append past its end first zero-fills it to the next 256 KiB). From
 * them, the floor: the ratio a topic row would have if it cost the
 * partition row's time plus only its extra page-cache time,
 *   partition / (partition - pagecache-1 + pagecache-N),
 * here and for the filesystem rows of bench/run.sh (which reads these
 * lines).
 *
 * Usage: bproduce DIR [BYTES [CHUNK [ROUNDS [ROW]]]]   (128M 128K 5)
 * ROW (t4 or k16): only the partition row and that one (for perf).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "benchutil.h"
#include "cluster.h"
#include "config.h"
#include "parse.h"
#include "producer.h"
#include "segment.h"

#define RECORD BENCH_RECORD
#define NKEYS 1000
#define MAX_ROUNDS 64

enum { ROW_PARTITION, ROW_T4, ROW_K16, NROWS };
static const char *const row_name[NROWS] = { "partition", "t4", "k16" };
static const int row_parts[NROWS] = { 1, 4, 16 };

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The records of one call: values (and keys) point into text, which holds
 * the lines bwrite writes (without their newlines). */
typedef struct {
	mk_record_in *recs;
	size_t n;
	char *text;
} call_recs;

static void make_records(call_recs *cr, size_t chunk, bool keyed)
{
	cr->n = chunk / RECORD;
	cr->recs = calloc(cr->n, sizeof(*cr->recs));
	cr->text = malloc(cr->n * RECORD);
	if (!cr->recs || !cr->text) {
		fprintf(stderr, "bproduce: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < cr->n; i++) {
		char *line = cr->text + i * RECORD;
		bench_line(line, RECORD, i, keyed ? NKEYS : 0);
		if (keyed) {
			cr->recs[i].key = mk_bytes_of(line, 8);
			cr->recs[i].value = mk_bytes_of(line + 9, RECORD - 10);
		} else {
			cr->recs[i].key = MK_BYTES_NULL;
			cr->recs[i].value = mk_bytes_of(line, RECORD - 1);
		}
	}
}

/* A row that cannot go on (a full disk, say): its producer and its topic
 * go, best effort, so that what it wrote is not left in DIR, and the run
 * ends. */
static void row_fail(mk_cluster *c, mk_producer *p, mk_topic *t,
		     const char *name)
{
	mk_strbuf why = MK_STRBUF_INIT;
	if (p)
		mk_producer_close(p, &why);
	if (t)
		mk_topic_put(t);
	mk_strbuf_reset(&why);
	mk_cluster_delete_topic(c, name, &why);
	mk_strbuf_release(&why);
	exit(1);
}

/* The acknowledgements of what was sent (all: the background sends' too),
 * one look: on one broker the leader's own append acknowledges a batch,
 * so nothing is left owed and nothing waits. */
static mk_err acked(mk_producer *p, bool all, mk_strbuf *why)
{
	bool pending;
	mk_ack_watch w;
	mk_err err = mk_producer_check(p, all, &pending, &w, why);
	if (!err && pending) {
		mk_strbuf_addstr(why, "an acknowledgement is owed on a one-broker cluster");
		err = MK_REQUEST_TIMED_OUT;
	}
	return err;
}

/* One row: a fresh topic, BYTES appended in calls; seconds. */
static double run_row(mk_cluster *c, mk_producers *ps, int row, int round,
		      const call_recs *cr, size_t bytes)
{
	char name[64];
	snprintf(name, sizeof(name), "%s-r%d", row_name[row], round);
	const char *ov[] = { "segment.bytes=1073741824" };
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_cluster_create_topic(c, name, row_parts[row], 1, ov, 1, &why);
	mk_topic *t = err ? NULL : mk_cluster_topic(c, name);
	mk_producer *p = NULL;
	if (t) {
		mk_producer_opts o = { .acks = MK_PRODUCER_ACKS_DEFAULT, .seq = -1 };
		err = mk_producer_open(ps, t, row == ROW_PARTITION ? 0 : MK_PARTITION_ANY,
				       &o, &p, &why);
	}
	if (err || !t) {
		fprintf(stderr, "bproduce: %s: %s %s\n", name, mk_err_name(err), why.buf);
		if (!t && err)
			exit(1);   /* not created: nothing of this run's to remove */
		row_fail(c, p, t, name);
	}
	size_t calls = bytes / (cr->n * RECORD);
	double t0 = bench_now_s();
	for (size_t i = 0; i < calls; i++) {
		size_t taken;
		mk_strbuf_reset(&why);
		err = mk_producer_append(p, cr->recs, cr->n, &taken, &why);
		if (!err)
			err = acked(p, false, &why);
		if (err || taken != cr->n) {
			fprintf(stderr, "bproduce: %s call %zu: %s %s\n", name, i,
				mk_err_name(err), why.buf);
			row_fail(c, p, t, name);
		}
	}
	mk_strbuf_reset(&why);
	err = mk_producer_flush_begin(p, &why);
	if (!err)
		err = acked(p, true, &why);
	double secs = bench_now_s() - t0;
	if (err) {
		fprintf(stderr, "bproduce: %s flush: %s %s\n", name, mk_err_name(err), why.buf);
		row_fail(c, p, t, name);
	}
	mk_strbuf_reset(&why);
	mk_producer_close(p, &why);
	mk_topic_put(t);
	mk_strbuf_reset(&why);
	mk_cluster_delete_topic(c, name, &why);
	mk_strbuf_release(&why);
	return secs;
}

/* Plain appends of `per_call` bytes a call, split over nfiles files in
 * DIR/pagecache: seconds for `calls` calls. The files are unlinked as soon
 * as they are open (whatever way the run ends, their blocks go with it)
 * and emptied after (truncated, then closed). With `prefill` (bytes), the
 * files are first filled with zeros, untimed, in pwrites of that size, as
 * the pool thread prefills a prepared segment's .log (segment.h), and the
 * appends overwrite them; without, the appends make their own runways. */
static double run_pagecache(const char *dir, int nfiles, size_t per_call,
			    size_t calls, size_t prefill)
{
	char path[4096];
	int fd[16];
	uint64_t off[16] = { 0 };
	size_t piece = per_call / (size_t)nfiles;
	char *buf = malloc(piece);
	if (!buf) {
		fprintf(stderr, "bproduce: out of memory\n");
		exit(1);
	}
	memset(buf, 'x', piece);
	snprintf(path, sizeof(path), "%s/pagecache", dir);
	mkdir(path, 0755);
	for (int i = 0; i < nfiles; i++) {
		snprintf(path, sizeof(path), "%s/pagecache/%d", dir, i);
		fd[i] = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
		if (fd[i] < 0) {
			perror(path);
			exit(1);
		}
		unlink(path);
	}
	static char zeros[MK_SEGMENT_RUNWAY];
	uint64_t filled[16] = { 0 };
	if (prefill) {
		char *z = calloc(1, prefill);
		if (!z) {
			fprintf(stderr, "bproduce: out of memory\n");
			exit(1);
		}
		for (int i = 0; i < nfiles; i++) {
			for (filled[i] = 0; filled[i] < calls * piece;
			     filled[i] += prefill)
				if (pwrite(fd[i], z, prefill, (off_t)filled[i]) !=
				    (ssize_t)prefill) {
					perror("bproduce: pwrite");
					exit(1);
				}
		}
		free(z);
	}
	double t0 = bench_now_s();
	for (size_t c = 0; c < calls; c++)
		for (int i = 0; i < nfiles; i++) {
			uint64_t end = off[i] + piece;
			if (piece < MK_SEGMENT_RUNWAY && off[i] >= MK_SEGMENT_RUNWAY_FROM &&
			    end > filled[i]) {
				uint64_t from = filled[i] > off[i] ? filled[i] : off[i];
				uint64_t to = (end + MK_SEGMENT_RUNWAY - 1) /
					      MK_SEGMENT_RUNWAY * MK_SEGMENT_RUNWAY;
				while (from < to) {
					size_t n = to - from < sizeof(zeros)
						   ? (size_t)(to - from) : sizeof(zeros);
					if (pwrite(fd[i], zeros, n, (off_t)from) != (ssize_t)n) {
						perror("bproduce: pwrite");
						exit(1);
					}
					from += n;
				}
				filled[i] = to;
			}
			if (pwrite(fd[i], buf, piece, (off_t)off[i]) != (ssize_t)piece) {
				perror("bproduce: pwrite");
				exit(1);
			}
			off[i] += piece;
		}
	double secs = bench_now_s() - t0;
	for (int i = 0; i < nfiles; i++) {
		if (ftruncate(fd[i], 0))
			perror("bproduce: ftruncate");
		close(fd[i]);
	}
	snprintf(path, sizeof(path), "%s/pagecache", dir);
	rmdir(path);
	free(buf);
	return secs;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bproduce DIR [BYTES [CHUNK [ROUNDS [ROW]]]]\n");
		return 2;
	}
	uint64_t bytes = 128u << 20, chunk = 128u << 10;
	int64_t rounds64 = 5;
	const char *only = argc > 5 ? argv[5] : NULL;
	if ((argc > 2 && bench_parse_size(argv[2], &bytes)) ||
	    (argc > 3 && bench_parse_size(argv[3], &chunk)) ||
	    (argc > 4 && !mk_parse_range(argv[4], 1, MAX_ROUNDS, &rounds64)) ||
	    bytes < chunk || chunk < RECORD ||
	    (only && strcmp(only, row_name[ROW_T4]) != 0 &&
	     strcmp(only, row_name[ROW_K16]) != 0) || argc > 6) {
		fprintf(stderr, "bproduce: need BYTES >= CHUNK >= %d, 1 <= ROUNDS <= %d, ROW t4 or k16\n",
			RECORD, MAX_ROUNDS);
		return 2;
	}
	int rounds = (int)rounds64;
	mk_config cfg;
	mk_config_defaults(&cfg);
	mk_cluster *c;
	mk_strbuf why = MK_STRBUF_INIT;
	if (mk_cluster_open(argv[1], &cfg, &c, &why)) {
		fprintf(stderr, "bproduce: open %s: %s\n", argv[1], why.buf);
		return 1;
	}
	mk_cluster_start(c);
	mk_producers *ps = mk_producers_new(c);
	call_recs plain, keyed;
	make_records(&plain, chunk, false);
	make_records(&keyed, chunk, true);

	double secs[NROWS][MAX_ROUNDS], ratio[NROWS][MAX_ROUNDS];
	static const int pc_files[] = { 1, 4, 16 };
	double pc[3][MAX_ROUNDS];
	/* 16 files prefilled in 1 MiB pwrites, and in runway-sized ones
	 * (segment.c's write_zeros): what the folios the zeros make cost the
	 * appends after them. */
	static const size_t pf_piece[] = { 1u << 20, MK_SEGMENT_RUNWAY };
	double pf[2][MAX_ROUNDS];
	/* What one call puts into the logs: the records' encoded bytes and
	 * one batch frame per partition it touches (the page-cache rows
	 * use the keyed call's, the larger). */
	size_t per_call = 0;
	for (size_t i = 0; i < keyed.n; i++)
		per_call += mk_record_size(&keyed.recs[i]);
	per_call += 16 * MK_FRAME_EMPTY_SIZE;
	size_t calls = bytes / (plain.n * RECORD);
	bool skip[NROWS] = { false };
	for (int row = 1; row < NROWS; row++)
		skip[row] = only && strcmp(only, row_name[row]) != 0;
	for (int r = 0; r < rounds; r++) {
		for (int row = 0; row < NROWS; row++)
			secs[row][r] = skip[row] ? 1 : run_row(c, ps, row, r,
					       row == ROW_K16 ? &keyed : &plain, bytes);
		for (int row = 0; row < NROWS; row++)
			ratio[row][r] = secs[ROW_PARTITION][r] / secs[row][r];
		for (int k = 0; k < 3; k++)
			pc[k][r] = run_pagecache(argv[1], pc_files[k], per_call, calls, 0);
		for (int k = 0; k < 2; k++)
			pf[k][r] = run_pagecache(argv[1], 16, per_call, calls,
						 pf_piece[k]);
	}
	printf("bproduce: %zu calls of %zu records (%zu bytes) per row, %d rounds, medians\n",
	       calls, plain.n, plain.n * RECORD, rounds);
	for (int row = 0; row < NROWS; row++) {
		if (skip[row])
			continue;
		double s = median(secs[row], rounds);
		printf("%-10s %8.1f us/call %8.1f MB/s   ratio to partition %.2f\n",
		       row_name[row], s / (double)calls * 1e6,
		       (double)(calls * plain.n * RECORD) / s / 1e6,
		       median(ratio[row], rounds));
	}
	double part_us = median(secs[ROW_PARTITION], rounds) / (double)calls * 1e6;
	double pc_us[3];
	for (int k = 0; k < 3; k++) {
		pc_us[k] = median(pc[k], rounds) / (double)calls * 1e6;
		printf("pagecache-%-2d %6.1f us/call   (%zu-byte appends into %d file%s)\n",
		       pc_files[k], pc_us[k], per_call / (size_t)pc_files[k],
		       pc_files[k], pc_files[k] > 1 ? "s" : "");
	}
	for (int k = 0; k < 2; k++)
		printf("prefilled-16 %6.1f us/call   (the same into 16 files prefilled with zeros by %zu KiB pwrites)\n",
		       median(pf[k], rounds) / (double)calls * 1e6, pf_piece[k] >> 10);
	printf("floor t4 %.2f  k16 %.2f   (partition / (partition - pagecache-1 + pagecache-N))\n",
	       part_us / (part_us - pc_us[0] + pc_us[1]),
	       part_us / (part_us - pc_us[0] + pc_us[2]));
	mk_producers_free(ps);
	mk_cluster_close(c);
	free(plain.recs);
	free(plain.text);
	free(keyed.recs);
	free(keyed.text);
	mk_strbuf_release(&why);
	return 0;
}
