#include "clock.h"

#include <time.h>

int64_t mk_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void mk_clock_init(mk_clock *c, bool manual, int64_t start_ms)
{
	c->manual = manual;
	atomic_store(&c->manual_ms, start_ms);
}

int64_t mk_clock_now(mk_clock *c)
{
	return c->manual ? atomic_load(&c->manual_ms) : mk_wall_ms();
}

bool mk_clock_advance(mk_clock *c, int64_t ms)
{
	if (!c->manual || ms < 0 || ms > MK_CLOCK_MAX_MS)
		return false;
	/* Refuse to wrap: a negative clock would be saved in the metadata,
	 * which then refuses to load at the next mount. */
	int64_t cur = atomic_load(&c->manual_ms);
	do {
		if (cur > MK_CLOCK_MAX_MS - ms)
			return false;
	} while (!atomic_compare_exchange_weak(&c->manual_ms, &cur, cur + ms));
	return true;
}

bool mk_clock_set(mk_clock *c, int64_t ms)
{
	if (!c->manual || ms > MK_CLOCK_MAX_MS)
		return false;
	int64_t cur = atomic_load(&c->manual_ms);
	while (ms >= cur) {
		if (atomic_compare_exchange_weak(&c->manual_ms, &cur, ms))
			return true;
	}
	return false;
}

struct timespec mk_timespec_after_ms(clockid_t clk, int64_t ms)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	if (ms < 0)
		ms = 0;
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}
