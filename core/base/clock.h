/*
 * clock.h — the cluster clock: the system clock, or a manual one that moves
 * only when told to (/clock), so that time-based rules (ISR lag, linger,
 * timeouts, retention, sessions) can be tested without sleeping.
 *
 * Reads are lock-free (an atomic); the owner of the clock decides who is
 * woken when manual time moves (mk_cluster_clock_advance, cluster.h).
 */
#ifndef MK_CLOCK_H
#define MK_CLOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

typedef struct {
	bool manual;
	_Atomic int64_t manual_ms;
} mk_clock;

void mk_clock_init(mk_clock *c, bool manual, int64_t start_ms);
int64_t mk_clock_now(mk_clock *c);
/*
 * The largest time a manual clock may show: 9999-12-31T23:59:59.999Z.
 * Far below INT64_MAX, so that a deadline (now + a timeout) never nears
 * overflow and the value is one a person meant.
 */
#define MK_CLOCK_MAX_MS 253402300799999LL

/* Manual clock only; returns false on a system clock, a negative step, or
 * one that would pass MK_CLOCK_MAX_MS. */
bool mk_clock_advance(mk_clock *c, int64_t ms);
/* Manual clock only; returns false when it would move time backwards or
 * past MK_CLOCK_MAX_MS. */
bool mk_clock_set(mk_clock *c, int64_t ms);
/* a + b for a deadline: saturates at INT64_MAX instead of wrapping. */
static inline int64_t mk_deadline(int64_t a, int64_t b)
{
	return b > 0 && a > INT64_MAX - b ? INT64_MAX : a + b;
}
/* Wall-clock milliseconds, whatever the mode (for /errors lines). */
int64_t mk_wall_ms(void);
/*
 * The absolute time ms milliseconds from now on clk, for
 * pthread_cond_timedwait (CLOCK_REALTIME for a condition variable made
 * with default attributes, CLOCK_MONOTONIC for one made with that clock):
 * the one place such a deadline is computed. A negative ms is now.
 */
struct timespec mk_timespec_after_ms(clockid_t clk, int64_t ms);

#endif
