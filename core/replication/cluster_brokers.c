/*
 * cluster_brokers.c — the brokers and their events, as Kafka's controller
 * handles them: a broker's crash or restart (every partition it hosts
 * gets a planned state: its replica out of the ISR and the leadership
 * moved, or its replica back and, where no leader is left, an election),
 * and the promotion of a replica to leader (clean or unclean). The rules
 * of each partition's plan are the partition's (election.c); this file
 * decides which partitions an event touches and keeps the metadata file
 * ahead of what is applied.
 *
 * Invariants: decide, persist, act — every event's plan is saved whole
 * before any of it is applied, and a failed save changes nothing; a
 * broker's online flag changes only after its event's save; the broker
 * list itself is fixed once the cluster is open.
 *
 * Locking: each event holds meta_lock throughout (it keeps the planned
 * partitions alive and the broker states still); plans are taken under
 * c->lock (read) and each p->lock; the online flag is written under
 * c->lock (write); the plan is applied with each p->lock only, so that
 * lookups go on while logs are cut or recovered. The sync after the event
 * runs with no lock held.
 */
#include "cluster_internal.h"

#include <stdlib.h>

#include "failpoint.h"
#include "xalloc.h"

int mk_cluster_broker_index(mk_cluster *c, int id)
{
	for (int i = 0; i < c->nbrokers; i++)
		if (c->brokers[i].id == id)
			return i;
	return -1;
}

bool broker_online_locked(mk_cluster *c, int id)
{
	int i = mk_cluster_broker_index(c, id);
	return i >= 0 && c->brokers[i].online;
}

bool mk_cluster_broker_online(mk_cluster *c, int id)
{
	pthread_rwlock_rdlock(&c->lock);
	bool on = broker_online_locked(c, id);
	pthread_rwlock_unlock(&c->lock);
	return on;
}

mk_err broker_lookup(mk_cluster *c, int id, mk_strbuf *why)
{
	if (mk_cluster_broker_index(c, id) < 0)
		return mk_error(why, MK_UNKNOWN_BROKER, "no broker %d", id);
	return MK_OK;
}

/* Planned partition states of one broker event (meta_lock held, so the
 * topic table cannot lose a partition meanwhile). */
typedef struct {
	mk_meta_part *v;
	size_t n;
} plan_list;

static void plan_each(mk_cluster *c, int id, bool crash, plan_list *pl)
{
	pthread_rwlock_rdlock(&c->lock);
	size_t total = 0;
	for (size_t i = 0; i < c->ntopics; i++)
		total += (size_t)c->topics[i]->npartitions;
	pl->v = mk_xcalloc(total ? total : 1, sizeof(*pl->v));
	pl->n = 0;
	for (size_t i = 0; i < c->ntopics; i++)
		for (int p = 0; p < c->topics[i]->npartitions; p++) {
			mk_partition *part = c->topics[i]->partitions[p];
			mk_meta_part *mp = &pl->v[pl->n];
			if (crash ? mk_partition_plan_crash(part, id, &mp->st)
				  : mk_partition_plan_restart(part, id, &mp->st)) {
				mp->p = part;
				pl->n++;
			}
		}
	pthread_rwlock_unlock(&c->lock);
}

/* The saved event applied: the broker's flag, then each planned
 * partition under its own lock only (meta_lock held). */
static void apply_event(mk_cluster *c, int id, bool crash, bool torn,
			const plan_list *pl)
{
	pthread_rwlock_wrlock(&c->lock);
	c->brokers[mk_cluster_broker_index(c, id)].online = !crash;
	pthread_rwlock_unlock(&c->lock);
	for (size_t i = 0; i < pl->n; i++) {
		if (crash)
			mk_partition_broker_crash(pl->v[i].p, id, torn);
		else
			mk_partition_broker_restart(pl->v[i].p, id, &pl->v[i].st);
	}
}

/*
 * A broker going down or up: decide every partition's new state, save it
 * all, and only then act (for a crash: cut the logs' unflushed tails).
 */
static mk_err broker_event(mk_cluster *c, int id, bool crash, bool torn,
			   mk_strbuf *why)
{
	mk_err err = broker_lookup(c, id, why);
	if (err)
		return err;
	pthread_mutex_lock(&c->meta_lock);
	if (mk_cluster_broker_online(c, id) == crash) {
		plan_list pl;
		plan_each(c, id, crash, &pl);
		mk_meta_plan plan = MK_META_PLAN_NONE;
		plan.broker = id;
		plan.broker_online = !crash;
		plan.parts = pl.v;
		plan.nparts = pl.n;
		MK_FAILPOINT(crash ? "broker.crash.before-save"
				   : "broker.restart.before-save");
		err = meta_save(c, &plan);
		if (err) {
			mk_why(why, "cannot save broker %d's new state; nothing changed", id);
		} else {
			MK_FAILPOINT(crash ? "broker.crash.after-save"
					   : "broker.restart.after-save");
			apply_event(c, id, crash, torn, &pl);
		}
		free(pl.v);
		if (!err)
			fetchers_wake(c);   /* fetchers: look now */
	} else {
		err = crash ? MK_BROKER_NOT_AVAILABLE : MK_INVALID_REQUEST;
		mk_why(why, crash ? "broker %d is already offline"
		       : "broker %d is online; crash it first", id);
	}
	pthread_mutex_unlock(&c->meta_lock);
	if (!err)
		mk_cluster_sync_metadata(c);
	if (!err && c->broker_hook)
		c->broker_hook(c->broker_hook_arg, id, !crash);
	return err;
}

void mk_cluster_on_broker(mk_cluster *c,
			  void (*fn)(void *arg, int broker, bool online),
			  void *arg)
{
	c->broker_hook_arg = arg;
	c->broker_hook = fn;
}

mk_err mk_cluster_broker_crash(mk_cluster *c, int id, bool torn, mk_strbuf *why)
{
	return broker_event(c, id, true, torn, why);
}

mk_err mk_cluster_broker_restart(mk_cluster *c, int id, mk_strbuf *why)
{
	return broker_event(c, id, false, false, why);
}

mk_err mk_cluster_promote(mk_cluster *c, int broker, const char *topic,
			  int partition, bool unclean, mk_strbuf *why)
{
	mk_err err = broker_lookup(c, broker, why);
	if (err)
		return err;
	mk_topic *t = mk_cluster_topic(c, topic);
	mk_partition *p = t ? mk_topic_partition(t, partition) : NULL;
	if (!p) {
		mk_why(why, "no partition %s/%d", topic, partition);
		mk_topic_put(t);
		return MK_UNKNOWN_TOPIC_OR_PARTITION;
	}
	/* Decide, persist, act: no append runs under the new epoch before
	 * the metadata file has it. */
	pthread_mutex_lock(&c->meta_lock);
	mk_meta_part mp = { p, { 0 } };
	err = mk_partition_plan_promote(p, broker, unclean, &mp.st, why);
	if (!err) {
		mk_meta_plan plan = MK_META_PLAN_NONE;
		plan.parts = &mp;
		plan.nparts = 1;
		MK_FAILPOINT("promote.before-save");
		err = meta_save(c, &plan);
		if (err && why)
			mk_strbuf_addstr(why, "cannot save the new leader; nothing changed");
	}
	if (!err) {
		MK_FAILPOINT("promote.after-save");
		err = mk_partition_promote(p, broker, unclean, &mp.st, why);
	}
	pthread_mutex_unlock(&c->meta_lock);
	fetchers_wake(c);   /* fetchers: look now */
	mk_topic_put(t);
	mk_cluster_sync_metadata(c);
	return err;
}
