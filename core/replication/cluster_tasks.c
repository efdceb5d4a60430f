/*
 * cluster_tasks.c — what runs on a schedule rather than on a request,
 * after Kafka's scheduler tasks: the ISR check (ReplicaManager's
 * isr-expiration task: every partition's leader applies the ISR rules,
 * isr.c) and retention and compaction (LogManager's retention and
 * cleaner tasks), each callable at once (/ctl retention, /ctl compact,
 * and the ISR check by every move of the manual clock and every explicit
 * fetch round), and in auto mode run by a thread of its own:
 *   the ISR check      every replica.lag.time.max.ms / 2 on the cluster
 *                      clock (as Kafka's), with the system clock only: a
 *                      manual clock moves only through mk_cluster_clock_*,
 *                      and each move runs the check itself;
 *   retention, then compaction   every log.retention.check.interval.ms.
 *
 * The ISR check is what applies the time rules to a partition nothing
 * else touches (no fetch, no append: a follower that stopped fetching):
 * the snapshot never does (replica.h, mk_partition_info_get). It decides
 * under each partition's lock and then stores what it decided
 * (mk_cluster_sync_metadata), so that once it returns the ISR the
 * snapshot shows, and the HW, have moved.
 *
 * Invariants: one cleaner run at a time (clean_lock), whoever runs it; a
 * task's thread runs its task only between two waits of its period, and
 * stops at the shutdown's first step (stop_cond).
 *
 * Locking: clean_lock is taken before any other cluster lock (cluster.h);
 * a run walks the partitions under c->lock (read), each under its own
 * lock; the sync after it holds none. tasks[] and task_started[] are
 * written by mk_cluster_start and read by close only.
 */
#include "cluster_internal.h"

#include <stdlib.h>

#include "xalloc.h"

/* ---- the ISR check ------------------------------------------------------------- */

static void check_one(mk_topic *t, mk_partition *p, void *arg)
{
	(void)t;
	(void)arg;
	mk_partition_refresh(p);
}

void isr_check_partitions(mk_cluster *c)
{
	mk_cluster_each_partition(c, check_one, NULL);
}

mk_err mk_cluster_isr_check(mk_cluster *c)
{
	isr_check_partitions(c);
	return mk_cluster_sync_metadata(c);
}

/* ---- retention and compaction -------------------------------------------------- */

struct clean_arg {
	bool compact;
	mk_err err;
	mk_strbuf *why;
};

static void clean_one(mk_topic *t, mk_partition *p, void *arg)
{
	(void)t;
	struct clean_arg *ca = arg;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = ca->compact ? mk_partition_compact(p, &why)
				 : mk_partition_retention(p);
	if (err && !ca->err) {
		ca->err = err;
		if (ca->why)
			mk_strbuf_addf(ca->why, "%s-%d: %s", mk_partition_topic(p), mk_partition_id(p),
				       why.len ? why.buf : "storage error; see earlier lines");
	}
	mk_strbuf_release(&why);
}

static mk_err clean_all(mk_cluster *c, bool compact, mk_strbuf *why)
{
	struct clean_arg ca = { compact, MK_OK, why };
	pthread_mutex_lock(&c->clean_lock);
	mk_cluster_each_partition(c, clean_one, &ca);
	pthread_mutex_unlock(&c->clean_lock);
	/* A storage error took a replica offline: metadata may have moved. */
	mk_cluster_sync_metadata(c);
	return ca.err;
}

mk_err mk_cluster_retention(mk_cluster *c, mk_strbuf *why)
{
	return clean_all(c, false, why);
}

mk_err mk_cluster_compact(mk_cluster *c, mk_strbuf *why)
{
	return clean_all(c, true, why);
}

/* ---- the tasks' threads (auto mode) -------------------------------------------- */

static void run_cleaner(mk_cluster *c)
{
	mk_strbuf why = MK_STRBUF_INIT;
	mk_cluster_retention(c, &why);
	mk_cluster_compact(c, &why);
	mk_strbuf_release(&why);
}

static void run_isr_check(mk_cluster *c)
{
	mk_cluster_isr_check(c);
}

typedef struct {
	void (*run)(mk_cluster *c);
	int64_t (*period_ms)(const mk_config *cfg);
} task_kind;

static int64_t cleaner_period(const mk_config *cfg)
{
	return cfg->retention_check_interval_ms;
}

static int64_t isr_check_period(const mk_config *cfg)
{
	return cfg->replica_lag_time_max_ms / 2 > 0 ? cfg->replica_lag_time_max_ms / 2 : 1;
}

static const task_kind TASKS[MK_CLUSTER_TASKS] = {
	[MK_TASK_CLEANER] = { run_cleaner, cleaner_period },
	[MK_TASK_ISR_CHECK] = { run_isr_check, isr_check_period },
};

typedef struct {
	mk_cluster *c;
	const task_kind *kind;
} task_arg;

static void *task_main(void *arg)
{
	task_arg ta = *(task_arg *)arg;
	free(arg);
	while (!cluster_stop_wait(ta.c, ta.kind->period_ms(&ta.c->cfg)))
		ta.kind->run(ta.c);
	return NULL;
}

void tasks_start(mk_cluster *c)
{
	for (int i = 0; i < MK_CLUSTER_TASKS; i++) {
		if (c->task_started[i] || (i == MK_TASK_ISR_CHECK && c->clock.manual))
			continue;
		task_arg *ta = mk_xmalloc(sizeof(*ta));
		*ta = (task_arg){ c, &TASKS[i] };
		if (pthread_create(&c->tasks[i], NULL, task_main, ta) == 0)
			c->task_started[i] = true;
		else
			free(ta);
	}
}

void tasks_join(mk_cluster *c)
{
	for (int i = 0; i < MK_CLUSTER_TASKS; i++)
		if (c->task_started[i]) {
			pthread_join(c->tasks[i], NULL);
			c->task_started[i] = false;
		}
}
