/*
 * bwrite — the load generator of bench/run.sh.
 *
 *   bwrite write [-c] [-k NKEYS] PATH BYTES CHUNK
 *       write BYTES in write() calls of CHUNK bytes, both rounded down to
 *       whole 100-byte records (99 characters and '\n'), so no record is
 *       split across two writes. -c opens with O_CREAT|O_TRUNC (plain
 *       files). -k makes every record "KEY<TAB>VALUE" with NKEYS distinct
 *       keys, for an append:tsv name.
 *   bwrite read PATH BUFSIZE
 *       read() PATH to EOF with a BUFSIZE buffer.
 *   bwrite ops [-c] PATH COUNT [SIZE]
 *       COUNT write() calls of SIZE bytes (default 100: one record) through
 *       one descriptor held open.
 *
 * Sizes take K, M, G (binary). The clock (CLOCK_MONOTONIC) runs from just
 * after open() to just after close(), so whatever close() flushes counts.
 * Nothing is fsynced: a plain file is measured page cache to page cache.
 *
 * Output, one line on stdout, KEY=VALUE fields:
 *   mode=write bytes=N calls=N secs=S mbps=X opsps=Y fsync=no
 * mbps is 10^6 bytes per second; opsps is read()/write() calls per second.
 * Exit status 1 on any error, with the reason on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "benchutil.h"

static const char *prog = "bwrite";

static void usage(void)
{
    fprintf(stderr,
            "usage: %s write [-c] [-k NKEYS] PATH BYTES CHUNK\n"
            "       %s read PATH BUFSIZE\n"
            "       %s ops [-c] PATH COUNT [SIZE]\n",
            prog, prog, prog);
    exit(2);
}

static uint64_t size_arg(const char *what, const char *s)
{
    uint64_t v;
    if (bench_parse_size(s, &v) != 0) {
        fprintf(stderr, "%s: bad %s '%s'\n", prog, what, s);
        exit(2);
    }
    return v;
}

static void *xalloc(size_t n)
{
    void *p;
    if (posix_memalign(&p, 4096, n ? n : 1) != 0) {
        fprintf(stderr, "%s: out of memory (%zu bytes)\n", prog, n);
        exit(1);
    }
    return p;
}

/* len bytes of records: every BENCH_RECORD bytes one line ending in '\n'
 * (a shorter last line if len is not a multiple). With nkeys, each line
 * starts with a key from nkeys distinct ones and a TAB. */
static void fill_records(char *buf, size_t len, unsigned nkeys)
{
    for (size_t rec = 0; rec * BENCH_RECORD < len; rec++) {
        char *line = buf + rec * BENCH_RECORD;
        size_t n = len - rec * BENCH_RECORD;
        if (n > BENCH_RECORD)
            n = BENCH_RECORD;
        bench_line(line, n, rec, nkeys);
    }
}

static int open_or_die(const char *path, int flags)
{
    int fd = open(path, flags, 0644);
    if (fd < 0) {
        fprintf(stderr, "%s: open %s: %s\n", prog, path, strerror(errno));
        exit(1);
    }
    return fd;
}

static void write_all_or_die(int fd, const char *path, const char *buf,
                             size_t len)
{
    ssize_t w;
    do
        w = write(fd, buf, len);
    while (w < 0 && errno == EINTR);
    if (w < 0) {
        fprintf(stderr, "%s: write %s (%zu bytes): %s\n", prog, path, len,
                strerror(errno));
        exit(1);
    }
    if ((size_t)w != len) {
        /* Finishing it would split a record over two batches. */
        fprintf(stderr, "%s: write %s: short write, %zd of %zu bytes\n",
                prog, path, w, len);
        exit(1);
    }
}

static void close_or_die(int fd, const char *path)
{
    if (close(fd) != 0) {
        fprintf(stderr, "%s: close %s: %s\n", prog, path, strerror(errno));
        exit(1);
    }
}

static void report(const char *mode, uint64_t bytes, uint64_t calls,
                   double secs, const char *extra)
{
    if (secs <= 0)
        secs = 1e-9;
    printf("mode=%s bytes=%" PRIu64 " calls=%" PRIu64
           " secs=%.6f mbps=%.1f opsps=%.0f%s\n",
           mode, bytes, calls, secs, (double)bytes / secs / 1e6,
           (double)calls / secs, extra);
}

static int cmd_write(int argc, char **argv)
{
    int flags = O_WRONLY;
    unsigned nkeys = 0;
    int opt;
    while ((opt = getopt(argc, argv, "ck:")) != -1) {
        switch (opt) {
        case 'c':
            flags |= O_CREAT | O_TRUNC;
            break;
        case 'k':
            nkeys = (unsigned)size_arg("key count", optarg);
            if (nkeys == 0 || nkeys > 100000)
                usage();
            break;
        default:
            usage();
        }
    }
    if (argc - optind != 3)
        usage();
    const char *path = argv[optind];
    uint64_t total = size_arg("byte count", argv[optind + 1]);
    uint64_t chunk = size_arg("chunk size", argv[optind + 2]);
    total -= total % BENCH_RECORD;
    chunk -= chunk % BENCH_RECORD;
    if (chunk == 0 || total == 0) {
        fprintf(stderr, "%s: BYTES and CHUNK must hold a 100-byte record\n",
                prog);
        return 2;
    }
    if (chunk > total)
        chunk = total;

    char *buf = xalloc(chunk);
    fill_records(buf, chunk, nkeys);
    int fd = open_or_die(path, flags);
    uint64_t done = 0, calls = 0;
    double t0 = bench_now_s();
    while (done < total) {
        size_t n = total - done < chunk ? (size_t)(total - done) : chunk;
        write_all_or_die(fd, path, buf, n);
        done += n;
        calls++;
    }
    close_or_die(fd, path);
    double secs = bench_now_s() - t0;
    free(buf);
    char extra[64];
    snprintf(extra, sizeof extra, " chunk=%" PRIu64 " fsync=no", chunk);
    report("write", done, calls, secs, extra);
    return 0;
}

static int cmd_read(int argc, char **argv)
{
    if (argc != 3)
        usage();
    const char *path = argv[1];
    uint64_t bufsize = size_arg("buffer size", argv[2]);
    if (bufsize == 0 || bufsize > (1u << 30))
        usage();
    char *buf = xalloc((size_t)bufsize);
    int fd = open_or_die(path, O_RDONLY);
    uint64_t done = 0, calls = 0;
    double t0 = bench_now_s();
    for (;;) {
        ssize_t r = read(fd, buf, (size_t)bufsize);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            fprintf(stderr, "%s: read %s at %" PRIu64 ": %s\n", prog, path,
                    done, strerror(errno));
            return 1;
        }
        calls++;
        if (r == 0)
            break;
        done += (uint64_t)r;
    }
    close_or_die(fd, path);
    double secs = bench_now_s() - t0;
    free(buf);
    char extra[64];
    snprintf(extra, sizeof extra, " bufsize=%" PRIu64, bufsize);
    report("read", done, calls, secs, extra);
    return 0;
}

static int cmd_ops(int argc, char **argv)
{
    int flags = O_WRONLY;
    int opt;
    while ((opt = getopt(argc, argv, "c")) != -1) {
        if (opt != 'c')
            usage();
        flags |= O_CREAT | O_TRUNC;
    }
    if (argc - optind != 2 && argc - optind != 3)
        usage();
    const char *path = argv[optind];
    uint64_t count = size_arg("count", argv[optind + 1]);
    uint64_t size = argc - optind == 3 ? size_arg("size", argv[optind + 2])
                                       : BENCH_RECORD;
    if (count == 0 || size == 0 || size > (1u << 30))
        usage();

    char *buf = xalloc((size_t)size);
    fill_records(buf, (size_t)size, 0);
    int fd = open_or_die(path, flags);
    double t0 = bench_now_s();
    for (uint64_t i = 0; i < count; i++)
        write_all_or_die(fd, path, buf, (size_t)size);
    close_or_die(fd, path);
    double secs = bench_now_s() - t0;
    free(buf);
    char extra[64];
    snprintf(extra, sizeof extra, " size=%" PRIu64 " fsync=no", size);
    report("ops", count * size, count, secs, extra);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    const char *cmd = argv[1];
    /* Subcommand's own argv: argv[0] is the subcommand, options follow. */
    if (strcmp(cmd, "write") == 0)
        return cmd_write(argc - 1, argv + 1);
    if (strcmp(cmd, "read") == 0)
        return cmd_read(argc - 1, argv + 1);
    if (strcmp(cmd, "ops") == 0)
        return cmd_ops(argc - 1, argv + 1);
    usage();
}
