/*
 * cluster.c — brokers, the topic table, broker events and the background
 * fetchers. Partition-level rules live in replica.c; this file decides
 * which partitions an event touches and keeps the metadata file in step.
 */
#include "cluster.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "fdcache.h"
#include "fileio.h"
#include "failpoint.h"
#include "flushpool.h"
#include "metadata.h"
#include "parse.h"
#include "topic_name.h"
#include "xalloc.h"

/* Threads of the flusher pool: two for fsyncs, so that one slow fsync
 * does not hold up every other log's, and one that only makes the next
 * segments' files (quick tasks, flushpool.h), so that those are ready
 * before the roll that needs them however long the fsyncs take. */
#define MK_FLUSH_THREADS 3

/*
 * A change decided but not yet applied in memory, saved as if it were
 * (decide, persist, act): brokers' and partitions' planned states, a topic
 * built but not yet in the table, a topic whose deletion is decided, a
 * topic's new configuration.
 */
typedef struct {
	mk_partition *p;
	mk_partition_state st;
} mk_meta_part;

typedef struct {
	int broker;                  /* -1: no broker change */
	bool broker_online;
	const mk_meta_part *parts;
	size_t nparts;
	mk_topic *add;
	const char *deleting;
	const mk_topic *cfg_topic;
	const mk_topic_config *cfg;
	const char *producer;        /* a producer identity set or removed */
	bool producer_gone;
	int64_t producer_id, next_producer_id;
	int16_t producer_epoch;
} mk_meta_plan;

#define MK_META_PLAN_NONE { .broker = -1 }

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

/*
 * Write the current state (snapshotted under the cluster's locks) with the
 * plan on top (NULL: none) to DATA_DIR/metadata (mk_metadata_write). On
 * success every partition is told what the file now holds
 * (mk_partition_meta_saved).
 */
static mk_err mk_metadata_save(mk_cluster *c, const mk_meta_plan *plan)
{
	mk_strbuf out = MK_STRBUF_INIT;
	mk_meta_part *saved = NULL;
	size_t nsaved = 0;
	mk_topic **held = NULL;
	size_t nheld = 0;
	uint64_t version = atomic_load(&c->meta_dirty);
	mk_strbuf_addstr(&out, "minikafka-metadata 2\n");
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
	const char *pn = plan ? plan->producer : NULL;
	mk_strbuf_addf(&out, "next_producer_id %lld\n",
		       (long long)(pn ? plan->next_producer_id : c->next_producer_id));
	for (size_t i = 0; i < c->nproducers; i++)
		if (!pn || strcmp(pn, c->producers[i].name))
			mk_strbuf_addf(&out, "producer %s %lld %d\n", c->producers[i].name,
				       (long long)c->producers[i].id, c->producers[i].epoch);
	if (pn && !plan->producer_gone)
		mk_strbuf_addf(&out, "producer %s %lld %d\n", pn,
			       (long long)plan->producer_id, plan->producer_epoch);
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

/* Insert a fully built topic. Under the write lock. */
static mk_err insert_topic(mk_cluster *c, mk_topic *t, size_t pos)
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
 * Build a topic's partitions from their states; with meta_lock held (it
 * keeps broker states still), or during open. A creation fails when a
 * replica cannot open its log (an operation that fails to open what it
 * needs never reports success); at mount such a replica is only taken
 * offline. Partitions are independent: many are opened by a few threads.
 */
static mk_err build_topic(mk_cluster *c, const char *name, int n, int rf,
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

/* Every fetcher looks now (an event on every broker's notifier). */
static void wake_fetchers(mk_cluster *c)
{
	for (int i = 0; i < c->nbrokers; i++)
		mk_notifier_post_event(&c->brokers[i].wake);
}

/* mk_env.fetch_wake: a leader appended `bytes` that broker follows. The
 * broker list is fixed once the cluster is open. */
static void fetch_wake(void *arg, int broker, uint64_t bytes)
{
	mk_cluster *c = arg;
	int i = mk_cluster_broker_index(c, broker);
	if (i >= 0)
		mk_notifier_post_data(&c->brokers[i].wake, bytes);
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
	if (rf < 1) {
		if (why)
			mk_strbuf_addf(why, "replication.factor must be at least 1, got %d", rf);
		return MK_INVALID_REQUEST;
	}
	if (rf > c->nbrokers) {
		mk_config_explain_brokers(&c->cfg, "replication.factor", rf, why);
		return MK_INVALID_REQUEST;
	}
	mk_topic_config tc;
	mk_topic_config_init(&tc, &c->cfg);
	mk_err err = apply_overrides(&tc, overrides, noverrides, why);
	if (err)
		return err;

	/* Decide, persist, act: the topic is built (its directories made
	 * durable), saved, and only then inserted where lookups find it.
	 * meta_lock keeps the table's names and the broker states still;
	 * the build (slow for many partitions) holds no cluster lock. */
	pthread_mutex_lock(&c->meta_lock);
	pthread_rwlock_rdlock(&c->lock);
	if (find_topic(c, name, NULL)) {
		pthread_rwlock_unlock(&c->lock);
		pthread_mutex_unlock(&c->meta_lock);
		if (why)
			mk_strbuf_addf(why, "topic %s already exists", name);
		return MK_TOPIC_ALREADY_EXISTS;
	}
	/* Round-robin assignment: partition p starts at broker p mod n. */
	mk_partition_state *sts = mk_xcalloc((size_t)partitions, sizeof(*sts));
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
			pthread_mutex_unlock(&c->meta_lock);
			free(sts);
			if (why)
				mk_strbuf_addf(why, "no replica of partition %d would be online", p);
			return MK_BROKER_NOT_AVAILABLE;
		}
	}
	/* Directories left by a creation that crashed before its save are
	 * not this topic's: they go before anything opens them. */
	for (int p = 0; p < partitions; p++) {
		mk_partition_state all = sts[p];
		all.nreplicas = c->nbrokers;
		for (int b = 0; b < c->nbrokers; b++)
			all.brokers[b] = c->brokers[b].id;
		mk_partition_remove_files(&c->env, name, p, &all);
	}
	pthread_rwlock_unlock(&c->lock);
	MK_FAILPOINT("topic.create.before-build");
	mk_topic *t;
	err = build_topic(c, name, partitions, rf, &tc, sts, true, &t, why);
	if (err)   /* what the partial build made goes */
		for (int p = 0; p < partitions; p++)
			mk_partition_remove_files(&c->env, name, p, &sts[p]);
	if (!err) {
		MK_FAILPOINT("topic.create.before-save");
		mk_meta_plan plan = MK_META_PLAN_NONE;
		plan.add = t;
		err = mk_metadata_save(c, &plan);
		if (err) {
			for (int p = 0; p < partitions; p++) {
				mk_partition_retire(t->partitions[p]);
				mk_partition_remove_files(&c->env, name, p, &sts[p]);
			}
			mk_topic_put(t);
		}
	}
	if (!err) {
		MK_FAILPOINT("topic.create.before-insert");
		size_t pos;
		pthread_rwlock_wrlock(&c->lock);
		find_topic(c, name, &pos);
		err = insert_topic(c, t, pos);
		pthread_rwlock_unlock(&c->lock);
		if (err)
			mk_topic_put(t);
	}
	pthread_mutex_unlock(&c->meta_lock);
	free(sts);
	if (err) {
		if (why)
			mk_strbuf_addf(why, "cannot create topic %s", name);
		return err;
	}
	wake_fetchers(c);   /* fetchers: look now */
	return MK_OK;
}

mk_err mk_cluster_delete_topic(mk_cluster *c, const char *name, mk_strbuf *why)
{
	if (mk_topic_name_internal(name)) {
		if (why)
			mk_strbuf_addf(why, "%s is an internal topic: it cannot be deleted", name);
		return MK_TOPIC_AUTHORIZATION_FAILED;
	}
	/*
	 * Decide, persist, act: the deletion is saved first (a "deleting"
	 * mark), then the topic leaves the table and its files go; a crash
	 * anywhere after the mark is finished by the next mount.
	 */
	pthread_mutex_lock(&c->meta_lock);
	pthread_rwlock_rdlock(&c->lock);
	bool found = find_topic(c, name, NULL) != NULL;
	pthread_rwlock_unlock(&c->lock);
	if (!found) {
		pthread_mutex_unlock(&c->meta_lock);
		if (why)
			mk_strbuf_addf(why, "no topic %s", name);
		return MK_UNKNOWN_TOPIC_OR_PARTITION;
	}
	mk_meta_plan plan = MK_META_PLAN_NONE;
	plan.deleting = name;
	mk_err err = mk_metadata_save(c, &plan);
	if (err) {
		pthread_mutex_unlock(&c->meta_lock);
		if (why)
			mk_strbuf_addf(why, "cannot save the deletion of %s", name);
		return err;
	}
	MK_FAILPOINT("topic.delete.after-mark");
	pthread_rwlock_wrlock(&c->lock);
	size_t pos;
	mk_topic *t = find_topic(c, name, &pos);
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
	mk_metadata_save(c, NULL);
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
	mk_err err = apply_overrides(&tc, kv, n, why);
	if (!err) {
		mk_meta_plan plan = MK_META_PLAN_NONE;
		plan.cfg_topic = t;
		plan.cfg = &tc;
		err = mk_metadata_save(c, &plan);
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
		err = mk_metadata_save(c, &plan);
		if (err) {
			if (why)
				mk_strbuf_addf(why, "cannot save broker %d's new state; nothing changed", id);
		} else {
			MK_FAILPOINT(crash ? "broker.crash.after-save"
					   : "broker.restart.after-save");
			pthread_rwlock_wrlock(&c->lock);
			c->brokers[mk_cluster_broker_index(c, id)].online = !crash;
			pthread_rwlock_unlock(&c->lock);
			/* Each partition under its own lock only: lookups go on
			 * while logs are cut or recovered (meta_lock keeps the
			 * planned partitions alive). */
			for (size_t i = 0; i < pl.n; i++) {
				if (crash)
					mk_partition_broker_crash(pl.v[i].p, id, torn);
				else
					mk_partition_broker_restart(pl.v[i].p, id,
								    &pl.v[i].st);
			}
		}
		free(pl.v);
		if (!err)
			wake_fetchers(c);   /* fetchers: look now */
	} else {
		err = crash ? MK_BROKER_NOT_AVAILABLE : MK_INVALID_REQUEST;
		if (why)
			mk_strbuf_addf(why, crash ? "broker %d is already offline"
					    : "broker %d is online; crash it first", id);
	}
	pthread_mutex_unlock(&c->meta_lock);
	if (!err)
		mk_cluster_sync_metadata(c);
	return err;
}

mk_err mk_cluster_broker_crash(mk_cluster *c, int id, bool torn, mk_strbuf *why)
{
	return broker_event(c, id, true, torn, why);
}

mk_err mk_cluster_broker_restart(mk_cluster *c, int id, mk_strbuf *why)
{
	return broker_event(c, id, false, false, why);
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
	if (!mk_cluster_broker_online(c, id)) {
		if (why)
			mk_strbuf_addf(why, "broker %d is offline", id);
		return MK_BROKER_NOT_AVAILABLE;
	}
	size_t fetched;
	bool behind;
	err = fetch_round(c, id, &fetched, &behind);
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
		bool behind;
		mk_err err = fetch_round(c, c->brokers[i].id, &fetched, &behind);
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
		err = mk_metadata_save(c, &plan);
		if (err && why)
			mk_strbuf_addstr(why, "cannot save the new leader; nothing changed");
	}
	if (!err) {
		MK_FAILPOINT("promote.after-save");
		err = mk_partition_promote(p, broker, unclean, &mp.st, why);
	}
	pthread_mutex_unlock(&c->meta_lock);
	wake_fetchers(c);   /* fetchers: look now */
	mk_topic_put(t);
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
		mk_producer_id *v = mk_xrealloc(c->producers, (c->nproducers + 1) * sizeof(*v));
		c->producers = v;
		memmove(v + pos + 1, v + pos, (c->nproducers - pos) * sizeof(*v));
		c->nproducers++;
		p = &v[pos];
		p->name = mk_xstrdup(name);
	}
	p->id = id;
	p->epoch = epoch;
	if (id >= c->next_producer_id)
		c->next_producer_id = id + 1;
}

/*
 * Decide, persist, act for producer identities: the new identity (or its
 * removal) is saved before anyone can see it, so an id is never handed out
 * twice and a fencing epoch never goes back.
 */
static mk_err producer_change(mk_cluster *c, const char *name, bool create,
			      bool init, mk_strbuf *why)
{
	pthread_mutex_lock(&c->meta_lock);
	pthread_rwlock_rdlock(&c->lock);
	mk_producer_id *p = find_producer(c, name, NULL);
	mk_meta_plan plan = MK_META_PLAN_NONE;
	plan.producer = name;
	plan.next_producer_id = c->next_producer_id;
	mk_err err = MK_OK;
	if (create && p) {
		if (why)
			mk_strbuf_addf(why, "producer %s already exists", name);
		err = MK_PRODUCER_ALREADY_EXISTS;
	} else if (!create && !p) {
		if (why)
			mk_strbuf_addf(why, "no producer %s", name);
		err = MK_UNKNOWN_PRODUCER_ID;
	} else if (create) {
		plan.producer_id = c->next_producer_id;
		plan.next_producer_id = plan.producer_id + 1;
	} else if (init && p->epoch == INT16_MAX) {
		/* Kafka gives the producer a new id when its epoch runs out. */
		plan.producer_id = c->next_producer_id;
		plan.next_producer_id = plan.producer_id + 1;
	} else if (init) {
		plan.producer_id = p->id;
		plan.producer_epoch = (int16_t)(p->epoch + 1);
	} else {
		plan.producer_gone = true;
	}
	pthread_rwlock_unlock(&c->lock);
	if (!err) {
		err = mk_metadata_save(c, &plan);
		if (err && why)
			mk_strbuf_addf(why, "cannot save producer %s; nothing changed", name);
	}
	if (!err) {
		pthread_rwlock_wrlock(&c->lock);
		if (plan.producer_gone) {
			size_t pos;
			p = find_producer(c, name, &pos);
			free(p->name);
			memmove(p, p + 1, (c->nproducers - pos - 1) * sizeof(*p));
			c->nproducers--;
		} else {
			put_producer(c, name, plan.producer_id, plan.producer_epoch);
		}
		c->next_producer_id = plan.next_producer_id;
		pthread_rwlock_unlock(&c->lock);
	}
	pthread_mutex_unlock(&c->meta_lock);
	return err;
}

mk_err mk_cluster_producer_create(mk_cluster *c, const char *name, mk_strbuf *why)
{
	if (!mk_topic_name_valid(name)) {
		if (why)
			mk_strbuf_addf(why, "invalid producer name '%s': 1 to %d of [A-Za-z0-9._-]",
				       name, MK_TOPIC_NAME_MAX);
		return MK_INVALID_REQUEST;
	}
	return producer_change(c, name, true, false, why);
}

mk_err mk_cluster_producer_init(mk_cluster *c, const char *name, mk_strbuf *why)
{
	return producer_change(c, name, false, true, why);
}

mk_err mk_cluster_producer_delete(mk_cluster *c, const char *name, mk_strbuf *why)
{
	return producer_change(c, name, false, false, why);
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
	*names = mk_xcalloc(n ? n : 1, sizeof(char *));
	for (size_t i = 0; i < n; i++)
		(*names)[i] = mk_xstrdup(c->producers[i].name);
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

/* The clock moved: ISR changes it causes are decided now, so that the
 * save after it (clock_moved) carries them. */
static void refresh_one(mk_topic *t, mk_partition *p, void *arg)
{
	(void)t;
	(void)arg;
	mk_partition_refresh(p);
	mk_partition_wake(p);
}

/* ---- clock hooks -------------------------------------------------------- */

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

static mk_err clock_moved(mk_cluster *c, bool ok, mk_strbuf *why)
{
	if (!ok) {
		if (why)
			mk_strbuf_addstr(why, c->clock.manual
				? "the clock cannot move backwards or past 253402300799999 ms (year 9999)"
				: "the clock is the system clock; set clock = manual to move it");
		return MK_INVALID_REQUEST;
	}
	mk_cluster_each_partition(c, refresh_one, NULL);
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
	mk_err err = mk_metadata_save(c, NULL);
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
		err = mk_metadata_save(c, NULL);
	pthread_mutex_unlock(&c->meta_lock);
	return err;
}

/* ---- background fetchers (mode = auto) -------------------------------- */

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

/* ---- retention and compaction ----------------------------------------- */

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

static void *cleaner_main(void *arg)
{
	mk_cluster *c = arg;
	for (;;) {
		pthread_mutex_lock(&c->stop_lock);
		if (!c->shutting_down) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			int64_t ms = c->cfg.retention_check_interval_ms;
			ts.tv_sec += ms / 1000;
			int64_t ns = ts.tv_nsec + (ms % 1000) * 1000000LL;
			ts.tv_sec += ns / 1000000000LL;
			ts.tv_nsec = ns % 1000000000LL;
			pthread_cond_timedwait(&c->stop_cond, &c->stop_lock, &ts);
		}
		bool stop = c->shutting_down;
		pthread_mutex_unlock(&c->stop_lock);
		if (stop)
			break;
		mk_strbuf why = MK_STRBUF_INIT;
		mk_cluster_retention(c, &why);
		mk_cluster_compact(c, &why);
		mk_strbuf_release(&why);
	}
	return NULL;
}

/* ---- the metadata saver ------------------------------------------------ */

/*
 * ISR changes decided under a partition's lock are saved here, on a thread
 * of their own, so that no fetcher or writer waits behind the fsync; what
 * the change would allow (a higher HW, an acks=all completion) waits for
 * mk_partition_meta_saved instead.
 */
static void meta_notify(void *arg)
{
	mk_cluster *c = arg;
	pthread_mutex_lock(&c->saver_lock);
	c->saver_kick = true;
	pthread_cond_signal(&c->saver_cond);
	pthread_mutex_unlock(&c->saver_lock);
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

/* ---- open and close --------------------------------------------------- */

/*
 * Is d a replica of a topic in the loaded metadata (one being deleted
 * too: finish_deletion removes its files)?
 */
static bool known_replica(const mk_metadata *md, const mk_meta_dir *d)
{
	const mk_metadata_topic *t = d->topic ? mk_metadata_find(md, d->topic) : NULL;
	if (!t || d->partition >= t->npartitions)
		return false;
	for (int r = 0; r < t->parts[d->partition].nreplicas; r++)
		if (t->parts[d->partition].brokers[r] == d->broker)
			return true;
	return false;
}

/* "broker-1" or "broker-1..broker-3": the brokers of what holds data no
 * topic owns; the count of those entries; the first one. */
static size_t unowned_data(const mk_metadata *md, const mk_meta_dirs *dirs,
			   mk_strbuf *brokers, const mk_meta_dir **first)
{
	size_t n = 0;
	int lo = 0, hi = 0;
	*first = NULL;
	for (size_t i = 0; i < dirs->n; i++) {
		const mk_meta_dir *d = &dirs->v[i];
		if (!d->data || known_replica(md, d))
			continue;
		if (!n++) {
			*first = d;
			lo = d->broker;
		}
		hi = d->broker;      /* the scan is in broker order */
	}
	if (n)
		mk_strbuf_addf(brokers, lo == hi ? "broker-%d" : "broker-%d..broker-%d",
			       lo, hi);
	return n;
}

/*
 * No data is removed because metadata does not know it. Before anything
 * changes: with rebuild, the topics metadata lacks come back from their
 * directories (mk_metadata_rebuild); what still holds data no topic owns
 * then refuses the start (one line in why, nothing changed).
 */
static mk_err check_dirs(mk_cluster *c, mk_metadata *md,
			 const mk_meta_dirs *dirs, bool rebuild, mk_strbuf *why)
{
	mk_err err = MK_OK;
	if (rebuild && (err = mk_metadata_rebuild(c->data_dir, &c->cfg, dirs, md,
						  &c->errlog, why))) {
		if (why)
			mk_strbuf_addf(why, "; refusing to start (nothing was changed)");
		return err;
	}
	mk_strbuf brokers = MK_STRBUF_INIT;
	const mk_meta_dir *d;
	size_t n = unowned_data(md, dirs, &brokers, &d);
	if (n && why && !md->present && !rebuild)
		mk_strbuf_addf(why, "%s/metadata is missing, but %zu partition director%s under %s hold%s data; refusing to start (nothing was changed): restore the file, or mount with -o rebuild_metadata to rebuild it from the directories",
			       c->data_dir, n, n == 1 ? "y" : "ies", brokers.buf,
			       n == 1 ? "s" : "");
	else if (n && why && !rebuild && d->topic && !mk_metadata_find(md, d->topic))
		mk_strbuf_addf(why, "%s: %zu partition director%s under %s hold%s data that no topic in %s/metadata owns (the first: broker-%d/%s); refusing to start (nothing was changed): mount with -o rebuild_metadata to add their topics from the directories, or move them aside",
			       c->data_dir, n, n == 1 ? "y" : "ies", brokers.buf,
			       n == 1 ? "s" : "", c->data_dir, d->broker, d->entry);
	else if (n && why)
		mk_strbuf_addf(why, "%s/broker-%d/%s holds data that no topic in %s/metadata owns (%s); refusing to start (nothing was changed): move it aside",
			       c->data_dir, d->broker, d->entry, c->data_dir,
			       d->topic ? "its topic has no such replica" : "not a TOPIC-PARTITION directory");
	mk_strbuf_release(&brokers);
	return n ? MK_INVALID_CONFIG : MK_OK;
}

/*
 * What no topic owns and holds no batch is what an interrupted creation
 * leaves (check_dirs refused the start for anything else): it goes at
 * mount, each with an /errors line. Every broker directory is marked for
 * spread partition directories on the way.
 */
static void sweep_strays(mk_cluster *c, const mk_metadata *md,
			 const mk_meta_dirs *dirs)
{
	mk_strbuf path = MK_STRBUF_INIT;
	for (size_t b = 0; b < dirs->nbrokers; b++) {
		mk_strbuf_reset(&path);
		mk_strbuf_addf(&path, "%s/broker-%d", c->data_dir, dirs->brokers[b]);
		/* A broker directory made before they were marked gets the
		 * mark (replica.c, broker_dir): a no-op once set. */
		mk_dir_spread_subdirs(path.buf);
		bool removed = false;
		for (size_t i = 0; i < dirs->n; i++) {
			const mk_meta_dir *d = &dirs->v[i];
			if (d->broker != dirs->brokers[b] || d->data ||
			    known_replica(md, d))
				continue;
			mk_strbuf one = MK_STRBUF_INIT;
			mk_strbuf_addf(&one, "%s/%s", path.buf, d->entry);
			mk_remove_tree(one.buf);
			mk_errlog_add(&c->errlog, mk_wall_ms(), NULL, MK_OK,
				      "removed %s: no topic in metadata owns it and it holds no batch (what a creation interrupted before its save leaves)",
				      one.buf);
			mk_strbuf_release(&one);
			removed = true;
		}
		if (removed)
			mk_fsync_dir(path.buf);
	}
	mk_strbuf_release(&path);
}

/* The directories against the metadata: check, rebuild, sweep. */
static mk_err open_dirs(mk_cluster *c, mk_metadata *md, bool rebuild,
			mk_strbuf *why)
{
	mk_meta_dirs dirs;
	mk_metadata_scan_dirs(c->data_dir, &dirs);
	mk_err err = check_dirs(c, md, &dirs, rebuild, why);
	if (!err)
		sweep_strays(c, md, &dirs);
	mk_meta_dirs_free(&dirs);
	return err;
}

/* A deletion decided before a crash: its files go now. */
static void finish_deletion(mk_cluster *c, const mk_metadata_topic *mt)
{
	for (int p = 0; p < mt->npartitions; p++)
		mk_partition_remove_files(&c->env, mt->name, p, &mt->parts[p]);
	mk_errlog_add(&c->errlog, mk_wall_ms(), NULL, MK_OK,
		      "topic %s: deletion finished at mount", mt->name);
}

mk_err mk_cluster_open(const char *data_dir, const mk_config *cfg,
		       mk_cluster **out, mk_strbuf *why)
{
	return mk_cluster_open_with(data_dir, cfg, NULL, out, why);
}

mk_err mk_cluster_open_with(const char *data_dir, const mk_config *cfg,
			    const mk_open_options *opts, mk_cluster **out,
			    mk_strbuf *why)
{
	*out = NULL;
	if (mk_mkdirs(data_dir)) {
		if (why)
			mk_strbuf_addf(why, "cannot create data directory %s", data_dir);
		return MK_KAFKA_STORAGE_ERROR;
	}
	/* One daemon per data directory: a second one would write at its
	 * own offsets over the first's. */
	int lock_fd = open(data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lock_fd < 0 || flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
		if (why)
			mk_strbuf_addf(why, "%s is in use by another minikafkafs (its lock is held); refusing to start",
				       data_dir);
		if (lock_fd >= 0)
			close(lock_fd);
		return MK_KAFKA_STORAGE_ERROR;
	}
	mk_metadata md;
	mk_err err = mk_metadata_load(data_dir, &md, why);
	if (err) {
		close(lock_fd);
		return err;
	}
	mk_cluster *c = mk_xcalloc(1, sizeof(*c));
	c->lock_fd = lock_fd;
	c->data_dir = mk_xstrdup(data_dir);
	c->cfg = *cfg;
	/* A manual clock resumes where it stood: time never moves back. */
	mk_clock_init(&c->clock, cfg->manual_clock, md.clock_ms);
	mk_errlog_init(&c->errlog);
	for (int i = 0; i < MK_MAX_BROKERS; i++)
		mk_notifier_init(&c->brokers[i].wake);
	c->flush_pool = mk_flush_pool_create(MK_FLUSH_THREADS);   /* started in mk_cluster_start */
	c->fdcache = mk_fdcache_new(fd_budget());
	c->env = (mk_env){ c->data_dir, &c->cfg, &c->clock, &c->errlog,
			   &c->shutting_down, &c->meta_dirty, NULL, NULL,
			   fetch_wake, c, c->flush_pool, c->fdcache, NULL, NULL,
			   false };
	pthread_rwlock_init(&c->lock, NULL);
	pthread_mutex_init(&c->clean_lock, NULL);
	pthread_mutex_init(&c->meta_lock, NULL);
	pthread_mutex_init(&c->stop_lock, NULL);
	pthread_cond_init(&c->stop_cond, NULL);
	pthread_mutex_init(&c->saver_lock, NULL);
	pthread_cond_init(&c->saver_cond, NULL);
	pthread_mutex_init(&c->hooks_lock, NULL);
	c->nbrokers = cfg->nbrokers;
	for (int i = 0; i < cfg->nbrokers; i++) {
		c->brokers[i].id = cfg->broker_ids[i];
		c->brokers[i].online = true;
		for (int j = 0; j < md.nbrokers; j++)
			if (md.broker_ids[j] == cfg->broker_ids[i])
				c->brokers[i].online = md.broker_online[j];
	}
	if ((err = open_dirs(c, &md, opts && opts->rebuild_metadata, why))) {
		mk_metadata_free(&md);
		mk_cluster_close(c);
		return err;
	}
	pthread_rwlock_wrlock(&c->lock);
	c->next_producer_id = md.next_producer_id;
	for (size_t i = 0; i < md.nproducers; i++)
		put_producer(c, md.producers[i].name, md.producers[i].id,
			     md.producers[i].epoch);
	for (size_t i = 0; i < md.ntopics && !err; i++) {
		mk_metadata_topic *mt = &md.topics[i];
		if (mt->deleting) {
			finish_deletion(c, mt);
			continue;
		}
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
	if ((err = mk_cluster_sync_metadata(c))) {
		if (why)
			mk_strbuf_addf(why, "cannot write %s/metadata", data_dir);
		c->opened = false;
		mk_cluster_close(c);
		return err;
	}
	*out = c;
	return MK_OK;
}

void mk_cluster_start(mk_cluster *c)
{
	mk_flush_pool_start(c->flush_pool);
	if (!c->saver_started &&
	    pthread_create(&c->saver, NULL, saver_main, c) == 0) {
		c->saver_started = true;
		/* From here on ISR changes wait for the saver (replica.h). */
		c->env.meta_notify = meta_notify;
		c->env.meta_arg = c;
	}
	if (!c->cfg.auto_replication)
		return;
	if (!c->cleaner_started &&
	    pthread_create(&c->cleaner, NULL, cleaner_main, c) == 0)
		c->cleaner_started = true;
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
	/* An acks=all writer copies its batch to one follower itself
	 * (replica.h, "The writer's copy"); its other followers' fetchers
	 * run meanwhile. Set before the filesystem serves a request. */
	c->env.writer_copy = true;
}

void mk_cluster_begin_shutdown(mk_cluster *c)
{
	pthread_mutex_lock(&c->stop_lock);
	c->shutting_down = true;
	pthread_cond_broadcast(&c->stop_cond);
	pthread_mutex_unlock(&c->stop_lock);
	for (int i = 0; i < MK_MAX_BROKERS; i++)
		mk_notifier_stop(&c->brokers[i].wake);
	mk_cluster_each_partition(c, wake_one, NULL);
}

static void stop_saver(mk_cluster *c)
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

mk_err mk_cluster_close(mk_cluster *c)
{
	if (!c)
		return MK_OK;
	mk_cluster_begin_shutdown(c);
	for (int i = 0; i < c->nbrokers; i++)
		if (c->brokers[i].fetcher_started)
			pthread_join(c->brokers[i].fetcher, NULL);
	if (c->cleaner_started)
		pthread_join(c->cleaner, NULL);
	mk_cluster_each_partition(c, wake_one, NULL);
	/* The final save runs here, on this thread: the saver stops first
	 * (the partitions still call meta_notify, which only kicks). */
	stop_saver(c);
	mk_err err = MK_OK;
	if (c->opened)   /* never overwrite metadata we failed to load */
		err = mk_cluster_flush(c, NULL);
	for (size_t i = 0; i < c->ntopics; i++)
		mk_topic_put(c->topics[i]);
	free(c->topics);
	for (size_t i = 0; i < c->nproducers; i++)
		free(c->producers[i].name);
	free(c->producers);
	pthread_rwlock_destroy(&c->lock);
	pthread_mutex_destroy(&c->clean_lock);
	pthread_mutex_destroy(&c->meta_lock);
	pthread_mutex_destroy(&c->stop_lock);
	pthread_cond_destroy(&c->stop_cond);
	pthread_mutex_destroy(&c->saver_lock);
	pthread_cond_destroy(&c->saver_cond);
	pthread_mutex_destroy(&c->hooks_lock);
	for (int i = 0; i < MK_MAX_BROKERS; i++)
		mk_notifier_destroy(&c->brokers[i].wake);
	mk_flush_pool_free(c->flush_pool);   /* every log is closed */
	mk_fdcache_free(c->fdcache);
	mk_errlog_destroy(&c->errlog);
	free(c->data_dir);
	if (c->lock_fd >= 0)
		close(c->lock_fd);   /* the data directory's lock goes last */
	free(c);
	return err;
}
