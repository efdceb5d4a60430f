/*
 * cluster_topics.c — the topic table and its references, and the topic
 * commands (Kafka's CreateTopics, DeleteTopics, AlterConfigs): a creation
 * assigns the replicas round-robin, builds the partitions (many at once),
 * saves, and only then inserts; a deletion saves a "deleting" mark, takes
 * the topic out of the table, and removes its files; a configuration is
 * saved, then applied to each partition.
 *
 * Invariants: the table is sorted by name and holds only topics whose
 * creation the metadata file has; it holds one reference to each topic,
 * every lookup another (mk_topic_put), and a topic's memory goes with the
 * last; a creation that fails (a replica whose log cannot open, a failed
 * save) leaves no directory behind.
 *
 * Locking: c->lock guards the table and every topic's cfg (readers:
 * lookups, listings, each_partition; writers: insert, remove, a new
 * configuration). Every command holds meta_lock from its decision to its
 * end: it keeps the names and the broker states still while the slow part
 * (opening logs, removing files) runs with no c->lock held. The threads of
 * one build share build_job's lock (next, err, bad).
 */
#include "cluster_internal.h"

#include <stdlib.h>
#include <string.h>

#include "failpoint.h"
#include "search.h"
#include "topic_name.h"
#include "xalloc.h"

/* ---- the table and references ----------------------------------------------- */

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

typedef struct {
	const mk_cluster *c;
	const char *name;
} name_key;

static int cmp_topic(const void *ctx, size_t i)
{
	const name_key *k = ctx;
	return strcmp(k->c->topics[i]->name, k->name);
}

mk_topic *topics_find(mk_cluster *c, const char *name, size_t *pos)
{
	name_key k = { c, name };
	size_t at;
	bool found = mk_search_sorted(c->ntopics, cmp_topic, &k, &at);
	if (pos)
		*pos = at;
	return found ? c->topics[at] : NULL;
}

mk_topic *mk_cluster_topic(mk_cluster *c, const char *name)
{
	pthread_rwlock_rdlock(&c->lock);
	mk_topic *t = topics_find(c, name, NULL);
	if (t)
		atomic_fetch_add(&t->refs, 1);
	pthread_rwlock_unlock(&c->lock);
	return t;
}

size_t mk_cluster_topic_names(mk_cluster *c, char ***names)
{
	pthread_rwlock_rdlock(&c->lock);
	size_t n = c->ntopics;
	*names = mk_xcalloc(n ? n : 1, sizeof(char *));
	for (size_t i = 0; i < n; i++)
		(*names)[i] = mk_xstrdup(c->topics[i]->name);
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

void topics_insert(mk_cluster *c, mk_topic *t, size_t pos)
{
	if (c->ntopics == c->topics_alloc) {
		size_t n = c->topics_alloc ? c->topics_alloc * 2 : 16;
		mk_topic **nt = mk_xrealloc(c->topics, n * sizeof(*nt));
		c->topics = nt;
		c->topics_alloc = n;
	}
	memmove(c->topics + pos + 1, c->topics + pos,
		(c->ntopics - pos) * sizeof(*c->topics));
	c->topics[pos] = t;
	c->ntopics++;
}

mk_err topic_overrides_apply(mk_topic_config *tc, const char *const *kv,
			     size_t n, mk_strbuf *why)
{
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(kv[i], '=');
		if (!eq || eq == kv[i])
			return mk_error(why, MK_INVALID_CONFIG, "expected KEY=VALUE, got '%s'",
					kv[i]);
		char key[128];
		size_t kl = (size_t)(eq - kv[i]);
		if (kl >= sizeof(key))
			return mk_error(why, MK_INVALID_CONFIG, "unknown key '%.*s'",
					(int)kl, kv[i]);
		memcpy(key, kv[i], kl);
		key[kl] = '\0';
		mk_err err = mk_topic_config_set(tc, key, eq + 1, why);
		if (err)
			return err;
	}
	return MK_OK;
}

/* ---- building a topic's partitions ------------------------------------------- */

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

/* What the threads of one build share. */
typedef struct {
	mk_cluster *c;
	const char *name;
	const mk_topic_config *tc;
	mk_partition_state *sts;
	bool create;
	mk_topic *t;
	int n;
	pthread_mutex_t lock;       /* next, err, bad */
	int next;                   /* the next partition to open */
	mk_err err;                 /* the first failure; no partition starts after */
	int bad;                    /* the partition whose replica failed; -1 */
} build_job;

static void *build_worker(void *arg)
{
	build_job *b = arg;
	for (;;) {
		pthread_mutex_lock(&b->lock);
		int p = b->err ? b->n : b->next++;
		pthread_mutex_unlock(&b->lock);
		if (p >= b->n)
			return NULL;
		mk_partition **slot = &b->t->partitions[p];
		mk_err err = (b->create ? mk_partition_create : mk_partition_open)(
			&b->c->env, b->name, p, b->tc, &b->sts[p], slot);
		bool bad = !err && b->create && replica_failed_to_open(*slot);
		if (err || bad) {
			pthread_mutex_lock(&b->lock);
			if (!b->err) {
				b->err = err ? err : MK_KAFKA_STORAGE_ERROR;
				b->bad = bad ? p : -1;
			}
			pthread_mutex_unlock(&b->lock);
		}
	}
}

/* Threads opening one topic's partitions: the logs' opens wait on the
 * disk and on path lookups, so a mount of many partitions goes faster
 * with a few at once. */
#define BUILD_THREADS 4

/*
 * A creation fails when a replica cannot open its log (an operation that
 * fails to open what it needs never reports success); at mount such a
 * replica is only taken offline. Partitions are independent: many are
 * opened by a few threads.
 */
mk_err topics_build(mk_cluster *c, const char *name, int n, int rf,
		    const mk_topic_config *tc, mk_partition_state *sts,
		    bool create, mk_topic **out, mk_strbuf *why)
{
	mk_topic *t = mk_xcalloc(1, sizeof(*t));
	t->name = mk_xstrdup(name);
	t->npartitions = n;
	t->replication_factor = rf;
	t->cfg = *tc;
	atomic_store(&t->refs, 1);
	t->partitions = mk_xcalloc((size_t)n, sizeof(*t->partitions));
	for (int p = 0; p < n; p++) {
		mk_partition_state *st = &sts[p];
		for (int r = 0; r < st->nreplicas; r++)
			st->online[r] = broker_online_locked(c, st->brokers[r]);
	}
	build_job b = { c, name, tc, sts, create, t, n,
			PTHREAD_MUTEX_INITIALIZER, 0, MK_OK, -1 };
	pthread_t th[BUILD_THREADS];
	int nth = 0;
	int want = n / 16 < BUILD_THREADS ? n / 16 : BUILD_THREADS;
	while (nth < want && pthread_create(&th[nth], NULL, build_worker, &b) == 0)
		nth++;
	build_worker(&b);     /* this thread too (alone for small topics) */
	for (int i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_destroy(&b.lock);
	if (b.err) {
		if (b.bad >= 0 && why)
			mk_strbuf_addf(why, "a replica of partition %d cannot open its log (see /errors); ",
				       b.bad);
		topic_free(t);     /* partitions never opened are NULL */
		return b.err;
	}
	*out = t;
	return MK_OK;
}

/* ---- creation ------------------------------------------------------------------ */

/* A creation's arguments, the configured defaults taken for < 0. */
static mk_err creation_args(mk_cluster *c, const char *name, int *partitions,
			    int *rf, mk_strbuf *why)
{
	if (!mk_topic_name_valid(name))
		return mk_error(why, MK_INVALID_TOPIC_EXCEPTION, "invalid topic name '%s': 1 to %d of [A-Za-z0-9._-], not . or ..",
				name, MK_TOPIC_NAME_MAX);
	if (*partitions < 0)
		*partitions = (int)c->cfg.num_partitions;
	if (*rf < 0)
		*rf = (int)c->cfg.default_replication_factor;
	if (*partitions < 1 || *partitions > 1024)
		return mk_error(why, MK_INVALID_REQUEST, "partitions must be 1 to 1024, got %d",
				*partitions);
	if (*rf < 1)
		return mk_error(why, MK_INVALID_REQUEST, "replication.factor must be at least 1, got %d",
				*rf);
	if (*rf > c->nbrokers) {
		mk_config_explain_brokers(&c->cfg, "replication.factor", *rf, why);
		return MK_INVALID_REQUEST;
	}
	return MK_OK;
}

/*
 * Round-robin assignment: partition p starts at broker p mod n; its online
 * replicas are its ISR, the first of them its leader. Refused when a
 * partition would have no online replica. Under c->lock (read).
 */
static mk_err assign_replicas(mk_cluster *c, int partitions, int rf,
			      mk_partition_state *sts, mk_strbuf *why)
{
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
		if (st->leader < 0)
			return mk_error(why, MK_BROKER_NOT_AVAILABLE, "no replica of partition %d would be online",
					p);
	}
	return MK_OK;
}

/* Directories left by a creation that crashed before its save are not
 * this topic's: they go, on every broker, before anything opens them.
 * Under c->lock (read). */
static void remove_unsaved(mk_cluster *c, const char *name, int partitions,
			   const mk_partition_state *sts)
{
	for (int p = 0; p < partitions; p++) {
		mk_partition_state all = sts[p];
		all.nreplicas = c->nbrokers;
		for (int b = 0; b < c->nbrokers; b++)
			all.brokers[b] = c->brokers[b].id;
		mk_partition_remove_files(&c->env, name, p, &all);
	}
}

/* The built topic saved; when the save fails, it is undone (its
 * partitions retired, its files removed, its memory freed). */
static mk_err save_created(mk_cluster *c, mk_topic *t,
			   const mk_partition_state *sts)
{
	MK_FAILPOINT("topic.create.before-save");
	mk_meta_plan plan = MK_META_PLAN_NONE;
	plan.add = t;
	mk_err err = meta_save(c, &plan);
	if (err) {
		for (int p = 0; p < t->npartitions; p++) {
			mk_partition_retire(t->partitions[p]);
			mk_partition_remove_files(&c->env, t->name, p, &sts[p]);
		}
		mk_topic_put(t);
	}
	return err;
}

/*
 * Decide, persist, act: the topic is built (its directories made
 * durable), saved, and only then inserted where lookups find it. With
 * meta_lock held (it keeps the table's names and the broker states
 * still); the build (slow for many partitions) holds no cluster lock.
 */
static mk_err create_locked(mk_cluster *c, const char *name, int partitions,
			    int rf, const mk_topic_config *tc, mk_strbuf *why)
{
	mk_partition_state *sts = mk_xcalloc((size_t)partitions, sizeof(*sts));
	mk_err err = MK_OK;
	pthread_rwlock_rdlock(&c->lock);
	if (topics_find(c, name, NULL)) {
		mk_why(why, "topic %s already exists", name);
		err = MK_TOPIC_ALREADY_EXISTS;
	} else if (!(err = assign_replicas(c, partitions, rf, sts, why))) {
		remove_unsaved(c, name, partitions, sts);
	}
	pthread_rwlock_unlock(&c->lock);
	if (err) {
		free(sts);
		return err;
	}
	MK_FAILPOINT("topic.create.before-build");
	mk_topic *t;
	err = topics_build(c, name, partitions, rf, tc, sts, true, &t, why);
	if (err)   /* what the partial build made goes */
		for (int p = 0; p < partitions; p++)
			mk_partition_remove_files(&c->env, name, p, &sts[p]);
	else
		err = save_created(c, t, sts);
	if (!err) {
		MK_FAILPOINT("topic.create.before-insert");
		size_t pos;
		pthread_rwlock_wrlock(&c->lock);
		topics_find(c, name, &pos);
		topics_insert(c, t, pos);
		pthread_rwlock_unlock(&c->lock);
	}
	free(sts);
	if (err && why)
		mk_strbuf_addf(why, "cannot create topic %s", name);
	return err;
}

mk_err mk_cluster_create_topic(mk_cluster *c, const char *name, int partitions,
			       int rf, const char *const *overrides,
			       size_t noverrides, mk_strbuf *why)
{
	mk_err err = creation_args(c, name, &partitions, &rf, why);
	if (err)
		return err;
	mk_topic_config tc;
	mk_topic_config_init(&tc, &c->cfg);
	if ((err = topic_overrides_apply(&tc, overrides, noverrides, why)))
		return err;
	pthread_mutex_lock(&c->meta_lock);
	err = create_locked(c, name, partitions, rf, &tc, why);
	pthread_mutex_unlock(&c->meta_lock);
	if (err)
		return err;
	fetchers_wake(c);   /* fetchers: look now */
	return MK_OK;
}

/* ---- deletion and configuration ---------------------------------------------- */

mk_err mk_cluster_delete_topic(mk_cluster *c, const char *name, mk_strbuf *why)
{
	if (mk_topic_name_internal(name))
		return mk_error(why, MK_TOPIC_AUTHORIZATION_FAILED, "%s is an internal topic: it cannot be deleted",
				name);
	/*
	 * Decide, persist, act: the deletion is saved first (a "deleting"
	 * mark), then the topic leaves the table and its files go; a crash
	 * anywhere after the mark is finished by the next mount.
	 */
	pthread_mutex_lock(&c->meta_lock);
	pthread_rwlock_rdlock(&c->lock);
	bool found = topics_find(c, name, NULL) != NULL;
	pthread_rwlock_unlock(&c->lock);
	if (!found) {
		pthread_mutex_unlock(&c->meta_lock);
		return mk_error(why, MK_UNKNOWN_TOPIC_OR_PARTITION, "no topic %s", name);
	}
	mk_meta_plan plan = MK_META_PLAN_NONE;
	plan.deleting = name;
	mk_err err = meta_save(c, &plan);
	if (err) {
		pthread_mutex_unlock(&c->meta_lock);
		mk_why(why, "cannot save the deletion of %s", name);
		return err;
	}
	MK_FAILPOINT("topic.delete.after-mark");
	pthread_rwlock_wrlock(&c->lock);
	size_t pos;
	mk_topic *t = topics_find(c, name, &pos);
	memmove(c->topics + pos, c->topics + pos + 1,
		(c->ntopics - pos - 1) * sizeof(*c->topics));
	c->ntopics--;
	pthread_rwlock_unlock(&c->lock);
	/*
	 * No new lookup finds the topic now. Its files go with only
	 * meta_lock held (a creation of the same name waits for it), so that
	 * deleting much log stalls no reader.
	 */
	for (int p = 0; p < t->npartitions; p++) {
		mk_partition_state st;
		mk_partition_state_get(t->partitions[p], &st);
		mk_partition_retire(t->partitions[p]);
		mk_partition_remove_files(&c->env, t->name, p, &st);
		MK_FAILPOINT("topic.delete.after-partition");
	}
	mk_topic_put(t);
	MK_FAILPOINT("topic.delete.before-save");
	/* The deletion holds whatever this save does: the mark is there. */
	meta_save(c, NULL);
	pthread_mutex_unlock(&c->meta_lock);
	return MK_OK;
}

mk_err mk_cluster_topic_configure(mk_cluster *c, mk_topic *t,
				  const char *const *kv, size_t n,
				  mk_strbuf *why)
{
	pthread_mutex_lock(&c->meta_lock);
	pthread_rwlock_rdlock(&c->lock);
	mk_topic_config tc = t->cfg;
	pthread_rwlock_unlock(&c->lock);
	mk_err err = topic_overrides_apply(&tc, kv, n, why);
	if (!err) {
		mk_meta_plan plan = MK_META_PLAN_NONE;
		plan.cfg_topic = t;
		plan.cfg = &tc;
		err = meta_save(c, &plan);
		if (err && why)
			mk_strbuf_addstr(why, "cannot save the configuration");
	}
	if (!err) {
		pthread_rwlock_wrlock(&c->lock);
		t->cfg = tc;
		pthread_rwlock_unlock(&c->lock);
		/* Each partition under its own lock only (one may wait for a
		 * roll or a fetch in flight): lookups go on meanwhile, and
		 * meta_lock orders this against the next change. */
		for (int p = 0; p < t->npartitions; p++)
			mk_partition_set_config(t->partitions[p], &tc);
	}
	pthread_mutex_unlock(&c->meta_lock);
	return err;
}
