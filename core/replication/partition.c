/*
 * partition.c — one partition's lifecycle and state: open (every online
 * replica's log, the saved ISR, leader and epoch, the HW the logs agree
 * on), create, close, retire; the broker-wide events every piece reports
 * through (a replica failed, metadata changed); the change count and the
 * watchers (mk_watch) every waiter is answered from;
 * the snapshot (mk_partition_info) and the persistent state.
 *
 * The other pieces of the partition (replica_internal.h): isr.c decides
 * the ISR and the HW, produce.c appends for the leader, follower_fetch.c
 * copies to the followers, election.c moves the leadership,
 * replica_store.c keeps each replica's files, replica_read.c serves reads,
 * retention and compaction. The leader's log is the source of truth for
 * consumers, which never see past the high watermark.
 *
 * Invariants (part_check, debug builds): those of replica.h, and
 * nfetching is the number of replicas `fetching`; a replica's log is open
 * exactly when its broker is online, the replica has not failed and the
 * topic is not deleted.
 *
 * The snapshot (mk_partition_info_get) only reads: it applies no ISR
 * rule and never waits, so a reader under any lock of its own (a
 * coordinator's, the cluster's read lock) holds it for a copy only. Its
 * ISR is the committed one (KIP-497: a change decided and not yet in the
 * metadata file is not yet the ISR; isr.c, isr_committed_member), with
 * the HW that ISR allows (isr_counted holds it back until then). A reader
 * right after a step of the manual modes sees that step's ISR change:
 * the step (a clock move, an explicit fetch round, an acks=0/1 append in
 * manual replication) returns only once the change is saved (cluster.h,
 * mk_cluster_isr_check; mk_env.meta_store). The time rules of a partition
 * nothing touches are applied by the cluster's ISR check, not by a read.
 *
 * Locking: every call takes p->lock; watchers fire under it (part_changed,
 * part_progressed), in whichever thread made the change.
 */
#include "replica_internal.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xalloc.h"

/* Leader, epoch or ISR moved: the cluster must persist its metadata. */
void meta_changed(mk_partition *p)
{
	if (p->env->meta_dirty)
		atomic_fetch_add(p->env->meta_dirty, 1);
	if (p->env->meta_notify)
		p->env->meta_notify(p->env->meta_arg);
}

void part_changed(mk_partition *p)
{
	p->seq++;
	mk_watch_fire_all(&p->watchers);
}

/*
 * A follower's copy moved and nothing else did (its log end, log start or
 * HW view; the HW, ISR and leader moves that may follow fire through
 * part_changed()): as part_changed(), except that a watcher of an
 * acks=all ticket still pending stays armed (replica.h, mk_watch).
 */
void part_progressed(mk_partition *p)
{
	p->seq++;
	mk_watch *w = p->watchers.next;
	while (w != &p->watchers) {
		mk_watch *next = w->next;
		bool pending = false;
		if (!w->ack || ack_look(p, w->ack, &pending, NULL) || !pending)
			mk_watch_fire(w);
		w = next;
	}
}

int replica_index(const mk_partition *p, int broker)
{
	for (int i = 0; i < p->nreplicas; i++)
		if (p->replicas[i].broker == broker)
			return i;
	return -1;
}

void part_check(const mk_partition *p)
{
#ifndef NDEBUG
	assert(isr_size(p) >= 1);
	if (p->leader >= 0) {
		const mk_replica *l = &p->replicas[p->leader];
		assert(l->log && l->in_isr && !l->fetching);
		assert(p->hw <= mk_log_end_offset(l->log));
	}
	int nfetching = 0;
	for (int i = 0; i < p->nreplicas; i++) {
		const mk_replica *r = &p->replicas[i];
		assert((r->log != NULL) == (r->online && !r->failed && !p->deleted));
		assert(!r->fetching || r->log);
		nfetching += r->fetching;
	}
	assert(nfetching == p->nfetching);
#else
	(void)p;
#endif
}

/* Take a replica offline after a storage error; the line names the file. */
void replica_failed(mk_partition *p, int i, const char *what)
{
	mk_replica *r = &p->replicas[i];
	const char *err = r->log ? mk_log_error(r->log) : "";
	mk_errlog_add(p->env->errlog, mk_wall_ms(), NULL, MK_KAFKA_STORAGE_ERROR,
		      "broker %d %s-%d %s%s%s; replica taken offline", r->broker,
		      p->topic, p->id, what, *err ? ": " : "", err);
	/* Nothing is cut: the log's files stay as they are, and the restart
	 * of the broker recovers them. */
	mk_log_abandon(r->log);
	r->log = NULL;
	r->failed = true;
	isr_lose(p, i);
	part_changed(p);
}

static mk_err partition_open(const mk_env *env, const char *topic, int id,
			     const mk_topic_config *cfg,
			     const mk_partition_state *st, bool create,
			     mk_partition **out);

mk_err mk_partition_open(const mk_env *env, const char *topic, int id,
			 const mk_topic_config *cfg,
			 const mk_partition_state *st, mk_partition **out)
{
	return partition_open(env, topic, id, cfg, st, false, out);
}

mk_err mk_partition_create(const mk_env *env, const char *topic, int id,
			   const mk_topic_config *cfg,
			   const mk_partition_state *st, mk_partition **out)
{
	mk_err err = store_make_dirs(env, topic, id, st);
	if (err) {
		*out = NULL;
		return err;
	}
	return partition_open(env, topic, id, cfg, st, true, out);
}

static mk_err partition_open(const mk_env *env, const char *topic, int id,
			     const mk_topic_config *cfg,
			     const mk_partition_state *st, bool create,
			     mk_partition **out)
{
	mk_partition *p = mk_xcalloc(1, sizeof(*p));
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->settled, NULL);
	mk_watch_list_init(&p->watchers);
	p->env = env;
	p->topic = mk_xstrdup(topic);
	p->id = id;
	p->cfg = *cfg;
	p->nreplicas = st->nreplicas;
	p->leader = -1;
	p->leader_epoch = st->leader_epoch;
	p->creating = create;
	int64_t now = mk_clock_now(env->clock);
	p->isr_check_ms = now;
	int was_leader = -1;
	for (int i = 0; i < st->nreplicas; i++) {
		mk_replica *r = &p->replicas[i];
		r->broker = st->brokers[i];
		r->online = st->online[i];
		r->last_fetch_ms = now;
		r->hw_view = 0;
		if (r->online)
			open_replica(p, i);
		if (r->broker == st->leader && r->log)
			p->leader = i;
		if (r->broker == st->leader)
			was_leader = i;
	}
	isr_load(p, st);
	if (st->leader >= 0 && p->leader < 0)
		meta_changed(p);    /* the leader could not be opened */
	epoch_floor_at_open(p, create);
	hand_off_at_open(p, was_leader);
	p->creating = false;
	hw_at_open(p);
	part_check(p);
	*out = p;
	return MK_OK;
}

void mk_partition_close(mk_partition *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->nreplicas; i++) {
		if (p->replicas[i].log)
			save_pstate(&p->replicas[i]);
		mk_log_close(p->replicas[i].log);
		mk_pstate_free(&p->replicas[i].pstate);
	}
	assert(p->nfetching == 0);
	copy_drop(p);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->settled);
	free(p->topic);
	free(p);
}

void mk_partition_retire(mk_partition *p)
{
	pthread_mutex_lock(&p->lock);
	part_settle(p);
	for (int i = 0; i < p->nreplicas; i++) {
		mk_replica *r = &p->replicas[i];
		mk_log_abandon(r->log);   /* its files go with the topic */
		r->log = NULL;
		r->failed = true;
	}
	p->leader = -1;
	p->deleted = true;
	part_changed(p);
	pthread_mutex_unlock(&p->lock);
}

void mk_partition_state_get(mk_partition *p, mk_partition_state *st)
{
	pthread_mutex_lock(&p->lock);
	state_locked(p, st);
	pthread_mutex_unlock(&p->lock);
}

/* The last stable offset: the first offset of the leader's oldest open
 * transaction, the HW when none is below it. Under p->lock. */
int64_t lso_locked(const mk_partition *p)
{
	if (p->leader < 0)
		return p->hw;
	int64_t first = mk_pstate_first_open(&p->replicas[p->leader].pstate);
	return first < p->hw ? first : p->hw;
}

void mk_partition_info_get(mk_partition *p, mk_partition_info *info)
{
	pthread_mutex_lock(&p->lock);
	memset(info, 0, sizeof(*info));
	mk_replica *l = p->leader >= 0 ? &p->replicas[p->leader] : NULL;
	info->leo = l ? mk_log_end_offset(l->log) : -1;
	info->hw = p->hw;
	info->lso = lso_locked(p);
	info->log_start = l ? mk_log_start_offset(l->log) : -1;
	info->leader = l ? l->broker : -1;
	info->leader_epoch = p->leader_epoch;
	info->nreplicas = p->nreplicas;
	info->isr_shrinks = p->isr_shrinks;
	info->isr_expands = p->isr_expands;
	for (int i = 0; i < p->nreplicas; i++) {
		mk_replica *r = &p->replicas[i];
		info->replicas[i].broker = r->broker;
		info->replicas[i].online = r->online;
		info->replicas[i].failed = r->failed;
		info->replicas[i].in_isr = isr_committed_member(p, r);
		info->replicas[i].leo = r->log ? seen_leo(r) : -1;
		info->replicas[i].log_start = r->log ? seen_start(r) : -1;
		info->replicas[i].last_fetch_ms = r->last_fetch_ms;
		info->replicas[i].hw_view = r->hw_view;
		info->replicas[i].agreed_end = r->log && l ? seen_agreed(r, l) : -1;
	}
	pthread_mutex_unlock(&p->lock);
}

void mk_partition_set_config(mk_partition *p, const mk_topic_config *cfg)
{
	pthread_mutex_lock(&p->lock);
	part_settle(p);
	p->cfg = *cfg;
	mk_log_config lc = part_log_config(cfg);
	for (int i = 0; i < p->nreplicas; i++)
		if (p->replicas[i].log)
			mk_log_set_config(p->replicas[i].log, &lc);
	refresh_isr(p);
	pthread_mutex_unlock(&p->lock);
}

/* Deleted, or without a leader: why no produce or fetch can be served. */
mk_err part_unavailable(mk_partition *p, mk_strbuf *why)
{
	if (p->deleted)
		return mk_error(why, MK_UNKNOWN_TOPIC_OR_PARTITION, "topic %s was deleted",
				p->topic);
	if (p->leader < 0)
		return mk_error(why, MK_LEADER_NOT_AVAILABLE, "%s-%d has no online leader",
				p->topic, p->id);
	return MK_OK;
}

void mk_partition_wake(mk_partition *p)
{
	pthread_mutex_lock(&p->lock);
	/* Every waiter looks again; the ISR is the ISR check's (cluster.h). */
	part_changed(p);
	pthread_mutex_unlock(&p->lock);
}

uint64_t mk_partition_seq(mk_partition *p)
{
	pthread_mutex_lock(&p->lock);
	uint64_t seq = p->seq;
	pthread_mutex_unlock(&p->lock);
	return seq;
}

void mk_partition_watch(mk_partition *p, mk_watch *w, uint64_t seen)
{
	pthread_mutex_lock(&p->lock);
	mk_watch_arm(&p->watchers, w, p->seq, seen);
	pthread_mutex_unlock(&p->lock);
}

void mk_partition_unwatch(mk_partition *p, mk_watch *w)
{
	pthread_mutex_lock(&p->lock);
	mk_watch_disarm(w);
	pthread_mutex_unlock(&p->lock);
}

/* The persistent state, under the lock. */
void state_locked(const mk_partition *p, mk_partition_state *st)
{
	memset(st, 0, sizeof(*st));
	st->nreplicas = p->nreplicas;
	st->leader = p->leader >= 0 ? p->replicas[p->leader].broker : -1;
	st->leader_epoch = p->leader_epoch;
	for (int i = 0; i < p->nreplicas; i++) {
		st->brokers[i] = p->replicas[i].broker;
		st->online[i] = p->replicas[i].online;
		if (p->replicas[i].in_isr)
			st->isr[st->nisr++] = p->replicas[i].broker;
	}
}

const char *mk_partition_topic(const mk_partition *p)
{
	return p->topic;
}

int mk_partition_id(const mk_partition *p)
{
	return p->id;
}

void mk_partition_test_stats_get(mk_partition *p, mk_partition_test_stats *out)
{
	pthread_mutex_lock(&p->lock);
	out->leader_reads = p->leader_reads;
	out->writer_copies = p->writer_copies;
	out->writer_skips = p->writer_skips;
	out->nfetching = p->nfetching;
	out->quiescing = p->quiescing;
	out->copy_kept = p->copy != NULL;
	pthread_mutex_unlock(&p->lock);
}

void mk_partition_test_lock(mk_partition *p)
{
	pthread_mutex_lock(&p->lock);
}

bool mk_partition_test_trylock(mk_partition *p)
{
	return pthread_mutex_trylock(&p->lock) == 0;
}

void mk_partition_test_unlock(mk_partition *p)
{
	pthread_mutex_unlock(&p->lock);
}

void mk_partition_test_set_message_max(mk_partition *p, int64_t bytes)
{
	pthread_mutex_lock(&p->lock);
	p->cfg.message_max_bytes = bytes;
	pthread_mutex_unlock(&p->lock);
}
