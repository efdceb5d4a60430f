/*
 * cluster_clock.c — the cluster clock's moves and who hears of them: the
 * manual clock's advance and set (/clock), each of which runs the ISR
 * check (cluster.h, mk_cluster_isr_check: the time rules of every
 * partition, applied at the moment time moved), wakes every partition's
 * waiters, calls the clock hooks (the producers send what lingered long
 * enough) and saves the metadata (the clock is in it); and the round hook
 * the background fetchers call.
 *
 * Invariants: a move completes with its effect — when
 * mk_cluster_clock_advance returns, the ISR changes the new time decided
 * are in the metadata file and acted on (the HW moved), so a reader right
 * after it sees them (the snapshot never applies a rule itself: replica.h).
 * The clock never moves back, nor past MK_CLOCK_MAX_MS.
 *
 * Locking: hooks_lock guards the clock hooks, held only to copy them; a
 * hook is called with no cluster lock held. The round hook is set before
 * mk_cluster_start and read without a lock.
 */
#include "cluster_internal.h"

#include <stdlib.h>
#include <string.h>

void mk_cluster_on_round(mk_cluster *c, void (*fn)(void *arg), void *arg)
{
	c->round_hook_arg = arg;
	c->round_hook = fn;
}

void mk_cluster_on_clock(mk_cluster *c, void (*fn)(void *arg), void *arg)
{
	pthread_mutex_lock(&c->hooks_lock);
	if (c->nclock_hooks == MK_CLUSTER_MAX_HOOKS)
		abort();
	c->clock_hooks[c->nclock_hooks].fn = fn;
	c->clock_hooks[c->nclock_hooks].arg = arg;
	c->nclock_hooks++;
	pthread_mutex_unlock(&c->hooks_lock);
}

void mk_cluster_off_clock(mk_cluster *c, void (*fn)(void *arg), void *arg)
{
	pthread_mutex_lock(&c->hooks_lock);
	for (int i = 0; i < c->nclock_hooks; i++)
		if (c->clock_hooks[i].fn == fn && c->clock_hooks[i].arg == arg) {
			c->clock_hooks[i] = c->clock_hooks[--c->nclock_hooks];
			break;
		}
	pthread_mutex_unlock(&c->hooks_lock);
}

static void wake_one(mk_topic *t, mk_partition *p, void *arg)
{
	(void)t;
	(void)arg;
	mk_partition_wake(p);
}

void wake_partitions(mk_cluster *c)
{
	mk_cluster_each_partition(c, wake_one, NULL);
}

/* The clock moved (ok: it could): the ISR check, every waiter, the hooks,
 * and the save that carries the new time and what it decided. */
static mk_err clock_moved(mk_cluster *c, bool ok, mk_strbuf *why)
{
	if (!ok) {
		return mk_error(why, MK_INVALID_REQUEST, "%s", c->clock.manual
				? "the clock cannot move backwards or past 253402300799999 ms (year 9999)"
				: "the clock is the system clock; set clock = manual to move it");
	}
	isr_check_partitions(c);
	wake_partitions(c);
	pthread_mutex_lock(&c->hooks_lock);
	int n = c->nclock_hooks;
	mk_clock_hook hooks[MK_CLUSTER_MAX_HOOKS];
	memcpy(hooks, c->clock_hooks, sizeof(hooks));
	pthread_mutex_unlock(&c->hooks_lock);
	for (int i = 0; i < n; i++)
		hooks[i].fn(hooks[i].arg);
	atomic_fetch_add(&c->meta_dirty, 1);
	return mk_cluster_sync_metadata(c);
}

mk_err mk_cluster_clock_advance(mk_cluster *c, int64_t ms, mk_strbuf *why)
{
	return clock_moved(c, mk_clock_advance(&c->clock, ms), why);
}

mk_err mk_cluster_clock_set(mk_cluster *c, int64_t ms, mk_strbuf *why)
{
	return clock_moved(c, mk_clock_set(&c->clock, ms), why);
}
