/*
 * cluster_fetchers.c — replication between brokers, after Kafka's
 * ReplicaFetcherManager: a fetch round of one broker (one follower fetch
 * of every partition it follows: follower_fetch.c), the explicit rounds
 * of manual replication (/brokers/B/fetch, /brokers/fetch), and in auto
 * mode one background fetcher thread per broker that long-polls its
 * leaders (woken through the broker's notifier, notify.h).
 *
 * Invariants: an offline broker fetches nothing; an explicit round
 * completes with its effect: it runs the ISR check on every partition
 * (cluster.h, mk_cluster_isr_check) and returns once the metadata file
 * has the ISR changes it caused, so that a reader right after it sees
 * them (the snapshot shows the ISR the file has: replica.h). A fetcher
 * never waits for a metadata fsync: its round's ISR changes go to the
 * saver (cluster_meta.c).
 *
 * Locking: a round holds c->lock (read) over the table while each follower
 * fetch takes its partition's lock (replica.h, the three steps); a
 * fetcher's wait is on its broker's notifier (a leaf) or, after a failed
 * round, on stop_cond for fetch.interval.ms. brokers[i].fetcher and
 * fetcher_started are written by mk_cluster_start and read by close only.
 */
#include "cluster_internal.h"

#include <stdlib.h>

#include "xalloc.h"

void fetchers_wake(mk_cluster *c)
{
	for (int i = 0; i < c->nbrokers; i++)
		mk_notifier_post_event(&c->brokers[i].wake);
}

/* The broker list is fixed once the cluster is open: no lock. */
void fetchers_wake_data(void *arg, int broker, uint64_t bytes)
{
	mk_cluster *c = arg;
	int i = mk_cluster_broker_index(c, broker);
	if (i >= 0)
		mk_notifier_post_data(&c->brokers[i].wake, bytes);
}

/* One fetch of every follower replica on broker id; *fetched gets the
 * bytes they appended, *behind whether one of them is still behind its
 * leader (its read was capped, or the leader appended meanwhile). */
static mk_err fetch_round(mk_cluster *c, int id, size_t *fetched, bool *behind)
{
	mk_err first = MK_OK;
	*fetched = 0;
	*behind = false;
	pthread_rwlock_rdlock(&c->lock);
	if (broker_online_locked(c, id)) {
		for (size_t i = 0; i < c->ntopics; i++)
			for (int p = 0; p < c->topics[i]->npartitions; p++) {
				size_t n = 0;
				bool b = false;
				mk_err err = mk_partition_follower_fetch_ex(
					c->topics[i]->partitions[p], id, &n, &b);
				*fetched += n;
				*behind |= b;
				if (err && !first)
					first = err;
			}
	}
	pthread_rwlock_unlock(&c->lock);
	return first;
}

mk_err mk_cluster_broker_fetch(mk_cluster *c, int id, mk_strbuf *why)
{
	mk_err err = broker_lookup(c, id, why);
	if (err)
		return err;
	if (!mk_cluster_broker_online(c, id))
		return mk_error(why, MK_BROKER_NOT_AVAILABLE, "broker %d is offline", id);
	size_t fetched;
	bool behind;
	err = fetch_round(c, id, &fetched, &behind);
	if (err && why)
		mk_strbuf_addf(why, "fetch on broker %d failed; see earlier lines", id);
	mk_cluster_isr_check(c);
	return err;
}

mk_err mk_cluster_replicate(mk_cluster *c, mk_strbuf *why)
{
	mk_err first = MK_OK;
	for (int i = 0; i < c->nbrokers; i++) {
		size_t fetched;
		bool behind;
		mk_err err = fetch_round(c, c->brokers[i].id, &fetched, &behind);
		if (err && !first)
			first = err;
	}
	if (first && why)
		mk_strbuf_addstr(why, "a follower fetch failed; see earlier lines");
	mk_cluster_isr_check(c);
	return first;
}

/* ---- background fetchers (mode = auto) ------------------------------------- */

typedef struct {
	mk_cluster *c;
	int id;
} fetcher_arg;

/*
 * Long-poll replication: a round that left a follower behind its leader
 * (a read capped at replica.fetch.max.bytes, appends meanwhile) is
 * followed at once by the next; one that caught up or found nothing waits
 * until a leader of a partition the broker follows appended
 * replica.fetch.min.bytes, a broker event, or replica.fetch.wait.max.ms.
 * A failed round backs off fetch.interval.ms (an unreadable leader would
 * otherwise be retried in a busy loop).
 */
static void *fetcher_main(void *arg)
{
	fetcher_arg fa = *(fetcher_arg *)arg;
	free(arg);
	mk_cluster *c = fa.c;
	mk_notifier *wake = &c->brokers[mk_cluster_broker_index(c, fa.id)].wake;
	while (!c->shutting_down) {
		mk_notify_mark mark = mk_notifier_mark(wake);
		/* ISR changes of the round reach the saver (meta_notify):
		 * the fetcher never waits for a metadata fsync. */
		size_t fetched;
		bool behind;
		mk_err err = fetch_round(c, fa.id, &fetched, &behind);
		if (!c->saver_started)
			mk_cluster_sync_metadata(c);
		if (c->round_hook)
			c->round_hook(c->round_hook_arg);
		if (c->shutting_down)
			break;
		if (err) {
			cluster_stop_wait(c, c->cfg.fetch_interval_ms);
		} else if (fetched == 0 || !behind) {
			/* With the mark taken before the round: what was
			 * appended since (after the round's reads, or not
			 * fetched) ends the wait at once. */
			mk_notifier_wait(wake, &mark,
					 (uint64_t)c->cfg.replica_fetch_min_bytes,
					 c->cfg.replica_fetch_wait_max_ms);
		}
	}
	return NULL;
}

void fetchers_start(mk_cluster *c)
{
	for (int i = 0; i < c->nbrokers; i++) {
		if (c->brokers[i].fetcher_started)
			continue;
		fetcher_arg *fa = mk_xmalloc(sizeof(*fa));
		fa->c = c;
		fa->id = c->brokers[i].id;
		if (pthread_create(&c->brokers[i].fetcher, NULL, fetcher_main, fa) == 0)
			c->brokers[i].fetcher_started = true;
		else
			free(fa);
	}
}

void fetchers_join(mk_cluster *c)
{
	for (int i = 0; i < c->nbrokers; i++)
		if (c->brokers[i].fetcher_started) {
			pthread_join(c->brokers[i].fetcher, NULL);
			c->brokers[i].fetcher_started = false;
		}
}
