/* Small helpers shared by the bench/ programs. */
#ifndef MKFS_BENCHUTIL_H
#define MKFS_BENCHUTIL_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* Every benchmark record is this long: 99 characters and '\n'. */
#define BENCH_RECORD 100

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
