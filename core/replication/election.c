/*
 * election.c — who leads one partition, under which epoch, after a broker
 * event: the plans and their application for a crash, a restart and a
 * promotion (clean or unclean), the hand-off at open of a leader that
 * cannot lead, and the epoch floor at open.
 *
 * Decide, persist, act: each event is planned first (mk_partition_plan_*:
 * the state it leads to, changing nothing), the cluster saves the planned
 * states, and only then is it applied, taking the planned leader and
 * epoch as they are: no append ever runs under an epoch the metadata file
 * lacks, and an epoch once saved is used up, never used for another term.
 * Kafka's controller elects the last ISR member when it comes back to a
 * leaderless partition (a restart's plan); a promotion needs an ISR
 * member, or unclean.leader.election.enable for another replica, which
 * then makes the ISR alone.
 *
 * Invariants: the leader epoch never falls and never passes 2^31-1; it is
 * at least the newest any log knows (epoch_floor_at_open); a new leader is
 * online, in the ISR, and the HW is at most its log end (isr_hw_cap). The
 * ISR changes an event makes go through isr.c (isr_set, isr_lose,
 * isr_plan_lose).
 *
 * Locking: each call takes p->lock; an application first waits for the
 * follower fetches in flight (part_settle), so the leader never changes
 * under one. Crash point: replica.crash.before-truncate.
 */
#include "replica_internal.h"

#include <string.h>

#include "failpoint.h"

/*
 * A leader that cannot lead after a restart: its log could not be opened
 * (damage: that replica is offline, its /errors line names why), or its
 * recovery cut it below its checkpointed HW, so it lacks committed
 * records. An in-sync replica that has the records leads instead (the
 * first in assignment order, a new epoch), and the old leader leaves the
 * ISR. At open, before anything is served; the cluster saves the result
 * before it serves. `was` is the saved leader's index, -1 when none.
 */
void hand_off_at_open(mk_partition *p, int was)
{
	if (was < 0)
		return;
	mk_replica *l = &p->replicas[was];
	const char *why;
	int64_t need = 0;
	if (!l->log && l->failed) {
		why = "its log could not be opened";
	} else if (l->log && mk_log_end_offset(l->log) < l->hw_ckpt) {
		why = "its log was cut below the high watermark";
		need = l->hw_ckpt;
	} else {
		return;
	}
	for (int j = 0; j < p->nreplicas; j++) {
		mk_replica *r = &p->replicas[j];
		if (j == was || !r->log || !r->in_isr ||
		    mk_log_end_offset(r->log) < need ||
		    p->leader_epoch == INT32_MAX)
			continue;
		mk_errlog_add(p->env->errlog, mk_wall_ms(), NULL,
			      MK_KAFKA_STORAGE_ERROR,
			      "%s-%d: leadership moves from broker %d (%s) to broker %d, which has the records",
			      p->topic, p->id, l->broker, why, r->broker);
		isr_set(p, l, false);
		p->leader = j;
		p->leader_epoch++;
		meta_changed(p);
		return;
	}
}

/* At open: the partition's epoch is never below one a log knows. */
void epoch_floor_at_open(mk_partition *p, bool create)
{
	/*
	 * No epoch is ever reused: the partition's epoch is at least the
	 * newest any open replica's log knows (a crash may have saved a log
	 * batch under an epoch the metadata file lacks only if written by an
	 * older version; the rule holds either way).
	 */
	mk_strbuf dir = MK_STRBUF_INIT;
	for (int i = 0; i < p->nreplicas; i++) {
		mk_replica *r = &p->replicas[i];
		int32_t e = -1;
		if (r->log) {
			e = mk_log_latest_epoch(r->log);
		} else if (!create) {     /* offline: its checkpoint */
			part_log_dir(p->env, r->broker, p->topic, p->id, &dir);
			e = mk_log_peek_latest_epoch(dir.buf);
		}
		if (e > p->leader_epoch) {
			p->leader_epoch = e;
			meta_changed(p);
		}
	}
	mk_strbuf_release(&dir);
}

bool mk_partition_plan_crash(mk_partition *p, int broker,
			     mk_partition_state *st)
{
	pthread_mutex_lock(&p->lock);
	int i = replica_index(p, broker);
	bool touched = i >= 0 && p->replicas[i].online;
	if (touched) {
		state_locked(p, st);
		st->online[i] = false;
		isr_plan_lose(p, st, i);
	}
	pthread_mutex_unlock(&p->lock);
	return touched;
}

void mk_partition_broker_crash(mk_partition *p, int broker, bool torn)
{
	pthread_mutex_lock(&p->lock);
	part_settle(p);
	int i = replica_index(p, broker);
	if (i >= 0 && p->replicas[i].online) {
		mk_replica *r = &p->replicas[i];
		MK_FAILPOINT("replica.crash.before-truncate");
		if (r->log)
			mk_log_crash(r->log, torn);
		r->log = NULL;
		r->online = false;
		isr_lose(p, i);
		part_changed(p);
	}
	pthread_mutex_unlock(&p->lock);
}

bool mk_partition_plan_restart(mk_partition *p, int broker,
			       mk_partition_state *st)
{
	pthread_mutex_lock(&p->lock);
	int i = replica_index(p, broker);
	bool touched = i >= 0 && !p->replicas[i].log;
	if (touched) {
		state_locked(p, st);
		st->online[i] = true;
		/*
		 * Kafka's controller elects the last ISR member when it comes
		 * back to a leaderless partition: the new epoch is part of the
		 * plan, saved before the replica serves under it.
		 */
		if (p->leader < 0 && p->replicas[i].in_isr &&
		    p->leader_epoch < INT32_MAX) {
			st->leader = broker;
			st->leader_epoch = p->leader_epoch + 1;
		}
	}
	pthread_mutex_unlock(&p->lock);
	return touched;
}

void mk_partition_broker_restart(mk_partition *p, int broker,
				 const mk_partition_state *plan)
{
	pthread_mutex_lock(&p->lock);
	part_settle(p);
	int i = replica_index(p, broker);
	if (i >= 0 && !p->replicas[i].log) {
		mk_replica *r = &p->replicas[i];
		r->online = true;
		open_replica(p, i);
		if (r->log && p->env->cfg->truncation == MK_TRUNCATE_HW &&
		    mk_log_end_offset(r->log) > r->hw_view)
			truncate_replica(p, i, r->hw_view);
		r->last_fetch_ms = mk_clock_now(p->env->clock);
		/* Back in the ISR only after a fetch, as Kafka re-admits. */
		r->rejoining = true;
		/* A saved epoch is used up, whether or not the log opened. */
		if (plan && plan->leader_epoch > p->leader_epoch)
			p->leader_epoch = plan->leader_epoch;
		if (r->log && p->leader < 0 && plan && plan->leader == broker) {
			p->leader = i;
			isr_hw_cap(p, mk_log_end_offset(r->log));
		}
		meta_changed(p);
		part_changed(p);
		refresh_isr(p);
	}
	pthread_mutex_unlock(&p->lock);
}

/* Can broker (replica i) become the leader? Under the lock. */
static mk_err promotable(mk_partition *p, int i, int broker, bool unclean,
			 mk_strbuf *why)
{
	if (i < 0)
		return mk_error(why, MK_UNKNOWN_TOPIC_OR_PARTITION, "broker %d hosts no replica of %s-%d",
				broker, p->topic, p->id);
	mk_replica *r = &p->replicas[i];
	if (!r->log)
		return mk_error(why, MK_BROKER_NOT_AVAILABLE, "broker %d is offline", broker);
	refresh_isr(p);
	if (!r->in_isr) {
		if (!unclean)
			return mk_error(why, MK_INELIGIBLE_REPLICA, "broker %d is not in the ISR of %s-%d",
					broker, p->topic, p->id);
		if (!p->cfg.unclean_leader_election)
			return mk_error(why, MK_INELIGIBLE_REPLICA, "unclean.leader.election.enable is false for %s",
					p->topic);
	}
	if (p->leader_epoch == INT32_MAX)
		return mk_error(why, MK_INVALID_REQUEST, "%s-%d: the leader epoch cannot grow past 2^31-1",
				p->topic, p->id);
	return MK_OK;
}

mk_err mk_partition_plan_promote(mk_partition *p, int broker, bool unclean,
				 mk_partition_state *st, mk_strbuf *why)
{
	pthread_mutex_lock(&p->lock);
	int i = replica_index(p, broker);
	mk_err err = promotable(p, i, broker, unclean, why);
	if (!err) {
		state_locked(p, st);
		st->leader = broker;
		st->leader_epoch = p->leader_epoch + 1;
		if (!p->replicas[i].in_isr) {    /* unclean: it alone */
			st->nisr = 1;
			st->isr[0] = broker;
		}
	}
	pthread_mutex_unlock(&p->lock);
	return err;
}

mk_err mk_partition_promote(mk_partition *p, int broker, bool unclean,
			    const mk_partition_state *plan, mk_strbuf *why)
{
	pthread_mutex_lock(&p->lock);
	part_settle(p);
	int i = replica_index(p, broker);
	mk_err err = MK_OK;
	/* The saved epoch is used up even if the promotion fails now. */
	if (plan->leader_epoch > p->leader_epoch) {
		p->leader_epoch = plan->leader_epoch;
		meta_changed(p);
	}
	if (i < 0 || !p->replicas[i].log) {
		mk_why(why, "broker %d went offline during the promotion", broker);
		err = MK_BROKER_NOT_AVAILABLE;
		goto out;
	}
	mk_replica *r = &p->replicas[i];
	bool alone = plan->nisr == 1 && plan->isr[0] == broker && !r->in_isr;
	if (alone && unclean)
		for (int j = 0; j < p->nreplicas; j++)
			isr_set(p, &p->replicas[j], j == i);
	p->leader = i;
	int64_t leo = mk_log_end_offset(r->log);
	if (p->env->cfg->truncation == MK_TRUNCATE_HW && leo > p->hw) {
		err = truncate_replica(p, i, p->hw);
		if (err) {
			replica_failed(p, i, "truncation on promotion");
			goto out;
		}
		leo = p->hw;
	}
	isr_hw_cap(p, leo);     /* unclean: what B lacks is gone */
	isr_set(p, r, true);
	meta_changed(p);
	part_changed(p);
	refresh_isr(p);
out:
	pthread_mutex_unlock(&p->lock);
	return err;
}
