/* Small helpers shared by the bench/ programs. */
#ifndef MKFS_BENCHUTIL_H
#define MKFS_BENCHUTIL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Every benchmark record is this long: 99 characters and '\n'. */
#define BENCH_RECORD 100

/* Record rec as the benchmarks write it, n <= BENCH_RECORD bytes at line:
 * "key%05u<TAB>" (rec mod nkeys; none when nkeys is 0), the record number
 * in ten digits and a space, letters, and '\n' as its last byte. */
static inline void bench_line(char *line, size_t n, size_t rec, unsigned nkeys)
{
    char head[32];
    int h = nkeys ? snprintf(head, sizeof head, "key%05u\t%010zu ",
                             (unsigned)(rec % nkeys), rec)
                  : snprintf(head, sizeof head, "%010zu ", rec);
    for (size_t i = 0; i + 1 < n; i++)
        line[i] = i < (size_t)h ? head[i] : (char)('a' + i % 26);
    line[n - 1] = '\n';
}

/* Seconds on the monotonic clock. */
static inline double bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* "123", "64K", "256M", "1G" (binary multiples). Returns 0 on success. */
static inline int bench_parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *s == '-')
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end != '\0' || (shift && v > (UINT64_MAX >> shift)))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

#endif
