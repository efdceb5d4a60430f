/*
 * notify.c — the bounded "something moved" wait (notify.h).
 */
#include "notify.h"

#include <time.h>

#include "clock.h"

void mk_notifier_init(mk_notifier *n)
{
	pthread_mutex_init(&n->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&n->cond, &ca);
	pthread_condattr_destroy(&ca);
	n->bytes = 0;
	n->events = 0;
	n->stopped = false;
}

void mk_notifier_destroy(mk_notifier *n)
{
	pthread_mutex_destroy(&n->lock);
	pthread_cond_destroy(&n->cond);
}

void mk_notifier_post_data(mk_notifier *n, uint64_t bytes)
{
	pthread_mutex_lock(&n->lock);
	n->bytes += bytes ? bytes : 1;
	pthread_cond_broadcast(&n->cond);
	pthread_mutex_unlock(&n->lock);
}

void mk_notifier_post_event(mk_notifier *n)
{
	pthread_mutex_lock(&n->lock);
	n->events++;
	pthread_cond_broadcast(&n->cond);
	pthread_mutex_unlock(&n->lock);
}

void mk_notifier_stop(mk_notifier *n)
{
	pthread_mutex_lock(&n->lock);
	n->stopped = true;
	n->events++;
	pthread_cond_broadcast(&n->cond);
	pthread_mutex_unlock(&n->lock);
}

mk_notify_mark mk_notifier_mark(mk_notifier *n)
{
	pthread_mutex_lock(&n->lock);
	mk_notify_mark m = { n->bytes, n->events };
	pthread_mutex_unlock(&n->lock);
	return m;
}

static bool satisfied(const mk_notifier *n, const mk_notify_mark *m,
		      uint64_t min_bytes)
{
	if (n->stopped || n->events != m->events)
		return true;
	uint64_t got = n->bytes - m->bytes;
	return got > 0 && got >= (min_bytes ? min_bytes : 1);
}

bool mk_notifier_wait(mk_notifier *n, mk_notify_mark *mark,
		      uint64_t min_bytes, int64_t wait_ms)
{
	struct timespec ts = mk_timespec_after_ms(CLOCK_MONOTONIC, wait_ms);
	pthread_mutex_lock(&n->lock);
	bool ok = true;
	while (!satisfied(n, mark, min_bytes)) {
		if (pthread_cond_timedwait(&n->cond, &n->lock, &ts) != 0 &&
		    !satisfied(n, mark, min_bytes)) {
			ok = false;
			break;
		}
	}
	mark->bytes = n->bytes;
	mark->events = n->events;
	pthread_mutex_unlock(&n->lock);
	return ok;
}
