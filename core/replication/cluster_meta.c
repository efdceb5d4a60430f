/*
 * cluster_meta.c — the cluster's side of the metadata file (metadata.h
 * reads and writes it): the save of the current state with a planned
 * change on top (decide, persist, act: every control change is saved by
 * its command before it is applied), the saver thread that stores the ISR
 * changes partitions decide on their own, and the flush of everything.
 *
 * Invariants: meta_saved is the meta_dirty count the last successful save
 * started from, so a save is due exactly when they differ; a partition
 * hears of a save (mk_partition_meta_saved) only once the file has it, and
 * with the state the file holds, so what it acts on is always durable.
 *
 * Locking: meta_lock serialises every save (the saver's, a command's, the
 * final one); a save snapshots under c->lock (read) and each p->lock, and
 * holds neither during the write and its fsync. The saver's flags
 * (saver_kick, saver_stop) are guarded by saver_lock, a leaf (meta_notify
 * is called under p->lock).
 *
 * A command that must complete with the ISR change it caused (the
 * clock's moves, the fetch rounds, an acks=0/1 append in manual
 * replication: replica.h, mk_env.meta_store) calls
 * mk_cluster_sync_metadata: when the saver is in the middle of a save, it
 * waits for that save on meta_lock (the saver's completion, an event; no
 * timed poll), then saves what is still due.
 */
#include "cluster_internal.h"

#include <stdlib.h>
#include <string.h>

#include "logdir.h"
#include "metadata.h"
#include "xalloc.h"

static void add_ids(mk_strbuf *out, const int *ids, int n)
{
	for (int i = 0; i < n; i++)
		mk_strbuf_addf(out, "%s%d", i ? "," : "", ids[i]);
}

static const mk_partition_state *planned(const mk_meta_plan *plan,
					 const mk_partition *p)
{
	for (size_t i = 0; plan && i < plan->nparts; i++)
		if (plan->parts[i].p == p)
			return &plan->parts[i].st;
	return NULL;
}

/* A topic's lines; its partitions' states are appended to saved. */
static void format_topic(mk_strbuf *out, mk_topic *t, const mk_meta_plan *plan,
			 mk_meta_part **saved, size_t *nsaved)
{
	const mk_topic_config *cfg =
		plan && plan->cfg_topic == t ? plan->cfg : &t->cfg;
	mk_strbuf_addf(out, "topic %s %d %d", t->name, t->npartitions,
		       t->replication_factor);
	if (cfg->overrides) {
		mk_strbuf_addch(out, ' ');
		mk_topic_config_format_overrides(cfg, out);
	}
	mk_strbuf_addch(out, '\n');
	*saved = mk_xrealloc(*saved, (*nsaved + (size_t)t->npartitions) * sizeof(**saved));
	for (int p = 0; p < t->npartitions; p++) {
		mk_meta_part *mp = &(*saved)[(*nsaved)++];
		mp->p = t->partitions[p];
		const mk_partition_state *pl = planned(plan, mp->p);
		if (pl)
			mp->st = *pl;
		else
			mk_partition_state_get(mp->p, &mp->st);
		const mk_partition_state *st = &mp->st;
		mk_strbuf_addf(out, "partition %s %d leader=", t->name, p);
		if (st->leader < 0)
			mk_strbuf_addstr(out, "none");
		else
			mk_strbuf_addf(out, "%d", st->leader);
		mk_strbuf_addf(out, " epoch=%d replicas=", st->leader_epoch);
		add_ids(out, st->brokers, st->nreplicas);
		mk_strbuf_addstr(out, " isr=");
		add_ids(out, st->isr, st->nisr);
		mk_strbuf_addch(out, '\n');
	}
	if (plan && plan->deleting && !strcmp(plan->deleting, t->name))
		mk_strbuf_addf(out, "deleting %s\n", t->name);
}

/* The producer lines: the registry with the plan's identity on top. */
static void format_producers(mk_cluster *c, mk_strbuf *out,
			     const mk_meta_plan *plan)
{
	const char *pn = plan ? plan->producer : NULL;
	mk_strbuf_addf(out, "next_producer_id %lld\n",
		       (long long)(pn ? plan->next_producer_id : c->next_producer_id));
	for (size_t i = 0; i < c->nproducers; i++)
		if (!pn || strcmp(pn, c->producers[i].name))
			mk_strbuf_addf(out, "producer %s %lld %d\n", c->producers[i].name,
				       (long long)c->producers[i].id, c->producers[i].epoch);
	if (pn && !plan->producer_gone)
		mk_strbuf_addf(out, "producer %s %lld %d\n", pn,
			       (long long)plan->producer_id, plan->producer_epoch);
}

mk_err meta_save(mk_cluster *c, const mk_meta_plan *plan)
{
	mk_strbuf out = MK_STRBUF_INIT;
	mk_meta_part *saved = NULL;
	size_t nsaved = 0;
	mk_topic **held = NULL;
	size_t nheld = 0;
	uint64_t version = atomic_load(&c->meta_dirty);
	mk_strbuf_addstr(&out, "minikafka-metadata 3\n");
	pthread_rwlock_rdlock(&c->lock);
	for (int b = 0; b < c->nbrokers; b++) {
		bool online = c->brokers[b].online;
		if (plan && plan->broker == c->brokers[b].id)
			online = plan->broker_online;
		mk_strbuf_addf(&out, "broker %d %s\n", c->brokers[b].id,
			       online ? "online" : "offline");
	}
	/* Topics stay referenced until their partitions hear of the save. */
	held = mk_xcalloc(c->ntopics + 1, sizeof(*held));
	bool added = false;
	for (size_t i = 0; i <= c->ntopics; i++) {
		mk_topic *add = plan ? plan->add : NULL;
		if (add && !added &&
		    (i == c->ntopics || strcmp(add->name, c->topics[i]->name) < 0)) {
			format_topic(&out, add, plan, &saved, &nsaved);
			added = true;
		}
		if (i == c->ntopics)
			break;
		mk_topic *t = c->topics[i];
		atomic_fetch_add(&t->refs, 1);
		held[nheld++] = t;
		format_topic(&out, t, plan, &saved, &nsaved);
	}
	if (c->clock.manual)
		mk_strbuf_addf(&out, "clock %lld\n", (long long)mk_clock_now(&c->clock));
	format_producers(c, &out, plan);
	pthread_rwlock_unlock(&c->lock);
	mk_err err = mk_metadata_write(c->data_dir, &out, &c->errlog);
	if (!err) {
		c->meta_saved = version;
		/* No lock is held here: each partition takes its own. */
		for (size_t i = 0; i < nsaved; i++)
			mk_partition_meta_saved(saved[i].p, &saved[i].st);
	}
	for (size_t i = 0; i < nheld; i++)
		mk_topic_put(held[i]);
	free(held);
	free(saved);
	mk_strbuf_release(&out);
	return err;
}

mk_err mk_cluster_sync_metadata(mk_cluster *c)
{
	mk_err err = MK_OK;
	pthread_mutex_lock(&c->meta_lock);
	if (atomic_load(&c->meta_dirty) != c->meta_saved)
		err = meta_save(c, NULL);
	pthread_mutex_unlock(&c->meta_lock);
	return err;
}

struct flush_arg {
	mk_err err;
};

static void flush_one(mk_topic *t, mk_partition *p, void *arg)
{
	(void)t;
	struct flush_arg *fa = arg;
	mk_err err = mk_partition_flush_logs(p);
	if (err && !fa->err)
		fa->err = err;
}

mk_err mk_cluster_flush(mk_cluster *c, mk_strbuf *why)
{
	struct flush_arg fa = { MK_OK };
	mk_cluster_each_partition(c, flush_one, &fa);
	/* The brokers' checkpoint files (logdir.h), once each for all their
	 * partitions. */
	mk_strbuf cwhy = MK_STRBUF_INIT;
	mk_err cerr = mk_logdir_sync_all(&cwhy);
	if (cerr) {
		mk_errlog_add(&c->errlog, mk_wall_ms(), NULL, cerr, "flush: %s",
			      cwhy.buf);
		if (!fa.err)
			fa.err = cerr;
	}
	mk_strbuf_release(&cwhy);
	pthread_mutex_lock(&c->meta_lock);
	mk_err err = meta_save(c, NULL);
	pthread_mutex_unlock(&c->meta_lock);
	if (!fa.err)
		fa.err = err;
	if (fa.err && why)
		mk_strbuf_addstr(why, "flush failed; see earlier lines");
	return fa.err;
}

/* ---- the saver -------------------------------------------------------------- */

/*
 * ISR changes decided under a partition's lock are saved here, on a thread
 * of their own, so that no fetcher or writer of auto mode waits behind the
 * fsync; what the change would allow (a higher HW, an acks=all completion)
 * waits for mk_partition_meta_saved instead, and the snapshot shows the
 * ISR the file has (replica.h, mk_partition_info_get).
 */
static void meta_notify(void *arg)
{
	mk_cluster *c = arg;
	pthread_mutex_lock(&c->saver_lock);
	c->saver_kick = true;
	pthread_cond_signal(&c->saver_cond);
	pthread_mutex_unlock(&c->saver_lock);
}

/* mk_env.meta_store: what is decided is in the file when this returns
 * (or its save failed, with an /errors line). No lock held. */
static void meta_store(void *arg)
{
	mk_cluster_sync_metadata(arg);
}

static void *saver_main(void *arg)
{
	mk_cluster *c = arg;
	pthread_mutex_lock(&c->saver_lock);
	while (!c->saver_stop) {
		if (!c->saver_kick) {
			pthread_cond_wait(&c->saver_cond, &c->saver_lock);
			continue;
		}
		c->saver_kick = false;
		pthread_mutex_unlock(&c->saver_lock);
		mk_cluster_sync_metadata(c);
		pthread_mutex_lock(&c->saver_lock);
	}
	pthread_mutex_unlock(&c->saver_lock);
	return NULL;
}

void saver_start(mk_cluster *c)
{
	if (c->saver_started ||
	    pthread_create(&c->saver, NULL, saver_main, c) != 0)
		return;
	c->saver_started = true;
	/* From here on ISR changes wait for the saver (replica.h). */
	c->env.meta_notify = meta_notify;
	c->env.meta_store = meta_store;
	c->env.meta_arg = c;
	/* What was decided before (counted as saved until now) is stored. */
	meta_notify(c);
}

void saver_stop(mk_cluster *c)
{
	if (!c->saver_started)
		return;
	pthread_mutex_lock(&c->saver_lock);
	c->saver_stop = true;
	pthread_cond_signal(&c->saver_cond);
	pthread_mutex_unlock(&c->saver_lock);
	pthread_join(c->saver, NULL);
	c->saver_started = false;
}
