/*
 * isr.c — the in-sync replica set and the high watermark of one partition:
 * the one place where membership and the HW are decided. Every other path
 * asks it for a change: refresh_isr (the rules, after any event that may
 * move them: an append, a fetch, a save, and for time alone the cluster's
 * ISR check, mk_partition_refresh: every clock move, every explicit fetch
 * round, and in auto mode with the system clock every
 * replica.lag.time.max.ms / 2, after Kafka's isr-expiration task), isr_set
 * (a replica in or out, counted), isr_lose (a replica lost its log),
 * isr_load and hw_at_open (open), isr_hw_cap (a new leader's log end),
 * isr_plan_lose (a planned crash). A controller deciding the ISR would
 * plug in here. A read never asks: the snapshot applies no rule.
 *
 * Three views of one ISR (decide, persist, act; KIP-497): the decided ISR
 * (in_isr), the committed one (isr_saved: what the metadata file has, and
 * what the snapshot shows, isr_committed_member), and for the HW and
 * acks=all their union (isr_counted: a shrink counts only once saved, an
 * expansion at once); min.insync.replicas counts their intersection
 * (isr_committed). Without a saver the decided ISR is the committed one.
 * In manual replication an acks=0/1 append that decided a change stores it
 * before it returns (isr_store_due, mk_env.meta_store; an acks=all one is
 * answered after the save anyway), as the other steps of the manual modes
 * do (cluster.h), so a read after a step shows its change.
 *
 * The rules (refresh_isr): a follower is in sync while it is online, lags
 * at most replica.lag.max.messages behind the leader's end (checked once
 * every replica.lag.time.max.ms in auto mode), fetched within
 * replica.lag.time.max.ms, and covers the current HW. The HW is the
 * smallest agreed end (agreed_end: the prefix its log shares with the
 * leader's, KIP-101/279) among the replicas counted: those in the decided
 * or the saved ISR (isr_counted: decide, persist, act), so a shrink moves
 * the HW only once the metadata file has it.
 *
 * Invariants: the ISR is never empty (the last member stays even when its
 * broker goes down, as in Kafka); every member is an assigned replica; the
 * leader is in it; within one leader epoch the HW never falls, and it is
 * never above the leader's log end; once open has loaded the saved ISR
 * (isr_load), a replica enters or leaves it only through isr_set, which
 * counts it (isr_shrinks, isr_expands; a hand-off at open included).
 *
 * Locking: everything here runs under p->lock. A replica whose fetch is in
 * flight is seen as it was when that fetch started (seen_leo, seen_start,
 * seen_agreed: a lower bound meanwhile, so the HW and acks=all never count
 * data not yet written).
 */
#include "replica_internal.h"

/* Is a background saver there to persist ISR changes? Without one (a
 * cluster not started, unit tests) a decision counts as saved. */
bool has_saver(const mk_partition *p)
{
	return p->env->meta_notify != NULL;
}

/* Counted for the HW and acks=all: in the decided or the saved ISR. */
bool isr_counted(const mk_partition *p, const mk_replica *r)
{
	return r->in_isr || (has_saver(p) && r->isr_saved);
}

/* In the committed ISR, the one the snapshot shows (KIP-497): as the
 * metadata file has it; without a saver, as decided. */
bool isr_committed_member(const mk_partition *p, const mk_replica *r)
{
	return has_saver(p) ? r->isr_saved : r->in_isr;
}

/* Counted for min.insync.replicas: in both. */
int isr_committed(const mk_partition *p)
{
	int n = 0;
	for (int i = 0; i < p->nreplicas; i++)
		n += p->replicas[i].in_isr &&
		     (!has_saver(p) || p->replicas[i].isr_saved);
	return n;
}

/*
 * A replica enters or leaves the ISR, once open has loaded the saved ISR,
 * only through here, where it is counted (a hand-off at open included):
 * after Kafka's IsrExpandsPerSec and IsrShrinksPerSec meters, as totals
 * since the mount, one per replica moved (Kafka marks once per update).
 */
void isr_set(mk_partition *p, mk_replica *r, bool in)
{
	if (r->in_isr == in)
		return;
	r->in_isr = in;
	if (in)
		p->isr_expands++;
	else
		p->isr_shrinks++;
}

int isr_size(const mk_partition *p)
{
	int n = 0;
	for (int i = 0; i < p->nreplicas; i++)
		n += p->replicas[i].in_isr;
	return n;
}

/*
 * Replica i lost its log (a storage error, its broker's crash): it leaves
 * the ISR unless it is the last member (the ISR is never empty), and it
 * no longer leads.
 */
void isr_lose(mk_partition *p, int i)
{
	mk_replica *r = &p->replicas[i];
	if (r->in_isr && isr_size(p) > 1) {
		isr_set(p, r, false);
		meta_changed(p);
	}
	if (p->leader == i) {
		p->leader = -1;
		meta_changed(p);
	}
}

/*
 * How far replica r's log agrees with the leader's (KIP-101/279): the end
 * of the largest leader epoch both logs know, on whichever log ends it
 * first, and never past r's own end. A demoted or restarted replica may
 * hold a divergent tail, as long as the leader's log, until its next fetch
 * truncates it: only the agreed prefix counts for ISR membership, the HW
 * and acks=all.
 */
int64_t agreed_end(const mk_replica *r, const mk_replica *l)
{
	int64_t end = mk_log_end_offset(r->log);
	if (r == l)
		return end;
	int32_t re = mk_log_latest_epoch(r->log);
	if (re < 0)
		return end;
	int32_t le, re2;
	int64_t lend, rend;
	mk_log_end_offset_for_epoch(l->log, re, &le, &lend);
	if (le < 0) {
		lend = mk_log_start_offset(l->log);
	} else {
		mk_log_end_offset_for_epoch(r->log, le, &re2, &rend);
		if (rend < lend)
			lend = rend;
	}
	return lend < end ? lend : end;
}

/* ---- follower fetches in flight (replica.h, Locking) --------------------- */

/* Replica r's log end, log start and agreed end as the others may see
 * them: while its fetch is in flight, what they were when it started. */
int64_t seen_leo(const mk_replica *r)
{
	return r->fetching ? r->fetch_leo : mk_log_end_offset(r->log);
}

int64_t seen_start(const mk_replica *r)
{
	return r->fetching ? r->fetch_start : mk_log_start_offset(r->log);
}

int64_t seen_agreed(const mk_replica *r, const mk_replica *l)
{
	return r->fetching ? r->fetch_agreed : agreed_end(r, l);
}

/* The ISR as the metadata file has it (decided and saved), at open: never
 * empty, and holding the leader whose log opened. */
void isr_load(mk_partition *p, const mk_partition_state *st)
{
	for (int i = 0; i < p->nreplicas; i++) {
		mk_replica *r = &p->replicas[i];
		for (int j = 0; j < st->nisr; j++)
			if (st->isr[j] == r->broker)
				r->in_isr = r->isr_saved = true;
	}
	if (isr_size(p) == 0)
		p->replicas[p->leader >= 0 ? p->leader : 0].in_isr = true;
	if (p->leader >= 0 && !p->replicas[p->leader].in_isr) {
		p->replicas[p->leader].in_isr = true;
		meta_changed(p);
	}
}

/* At open: the HW the logs that opened still agree on. */
void hw_at_open(mk_partition *p)
{
	/*
	 * The HW after a restart: the smallest log end among the ISR members
	 * whose logs are open (what agrees with the leader's, when there is
	 * one) — everything below it is on every ISR replica.
	 */
	int64_t hw = -1;
	for (int i = 0; i < p->nreplicas; i++) {
		mk_replica *r = &p->replicas[i];
		if (r->in_isr && r->log) {
			int64_t leo = p->leader >= 0
				? agreed_end(r, &p->replicas[p->leader])
				: mk_log_end_offset(r->log);
			if (hw < 0 || leo < hw)
				hw = leo;
		}
	}
	p->hw = hw < 0 ? 0 : hw;
	/* Never below the leader's log start (Kafka's rule): what it deleted
	 * was committed. A follower that lost its tail in a crash may end
	 * below it, and restarts there at its next fetch. */
	if (p->leader >= 0 &&
	    p->hw < mk_log_start_offset(p->replicas[p->leader].log))
		p->hw = mk_log_start_offset(p->replicas[p->leader].log);
	for (int i = 0; i < p->nreplicas; i++)
		if (p->replicas[i].log)
			p->replicas[i].hw_view = p->hw < mk_log_end_offset(p->replicas[i].log)
				? p->hw : mk_log_end_offset(p->replicas[i].log);
}

/*
 * Recompute ISR membership and the HW. A follower is in sync while it is
 * online, lags at most replica.lag.max.messages behind the leader's end,
 * fetched within replica.lag.time.max.ms, and covers the current HW (so
 * joining can never shrink the committed prefix).
 *
 * The message-lag rule takes an ISR member out only at a lag check. In
 * manual mode every recomputation is one (nothing moves between the
 * steps one asks for, as in the teaching model). In auto mode the leader
 * checks once every replica.lag.time.max.ms, as Kafka 0.8's
 * isr-expiration task did for this rule: a follower is slow when it is
 * behind at a check, not when its fetcher waited for a CPU for a moment
 * during a burst (on two cores shared by three brokers, 64 MB of acks=1
 * appends put a follower more than 10,000 messages behind ten times).
 * Joining always needs the lag within the bound.
 */
void refresh_isr(mk_partition *p)
{
	if (p->leader < 0)
		return;
	const mk_config *cfg = p->env->cfg;
	int64_t now = mk_clock_now(p->env->clock);
	mk_replica *leader = &p->replicas[p->leader];
	int64_t leo = mk_log_end_offset(leader->log);
	bool moved = false;
	bool lag_check = !cfg->auto_replication ||
			 now - p->isr_check_ms >= cfg->replica_lag_time_max_ms;
	if (lag_check)
		p->isr_check_ms = now;
	for (int i = 0; i < p->nreplicas; i++) {
		mk_replica *r = &p->replicas[i];
		if (i == p->leader)
			continue;
		int64_t end = r->log ? seen_agreed(r, leader) : -1;
		/* A fetch in flight is behind by what it has yet to write,
		 * not more (Kafka counts a follower's fetch position). */
		int64_t fetched = r->fetching ? r->fetch_target : end;
		bool slow = leo - fetched > cfg->replica_lag_max_messages;
		bool in = r->log != NULL && !r->rejoining &&
			  (!slow || (r->in_isr && !lag_check)) &&
			  now - r->last_fetch_ms <= cfg->replica_lag_time_max_ms &&
			  end >= p->hw;
		if (in != r->in_isr) {
			isr_set(p, r, in);
			meta_changed(p);
			moved = true;
		}
	}
	/* A replica dropped from the ISR holds the HW back until the
	 * metadata file says so too; one without a log then holds it. */
	int64_t hw = leo;
	for (int i = 0; i < p->nreplicas; i++) {
		mk_replica *r = &p->replicas[i];
		if (!isr_counted(p, r))
			continue;
		int64_t end = r->log ? seen_agreed(r, leader) : p->hw;
		if (end < hw)
			hw = end;
	}
	if (hw > p->hw) {
		p->hw = hw;
		moved = true;
	}
	/* The leader knows the HW it computes (what hw truncation uses if
	 * it restarts). */
	p->replicas[p->leader].hw_view = p->hw;
	if (moved)
		part_changed(p);
	part_check(p);
}

/*
 * A new leader (a restart's election, a promotion) whose log ends at leo:
 * the HW is at most that, since what it lacks is gone. The only fall of
 * the HW, and it comes with a new epoch.
 */
void isr_hw_cap(mk_partition *p, int64_t leo)
{
	if (p->hw > leo)
		p->hw = leo;
}

/* An ISR change decided, not yet saved? */
static bool isr_pending(const mk_partition *p)
{
	for (int i = 0; i < p->nreplicas; i++)
		if (p->replicas[i].in_isr != p->replicas[i].isr_saved)
			return true;
	return false;
}

/*
 * Must the command that just decided an ISR change store it before it
 * returns? In manual replication, yes: every step one asks for completes
 * with its effect, so a reader right after it sees the change (the
 * snapshot shows the committed ISR). In auto mode the saver stores it:
 * no writer waits behind a metadata fsync.
 */
bool isr_store_due(const mk_partition *p)
{
	return has_saver(p) && p->env->meta_store &&
	       !p->env->cfg->auto_replication && isr_pending(p);
}

void mk_partition_refresh(mk_partition *p)
{
	pthread_mutex_lock(&p->lock);
	refresh_isr(p);
	pthread_mutex_unlock(&p->lock);
}

static void isr_remove(mk_partition_state *st, int broker)
{
	int n = 0;
	for (int j = 0; j < st->nisr; j++)
		if (st->isr[j] != broker)
			st->isr[n++] = st->isr[j];
	st->nisr = n;
}

void mk_partition_meta_saved(mk_partition *p, const mk_partition_state *st)
{
	pthread_mutex_lock(&p->lock);
	for (int i = 0; i < p->nreplicas; i++) {
		bool in = false;
		for (int j = 0; j < st->nisr; j++)
			in |= st->isr[j] == p->replicas[i].broker;
		p->replicas[i].isr_saved = in;
	}
	part_changed(p);
	refresh_isr(p);
	pthread_mutex_unlock(&p->lock);
}

/* isr_lose in a plan (st, taken from p): replica i's broker leaves st's
 * ISR unless it is the last member, and no longer leads. */
void isr_plan_lose(const mk_partition *p, mk_partition_state *st, int i)
{
	int broker = p->replicas[i].broker;
	if (p->replicas[i].in_isr && st->nisr > 1)
		isr_remove(st, broker);
	if (st->leader == broker)
		st->leader = -1;
}
