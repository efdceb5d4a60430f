/*
 * cluster.c — brokers, the topic table, broker events and the background
 * fetchers. Partition-level rules live in replica.c; this file decides
 * which partitions an event touches and keeps the metadata file in step.
 */
#include "cluster.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "accumulator.h"
#include "fileio.h"
#include "fdcache.h"
#include "flushpool.h"
#include "metadata.h"
#include "topic_name.h"

/* Threads of the flusher pool: two, so that one slow fsync does not hold
 * up every other log's. */
#define MK_FLUSH_THREADS 2

/*
 * Segment descriptors the cache may keep open: half the soft descriptor
 * limit (the rest is for FUSE, checkpoints, metadata, snapshots and the
 * files users open), at least 32.
 */
static int fd_budget(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur > (1u << 30))
		return 1 << 20;
	int n = (int)(rl.rlim_cur / 2);
	return n < 32 ? 32 : n;
}

/* ---- topics and references ------------------------------------------- */

static void topic_free(mk_topic *t)
{
	for (int p = 0; p < t->npartitions; p++)
		mk_partition_close(t->partitions[p]);
	free(t->partitions);
	free(t->name);
	free(t);
}

void mk_topic_put(mk_topic *t)
{
	if (t && atomic_fetch_sub(&t->refs, 1) == 1)
		topic_free(t);
}

mk_partition *mk_topic_partition(mk_topic *t, int id)
{
	if (id < 0 || id >= t->npartitions)
		return NULL;
	return t->partitions[id];
}

/* Binary search; *pos gets the insertion point. Under c->lock. */
static mk_topic *find_topic(mk_cluster *c, const char *name, size_t *pos)
{
	size_t lo = 0, hi = c->ntopics;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int cmp = strcmp(c->topics[mid]->name, name);
		if (cmp == 0) {
			if (pos)
				*pos = mid;
			return c->topics[mid];
		}
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (pos)
		*pos = lo;
	return NULL;
}

mk_topic *mk_cluster_topic(mk_cluster *c, const char *name)
{
	pthread_rwlock_rdlock(&c->lock);
	mk_topic *t = find_topic(c, name, NULL);
	if (t)
		atomic_fetch_add(&t->refs, 1);
	pthread_rwlock_unlock(&c->lock);
	return t;
}

size_t mk_cluster_topic_names(mk_cluster *c, char ***names)
{
	pthread_rwlock_rdlock(&c->lock);
	size_t n = c->ntopics;
	*names = calloc(n ? n : 1, sizeof(char *));
	for (size_t i = 0; i < n; i++)
		(*names)[i] = strdup(c->topics[i]->name);
	pthread_rwlock_unlock(&c->lock);
	return n;
}

void mk_cluster_each_partition(mk_cluster *c,
			       void (*fn)(mk_topic *t, mk_partition *p, void *arg),
			       void *arg)
{
	pthread_rwlock_rdlock(&c->lock);
	for (size_t i = 0; i < c->ntopics; i++)
		for (int p = 0; p < c->topics[i]->npartitions; p++)
			fn(c->topics[i], c->topics[i]->partitions[p], arg);
	pthread_rwlock_unlock(&c->lock);
}

void mk_cluster_topic_config(mk_cluster *c, mk_topic *t, mk_topic_config *out)
{
	pthread_rwlock_rdlock(&c->lock);
	*out = t->cfg;
	pthread_rwlock_unlock(&c->lock);
}

/* Insert a fully built topic. Under the write lock. */
static mk_err insert_topic(mk_cluster *c, mk_topic *t, size_t pos)
{
	if (c->ntopics == c->topics_alloc) {
		size_t n = c->topics_alloc ? c->topics_alloc * 2 : 16;
		mk_topic **nt = realloc(c->topics, n * sizeof(*nt));
		if (!nt)
			return MK_OUT_OF_MEMORY;
		c->topics = nt;
		c->topics_alloc = n;
	}
	memmove(c->topics + pos + 1, c->topics + pos,
		(c->ntopics - pos) * sizeof(*c->topics));
	c->topics[pos] = t;
	c->ntopics++;
	return MK_OK;
}

static mk_err apply_overrides(mk_topic_config *tc, const char *const *kv,
			      size_t n, mk_strbuf *why)
{
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(kv[i], '=');
		if (!eq || eq == kv[i]) {
			if (why)
				mk_strbuf_addf(why, "expected KEY=VALUE, got '%s'", kv[i]);
			return MK_INVALID_CONFIG;
		}
		char key[128];
		size_t kl = (size_t)(eq - kv[i]);
		if (kl >= sizeof(key)) {
			if (why)
				mk_strbuf_addf(why, "unknown key '%.*s'", (int)kl, kv[i]);
			return MK_INVALID_CONFIG;
		}
		memcpy(key, kv[i], kl);
		key[kl] = '\0';
		mk_err err = mk_topic_config_set(tc, key, eq + 1, why);
		if (err)
			return err;
	}
	return MK_OK;
}

static bool broker_online_locked(mk_cluster *c, int id)
{
	int i = mk_cluster_broker_index(c, id);
	return i >= 0 && c->brokers[i].online;
}

/* Did any replica of p that should be online fail to open its log? */
static bool replica_failed_to_open(mk_partition *p)
{
	mk_partition_info in;
	mk_partition_info_get(p, &in);
	for (int r = 0; r < in.nreplicas; r++)
		if (in.replicas[r].failed)
			return true;
	return false;
}

/*
 * Build a topic's partitions from their states; under the write lock.
 * With strict (create-topic), a replica that cannot open its log fails
 * the whole build (its files are removed): an operation that fails to
 * open what it needs never reports success. At mount such a replica is
 * only taken offline.
 */
static mk_err build_topic(mk_cluster *c, const char *name, int n, int rf,
			  const mk_topic_config *tc, mk_partition_state *sts,
			  bool strict, mk_topic **out, mk_strbuf *why)
{
	mk_topic *t = calloc(1, sizeof(*t));
	if (!t)
		return MK_OUT_OF_MEMORY;
	t->name = strdup(name);
	t->npartitions = n;
	t->replication_factor = rf;
	t->cfg = *tc;
	atomic_store(&t->refs, 1);
	t->partitions = calloc((size_t)n, sizeof(*t->partitions));
	for (int p = 0; p < n; p++) {
		mk_partition_state *st = &sts[p];
		for (int r = 0; r < st->nreplicas; r++)
			st->online[r] = broker_online_locked(c, st->brokers[r]);
		mk_err err = mk_partition_open(&c->env, name, p, tc, st, &t->partitions[p]);
		if (!err && strict && replica_failed_to_open(t->partitions[p])) {
			p++;
			err = MK_KAFKA_STORAGE_ERROR;
			if (why)
				mk_strbuf_addf(why, "a replica of partition %d cannot open its log (see /errors); ",
					       p - 1);
		}
		if (err) {
			t->npartitions = p;
			topic_free(t);
			if (strict)
				for (int q = 0; q < p; q++)
					mk_partition_remove_files(&c->env, name, q, &sts[q]);
			return err;
		}
	}
	*out = t;
	return MK_OK;
}

mk_err mk_cluster_create_topic(mk_cluster *c, const char *name, int partitions,
			       int rf, const char *const *overrides,
			       size_t noverrides, mk_strbuf *why)
{
	if (!mk_topic_name_valid(name)) {
		if (why)
			mk_strbuf_addf(why, "invalid topic name '%s': 1 to %d of [A-Za-z0-9._-], not . or ..",
				       name, MK_TOPIC_NAME_MAX);
		return MK_INVALID_TOPIC_EXCEPTION;
	}
	if (partitions < 0)
		partitions = (int)c->cfg.num_partitions;
	if (rf < 0)
		rf = (int)c->cfg.default_replication_factor;
	if (partitions < 1 || partitions > 1024) {
		if (why)
			mk_strbuf_addf(why, "partitions must be 1 to 1024, got %d", partitions);
		return MK_INVALID_REQUEST;
	}
	if (rf < 1 || rf > c->nbrokers) {
		if (why)
			mk_strbuf_addf(why, "replication.factor must be 1 to %d (the brokers), got %d",
				       c->nbrokers, rf);
		return MK_INVALID_REQUEST;
	}
	mk_topic_config tc;
	mk_topic_config_init(&tc, &c->cfg);
	mk_err err = apply_overrides(&tc, overrides, noverrides, why);
	if (err)
		return err;

	/* event_lock keeps broker states and the table's names still while
	 * the logs are opened without the write lock (slow for many
	 * partitions). */
	pthread_mutex_lock(&c->event_lock);
	pthread_rwlock_rdlock(&c->lock);
	size_t pos;
	if (find_topic(c, name, &pos)) {
		pthread_rwlock_unlock(&c->lock);
		pthread_mutex_unlock(&c->event_lock);
		if (why)
			mk_strbuf_addf(why, "topic %s already exists", name);
		return MK_TOPIC_ALREADY_EXISTS;
	}
	/* Round-robin assignment: partition p starts at broker p mod n. */
	mk_partition_state *sts = calloc((size_t)partitions, sizeof(*sts));
	for (int p = 0; p < partitions; p++) {
		mk_partition_state *st = &sts[p];
		st->nreplicas = rf;
		st->leader = -1;
		for (int r = 0; r < rf; r++) {
			int b = c->brokers[(p + r) % c->nbrokers].id;
			st->brokers[r] = b;
			if (broker_online_locked(c, b)) {
				st->isr[st->nisr++] = b;
				if (st->leader < 0)
					st->leader = b;
			}
		}
		if (st->leader < 0) {
			pthread_rwlock_unlock(&c->lock);
			pthread_mutex_unlock(&c->event_lock);
			free(sts);
			if (why)
				mk_strbuf_addf(why, "no replica of partition %d would be online", p);
			return MK_BROKER_NOT_AVAILABLE;
		}
	}
	pthread_rwlock_unlock(&c->lock);
	mk_topic *t;
	err = build_topic(c, name, partitions, rf, &tc, sts, true, &t, why);
	if (!err) {
		pthread_rwlock_wrlock(&c->lock);
		find_topic(c, name, &pos);
		err = insert_topic(c, t, pos);
		pthread_rwlock_unlock(&c->lock);
		if (err)
			topic_free(t);
	}
	pthread_mutex_unlock(&c->event_lock);
	free(sts);
	if (err) {
		if (why)
			mk_strbuf_addf(why, "cannot create topic %s", name);
		return err;
	}
	atomic_fetch_add(&c->meta_dirty, 1);
	mk_notifier_post_event(&c->log_end);   /* fetchers: look now */
	return mk_cluster_sync_metadata(c);
}

mk_err mk_cluster_delete_topic(mk_cluster *c, const char *name, mk_strbuf *why)
{
	pthread_mutex_lock(&c->event_lock);
	pthread_rwlock_wrlock(&c->lock);
	size_t pos;
	mk_topic *t = find_topic(c, name, &pos);
	if (!t) {
		pthread_rwlock_unlock(&c->lock);
		pthread_mutex_unlock(&c->event_lock);
		if (why)
			mk_strbuf_addf(why, "no topic %s", name);
		return MK_UNKNOWN_TOPIC_OR_PARTITION;
	}
	memmove(c->topics + pos, c->topics + pos + 1,
		(c->ntopics - pos - 1) * sizeof(*c->topics));
	c->ntopics--;
	pthread_rwlock_unlock(&c->lock);
	/*
	 * No new lookup finds the topic now. Its files go with only
	 * event_lock held (a create of the same name waits for it), so that
	 * deleting much log stalls nobody else.
	 */
	for (int p = 0; p < t->npartitions; p++) {
		mk_partition_state st;
		mk_partition_state_get(t->partitions[p], &st);
		mk_partition_retire(t->partitions[p]);
		mk_partition_remove_files(&c->env, t->name, p, &st);
	}
	pthread_mutex_unlock(&c->event_lock);
	mk_topic_put(t);
	atomic_fetch_add(&c->meta_dirty, 1);
	return mk_cluster_sync_metadata(c);
}

mk_err mk_cluster_topic_configure(mk_cluster *c, mk_topic *t,
				  const char *const *kv, size_t n,
				  mk_strbuf *why)
{
	pthread_rwlock_wrlock(&c->lock);
	mk_topic_config tc = t->cfg;
	mk_err err = apply_overrides(&tc, kv, n, why);
	if (!err) {
		t->cfg = tc;
		for (int p = 0; p < t->npartitions; p++)
			mk_partition_set_config(t->partitions[p], &tc);
	}
	pthread_rwlock_unlock(&c->lock);
	if (err)
		return err;
	atomic_fetch_add(&c->meta_dirty, 1);
	return mk_cluster_sync_metadata(c);
}

/* ---- brokers ---------------------------------------------------------- */

int mk_cluster_broker_index(mk_cluster *c, int id)
{
	for (int i = 0; i < c->nbrokers; i++)
		if (c->brokers[i].id == id)
			return i;
	return -1;
}

bool mk_cluster_broker_online(mk_cluster *c, int id)
{
	pthread_rwlock_rdlock(&c->lock);
	bool on = broker_online_locked(c, id);
	pthread_rwlock_unlock(&c->lock);
	return on;
}

static mk_err broker_lookup(mk_cluster *c, int id, mk_strbuf *why)
{
	if (mk_cluster_broker_index(c, id) < 0) {
		if (why)
			mk_strbuf_addf(why, "no broker %d", id);
		return MK_UNKNOWN_BROKER;
	}
	return MK_OK;
}

mk_err mk_cluster_broker_crash(mk_cluster *c, int id, bool torn, mk_strbuf *why)
{
	mk_err err = broker_lookup(c, id, why);
	if (err)
		return err;
	pthread_mutex_lock(&c->event_lock);
	pthread_rwlock_wrlock(&c->lock);
	mk_broker *b = &c->brokers[mk_cluster_broker_index(c, id)];
	if (!b->online) {
		pthread_rwlock_unlock(&c->lock);
		pthread_mutex_unlock(&c->event_lock);
		if (why)
			mk_strbuf_addf(why, "broker %d is already offline", id);
		return MK_BROKER_NOT_AVAILABLE;
	}
	b->online = false;
	for (size_t i = 0; i < c->ntopics; i++)
		for (int p = 0; p < c->topics[i]->npartitions; p++)
			mk_partition_broker_crash(c->topics[i]->partitions[p], id, torn);
	pthread_rwlock_unlock(&c->lock);
	pthread_mutex_unlock(&c->event_lock);
	atomic_fetch_add(&c->meta_dirty, 1);
	mk_notifier_post_event(&c->log_end);   /* fetchers: look now */
	return mk_cluster_sync_metadata(c);
}

/*
 * The broker goes online under the write lock; its replicas' logs are
 * opened and recovered (slow with much log) with only event_lock held, so
 * that lookups and reads of other partitions go on meanwhile.
 */
mk_err mk_cluster_broker_restart(mk_cluster *c, int id, mk_strbuf *why)
{
	mk_err err = broker_lookup(c, id, why);
	if (err)
		return err;
	pthread_mutex_lock(&c->event_lock);
	pthread_rwlock_wrlock(&c->lock);
	mk_broker *b = &c->brokers[mk_cluster_broker_index(c, id)];
	if (b->online) {
		pthread_rwlock_unlock(&c->lock);
		pthread_mutex_unlock(&c->event_lock);
		if (why)
			mk_strbuf_addf(why, "broker %d is online; crash it first", id);
		return MK_INVALID_REQUEST;
	}
	b->online = true;
	size_t n = c->ntopics;
	mk_topic **ts = calloc(n ? n : 1, sizeof(*ts));
	if (!ts)
		abort();
	for (size_t i = 0; i < n; i++) {
		ts[i] = c->topics[i];
		atomic_fetch_add(&ts[i]->refs, 1);
	}
	pthread_rwlock_unlock(&c->lock);
	for (size_t i = 0; i < n; i++) {
		for (int p = 0; p < ts[i]->npartitions; p++)
			mk_partition_broker_restart(ts[i]->partitions[p], id);
		mk_topic_put(ts[i]);
	}
	free(ts);
	pthread_mutex_unlock(&c->event_lock);
	atomic_fetch_add(&c->meta_dirty, 1);
	mk_notifier_post_event(&c->log_end);   /* fetchers: look now */
	return mk_cluster_sync_metadata(c);
}

static mk_err fetch_round(mk_cluster *c, int id, size_t *fetched)
{
	mk_err first = MK_OK;
	*fetched = 0;
	pthread_rwlock_rdlock(&c->lock);
	if (broker_online_locked(c, id)) {
		for (size_t i = 0; i < c->ntopics; i++)
			for (int p = 0; p < c->topics[i]->npartitions; p++) {
				size_t n = 0;
				mk_err err = mk_partition_follower_fetch_ex(
					c->topics[i]->partitions[p], id, &n);
				*fetched += n;
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
	if (!mk_cluster_broker_online(c, id)) {
		if (why)
			mk_strbuf_addf(why, "broker %d is offline", id);
		return MK_BROKER_NOT_AVAILABLE;
	}
	size_t fetched;
	err = fetch_round(c, id, &fetched);
	if (err && why)
		mk_strbuf_addf(why, "fetch on broker %d failed; see earlier lines", id);
	mk_cluster_sync_metadata(c);
	return err;
}

mk_err mk_cluster_replicate(mk_cluster *c, mk_strbuf *why)
{
	mk_err first = MK_OK;
	for (int i = 0; i < c->nbrokers; i++) {
		size_t fetched;
		mk_err err = fetch_round(c, c->brokers[i].id, &fetched);
		if (err && !first)
			first = err;
	}
	if (first && why)
		mk_strbuf_addstr(why, "a follower fetch failed; see earlier lines");
	mk_cluster_sync_metadata(c);
	return first;
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
		if (why)
			mk_strbuf_addf(why, "no partition %s/%d", topic, partition);
		mk_topic_put(t);
		return MK_UNKNOWN_TOPIC_OR_PARTITION;
	}
	err = mk_partition_promote(p, broker, unclean, why);
	mk_topic_put(t);
	mk_notifier_post_event(&c->log_end);
	mk_cluster_sync_metadata(c);
	return err;
}

/* ---- producer identities ---------------------------------------------- */

static mk_producer_id *find_producer(mk_cluster *c, const char *name, size_t *pos)
{
	size_t lo = 0, hi = c->nproducers;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int cmp = strcmp(c->producers[mid].name, name);
		if (!cmp) {
			if (pos)
				*pos = mid;
			return &c->producers[mid];
		}
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (pos)
		*pos = lo;
	return NULL;
}

/* Insert or replace; under the write lock (or during open). */
static void put_producer(mk_cluster *c, const char *name, int64_t id, int16_t epoch)
{
	size_t pos;
	mk_producer_id *p = find_producer(c, name, &pos);
	if (!p) {
		mk_producer_id *v = realloc(c->producers, (c->nproducers + 1) * sizeof(*v));
		if (!v)
			abort();
		c->producers = v;
		memmove(v + pos + 1, v + pos, (c->nproducers - pos) * sizeof(*v));
		c->nproducers++;
		p = &v[pos];
		p->name = strdup(name);
	}
	p->id = id;
	p->epoch = epoch;
	if (id >= c->next_producer_id)
		c->next_producer_id = id + 1;
}

static mk_err producer_saved(mk_cluster *c)
{
	atomic_fetch_add(&c->meta_dirty, 1);
	return mk_cluster_sync_metadata(c);
}

mk_err mk_cluster_producer_create(mk_cluster *c, const char *name, mk_strbuf *why)
{
	if (!mk_topic_name_valid(name)) {
		if (why)
			mk_strbuf_addf(why, "invalid producer name '%s': 1 to %d of [A-Za-z0-9._-]",
				       name, MK_TOPIC_NAME_MAX);
		return MK_INVALID_REQUEST;
	}
	pthread_rwlock_wrlock(&c->lock);
	if (find_producer(c, name, NULL)) {
		pthread_rwlock_unlock(&c->lock);
		if (why)
			mk_strbuf_addf(why, "producer %s already exists", name);
		return MK_PRODUCER_ALREADY_EXISTS;
	}
	put_producer(c, name, c->next_producer_id, 0);
	pthread_rwlock_unlock(&c->lock);
	return producer_saved(c);
}

mk_err mk_cluster_producer_init(mk_cluster *c, const char *name, mk_strbuf *why)
{
	pthread_rwlock_wrlock(&c->lock);
	mk_producer_id *p = find_producer(c, name, NULL);
	if (!p) {
		pthread_rwlock_unlock(&c->lock);
		if (why)
			mk_strbuf_addf(why, "no producer %s", name);
		return MK_UNKNOWN_PRODUCER_ID;
	}
	if (p->epoch == INT16_MAX) {
		/* Kafka gives the producer a new id when its epoch runs out. */
		p->id = c->next_producer_id++;
		p->epoch = 0;
	} else {
		p->epoch++;
	}
	pthread_rwlock_unlock(&c->lock);
	return producer_saved(c);
}

mk_err mk_cluster_producer_delete(mk_cluster *c, const char *name, mk_strbuf *why)
{
	pthread_rwlock_wrlock(&c->lock);
	size_t pos;
	mk_producer_id *p = find_producer(c, name, &pos);
	if (!p) {
		pthread_rwlock_unlock(&c->lock);
		if (why)
			mk_strbuf_addf(why, "no producer %s", name);
		return MK_UNKNOWN_PRODUCER_ID;
	}
	free(p->name);
	memmove(p, p + 1, (c->nproducers - pos - 1) * sizeof(*p));
	c->nproducers--;
	pthread_rwlock_unlock(&c->lock);
	return producer_saved(c);
}

mk_err mk_cluster_producer_get(mk_cluster *c, const char *name, int64_t *id,
			       int16_t *epoch)
{
	pthread_rwlock_rdlock(&c->lock);
	mk_producer_id *p = find_producer(c, name, NULL);
	if (p) {
		*id = p->id;
		*epoch = p->epoch;
	}
	pthread_rwlock_unlock(&c->lock);
	return p ? MK_OK : MK_UNKNOWN_PRODUCER_ID;
}

size_t mk_cluster_producer_names(mk_cluster *c, char ***names)
{
	pthread_rwlock_rdlock(&c->lock);
	size_t n = c->nproducers;
	*names = calloc(n ? n : 1, sizeof(char *));
	for (size_t i = 0; i < n; i++)
		(*names)[i] = strdup(c->producers[i].name);
	pthread_rwlock_unlock(&c->lock);
	return n;
}

/* ---- clock, flush, metadata ------------------------------------------- */

static void wake_one(mk_topic *t, mk_partition *p, void *arg)
{
	(void)t;
	(void)arg;
	mk_partition_wake(p);
}

/* ---- accumulators and the sender -------------------------------------- */

void mk_cluster_add_accumulator(mk_cluster *c, struct mk_accumulator *acc)
{
	pthread_mutex_lock(&c->acc_lock);
	if (c->naccs == c->accs_alloc) {
		c->accs_alloc = c->accs_alloc ? c->accs_alloc * 2 : 16;
		c->accs = realloc(c->accs, c->accs_alloc * sizeof(*c->accs));
		if (!c->accs)
			abort();
	}
	c->accs[c->naccs++] = acc;
	pthread_mutex_unlock(&c->acc_lock);
}

void mk_cluster_remove_accumulator(mk_cluster *c, struct mk_accumulator *acc)
{
	pthread_mutex_lock(&c->acc_lock);
	for (size_t i = 0; i < c->naccs; i++)
		if (c->accs[i] == acc) {
			c->accs[i] = c->accs[--c->naccs];
			break;
		}
	pthread_mutex_unlock(&c->acc_lock);
}

void mk_cluster_wake_sender(mk_cluster *c)
{
	pthread_mutex_lock(&c->acc_lock);
	pthread_cond_broadcast(&c->acc_cond);
	pthread_mutex_unlock(&c->acc_lock);
}

/* Send every lingering batch that is due. Under acc_lock. */
static int64_t tick_accumulators(mk_cluster *c)
{
	int64_t now = mk_clock_now(&c->clock), next = INT64_MAX;
	for (size_t i = 0; i < c->naccs; i++) {
		mk_accumulator_tick(c->accs[i], now);
		int64_t d = mk_accumulator_deadline(c->accs[i]);
		if (d < next)
			next = d;
	}
	return next;
}

static void *sender_main(void *arg)
{
	mk_cluster *c = arg;
	pthread_mutex_lock(&c->acc_lock);
	while (!c->shutting_down) {
		int64_t next = tick_accumulators(c);
		int64_t wait = next == INT64_MAX ? 1000 : next - mk_clock_now(&c->clock);
		if (wait > 1000)
			wait = 1000;
		if (wait < 1)
			wait = 1;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		int64_t ns = ts.tv_nsec + wait * 1000000LL;
		ts.tv_sec += ns / 1000000000LL;
		ts.tv_nsec = ns % 1000000000LL;
		pthread_cond_timedwait(&c->acc_cond, &c->acc_lock, &ts);
	}
	pthread_mutex_unlock(&c->acc_lock);
	return NULL;
}

static mk_err clock_moved(mk_cluster *c, bool ok, mk_strbuf *why)
{
	if (!ok) {
		if (why)
			mk_strbuf_addstr(why, c->clock.manual
				? "the clock cannot move backwards or past 2^63-1 ms"
				: "the clock is the system clock; set clock = manual to move it");
		return MK_INVALID_REQUEST;
	}
	mk_cluster_each_partition(c, wake_one, NULL);
	pthread_mutex_lock(&c->acc_lock);
	tick_accumulators(c);
	pthread_mutex_unlock(&c->acc_lock);
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

struct flush_arg {
	mk_err err;
};

static void flush_one(mk_topic *t, mk_partition *p, void *arg)
{
	(void)t;
	struct flush_arg *fa = arg;
	mk_err err = mk_partition_flush(p);
	if (err && !fa->err)
		fa->err = err;
}

mk_err mk_cluster_flush(mk_cluster *c, mk_strbuf *why)
{
	struct flush_arg fa = { MK_OK };
	mk_cluster_each_partition(c, flush_one, &fa);
	pthread_mutex_lock(&c->meta_lock);
	mk_err err = mk_metadata_save(c);
	pthread_mutex_unlock(&c->meta_lock);
	if (!fa.err)
		fa.err = err;
	if (fa.err && why)
		mk_strbuf_addstr(why, "flush failed; see earlier lines");
	return fa.err;
}

mk_err mk_cluster_sync_metadata(mk_cluster *c)
{
	mk_err err = MK_OK;
	pthread_mutex_lock(&c->meta_lock);
	if (atomic_load(&c->meta_dirty) != c->meta_saved)
		err = mk_metadata_save(c);
	pthread_mutex_unlock(&c->meta_lock);
	return err;
}

/* ---- background fetchers (mode = auto) -------------------------------- */

typedef struct {
	mk_cluster *c;
	int id;
} fetcher_arg;

/*
 * Long-poll replication: a round that fetched something is followed at
 * once by the next; one that found nothing waits until a leader appended
 * replica.fetch.min.bytes (anywhere in the cluster), a broker event, or
 * replica.fetch.wait.max.ms. A failed round backs off fetch.interval.ms
 * (an unreadable leader would otherwise be retried in a busy loop).
 */
static void *fetcher_main(void *arg)
{
	fetcher_arg fa = *(fetcher_arg *)arg;
	free(arg);
	mk_cluster *c = fa.c;
	while (!c->shutting_down) {
		mk_notify_mark mark = mk_notifier_mark(&c->log_end);
		size_t fetched;
		mk_err err = fetch_round(c, fa.id, &fetched);
		mk_cluster_sync_metadata(c);
		if (c->shutting_down)
			break;
		if (err) {
			pthread_mutex_lock(&c->stop_lock);
			if (!c->shutting_down) {
				struct timespec ts;
				clock_gettime(CLOCK_REALTIME, &ts);
				int64_t ns = ts.tv_nsec + c->cfg.fetch_interval_ms * 1000000LL;
				ts.tv_sec += ns / 1000000000LL;
				ts.tv_nsec = ns % 1000000000LL;
				pthread_cond_timedwait(&c->stop_cond, &c->stop_lock, &ts);
			}
			pthread_mutex_unlock(&c->stop_lock);
		} else if (fetched == 0) {
			mk_notifier_wait(&c->log_end, &mark,
					 (uint64_t)c->cfg.replica_fetch_min_bytes,
					 c->cfg.replica_fetch_wait_max_ms);
		}
	}
	return NULL;
}

/* ---- open and close --------------------------------------------------- */

mk_err mk_cluster_open(const char *data_dir, const mk_config *cfg,
		       mk_cluster **out, mk_strbuf *why)
{
	*out = NULL;
	if (mk_mkdirs(data_dir)) {
		if (why)
			mk_strbuf_addf(why, "cannot create data directory %s", data_dir);
		return MK_KAFKA_STORAGE_ERROR;
	}
	mk_metadata md;
	mk_err err = mk_metadata_load(data_dir, &md, why);
	if (err)
		return err;
	mk_cluster *c = calloc(1, sizeof(*c));
	c->data_dir = strdup(data_dir);
	c->cfg = *cfg;
	/* A manual clock resumes where it stood: time never moves back. */
	mk_clock_init(&c->clock, cfg->manual_clock, md.clock_ms);
	mk_errlog_init(&c->errlog);
	mk_notifier_init(&c->log_end);
	c->flush_pool = mk_flush_pool_new(MK_FLUSH_THREADS);
	c->fdcache = mk_fdcache_new(fd_budget());
	c->env = (mk_env){ c->data_dir, &c->cfg, &c->clock, &c->errlog,
			   &c->shutting_down, &c->meta_dirty, &c->log_end,
			   c->flush_pool, c->fdcache };
	pthread_rwlock_init(&c->lock, NULL);
	pthread_mutex_init(&c->meta_lock, NULL);
	pthread_mutex_init(&c->event_lock, NULL);
	pthread_mutex_init(&c->stop_lock, NULL);
	pthread_cond_init(&c->stop_cond, NULL);
	pthread_mutex_init(&c->acc_lock, NULL);
	pthread_cond_init(&c->acc_cond, NULL);
	c->nbrokers = cfg->nbrokers;
	for (int i = 0; i < cfg->nbrokers; i++) {
		c->brokers[i].id = cfg->broker_ids[i];
		c->brokers[i].online = true;
		for (int j = 0; j < md.nbrokers; j++)
			if (md.broker_ids[j] == cfg->broker_ids[i])
				c->brokers[i].online = md.broker_online[j];
	}
	pthread_rwlock_wrlock(&c->lock);
	c->next_producer_id = md.next_producer_id;
	for (size_t i = 0; i < md.nproducers; i++)
		put_producer(c, md.producers[i].name, md.producers[i].id,
			     md.producers[i].epoch);
	for (size_t i = 0; i < md.ntopics && !err; i++) {
		mk_metadata_topic *mt = &md.topics[i];
		mk_topic_config tc;
		mk_topic_config_init(&tc, &c->cfg);
		err = apply_overrides(&tc, (const char *const *)mt->overrides,
				      mt->noverrides, why);
		mk_topic *t = NULL;
		if (!err)
			err = build_topic(c, mt->name, mt->npartitions, mt->rf, &tc,
					  mt->parts, false, &t, why);
		size_t pos;
		if (!err && find_topic(c, mt->name, &pos) == NULL)
			err = insert_topic(c, t, pos);
		if (err && why)
			mk_strbuf_addf(why, " (topic %s)", mt->name);
	}
	pthread_rwlock_unlock(&c->lock);
	mk_metadata_free(&md);
	if (err) {
		mk_cluster_close(c);
		return err;
	}
	c->opened = true;
	atomic_fetch_add(&c->meta_dirty, 1);
	mk_cluster_sync_metadata(c);
	*out = c;
	return MK_OK;
}

void mk_cluster_start(mk_cluster *c)
{
	if (!c->clock.manual && !c->sender_started &&
	    pthread_create(&c->sender, NULL, sender_main, c) == 0)
		c->sender_started = true;
	if (!c->cfg.auto_replication)
		return;
	for (int i = 0; i < c->nbrokers; i++) {
		if (c->brokers[i].fetcher_started)
			continue;
		fetcher_arg *fa = malloc(sizeof(*fa));
		fa->c = c;
		fa->id = c->brokers[i].id;
		if (pthread_create(&c->brokers[i].fetcher, NULL, fetcher_main, fa) == 0)
			c->brokers[i].fetcher_started = true;
		else
			free(fa);
	}
}

void mk_cluster_begin_shutdown(mk_cluster *c)
{
	pthread_mutex_lock(&c->stop_lock);
	c->shutting_down = true;
	pthread_cond_broadcast(&c->stop_cond);
	pthread_mutex_unlock(&c->stop_lock);
	mk_notifier_stop(&c->log_end);
	mk_cluster_each_partition(c, wake_one, NULL);
}

void mk_cluster_close(mk_cluster *c)
{
	if (!c)
		return;
	mk_cluster_begin_shutdown(c);
	for (int i = 0; i < c->nbrokers; i++)
		if (c->brokers[i].fetcher_started)
			pthread_join(c->brokers[i].fetcher, NULL);
	if (c->sender_started) {
		mk_cluster_wake_sender(c);
		pthread_join(c->sender, NULL);
	}
	mk_cluster_each_partition(c, wake_one, NULL);
	/* Producers still open (SIGTERM with files open): send their batches. */
	pthread_mutex_lock(&c->acc_lock);
	for (size_t i = 0; i < c->naccs; i++) {
		mk_strbuf why = MK_STRBUF_INIT;
		mk_accumulator_flush(c->accs[i], NULL, &why);
		mk_strbuf_release(&why);
	}
	pthread_mutex_unlock(&c->acc_lock);
	if (c->opened)   /* never overwrite metadata we failed to load */
		mk_cluster_flush(c, NULL);
	for (size_t i = 0; i < c->ntopics; i++)
		mk_topic_put(c->topics[i]);
	free(c->topics);
	for (size_t i = 0; i < c->nproducers; i++)
		free(c->producers[i].name);
	free(c->producers);
	pthread_rwlock_destroy(&c->lock);
	pthread_mutex_destroy(&c->meta_lock);
	pthread_mutex_destroy(&c->event_lock);
	pthread_mutex_destroy(&c->stop_lock);
	pthread_cond_destroy(&c->stop_cond);
	pthread_mutex_destroy(&c->acc_lock);
	pthread_cond_destroy(&c->acc_cond);
	mk_notifier_destroy(&c->log_end);
	mk_flush_pool_free(c->flush_pool);   /* every log is closed */
	mk_fdcache_free(c->fdcache);
	free(c->accs);
	mk_errlog_destroy(&c->errlog);
	free(c->data_dir);
	free(c);
}
